import { readFileSync } from 'fs';
import { join } from 'path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';

import { formatUs } from '../src/report/format';
import { disposeTimeline, renderTimeline, timelineViewOf, TimelineView } from '../src/timeline';
import { maxLevels, rangeMax, stepLine } from '../src/timeline/counters';
import { LABEL_W } from '../src/timeline/layout';
import { computeBlocks } from '../src/timeline/lod';
import { decodeTimeline, ITimelinePayload } from '../src/timeline/payload';
import { chromeTrace, traceFileName } from '../src/timeline/perfetto';
import { findMatches, stepMatch } from '../src/timeline/search';
import { textOn } from '../src/timeline/theme';
import { fitView, frameRange, MIN_SPAN_US, panBy, timeAt, xAt, zoomAround } from '../src/timeline/viewport';

const HOSTILE = '<img src=x onerror=alert(1)>';

/** The payload nbprofiler makes for the A100 AlexNet trace (make_timeline_fixture.py). */
function realPayload(): ITimelinePayload {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', 'timeline_a100_alexnet.json'), 'utf-8'));
}

// -- an encoder per the payload contract, for payloads the real trace cannot give -----------------
function b64(a: ArrayBufferView): string {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
}

interface ISynthEvent {
  start: number;
  dur: number;
  lane: number;
  depth?: number;
  name: string;
  cat: string;
  count?: number;
  shapes?: string;
  stack?: string[];
}

const CATS = ['step', 'operator', 'runtime', 'kernel', 'memcpy', 'other'];

function encode(
  events: ISynthEvent[],
  opts: { flows?: [number, number][]; aggregated?: { events: number; below_us: number } | null } = {}
): ITimelinePayload {
  const sorted = events; // callers give them by (lane, start)
  const strings: string[] = [];
  const intern = (s: string) => {
    const at = strings.indexOf(s);
    return at >= 0 ? at : strings.push(s) - 1;
  };
  const stacks: number[][] = [];
  const n = sorted.length;
  const start = new Float64Array(n);
  const dur = new Float32Array(n);
  const lane = new Uint16Array(n);
  const depth = new Uint8Array(n);
  const name = new Uint32Array(n);
  const cat = new Uint8Array(n);
  const count = new Uint32Array(n);
  const shapes = new Int32Array(n);
  const stack = new Int32Array(n);
  sorted.forEach((e, i) => {
    start[i] = e.start;
    dur[i] = e.dur;
    lane[i] = e.lane;
    depth[i] = e.depth ?? 0;
    name[i] = intern(e.name);
    cat[i] = CATS.indexOf(e.cat);
    count[i] = e.count ?? 1;
    shapes[i] = e.shapes === undefined ? -1 : intern(e.shapes);
    stack[i] = e.stack === undefined ? -1 : stacks.push(e.stack.map(intern)) - 1;
  });
  const flows = opts.flows ?? [];
  const end = Math.max(...sorted.map(e => e.start + e.dur));
  return {
    version: 1,
    title: 'synthetic',
    origin_us: 1_000_000,
    span_us: [0, end],
    strings,
    categories: CATS,
    lanes: [
      { id: 0, kind: 'thread', label: 'thread 1', rows: 3, device: null },
      { id: 1, kind: 'stream', label: 'GPU 0 stream 7', rows: 1, device: 'cuda:0' },
      { id: 2, kind: 'memory', label: 'Memory cuda:0', rows: 1, device: 'cuda:0' }
    ],
    events: {
      n,
      start: b64(start),
      dur: b64(dur),
      lane: b64(lane),
      depth: b64(depth),
      name: b64(name),
      cat: b64(cat),
      count: b64(count),
      shapes: b64(shapes),
      stack: b64(stack)
    },
    stacks,
    flows: {
      n: flows.length,
      src: b64(Uint32Array.from(flows.map(f => f[0]))),
      dst: b64(Uint32Array.from(flows.map(f => f[1])))
    },
    counters: [
      {
        name: 'allocated',
        unit: 'bytes',
        device: 'cuda:0',
        t: b64(Float64Array.from([0, end / 2])),
        v: b64(Float64Array.from([1024, 3 * 1024 * 1024]))
      }
    ],
    steps: [{ step: 3, start: 0, end }],
    aggregated: opts.aggregated ?? null,
    total_events: n,
    trace_name: 'synthetic run.pt.trace.json'
  };
}

/** A host op launching a kernel on the stream, with a stack and shapes; a hostile name. */
function smallPayload(): ITimelinePayload {
  return encode(
    [
      { start: 0, dur: 100, lane: 0, name: 'aten::conv2d', cat: 'operator', shapes: '[[8, 3, 224, 224]]', stack: ['train.py(10): main', 'model.py(42): forward'] },
      { start: 10, dur: 5, lane: 0, depth: 1, name: 'cudaLaunchKernel', cat: 'runtime' },
      { start: 50, dur: 20, lane: 0, depth: 1, name: HOSTILE, cat: 'operator' },
      { start: 30, dur: 4, lane: 1, name: 'sgemm_128x64', cat: 'kernel' },
      { start: 60, dur: 8, lane: 1, name: '12 events', cat: 'kernel', count: 12 }
    ],
    { flows: [[1, 3]], aggregated: { events: 12, below_us: 2 } }
  );
}

/** `n` kernels of 0.5 µs, 2 µs apart on one stream, plus nested host ops: LOD and speed. */
function manyEvents(n: number): ITimelinePayload {
  const events: ISynthEvent[] = [];
  for (let i = 0; i < n / 2; i++) {
    events.push({ start: i * 4, dur: 3, lane: 0, depth: i % 3, name: `aten::op${i % 50}`, cat: 'operator' });
  }
  for (let i = 0; i < n / 2; i++) {
    events.push({ start: i * 4 + 1, dur: 0.5, lane: 1, name: `kernel_${i % 50}`, cat: 'kernel' });
  }
  return encode(events);
}

// -- a 2d context that records nothing: jsdom has no canvas -------------------------------------
function stubContext(): CanvasRenderingContext2D {
  const state: { [k: string]: unknown } = { fillStyle: '#000000' };
  return new Proxy(state, {
    get: (target, prop: string) => (prop in target ? target[prop] : () => ({ width: 10 })),
    set: (target, prop: string, value) => {
      target[prop] = value;
      return true;
    }
  }) as unknown as CanvasRenderingContext2D;
}

let fillTexts: string[] = [];
beforeAll(() => {
  HTMLCanvasElement.prototype.getContext = function () {
    const ctx = stubContext();
    (ctx as unknown as { fillText: (s: string) => void }).fillText = (s: string) => fillTexts.push(s);
    return ctx;
  } as typeof HTMLCanvasElement.prototype.getContext;
});

const mounted: HTMLElement[] = [];
function mount(payload: unknown): TimelineView {
  const node = renderTimeline(payload);
  document.body.appendChild(node);
  mounted.push(node);
  const view = timelineViewOf(node);
  if (!view) {
    throw new Error(node.textContent ?? 'no view');
  }
  return view;
}
afterEach(() => {
  for (const node of mounted.splice(0)) {
    disposeTimeline(node);
    node.remove();
  }
  fillTexts = [];
});

function field(view: TimelineView, name: string): string | null {
  return view.node.querySelector(`.nbp-tl-details [data-field="${name}"]`)?.textContent ?? null;
}

/** Canvas coordinates of the middle of event i's bar in the current view. */
function pointOf(view: TimelineView, i: number): { x: number; y: number } {
  const ev = view.timeline.events;
  const box = view.layout.boxes[view.timeline.lanePosition.get(ev.lane[i])!];
  const mid = ev.start[i] + ev.dur[i] / 2;
  return { x: LABEL_W + xAt(view.view, view.trackWidth, mid), y: box.top + (ev.depth[i] + 0.5) * box.rowH };
}

function kernelIndex(view: TimelineView, pattern: string): number {
  const t = view.timeline;
  for (let i = 0; i < t.events.n; i++) {
    if (t.categories[t.events.cat[i]] === 'kernel' && t.strings[t.events.name[i]].includes(pattern)) {
      return i;
    }
  }
  throw new Error(`no kernel named like ${pattern}`);
}

describe('the payload', () => {
  it('decodes the real trace into lanes of sorted events', () => {
    const p = realPayload();
    const t = decodeTimeline(p);
    expect(t.events.n).toBe(p.events.n);
    expect(t.lanes.map(l => l.kind)).toContain('stream');
    expect(t.lanes.map(l => l.kind)).toContain('thread');
    let covered = 0;
    t.lanes.forEach((lane, li) => {
      for (let i = t.laneFirst[li]; i < t.laneEnd[li]; i++) {
        expect(t.events.lane[i]).toBe(lane.id);
        covered++;
      }
    });
    expect(covered).toBe(t.events.n);
  });

  it('gives a one-line reason for a payload it cannot draw, instead of throwing', () => {
    const future = { ...realPayload(), version: 2 };
    const node = renderTimeline(future);
    expect(node.textContent).toMatch(/^This timeline cannot be shown: .*version 2.*\.$/);
    const cut = realPayload();
    cut.events.dur = cut.events.dur.slice(0, 40);
    expect(renderTimeline(cut).textContent).toMatch(/dur array holds \d+ bytes, not \d+ values/);
    expect(renderTimeline('nonsense').textContent).toMatch(/not a JSON object/);
  });
});

describe('zoom and pan', () => {
  const bounds = fitView([0, 10_000]);

  it('keeps the time under the cursor in place', () => {
    const view = { start: 1000, end: 3000 };
    const anchor = timeAt(view, 800, 200);
    const zoomed = zoomAround(view, anchor, 0.25, bounds);
    expect(zoomed.end - zoomed.start).toBeCloseTo(500);
    expect(xAt(zoomed, 800, anchor)).toBeCloseTo(200);
  });

  it('goes down to a single microsecond across the width, and out to the whole trace', () => {
    let view = bounds;
    for (let i = 0; i < 60; i++) {
      view = zoomAround(view, 5000, 0.5, bounds);
    }
    expect(view.end - view.start).toBe(MIN_SPAN_US);
    for (let i = 0; i < 60; i++) {
      view = zoomAround(view, 5000, 2, bounds);
    }
    expect(view).toEqual(bounds);
  });

  it('pans without leaving the trace', () => {
    const view = { start: 0, end: 1000 };
    expect(panBy(view, 500, bounds)).toEqual({ start: 500, end: 1500 });
    expect(panBy(view, -1e9, bounds).start).toBe(bounds.start);
    expect(panBy(view, 1e9, bounds).end).toBe(bounds.end);
  });

  it('frames an event across a share of the width', () => {
    const v = frameRange(4000, 4010, 0.5, bounds);
    expect(v.end - v.start).toBeCloseTo(20);
    expect((v.start + v.end) / 2).toBeCloseTo(4005);
  });
});

describe('level of detail', () => {
  it('merges events narrower than a pixel per lane row, and counts every one of them', () => {
    const t = decodeTimeline(manyEvents(20_000));
    const width = 1000;
    const blocks = computeBlocks(t, fitView(t.span), width, null);
    // Each of the 4 rows (3 host depths, 1 stream) needs at most a block per pixel.
    expect(blocks.n).toBeLessThanOrEqual(4 * width);
    let covered = 0;
    for (let k = 0; k < blocks.n; k++) {
      covered += blocks.events[k];
      expect(blocks.x1[k]).toBeGreaterThanOrEqual(blocks.x0[k]);
    }
    expect(covered).toBe(t.events.n);
  });

  it('draws each event as its own block once zoomed in', () => {
    const t = decodeTimeline(manyEvents(20_000));
    const view = { start: 1000, end: 1040 };
    const blocks = computeBlocks(t, view, 1000, null);
    const visible: number[] = [];
    for (let i = 0; i < t.events.n; i++) {
      if (t.events.start[i] <= view.end && t.events.start[i] + t.events.dur[i] >= view.start) {
        visible.push(i);
      }
    }
    expect(blocks.n).toBe(visible.length);
    for (let k = 0; k < blocks.n; k++) {
      expect(blocks.first[k]).toBe(blocks.last[k]);
    }
  });

  it('redraws 100k events well within a frame (figures printed, not asserted)', () => {
    const view = mount(manyEvents(100_000));
    const median = (ms: number[]) => ms.sort((a, b) => a - b)[ms.length >> 1].toFixed(2);
    const times = (label: string, setup: () => void) => {
      const redraw: number[] = [];
      const lod: number[] = [];
      for (let r = 0; r < 15; r++) {
        setup();
        view.redraw();
        redraw.push(view.lastRedrawMs);
        const t0 = performance.now();
        computeBlocks(view.timeline, view.view, view.trackWidth, null, view.blocks);
        lod.push(performance.now() - t0);
      }
      console.log(
        `timeline, 100k events, ${label}: redraw (jsdom, stub canvas) median ${median(redraw)} ms, ` +
          `level of detail alone median ${median(lod)} ms, ${view.blocks.n} blocks`
      );
    };
    times('whole trace', () => view.setView(view.bounds));
    times('a tenth of it', () => view.setView({ start: 100_000, end: 120_000 }));
    times('40 µs', () => view.setView({ start: 100_000, end: 100_040 }));
    expect(view.blocks.n).toBeGreaterThan(0);
  });
});

describe('memory counters', () => {
  it('finds the peak of any range of samples', () => {
    const v = Float64Array.from({ length: 1000 }, (_, i) => Math.abs(Math.sin(i * 0.37)) * 100 + (i === 613 ? 500 : 0));
    const levels = maxLevels(v);
    for (const [lo, hi] of [[0, 1000], [0, 1], [5, 6], [600, 620], [614, 999], [1, 999], [333, 334]]) {
      expect(rangeMax(levels, lo, hi)).toBe(Math.max(...v.slice(lo, hi)));
    }
  });

  it('keeps a one-sample spike visible with the whole trace in view, and draws a vertex group per column', () => {
    const n = 100_000;
    const t = Float64Array.from({ length: n }, (_, i) => i);
    const v = Float64Array.from({ length: n }, (_, i) => (i === 54_321 ? 9e9 : 1e6));
    const points: [number, number][] = [];
    stepLine(t, v, maxLevels(v), 0, 500 / n, 500, (x, value) => points.push([x, value]));
    expect(Math.max(...points.map(p => p[1]))).toBe(9e9);
    expect(points.length).toBeLessThanOrEqual(3 * 501 + 1);
    expect(points[points.length - 1][1]).toBe(1e6);
  });
});

describe('clicking and hovering', () => {
  it('zooms to one kernel of the real trace and shows its name and duration on a click', () => {
    const view = mount(realPayload());
    const k = kernelIndex(view, 'scudnn');
    const ev = view.timeline.events;
    // Zoom with the keyboard around the kernel until it spans most of the width.
    const surface = view.node.querySelector('.nbp-tl-surface') as HTMLElement;
    let guard = 0;
    while (xAt(view.view, view.trackWidth, ev.start[k] + ev.dur[k]) - xAt(view.view, view.trackWidth, ev.start[k]) < view.trackWidth / 3) {
      const { x, y } = pointOf(view, k);
      surface.dispatchEvent(new MouseEvent('pointermove', { clientX: x, clientY: y, bubbles: true }));
      surface.dispatchEvent(new KeyboardEvent('keydown', { key: 'w', bubbles: true }));
      view.redraw();
      expect(++guard).toBeLessThan(200);
    }
    const { x, y } = pointOf(view, k);
    surface.dispatchEvent(new MouseEvent('pointerdown', { clientX: x, clientY: y, button: 0, bubbles: true }));
    window.dispatchEvent(new MouseEvent('pointerup', { clientX: x, clientY: y, bubbles: true }));
    expect(field(view, 'name')).toBe(view.timeline.strings[ev.name[k]]);
    expect(field(view, 'duration')).toBe(formatUs(ev.dur[k]));
    expect(field(view, 'category')).toBe('kernel');
  });

  it('shows shapes and the stack, and follows the flow from a launch to its kernel', () => {
    const view = mount(smallPayload());
    view.setView({ start: 0, end: 110 });
    view.redraw();
    view.clickAt(pointOf(view, 0).x, pointOf(view, 0).y);
    expect(field(view, 'shapes')).toBe('[[8, 3, 224, 224]]');
    const frames = [...view.node.querySelectorAll('.nbp-tl-stack li')].map(li => li.textContent);
    expect(frames).toEqual(['train.py(10): main', 'model.py(42): forward']);

    view.clickAt(pointOf(view, 1).x, pointOf(view, 1).y);
    expect(field(view, 'name')).toBe('cudaLaunchKernel');
    const go = [...view.node.querySelectorAll('.nbp-tl-details button')].find(b => b.textContent?.startsWith('Go to the kernel'));
    expect(go?.textContent).toContain('sgemm_128x64');
    (go as HTMLButtonElement).click();
    expect(field(view, 'name')).toBe('sgemm_128x64');
    expect(view.node.querySelector('.nbp-tl-details button')?.textContent).toContain('Go to its launch');
  });

  it('opens a stack at the user\'s own code, the framework frames before it folded behind a button', () => {
    const framework = ['runpy.py(198): _run_module_as_main', 'ipykernel/kernelapp.py(701): start', 'IPython/core/interactiveshell.py(3577): run_code'];
    const user = ['/tmp/ipykernel_7/1.py(4): <module>', 'model.py(42): forward'];
    const p = encode([{ start: 0, dur: 100, lane: 0, name: 'aten::addmm', cat: 'operator', stack: [...framework, ...user, 'torch/nn/modules/linear.py(125): forward'] }]);
    p.user_frames = user.map(f => p.strings.indexOf(f));
    const view = mount(p);
    view.setView({ start: 0, end: 110 });
    view.redraw();
    view.clickAt(pointOf(view, 0).x, pointOf(view, 0).y);
    const shown = () => [...view.node.querySelectorAll('.nbp-tl-stack li')].filter(li => !(li as HTMLElement).hidden).map(li => li.textContent);
    expect(shown()).toEqual([...user, 'torch/nn/modules/linear.py(125): forward']);
    expect([...view.node.querySelectorAll('.nbp-tl-stack li.nbp-tl-user')].map(li => li.textContent)).toEqual(user);
    const toggle = view.node.querySelector('.nbp-tl-frames') as HTMLButtonElement;
    expect(toggle.textContent).toBe('show 3 framework frames');
    toggle.click();
    expect(shown()).toHaveLength(6);
    expect(toggle.textContent).toBe('hide 3 framework frames');
  });

  it('says how many events an aggregate merged, and that the cap merged them', () => {
    const view = mount(smallPayload());
    expect(view.node.querySelector('.nbp-tl-aggregated')?.textContent).toMatch(/12 events shorter than 2\.0 µs are merged/);
    view.setView({ start: 0, end: 110 });
    view.redraw();
    view.clickAt(pointOf(view, 4).x, pointOf(view, 4).y);
    expect(field(view, 'merged')).toMatch(/^12 events merged/);
  });

  it('says when the saved report keeps a smaller timeline than the live one, and how to get it all', () => {
    const p = smallPayload();
    p.aggregated = { ...p.aggregated!, cap: 20000, saved: true };
    const note = mount(p).node.querySelector('.nbp-tl-aggregated')?.textContent ?? '';
    expect(note).toMatch(/The saved report keeps at most 20,000 blocks, so that the notebook stays small/);
    expect(mount(smallPayload()).node.querySelector('.nbp-tl-aggregated')?.textContent).not.toMatch(/saved report/);
  });

  it('says "N events merged" for a block of sub-pixel events', () => {
    const view = mount(manyEvents(20_000));
    view.redraw();
    const k = [...Array(view.blocks.n).keys()].find(b => view.blocks.first[b] !== view.blocks.last[b])!;
    const box = view.layout.boxes[view.blocks.lane[k]];
    view.clickAt(LABEL_W + (view.blocks.x0[k] + view.blocks.x1[k]) / 2, box.top + (view.blocks.depth[k] + 0.5) * box.rowH);
    expect(field(view, 'name')).toBe(`${view.blocks.events[k]} events merged`);
  });

  it('sets untrusted names as text only', () => {
    const view = mount(smallPayload());
    view.setView({ start: 45, end: 75 });
    view.redraw();
    view.clickAt(pointOf(view, 2).x, pointOf(view, 2).y);
    expect(field(view, 'name')).toBe(HOSTILE);
    expect(view.node.querySelector('img')).toBeNull();
    expect(fillTexts).toContain(HOSTILE);
  });

  it('shows the memory counter under the pointer', () => {
    const view = mount(smallPayload());
    const box = view.layout.boxes.find(b => b.lane.kind === 'memory')!;
    const surface = view.node.querySelector('.nbp-tl-surface') as HTMLElement;
    const x = LABEL_W + xAt(view.view, view.trackWidth, 90);
    surface.dispatchEvent(new MouseEvent('pointermove', { clientX: x, clientY: box.top + 10, bubbles: true }));
    expect(view.node.querySelector('.nbp-tl-tooltip')?.textContent).toMatch(/^allocated: 3\.0 MiB at/);
    view.redraw();
    expect(fillTexts).toContain('peak 3.0 MiB');
  });
});

describe('keyboard, wheel and buttons', () => {
  it('zooms with W/S and the wheel, pans with A/D and dragging, fits with the button', () => {
    const view = mount(realPayload());
    const surface = view.node.querySelector('.nbp-tl-surface') as HTMLElement;
    const key = (k: string) => surface.dispatchEvent(new KeyboardEvent('keydown', { key: k, bubbles: true }));
    const span = () => view.view.end - view.view.start;
    const full = span();
    for (const k of 'www') {
      key(k);
    }
    expect(span()).toBeLessThan(full / 1.9);
    const before = view.view.start;
    key('d');
    expect(view.view.start).toBeGreaterThan(before);
    key('a');
    expect(view.view.start).toBeCloseTo(before);
    for (const k of 'sss') {
      key(k);
    }
    expect(span()).toBeCloseTo(full);

    const x = LABEL_W + 300;
    const anchor = timeAt(view.view, view.trackWidth, 300);
    surface.dispatchEvent(new WheelEvent('wheel', { deltaY: -300, clientX: x, clientY: 40, bubbles: true, cancelable: true }));
    expect(span()).toBeLessThan(full);
    expect(xAt(view.view, view.trackWidth, anchor)).toBeCloseTo(300);

    const start = view.view.start;
    surface.dispatchEvent(new MouseEvent('pointerdown', { clientX: 400, clientY: 40, button: 0, bubbles: true }));
    window.dispatchEvent(new MouseEvent('pointermove', { clientX: 300, clientY: 40, bubbles: true }));
    window.dispatchEvent(new MouseEvent('pointerup', { clientX: 300, clientY: 40, bubbles: true }));
    expect(view.view.start).toBeGreaterThan(start);

    const fit = [...view.node.querySelectorAll('button')].find(b => b.textContent === 'Fit') as HTMLButtonElement;
    fit.click();
    expect(view.view).toEqual(view.bounds);
  });

  it('stops listening once disposed', () => {
    const view = mount(realPayload());
    const surface = view.node.querySelector('.nbp-tl-surface') as HTMLElement;
    disposeTimeline(view.node);
    surface.dispatchEvent(new KeyboardEvent('keydown', { key: 'w', bubbles: true }));
    expect(view.view).toEqual(view.bounds);
  });
});

describe('search', () => {
  it('counts, highlights and steps through the matches by name', () => {
    const view = mount(realPayload());
    const t = view.timeline;
    const expected = [...Array(t.events.n).keys()].filter(i => /relu/i.test(t.strings[t.events.name[i]]));
    expect(expected.length).toBeGreaterThan(1);
    const input = view.node.querySelector('.nbp-tl-search') as HTMLInputElement;
    input.value = 'RELU';
    input.dispatchEvent(new Event('input'));
    expect(view.node.querySelector('.nbp-tl-count')?.textContent).toBe(`${expected.length} matches`);
    view.redraw();
    const marked = [...Array(view.blocks.n).keys()].filter(k => view.blocks.match[k]);
    expect(marked.length).toBeGreaterThan(0);

    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    const first = view.matches!.order[0];
    expect(field(view, 'name')).toBe(t.strings[t.events.name[first]]);
    expect(view.node.querySelector('.nbp-tl-count')?.textContent).toBe(`1 of ${expected.length}`);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', shiftKey: true, bubbles: true }));
    expect(view.node.querySelector('.nbp-tl-count')?.textContent).toBe(`${expected.length} of ${expected.length}`);
  });

  it('counts and finds the events merged for drawing, as the tables count them', () => {
    const p = realPayload();
    const t0 = decodeTimeline(p);
    const relu = t0.strings.findIndex(s => /relu/i.test(s));
    const alone = [...Array(t0.events.n).keys()].filter(i => /relu/i.test(t0.strings[t0.events.name[i]])).length;
    // Event 0 becomes an aggregate of 40 events, 25 of them named like a relu, 15 like another name.
    const counts = decodeTimeline(p).events.count.slice();
    counts[0] = 40;
    const other = t0.events.name[0] === relu ? (relu + 1) % t0.strings.length : t0.events.name[0];
    const merged = {
      ...p,
      events: { ...p.events, count: b64(counts) },
      merged: { n: 2, event: b64(Uint32Array.of(0, 0)), name: b64(Uint32Array.of(relu, other)), count: b64(Uint32Array.of(25, 15)) }
    };
    const t = decodeTimeline(merged);
    const m = findMatches(t, 'relu')!;
    const aloneNow = alone - (/relu/i.test(t0.strings[t0.events.name[0]]) ? 1 : 0);
    expect(m.events).toBe(aloneNow + 25);
    expect(m.merged).toBe(25);
    expect(m.mask[0]).toBe(1);
    expect(Array.from(m.order)).toContain(0);
    const view = mount(merged);
    const input = view.node.querySelector('.nbp-tl-search') as HTMLInputElement;
    input.value = 'relu';
    input.dispatchEvent(new Event('input'));
    expect(view.node.querySelector('.nbp-tl-count')?.textContent).toBe(`${aloneNow + 25} matches (25 inside merged blocks)`);
    // A payload whose merged names point past its events is refused.
    const bad = { ...merged, merged: { ...merged.merged, event: b64(Uint32Array.of(t0.events.n, 0)) } };
    expect(() => decodeTimeline(bad)).toThrow(/merged names/);
  });

  it('orders matches by time and wraps around', () => {
    const t = decodeTimeline(realPayload());
    const m = findMatches(t, 'aten::')!;
    for (let j = 1; j < m.order.length; j++) {
      expect(t.events.start[m.order[j]]).toBeGreaterThanOrEqual(t.events.start[m.order[j - 1]]);
    }
    expect(stepMatch(m, m.order.length - 1, 1)).toBe(0);
    expect(stepMatch(m, 0, -1)).toBe(m.order.length - 1);
    expect(findMatches(t, '   ')).toBeNull();
  });
});

describe('Open in Perfetto', () => {
  it('builds a Chrome trace with an X event per event, a thread per lane and the flows', () => {
    const p = realPayload();
    const t = decodeTimeline(p);
    const trace = JSON.parse(JSON.stringify(chromeTrace(t)));
    const xs = trace.traceEvents.filter((e: { ph: string }) => e.ph === 'X');
    expect(xs).toHaveLength(t.events.n);
    xs.forEach((e: { ts: number; dur: number; name: string; tid: number }, i: number) => {
      expect(e.ts).toBeCloseTo(p.origin_us + t.events.start[i]);
      expect(e.dur).toBeCloseTo(t.events.dur[i]);
      expect(e.name).toBe(t.strings[t.events.name[i]]);
      expect(e.tid).toBe(t.events.lane[i]);
    });
    const threads = trace.traceEvents.filter((e: { name: string }) => e.name === 'thread_name');
    expect(threads.map((e: { args: { name: string } }) => e.args.name)).toEqual(t.lanes.map(l => l.label));
    expect(trace.traceEvents.filter((e: { ph: string }) => e.ph === 's')).toHaveLength(p.flows.n);
    expect(trace.traceEvents.filter((e: { ph: string }) => e.ph === 'f')).toHaveLength(p.flows.n);
    // Kernels live in the device's process, host operators in the host's.
    const k = xs.find((e: { cat: string }) => e.cat === 'kernel');
    const op = xs.find((e: { cat: string }) => e.cat === 'operator');
    expect(k.pid).not.toBe(op.pid);
  });

  it('downloads the file under the trace name and says where to open it', async () => {
    const view = mount(smallPayload());
    const blobs: Blob[] = [];
    const created = vi.fn((b: Blob) => {
      blobs.push(b);
      return 'blob:nbp-test';
    });
    URL.createObjectURL = created;
    URL.revokeObjectURL = vi.fn();
    let downloaded = '';
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      downloaded = this.download;
    });
    const button = [...view.node.querySelectorAll('button')].find(b => b.textContent === 'Open in Perfetto') as HTMLButtonElement;
    button.click();
    click.mockRestore();
    expect(downloaded).toBe(traceFileName(view.timeline));
    expect(downloaded).toBe('synthetic run.pt.trace.json');
    const text = await new Promise<string>(resolve => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result));
      reader.readAsText(blobs[0]);
    });
    const saved = JSON.parse(text);
    expect(saved.traceEvents.filter((e: { ph: string }) => e.ph === 'X')).toHaveLength(5);
    const note = view.node.querySelector('.nbp-tl-note:not(.nbp-tl-aggregated)')?.textContent ?? '';
    expect(note).toContain('https://ui.perfetto.dev');
    expect(note).toContain('chrome://tracing');
  });
});

describe('theme', () => {
  it('writes names in black or white, whichever contrasts more with the fill', () => {
    expect(textOn('#ffffff')).toBe('#000');
    expect(textOn('#1a1a1a')).toBe('#fff');
    expect(textOn('rgb(67, 160, 71)')).toBe('#000');
    expect(textOn('rgba(13, 71, 161, 1)')).toBe('#fff');
  });
});
