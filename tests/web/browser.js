// SPDX-License-Identifier: MIT
// browser.js BASE_URL WANT_JSON OUT_DIR - the dashboard in headless
// Chromium (Debian's, driven by puppeteer-core): every page checked
// against what test-web.py read from the database (WANT_JSON), any
// JavaScript console error or failed request fails the test, screenshots
// in OUT_DIR.  Prints "PUBLISH" when the vehicle page waits for a live
// update (test-web.py then publishes a Batch and answers on stdin) and
// "RESULT {json}" at the end for test-web.py's checks against SQL.
'use strict';
const puppeteer = require('puppeteer-core');
const path = require('path');
const readline = require('readline');

const [base, wantJson, outDir] = process.argv.slice(2);
const want = JSON.parse(wantJson);
const errors = [];
const stdin = readline.createInterface({ input: process.stdin });
const lines = [];
let waiter = null;
stdin.on('line', l => { lines.push(l); if (waiter) waiter(); });
const nextLine = () => new Promise(res => { if (lines.length) res(lines.shift()); else waiter = () => { waiter = null; res(lines.shift()); }; });

function check(cond, what, ...ctx) {
  if (!cond) throw new Error(what + ' ' + ctx.map(c => JSON.stringify(c)).join(' '));
  console.log('ok: ' + what);
}

async function open(page, hash, ready) {
  await page.goto(base + '/' + hash, { waitUntil: 'load' });
  await page.waitForFunction(r => document.body.dataset.ready === r, { timeout: 20000 }, ready);
}

async function fleet(page) {
  await open(page, '#/', 'fleet');
  const rows = await page.$$eval('#fleet tbody tr', trs => trs.map(tr => ({
    vehicle: tr.dataset.vehicle, state: tr.querySelector('.state').dataset.state, from: tr.querySelector('.state').dataset.from,
    problems: [...tr.querySelectorAll('.health .problem')].map(e => e.textContent), ok: !!tr.querySelector('.health .ok'),
    today: (tr.querySelector('.today .pct') || tr.querySelector('.today')).textContent,
    counts: (tr.querySelector('.today .counts') || { textContent: '' }).textContent, events: [...tr.querySelectorAll('.ev')].map(e => e.textContent) })));
  check(JSON.stringify(rows.map(r => r.vehicle)) === JSON.stringify(Object.keys(want.vehicles).sort()), 'fleet lists every vehicle', rows);
  for (const r of rows) {
    const w = want.vehicles[r.vehicle];
    check(r.state === (w.online ? 'online' : 'offline') && r.from === w.state_from, `${r.vehicle} ${r.state} (from ${r.from})`, r, w);
    check(JSON.stringify(r.problems) === JSON.stringify(w.problems || []) && r.ok === (w.problems != null && !w.problems.length),
          `${r.vehicle} health: ${r.problems.join(', ') || (r.ok ? 'ok' : 'no Health records')}`, r, w);
    const pct = w.today == null ? '–' : (100 * w.today).toFixed(2) + ' %';
    check(r.today === pct, `${r.vehicle} today ${pct}`, r);
    /* the day's missing and on-board counts next to it, as the API says */
    const [missing, onBoard] = w.today_counts || [0, 0];
    const counts = [missing ? `${missing} missing` : '', onBoard ? `${onBoard} on board` : ''].filter(Boolean).join(' · ');
    check(r.counts === counts, `${r.vehicle} today: ${counts || 'nothing missing or on board'}`, r, w);
    check(JSON.stringify(r.events.map(e => e.split(' ×')[0])) === JSON.stringify(w.events), `${r.vehicle} events`, r, w);
  }
  await page.screenshot({ path: path.join(outDir, 'fleet.png') });
  // sort by vehicle, descending (a second click), then filter
  await page.click('th[data-key="vehicle"]');
  const desc = await page.$$eval('#fleet tbody tr', trs => trs.map(tr => tr.dataset.vehicle));
  check(JSON.stringify(desc) === JSON.stringify(Object.keys(want.vehicles).sort().reverse()), 'sorted descending', desc);
  await page.type('#filter', 'emu2');
  const one = await page.$$eval('#fleet tbody tr', trs => trs.map(tr => tr.dataset.vehicle));
  check(JSON.stringify(one) === '["emu2"]', 'filtered', one);
}

async function vehicle(page) {
  await open(page, '#/vehicle/emu1', 'vehicle');
  const rows = await page.$$eval('tr[data-channel]', trs => trs.map(tr => ({
    name: tr.dataset.channel, value: tr.querySelector('.value').textContent, stale: tr.classList.contains('stale'),
    bus: tr.closest('table').dataset.bus })));
  check(rows.length === Object.keys(want.channels).length, 'every channel', rows);
  for (const r of rows) {
    check(Math.abs(parseFloat(r.value) - want.channels[r.name]) < 1e-6, `${r.name} = ${want.channels[r.name]}`, r);
    check(r.stale === want.stale.includes(r.name), `${r.name} stale ${r.stale}`, r);
  }
  check(rows.find(r => r.name === 'Motor.Torque').bus === '1' && rows.find(r => r.name === 'speed').bus === '0', 'grouped by bus', rows);
  await page.screenshot({ path: path.join(outDir, 'vehicle.png') });
  // live: a new Batch commits; the page shows its value without a reload
  await page.waitForFunction(() => document.body.dataset.live === 'on', { timeout: 30000 });
  const before = await page.evaluate(() => window.railmon.updates);
  const t0 = Date.now();
  console.log('PUBLISH ' + want.live_value);
  await nextLine();
  await page.waitForFunction((b, v) => window.railmon.updates > b &&
    parseFloat(document.querySelector('tr[data-channel="speed"] .value').textContent) === v, { timeout: 30000 }, before, want.live_value);
  console.log(`live: the vehicle page showed the new value ${Date.now() - t0} ms after the publication`);
}

// a real vehicle's page: its Health parts, its status, and the label of
// each last value that has a value table
async function vehicleLabels(page) {
  const w = want.labelled;
  await open(page, `#/vehicle/${w.vehicle}`, 'vehicle');
  const rows = await page.$$eval('tr[data-channel]', trs => trs.map(tr => ({
    name: tr.dataset.channel, label: tr.querySelector('.label').textContent })));
  for (const [name, label] of Object.entries(w.labels))
    check(rows.find(r => r.name === name)?.label === label, `${name}: label ${label}`, rows.find(r => r.name === name));
  check(rows.filter(r => r.label).length === Object.values(w.labels).filter(Boolean).length, 'labels only where a value table has one', rows);
  const parts = await page.$$eval('#health-parts tbody tr', trs => trs.map(tr => tr.dataset.part));
  check(JSON.stringify(parts.slice().sort()) === JSON.stringify(w.parts.slice().sort()), 'its Health parts', parts);
  const st = await page.$eval('#vstate .state', e => e.textContent);
  check(st === w.state, `its status: ${st}`, st);
  await page.screenshot({ path: path.join(outDir, 'vehicle-real.png'), fullPage: true });
}

async function chart(page) {
  const c = want.chart;
  await open(page, `#/chart?vehicle=emu1&ch=speed&from=${c.from}&to=${c.to}`, 'chart');
  const st = await page.evaluate(() => ({ ...window.railmon.chart, fetches: window.railmon.fetches }));
  check(st.points[0] > 0 && st.max[0] === 1000, 'the chart has the spike', st);
  // the event's marker: its colour on the canvas at the event's x
  const px = await page.evaluate(t => {
    const u = window.railmon.plot, x = Math.round(u.valToPos(t, 'x', true)), y = Math.round(u.bbox.top + u.bbox.height * 0.6);
    return [...u.ctx.getImageData(x, y, 1, 1).data];
  }, c.event_t);
  check(st.events === 1 && Math.abs(px[0] - 231) < 30 && Math.abs(px[1] - 111) < 30, 'the event marker is drawn', px, st.events);
  // the cursor reads the exact values: hovering by the spike, the legend
  // shows the min and max of the column under the cursor (at 1080 columns
  // on 1005 pixels that is the spike's column or its neighbour)
  const spikeX = await page.evaluate(() => {
    const u = window.railmon.plot, i = u.data[1].indexOf(1000);
    return u.valToPos(u.data[0][i], 'x');
  });
  const over = await (await page.$('.u-over')).boundingBox();
  await page.mouse.move(over.x + spikeX - 20, over.y + over.height / 2);
  await page.mouse.move(over.x + spikeX, over.y + over.height / 2, { steps: 4 });
  const cur = await page.waitForFunction(() => {
    const u = window.railmon.plot, i = u.cursor.idx;
    const legend = [...document.querySelectorAll('.u-legend .u-series')].map(e => e.textContent);
    const want = `speed max${+u.data[1][i].toFixed(6)}`;
    return Math.abs(i - u.data[1].indexOf(1000)) <= 1 && legend.includes(want) && { i, legend };
  }, { timeout: 5000 }).then(h => h.jsonValue()).catch(() => null);
  check(cur, 'the cursor reads the values of the column under it', cur);
  await page.screenshot({ path: path.join(outDir, 'chart.png') });
  // zoom: drag across a tenth of the plot
  const box = await (await page.$('.u-over')).boundingBox();
  const before = await page.evaluate(() => window.railmon.updates);
  await page.mouse.move(box.x + box.width * 0.45, box.y + box.height / 2);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.55, box.y + box.height / 2, { steps: 5 });
  await page.mouse.up();
  await page.waitForFunction(b => window.railmon.updates > b, { timeout: 30000 }, before);
  const zoom = await page.evaluate(() => ({ ...window.railmon.chart, fetches: window.railmon.fetches }));
  check(zoom.to - zoom.from < (st.to - st.from) / 5, 'zoomed in', zoom);
  // two channels on separate axes, with the events of the range
  await open(page, `#/chart?vehicle=emu1&ch=speed&ch=line_voltage&from=${c.event_t - 1800}&to=${c.event_t + 60}&axes=separate`, 'chart');
  const two = await page.evaluate(() => ({ ...window.railmon.chart, scales: Object.keys(window.railmon.plot.scales) }));
  check(two.points.length === 2 && two.scales.includes('y0') && two.scales.includes('y1') && two.events === 1,
        'two channels on their own axes, the event listed', two);
  await page.screenshot({ path: path.join(outDir, 'chart-two.png') });
  // search by qualified name, and pick what it finds: a third series
  const n = await page.evaluate(() => window.railmon.updates);
  await page.type('#search', 'torq');
  // one search per key typed: wait for the answer to 'torq' itself (an
  // earlier key's answer can hold the same one label and then be replaced
  // under the click), then click the box queried at click time
  await page.waitForFunction(() => document.querySelector('#results').dataset.q === 'torq' &&
    [...document.querySelectorAll('#results label')].length === 1 &&
    document.querySelector('#results label').textContent.includes('emu1/Motor.Torque'), { timeout: 30000 });
  await page.click('#results input[data-name="Motor.Torque"]');
  await page.waitForFunction(k => window.railmon.updates > k && window.railmon.chart.points.length === 3, { timeout: 30000 }, n);
  const three = await page.$$eval('.u-legend .u-series', els => els.map(e => e.textContent));
  check(three.some(t => t.startsWith('Motor.Torque max')), 'search by qualified name found Motor.Torque and drew it as a third channel', three);
  // a chart whose range ends now follows new Batches: a Batch with speed
  // 2222 commits, and the chart redraws with it, without a reload
  await open(page, `#/chart?vehicle=emu1&ch=speed&from=${Date.now() / 1000 - 600}`, 'chart');
  const k = await page.evaluate(() => window.railmon.updates);
  console.log('PUBLISH 2222');
  await nextLine();
  await page.waitForFunction(b => window.railmon.updates > b && window.railmon.chart.max[0] === 2222, { timeout: 30000 }, k)
    .catch(() => {});
  const live = await page.evaluate(() => window.railmon.chart);
  check(live.max[0] === 2222, 'the live chart drew the new Batch', live.max);
  return { chart: st, zoom };
}

async function frames(page) {
  const f = want.frames;
  await open(page, `#/frames?vehicle=emu1&id=0x123&from=${f.from}&to=${f.to}`, 'frames');
  const rows = await page.$$eval('#frames tbody tr', trs => trs.map(tr => ({ id: tr.dataset.id, sig: tr.querySelector('.signals').textContent,
    ground: [...tr.querySelectorAll('.ground span')].map(s => s.textContent.trim()) })));
  check(rows.length === f.count && rows.every(r => r.id === '291' && r.sig.startsWith('Motor.Torque = ')), 'frames with decoded signals', rows.slice(0, 3));
  // the ground DBC's signals beside them: Step k of the frame's second byte, labelled where its table says
  check(rows.every(r => r.ground.length === 2 && r.ground[0].startsWith('Motor.Count = ') && r.ground[1].startsWith('Motor.Step = ')) &&
        rows.some(r => r.ground[1] === 'Motor.Step = 2 (two)') && rows.some(r => r.ground[1] === 'Motor.Step = 0 (zero)'),
        'the ground DBC decodes each frame, with its labels', rows.slice(0, 3));
  await page.screenshot({ path: path.join(outDir, 'frames.png') });
}

(async () => {
  const t0 = Date.now();
  const browser = await puppeteer.launch({ executablePath: '/usr/lib/chromium/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  let rc = 1;
  try {
    const page = await browser.newPage();
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', e => errors.push(e.message));
    page.on('requestfailed', r => { if (!r.url().endsWith('/api/live')) errors.push('failed: ' + r.url()); });
    // data: URLs are the browser's own (the date picker's icon), never the network
    page.on('request', r => { if (!r.url().startsWith(base) && !r.url().startsWith('data:')) errors.push('outside request: ' + r.url()); });
    await page.setViewport({ width: 1100, height: 700 });
    const tl = Date.now();
    await fleet(page);
    console.log(`page load (fleet, 3 vehicles): ${Date.now() - tl} ms`);
    await vehicle(page);
    await vehicleLabels(page);
    const res = await chart(page);
    await frames(page);
    check(errors.length === 0, 'no JavaScript console error, no failed or outside request', errors);
    console.log('RESULT ' + JSON.stringify(res));
    rc = 0;
  } catch (e) {
    // the step that failed: the first line of ours in the stack
    const where = (e.stack || '').split('\n').find(l => l.includes('browser.js')) || '';
    console.log('FAIL ' + e.message + ' ' + where.trim() + (errors.length ? ' console: ' + errors.join(' | ') : ''));
  } finally {
    await browser.close();
    stdin.close();
  }
  console.log(`browser: ${Date.now() - t0} ms`);
  // exit once stdout is written: to a pipe it is asynchronous, and an
  // early exit lost the last lines (which step failed)
  process.stdout.write('', () => process.exit(rc));
})();
