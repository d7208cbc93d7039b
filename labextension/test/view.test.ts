import { readdirSync, readFileSync } from 'fs';
import { join } from 'path';
import { beforeEach, describe, expect, it, vi } from 'vitest';

import { formatBytes, formatShare, formatUs, niceTicks } from '../src/report/format';
import { parseReport, ReportFormatError } from '../src/report/types';
import { filterRows, growthWarning, ReportView, sortRows, TAB_NAMES } from '../src/report/view';

const HOSTILE_IMG = '<img src=x onerror=alert(1)>';
const HOSTILE_SCRIPT = '</script><script>alert("nbp")</script>';

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', name), 'utf-8'));
}

// Two composed from real trace data (make_fixtures.py), one recorded from nbprofiler itself.
const FIXTURES = ['report_v100_trace.json', 'report_cpu_live.json', 'report_recorded_cpu.json'];
const HOSTILE_SCRIPT_SINGLE = "</script><script>alert('nbp')</script>";

function render(name: string, copy?: (t: string) => Promise<void>): ReportView {
  const view = new ReportView(parseReport(fixture(name)), { copy, footer: 'footer text' });
  document.body.appendChild(view.node);
  return view;
}

function panel(view: ReportView, tab: string): HTMLElement {
  return view.node.querySelector(`.nbp-panel[data-tab="${tab}"]`) as HTMLElement;
}

function operatorNames(view: ReportView): string[] {
  return Array.from(view.node.querySelectorAll('.nbp-operator-table tbody tr')).map(
    tr => (tr.firstElementChild as HTMLElement).textContent ?? ''
  );
}

function columnTexts(view: ReportView, column: string): string[] {
  const table = view.node.querySelector('.nbp-operator-table') as HTMLTableElement;
  const index = Array.from(table.tHead!.rows[0].cells).findIndex(th => th.dataset.column === column);
  return Array.from(table.tBodies[0].rows).map(tr => tr.cells[index].textContent ?? '');
}

function header(view: ReportView, column: string): HTMLElement {
  return view.node.querySelector(`.nbp-operator-table th[data-column="${column}"]`) as HTMLElement;
}

beforeEach(() => {
  document.body.textContent = '';
});

describe('parseReport', () => {
  it('accepts the recorded payloads', () => {
    for (const name of FIXTURES) {
      const r = parseReport(fixture(name));
      expect(r.schema).toBe('nbprofiler.report/1');
      expect(r.operators.columns.slice(0, 2)).toEqual(['name', 'calls']);
      expect(r.operators.rows.length).toBeGreaterThan(5);
    }
  });

  it('refuses other schemas and non-objects', () => {
    expect(() => parseReport(null)).toThrow(ReportFormatError);
    expect(() => parseReport({ schema: 'something/1' })).toThrow(/unknown report schema/);
    expect(() => parseReport({ schema: 'nbprofiler.report/2' })).toThrow(/newer/);
    expect(() => parseReport({ schema: 'nbprofiler.report/1', operators: { columns: ['a'], rows: [7] } })).toThrow(/row 0/);
  });

  it('fills what a minimal payload leaves out', () => {
    const r = parseReport({ schema: 'nbprofiler.report/1' });
    expect(r.title).toBe('Profile');
    expect(r.device.kind).toBe('cpu');
    expect(r.operators.rows).toEqual([]);
    expect(r.summary.steps_profiled).toBe(0);
    const view = new ReportView(r);
    // No kernels: no Kernels tab; no hardware, distributed, cycles or flame data (a report saved before they existed): none of those.
    expect(view.tabNames).toEqual(TAB_NAMES.filter(name => !['Kernels', 'Hardware', 'Distributed', 'Cycles', 'Flame graph'].includes(name)));
    expect(view.node.textContent).toContain('No operators were recorded.');
    expect(r.memory).toEqual({ steps: { columns: [], rows: [] }, growth: [], warnings: [], device: null, figures: [] });
    expect(panel(view, 'Memory').textContent).toContain('This report has no memory data');
  });

  it('pads short rows, drops extra cells and stringifies nested values', () => {
    const r = parseReport({
      schema: 'nbprofiler.report/1',
      operators: { columns: ['name', 'calls', 'input_shapes'], rows: [['a'], ['b', 2, [[1, 2]], 'extra']] }
    });
    expect(r.operators.rows).toEqual([
      ['a', null, null],
      ['b', 2, '[[1,2]]']
    ]);
  });
});

describe('the tabs', () => {
  it('shows only the tabs the payload names, in order, and its one line of the flags that would add others', () => {
    const raw = fixture('report_cpu_live.json') as any;
    const tabs = ['Overview', 'Operators', 'Timeline', 'Suggestions', 'Export'];
    const more = 'More views: re-run the cell without --no-memory for Memory (memory at every step and the operators that allocated it); with --stack for Cell lines (the time per line of this cell).';
    const view = new ReportView(parseReport({ ...raw, tabs: [...tabs, 'A view of a newer nbprofiler'], more_views: more }));
    document.body.appendChild(view.node);
    // Python decided which tabs have content; the view does not decide again (the payload has lines and memory).
    expect(raw.lines.rows.length).toBeGreaterThan(0);
    expect(view.tabNames).toEqual(tabs);
    expect(view.node.querySelectorAll('.nbp-panel').length).toBe(tabs.length);
    expect(panel(view, 'Overview').querySelector('.nbp-more-views')!.textContent).toBe(more);
    expect(view.node.querySelectorAll('.nbp-more-views').length).toBe(1);
    // Without a Memory tab, the per-step table moves to the Overview.
    const steps = panel(view, 'Overview').querySelector('.nbp-steps-table') as HTMLTableElement;
    expect(steps.tBodies[0].rows.length).toBe(raw.steps.rows.length);
  });

  it('keeps the per-step table in the Memory tab when there is one', () => {
    const raw = fixture('report_cpu_live.json') as any;
    const view = new ReportView(parseReport({ ...raw, tabs: ['Overview', 'Memory'] }));
    expect(panel(view, 'Overview').querySelector('.nbp-steps-table')).toBeNull();
    expect(panel(view, 'Memory').querySelector('.nbp-steps-table')).not.toBeNull();
  });

  it('keeps every tab it drew before for a payload saved before Python named the tabs, with no "More views" line', () => {
    const view = render('report_cpu_live.json');
    // Nor the Flame graph, Distributed or Cycles: a payload saved before they existed has no flame, distributed or cycles data.
    expect(view.tabNames).toEqual(TAB_NAMES.filter(name => !['Kernels', 'Hardware', 'Distributed', 'Cycles', 'Flame graph'].includes(name)));
    expect(view.node.querySelector('.nbp-more-views')).toBeNull();
  });
});

describe('escaping of untrusted names', () => {
  for (const name of FIXTURES) {
    it(`shows hostile names as text (${name})`, () => {
      const view = render(name);
      // Every tab is built up front (hidden ones too): check the whole tree.
      for (const tab of TAB_NAMES) {
        view.selectTab(tab);
      }
      const root = view.node;
      expect(root.querySelector('img')).toBeNull();
      expect(root.querySelector('script')).toBeNull();
      for (const el of Array.from(root.querySelectorAll('*'))) {
        for (const attr of Array.from(el.attributes)) {
          // Values are set with setAttribute, so markup in them stays text; what
          // matters is that no attribute can run or load anything.
          expect(attr.name.startsWith('on')).toBe(false);
          expect(['src', 'href', 'srcdoc', 'xlink:href', 'action', 'formaction']).not.toContain(attr.name);
          if (attr.name === 'style') {
            // Sizes and colours the code computes; nothing that loads or runs.
            expect(attr.value).not.toMatch(/url\(|expression|javascript:|@import/i);
          }
        }
      }
      const text = root.textContent ?? '';
      const html = root.innerHTML;
      if (name === 'report_recorded_cpu.json') {
        // Names recorded by torch.profiler from record_function(...).
        expect(operatorNames(view)).toContain(HOSTILE_IMG);
        expect(operatorNames(view)).toContain(HOSTILE_SCRIPT_SINGLE);
        expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
        expect(html).toContain('&lt;/script&gt;&lt;script&gt;');
        return;
      }
      if (name === 'report_v100_trace.json') {
        expect(operatorNames(view)).toContain(HOSTILE_IMG);
        expect(operatorNames(view)).toContain(HOSTILE_SCRIPT);
        expect(text).toContain(`Hostile title ${HOSTILE_SCRIPT}`);
        expect(text).toContain(`key ${HOSTILE_IMG}`.replace(/_/g, ' '));
      } else {
        expect(text).toContain(`Profile of cell [7] ${HOSTILE_IMG}`);
        expect(text).toContain(`CPU ${HOSTILE_SCRIPT}`);
        // The memory device label, in the growth warning and the chart's heading and SVG title.
        expect(root.querySelector('.nbp-growth')!.textContent).toContain(`Process RSS on cpu ${HOSTILE_IMG} grows`);
        expect(Array.from(root.querySelectorAll('.nbp-memory-plot h4')).map(e => e.textContent)).toContain(
          `Tensor memory on cpu ${HOSTILE_IMG} in the profiled steps`
        );
        // A breakdown category with a hostile name ends up in the legend and in SVG <title>s.
        const titles = Array.from(root.querySelectorAll('svg title')).map(t => t.textContent);
        expect(titles.some(t => t?.includes(HOSTILE_IMG))).toBe(true);
      }
      expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(html).toContain('&lt;/script&gt;&lt;script&gt;');
    });
  }

  it('never builds DOM from HTML strings in the extension source', () => {
    const dir = join(__dirname, '..', 'src');
    const files = (readdirSync(dir, { recursive: true }) as string[]).filter(f => f.endsWith('.ts'));
    expect(files).toContain(join('report', 'view.ts'));
    for (const f of files) {
      const src = readFileSync(join(dir, f), 'utf-8');
      expect(src, f).not.toMatch(/\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|createContextualFragment/);
    }
  });

  it('refuses event handler attributes in the DOM builder', async () => {
    const { h } = await import('../src/report/dom');
    expect(() => h('div', { onclick: 'alert(1)' })).toThrow(/event handler/);
  });
});

describe('report view', () => {
  it('has every tab of the explorer, with one panel shown at a time', () => {
    const view = render('report_v100_trace.json');
    const tabs = Array.from(view.node.querySelectorAll('[role="tab"]')).map(t => (t as HTMLElement).dataset.tab);
    expect(tabs).toEqual(['Overview', 'Operators', 'Kernels', 'Memory', 'Cell lines', 'Modules', 'Timeline', 'Suggestions', 'Export']);
    expect(panel(view, 'Overview').hidden).toBe(false);
    expect(panel(view, 'Operators').hidden).toBe(true);
    (view.node.querySelector('[role="tab"][data-tab="Suggestions"]') as HTMLElement).click();
    expect(view.currentTab).toBe('Suggestions');
    expect(panel(view, 'Suggestions').hidden).toBe(false);
    expect(panel(view, 'Overview').hidden).toBe(true);
    const tab = view.node.querySelector('[role="tab"][data-tab="Suggestions"]') as HTMLElement;
    expect(tab.getAttribute('aria-selected')).toBe('true');
    tab.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
    expect(view.currentTab).toBe('Export');
    (view.node.querySelector('[role="tab"][data-tab="Export"]') as HTMLElement).dispatchEvent(
      new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true })
    );
    expect(view.currentTab).toBe('Overview');
  });

  it('draws the overview: headline numbers, one stacked bar per step, legend and top suggestions', () => {
    const view = render('report_v100_trace.json');
    const overview = panel(view, 'Overview');
    const metrics = Array.from(overview.querySelectorAll('.nbp-metric')).map(m => m.textContent);
    expect(metrics).toContain('175 msaverage step');
    expect(metrics).toContain('49%GPU utilization');
    const bars = overview.querySelectorAll('svg .nbp-bar');
    expect(bars.length).toBe(6);
    expect(bars[0].querySelectorAll('rect').length).toBe(7);
    expect(overview.querySelector('svg title')!.textContent).toBe('Step time by device activity');
    const axis = Array.from(overview.querySelectorAll('svg .nbp-axis-title')).map(t => t.textContent);
    expect(axis).toEqual(['time per step (ms)', 'profiled step']);
    const legend = Array.from(overview.querySelectorAll('.nbp-legend li')).map(li => li.textContent);
    expect(legend[0]).toMatch(/^Kernel.*\/ step · \d+%$/);
    expect(overview.querySelectorAll('.nbp-top-suggestions li').length).toBe(3);
    expect(overview.querySelector('.nbp-device')!.textContent).toBe(
      'Device: Tesla V100-DGXS-32GB (cuda) · 31.7 GiB memory · compute capability 7.0 · 80 SMs'
    );
  });

  it('shows MFU with what it is over, only where the report has it', () => {
    const raw = fixture('report_v100_trace.json') as any;
    const metricTexts = (r: unknown) =>
      Array.from(panel(new ReportView(parseReport(r), {}), 'Overview').querySelectorAll('.nbp-metric')).map(m => m.textContent);
    expect(metricTexts(raw).some(t => t!.includes('MFU'))).toBe(false);
    raw.summary.mfu = 0.279;
    raw.summary.mfu_detail = '4.38 TFLOP/s of the fp32 peak';
    expect(metricTexts(raw)).toContain('28%MFU4.38 TFLOP/s of the fp32 peak');
  });

  it('marks a partial report and shows the footer', () => {
    const view = render('report_cpu_live.json');
    expect(view.node.querySelector('.nbp-banner')!.textContent).toMatch(/^Partial report/);
    expect(view.node.querySelector('.nbp-footer')!.textContent).toBe('footer text');
    const samples = Array.from(panel(view, 'Overview').querySelectorAll('.nbp-metric')).find(m => m.textContent!.includes('samples / s'))!;
    expect(samples.querySelector('.nbp-metric-sub')!.textContent).toBe('batch size 64');
    // CPU: no GPU utilization card.
    expect(panel(view, 'Overview').textContent).not.toContain('GPU utilization');
    expect(panel(view, 'Overview').querySelector('svg title')!.textContent).toBe('Step time by phase');
  });
});

describe('operator table', () => {
  it('sorts by a clicked header, descending first for numbers, and toggles', () => {
    const view = render('report_v100_trace.json');
    const before = operatorNames(view);
    const th = header(view, 'host_self_us');
    (th.querySelector('button') as HTMLElement).click();
    expect(th.getAttribute('aria-sort')).toBe('descending');
    const after = operatorNames(view);
    expect(after).not.toEqual(before);
    const r = parseReport(fixture('report_v100_trace.json'));
    const idx = r.operators.columns.indexOf('host_self_us');
    const expected = [...r.operators.rows].sort((a, b) => (b[idx] as number) - (a[idx] as number)).slice(0, 50).map(x => x[0]);
    expect(after).toEqual(expected);
    (th.querySelector('button') as HTMLElement).click();
    expect(th.getAttribute('aria-sort')).toBe('ascending');
    const all = [...r.operators.rows].sort((a, b) => (a[idx] as number) - (b[idx] as number));
    expect(operatorNames(view)).toEqual(all.slice(0, 50).map(x => x[0]));
    expect(columnTexts(view, 'host_self_us')[0]).toBe(formatUs(all[0][idx] as number));
    expect(header(view, 'calls').getAttribute('aria-sort')).toBe('none');
  });

  it('sorts names alphabetically, ascending first', () => {
    const view = render('report_cpu_live.json');
    (header(view, 'name').querySelector('button') as HTMLElement).click();
    const names = operatorNames(view);
    expect(names[0]).toBe(HOSTILE_SCRIPT);
    expect(names).toEqual([...names].sort((a, b) => a.localeCompare(b, 'en', { numeric: true, sensitivity: 'base' })));
  });

  it('filters by name and limits the rows shown', () => {
    const view = render('report_v100_trace.json');
    const input = view.node.querySelector('.nbp-filter') as HTMLInputElement;
    input.value = 'CONV';
    input.dispatchEvent(new Event('input'));
    const names = operatorNames(view);
    expect(names.length).toBeGreaterThan(3);
    expect(names.every(n => n.toLowerCase().includes('conv'))).toBe(true);
    expect(view.node.querySelector('.nbp-count')!.textContent).toMatch(/matching \(81 in all\)$/);
    input.value = '';
    input.dispatchEvent(new Event('input'));
    expect(operatorNames(view).length).toBe(50);
    const select = view.node.querySelector('.nbp-limit-select') as HTMLSelectElement;
    select.value = '25';
    select.dispatchEvent(new Event('change'));
    expect(operatorNames(view).length).toBe(25);
    select.value = '0';
    select.dispatchEvent(new Event('change'));
    expect(operatorNames(view).length).toBe(81);
    expect(view.node.querySelector('.nbp-count')!.textContent).toBe('81 of 81 operators');
  });

  it('says when the payload kept only the most expensive operators of the run', () => {
    const view = render('report_cpu_live.json');
    const note = panel(view, 'Operators').querySelector('.nbp-truncated')!;
    expect(note.textContent).toBe('The saved report keeps the 10 most expensive of the run’s 1,234 operators; sorting and filtering apply to those.');
    // A payload that holds every operator (or predates "total") says nothing.
    expect(panel(render('report_v100_trace.json'), 'Operators').querySelector('.nbp-truncated')).toBeNull();
    expect(parseReport({ schema: 'nbprofiler.report/1', operators: { columns: ['name'], rows: [['a'], ['b']] } }).operatorsTotal).toBe(2);
  });

  it('formats times in readable units and shows missing values as a dash', () => {
    const view = render('report_cpu_live.json');
    const table = view.node.querySelector('.nbp-operator-table') as HTMLTableElement;
    const first = Array.from(table.tBodies[0].rows[0].cells).map(c => c.textContent);
    // A CPU run: no device-time columns of "0 µs".
    expect(first).toEqual(['aten::addmm', '150', '61.2 ms', '63.0 ms']);
    const sparse = new ReportView(
      parseReport({ schema: 'nbprofiler.report/1', operators: { columns: ['name', 'calls', 'host_self_us'], rows: [['aten::mm', 3, null]] } })
    );
    const cells = Array.from(sparse.node.querySelectorAll('.nbp-operator-table tbody td')).map(c => c.textContent);
    expect(cells).toEqual(['aten::mm', '3', '–']);
  });

  it('keeps missing values last in both directions', () => {
    const rows = [['a', 1], ['b', null], ['c', 3]];
    expect(sortRows(rows, 1, 'descending').map(r => r[0])).toEqual(['c', 'a', 'b']);
    expect(sortRows(rows, 1, 'ascending').map(r => r[0])).toEqual(['a', 'c', 'b']);
    expect(filterRows(rows, 0, ' B ')).toEqual([['b', null]]);
  });
});

describe('recorded payload', () => {
  it('shows what nbprofiler emits for a CPU run', () => {
    const raw = fixture('report_recorded_cpu.json') as any;
    const view = render('report_recorded_cpu.json');
    const overview = panel(view, 'Overview');
    expect(view.node.querySelector('.nbp-title')!.textContent).toBe(raw.title);
    const legend = Array.from(overview.querySelectorAll('.nbp-legend-name')).map(n => n.textContent);
    // The parts with time in some step (Python's chart spec): the DataLoader took none.
    expect(legend).toEqual(['Forward', 'Backward', 'Optimizer', 'Other']);
    expect(overview.querySelectorAll('svg .nbp-bar').length).toBe(raw.breakdown.rows.length);
    // The sampler's line spans all the steps the cell ran, with the phases shaded.
    const mem = panel(view, 'Memory');
    const [memory] = Array.from(mem.querySelectorAll('svg'));
    expect(memory.querySelectorAll('.nbp-line[data-series="RSS at step end"] circle').length).toBe(raw.steps.rows.length);
    expect(memory.querySelectorAll('.nbp-phase-active').length).toBe(2);
    // The trace's tensor memory in the profiled steps: the 1 MiB kept at every step.
    // CPU levels count from the start of recording (torch's CPU counter is no absolute level): the title says so.
    expect(Array.from(memory.querySelectorAll('.nbp-panel-title')).map(t => t.textContent)).toContain(
      'cpu: tensor memory, profiled steps, counted from the start of recording'
    );
    expect(mem.querySelector('.nbp-memory-figures')!.textContent).toBe(`Memory on cpu: ${raw.memory.figures.join(', ')}`);
    expect(raw.memory.figures[0]).toMatch(/^largest rise within a step after the first profiled one, over its starting level \(traced\) /);
    expect(memory.querySelectorAll('.nbp-line[data-series="allocated at step end"] circle').length).toBe(raw.memory.steps.rows.length);
    // Python flagged it, and the warning is Python's own sentence, with the slope.
    const warnings = Array.from(mem.querySelectorAll('.nbp-growth')).map(w => w.textContent);
    expect(warnings).toEqual(raw.memory.warnings);
    expect(warnings[0]).toMatch(/^Memory grows: allocated bytes \(trace\) on cpu: 1\.0 MiB → 5\.0 MiB since recording began over 5 profiled steps, about 1\.0 MiB per step/);
    // A report saved before Python sent its sentences still warns, from the flagged series.
    const older = parseReport({ ...raw, memory: { ...raw.memory, warnings: undefined } });
    expect(older.memory.warnings).toEqual([]);
    const olderView = new ReportView(older);
    expect(Array.from(olderView.node.querySelectorAll('.nbp-growth')).map(w => w.textContent)).toEqual([
      growthWarning(older.memory.growth[0])
    ]);
    const cards = Array.from(panel(view, 'Suggestions').querySelectorAll('.nbp-card'));
    expect(cards.map(c => c.getAttribute('data-kind'))).toEqual(raw.suggestions.map((x: any) => x.kind));
    expect(cards[0].querySelector('.nbp-detail')!.textContent).toBe(raw.suggestions[0].detail);
    // The evidence is Python's facts, in words with units, one item each: no raw keys.
    const facts = Array.from(cards[0].querySelectorAll('.nbp-facts li')).map(li => li.textContent);
    expect(facts).toEqual(raw.suggestions[0].facts);
    expect(facts.length).toBeGreaterThan(0);
    expect(cards[0].querySelector('.nbp-evidence')).toBeNull();
    // A Copy button exactly where the suggestion has code.
    expect(cards.map(c => c.querySelector('.nbp-copy') !== null)).toEqual(raw.suggestions.map((x: any) => !!x.code));
  });
});

describe('memory tab', () => {
  it('plots memory over the steps with the phases shaded and warns on growth', () => {
    const view = render('report_cpu_live.json');
    const mem = panel(view, 'Memory');
    const svg = mem.querySelector('svg')!;
    expect(svg.querySelector('title')!.textContent).toBe('Process memory over the steps');
    const phases = Array.from(svg.querySelectorAll('.nbp-phase')).map(r => r.getAttribute('class'));
    expect(phases).toEqual([
      'nbp-phase nbp-phase-wait',
      'nbp-phase nbp-phase-warmup',
      'nbp-phase nbp-phase-active',
      'nbp-phase nbp-phase-wait',
      'nbp-phase nbp-phase-warmup',
      'nbp-phase nbp-phase-active'
    ]);
    const line = svg.querySelector('.nbp-line[data-series="Process RSS"] path')!;
    expect(line.getAttribute('d')!.split('L').length).toBe(10);
    expect(svg.querySelectorAll('.nbp-line circle').length).toBe(10);
    expect(Array.from(svg.querySelectorAll('.nbp-axis-title')).map(t => t.textContent)).toEqual(['memory (MiB)', 'step']);
    // 612–802 MiB: the axis starts near the data, not at 0, so the growth shows.
    const ticks = Array.from(svg.querySelectorAll('.nbp-axis > text:not(.nbp-axis-title):not(.nbp-tick)')).map(t => Number(t.textContent));
    expect(ticks[0]).toBeGreaterThan(400);
    expect(ticks[0]).toBeLessThanOrEqual(612);
    expect(ticks[ticks.length - 1]).toBeGreaterThanOrEqual(802);
    expect(mem.querySelectorAll('.nbp-growth').length).toBe(1);
    expect(mem.querySelector('.nbp-growth')!.textContent).toMatch(/grows by about 38(\.0)? MiB per step \(650 MiB → 802 MiB over 5 steps, every step the cell ran\)/);
    expect(mem.querySelectorAll('.nbp-steps-table tbody tr').length).toBe(10);
  });

  it('draws a trace file’s memory per device from the payload', () => {
    const raw = fixture('report_v100_trace.json') as any;
    const view = render('report_v100_trace.json');
    const mem = panel(view, 'Memory');
    const titles = Array.from(mem.querySelectorAll('svg > title')).map(t => t.textContent);
    // Python's charts of the device the memory views describe: per step, and through the profiled steps.
    expect(titles).toEqual(['Memory on cuda:0', 'cuda:0: memory during the profiled steps']);
    const cuda = mem.querySelector('.nbp-chartbox')!;
    // One point per profiled step; no reserved line (the trace has no reserved figures).
    expect(Array.from(cuda.querySelectorAll('.nbp-legend-name')).map(n => n.textContent)).toEqual(['allocated at step end', 'peak in step']);
    expect(cuda.querySelectorAll('.nbp-line[data-series="peak in step"] circle').length).toBe(6);
    expect(cuda.querySelector('.nbp-legend-extra')!.textContent).toBe('max 0 B');
    expect(cuda.querySelectorAll('.nbp-legend-extra')[1].textContent).toBe('max 2.6 GiB');
    expect(mem.textContent).not.toContain('no memory data');
    // The memory is steady: Python flagged nothing, so no warning.
    expect(raw.memory.growth).toEqual([]);
    expect(mem.querySelector('.nbp-growth')).toBeNull();
    expect(mem.querySelectorAll('.nbp-steps-table tbody tr').length).toBe(6);
  });

  it('warns exactly when Python flagged growth, never by a rule of its own', () => {
    const rising = { columns: ['step', 'phase', 'rss_bytes'], rows: [0, 1, 2, 3, 4, 5].map(i => [i, 'wait', (600 + 50 * i) * 2 ** 20]) };
    const quiet = new ReportView(parseReport({ schema: 'nbprofiler.report/1', steps: rising }));
    expect(quiet.node.querySelector('.nbp-growth')).toBeNull();
    const growth = { device: 'cuda:0', source: 'trace', measure: 'allocated', steps: 4, first_bytes: 2 ** 30, last_bytes: 1.5 * 2 ** 30, slope_bytes_per_step: 128 * 2 ** 20 };
    // Flagged without any per-step table (an older or trimmed payload): still shown.
    const flagged = new ReportView(parseReport({ schema: 'nbprofiler.report/1', memory: { growth: [growth, 'junk'] } }));
    expect(Array.from(flagged.node.querySelectorAll('.nbp-growth')).map(w => w.textContent)).toEqual([
      'Allocated memory on cuda:0 grows by about 128 MiB per step (1.0 GiB → 1.5 GiB over 4 steps, the profiled steps). ' +
        'Something keeps tensors alive from one step to the next. The usual cause is a loss or an output kept with its graph ' +
        '(computed with autograd on and never backpropagated): keep loss.item() or loss.detach() instead.'
    ]);
  });

  it('zooms the memory axis only when the lines sit high above zero', async () => {
    const { byteTicks } = await import('../src/report/charts');
    expect(byteTicks(10, 800)).toEqual({ ticks: [0, 200, 400, 600, 800], start: 0 });
    const z = byteTicks(612, 802);
    expect(z.start).toBeGreaterThan(0);
    expect(z.start).toBeLessThanOrEqual(612);
    expect(z.ticks[z.ticks.length - 1]).toBeGreaterThanOrEqual(802);
    expect(byteTicks(500, 500).ticks.length).toBeGreaterThanOrEqual(2);
  });
});

describe('suggestions', () => {
  it('shows a card per suggestion with evidence, gain and a copy button for the code', async () => {
    const copied: string[] = [];
    const copy = vi.fn(async (t: string) => {
      copied.push(t);
    });
    const view = render('report_v100_trace.json', copy);
    const cards = panel(view, 'Suggestions').querySelectorAll('.nbp-card');
    expect(cards.length).toBe(3);
    expect(cards[0].querySelector('.nbp-severity')!.textContent).toBe('high');
    expect(cards[0].querySelector('.nbp-evidence')!.textContent).toContain('num workers0');
    expect(cards[0].textContent).toContain('Expected gain: up to 40% shorter steps (about 1.66x samples/s)');
    expect(cards[0].querySelector('.nbp-detail')).toBeNull();
    const button = cards[0].querySelector('.nbp-copy') as HTMLButtonElement;
    button.click();
    await Promise.resolve();
    await Promise.resolve();
    expect(copy).toHaveBeenCalledTimes(1);
    const r = parseReport(fixture('report_v100_trace.json'));
    expect(copied[0]).toBe(r.suggestions[0].code);
    expect(button.textContent).toBe('Copied');
    // The hostile code is copied verbatim (it is text, not markup).
    (cards[2].querySelector('.nbp-copy') as HTMLButtonElement).click();
    await Promise.resolve();
    expect(copied[1]).toBe(`print('${HOSTILE_SCRIPT}')  # ${HOSTILE_IMG}`);
    expect(cards[2].querySelector('pre')!.textContent).toBe(copied[1]);
  });

  it('offers no Try it on a guidance card, whose code is only comments', () => {
    const raw = fixture('report_cpu_live.json') as any;
    const words = '# no DataLoader was seen: give each step 4× as many samples';
    raw.suggestions = [
      { ...raw.suggestions[0], kind: 'batch_size', code: words, guidance: true },
      { ...raw.suggestions[0], kind: 'dataloader', code: 'loader = DataLoader(ds, num_workers=1)', guidance: false }
    ];
    const view = new ReportView(parseReport(raw), { footer: 'footer text' });
    document.body.appendChild(view.node);
    const [guidance, change] = Array.from(panel(view, 'Suggestions').querySelectorAll('.nbp-card'));
    expect(guidance.querySelector('.nbp-try')).toBeNull();
    expect(guidance.querySelector('.nbp-try-line')).toBeNull();
    expect(guidance.querySelector('.nbp-guidance')!.textContent).toContain('no code to paste or try');
    expect(guidance.querySelector('pre')!.textContent).toBe(words);
    expect(change.querySelector('.nbp-try')!.textContent).toBe('Try it');
    expect(change.querySelector('.nbp-guidance')).toBeNull();
  });

  it('reports a failed copy on the button', async () => {
    const view = render('report_cpu_live.json', () => Promise.reject(new Error('denied')));
    const button = panel(view, 'Suggestions').querySelector('.nbp-copy') as HTMLButtonElement;
    button.click();
    await new Promise(r => setTimeout(r, 0));
    expect(button.textContent).toBe('Copy failed: select the code');
  });
});

describe('formatting', () => {
  it('picks readable units', () => {
    expect(formatUs(0)).toBe('0 µs');
    expect(formatUs(3.25)).toBe('3.3 µs');
    expect(formatUs(999)).toBe('999 µs');
    expect(formatUs(1500)).toBe('1.50 ms');
    expect(formatUs(174780)).toBe('174.8 ms'.replace('174.8', '175'));
    expect(formatUs(2.5e6)).toBe('2.50 s');
    expect(formatUs(null)).toBe('–');
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(34084028416)).toBe('31.7 GiB');
    expect(formatShare(0.487)).toBe('49%');
    expect(formatShare(0.0123)).toBe('1.2%');
    expect(niceTicks(174.8)).toEqual([0, 50, 100, 150, 200]);
    expect(niceTicks(0)).toEqual([0, 1]);
  });
});

// -- the views the explorer has: Kernels, Cell lines, Modules, Timeline, Export ----------------

/** A 2d context that records nothing: jsdom has no canvas, and the timeline draws on one. */
function stubCanvas(): void {
  HTMLCanvasElement.prototype.getContext = function () {
    return new Proxy({} as { [k: string]: unknown }, {
      get: (target, prop: string) => (prop in target ? target[prop] : () => ({ width: 10 })),
      set: (target, prop: string, value) => {
        target[prop] = value;
        return true;
      }
    });
  } as unknown as typeof HTMLCanvasElement.prototype.getContext;
}

function readBlob(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsText(blob);
  });
}

function headers(table: Element): string[] {
  return Array.from(table.querySelectorAll('thead th')).map(th => th.textContent ?? '');
}

describe('kernels tab', () => {
  /** The A100 fixture as a payload with short names (as nbprofiler.analysis.kernel_names makes them). */
  function withShortNames(): any {
    const raw = JSON.parse(JSON.stringify(fixture('report_a100_trace.json')));
    const k = raw.kernels;
    const at = k.columns.indexOf('name');
    k.columns.splice(at + 1, 0, 'short_name');
    for (const row of k.rows) {
      row.splice(at + 1, 0, `${String(row[at]).slice(0, 12)}<…>(…)`);
    }
    return raw;
  }

  it('shows each kernel on one line by its short name, the whole name on hover and in a copy', async () => {
    const raw = withShortNames();
    const copied: string[] = [];
    const view = new ReportView(parseReport(raw), { copy: async t => void copied.push(t), footer: 'f' });
    document.body.appendChild(view.node);
    const table = panel(view, 'Kernels').querySelector('.nbp-kernel-table') as HTMLTableElement;
    expect(headers(table)[0]).toBe('Kernel');
    expect(headers(table)).not.toContain('Name');
    const col = (name: string) => raw.kernels.columns.indexOf(name);
    const rows = Array.from(table.tBodies[0].rows);
    rows.forEach((tr, i) => {
      expect(tr.cells[0].textContent).toBe(raw.kernels.rows[i][col('short_name')]);
      expect(tr.cells[0].title).toBe(raw.kernels.rows[i][col('name')]);
      // One line: no cell of the table wraps its text.
      expect(Array.from(tr.cells).some(td => td.classList.contains('nbp-wrap'))).toBe(false);
    });
    // Filtering searches the whole name, not only what the cell shows.
    const whole = raw.kernels.rows[0][col('name')] as string;
    view.kernels!.filterBy(whole.slice(-8));
    expect(table.tBodies[0].rows.length).toBeGreaterThan(0);
    view.kernels!.filterBy('');
    table.tBodies[0].rows[0].click();
    const details = panel(view, 'Kernels').querySelector('.nbp-row-details') as HTMLElement;
    expect(details.querySelector('.nbp-details-title')!.textContent).toBe(whole);
    (details.querySelector('.nbp-copy') as HTMLButtonElement).click();
    await new Promise(r => setTimeout(r, 0));
    expect(copied).toEqual([whole]);
    view.node.remove();
  });

  it('is an ARIA grid whose sorted header says the order the rows are in', () => {
    const view = render('report_a100_trace.json');
    const table = panel(view, 'Kernels').querySelector('.nbp-kernel-table') as HTMLTableElement;
    expect(table.getAttribute('role')).toBe('grid');
    expect(table.getAttribute('aria-label')).toBe('kernels');
    expect(Array.from(table.tHead!.rows[0].cells).every(th => th.getAttribute('role') === 'columnheader')).toBe(true);
    expect(Array.from(table.tBodies[0].rows[0].cells).every(td => td.getAttribute('role') === 'gridcell')).toBe(true);
    const calls = () => Array.from(table.tBodies[0].rows).map(tr => Number(tr.cells[2].textContent!.replace(/,/g, '')));
    const th = () => table.tHead!.rows[0].cells[2];
    view.kernels!.sortBy('calls');
    expect(th().getAttribute('aria-sort')).toBe('descending');
    expect(calls()).toEqual([...calls()].sort((a, b) => b - a));
    view.kernels!.sortBy('calls');
    expect(th().getAttribute('aria-sort')).toBe('ascending');
    expect(calls()).toEqual([...calls()].sort((a, b) => a - b));
  });

  it('shows every kernel by its whole name, with tensor cores and blocks per SM', () => {
    const raw = fixture('report_a100_trace.json') as any;
    const view = render('report_a100_trace.json');
    const table = panel(view, 'Kernels').querySelector('.nbp-kernel-table') as HTMLTableElement;
    expect(headers(table)).toEqual(['Kernel', 'Category', 'Calls', 'Total', 'Mean', 'Max', 'Occupancy', 'Blocks per SM', 'Tensor cores', 'Launched by']);
    const col = (name: string) => raw.kernels.columns.indexOf(name);
    const rows = Array.from(table.tBodies[0].rows);
    expect(rows.length).toBe(Math.min(50, raw.kernels.rows.length));
    rows.forEach((tr, i) => {
      const kernel = raw.kernels.rows[i];
      expect(tr.cells[0].textContent).toBe(kernel[col('name')]);
      expect(tr.cells[0].title).toBe(kernel[col('name')]);
      expect(tr.cells[8].textContent).toBe(kernel[col('tensor_cores')] ? 'yes' : 'no');
      expect(tr.cells[9].textContent).toBe(kernel[col('operator')] ?? '–');
    });
    // Names longer than the 45 characters the explorer cut them to, whole here.
    expect(Math.max(...rows.map(tr => tr.cells[0].textContent!.length))).toBeGreaterThan(45);
    expect(rows.some(tr => tr.cells[8].textContent === 'yes')).toBe(raw.kernels.rows.some((k: any[]) => k[col('tensor_cores')]));
    // Kernel time by category, drawn from the saved chart spec.
    expect(raw.charts.kernels).toBeTruthy();
    expect(panel(view, 'Kernels').querySelectorAll('svg.nbp-chart').length).toBe(1);
    // The header sits over its own column.
    expect(table.tHead!.rows[0].cells.length).toBe(table.tBodies[0].rows[0].cells.length);
    expect(table.tHead!.rows[0].cells[7].classList.contains('nbp-num')).toBe(true);
    expect(rows[0].cells[7].classList.contains('nbp-num')).toBe(true);
  });

  it('sorts and filters like the operator table, and shows a clicked kernel’s figures', () => {
    const view = render('report_a100_trace.json');
    const kernels = view.kernels!;
    kernels.sortBy('calls');
    const table = panel(view, 'Kernels').querySelector('.nbp-kernel-table') as HTMLTableElement;
    const calls = Array.from(table.tBodies[0].rows).map(tr => Number(tr.cells[2].textContent!.replace(/,/g, '')));
    expect(calls).toEqual([...calls].sort((a, b) => b - a));
    kernels.filterBy('gemm');
    const names = Array.from(table.tBodies[0].rows).map(tr => tr.cells[0].textContent!);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every(n => n.toLowerCase().includes('gemm'))).toBe(true);
    table.tBodies[0].rows[0].click();
    const details = panel(view, 'Kernels').querySelector('.nbp-row-details') as HTMLElement;
    expect(details.hidden).toBe(false);
    expect(details.querySelector('.nbp-details-title')!.textContent).toBe(names[0]);
    expect(details.textContent).toContain('Blocks per SM');
    expect(table.tBodies[0].rows[0].getAttribute('aria-selected')).toBe('true');
    table.tBodies[0].rows[0].click();
    expect(details.hidden).toBe(true);
  });

  it('has no Kernels tab for a CPU run', () => {
    for (const name of ['report_cpu_live.json', 'report_recorded_cpu.json']) {
      expect(render(name).tabNames).not.toContain('Kernels');
    }
  });
});

describe('operator details', () => {
  it('shows a clicked operator’s figures and the kernels it launched', () => {
    const raw = fixture('report_a100_trace.json') as any;
    const view = render('report_a100_trace.json');
    const by = raw.kernels.columns.indexOf('operator');
    const table = panel(view, 'Operators').querySelector('.nbp-operator-table') as HTMLTableElement;
    const rows = Array.from(table.tBodies[0].rows);
    const row = rows.find(tr => raw.kernels.rows.some((k: any[]) => k[by] === tr.cells[0].textContent))!;
    const name = row.cells[0].textContent!;
    row.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    const details = panel(view, 'Operators').querySelector('.nbp-row-details') as HTMLElement;
    expect(details.querySelector('.nbp-details-title')!.textContent).toBe(name);
    const shown = Array.from(details.querySelectorAll('.nbp-details-kernels tbody tr')).map(tr => (tr as HTMLTableRowElement).cells[0].textContent);
    const expected = raw.kernels.rows.filter((k: any[]) => k[by] === name).map((k: any[]) => k[raw.kernels.columns.indexOf('name')]);
    expect(shown).toEqual(expected);
    expect(details.querySelector('.nbp-row-figures')!.textContent).toContain('Device total');
  });
});

describe('a CPU run', () => {
  it('shows no device-time columns of 0 µs in any table', () => {
    for (const name of ['report_cpu_live.json', 'report_recorded_cpu.json']) {
      const view = render(name);
      for (const table of Array.from(view.node.querySelectorAll('table'))) {
        expect(headers(table).filter(t => /device/i.test(t))).toEqual([]);
      }
      const modules = panel(view, 'Modules');
      expect(modules.textContent).not.toMatch(/Fwd device|Bwd device/);
      // The payload has the device columns, all zero; the operator table shows each operator's own figures only.
      const raw = fixture(name) as any;
      expect(raw.operators.columns).toContain('device_total_us');
      expect(raw.operators.rows.every((r: any[]) => !r[raw.operators.columns.indexOf('device_total_us')])).toBe(true);
      expect(view.node.querySelectorAll('.nbp-operator-table thead th').length).toBe(
        raw.operators.columns.filter((c: string) => !c.startsWith('device_')).length
      );
    }
    // The same payload with device time has the columns.
    expect(headers(render('report_a100_trace.json').node.querySelector('.nbp-operator-table')!)).toContain('Device total');
  });
});

describe('the tag', () => {
  it('says what the report was saved from, not "live run" for every report', () => {
    const tag = (name: string) => render(name).node.querySelector('.nbp-saved-tag')!.textContent;
    expect(tag('report_cpu_live.json')).toBe('saved report · live run of 2026-12-03 17:40');
    expect(tag('report_a100_trace.json')).toBe('saved report · trace file a100_alexnet_small.pt.trace.json.gz');
    expect(tag('report_v100_trace.json')).toBe('saved report · trace file v100_resnet50_train_num_workers_0.pt.trace.json.gz');
    // A payload written before saved_from existed.
    expect(new ReportView(parseReport({ schema: 'nbprofiler.report/1', source: 'live' })).node.textContent).toContain('saved report · live run');
  });
});

describe('cell lines and modules', () => {
  it('shows every line of the cell with its time, the source as text', () => {
    const raw = fixture('report_cpu_live.json') as any;
    const lines = panel(render('report_cpu_live.json'), 'Cell lines');
    const rows = Array.from(lines.querySelectorAll('.nbp-lines-table tbody tr')) as HTMLTableRowElement[];
    expect(rows.map(tr => tr.cells[tr.cells.length - 1].textContent)).toEqual(raw.lines.rows.map((r: any[]) => r[1]));
    expect(rows[1].cells[2].textContent).toBe(formatUs(61234.5));
    expect(rows[3].cells[2].textContent).toBe(''); // no time on that line
    expect(headers(lines.querySelector('table')!)).toEqual(['Line', 'Share', 'Host', 'Source']);
    expect(lines.querySelector('img')).toBeNull();
  });

  it('says why a trace file has no cell lines and how to get modules', () => {
    const raw = fixture('report_a100_trace.json') as any;
    const view = render('report_a100_trace.json');
    expect(panel(view, 'Cell lines').querySelector('.nbp-absent')!.textContent).toBe(raw.lines.why);
    expect(panel(view, 'Modules').querySelector('.nbp-absent')!.textContent).toContain('--modules');
  });

  it('folds the module tree under each parent, the first two levels open', () => {
    const modules = panel(render('report_cpu_live.json'), 'Modules');
    const nodes = Array.from(modules.querySelectorAll('details.nbp-mnode')) as HTMLDetailsElement[];
    expect(nodes.map(d => d.querySelector(':scope > summary > .nbp-mrow')!.getAttribute('title'))).toEqual(['Net', 'Net.body']);
    expect(nodes.every(d => d.open)).toBe(true);
    const body = nodes[1];
    const children = Array.from(body.querySelectorAll(':scope > .nbp-mleaf .nbp-mrow')).map(n => n.getAttribute('title'));
    expect(children).toEqual(['Net.body.0', `Net.body.${HOSTILE_IMG}`]);
    expect(modules.textContent).toContain(HOSTILE_SCRIPT);
    // The head is a direct child of the root, after its own subtree.
    expect(Array.from(nodes[0].querySelectorAll(':scope > .nbp-mleaf .nbp-mrow')).map(n => n.getAttribute('title'))).toEqual(['Net.head']);
  });
});

describe('timeline tab', () => {
  it('draws the saved timeline when the tab opens', () => {
    stubCanvas();
    const view = render('report_a100_trace.json');
    const tl = panel(view, 'Timeline');
    expect(tl.querySelector('.nbp-timeline')).toBeNull(); // not drawn before it is shown
    view.selectTab('Timeline');
    expect(tl.querySelector('.nbp-timeline')).not.toBeNull();
    expect(tl.querySelector('.nbp-timeline-error')).toBeNull();
    view.dispose();
  });

  it('says why there is none', () => {
    const view = render('report_v100_trace.json');
    view.selectTab('Timeline');
    expect(panel(view, 'Timeline').textContent).toContain('No timeline');
  });
});

describe('export tab', () => {
  it('downloads the HTML report, the report data and the Perfetto trace from Blobs', async () => {
    const data = fixture('report_a100_trace.json');
    const html = '<html><body><h3>nbprofiler report</h3></body></html>';
    const view = new ReportView(parseReport(data), { html, data });
    document.body.appendChild(view.node);
    view.selectTab('Export');
    const saved: { name: string; blob: Blob }[] = [];
    const blobs = new Map<string, Blob>();
    // jsdom has no object URLs: these stand in for the browser's.
    URL.createObjectURL = (b: Blob | MediaSource) => {
      const url = `blob:test/${blobs.size}`;
      blobs.set(url, b as Blob);
      return url;
    };
    URL.revokeObjectURL = () => undefined;
    const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
      saved.push({ name: this.download, blob: blobs.get(this.href)! });
    });
    try {
      const buttons = Array.from(panel(view, 'Export').querySelectorAll('button.nbp-download')) as HTMLButtonElement[];
      expect(buttons.map(b => b.textContent)).toEqual([
        'Standalone HTML report',
        'Report data (JSON)',
        'Open in Perfetto (the timeline as a Chrome trace)'
      ]);
      buttons.forEach(b => b.click());
      expect(saved.map(s => s.name)).toEqual([
        'a100_alexnet_small.html',
        'a100_alexnet_small.json',
        (data as any).timeline.trace_name
      ]);
      expect(saved[0].blob.type).toBe('text/html');
      expect(await readBlob(saved[0].blob)).toBe(html);
      expect(JSON.parse(await readBlob(saved[1].blob))).toEqual(data);
      const trace = JSON.parse(await readBlob(saved[2].blob));
      expect(trace.traceEvents.filter((e: any) => e.ph === 'X').length).toBe((data as any).timeline.events.n);
      expect(document.querySelector('a[download]')).toBeNull(); // the links are gone after the click
    } finally {
      click.mockRestore();
    }
  });

  it('offers nothing it does not have', () => {
    const view = render('report_cpu_live.json');
    view.selectTab('Export');
    expect(panel(view, 'Export').textContent).toContain('This output holds nothing to download.');
  });
});

