// The Distributed tab in a real browser, saved and live, on a folder of 3 ranks, rank 1 a straggler:
//
//   1. the notebook's first cell holds the report's saved output (no explorer, as a notebook
//      reopened without its kernel): its Distributed tab shows the verdict naming the straggler,
//      a stacked bar per rank, and each rank's row of the split table, the straggler's marked;
//   2. the second cell runs nbprofiler.load(<folder>) with the kernel: the ipywidgets explorer's
//      Distributed tab shows the same verdict, bars and rows.
//
// The Python test compares what both show with the report's per-rank tables.
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

/** The ranks of a chart's bars, in order. */
async function bars(panel) {
  const drawn = panel.locator('.nbp-chartbox[data-chart="distributed"] .nbp-bar');
  await drawn.first().waitFor({ state: 'attached', timeout: 60000 });
  return await drawn.evaluateAll(els => els.map(e => e.getAttribute('data-step')));
}

await runScenario(result, async () => {
  const panel = await openSavedTab('Distributed');
  result.verdict = (await panel.locator('.nbp-dist-verdict').innerText()).trim();
  result.verdictWarns = (await panel.locator('.nbp-dist-verdict.nbp-banner-warn').count()) === 1;
  result.bars = await bars(panel);
  const split = panel.locator('.nbp-dist-section[data-section="split"] table');
  result.header = (await split.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.rows = await tableRows(split);
  result.marked = await split.locator('tbody tr.nbp-straggler').evaluateAll(trs => trs.map(tr => tr.getAttribute('data-rank')));
  const collectives = panel.locator('.nbp-dist-section[data-section="collectives"] table');
  result.collectivesHeader = (await collectives.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.collectives = await tableRows(collectives);
  await shot('distributed_saved.png', panel);

  let live = await activate(1);
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-cell'));
  live = await cellLocator(1);
  await live.locator('.lm-TabBar-tab').first().waitFor({ timeout: LONG });
  await waitKernelIdle();
  result.liveTabs = (await explorerTabs(live)).map(t => t.trim());
  await clickExplorerTab(live, 'Distributed');
  const livePanel = explorerPanel(live);
  const verdict = livePanel.locator('.nbp-straggler');
  await verdict.waitFor({ timeout: 60000 });
  result.liveVerdict = (await verdict.innerText()).trim();
  result.liveBars = await bars(livePanel);
  const liveSplit = livePanel.locator('table').first();
  result.liveHeader = (await liveSplit.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.liveRows = await tableRows(liveSplit);
  step('live explorer Distributed tab open');
  await shot('distributed_live.png', livePanel);
});
