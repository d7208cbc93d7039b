// How long after the training loop ends the report is painted in a real JupyterLab page
// (bench/report_latency.py --browser starts JupyterLab on a notebook and runs this script with
// tests/browser/lab.mjs's browser and configuration).
//
// The notebook's first cell sets up a small CNN; its second is the `%%torchprofile` cell and its
// third a hand-written torch.profiler cell that prints `key_averages()`. Each of the last two prints
// NBP-LOOP-END (flushed) as soon as its loop has ended. In the page, a MutationObserver on the cell
// notes when that line appears, and when what the cell shows is complete: for the magic, the
// explorer drawn in place (`data-nbprofiler-mode="widget"`, its first tab holding text); for the
// hand-written cell, the printed table. The time of the second animation frame after that is the
// paint. The figure per run is paint - loop end, both read from the page's clock, so no clock of the
// kernel is compared with the page's. The two cells alternate; the first run of each warms up.
import { check, finish, openNotebook, page, runScenario, step, waitKernelIdle } from '../tests/browser/lab.mjs';

const RUNS = Number(process.env.NBP_PAINT_RUNS ?? 5);
const MARK = 'NBP-LOOP-END';

/** Run cell `index` once and return (paint - loop end) in ms, read in the page. */
async function paintAfterLoop(index, kind) {
  const ms = await page.evaluate(
    async ([i, kind, mark]) => {
      const panel = window.jupyterapp.shell.currentWidget;
      const cell = panel.content.widgets[i];
      cell.model.outputs.clear();
      panel.content.activeCellIndex = i;
      const node = cell.node;
      let loopEnd = null;
      const complete = () => {
        if (kind === 'hand') {
          return (node.textContent ?? '').includes('Self CPU time total');
        }
        const renderer = node.querySelector('.nbp-ReportRenderer[data-nbprofiler-mode="widget"]');
        const tab = renderer?.querySelector('.widget-tab-contents > .lm-Widget:not(.lm-mod-hidden), .jupyter-widget-Tab .lm-StackedPanel > .lm-Widget:not(.lm-mod-hidden)');
        return !!tab && (tab.textContent ?? '').trim().length > 0;
      };
      const painted = new Promise(resolve => {
        const observer = new MutationObserver(() => {
          if (loopEnd === null && (node.querySelector('.jp-OutputArea')?.textContent ?? '').includes(mark)) {
            loopEnd = performance.now();
          }
          if (loopEnd !== null && complete()) {
            observer.disconnect();
            requestAnimationFrame(() => requestAnimationFrame(() => resolve(performance.now())));
          }
        });
        observer.observe(node, { subtree: true, childList: true, characterData: true, attributes: true });
      });
      await window.jupyterapp.commands.execute('notebook:run-cell');
      const at = await painted;
      return at - loopEnd;
    },
    [index, kind, MARK]
  );
  await waitKernelIdle();
  return ms;
}

const result = { magicMs: [], handMs: [] };
await runScenario(result, async () => {
  await openNotebook();
  await page.evaluate(() => {
    const panel = window.jupyterapp.shell.currentWidget;
    panel.content.activeCellIndex = 0;
    return window.jupyterapp.commands.execute('notebook:run-cell');
  });
  await waitKernelIdle(240000);
  step('set-up cell ran');
  for (let run = 0; run <= RUNS; run++) {
    const magic = await paintAfterLoop(1, 'magic');
    const hand = await paintAfterLoop(2, 'hand');
    if (run > 0) {
      result.magicMs.push(magic);
      result.handMs.push(hand);
    }
    step(`run ${run}: magic ${magic.toFixed(0)} ms, hand ${hand.toFixed(0)} ms${run ? '' : ' (warm-up)'}`);
  }
  check(result.magicMs.length === RUNS, 'every run was measured');
});
