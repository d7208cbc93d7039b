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
 *    it draws the saved report from the JSON data, and asks each kernel the
 *    notebook connects to (once) whether that widget still lives, to switch to
 *    the explorer if it does (a page reload with the kernel still running);
 *  - when the kernel of a shown explorer stops (shut down, restarted, dead,
 *    replaced), the saved report replaces the explorer and says why.
 */
import { ISessionContext } from '@jupyterlab/apputils';
import { Kernel } from '@jupyterlab/services';
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
 * Why the saved data is drawn: the bundle names no explorer (`plain`), it names one that no
 * kernel here has (`needs-kernel`), or the explorer was on screen and its kernel stopped
 * (`kernel-stopped`). The footer says so.
 */
export type SavedReason = 'plain' | 'needs-kernel' | 'kernel-stopped';

/** Kernel states in which an explorer's widgets no longer answer. */
const GONE_STATES: ReadonlySet<string> = new Set(['dead', 'restarting', 'autorestarting', 'terminating']);

/** How long a hidden explorer may wait for ipywidgets to restore its models before the saved drawing stays. */
const RESTORE_WAIT_MS = 60000;

/**
 * An output that the notebook's live ipywidgets explorer shows while its
 * kernel has the widget, and that this extension draws from the saved data
 * otherwise. Subclasses say how to read the saved data and how to draw it.
 *
 * It follows the kernel for as long as it lives: the session's kernel changes
 * and status changes are watched, so the saved drawing replaces the explorer
 * when that kernel stops (shut down, restarted, dead, replaced), and the
 * explorer replaces the saved drawing when a kernel that has the widget
 * connects (a page reload while the kernel runs: the notebook's outputs are
 * drawn before its session has reconnected, so asking once at that moment finds
 * no kernel).
 */
export abstract class LiveOrSavedRenderer<T> extends Panel implements IRenderMime.IRenderer {
  private readonly boundHost: IRenderHost | null;
  private generation = 0;
  private attached = new PromiseDelegate<void>();
  private _mode: RenderMode = 'static';
  /** The bundle drawn now, its saved data and the widget model it names ('' for none). */
  private current: { model: IRenderMime.IMimeModel; saved: T; modelId: string } | null = null;
  /** The kernel whose widget is on screen, while the mode is 'widget'. */
  private liveKernel: Kernel.IKernelConnection | null = null;
  private watched: ISessionContext | null = null;
  private upgrading = false;
  /** The kernel last asked for the widget: it is not asked again (a widget id never reappears in a kernel). */
  private askedKernel: Kernel.IKernelConnection | null = null;

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

  /** Draw the saved data; `why` says why it is drawn instead of the explorer. */
  protected abstract showSaved(saved: T, model: IRenderMime.IMimeModel, why: SavedReason): Promise<Widget>;

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const generation = ++this.generation;
    let saved: T;
    try {
      saved = this.parse(model.data[this.mimeType]);
    } catch (err) {
      this.current = null;
      this.showError(err, model);
      return;
    }
    const modelId = model.trusted ? widgetModelId(model.data[WIDGET_MIME]) : '';
    this.current = { model, saved, modelId };
    this.askedKernel = null;
    if (modelId) {
      const host = this.host();
      const kernel = host ? this.usableKernel(host) : null;
      if (host && kernel && kernel.hasComm(modelId)) {
        this.watch(host);
        this.askedKernel = kernel;
        if (await this.showWidget(host, kernel, generation)) {
          return;
        }
      }
    }
    if (generation !== this.generation) {
      return;
    }
    await this.drawSaved(generation, widgetModelId(model.data[WIDGET_MIME]) ? 'needs-kernel' : 'plain');
    if (modelId && generation === this.generation) {
      void this.followKernel(generation);
    }
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    this.attached.resolve();
  }

  private host(): IRenderHost | null {
    return this.boundHost ?? (this.isAttached ? findHost(this) : null);
  }

  /** The session's kernel when it can answer (connected, not stopping), else null. */
  private usableKernel(host: IRenderHost): Kernel.IKernelConnection | null {
    const kernel = host.sessionContext.session?.kernel ?? null;
    if (!kernel || kernel.isDisposed || GONE_STATES.has(kernel.status) || kernel.connectionStatus === 'disconnected') {
      return null;
    }
    return kernel;
  }

  /** Draw the saved data in place of whatever is shown. */
  private async drawSaved(generation: number, why: SavedReason): Promise<void> {
    const current = this.current;
    if (!current) {
      return;
    }
    const widget = await this.showSaved(current.saved, current.model, why);
    if (generation !== this.generation) {
      widget.dispose();
      return;
    }
    this.clearContent();
    this.addWidget(widget);
    this.liveKernel = null;
    this.setMode('static');
  }

  /** Watch the kernel of the notebook this output is in (waiting for the panel when it is not bound). */
  private async followKernel(generation: number): Promise<void> {
    let host = this.host();
    if (!host) {
      await this.attached.promise;
      host = this.host();
    }
    if (!host || generation !== this.generation) {
      return;
    }
    this.watch(host);
    await this.onKernelEvent();
  }

  private watch(host: IRenderHost): void {
    const session = host.sessionContext;
    if (this.watched === session) {
      return;
    }
    this.watched = session;
    // Disconnected when this widget is disposed (Widget.dispose clears its signal data).
    session.kernelChanged.connect(this.onKernelEvent, this);
    session.statusChanged.connect(this.onKernelEvent, this);
    session.connectionStatusChanged.connect(this.onKernelEvent, this);
  }

  /** A kernel event: switch to what the kernel allows now. */
  private async onKernelEvent(): Promise<void> {
    const host = this.host();
    const current = this.current;
    if (!host || !current || !current.modelId || this.isDisposed) {
      return;
    }
    const kernel = this.usableKernel(host);
    if (this._mode === 'widget') {
      if (kernel === null || kernel !== this.liveKernel) {
        await this.drawSaved(this.generation, 'kernel-stopped');
      }
      return;
    }
    if (
      this._mode === 'static' &&
      kernel &&
      kernel !== this.askedKernel &&
      kernel.connectionStatus === 'connected' &&
      !this.upgrading
    ) {
      this.upgrading = true;
      try {
        await this.upgradeIfLive(host, kernel, current.modelId, this.generation);
      } finally {
        this.upgrading = false;
      }
    }
  }

  /** The saved data is drawn; switch to the explorer if the kernel still has its widget. */
  private async upgradeIfLive(
    host: IRenderHost,
    kernel: Kernel.IKernelConnection,
    modelId: string,
    generation: number
  ): Promise<void> {
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
    this.askedKernel = kernel;
    if (live && generation === this.generation && this.usableKernel(host) === kernel) {
      await this.showWidget(host, kernel, generation);
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

  /**
   * Render the bundle with the notebook's widget renderer; false when that fails. The new
   * renderer stays hidden behind what is shown until it holds the explorer: ipywidgets shows
   * "Loading widget..." until its manager has restored the kernel's models, and only then
   * draws the explorer or says the model was not found.
   */
  private async showWidget(host: IRenderHost, kernel: Kernel.IKernelConnection, generation: number): Promise<boolean> {
    const current = this.current;
    if (!current) {
      return false;
    }
    let renderer: IRenderMime.IRenderer;
    try {
      renderer = host.rendermime.createRenderer(WIDGET_MIME);
    } catch {
      return false; // No widget renderer (ipywidgets' extension is not installed).
    }
    const previous = [...this.widgets];
    renderer.addClass('nbp-widget-host');
    renderer.hide();
    this.addWidget(renderer);
    try {
      await renderer.renderModel(current.model);
      await settled(renderer.node, RESTORE_WAIT_MS);
    } catch {
      renderer.dispose();
      return false;
    }
    if (generation !== this.generation || renderer.isDisposed) {
      renderer.dispose();
      return generation !== this.generation;
    }
    const text = renderer.node.textContent ?? '';
    if (text.startsWith('Error displaying widget') || text.startsWith('Loading widget')) {
      renderer.dispose();
      return false;
    }
    for (const w of previous) {
      w.dispose();
    }
    renderer.show();
    this.liveKernel = kernel;
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
    this.liveKernel = null;
    this.setMode('error');
  }
}

/** Resolves once `node` no longer says "Loading widget..." (ipywidgets' placeholder), or after `ms`. */
function settled(node: HTMLElement, ms: number): Promise<void> {
  const loading = () => (node.textContent ?? '').startsWith('Loading widget');
  if (!loading()) {
    return Promise.resolve();
  }
  return new Promise(resolve => {
    const done = () => {
      observer.disconnect();
      clearTimeout(timer);
      resolve();
    };
    const observer = new MutationObserver(() => {
      if (!loading()) {
        done();
      }
    });
    const timer = setTimeout(done, ms);
    observer.observe(node, { childList: true, subtree: true, characterData: true });
  });
}

/** What the saved report's footer says, for each reason it is drawn. */
const SAVED_FOOTERS: { [why in SavedReason]: string } = {
  plain: 'Report drawn by the nbprofiler JupyterLab extension from the data saved in this output.',
  'needs-kernel':
    'Saved report, drawn by the nbprofiler JupyterLab extension: the interactive explorer needs the kernel that made it. Run the cell again to get it back.',
  'kernel-stopped':
    'Saved report, drawn by the nbprofiler JupyterLab extension: the kernel that made the interactive explorer has stopped. Run the cell again to get it back.'
};

/** The saved report, drawn from its JSON by ReportView; the explorer while it lives. */
export class ReportRenderer extends LiveOrSavedRenderer<IReport> {
  constructor(options: IRenderMime.IRendererOptions, host?: IRenderHost | null) {
    super(options, host, REPORT_MIME, 'report');
    this.addClass('nbp-ReportRenderer');
  }

  protected parse(data: unknown): IReport {
    return parseReport(data);
  }

  protected async showSaved(report: IReport, model: IRenderMime.IMimeModel, why: SavedReason): Promise<Widget> {
    const footer = SAVED_FOOTERS[why];
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
