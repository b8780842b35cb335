// docs_screenshot.mjs REPORT.html OUT.png [BUFFER_ID] — the picture in
// docs/report.md: the report in Debian's headless chromium (the browser the
// tests use), 1200 px wide, with the tooltip of BUFFER_ID (default: the
// largest buffer at the peak) showing. Run through run_browser_test.sh's
// environment, e.g.
//   MEMPLAN_BROWSER_MODULES=build/tests/browser/node_modules MEMPLAN_BROWSER_OUT=/tmp \
//     node tests/browser/docs_screenshot.mjs out/report.html docs/report.png
import { launch, openReport } from './report_page.mjs';

const [html, png, wanted] = process.argv.slice(2);
const browser = await launch();
try {
  const { page } = await openReport(browser, html, { width: 1200, height: 860 });
  const id = wanted || (await page.$eval('#peak tbody tr td.id', (e) => e.textContent));
  const at = await page.evaluate((id) => window.memplanReport.bufferCentre(0, id), id);
  if (at) await page.mouse.move(at.x, at.y);
  await new Promise((r) => setTimeout(r, 200));
  await page.screenshot({ path: png, clip: { x: 0, y: 0, width: 1200, height: 860 } });
  console.log(`wrote ${png} (tooltip of ${id})`);
} finally {
  await browser.close();
}
