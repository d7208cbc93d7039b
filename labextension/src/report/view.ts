/**
 * The static report view: the saved report a notebook shows without a kernel.
 *
 * Plain DOM, independent of JupyterLab, so it can be unit-tested in jsdom.
 * Every string from the payload goes in through text nodes (dom.ts), so
 * operator names such as `<img src=x onerror=...>` show as text.
 */
import { copyText } from './copy';
import { Child, h, uid } from './dom';
import {
  formatBytes,
  formatCount,
  formatRate,
  formatShare,
  formatUs
} from './format';
import { exportPanel } from './export';
import { linesPanel, modulesPanel } from './attribution';
import { cyclesPanel } from './cycles';
import { distributedPanel } from './distributed';
import { flamePanel } from './flame';
import { hardwarePanel } from './hardware';
import { columnLabel, DataTable, formatCell, isDeviceColumn, isNumericColumn, rowFigures, SortDir } from './table';
import { Cell, IGrowth, IReport, ISuggestion, ITable } from './types';
import { trialAttributes } from '../try/card';
import { disposeTimeline, renderTimeline } from '../timeline';
import { colorOf, IChartSpec, renderChart, specFromTable } from './charts';

/** Every tab this view can draw, in order. The payload's `tabs` names those with content (Python decides, in
 * nbprofiler/render/tabs.py); a payload written before it had them shows these, less Kernels without kernels and
 * Hardware where it has none. */
export const TAB_NAMES = [
  'Overview',
  'Operators',
  'Cycles',
  'Kernels',
  'Distributed',
  'Hardware',
  'Memory',
  'Cell lines',
  'Modules',
  'Flame graph',
  'Timeline',
  'Suggestions',
  'Export'
] as const;
export type TabName = (typeof TAB_NAMES)[number];

export interface IViewOptions {
  /** Clipboard writer (tests pass a fake). */
  copy?: (text: string) => Promise<void>;
  /** A line under the report saying where it comes from. */
  footer?: string;
  /** Operator rows shown at first. */
  pageSize?: number;
  /** The standalone HTML report of the same output (its text/html), for the Export tab. */
  html?: string;
  /** The payload as saved, for the Export tab's data download. */
  data?: unknown;
}

const TRY_TITLE = 'Run this code in a new cell above this one, then profile this cell again and compare';

// The table helpers live in table.ts; they are part of this module's interface too.
export { columnLabel, filterRows, formatCell, sortRows } from './table';
export type { SortDir } from './table';

function explain(text: string): HTMLElement {
  return h('p', { class: 'nbp-explain' }, text);
}

function metric(label: string, value: string, hint?: string, sub?: string): HTMLElement {
  return h(
    'div',
    { class: 'nbp-metric', title: hint ?? null },
    h('div', { class: 'nbp-metric-value' }, value),
    h('div', { class: 'nbp-metric-label' }, label),
    sub ? h('div', { class: 'nbp-metric-sub' }, sub) : null
  );
}

function severityBadge(severity: string): HTMLElement {
  const known = ['high', 'medium', 'low'].includes(severity) ? severity : 'low';
  return h('span', { class: `nbp-severity nbp-severity-${known}` }, severity || 'low');
}

function evidenceValue(value: unknown): string {
  if (value === null || value === undefined) {
    return '–';
  }
  if (typeof value === 'number') {
    return Number.isInteger(value) ? formatCount(value) : value.toLocaleString('en-US', { maximumFractionDigits: 3 });
  }
  if (typeof value === 'string') {
    return value;
  }
  return JSON.stringify(value);
}

const MEMORY_SUFFIX = '_bytes';

/** The trace's per-step memory series (payload `memory.steps`), as Python's HTML chart labels them. */
const TRACE_MEMORY_SERIES: [string, string][] = [
  ['end_allocated_bytes', 'Allocated at step end'],
  ['peak_allocated_bytes', 'Peak in step'],
  ['peak_reserved_bytes', 'Reserved (peak)']
];

/**
 * The leak warning for one series Python flagged (`report.memory_growth`),
 * worded as nbprofiler/advice/memory_warnings.py words it: the verdict
 * is Python's, so the saved report and the text/HTML reports never disagree.
 */
export function growthWarning(g: IGrowth): string {
  const what = g.measure === 'rss' ? 'Process RSS' : 'Allocated memory';
  const where = g.source === 'sampler' ? 'every step the cell ran' : 'the profiled steps';
  return (
    `${what} on ${g.device} grows by about ${formatBytes(g.slope_bytes_per_step)} per step ` +
    `(${formatBytes(g.first_bytes)} → ${formatBytes(g.last_bytes)} over ${formatCount(g.steps)} steps, ${where}). ` +
    'Something keeps tensors alive from one step to the next. The usual cause is a loss or an output kept with its graph ' +
    '(computed with autograd on and never backpropagated): keep loss.item() or loss.detach() instead.'
  );
}

/** When a saved time was, as the kernel's clock read it: "2026-12-03 17:40" from an ISO time. */
export function savedWhen(iso: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso);
  return m ? `${m[1]} ${m[2]}` : iso;
}

/** The report's tag: what it was made from ("saved report · live run of 2026-12-03 17:40", or the trace's file name). */
export function savedTag(r: IReport): string {
  const from = r.savedFrom;
  if (!from) {
    // A payload written before `saved_from` existed has only its source.
    return `saved report · ${r.source === 'live' ? 'live run' : `trace file ${r.source.split(/[\\/]/).pop()}`}`;
  }
  const file = from.path ? from.path.split(/[\\/]/).pop() : null;
  if (from.kind === 'trace file' && file) {
    return `saved report · trace file ${file}`;
  }
  return `saved report · ${from.kind}${from.when ? ` of ${savedWhen(from.when)}` : ''}`;
}

/** Whether the run recorded any device time (a CPU run has none, and shows no device-time columns). */
export function hasDeviceTime(r: IReport): boolean {
  if (r.kernels.rows.length) {
    return true;
  }
  const t = r.operators;
  const cols = t.columns.map((c, i) => ({ c, i })).filter(({ c }) => isDeviceColumn(c));
  return t.rows.some(row => cols.some(({ i }) => typeof row[i] === 'number' && (row[i] as number) > 0));
}

export class ReportView {
  readonly node: HTMLElement;
  private readonly report: IReport;
  private readonly options: IViewOptions;
  private readonly tabs = new Map<TabName, { tab: HTMLButtonElement; panel: HTMLElement }>();
  private readonly pending = new Map<TabName, () => HTMLElement>();
  private current: TabName = 'Overview';
  private readonly deviceTime: boolean;
  private operatorTable: DataTable | null = null;
  private kernelTable: DataTable | null = null;
  private timelineNode: HTMLElement | null = null;

  constructor(report: IReport, options: IViewOptions = {}) {
    this.report = report;
    this.options = options;
    this.deviceTime = hasDeviceTime(report);
    this.node = h('div', { class: 'nbp-report', 'data-nbprofiler-report': report.schema });
    this.build();
  }

  get tabNames(): TabName[] {
    return [...this.tabs.keys()];
  }

  get currentTab(): TabName {
    return this.current;
  }

  /** The operator and kernel tables (tests sort, filter and click them). */
  get operators(): DataTable | null {
    return this.operatorTable;
  }

  get kernels(): DataTable | null {
    return this.kernelTable;
  }

  selectTab(name: TabName): void {
    const build = this.pending.get(name);
    if (build) {
      this.pending.delete(name);
      this.tabs.get(name)?.panel.appendChild(build());
    }
    for (const [key, { tab, panel }] of this.tabs) {
      const on = key === name;
      tab.setAttribute('aria-selected', on ? 'true' : 'false');
      tab.tabIndex = on ? 0 : -1;
      tab.classList.toggle('nbp-mod-selected', on);
      panel.hidden = !on;
    }
    this.current = name;
  }

  /** Sort the operator table by a column name, as a header click does. */
  sortOperators(column: string, dir?: SortDir): void {
    this.operatorTable?.sortBy(column, dir);
  }

  filterOperators(text: string): void {
    this.operatorTable?.filterBy(text);
  }

  /** Free what the timeline holds (its canvas and listeners). */
  dispose(): void {
    if (this.timelineNode) {
      disposeTimeline(this.timelineNode);
      this.timelineNode = null;
    }
  }

  private build(): void {
    const r = this.report;
    this.node.appendChild(
      h(
        'div',
        { class: 'nbp-header' },
        h('span', { class: 'nbp-title' }, r.title),
        h('span', { class: 'nbp-subtitle nbp-saved-tag' }, savedTag(r))
      )
    );
    if (r.partial) {
      this.node.appendChild(
        h(
          'div',
          { class: 'nbp-banner nbp-banner-warn', role: 'note' },
          'Partial report: the run stopped before its schedule finished, so the figures cover only the steps that were recorded.'
        )
      );
    }
    const tablist = h('div', { class: 'nbp-tabs', role: 'tablist', 'aria-label': 'Report sections' });
    this.node.appendChild(tablist);
    const builders: { [K in TabName]: () => HTMLElement } = {
      Overview: () => this.buildOverview(),
      Operators: () => this.buildOperators(),
      Kernels: () => this.buildKernels(),
      Cycles: () => cyclesPanel(r.cycles!),
      Distributed: () => distributedPanel(r.distributed!),
      Hardware: () => hardwarePanel(r.hardware!, r.charts),
      Memory: () => this.buildMemory(),
      'Cell lines': () => linesPanel(r.lines, this.deviceTime),
      Modules: () => modulesPanel(r.modules, this.deviceTime),
      'Flame graph': () => flamePanel(r.flame),
      Timeline: () => this.buildTimeline(),
      Suggestions: () => this.buildSuggestions(),
      Export: () => exportPanel(r, { html: this.options.html, data: this.options.data })
    };
    for (const name of TAB_NAMES) {
      const shown = r.tabs
        ? r.tabs.includes(name)
        : !((name === 'Kernels' && !r.kernels.rows.length) || (name === 'Hardware' && !r.hardware) || (name === 'Distributed' && !r.distributed) || (name === 'Cycles' && !r.cycles) || (name === 'Flame graph' && !r.flame));
      if (!shown) {
        continue;
      }
      const tabId = uid('nbp-tab');
      const panelId = uid('nbp-panel');
      const label = name === 'Suggestions' && r.suggestions.length ? `Suggestions (${r.suggestions.length})` : name;
      const tab = h(
        'button',
        { class: 'nbp-tab', role: 'tab', id: tabId, 'aria-controls': panelId, type: 'button', 'data-tab': name },
        label
      );
      const panel = h('div', { class: 'nbp-panel', role: 'tabpanel', id: panelId, 'aria-labelledby': tabId, 'data-tab': name });
      if (name === 'Timeline' || name === 'Export') {
        // Built on first view: the timeline's canvas is sized to its panel, and both decode the timeline.
        this.pending.set(name, builders[name]);
      } else {
        panel.appendChild(builders[name]());
      }
      tab.addEventListener('click', () => this.selectTab(name));
      tab.addEventListener('keydown', (event: KeyboardEvent) => this.onTabKey(event, name));
      tablist.appendChild(tab);
      this.node.appendChild(panel);
      this.tabs.set(name, { tab, panel });
    }
    if (this.options.footer) {
      this.node.appendChild(h('div', { class: 'nbp-footer' }, this.options.footer));
    }
    this.selectTab('Overview');
  }

  private onTabKey(event: KeyboardEvent, name: TabName): void {
    const names = this.tabNames;
    const i = names.indexOf(name);
    let next = -1;
    if (event.key === 'ArrowRight') {
      next = (i + 1) % names.length;
    } else if (event.key === 'ArrowLeft') {
      next = (i + names.length - 1) % names.length;
    } else if (event.key === 'Home') {
      next = 0;
    } else if (event.key === 'End') {
      next = names.length - 1;
    }
    if (next >= 0) {
      event.preventDefault();
      this.selectTab(names[next]);
      this.tabs.get(names[next])?.tab.focus();
    }
  }

  // -- Overview ----------------------------------------------------------------------
  private buildOverview(): HTMLElement {
    const r = this.report;
    const sm = r.summary;
    const onDevice = r.device.kind !== 'cpu';
    const metrics: HTMLElement[] = [
      metric('average step', formatUs(sm.avg_step_us), 'Mean wall time of the profiled steps: the step every suggestion quotes',
        sm.step_label ?? undefined),
      metric('steps profiled', formatCount(sm.steps_profiled))
    ];
    if (sm.samples_per_s !== null) {
      metrics.push(
        metric(
          'samples / s',
          formatRate(sm.samples_per_s),
          'Samples of every batch a step consumed, divided by the average step time',
          sm.throughput_detail ?? (sm.batch_size !== null ? `batch size ${formatCount(sm.batch_size)}` : undefined)
        )
      );
    }
    if (onDevice || sm.gpu_utilization !== null) {
      metrics.push(metric('GPU utilization', formatShare(sm.gpu_utilization), 'Share of the steps span with a kernel running'));
    }
    if (sm.sm_efficiency !== null) {
      metrics.push(metric('SM efficiency (est.)', formatShare(sm.sm_efficiency), 'Share of SMs busy while kernels ran, weighted by time'));
    }
    if (sm.achieved_occupancy !== null) {
      metrics.push(metric('achieved occupancy (est.)', formatShare(sm.achieved_occupancy)));
    }
    if (sm.tensor_core_share !== null) {
      metrics.push(metric('tensor-core share', formatShare(sm.tensor_core_share), 'Kernel time in kernels that use tensor cores'));
    }
    if (sm.mfu !== null) {
      metrics.push(
        metric('MFU', formatShare(sm.mfu), "Model FLOPs utilization: achieved FLOP/s over the device's peak for the dtype in use", sm.mfu_detail ?? undefined)
      );
    }
    const out = h('div', { class: 'nbp-overview' });
    out.appendChild(
      explain('Headline numbers of the profiled (active) steps, the step time split by where it went, and what to change first.')
    );
    out.appendChild(h('div', { class: 'nbp-metrics' }, ...metrics));
    out.appendChild(this.buildBreakdown());
    out.appendChild(this.buildDevice());

    const top = r.suggestions.slice(0, 3);
    out.appendChild(h('h4', { class: 'nbp-h' }, 'Top suggestions'));
    if (top.length) {
      const list = h('ol', { class: 'nbp-top-suggestions' });
      for (const sug of top) {
        list.appendChild(
          h(
            'li',
            null,
            severityBadge(sug.severity),
            ' ',
            h('span', { class: 'nbp-top-title' }, sug.title),
            sug.expected_gain ? h('span', { class: 'nbp-gain' }, ` — ${sug.expected_gain}`) : null
          )
        );
      }
      out.appendChild(list);
      const more = h('button', { class: 'nbp-link', type: 'button' }, 'All suggestions, with code →');
      more.addEventListener('click', () => this.selectTab('Suggestions'));
      out.appendChild(more);
    } else {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'No suggestions: nothing in this profile crossed a rule’s threshold.'));
    }
    if (r.moreViews) {
      out.appendChild(h('p', { class: 'nbp-muted nbp-more-views' }, r.moreViews));
    }
    if (r.tabs && !r.tabs.includes('Memory') && r.steps.rows.length) {
      out.append(...this.stepsTable());
    }
    if (r.notes.length) {
      out.appendChild(h('h4', { class: 'nbp-h' }, 'Notes'));
      out.appendChild(h('ul', { class: 'nbp-notes' }, ...r.notes.map(n => h('li', null, n))));
    }
    return out;
  }

  private buildBreakdown(): HTMLElement {
    const b = this.report.breakdown;
    const wrap = h('div', { class: 'nbp-breakdown' });
    const title = b.kind === 'device' ? 'Step time by device activity' : 'Step time by phase';
    wrap.appendChild(h('h4', { class: 'nbp-h' }, title));
    const stepCol = b.columns.indexOf('step');
    const cats = b.columns.map((c, i) => ({ c, i })).filter(({ i }) => i !== (stepCol >= 0 ? stepCol : 0));
    if (!b.rows.length || !cats.length) {
      wrap.appendChild(h('p', { class: 'nbp-muted' }, 'No step breakdown: the profile recorded no complete step.'));
      return wrap;
    }
    wrap.appendChild(
      explain(
        b.kind === 'device'
          ? 'One bar per profiled step. Each instant of a step goes to one category, by priority: Kernel, Memcpy, Memset, Communication, Runtime, DataLoader, CPU Exec, then Other.'
          : 'One bar per profiled step, split by what the host was doing (no device activity was recorded).'
      )
    );
    // The payload's own chart spec; a report saved before payloads carried specs, from its table.
    const saved = this.report.charts.breakdown as IChartSpec | undefined;
    const spec =
      saved ??
      specFromTable({
        name: 'breakdown',
        kind: 'bars',
        title,
        xLabel: 'step',
        yLabel: 'time per step',
        unit: 'us',
        steps: b.rows.map((row, k) => (typeof row[stepCol >= 0 ? stepCol : 0] === 'number' ? (row[stepCol >= 0 ? stepCol : 0] as number) : k)),
        series: cats.map(({ c, i }) => ({
          key: c,
          label: columnLabel(c),
          values: b.rows.map(row => (typeof row[i] === 'number' ? (row[i] as number) : null))
        }))
      });
    wrap.appendChild(renderChart(spec));
    return wrap;
  }

  private buildDevice(): HTMLElement {
    const d = this.report.device;
    const facts: string[] = [];
    if (d.total_memory_bytes !== null) {
      facts.push(`${formatBytes(d.total_memory_bytes)} memory`);
    }
    if (d.compute_capability) {
      facts.push(`compute capability ${d.compute_capability}`);
    }
    if (d.sm_count !== null) {
      facts.push(`${formatCount(d.sm_count)} SMs`);
    }
    return h(
      'p',
      { class: 'nbp-device' },
      'Device: ',
      h('strong', null, d.name),
      ` (${d.kind})`,
      facts.length ? ` · ${facts.join(' · ')}` : null
    );
  }

  // -- Operators ---------------------------------------------------------------------
  private buildOperators(): HTMLElement {
    const t = this.report.operators;
    const out = h('div', { class: 'nbp-operators' });
    out.appendChild(
      explain(
        'Every torch operator of the profiled steps. Self time excludes the operators it called; total time includes them. Click a column header to sort, a row for its kernels and figures.'
      )
    );
    if (!t.rows.length) {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'No operators were recorded.'));
      return out;
    }
    const total = this.report.operatorsTotal;
    if (total > t.rows.length) {
      out.appendChild(
        h(
          'p',
          { class: 'nbp-muted nbp-truncated' },
          `The saved report keeps the ${formatCount(t.rows.length)} most expensive of the run’s ${formatCount(total)} operators; sorting and filtering apply to those.`
        )
      );
    }
    const columns = this.shownColumns(t);
    this.operatorTable = new DataTable(t, {
      className: 'nbp-operator-table',
      noun: 'operators',
      columns,
      wrap: ['name', 'input_shapes'],
      pageSize: this.options.pageSize ?? 50,
      details: row => this.operatorDetails(row, columns)
    });
    out.appendChild(this.operatorTable.node);
    return out;
  }

  /** A table's columns less the device-time ones of a run without device time (no columns of "0 µs"). */
  private shownColumns(t: ITable): string[] {
    return t.columns.filter(c => this.deviceTime || !isDeviceColumn(c));
  }

  /** One operator's figures and the kernels it launched. */
  private operatorDetails(row: Cell[], columns: string[]): HTMLElement {
    const t = this.report.operators;
    const name = String(row[t.columns.indexOf('name')] ?? '');
    const out = h('div', { class: 'nbp-details' }, h('h4', { class: 'nbp-h nbp-details-title' }, name));
    out.appendChild(rowFigures(t, row, columns.filter(c => c !== 'name')));
    const k = this.report.kernels;
    const by = k.columns.indexOf('operator');
    const launched = by >= 0 ? k.rows.filter(r => r[by] === name) : [];
    if (launched.length) {
      const shown = k.columns.includes('short_name') ? 'short_name' : 'name';
      const cols = [shown, 'calls', 'total_us', 'tensor_cores'].filter(c => k.columns.includes(c));
      out.appendChild(h('p', null, `Kernels it launched (${formatCount(launched.length)}):`));
      out.appendChild(
        h(
          'table',
          { class: 'nbp-table nbp-details-kernels' },
          h('thead', null, h('tr', null, ...cols.map(c => h('th', { scope: 'col' }, c === shown ? 'Kernel' : columnLabel(c))))),
          h(
            'tbody',
            null,
            ...launched.map(r =>
              h('tr', null, ...cols.map(c => {
                const v = r[k.columns.indexOf(c)];
                return typeof v === 'number'
                  ? h('td', { class: 'nbp-num' }, formatCell(c, v))
                  : h('td', { class: 'nbp-text', title: String(r[k.columns.indexOf('name')] ?? v) }, formatCell(c, v));
              }))
            )
          )
        )
      );
    } else if (this.deviceTime) {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'It launched no kernel the saved report keeps.'));
    }
    return out;
  }

  /** A Copy button that puts `text` on the clipboard and says whether it could. */
  private copyButton(text: string, title: string, what: string): HTMLButtonElement {
    const button = h('button', { type: 'button', class: 'nbp-copy', title }, 'Copy') as HTMLButtonElement;
    button.addEventListener('click', () => {
      const write = this.options.copy ?? copyText;
      write(text).then(
        () => this.flash(button, 'Copied'),
        () => this.flash(button, `Copy failed: select the ${what}`)
      );
    });
    return button;
  }

  // -- Kernels -----------------------------------------------------------------------
  private buildKernels(): HTMLElement {
    const k = this.report.kernels;
    const out = h('div', { class: 'nbp-kernels' });
    out.appendChild(
      explain(
        'Every device kernel of the profiled steps by total time, with its category, achieved occupancy, blocks per SM, whether it used tensor cores, the operator that launched it, and that FLOP operator’s achieved FLOP/s and what bounds it (a kernel has no FLOP count of its own; hover a header for more). Click a row for all its figures.'
      )
    );
    const spec = this.report.charts.kernels;
    if (spec) {
      out.appendChild(renderChart(spec as IChartSpec));
    }
    if (k.total > k.rows.length) {
      out.appendChild(
        h(
          'p',
          { class: 'nbp-muted nbp-truncated' },
          `The saved report keeps the ${formatCount(k.rows.length)} longest of the run’s ${formatCount(k.total)} kernels.`
        )
      );
    }
    // One line a kernel: its short name (template arguments and parameters elided), the whole
    // name on hover, in the row's details and in their Copy button. Payloads without short names
    // show the whole name, cut to the cell.
    const short = k.columns.includes('short_name');
    this.kernelTable = new DataTable(k, {
      className: 'nbp-kernel-table',
      noun: 'kernels',
      columns: short ? k.columns.filter(c => c !== 'name') : k.columns,
      labels: { name: 'Kernel', short_name: 'Kernel' },
      help: k.help,
      hover: { short_name: 'name' },
      pageSize: this.options.pageSize ?? 50,
      details: row => {
        const name = String(row[k.columns.indexOf('name')] ?? '');
        return h(
          'div',
          { class: 'nbp-details' },
          h('div', { class: 'nbp-code-actions' }, this.copyButton(name, 'Copy the whole kernel name', 'name')),
          h('h4', { class: 'nbp-h nbp-details-title' }, name),
          rowFigures(k, row, k.columns.filter(c => c !== 'name' && c !== 'short_name'))
        );
      }
    });
    out.appendChild(this.kernelTable.node);
    return out;
  }

  // -- Timeline ----------------------------------------------------------------------
  private buildTimeline(): HTMLElement {
    const out = h('div', { class: 'nbp-timeline-tab' });
    if (!this.report.timeline) {
      out.appendChild(
        h('p', { class: 'nbp-muted' }, 'No timeline: the trace recorded no events, or this report was saved by an nbprofiler without one. Run the cell again to get it.')
      );
      return out;
    }
    // renderTimeline says itself, in one line, why a payload cannot be drawn.
    this.timelineNode = renderTimeline(this.report.timeline);
    out.appendChild(this.timelineNode);
    return out;
  }

  // -- Memory ------------------------------------------------------------------------
  private buildMemory(): HTMLElement {
    const out = h('div', { class: 'nbp-memory' });
    out.appendChild(
      explain(
        'Memory sampled at the end of each step of the cell, with the schedule’s wait, warmup and active steps shaded, then the tensor memory the trace recorded in the profiled steps. A line that keeps rising means something keeps tensors alive from step to step.'
      )
    );
    const memory = this.report.memory;
    if (memory.device && memory.figures.length) {
      out.appendChild(h('p', { class: 'nbp-memory-figures' }, `Memory on ${memory.device}: ${memory.figures.join(', ')}`));
    }
    // Python's own words for its verdict; a report saved before it sent them has only the figures.
    const warnings = memory.warnings.length ? memory.warnings : memory.growth.map(growthWarning);
    for (const warning of warnings) {
      out.appendChild(h('div', { class: 'nbp-banner nbp-banner-warn nbp-growth', role: 'note' }, warning));
    }
    // The payload's chart specs when it has them; a report saved before them, from its tables.
    const specs = ['memory', 'memory_timeline'].map(name => this.report.charts[name] as IChartSpec | undefined).filter((x): x is IChartSpec => !!x);
    const sampled = specs.length ? h('div', { class: 'nbp-memory-plot' }, ...specs.map(renderChart)) : this.sampledMemory();
    const traced = specs.length ? [] : this.tracedMemory();
    if (sampled) {
      out.appendChild(sampled);
    }
    out.append(...traced);
    if (!sampled && !traced.length) {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'This report has no memory data (the run recorded none); the step table follows.'));
    }
    out.append(...this.stepsTable());
    return out;
  }

  /** The per-step table (wall time, DataLoader wait, memory, phase): in the Memory tab, or in the
   *  Overview when a run without memory data has no Memory tab. */
  private stepsTable(): HTMLElement[] {
    const t = this.report.steps;
    if (!t.rows.length) {
      return [h('p', { class: 'nbp-muted' }, 'No steps were recorded.')];
    }
    const phaseIdx = t.columns.indexOf('phase');
    const head = h('tr', null, ...t.columns.map((c, i) => h('th', { scope: 'col', class: isNumericColumn(t, i) ? 'nbp-num' : null }, columnLabel(c))));
    const body = h('tbody');
    for (const row of t.rows) {
      const phase = phaseIdx >= 0 ? String(row[phaseIdx] ?? '') : '';
      body.appendChild(
        h(
          'tr',
          { class: phase ? `nbp-row-${/^[a-z]+$/.test(phase) ? phase : 'other'}` : null },
          ...row.map((v, i) => h('td', { class: typeof v === 'number' ? 'nbp-num' : 'nbp-text' }, formatCell(t.columns[i], v)))
        )
      );
    }
    return [
      h('h4', { class: 'nbp-h' }, 'Steps'),
      h('div', { class: 'nbp-table-wrap' }, h('table', { class: 'nbp-table nbp-steps-table' }, h('thead', null, head), body))
    ];
  }

  /** The live sampler's memory at every step of the cell (the steps table's byte columns), or null. */
  private sampledMemory(): HTMLElement | null {
    const t = this.report.steps;
    const memCols = t.columns.map((c, i) => ({ c, i })).filter(({ c }) => c.endsWith(MEMORY_SUFFIX));
    if (!t.rows.length || !memCols.length) {
      return null;
    }
    const stepIdx = t.columns.indexOf('step');
    const phaseIdx = t.columns.indexOf('phase');
    const title = this.report.device.kind === 'cpu' ? 'Process memory over the steps' : 'Device memory over the steps';
    const wrap = this.memoryPlot(
      title,
      t.rows.map((row, k) => (typeof row[stepIdx] === 'number' ? (row[stepIdx] as number) : k)),
      t.rows.map(row => (phaseIdx >= 0 && row[phaseIdx] !== null ? String(row[phaseIdx]) : null)),
      memCols.map(({ c, i }) => ({
        key: c,
        name: columnLabel(c),
        values: t.rows.map(row => (typeof row[i] === 'number' ? (row[i] as number) : null))
      }))
    );
    const peak = Math.max(0, ...memCols.flatMap(({ i }) => t.rows.map(row => (typeof row[i] === 'number' ? (row[i] as number) : 0))));
    const total = this.report.device.total_memory_bytes;
    if (total) {
      wrap.appendChild(
        h('p', { class: 'nbp-muted' }, `Highest sample ${formatBytes(peak)}, ${formatShare(peak / total)} of the ${formatBytes(total)} ${this.report.device.kind === 'cpu' ? 'of RAM' : 'of device memory'}.`)
      );
    }
    return wrap;
  }

  /** One chart per device of the tensor memory the trace recorded in each profiled step (payload `memory.steps`). */
  private tracedMemory(): HTMLElement[] {
    const m = this.report.memory.steps;
    const stepIdx = m.columns.indexOf('step');
    const deviceIdx = m.columns.indexOf('device');
    if (stepIdx < 0 || deviceIdx < 0) {
      return [];
    }
    const devices = [...new Set(m.rows.map(row => String(row[deviceIdx] ?? '')))];
    return devices.map(device => {
      const rows = m.rows.filter(row => String(row[deviceIdx] ?? '') === device);
      const relativeIdx = m.columns.indexOf('reconstructed');
      const since = relativeIdx >= 0 && rows.some(row => row[relativeIdx] === true) ? ', counted from the start of recording' : '';
      // As Python's chart: no line without data, and none for reserved memory that stays 0 (the CPU caches nothing).
      const series = TRACE_MEMORY_SERIES.map(([key, name]) => {
        const i = m.columns.indexOf(key);
        return { key, name, values: rows.map(row => (i >= 0 && typeof row[i] === 'number' ? (row[i] as number) : null)) };
      }).filter(ser => ser.values.some(v => v !== null && (v > 0 || ser.key !== 'peak_reserved_bytes')));
      return this.memoryPlot(
        `Tensor memory on ${device} in the profiled steps${since}`,
        rows.map((row, k) => (typeof row[stepIdx] === 'number' ? (row[stepIdx] as number) : k)),
        rows.map(() => null),
        series
      );
    });
  }

  /** A titled memory chart with its legend (each series' maximum). */
  private memoryPlot(
    title: string,
    steps: number[],
    phases: (string | null)[],
    series: { key: string; name: string; values: (number | null)[] }[]
  ): HTMLElement {
    const spec = specFromTable({
      name: 'memory',
      kind: 'lines',
      title,
      xLabel: 'step',
      yLabel: 'memory',
      unit: 'bytes',
      steps,
      phases,
      fromZero: !series.some(ser => colorOf(ser.key) === 'rss'),
      series: series.map(ser => ({ key: ser.key, label: ser.name, values: ser.values }))
    });
    return h('div', { class: 'nbp-memory-plot' }, h('h4', { class: 'nbp-h' }, title), renderChart(spec));
  }

  // -- Suggestions -------------------------------------------------------------------
  private buildSuggestions(): HTMLElement {
    const out = h('div', { class: 'nbp-suggestions' });
    out.appendChild(
      explain('What to change, most promising first: each card gives the measurement behind it, the expected gain and code to paste.')
    );
    if (!this.report.suggestions.length) {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'No suggestions: nothing in this profile crossed a rule’s threshold.'));
      return out;
    }
    for (const sug of this.report.suggestions) {
      out.appendChild(this.buildCard(sug));
    }
    return out;
  }

  private buildCard(sug: ISuggestion): HTMLElement {
    // Python words the evidence with units (`facts`); a report saved before it did has only the figures.
    const evidence = sug.facts.length ? [] : Object.entries(sug.evidence);
    const children: Child[] = [
      h('div', { class: 'nbp-card-head' }, severityBadge(sug.severity), h('span', { class: 'nbp-card-title' }, sug.title)),
      sug.detail ? h('p', { class: 'nbp-detail' }, sug.detail) : null,
      sug.expected_gain ? h('p', { class: 'nbp-gain' }, h('strong', null, 'Expected gain: '), sug.expected_gain) : null,
      sug.facts.length ? h('ul', { class: 'nbp-facts' }, ...sug.facts.map(fact => h('li', null, fact))) : null,
      evidence.length
        ? h(
            'dl',
            { class: 'nbp-evidence' },
            ...evidence.flatMap(([k, v]) => [h('dt', null, k.replace(/_/g, ' ')), h('dd', null, evidenceValue(v))])
          )
        : null
    ];
    if (sug.code) {
      const code = sug.code;
      const button = this.copyButton(code, 'Copy the code to the clipboard', 'code');
      const codeBlock = h('pre', null, h('code', null, code));
      if (sug.guidance) {
        // Only comments: pasting changes nothing, so there is nothing to try.
        children.push(
          h('div', { class: 'nbp-code' }, h('div', { class: 'nbp-code-actions' }, button), codeBlock),
          h('div', { class: 'nbp-guidance' }, 'Guidance: make this change in your own code; there is no code to paste or try.')
        );
      } else {
        // "Try it" has no handler here: the extension's one click handler serves every card (try/run.ts).
        const tryIt = h(
          'button',
          { type: 'button', class: 'nbp-try', 'data-nbp-kind': sug.kind, title: TRY_TITLE, ...trialAttributes(this.report.trial) },
          'Try it'
        );
        children.push(
          h('div', { class: 'nbp-code' }, h('div', { class: 'nbp-code-actions' }, tryIt, button), codeBlock),
          h(
            'div',
            { class: 'nbp-try-line' },
            'To try it: paste the code in a new cell above this one, run it, then re-run this cell with ',
            h('code', null, '%%torchprofile --compare'),
            '.'
          )
        );
      }
    }
    const severity = ['high', 'medium', 'low'].includes(sug.severity) ? sug.severity : 'low';
    return h('div', { class: `nbp-card nbp-card-${severity}`, 'data-kind': sug.kind }, ...children);
  }

  private flash(button: HTMLButtonElement, text: string): void {
    button.textContent = text;
    window.setTimeout(() => {
      button.textContent = 'Copy';
    }, 1500);
  }
}
