/**
 * The saved report's Cycles tab: a `--every N` run's trend, cycle by cycle (payload `cycles`,
 * Python's nbprofiler/render/cycles.py): the drift, or that the run was steady, the step time
 * and memory per cycle with a marker where a drift began, and the cycles' table.
 *
 * Python words the verdict and the table's how; the table comes as raw values with the unit
 * each column reads in, formatted as the Hardware tab formats them. Operator names come from
 * traces: text only (dom.ts).
 */
import { IChartSpec, renderChart } from './charts';
import { h } from './dom';
import { isObject, ITableSection, parseSection, unitTable, verdictLine } from './hardware';

export interface ICycles {
  /** The drift's sentences, or that the run was steady, or why too few cycles cannot tell. */
  verdict: string;
  /** Whether the verdict is a drift (drawn as a warning). */
  drifted: boolean;
  /** The step time per cycle, then the memory per cycle where measured. */
  charts: IChartSpec[];
  sections: ITableSection[];
}

/** The payload's `cycles`, checked; null for a run without cycles, or a report saved before the view existed. */
export function parseCycles(value: unknown): ICycles | null {
  if (!isObject(value)) {
    return null;
  }
  return {
    verdict: typeof value.verdict === 'string' ? value.verdict : '',
    drifted: value.drifted === true,
    charts: Array.isArray(value.charts) ? value.charts.filter(isObject).map(c => c as unknown as IChartSpec) : [],
    sections: Array.isArray(value.sections) ? value.sections.filter(isObject).map(parseSection) : []
  };
}

/** The Cycles tab's panel. */
export function cyclesPanel(c: ICycles): HTMLElement {
  const out = h('div', { class: 'nbp-cycles' }, verdictLine(c.verdict, c.drifted, 'nbp-cycles-verdict'));
  for (const chart of c.charts) {
    out.appendChild(renderChart(chart));
  }
  for (const s of c.sections) {
    out.appendChild(
      h(
        'div',
        { class: 'nbp-cycles-section', 'data-section': s.key },
        h('h4', { class: 'nbp-h' }, s.title),
        h('p', { class: 'nbp-explain' }, s.how),
        unitTable(s, 'nbp-cycles-table')
      )
    );
  }
  return out;
}
