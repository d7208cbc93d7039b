// Redraw times of the Timeline canvas in Chromium (headless, Debian's; none is downloaded):
// loads the bundled front end (bench/timeline_redraw.py makes it with esbuild) into a blank
// page with a payload, then times `redraw()` (level of detail and drawing on a real canvas)
// over 20 frames at the whole trace, a tenth of it, and 50 µs, and prints one JSON line.
//
//   node bench/timeline_redraw.mjs BUNDLE.js PAYLOAD.json
import { createRequire } from 'module';
import { readFileSync } from 'fs';

const require = createRequire(new URL('../labextension/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const [bundle, payloadPath] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.NBP_CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu']
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.setContent('<!doctype html><body></body>');
  await page.addScriptTag({ content: readFileSync(bundle, 'utf-8') });
  const figures = await page.evaluate(payloadText => {
    const { renderTimeline, timelineViewOf } = window.nbpTimeline;
    const t0 = performance.now();
    const node = renderTimeline(JSON.parse(payloadText));
    document.body.appendChild(node);
    const view = timelineViewOf(node);
    const firstMs = performance.now() - t0;
    const span = view.bounds.end - view.bounds.start;
    const mid = view.bounds.start + span / 2;
    const views = {
      whole: view.bounds,
      tenth: { start: mid, end: mid + span / 10 },
      '50us': { start: mid, end: mid + 50 }
    };
    const out = { events: view.timeline.events.n, firstRenderMs: firstMs, width: view.trackWidth };
    for (const [name, v] of Object.entries(views)) {
      const ms = [];
      for (let i = 0; i < 20; i++) {
        view.setView(v);
        view.redraw();
        ms.push(view.lastRedrawMs);
      }
      ms.sort((a, b) => a - b);
      out[name] = { medianMs: ms[10], maxMs: ms[19], blocks: view.blocks.n };
    }
    return out;
  }, readFileSync(payloadPath, 'utf-8'));
  console.log(JSON.stringify(figures));
} finally {
  await browser.close();
}
