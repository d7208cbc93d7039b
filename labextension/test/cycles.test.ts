import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { parseCycles } from '../src/report/cycles';
import { parseReport } from '../src/report/types';
import { ReportView } from '../src/report/view';

const HOSTILE_IMG = '<img src=x onerror=alert(1)>';

function fixture(name: string): any {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf-8'));
}

// Python's Cycles payload of a real 1,000-step run watched every 100 steps whose loading slows from
// batch 600, and of the same loop steady (fixtures/make_cycles_fixture.py), each cell also as Python writes it.
const CYCLES = fixture('cycles.json');

function render(cycles: unknown): ReportView {
  const view = new ReportView(parseReport({ ...fixture('report_cpu_live.json'), tabs: undefined, cycles }));
  document.body.appendChild(view.node);
  return view;
}

function panel(view: ReportView): HTMLElement {
  view.selectTab('Cycles');
  return view.node.querySelector('.nbp-panel[data-tab="Cycles"]') as HTMLElement;
}

describe('cycles tab', () => {
  it('comes after Operators when the payload has it, and not for a run without cycles', () => {
    const view = render(CYCLES.drifting);
    expect(view.tabNames.indexOf('Cycles')).toBe(view.tabNames.indexOf('Operators') + 1);
    expect(render(null).tabNames).not.toContain('Cycles');
    expect(render(undefined).tabNames).not.toContain('Cycles');
  });

  it("names the drift's cycle as a warning, marks where it began on the trend, and shows every cycle", () => {
    const c = CYCLES.drifting;
    const p = panel(render(c));
    expect(p.hidden).toBe(false);
    const verdict = p.querySelector('.nbp-cycles-verdict')!;
    expect(verdict.textContent).toBe(c.verdict);
    expect(verdict.textContent).toContain('From cycle 7 (step 600)');
    expect(verdict.classList.contains('nbp-banner-warn')).toBe(true);
    // the step time per cycle and the memory per cycle, each drawn
    expect(p.querySelectorAll('.nbp-chart').length).toBe(c.charts.length);
    expect(c.charts[0].panels[0].markers.map((m: any) => m.at)).toEqual([600]);
    expect(p.querySelector('.nbp-chartbox[data-chart="cycles"]')!.textContent).toContain(c.charts[0].panels[0].markers[0].label);
    const table = p.querySelector('.nbp-cycles-section[data-section="cycles"] table') as HTMLTableElement;
    const section = c.sections[0];
    expect(Array.from(table.tHead!.rows[0].cells).map(cell => cell.textContent)).toEqual(section.labels);
    const shown = Array.from(table.tBodies[0].rows).map(tr => Array.from(tr.cells).map(cell => cell.textContent ?? ''));
    expect(shown.length).toBe(10);
    section.units.forEach((unit: string, i: number) => {
      if (!['us', 'share', 'number'].includes(unit)) {
        expect(shown.map(r => r[i]), section.columns[i]).toEqual(section.text.map((r: string[]) => r[i]));
      }
    });
  });

  it('says a steady run was steady, as a plain line', () => {
    const c = CYCLES.steady;
    const verdict = panel(render(c)).querySelector('.nbp-cycles-verdict')!;
    expect(verdict.textContent).toBe(c.verdict);
    expect(verdict.textContent).toMatch(/^Steady over its 10 cycles/);
    expect(verdict.classList.contains('nbp-banner-warn')).toBe(false);
  });

  it('shows hostile operator names and verdicts as text', () => {
    const c = structuredClone(CYCLES.drifting);
    c.verdict = HOSTILE_IMG;
    const ops = c.sections[0].columns.indexOf('top_operators');
    c.sections[0].rows[0][ops] = HOSTILE_IMG;
    const p = panel(render(c));
    expect(p.querySelector('img')).toBeNull();
    expect(p.querySelector('.nbp-cycles-verdict')!.textContent).toBe(HOSTILE_IMG);
    expect(p.textContent).toContain(HOSTILE_IMG);
  });

  it('reads a payload missing its parts as empty, not as an error', () => {
    expect(parseCycles({ verdict: 3, charts: 'x', sections: [null] })).toEqual({ verdict: '', drifted: false, charts: [], sections: [] });
    expect(parseCycles('x')).toBeNull();
  });
});
