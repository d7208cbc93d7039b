// The Timeline view in a real browser: the live explorer's Timeline tab, then
// the saved report's, reopened without a kernel.
//
//   1. run the notebook (one cell displays a report loaded from a GPU trace);
//   2. open the explorer's Timeline tab; check the canvas is drawn; search a
//      kernel by name (count, Enter frames and selects it); Fit, then zoom
//      with the wheel around that kernel until it spans most of the width,
//      find it under the pointer (tooltip), click it: the details show its
//      name and duration; follow the flow to its launch; download the trace
//      with "Open in Perfetto"; switch to the dark theme: the canvas follows it;
//   3. save, shut the kernel down, reload: the saved report's Timeline tab
//      draws, and the same zoom and click show the same details.
//
// NBP_TIMELINE_KERNEL (JSON from test_browser_timeline.py): the search text,
// the name and duration (µs) of the first kernel it matches, and the number
// of events in the payload. Redraw times are reported in the result.
import { readFileSync } from 'fs';

import {
  setTheme,
  cellLocator,
  check,
  clickExplorerTab,
  explorerPanel,
  LONG,
  openNotebook,
  page,
  reloadAt,
  runScenario,
  saveNotebook,
  shot,
  shutDownKernel,
  step,
  waitKernelIdle
} from './lab.mjs';

const KERNEL = JSON.parse(process.env.NBP_TIMELINE_KERNEL ?? '{}');
const result = { ok: false };

/** A duration as the details print it ("1.03 ms", "87 µs", "2.10 s"), in µs. */
function parseUs(text) {
  const m = /^([\d.]+) (s|ms|µs)$/.exec(text.trim());
  check(m, `a duration, not ${JSON.stringify(text)}`);
  return Number(m[1]) * { s: 1e6, ms: 1e3, 'µs': 1 }[m[2]];
}

async function viewOf(surface) {
  const [start, end] = (await surface.getAttribute('data-view')).split(' ').map(Number);
  return { start, end };
}

/** Wait until the timeline has redrawn with a view other than `before`. */
async function waitView(surface, before) {
  const handle = await surface.elementHandle();
  await page.waitForFunction(([el, prev]) => el.dataset.view !== prev, [handle, `${before.start} ${before.end}`], { timeout: 10000 });
  return viewOf(surface);
}

async function field(scope, name) {
  return (await scope.locator(`.nbp-tl-details [data-field="${name}"]`).textContent({ timeout: 10000 })) ?? '';
}

/** Search, zoom to the kernel with the wheel, click it; returns figures. */
async function zoomToKernelAndClick(scope, label) {
  const surface = scope.locator('.nbp-tl-surface').first();
  await surface.waitFor({ timeout: 60000 });
  await page.waitForFunction(el => Number(el.dataset.blocks) > 0, await surface.elementHandle(), { timeout: 30000 });
  const canvas = surface.locator('canvas');
  const colours = await canvas.evaluate(c => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < d.length; i += 4 * 5) {
      seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    }
    return seen.size;
  });
  check(colours > 5, `${label}: the canvas is drawn (${colours} colours)`);
  await shot(`timeline_${label}_1_fit.png`, scope);

  const input = scope.locator('.nbp-tl-search');
  await input.fill(KERNEL.pattern);
  const count = await scope.locator('.nbp-tl-count').textContent();
  check(/^[1-9][\d,]* match(es)?$/.test(count ?? ''), `${label}: the search counts matches (${count})`);
  const fitted = await viewOf(surface);
  await input.press('Enter');
  const framed = await waitView(surface, fitted);
  check((await field(scope, 'name')) === KERNEL.name, `${label}: Enter selects the first match`);
  step(`${label}: search found ${count}`);

  await scope.locator('button', { hasText: /^Fit$/ }).click();
  let view = await waitView(surface, framed);
  await surface.press('Escape');
  await page.waitForFunction(el => el.textContent.startsWith('Click an event'), await scope.locator('.nbp-tl-details').elementHandle());

  // Wheel-zoom around the kernel until it spans 60% of the width or more.
  const mid = (framed.start + framed.end) / 2;
  const left = Number(await surface.getAttribute('data-track-left'));
  const box = await canvas.boundingBox();
  const xOf = v => box.x + left + ((mid - v.start) / (v.end - v.start)) * (box.width - left);
  const redraws = [];
  let drift = 0;
  for (let i = 0; i < 80 && view.end - view.start > (framed.end - framed.start) * 1.001; i++) {
    const pointer = xOf(view);
    await page.mouse.move(pointer, box.y + 8);
    await page.mouse.wheel(0, -250);
    view = await waitView(surface, view);
    drift = Math.max(drift, Math.abs(xOf(view) - pointer));
    redraws.push(Number(await surface.getAttribute('data-redraw-ms')));
  }
  check(view.end - view.start <= (framed.end - framed.start) * 1.001, `${label}: the wheel zooms in to the kernel`);
  check(drift < 2, `${label}: each wheel step keeps the kernel under the pointer (drift ${drift.toFixed(2)} px)`);
  const x = xOf(view);
  step(`${label}: zoomed in ${redraws.length} wheel steps`);

  // Find the kernel's row under the pointer, as a user would by hovering.
  const tooltip = surface.locator('.nbp-tl-tooltip');
  let y = -1;
  for (let dy = 24; dy < box.height; dy += 4) {
    await page.mouse.move(x, box.y + dy);
    if ((await tooltip.isVisible()) && ((await tooltip.textContent()) ?? '').startsWith(KERNEL.name.slice(0, 30))) {
      y = box.y + dy;
      break;
    }
  }
  check(y >= 0, `${label}: hovering finds the kernel`);
  await shot(`timeline_${label}_2_hover.png`, scope);
  await page.mouse.click(x, y);
  check((await field(scope, 'name')) === KERNEL.name, `${label}: the click shows the kernel's name`);
  const dur = parseUs(await field(scope, 'duration'));
  check(Math.abs(dur - KERNEL.dur_us) <= KERNEL.dur_us * 0.01, `${label}: the click shows its duration (${dur} µs vs ${KERNEL.dur_us})`);
  check((await field(scope, 'category')) === 'kernel', `${label}: and its category`);
  await shot(`timeline_${label}_3_clicked.png`, scope);

  await scope.locator('.nbp-tl-details button', { hasText: /^Go to its launch/ }).click();
  check((await field(scope, 'category')) === 'runtime', `${label}: the flow leads to the kernel's launch`);
  step(`${label}: clicked the kernel, followed its flow`);
  redraws.sort((a, b) => a - b);
  return { colours, wheelSteps: redraws.length, redrawMsMedian: redraws[redraws.length >> 1], redrawMsMax: redraws[redraws.length - 1] };
}

await runScenario(result, async () => {
  await openNotebook();
  step('notebook open');
  await page.evaluate(() => window.jupyterapp.commands.execute('notebook:run-all-cells'));
  let cell = await cellLocator(0);
  await cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="widget"]').waitFor({ timeout: LONG });
  await waitKernelIdle();
  step('explorer shown');

  await clickExplorerTab(cell, 'Timeline');
  const live = explorerPanel(cell);
  await live.locator('.nbp-timeline').waitFor({ timeout: 60000 });
  result.live = await zoomToKernelAndClick(live, 'live');

  const [download] = await Promise.all([
    page.waitForEvent('download', { timeout: 30000 }),
    live.locator('button', { hasText: 'Open in Perfetto' }).click()
  ]);
  const trace = JSON.parse(readFileSync(await download.path(), 'utf-8'));
  const xs = trace.traceEvents.filter(e => e.ph === 'X').length;
  check(xs === KERNEL.events, `the Perfetto file holds every event (${xs} of ${KERNEL.events})`);
  check(download.suggestedFilename().endsWith('.json'), `a .json file name (${download.suggestedFilename()})`);
  const note = (await live.locator('.nbp-tl-note').last().textContent()) ?? '';
  check(note.includes('https://ui.perfetto.dev') && note.includes('chrome://tracing'), 'the note says where to open it');
  result.download = download.suggestedFilename();
  step('Perfetto file downloaded');

  // The canvas follows the theme: in JupyterLab Dark its background is the theme's.
  await setTheme('JupyterLab Dark');
  // The canvas redraws on the theme's change: read it until it has (a busy machine may take a while).
  const canvasColours = () => live.locator('.nbp-tl-surface canvas').evaluate(c => {
    const [r, g, b] = c.getContext('2d').getImageData(2, 2, 1, 1).data;
    const probe = document.createElement('div');
    probe.style.color = getComputedStyle(document.body).getPropertyValue('--jp-layout-color0');
    document.body.appendChild(probe);
    const want = getComputedStyle(probe).color;
    probe.remove();
    return { got: `rgb(${r}, ${g}, ${b})`, want };
  });
  let themed = await canvasColours();
  for (const until = Date.now() + 30000; themed.got !== themed.want && Date.now() < until; themed = await canvasColours()) {
    await page.waitForTimeout(200);
  }
  check(themed.got === themed.want, `the canvas takes the dark theme's background (${themed.got} vs ${themed.want})`);
  await shot('timeline_live_4_dark.png', live);
  await setTheme('JupyterLab Light');
  step('dark theme drawn');

  await saveNotebook();
  await shutDownKernel();
  cell = await reloadAt(0);
  const drawn = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  // JupyterLab may start a fresh kernel for the reopened notebook; this scenario is the saved timeline
  // (the reload tests cover a fresh kernel), so that kernel is shut down again where it came.
  if (!(await drawn.isVisible()) && (await page.evaluate(() => !!window.jupyterapp.shell.currentWidget.sessionContext.session))) {
    await drawn.waitFor({ timeout: 15000 }).catch(() => shutDownKernel());
  }
  await drawn.waitFor({ timeout: 60000 });
  step('saved report drawn without a kernel');
  await cell.locator('.nbp-tab[data-tab="Timeline"]').click();
  const saved = cell.locator('.nbp-panel[data-tab="Timeline"]');
  result.saved = await zoomToKernelAndClick(saved, 'saved');
});
