/**
 * The MIME renderer for `application/vnd.nbprofiler.chart+json`: one chart of
 * a report, as the live explorer shows it (an ipywidgets Output holding the
 * spec and, for other front ends, its static SVG). Drawn by report/charts.ts
 * through DOM text only, so it is safe for untrusted notebooks.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { IChartSpec, renderChart } from './report/charts';

export const CHART_MIME = 'application/vnd.nbprofiler.chart+json';

/** The newest spec version this extension draws (2 added the "scatter" kind; Python's charts.KIND_VERSIONS). */
export const CHART_VERSION = 2;

export class ChartRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('nbp-ChartRenderer');
    this.node.dataset.mimeType = options.mimeType;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.textContent = '';
    const spec = model.data[CHART_MIME] as unknown as IChartSpec | undefined;
    if (!spec || typeof spec !== 'object' || !Array.isArray(spec.panels)) {
      this.node.textContent = 'nbprofiler: this chart data is not a chart spec.';
      return;
    }
    if (Math.floor(spec.version) > CHART_VERSION) {
      this.node.textContent = `nbprofiler: chart version ${spec.version} is newer than this extension draws (${CHART_VERSION}); upgrade nbprofiler.`;
      return;
    }
    this.node.appendChild(renderChart(spec));
  }
}

/** The renderer factory (its rank is the one index.ts gives every nbprofiler renderer). */
export function chartRendererFactory(): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [CHART_MIME],
    createRenderer: options => new ChartRenderer(options)
  };
}
