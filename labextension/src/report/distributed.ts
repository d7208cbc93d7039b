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
import { isObject, ITableSection, parseSection, unitTable, verdictLine } from './hardware';

/** One table of the view (`key`: "split", "waits", "collectives"); each has a `rank` column. */
export type IDistributedSection = ITableSection;

export interface IDistributed {
  ranks: number[];
  /** The straggling ranks; empty where none stands out or there is one rank. */
  straggler: number[];
  /** The sentence naming the straggler and why, or saying there is none or why ranks cannot be compared. */
  verdict: string;
  chart: IChartSpec | null;
  sections: IDistributedSection[];
}

function numbers(value: unknown): number[] {
  return Array.isArray(value) ? value.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)) : [];
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
    sections: sections.map(parseSection)
  };
}

function sectionTable(s: IDistributedSection, straggler: number[]): HTMLElement {
  const rankAt = s.columns.indexOf('rank');
  return h(
    'div',
    { class: 'nbp-dist-section', 'data-section': s.key },
    h('h4', { class: 'nbp-h' }, s.title),
    h('p', { class: 'nbp-explain' }, s.how),
    unitTable(s, 'nbp-dist-table', r => ({
      class: rankAt >= 0 && straggler.includes(r[rankAt] as number) ? 'nbp-straggler' : null,
      'data-rank': String(r[rankAt] ?? '')
    }))
  );
}

/** The Distributed tab's panel. */
export function distributedPanel(d: IDistributed): HTMLElement {
  const out = h('div', { class: 'nbp-distributed' }, verdictLine(d.verdict, d.straggler.length > 0, 'nbp-dist-verdict'));
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
