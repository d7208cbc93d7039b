// The charts in a real browser: the live explorer's Overview, then the saved report's.
//
//   1. run the notebook (a short %%torchprofile training loop);
//   2. in the explorer's Overview (the chart drawn by the extension from its spec),
//      hover a bar: the tooltip names the step and gives each part's time with
//      its unit; drag across three steps: only those are drawn; Reset zoom shows
//      all again; the legend names every part;
//      hovering the last step low in the plot, near its bottom and right
//      edges, keeps the whole tooltip in sight (inside the chart's box, the
//      output area and the window);
//   3. in the Memory tab, each line's legend swatch has its line's colour
//      (not the text's);
//   4. save, shut the kernel down, reload: the saved report's Overview and
//      Memory charts do the same, the legend in the light and then the dark
//      theme.
import {
  cellLocator,
  setTheme,
  check,
  clickExplorerTab,
  explorerPanel,
  LONG,
  openNotebook,
  page,
  reloadAt,
  runScenario,
  saveNotebook,
  shot,
  shutDownKernel,
  step,
  waitKernelIdle
} from './lab.mjs';

const result = { ok: false };
const UNIT = /\d (µs|ms|s)\b/;

/** Hover, zoom and reset on the first chart under `scope`; returns what it saw. */
async function hoverAndZoom(scope, label) {
  const chart = scope.locator('.nbp-chartbox[data-chart="breakdown"]').first();
  await chart.waitFor({ timeout: 60000 });
  await chart.scrollIntoViewIfNeeded();
  const bars = chart.locator('.nbp-bar');
  const steps = await bars.count();
  check(steps >= 4, `${label}: a bar per profiled step (${steps})`);
  const columns = chart.locator('.nbp-hover');
  await columns.nth(1).hover();
  const tip = chart.locator('.nbp-chart-tip');
  await tip.waitFor({ state: 'visible', timeout: 10000 });
  const lines = await tip.locator('div').allInnerTexts();
  check(/^step \d+/.test(lines[0]), `${label}: the tooltip names the step (${lines[0]})`);
  check(lines.slice(1).every(line => UNIT.test(line)), `${label}: every value has its unit (${lines.join(' | ')})`);
  await shot(`charts_${label}_1_hover.png`, chart);
  step(`${label}: hover shows ${lines.join(' | ')}`);

  const legend = await chart.locator('.nbp-legend-name').allInnerTexts();
  check(legend.length >= 2, `${label}: a legend entry per part (${legend.join(', ')})`);

  const from = await columns.nth(1).boundingBox();
  const to = await columns.nth(3).boundingBox();
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(from.x + from.width / 2 + 5, from.y + from.height / 2, { steps: 2 });
  await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 5 });
  await page.mouse.up();
  const zoomed = await bars.count();
  check(zoomed === 3, `${label}: the drag across three steps shows only those (${zoomed} of ${steps})`);
  const reset = chart.locator('.nbp-chart-reset');
  check(await reset.isVisible(), `${label}: Reset zoom is offered`);
  await shot(`charts_${label}_2_zoomed.png`, chart);
  await reset.click();
  check((await bars.count()) === steps, `${label}: Reset zoom shows every step again`);
  step(`${label}: zoomed to 3 of ${steps} steps and back`);
  const tipInSight = await lowestTip(chart, label);
  return { steps, zoomed, tooltip: lines, legend, tipInSight };
}

/** Hover the last step 3 px above the plot's bottom: the tooltip's box lies inside the chart's, the output
 * area's (which clips what overflows it) and the window's. */
async function lowestTip(chart, label) {
  await page.mouse.move(0, 0);
  const last = chart.locator('.nbp-hover').last();
  const box = await last.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height - 3);
  const tip = chart.locator('.nbp-chart-tip');
  await tip.waitFor({ state: 'visible', timeout: 10000 });
  const seen = await tip.evaluate(el => {
    const r = el.getBoundingClientRect();
    const rect = node => { const b = node.getBoundingClientRect(); return { left: b.left, top: b.top, right: b.right, bottom: b.bottom }; };
    return {
      tip: rect(el),
      chart: rect(el.closest('.nbp-chartbox')),
      output: rect(el.closest('.jp-OutputArea-output') ?? document.body),
      window: { left: 0, top: 0, right: window.innerWidth, bottom: window.innerHeight },
      height: r.height
    };
  });
  const inside = (outer) => seen.tip.left >= outer.left - 0.5 && seen.tip.top >= outer.top - 0.5 && seen.tip.right <= outer.right + 0.5 && seen.tip.bottom <= outer.bottom + 0.5;
  await shot(`charts_${label}_3_lowest_tip.png`, chart);
  check(inside(seen.chart), `${label}: the lowest point's tooltip lies inside the chart (${JSON.stringify(seen)})`);
  check(inside(seen.output) && inside(seen.window), `${label}: ... and inside the output area and the window (${JSON.stringify(seen)})`);
  step(`${label}: the lowest point's tooltip is in sight`);
  return inside(seen.chart) && inside(seen.output) && inside(seen.window);
}

/** Each line swatch of the Memory tab's legends against its line's stroke, as the browser paints them. */
async function legendColours(scope, label) {
  const chart = scope.locator('.nbp-chartbox[data-chart="memory"]').first();
  await chart.waitFor({ timeout: 60000 });
  const pairs = await chart.evaluate(box =>
    Array.from(box.querySelectorAll('.nbp-legend li[data-kind="series"]')).map(li => {
      const name = li.querySelector('.nbp-legend-name').textContent;
      const line = Array.from(box.querySelectorAll('.nbp-line')).find(g => g.dataset.series === name);
      return { name, swatch: getComputedStyle(li.querySelector('.nbp-line-swatch')).borderTopColor, line: line ? getComputedStyle(line.querySelector('path')).stroke : null, text: getComputedStyle(li).color };
    })
  );
  check(pairs.length > 0, `${label}: the memory legend has line entries`);
  for (const p of pairs) {
    check(p.swatch === p.line && p.swatch !== p.text, `${label}: the legend swatch of ${p.name} has its line's colour (${JSON.stringify(p)})`);
  }
  step(`${label}: legend swatches ${pairs.map(p => `${p.name} ${p.swatch}`).join(', ')}`);
  return pairs;
}

/** The Memory chart's legend in each of `themes`, switched to in turn. The last part of the scenario
 * switches themes: a reload after a switch trips JupyterLab's theme manager (a page error of its own). */
async function legendInThemes(scope, label, themes) {
  const seen = {};
  for (const theme of themes) {
    await setTheme(theme);
    seen[theme] = await legendColours(scope, `${label} ${theme}`);
  }
  return seen;
}

await runScenario(result, async () => {
  await openNotebook();
  step('notebook open');
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  let cell = await cellLocator(1);
  await cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="widget"]').waitFor({ timeout: LONG });
  await waitKernelIdle();
  step('explorer shown');
  result.live = await hoverAndZoom(explorerPanel(cell), 'live');
  await clickExplorerTab(cell, 'Memory');
  result.liveLegend = await legendInThemes(explorerPanel(cell), 'live', ['JupyterLab Light']);

  await saveNotebook();
  await shutDownKernel();
  cell = await reloadAt(1);
  await cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]').waitFor({ timeout: 60000 });
  step('saved report drawn without a kernel');
  result.saved = await hoverAndZoom(cell.locator('.nbp-panel[data-tab="Overview"]'), 'saved');
  await cell.locator('[role="tab"][data-tab="Memory"]').click();
  result.savedLegend = await legendInThemes(cell.locator('.nbp-panel[data-tab="Memory"]'), 'saved', ['JupyterLab Light', 'JupyterLab Dark']);
});
