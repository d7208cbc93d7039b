// The Cycles tab in a real browser, saved and live, on a --every run whose loading slows from batch 600:
//
//   1. the notebook's first cell holds the report's saved output (no explorer, as a notebook
//      reopened days later without its kernel): its Cycles tab names the drift's cycle as a
//      warning, draws the step time per cycle with a marker where the drift began, and lists
//      every cycle;
//   2. the second cell loads the saved .nbprof file with the kernel: the ipywidgets explorer's
//      Cycles tab shows the same drift and trend.
//
// The Python test compares what both show with the report's cycles and drift.
import {
  activate,
  cellLocator,
  clickExplorerTab,
  explorerPanel,
  explorerTabs,
  LONG,
  openSavedTab,
  page,
  runScenario,
  shot,
  step,
  tableRows,
  waitKernelIdle
} from './lab.mjs';

const result = { ok: false };

/** The labels of the step-time chart's markers, and how many points its lines have. */
async function trend(panel) {
  const chart = panel.locator('.nbp-chartbox[data-chart="cycles"], svg.nbp-chart').first();
  await chart.waitFor({ state: 'attached', timeout: 60000 });
  return { text: (await chart.textContent()) || '' };
}

await runScenario(result, async () => {
  const panel = await openSavedTab('Cycles');
  result.verdict = (await panel.locator('.nbp-cycles-verdict').innerText()).trim();
  result.verdictWarns = (await panel.locator('.nbp-cycles-verdict.nbp-banner-warn').count()) === 1;
  result.charts = await panel.locator('.nbp-chartbox').evaluateAll(els => els.map(e => e.getAttribute('data-chart')));
  result.chartText = (await trend(panel)).text;
  const table = panel.locator('.nbp-cycles-section[data-section="cycles"] table');
  result.header = (await table.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.rows = await tableRows(table);
  await shot('cycles_saved.png', panel);

  let live = await activate(1);
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-cell'));
  live = await cellLocator(1);
  await live.locator('.lm-TabBar-tab').first().waitFor({ timeout: LONG });
  await waitKernelIdle();
  result.liveTabs = (await explorerTabs(live)).map(t => t.trim());
  await clickExplorerTab(live, 'Cycles');
  const livePanel = explorerPanel(live);
  const verdict = livePanel.locator('.nbp-drift');
  await verdict.waitFor({ timeout: 60000 });
  result.liveVerdict = (await verdict.innerText()).trim();
  result.liveChartText = (await trend(livePanel)).text;
  const liveTable = livePanel.locator('table').first();
  result.liveHeader = (await liveTable.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.liveRows = await tableRows(liveTable);
  step('live explorer Cycles tab open');
  await shot('cycles_live.png', livePanel);
});
