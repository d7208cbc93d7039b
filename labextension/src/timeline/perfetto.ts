/**
 * "Open in Perfetto": the timeline as a Chrome trace (the JSON that
 * ui.perfetto.dev and chrome://tracing open), downloaded as a file. Nothing
 * leaves the machine: the file is made here and saved by the browser.
 */
import { ITimeline } from './payload';

interface ITraceEvent {
  name: string;
  ph: string;
  pid: number;
  tid: number;
  ts?: number;
  dur?: number;
  cat?: string;
  id?: number;
  bp?: string;
  args?: { [key: string]: unknown };
}

/** A process per device (host lanes are process 1), a thread per lane. */
function processOf(t: ITimeline): { pid: (lane: number) => number; names: Map<number, string> } {
  const names = new Map<number, string>([[1, 'Host']]);
  const byDevice = new Map<string, number>();
  const pids = t.lanes.map(lane => {
    if (lane.kind === 'stream' || lane.kind === 'memory') {
      const device = lane.device ?? 'device';
      let pid = byDevice.get(device);
      if (pid === undefined) {
        pid = 2 + byDevice.size;
        byDevice.set(device, pid);
        names.set(pid, device);
      }
      return pid;
    }
    return 1;
  });
  return { pid: i => pids[i], names };
}

/** The Chrome trace of a timeline: "X" events per lane, flows from launches to kernels, counters. */
export function chromeTrace(t: ITimeline): { traceEvents: ITraceEvent[]; displayTimeUnit: string } {
  const { pid, names } = processOf(t);
  const out: ITraceEvent[] = [];
  for (const [p, name] of names) {
    out.push({ name: 'process_name', ph: 'M', pid: p, tid: 0, args: { name } });
  }
  t.lanes.forEach((lane, i) => {
    out.push({ name: 'thread_name', ph: 'M', pid: pid(i), tid: lane.id, args: { name: lane.label } });
    out.push({ name: 'thread_sort_index', ph: 'M', pid: pid(i), tid: lane.id, args: { sort_index: i } });
  });
  const position = new Map<number, number>(t.lanes.map((lane, i) => [lane.id, i]));
  const ev = t.events;
  const where = (i: number) => ({ pid: pid(position.get(ev.lane[i]) ?? 0), tid: ev.lane[i] });
  for (let i = 0; i < ev.n; i++) {
    const args: { [key: string]: unknown } = {};
    if (ev.count[i] > 1) {
      args['events merged'] = ev.count[i];
    }
    if (ev.shapes[i] >= 0) {
      args['Input Dims'] = t.strings[ev.shapes[i]];
    }
    if (ev.stack[i] >= 0) {
      args['Call stack'] = (t.stacks[ev.stack[i]] ?? []).map(s => t.strings[s]).join(';');
    }
    out.push({
      name: t.strings[ev.name[i]],
      cat: t.categories[ev.cat[i]] ?? 'other',
      ph: 'X',
      ts: t.originUs + ev.start[i],
      dur: ev.dur[i],
      ...where(i),
      args
    });
  }
  for (let k = 0; k < t.flowSrc.length; k++) {
    const src = t.flowSrc[k];
    const dst = t.flowDst[k];
    out.push({ name: 'launch', cat: 'flow', ph: 's', id: k, ts: t.originUs + ev.start[src], ...where(src) });
    out.push({ name: 'launch', cat: 'flow', ph: 'f', bp: 'e', id: k, ts: t.originUs + ev.start[dst], ...where(dst) });
  }
  const memoryPid = new Map<string, number>();
  t.lanes.forEach((lane, i) => {
    if (lane.kind === 'memory') {
      memoryPid.set(lane.device ?? '', pid(i));
    }
  });
  for (const c of t.counters) {
    const p = memoryPid.get(c.device) ?? 1;
    for (let j = 0; j < c.t.length; j++) {
      out.push({ name: c.name, ph: 'C', pid: p, tid: 0, ts: t.originUs + c.t[j], args: { [c.unit]: c.v[j] } });
    }
  }
  return { traceEvents: out, displayTimeUnit: 'ms' };
}

/** The file name to offer: the payload's, ending in .json. */
export function traceFileName(t: ITimeline): string {
  const base = t.traceName.replace(/[\\/:*?"<>|]+/g, '_') || 'trace';
  return /\.json$/i.test(base) ? base : `${base}.json`;
}

/** Save the Chrome trace through a Blob link; returns the file name. */
export function downloadChromeTrace(t: ITimeline): string {
  const name = traceFileName(t);
  const blob = new Blob([JSON.stringify(chromeTrace(t))], { type: 'application/json' });
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = name;
  link.style.display = 'none';
  document.body.appendChild(link);
  link.click();
  link.remove();
  // The browser has taken the file by the next turn; the URL is not needed after that.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
  return name;
}
