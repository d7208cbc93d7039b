/**
 * A notebook host for the renderers' tests: a fake kernel that has (or has
 * not) the explorer's widget comm, and a fake widget renderer.
 */
import { Widget } from '@lumino/widgets';
import { vi } from 'vitest';

import { IRenderHost } from '../src/renderer';
import { WIDGET_MIME } from '../src/report/types';

export const MODEL_ID = '4f1c2b0e9d8a4c7b';

/** Stands in for ipywidgets' WidgetRenderer. */
export class FakeWidgetRenderer extends Widget {
  constructor(private readonly found: boolean) {
    super();
  }
  async renderModel(model: any): Promise<void> {
    await new Promise(r => setTimeout(r, 1));
    this.node.textContent = this.found
      ? `EXPLORER ${model.data[WIDGET_MIME].model_id}`
      : 'Error displaying widget: model not found';
  }
}

export function fakeHost(opts: { open?: boolean; remote?: boolean; found?: boolean; kernel?: boolean } = {}) {
  const requestCommInfo = vi.fn(async () => ({
    content: { status: 'ok', comms: opts.remote ? { [MODEL_ID]: { target_name: 'jupyter.widget' } } : {} }
  }));
  const hasComm = vi.fn((id: string) => !!opts.open && id === MODEL_ID);
  const createRenderer = vi.fn(() => new FakeWidgetRenderer(opts.found ?? true));
  const kernel = { isDisposed: false, hasComm, requestCommInfo };
  const host = {
    rendermime: { createRenderer },
    sessionContext: { session: opts.kernel === false ? null : { kernel } }
  } as unknown as IRenderHost;
  return { host, requestCommInfo, hasComm, createRenderer };
}

