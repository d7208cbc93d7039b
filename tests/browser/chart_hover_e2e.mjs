// The charts in a real browser: the live explorer's Overview, then the saved report's.
//
//   1. run the notebook (a short %%torchprofile training loop);
//   2. in the explorer's Overview (the chart drawn by the extension from its spec),
//      hover a bar: the tooltip names the step and gives each part's time with
//      its unit; drag across three steps: only those are drawn; Reset zoom shows
//      all again; the legend names every part;
//   3. save, shut the kernel down, reload: the saved report's Overview chart
//      does the same.
import {
  cellLocator,
  check,
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
  return { steps, zoomed, tooltip: lines, legend };
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

  await saveNotebook();
  await shutDownKernel();
  cell = await reloadAt(1);
  await cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]').waitFor({ timeout: 60000 });
  step('saved report drawn without a kernel');
  result.saved = await hoverAndZoom(cell.locator('.nbp-panel[data-tab="Overview"]'), 'saved');
});
