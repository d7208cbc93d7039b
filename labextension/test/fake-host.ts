/**
 * A notebook host for the renderers' tests: a session whose fake kernel has (or
 * has not) the explorer's widget comm, with the session's signals, and a fake
 * widget renderer.
 */
import { Signal } from '@lumino/signaling';
import { Widget } from '@lumino/widgets';
import { vi } from 'vitest';

import { IRenderHost } from '../src/renderer';
import { WIDGET_MIME } from '../src/report/types';

export const MODEL_ID = '4f1c2b0e9d8a4c7b';

/**
 * Stands in for ipywidgets' WidgetRenderer: the explorer, or "model not found". With `restore`,
 * it first shows "Loading widget..." (its manager has not restored the kernel's models) until the
 * promise resolves, as ipywidgets does.
 */
export class FakeWidgetRenderer extends Widget {
  constructor(
    private readonly found: boolean,
    private readonly restore?: Promise<void>
  ) {
    super();
  }
  async renderModel(model: any): Promise<void> {
    this.node.textContent = 'Loading widget...';
    await new Promise(r => setTimeout(r, 1));
    const draw = () => {
      this.node.textContent = this.found
        ? `EXPLORER ${model.data[WIDGET_MIME].model_id}`
        : 'Error displaying widget: model not found';
    };
    if (this.restore) {
      void this.restore.then(draw);
    } else {
      draw();
    }
  }
}

/** A kernel connection as the renderer reads it. */
export function fakeKernel(opts: { open?: boolean; remote?: boolean } = {}) {
  return {
    isDisposed: false,
    status: 'idle',
    connectionStatus: 'connected',
    hasComm: vi.fn((id: string) => !!opts.open && id === MODEL_ID),
    requestCommInfo: vi.fn(async () => ({
      content: { status: 'ok', comms: opts.remote ? { [MODEL_ID]: { target_name: 'jupyter.widget' } } : {} }
    }))
  };
}

export function fakeHost(
  opts: { open?: boolean; remote?: boolean; found?: boolean; kernel?: boolean; restore?: Promise<void> } = {}
) {
  const kernel = fakeKernel(opts);
  const createRenderer = vi.fn(() => new FakeWidgetRenderer(opts.found ?? true, opts.restore));
  const sessionContext = {
    session: opts.kernel === false ? null : { kernel },
    kernelChanged: new Signal<unknown, unknown>({}),
    statusChanged: new Signal<unknown, string>({}),
    connectionStatusChanged: new Signal<unknown, string>({})
  };
  const host = { rendermime: { createRenderer }, sessionContext } as unknown as IRenderHost;
  /** The session now has `next` as its kernel (null: shut down), as JupyterLab signals it. */
  const changeKernel = (next: ReturnType<typeof fakeKernel> | null) => {
    sessionContext.session = next ? { kernel: next } : null;
    sessionContext.kernelChanged.emit(next);
  };
  /** The kernel's status changes, as JupyterLab signals it. */
  const setStatus = (status: string) => {
    kernel.status = status;
    sessionContext.statusChanged.emit(status);
  };
  return {
    host,
    kernel,
    requestCommInfo: kernel.requestCommInfo,
    hasComm: kernel.hasComm,
    createRenderer,
    changeKernel,
    setStatus
  };
}
