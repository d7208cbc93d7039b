/**
 * The saved report's Distributed tab: each rank's step split into computation, overlap,
 * communication and other (a stacked bar per rank and its table), the straggler and why,
 * what each rank waited on, and each rank's collectives with bus bandwidth (payload
 * `distributed`, Python's nbprofiler/render/distributed.py).
 *
 * Python words the verdict and each section's how; the tables come as raw values with the
 * unit each column reads in, formatted as the Hardware tab formats them. The straggler's rows
 * are marked. Collective names come from traces: text only (dom.ts).
 */
import { IChartSpec, renderChart } from './charts';
import { h } from './dom';
import { formatUnit } from './hardware';
import { Cell } from './types';

/** One table of the view (`key`: "split", "waits", "collectives"); each has a `rank` column. */
export interface IDistributedSection {
  key: string;
  title: string;
  how: string;
  columns: string[];
  labels: string[];
  units: string[];
  rows: Cell[][];
}

export interface IDistributed {
  ranks: number[];
  /** The straggling ranks; empty where none stands out or there is one rank. */
  straggler: number[];
  /** The sentence naming the straggler and why, or saying there is none or why ranks cannot be compared. */
  verdict: string;
  chart: IChartSpec | null;
  sections: IDistributedSection[];
}

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function strs(value: unknown): string[] {
  return Array.isArray(value) ? value.map(v => (typeof v === 'string' ? v : String(v ?? ''))) : [];
}

function numbers(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)) : [];
}

function cell(value: unknown): Cell {
  if (typeof value === 'number') {
    return Number.isFinite(value) ? value : null;
  }
  return typeof value === 'string' || typeof value === 'boolean' ? value : null;
}

/** The payload's `distributed`, checked; null for a report without distributed data, or saved before the view existed. */
export function parseDistributed(value: unknown): IDistributed | null {
  if (!isObject(value)) {
    return null;
  }
  const sections = Array.isArray(value.sections) ? value.sections.filter(isObject) : [];
  return {
    ranks: numbers(value.ranks),
    straggler: numbers(value.straggler),
    verdict: typeof value.verdict === 'string' ? value.verdict : '',
    chart: isObject(value.chart) ? (value.chart as unknown as IChartSpec) : null,
    sections: sections.map(s => {
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
    })
  };
}

function sectionTable(s: IDistributedSection, straggler: number[]): HTMLElement {
  const numeric = s.units.map(u => u !== 'text');
  const rankAt = s.columns.indexOf('rank');
  return h(
    'div',
    { class: 'nbp-dist-section', 'data-section': s.key },
    h('h4', { class: 'nbp-h' }, s.title),
    h('p', { class: 'nbp-explain' }, s.how),
    h(
      'div',
      { class: 'nbp-table-wrap' },
      h(
        'table',
        { class: 'nbp-table nbp-dist-table' },
        h('thead', null, h('tr', null, ...s.labels.map((l, i) => h('th', { scope: 'col', class: numeric[i] ? 'nbp-num' : null }, l)))),
        h(
          'tbody',
          null,
          ...s.rows.map(r =>
            h(
              'tr',
              { class: rankAt >= 0 && straggler.includes(r[rankAt] as number) ? 'nbp-straggler' : null, 'data-rank': String(r[rankAt] ?? '') },
              ...r.map((v, i) => h('td', { class: numeric[i] ? 'nbp-num' : 'nbp-text' }, formatUnit(s.units[i], v)))
            )
          )
        )
      )
    )
  );
}

/** The Distributed tab's panel. */
export function distributedPanel(d: IDistributed): HTMLElement {
  const out = h('div', { class: 'nbp-distributed' });
  out.appendChild(
    h('p', { class: d.straggler.length ? 'nbp-banner nbp-banner-warn nbp-dist-verdict' : 'nbp-explain nbp-dist-verdict', role: 'note' }, d.verdict)
  );
  if (d.chart) {
    out.appendChild(renderChart(d.chart));
  }
  for (const s of d.sections) {
    if (s.rows.length) {
      out.appendChild(sectionTable(s, d.straggler));
    }
  }
  return out;
}
