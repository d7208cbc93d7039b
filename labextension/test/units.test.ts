import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { byteAxisUnit, formatBytes } from '../src/report/format';
import { parseReport } from '../src/report/types';
import { ReportView } from '../src/report/view';

function fixture(name: string): any {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf-8'));
}

// Written by make_fixtures.py from Python's own formatter (nbprofiler/format.py):
// the strings the text report, the static HTML and the widget print for each figure.
const BYTES = fixture('bytes.json') as {
  fmt_bytes: [number | null, string][];
  byte_axis_unit: [number, string, number][];
};

// A byte figure labelled in decimal units (1.0 MB, 23.5 GB): the reports print binary ones.
const DECIMAL_UNIT = /[\d.]+ [kKMGT]B\b/g;

describe('byte units, as the Python renderers print them', () => {
  it('formats every figure of the shared table as fmt_bytes does', () => {
    expect(BYTES.fmt_bytes.length).toBeGreaterThan(50);
    const mismatches = BYTES.fmt_bytes
      .map(([value, text]) => [value, text, formatBytes(value)])
      .filter(([, text, ours]) => text !== ours);
    expect(mismatches).toEqual([]);
  });

  it('picks the byte axis unit as byte_axis_unit does', () => {
    for (const [max, label, scale] of BYTES.byte_axis_unit) {
      expect(byteAxisUnit(max)).toEqual({ label, scale });
    }
  });

  it('prints a figure of a recorded report as Python printed it in the same report', () => {
    // The suggestion's title and the growth warning were written by Python's fmt_bytes; the view
    // formats the device memory itself, in its device line.
    const raw = fixture('report_recorded_cpu.json');
    const leak = raw.suggestions.find((s: any) => s.kind === 'memory_growth');
    const slope = formatBytes(leak.evidence.slope_bytes_per_step);
    const memory = formatBytes(raw.device.total_memory_bytes);
    expect(leak.title).toContain(`Memory grows ${slope} per step`);
    const text = new ReportView(parseReport(raw)).node.textContent ?? '';
    expect(text).toContain(`about ${slope} per step`);
    expect(text).toContain(`${memory} memory`);
  });

  it('labels no byte figure of a drawn report in decimal units', () => {
    for (const name of ['report_v100_trace.json', 'report_cpu_live.json', 'report_recorded_cpu.json']) {
      const view = new ReportView(parseReport(fixture(name)));
      const text = view.node.textContent ?? '';
      expect(text).toMatch(/\d(\.\d)? (KiB|MiB|GiB)\b/);
      expect(text.match(DECIMAL_UNIT) ?? [], name).toEqual([]);
    }
  });
});
