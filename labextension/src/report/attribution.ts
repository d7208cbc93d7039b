/**
 * The saved report's Cell lines and Modules tabs: the time attributed to the
 * user's own code (payload `lines` and `modules`, from `%%torchprofile --stack`
 * and `--modules`). Source lines and module names go in as text.
 */
import { h } from './dom';
import { formatCell, isDeviceColumn } from './table';
import { Cell, IOptionalTable } from './types';

const LINES_HOW =
  'Your cell, each line with the time of the torch ops it ran (calls into functions and modules count for the calling line); the bar is relative to the costliest line.';
const MODULES_HOW =
  "Each nn.Module with its submodules folded under it, in call order; every figure includes the submodules. Click a module to fold or unfold it. Modules run inside torch.compile'd code are not recorded.";

function explain(text: string): HTMLElement {
  return h('p', { class: 'nbp-explain' }, text);
}

function value(t: IOptionalTable, row: Cell[], column: string): Cell {
  const i = t.columns.indexOf(column);
  return i >= 0 ? row[i] : null;
}

function timeText(v: Cell): string {
  return typeof v === 'number' && v > 0 ? formatCell('host_us', v) : '';
}

/** The why of a table the run did not record, or null when it has rows. */
function absent(t: IOptionalTable, what: string): HTMLElement | null {
  if (t.rows.length) {
    return null;
  }
  return h('p', { class: 'nbp-muted nbp-absent' }, t.why ?? `This report has no ${what}.`);
}

/** The cell's source, each line with a heat bar and its host (and device) time. */
export function linesPanel(t: IOptionalTable, deviceTime: boolean): HTMLElement {
  const out = h('div', { class: 'nbp-lines' }, explain(LINES_HOW));
  const none = absent(t, 'cell lines');
  if (none) {
    out.appendChild(none);
    return out;
  }
  const device = deviceTime && t.columns.includes('device_us');
  const key = device && t.rows.some(r => ((value(t, r, 'device_us') as number) || 0) > 0) ? 'device_us' : 'host_us';
  const top = Math.max(0, ...t.rows.map(r => (value(t, r, key) as number) || 0)) || 1;
  const head = h(
    'tr',
    null,
    h('th', { scope: 'col', class: 'nbp-num' }, 'Line'),
    h('th', { scope: 'col' }, 'Share'),
    h('th', { scope: 'col', class: 'nbp-num' }, 'Host'),
    device ? h('th', { scope: 'col', class: 'nbp-num' }, 'Device') : null,
    h('th', { scope: 'col' }, 'Source')
  );
  const body = h('tbody');
  for (const row of t.rows) {
    const share = Math.max(0, Math.min(1, ((value(t, row, key) as number) || 0) / top));
    body.appendChild(
      h(
        'tr',
        null,
        h('td', { class: 'nbp-num' }, String(value(t, row, 'line') ?? '')),
        h(
          'td',
          { class: 'nbp-heat', title: `${Math.round(share * 100)}% of the costliest line` },
          h('span', { class: 'nbp-heat-bar', style: `width:${(share * 100).toFixed(1)}%` })
        ),
        h('td', { class: 'nbp-num' }, timeText(value(t, row, 'host_us'))),
        device ? h('td', { class: 'nbp-num' }, timeText(value(t, row, 'device_us'))) : null,
        h('td', { class: 'nbp-src' }, h('code', null, String(value(t, row, 'source') ?? '')))
      )
    );
  }
  out.appendChild(
    h('div', { class: 'nbp-table-wrap' }, h('table', { class: 'nbp-table nbp-lines-table' }, h('thead', null, head), body))
  );
  return out;
}

/** The module tree: each module with children folds open and shut (the first two levels open). */
export function modulesPanel(t: IOptionalTable, deviceTime: boolean): HTMLElement {
  const out = h('div', { class: 'nbp-modules' }, explain(MODULES_HOW));
  const none = absent(t, 'modules');
  if (none) {
    out.appendChild(none);
    return out;
  }
  const figures = ['calls', 'forward_host_us', 'backward_host_us', 'forward_device_us', 'backward_device_us'].filter(
    c => t.columns.includes(c) && (deviceTime || !isDeviceColumn(c))
  );
  const labels: { [c: string]: string } = {
    calls: 'Calls',
    forward_host_us: 'Fwd host',
    backward_host_us: 'Bwd host',
    forward_device_us: 'Fwd device',
    backward_device_us: 'Bwd device'
  };
  const grid = `nbp-mgrid-${figures.length}`;
  const tree = h(
    'div',
    { class: 'nbp-mtree', role: 'tree', 'aria-label': 'Modules' },
    h('div', { class: `nbp-mrow nbp-mhead ${grid}` }, h('span', null, 'Module'), ...figures.map(c => h('span', null, labels[c])))
  );
  const children = new Map<string, Cell[][]>();
  for (const row of t.rows) {
    const parent = String(value(t, row, 'parent') ?? '');
    children.set(parent, [...(children.get(parent) ?? []), row]);
  }
  const line = (row: Cell[]): HTMLElement => {
    const module = String(value(t, row, 'module') ?? '');
    const type = String(value(t, row, 'type') ?? '');
    const depth = Number(value(t, row, 'depth') ?? 0);
    const leaf = module.split('.').pop() ?? module;
    return h(
      'span',
      { class: `nbp-mrow ${grid}`, title: module },
      h(
        'span',
        { class: 'nbp-mname', style: `padding-left:${16 * depth}px` },
        leaf,
        // A qualified name's last part is an attribute ("fc", "0"): the class says what it is.
        leaf.startsWith(type) ? null : h('span', { class: 'nbp-mtype' }, ` ${type}`)
      ),
      ...figures.map(c => h('span', { class: 'nbp-num' }, formatCell(c, value(t, row, c))))
    );
  };
  const node = (row: Cell[]): HTMLElement => {
    const kids = children.get(String(value(t, row, 'module') ?? '')) ?? [];
    if (!kids.length) {
      return h('div', { class: 'nbp-mleaf', role: 'treeitem' }, line(row));
    }
    const details = h('details', { class: 'nbp-mnode', role: 'treeitem' }, h('summary', null, line(row)), ...kids.map(node));
    details.open = Number(value(t, row, 'depth') ?? 0) < 2;
    return details;
  };
  for (const row of children.get('') ?? []) {
    tree.appendChild(node(row));
  }
  out.appendChild(tree);
  if (t.total > t.rows.length) {
    out.appendChild(h('p', { class: 'nbp-muted' }, `First ${t.rows.length} of ${t.total} modules.`));
  }
  return out;
}
