// screenshot.test.mjs — the report renders: a screenshot of a one-plan and a
// two-plan report of tests/browser/data/conv_block.csv, and pixel statistics
// of known regions (buffers in the map, nothing above the arena line, the
// live-bytes area under it, the peak table).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { boxOf, check, finish, launch, memplan, openReport, outDir, regionStats } from './report_page.mjs';

const problem = new URL('./data/conv_block.csv', import.meta.url).pathname;
const naive = join(outDir, 'naive.csv');
memplan('plan', problem, '--planner', 'naive', '--output', naive);
const single = join(outDir, 'single.html');
const compare = join(outDir, 'compare.html');
memplan('report', problem, '--html', single);
memplan('report', problem, naive, '--planner', 'greedy_by_size', '--html', compare);

const browser = await launch();
try {
  for (const [html, plans] of [[single, 1], [compare, 2]]) {
    const { page } = await openReport(browser, html);
    const png = await page.screenshot({ fullPage: true });
    const name = html.replace(/\.html$/, '.png');
    writeFileSync(name, png);
    console.log(`screenshot: ${name}`);
    check(page.problems.length === 0, `${plans} plan(s): no page errors or outside requests (${page.problems.join('; ')})`);
    check((await page.$$('canvas.map')).length === plans, `${plans} plan(s): one map per plan`);

    for (let p = 0; p < plans; p++) {
      const box = await page.evaluate((p) => window.memplanReport.plotBox(p), p);
      const curve = await boxOf(page, `canvas.curve[data-plan="${p}"]`);
      const round = (r) => ({ x: Math.round(r.x), y: Math.round(r.y), w: Math.round(r.w), h: Math.round(r.h) });
      const [plot, above, liveArea] = await regionStats(browser, png, [
        round({ x: box.left + 2, y: box.arenaY + 3, w: box.width - 4, h: box.top + box.height - box.arenaY - 6 }),
        // Above the arena line and its label: background and grid lines only.
        round({ x: box.left + 2, y: box.top + 2, w: box.width - 4, h: Math.max(0, box.arenaY - box.top - 18) }),
        round({ x: curve.x + 80, y: curve.y + 10, w: curve.width - 100, h: curve.height - 45 }),
      ]);
      console.log(`plan ${p}: plot ${JSON.stringify(plot)}, above the arena ${JSON.stringify(above)}, curve ${JSON.stringify(liveArea)}`);
      check(plot.colouredShare > 0.3 && plot.colours >= 8, `plan ${p}: buffers fill the plot below the arena`);
      check(above.saturatedShare === 0, `plan ${p}: no buffer is drawn above the arena line`);
      check(liveArea.colouredShare > 0.15, `plan ${p}: the live-bytes curve is drawn`);
    }
    const rows = await page.$$eval('#peak tbody tr', (trs) => trs.map((tr) => tr.textContent));
    check(rows.length > 0 && rows[0].includes('conv2.col'), `${plans} plan(s): the peak table starts with the largest buffer (${rows[0]})`);
    await page.close();
  }
} finally {
  await browser.close();
}
finish();
