// report.js — the memplan HTML report: draws the plans embedded in the page
// (<script id="memplan-data">, columns described in include/memplan/render.h)
// as canvas heap maps with a live-bytes curve under each, a tooltip, search,
// and the table of the largest buffers at the peak. No framework, no network.
//
// How it stays fast with 100k buffers:
//   * the data is read once into typed arrays;
//   * buffers are grouped by colour, so a frame is one path fill per colour
//     (a few dozen fills) instead of one per buffer;
//   * drawing is done at most once per animation frame, whatever the number
//     of wheel or mouse events;
//   * every buffer is drawn at least 1 px wide and high, so none vanishes
//     when zoomed out, and hit-testing uses the same rectangles as drawing.
// View: time on x (ticks), offset up on y (bytes). All plans share one view,
// so zooming one map zooms them all and the plans stay comparable.
(function () {
  'use strict';
  const started = performance.now();
  const data = JSON.parse(document.getElementById('memplan-data').textContent);
  const n = data.ids.length;
  const ids = data.ids;
  const lower = Float64Array.from(data.lower);
  const upper = Float64Array.from(data.upper);
  const size = Float64Array.from(data.size);
  const operatorNames = data.operator_names;
  const operatorOf = data.operator.length === n ? Int32Array.from(data.operator) : null;
  const plans = data.plans.map((p) => ({ ...p, offsets: Float64Array.from(p.offsets) }));
  const parsedMs = performance.now() - started;

  // ---- numbers as text -------------------------------------------------------------
  const grouped = (v) => Math.round(v).toLocaleString('en-US');
  function bytesText(b) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let u = 0;
    let v = b;
    while (Math.abs(v) >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return u === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0)} ${units[u]}`;
  }
  const bytesLong = (b) => `${bytesText(b)} (${grouped(b)} B)`;
  const gapText = (g) => (g === null ? 'n/a' : `${(100 * g).toFixed(2)}%`);
  const operatorText = (i) => (operatorOf && operatorOf[i] >= 0 ? operatorNames[operatorOf[i]] : '');

  // ---- extent, colours, live bytes -------------------------------------------------
  let tMin = n ? Infinity : 0;
  let tMax = n ? -Infinity : 1;
  for (let i = 0; i < n; i++) {
    if (lower[i] < tMin) tMin = lower[i];
    if (upper[i] > tMax) tMax = upper[i];
  }
  if (tMax <= tMin) tMax = tMin + 1;
  let bytesTop = Math.max(data.load, 1);
  for (const p of plans) bytesTop = Math.max(bytesTop, p.arena);
  // A capacity far above the plans would squash them; drawn only when near.
  const showCapacity = data.capacity !== null && data.capacity <= 1.25 * bytesTop;
  if (showCapacity) bytesTop = Math.max(bytesTop, data.capacity);
  bytesTop *= 1.04;

  // A stable colour per id (FNV-1a over the id), from a palette of distinct
  // mid-light colours: dark outlines and text stay readable over all of them.
  const palette = [
    '#8fb8de', '#f4a582', '#a6d96a', '#d4a6c8', '#fdd57e', '#80cdc1', '#c2a5cf', '#f1b6da',
    '#b8e186', '#92c5de', '#fdae61', '#9ecae1', '#c7e9c0', '#fbb4ae', '#b3cde3', '#decbe4',
    '#fed9a6', '#e5d8bd', '#a1d99b', '#bcbddc', '#fc9272', '#9ebcda', '#d9ef8b', '#f2c18d',
  ];
  function colourOf(id) {
    let h = 0x811c9dc5;
    for (let k = 0; k < id.length; k++) {
      h ^= id.charCodeAt(k);
      h = Math.imul(h, 0x01000193);
    }
    return (h >>> 0) % palette.length;
  }
  const byColour = palette.map(() => []);
  for (let i = 0; i < n; i++) if (size[i] > 0) byColour[colourOf(ids[i])].push(i);
  const buckets = byColour.map((list) => Uint32Array.from(list));

  // Live bytes as a step function: at curveTicks[k] the live bytes become
  // curveBytes[k] (a buffer ending at t frees before one starting at t).
  const curve = (function () {
    const order = new Uint32Array(2 * n);
    for (let k = 0; k < 2 * n; k++) order[k] = k;
    const tickOf = (k) => (k < n ? lower[k] : upper[k - n]);
    order.sort((a, b) => tickOf(a) - tickOf(b) || (a < n) - (b < n));
    const ticks = [];
    const bytes = [];
    let live = 0;
    for (let k = 0; k < order.length; k++) {
      const e = order[k];
      live += e < n ? size[e] : -size[e - n];
      const t = tickOf(e);
      if (ticks.length && ticks[ticks.length - 1] === t) bytes[bytes.length - 1] = live;
      else {
        ticks.push(t);
        bytes.push(live);
      }
    }
    return { ticks: Float64Array.from(ticks), bytes: Float64Array.from(bytes) };
  })();

  // ---- page ------------------------------------------------------------------------
  function element(tag, attributes, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes || {})) {
      if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }
  const best = Math.min(...plans.map((p) => p.arena));
  const summary = [
    `${grouped(n)} buffers`,
    `ticks ${grouped(tMin)}–${grouped(tMax)}`,
    `load ${bytesLong(data.load)}`,
  ];
  if (data.capacity !== null) summary.push(`capacity ${bytesLong(data.capacity)}`);
  const search = element('input', {
    type: 'search', id: 'search', placeholder: 'search id or operator', autocomplete: 'off', spellcheck: 'false',
  });
  const matchCount = element('span', { id: 'match-count', class: 'muted' });
  const reset = element('button', { type: 'button', id: 'reset', text: 'Reset view' });
  document.body.append(
    element('header', {},
      element('h1', { text: data.title }),
      element('p', { class: 'summary', text: summary.join(' · ') }),
      element('div', { class: 'controls' }, search, matchCount, reset,
        element('span', { class: 'muted hint', text: 'wheel: zoom time · shift+wheel: zoom bytes · drag: pan · double-click: reset' }))));
  const grid = element('main', { id: 'plans', class: plans.length > 1 ? 'compare' : 'single' });
  document.body.append(grid);
  const tooltip = element('div', { id: 'tooltip', role: 'tooltip' });
  document.body.append(tooltip);

  const panels = plans.map((plan, index) => {
    const verdict = plan.valid
      ? element('span', { class: 'valid', text: 'valid' })
      : element('span', { class: 'invalid', text: `INVALID: ${plan.message}` });
    const stats = element('p', { class: 'stats' },
      `arena ${bytesLong(plan.arena)} · gap ${gapText(plan.gap)}${plans.length > 1 && plan.arena === best ? ' · smallest' : ''} · `,
      verdict);
    const map = element('canvas', { class: 'map', 'data-plan': String(index) });
    const live = element('canvas', { class: 'curve', 'data-plan': String(index) });
    grid.append(element('section', { class: 'plan' }, element('h2', { text: plan.name }), stats, map, live));
    return { plan, map, live, width: 0, mapHeight: 0, curveHeight: 0 };
  });

  // ---- view and scales -------------------------------------------------------------
  const margin = { left: 72, right: 12, top: 8, bottom: 4, curveBottom: 30 };
  const view = { t0: tMin, t1: tMax, b0: 0, b1: bytesTop };
  const plotWidth = (p) => p.width - margin.left - margin.right;
  const plotHeight = (p) => p.mapHeight - margin.top - margin.bottom;
  const xOf = (p, t) => margin.left + ((t - view.t0) / (view.t1 - view.t0)) * plotWidth(p);
  const yOf = (p, b) => margin.top + plotHeight(p) - ((b - view.b0) / (view.b1 - view.b0)) * plotHeight(p);
  const tickAt = (p, x) => view.t0 + ((x - margin.left) / plotWidth(p)) * (view.t1 - view.t0);
  const byteAt = (p, y) => view.b0 + ((margin.top + plotHeight(p) - y) / plotHeight(p)) * (view.b1 - view.b0);

  // The rectangle buffer i is drawn as in panel p: [x, x + w) × [y, y + h),
  // at least one pixel each way; null when off screen or not placed.
  function rectOf(p, i) {
    const offset = p.plan.offsets[i];
    if (offset < 0 || size[i] <= 0) return null;
    const x = xOf(p, lower[i]);
    const w = Math.max(1, xOf(p, upper[i]) - x);
    const yLow = yOf(p, offset);
    const yHigh = Math.min(yOf(p, offset + size[i]), yLow - 1);
    return { x, y: yHigh, w, h: yLow - yHigh };
  }

  function sizeCanvas(canvas, width, height) {
    const ratio = window.devicePixelRatio || 1;
    canvas.style.height = `${height}px`;
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return ctx;
  }
  function layout() {
    const mapHeight = plans.length > 1 ? 380 : 460;
    for (const p of panels) {
      p.width = Math.max(240, p.map.parentElement.clientWidth);
      p.mapHeight = mapHeight;
      p.curveHeight = 120;
      p.mapCtx = sizeCanvas(p.map, p.width, p.mapHeight);
      p.curveCtx = sizeCanvas(p.live, p.width, p.curveHeight);
    }
  }

  // Tick positions: a 1-2-5 step for time, a power of two for bytes.
  function timeSteps(t0, t1, count) {
    const raw = Math.max((t1 - t0) / count, 1);
    const magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((f) => f * magnitude).find((s) => s >= raw);
    const out = [];
    for (let t = Math.ceil(t0 / step) * step; t <= t1 && out.length < 100; t += step) out.push(t);
    return out;
  }
  function byteSteps(b0, b1, count) {
    let step = 1;
    while (step * count < b1 - b0) step *= 2;
    const out = [];
    for (let b = Math.ceil(b0 / step) * step; b <= b1 && out.length < 100; b += step) out.push(b);
    return out;
  }

  // ---- search and hover state ------------------------------------------------------
  let matches = null;  // Uint8Array, 1 where buffer i matches the search; null: no search
  let matchTotal = 0;
  let hovered = -1;    // buffer under the mouse (or the peak-table row), -1 none
  function applySearch(text) {
    const needle = text.trim().toLowerCase();
    if (!needle) {
      matches = null;
      matchTotal = 0;
      matchCount.textContent = '';
    } else {
      matches = new Uint8Array(n);
      matchTotal = 0;
      // Operators: test each name once, then mark its buffers.
      const operatorHit = operatorNames.map((name) => name.toLowerCase().includes(needle));
      for (let i = 0; i < n; i++) {
        const hit = ids[i].toLowerCase().includes(needle) || (operatorOf !== null && operatorOf[i] >= 0 && operatorHit[operatorOf[i]]);
        if (hit) {
          matches[i] = 1;
          matchTotal++;
        }
      }
      matchCount.textContent = `${grouped(matchTotal)} ${matchTotal === 1 ? 'match' : 'matches'}`;
    }
    requestDraw();
  }

  // ---- drawing ---------------------------------------------------------------------
  const stats = { parsedMs, firstDrawMs: 0, lastDrawMs: 0, draws: 0 };
  function drawMap(p) {
    const ctx = p.mapCtx;
    const w = p.width;
    const h = p.mapHeight;
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = '#f6f7f9';
    ctx.fillRect(margin.left, margin.top, plotWidth(p), plotHeight(p));
    ctx.save();
    ctx.beginPath();
    ctx.rect(margin.left, margin.top, plotWidth(p), plotHeight(p));
    ctx.clip();
    // Grid lines first, under the buffers.
    ctx.strokeStyle = '#e3e6ea';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (const b of byteSteps(view.b0, view.b1, Math.max(2, plotHeight(p) / 48))) {
      const y = Math.round(yOf(p, b)) + 0.5;
      ctx.moveTo(margin.left, y);
      ctx.lineTo(margin.left + plotWidth(p), y);
    }
    ctx.stroke();

    // Buffers, one fill per colour; outlines only where there is room for them.
    const left = margin.left;
    const right = margin.left + plotWidth(p);
    const top = margin.top;
    const bottom = margin.top + plotHeight(p);
    const outlined = new Path2D();
    const highlighted = new Path2D();
    // Scales inlined (no object per buffer): this loop runs over every buffer
    // on every frame.
    const offsets = p.plan.offsets;
    const xScale = plotWidth(p) / (view.t1 - view.t0);
    const yScale = plotHeight(p) / (view.b1 - view.b0);
    for (let c = 0; c < buckets.length; c++) {
      const bucket = buckets[c];
      ctx.fillStyle = palette[c];
      ctx.globalAlpha = matches ? 0.22 : 1;
      ctx.beginPath();
      for (let k = 0; k < bucket.length; k++) {
        const i = bucket[k];
        const offset = offsets[i];
        if (offset < 0) continue;
        const x = left + (lower[i] - view.t0) * xScale;
        if (x > right) continue;
        const w = Math.max(1, (upper[i] - lower[i]) * xScale);
        if (x + w < left) continue;
        const yLow = bottom - (offset - view.b0) * yScale;
        if (yLow < top) continue;
        const h = Math.max(1, size[i] * yScale);
        const y = yLow - h;
        if (y > bottom) continue;
        if (matches && matches[i]) {
          highlighted.rect(x, y, w, h);
          continue;
        }
        ctx.rect(x, y, w, h);
        if (w >= 4 && h >= 4) outlined.rect(x + 0.5, y + 0.5, w - 1, h - 1);
      }
      ctx.fill();
    }
    ctx.globalAlpha = 1;
    ctx.strokeStyle = matches ? 'rgba(40,50,60,0.25)' : 'rgba(40,50,60,0.55)';
    ctx.stroke(outlined);
    if (matches) {
      ctx.fillStyle = '#e8590c';
      ctx.fill(highlighted);
      ctx.strokeStyle = '#7a2e00';
      ctx.stroke(highlighted);
    }
    if (hovered >= 0) {
      const r = rectOf(p, hovered);
      if (r !== null) {
        ctx.lineWidth = 2;
        ctx.strokeStyle = '#111';
        ctx.strokeRect(r.x - 1, r.y - 1, r.w + 2, r.h + 2);
        ctx.lineWidth = 1;
      }
    }
    // Load (dashed red), capacity (dotted blue), arena (solid black).
    const line = (bytes, colour, dash, label, atLeft) => {
      const y = Math.round(yOf(p, bytes)) + 0.5;
      if (y < top || y > bottom) return;
      ctx.setLineDash(dash);
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(right, y);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      ctx.font = '12px system-ui, sans-serif';
      ctx.textAlign = atLeft ? 'left' : 'right';
      const x = atLeft ? left + 6 : right - 6;
      ctx.lineWidth = 3;
      ctx.strokeStyle = 'rgba(255,255,255,0.85)';
      ctx.strokeText(label, x, y - 4);
      ctx.lineWidth = 1;
      ctx.fillStyle = colour;
      ctx.fillText(label, x, y - 4);
    };
    line(data.load, '#c0392b', [7, 4], `load ${bytesText(data.load)}`, true);
    if (showCapacity) line(data.capacity, '#1f5fbf', [2, 3], `capacity ${bytesText(data.capacity)}`, false);
    line(p.plan.arena, '#111111', [], `arena ${bytesText(p.plan.arena)}`, false);
    ctx.restore();

    // Byte axis.
    ctx.fillStyle = '#333';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (const b of byteSteps(view.b0, view.b1, Math.max(2, plotHeight(p) / 48))) {
      ctx.fillText(bytesText(b), margin.left - 6, yOf(p, b));
    }
    ctx.textBaseline = 'alphabetic';
    ctx.strokeStyle = '#888';
    ctx.strokeRect(margin.left + 0.5, margin.top + 0.5, plotWidth(p) - 1, plotHeight(p) - 1);
  }

  // Live bytes under the map, on the map's time axis and the full byte scale:
  // per pixel column the most bytes live within it, as a filled area.
  function drawCurve(p) {
    const ctx = p.curveCtx;
    const w = p.width;
    const h = p.curveHeight;
    const top = 6;
    const bottom = h - margin.curveBottom;
    const left = margin.left;
    const right = margin.left + plotWidth(p);
    const yOfBytes = (b) => bottom - (b / bytesTop) * (bottom - top);
    ctx.clearRect(0, 0, w, h);
    ctx.fillStyle = '#f6f7f9';
    ctx.fillRect(left, top, right - left, bottom - top);
    const columns = Math.max(1, Math.round(right - left));
    const most = new Float64Array(columns);
    const ticks = curve.ticks;
    const bytes = curve.bytes;
    // First change point at or before the view's start (binary search).
    let lo = 0;
    let hi = ticks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (ticks[mid] <= view.t0) lo = mid;
      else hi = mid - 1;
    }
    for (let k = lo; k < ticks.length && ticks[k] < view.t1; k++) {
      const from = Math.max(0, Math.floor(xOf(p, ticks[k]) - left));
      const next = k + 1 < ticks.length ? ticks[k + 1] : view.t1;
      const to = Math.min(columns - 1, Math.max(from, Math.ceil(xOf(p, Math.min(next, view.t1)) - left) - 1));
      for (let c = from; c <= to; c++) if (bytes[k] > most[c]) most[c] = bytes[k];
    }
    ctx.beginPath();
    ctx.moveTo(left, bottom);
    for (let c = 0; c < columns; c++) {
      const y = yOfBytes(most[c]);
      ctx.lineTo(left + c, y);
      ctx.lineTo(left + c + 1, y);
    }
    ctx.lineTo(right, bottom);
    ctx.closePath();
    ctx.fillStyle = '#6c8ebf';
    ctx.fill();
    const line = (bytes, colour, dash) => {
      const y = Math.round(yOfBytes(bytes)) + 0.5;
      ctx.setLineDash(dash);
      ctx.strokeStyle = colour;
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(right, y);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
    };
    line(data.load, '#c0392b', [7, 4]);
    line(p.plan.arena, '#111111', []);
    ctx.strokeStyle = '#888';
    ctx.strokeRect(left + 0.5, top + 0.5, right - left - 1, bottom - top - 1);
    ctx.fillStyle = '#333';
    ctx.font = '11px system-ui, sans-serif';
    ctx.textAlign = 'right';
    ctx.fillText('live bytes', left - 6, top + 10);
    ctx.fillText(bytesText(data.load), left - 6, Math.max(top + 24, yOfBytes(data.load) + 4));
    ctx.textAlign = 'center';
    for (const t of timeSteps(view.t0, view.t1, Math.max(2, plotWidth(p) / 90))) {
      const x = Math.round(xOf(p, t)) + 0.5;
      ctx.beginPath();
      ctx.strokeStyle = '#888';
      ctx.moveTo(x, bottom);
      ctx.lineTo(x, bottom + 4);
      ctx.stroke();
      ctx.fillText(grouped(t), x, bottom + 15);
    }
    ctx.fillText('time (ticks)', left + (right - left) / 2, h - 2);
  }

  let drawPending = false;
  function draw() {
    drawPending = false;
    const begin = performance.now();
    for (const p of panels) {
      drawMap(p);
      drawCurve(p);
    }
    stats.lastDrawMs = performance.now() - begin;
    stats.draws++;
  }
  function requestDraw() {
    if (drawPending) return;
    drawPending = true;
    requestAnimationFrame(draw);
  }

  // ---- interaction -----------------------------------------------------------------
  const minTicks = 4;
  const minBytes = 16;
  function zoom(p, event) {
    const factor = Math.exp(event.deltaY * 0.0015);
    if (event.shiftKey || event.ctrlKey) {
      const at = byteAt(p, event.offsetY);
      const span = Math.min(bytesTop, Math.max(minBytes, (view.b1 - view.b0) * factor));
      const share = (at - view.b0) / (view.b1 - view.b0);
      view.b0 = Math.max(0, at - share * span);
      view.b1 = Math.min(bytesTop, view.b0 + span);
      view.b0 = view.b1 - span;
    } else {
      const at = tickAt(p, event.offsetX);
      const span = Math.min(tMax - tMin, Math.max(minTicks, (view.t1 - view.t0) * factor));
      const share = (at - view.t0) / (view.t1 - view.t0);
      view.t0 = Math.max(tMin, at - share * span);
      view.t1 = Math.min(tMax, view.t0 + span);
      view.t0 = view.t1 - span;
    }
    requestDraw();
  }
  function resetView() {
    Object.assign(view, { t0: tMin, t1: tMax, b0: 0, b1: bytesTop });
    requestDraw();
  }
  // The buffer drawn under (x, y) in panel p; the smallest when several are
  // (a 1-px sliver drawn over a neighbour stays reachable). A rectangle
  // thinner than `reach` pixels is hit within `reach` of its centre, so a
  // mouse (whose positions are whole pixels) can find it.
  const reach = 3;
  function bufferAt(p, x, y) {
    const offsets = p.plan.offsets;
    const xScale = plotWidth(p) / (view.t1 - view.t0);
    const yScale = plotHeight(p) / (view.b1 - view.b0);
    const tick = tickAt(p, x + reach);
    const bottom = margin.top + plotHeight(p);
    let found = -1;
    let area = Infinity;
    for (let i = 0; i < n; i++) {
      // Cheap rejections first: nothing starting right of the reach.
      if (lower[i] > tick || offsets[i] < 0 || size[i] <= 0) continue;
      let left = margin.left + (lower[i] - view.t0) * xScale;
      let w = Math.max(1, (upper[i] - lower[i]) * xScale);
      if (w < reach) {
        left -= (reach - w) / 2;
        w = reach;
      }
      if (x < left || x >= left + w) continue;
      let h = Math.max(1, size[i] * yScale);
      let yLow = bottom - (offsets[i] - view.b0) * yScale;
      if (h < reach) {
        yLow += (reach - h) / 2;
        h = reach;
      }
      if (y >= yLow || y < yLow - h) continue;
      if (w * h < area) {
        area = w * h;
        found = i;
      }
    }
    return found;
  }

  function showTooltip(p, i, clientX, clientY) {
    tooltip.replaceChildren();
    const row = (label, value) => tooltip.append(element('div', {}, element('span', { class: 'key', text: label }), value));
    tooltip.append(element('div', { class: 'id', text: ids[i] }));
    row('size', bytesLong(size[i]));
    row('lifetime', `[${grouped(lower[i])}, ${grouped(upper[i])}) ticks`);
    row('offset', bytesLong(p.plan.offsets[i]));
    const op = operatorText(i);
    if (op) row('operator', op);
    tooltip.style.display = 'block';
    const bounds = tooltip.getBoundingClientRect();
    const x = clientX + 14 + bounds.width > window.innerWidth ? clientX - 14 - bounds.width : clientX + 14;
    const y = clientY + 14 + bounds.height > window.innerHeight ? clientY - 14 - bounds.height : clientY + 14;
    tooltip.style.left = `${x + window.scrollX}px`;
    tooltip.style.top = `${y + window.scrollY}px`;
  }
  function hideTooltip() {
    tooltip.style.display = 'none';
    if (hovered >= 0) {
      hovered = -1;
      requestDraw();
    }
  }

  for (const p of panels) {
    let drag = null;
    p.map.addEventListener('wheel', (event) => {
      event.preventDefault();
      zoom(p, event);
    }, { passive: false });
    p.live.addEventListener('wheel', (event) => {
      event.preventDefault();
      zoom(p, { deltaY: event.deltaY, offsetX: event.offsetX, shiftKey: false, ctrlKey: false });
    }, { passive: false });
    p.map.addEventListener('mousedown', (event) => {
      drag = { x: event.clientX, y: event.clientY, view: { ...view } };
      p.map.classList.add('dragging');
    });
    window.addEventListener('mouseup', () => {
      drag = null;
      p.map.classList.remove('dragging');
    });
    p.map.addEventListener('mousemove', (event) => {
      if (drag) {
        const dt = ((event.clientX - drag.x) / plotWidth(p)) * (drag.view.t1 - drag.view.t0);
        const db = ((event.clientY - drag.y) / plotHeight(p)) * (drag.view.b1 - drag.view.b0);
        const spanT = drag.view.t1 - drag.view.t0;
        const spanB = drag.view.b1 - drag.view.b0;
        view.t0 = Math.min(Math.max(tMin, drag.view.t0 - dt), tMax - spanT);
        view.t1 = view.t0 + spanT;
        view.b0 = Math.min(Math.max(0, drag.view.b0 + db), bytesTop - spanB);
        view.b1 = view.b0 + spanB;
        tooltip.style.display = 'none';
        requestDraw();
        return;
      }
      const i = bufferAt(p, event.offsetX, event.offsetY);
      if (i < 0) {
        hideTooltip();
        return;
      }
      showTooltip(p, i, event.clientX, event.clientY);
      if (i !== hovered) {
        hovered = i;
        requestDraw();
      }
    });
    p.map.addEventListener('mouseleave', hideTooltip);
    p.map.addEventListener('dblclick', resetView);
  }
  reset.addEventListener('click', resetView);
  search.addEventListener('input', () => applySearch(search.value));
  window.addEventListener('resize', () => {
    layout();
    requestDraw();
  });

  // ---- the peak table --------------------------------------------------------------
  (function peakTable() {
    const peakBytes = (() => {
      let k = 0;
      while (k + 1 < curve.ticks.length && curve.ticks[k + 1] <= data.peak_tick) k++;
      return curve.ticks.length ? curve.bytes[k] : 0;
    })();
    const withOperators = operatorOf !== null;
    const head = element('tr', {}, element('th', { text: '#' }), element('th', { text: 'id' }),
      element('th', { class: 'number', text: 'size' }), element('th', { text: 'lifetime' }));
    if (withOperators) head.append(element('th', { text: 'operator' }));
    for (const p of plans) head.append(element('th', { class: 'number', text: `offset: ${p.name}` }));
    const body = element('tbody');
    data.peak_buffers.forEach((i, rank) => {
      const tr = element('tr', { 'data-buffer': String(i) }, element('td', { class: 'number', text: String(rank + 1) }),
        element('td', { class: 'id', text: ids[i] }), element('td', { class: 'number', text: bytesText(size[i]) }),
        element('td', { text: `[${grouped(lower[i])}, ${grouped(upper[i])})` }));
      if (withOperators) tr.append(element('td', { text: operatorText(i) }));
      for (const p of plans) {
        tr.append(element('td', { class: 'number', text: p.offsets[i] >= 0 ? bytesText(p.offsets[i]) : '–' }));
      }
      tr.addEventListener('mouseenter', () => {
        hovered = i;
        requestDraw();
      });
      tr.addEventListener('mouseleave', () => {
        hovered = -1;
        requestDraw();
      });
      body.append(tr);
    });
    document.body.append(element('section', { id: 'peak' },
      element('h2', { text: `Largest buffers live at the peak (tick ${grouped(data.peak_tick)}, ${bytesLong(peakBytes)} live)` }),
      element('table', {}, element('thead', {}, head), body)));
  })();

  layout();
  draw();
  stats.firstDrawMs = performance.now() - started;

  // For the browser tests (tests/browser) and for the curious, in the console.
  window.memplanReport = {
    ready: true,
    buffers: n,
    stats,
    get matches() { return matchTotal; },
    search(text) {
      search.value = text;
      applySearch(text);
    },
    // The plot area of plan `plan`'s map and the heights of its lines, in
    // client coordinates.
    plotBox(plan) {
      const p = panels[plan];
      const box = p.map.getBoundingClientRect();
      return {
        left: box.left + margin.left, top: box.top + margin.top, width: plotWidth(p), height: plotHeight(p),
        arenaY: box.top + yOf(p, p.plan.arena), loadY: box.top + yOf(p, data.load),
      };
    },
    // Where buffer `id` is drawn in plan `plan`, in client coordinates: the
    // centre of its rectangle, or null when it is not on screen.
    bufferCentre(plan, id) {
      const i = ids.indexOf(id);
      const p = panels[plan];
      if (i < 0 || !p) return null;
      const r = rectOf(p, i);
      if (r === null) return null;
      const box = p.map.getBoundingClientRect();
      return { x: box.left + r.x + r.w / 2, y: box.top + r.y + r.h / 2 };
    },
  };
})();
