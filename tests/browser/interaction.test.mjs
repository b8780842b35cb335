// interaction.test.mjs — hover, search and zoom in a report of
// tests/browser/data/conv_block.csv drawn with a naive plan (offsets known
// from the plan file).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, finish, launch, memplan, openReport, outDir, regionStats } from './report_page.mjs';

const problem = new URL('./data/conv_block.csv', import.meta.url).pathname;
const plan = join(outDir, 'interaction_plan.csv');
memplan('plan', problem, '--planner', 'naive', '--output', plan);
const html = join(outDir, 'interaction.html');
memplan('report', problem, plan, '--html', html);
const offsets = new Map();
const [header, ...rows] = readFileSync(plan, 'utf8').trim().split('\n');
const column = header.split(',').indexOf('offset');
for (const row of rows) offsets.set(row.split(',')[0], Number(row.split(',')[column]));

const grouped = (v) => v.toLocaleString('en-US');
const browser = await launch();
try {
  const { page } = await openReport(browser, html);
  const tooltipAt = async (id) => {
    const at = await page.evaluate((id) => window.memplanReport.bufferCentre(0, id), id);
    if (!at) return `(${id} is not drawn)`;
    await page.mouse.move(at.x, at.y);
    await page.waitForFunction(() => document.getElementById('tooltip').style.display === 'block', { timeout: 5000 });
    return page.$eval('#tooltip', (e) => e.innerText);
  };

  // A large buffer: every field of the tooltip.
  const text = await tooltipAt('conv2.col');
  console.log(`tooltip: ${JSON.stringify(text)}`);
  check(text.startsWith('conv2.col'), 'hover names the buffer');
  check(text.includes('512 KiB (524,288 B)'), 'hover gives the size');
  check(text.includes('[6, 7) ticks'), 'hover gives the lifetime');
  check(text.includes(`(${grouped(offsets.get('conv2.col'))} B)`), 'hover gives the offset in this plan');
  check(text.includes('aten::im2col'), 'hover gives the operator');
  // A buffer thinner than a pixel (1 KiB of ~2 MiB over ~450 px) is drawn
  // 1 px high and can be hovered.
  const thin = await tooltipAt('scratch.1');
  check(thin.startsWith('scratch.1') && !thin.includes('operator'), `a sub-pixel buffer is reachable (${JSON.stringify(thin)})`);
  await page.mouse.move(5, 5);

  // Search: by id, by operator, and cleared.
  const searchFor = async (text) => {
    await page.click('#search', { clickCount: 3 });
    await page.keyboard.press('Backspace');
    if (text) await page.type('#search', text);
    await page.waitForFunction((t) => document.getElementById('search').value === t, {}, text);
    await new Promise((r) => setTimeout(r, 100));  // one animation frame
    return page.$eval('#match-count', (e) => e.textContent);
  };
  check((await searchFor('conv')) === '5 matches', 'search "conv" matches 5 buffers (ids and the conv2d operator)');
  check((await searchFor('BATCH_NORM')) === '2 matches', 'search by operator is case-insensitive: 2 batch_norm buffers');
  check(await page.evaluate(() => window.memplanReport.matches) === 2, 'the page counts 2 highlighted buffers');
  // The highlight colour is on screen where a match is drawn.
  const box = await page.evaluate(() => window.memplanReport.plotBox(0));
  const at = await page.evaluate(() => window.memplanReport.bufferCentre(0, 'bn1.out'));
  const png = await page.screenshot();
  const orange = await page.evaluate(async (url, x, y) => {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    canvas.getContext('2d').drawImage(image, 0, 0);
    return Array.from(canvas.getContext('2d').getImageData(Math.round(x), Math.round(y), 1, 1).data);
  }, `data:image/png;base64,${Buffer.from(png).toString('base64')}`, at.x, at.y);
  check(orange[0] > 200 && orange[1] < 120 && orange[2] < 60, `a match is drawn in the highlight colour (rgb ${orange.slice(0, 3)})`);
  check((await searchFor('no-such-buffer')) === '0 matches', 'a search without hits says 0 matches');
  check((await searchFor('')) === '', 'clearing the search clears the count');

  // Wheel over the map zooms time around the cursor; double-click resets.
  const before = await page.evaluate(() => window.memplanReport.bufferCentre(0, 'conv2.col'));
  await page.mouse.move(box.left + box.width * 0.25, box.top + box.height / 2);
  for (let k = 0; k < 5; k++) await page.mouse.wheel({ deltaY: -200 });
  await new Promise((r) => setTimeout(r, 150));
  const after = await page.evaluate(() => window.memplanReport.bufferCentre(0, 'conv2.col'));
  check(after.x > before.x + 50, `zooming in moves a later buffer right (${Math.round(before.x)} -> ${Math.round(after.x)})`);
  await page.mouse.click(box.left + 5, box.top + 5, { clickCount: 2 });
  await new Promise((r) => setTimeout(r, 150));
  const reset = await page.evaluate(() => window.memplanReport.bufferCentre(0, 'conv2.col'));
  check(Math.abs(reset.x - before.x) < 1, 'double-click resets the view');
  const [plot] = await regionStats(browser, await page.screenshot(), [
    { x: Math.round(box.left), y: Math.round(box.top), w: Math.round(box.width), h: Math.round(box.height) }]);
  check(plot.colouredShare > 0.2, 'the map is drawn after zooming and resetting');
  check(page.problems.length === 0, `no page errors (${page.problems.join('; ')})`);
} finally {
  await browser.close();
}
finish();
