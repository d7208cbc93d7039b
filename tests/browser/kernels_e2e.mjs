// The Kernels tab of a GPU trace with long templated kernel names, saved and live:
//
//   1. the notebook's first cell holds the report's saved output (no explorer): its Kernels table;
//   2. the second cell loads the same trace with the kernel: the explorer's Kernels grid.
//
// In each, every row is one line high, the table scrolls sideways in its own box so its last
// column can be scrolled into view, and each name's hover text is the whole kernel name. The
// Python test compares the names with the report's.
import { activate, cellLocator, check, clickExplorerTab, explorerPanel, LONG, openNotebook, page, runScenario, shot, step } from './lab.mjs';

const result = { ok: false };

/** Geometry of a table-like element: row heights against one line, its scroll box, the last header. */
async function measure(box, rowSelector, nameSelector, lastHeaderSelector) {
  return box.evaluate(
    (el, [rows, names, lastHeader]) => {
      const scroller = el;
      const nameCells = Array.from(scroller.querySelectorAll(names));
      const line = parseFloat(getComputedStyle(nameCells[0]).lineHeight) || 16;
      const heights = Array.from(scroller.querySelectorAll(rows)).map(r => r.getBoundingClientRect().height);
      const header = Array.from(scroller.querySelectorAll(lastHeader)).pop();
      header.scrollIntoView({ block: 'nearest', inline: 'end' });
      const h = header.getBoundingClientRect();
      const s = scroller.getBoundingClientRect();
      return {
        rows: heights.length,
        line,
        tallestRow: Math.max(...heights),
        tableHeight: scroller.scrollHeight,
        scrollWidth: scroller.scrollWidth,
        clientWidth: scroller.clientWidth,
        overflowX: getComputedStyle(scroller).overflowX,
        lastHeaderVisible: h.right <= s.right + 1 && h.left >= s.left - 1,
        lastHeader: header.textContent.trim(),
        titles: nameCells.slice(0, 25).map(c => c.getAttribute('title')),
        texts: nameCells.slice(0, 25).map(c => c.textContent.trim())
      };
    },
    [rowSelector, nameSelector, lastHeaderSelector]
  );
}

await runScenario(result, async () => {
  await openNotebook();
  const cell = await cellLocator(0);
  const renderer = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  await renderer.waitFor({ timeout: 60000 });
  await renderer.locator('[role="tab"][data-tab="Kernels"]').click();
  const wrap = renderer.locator('.nbp-panel[data-tab="Kernels"] .nbp-table-wrap').filter({ has: page.locator('table.nbp-kernel-table') });
  await wrap.waitFor({ state: 'visible', timeout: 10000 });
  await renderer.locator('.nbp-panel[data-tab="Kernels"] .nbp-limit-select').selectOption('0');
  result.saved = await measure(wrap, 'tbody tr', 'tbody tr td:first-child', 'thead th');
  await shot('kernels_saved.png', renderer.locator('.nbp-panel[data-tab="Kernels"]'));
  step('saved Kernels tab measured');

  await activate(1);
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-cell'));
  const live = await cellLocator(1);
  await live.locator('.lm-TabBar-tab').first().waitFor({ timeout: LONG });
  await clickExplorerTab(live, 'Kernels');
  const grid = explorerPanel(live).locator('.nbp-scroll').filter({ has: page.locator('.nbp-grid') }).first();
  await grid.locator('.nbp-grid div.n.c').first().waitFor({ timeout: 60000 });
  result.live = await measure(grid, '.nbp-grid > div.r > div.c', '.nbp-grid > div.r > div.n.c:first-child', '.nbp-grid > div.r:first-child > div');
  await shot('kernels_live.png', explorerPanel(live));
  step('live Kernels tab measured');
  for (const [where, m] of Object.entries({ saved: result.saved, live: result.live })) {
    check(m.rows > 1, `${where}: the kernel table has rows`);
    check(m.tallestRow <= 1.5 * m.line + 8, `${where}: every row is one line (tallest ${m.tallestRow} px, line ${m.line} px)`);
  }
});
