// The live explorer in JupyterLab's light and dark themes, in a real browser.
//
// Against a JupyterLab server that tests/browser/test_browser_theme.py started on a
// small notebook (a CNN trained a few steps under `%%torchprofile --shapes`):
//
//   1. run all cells; the profiled cell shows the live explorer;
//   2. in each theme ("JupyterLab Light", then "JupyterLab Dark", switched with
//      the command apputils:change-theme), measure the WCAG contrast of text
//      against the background it is drawn on (the first opaque background up
//      its ancestors, translucent ones blended in) for the explorer's title, the
//      metric figures, the suggestion text (Overview) and the table rows and
//      headers (Operators); each must reach 4.5:1;
//   3. the tables' header cells sit exactly over their columns (left edges
//      within 1 px) in the Operators and Memory tabs;
//   4. a click on a header sorts by it; a click on a row shows that operator's
//      details (kernels, call sites), through the explorer's own controls.
//
// Configuration: see lab.mjs. Prints one line per step, then `RESULT {json}`.
import {
  setTheme,
  cellLocator,
  check,
  clickExplorerTab,
  explorerPanel,
  openNotebook,
  page,
  runAllCells,
  runScenario,
  shot,
  step
} from './lab.mjs';

const THEMES = ['JupyterLab Light', 'JupyterLab Dark'];
const MINIMUM = 4.5;

/**
 * The lowest contrast ratio of the visible text in the elements `selector` finds under `root`,
 * with what was measured: text colour (blended over its background when translucent) against the
 * first opaque background up the ancestors (translucent ones blended in, the page's white last).
 */
async function contrastOf(root, selector) {
  return root.evaluate((node, sel) => {
    const parse = value => {
      const m = /rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/.exec(value);
      if (m) {
        return [Number(m[1]), Number(m[2]), Number(m[3]), m[4] === undefined ? 1 : Number(m[4])];
      }
      const c = /color\(srgb ([\d.]+) ([\d.]+) ([\d.]+)(?: \/ ([\d.]+))?\)/.exec(value);
      if (c) {
        return [Number(c[1]) * 255, Number(c[2]) * 255, Number(c[3]) * 255, c[4] === undefined ? 1 : Number(c[4])];
      }
      throw new Error(`unparsed colour ${value}`);
    };
    const over = (top, bottom) => {
      const a = top[3];
      return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat(1);
    };
    const background = el => {
      const layers = [];
      for (let e = el; e; e = e.parentElement) {
        const bg = parse(getComputedStyle(e).backgroundColor);
        if (bg[3] > 0) {
          layers.push(bg);
          if (bg[3] >= 1) {
            break;
          }
        }
      }
      let color = [255, 255, 255, 1];
      for (const layer of layers.reverse()) {
        color = over(layer, color);
      }
      return color;
    };
    const luminance = rgb => {
      const [r, g, b] = rgb.slice(0, 3).map(v => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const ratio = (a, b) => {
      const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
      return (hi + 0.05) / (lo + 0.05);
    };
    let worst = null;
    let count = 0;
    for (const el of node.querySelectorAll(sel)) {
      const hasText = [...el.childNodes].some(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim());
      if (!hasText || el.getClientRects().length === 0) {
        continue;
      }
      const style = getComputedStyle(el);
      const bg = background(el);
      const fg = over(parse(style.color), bg);
      const r = ratio(fg, bg);
      count += 1;
      if (worst === null || r < worst.ratio) {
        worst = { ratio: Math.round(r * 100) / 100, text: el.textContent.trim().slice(0, 60), color: style.color,
                  background: `rgb(${bg.slice(0, 3).map(Math.round).join(', ')})` };
      }
    }
    return { ...worst, elements: count };
  }, selector);
}

/** Left edges of each header cell and of the first row's cells of every table grid in `panel`. */
async function gridEdges(panel) {
  return panel.evaluate(node =>
    [...node.querySelectorAll('div.nbp-grid')].filter(g => g.getClientRects().length).map(g => {
      const header = [...g.querySelectorAll(':scope > div.r > div.h')];
      const firstRow = [...g.querySelectorAll(':scope > div.r > div.c')].slice(0, header.length);
      const left = el => Math.round(el.getBoundingClientRect().left * 10) / 10;
      return { header: header.map(left), row: firstRow.map(left), labels: header.map(h => h.textContent.trim()) };
    })
  );
}

function checkAligned(tab, grids) {
  check(grids.length > 0, `the ${tab} tab shows a table`);
  for (const g of grids) {
    check(g.header.length > 1 && g.row.length === g.header.length, `${tab}: a header row over a row of cells: ${JSON.stringify(g)}`);
    const worst = Math.max(...g.header.map((x, i) => Math.abs(x - g.row[i])));
    check(worst <= 1, `${tab}: each header cell starts where its column does (off by ${worst} px): ${JSON.stringify(g)}`);
  }
  return Math.max(...grids.flatMap(g => g.header.map((x, i) => Math.abs(x - g.row[i]))));
}

const result = { contrast: {} };
await runScenario(result, async () => {
  // 1. Run the notebook: the training cell shows the live explorer.
  await openNotebook();
  step('open notebook, kernel idle');
  const t = await runAllCells();
  const cell = await cellLocator(t);
  await cell.scrollIntoViewIfNeeded();
  await page.waitForFunction(el => el.querySelectorAll('.lm-TabBar-tab').length > 0, await cell.elementHandle(), { timeout: 60000 });
  check((await cell.locator('.nbp-ReportRenderer').getAttribute('data-nbprofiler-mode')) === 'widget', 'the live explorer shows');
  step('run all cells: the training cell is profiled');

  // 2-3. Each theme: contrast of the title, figures, suggestions and table rows; aligned headers.
  for (const theme of THEMES) {
    await setTheme(theme);
    const bodyBg = await page.evaluate(() => getComputedStyle(document.querySelector('.jp-NotebookPanel-notebook') ?? document.body).backgroundColor);
    const measured = { pageBackground: bodyBg };
    await clickExplorerTab(cell, 'Overview');
    const overview = explorerPanel(cell);
    await overview.locator('.metric b').first().waitFor({ timeout: 30000 });
    const output = cell.locator('.jp-Cell-outputArea');
    measured.title = await contrastOf(output, '.nbp h3');
    measured.metrics = await contrastOf(overview, '.nbp .metric b, .nbp .metric span');
    measured.suggestions = await contrastOf(overview, '.nbp .card b, .nbp .card div, .nbp .card li, .nbp .card pre');
    await shot(`theme_${theme.includes('Dark') ? 'dark' : 'light'}_overview.png`, output);
    await clickExplorerTab(cell, 'Operators');
    const operators = explorerPanel(cell);
    await operators.locator('div.nbp-grid > div.r > div.c').first().waitFor({ timeout: 30000 });
    measured.rows = await contrastOf(operators, 'div.nbp-grid > div.r > div.c');
    measured.headers = await contrastOf(operators, 'div.nbp-grid > div.r > div.h');
    measured.headerOffsetPx = { Operators: checkAligned('Operators', await gridEdges(operators)) };
    await shot(`theme_${theme.includes('Dark') ? 'dark' : 'light'}_operators.png`, output);
    await clickExplorerTab(cell, 'Memory');
    const memory = explorerPanel(cell);
    await memory.locator('div.nbp-grid > div.r > div.c').first().waitFor({ timeout: 30000 });
    measured.headerOffsetPx.Memory = checkAligned('Memory', await gridEdges(memory));
    result.contrast[theme] = measured;
    for (const what of ['title', 'metrics', 'suggestions', 'rows', 'headers']) {
      const m = measured[what];
      check(m.elements > 0, `${theme}: there is ${what} text to measure`);
      check(m.ratio >= MINIMUM, `${theme}: ${what} contrast ${m.ratio}:1 is at least ${MINIMUM}:1 (${JSON.stringify(m)})`);
    }
    step(`${theme}: contrast ${['title', 'metrics', 'suggestions', 'rows'].map(w => `${w} ${measured[w].ratio}`).join(', ')}`);
  }
  const light = result.contrast['JupyterLab Light'].pageBackground;
  const dark = result.contrast['JupyterLab Dark'].pageBackground;
  check(light !== dark, `the theme changed the page's background: ${light} / ${dark}`);

  // 4. Clicks in the grid: a header sorts, a row shows its operator's details.
  await clickExplorerTab(cell, 'Operators');
  const operators = explorerPanel(cell);
  const callsHeader = operators.locator('div.nbp-grid > div.r > div.h', { hasText: /^calls/ }).first();
  await callsHeader.click();
  await page.waitForFunction(el => /^calls ▼/.test(el.querySelector('div.nbp-grid > div.r > div.h.sorted')?.textContent ?? ''),
    await operators.elementHandle(), { timeout: 30000 });
  step('a header click sorts by it');
  const row = operators.locator('div.nbp-grid > div.r > div.c.n').first();
  const name = (await row.getAttribute('title')) ?? '';
  await row.click();
  const heading = operators.locator('.nbp h4').filter({ hasText: name }).first();
  await heading.waitFor({ timeout: 30000 });
  check(await operators.locator('div.nbp-grid > div.r > div.picked').count() > 0, 'the clicked row is marked');
  const picked = await operators.locator('.widget-dropdown select').last().evaluate(s => s.options[s.selectedIndex]?.textContent ?? '');
  check(picked.includes(name), `the operator picker selects the clicked row: ${picked} / ${name}`);
  result.rowClick = { operator: name, picker: picked };
  await shot('theme_row_click.png', cell.locator('.jp-Cell-outputArea'));
  step('a row click shows that operator\'s details');
});
