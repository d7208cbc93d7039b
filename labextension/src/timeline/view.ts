/**
 * The Timeline view: a toolbar (zoom, search, Perfetto export), a canvas with
 * a lane per thread, DataLoader, GPU stream and memory counter, and a details
 * panel. It keeps the state (view, selection, hover, search) and wires the
 * interaction; the pure parts live in viewport, lod, search, draw and perfetto.
 *
 * Wheel or pinch zooms around the pointer, dragging pans, W/S zoom and A/D pan
 * as in Perfetto, a click selects. Every redraw recomputes the level of detail
 * for the view, so what is drawn and what a click hits are the same blocks.
 */
import { formatBytes, formatUs } from '../report/format';
import { h } from '../report/dom';
import { detailsNode } from './details';
import { valueAt } from './counters';
import { drawFrame, ISelection } from './draw';
import { LABEL_W, layoutLanes, ILayout, rowAt } from './layout';
import { blockAt, computeBlocks, emptyBlocks, IBlocks, isMerged } from './lod';
import { decodeTimeline, ITimeline, laneCounters } from './payload';
import { downloadChromeTrace } from './perfetto';
import { findMatches, IMatches, stepMatch } from './search';
import { readTheme } from './theme';
import { fitView, frameRange, IView, panBy, scaleOf, timeAt, zoomAround } from './viewport';

/** Zoom per wheel pixel (deltaY), per button press and per W/S key press. */
const WHEEL_ZOOM = 0.002;
const STEP_ZOOM = 0.5;
const KEY_ZOOM = 0.8;
/** A/D pan this share of the view. */
const KEY_PAN = 0.2;
/** A press that moves less than this is a click, not a drag. */
const CLICK_SLOP_PX = 3;
/** A found or followed event is framed across this share of the width. */
const FRAME_SHARE = 0.6;
/** The width before the element is laid out (jsdom, a hidden tab). */
const DEFAULT_WIDTH = 900;

export class TimelineView {
  readonly node: HTMLElement;
  readonly timeline: ITimeline;
  readonly layout: ILayout;
  readonly bounds: IView;
  view: IView;
  blocks: IBlocks = emptyBlocks();
  selection: ISelection | null = null;
  hover = -1;
  matches: IMatches | null = null;
  matchAt = -1;
  /** How long the last redraw took, in ms (level of detail and drawing). */
  lastRedrawMs = 0;

  private readonly canvas: HTMLCanvasElement;
  private readonly surface: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly details: HTMLElement;
  private readonly searchInput: HTMLInputElement;
  private readonly searchCount: HTMLElement;
  private readonly exportNote: HTMLElement;
  /** The other end of each event's flow, or -1. */
  private readonly partner: Int32Array;
  private readonly cleanups: (() => void)[] = [];
  private frameRequest = 0;
  private width = DEFAULT_WIDTH;
  /** Whether a ResizeObserver keeps `width` current. */
  private observedWidth = false;
  private lastPointerX: number | null = null;
  private drag: { x: number; view: IView; moved: boolean } | null = null;

  constructor(payload: unknown) {
    this.timeline = decodeTimeline(payload);
    this.layout = layoutLanes(this.timeline.lanes);
    this.bounds = fitView(this.timeline.span);
    this.view = this.bounds;
    this.partner = new Int32Array(this.timeline.events.n).fill(-1);
    for (let k = 0; k < this.timeline.flowSrc.length; k++) {
      this.partner[this.timeline.flowSrc[k]] = this.timeline.flowDst[k];
      this.partner[this.timeline.flowDst[k]] = this.timeline.flowSrc[k];
    }

    const button = (label: string, title: string, action: () => void, cls = 'nbp-tl-button') => {
      const b = h('button', { type: 'button', class: cls, title, 'aria-label': title }, label);
      this.listen(b, 'click', action);
      return b;
    };
    this.searchInput = h('input', {
      type: 'search',
      class: 'nbp-tl-search',
      placeholder: 'Search by name',
      'aria-label': 'Search events by name'
    });
    this.searchCount = h('span', { class: 'nbp-tl-count', 'aria-live': 'polite' });
    this.exportNote = h('p', { class: 'nbp-tl-note', hidden: true });
    const toolbar = h(
      'div',
      { class: 'nbp-tl-toolbar', role: 'toolbar', 'aria-label': 'Timeline controls' },
      button('+', 'Zoom in (W)', () => this.zoomBy(STEP_ZOOM)),
      button('−', 'Zoom out (S)', () => this.zoomBy(1 / STEP_ZOOM)),
      button('Fit', 'Show the whole trace', () => this.setView(this.bounds)),
      this.searchInput,
      button('‹', 'Previous match', () => this.nextMatch(-1)),
      button('›', 'Next match', () => this.nextMatch(1)),
      this.searchCount,
      button('Open in Perfetto', 'Download this timeline as a Chrome trace file for Perfetto', () => this.export())
    );
    this.canvas = h('canvas', { class: 'nbp-tl-canvas' });
    this.tooltip = h('div', { class: 'nbp-tl-tooltip', role: 'tooltip', hidden: true });
    this.surface = h(
      'div',
      {
        class: 'nbp-tl-surface',
        tabindex: 0,
        role: 'application',
        'aria-label': 'Timeline: wheel or pinch to zoom, drag to pan, W/S zoom, A/D pan, click an event for details'
      },
      this.canvas,
      this.tooltip
    );
    this.details = h('div', { class: 'nbp-tl-details', 'aria-live': 'polite' }, 'Click an event for its details.');
    const t = this.timeline;
    const shown = t.aggregated
      ? `${t.events.n.toLocaleString('en-US')} blocks drawn for ${t.totalEvents.toLocaleString('en-US')} events: ` +
        `${t.aggregated.events.toLocaleString('en-US')} events shorter than ${formatUs(t.aggregated.below_us)} ` +
        'are merged into blocks per lane, to keep the timeline fast. "Open in Perfetto" saves what is shown here.' +
        (t.aggregated.saved
          ? ` The saved report keeps at most ${(t.aggregated.cap ?? t.events.n).toLocaleString('en-US')} blocks, so that ` +
            'the notebook stays small: run the cell again, or load its trace, for the full timeline.'
          : '')
      : null;
    this.node = h(
      'div',
      { class: 'nbp-timeline' },
      toolbar,
      h(
        'p',
        { class: 'nbp-tl-how' },
        'Wheel or pinch to zoom around the pointer, drag to pan; W/S zoom, A/D pan. Hover a launch or a kernel ' +
          'for the arrow between them; click an event for its details.'
      ),
      shown ? h('p', { class: 'nbp-tl-note nbp-tl-aggregated' }, shown) : null,
      this.exportNote,
      this.surface,
      this.details
    );
    this.node.style.setProperty('--nbp-tl-height', `${this.layout.height}px`);
    // Where the time track starts, for tests that point at a time on it.
    this.surface.dataset.trackLeft = String(LABEL_W);
    this.wire();
    this.redraw();
  }

  /** Remove every listener and observer; the node stays as drawn. */
  dispose(): void {
    for (const undo of this.cleanups.splice(0)) {
      undo();
    }
    if (this.frameRequest) {
      cancelAnimationFrame(this.frameRequest);
      this.frameRequest = 0;
    }
  }

  /** Track width in CSS px (the canvas less the label column). */
  get trackWidth(): number {
    return Math.max(this.width - LABEL_W, 1);
  }

  setView(view: IView): void {
    this.view = view;
    this.scheduleRedraw();
  }

  zoomBy(factor: number, anchorX: number | null = null): void {
    const x = anchorX ?? this.trackWidth / 2;
    this.setView(zoomAround(this.view, timeAt(this.view, this.trackWidth, x), factor, this.bounds));
  }

  panBy(share: number): void {
    this.setView(panBy(this.view, share * (this.view.end - this.view.start), this.bounds));
  }

  search(query: string): void {
    this.matches = findMatches(this.timeline, query);
    this.matchAt = -1;
    this.searchCount.textContent = this.matches ? matchCount(this.matches) : '';
    this.scheduleRedraw();
  }

  /** Go to the next (1) or previous (-1) match: frame it and show its details. */
  nextMatch(step: 1 | -1): void {
    if (!this.matches) {
      this.search(this.searchInput.value);
    }
    if (!this.matches) {
      return;
    }
    this.matchAt = stepMatch(this.matches, this.matchAt, step);
    if (this.matchAt < 0) {
      return;
    }
    const n = this.matches.order.length;
    const inside = this.matches.merged ? ` · ${matchCount(this.matches)}` : '';
    this.searchCount.textContent = `${this.matchAt + 1} of ${n.toLocaleString('en-US')}${inside}`;
    this.showEvent(this.matches.order[this.matchAt]);
  }

  /** Frame one event and select it. */
  showEvent(i: number): void {
    const ev = this.timeline.events;
    this.setView(frameRange(ev.start[i], ev.start[i] + ev.dur[i], FRAME_SHARE, this.bounds));
    this.select(this.eventSelection(i));
  }

  /** Select the block under (x, y) px of the canvas, or clear the selection. */
  clickAt(x: number, y: number): void {
    const k = this.blockAtPoint(x, y);
    if (k < 0) {
      this.select(null);
      return;
    }
    const b = this.blocks;
    const ev = this.timeline.events;
    if (isMerged(b, k)) {
      let t1 = 0;
      for (let i = b.first[k]; i <= b.last[k]; i++) {
        t1 = Math.max(t1, ev.start[i] + ev.dur[i]);
      }
      this.select({
        lane: b.lane[k],
        depth: b.depth[k],
        first: b.first[k],
        last: b.last[k],
        events: b.events[k],
        t0: ev.start[b.first[k]],
        t1
      });
    } else {
      this.select(this.eventSelection(b.first[k]));
    }
  }

  /** The block under (x, y) px of the canvas, or -1. */
  blockAtPoint(x: number, y: number): number {
    const at = rowAt(this.layout, y);
    if (!at || x < LABEL_W) {
      return -1;
    }
    return blockAt(this.blocks, x - LABEL_W, at.box.index, at.row);
  }

  /** Recompute the level of detail and draw now. */
  redraw(): void {
    this.frameRequest = 0;
    const t0 = performance.now();
    if (!this.observedWidth) {
      // Read once: reading layout on every frame would force a reflow per frame.
      this.width = this.surface.clientWidth || this.width;
    }
    this.blocks = computeBlocks(this.timeline, this.view, this.trackWidth, this.matches?.mask ?? null, this.blocks);
    const ctx = this.prepareCanvas();
    if (ctx) {
      const flows: [number, number][] = [];
      for (const i of [this.hover, this.selection && this.selection.first === this.selection.last ? this.selection.first : -1]) {
        if (i >= 0 && this.partner[i] >= 0) {
          const p = this.partner[i];
          const launch = this.timeline.flowSrc.includes(i);
          flows.push(launch ? [i, p] : [p, i]);
        }
      }
      drawFrame(ctx, {
        timeline: this.timeline,
        layout: this.layout,
        view: this.view,
        blocks: this.blocks,
        theme: readTheme(this.node),
        width: this.width,
        height: this.layout.height,
        selection: this.selection,
        flows
      });
    }
    this.lastRedrawMs = performance.now() - t0;
    this.surface.dataset.redrawMs = this.lastRedrawMs.toFixed(2);
    this.surface.dataset.blocks = String(this.blocks.n);
    this.surface.dataset.view = `${this.view.start} ${this.view.end}`;
  }

  private eventSelection(i: number): ISelection {
    const ev = this.timeline.events;
    return {
      lane: this.timeline.lanePosition.get(ev.lane[i]) ?? 0,
      depth: ev.depth[i],
      first: i,
      last: i,
      events: ev.count[i],
      t0: ev.start[i],
      t1: ev.start[i] + ev.dur[i]
    };
  }

  private select(sel: ISelection | null): void {
    this.selection = sel;
    this.details.textContent = '';
    if (sel) {
      const partner = sel.first === sel.last ? this.partner[sel.first] : -1;
      this.details.appendChild(detailsNode(this.timeline, sel, partner, i => this.showEvent(i)));
    } else {
      this.details.textContent = 'Click an event for its details.';
    }
    this.scheduleRedraw();
  }

  private prepareCanvas(): CanvasRenderingContext2D | null {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.round(this.width * dpr);
    const hgt = Math.round(this.layout.height * dpr);
    if (this.canvas.width !== w || this.canvas.height !== hgt) {
      this.canvas.width = w;
      this.canvas.height = hgt;
      this.canvas.style.width = `${this.width}px`;
      this.canvas.style.height = `${this.layout.height}px`;
    }
    const ctx = this.canvas.getContext('2d');
    ctx?.setTransform(dpr, 0, 0, dpr, 0, 0);
    return ctx;
  }

  private scheduleRedraw(): void {
    if (!this.frameRequest) {
      this.frameRequest = requestAnimationFrame(() => this.redraw());
    }
  }

  private listen<K extends keyof HTMLElementEventMap>(
    target: HTMLElement | Window,
    type: K,
    handler: (event: HTMLElementEventMap[K]) => void,
    options?: AddEventListenerOptions
  ): void {
    const fn = handler as EventListener;
    target.addEventListener(type, fn, options);
    this.cleanups.push(() => target.removeEventListener(type, fn, options));
  }

  private local(event: MouseEvent): { x: number; y: number } {
    const r = this.canvas.getBoundingClientRect();
    return { x: event.clientX - r.left, y: event.clientY - r.top };
  }

  private export(): void {
    const name = downloadChromeTrace(this.timeline);
    this.exportNote.hidden = false;
    this.exportNote.textContent =
      `Saved ${name} to your downloads. To look at it in Perfetto, open https://ui.perfetto.dev and drag the file ` +
      'in (the file stays on this machine: Perfetto reads it in the browser), or open chrome://tracing in Chrome ' +
      'and load it.';
  }

  private wire(): void {
    this.listen(this.searchInput, 'input', () => this.search(this.searchInput.value));
    this.listen(this.searchInput, 'keydown', (e: KeyboardEvent) => {
      if (e.key === 'Enter') {
        e.preventDefault();
        this.nextMatch(e.shiftKey ? -1 : 1);
      }
    });
    this.listen(
      this.surface,
      'wheel',
      (e: WheelEvent) => {
        e.preventDefault();
        const { x } = this.local(e);
        // A pinch on a trackpad arrives as a wheel with ctrlKey and small deltas.
        const speed = e.ctrlKey ? WHEEL_ZOOM * 5 : WHEEL_ZOOM;
        if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
          this.setView(panBy(this.view, e.deltaX / scaleOf(this.view, this.trackWidth), this.bounds));
        } else {
          this.zoomBy(Math.exp(e.deltaY * speed), x - LABEL_W);
        }
      },
      { passive: false }
    );
    this.listen(this.surface, 'pointerdown', (e: PointerEvent) => {
      if (e.button !== 0) {
        return;
      }
      this.surface.focus({ preventScroll: true });
      this.drag = { x: e.clientX, view: this.view, moved: false };
    });
    this.listen(window, 'pointermove', (e: PointerEvent) => {
      if (this.drag) {
        const dx = e.clientX - this.drag.x;
        if (Math.abs(dx) >= CLICK_SLOP_PX) {
          this.drag.moved = true;
        }
        if (this.drag.moved) {
          this.setView(panBy(this.drag.view, -dx / scaleOf(this.drag.view, this.trackWidth), this.bounds));
        }
      }
    });
    this.listen(window, 'pointerup', (e: PointerEvent) => {
      const drag = this.drag;
      this.drag = null;
      if (drag && !drag.moved) {
        const { x, y } = this.local(e);
        this.clickAt(x, y);
      }
    });
    this.listen(this.surface, 'pointermove', (e: PointerEvent) => this.onHover(e));
    this.listen(this.surface, 'pointerleave', () => {
      this.lastPointerX = null;
      this.tooltip.hidden = true;
      if (this.hover >= 0) {
        this.hover = -1;
        this.scheduleRedraw();
      }
    });
    this.listen(this.surface, 'keydown', (e: KeyboardEvent) => this.onKey(e));
    // A theme change (JupyterLab's data attributes, VS Code's body classes) changes the colours.
    const themeWatch = new MutationObserver(() => this.scheduleRedraw());
    themeWatch.observe(document.body, {
      attributes: true,
      attributeFilter: ['data-jp-theme-name', 'data-jp-theme-light', 'class']
    });
    this.cleanups.push(() => themeWatch.disconnect());
    if (typeof ResizeObserver !== 'undefined') {
      const observer = new ResizeObserver(entries => {
        const width = entries[entries.length - 1].contentRect.width;
        if (width > 0) {
          this.width = width;
          this.observedWidth = true;
          this.scheduleRedraw();
        }
      });
      observer.observe(this.surface);
      this.cleanups.push(() => observer.disconnect());
    }
  }

  private onKey(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey) {
      return;
    }
    const anchor = this.lastPointerX;
    switch (e.key.toLowerCase()) {
      case 'w':
        this.zoomBy(KEY_ZOOM, anchor);
        break;
      case 's':
        this.zoomBy(1 / KEY_ZOOM, anchor);
        break;
      case 'a':
        this.panBy(-KEY_PAN);
        break;
      case 'd':
        this.panBy(KEY_PAN);
        break;
      case 'escape':
        this.select(null);
        break;
      default:
        return;
    }
    e.preventDefault();
    e.stopPropagation();
  }

  private onHover(e: PointerEvent): void {
    const { x, y } = this.local(e);
    this.lastPointerX = x >= LABEL_W ? x - LABEL_W : null;
    const text = this.hoverText(x, y);
    this.tooltip.hidden = text === null;
    if (text !== null) {
      this.tooltip.textContent = text;
      this.tooltip.style.left = `${Math.min(x + 12, Math.max(this.width - 260, 0))}px`;
      this.tooltip.style.top = `${y + 14}px`;
    }
  }

  /** The tooltip for (x, y), and the hovered event (for its flow arrow). */
  private hoverText(x: number, y: number): string | null {
    const at = rowAt(this.layout, y);
    let hover = -1;
    let text: string | null = null;
    if (at && x >= LABEL_W && at.box.lane.kind === 'memory') {
      const t = timeAt(this.view, this.trackWidth, x - LABEL_W);
      const parts = laneCounters(this.timeline, at.box.index)
        .map(c => ({ c, v: valueAt(c.t, c.v, t) }))
        .filter(({ v }) => v !== null)
        .map(({ c, v }) => `${c.name}: ${c.unit === 'bytes' ? formatBytes(v) : String(v)}`);
      text = parts.length ? `${parts.join(', ')} at ${formatUs(t)}` : null;
    } else {
      const k = this.blockAtPoint(x, y);
      if (k >= 0) {
        const b = this.blocks;
        const ev = this.timeline.events;
        if (isMerged(b, k)) {
          text = `${b.events[k].toLocaleString('en-US')} events merged (zoom in to tell them apart)`;
        } else {
          hover = b.first[k];
          text = `${this.timeline.strings[ev.name[hover]]} · ${formatUs(ev.dur[hover])}`;
        }
      }
    }
    if (hover !== this.hover) {
      this.hover = hover;
      this.scheduleRedraw();
    }
    return text;
  }
}

/** "2,020 matches (204 inside merged blocks)": every matching event, as the tables count them. */
function matchCount(m: IMatches): string {
  const n = m.events;
  const inside = m.merged ? ` (${m.merged.toLocaleString('en-US')} inside merged blocks)` : '';
  return `${n.toLocaleString('en-US')} ${n === 1 ? 'match' : 'matches'}${inside}`;
}
