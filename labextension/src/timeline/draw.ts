/**
 * The canvas drawing of one frame: axis, lanes and their labels, the blocks
 * the level-of-detail pass produced, memory counters, step boundaries, search
 * highlights, the selection and the flow arrows. Text (untrusted names) only
 * ever reaches the page through fillText.
 */
import { AXIS_H, ILayout, LABEL_W } from './layout';
import { formatBytes } from '../report/format';
import { stepLine } from './counters';
import { IBlocks, isMerged } from './lod';
import { ITimeline, laneCounters } from './payload';
import { ITheme, textOn } from './theme';
import { IView, tickLabel, tickStep, xAt } from './viewport';

/** A selected event, or a merged block of events, by the events it spans. */
export interface ISelection {
  lane: number;
  depth: number;
  first: number;
  last: number;
  events: number;
  t0: number;
  t1: number;
}

export interface IFrame {
  timeline: ITimeline;
  layout: ILayout;
  view: IView;
  blocks: IBlocks;
  theme: ITheme;
  /** CSS px of the whole canvas. */
  width: number;
  height: number;
  selection: ISelection | null;
  /** Launch -> kernel pairs to draw arrows for. */
  flows: [number, number][];
}

/** The centre y of an event's row. */
export function eventY(f: Pick<IFrame, 'timeline' | 'layout'>, i: number): number {
  const box = f.layout.boxes[f.timeline.lanePosition.get(f.timeline.events.lane[i]) ?? 0];
  return box.top + (f.timeline.events.depth[i] + 0.5) * box.rowH;
}

/** Draw one frame on `ctx`, whose transform maps CSS px. */
export function drawFrame(ctx: CanvasRenderingContext2D, f: IFrame): void {
  const { theme, width, height, layout } = f;
  const trackW = width - LABEL_W;
  ctx.clearRect(0, 0, width, height);
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, width, height);
  ctx.font = theme.font;
  ctx.textBaseline = 'middle';
  layout.boxes.forEach((box, k) => {
    if (k % 2 === 1) {
      ctx.fillStyle = theme.laneBg;
      ctx.fillRect(0, box.top, width, box.height);
    }
  });
  drawAxis(ctx, f, trackW);
  ctx.save();
  ctx.beginPath();
  ctx.rect(LABEL_W, 0, trackW, height);
  ctx.clip();
  ctx.translate(LABEL_W, 0);
  drawBlocks(ctx, f);
  drawCounters(ctx, f, trackW);
  drawSteps(ctx, f, trackW);
  drawSelection(ctx, f, trackW);
  drawFlows(ctx, f, trackW);
  ctx.restore();
  drawLabels(ctx, f);
}

function drawAxis(ctx: CanvasRenderingContext2D, f: IFrame, trackW: number): void {
  const { view, theme, height } = f;
  const step = tickStep(view, trackW);
  ctx.strokeStyle = theme.grid;
  ctx.lineWidth = 1;
  ctx.fillStyle = theme.muted;
  ctx.textAlign = 'left';
  for (let t = Math.ceil(view.start / step) * step; t <= view.end; t += step) {
    const x = LABEL_W + Math.round(xAt(view, trackW, t)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(x, 14);
    ctx.lineTo(x, height);
    ctx.stroke();
    ctx.fillText(tickLabel(t, step), x + 3, 8);
  }
}

function drawBlocks(ctx: CanvasRenderingContext2D, f: IFrame): void {
  const { blocks: b, timeline: t, layout, theme } = f;
  const fills = t.categories.map(c => theme.category.get(c) ?? theme.category.get('other') ?? '#9e9e9e');
  // Canvas normalises colours on assignment; read them back to pick a readable text colour.
  const texts = fills.map(fill => {
    ctx.fillStyle = fill;
    return textOn(String(ctx.fillStyle));
  });
  const ev = t.events;
  for (let k = 0; k < b.n; k++) {
    const box = layout.boxes[b.lane[k]];
    if (box.lane.kind === 'memory') {
      continue;
    }
    const y = box.top + b.depth[k] * box.rowH + 1;
    const h = box.rowH - 2;
    const x = b.x0[k];
    const w = Math.max(b.x1[k] - x, 1);
    const cat = ev.cat[b.first[k]];
    ctx.fillStyle = fills[cat] ?? theme.muted;
    ctx.globalAlpha = isMerged(b, k) ? 0.7 : 1;
    ctx.fillRect(x, y, w, h);
    ctx.globalAlpha = 1;
    if (b.match[k]) {
      ctx.strokeStyle = theme.highlight;
      ctx.lineWidth = 2;
      ctx.strokeRect(x - 1, y - 1, w + 2, h + 2);
    }
    if (w >= 30 && !isMerged(b, k)) {
      const visibleX = Math.max(x, 0);
      const room = Math.min(x + w, f.width) - visibleX - 6;
      const chars = Math.floor(room / 6.2);
      if (chars >= 3) {
        const name = t.strings[ev.name[b.first[k]]];
        ctx.fillStyle = texts[cat] ?? theme.fg;
        ctx.textAlign = 'left';
        ctx.fillText(name.length > chars ? `${name.slice(0, chars - 1)}…` : name, visibleX + 3, y + h / 2);
      }
    }
  }
}

function drawCounters(ctx: CanvasRenderingContext2D, f: IFrame, trackW: number): void {
  const { timeline: t, layout, view, theme } = f;
  for (const box of layout.boxes) {
    if (box.lane.kind !== 'memory') {
      continue;
    }
    const counters = laneCounters(t, box.index);
    const max = Math.max(0, ...counters.map(c => c.max));
    if (max <= 0) {
      continue;
    }
    const base = box.top + box.height - 2;
    const scale = trackW / (view.end - view.start);
    const yScale = (box.height - 6) / max;
    counters.forEach((c, ci) => {
      const colour = theme.counter[ci % theme.counter.length];
      ctx.beginPath();
      let first = true;
      let lastX = 0;
      stepLine(c.t, c.v, c.levels, view.start, scale, trackW, (x, value) => {
        const y = base - value * yScale;
        if (first) {
          ctx.moveTo(x, base);
          first = false;
        }
        ctx.lineTo(x, y);
        lastX = x;
      });
      if (first) {
        return;
      }
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.5;
      ctx.stroke();
      ctx.lineTo(lastX, base);
      ctx.closePath();
      ctx.globalAlpha = 0.2;
      ctx.fillStyle = colour;
      ctx.fill();
      ctx.globalAlpha = 1;
    });
  }
}

function hasEvents(t: ITimeline, lane: number): boolean {
  return t.laneEnd[lane] > t.laneFirst[lane];
}

function drawSteps(ctx: CanvasRenderingContext2D, f: IFrame, trackW: number): void {
  const { timeline: t, layout, view, theme, height } = f;
  // A steps lane names the steps on its own blocks; without one, the labels go below the axis.
  const labelled = !layout.boxes.some(b => b.lane.kind === 'steps' && b.rows > 0 && hasEvents(t, b.index));
  ctx.strokeStyle = theme.step;
  ctx.fillStyle = theme.step;
  ctx.lineWidth = 1;
  ctx.setLineDash([4, 3]);
  ctx.textAlign = 'left';
  // One path for every boundary: hundreds of steps cost one stroke.
  ctx.beginPath();
  let lastX = -Infinity;
  t.steps.forEach((s, k) => {
    const x0 = Math.round(xAt(view, trackW, s.start)) + 0.5;
    const edges = k === t.steps.length - 1 ? [x0, Math.round(xAt(view, trackW, s.end)) + 0.5] : [x0];
    for (const x of edges) {
      if (x >= -1 && x <= trackW + 1 && x !== lastX) {
        ctx.moveTo(x, 14);
        ctx.lineTo(x, height);
        lastX = x;
      }
    }
    const x1 = xAt(view, trackW, s.end);
    const left = Math.max(x0, 0) + 3;
    if (labelled && x1 - left > 40) {
      ctx.fillText(`step ${s.step}`, left, AXIS_H + 6);
    }
  });
  ctx.stroke();
  ctx.setLineDash([]);
}

function drawSelection(ctx: CanvasRenderingContext2D, f: IFrame, trackW: number): void {
  const sel = f.selection;
  if (!sel) {
    return;
  }
  const box = f.layout.boxes[sel.lane];
  const x0 = xAt(f.view, trackW, sel.t0);
  const x1 = Math.max(xAt(f.view, trackW, sel.t1), x0 + 1);
  ctx.strokeStyle = f.theme.select;
  ctx.lineWidth = 2;
  ctx.strokeRect(x0 - 1, box.top + sel.depth * box.rowH, x1 - x0 + 2, box.rowH);
}

function drawFlows(ctx: CanvasRenderingContext2D, f: IFrame, trackW: number): void {
  const ev = f.timeline.events;
  ctx.strokeStyle = f.theme.flow;
  ctx.fillStyle = f.theme.flow;
  ctx.lineWidth = 1.5;
  for (const [src, dst] of f.flows) {
    const xs = xAt(f.view, trackW, ev.start[src]);
    const ys = eventY(f, src);
    const xd = xAt(f.view, trackW, ev.start[dst]);
    const yd = eventY(f, dst);
    const bend = Math.max(20, Math.abs(yd - ys) / 2);
    ctx.beginPath();
    ctx.moveTo(xs, ys);
    ctx.bezierCurveTo(xs, ys + Math.sign(yd - ys) * bend, xd, yd - Math.sign(yd - ys) * bend, xd, yd);
    ctx.stroke();
    const dir = Math.sign(yd - ys) || 1;
    ctx.beginPath();
    ctx.moveTo(xd, yd);
    ctx.lineTo(xd - 4, yd - 7 * dir);
    ctx.lineTo(xd + 4, yd - 7 * dir);
    ctx.closePath();
    ctx.fill();
  }
}

function drawLabels(ctx: CanvasRenderingContext2D, f: IFrame): void {
  const { layout, theme } = f;
  ctx.fillStyle = theme.bg;
  ctx.fillRect(0, 0, LABEL_W - 2, f.height);
  ctx.textAlign = 'left';
  layout.boxes.forEach((box, k) => {
    if (k % 2 === 1) {
      ctx.fillStyle = theme.laneBg;
      ctx.fillRect(0, box.top, LABEL_W - 2, box.height);
    }
    ctx.fillStyle = theme.fg;
    const chars = Math.floor((LABEL_W - 10) / 6.2);
    const label = box.lane.label.length > chars ? `${box.lane.label.slice(0, chars - 1)}…` : box.lane.label;
    if (box.lane.kind === 'memory') {
      // The lane's scale: its top is the highest value of its counters.
      ctx.fillText(label, 4, box.top + box.height / 2 - 8);
      const peak = Math.max(0, ...laneCounters(f.timeline, box.index).map(c => c.max));
      ctx.fillStyle = theme.muted;
      ctx.fillText(`peak ${formatBytes(peak)}`, 4, box.top + box.height / 2 + 8);
    } else {
      ctx.fillText(label, 4, box.top + Math.min(box.rowH, box.height) / 2);
    }
  });
  ctx.strokeStyle = theme.grid;
  ctx.beginPath();
  ctx.moveTo(LABEL_W - 1.5, 0);
  ctx.lineTo(LABEL_W - 1.5, f.height);
  ctx.stroke();
}
