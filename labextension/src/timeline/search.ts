/**
 * Search by name: which events' names contain the query (case-insensitive),
 * as a mask the level-of-detail pass reads and as a list in time order for
 * next/previous. Events the payload merged into aggregates ("N events") are
 * counted by name and found through their aggregate, so the count equals the
 * tables' (the Kernels table's calls, say).
 */
import { ITimeline } from './payload';

export interface IMatches {
  query: string;
  /** One byte per event: 1 for a match, or an aggregate holding one. */
  mask: Uint8Array;
  /** Matching events and aggregates holding matches, earliest first. */
  order: Uint32Array;
  /** How many events of the trace match: those drawn alone plus those merged into aggregates. */
  events: number;
  /** Of those, how many are inside aggregates (drawn as "N events"). */
  merged: number;
}

/** The events whose name contains `query`; null for an empty query. */
export function findMatches(t: ITimeline, query: string): IMatches | null {
  const q = query.trim().toLowerCase();
  if (!q) {
    return null;
  }
  const hitString = new Uint8Array(t.strings.length);
  t.strings.forEach((s, i) => {
    hitString[i] = s.toLowerCase().includes(q) ? 1 : 0;
  });
  const ev = t.events;
  const mask = new Uint8Array(ev.n);
  const found: number[] = [];
  for (let i = 0; i < ev.n; i++) {
    if (ev.count[i] <= 1 && hitString[ev.name[i]] === 1) {
      mask[i] = 1;
      found.push(i);
    }
  }
  // Events merged for drawing are counted and found through the aggregate that holds them.
  let merged = 0;
  const m = t.merged;
  for (let i = 0; m && i < m.n; i++) {
    if (hitString[m.name[i]] === 1) {
      merged += m.count[i];
      if (mask[m.event[i]] === 0) {
        mask[m.event[i]] = 1;
        found.push(m.event[i]);
      }
    }
  }
  const direct = found.length - (m ? found.filter(i => ev.count[i] > 1).length : 0);
  const order = Uint32Array.from(found);
  order.sort((a, b) => ev.start[a] - ev.start[b] || a - b);
  return { query: q, mask, order, events: direct + merged, merged };
}

/** The position in `order` after (step 1) or before (step -1) `current`, wrapping around; -1 when none. */
export function stepMatch(matches: IMatches, current: number, step: 1 | -1): number {
  const n = matches.order.length;
  if (n === 0) {
    return -1;
  }
  if (current < 0) {
    return step === 1 ? 0 : n - 1;
  }
  return (current + step + n) % n;
}
