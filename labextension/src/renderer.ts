/**
 * The MIME renderer for `application/vnd.nbprofiler.report+json`, and what it
 * shares with the comparison's renderer (comparison.ts): the choice between
 * the live explorer and the saved data.
 *
 * Ranking: ipywidgets registers its `application/vnd.jupyter.widget-view+json`
 * renderer at rank -10, and JupyterLab renders an output with the single
 * best-ranked renderer, never falling back when that renderer fails. So with
 * the explorer widget and the report data in one mimebundle, the widget
 * renderer would win and print "Error displaying widget: model not found"
 * once the widget state is gone. This renderer ranks ahead of it (-20) and
 * decides itself:
 *
 *  - the bundle names a widget model whose comm is open in the notebook's
 *    live kernel: it hands the output to the widget renderer (the explorer);
 *  - otherwise (no kernel, a new kernel, no widget data, untrusted output):
 *    it draws the saved report from the JSON data, and, if a kernel is there,
 *    asks it once whether that widget still lives, to switch to the explorer
 *    if it does (a page reload with the kernel still running).
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { PromiseDelegate } from '@lumino/coreutils';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { h } from './report/dom';
import { IReport, parseReport, REPORT_MIME, WIDGET_MIME } from './report/types';
import { ReportView } from './report/view';

/** Ahead of ipywidgets' -10 (lower ranks win). */
export const RENDERER_RANK = -20;

const WIDGET_TARGET = 'jupyter.widget';

/** Where a renderer lives: its notebook's renderers and kernel session. */
export interface IRenderHost {
  rendermime: IRenderMimeRegistry;
  sessionContext: ISessionContext;
}

/** The host of a widget: the nearest notebook (or console) panel above it. */
export function findHost(widget: Widget): IRenderHost | null {
  for (let w: Widget | null = widget.parent; w; w = w.parent) {
    const any = w as unknown as {
      sessionContext?: ISessionContext;
      content?: { rendermime?: IRenderMimeRegistry };
      console?: { rendermime?: IRenderMimeRegistry };
    };
    const rendermime = any.content?.rendermime ?? any.console?.rendermime;
    if (any.sessionContext && rendermime) {
      return { rendermime, sessionContext: any.sessionContext };
    }
  }
  return null;
}

/** The widget model id a bundle names, or '' when it names none. */
export function widgetModelId(data: unknown): string {
  if (typeof data === 'object' && data !== null && typeof (data as { model_id?: unknown }).model_id === 'string') {
    return (data as { model_id: string }).model_id;
  }
  return '';
}

export type RenderMode = 'static' | 'widget' | 'error';

/**
 * An output that the notebook's live ipywidgets explorer shows while its
 * kernel has the widget, and that this extension draws from the saved data
 * otherwise. Subclasses say how to read the saved data and how to draw it.
 */
export abstract class LiveOrSavedRenderer<T> extends Panel implements IRenderMime.IRenderer {
  private readonly boundHost: IRenderHost | null;
  private generation = 0;
  private attached = new PromiseDelegate<void>();
  private _mode: RenderMode = 'static';

  /**
   * @param mimeType - the MIME type of the saved data.
   * @param what - what the output is, in words, for the message when it cannot be shown.
   */
  constructor(
    options: IRenderMime.IRendererOptions,
    host: IRenderHost | null | undefined,
    protected readonly mimeType: string,
    private readonly what: string
  ) {
    super();
    this.boundHost = host ?? null;
    this.node.dataset.mimeType = options.mimeType;
  }

  /** What the renderer shows now (tests read it from `data-nbprofiler-mode`). */
  get mode(): RenderMode {
    return this._mode;
  }

  /** The saved data, read from the bundle; throws with a reason when it cannot be read. */
  protected abstract parse(data: unknown): T;

  /** Draw the saved data; `hadWidget` says the bundle also named an explorer that is gone. */
  protected abstract showSaved(saved: T, model: IRenderMime.IMimeModel, hadWidget: boolean): Promise<Widget>;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const generation = ++this.generation;
    let saved: T;
    try {
      saved = this.parse(model.data[this.mimeType]);
    } catch (err) {
      this.showError(err, model);
      return;
    }
    const modelId = widgetModelId(model.data[WIDGET_MIME]);
    if (modelId && model.trusted) {
      const host = this.host();
      if (host && this.commIsOpen(host, modelId)) {
        if (await this.showWidget(host, model, generation)) {
          return;
        }
      }
    }
    if (generation !== this.generation) {
      return;
    }
    const widget = await this.showSaved(saved, model, modelId !== '');
    if (generation !== this.generation) {
      widget.dispose();
      return;
    }
    this.clearContent();
    this.addWidget(widget);
    this.setMode('static');
    if (modelId && model.trusted) {
      void this.upgradeIfLive(model, modelId, generation);
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.attached.resolve();
  }

  private host(): IRenderHost | null {
    return this.boundHost ?? (this.isAttached ? findHost(this) : null);
  }

  private commIsOpen(host: IRenderHost, modelId: string): boolean {
    const kernel = host.sessionContext.session?.kernel;
    return !!kernel && !kernel.isDisposed && kernel.hasComm(modelId);
  }

  /** The saved data is drawn; switch to the explorer if its widget turns out to be alive. */
  private async upgradeIfLive(model: IRenderMime.IMimeModel, modelId: string, generation: number): Promise<void> {
    let host = this.host();
    if (!host) {
      await this.attached.promise;
      host = this.host();
    }
    const kernel = host?.sessionContext.session?.kernel;
    if (!host || !kernel || kernel.isDisposed || generation !== this.generation) {
      return;
    }
    let live = kernel.hasComm(modelId);
    if (!live) {
      try {
        const reply = await kernel.requestCommInfo({ target_name: WIDGET_TARGET });
        const content = reply.content as { status: string; comms?: { [id: string]: unknown } };
        live = content.status === 'ok' && !!content.comms && modelId in content.comms;
      } catch {
        return; // The kernel went away: the saved drawing stays.
      }
    }
    if (live && generation === this.generation) {
      await this.showWidget(host, model, generation);
    }
  }

  private clearContent(): void {
    for (const w of [...this.widgets]) {
      w.dispose();
    }
    this.node.textContent = '';
  }

  private setMode(mode: RenderMode): void {
    this._mode = mode;
    this.node.dataset.nbprofilerMode = mode;
  }

  /** Render the bundle with the notebook's widget renderer; false when that fails. */
  private async showWidget(host: IRenderHost, model: IRenderMime.IMimeModel, generation: number): Promise<boolean> {
    let renderer: IRenderMime.IRenderer;
    try {
      renderer = host.rendermime.createRenderer(WIDGET_MIME);
    } catch {
      return false; // No widget renderer (ipywidgets' extension is not installed).
    }
    const previous = [...this.widgets];
    renderer.addClass('nbp-widget-host');
    // Kept hidden until the explorer is drawn, so "Loading widget..." never shows
    // next to the saved drawing it is about to replace.
    renderer.hide();
    this.addWidget(renderer);
    try {
      await renderer.renderModel(model);
    } catch {
      renderer.dispose();
      return false;
    }
    if (generation !== this.generation || renderer.isDisposed) {
      renderer.dispose();
      return generation !== this.generation;
    }
    // ipywidgets reports a missing model as text instead of failing the promise.
    if ((renderer.node.textContent ?? '').startsWith('Error displaying widget')) {
      renderer.dispose();
      return false;
    }
    for (const w of previous) {
      w.dispose();
    }
    renderer.show();
    this.setMode('widget');
    return true;
  }

  private showError(err: unknown, model: IRenderMime.IMimeModel): void {
    this.clearContent();
    const text = model.data['text/plain'];
    const node = h(
      'div',
      { class: 'nbp-report nbp-report-error' },
      h('p', null, `This nbprofiler ${this.what} cannot be shown: ${err instanceof Error ? err.message : String(err)}.`),
      typeof text === 'string' ? h('pre', null, text) : null
    );
    this.addWidget(new Widget({ node }));
    this.setMode('error');
  }
}

/** The saved report, drawn from its JSON by ReportView; the explorer while it lives. */
export class ReportRenderer extends LiveOrSavedRenderer<IReport> {
  constructor(options: IRenderMime.IRendererOptions, host?: IRenderHost | null) {
    super(options, host, REPORT_MIME, 'report');
    this.addClass('nbp-ReportRenderer');
  }

  protected parse(data: unknown): IReport {
    return parseReport(data);
  }

  protected async showSaved(report: IReport, model: IRenderMime.IMimeModel, hadWidget: boolean): Promise<Widget> {
    const footer = hadWidget
      ? 'Saved report, drawn by the nbprofiler JupyterLab extension: the interactive explorer needs the kernel that made it. Run the cell again to get it back.'
      : 'Report drawn by the nbprofiler JupyterLab extension from the data saved in this output.';
    // The Export tab offers the output's own static HTML report and data as downloads.
    const html = model.data['text/html'];
    const view = new ReportView(report, {
      footer,
      html: typeof html === 'string' ? html : undefined,
      data: model.data[this.mimeType]
    });
    const widget = new Widget({ node: view.node });
    widget.disposed.connect(() => view.dispose());
    return widget;
  }
}

/** The renderer factory; `host` binds renderers to one notebook panel. */
export function reportRendererFactory(host?: IRenderHost): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [REPORT_MIME],
    defaultRank: RENDERER_RANK,
    createRenderer: options => new ReportRenderer(options, host)
  };
}
