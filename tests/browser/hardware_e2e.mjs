// The Hardware tab in a real browser, saved and live, on a GPU trace's report:
//
//   1. the notebook's first cell holds the report's saved output (no explorer, as a notebook
//      reopened without its kernel): its Hardware tab shows the launches, the copies and the
//      roofline scatter (a point per operator, what it is on hover); its Kernels tab the
//      launching operator's achieved FLOP/s and bound, with what they are on the headers;
//   2. the second cell loads the same trace with the kernel: the ipywidgets explorer's Hardware
//      tab shows the same launch count and the scatter's points.
//
// The Python test compares what both show with the report's own tables.
import {
  activate,
  cellLocator,
  check,
  clickExplorerTab,
  explorerPanel,
  explorerTabs,
  LONG,
  openNotebook,
  page,
  runScenario,
  shot,
  step,
  waitKernelIdle
} from './lab.mjs';

const result = { ok: false };

await runScenario(result, async () => {
  await openNotebook();
  step('notebook open');
  const cell = await cellLocator(0);
  const renderer = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  await renderer.waitFor({ timeout: 60000 });
  const tab = renderer.locator('[role="tab"][data-tab="Hardware"]');
  check((await tab.count()) === 1, 'the saved report has a Hardware tab');
  await tab.click();
  const panel = renderer.locator('.nbp-panel[data-tab="Hardware"]');
  await panel.waitFor({ state: 'visible', timeout: 10000 });
  check((await tab.getAttribute('aria-selected')) === 'true', 'the Hardware tab is selected');
  step('Hardware tab open');
  const facts = panel.locator('.nbp-hw-launches');
  result.launchLabels = (await facts.locator('th').allInnerTexts()).map(t => t.trim());
  result.launches = (await facts.locator('td').first().innerText()).trim();
  result.device = (await panel.locator('.nbp-device').innerText()).trim();
  const copies = panel.locator('.nbp-hw-section[data-section="copies"]');
  await copies.scrollIntoViewIfNeeded();
  result.copiesHeader = (await copies.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.copies = (await copies.locator('tbody tr').first().locator('td').allInnerTexts()).map(t => t.trim());
  const scatter = panel.locator('.nbp-hw-section[data-section="roofline"] .nbp-chartbox[data-chart="roofline"]');
  await scatter.scrollIntoViewIfNeeded();
  const points = scatter.locator('.nbp-point');
  result.points = await points.evaluateAll(els => els.map(e => e.getAttribute('data-operator')));
  await points.first().locator('circle').hover({ force: true });
  const tip = scatter.locator('.nbp-chart-tip');
  await tip.waitFor({ state: 'visible', timeout: 10000 });
  result.tip = (await tip.locator('div').allInnerTexts()).map(t => t.trim());
  await shot('hardware_saved.png', panel);

  const kernelsTab = renderer.locator('[role="tab"][data-tab="Kernels"]');
  await kernelsTab.click();
  const kernels = renderer.locator('.nbp-panel[data-tab="Kernels"] table.nbp-kernel-table');
  await kernels.waitFor({ state: 'visible', timeout: 10000 });
  result.kernelHeader = (await kernels.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.kernelHelp = await kernels.locator('thead button[data-column="achieved_flops_per_s"]').getAttribute('title');
  result.kernelRow = (await kernels.locator('tbody tr').first().locator('td').allInnerTexts()).map(t => t.trim());
  step('saved Kernels tab open');

  let live = await activate(1);
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-cell'));
  live = await cellLocator(1);
  await live.locator('.lm-TabBar-tab').first().waitFor({ timeout: LONG });
  await waitKernelIdle();
  const tabs = (await explorerTabs(live)).map(t => t.trim());
  check(tabs.indexOf('Hardware') === tabs.indexOf('Kernels') + 1, `the explorer's Hardware tab follows Kernels (${JSON.stringify(tabs)})`);
  await clickExplorerTab(live, 'Hardware');
  const livePanel = explorerPanel(live);
  const launches = livePanel.locator('table.nbp-hw-launches td').first();
  await launches.waitFor({ timeout: 60000 });
  result.liveLaunches = (await launches.innerText()).trim();
  const livePoints = livePanel.locator('.nbp-chartbox[data-chart="roofline"] .nbp-point');
  await livePoints.first().waitFor({ state: 'attached', timeout: 60000 });
  result.livePoints = await livePoints.evaluateAll(els => els.map(e => e.getAttribute('data-operator')));
  step('live explorer Hardware tab open');
  await shot('hardware_live.png', livePanel);
});
