// report_page.mjs — what the browser tests share: write a report with the
// built memplan, open it from file:// in Debian's headless chromium through
// puppeteer-core (which never downloads a browser), and read pixels back.
//
// Environment (set by tests/browser/tests.cmake):
//   MEMPLAN                 the memplan binary
//   MEMPLAN_BROWSER_MODULES node_modules folder that `npm ci` filled
//   MEMPLAN_BROWSER_OUT     folder for reports and screenshots
//   CHROMIUM                the browser (default /usr/bin/chromium)
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(join(resolve(process.env.MEMPLAN_BROWSER_MODULES), 'memplan-tests.cjs'));
const puppeteer = require('puppeteer-core');

export const outDir = process.env.MEMPLAN_BROWSER_OUT;
mkdirSync(outDir, { recursive: true });

// Runs memplan with `args`; returns its standard output.
export function memplan(...args) {
  return execFileSync(process.env.MEMPLAN, args, { encoding: 'utf8', maxBuffer: 1 << 26 });
}

export async function launch() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // --no-sandbox: the tests may run as root in a container, where chromium's
    // sandbox cannot start. The pages are our own reports.
    args: ['--no-sandbox', '--disable-gpu', '--allow-file-access-from-files', '--font-render-hinting=none'],
  });
}

// Opens `htmlPath` in a new page of `width` × `height` CSS pixels and waits
// until the report says it has drawn. Returns the page and the wall time from
// navigation to that point (ms). Fails on any page error or request that
// leaves the file (the report must be self-contained).
export async function openReport(browser, htmlPath, { width = 1280, height = 900 } = {}) {
  const page = await browser.newPage();
  await page.setViewport({ width, height, deviceScaleFactor: 1 });
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
  });
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    if (request.url().startsWith('file:') || request.url().startsWith('data:')) request.continue();
    else {
      problems.push(`request leaves the file: ${request.url()}`);
      request.abort();
    }
  });
  const begin = Date.now();
  await page.goto(pathToFileURL(htmlPath).href, { waitUntil: 'load' });
  await page.waitForFunction(() => window.memplanReport && window.memplanReport.ready, { timeout: 60000 });
  const loadMs = Date.now() - begin;
  page.problems = problems;
  return { page, loadMs };
}

// Decodes a PNG (a screenshot) in the browser and returns, for each region
// {x, y, w, h} in image pixels, statistics of its pixels: count, the share
// that differ from white (colouredShare), the share with a hue rather than a
// grey (saturatedShare: buffers and highlights, not text, grid or background)
// and the number of distinct colours.
export async function regionStats(browser, png, regions) {
  const page = await browser.newPage();
  const dataUrl = `data:image/png;base64,${Buffer.from(png).toString('base64')}`;
  const result = await page.evaluate(async (url, regions) => {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const ctx = canvas.getContext('2d');
    ctx.drawImage(image, 0, 0);
    return regions.map(({ x, y, w, h }) => {
      if (w <= 0 || h <= 0) return { pixels: 0, colouredShare: 0, saturatedShare: 0, colours: 0 };
      const pixels = ctx.getImageData(x, y, w, h).data;
      let coloured = 0;
      let saturated = 0;
      const colours = new Set();
      for (let k = 0; k < pixels.length; k += 4) {
        const [r, g, b] = [pixels[k], pixels[k + 1], pixels[k + 2]];
        if (r < 235 || g < 235 || b < 235) coloured++;
        if (Math.max(r, g, b) - Math.min(r, g, b) > 24) saturated++;
        colours.add((r << 16) | (g << 8) | b);
      }
      const count = Math.max(1, w * h);
      return { pixels: w * h, colouredShare: coloured / count, saturatedShare: saturated / count, colours: colours.size };
    });
  }, dataUrl, regions);
  await page.close();
  return result;
}

// The bounding box of the first element matching `selector`, in page pixels.
export async function boxOf(page, selector) {
  const handle = await page.$(selector);
  if (!handle) throw new Error(`no element matches ${selector}`);
  return handle.boundingBox();
}

let failures = 0;
export function check(condition, message) {
  if (condition) {
    console.log(`ok: ${message}`);
  } else {
    failures++;
    console.log(`FAILED: ${message}`);
  }
}
export function finish() {
  if (failures) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log('all checks passed');
}
