/**
 * The MIME renderer for `application/vnd.nbprofiler.comparison+json`: the
 * output `%%torchprofile --compare` shows under the report.
 *
 * Like the report, one output holds the Compare view of the live explorer and
 * the comparison's static HTML, made by Python. With the widget alive in the
 * notebook's kernel, the explorer leads (renderer.ts decides, as for reports);
 * reopened without it, the saved HTML is drawn exactly as JupyterLab draws a
 * `text/html` output: through `renderHTML`, sanitized unless the output is
 * trusted. The extension has no comparison logic of its own.
 */
import { renderHTML } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { IRenderHost, LiveOrSavedRenderer, RENDERER_RANK } from './renderer';
import { IChartSpec, renderChart } from './report/charts';

export const COMPARISON_MIME = 'application/vnd.nbprofiler.comparison+json';

/** The payload version this extension reads. */
export const COMPARISON_VERSION = 1;

export interface IComparisonPayload {
  version: number;
  /** Static HTML of the comparison, made by nbprofiler (Comparison.to_html). */
  html: string;
  /** "1.74× faster (1.52–1.96)", or "no measurable change (0.97–1.04)". */
  verdict: string;
  /** The side-by-side breakdown chart's spec (charts.ts), drawn interactive in the HTML's chart slot. */
  chart: IChartSpec | null;
}

/** The HTML's place for the chart: it holds a static SVG, which the sanitizer of an untrusted notebook drops. */
export const CHART_SLOT = '.nbp-compare-chart';

function chartSpec(value: unknown): IChartSpec | null {
  const v = value as { panels?: unknown } | null;
  return typeof v === 'object' && v !== null && Array.isArray(v.panels) ? (value as IChartSpec) : null;
}

/** The payload, checked; throws with the reason when it cannot be drawn. */
export function parseComparison(data: unknown): IComparisonPayload {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new Error('the comparison data is not a JSON object');
  }
  const d = data as { [key: string]: unknown };
  const version = typeof d.version === 'number' && Number.isFinite(d.version) ? d.version : NaN;
  if (Number.isNaN(version)) {
    throw new Error('the comparison data has no version');
  }
  if (Math.floor(version) > COMPARISON_VERSION) {
    throw new Error(
      `comparison version ${version} is newer than this extension understands (${COMPARISON_VERSION}); upgrade nbprofiler`
    );
  }
  if (typeof d.html !== 'string') {
    throw new Error('the comparison data has no html');
  }
  return { version, html: d.html, verdict: typeof d.verdict === 'string' ? d.verdict : '', chart: chartSpec(d.chart) };
}

export class ComparisonRenderer extends LiveOrSavedRenderer<IComparisonPayload> {
  constructor(
    private readonly options: IRenderMime.IRendererOptions,
    host?: IRenderHost | null
  ) {
    super(options, host, COMPARISON_MIME, 'comparison');
    this.addClass('nbp-ComparisonRenderer');
  }

  protected parse(data: unknown): IComparisonPayload {
    return parseComparison(data);
  }

  protected async showSaved(saved: IComparisonPayload, model: IRenderMime.IMimeModel): Promise<Widget> {
    const widget = new Widget();
    // The classes of JupyterLab's own text/html outputs, for the same look.
    widget.addClass('jp-RenderedHTMLCommon');
    widget.addClass('jp-RenderedHTML');
    widget.addClass('nbp-comparison-saved');
    widget.node.dataset.verdict = saved.verdict;
    const o = this.options;
    await renderHTML({
      host: widget.node,
      source: saved.html,
      trusted: model.trusted,
      sanitizer: o.sanitizer,
      resolver: o.resolver,
      linkHandler: o.linkHandler,
      shouldTypeset: false,
      latexTypesetter: o.latexTypesetter,
      translator: o.translator
    });
    const slot = widget.node.querySelector(CHART_SLOT);
    if (slot && saved.chart) {
      slot.replaceChildren(renderChart(saved.chart));
    }
    return widget;
  }
}

/** The renderer factory; `host` binds renderers to one notebook panel. */
export function comparisonRendererFactory(host?: IRenderHost): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [COMPARISON_MIME],
    defaultRank: RENDERER_RANK,
    createRenderer: options => new ComparisonRenderer(options, host)
  };
}
