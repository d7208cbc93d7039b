// The saved report's Hardware tab in a real browser: a notebook holds the saved output of a GPU
// trace's report (no explorer, as a notebook reopened without its kernel); its Hardware tab shows
// the launches and the first copies row, which the Python test compares with the report's tables.
import { cellLocator, check, openNotebook, runScenario, shot, step } from './lab.mjs';

const result = { ok: false };

await runScenario(result, async () => {
  await openNotebook();
  step('notebook open');
  const cell = await cellLocator(0);
  const renderer = cell.locator('.nbp-ReportRenderer[data-nbprofiler-mode="static"]');
  await renderer.waitFor({ timeout: 60000 });
  const tab = renderer.locator('[role="tab"][data-tab="Hardware"]');
  check((await tab.count()) === 1, 'the saved report has a Hardware tab');
  await tab.click();
  const panel = renderer.locator('.nbp-panel[data-tab="Hardware"]');
  await panel.waitFor({ state: 'visible', timeout: 10000 });
  check((await tab.getAttribute('aria-selected')) === 'true', 'the Hardware tab is selected');
  step('Hardware tab open');
  const facts = panel.locator('.nbp-hw-launches');
  result.launchLabels = (await facts.locator('th').allInnerTexts()).map(t => t.trim());
  result.launches = (await facts.locator('td').first().innerText()).trim();
  result.device = (await panel.locator('.nbp-device').innerText()).trim();
  const copies = panel.locator('.nbp-hw-section[data-section="copies"]');
  await copies.scrollIntoViewIfNeeded();
  result.copiesHeader = (await copies.locator('thead th').allInnerTexts()).map(t => t.trim());
  result.copies = (await copies.locator('tbody tr').first().locator('td').allInnerTexts()).map(t => t.trim());
  await shot('hardware_saved.png', panel);
});
