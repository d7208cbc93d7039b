// The report's output across a kernel's life, in a real JupyterLab (tests/browser/test_browser_reload.py):
//
//   B. shut the kernel down under the explorer: the saved report replaces it at once, and says why;
//   C. close the notebook's tab and reopen it without reloading the page, twice: each time the saved
//      report is drawn (`static`), never the dead explorer, and its operator table sorts;
//   A. in a new kernel, profile again, then reload the page (F5) while that kernel runs, three times:
//      each time the live explorer comes back (`data-nbprofiler-mode="widget"`) and its table sorts.
//
// Configuration comes from the environment (see lab.mjs). Prints `RESULT {json}`.
import {
  check,
  LONG,
  NOTEBOOK,
  openNotebook,
  page,
  reloadAt,
  runAllCells,
  runScenario,
  saveNotebook,
  shot,
  shutDownKernel,
  step,
  waitKernelIdle
} from './lab.mjs';

const RENDERER = '.nbp-ReportRenderer[data-nbprofiler-mode]';

/** The renderer's mode once it has settled on `want` (or the last mode seen after `timeout`). */
async function settledMode(index, want, timeout = 60000) {
  try {
    await page.waitForFunction(
      ([i, sel, w]) => window.jupyterapp.shell.currentWidget.content.widgets[i]?.node.querySelector(sel)?.dataset.nbprofilerMode === w,
      [index, RENDERER, want],
      { timeout, polling: 200 }
    );
  } catch {
    // Report the mode it stayed in.
  }
  return page.evaluate(
    ([i, sel]) => window.jupyterapp.shell.currentWidget.content.widgets[i]?.node.querySelector(sel)?.dataset.nbprofilerMode ?? null,
    [index, RENDERER]
  );
}

/** Open the Operators tab and click the "calls" header (twice if the first click kept the order):
 *  true when the row order changes. The explorer's headers are titled "sort by <column>". */
async function sorts(index, mode) {
  const cell = page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell').nth(index);
  await cell.scrollIntoViewIfNeeded();
  const tab = mode === 'widget'
    ? cell.locator('.lm-TabBar-tab').filter({ hasText: /^Operators/ }).first()
    : cell.locator('[role="tab"][data-tab="Operators"]');
  await tab.click();
  const rows = mode === 'widget' ? '.nbp-grid > div.r > div.n' : '.nbp-panel[data-tab="Operators"] table tbody tr';
  await cell.locator(rows).first().waitFor({ timeout: 30000 });
  const order = () => cell.locator(rows).evaluateAll(els => els.map(e => e.getAttribute('title') ?? e.textContent));
  const before = JSON.stringify(await order());
  const header = mode === 'widget'
    ? cell.locator('[title^="sort by calls"]').first()
    : cell.locator('.nbp-panel[data-tab="Operators"] th').filter({ hasText: /^calls/i }).locator('button').first();
  for (let click = 0; click < 2; click++) {
    await header.click();
    for (let wait = 0; wait < 50; wait++) {
      await page.waitForTimeout(200);
      if (JSON.stringify(await order()) !== before) {
        return true;
      }
    }
  }
  return false;
}

async function profiledIndex() {
  return page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets.findIndex(c => c.model.sharedModel.getSource().startsWith('%%torchprofile'))
  );
}

/** Close the notebook's tab and open it again, without reloading the page; the profiled cell's index. */
async function closeAndReopen() {
  await page.evaluate(() => void window.jupyterapp.shell.currentWidget.close());
  await page.waitForFunction(() => !document.querySelector('.jp-NotebookPanel'), null, { timeout: 30000 });
  await page.evaluate(path => void window.jupyterapp.commands.execute('docmanager:open', { path }), NOTEBOOK);
  await page.waitForFunction(
    sel => !!window.jupyterapp.shell.currentWidget?.content?.widgets?.some(c => c.node.querySelector(sel)),
    RENDERER,
    { timeout: LONG }
  );
  return profiledIndex();
}

const result = { afterShutdown: null, reopens: [], reloads: [] };
await runScenario(result, async () => {
  await openNotebook();
  let index = await runAllCells();
  check((await settledMode(index, 'widget')) === 'widget', 'the live explorer shows after the run');
  step('run all: the explorer shows');
  await saveNotebook();

  // B. The kernel stops under the explorer.
  await shutDownKernel();
  const afterShutdown = await settledMode(index, 'static', 30000);
  const footer = await page.locator('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell').nth(index).locator('.nbp-footer').innerText().catch(() => '');
  result.afterShutdown = { mode: afterShutdown, saysWhy: /kernel that made the interactive explorer has stopped/.test(footer) };
  await shot('after_shutdown.png');
  step(`kernel shut down: ${afterShutdown}`);

  // C. Closed and reopened without a page reload.
  for (let i = 0; i < 2; i++) {
    index = await closeAndReopen();
    // Give a kernel, if the page starts one, the time to answer the renderer.
    await page.waitForTimeout(3000);
    const mode = await settledMode(index, 'static', 30000);
    const dead = (await page.locator('.jp-NotebookPanel').innerText()).includes('Error displaying widget');
    const sorted = mode === 'static' ? await sorts(index, mode) : false;
    result.reopens.push({ mode, sorted, dead });
    await shot(`reopen_${i + 1}.png`);
    step(`close and reopen ${i + 1} without a kernel: ${mode}, sorts: ${sorted}`);
  }

  // A. A new kernel makes a new report; the page is reloaded while it runs.
  await page.evaluate(() => window.jupyterapp.shell.currentWidget.sessionContext.changeKernel({ name: 'python3' }));
  await waitKernelIdle();
  index = await runAllCells();
  check((await settledMode(index, 'widget')) === 'widget', 'the live explorer shows after the second run');
  await saveNotebook();
  step('new kernel, run all: the explorer shows');
  for (let i = 0; i < 3; i++) {
    await reloadAt(index);
    await waitKernelIdle();
    const mode = await settledMode(index, 'widget');
    const sorted = mode === 'widget' ? await sorts(index, mode) : false;
    result.reloads.push({ mode, sorted });
    await shot(`reload_${i + 1}.png`);
    step(`reload ${i + 1} with the kernel running: ${mode}, sorts: ${sorted}`);
  }
});
