// large.test.mjs — a generated 100,000-buffer problem: the report loads and
// draws within a bounded time, zooming redraws fast enough to feel smooth,
// and the map is not blank. Prints the measured times and the file size.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { check, finish, launch, memplan, openReport, outDir, regionStats } from './report_page.mjs';

const buffers = 100000;
const problem = join(outDir, 'dnn_100k.csv');
const html = join(outDir, 'dnn_100k.html');
memplan('generate', '--shape', 'dnn', '--buffers', String(buffers), '--seed', '1', '--output', problem);
// greedy_by_size: the report is under test here, not the planner's time.
memplan('report', problem, '--planner', 'greedy_by_size', '--html', html);
const bytes = statSync(html).size;
console.log(`report: ${html}, ${bytes} bytes (${(bytes / buffers).toFixed(1)} bytes per buffer)`);

// Bounds, generous for a loaded 2-core machine; the measured values are printed.
const loadLimitMs = 15000;
const redrawLimitMs = 250;

const browser = await launch();
try {
  const { page, loadMs } = await openReport(browser, html);
  const stats = await page.evaluate(() => window.memplanReport.stats);
  console.log(`load to first draw: ${loadMs} ms wall (page: parse ${stats.parsedMs.toFixed(0)} ms, ` +
    `script start to first draw ${stats.firstDrawMs.toFixed(0)} ms, first frame ${stats.lastDrawMs.toFixed(0)} ms)`);
  check(await page.evaluate(() => window.memplanReport.buffers) === buffers, `the page holds ${buffers} buffers`);
  check(loadMs < loadLimitMs, `loads and draws within ${loadLimitMs} ms (${loadMs} ms)`);

  const box = await page.evaluate(() => window.memplanReport.plotBox(0));
  await page.mouse.move(box.left + box.width / 2, box.top + box.height / 2);
  const frames = [];
  for (let k = 0; k < 8; k++) {
    await page.mouse.wheel({ deltaY: k < 4 ? -300 : 300 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    frames.push(await page.evaluate(() => window.memplanReport.stats.lastDrawMs));
  }
  const worst = Math.max(...frames);
  console.log(`redraw while zooming: ${frames.map((f) => f.toFixed(0)).join(', ')} ms per frame`);
  check(worst < redrawLimitMs, `every zoom frame draws within ${redrawLimitMs} ms (worst ${worst.toFixed(0)} ms)`);

  // Hover costs one scan of the buffers: time one.
  const hoverMs = await page.evaluate(async (x, y) => {
    const begin = performance.now();
    document.querySelector('canvas.map').dispatchEvent(new MouseEvent('mousemove', { clientX: x, clientY: y, bubbles: true }));
    return performance.now() - begin;
  }, box.left + box.width / 3, box.top + box.height - 20);
  console.log(`hover hit test: ${hoverMs.toFixed(1)} ms`);

  await page.mouse.click(box.left + 5, box.top + 5, { clickCount: 2 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const [plot] = await regionStats(browser, await page.screenshot({ path: join(outDir, 'dnn_100k.png') }), [
    { x: Math.round(box.left), y: Math.round(box.arenaY + 2), w: Math.round(box.width), h: Math.round(box.top + box.height - box.arenaY - 4) }]);
  console.log(`plot below the arena: ${JSON.stringify(plot)}`);
  check(plot.colouredShare > 0.3 && plot.colours > 10, 'the 100k-buffer map is drawn, not blank');
  check(page.problems.length === 0, `no page errors (${page.problems.join('; ')})`);
} finally {
  await browser.close();
}
finish();
