/**
 * Level of detail: what the canvas draws for a view. Each event a pixel or
 * wider is a block of its own; runs of narrower events on one lane row are
 * merged into one block covering them, so the work per frame follows the
 * number of pixels, not of events, once zoomed out. The same blocks serve
 * hit-testing, so a click lands on what is drawn.
 */
import { ITimeline } from './payload';
import { IView, scaleOf } from './viewport';

/** What the last layout pass produced; the arrays are reused between frames. */
export interface IBlocks {
  n: number;
  /** Left and right edges, px into the track. */
  x0: Float32Array;
  x1: Float32Array;
  /** Lane position (in `lanes`) and depth row. */
  lane: Uint16Array;
  depth: Uint8Array;
  /** First and last event the block covers (the same for a single event). */
  first: Uint32Array;
  last: Uint32Array;
  /** Payload events it covers (an aggregate of the payload counts its `count`). */
  events: Uint32Array;
  /** 1 when a search match is among its events. */
  match: Uint8Array;
}

export function emptyBlocks(capacity = 1024): IBlocks {
  return {
    n: 0,
    x0: new Float32Array(capacity),
    x1: new Float32Array(capacity),
    lane: new Uint16Array(capacity),
    depth: new Uint8Array(capacity),
    first: new Uint32Array(capacity),
    last: new Uint32Array(capacity),
    events: new Uint32Array(capacity),
    match: new Uint8Array(capacity)
  };
}

function grow(b: IBlocks): IBlocks {
  const bigger = emptyBlocks(b.x0.length * 2);
  bigger.n = b.n;
  bigger.x0.set(b.x0);
  bigger.x1.set(b.x1);
  bigger.lane.set(b.lane);
  bigger.depth.set(b.depth);
  bigger.first.set(b.first);
  bigger.last.set(b.last);
  bigger.events.set(b.events);
  bigger.match.set(b.match);
  return bigger;
}

/** The first index in [lo, hi) whose start is at least t. */
export function lowerBound(start: Float64Array, lo: number, hi: number, t: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (start[mid] < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

/**
 * The blocks to draw for `view` on a track `width` px wide. `matches` (one
 * byte per event) marks search hits; `into` is reused when large enough.
 */
export function computeBlocks(
  t: ITimeline,
  view: IView,
  width: number,
  matches: Uint8Array | null,
  into: IBlocks = emptyBlocks()
): IBlocks {
  let b = into;
  b.n = 0;
  const scale = scaleOf(view, width);
  const ev = t.events;
  // The block still open for merging, per depth row of the current lane (-1: none).
  const open = new Int32Array(256);
  for (let li = 0; li < t.lanes.length; li++) {
    const end = t.laneEnd[li];
    let i = lowerBound(ev.start, t.laneFirst[li], end, view.start - t.laneMaxDur[li]);
    open.fill(-1);
    for (; i < end; i++) {
      const s = ev.start[i];
      if (s > view.end) {
        break;
      }
      const e = s + ev.dur[i];
      if (e < view.start) {
        continue;
      }
      const x0 = (s - view.start) * scale;
      const x1 = (e - view.start) * scale;
      const d = ev.depth[i];
      const hit = matches !== null && matches[i] === 1 ? 1 : 0;
      const o = open[d];
      if (x1 - x0 < 1 && o >= 0 && x0 <= b.x1[o] + 1) {
        // Narrower than a pixel and touching the open block: merge into it.
        if (x1 > b.x1[o]) {
          b.x1[o] = x1;
        }
        b.last[o] = i;
        b.events[o] += ev.count[i];
        b.match[o] |= hit;
        continue;
      }
      if (b.n === b.x0.length) {
        b = grow(b);
      }
      const k = b.n++;
      b.x0[k] = x0;
      b.x1[k] = x1;
      b.lane[k] = li;
      b.depth[k] = d;
      b.first[k] = i;
      b.last[k] = i;
      b.events[k] = ev.count[i];
      b.match[k] = hit;
      // Only a sub-pixel block takes more events in; a wide event stands alone.
      open[d] = x1 - x0 < 1 ? k : -1;
    }
  }
  return b;
}

/** True when block k stands for more than one drawn event (merged here, or an aggregate of the payload). */
export function isMerged(b: IBlocks, k: number): boolean {
  return b.first[k] !== b.last[k];
}

/**
 * The block under (x px into the track, lane position, depth row), or -1.
 * Thin blocks get a little slack so a 1 px kernel can still be hovered.
 */
export function blockAt(b: IBlocks, x: number, lane: number, depth: number, slackPx = 2): number {
  let best = -1;
  let bestDist = Infinity;
  for (let k = 0; k < b.n; k++) {
    if (b.lane[k] !== lane || b.depth[k] !== depth) {
      continue;
    }
    const dist = x < b.x0[k] ? b.x0[k] - x : x > b.x1[k] ? x - b.x1[k] : 0;
    if (dist < bestDist) {
      best = k;
      bestDist = dist;
    }
  }
  return bestDist <= slackPx ? best : -1;
}
