/**
 * The saved report's tables: column labels and cell formats, and a table that
 * sorts by a header click, filters by name, shows a number of rows, and opens a
 * row's details on a click (the Operators and Kernels tabs).
 *
 * Headers and cells are one `<table>`, so each header sits over its column.
 * Every value is set as text (dom.ts): names come from traces.
 */
import { clear, h } from './dom';
import { formatBytes, formatCount, formatMs, formatShare, formatSi, formatUs } from './format';
import { Cell, ITable } from './types';

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
  optimizer: 'Optimizer',
  // The kernel table (payload `kernels`).
  category: 'Category',
  total_us: 'Total',
  mean_us: 'Mean',
  max_us: 'Max',
  mean_occupancy: 'Occupancy',
  mean_blocks_per_sm: 'Blocks per SM',
  tensor_cores: 'Tensor cores',
  achieved_flops_per_s: 'Achieved FLOP/s',
  bound: 'Bound',
  operator: 'Launched by',
  // Cell lines and modules.
  line: 'Line',
  source: 'Source',
  host_us: 'Host',
  device_us: 'Device',
  module: 'Module',
  forward_host_us: 'Fwd host',
  backward_host_us: 'Bwd host',
  forward_device_us: 'Fwd device',
  backward_device_us: 'Bwd device'
};

/** Columns whose values are fractions, shown as percentages. */
const SHARE_COLUMNS = new Set(['mean_occupancy']);

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
  if (typeof value === 'boolean') {
    return value ? 'yes' : 'no';
  }
  if (typeof value !== 'number') {
    return String(value);
  }
  if (SHARE_COLUMNS.has(column)) {
    return formatShare(value);
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
  if (column.endsWith('flops_per_s')) {
    return formatSi(value, 'FLOP/s');
  }
  if (column === 'calls' || column === 'step' || Number.isInteger(value)) {
    return formatCount(value);
  }
  return value.toLocaleString('en-US', { maximumFractionDigits: 3 });
}

/** A device figure's column (`device_self_us`, `forward_device_us`, `device_self_alloc_bytes`): shown only when the run has device time. */
export function isDeviceColumn(column: string): boolean {
  return /(^|_)device_/.test(column);
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

export function isNumericColumn(table: ITable, column: number): boolean {
  return table.rows.some(r => typeof r[column] === 'number');
}

/** The label/value pairs of one row, for its details. */
export function rowFigures(table: ITable, row: Cell[], columns: string[]): HTMLElement {
  return h(
    'dl',
    { class: 'nbp-evidence nbp-row-figures' },
    ...columns.flatMap(column => {
      const i = table.columns.indexOf(column);
      return [h('dt', null, columnLabel(column)), h('dd', null, formatCell(column, row[i]))];
    })
  );
}

export interface ITableOptions {
  /** Class of the `<table>` (`nbp-operator-table`, `nbp-kernel-table`). */
  className: string;
  /** What a row is, plural ("operators"). */
  noun: string;
  /** The columns shown, in order (a subset of the table's). */
  columns: string[];
  /** Column labels that differ from `columnLabel`'s. */
  labels?: { [column: string]: string };
  /** What a column's figure is where its label cannot say: the header's hover text (the payload's `help`). */
  help?: { [column: string]: string };
  /** Columns whose long values wrap instead of being cut. */
  wrap?: string[];
  /** For a column showing a shortened name, the column with the whole name: its cells' hover text. */
  hover?: { [column: string]: string };
  pageSize: number;
  /** The details of a clicked row, shown under the table. */
  details?: (row: Cell[]) => HTMLElement;
}

/** A sortable, filterable table of one payload table, with a row's details on a click. */
export class DataTable {
  readonly node: HTMLElement;
  private sort: { column: number; dir: SortDir } | null = null;
  private filter = '';
  private limit: number;
  private selected: Cell[] | null = null;
  private readonly head: HTMLTableRowElement;
  private readonly body: HTMLTableSectionElement;
  private readonly count: HTMLElement;
  private readonly detailBox: HTMLElement;

  constructor(private readonly table: ITable, private readonly options: ITableOptions) {
    this.limit = options.pageSize;
    const filter = h('input', {
      class: 'nbp-filter',
      type: 'search',
      placeholder: 'Filter by name',
      'aria-label': `Filter ${options.noun} by name`
    });
    filter.addEventListener('input', () => this.filterBy(filter.value));
    const limit = h('select', { class: 'nbp-limit-select', 'aria-label': 'Rows to show' });
    for (const n of [25, 50, 100, 250, 0]) {
      const opt = h('option', { value: n }, n === 0 ? 'all' : String(n));
      opt.selected = n === this.limit;
      limit.appendChild(opt);
    }
    limit.addEventListener('change', () => {
      this.limit = Number(limit.value);
      this.render();
    });
    this.count = h('span', { class: 'nbp-count', 'aria-live': 'polite' });
    this.head = h('tr', { role: 'row' });
    for (const column of options.columns) {
      const i = table.columns.indexOf(column);
      const button = h('button', { type: 'button', class: 'nbp-sort', 'data-column': column, title: options.help?.[column] ?? null },
        options.labels?.[column] ?? columnLabel(column));
      button.addEventListener('click', () => this.sortBy(column));
      this.head.appendChild(
        h('th', { scope: 'col', role: 'columnheader', class: isNumericColumn(table, i) ? 'nbp-num' : null, 'data-column': column, 'aria-sort': 'none' }, button)
      );
    }
    this.body = h('tbody');
    this.detailBox = h('div', { class: 'nbp-row-details', 'aria-live': 'polite', hidden: true });
    this.node = h(
      'div',
      { class: 'nbp-data-table' },
      h('div', { class: 'nbp-controls' }, filter, h('label', null, 'show ', limit), this.count),
      h(
        'div',
        { class: 'nbp-table-wrap' },
        h(
          'table',
          { class: `nbp-table ${options.className}`, role: 'grid', 'aria-label': options.noun, 'aria-rowcount': table.rows.length + 1 },
          h('thead', null, this.head),
          this.body
        )
      ),
      this.detailBox
    );
    this.render();
  }

  /** Sort by a column name, as a header click does: numbers largest first, a second click reverses. */
  sortBy(column: string, dir?: SortDir): void {
    const index = this.table.columns.indexOf(column);
    if (index < 0) {
      return;
    }
    if (!dir) {
      if (this.sort && this.sort.column === index) {
        dir = this.sort.dir === 'descending' ? 'ascending' : 'descending';
      } else {
        dir = isNumericColumn(this.table, index) ? 'descending' : 'ascending';
      }
    }
    this.sort = { column: index, dir };
    this.render();
  }

  filterBy(text: string): void {
    this.filter = text;
    this.render();
  }

  /** Show the details of a row (as a click on it does); the same row again hides them. */
  select(row: Cell[] | null): void {
    this.selected = row === this.selected ? null : row;
    clear(this.detailBox);
    if (this.selected && this.options.details) {
      this.detailBox.appendChild(this.options.details(this.selected));
    }
    this.detailBox.hidden = !this.detailBox.firstChild;
    for (const tr of Array.from(this.body.rows)) {
      tr.setAttribute('aria-selected', String((tr as IRowElement).nbpRow === this.selected));
    }
  }

  private render(): void {
    const t = this.table;
    let rows = filterRows(t.rows, t.columns.indexOf('name'), this.filter);
    if (this.sort) {
      rows = sortRows(rows, this.sort.column, this.sort.dir);
    }
    const matched = rows.length;
    if (this.limit > 0) {
      rows = rows.slice(0, this.limit);
    }
    const sortName = this.sort ? t.columns[this.sort.column] : null;
    Array.from(this.head.children).forEach((th, k) => {
      const dir = this.options.columns[k] === sortName ? this.sort!.dir : 'none';
      th.setAttribute('aria-sort', dir);
      th.classList.toggle('nbp-sorted', dir !== 'none');
    });
    const sortCol = this.sort?.column ?? -1;
    const sortMax =
      sortCol >= 0 && isNumericColumn(t, sortCol)
        ? Math.max(0, ...t.rows.map(r => (typeof r[sortCol] === 'number' ? (r[sortCol] as number) : 0)))
        : 0;
    const wrap = new Set(this.options.wrap ?? []);
    clear(this.body);
    for (const row of rows) {
      const tr = h('tr', { role: 'row', tabindex: this.options.details ? 0 : null, 'aria-selected': String(row === this.selected) }) as IRowElement;
      tr.nbpRow = row;
      for (const column of this.options.columns) {
        const i = t.columns.indexOf(column);
        const value = row[i];
        const numeric = typeof value === 'number';
        const td = h(
          'td',
          { role: 'gridcell', class: numeric ? 'nbp-num' : wrap.has(column) ? 'nbp-text nbp-wrap' : 'nbp-text' },
          formatCell(column, value)
        );
        if (!numeric && value !== null) {
          // The whole name on hover, even where the cell cuts it or shows it shortened.
          const whole = this.options.hover?.[column];
          td.title = String(whole !== undefined && t.columns.includes(whole) ? row[t.columns.indexOf(whole)] : value);
        }
        if (i === sortCol && sortMax > 0 && numeric) {
          const pct = Math.max(0, Math.min(100, ((value as number) / sortMax) * 100));
          td.appendChild(h('span', { class: 'nbp-cellbar', style: `width:${pct.toFixed(1)}%`, 'aria-hidden': 'true' }));
        }
        tr.appendChild(td);
      }
      if (this.options.details) {
        tr.addEventListener('click', () => this.select(row));
        tr.addEventListener('keydown', (event: KeyboardEvent) => {
          if (event.key === 'Enter' || event.key === ' ') {
            event.preventDefault();
            this.select(row);
          }
        });
      }
      this.body.appendChild(tr);
    }
    const noun = this.options.noun;
    this.count.textContent =
      matched === t.rows.length
        ? `${formatCount(rows.length)} of ${formatCount(t.rows.length)} ${noun}`
        : `${formatCount(rows.length)} of ${formatCount(matched)} matching (${formatCount(t.rows.length)} in all)`;
  }
}

/** A body row that knows its data row (for the selection mark). */
interface IRowElement extends HTMLTableRowElement {
  nbpRow?: Cell[];
}
