/**
 * The MIME renderer for `application/vnd.nbprofiler.timeline+json`: the
 * Timeline tab of the live explorer puts this payload in an ipywidgets Output,
 * and JupyterLab draws it here. Works without a network and without a kernel.
 */
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { disposeTimeline, renderTimeline, TIMELINE_MIME } from './timeline';

export { TIMELINE_MIME };

export class TimelineRenderer extends Widget implements IRenderMime.IRenderer {
  private content: HTMLElement | null = null;

  constructor(options: IRenderMime.IRendererOptions) {
    super();
    this.addClass('nbp-TimelineRenderer');
    this.node.dataset.mimeType = options.mimeType;
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.clear();
    this.content = renderTimeline(model.data[TIMELINE_MIME]);
    this.node.appendChild(this.content);
  }

  dispose(): void {
    this.clear();
    super.dispose();
  }

  private clear(): void {
    if (this.content) {
      disposeTimeline(this.content);
      this.content.remove();
      this.content = null;
    }
  }
}

/** The renderer factory (its rank is the one index.ts gives every nbprofiler renderer). */
export function timelineRendererFactory(): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [TIMELINE_MIME],
    createRenderer: options => new TimelineRenderer(options)
  };
}
