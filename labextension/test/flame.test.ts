import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { FlameGraph, parseFlame, searchFlame } from '../src/report/flame';
import { parseReport } from '../src/report/types';
import { ReportView } from '../src/report/view';

const HOSTILE = '<img src=x onerror=alert(1)>';
const COLUMNS = ['id', 'parent', 'depth', 'name', 'kind', 'host_us', 'device_us'];

// A tree as Python's analysis.flame writes it: parents first, each node's time its children's and its own.
const ROWS = [
  [0, -1, 0, 'all', 'root', 100, 60],
  [1, 0, 1, 'train.py(3): step', 'frame', 90, 60],
  [2, 0, 1, 'aten::copy_', 'operator', 10, 0],
  [3, 1, 2, 'aten::linear', 'operator', 50, 40],
  [4, 1, 2, HOSTILE, 'operator', 40, 20],
  [5, 3, 3, 'aten::addmm', 'operator', 45, 40],
  [6, 5, 4, 'sm80_gemm', 'kernel', 0, 40],
  [7, 4, 3, 'aten::addmm', 'operator', 30, 20]
];

function payload(extra: object = {}): any {
  return { columns: COLUMNS, rows: ROWS, total: 8, merged: 0, note: null, how: 'how to read it', has_device: true, ...extra };
}

function graph(): FlameGraph {
  const g = new FlameGraph(parseFlame(payload())!);
  document.body.appendChild(g.node);
  return g;
}

function box(g: FlameGraph, id: number): SVGGElement {
  return g.node.querySelector(`g[data-id="${id}"]`) as SVGGElement;
}

function width(g: FlameGraph, id: number): number {
  return Number(box(g, id).querySelector('rect')!.getAttribute('width'));
}

describe('flame graph', () => {
  it('draws each box as wide as its share of the time, device time first on a run with device work', () => {
    const g = graph();
    expect(g.shownMetric).toBe('device_us');
    expect(width(g, 0)).toBeCloseTo(1200 - 0.5, 1);
    expect(width(g, 3) + 0.5).toBeCloseTo((1200 * 40) / 60, 1);
    expect(box(g, 2)).toBeNull(); // no device time: not drawn by device time
    (g.node.querySelector('button[data-metric="host_us"]') as HTMLButtonElement).click();
    expect(g.shownMetric).toBe('host_us');
    expect(width(g, 2) + 0.5).toBeCloseTo(120, 1);
  });

  it('zooms into a clicked box, which then spans the width, and back out from the bar above it', () => {
    const g = graph();
    box(g, 3).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(g.zoom).toBe(3);
    expect(width(g, 3)).toBeCloseTo(1199.5, 1);
    expect(width(g, 5)).toBeCloseTo(1199.5, 1); // all of linear's device time is its addmm's
    expect(box(g, 4)).toBeNull(); // a sibling of the zoomed box is out of view
    expect(width(g, 1)).toBeCloseTo(1199.5, 1); // its ancestors stay above, full width
    box(g, 1).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(g.zoom).toBe(1);
    box(g, 1).dispatchEvent(new MouseEvent('click', { bubbles: true }));
    expect(g.zoom).toBe(0);
  });

  it('highlights the boxes a search matches and states their share, a match inside a match counted once', () => {
    const g = graph();
    g.setMetric('host_us');
    g.search('ADDMM');
    const marked = [...g.node.querySelectorAll('g.nbp-flame-match')].map(e => Number(e.getAttribute('data-id')));
    expect(marked.sort()).toEqual([5, 7]);
    expect(searchFlame(parseFlame(payload())!, 'addmm', 'host_us').share).toBeCloseTo(0.75);
    expect(g.node.querySelector('.nbp-flame-status')!.textContent).toContain('75% of the host time');
    // "aten" matches linear and the addmm inside it: linear's time once, not with its addmm again.
    expect(searchFlame(parseFlame(payload())!, 'aten', 'host_us').share).toBeCloseTo((10 + 50 + 30) / 100);
  });

  it('shows hostile names as text, never markup', () => {
    const g = graph();
    expect(g.node.querySelector('img')).toBeNull();
    expect(box(g, 4).querySelector('title')!.textContent).toContain(HOSTILE);
    expect(box(g, 4).getAttribute('data-name')).toBe(HOSTILE);
  });

  it('refuses rows that are not a tree, and hides its tab in a report saved before it existed', () => {
    expect(parseFlame({ ...payload(), rows: [[0, 0, 0, 'x', 'root', 1, 1]] })).toBeNull();
    expect(parseFlame(null)).toBeNull();
    const report = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'report_a100_trace.json'), 'utf-8'));
    expect(new ReportView(parseReport({ ...report, flame: undefined })).tabNames).not.toContain('Flame graph');
    const view = new ReportView(parseReport({ ...report, flame: payload() }));
    expect(view.tabNames).toContain('Flame graph');
    expect(view.tabNames.indexOf('Flame graph')).toBe(view.tabNames.indexOf('Modules') + 1);
  });
});
