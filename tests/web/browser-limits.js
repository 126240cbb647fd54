// SPDX-License-Identifier: MIT
// browser-limits.js BASE_URL WANT_JSON - test-web-limits.py's dashboard
// checks in headless Chromium (puppeteer-core): a channel whose name holds
// a comma is charted as one channel (one ch parameter per channel in the
// page's URL); vehicles named "." and ".." get the API's "no such
// vehicle" (their names go in a query, where fetch() resolves no "..");
// a vehicle with more channels than an answer holds says it is truncated.
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
    await open(page, '#/vehicle/wide', 'vehicle');
    const note = await page.$eval('#truncated', e => e.textContent);
    const rows = await page.$$eval('tr[data-channel]', trs => trs.length);
    check(rows === 1000 && note.includes('first 1000 channels'), 'a vehicle of 20,000 channels: 1000 shown, and said', rows, note);
    await open(page, '#/vehicle/' + 'x'.repeat(59), 'vehicle');
    check(await page.$('tr[data-channel="long"]') !== null, 'a 59-character name: its page');
    check(pageErrors.length === 0, 'no page errors', pageErrors);
  } finally {
    await browser.close();
  }
})().catch(e => { console.log('FAIL: ' + e.message); process.exit(1); });
