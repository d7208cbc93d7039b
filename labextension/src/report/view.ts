/**
 * The static report view: the saved report a notebook shows without a kernel.
 *
 * Plain DOM, independent of JupyterLab, so it can be unit-tested in jsdom.
 * Every string from the payload goes in through text nodes (dom.ts), so
 * operator names such as `<img src=x onerror=...>` show as text.
 */
import { colorOf, renderChart, specFromTable } from './charts';
import { copyText } from './copy';
import { Child, clear, h, uid } from './dom';
import {
  formatBytes,
  formatCount,
  formatMs,
  formatRate,
  formatShare,
  formatUs
} from './format';
import { Cell, IGrowth, IReport, ISuggestion, ITable } from './types';

export const TAB_NAMES = ['Overview', 'Operators', 'Memory', 'Suggestions'] as const;
export type TabName = (typeof TAB_NAMES)[number];

export interface IViewOptions {
  /** Clipboard writer (tests pass a fake). */
  copy?: (text: string) => Promise<void>;
  /** A line under the report saying where it comes from. */
  footer?: string;
  /** Operator rows shown at first. */
  pageSize?: number;
}

const TRY_TITLE = 'Run this code in a new cell below, then profile this cell again and compare';

export type SortDir = 'ascending' | 'descending';

const COLUMN_LABELS: { [name: string]: string } = {
  name: 'Operator',
  calls: 'Calls',
  host_self_us: 'Host self',
  host_total_us: 'Host total',
  device_self_us: 'Device self',
  device_total_us: 'Device total',
  input_shapes: 'Input shapes',
  step: 'Step',
  phase: 'Phase',
  wall_ms: 'Wall time',
  dataloader_ms: 'DataLoader',
  mem_allocated_bytes: 'Allocated',
  mem_reserved_bytes: 'Reserved',
  mem_peak_bytes: 'Peak',
  rss_bytes: 'Process RSS',
  // Breakdown parts, as nbprofiler/render/views.py names them.
  kernel: 'Kernel',
  memcpy: 'Memcpy',
  memset: 'Memset',
  communication: 'Communication',
  runtime: 'Runtime',
  dataloader: 'DataLoader',
  cpu_exec: 'CPU Exec',
  other: 'Other',
  forward: 'Forward',
  backward: 'Backward',
  optimizer: 'Optimizer'
};

export function columnLabel(column: string): string {
  if (COLUMN_LABELS[column]) {
    return COLUMN_LABELS[column];
  }
  const bare = column.replace(/^mem_/, '').replace(/_(us|ms|bytes)$/, '').replace(/_/g, ' ');
  return bare.charAt(0).toUpperCase() + bare.slice(1);
}

/** The text of one table cell, in the unit its column name says. */
export function formatCell(column: string, value: Cell): string {
  if (value === null || value === undefined) {
    return '–';
  }
  if (typeof value !== 'number') {
    return String(value);
  }
  if (column.endsWith('_us')) {
    return formatUs(value);
  }
  if (column.endsWith('_ms')) {
    return formatMs(value);
  }
  if (column.endsWith('_bytes')) {
    return formatBytes(value);
  }
  if (column === 'calls' || column === 'step' || Number.isInteger(value)) {
    return formatCount(value);
  }
  return value.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

/**
 * Rows sorted by one column, as a new array. Missing values go last in both
 * directions; ties keep their original order.
 */
export function sortRows(rows: Cell[][], column: number, dir: SortDir): Cell[][] {
  const sign = dir === 'ascending' ? 1 : -1;
  return rows
    .map((row, index) => ({ row, index }))
    .sort((a, b) => {
      const x = a.row[column];
      const y = b.row[column];
      const xm = x === null || x === undefined;
      const ym = y === null || y === undefined;
      if (xm || ym) {
        return xm === ym ? a.index - b.index : xm ? 1 : -1;
      }
      let c: number;
      if (typeof x === 'number' && typeof y === 'number') {
        c = x - y;
      } else {
        c = String(x).localeCompare(String(y), 'en', { numeric: true, sensitivity: 'base' });
      }
      return c !== 0 ? sign * c : a.index - b.index;
    })
    .map(e => e.row);
}

/** Rows whose `column` contains `text`, case-insensitively. */
export function filterRows(rows: Cell[][], column: number, text: string): Cell[][] {
  const needle = text.trim().toLowerCase();
  if (!needle || column < 0) {
    return rows;
  }
  return rows.filter(row => String(row[column] ?? '').toLowerCase().includes(needle));
}

function isNumericColumn(table: ITable, column: number): boolean {
  return table.rows.some(r => typeof r[column] === 'number');
}

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
 * worded as nbprofiler/render/views.py `growth_warnings` words it: the verdict
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

export class ReportView {
  readonly node: HTMLElement;
  private readonly report: IReport;
  private readonly options: IViewOptions;
  private readonly tabs = new Map<TabName, { tab: HTMLButtonElement; panel: HTMLElement }>();
  private current: TabName = 'Overview';

  // Operator table state.
  private opSort: { column: number; dir: SortDir } | null = null;
  private opFilter = '';
  private opLimit: number;
  private opBody: HTMLTableSectionElement | null = null;
  private opHead: HTMLTableRowElement | null = null;
  private opCount: HTMLElement | null = null;

  constructor(report: IReport, options: IViewOptions = {}) {
    this.report = report;
    this.options = options;
    this.opLimit = options.pageSize ?? 50;
    this.node = h('div', { class: 'nbp-report', 'data-nbprofiler-report': report.schema });
    this.build();
  }

  get tabNames(): TabName[] {
    return [...this.tabs.keys()];
  }

  get currentTab(): TabName {
    return this.current;
  }

  selectTab(name: TabName): void {
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
    const index = this.report.operators.columns.indexOf(column);
    if (index < 0) {
      return;
    }
    if (!dir) {
      if (this.opSort && this.opSort.column === index) {
        dir = this.opSort.dir === 'descending' ? 'ascending' : 'descending';
      } else {
        dir = isNumericColumn(this.report.operators, index) ? 'descending' : 'ascending';
      }
    }
    this.opSort = { column: index, dir };
    this.renderOperatorRows();
  }

  filterOperators(text: string): void {
    this.opFilter = text;
    this.renderOperatorRows();
  }

  private build(): void {
    const r = this.report;
    const source = r.source === 'live' ? 'live run' : `trace file ${r.source}`;
    this.node.appendChild(
      h(
        'div',
        { class: 'nbp-header' },
        h('span', { class: 'nbp-title' }, r.title),
        h('span', { class: 'nbp-subtitle' }, source)
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
      Memory: () => this.buildMemory(),
      Suggestions: () => this.buildSuggestions()
    };
    for (const name of TAB_NAMES) {
      const tabId = uid('nbp-tab');
      const panelId = uid('nbp-panel');
      const label = name === 'Suggestions' && r.suggestions.length ? `Suggestions (${r.suggestions.length})` : name;
      const tab = h(
        'button',
        { class: 'nbp-tab', role: 'tab', id: tabId, 'aria-controls': panelId, type: 'button', 'data-tab': name },
        label
      );
      const panel = h('div', { class: 'nbp-panel', role: 'tabpanel', id: panelId, 'aria-labelledby': tabId, 'data-tab': name });
      panel.appendChild(builders[name]());
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
    const i = TAB_NAMES.indexOf(name);
    let next = -1;
    if (event.key === 'ArrowRight') {
      next = (i + 1) % TAB_NAMES.length;
    } else if (event.key === 'ArrowLeft') {
      next = (i + TAB_NAMES.length - 1) % TAB_NAMES.length;
    } else if (event.key === 'Home') {
      next = 0;
    } else if (event.key === 'End') {
      next = TAB_NAMES.length - 1;
    }
    if (next >= 0) {
      event.preventDefault();
      this.selectTab(TAB_NAMES[next]);
      this.tabs.get(TAB_NAMES[next])?.tab.focus();
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
    const spec = specFromTable({
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
        'Every torch operator of the profiled steps. Self time excludes the operators it called; total time includes them. Click a column header to sort.'
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
    const filter = h('input', {
      class: 'nbp-filter',
      type: 'search',
      placeholder: 'Filter by name',
      'aria-label': 'Filter operators by name'
    });
    filter.addEventListener('input', () => this.filterOperators(filter.value));
    const limit = h('select', { class: 'nbp-limit-select', 'aria-label': 'Rows to show' });
    for (const n of [25, 50, 100, 250, 0]) {
      const opt = h('option', { value: n }, n === 0 ? 'all' : String(n));
      if (n === this.opLimit) {
        opt.selected = true;
      }
      limit.appendChild(opt);
    }
    limit.addEventListener('change', () => {
      this.opLimit = Number(limit.value);
      this.renderOperatorRows();
    });
    this.opCount = h('span', { class: 'nbp-count', 'aria-live': 'polite' });
    out.appendChild(h('div', { class: 'nbp-controls' }, filter, h('label', null, 'show ', limit), this.opCount));

    this.opHead = h('tr');
    t.columns.forEach((column, i) => {
      const numeric = isNumericColumn(t, i);
      const button = h('button', { type: 'button', class: 'nbp-sort', 'data-column': column }, columnLabel(column));
      button.addEventListener('click', () => this.sortOperators(column));
      this.opHead!.appendChild(
        h('th', { scope: 'col', class: numeric ? 'nbp-num' : null, 'data-column': column, 'aria-sort': 'none' }, button)
      );
    });
    this.opBody = h('tbody');
    out.appendChild(
      h(
        'div',
        { class: 'nbp-table-wrap' },
        h('table', { class: 'nbp-table nbp-operator-table' }, h('thead', null, this.opHead), this.opBody)
      )
    );
    this.renderOperatorRows();
    return out;
  }

  private renderOperatorRows(): void {
    const t = this.report.operators;
    if (!this.opBody || !this.opHead) {
      return;
    }
    let rows = filterRows(t.rows, t.columns.indexOf('name'), this.opFilter);
    if (this.opSort) {
      rows = sortRows(rows, this.opSort.column, this.opSort.dir);
    }
    const matched = rows.length;
    if (this.opLimit > 0) {
      rows = rows.slice(0, this.opLimit);
    }
    Array.from(this.opHead.children).forEach((th, i) => {
      const dir = this.opSort && this.opSort.column === i ? this.opSort.dir : 'none';
      th.setAttribute('aria-sort', dir);
      th.classList.toggle('nbp-sorted', dir !== 'none');
    });
    const sortCol = this.opSort?.column ?? -1;
    const sortMax =
      sortCol >= 0 && isNumericColumn(t, sortCol)
        ? Math.max(0, ...t.rows.map(r => (typeof r[sortCol] === 'number' ? (r[sortCol] as number) : 0)))
        : 0;
    clear(this.opBody);
    for (const row of rows) {
      const tr = h('tr');
      row.forEach((value, i) => {
        const column = t.columns[i];
        const numeric = typeof value === 'number';
        const td = h('td', { class: numeric ? 'nbp-num' : 'nbp-text' }, formatCell(column, value));
        if (column === 'name' && value !== null) {
          td.title = String(value);
        }
        if (i === sortCol && sortMax > 0 && numeric) {
          const pct = Math.max(0, Math.min(100, ((value as number) / sortMax) * 100));
          td.appendChild(h('span', { class: 'nbp-cellbar', style: `width:${pct.toFixed(1)}%`, 'aria-hidden': 'true' }));
        }
        tr.appendChild(td);
      });
      this.opBody.appendChild(tr);
    }
    if (this.opCount) {
      this.opCount.textContent =
        matched === t.rows.length
          ? `${formatCount(rows.length)} of ${formatCount(t.rows.length)} operators`
          : `${formatCount(rows.length)} of ${formatCount(matched)} matching (${formatCount(t.rows.length)} in all)`;
    }
  }

  // -- Memory ------------------------------------------------------------------------
  private buildMemory(): HTMLElement {
    const t = this.report.steps;
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
    const sampled = this.sampledMemory();
    const traced = this.tracedMemory();
    if (sampled) {
      out.appendChild(sampled);
    }
    out.append(...traced);
    if (!sampled && !traced.length) {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'This report has no memory data (the run recorded none); the step table follows.'));
    }
    if (!t.rows.length) {
      out.appendChild(h('p', { class: 'nbp-muted' }, 'No steps were recorded.'));
      return out;
    }
    const phaseIdx = t.columns.indexOf('phase');
    out.appendChild(h('h4', { class: 'nbp-h' }, 'Steps'));
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
    out.appendChild(h('div', { class: 'nbp-table-wrap' }, h('table', { class: 'nbp-table nbp-steps-table' }, h('thead', null, head), body)));
    return out;
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
      const button = h('button', { type: 'button', class: 'nbp-copy', title: 'Copy the code to the clipboard' }, 'Copy');
      button.addEventListener('click', () => {
        const write = this.options.copy ?? copyText;
        write(code).then(
          () => this.flash(button, 'Copied'),
          () => this.flash(button, 'Copy failed: select the code')
        );
      });
      // "Try it" has no handler here: the extension's one click handler serves every card (try/run.ts).
      const tryIt = h('button', { type: 'button', class: 'nbp-try', 'data-nbp-kind': sug.kind, title: TRY_TITLE }, 'Try it');
      children.push(
        h('div', { class: 'nbp-code' }, h('div', { class: 'nbp-code-actions' }, tryIt, button), h('pre', null, h('code', null, code))),
        h(
          'div',
          { class: 'nbp-try-line' },
          'To try it: paste the code in a new cell below, run it, then re-run this cell with ',
          h('code', null, '%%torchprofile --compare'),
          '.'
        )
      );
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
