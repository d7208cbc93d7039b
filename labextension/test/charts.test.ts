import { readFileSync } from 'fs';
import { join } from 'path';
import { beforeEach, describe, expect, it } from 'vitest';

import { CHART_MIME, chartRendererFactory } from '../src/chart_renderer';
import { IChartSpec, renderChart, tipPosition } from '../src/report/charts';
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

  it('draws each line swatch of the memory legend in its line’s colour, not the text’s', () => {
    const style = document.createElement('style');
    style.textContent = readFileSync(join(__dirname, '..', 'style', 'charts.css'), 'utf-8');
    document.head.appendChild(style);
    try {
      for (const spec of [specs('cpu_live').memory, v100.memory]) {
        const node = mount(spec);
        const entries = Array.from(node.querySelectorAll('.nbp-legend li[data-kind="series"]'));
        expect(entries.map(li => li.querySelector('.nbp-legend-name')!.textContent)).toEqual([...new Set(spec.panels.flatMap(p => p.series.map(s => s.label)))]);
        const text = getComputedStyle(node).color;
        for (const li of entries) {
          const label = li.querySelector('.nbp-legend-name')!.textContent!;
          const path = Array.from(node.querySelectorAll('.nbp-line')).find(g => g.getAttribute('data-series') === label)!.querySelector('path')!;
          const swatch = getComputedStyle(li.querySelector('.nbp-line-swatch')!).borderTopColor;
          expect([label, swatch]).toEqual([label, getComputedStyle(path).stroke]);
          expect(swatch).toMatch(/^var\(--/);
          expect(swatch).not.toBe(text);
        }
      }
    } finally {
      style.remove();
    }
  });

  it('keeps the tooltip inside the chart: above the cursor near the bottom edge, left of it near the right', () => {
    const box = { left: 100, top: 50, right: 820, bottom: 450 };
    const tip = { width: 180, height: 70 };
    const viewport = { width: 1280, height: 900 };
    // In the middle: below and right of the cursor.
    expect(tipPosition({ x: 300, y: 150 }, box, tip, viewport)).toEqual({ left: 212, top: 112 });
    // The lowest point of the plot, near the box's bottom: above the cursor, wholly inside the box.
    const low = tipPosition({ x: 300, y: 420 }, box, tip, viewport);
    expect(low).toEqual({ left: 212, top: 370 - 12 - 70 });
    expect(box.top + low.top + tip.height).toBeLessThanOrEqual(box.bottom);
    // Near the right edge: left of the cursor.
    expect(tipPosition({ x: 800, y: 150 }, box, tip, viewport).left).toBe(700 - 12 - 180);
    // The window's bottom edge cuts the box: the tooltip stays above it.
    const cut = tipPosition({ x: 300, y: 380 }, box, tip, { width: 1280, height: 400 });
    expect(box.top + cut.top + tip.height).toBeLessThanOrEqual(400);
  });

  it('places the hovered tooltip from its own size and the chart’s box', () => {
    const spec = specs('cpu_live').memory;
    const node = mount(spec);
    node.getBoundingClientRect = () => ({ left: 0, top: 0, right: 720, bottom: 300, width: 720, height: 300, x: 0, y: 0, toJSON: () => null });
    tip(node).getBoundingClientRect = () => ({ left: 0, top: 0, right: 200, bottom: 80, width: 200, height: 80, x: 0, y: 0, toJSON: () => null });
    const lowest = columns(node)[0];
    lowest.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 650, clientY: 280 }));
    expect(tip(node).hidden).toBe(false);
    expect([tip(node).style.left, tip(node).style.top]).toEqual([`${650 - 12 - 200}px`, `${280 - 12 - 80}px`]);
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
