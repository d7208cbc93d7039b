import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { formatSi } from '../src/report/format';
import { parseHardware } from '../src/report/hardware';
import { parseReport } from '../src/report/types';
import { ReportView } from '../src/report/view';

const HOSTILE_IMG = '<img src=x onerror=alert(1)>';

function fixture(name: string): any {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf-8'));
}

// Python's Hardware payload of real traces (fixtures/make_hardware_fixture.py), each cell also as Python writes it.
const HARDWARE = fixture('hardware.json');

function render(hardware: unknown): ReportView {
  const view = new ReportView(parseReport({ ...fixture('report_a100_trace.json'), hardware }));
  document.body.appendChild(view.node);
  return view;
}

function panel(view: ReportView): HTMLElement {
  return view.node.querySelector('.nbp-panel[data-tab="Hardware"]') as HTMLElement;
}

describe('hardware tab', () => {
  it('comes after Kernels when the payload has it, and not in a report saved before it existed', () => {
    const view = render(HARDWARE.a100_train);
    expect(view.tabNames.indexOf('Hardware')).toBe(view.tabNames.indexOf('Kernels') + 1);
    expect(render(undefined).tabNames).not.toContain('Hardware');
  });

  it('shows the device, the launches and every table as Python wrote them', () => {
    const hw = HARDWARE.a100_train;
    const view = render(hw);
    view.selectTab('Hardware');
    const p = panel(view);
    expect(p.hidden).toBe(false);
    expect(p.querySelector('.nbp-device')!.textContent).toBe(`Device: ${hw.device}`);
    const launches = Array.from(p.querySelectorAll('.nbp-hw-launches td')).map(d => d.textContent);
    expect(launches).toEqual(hw.launch_facts.map((f: string[]) => f[1]));
    for (const section of hw.sections) {
      const table = p.querySelector(`.nbp-hw-section[data-section="${section.key}"] table`) as HTMLTableElement;
      expect(Array.from(table.tHead!.rows[0].cells).map(c => c.textContent)).toEqual(section.labels);
      const cells = Array.from(table.tBodies[0].rows).map(tr => Array.from(tr.cells).map(c => c.textContent));
      expect(cells.length).toBe(section.rows.length);
      // Durations, shares and plain numbers round as each side's own formatter does (formatUs vs fmt_us,
      // formatShare vs fmt_pct); counts, bytes, rates and text agree.
      section.units.forEach((unit: string, i: number) => {
        if (!['us', 'share', 'number'].includes(unit)) {
          expect(cells.map(r => r[i]), `${section.key}.${section.columns[i]}`).toEqual(section.text.map((r: string[]) => r[i]));
        }
      });
    }
    const copies = p.querySelector('.nbp-hw-section[data-section="copies"] tbody tr') as HTMLTableRowElement;
    expect(copies.cells[0].textContent).toBe(hw.sections.find((s: any) => s.key === 'copies').rows[0][0]);
  });

  it('says in one line that a CPU run has no device work, and nothing else', () => {
    const view = render(HARDWARE.cpu_only);
    const p = panel(view);
    expect(p.querySelector('.nbp-hw-absent')!.textContent).toBe(HARDWARE.cpu_only.absent);
    expect(p.querySelectorAll('table').length).toBe(0);
  });

  it('writes names from traces as text, and shows a section only with rows', () => {
    const hw = {
      ...HARDWARE.a100_train,
      sections: [
        { key: 'roofline', title: 'Roofline', how: '', columns: ['operator', 'achieved_flops_per_s'], labels: ['operator', 'achieved'],
          units: ['text', 'flops_per_s'], rows: [[HOSTILE_IMG, 3.5e12]] },
        { key: 'collectives', title: 'Collectives', how: '', columns: ['name'], labels: ['name'], units: ['text'], rows: [] }
      ]
    };
    const p = panel(render(hw));
    expect(p.querySelector('img')).toBeNull();
    expect(p.querySelector('.nbp-hw-roofline tbody')!.textContent).toBe(`${HOSTILE_IMG}3.5 TFLOP/s`);
    expect(p.querySelector('[data-section="collectives"]')).toBeNull();
  });

  it('refuses nothing it can read and drops what it cannot', () => {
    expect(parseHardware(null)).toBeNull();
    const hw = parseHardware({ sections: [{ key: 'copies', columns: ['bytes'], rows: [[{ x: 1 }], 'junk'] }] })!;
    expect(hw.sections[0].rows).toEqual([[null]]);
    expect(hw.sections[0].units).toEqual(['text']);
    expect(formatSi(1.2788e12, 'FLOP')).toBe('1.28 TFLOP');
    expect(formatSi(512, 'FLOP')).toBe('512 FLOP');
  });
});
