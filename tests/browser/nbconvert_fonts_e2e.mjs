// The report in nbconvert's HTML, opened in Chromium: how large its charts' text is drawn next to the
// report's own text. Prints one line, RESULT {...}: per chart, its drawn width, its viewBox width, and
// its tick and title text's on-screen size (the CSS font size times the drawn width over the viewBox's).
//
//   node nbconvert_fonts_e2e.mjs page.html   (NBP_CHROMIUM: the browser, default /usr/bin/chromium)
import { createRequire } from 'module';

const require = createRequire(new URL('../../labextension/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({ executablePath: process.env.NBP_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`file://${process.argv[2]}`);
  const result = await page.evaluate(() => {
    const size = el => parseFloat(getComputedStyle(el).fontSize);
    const report = document.querySelector('.nbp');
    const charts = Array.from(document.querySelectorAll('svg.nbp-chart:not(.nbp-flame)')).map(svg => {
      const drawn = svg.getBoundingClientRect().width;
      const scale = drawn / svg.viewBox.baseVal.width;
      const texts = Array.from(svg.querySelectorAll('text'));
      const title = texts.find(t => t.classList.contains('nbp-chart-title'));
      const tick = texts.find(t => t.classList.contains('nbp-muted'));
      return { chart: svg.getAttribute('aria-label'), drawn, viewBox: svg.viewBox.baseVal.width, titlePx: size(title) * scale, tickPx: size(tick) * scale };
    });
    return { ok: true, reportPx: size(report), tablePx: size(report.querySelector('td')), charts };
  });
  console.log(`RESULT ${JSON.stringify(result)}`);
} finally {
  await browser.close();
}
