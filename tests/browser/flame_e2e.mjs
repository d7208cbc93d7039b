// The Flame graph in a real browser, saved and live, on a GPU trace's report:
//
//   1. the notebook's first cell holds the report's saved output (no explorer): its Flame graph tab;
//   2. the second cell loads the same trace with the kernel: the explorer's Flame graph tab, drawn
//      by the extension from the flame MIME bundle.
//
// In each: the root box spans the graph; a click on the widest operator zooms into it (it then
// spans the width) and a click on the root zooms back out; a search states the share of the time
// its matches hold, which the Python test compares with the operator table.
import { activate, cellLocator, check, clickExplorerTab, explorerPanel, LONG, openNotebook, page, runScenario, shot, step } from './lab.mjs';

const QUERY = process.env.NBP_FLAME_QUERY ?? 'aten::conv2d';
const result = { ok: false };

/** Zoom into the widest operator and back out, then search: what the graph shows at each step. */
async function drive(graph) {
  const svg = graph.locator('svg.nbp-flame');
  await svg.waitFor({ state: 'visible', timeout: 30000 });
  const widthOf = id => svg.evaluate((el, i) => Number(el.querySelector(`g.nbp-flame-box[data-id="${i}"] rect`)?.getAttribute('width') ?? -1), id);
  const viewWidth = await svg.evaluate(el => Number(el.getAttribute('viewBox').split(' ')[2]));
  const widest = await svg.evaluate(el => {
    const ops = [...el.querySelectorAll('g.nbp-flame-box[data-kind="operator"]')];
    ops.sort((a, b) => Number(b.querySelector('rect').getAttribute('width')) - Number(a.querySelector('rect').getAttribute('width')));
    return { id: ops[0].dataset.id, name: ops[0].dataset.name, width: Number(ops[0].querySelector('rect').getAttribute('width')) };
  });
  const out = { viewWidth, rootWidth: await widthOf(0), widest };
  await svg.locator(`g.nbp-flame-box[data-id="${widest.id}"]`).click();
  out.zoomedWidth = await widthOf(widest.id);
  out.zoomStatus = (await graph.locator('.nbp-flame-status').innerText()).trim();
  await svg.locator('g.nbp-flame-box[data-id="0"]').click();
  out.outWidth = await widthOf(widest.id);
  await graph.locator('.nbp-flame-search').fill(QUERY);
  out.searchStatus = (await graph.locator('.nbp-flame-status').innerText()).trim();
  out.matches = await svg.locator('g.nbp-flame-match').count();
  out.metric = await svg.getAttribute('data-metric');
  return out;
}

await runScenario(result, async () => {
  await openNotebook();
  const cell = await cellLocator(0);
  const renderer = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  await renderer.waitFor({ timeout: 60000 });
  await renderer.locator('[role="tab"][data-tab="Flame graph"]').click();
  const saved = renderer.locator('.nbp-panel[data-tab="Flame graph"]');
  result.saved = await drive(saved);
  await shot('flame_saved.png', saved);
  step('saved Flame graph driven');

  await activate(1);
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-cell'));
  const live = await cellLocator(1);
  await live.locator('.lm-TabBar-tab').first().waitFor({ timeout: LONG });
  await clickExplorerTab(live, 'Flame graph');
  const graph = explorerPanel(live).locator('.nbp-FlameRenderer');
  await graph.waitFor({ timeout: 60000 });
  result.live = await drive(graph);
  await shot('flame_live.png', explorerPanel(live));
  step('live Flame graph driven');
  check(result.saved.matches > 0 && result.live.matches > 0, 'the search finds boxes');
});
