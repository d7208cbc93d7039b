/**
 * The timeline payload (version 1, made by nbprofiler/render/timeline_data.py)
 * and its decoding. Events travel as base64 little-endian typed arrays, so a
 * 100k-event timeline is a few MB of JSON that decodes in milliseconds into
 * arrays the renderer walks without allocating per event.
 */

import { maxLevels } from './counters';

export const TIMELINE_MIME = 'application/vnd.nbprofiler.timeline+json';

/** The payload version this extension reads. */
export const TIMELINE_VERSION = 1;

export type LaneKind = 'steps' | 'thread' | 'dataloader' | 'stream' | 'memory';

export interface ILane {
  id: number;
  kind: LaneKind;
  label: string;
  /** Nesting depth count (rows drawn for this lane). */
  rows: number;
  device: string | null;
}

export interface ICounterPayload {
  name: string;
  unit: string;
  device: string;
  /** The id of the memory lane it is drawn in. */
  lane?: number;
  t: string;
  v: string;
}

export interface IStep {
  step: number;
  start: number;
  end: number;
}

export interface IAggregated {
  events: number;
  below_us: number;
  /** The most blocks drawn, and whether that is the smaller cap of a saved report (absent in older payloads). */
  cap?: number;
  saved?: boolean;
}

/** The JSON the kernel sends; arrays are base64 strings. */
export interface ITimelinePayload {
  version: number;
  title: string;
  origin_us: number;
  span_us: [number, number];
  strings: string[];
  categories: string[];
  lanes: ILane[];
  events: {
    n: number;
    start: string;
    dur: string;
    lane: string;
    depth: string;
    name: string;
    cat: string;
    count: string;
    busy?: string;
    shapes: string;
    stack: string;
  };
  stacks: number[][];
  /** String indices of the stack frames in the user's own code; absent in older payloads. */
  user_frames?: number[];
  flows: { n: number; src: string; dst: string };
  counters: ICounterPayload[];
  steps: IStep[];
  aggregated: IAggregated | null;
  /** What each aggregate holds, by name: (aggregate, name, how many) triples; absent in older payloads. */
  merged?: { n: number; event: string; name: string; count: string };
  total_events: number;
  trace_name: string;
}

/** The events merged for drawing, by name: aggregate `event[i]` holds `count[i]` events named `name[i]`. */
export interface IMerged {
  n: number;
  event: Uint32Array;
  name: Uint32Array;
  count: Uint32Array;
}

/** Columnar events, sorted by (lane, start). Times in µs from `origin_us`. */
export interface IEvents {
  n: number;
  start: Float64Array;
  dur: Float32Array;
  lane: Uint16Array;
  depth: Uint8Array;
  name: Uint32Array;
  cat: Uint8Array;
  count: Uint32Array;
  /** Summed duration of the events an aggregate merged (null when the payload does not say). */
  busy: Float32Array | null;
  shapes: Int32Array;
  stack: Int32Array;
}

export interface ICounter {
  name: string;
  unit: string;
  device: string;
  lane: number | null;
  t: Float64Array;
  v: Float64Array;
  /** Maxima of pairs, of pairs of pairs...: the peak of any range of samples (counters.ts). */
  levels: Float64Array[];
  /** The largest value: the top of the lane's scale. */
  max: number;
}

/** The payload with its arrays decoded, plus per-lane event ranges. */
export interface ITimeline {
  title: string;
  originUs: number;
  span: [number, number];
  strings: string[];
  categories: string[];
  lanes: ILane[];
  events: IEvents;
  stacks: number[][];
  /** The stack frames (string indices) in the user's own code; empty: the payload does not say. */
  userFrames: Set<number>;
  flowSrc: Uint32Array;
  flowDst: Uint32Array;
  counters: ICounter[];
  steps: IStep[];
  aggregated: IAggregated | null;
  /** What the aggregates hold, by name (null: the payload does not say). */
  merged: IMerged | null;
  totalEvents: number;
  traceName: string;
  /** Events of lane at position i (in `lanes`) are [laneFirst[i], laneEnd[i]). */
  laneFirst: Uint32Array;
  laneEnd: Uint32Array;
  /** The longest event of each lane: how far back a visible event may start. */
  laneMaxDur: Float64Array;
  /** Lane id to its position in `lanes`. */
  lanePosition: Map<number, number>;
}

type TypedArrayCtor<T> = { new (buffer: ArrayBuffer): T; BYTES_PER_ELEMENT: number };

/** A base64 string of little-endian values as a typed array of `n` of them. */
export function decodeArray<T>(b64: unknown, ctor: TypedArrayCtor<T>, n: number, what: string): T {
  if (typeof b64 !== 'string') {
    throw new Error(`the timeline's ${what} array is missing`);
  }
  let binary: string;
  try {
    binary = atob(b64);
  } catch {
    throw new Error(`the timeline's ${what} array is not base64`);
  }
  if (binary.length !== n * ctor.BYTES_PER_ELEMENT) {
    throw new Error(`the timeline's ${what} array holds ${binary.length} bytes, not ${n} values`);
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = binary.charCodeAt(i);
  }
  // Every platform a browser runs on is little-endian, as the payload is.
  return new ctor(bytes.buffer);
}

function count(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new Error(`the timeline's ${what} is not a count`);
  }
  return value;
}

function list<T>(value: unknown, what: string): T[] {
  if (!Array.isArray(value)) {
    throw new Error(`the timeline's ${what} is not a list`);
  }
  return value as T[];
}

/** Read and check the payload; throws with a one-line reason when it cannot be drawn. */
export function decodeTimeline(data: unknown): ITimeline {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new Error('the timeline data is not a JSON object');
  }
  const p = data as Partial<ITimelinePayload>;
  if (p.version !== TIMELINE_VERSION) {
    throw new Error(`the timeline data is version ${String(p.version)}; this extension reads version ${TIMELINE_VERSION}`);
  }
  const ev = p.events;
  if (typeof ev !== 'object' || ev === null) {
    throw new Error("the timeline's events are missing");
  }
  const n = count(ev.n, 'event count');
  const events: IEvents = {
    n,
    start: decodeArray(ev.start, Float64Array, n, 'start'),
    dur: decodeArray(ev.dur, Float32Array, n, 'dur'),
    lane: decodeArray(ev.lane, Uint16Array, n, 'lane'),
    depth: decodeArray(ev.depth, Uint8Array, n, 'depth'),
    name: decodeArray(ev.name, Uint32Array, n, 'name'),
    cat: decodeArray(ev.cat, Uint8Array, n, 'cat'),
    count: decodeArray(ev.count, Uint32Array, n, 'count'),
    busy: ev.busy === undefined ? null : decodeArray(ev.busy, Float32Array, n, 'busy'),
    shapes: decodeArray(ev.shapes, Int32Array, n, 'shapes'),
    stack: decodeArray(ev.stack, Int32Array, n, 'stack')
  };
  const strings = list<unknown>(p.strings, 'strings').map(String);
  const lanes = list<ILane>(p.lanes, 'lanes');
  const flows = p.flows ?? { n: 0, src: '', dst: '' };
  const nf = count(flows.n, 'flow count');
  const counters = list<ICounterPayload>(p.counters ?? [], 'counters').map(c => {
    const len = Math.floor(atobLength(c.t) / 8);
    const v = decodeArray(c.v, Float64Array, len, 'counter value');
    const levels = maxLevels(v);
    return {
      name: String(c.name),
      unit: String(c.unit),
      device: String(c.device),
      lane: typeof c.lane === 'number' ? c.lane : null,
      t: decodeArray(c.t, Float64Array, len, 'counter time'),
      v,
      levels,
      max: v.length ? Math.max(0, levels[levels.length - 1][0]) : 0
    };
  });
  const span = Array.isArray(p.span_us) && p.span_us.length === 2 ? p.span_us : [0, 0];
  const timeline: ITimeline = {
    title: String(p.title ?? ''),
    originUs: Number(p.origin_us ?? 0),
    span: [Number(span[0]), Number(span[1])],
    strings,
    categories: list<unknown>(p.categories, 'categories').map(String),
    lanes,
    events,
    stacks: list<number[]>(p.stacks ?? [], 'stacks'),
    userFrames: new Set(list<unknown>(p.user_frames ?? [], 'user frames').filter((k): k is number => typeof k === 'number')),
    flowSrc: decodeArray(flows.src, Uint32Array, nf, 'flow source'),
    flowDst: decodeArray(flows.dst, Uint32Array, nf, 'flow target'),
    counters,
    steps: list<IStep>(p.steps ?? [], 'steps'),
    aggregated: p.aggregated ?? null,
    merged: decodeMerged(p.merged, n, strings.length),
    totalEvents: typeof p.total_events === 'number' ? p.total_events : n,
    traceName: String(p.trace_name || 'trace.json'),
    ...laneRanges(events, lanes)
  };
  for (let i = 0; i < n; i++) {
    if (events.name[i] >= strings.length) {
      throw new Error(`the timeline's event ${i} names string ${events.name[i]}, past the ${strings.length} strings`);
    }
  }
  return timeline;
}

/** How many bytes a base64 string decodes to (without decoding it). */
function atobLength(b64: unknown): number {
  if (typeof b64 !== 'string') {
    return 0;
  }
  const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return (b64.length / 4) * 3 - pad;
}

/** Each lane's range of events (they are sorted by lane, then start) and its longest event. */
function laneRanges(
  events: IEvents,
  lanes: ILane[]
): { laneFirst: Uint32Array; laneEnd: Uint32Array; laneMaxDur: Float64Array; lanePosition: Map<number, number> } {
  const position = new Map<number, number>();
  lanes.forEach((lane, i) => position.set(lane.id, i));
  const laneFirst = new Uint32Array(lanes.length);
  const laneEnd = new Uint32Array(lanes.length);
  const laneMaxDur = new Float64Array(lanes.length);
  let i = 0;
  while (i < events.n) {
    const id = events.lane[i];
    const at = position.get(id);
    if (at === undefined) {
      throw new Error(`the timeline's event ${i} is in lane ${id}, which the lanes do not list`);
    }
    let j = i;
    let maxDur = 0;
    while (j < events.n && events.lane[j] === id) {
      if (j > i && events.start[j] < events.start[j - 1]) {
        throw new Error(`the timeline's events are not sorted by start in lane ${id}`);
      }
      maxDur = Math.max(maxDur, events.dur[j]);
      j++;
    }
    if (laneEnd[at] !== 0) {
      throw new Error(`the timeline's events are not sorted by lane (lane ${id} comes twice)`);
    }
    laneFirst[at] = i;
    laneEnd[at] = j;
    laneMaxDur[at] = maxDur;
    i = j;
  }
  return { laneFirst, laneEnd, laneMaxDur, lanePosition: position };
}

/** The counters drawn in the memory lane at position `index`: those naming it, or else those of its device. */
export function laneCounters(t: ITimeline, index: number): ICounter[] {
  const lane = t.lanes[index];
  return t.counters.filter(c => (c.lane !== null ? c.lane === lane.id : c.device === lane.device));
}

/** The payload's merged names, checked against the events and strings they point to. */
function decodeMerged(m: ITimelinePayload['merged'], events: number, strings: number): IMerged | null {
  if (typeof m !== 'object' || m === null) {
    return null;
  }
  const n = count(m.n, 'merged count');
  const merged = {
    n,
    event: decodeArray(m.event, Uint32Array, n, 'merged event'),
    name: decodeArray(m.name, Uint32Array, n, 'merged name'),
    count: decodeArray(m.count, Uint32Array, n, 'merged count')
  };
  for (let i = 0; i < n; i++) {
    if (merged.event[i] >= events || merged.name[i] >= strings) {
      throw new Error("the timeline's merged names point past its events or strings");
    }
  }
  return merged;
}
