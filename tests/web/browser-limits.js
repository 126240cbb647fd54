// SPDX-License-Identifier: MIT
// browser-limits.js BASE_URL WANT_JSON - test-web-limits.py's dashboard
// checks in headless Chromium (puppeteer-core): a channel whose name holds
// a comma is charted as one channel (one ch parameter per channel in the
// page's URL); vehicles named "." and ".." get the API's "no such
// vehicle" (their names go in a query, where fetch() resolves no "..");
// a vehicle with more channels than an answer holds says it is truncated;
// the vehicle page says what the door refused of it (issue 26), per reason
// in words, hostile detail as text, and nothing for a vehicle without; the
// fleet overview says when /api/vehicles was truncated (its limit).
// An uncaught page error fails; exit status 0 when every check passed.
'use strict';
const puppeteer = require('puppeteer-core');

const [base, wantJson] = process.argv.slice(2);
const want = JSON.parse(wantJson);
const pageErrors = [];

function check(cond, what, ...ctx) {
  if (!cond) throw new Error(what + ' ' + ctx.map(c => JSON.stringify(c)).join(' '));
  console.log('ok: ' + what);
}

async function open(page, hash, ready) {
  await page.goto(base + '/' + hash, { waitUntil: 'load' });
  try {
    await page.waitForFunction(r => document.body.dataset.ready === r, { timeout: 20000 }, ready);
  } catch (e) {
    const got = await page.evaluate(() => [document.body.dataset.ready, (document.querySelector('.error') || {}).textContent]);
    throw new Error(`${hash}: not ${ready} but ${JSON.stringify(got)} (${e.message})`);
  }
}

(async () => {
  const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage();
    page.on('pageerror', e => pageErrors.push(e.message));
    page.on('response', r => { if (r.status() >= 500) console.log(`answer ${r.status()}: ${r.url()}`); });
    await page.setViewport({ width: 1000, height: 700 });
    await open(page, `#/chart?vehicle=emu1&ch=${encodeURIComponent('a,b')}&from=${want.from}&to=${want.to}`, 'chart');
    const chart = await page.evaluate(() => window.railmon.chart);
    check(JSON.stringify(chart.names) === '["a,b"]' && chart.points[0] === 10, 'the channel "a,b" charted as one', chart);
    const hash = await page.evaluate(() => location.hash);
    check(hash.includes('ch=a%2Cb') && !hash.includes('ch=a%2Cb%2C') && (hash.match(/[?&]ch=/g) || []).length === 1,
          'the page URL keeps it as one ch parameter', hash);
    // two channels, one with a comma: two ch parameters, two series
    await open(page, `#/chart?vehicle=emu1&ch=${encodeURIComponent('a,b')}&ch=speed&from=${want.from}&to=${want.to}`, 'chart');
    const two = await page.evaluate(() => window.railmon.chart.names);
    check(JSON.stringify(two) === '["a,b","speed"]', 'a,b and speed: two series', two);
    for (const name of ['..', '.']) {
      await open(page, `#/vehicle/${name}`, 'error');
      const msg = await page.$eval('.error', e => e.textContent);
      check(msg.includes('no such vehicle'), `the vehicle page of "${name}": no such vehicle`, msg);
    }
    // the door's refusals: one row per reason in words, the count, first
    // and last time, and the last detail as text (hostile markup included)
    await open(page, '#/vehicle/emu1', 'vehicle');
    const refused = await page.$$eval('#refusals tbody tr', trs => trs.map(tr => ({
      reason: tr.dataset.reason, what: tr.querySelector('.what').textContent, count: tr.querySelector('.count').textContent,
      first: tr.querySelector('.first').textContent, last: tr.querySelector('.last').textContent,
      detail: tr.querySelector('.detail').textContent, imgs: tr.querySelectorAll('img').length })));
    const fmt = t => new Date(t * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
    check(JSON.stringify(refused.map(r => r.reason)) === '["dictionary","time"]', 'emu1: two reasons refused at the door', refused);
    for (const r of refused) {
      const w = want.refusals[r.reason];
      check(r.what === w.what && r.count === w.count, `${r.reason}: "${r.what}" ${r.count} times`, r, w);
      check(r.first === fmt(w.first) && r.last === fmt(w.last), `${r.reason}: first ${r.first}, last ${r.last}`, r, w);
      check(r.detail === w.detail && r.imgs === 0, `${r.reason}: the last detail as text`, r, w);
    }
    check(await page.evaluate(() => window.pwned) === undefined && await page.$('#view img') === null,
          'the hostile detail ran nothing and made no element');
    // under the page's links, after the config status line (#config, issue 32)
    check((await page.$eval('#door', e => e.previousElementSibling.id === 'config' &&
                                          e.previousElementSibling.previousElementSibling.textContent.includes('CAN frames'))) &&
          (await page.$eval('#door h3', e => e.textContent)) === 'Refused at the door', 'the block is headed "Refused at the door"');
    if (want.shot) await page.screenshot({ path: want.shot, fullPage: true });
    await open(page, '#/vehicle/wide', 'vehicle');
    check(await page.$eval('#door', e => e.innerHTML) === '' && await page.$('#refusals') === null,
          'a vehicle with nothing refused: no block');
    const note = await page.$eval('#truncated', e => e.textContent);
    const rows = await page.$$eval('tr[data-channel]', trs => trs.length);
    check(rows === 1000 && note.includes('first 1000 channels'), 'a vehicle of 20,000 channels: 1000 shown, and said', rows, note);
    await open(page, '#/vehicle/' + 'x'.repeat(59), 'vehicle');
    check(await page.$('tr[data-channel="long"]') !== null, 'a 59-character name: its page');
    // the fleet overview, every vehicle (7): whole; then asked with limit=2 (as a fleet past the
    // default 1000 would be answered): the first two shown and the page says it is truncated
    await open(page, '#/', 'fleet');
    check(await page.$$eval('tr[data-vehicle]', trs => trs.length) === 7 && await page.$('#truncated') === null,
          'the fleet overview: 7 vehicles, not truncated');
    await page.setRequestInterception(true);
    page.on('request', r => r.url().endsWith('/api/vehicles') ? r.continue({ url: r.url() + '?limit=2' }) : r.continue());
    await page.reload({ waitUntil: 'load' });  // the same URL: a goto would change nothing
    await page.waitForFunction(() => document.body.dataset.ready === 'fleet', { timeout: 20000 });
    const fleet = await page.$$eval('tr[data-vehicle]', trs => trs.map(t => t.dataset.vehicle));
    const said = await page.$eval('#truncated', e => e.textContent);
    check(fleet.length === 2 && said.includes('first 2 vehicles'), 'a truncated fleet answer: 2 shown, and said', fleet, said);
    check(pageErrors.length === 0, 'no page errors', pageErrors);
  } finally {
    await browser.close();
  }
})().catch(e => { console.log('FAIL: ' + e.message); process.exit(1); });
