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
    expect(view.tabNames).toEqual([...TAB_NAMES]);
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
            expect(attr.value).toMatch(/^(background:#[0-9a-f]{6}|width:[0-9.]+%)$/i);
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
  it('has the four tabs, with one panel shown at a time', () => {
    const view = render('report_v100_trace.json');
    const tabs = Array.from(view.node.querySelectorAll('[role="tab"]')).map(t => (t as HTMLElement).dataset.tab);
    expect(tabs).toEqual(['Overview', 'Operators', 'Memory', 'Suggestions']);
    expect(panel(view, 'Overview').hidden).toBe(false);
    expect(panel(view, 'Operators').hidden).toBe(true);
    (view.node.querySelector('[role="tab"][data-tab="Suggestions"]') as HTMLElement).click();
    expect(view.currentTab).toBe('Suggestions');
    expect(panel(view, 'Suggestions').hidden).toBe(false);
    expect(panel(view, 'Overview').hidden).toBe(true);
    const tab = view.node.querySelector('[role="tab"][data-tab="Suggestions"]') as HTMLElement;
    expect(tab.getAttribute('aria-selected')).toBe('true');
    tab.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowRight', bubbles: true }));
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
    expect(axis).toEqual(['time per step (ms)', 'step']);
    const legend = Array.from(overview.querySelectorAll('.nbp-legend li')).map(li => li.textContent);
    expect(legend[0]).toMatch(/^Kernel.*\/ step · \d+%$/);
    expect(overview.querySelectorAll('.nbp-top-suggestions li').length).toBe(3);
    expect(overview.querySelector('.nbp-device')!.textContent).toBe(
      'Device: Tesla V100-DGXS-32GB (cuda) · 31.7 GiB memory · compute capability 7.0 · 80 SMs'
    );
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
    expect(first).toEqual(['aten::addmm', '150', '61.2 ms', '63.0 ms', '0 µs', '0 µs']);
    const last = Array.from(table.tBodies[0].rows[9].cells).map(c => c.textContent);
    expect(last.slice(4)).toEqual(['–', '–']);
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
    expect(legend).toEqual(['DataLoader', 'Forward', 'Backward', 'Optimizer', 'Other']);
    expect(overview.querySelectorAll('svg .nbp-bar').length).toBe(raw.breakdown.rows.length);
    // The sampler's line spans all the steps the cell ran, with the phases shaded.
    const mem = panel(view, 'Memory');
    const [sampled, traced] = Array.from(mem.querySelectorAll('svg'));
    expect(sampled.querySelectorAll('.nbp-line circle').length).toBe(raw.steps.rows.length);
    expect(sampled.querySelectorAll('.nbp-phase-active').length).toBe(1);
    // The trace's tensor memory in the profiled steps: the 1 MiB kept at every step.
    // CPU levels count from the start of recording (torch's CPU counter is no absolute level): the title says so.
    expect(traced.querySelector('title')!.textContent).toBe(
      'Tensor memory on cpu in the profiled steps, counted from the start of recording'
    );
    expect(mem.querySelector('.nbp-memory-figures')!.textContent).toBe(`Memory on cpu: ${raw.memory.figures.join(', ')}`);
    expect(raw.memory.figures[0]).toMatch(/^largest rise within a step after the first profiled one, over its starting level \(traced\) /);
    expect(traced.querySelectorAll('.nbp-line[data-series="Allocated at step end"] circle').length).toBe(raw.memory.steps.rows.length);
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
    expect(titles).toEqual(['Tensor memory on cpu in the profiled steps', 'Tensor memory on cuda:0 in the profiled steps']);
    const cuda = mem.querySelectorAll('.nbp-memory-plot')[1];
    // One point per profiled step; no reserved line (the trace has no reserved figures).
    expect(Array.from(cuda.querySelectorAll('.nbp-legend-name')).map(n => n.textContent)).toEqual(['Allocated at step end', 'Peak in step']);
    expect(cuda.querySelectorAll('.nbp-line[data-series="Peak in step"] circle').length).toBe(6);
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
