import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { parseDistributed } from '../src/report/distributed';
import { parseReport } from '../src/report/types';
import { ReportView } from '../src/report/view';

const HOSTILE_IMG = '<img src=x onerror=alert(1)>';

function fixture(name: string): any {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf-8'));
}

// Python's Distributed payload of the real NCCL trace, alone and as 3 ranks with rank 1 a straggler
// (fixtures/make_distributed_fixture.py), each cell also as Python writes it.
const DISTRIBUTED = fixture('distributed.json');

function render(distributed: unknown): ReportView {
  const view = new ReportView(parseReport({ ...fixture('report_a100_trace.json'), distributed }));
  document.body.appendChild(view.node);
  return view;
}

function panel(view: ReportView): HTMLElement {
  view.selectTab('Distributed');
  return view.node.querySelector('.nbp-panel[data-tab="Distributed"]') as HTMLElement;
}

function cells(p: HTMLElement, key: string): string[][] {
  const table = p.querySelector(`.nbp-dist-section[data-section="${key}"] table`) as HTMLTableElement;
  return Array.from(table.tBodies[0].rows).map(tr => Array.from(tr.cells).map(c => c.textContent ?? ''));
}

describe('distributed tab', () => {
  it('comes after Kernels when the payload has it, and not for a report without distributed data', () => {
    const view = render(DISTRIBUTED.three_ranks);
    expect(view.tabNames.indexOf('Distributed')).toBe(view.tabNames.indexOf('Kernels') + 1);
    expect(render(null).tabNames).not.toContain('Distributed');
    expect(render(undefined).tabNames).not.toContain('Distributed');
  });

  it("shows each rank's figures as Python wrote them, and marks the straggler with its reason", () => {
    const d = DISTRIBUTED.three_ranks;
    const p = panel(render(d));
    expect(p.hidden).toBe(false);
    expect(d.straggler).toEqual([1]);
    const verdict = p.querySelector('.nbp-dist-verdict')!;
    expect(verdict.textContent).toBe(d.verdict);
    expect(verdict.classList.contains('nbp-banner-warn')).toBe(true);
    expect(d.sections.map((s: any) => s.key)).toEqual(['split', 'waits', 'collectives']);
    for (const section of d.sections) {
      const table = p.querySelector(`.nbp-dist-section[data-section="${section.key}"] table`) as HTMLTableElement;
      expect(Array.from(table.tHead!.rows[0].cells).map(c => c.textContent)).toEqual(section.labels);
      const shown = cells(p, section.key);
      expect(shown.length).toBe(section.rows.length);
      section.units.forEach((unit: string, i: number) => {
        if (!['us', 'share', 'number'].includes(unit)) {
          expect(shown.map(r => r[i]), `${section.key}.${section.columns[i]}`).toEqual(section.text.map((r: string[]) => r[i]));
        }
      });
      const marked = Array.from(table.tBodies[0].rows).filter(tr => tr.classList.contains('nbp-straggler'));
      expect(marked.map(tr => tr.dataset.rank)).toEqual(marked.map(() => '1'));
      expect(marked.length).toBe(section.rows.filter((r: any[]) => r[0] === 1).length);
    }
    // One stacked bar per rank, each split into computation only, overlap, communication only and other.
    const chart = p.querySelector('.nbp-chart');
    expect(chart).not.toBeNull();
    expect(d.chart.panels[0].x).toEqual(['rank 0', 'rank 1', 'rank 2']);
  });

  it('says a single rank cannot be compared, and marks no row', () => {
    const d = DISTRIBUTED.one_rank;
    const p = panel(render(d));
    expect(p.querySelector('.nbp-dist-verdict')!.textContent).toBe(d.verdict);
    expect(p.querySelectorAll('.nbp-straggler').length).toBe(0);
    expect(cells(p, 'split').length).toBe(1);
  });

  it('shows hostile collective names and verdicts as text', () => {
    const d = JSON.parse(JSON.stringify(DISTRIBUTED.three_ranks));
    const coll = d.sections.find((s: any) => s.key === 'collectives');
    coll.rows[0][coll.columns.indexOf('collective')] = HOSTILE_IMG;
    d.verdict = HOSTILE_IMG;
    d.sections[0].title = HOSTILE_IMG;
    const p = panel(render(d));
    expect(p.querySelector('img')).toBeNull();
    expect(p.querySelector('.nbp-dist-verdict')!.textContent).toBe(HOSTILE_IMG);
    expect(cells(p, 'collectives')[0]).toContain(HOSTILE_IMG);
    expect(p.querySelector('.nbp-dist-section h4')!.textContent).toBe(HOSTILE_IMG);
  });

  it('drops malformed parts of the payload rather than fail', () => {
    expect(parseDistributed(null)).toBeNull();
    const d = parseDistributed({ straggler: ['x', 2], sections: [{ key: 'split', columns: ['rank'], rows: [[{ x: 1 }], 'junk'] }] })!;
    expect(d.straggler).toEqual([2]);
    expect(d.chart).toBeNull();
    expect(d.sections[0].rows).toEqual([[null]]);
  });
});
