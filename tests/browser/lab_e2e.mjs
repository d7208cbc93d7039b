// End-to-end check of the nbprofiler JupyterLab extension in a real browser.
//
// Drives Debian's Chromium (headless, through playwright-core; no browser is
// downloaded) against a JupyterLab server that tests/browser/test_browser.py started:
//
//   1. open the notebook, run all cells;
//   2. open "Profile Cell with Options…" from the cell's context menu, choose
//      options, profile; the options are kept in the notebook metadata;
//   3. click the "Profile cell" button of the cell toolbar; wait for the
//      explorer (the ipywidgets widget: the test fails if it does not render);
//      check its tabs, sort the operator table by a column header, open the
//      Suggestions tab and check its cards;
//   4. save, shut the kernel down, reload the page, and check that the saved
//      report is drawn by the extension's renderer (never "Error displaying
//      widget"), with working tabs, sorting, memory charts and suggestion cards.
//
// Configuration comes from the environment (see lab.mjs), and
// NBP_TRAINING_MARKER (text of the training cell).
// Prints one line per step with its time, then `RESULT {json}`; exits 1 on failure.
import { readFileSync } from 'fs';
import { join } from 'path';

import {
  activate,
  cellState,
  check,
  clickExplorerTab,
  explorerPanel,
  explorerTabs,
  LONG,
  NOTEBOOK,
  notes,
  openNotebook,
  page,
  reloadAt,
  runScenario,
  REPORT_MIME,
  ROOT_DIR,
  saveNotebook,
  shot,
  shutDownKernel,
  step,
  waitKernelIdle,
  waitProfiled,
  WIDGET_MIME
} from './lab.mjs';

const MARKER = process.env.NBP_TRAINING_MARKER ?? 'for x, y in train_loader';
const REQUIRED_EXPLORER_TABS = ['Overview', 'Operators', 'Hardware', 'Memory', 'Flame graph', 'Timeline', 'Suggestions', 'Export'];
const OPTIONAL_EXPLORER_TABS = ['Kernels', 'Cell lines', 'Modules'];
// A CPU run without --stack or --modules: the views with content (no Kernels, Cell lines or Modules); the
// Overview says which flags would add the last two.
const RENDERER_TABS = ['Overview', 'Operators', 'Hardware', 'Memory', 'Flame graph', 'Timeline', 'Suggestions', 'Export'];
/** Index of the training cell among the notebook's cells. */
async function trainingIndex() {
  const index = await page.evaluate(marker => {
    const nb = window.jupyterapp.shell.currentWidget.content;
    return nb.widgets.findIndex(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(marker));
  }, MARKER);
  check(index >= 0, `a code cell containing ${JSON.stringify(MARKER)}`);
  return index;
}

/** The first-column texts of the operator table in `scope`. */
async function firstColumn(table) {
  return table.locator('tbody tr').evaluateAll(rows => rows.map(r => (r.cells?.[0] ?? r.firstElementChild)?.textContent?.trim() ?? ''));
}

/** Click a sortable header of the operator table in `scope` and check that the row order changes. */
async function checkSorting(scope, label) {
  const table = scope.locator('table').filter({ has: page.locator('tbody tr') }).first();
  await table.waitFor({ timeout: 30000 });
  const before = await firstColumn(table);
  check(before.length > 1, `${label}: the operator table has rows`);
  // Headers: <th> cells (or buttons in them) whose text names a time column.
  const headers = scope.locator('th, .nbp-sort, [data-nbp-sort]');
  const texts = await headers.allInnerTexts();
  // Calls first: the payload's rows come sorted by a time column already.
  const order = ['Calls', 'Host total', 'Host self', 'Device self', 'Total', 'Self'];
  let target = -1;
  for (const want of order) {
    target = texts.findIndex(t => t.trim().toLowerCase().startsWith(want.toLowerCase()));
    if (target >= 0) {
      break;
    }
  }
  check(target >= 0, `${label}: a sortable column header (found ${JSON.stringify(texts)})`);
  const header = headers.nth(target);
  const headerText = texts[target].trim();
  const candidates = [header, scope.locator('th').filter({ hasText: headerText }).locator('button')];
  let after = before;
  for (let attempt = 0; attempt < 2 && JSON.stringify(after) === JSON.stringify(before); attempt++) {
    await (attempt === 0 ? candidates[0] : candidates[1].first()).click();
    try {
      await page.waitForFunction(
        ([el, prev]) => {
          const rows = Array.from(el.querySelectorAll('tbody tr')).map(r => (r.cells?.[0] ?? r.firstElementChild)?.textContent?.trim() ?? '');
          return JSON.stringify(rows) !== prev;
        },
        [await table.elementHandle(), JSON.stringify(before)],
        { timeout: 5000 }
      );
    } catch {
      // The first click may have sorted in the order the rows already had: click again.
    }
    after = await firstColumn(await scope.locator('table').filter({ has: page.locator('tbody tr') }).first());
  }
  check(JSON.stringify(after) !== JSON.stringify(before), `${label}: clicking "${headerText}" changes the row order`);
  return { header: headerText, before: before.slice(0, 3), after: after.slice(0, 3) };
}

/**
 * The explorer's operator table (nbprofiler/render/widget.py, PagedTable): a
 * CSS grid of cells under header buttons whose tooltip is "sort by <label>";
 * the name cells have class "n". Click a header and check the order changes.
 */
async function checkExplorerSorting(scope) {
  const names = () => scope.locator('.nbp-grid > div.r > div.n').evaluateAll(els => els.map(e => e.getAttribute('title') ?? e.textContent));
  await scope.locator('.nbp-grid > div.r > div.n').first().waitFor({ timeout: 30000 });
  const before = await names();
  check(before.length > 1, 'explorer: the operator table has rows');
  const headers = await scope.locator('[title^="sort by "]').evaluateAll(els => els.map(e => e.getAttribute('title')));
  const wanted = ['sort by calls', 'sort by host total', 'sort by name'];
  let chosen = null;
  for (const w of wanted) {
    chosen = headers.find(h => h?.toLowerCase().startsWith(w)) ?? null;
    if (chosen) {
      break;
    }
  }
  check(chosen !== null, `explorer: a sortable header (found ${JSON.stringify(headers)})`);
  const button = scope.locator(`[title="${chosen}"]`).first();
  let after = before;
  for (let attempt = 0; attempt < 2 && JSON.stringify(after) === JSON.stringify(before); attempt++) {
    await button.click();
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline) {
      await page.waitForTimeout(200);
      after = await names();
      if (JSON.stringify(after) !== JSON.stringify(before)) {
        break;
      }
    }
  }
  check(JSON.stringify(after) !== JSON.stringify(before), `explorer: clicking "${chosen}" changes the row order`);
  return { header: chosen.replace(/^sort by /, ''), before: before.slice(0, 3), after: after.slice(0, 3) };
}

async function rendererChecks(cell, prefix) {
  const renderer = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  const tabs = await renderer.locator('[role="tab"]').evaluateAll(els => els.map(e => e.dataset.tab));
  check(JSON.stringify(tabs) === JSON.stringify(RENDERER_TABS), `${prefix}: renderer tabs ${JSON.stringify(tabs)}`);
  const tag = (await renderer.locator('.nbp-saved-tag').innerText()).trim();
  check(/^saved report · live run of \d{4}-\d{2}-\d{2} \d{2}:\d{2}$/.test(tag), `${prefix}: the tag says when the live run was (${tag})`);
  check((await renderer.locator('.nbp-panel[data-tab="Overview"] svg.nbp-chart .nbp-bar').count()) > 0, `${prefix}: breakdown chart has bars`);
  await shot(`${prefix}_overview.png`, cell.locator(".jp-Cell-outputArea"));
  await renderer.locator('[role="tab"][data-tab="Operators"]').click();
  const sorting = await checkSorting(renderer.locator('.nbp-panel[data-tab="Operators"]'), `${prefix} operators`);
  const operators = renderer.locator('.nbp-panel[data-tab="Operators"]');
  const deviceHeaders = await operators.locator('th').evaluateAll(ths => ths.map(th => th.textContent).filter(t => /device/i.test(t)));
  check(deviceHeaders.length === 0, `${prefix}: a CPU run shows no device-time columns (${JSON.stringify(deviceHeaders)})`);
  // Each header sits over its column: the same left edge as the first row's cell.
  const offsets = await operators.locator('table').first().evaluate(t =>
    Array.from(t.tHead.rows[0].cells).map((th, i) => Math.abs(th.getBoundingClientRect().left - t.tBodies[0].rows[0].cells[i].getBoundingClientRect().left)));
  check(Math.max(...offsets) < 1, `${prefix}: operator headers aligned with their columns (${JSON.stringify(offsets)})`);
  const firstOp = (await firstColumn(operators.locator('table').first()))[0];
  await operators.locator('tbody tr').first().click();
  const details = operators.locator('.nbp-row-details');
  await details.waitFor({ state: 'visible', timeout: 5000 });
  check((await details.locator('.nbp-details-title').innerText()).trim() === firstOp, `${prefix}: a clicked operator row shows its details`);
  await shot(`${prefix}_operators_sorted.png`, cell.locator(".jp-Cell-outputArea"));
  await renderer.locator('[role="tab"][data-tab="Memory"]').click();
  const memory = renderer.locator('.nbp-panel[data-tab="Memory"]');
  const memoryCharts = await memory.locator('svg.nbp-chart').count();
  check(memoryCharts > 0 && !(await memory.innerText()).includes('no memory data'), `${prefix}: the Memory tab draws memory (${memoryCharts} charts)`);
  await shot(`${prefix}_memory.png`, cell.locator(".jp-Cell-outputArea"));
  const moreViews = await renderer.locator('.nbp-panel[data-tab="Overview"] .nbp-more-views').allTextContents();
  check(moreViews.length === 1 && /--stack for Cell lines/.test(moreViews[0]) && /--modules for Modules/.test(moreViews[0]),
    `${prefix}: the Overview says once which flags add Cell lines and Modules (${JSON.stringify(moreViews)})`);
  await renderer.locator('[role="tab"][data-tab="Timeline"]').click();
  const timeline = renderer.locator('.nbp-panel[data-tab="Timeline"]');
  await timeline.locator('canvas').first().waitFor({ timeout: 15000 });
  check((await timeline.locator('.nbp-timeline-error').count()) === 0, `${prefix}: the Timeline tab draws the saved timeline`);
  await renderer.locator('[role="tab"][data-tab="Export"]').click();
  const exportPanel = renderer.locator('.nbp-panel[data-tab="Export"]');
  const downloads = await exportPanel.locator('button.nbp-download').allInnerTexts();
  check(downloads.some(t => t.startsWith('Standalone HTML')) && downloads.some(t => t.startsWith('Report data')), `${prefix}: Export offers the HTML report and its data (${JSON.stringify(downloads)})`);
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 15000 }), exportPanel.locator('button.nbp-download').first().click()]);
  const htmlPath = await download.path();
  check(htmlPath && readFileSync(htmlPath, 'utf-8').includes('class="nbp'), `${prefix}: the HTML download holds the report (${download.suggestedFilename()})`);
  await renderer.locator('[role="tab"][data-tab="Suggestions"]').click();
  const suggestions = renderer.locator('.nbp-panel[data-tab="Suggestions"]');
  check(await suggestions.isVisible(), `${prefix}: Suggestions tab shown`);
  const cards = await suggestions.locator('.nbp-card').count();
  check(cards > 0, `${prefix}: the Suggestions tab shows suggestion cards`);
  const copyButtons = await suggestions.locator('.nbp-copy').count();
  if (copyButtons > 0) {
    await suggestions.locator('.nbp-copy').first().click();
    await page.waitForFunction(el => /Copied|Copy failed/.test(el.textContent), await suggestions.locator('.nbp-copy').first().elementHandle(), { timeout: 5000 });
  }
  await shot(`${prefix}_suggestions.png`, cell.locator(".jp-Cell-outputArea"));
  return { tabs, sorting, memoryCharts, suggestionCards: cards, copyButtons };
}

const result = { notebook: NOTEBOOK };
await runScenario(result, async () => {
  // 1. Open and run the notebook.
  await openNotebook();
  step('open notebook, kernel idle');
  await shot('01_notebook_open.png');
  const t = await trainingIndex();
  const palette = await page.evaluate(() => {
    const c = window.jupyterapp.commands;
    return ['nbprofiler:profile-cell', 'nbprofiler:profile-cell-with-options'].map(id => c.hasCommand(id) && c.label(id, { isPalette: true }));
  });
  check(palette[0] === 'Profile Cell' && palette[1] === 'Profile Cell with Options…', `commands registered: ${palette}`);
  const keys = await page.evaluate(() =>
    window.jupyterapp.commands.keyBindings.filter(b => b.command === 'nbprofiler:profile-cell').map(b => b.keys.join(' '))
  );
  check(keys.includes('Accel Alt P') || keys.includes('Ctrl Alt P'), `keyboard shortcut: ${JSON.stringify(keys)}`);

  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  await page.waitForFunction(
    () => {
      const nb = window.jupyterapp.shell.currentWidget.content;
      return nb.widgets.every(c => c.model.type !== 'code' || (c.model.executionCount !== null && c.model.executionState !== 'running'));
    },
    null,
    { timeout: LONG, polling: 500 }
  );
  await waitKernelIdle();
  step('run all cells');
  const errors = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets
      .filter(c => c.model.type === 'code')
      .flatMap(c => c.model.outputs.toJSON().filter(o => o.output_type === 'error').map(o => `${o.ename}: ${o.evalue}`))
  );
  check(errors.length === 0, `the notebook runs without errors: ${errors.join('; ')}`);

  // 2. Profile cell with options…, from the context menu.
  const source0 = (await cellState(t)).source;
  let cell = await activate(t);
  // The command palette lists both commands (enabled: a code cell is active).
  await page.evaluate(() => window.jupyterapp.commands.execute('apputils:activate-command-palette'));
  const search = page.locator('.lm-CommandPalette-input');
  await search.waitFor();
  await search.pressSequentially('profile cell');
  const paletteItems = page.locator('.lm-CommandPalette-item .lm-CommandPalette-itemLabel');
  await paletteItems.first().waitFor();
  const listed = await paletteItems.allInnerTexts();
  check(listed.includes('Profile Cell') && listed.includes('Profile Cell with Options…'), `palette items: ${JSON.stringify(listed)}`);
  await shot('02_command_palette.png');
  await search.press('Escape');
  await cell.locator('.jp-InputArea-editor').click({ button: 'right' });
  const menu = page.locator('.lm-Menu');
  const menuItem = label => menu.locator('.lm-Menu-item').filter({ has: page.locator('.lm-Menu-itemLabel', { hasText: new RegExp(`^${label}$`) }) });
  await menuItem('Profile Cell with Options…').waitFor();
  check((await menuItem('Profile Cell').count()) === 1, 'context menu has "Profile Cell"');
  await shot('02b_context_menu.png');
  await menuItem('Profile Cell with Options…').click();
  const dialog = page.locator('.jp-Dialog');
  await dialog.waitFor();
  for (const name of ['wait', 'warmup', 'active', 'repeat']) {
    check((await dialog.locator(`input[name="${name}"]`).count()) === 1, `options dialog has ${name}`);
  }
  await dialog.locator('input[name="active"]').fill('2');
  await dialog.locator('select[name="device"]').selectOption('cpu');
  await dialog.locator('input[name="modules"]').check();
  const preview = await dialog.locator('.nbp-preview').innerText();
  check(/--active 2( --repeat 1)? --device cpu --modules$/.test(preview), `dialog preview: ${preview}`);
  await shot('03_options_dialog.png');
  let before = (await cellState(t)).count;
  await dialog.locator('.jp-mod-accept').click();
  await waitProfiled(t, before);
  step('profile with options (context menu, dialog)');
  const optionsMetadata = await page.evaluate(() => window.jupyterapp.shell.currentWidget.model.getMetadata('nbprofiler'));
  check(optionsMetadata?.profile_options?.active === 2 && optionsMetadata.profile_options.modules === true, `options kept in metadata: ${JSON.stringify(optionsMetadata)}`);
  check((await cellState(t)).source === source0, 'profiling with options leaves the cell source unchanged');

  // 3. "Profile cell" from the cell toolbar.
  cell = await activate(t);
  const button = cell.locator('.jp-cell-toolbar jp-button[data-command="nbprofiler:profile-cell"]');
  await button.waitFor();
  const tooltip = await button.getAttribute('title');
  check(/^Profile cell/.test(tooltip ?? ''), `toolbar button tooltip: ${tooltip}`);
  check((await button.locator('svg[data-icon="nbprofiler:profile"]').count()) === 1, 'toolbar button has the nbprofiler icon');
  await button.hover();
  await shot('04_cell_toolbar_button.png');
  before = (await cellState(t)).count;
  await button.click();
  await waitProfiled(t, before);
  await waitKernelIdle();
  step('profile cell (toolbar button) until the report shows');
  const live = await cellState(t);
  check(live.source === source0, 'Profile cell leaves the cell source unchanged');
  const bundles = live.outputs.filter(o => o.data && o.data[REPORT_MIME]);
  check(bundles.length === 1, `one output holds the report data (${live.outputs.map(o => Object.keys(o.data ?? {}).join('+')).join(', ')})`);
  // A person ran the cell in JupyterLab with a live kernel: the Python side must
  // put the ipywidgets explorer in the bundle, and the explorer must lead.
  check(!!bundles[0].data[WIDGET_MIME], `the live output carries the ipywidgets explorer (bundle: ${Object.keys(bundles[0].data).join(', ')})`);
  result.bundle = Object.keys(bundles[0].data);
  const mode = await cell.locator('.nbp-ReportRenderer').getAttribute('data-nbprofiler-mode');
  result.liveMode = mode;
  check(mode === 'widget', `with the live kernel the ipywidgets explorer leads (renderer mode ${mode})`);
  await cell.scrollIntoViewIfNeeded();
  // The widget manager rendered the explorer: its tab bar, not "Error displaying widget".
  await page.waitForFunction(el => el.querySelectorAll('.lm-TabBar-tab').length > 0, await cell.elementHandle(), { timeout: 60000 });
  check(!(await cell.innerText()).includes('Error displaying widget'), 'the explorer renders (no "Error displaying widget")');
  const tabs = (await explorerTabs(cell)).map(s => s.trim());
  for (const name of REQUIRED_EXPLORER_TABS) {
    check(tabs.includes(name), `explorer tab ${name} (tabs: ${JSON.stringify(tabs)})`);
  }
  check(tabs.every(name => REQUIRED_EXPLORER_TABS.includes(name) || OPTIONAL_EXPLORER_TABS.includes(name)), `no unexpected explorer tabs: ${JSON.stringify(tabs)}`);
  result.explorerTabs = tabs;
  await shot('05_live_explorer_overview.png', cell.locator('.jp-Cell-outputArea'));
  await clickExplorerTab(cell, 'Operators');
  result.explorerSorting = await checkExplorerSorting(explorerPanel(cell));
  await shot('06_live_explorer_operators_sorted.png', cell.locator('.jp-Cell-outputArea'));
  await clickExplorerTab(cell, 'Suggestions');
  // The Suggestions page (nbprofiler/render/widget.py) holds one "card" per suggestion.
  const explorerCards = explorerPanel(cell).locator('.nbp .card');
  await explorerCards.first().waitFor({ timeout: 30000 });
  result.explorerSuggestionCards = await explorerCards.count();
  result.explorerFirstSuggestion = (await explorerCards.first().locator('b').first().innerText()).trim();
  check(result.explorerFirstSuggestion.length > 0, 'the first suggestion card has a title');
  await shot('07_live_explorer_suggestions.png', cell.locator('.jp-Cell-outputArea'));
  step('explorer: tabs, sort by a column, Suggestions');

  // 4. Save, shut the kernel down, reload.
  await saveNotebook();
  const saved = JSON.parse(readFileSync(join(ROOT_DIR, NOTEBOOK), 'utf-8'));
  const savedCell = saved.cells.filter(c => c.cell_type === 'code')[
    await page.evaluate(i => window.jupyterapp.shell.currentWidget.content.widgets.slice(0, i).filter(c => c.model.type === 'code').length, t)
  ];
  const savedBundle = savedCell.outputs.find(o => o.data && o.data[REPORT_MIME]);
  check(!!savedBundle, 'the saved notebook keeps the report data in the output');
  check(!!savedBundle.data[WIDGET_MIME], 'the saved output keeps the same mimebundle (widget view included)');
  check(saved.metadata?.nbprofiler?.profile_options?.active === 2, 'the saved notebook keeps the last options');
  result.savedWidgetState = !!saved.metadata?.widgets;
  await shutDownKernel();
  step('save, shut down the kernel');

  cell = await reloadAt(t);
  await cell.scrollIntoViewIfNeeded();
  await page.waitForFunction(
    i => !!window.jupyterapp.shell.currentWidget.content.widgets[i].node.querySelector('.nbp-ReportRenderer[data-nbprofiler-mode]'),
    t,
    { timeout: 60000 }
  );
  // Whatever kernel the page starts now (a new one) cannot have the widget: let
  // the renderer ask it, then check that it still shows the saved report.
  try {
    await waitKernelIdle(60000);
  } catch {
    notes.push('no kernel started after the reload');
  }
  await page.waitForTimeout(1500);
  step('reload, saved report rendered');
  const reloadedMode = await cell.locator('.nbp-ReportRenderer').getAttribute('data-nbprofiler-mode');
  result.reloadedMode = reloadedMode;
  result.kernelAfterReload = await page.evaluate(() => window.jupyterapp.shell.currentWidget.sessionContext.session?.kernel?.name ?? null);
  check(reloadedMode === 'static', `the saved report is drawn by the extension renderer (mode ${reloadedMode})`);
  const notebookText = await page.locator('.jp-NotebookPanel').innerText();
  check(!notebookText.includes('Error displaying widget'), 'no "Error displaying widget" in the reopened notebook');
  await shot('08_reopened_notebook.png');
  result.savedRenderer = await rendererChecks(cell, '09_saved');
  step('saved report: tabs, sort by a column, Suggestions');

  // 5. In the new kernel nothing has loaded nbprofiler: "Profile cell" on a
  // plain cell loads it, and runs the cell under the magic, source unchanged.
  const plainSource = [
    'import torch',
    'w = torch.randn(64, 64, requires_grad=True)',
    'sgd = torch.optim.SGD([w], lr=0.01)',
    'for _ in range(6):',
    '    loss = (w @ w).sum()',
    '    sgd.zero_grad()',
    '    loss.backward()',
    '    sgd.step()'
  ].join('\n');
  const loadedBefore = await page.evaluate(async () => {
    const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
    const reply = await kernel.requestExecute({ code: '', silent: true, store_history: false,
      user_expressions: { m: "'torchprofile' in get_ipython().magics_manager.magics['cell']" } }).done;
    return reply.content.user_expressions.m.data['text/plain'];
  });
  check(loadedBefore === 'False', `the new kernel has not loaded nbprofiler (${loadedBefore})`);
  const plain = await page.evaluate(src => {
    const panel = window.jupyterapp.shell.currentWidget;
    const nb = panel.content;
    nb.activeCellIndex = nb.widgets.length - 1;
    return window.jupyterapp.commands.execute('notebook:insert-cell-below').then(() => {
      nb.activeCell.model.sharedModel.setSource(src);
      return nb.activeCellIndex;
    });
  }, plainSource);
  cell = await activate(plain);
  before = (await cellState(plain)).count;
  await cell.locator('.jp-cell-toolbar jp-button[data-command="nbprofiler:profile-cell"]').click();
  await waitProfiled(plain, before);
  const plainState = await cellState(plain);
  check(plainState.source === plainSource, 'Profile cell leaves a plain cell\'s source unchanged');
  check(!plainState.outputs.some(o => o.output_type === 'error'), `the plain cell profiles without error: ${JSON.stringify(plainState.outputs.filter(o => o.output_type === 'error'))}`);
  check(plainState.outputs.some(o => o.data && o.data[REPORT_MIME]), 'the plain cell shows a report');
  await shot('10_plain_cell_profiled.png', cell);
  step('profile a plain cell in a new kernel (extension loaded on demand)');

});
