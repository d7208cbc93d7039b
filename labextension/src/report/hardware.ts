/**
 * The saved report's Hardware tab: the device and its spec-sheet figures, the
 * launches, each stream's queue and idle time, work running at once, and copies
 * against the host link (payload `hardware`, Python's nbprofiler/render/hardware.py).
 *
 * Python words the device's and the launches' figures; the tables come as raw
 * values with the unit each column reads in (`units`), formatted here as the
 * Python views format them. Names come from traces: text only (dom.ts).
 */
import { IChartSpec, renderChart } from './charts';
import { h } from './dom';
import { formatBytes, formatCount, formatShare, formatSi, formatUs } from './format';
import { Cell } from './types';

/** One table of a view Python lays out (Hardware, Distributed): its words, its columns with the unit
 *  each reads in, and its raw rows, formatted here by `formatUnit`. */
export interface ITableSection {
  key: string;
  title: string;
  how: string;
  columns: string[];
  labels: string[];
  units: string[];
  rows: Cell[][];
}

/** One table of the view (`key`: "queues", "stream_idle", "overlap", "copies", "roofline", "collectives"). */
export interface IHardwareSection extends ITableSection {
  /** The chart (a name in the payload's `charts`) drawn at the section's top, or null. */
  chart: string | null;
}

export interface IHardware {
  /** How to read the view, as Python words it. */
  how: string;
  /** The one line of a run without device work; null otherwise. */
  absent: string | null;
  device: string;
  deviceFacts: [string, string][];
  launchFacts: [string, string][];
  sections: IHardwareSection[];
}

function strs(value: unknown): string[] {
  return Array.isArray(value) ? value.map(v => (typeof v === 'string' ? v : String(v ?? ''))) : [];
}

function pairs(value: unknown): [string, string][] {
  return Array.isArray(value) ? value.filter(Array.isArray).map(p => [String(p[0] ?? ''), String(p[1] ?? '')]) : [];
}

function cell(value: unknown): Cell {
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : null;
  }
  return typeof value === 'string' || typeof value === 'boolean' ? value : null;
}

export function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A payload's table section, checked: labels and units default per column, rows cut to the columns. */
export function parseSection(s: { [key: string]: unknown }): ITableSection {
  const columns = strs(s.columns);
  return {
    key: String(s.key ?? ''),
    title: String(s.title ?? ''),
    how: String(s.how ?? ''),
    columns,
    labels: columns.map((c, i) => strs(s.labels)[i] ?? c),
    units: columns.map((_, i) => strs(s.units)[i] ?? 'text'),
    rows: (Array.isArray(s.rows) ? s.rows.filter(Array.isArray) : []).map(r => columns.map((_, i) => cell(r[i])))
  };
}

/** The payload's `hardware`, checked; null when the report was saved before the view existed. */
export function parseHardware(value: unknown): IHardware | null {
  if (!isObject(value)) {
    return null;
  }
  const sections = Array.isArray(value.sections) ? value.sections.filter(isObject) : [];
  return {
    how: typeof value.how === 'string' ? value.how : '',
    absent: typeof value.absent === 'string' ? value.absent : null,
    device: typeof value.device === 'string' ? value.device : '',
    deviceFacts: pairs(value.device_facts),
    launchFacts: pairs(value.launch_facts),
    sections: sections.map(s => ({ ...parseSection(s), chart: typeof s.chart === 'string' ? s.chart : null }))
  };
}

/** One table value in its column's unit (Python's `hardware.cell_text`). */
export function formatUnit(unit: string, value: Cell): string {
  if (value === null || value === undefined) {
    return '–';
  }
  if (typeof value !== 'number') {
    return typeof value === 'boolean' ? (value ? 'yes' : 'no') : value || '–';
  }
  switch (unit) {
    case 'count':
      return formatCount(value);
    case 'us':
      return formatUs(value);
    case 'bytes':
      return formatBytes(value);
    case 'share':
      return formatShare(value);
    case 'gb_per_s':
      return `${formatBytes(value * 1e9)}/s`;
    case 'flops':
      return formatSi(value, 'FLOP');
    case 'flops_per_s':
      return formatSi(value, 'FLOP/s');
    default:
      return value.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  }
}

/** Label/figure pairs as a two-column table (a label may be long: it wraps in its own cell). */
function facts(list: [string, string][], cls: string): HTMLElement {
  return h(
    'table',
    { class: `nbp-table nbp-hw-facts ${cls}` },
    h('tbody', null, ...list.map(([k, v]) => h('tr', null, h('th', { scope: 'row' }, k), h('td', { class: 'nbp-text', title: v }, v))))
  );
}

function sectionTable(s: IHardwareSection, charts: { [name: string]: unknown }): HTMLElement {
  const chart = s.chart ? (charts[s.chart] as IChartSpec | undefined) : undefined;
  return h(
    'div',
    { class: 'nbp-hw-section', 'data-section': s.key },
    h('h4', { class: 'nbp-h' }, s.title),
    h('p', { class: 'nbp-explain' }, s.how),
    chart ? renderChart(chart) : null,
    unitTable(s, `nbp-hw-table nbp-hw-${s.key.replace(/[^a-z_]/g, '')}`)
  );
}

/** A view's one-line verdict: a warning banner when it found something (a straggler, a drift), else a plain line. */
export function verdictLine(text: string, warn: boolean, className: string): HTMLElement {
  return h('p', { class: warn ? `nbp-banner nbp-banner-warn ${className}` : `nbp-explain ${className}`, role: 'note' }, text);
}

/** A section's rows as a table in its scroll box, each value in its column's unit; `rowAttributes`
 *  gives a row's own attributes (the Distributed view marks the straggler's). */
export function unitTable(
  s: ITableSection,
  className: string,
  rowAttributes: (row: Cell[]) => { [name: string]: string | null } | null = () => null
): HTMLElement {
  const numeric = s.units.map(u => u !== 'text');
  return h(
    'div',
    { class: 'nbp-table-wrap' },
    h(
      'table',
      { class: `nbp-table ${className}` },
      h('thead', null, h('tr', null, ...s.labels.map((l, i) => h('th', { scope: 'col', class: numeric[i] ? 'nbp-num' : null }, l)))),
      h(
        'tbody',
        null,
        ...s.rows.map(r =>
          h('tr', rowAttributes(r), ...r.map((v, i) => h('td', { class: numeric[i] ? 'nbp-num' : 'nbp-text' }, formatUnit(s.units[i], v))))
        )
      )
    )
  );
}

/** The Hardware tab's panel; `charts` are the payload's chart specs, where a section finds its chart. */
export function hardwarePanel(hw: IHardware, charts: { [name: string]: unknown } = {}): HTMLElement {
  const out = h('div', { class: 'nbp-hardware' });
  if (hw.how) {
    out.appendChild(h('p', { class: 'nbp-explain' }, hw.how));
  }
  if (hw.absent !== null) {
    out.appendChild(h('p', { class: 'nbp-muted nbp-hw-absent' }, hw.absent));
    return out;
  }
  out.appendChild(h('p', { class: 'nbp-device' }, 'Device: ', h('strong', null, hw.device)));
  out.appendChild(facts(hw.deviceFacts, 'nbp-hw-device'));
  if (hw.launchFacts.length) {
    out.appendChild(h('h4', { class: 'nbp-h' }, 'Launches'));
    out.appendChild(facts(hw.launchFacts, 'nbp-hw-launches'));
  }
  for (const s of hw.sections) {
    if (s.rows.length) {
      out.appendChild(sectionTable(s, charts));
    }
  }
  return out;
}
