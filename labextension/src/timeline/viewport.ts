/**
 * The visible time range and the maths of zooming and panning it. Kept apart
 * from the canvas so the rules (zoom keeps the time under the cursor in place,
 * never narrower than MIN_SPAN_US, never wider than the trace) are testable.
 */

/** The narrowest view: a 1 µs range across the whole width (a short kernel fills it). */
export const MIN_SPAN_US = 1;

/** A visible range of time, in µs from the payload's origin. */
export interface IView {
  start: number;
  end: number;
}

/** The range of the whole trace, padded a little so edge events show whole. */
export function fitView(span: [number, number]): IView {
  const [a, b] = span;
  const width = Math.max(b - a, MIN_SPAN_US);
  const pad = width * 0.01;
  return { start: a - pad, end: a + width + pad };
}

/** Keep a view inside the trace's fitted range, keeping its width when it can. */
export function clampView(view: IView, bounds: IView): IView {
  const maxSpan = bounds.end - bounds.start;
  const span = Math.min(Math.max(view.end - view.start, MIN_SPAN_US), maxSpan);
  let start = view.start;
  if (start < bounds.start) {
    start = bounds.start;
  }
  if (start + span > bounds.end) {
    start = bounds.end - span;
  }
  return { start, end: start + span };
}

/**
 * Zoom by `factor` (below 1 zooms in) around time `anchor`: the anchor stays
 * at the same place on screen, as under a wheel or pinch.
 */
export function zoomAround(view: IView, anchor: number, factor: number, bounds: IView): IView {
  const span = view.end - view.start;
  const next = Math.min(Math.max(span * factor, MIN_SPAN_US), bounds.end - bounds.start);
  const ratio = span > 0 ? (anchor - view.start) / span : 0.5;
  const start = anchor - ratio * next;
  return clampView({ start, end: start + next }, bounds);
}

/** Move the view by `deltaUs` (positive: later). */
export function panBy(view: IView, deltaUs: number, bounds: IView): IView {
  return clampView({ start: view.start + deltaUs, end: view.end + deltaUs }, bounds);
}

/** A view that shows [t0, t1] across `share` of the width, centred. */
export function frameRange(t0: number, t1: number, share: number, bounds: IView): IView {
  const span = Math.max((t1 - t0) / share, MIN_SPAN_US);
  const mid = (t0 + t1) / 2;
  return clampView({ start: mid - span / 2, end: mid + span / 2 }, bounds);
}

/** Pixels per µs for a track `width` px wide. */
export function scaleOf(view: IView, width: number): number {
  return width / Math.max(view.end - view.start, 1e-9);
}

/** The time at x px into the track. */
export function timeAt(view: IView, width: number, x: number): number {
  return view.start + x / scaleOf(view, width);
}

/** The x px into the track of time t. */
export function xAt(view: IView, width: number, t: number): number {
  return (t - view.start) * scaleOf(view, width);
}

/** Tick spacing for an axis: 1, 2 or 5 × 10^k µs, about `targetPx` apart. */
export function tickStep(view: IView, width: number, targetPx = 110): number {
  const raw = targetPx / scaleOf(view, width);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5]) {
    if (m * mag >= raw) {
      return m * mag;
    }
  }
  return 10 * mag;
}

/** An axis label for time t with ticks `step` apart: the unit of the step, enough decimals to tell ticks apart. */
export function tickLabel(t: number, step: number): string {
  const [unit, scale] = step >= 1e6 ? ['s', 1e6] : step >= 1e3 ? ['ms', 1e3] : ['µs', 1];
  const decimals = Math.max(0, Math.ceil(-Math.log10(step / scale) - 1e-9));
  return `${(t / scale).toFixed(decimals)} ${unit}`;
}
