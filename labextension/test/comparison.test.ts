/**
 * The renderer of `%%torchprofile --compare` outputs: the live Compare view
 * while the kernel has it, else the comparison's saved HTML, drawn the way
 * JupyterLab draws text/html (sanitized unless the output is trusted).
 */
import { Sanitizer } from '@jupyterlab/apputils';
import { describe, expect, it, vi } from 'vitest';

import {
  COMPARISON_MIME,
  ComparisonRenderer,
  comparisonRendererFactory,
  parseComparison
} from '../src/comparison';
import { RENDERER_RANK } from '../src/renderer';
import { WIDGET_MIME } from '../src/report/types';
import { fakeHost, MODEL_ID } from './fake-host';
import charts from './fixtures/charts.json';

const HOSTILE_IMG = '<img src="x" onerror="alert(1)">';
const VERDICT = '1.74× faster (1.52–1.96)';
const HTML =
  `<div class="nbp"><h3>Did it help?</h3><p class="verdict">${VERDICT}</p>` +
  `<p>stated: at most 1.41× · measured: 1.74× (1.52–1.96)</p>${HOSTILE_IMG}` +
  '<script>window.__nbpRan = true</script></div>';

function mimeModel(opts: { widget?: boolean; trusted?: boolean; data?: unknown } = {}) {
  const data: { [k: string]: unknown } = {
    'text/plain': `Comparison: ${VERDICT}`,
    [COMPARISON_MIME]: opts.data ?? { version: 1, html: HTML, verdict: VERDICT }
  };
  if (opts.widget) {
    data[WIDGET_MIME] = { version_major: 2, version_minor: 0, model_id: MODEL_ID };
  }
  return { trusted: opts.trusted ?? true, data, metadata: {}, setData: () => undefined } as any;
}

function renderer(host?: ReturnType<typeof fakeHost>['host']) {
  const sanitizer = new Sanitizer();
  const sanitize = vi.spyOn(sanitizer, 'sanitize');
  const options = { mimeType: COMPARISON_MIME, sanitizer, resolver: null, linkHandler: null, latexTypesetter: null };
  return { r: new ComparisonRenderer(options as any, host), sanitize };
}

const flush = () => new Promise(r => setTimeout(r, 20));

describe('comparison payload', () => {
  it('reads version 1, and refuses what it cannot draw with a reason', () => {
    expect(parseComparison({ version: 1, html: '<p>x</p>', verdict: VERDICT })).toEqual({ version: 1, html: '<p>x</p>', verdict: VERDICT, chart: null });
    expect(parseComparison({ version: 1, html: '<p>x</p>', chart: { panels: 'no' } }).chart).toBeNull();
    expect(parseComparison({ version: 1, html: '', extra: 1 }).verdict).toBe('');
    expect(() => parseComparison({ version: 2, html: '<p>x</p>' })).toThrow(/newer than this extension understands/);
    expect(() => parseComparison({ version: 1 })).toThrow(/no html/);
    expect(() => parseComparison({ html: '<p>x</p>' })).toThrow(/no version/);
    expect(() => parseComparison('<p>x</p>')).toThrow(/not a JSON object/);
  });

  it('has a factory ranked with the report renderer, ahead of ipywidgets', () => {
    const f = comparisonRendererFactory();
    expect(f.mimeTypes).toEqual([COMPARISON_MIME]);
    expect(f.safe).toBe(true);
    expect(f.defaultRank).toBe(RENDERER_RANK);
    expect(f.createRenderer({ mimeType: COMPARISON_MIME } as any)).toBeInstanceOf(ComparisonRenderer);
  });
});

describe('drawing a comparison', () => {
  it('draws the saved HTML of a trusted output as it is, unsanitized', async () => {
    const { r, sanitize } = renderer();
    await r.renderModel(mimeModel({ trusted: true }));
    expect(r.mode).toBe('static');
    const saved = r.node.querySelector('.nbp-comparison-saved') as HTMLElement;
    expect(saved.classList.contains('jp-RenderedHTMLCommon')).toBe(true);
    expect(saved.dataset.verdict).toBe(VERDICT);
    expect(saved.querySelector('.verdict')!.textContent).toBe(VERDICT);
    expect(saved.textContent).toContain('stated: at most 1.41× · measured: 1.74× (1.52–1.96)');
    expect(sanitize).not.toHaveBeenCalled();
  });

  it('sanitizes the saved HTML of an untrusted output, as JupyterLab does text/html', async () => {
    const { r, sanitize } = renderer();
    await r.renderModel(mimeModel({ trusted: false }));
    expect(sanitize).toHaveBeenCalledWith(HTML);
    const saved = r.node.querySelector('.nbp-comparison-saved') as HTMLElement;
    expect(saved.querySelector('.verdict')!.textContent).toBe(VERDICT);
    expect(saved.querySelector('[onerror]')).toBeNull();
    expect(saved.querySelector('script')).toBeNull();
    expect((window as any).__nbpRan).toBeUndefined();
  });

  it("draws the chart from its spec in the HTML's chart slot, interactive, trusted or not", async () => {
    // The real comparison of two V100 traces (num_workers 0, then 4), as Python sends it.
    const spec = (charts as any).comparison.breakdown;
    const html = `<div class="nbp"><h4>Breakdown</h4><div class="nbp-compare-chart"><svg><title>static</title></svg></div></div>`;
    for (const trusted of [true, false]) {
      const { r } = renderer();
      await r.renderModel(mimeModel({ trusted, data: { version: 1, html, verdict: VERDICT, chart: spec } }));
      const slot = r.node.querySelector('.nbp-compare-chart') as HTMLElement;
      const box = slot.querySelector('.nbp-chartbox') as HTMLElement;
      expect(box.dataset.chart).toBe(spec.name);
      expect(slot.textContent).not.toContain('static');
      // A legend entry for each part either run has.
      for (const series of spec.panels[0].series) {
        expect(box.querySelector('.nbp-legend')!.textContent).toContain(series.label);
      }
    }
  });

  it('hands a live comparison to the explorer', async () => {
    const { host, createRenderer } = fakeHost({ open: true });
    const { r } = renderer(host);
    await r.renderModel(mimeModel({ widget: true }));
    expect(createRenderer).toHaveBeenCalledWith(WIDGET_MIME);
    expect(r.mode).toBe('widget');
    expect(r.node.textContent).toBe(`EXPLORER ${MODEL_ID}`);
    expect(r.node.querySelector('.nbp-comparison-saved')).toBeNull();
  });

  it('draws the saved HTML when the kernel no longer has the explorer (reopened notebook)', async () => {
    const { host, createRenderer, requestCommInfo } = fakeHost({ open: false, remote: false });
    const { r } = renderer(host);
    await r.renderModel(mimeModel({ widget: true }));
    await flush();
    expect(r.mode).toBe('static');
    expect(requestCommInfo).toHaveBeenCalledTimes(1);
    expect(createRenderer).not.toHaveBeenCalled();
    expect(r.node.querySelector('.nbp-comparison-saved .verdict')!.textContent).toBe(VERDICT);
  });

  it('switches to the explorer when the kernel still has it (page reload)', async () => {
    const { host } = fakeHost({ open: false, remote: true });
    const { r } = renderer(host);
    await r.renderModel(mimeModel({ widget: true }));
    expect(r.mode).toBe('static');
    await flush();
    expect(r.mode).toBe('widget');
  });

  it('explains a payload it cannot draw, with the text fallback', async () => {
    const { r } = renderer();
    await r.renderModel(mimeModel({ data: { version: 3, html: '<p>x</p>' } }));
    expect(r.mode).toBe('error');
    expect(r.node.textContent).toContain('This nbprofiler comparison cannot be shown: comparison version 3 is newer');
    expect(r.node.querySelector('pre')!.textContent).toBe(`Comparison: ${VERDICT}`);
  });
});
