/**
 * The report's two charts, drawn as inline SVG: no library, no network.
 * Every label is set as text (see dom.ts); colours come from this file only.
 */
import { h, s } from './dom';
import {
  byteAxisUnit,
  formatBytes,
  formatShare,
  formatUs,
  niceTicks,
  timeAxisUnit
} from './format';

/**
 * One colour per breakdown part, the same as the Python renderers use
 * (nbprofiler/render/views.py), so the static and live views agree.
 * Keys are lower-case with underscores; others cycle through PALETTE.
 */
const KNOWN_COLORS: { [name: string]: string } = {
  kernel: '#4C72B0',
  memcpy: '#DD8452',
  memset: '#937860',
  communication: '#8172B3',
  runtime: '#C44E52',
  dataloader: '#E5AE38',
  cpu_exec: '#55A868',
  other: '#B0B0B0',
  forward: '#4C72B0',
  backward: '#8172B3',
  optimizer: '#55A868'
};

const PALETTE = ['#4C72B0', '#DD8452', '#55A868', '#C44E52', '#8172B3', '#937860', '#DA8BC3', '#8C8C8C', '#CCB974', '#64B5CD'];

export function seriesColors(names: string[]): string[] {
  let next = 0;
  const used = new Set<string>();
  return names.map(name => {
    const known = KNOWN_COLORS[name.toLowerCase().replace(/_us$/, '').replace(/[\s-]+/g, '_')];
    if (known && !used.has(known)) {
      used.add(known);
      return known;
    }
    // Skip palette entries a known category already took.
    for (let i = 0; i < PALETTE.length; i++) {
      const c = PALETTE[(next + i) % PALETTE.length];
      if (!used.has(c)) {
        next = (next + i + 1) % PALETTE.length;
        used.add(c);
        return c;
      }
    }
    return PALETTE[next++ % PALETTE.length];
  });
}

export interface ISeries {
  name: string;
  values: (number | null)[];
}

const W = 720;
const MARGIN = { left: 64, right: 16, top: 22, bottom: 44 };

function labelEvery(count: number, maxLabels = 16): number {
  return Math.max(1, Math.ceil(count / maxLabels));
}

/** Legend entries as HTML (they wrap, SVG text does not). */
export function legend(names: string[], colors: string[], extra?: string[]): HTMLElement {
  return h(
    'ul',
    { class: 'nbp-legend' },
    ...names.map((name, i) =>
      h(
        'li',
        null,
        h('span', { class: 'nbp-swatch', style: `background:${colors[i]}`, 'aria-hidden': 'true' }),
        h('span', { class: 'nbp-legend-name' }, name),
        extra && extra[i] ? h('span', { class: 'nbp-legend-extra' }, extra[i]) : null
      )
    )
  );
}

/**
 * A stacked bar per step: each series is one category of the step time, in
 * microseconds.
 */
/** An empty chart of height ``H`` with its accessible title. */
function chartSvg(H: number, title: string): SVGSVGElement {
  const svg = s('svg', {
    class: 'nbp-chart',
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'aria-label': title,
    preserveAspectRatio: 'xMinYMin meet'
  });
  svg.appendChild(s('title', null, title));
  return svg;
}

/** Horizontal grid lines with their tick labels, the y-axis title, and the "step" x-axis title. */
function stepAxes(
  ticks: number[],
  scale: number,
  y: (v: number) => number,
  plotW: number,
  plotH: number,
  yTitle: string
): SVGElement {
  const axis = s('g', { class: 'nbp-axis' });
  for (const t of ticks) {
    const yy = y(t * scale);
    axis.appendChild(s('line', { class: 'nbp-grid', x1: MARGIN.left, x2: W - MARGIN.right, y1: yy, y2: yy }));
    axis.appendChild(s('text', { x: MARGIN.left - 6, y: yy + 4, 'text-anchor': 'end' }, String(t)));
  }
  const midY = MARGIN.top + plotH / 2;
  axis.appendChild(
    s(
      'text',
      { class: 'nbp-axis-title', x: 14, y: midY, transform: `rotate(-90 14 ${midY})`, 'text-anchor': 'middle' },
      yTitle
    )
  );
  const bottom = MARGIN.top + plotH + MARGIN.bottom - 6;
  axis.appendChild(s('text', { class: 'nbp-axis-title', x: MARGIN.left + plotW / 2, y: bottom, 'text-anchor': 'middle' }, 'step'));
  return axis;
}

export function stackedBarChart(
  steps: string[],
  series: ISeries[],
  colors: string[],
  opts: { title: string; height?: number }
): SVGSVGElement {
  const H = opts.height ?? 260;
  const plotW = W - MARGIN.left - MARGIN.right;
  const plotH = H - MARGIN.top - MARGIN.bottom;
  const totals = steps.map((_, i) => series.reduce((acc, ser) => acc + Math.max(0, ser.values[i] ?? 0), 0));
  const maxUs = Math.max(0, ...totals);
  const unit = timeAxisUnit(maxUs);
  const ticks = niceTicks(maxUs / unit.scale);
  const top = ticks[ticks.length - 1] * unit.scale || 1;
  const y = (us: number): number => MARGIN.top + plotH - (us / top) * plotH;
  const band = steps.length ? plotW / steps.length : plotW;
  const barW = Math.max(1, Math.min(48, band * 0.72));

  const svg = chartSvg(H, opts.title);

  // Grid and y axis.
  const axis = stepAxes(ticks, unit.scale, y, plotW, plotH, `time per step (${unit.label})`);
  svg.appendChild(axis);

  // Bars.
  const bars = s('g', { class: 'nbp-bars' });
  const every = labelEvery(steps.length);
  steps.forEach((step, i) => {
    const cx = MARGIN.left + band * i + band / 2;
    let acc = 0;
    const g = s('g', { class: 'nbp-bar', 'data-step': step });
    series.forEach((ser, k) => {
      const v = Math.max(0, ser.values[i] ?? 0);
      if (v <= 0) {
        return;
      }
      const y0 = y(acc);
      const y1 = y(acc + v);
      acc += v;
      const share = totals[i] > 0 ? v / totals[i] : 0;
      g.appendChild(
        s(
          'rect',
          {
            x: cx - barW / 2,
            y: y1,
            width: barW,
            height: Math.max(0.5, y0 - y1),
            fill: colors[k]
          },
          s('title', null, `step ${step} · ${ser.name}: ${formatUs(v)} (${formatShare(share)})`)
        )
      );
    });
    bars.appendChild(g);
    if (i % every === 0) {
      bars.appendChild(s('text', { class: 'nbp-tick', x: cx, y: MARGIN.top + plotH + 16, 'text-anchor': 'middle' }, step));
    }
  });
  svg.appendChild(bars);
  svg.appendChild(
    s('line', { class: 'nbp-baseline', x1: MARGIN.left, x2: W - MARGIN.right, y1: y(0), y2: y(0) })
  );
  return svg;
}

const PHASE_FILL: { [phase: string]: string } = {
  wait: 'var(--nbp-phase-wait)',
  warmup: 'var(--nbp-phase-warmup)',
  active: 'var(--nbp-phase-active)'
};

/**
 * Memory over the steps of the cell, one line per series (bytes), with the
 * schedule's wait, warmup and active steps shaded.
 */
export function memoryChart(
  steps: number[],
  phases: (string | null)[],
  series: ISeries[],
  colors: string[],
  opts: { title: string; height?: number; limitBytes?: number | null }
): SVGSVGElement {
  const H = opts.height ?? 260;
  const plotW = W - MARGIN.left - MARGIN.right;
  const plotH = H - MARGIN.top - MARGIN.bottom;
  const values = series.flatMap(ser => ser.values.filter((v): v is number => v !== null && Number.isFinite(v)));
  const maxB = Math.max(0, ...values);
  const minB = values.length ? Math.min(...values) : 0;
  const unit = byteAxisUnit(maxB);
  // Start the axis at zero unless the lines sit high above it: then zoom in
  // so step-to-step changes show (the tick labels say where the axis starts).
  const axis0 = byteTicks(minB / unit.scale, maxB / unit.scale);
  const ticks = axis0.ticks;
  const bottom = axis0.start * unit.scale;
  const top = ticks[ticks.length - 1] * unit.scale || 1;
  const n = steps.length;
  const x = (i: number): number => MARGIN.left + (n <= 1 ? plotW / 2 : ((i + 0.5) / n) * plotW);
  const y = (b: number): number => MARGIN.top + plotH - ((b - bottom) / (top - bottom || 1)) * plotH;

  const svg = chartSvg(H, opts.title);

  // Phase bands: one rectangle per run of steps in the same phase.
  const bands = s('g', { class: 'nbp-phases' });
  let start = 0;
  for (let i = 1; i <= n; i++) {
    if (i === n || phases[i] !== phases[start]) {
      const phase = phases[start] ?? '';
      const fill = PHASE_FILL[phase];
      if (fill) {
        const x0 = MARGIN.left + (start / n) * plotW;
        const x1 = MARGIN.left + (i / n) * plotW;
        bands.appendChild(
          s('rect', { class: `nbp-phase nbp-phase-${phase}`, x: x0, y: MARGIN.top, width: x1 - x0, height: plotH, fill })
        );
        if (x1 - x0 > 34) {
          bands.appendChild(
            s('text', { class: 'nbp-phase-label', x: (x0 + x1) / 2, y: MARGIN.top - 6, 'text-anchor': 'middle' }, phase)
          );
        }
      }
      start = i;
    }
  }
  svg.appendChild(bands);

  const axis = stepAxes(ticks, unit.scale, y, plotW, plotH, `memory (${unit.label})`);
  const every = labelEvery(n);
  steps.forEach((step, i) => {
    if (i % every === 0) {
      axis.appendChild(s('text', { class: 'nbp-tick', x: x(i), y: MARGIN.top + plotH + 16, 'text-anchor': 'middle' }, step));
    }
  });
  svg.appendChild(axis);

  if (opts.limitBytes && opts.limitBytes <= top && opts.limitBytes >= bottom) {
    const yy = y(opts.limitBytes);
    svg.appendChild(s('line', { class: 'nbp-limit', x1: MARGIN.left, x2: W - MARGIN.right, y1: yy, y2: yy }));
    svg.appendChild(s('text', { class: 'nbp-limit-label', x: W - MARGIN.right - 4, y: yy - 4, 'text-anchor': 'end' }, 'device memory'));
  }

  const lines = s('g', { class: 'nbp-lines' });
  series.forEach((ser, k) => {
    let d = '';
    let pen = false;
    ser.values.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${x(i).toFixed(1)} ${y(v).toFixed(1)} `;
      pen = true;
    });
    const g = s('g', { class: 'nbp-line', 'data-series': ser.name });
    g.appendChild(s('path', { d: d.trim(), fill: 'none', stroke: colors[k], 'stroke-width': 2 }));
    if (n <= 80) {
      ser.values.forEach((v, i) => {
        if (v === null || !Number.isFinite(v)) {
          return;
        }
        g.appendChild(
          s(
            'circle',
            { cx: x(i), cy: y(v), r: 3, fill: colors[k] },
            s('title', null, `step ${steps[i]}${phases[i] ? ` (${phases[i]})` : ''} · ${ser.name}: ${formatBytes(v)}`)
          )
        );
      });
    }
    lines.appendChild(g);
  });
  svg.appendChild(lines);
  svg.appendChild(s('line', { class: 'nbp-baseline', x1: MARGIN.left, x2: W - MARGIN.right, y1: y(bottom), y2: y(bottom) }));
  return svg;
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
