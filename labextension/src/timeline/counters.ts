/**
 * Memory counters as drawn: a step line (memory holds its value until the
 * next sample). A lane may hold 100k+ samples, so each frame walks pixel
 * columns, not samples: a pyramid of maxima gives the peak inside a column in
 * O(log n), keeping spikes visible however far out the view is.
 */
import { lowerBound } from './lod';

/** Level 0 is the values; each next level holds the max of pairs of the one before. */
export function maxLevels(v: Float64Array): Float64Array[] {
  const levels = [v];
  let cur = v;
  while (cur.length > 1) {
    const next = new Float64Array(Math.ceil(cur.length / 2));
    for (let i = 0; i < next.length; i++) {
      const b = 2 * i + 1 < cur.length ? cur[2 * i + 1] : -Infinity;
      next[i] = Math.max(cur[2 * i], b);
    }
    levels.push(next);
    cur = next;
  }
  return levels;
}

/** The largest value of samples [lo, hi), from `maxLevels`. */
export function rangeMax(levels: Float64Array[], lo: number, hi: number): number {
  let m = -Infinity;
  for (let k = 0; lo < hi; k++) {
    if (lo & 1) {
      m = Math.max(m, levels[k][lo++]);
    }
    if (hi & 1) {
      m = Math.max(m, levels[k][--hi]);
    }
    lo >>= 1;
    hi >>= 1;
  }
  return m;
}

/** The value at time t: the last sample at or before t, or null before the first. */
export function valueAt(t: Float64Array, v: Float64Array, time: number): number | null {
  const i = lowerBound(t, 0, t.length, time + 1e-9) - 1;
  return i >= 0 ? v[i] : null;
}

/**
 * The step line of samples (t, v) in a view from `start` at `scale` px per µs,
 * one vertex group per pixel column: calls `to(x, value)` in drawing order.
 */
export function stepLine(
  t: Float64Array,
  v: Float64Array,
  levels: Float64Array[],
  start: number,
  scale: number,
  width: number,
  to: (x: number, value: number) => void
): void {
  const n = t.length;
  let j = Math.max(0, lowerBound(t, 0, n, start) - 1);
  let level = j < n ? v[j] : 0;
  while (j < n) {
    const x = (t[j] - start) * scale;
    // The samples in this pixel column: up to the first at or past its right edge.
    const edge = start + (Math.floor(x) + 1) / scale;
    const end = Math.max(j + 1, lowerBound(t, j + 1, n, edge));
    to(x, level);
    to(x, rangeMax(levels, j, end));
    level = v[end - 1];
    to(x, level);
    if (x > width) {
      return;
    }
    j = end;
  }
  to(width + 1, level);
}
