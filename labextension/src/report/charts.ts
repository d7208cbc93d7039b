/**
 * The report's charts, drawn from Python's chart specs (nbprofiler/render/charts.py)
 * as interactive inline SVG: no library, no network.
 *
 * Hovering a step shows its values with their units; dragging across steps
 * zooms on them, and "Reset zoom" shows them all again. A legend names every
 * kind of mark, the shaded wait/warmup/active steps included. A scatter (the
 * roofline) puts named points on log-log axes under the device's roofs; hovering
 * a point shows what it is. Colours are CSS classes (style/charts.css) that read
 * the theme's variables. Every label is set as text (dom.ts): category and
 * operator names come from traces.
 */
import { clear, h, s } from './dom';
import { byteAxisUnit, formatBytes, formatShare, formatSi, formatUs, niceTicks, timeAxisUnit } from './format';

export interface IChartSeries {
  key: string;
  label: string;
  /** A colour of the palette in charts.css (`nbp-f-<color>`, `nbp-s-<color>`). */
  color: string;
  dash: 'solid' | 'dashed' | 'dotted' | string;
  values: (number | null)[];
}

/** A scatter point: its name (from a trace), the dtype it ran at and what bounds it. */
export interface IScatterPoint {
  label: string;
  dtype: string | null;
  bound: string;
}

/** A device's roof for one dtype: the memory-bandwidth slope up to the ridge (FLOPs per byte), then the peak. */
export interface IRoof {
  dtype: string;
  peak_flops_per_s: number;
  bytes_per_s: number;
  ridge: number;
}

export interface IChartPanel {
  title: string | null;
  x: (number | string)[];
  from_zero: boolean;
  series: IChartSeries[];
  phases: { phase: string; start: number; end: number }[];
  markers: { at: number; label: string }[];
  /** A scatter's points, one per x value. */
  points?: IScatterPoint[];
  /** A scatter's roofs. */
  roofs?: IRoof[];
}

/** A value axis: a log one (a scatter's) spans `domain`, two powers of ten. */
export interface IChartAxis {
  label: string;
  unit: string;
  scale?: 'log' | string;
  domain?: [number, number];
}

/** A chart spec, version 1 or 2 (2 added "scatter"; see nbprofiler/render/charts.py). */
export interface IChartSpec {
  version: number;
  name: string;
  kind: 'bars' | 'lines' | 'timeline' | 'hbars' | 'scatter' | string;
  title: string;
  x: IChartAxis;
  y: IChartAxis;
  layout: 'rows' | 'columns' | string;
  shared_y: boolean;
  panels: IChartPanel[];
  /** What the markers mark, for the legend (default "step start"). */
  marker_label?: string;
}

const W = 720;
const M = { left: 64, right: 16, top: 22, bottom: 40 };
const PLOT_H = 170;
const HBAR_ROW = 22;
const HBAR_LEFT = 150;
const SCATTER_H = 260;
const SCATTER_RIGHT = 150;
const POINT_LABEL_CHARS = 24;
const MAX_X_LABELS = 16;
const MAX_POINTS = 80;
const MAX_HOVERS = 240;
const PHASES = ['wait', 'warmup', 'active'];
const DASHES: { [dash: string]: string | null } = { solid: null, dashed: '6 4', dotted: '2 3' };

function finite(values: (number | null)[]): number[] {
  return values.filter((v): v is number => v !== null && Number.isFinite(v));
}

function formatValue(unit: string, v: number | null): string {
  return unit === 'bytes' ? formatBytes(v) : formatUs(v);
}

/** Ticks for a memory axis (in display units): from 0, or from a nice value below `min` when the data sit high. */
export function byteTicks(min: number, max: number): { ticks: number[]; start: number } {
  if (max > 0 && min > 0.5 * max) {
    const span = max - min || max * 0.05;
    const raw = niceTicks(span * 1.25, 4);
    const step = raw.length > 1 ? raw[1] - raw[0] : span;
    const start = Math.max(0, Math.floor((min - span * 0.1) / step) * step);
    const ticks: number[] = [];
    for (let t = start; t < max + step * 0.999; t += step) {
      ticks.push(Number(t.toPrecision(12)));
    }
    if (ticks.length < 2) {
      ticks.push(Number((start + step).toPrecision(12)));
    }
    return { ticks, start };
  }
  return { ticks: niceTicks(max), start: 0 };
}

/** A value axis: its unit and ticks, and where a value lies along it (0 to 1). */
class Axis {
  label: string;
  scale: number;
  ticks: number[];
  low: number;
  high: number;

  constructor(unit: string, low: number, high: number, fromZero: boolean) {
    const u = unit === 'bytes' ? byteAxisUnit(high) : timeAxisUnit(high);
    this.label = u.label;
    this.scale = u.scale;
    this.ticks = fromZero ? niceTicks(high / u.scale) : byteTicks(low / u.scale, high / u.scale).ticks;
    this.low = this.ticks[0] * u.scale;
    this.high = this.ticks[this.ticks.length - 1] * u.scale;
  }

  frac(v: number): number {
    return (v - this.low) / (this.high - this.low || 1);
  }
}

/** The points of a panel within the zoom range [lo, hi] of x values. */
interface IView {
  panel: IChartPanel;
  index: number[];
}

function inRange(x: number | string, range: [number, number] | null): boolean {
  return range === null || (typeof x === 'number' && x >= range[0] && x <= range[1]);
}

function valueRange(spec: IChartSpec, views: IView[], view: IView): [number, number] {
  const over = spec.shared_y ? views : [view];
  if (spec.kind === 'bars') {
    const totals = over.flatMap(v => v.index.map(i => v.panel.series.reduce((a, ser) => a + Math.max(0, ser.values[i] ?? 0), 0)));
    return [0, Math.max(0, ...totals)];
  }
  const values = over.flatMap(v => v.panel.series.flatMap(ser => finite(v.index.map(i => ser.values[i]))));
  return values.length ? [Math.min(...values), Math.max(...values)] : [0, 0];
}

function text(x: number, y: number, content: string, anchor = 'start', cls?: string): SVGTextElement {
  return s('text', { x: x.toFixed(1), y: y.toFixed(1), 'text-anchor': anchor, class: cls ?? null }, content);
}

/** A scatter point's hover lines under its name (Python's `chart_svg.point_hover` writes the same). */
export function scatterHover(point: IScatterPoint, x: number, y: number): string[] {
  return [`dtype: ${point.dtype ?? 'unknown'}`, `intensity: ${formatSi(x, 'FLOP/byte')}`, `achieved: ${formatSi(y, 'FLOP/s')}`, `bound: ${point.bound}`];
}

/** What a roof line is (Python's `chart_svg.roof_text`). */
export function roofText(roof: IRoof): string {
  return `${roof.dtype} roof: memory bandwidth ${formatBytes(roof.bytes_per_s)}/s up to the ridge at ${formatSi(roof.ridge, 'FLOP/byte')}, then the ${roof.dtype} peak ${formatSi(roof.peak_flops_per_s, 'FLOP/s')}`;
}

/** A log axis over two powers of ten: where a value lies (0 to 1), and a tick per decade. */
class LogAxis {
  readonly low: number;
  readonly high: number;
  readonly ticks: number[] = [];

  constructor(domain: [number, number]) {
    this.low = Math.log10(domain[0]);
    this.high = Math.log10(domain[1]);
    for (let k = Math.round(this.low); k <= Math.round(this.high); k++) {
      this.ticks.push(Math.pow(10, k));
    }
  }

  frac(v: number): number {
    return (Math.log10(v) - this.low) / (this.high - this.low || 1);
  }
}

/** One entry per kind of mark: each series once, each shaded phase, the step markers, the roofs. */
export function legendEntries(spec: IChartSpec): { kind: 'series' | 'phase' | 'marker' | 'roof'; label: string; color: string; dash: string; series?: IChartSeries[] }[] {
  const seen = new Map<string, { kind: 'series'; label: string; color: string; dash: string; series: IChartSeries[] }>();
  for (const p of spec.panels) {
    for (const ser of p.series) {
      const entry = seen.get(ser.key) ?? { kind: 'series' as const, label: ser.label, color: ser.color, dash: ser.dash, series: [] };
      entry.series.push(ser);
      seen.set(ser.key, entry);
    }
  }
  const out: ReturnType<typeof legendEntries> = [...seen.values()];
  const phases = new Set(spec.panels.flatMap(p => p.phases.map(r => r.phase)));
  for (const phase of PHASES) {
    if (phases.has(phase)) {
      out.push({ kind: 'phase', label: `${phase} steps`, color: phase, dash: 'solid' });
    }
  }
  if (spec.panels.some(p => p.markers.length)) {
    out.push({ kind: 'marker', label: spec.marker_label ?? 'step start', color: '', dash: 'dotted' });
  }
  if (spec.panels.some(p => p.roofs?.length)) {
    out.push({ kind: 'roof', label: 'roof (memory bandwidth, then peak)', color: 'other', dash: 'dashed' });
  }
  return out;
}

const TIP_GAP = 12;

/**
 * Where the tooltip goes, relative to the chart's box: below and right of the cursor, flipped above
 * (left) of it where it would pass the box's bottom (right) edge or the window's, so that a point
 * near the plot's bottom or right keeps its tooltip in sight (an output area clips what overflows).
 */
export function tipPosition(
  cursor: { x: number; y: number },
  box: { left: number; top: number; right: number; bottom: number },
  tip: { width: number; height: number },
  viewport: { width: number; height: number }
): { left: number; top: number } {
  const place = (at: number, start: number, end: number, size: number): number => {
    const after = at - start + TIP_GAP;
    return after + size <= end - start ? after : Math.max(0, at - start - TIP_GAP - size);
  };
  return {
    left: place(cursor.x, box.left, Math.min(box.right, viewport.width), tip.width),
    top: place(cursor.y, box.top, Math.min(box.bottom, viewport.height), tip.height)
  };
}

/**
 * The chart of `spec` as an element: heading, Reset zoom button, the SVG and
 * its legend, and the hover tooltip.
 */
export function renderChart(spec: IChartSpec): HTMLElement {
  return new Chart(spec).node;
}

class Chart {
  readonly node: HTMLElement;
  private readonly svg: SVGSVGElement;
  private readonly tip: HTMLElement;
  private readonly reset: HTMLButtonElement;
  private range: [number, number] | null = null;
  private dragFrom: number | null = null;
  private selection: SVGRectElement | null = null;

  constructor(private readonly spec: IChartSpec) {
    const zoomable = spec.kind !== 'hbars' && spec.kind !== 'scatter';
    this.reset = h('button', { class: 'nbp-chart-reset', type: 'button', hidden: true }, 'Reset zoom');
    this.reset.addEventListener('click', () => this.zoom(null));
    this.svg = s('svg', { class: 'nbp-chart', role: 'img', 'aria-label': spec.title, preserveAspectRatio: 'xMinYMin meet' });
    this.tip = h('div', { class: 'nbp-chart-tip', role: 'tooltip', hidden: true });
    this.node = h(
      'div',
      { class: 'nbp-chartbox', 'data-chart': spec.name },
      h('div', { class: 'nbp-chart-bar' },
        zoomable ? h('span', { class: 'nbp-chart-hint' }, 'Hover for values; drag across steps to zoom.') : null,
        this.reset),
      this.svg,
      this.legend(),
      this.tip
    );
    // A drag that leaves the chart zooms on nothing.
    this.svg.addEventListener('mouseleave', () => {
      this.hideTip();
      this.endDrag(null);
    });
    this.draw();
  }

  /** Show the x values in [lo, hi], or all of them (null). */
  zoom(range: [number, number] | null): void {
    this.range = range;
    this.reset.hidden = range === null;
    this.draw();
  }

  private draw(): void {
    clear(this.svg);
    this.svg.appendChild(s('title', null, this.spec.title));
    this.hideTip();
    const kind = this.spec.kind;
    const H = kind === 'hbars' ? this.drawHbars() : kind === 'scatter' ? this.drawScatter() : this.drawPanels();
    this.svg.setAttribute('viewBox', `0 0 ${W} ${H}`);
  }

  private drawPanels(): number {
    const spec = this.spec;
    const columns = spec.layout === 'columns';
    const width = columns ? W / spec.panels.length : W;
    const views: IView[] = spec.panels.map(panel => ({
      panel,
      index: panel.x.map((x, i) => (inRange(x, this.range) ? i : -1)).filter(i => i >= 0)
    }));
    let top = 0;
    views.forEach((view, k) => {
      const [low, high] = valueRange(spec, views, view);
      const frame = new Frame(spec, view, columns ? k * width : 0, top, width, new Axis(spec.y.unit, low, high, view.panel.from_zero));
      this.svg.append(...frame.phases(), frame.axes(), ...frame.markers(), frame.marks(), this.hoverColumns(frame));
      if (!columns || k === views.length - 1) {
        top += M.top + PLOT_H + M.bottom;
      }
    });
    return top;
  }

  private drawHbars(): number {
    const spec = this.spec;
    const panel = spec.panels[0];
    const ser = panel.series[0];
    const values = ser.values.map(v => v ?? 0);
    const total = values.reduce((a, v) => a + v, 0) || 1;
    const axis = new Axis(spec.y.unit, 0, Math.max(0, ...values), true);
    const width = W - HBAR_LEFT - M.right - 60;
    const height = HBAR_ROW * values.length;
    const top = 8;
    const g = s('g', { class: 'nbp-axis' });
    for (const t of axis.ticks) {
      const x = HBAR_LEFT + axis.frac(t * axis.scale) * width;
      g.appendChild(s('line', { class: 'nbp-grid', x1: x, x2: x, y1: top, y2: top + height }));
      g.appendChild(text(x, top + height + 14, String(t), 'middle', 'nbp-tick'));
    }
    g.appendChild(text(HBAR_LEFT + width / 2, top + height + 30, `${spec.y.label} (${axis.label})`, 'middle', 'nbp-axis-title'));
    this.svg.appendChild(g);
    const bars = s('g', { class: 'nbp-hbars' });
    panel.x.forEach((name, i) => {
      const y = top + i * HBAR_ROW;
      const w = axis.frac(values[i]) * width;
      const label = String(name);
      const hover = `${label}: ${formatValue(spec.y.unit, values[i])} (${formatShare(values[i] / total)})`;
      const row = s(
        'g',
        { class: 'nbp-hbar', 'data-category': label },
        text(HBAR_LEFT - 6, y + HBAR_ROW / 2 + 4, label.length > 22 ? `${label.slice(0, 21)}…` : label, 'end'),
        s('rect', { class: `nbp-f-${ser.color}`, x: HBAR_LEFT, y: y + 3, width: Math.max(w, 0.5), height: HBAR_ROW - 6 }),
        text(HBAR_LEFT + w + 4, y + HBAR_ROW / 2 + 4, formatShare(values[i] / total), 'start', 'nbp-muted'),
        s('rect', { class: 'nbp-hover', x: 0, y, width: W, height: HBAR_ROW })
      );
      row.addEventListener('mouseover', ev => this.showTip(ev as MouseEvent, label, [hover]));
      bars.appendChild(row);
    });
    this.svg.appendChild(bars);
    return top + height + M.bottom;
  }

  /** Named points on log-log axes under each roof (the bandwidth slope up to the ridge, then the flat peak);
   * hovering a point shows its name, dtype, intensity, FLOP/s and what bounds it. */
  private drawScatter(): number {
    const spec = this.spec;
    const panel = spec.panels[0];
    const xa = new LogAxis(spec.x.domain ?? [1, 10]);
    const ya = new LogAxis(spec.y.domain ?? [1, 10]);
    const left = M.left + 10;
    const width = W - left - SCATTER_RIGHT;
    const top = M.top;
    const bottom = top + SCATTER_H;
    const at = (x: number, y: number): [number, number] => [left + xa.frac(x) * width, bottom - ya.frac(y) * SCATTER_H];
    const [xLow, xHigh, yLow] = [Math.pow(10, xa.low), Math.pow(10, xa.high), Math.pow(10, ya.low)];
    const g = s('g', { class: 'nbp-axis' });
    for (const t of ya.ticks) {
      const y = at(xLow, t)[1];
      g.appendChild(s('line', { class: 'nbp-grid', x1: left, x2: left + width, y1: y, y2: y }));
      g.appendChild(text(left - 5, y + 4, formatSi(t, '').trim(), 'end'));
    }
    for (const t of xa.ticks) {
      const x = at(t, yLow)[0];
      g.appendChild(s('line', { class: 'nbp-grid', x1: x, x2: x, y1: top, y2: bottom }));
      g.appendChild(text(x, bottom + 14, String(t), 'middle', 'nbp-tick'));
    }
    const mid = top + SCATTER_H / 2;
    const yTitle = text(left - 52, mid, `${spec.y.label} (FLOP/s)`, 'middle', 'nbp-axis-title');
    yTitle.setAttribute('transform', `rotate(-90 ${left - 52} ${mid})`);
    g.append(yTitle, text(left + width / 2, bottom + 32, `${spec.x.label} (FLOP/byte)`, 'middle', 'nbp-axis-title'));
    this.svg.appendChild(g);
    const roofs = s('g', { class: 'nbp-roofs' });
    for (const roof of panel.roofs ?? []) {
      const start = Math.max(xLow, yLow / roof.bytes_per_s);
      const corners = [at(start, start * roof.bytes_per_s), at(roof.ridge, roof.peak_flops_per_s), at(xHigh, roof.peak_flops_per_s)];
      const d = corners.map(([x, y], i) => `${i ? 'L' : 'M'}${x.toFixed(1)} ${y.toFixed(1)}`).join('');
      roofs.appendChild(
        s('path', { class: 'nbp-roof nbp-s-other', 'data-roof': roof.dtype, d, fill: 'none', 'stroke-width': 2, 'stroke-dasharray': DASHES.dashed }, s('title', null, roofText(roof)))
      );
      roofs.appendChild(text(corners[2][0] + 4, corners[2][1] + 4, `${roof.dtype} ${formatSi(roof.peak_flops_per_s, 'FLOP/s')}`, 'start', 'nbp-muted'));
    }
    this.svg.appendChild(roofs);
    const points = s('g', { class: 'nbp-points' });
    for (const ser of panel.series) {
      ser.values.forEach((v, i) => {
        const point = panel.points?.[i];
        const xv = panel.x[i];
        if (v === null || !Number.isFinite(v) || !point || typeof xv !== 'number') {
          return;
        }
        const [x, y] = at(xv, v);
        const hover = scatterHover(point, xv, v);
        const name = point.label.length > POINT_LABEL_CHARS ? `${point.label.slice(0, POINT_LABEL_CHARS - 1)}…` : point.label;
        const mark = s(
          'g',
          { class: 'nbp-point', 'data-operator': point.label, 'data-bound': point.bound },
          s('circle', { class: `nbp-f-${ser.color}`, cx: x, cy: y, r: 4 }, s('title', null, [point.label, ...hover].join(' · '))),
          text(x + 6, y - 5, name)
        );
        mark.addEventListener('mouseover', ev => this.showTip(ev as MouseEvent, point.label, hover));
        points.appendChild(mark);
      });
    }
    this.svg.appendChild(points);
    return bottom + M.bottom;
  }

  /** Transparent columns over each point: hover shows its values, a drag from one to another zooms. */
  private hoverColumns(f: Frame): SVGGElement {
    const g = s('g', { class: 'nbp-hovers' });
    const { panel } = f.view;
    // At most MAX_HOVERS columns (a memory timeline has thousands of points): every k-th point.
    const every = Math.ceil(f.view.index.length / MAX_HOVERS);
    const index = f.view.index.filter((_, k) => k % every === 0);
    index.forEach((i, k) => {
      const x = f.x(i);
      const left = k === 0 ? f.left : (x + f.x(index[k - 1])) / 2;
      const right = k === index.length - 1 ? f.left + f.width : (x + f.x(index[k + 1])) / 2;
      const at = panel.x[i] as number;
      const col = s('rect', { class: 'nbp-hover', 'data-x': at, x: left, y: f.top, width: Math.max(right - left, 0.5), height: PLOT_H });
      col.addEventListener('mouseover', ev => {
        this.showTip(ev as MouseEvent, f.heading(i), f.hoverLines(i));
        if (this.dragFrom !== null) {
          this.select(f, this.dragFrom, at);
        }
      });
      col.addEventListener('mousedown', ev => {
        ev.preventDefault();
        this.dragFrom = at;
      });
      col.addEventListener('mouseup', ev => {
        ev.stopPropagation();
        this.endDrag(at);
      });
      g.appendChild(col);
    });
    return g;
  }

  private select(f: Frame, from: number, to: number): void {
    const [a, b] = [Math.min(from, to), Math.max(from, to)];
    const xs = f.view.index.filter(i => (f.view.panel.x[i] as number) >= a && (f.view.panel.x[i] as number) <= b).map(i => f.x(i));
    this.selection?.remove();
    const pad = f.continuous ? 0 : f.band() / 2;
    this.selection = s('rect', {
      class: 'nbp-selection',
      x: Math.min(...xs) - pad,
      y: f.top,
      width: Math.max(...xs) - Math.min(...xs) + 2 * pad,
      height: PLOT_H
    });
    this.svg.appendChild(this.selection);
  }

  private endDrag(to: number | null): void {
    const from = this.dragFrom;
    this.dragFrom = null;
    this.selection?.remove();
    this.selection = null;
    if (from !== null && to !== null && from !== to) {
      this.zoom([Math.min(from, to), Math.max(from, to)]);
    }
  }

  private showTip(ev: MouseEvent, heading: string, lines: string[]): void {
    clear(this.tip);
    this.tip.append(h('div', { class: 'nbp-chart-tip-head' }, heading), ...lines.map(line => h('div', null, line)));
    this.tip.hidden = false;
    const box = this.node.getBoundingClientRect();
    const size = this.tip.getBoundingClientRect();
    const at = tipPosition({ x: ev.clientX, y: ev.clientY }, box, { width: size.width, height: size.height }, { width: window.innerWidth, height: window.innerHeight });
    this.tip.style.left = `${at.left}px`;
    this.tip.style.top = `${at.top}px`;
  }

  private hideTip(): void {
    this.tip.hidden = true;
  }

  /** The legend as HTML (it wraps); for bars each part's mean per step and share, for lines its maximum. */
  private legend(): HTMLElement {
    const spec = this.spec;
    const line = spec.kind === 'lines' || spec.kind === 'timeline';
    const steps = Math.max(1, ...spec.panels.map(p => p.x.length));
    const means = new Map<string, number>();
    for (const entry of legendEntries(spec)) {
      if (entry.series && spec.kind === 'bars') {
        const sum = entry.series.reduce((a, ser) => a + finite(ser.values).reduce((b, v) => b + v, 0), 0);
        means.set(entry.label, sum / (steps * entry.series.length));
      }
    }
    const total = [...means.values()].reduce((a, v) => a + v, 0);
    return h(
      'ul',
      { class: 'nbp-legend' },
      ...legendEntries(spec).map(entry => {
        let swatch: Element;
        let extra = '';
        if (entry.kind === 'phase') {
          swatch = h('span', { class: `nbp-swatch nbp-phase-swatch nbp-phase-${entry.color}` });
        } else if (entry.kind === 'marker') {
          swatch = h('span', { class: 'nbp-swatch nbp-marker-swatch' });
        } else if (line || entry.kind === 'roof') {
          swatch = h('span', { class: `nbp-swatch nbp-line-swatch nbp-s-${entry.color} nbp-dash-${entry.dash}` });
          const values = (entry.series ?? []).flatMap(ser => finite(ser.values));
          extra = values.length ? `max ${formatValue(spec.y.unit, Math.max(...values))}` : '';
        } else {
          swatch = h('span', { class: `nbp-swatch nbp-f-${entry.color}` });
          const mean = means.get(entry.label);
          extra = mean !== undefined && spec.kind === 'bars' ? `${formatValue(spec.y.unit, mean)} / step · ${formatShare(total > 0 ? mean / total : null)}` : '';
        }
        swatch.setAttribute('aria-hidden', 'true');
        return h('li', { 'data-kind': entry.kind }, swatch, h('span', { class: 'nbp-legend-name' }, entry.label), extra ? h('span', { class: 'nbp-legend-extra' }, extra) : null);
      })
    );
  }
}

/** A panel's plot area: where each point and value lies, and the marks drawn there. */
class Frame {
  readonly left: number;
  readonly top: number;
  readonly width: number;
  readonly continuous: boolean;
  private readonly xAxis: Axis | null;
  private readonly slot = new Map<number, number>();

  constructor(
    private readonly spec: IChartSpec,
    readonly view: IView,
    left: number,
    top: number,
    width: number,
    private readonly axis: Axis
  ) {
    this.left = left + M.left;
    this.top = top + M.top;
    this.width = width - M.left - M.right;
    this.continuous = spec.x.unit === 'us';
    const xs = view.index.map(i => view.panel.x[i] as number);
    this.xAxis = this.continuous && xs.length ? new Axis('us', Math.min(...xs), Math.max(...xs), xs[0] === view.panel.x[0]) : null;
    view.index.forEach((i, k) => this.slot.set(i, k));
  }

  band(): number {
    return this.width / Math.max(this.view.index.length, 1);
  }

  x(i: number): number {
    if (this.xAxis) {
      return this.left + this.xAxis.frac(this.view.panel.x[i] as number) * this.width;
    }
    return this.left + ((this.slot.get(i) ?? 0) + 0.5) * this.band();
  }

  xAt(value: number): number {
    return this.xAxis ? this.left + this.xAxis.frac(value) * this.width : this.left;
  }

  y(v: number): number {
    return this.top + PLOT_H - this.axis.frac(v) * PLOT_H;
  }

  /** Grid, y ticks (direct children of `.nbp-axis`), x ticks (`.nbp-tick`), axis titles, panel title. */
  axes(): SVGGElement {
    const g = s('g', { class: 'nbp-axis' });
    const right = this.left + this.width;
    for (const t of this.axis.ticks) {
      const y = this.y(t * this.axis.scale);
      g.appendChild(s('line', { class: 'nbp-grid', x1: this.left, x2: right, y1: y, y2: y }));
      g.appendChild(text(this.left - 5, y + 4, String(t), 'end'));
    }
    const bottom = this.top + PLOT_H;
    g.appendChild(s('line', { class: 'nbp-baseline', x1: this.left, x2: right, y1: bottom, y2: bottom }));
    const mid = this.top + PLOT_H / 2;
    const yTitle = text(this.left - 48, mid, `${this.spec.y.label} (${this.axis.label})`, 'middle', 'nbp-axis-title');
    yTitle.setAttribute('transform', `rotate(-90 ${this.left - 48} ${mid})`);
    g.appendChild(yTitle);
    let xTitle = this.spec.x.label;
    if (this.xAxis) {
      for (const t of this.xAxis.ticks) {
        const x = this.left + this.xAxis.frac(t * this.xAxis.scale) * this.width;
        if (x >= this.left - 1 && x <= right + 1) {
          g.appendChild(text(x, bottom + 14, String(t), 'middle', 'nbp-tick'));
        }
      }
      xTitle = `${xTitle} (${this.xAxis.label})`;
    } else {
      const every = Math.max(1, Math.ceil(this.view.index.length / MAX_X_LABELS));
      this.view.index.forEach((i, k) => {
        if (k % every === 0) {
          g.appendChild(text(this.x(i), bottom + 14, String(this.view.panel.x[i]), 'middle', 'nbp-tick'));
        }
      });
    }
    g.appendChild(text(this.left + this.width / 2, bottom + 32, xTitle, 'middle', 'nbp-axis-title'));
    if (this.view.panel.title) {
      g.appendChild(text(this.left, this.top - 6, this.view.panel.title, 'start', 'nbp-panel-title'));
    }
    return g;
  }

  phases(): SVGElement[] {
    const pos = new Map(this.view.panel.x.map((x, i) => [x, i] as [number | string, number]));
    const out: SVGElement[] = [];
    for (const run of this.view.panel.phases) {
      const from = this.view.index.filter(i => (this.view.panel.x[i] as number) >= run.start && (this.view.panel.x[i] as number) <= run.end);
      if (!from.length || !pos.has(run.start)) {
        continue;
      }
      const x0 = this.x(from[0]) - this.band() / 2;
      const x1 = this.x(from[from.length - 1]) + this.band() / 2;
      const steps = run.start === run.end ? `step ${run.start}` : `steps ${run.start}–${run.end}`;
      out.push(
        s('rect', { class: `nbp-phase nbp-phase-${run.phase}`, x: x0, y: this.top, width: x1 - x0, height: PLOT_H }, s('title', null, `${run.phase} ${steps}`))
      );
    }
    return out;
  }

  markers(): SVGElement[] {
    const out: SVGElement[] = [];
    for (const m of this.view.panel.markers) {
      // At its time on a continuous axis, else at the point whose x is its `at` (none: not drawn).
      const at = this.xAxis ? -1 : (this.view.panel.x as unknown[]).indexOf(m.at);
      const x = this.xAxis ? this.xAt(m.at) : at >= 0 ? this.x(at) : -1;
      if (x < this.left || x > this.left + this.width) {
        continue;
      }
      out.push(
        s('line', { class: 'nbp-marker', x1: x, x2: x, y1: this.top, y2: this.top + PLOT_H }, s('title', null, this.xAxis ? `${m.label} starts at ${formatUs(m.at)}` : m.label)),
        text(x + 2, this.top + 10, m.label, 'start', 'nbp-muted')
      );
    }
    return out;
  }

  marks(): SVGGElement {
    return this.spec.kind === 'bars' ? this.bars() : this.lines();
  }

  private bars(): SVGGElement {
    const g = s('g', { class: 'nbp-bars' });
    const fmt = (v: number) => formatValue(this.spec.y.unit, v);
    const width = Math.max(1, Math.min(48, this.band() * 0.72));
    for (const i of this.view.index) {
      const step = String(this.view.panel.x[i]);
      const bar = s('g', { class: 'nbp-bar', 'data-step': step });
      const total = this.view.panel.series.reduce((a, ser) => a + Math.max(0, ser.values[i] ?? 0), 0);
      let acc = 0;
      for (const ser of this.view.panel.series) {
        const v = Math.max(0, ser.values[i] ?? 0);
        if (v <= 0) {
          continue;
        }
        const y0 = this.y(acc);
        const y1 = this.y(acc + v);
        acc += v;
        bar.appendChild(
          s('rect', { class: `nbp-f-${ser.color}`, x: this.x(i) - width / 2, y: y1, width, height: Math.max(0.5, y0 - y1) },
            s('title', null, `step ${step} · ${ser.label}: ${fmt(v)} (${formatShare(total > 0 ? v / total : null)})`))
        );
      }
      g.appendChild(bar);
    }
    return g;
  }

  private lines(): SVGGElement {
    const g = s('g', { class: 'nbp-lines' });
    const stepwise = this.spec.kind === 'timeline';
    for (const ser of this.view.panel.series) {
      let d = '';
      let pen = false;
      for (const i of this.view.index) {
        const v = ser.values[i];
        if (v === null || !Number.isFinite(v)) {
          pen = false;
          continue;
        }
        const x = this.x(i).toFixed(1);
        const y = this.y(v).toFixed(1);
        d += pen ? (stepwise ? `H${x}V${y}` : `L${x} ${y}`) : `M${x} ${y}`;
        pen = true;
      }
      const line = s('g', { class: 'nbp-line', 'data-series': ser.label });
      const dash = DASHES[ser.dash];
      line.appendChild(s('path', { class: `nbp-s-${ser.color}`, d, fill: 'none', 'stroke-width': 2, 'stroke-dasharray': dash }));
      if (!stepwise && this.view.index.length <= MAX_POINTS) {
        for (const i of this.view.index) {
          const v = ser.values[i];
          if (v !== null && Number.isFinite(v)) {
            line.appendChild(s('circle', { class: `nbp-f-${ser.color}`, cx: this.x(i), cy: this.y(v), r: 3 }, s('title', null, `${this.heading(i)} · ${ser.label}: ${formatValue(this.spec.y.unit, v)}`)));
          }
        }
      }
      g.appendChild(line);
    }
    return g;
  }

  /** What a point is: "step 7 (active)", or on a time axis "at 12.3 ms". */
  heading(i: number): string {
    const x = this.view.panel.x[i];
    if (this.continuous) {
      return `at ${formatUs(x as number)}`;
    }
    const run = this.view.panel.phases.find(r => (x as number) >= r.start && (x as number) <= r.end);
    return `step ${x}${run ? ` (${run.phase})` : ''}`;
  }

  /** The tooltip's lines for point `i`: each series' value with its unit (bars: and its share, then the total). */
  hoverLines(i: number): string[] {
    const unit = this.spec.y.unit;
    const series = this.view.panel.series;
    if (this.spec.kind !== 'bars') {
      return series.map(ser => `${ser.label}: ${formatValue(unit, ser.values[i])}`);
    }
    const total = series.reduce((a, ser) => a + Math.max(0, ser.values[i] ?? 0), 0);
    const parts = series
      .filter(ser => (ser.values[i] ?? 0) > 0)
      .map(ser => `${ser.label}: ${formatValue(unit, ser.values[i])} (${formatShare(total > 0 ? (ser.values[i] ?? 0) / total : null)})`);
    return [...parts, `total: ${formatValue(unit, total)}`];
  }
}

/** A chart spec from the columns of a payload table, for reports saved before payloads carried specs. */
export function specFromTable(opts: {
  name: string;
  kind: 'bars' | 'lines';
  title: string;
  xLabel: string;
  yLabel: string;
  unit: 'us' | 'bytes';
  steps: number[];
  phases?: (string | null)[];
  fromZero?: boolean;
  series: { key: string; label: string; values: (number | null)[] }[];
}): IChartSpec {
  const phases = opts.phases ?? [];
  const runs: IChartPanel['phases'] = [];
  opts.steps.forEach((step, k) => {
    const phase = phases[k];
    if (!phase || !PHASES.includes(phase)) {
      return;
    }
    const last = runs[runs.length - 1];
    if (last && last.phase === phase && k > 0 && last.end === opts.steps[k - 1]) {
      last.end = step;
    } else {
      runs.push({ phase, start: step, end: step });
    }
  });
  return {
    version: 1,
    name: opts.name,
    kind: opts.kind,
    title: opts.title,
    x: { label: opts.xLabel, unit: 'step' },
    y: { label: opts.yLabel, unit: opts.unit },
    layout: 'rows',
    shared_y: false,
    panels: [
      {
        title: null,
        x: opts.steps,
        from_zero: opts.fromZero ?? true,
        series: opts.series.map(ser => ({ ...ser, color: colorOf(ser.key), dash: 'solid' })),
        phases: runs,
        markers: []
      }
    ]
  };
}

/** The palette colour of a payload column ("kernel_us", "mem_reserved_bytes"), as Python names its series. */
export function colorOf(column: string): string {
  const key = column.toLowerCase().replace(/_(us|bytes)$/, '').replace(/[\s-]+/g, '_');
  const known = ['kernel', 'memcpy', 'memset', 'communication', 'runtime', 'dataloader', 'cpu_exec', 'other', 'forward', 'backward', 'optimizer'];
  if (known.includes(key)) {
    return key;
  }
  for (const [part, color] of [['rss', 'rss'], ['reserved', 'reserved'], ['peak', 'peak'], ['alloc', 'allocated']]) {
    if (key.includes(part)) {
      return color;
    }
  }
  return 'other';
}
