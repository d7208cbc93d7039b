/**
 * The MIME renderer for `application/vnd.nbprofiler.flame+json`: a report's flame graph as the
 * live explorer shows it (an ipywidgets Output holding the payload's `flame` and, for other
 * front ends, its static SVG), drawn by report/flame.ts with zoom and search, text only.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { flamePanel } from './report/flame';

export const FLAME_MIME = 'application/vnd.nbprofiler.flame+json';

export class FlameRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('nbp-FlameRenderer');
    this.node.dataset.mimeType = options.mimeType;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.textContent = '';
    this.node.appendChild(flamePanel(model.data[FLAME_MIME]));
  }
}

/** The renderer factory (its rank is the one index.ts gives every nbprofiler renderer). */
export function flameRendererFactory(): IRenderMime.IRendererFactory {
  return { safe: true, mimeTypes: [FLAME_MIME], createRenderer: options => new FlameRenderer(options) };
}
