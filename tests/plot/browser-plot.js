// SPDX-License-Identifier: MIT
// browser-plot.js URL - plot-synth's HTML page in headless Chromium
// (puppeteer-core): two charts, the series named, the spike in the data,
// the time axes zoomed together, no error on the page.
'use strict';
const puppeteer = require('puppeteer-core');

function check(cond, what, ...ctx) {
  if (!cond) throw new Error(what + ' ' + ctx.map(c => JSON.stringify(c)).join(' '));
  console.log('ok: ' + what);
}

(async () => {
  const errors = [];
  const browser = await puppeteer.launch({ executablePath: '/usr/bin/chromium', headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage();
    page.on('pageerror', e => errors.push(e.message));
    page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('requestfailed', r => errors.push('request failed: ' + r.url()));
    await page.setViewport({ width: 1100, height: 900 });
    await page.goto(process.argv[2], { waitUntil: 'load' });
    await page.waitForFunction(() => window.railmonPlots && window.railmonPlots.length === 2, { timeout: 20000 });
    const info = await page.evaluate(() => window.railmonPlots.map(u => ({
      labels: u.series.slice(1).map(s => s.label),
      n: u.data[0].length,
      max: Math.max(...u.data[1].filter(v => v != null)),
      nulls: u.data[1].filter(v => v === null).length,
      canvas: !!u.root.querySelector('canvas'),
      x: [u.scales.x.min, u.scales.x.max],
    })));
    check(info[0].labels[0] === 'VehicleSpeed.Speed [km/h]', 'the first chart is the speed, with its unit', info[0].labels);
    check(info[1].labels[0] === 'BrakePressure.BrakePipePressure [bar]', 'the second chart is the brake pressure', info[1].labels);
    check(info.every(i => i.canvas), 'both charts drew on a canvas');
    check(info[0].max === 250, 'the one-sample spike is in the chart data', info[0].max);
    check(info[0].nulls === 1, 'the 50 s without samples breaks the line once', info[0].nulls);
    check(Math.abs(info[0].x[0] - 1764748800) < 1, 'the time axis starts at the first sample (UTC seconds)', info[0].x);
    const title = await page.title();
    check(title === 'synthetic </script> run', 'the title, escaped, is whole', title);
    // zoom the first chart: the second follows
    // zoom the first chart: the second follows (uPlot commits a scale in a
    // microtask, so wait for it)
    await page.evaluate(() => window.railmonPlots[0].setScale('x', { min: 1764748800 + 250, max: 1764748800 + 350 }));
    await page.waitForFunction(() => { const b = window.railmonPlots[1]; return b.scales.x.min === 1764748800 + 250 && b.scales.x.max === 1764748800 + 350; }, { timeout: 10000 });
    console.log('ok: zooming one chart zooms the other');
    check(errors.length === 0, 'no error on the page', errors);
  } finally {
    await browser.close();
  }
})().catch(e => { console.error('FAIL: ' + e.message); process.exit(1); });
