// The explorer's Export tab in a real browser: a file per run, never written over, downloaded in the page.
//
// Against a JupyterLab server that tests/browser/test_browser.py started on a small
// notebook with a `%%torchprofile` training cell:
//
//   1. run all cells; the profiled cell shows the live explorer;
//   2. its Export tab names the trace after the notebook, the cell (its id's
//      first 8 characters) and the time;
//   3. "Save Chrome trace": the status gives the path and a download link, and
//      the browser downloads exactly the bytes the kernel wrote;
//   4. a second save keeps the first file and says that it took a new name.
//
// Configuration: see lab.mjs. Prints one line per step, then `RESULT {json}`.
import { readFileSync } from 'fs';
import { join } from 'path';

import {
  cellLocator,
  check,
  clickExplorerTab,
  explorerPanel,
  NOTEBOOK,
  openNotebook,
  page,
  ROOT_DIR,
  runAllCells,
  runScenario,
  shot,
  step
} from './lab.mjs';

const result = {};
await runScenario(result, async () => {
  await openNotebook();
  const t = await runAllCells();
  const cellId = await page.evaluate(i => window.jupyterapp.shell.currentWidget.content.widgets[i].model.id, t);
  const cell = await cellLocator(t);
  await cell.scrollIntoViewIfNeeded();
  await page.waitForFunction(el => el.querySelectorAll('.lm-TabBar-tab').length > 0, await cell.elementHandle(), { timeout: 60000 });
  step('run all cells: the training cell is profiled');

  await clickExplorerTab(cell, 'Export');
  const panel = explorerPanel(cell);
  const traceField = panel.locator('.widget-text').filter({ hasText: 'trace file' }).locator('input');
  await traceField.waitFor({ state: 'visible', timeout: 30000 });
  const tracePath = await traceField.inputValue();
  const stem = NOTEBOOK.replace(/\.ipynb$/, '').replace(/[^A-Za-z0-9_-]+/g, '_');
  const named = new RegExp(`^nbprofiler_exports/${stem}_cell${cellId.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 8)}_\\d{8}-\\d{6}(-\\d+)?/`);
  check(named.test(tracePath), `the trace is named after the notebook, the cell ${cellId} and the time: ${tracePath}`);
  result.tracePath = tracePath;
  step('the Export tab names the files per run');

  const status = panel.locator('.widget-html').filter({ hasText: 'Saved the' });
  await panel.getByRole('button', { name: 'Save Chrome trace' }).click();
  const link = status.locator('a[download]');
  await link.waitFor({ state: 'visible', timeout: 30000 });
  check((await status.innerText()).includes(tracePath), `the status gives the path: ${await status.innerText()}`);
  await shot('01_export_saved.png', panel);
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 30000 }), link.click()]);
  const downloaded = readFileSync(await download.path());
  const written = readFileSync(join(ROOT_DIR, tracePath));
  check(download.suggestedFilename() === tracePath.split('/').pop(), `the download keeps the file's name: ${download.suggestedFilename()}`);
  check(downloaded.equals(written), `the browser downloads the bytes the kernel wrote (${downloaded.length} vs ${written.length} bytes)`);
  result.downloadedBytes = downloaded.length;
  step('Save Chrome trace: the link downloads the file');

  await panel.getByRole('button', { name: 'Save Chrome trace' }).click();
  await page.waitForFunction(el => el.innerText.includes('so this is a new name'), await status.elementHandle(), { timeout: 30000 });
  check(readFileSync(join(ROOT_DIR, tracePath)).equals(written), 'the first file is unchanged');
  const second = tracePath.replace(/\.json\.gz$/, '-2.json.gz');
  check(readFileSync(join(ROOT_DIR, second)).equals(written), `the second save went to ${second}`);
  step('a second save takes a new name and says so');
});
