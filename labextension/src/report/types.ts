/**
 * The report payload the Python side puts in a `%%torchprofile` output, under
 * the MIME type `application/vnd.nbprofiler.report+json`.
 *
 * Everything here comes from a notebook file and from trace data, so it is
 * untrusted: `parseReport` checks the shape and the view only ever writes it
 * into the page as text.
 */

import { ICycles, parseCycles } from './cycles';
import { IDistributed, parseDistributed } from './distributed';
import { IHardware, parseHardware } from './hardware';

export const REPORT_MIME = 'application/vnd.nbprofiler.report+json';
export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
export const SCHEMA = 'nbprofiler.report/1';

export type Cell = string | number | boolean | null;

export interface ITable {
  columns: string[];
  rows: Cell[][];
}

export interface IDevice {
  name: string;
  kind: 'cpu' | 'cuda' | 'rocm' | string;
  total_memory_bytes: number | null;
  compute_capability: string | null;
  sm_count: number | null;
}

export interface ISummary {
  avg_step_us: number | null;
  gpu_utilization: number | null;
  sm_efficiency: number | null;
  achieved_occupancy: number | null;
  tensor_core_share: number | null;
  steps_profiled: number;
  /** What the average step is over, in words ("the 3 profiled steps"). */
  step_label: string | null;
  samples_per_s: number | null;
  samples_per_step: number | null;
  batches_per_step: number | null;
  batch_size: number | null;
  /** What samples/s counts, as Python words it ("64 samples per step: 4 batches of 16"). */
  throughput_detail: string | null;
  /** Model FLOPs utilization: achieved FLOP/s over the device's peak for the dtype in use. */
  mfu: number | null;
  /** What the MFU is over ("4.38 TFLOP/s of the fp32 peak"). */
  mfu_detail: string | null;
}

export interface IBreakdown extends ITable {
  kind: 'device' | 'phases' | string;
}

export interface ISuggestion {
  kind: string;
  title: string;
  severity: 'high' | 'medium' | 'low' | string;
  evidence: { [key: string]: unknown };
  /** The evidence in words with units, as Python wrote it; empty in reports saved before it existed. */
  facts: string[];
  expected_gain: string;
  code: string | null;
  /** The code is only comments (the change is in the user's own loop): no "Try it"; false in older payloads. */
  guidance: boolean;
  detail: string | null;
}

/** A memory series Python's `report.memory_growth` flagged as rising step after step (a leak). */
export interface IGrowth {
  device: string;
  /** "sampler": every step the cell ran; "trace": the profiled steps. */
  source: string;
  /** "allocated" (tensor memory) or "rss" (the process). */
  measure: string;
  steps: number | null;
  first_bytes: number | null;
  last_bytes: number | null;
  slope_bytes_per_step: number | null;
}

export interface IMemory {
  /**
   * Per profiled step and device, from the trace: `step, device, end_allocated_bytes, peak_allocated_bytes,
   * peak_reserved_bytes, reconstructed` (levels counted from the start of recording, as on the CPU).
   */
  steps: ITable;
  growth: IGrowth[];
  /** The growth warnings as Python words them; empty in reports saved before it sent them. */
  warnings: string[];
  /** The memory headline of `device` ("largest rise within a step (traced, …) 8.0 MiB"), as Python words it. */
  device: string | null;
  figures: string[];
}

/** A capped table: `total` counts the rows of the whole run, of which the payload keeps `rows`. */
export interface ICappedTable extends ITable {
  total: number;
}

/** The kernels: `help` says, per column, what a figure is where its label cannot (the launching operator's FLOP/s). */
export interface IKernelTable extends ICappedTable {
  help: { [column: string]: string };
}

/** A table the run may not have recorded; `why` then says, in words, why and how to get it. */
export interface IOptionalTable extends ICappedTable {
  why: string | null;
}

/**
 * Whether "Try it" may run the report's code (payload `report_token`, `origin`): `token`, issued by
 * the kernel that made the report, which the kernel confirms before anything runs; or `origin`, where
 * a report made elsewhere came from, in words. Null both for a payload written before they existed.
 */
export interface ITrial {
  token: string | null;
  origin: string | null;
}

/** What the report was made from (payload `saved_from`), which its tag says. */
export interface ISavedFrom {
  /** "live run", "trace file" or "saved file". */
  kind: string;
  /** ISO time: when the live run ended, the trace file was written, or the kept run ran. */
  when: string | null;
  path: string | null;
}

export interface IReport {
  schema: string;
  title: string;
  source: string;
  partial: boolean;
  notes: string[];
  device: IDevice;
  summary: ISummary;
  breakdown: IBreakdown;
  operators: ITable;
  /** Operators in the whole run; the payload keeps at most a capped number of them in `operators`. */
  operatorsTotal: number;
  steps: ITable;
  memory: IMemory;
  suggestions: ISuggestion[];
  /** Chart specs by name (Python's `charts.build`), only those with data; drawn by charts.ts. */
  charts: { [name: string]: unknown };
  /** The Timeline tab's events (Python's `timeline_data.build`), or null: none recorded, or saved before it existed. */
  timeline: unknown;
  /** Kernels by total time: full names, category, occupancy, blocks per SM, tensor cores, launch delay, the
   * launching FLOP operator's achieved FLOP/s and bound, launching operator. */
  kernels: IKernelTable;
  /** Every line of the cell: `line, source, host_us, device_us`. */
  lines: IOptionalTable;
  /** The module tree in call order: `module, parent, type, depth, calls` and forward/backward times. */
  modules: IOptionalTable;
  /** The flame graph's boxes (flame.ts parses them); null in payloads written before it existed. */
  flame: { [key: string]: unknown } | null;
  /** Null in payloads written before it existed. */
  savedFrom: ISavedFrom | null;
  /** The Hardware tab (hardware.ts); null in payloads written before it existed. */
  hardware: IHardware | null;
  /** The Distributed tab (distributed.ts); null without distributed data. */
  distributed: IDistributed | null;
  /** The Cycles tab (cycles.ts); null for a run without --every cycles. */
  cycles: ICycles | null;
  /** The tabs with content, in order, as Python decided them (nbprofiler/render/tabs.py); null in payloads
   * written before it did, whose tabs the view picks as it always did. */
  tabs: string[] | null;
  /** The one line saying which flags would add which views ('' when none would). */
  moreViews: string;
  /** Whether "Try it" may run the code of this report's cards (try/card.ts). */
  trial: ITrial;
}

/** Raised when the payload is not a report this renderer understands. */
export class ReportFormatError extends Error {}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown, fallback = ''): string {
  if (typeof value === 'string') {
    return value;
  }
  if (value === null || value === undefined) {
    return fallback;
  }
  return String(value);
}

/** A list of strings, empty where the payload has none (reports saved before the field existed). */
function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.map(v => str(v)) : [];
}

/** A string, or null where the payload has none (reports saved before the field existed). */
function optStr(value: unknown): string | null {
  return value === null || value === undefined ? null : str(value);
}

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function cell(value: unknown): Cell {
  if (value === null || value === undefined) {
    return null;
  }
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : null;
  }
  if (typeof value === 'string' || typeof value === 'boolean') {
    return value;
  }
  // Nested values (lists of shapes, ...) are shown as their JSON text.
  return JSON.stringify(value);
}

function table(value: unknown, what: string): ITable {
  if (value === undefined || value === null) {
    return { columns: [], rows: [] };
  }
  if (!isObject(value) || !Array.isArray(value.columns) || !Array.isArray(value.rows)) {
    throw new ReportFormatError(`"${what}" must be an object with "columns" and "rows" lists`);
  }
  const columns = value.columns.map(c => str(c));
  const rows = value.rows.map((row, i) => {
    if (!Array.isArray(row)) {
      throw new ReportFormatError(`row ${i} of "${what}" is not a list`);
    }
    const out = row.slice(0, columns.length).map(cell);
    while (out.length < columns.length) {
      out.push(null);
    }
    return out;
  });
  return { columns, rows };
}

function cappedTable(value: unknown, what: string): ICappedTable {
  const t = table(value, what);
  return { ...t, total: Math.max(t.rows.length, (isObject(value) && num(value.total)) || 0) };
}

function optionalTable(value: unknown, what: string): IOptionalTable {
  return { ...cappedTable(value, what), why: isObject(value) ? optStr(value.why) : null };
}

function kernelTable(value: unknown): IKernelTable {
  const help = isObject(value) && isObject(value.help) ? value.help : {};
  return {
    ...cappedTable(value, 'kernels'),
    help: Object.fromEntries(Object.entries(help).filter((e): e is [string, string] => typeof e[1] === 'string'))
  };
}

function savedFrom(value: unknown): ISavedFrom | null {
  if (!isObject(value)) {
    return null;
  }
  return { kind: str(value.kind, 'live run'), when: optStr(value.when), path: optStr(value.path) };
}

/**
 * Check and normalise a payload. Unknown extra fields are ignored, missing
 * optional ones get neutral values, and a payload of another schema major
 * version is refused (with a message the renderer shows).
 */
export function parseReport(data: unknown): IReport {
  if (!isObject(data)) {
    throw new ReportFormatError('the report data is not a JSON object');
  }
  const schema = str(data.schema);
  if (!schema.startsWith('nbprofiler.report/')) {
    throw new ReportFormatError(`unknown report schema ${JSON.stringify(schema)}`);
  }
  if (schema.split('/')[1]?.split('.')[0] !== SCHEMA.split('/')[1]) {
    throw new ReportFormatError(
      `report schema ${JSON.stringify(schema)} is newer than this extension understands (${SCHEMA}); upgrade nbprofiler`
    );
  }
  const device = isObject(data.device) ? data.device : {};
  const summary = isObject(data.summary) ? data.summary : {};
  const breakdown = table(data.breakdown, 'breakdown');
  const suggestions = Array.isArray(data.suggestions) ? data.suggestions : [];
  const operators = table(data.operators, 'operators');
  const memory = isObject(data.memory) ? data.memory : {};
  const growth = Array.isArray(memory.growth) ? memory.growth : [];
  return {
    schema,
    title: str(data.title, 'Profile'),
    source: str(data.source, 'live'),
    partial: data.partial === true,
    notes: Array.isArray(data.notes) ? data.notes.map(n => str(n)) : [],
    device: {
      name: str(device.name, 'unknown device'),
      kind: str(device.kind, 'cpu'),
      total_memory_bytes: num(device.total_memory_bytes),
      compute_capability:
        device.compute_capability === null || device.compute_capability === undefined
          ? null
          : str(device.compute_capability),
      sm_count: num(device.sm_count)
    },
    summary: {
      avg_step_us: num(summary.avg_step_us),
      gpu_utilization: num(summary.gpu_utilization),
      sm_efficiency: num(summary.sm_efficiency),
      achieved_occupancy: num(summary.achieved_occupancy),
      tensor_core_share: num(summary.tensor_core_share),
      steps_profiled: num(summary.steps_profiled) ?? 0,
      step_label: optStr(summary.step_label),
      samples_per_s: num(summary.samples_per_s),
      samples_per_step: num(summary.samples_per_step),
      batches_per_step: num(summary.batches_per_step),
      batch_size: num(summary.batch_size),
      throughput_detail: optStr(summary.throughput_detail),
      mfu: num(summary.mfu),
      mfu_detail: optStr(summary.mfu_detail)
    },
    breakdown: {
      kind: isObject(data.breakdown) ? str(data.breakdown.kind, 'phases') : 'phases',
      ...breakdown
    },
    operators,
    operatorsTotal: Math.max(operators.rows.length, (isObject(data.operators) && num(data.operators.total)) || 0),
    steps: table(data.steps, 'steps'),
    memory: {
      steps: table(memory.steps, 'memory.steps'),
      growth: growth.filter(isObject).map(g => ({
        device: str(g.device, 'unknown device'),
        source: str(g.source),
        measure: str(g.measure, 'allocated'),
        steps: num(g.steps),
        first_bytes: num(g.first_bytes),
        last_bytes: num(g.last_bytes),
        slope_bytes_per_step: num(g.slope_bytes_per_step)
      })),
      warnings: strings(memory.warnings),
      device: optStr(memory.device),
      figures: strings(memory.figures)
    },
    suggestions: suggestions.filter(isObject).map(s => ({
      kind: str(s.kind),
      title: str(s.title, 'Suggestion'),
      severity: str(s.severity, 'low'),
      evidence: isObject(s.evidence) ? s.evidence : {},
      facts: strings(s.facts),
      expected_gain: str(s.expected_gain),
      code: s.code === null || s.code === undefined ? null : str(s.code),
      guidance: s.guidance === true,
      detail: s.detail === null || s.detail === undefined ? null : str(s.detail)
    })),
    charts: isObject(data.charts) ? data.charts : {},
    timeline: isObject(data.timeline) ? data.timeline : null,
    kernels: kernelTable(data.kernels),
    lines: optionalTable(data.lines, 'lines'),
    modules: optionalTable(data.modules, 'modules'),
    flame: isObject(data.flame) ? data.flame : null,
    savedFrom: savedFrom(data.saved_from),
    hardware: parseHardware(data.hardware),
    distributed: parseDistributed(data.distributed),
    cycles: parseCycles(data.cycles),
    tabs: Array.isArray(data.tabs) ? strings(data.tabs) : null,
    moreViews: str(data.more_views),
    trial: { token: optStr(data.report_token), origin: optStr(data.origin) }
  };
}
