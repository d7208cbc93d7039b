/**
 * The renderer's choice between the live explorer and the saved report,
 * against fake kernels and a fake widget renderer.
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import { Panel, Widget } from '@lumino/widgets';
import { afterEach, describe, expect, it } from 'vitest';

import { RENDERER_RANK, ReportRenderer, reportRendererFactory, widgetModelId } from '../src/renderer';
import { REPORT_MIME, WIDGET_MIME } from '../src/report/types';
import { fakeHost, fakeKernel, MODEL_ID } from './fake-host';

const payload = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'report_cpu_live.json'), 'utf-8'));

function mimeModel(opts: { widget?: boolean; trusted?: boolean; data?: unknown } = {}) {
  const data: { [k: string]: unknown } = {
    'text/plain': 'nbprofiler report (text)',
    'text/html': '<div>static html</div>',
    [REPORT_MIME]: opts.data ?? payload
  };
  if (opts.widget !== false) {
    data[WIDGET_MIME] = { version_major: 2, version_minor: 0, model_id: MODEL_ID };
  }
  return { trusted: opts.trusted ?? true, data, metadata: {}, setData: () => undefined } as any;
}

const attached: Widget[] = [];
function attach(w: Widget): void {
  Widget.attach(w, document.body);
  attached.push(w);
}
afterEach(() => {
  for (const w of attached.splice(0)) {
    if (w.isAttached) {
      Widget.detach(w);
    }
    w.dispose();
  }
});

const flush = () => new Promise(r => setTimeout(r, 20));

describe('factory', () => {
  it('ranks ahead of the ipywidgets renderer and is safe for untrusted output', () => {
    const f = reportRendererFactory();
    expect(f.mimeTypes).toEqual([REPORT_MIME]);
    expect(f.safe).toBe(true);
    expect(RENDERER_RANK).toBeLessThan(-10);
    expect(f.defaultRank).toBe(RENDERER_RANK);
  });

  it('reads the widget model id', () => {
    expect(widgetModelId({ model_id: 'abc' })).toBe('abc');
    expect(widgetModelId({ model_id: 3 })).toBe('');
    expect(widgetModelId(undefined)).toBe('');
  });
});

describe('choosing what to show', () => {
  it('draws the saved report when the bundle has no widget', async () => {
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any);
    await r.renderModel(mimeModel({ widget: false }));
    expect(r.mode).toBe('static');
    expect(r.node.dataset.nbprofilerMode).toBe('static');
    expect(r.node.querySelector('.nbp-report')).not.toBeNull();
    expect(r.node.querySelector('.nbp-footer')!.textContent).toMatch(/^Report drawn by the nbprofiler JupyterLab extension/);
  });

  it('hands a live explorer to the widget renderer', async () => {
    const { host, createRenderer, requestCommInfo } = fakeHost({ open: true });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    expect(createRenderer).toHaveBeenCalledWith(WIDGET_MIME);
    expect(r.mode).toBe('widget');
    expect(r.node.textContent).toBe(`EXPLORER ${MODEL_ID}`);
    expect(r.node.querySelector('.nbp-report')).toBeNull();
    expect(requestCommInfo).not.toHaveBeenCalled();
  });

  it('draws the saved report when the kernel does not have the widget (reopened notebook, new kernel)', async () => {
    const { host, createRenderer, requestCommInfo } = fakeHost({ open: false, remote: false });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    expect(r.mode).toBe('static');
    expect(requestCommInfo).toHaveBeenCalledTimes(1);
    expect(createRenderer).not.toHaveBeenCalled();
    expect(r.node.textContent).not.toContain('Error displaying widget');
    expect(r.node.querySelector('.nbp-footer')!.textContent).toMatch(/the interactive explorer needs the kernel that made it/);
  });

  it('draws the saved report when there is no kernel at all', async () => {
    const { host, createRenderer } = fakeHost({ kernel: false });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    expect(r.mode).toBe('static');
    expect(createRenderer).not.toHaveBeenCalled();
  });

  it('switches to the explorer when the kernel still has it (page reload, kernel running)', async () => {
    const { host, requestCommInfo } = fakeHost({ open: false, remote: true });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    expect(r.mode).toBe('static');
    await flush();
    expect(requestCommInfo).toHaveBeenCalledWith({ target_name: 'jupyter.widget' });
    expect(r.mode).toBe('widget');
    expect(r.node.textContent).toBe(`EXPLORER ${MODEL_ID}`);
  });

  it('falls back to the saved report when the widget renderer cannot find the model', async () => {
    const { host } = fakeHost({ open: true, found: false });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    expect(r.mode).toBe('static');
    expect(r.node.textContent).not.toContain('Error displaying widget');
    expect(r.node.querySelector('.nbp-report')).not.toBeNull();
  });

  it('never renders a widget for untrusted output', async () => {
    const { host, createRenderer, requestCommInfo, hasComm } = fakeHost({ open: true, remote: true });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel({ trusted: false }));
    await flush();
    expect(r.mode).toBe('static');
    expect(createRenderer).not.toHaveBeenCalled();
    expect(requestCommInfo).not.toHaveBeenCalled();
    expect(hasComm).not.toHaveBeenCalled();
  });

  it('finds its notebook panel when attached, without a bound host', async () => {
    const { host, requestCommInfo } = fakeHost({ open: false, remote: true });
    const panel = new Panel();
    Object.assign(panel, { sessionContext: host.sessionContext, content: { rendermime: host.rendermime } });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any);
    await r.renderModel(mimeModel());
    expect(r.mode).toBe('static');
    expect(requestCommInfo).not.toHaveBeenCalled();
    panel.addWidget(r);
    attach(panel);
    await flush();
    expect(requestCommInfo).toHaveBeenCalledTimes(1);
    expect(r.mode).toBe('widget');
  });

  it('shows the latest model when rendered again', async () => {
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any);
    await r.renderModel(mimeModel({ widget: false }));
    await r.renderModel(mimeModel({ widget: false, data: { ...payload, title: 'second' } }));
    expect(r.node.querySelectorAll('.nbp-report').length).toBe(1);
    expect(r.node.querySelector('.nbp-title')!.textContent).toBe('second');
  });

  it('explains a payload it cannot read, with the text fallback', async () => {
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any);
    await r.renderModel(mimeModel({ widget: false, data: { schema: 'nbprofiler.report/9' } }));
    expect(r.mode).toBe('error');
    expect(r.node.textContent).toContain('newer than this extension understands');
    expect(r.node.querySelector('pre')!.textContent).toBe('nbprofiler report (text)');
  });
});

describe('following the kernel', () => {
  it('replaces the explorer with the saved report when its kernel is shut down, and says why', async () => {
    const { host, changeKernel } = fakeHost({ open: true });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    expect(r.mode).toBe('widget');
    changeKernel(null);
    await flush();
    expect(r.mode).toBe('static');
    expect(r.node.textContent).not.toContain('EXPLORER');
    expect(r.node.querySelector('.nbp-footer')!.textContent).toMatch(/the kernel that made the interactive explorer has stopped/);
  });

  it('replaces the explorer when its kernel restarts or dies', async () => {
    for (const status of ['restarting', 'dead']) {
      const { host, setStatus } = fakeHost({ open: true });
      const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
      await r.renderModel(mimeModel());
      expect(r.mode).toBe('widget');
      setStatus('busy');
      await flush();
      expect(r.mode).toBe('widget');
      setStatus(status);
      await flush();
      expect(r.mode).toBe('static');
    }
  });

  it('switches to the explorer when the kernel that has it connects after the drawing (page reload)', async () => {
    const { host, changeKernel } = fakeHost({ kernel: false });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    expect(r.mode).toBe('static');
    const kernel = fakeKernel({ remote: true });
    changeKernel(kernel);
    await flush();
    expect(kernel.requestCommInfo).toHaveBeenCalledWith({ target_name: 'jupyter.widget' });
    expect(r.mode).toBe('widget');
    expect(r.node.textContent).toBe(`EXPLORER ${MODEL_ID}`);
  });

  it('waits behind the saved drawing while ipywidgets restores the models, then shows the explorer', async () => {
    let restored!: () => void;
    const restore = new Promise<void>(resolve => (restored = resolve));
    const { host } = fakeHost({ remote: true, restore });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    expect(r.mode).toBe('static');
    expect(r.node.querySelector('.nbp-report')).not.toBeNull();
    // Never "Loading widget..." beside the saved report: the explorer's host is hidden meanwhile.
    const host_ = r.node.querySelector('.nbp-widget-host') as HTMLElement;
    expect(host_.classList.contains('lm-mod-hidden')).toBe(true);
    restored();
    await flush();
    expect(r.mode).toBe('widget');
    expect(r.node.textContent).toBe(`EXPLORER ${MODEL_ID}`);
  });

  it('keeps the saved report when the restored models lack the widget', async () => {
    const { host } = fakeHost({ remote: true, found: false, restore: Promise.resolve() });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    expect(r.mode).toBe('static');
    expect(r.node.textContent).not.toContain('Error displaying widget');
  });

  it('asks each kernel once, not at every status change', async () => {
    const { host, requestCommInfo, setStatus } = fakeHost({ remote: false });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    for (const status of ['busy', 'idle', 'busy', 'idle']) {
      setStatus(status);
    }
    await flush();
    expect(requestCommInfo).toHaveBeenCalledTimes(1);
    expect(r.mode).toBe('static');
  });

  it('stops following the kernel once disposed', async () => {
    const { host, changeKernel } = fakeHost({ kernel: false });
    const r = new ReportRenderer({ mimeType: REPORT_MIME } as any, host);
    await r.renderModel(mimeModel());
    await flush();
    r.dispose();
    const kernel = fakeKernel({ remote: true });
    changeKernel(kernel);
    await flush();
    expect(kernel.requestCommInfo).not.toHaveBeenCalled();
  });
});
