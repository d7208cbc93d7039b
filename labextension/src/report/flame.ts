/**
 * The flame graph (an icicle): payload `flame`, Python's nbprofiler/render/flame.py. The root
 * spans the width at the top; under each box its children, as wide as their share of its time,
 * largest first. A switch picks host or device time; a click on a box zooms into it (it spans
 * the width, its ancestors stay above as full-width bars), a click on one of those zooms back
 * out; search highlights the boxes whose name holds the text and says what share of the time
 * they hold (a match inside another match counted once). Names come from traces: text only
 * (dom.ts), never markup.
 */
import { h, s, clear } from './dom';
import { formatCount, formatShare, formatUs } from './format';

export type FlameMetric = 'host_us' | 'device_us';

export interface IFlameNode {
  id: number;
  parent: number;
  depth: number;
  name: string;
  kind: string;
  host_us: number;
  device_us: number;
}

export interface IFlame {
  nodes: IFlameNode[];
  /** How many nodes the report's whole tree has, and how many the cap merged into "other". */
  total: number;
  merged: number;
  note: string | null;
  how: string;
  hasDevice: boolean;
}

const WIDTH = 1200;
const ROW = 18;
const CHAR_PX = 6.5;
const MIN_BOX_PX = 0.3;
/** The fill per kind of box (Python's flame.KIND_COLORS, through chart_svg.COLOR_VARS' colours). */
const KIND_FILL: { [kind: string]: string } = {
  root: '#8C8C8C',
  frame: '#C9971C',
  module: '#8172B3',
  operator: '#55A868',
  kernel: '#4C72B0',
  other: '#8C8C8C'
};

function isObject(value: unknown): value is { [key: string]: unknown } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** The payload's `flame`, checked; null when absent (a report saved before it existed) or malformed. */
export function parseFlame(value: unknown): IFlame | null {
  if (!isObject(value) || !Array.isArray(value.rows) || !Array.isArray(value.columns)) {
    return null;
  }
  const col = (name: string): number => (value.columns as unknown[]).indexOf(name);
  const at = { id: col('id'), parent: col('parent'), depth: col('depth'), name: col('name'), kind: col('kind'), host: col('host_us'), device: col('device_us') };
  if (Object.values(at).some(i => i < 0)) {
    return null;
  }
  const nodes: IFlameNode[] = [];
  for (const row of value.rows) {
    if (!Array.isArray(row)) {
      continue;
    }
    nodes.push({
      id: num(row[at.id]),
      parent: typeof row[at.parent] === 'number' ? (row[at.parent] as number) : -1,
      depth: num(row[at.depth]),
      name: String(row[at.name] ?? ''),
      kind: String(row[at.kind] ?? ''),
      host_us: num(row[at.host]),
      device_us: num(row[at.device])
    });
  }
  // Ids number the nodes in order, parents first (Python's analysis.flame): anything else is not a tree.
  if (!nodes.length || nodes.some((n, i) => n.id !== i || n.parent >= i)) {
    return null;
  }
  return {
    nodes,
    total: num(value.total) || nodes.length,
    merged: num(value.merged),
    note: typeof value.note === 'string' ? value.note : null,
    how: typeof value.how === 'string' ? value.how : '',
    hasDevice: value.has_device === true
  };
}

/** The boxes whose name holds `query` (case-insensitive), and their share of the root's time,
 * each match nested in another match counted once. */
export function searchFlame(flame: IFlame, query: string, metric: FlameMetric): { matches: number[]; share: number } {
  const q = query.trim().toLowerCase();
  if (!q) {
    return { matches: [], share: 0 };
  }
  const hit = flame.nodes.map(n => n.name.toLowerCase().includes(q));
  const under = new Array<boolean>(flame.nodes.length).fill(false);
  let sum = 0;
  const matches: number[] = [];
  for (const n of flame.nodes) {
    under[n.id] = n.parent >= 0 && (under[n.parent] || hit[n.parent]);
    if (hit[n.id]) {
      matches.push(n.id);
      if (!under[n.id]) {
        sum += n[metric];
      }
    }
  }
  const root = flame.nodes[0][metric];
  return { matches, share: root > 0 ? sum / root : 0 };
}

/** Each box's left edge and width in px with `zoom` spanning the width: its ancestors full width,
 * its descendants by their share of its time, largest first; null for a box not drawn. */
export function flameLayout(flame: IFlame, metric: FlameMetric, zoom: number): ({ x: number; w: number } | null)[] {
  const nodes = flame.nodes;
  const boxes: ({ x: number; w: number } | null)[] = nodes.map(() => null);
  const children: number[][] = nodes.map(() => []);
  for (const n of nodes) {
    if (n.parent >= 0) {
      children[n.parent].push(n.id);
    }
  }
  for (let a = zoom; a >= 0; a = nodes[a].parent) {
    boxes[a] = { x: 0, w: WIDTH };
  }
  const scale = nodes[zoom][metric] > 0 ? WIDTH / nodes[zoom][metric] : 0;
  const stack = [zoom];
  while (stack.length) {
    const p = stack.pop()!;
    let x = boxes[p]!.x;
    const kids = children[p].slice().sort((a, b) => nodes[b][metric] - nodes[a][metric] || a - b);
    for (const c of kids) {
      const w = nodes[c][metric] * scale;
      if (w >= MIN_BOX_PX) {
        boxes[c] = { x, w };
        stack.push(c);
      }
      x += w;
    }
  }
  return boxes;
}

/** The interactive flame graph of one report. */
export class FlameGraph {
  readonly node: HTMLElement;
  private metric: FlameMetric;
  private zoomed = 0;
  private query = '';
  private readonly svg: SVGSVGElement;
  private readonly status: HTMLElement;

  constructor(private readonly flame: IFlame) {
    this.metric = flame.hasDevice ? 'device_us' : 'host_us';
    const switchBox = h('div', { class: 'nbp-flame-switch', role: 'group', 'aria-label': 'Time shown' });
    for (const [metric, label] of [['host_us', 'host time'], ['device_us', 'device time']] as [FlameMetric, string][]) {
      const button = h('button', { type: 'button', class: 'nbp-flame-metric', 'data-metric': metric, disabled: metric === 'device_us' && !flame.hasDevice }, label);
      button.addEventListener('click', () => this.setMetric(metric));
      switchBox.appendChild(button);
    }
    const search = h('input', { type: 'search', class: 'nbp-flame-search', placeholder: 'search names', 'aria-label': 'Search the flame graph' });
    search.addEventListener('input', () => this.search(search.value));
    this.status = h('span', { class: 'nbp-flame-status', role: 'status' });
    this.svg = s('svg', { class: 'nbp-chart nbp-flame', width: '100%', preserveAspectRatio: 'none', role: 'img' });
    this.node = h(
      'div',
      { class: 'nbp-flame-view' },
      flame.how ? h('div', { class: 'nbp-explain' }, flame.how) : null,
      flame.note ? h('div', { class: 'nbp-explain' }, flame.note) : null,
      h('div', { class: 'nbp-flame-controls' }, switchBox, search, this.status),
      this.svg
    );
    this.draw();
  }

  /** The box spanning the width (0: the root). */
  get zoom(): number {
    return this.zoomed;
  }

  get shownMetric(): FlameMetric {
    return this.metric;
  }

  setMetric(metric: FlameMetric): void {
    if (metric === 'device_us' && !this.flame.hasDevice) {
      return;
    }
    this.metric = metric;
    if (this.flame.nodes[this.zoomed][metric] <= 0) {
      this.zoomed = 0;
    }
    this.draw();
  }

  zoomTo(id: number): void {
    if (id >= 0 && id < this.flame.nodes.length && this.flame.nodes[id][this.metric] > 0) {
      this.zoomed = id;
      this.draw();
    }
  }

  search(query: string): void {
    this.query = query;
    this.draw();
  }

  private draw(): void {
    const { nodes } = this.flame;
    const boxes = flameLayout(this.flame, this.metric, this.zoomed);
    const depth = Math.max(0, ...nodes.filter((_, i) => boxes[i]).map(n => n.depth)) + 1;
    clear(this.svg);
    this.svg.setAttribute('viewBox', `0 0 ${WIDTH} ${depth * ROW}`);
    this.svg.setAttribute('height', String(depth * ROW));
    this.svg.setAttribute('data-metric', this.metric === 'host_us' ? 'host' : 'device');
    const found = searchFlame(this.flame, this.query, this.metric);
    const hit = new Set(found.matches);
    const root = nodes[0][this.metric];
    const label = this.metric === 'host_us' ? 'host' : 'device';
    for (const n of nodes) {
      const box = boxes[n.id];
      if (!box) {
        continue;
      }
      const fits = Math.floor((box.w - 4) / CHAR_PX);
      const text = n.name.length <= fits ? n.name : fits > 2 ? n.name.slice(0, fits - 1) + '…' : '';
      const value = n[this.metric];
      const classes = ['nbp-flame-box', hit.has(n.id) ? 'nbp-flame-match' : '', n.id === this.zoomed ? 'nbp-flame-zoomed' : ''];
      const g = s(
        'g',
        { class: classes.filter(Boolean).join(' '), 'data-id': n.id, 'data-kind': n.kind, 'data-name': n.name, cursor: 'pointer' },
        s('title', null, `${n.name}\n${label} ${formatUs(value)} (${formatShare(root > 0 ? value / root : 0)} of all)`),
        s('rect', {
          x: box.x.toFixed(2),
          y: n.depth * ROW,
          width: Math.max(box.w - 0.5, 0.1).toFixed(2),
          height: ROW - 1,
          fill: KIND_FILL[n.kind] ?? KIND_FILL.other,
          'fill-opacity': this.query.trim() && !hit.has(n.id) ? 0.2 : 0.55,
          stroke: hit.has(n.id) ? 'currentColor' : null
        }),
        text ? s('text', { x: (box.x + 3).toFixed(2), y: n.depth * ROW + 13 }, text) : null
      );
      // A box above the zoomed one (or the zoomed one) zooms out to it; any other zooms in.
      g.addEventListener('click', () => this.zoomTo(n.id === this.zoomed ? Math.max(n.parent, 0) : n.id));
      this.svg.appendChild(g);
    }
    this.status.textContent = this.query.trim()
      ? `${formatCount(found.matches.length)} boxes match: ${formatShare(found.share)} of the ${label} time`
      : this.zoomed
        ? `zoomed into ${nodes[this.zoomed].name}: click a bar above to zoom out`
        : '';
  }
}

/** The Flame graph panel of a saved report, or why there is none. */
export function flamePanel(value: unknown): HTMLElement {
  const flame = parseFlame(value);
  if (!flame) {
    return h('div', { class: 'nbp-explain' }, 'No flame graph: this run recorded no operator time, or the report was saved before the flame graph existed.');
  }
  return new FlameGraph(flame).node;
}
