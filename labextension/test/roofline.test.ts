import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';

import { CHART_MIME, chartRendererFactory } from '../src/chart_renderer';
import { IChartSpec, renderChart } from '../src/report/charts';
import { formatSi } from '../src/report/format';
import { parseHardware, hardwarePanel } from '../src/report/hardware';

const HOSTILE = '<img src=x onerror=alert(1)>';

/** The roofline scatter Python made for the V100 ResNet-50 trace (test/fixtures/make_chart_fixtures.py). */
function roofline(): IChartSpec {
  return JSON.parse(readFileSync(join(__dirname, 'fixtures', 'charts.json'), 'utf-8')).v100_trace.roofline;
}

function mount(spec: IChartSpec): HTMLElement {
  const node = renderChart(spec);
  document.body.appendChild(node);
  return node;
}

function tip(node: HTMLElement): HTMLElement {
  return node.querySelector('.nbp-chart-tip') as HTMLElement;
}

/** Where a point sits along an axis, 0 to 1, on the log scale of `domain`. */
function logFrac(v: number, domain: [number, number]): number {
  return (Math.log10(v) - Math.log10(domain[0])) / (Math.log10(domain[1]) - Math.log10(domain[0]));
}

describe('roofline scatter', () => {
  it('draws one named point per roofline row, placed on log-log axes', () => {
    const spec = roofline();
    const panel = spec.panels[0];
    const node = mount(spec);
    const points = Array.from(node.querySelectorAll('.nbp-point'));
    expect(points.map(p => p.getAttribute('data-operator'))).toEqual(panel.points!.map(p => p.label));
    const circles = points.map(p => p.querySelector('circle')!);
    const xs = circles.map(c => Number(c.getAttribute('cx')));
    const intensity = panel.x as number[];
    // The higher the intensity, the further right; equal log steps are equal distances.
    const order = intensity.map((_, i) => i).sort((a, b) => intensity[a] - intensity[b]);
    expect(order.map(i => xs[i])).toEqual([...xs].sort((a, b) => a - b));
    const [a, b] = [order[0], order[order.length - 1]];
    const fa = logFrac(intensity[a], spec.x.domain!);
    const fb = logFrac(intensity[b], spec.x.domain!);
    expect((xs[b] - xs[a]) / (fb - fa)).toBeGreaterThan(0);
    expect(node.querySelectorAll('.nbp-roof').length).toBe(panel.roofs!.length);
    expect(Array.from(node.querySelectorAll('.nbp-legend li')).map(li => li.textContent)).toContain('roof (memory bandwidth, then peak)');
  });

  it('shows operator, dtype, intensity, FLOP/s and bound on hover', () => {
    const spec = roofline();
    const panel = spec.panels[0];
    const node = mount(spec);
    const points = Array.from(node.querySelectorAll('.nbp-point'));
    points.forEach((p, i) => {
      p.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 10, clientY: 10 }));
      const rate = spec.panels[0].series.map(s => s.values[i]).find(v => v !== null) as number;
      const point = panel.points![i];
      expect(tip(node).hidden).toBe(false);
      expect(Array.from(tip(node).children).map(c => c.textContent)).toEqual([
        point.label,
        `dtype: ${point.dtype}`,
        `intensity: ${formatSi(panel.x[i] as number, 'FLOP/byte')}`,
        `achieved: ${formatSi(rate, 'FLOP/s')}`,
        `bound: ${point.bound}`
      ]);
    });
  });

  it('sets operator names as text, never as markup', () => {
    const spec = roofline();
    spec.panels[0].points = spec.panels[0].points!.map(p => ({ ...p, label: HOSTILE }));
    const node = mount(spec);
    expect(node.querySelector('img')).toBeNull();
    const first = node.querySelector('.nbp-point')!;
    expect(first.querySelector('circle title')!.textContent!.startsWith(HOSTILE)).toBe(true);
    first.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    expect(tip(node).querySelector('img')).toBeNull();
    expect(tip(node).firstElementChild!.textContent).toBe(HOSTILE);
  });

  it('is drawn at the top of the Hardware tab roofline section, and only where the payload has it', () => {
    const section = { key: 'roofline', title: 'Roofline', how: 'how', columns: ['operator'], labels: ['operator'], units: ['text'], rows: [['aten::mm']], chart: 'roofline' };
    const hw = parseHardware({ how: '', absent: null, device: 'Tesla V100', device_facts: [], launch_facts: [], sections: [section] })!;
    const drawn = hardwarePanel(hw, { roofline: roofline() }).querySelector('.nbp-hw-section[data-section="roofline"]')!;
    expect(Array.from(drawn.children).map(c => c.tagName.toLowerCase())).toEqual(['h4', 'p', 'div', 'div']);
    expect(drawn.children[2].getAttribute('data-chart')).toBe('roofline');
    expect(hardwarePanel(hw, {}).querySelector('[data-chart]')).toBeNull();
  });

  it('renders as a version 2 chart, which a version 1 extension refuses', async () => {
    const spec = roofline();
    expect(spec.version).toBe(2);
    const renderer = chartRendererFactory().createRenderer({ mimeType: CHART_MIME } as any);
    await renderer.renderModel({ data: { [CHART_MIME]: spec } } as any);
    expect(renderer.node.querySelectorAll('.nbp-point').length).toBe(spec.panels[0].points!.length);
    await renderer.renderModel({ data: { [CHART_MIME]: { ...spec, version: 3 } } } as any);
    expect(renderer.node.textContent).toContain('newer than this extension draws');
  });
});
