// "Try it" in a real browser: re-profile a suggestion in one click.
//
// Against a JupyterLab server that tests/browser/test_browser.py started on a
// slow-loader notebook (a Dataset that sleeps per sample, no DataLoader
// workers, a `%%torchprofile` training cell):
//
//   1. run all cells; the profiled cell shows the live explorer;
//   2. open its Suggestions tab and click "Try it" on the DataLoader suggestion
//      (kind "dataloader…"); the button is disabled while it runs;
//   3. a new cell appears above the profiled one (Run All then runs the fix before the profile), marked `# nbprofiler: trying "<title>"`, with
//      the card's code and the cell metadata {"nbprofiler": {"tried": KIND}}; it ran;
//   4. the profiled cell re-ran with `--compare --tried KIND` (its source
//      unchanged) and its comparison says "faster" with an interval, and the
//      stated gain beside the measured one;
//   5. saved, kernel shut down, page reloaded: the comparison is drawn from its
//      saved HTML by the extension's renderer.
//
// Configuration: see lab.mjs. Prints one line per step, then `RESULT {json}`.
import {
  cellLocator,
  cellState,
  check,
  clickExplorerTab,
  explorerPanel,
  LONG,
  openNotebook,
  page,
  reloadAt,
  REPORT_MIME,
  runAllCells,
  runScenario,
  saveNotebook,
  shot,
  shutDownKernel,
  step,
  waitKernelIdle
} from './lab.mjs';

const COMPARISON_MIME = 'application/vnd.nbprofiler.comparison+json';
const MARKER_PREFIX = '# nbprofiler: trying "';
// "1.74× faster (1.52–1.96)": the speed-up, then its interval.
const FASTER = /(\d+(?:\.\d+)?)× faster \((\d+(?:\.\d+)?)–(\d+(?:\.\d+)?)\)/;

function cellCount() {
  return page.evaluate(() => window.jupyterapp.shell.currentWidget.content.widgets.length);
}

/** The first line of the code the kernel last ran as a cell, as sent (IPython's raw input history), asked without running anything. */
async function lastKernelMagicLine() {
  const repr = await page.evaluate(async () => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const reply = await kernel.requestExecute({
      code: '', silent: true, store_history: false,
      user_expressions: { last: 'get_ipython().history_manager.input_hist_raw[-1].splitlines()[0]' }
    }).done;
    return reply.content.user_expressions.last.data['text/plain'];
  });
  return repr.replace(/^(['"])(.*)\1$/, '$2');
}

const result = {};
await runScenario(result, async () => {
  // 1. Run the notebook: the training cell is profiled and shows the explorer.
  await openNotebook();
  step('open notebook, kernel idle');
  const t = await runAllCells();
  const first = await cellState(t);
  check(!first.outputs.some(o => o.output_type === 'error'), `the training cell profiles without error: ${JSON.stringify(first.outputs.filter(o => o.output_type === 'error'))}`);
  let cell = await cellLocator(t);
  await cell.scrollIntoViewIfNeeded();
  await page.waitForFunction(el => el.querySelectorAll('.lm-TabBar-tab').length > 0, await cell.elementHandle(), { timeout: 60000 });
  check((await cell.locator('.nbp-ReportRenderer').getAttribute('data-nbprofiler-mode')) === 'widget', 'the live explorer shows');
  step('run all cells: the training cell is profiled');

  // 2. Suggestions tab: "Try it" on the DataLoader suggestion.
  check(await page.evaluate(() => document.body.classList.contains('nbp-lab')), 'the extension marks the page with nbp-lab');
  await clickExplorerTab(cell, 'Suggestions');
  const suggestions = explorerPanel(cell);
  const button = suggestions.locator('button.nbp-try[data-nbp-kind^="dataloader"]').first();
  await button.waitFor({ state: 'visible', timeout: 30000 });
  const kind = await button.getAttribute('data-nbp-kind');
  const card = suggestions.locator('.card').filter({ has: page.locator(`button.nbp-try[data-nbp-kind="${kind}"]`) }).first();
  const title = (await card.locator('b').first().textContent()).replace(/\s+/g, ' ').trim();
  const code = await card.locator('pre').first().textContent();
  check(/num_workers\s*=/.test(code), `the DataLoader card's code sets num_workers: ${code}`);
  check(await card.locator('.nbp-try-line').isHidden(), 'in JupyterLab the by-hand line is hidden');
  result.suggestion = { kind, title };
  await button.scrollIntoViewIfNeeded();
  await shot('01_try_it_button.png', cell.locator('.jp-Cell-outputArea'));
  const cellsBefore = await cellCount();
  const countBefore = first.count;
  // Clicked, then clicked again at once, in one turn of the page: the first click disables the
  // button before anything else runs (the re-run soon replaces the card, button and all).
  const disabledAtOnce = await button.evaluate(b => {
    b.click();
    const disabled = b.disabled;
    b.click();
    return disabled;
  });
  check(disabledAtOnce, 'the button is disabled while it runs, and a second click does nothing');
  step('click "Try it" on the DataLoader suggestion');

  // 3-4. The marked cell above, then the profiled cell again (now one further down), with its comparison.
  const p = t + 1;
  await page.waitForFunction(
    ([i, before]) => {
      const widgets = window.jupyterapp.shell.currentWidget.content.widgets;
      const profiled = widgets[i]; // there once the tried cell is inserted above it
      return profiled !== undefined && profiled.model.executionCount !== before && profiled.model.executionState !== 'running' &&
        profiled.model.outputs.toJSON().some(o => o.data && o.data['application/vnd.nbprofiler.comparison+json']);
    },
    [p, countBefore],
    { timeout: LONG, polling: 250 }
  );
  await waitKernelIdle();
  step('the tried cell ran, the profiled cell re-ran with its comparison');
  check((await cellCount()) === cellsBefore + 1, `one new cell (a second click does nothing): ${cellsBefore} → ${await cellCount()}`);
  const tried = await page.evaluate(i => {
    const c = window.jupyterapp.shell.currentWidget.content.widgets[i];
    return { source: c.model.sharedModel.getSource(), metadata: c.model.getMetadata('nbprofiler'), count: c.model.executionCount, outputs: c.model.outputs.toJSON() };
  }, t);
  check(tried.source === `${MARKER_PREFIX}${title}"\n${code.trimEnd()}`, `the new cell above holds the marker and the card's code: ${JSON.stringify(tried.source)}`);
  check(tried.metadata?.tried === kind, `the new cell's metadata names the suggestion: ${JSON.stringify(tried.metadata)}`);
  check(tried.count !== null && !tried.outputs.some(o => o.output_type === 'error'), `the new cell ran without error: ${JSON.stringify(tried.outputs)}`);
  result.triedCell = tried.source.split('\n')[0];
  result.triedAt = t;

  const again = await cellState(p);
  result.profiledAt = p;
  check(again.source === first.source, 'the profiled cell keeps its source');
  const ran = await lastKernelMagicLine();
  const expected = `${first.source.split('\n')[0]} --compare --tried ${kind}`;
  check(ran === expected, `the profiled cell re-ran with its own flags, then --compare --tried ${kind}: ${ran}`);
  check(again.outputs.some(o => o.data && o.data[REPORT_MIME]), 'the re-run shows its report');
  const comparison = again.outputs.find(o => o.data && o.data[COMPARISON_MIME]);
  const payload = comparison.data[COMPARISON_MIME];
  const text = comparison.data['text/plain'];
  const faster = FASTER.exec(payload.verdict);
  check(faster !== null, `the comparison says faster, with an interval: ${payload.verdict}`);
  check(Number(faster[2]) > 1, `the interval is above 1: ${payload.verdict}`);
  const stated = /stated: [^\n]*· measured: [^\n]*/.exec(text);
  check(stated !== null, `the stated gain is beside the measured one: ${text}`);
  result.verdict = payload.verdict;
  result.statedVsMeasured = stated[0];

  cell = await cellLocator(p);
  const shown = cell.locator('.nbp-ComparisonRenderer');
  await shown.waitFor({ timeout: 30000 });
  await page.waitForFunction(
    ([el, verdict]) => el.innerText.includes(verdict) && /stated: .*measured: /.test(el.innerText),
    [await shown.elementHandle(), payload.verdict],
    { timeout: 30000 }
  );
  result.liveComparisonMode = await shown.getAttribute('data-nbprofiler-mode');
  check(result.liveComparisonMode === 'widget', `with the live kernel the Compare view leads (mode ${result.liveComparisonMode})`);
  await shown.scrollIntoViewIfNeeded();
  await shot('02_comparison_live.png', cell.locator('.jp-Cell-outputArea'));
  await shot('03_notebook_after_try.png');
  step('comparison: faster, interval, stated beside measured');

  // 5. Reopened without the kernel: the saved comparison HTML, drawn by the extension.
  await saveNotebook();
  await shutDownKernel();
  cell = await reloadAt(p);
  await cell.scrollIntoViewIfNeeded();
  const saved = cell.locator('.nbp-ComparisonRenderer[data-nbprofiler-mode="static"]');
  await saved.waitFor({ timeout: 60000 });
  const savedText = await saved.innerText();
  check(savedText.includes(payload.verdict), `the saved comparison shows the verdict: ${savedText.slice(0, 300)}`);
  check(!(await page.locator('.jp-NotebookPanel').innerText()).includes('Error displaying widget'), 'no "Error displaying widget" in the reopened notebook');
  await shot('04_comparison_saved.png', cell.locator('.jp-Cell-outputArea'));
  step('reload without the kernel: the saved comparison is drawn');

});
