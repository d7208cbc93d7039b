import { readFileSync } from 'fs';
import { join } from 'path';
import { beforeEach, describe, expect, it } from 'vitest';

import { CHART_MIME, chartRendererFactory } from '../src/chart_renderer';
import { IChartSpec, renderChart } from '../src/report/charts';
import { formatBytes, formatUs } from '../src/report/format';

/** The chart specs Python made for a real GPU trace and a real CPU run (test/fixtures/make_chart_fixtures.py). */
function specs(report: 'v100_trace' | 'cpu_live'): { [chart: string]: IChartSpec } {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', 'charts.json'), 'utf-8'))[report];
}

function mount(spec: IChartSpec): HTMLElement {
  const node = renderChart(spec);
  document.body.appendChild(node);
  return node;
}

function hover(el: Element): void {
  el.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 10, clientY: 10 }));
}

function drag(from: Element, over: Element, to: Element): void {
  from.dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
  hover(over);
  to.dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
}

function columns(node: HTMLElement): SVGRectElement[] {
  return Array.from(node.querySelectorAll('.nbp-hover'));
}

function tip(node: HTMLElement): HTMLElement {
  return node.querySelector('.nbp-chart-tip') as HTMLElement;
}

function stepLabels(node: HTMLElement): string[] {
  return Array.from(node.querySelectorAll('.nbp-tick')).map(t => t.textContent ?? '');
}

beforeEach(() => {
  document.body.textContent = '';
});

describe('renderChart', () => {
  const v100 = specs('v100_trace');

  it('shows a step’s parts with their units on hover', () => {
    const spec = v100.breakdown;
    const node = mount(spec);
    expect(tip(node).hidden).toBe(true);
    hover(columns(node)[2]);
    expect(tip(node).hidden).toBe(false);
    const lines = Array.from(tip(node).children).map(l => l.textContent);
    const step = spec.panels[0].x[2];
    expect(lines[0]).toBe(`step ${step}`);
    const kernel = spec.panels[0].series.find(s => s.key === 'kernel')!;
    expect(lines[1]!.startsWith(`Kernel: ${formatUs(kernel.values[2])} (`)).toBe(true);
    expect(lines[1]).toMatch(/^Kernel: [\d.]+ ms \(\d+%\)$/);
    expect(lines[lines.length - 1]).toMatch(/^total: [\d.]+ ms$/);
    node.querySelector('svg')!.dispatchEvent(new MouseEvent('mouseleave'));
    expect(tip(node).hidden).toBe(true);
  });

  it('zooms on the steps dragged across, and Reset zoom shows them all again', () => {
    const spec = v100.breakdown;
    const node = mount(spec);
    const reset = node.querySelector('.nbp-chart-reset') as HTMLButtonElement;
    const all = spec.panels[0].x.map(String);
    expect(node.querySelectorAll('.nbp-bar').length).toBe(all.length);
    expect(reset.hidden).toBe(true);
    const cols = columns(node);
    drag(cols[1], cols[2], cols[3]);
    const shown = Array.from(node.querySelectorAll('.nbp-bar')).map(b => b.getAttribute('data-step'));
    expect(shown).toEqual(all.slice(1, 4));
    expect(stepLabels(node)).toEqual(all.slice(1, 4));
    expect(reset.hidden).toBe(false);
    reset.click();
    expect(node.querySelectorAll('.nbp-bar').length).toBe(all.length);
    expect(reset.hidden).toBe(true);
  });

  it('does not zoom on a click, nor on a drag that leaves the chart', () => {
    const node = mount(v100.breakdown);
    const cols = columns(node);
    drag(cols[1], cols[1], cols[1]);
    expect(node.querySelectorAll('.nbp-bar').length).toBe(cols.length);
    cols[0].dispatchEvent(new MouseEvent('mousedown', { bubbles: true }));
    node.querySelector('svg')!.dispatchEvent(new MouseEvent('mouseleave'));
    cols[3].dispatchEvent(new MouseEvent('mouseup', { bubbles: true }));
    expect(node.querySelectorAll('.nbp-bar').length).toBe(cols.length);
  });

  it('has a legend entry per series, with its mean per step and share', () => {
    const spec = v100.breakdown;
    const node = mount(spec);
    const names = Array.from(node.querySelectorAll('.nbp-legend-name')).map(n => n.textContent);
    expect(names).toEqual(spec.panels[0].series.map(s => s.label));
    expect(node.querySelector('.nbp-legend li')!.textContent).toMatch(/^Kernel[\d.]+ ms \/ step · \d+%$/);
  });

  it('shades the schedule phases and names each in the legend; memory values are in bytes', () => {
    const spec = specs('cpu_live').memory;
    const node = mount(spec);
    const phases = new Set(spec.panels[0].phases.map(p => p.phase));
    expect(phases.size).toBeGreaterThan(1);
    const legend = Array.from(node.querySelectorAll('.nbp-legend li[data-kind="phase"]')).map(li => li.textContent);
    expect(legend).toEqual(['wait', 'warmup', 'active'].filter(p => phases.has(p)).map(p => `${p} steps`));
    const rss = spec.panels[0].series[0];
    hover(columns(node)[0]);
    const lines = Array.from(tip(node).children).map(l => l.textContent);
    expect(lines[0]).toBe(`step ${spec.panels[0].x[0]} (${spec.panels[0].phases[0].phase})`);
    expect(lines[1]).toBe(`${rss.label}: ${formatBytes(rss.values[0])}`);
    expect(lines[1]).toMatch(/ (B|KiB|MiB|GiB)$/);
  });

  it('marks where each profiled step starts on the memory timeline, with a legend entry', () => {
    const spec = v100.memory_timeline;
    const node = mount(spec);
    expect(node.querySelectorAll('.nbp-marker').length).toBe(spec.panels[0].markers.length);
    expect(node.querySelector('.nbp-legend li[data-kind="marker"]')!.textContent).toBe('step start');
    hover(columns(node)[5]);
    expect(tip(node).firstElementChild!.textContent).toMatch(/^at [\d.]+ (µs|ms|s)$/);
    expect(tip(node).children[1].textContent).toMatch(/^allocated since recording began: [\d.]+ (B|KiB|MiB|GiB)$/);
  });

  it('draws kernel time by category as horizontal bars, names as text', () => {
    const spec = JSON.parse(JSON.stringify(v100.kernels)) as IChartSpec;
    spec.panels[0].x[0] = '<img src=x onerror=alert(1)>';
    const node = mount(spec);
    const rows = node.querySelectorAll('.nbp-hbar');
    expect(rows.length).toBe(spec.panels[0].x.length);
    expect(node.querySelector('img')).toBeNull();
    hover(rows[0]);
    expect(tip(node).textContent).toMatch(/^<img src=x onerror=alert\(1\)><img src=x onerror=alert\(1\)>: [\d.]+ ms \(\d+%\)$/);
    expect(node.querySelector('.nbp-chart-reset')).not.toBeNull();
  });
});

describe('chartRendererFactory', () => {
  it('draws the chart MIME type from a spec, and says so for data that is not one', async () => {
    const factory = chartRendererFactory();
    expect(factory.mimeTypes).toEqual([CHART_MIME]);
    const renderer = factory.createRenderer({ mimeType: CHART_MIME } as any);
    const spec = specs('v100_trace').breakdown;
    await renderer.renderModel({ data: { [CHART_MIME]: spec } } as any);
    expect(renderer.node.querySelectorAll('.nbp-bar').length).toBe(spec.panels[0].x.length);
    await renderer.renderModel({ data: { [CHART_MIME]: 'nonsense' } } as any);
    expect(renderer.node.textContent).toBe('nbprofiler: this chart data is not a chart spec.');
  });
});
