// What the browser tests share: the configuration from the environment, the
// browser (Debian's Chromium, headless, through playwright-core; no browser is
// downloaded), the step timer, and helpers for JupyterLab's notebook, cells and
// the ipywidgets explorer. Importing it launches the browser; `finish` closes it,
// writes `result.json` and prints `RESULT {json}` (what test_browser.py reads).
//
// Configuration (see test_browser.py): NBP_LAB_URL, NBP_LAB_TOKEN, NBP_NOTEBOOK,
// NBP_ROOT_DIR, NBP_SCREENSHOTS, NBP_CHROMIUM (default /usr/bin/chromium),
// NBP_LONG_TIMEOUT_MS.
import { createRequire } from 'module';
import { mkdirSync, writeFileSync } from 'fs';
import { join } from 'path';

const require = createRequire(new URL('../../labextension/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const env = process.env;
export const BASE = (env.NBP_LAB_URL ?? 'http://127.0.0.1:8888/').replace(/\/?$/, '/');
export const TOKEN = env.NBP_LAB_TOKEN ?? '';
export const NOTEBOOK = env.NBP_NOTEBOOK ?? '01_quickstart.ipynb';
export const ROOT_DIR = env.NBP_ROOT_DIR ?? '.';
export const SHOTS = env.NBP_SCREENSHOTS ?? 'build/screenshots';
export const CHROMIUM = env.NBP_CHROMIUM ?? '/usr/bin/chromium';
export const LONG = Number(env.NBP_LONG_TIMEOUT_MS ?? 240000);

export const REPORT_MIME = 'application/vnd.nbprofiler.report+json';
export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';

mkdirSync(SHOTS, { recursive: true });
const timings = [];
/** Things worth knowing about a run that are no failure; they go into the result. */
export const notes = [];
const started = Date.now();
let last = started;

export function step(name) {
  const now = Date.now();
  timings.push({ step: name, seconds: (now - last) / 1000 });
  console.log(`[${((now - started) / 1000).toFixed(1).padStart(6)} s] ${name} (${((now - last) / 1000).toFixed(1)} s)`);
  last = now;
}

export function check(condition, message) {
  if (!condition) {
    throw new Error(`check failed: ${message}`);
  }
}

export const browser = await chromium.launch({
  executablePath: CHROMIUM,
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run'
  ]
});
const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(BASE).origin });
export const page = await context.newPage();
export const pageErrors = [];
// With where it was thrown (the first frames of its stack) and at which step, so that a failure says whose code threw.
page.on('pageerror', err => {
  const frames = (err.stack ?? '').split('\n').slice(1, 6).map(line => line.trim()).join(' < ');
  pageErrors.push(`${String(err)} [after step "${timings.at(-1)?.step ?? 'start'}"; ${frames || 'no stack'}]`);
});
page.on('dialog', d => {
  // An alert() would mean hostile markup ran: fail loudly.
  pageErrors.push(`unexpected ${d.type()} dialog: ${d.message()}`);
  void d.dismiss();
});

export async function shot(name, locator) {
  const path = join(SHOTS, name);
  if (locator) {
    await locator.screenshot({ path });
  } else {
    await page.screenshot({ path });
  }
  return path;
}


/** Open the notebook and wait for its kernel to be idle. */
export async function openNotebook() {
  await page.goto(`${BASE}lab/tree/${NOTEBOOK}?token=${TOKEN}`);
  await page.waitForSelector('.jp-NotebookPanel .jp-Cell', { timeout: 120000 });
  await page.waitForFunction(() => !!window.jupyterapp?.shell?.currentWidget?.sessionContext, null, { timeout: 60000 });
  await page.evaluate(() => window.jupyterapp.shell.collapseLeft());
  await waitKernelIdle();
}

export async function waitKernelIdle(timeout = 120000) {
  await page.waitForFunction(
    () => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle',
    null,
    { timeout }
  );
}


/** Run every cell of the open notebook, wait until each has run and the kernel is idle, and
 *  return the index of the `%%torchprofile` cell. */
export async function runAllCells() {
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  await page.waitForFunction(
    () => window.jupyterapp.shell.currentWidget.content.widgets.every(
      c => c.model.type !== 'code' || (c.model.executionCount !== null && c.model.executionState !== 'running')
    ),
    null,
    { timeout: LONG, polling: 500 }
  );
  await waitKernelIdle();
  const index = await page.evaluate(() =>
    window.jupyterapp.shell.currentWidget.content.widgets.findIndex(c => c.model.sharedModel.getSource().startsWith('%%torchprofile'))
  );
  check(index >= 0, 'the notebook has a %%torchprofile cell');
  return index;
}

/** A locator for the notebook's cell at `index` (tagged so it survives re-renders). */
export async function cellLocator(index) {
  // Until its file is read, a notebook shows a placeholder cell that the loaded cells then replace:
  // a tag set on it would be lost, so the tag waits for the loaded notebook.
  await page.waitForFunction(
    i => {
      const panel = window.jupyterapp?.shell?.currentWidget;
      return !!panel?.context?.isReady && (panel.content?.widgets?.length ?? 0) > i;
    },
    index,
    { timeout: 60000 }
  );
  await page.evaluate(i => {
    for (const el of document.querySelectorAll('[data-nbp-e2e]')) {
      el.removeAttribute('data-nbp-e2e');
    }
    window.jupyterapp.shell.currentWidget.content.widgets[i].node.setAttribute('data-nbp-e2e', String(i));
  }, index);
  return page.locator(`[data-nbp-e2e="${index}"]`);
}

export async function cellState(index) {
  return page.evaluate(i => {
    const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
    return {
      source: cell.model.sharedModel.getSource(),
      count: cell.model.executionCount,
      state: cell.model.executionState,
      outputs: cell.model.outputs.toJSON()
    };
  }, index);
}

/** Wait until the cell ran again (new execution count) and shows an nbprofiler renderer. */
export async function waitProfiled(index, previousCount) {
  await page.waitForFunction(
    ([i, before]) => {
      const cell = window.jupyterapp.shell.currentWidget.content.widgets[i];
      const count = cell.model.executionCount;
      return count !== null && count !== before && cell.model.executionState !== 'running' &&
        !!cell.node.querySelector('.nbp-ReportRenderer[data-nbprofiler-mode]');
    },
    [index, previousCount],
    { timeout: LONG, polling: 250 }
  );
}

export async function activate(index) {
  const cell = await cellLocator(index);
  await cell.scrollIntoViewIfNeeded();
  await cell.locator('.jp-InputPrompt').click();
  return cell;
}


/** Tabs of the ipywidgets explorer (a Lumino TabBar inside the widget output). */
export async function explorerTabs(cell) {
  return cell.locator('.lm-TabBar-tab .lm-TabBar-tabLabel, .widget-tab .lm-TabBar-tabLabel, .jupyter-widget-Tab .lm-TabBar-tabLabel').allInnerTexts();
}

export async function clickExplorerTab(cell, name) {
  await cell.locator('.lm-TabBar-tab').filter({ hasText: new RegExp(`^${name}`) }).first().click();
}

/** Each row of a table's body as its cells' text. */
export async function tableRows(table) {
  return await table.locator('tbody tr').evaluateAll(trs => trs.map(tr => Array.from(tr.cells).map(c => c.textContent.trim())));
}

/** The notebook opened, its first cell's saved report (drawn without a kernel) on tab `name`: that tab's panel. */
export async function openSavedTab(name) {
  await openNotebook();
  step('notebook open');
  const cell = await cellLocator(0);
  const renderer = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  await renderer.waitFor({ timeout: 60000 });
  const tab = renderer.locator(`[role="tab"][data-tab="${name}"]`);
  check((await tab.count()) === 1, `the saved report has a ${name} tab`);
  await tab.click();
  const panel = renderer.locator(`.nbp-panel[data-tab="${name}"]`);
  await panel.waitFor({ state: 'visible', timeout: 10000 });
  step(`saved ${name} tab open`);
  return panel;
}

export function explorerPanel(cell) {
  // The visible page of the explorer's tab widget.
  return cell.locator('.widget-tab-contents > .lm-Widget:not(.lm-mod-hidden), .jupyter-widget-Tab .lm-StackedPanel > .lm-Widget:not(.lm-mod-hidden)').first();
}

/** Switch the theme and wait until it is applied: the notebook's background is light or dark as it says
 * and JupyterLab's splash screen is gone: switching again before that fails inside JupyterLab (its theme manager,
 * or the splash, removed twice when a second switch comes within its 0.2 s fade). */
export async function setTheme(theme) {
  const applied = name => {
    const node = document.querySelector('.jp-NotebookPanel-notebook');
    const m = node && /rgba?\((\d+), (\d+), (\d+)/.exec(getComputedStyle(node).backgroundColor);
    const light = m !== null && Number(m[1]) + Number(m[2]) + Number(m[3]) > 384;
    return document.body.dataset.jpThemeName === name && m !== null && light === name.includes('Light');
  };
  // Asking for the theme a reloaded page is still applying fails inside JupyterLab: ask only for another one.
  await page.waitForFunction(() => document.body.dataset.jpThemeName, null, { timeout: 60000 });
  if (await page.evaluate(name => document.body.dataset.jpThemeName === name, theme)) {
    await page.waitForFunction(applied, theme, { timeout: 60000 });
    await splashGone();
    return;
  }
  await page.evaluate(name => window.jupyterapp.commands.execute('apputils:change-theme', { theme: name }), theme);
  await page.waitForFunction(applied, theme, { timeout: 60000 });
  await splashGone();
}

/** JupyterLab's splash screen (shown while a theme loads) has faded out. */
async function splashGone() {
  await page.waitForFunction(() => !document.getElementById('jupyterlab-splash'), null, { timeout: 60000 });
}

/** Save the notebook and wait until it is saved. */
export async function saveNotebook() {
  await page.evaluate(() => window.jupyterapp.commands.execute('docmanager:save'));
  await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.context.model.dirty, null, { timeout: 30000 });
}

/** Shut the notebook's kernel down (confirming JupyterLab's dialog) and wait until it is gone. */
export async function shutDownKernel() {
  await page.evaluate(() => void window.jupyterapp.commands.execute('kernelmenu:shutdown'));
  // JupyterLab may ask for confirmation first.
  await page.waitForFunction(
    () => !!document.querySelector('.jp-Dialog .jp-mod-accept') || !window.jupyterapp.shell.currentWidget.sessionContext.session,
    null,
    { timeout: 30000 }
  );
  const confirm = page.locator('.jp-Dialog .jp-mod-accept');
  if (await confirm.count()) {
    await confirm.click();
  }
  await page.waitForFunction(() => !window.jupyterapp.shell.currentWidget.sessionContext.session, null, { timeout: 60000 });
}

/** Reload the page and wait until the notebook has loaded its cell at `index`; returns that cell's locator. */
export async function reloadAt(index) {
  await page.reload();
  await page.waitForSelector('.jp-NotebookPanel .jp-Cell', { timeout: 120000 });
  await page.evaluate(() => window.jupyterapp.shell.collapseLeft());
  return cellLocator(index);
}

/** Close the browser, write the result with the timings and page errors, and exit (1 on failure). */
export async function finish(result) {
  await browser.close();
  result.notes = notes;
  result.pageErrors = pageErrors;
  result.timings = timings;
  result.totalSeconds = (Date.now() - started) / 1000;
  writeFileSync(join(SHOTS, 'result.json'), JSON.stringify(result, null, 2));
  console.log(`RESULT ${JSON.stringify(result)}`);
  process.exit(result.ok ? 0 : 1);
}

/**
 * Run a scenario and finish: `body` checks the page step by step and fills `result`; a failure
 * is recorded with a screenshot of the page as it was, and any page error fails the run.
 */
export async function runScenario(result, body) {
  try {
    await body();
    check(pageErrors.length === 0, `no page errors or dialogs: ${pageErrors.join(' | ')}`);
    result.ok = true;
  } catch (err) {
    result.ok = false;
    result.error = String(err?.stack ?? err);
    try {
      await shot('99_failure.png');
    } catch {
      // The page is gone.
    }
  } finally {
    await finish(result);
  }
}
