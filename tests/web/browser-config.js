// SPDX-License-Identifier: MIT
// browser-config.js BASE_URL VEHICLE WANT_TEXT WANT_OUTCOME OUT_DIR - the
// vehicle page's remote configuration line in headless Chromium (Debian's,
// driven by puppeteer-core), for test-web-config.py: its text is exactly
// WANT_TEXT ("config version N: refused (why), at TIME"), the vehicle's
// why (HTML on purpose) shown as text: no element made from it, no script
// run; any JavaScript console error or failed request fails.
'use strict';
const puppeteer = require('puppeteer-core');
const path = require('path');

const [base, vehicle, wantText, wantOutcome, outDir] = process.argv.slice(2);

function check(cond, what, ...ctx) {
  if (!cond) throw new Error(what + ' ' + ctx.map(c => JSON.stringify(c)).join(' '));
  console.log('ok: ' + what);
}

(async () => {
  const browser = await puppeteer.launch({ executablePath: '/usr/lib/chromium/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  const errors = [];
  try {
    const page = await browser.newPage();
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', e => errors.push(e.message));
    page.on('requestfailed', r => errors.push('failed: ' + r.url()));
    await page.setViewport({ width: 1000, height: 500 });
    await page.goto(base + '/#/vehicle/' + encodeURIComponent(vehicle), { waitUntil: 'load' });
    await page.waitForFunction(() => document.body.dataset.ready === 'vehicle', { timeout: 30000 });
    const got = await page.evaluate(() => {
      const c = document.querySelector('#config .config-status');
      return c && { text: c.textContent, outcome: c.dataset.outcome, warn: c.classList.contains('warn'),
        elements: [...c.querySelectorAll('*')].map(e => e.tagName.toLowerCase() + '.' + e.className),
        imgs: document.querySelectorAll('img').length, pwned: window.pwned === 1 };
    });
    check(got, 'the vehicle page has a config line');
    check(got.text === wantText, 'the line reads: ' + wantText, got.text);
    check(got.outcome === wantOutcome && got.warn === (wantOutcome !== 'applied'), `${wantOutcome}, shown as a warning`, got);
    check(JSON.stringify(got.elements) === JSON.stringify(['span.outcome', 'span.why', 'span.at']) && got.imgs === 0 && !got.pwned,
          'the vehicle\'s why is text: no element made, no script run', got);
    await page.screenshot({ path: path.join(outDir, 'vehicle-config.png') });
    check(errors.length === 0, 'no JavaScript error or failed request', errors);
  } finally {
    await browser.close();
  }
})().catch(e => { console.error(e.stack || String(e)); process.exit(1); });
