/* SPDX-License-Identifier: MIT */
/* railmon serve's dashboard: plain JS over the JSON API
   (docs/dashboard-api.md), charts with uPlot, live updates from /api/live.
   Pages by the URL's hash: #/ fleet, #/vehicle/NAME, #/chart?..., #/frames?... */
'use strict';

const $ = (sel, el = document) => el.querySelector(sel);
const view = $('#view');
const state = { page: null, live: null, liveCount: 0 };
/* what the page shows, for the browser tests and the curious */
window.railmon = { updates: 0, fetches: 0, chart: null };

function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
function fmtTime(t) { return t == null ? '' : new Date(t * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z'); }
function fmtAge(s) {
  if (s == null) return 'never';
  s = Math.max(0, s);
  return s < 120 ? s.toFixed(1) + ' s' : s < 7200 ? (s / 60).toFixed(1) + ' min' : s < 172800 ? (s / 3600).toFixed(1) + ' h' : (s / 86400).toFixed(1) + ' d';
}
function fmtVal(v) { return v == null ? '' : Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(4) : +v.toFixed(6); }
function pct(x) { return x == null ? '–' : (100 * x).toFixed(2) + ' %'; }

async function api(path) {
  window.railmon.fetches++;
  const r = await fetch(path, { credentials: 'same-origin' });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
function showError(e) { view.insertAdjacentHTML('afterbegin', `<p class="error">${esc(e.message)}</p>`); }

/* ---- live: one EventSource for every page ---- */
const liveListeners = new Set();
function startLive() {
  const es = new EventSource('/api/live');
  es.addEventListener('hello', () => { $('#live').textContent = 'live: on'; document.body.dataset.live = 'on'; });
  es.addEventListener('batch', ev => {
    const d = JSON.parse(ev.data);
    state.liveCount++;
    $('#live').textContent = `live: on (${state.liveCount} Batches)`;
    for (const fn of liveListeners) fn(d.vehicle);
  });
  es.onerror = () => { $('#live').textContent = 'live: reconnecting'; document.body.dataset.live = 'off'; };
}
function onLive(fn) { liveListeners.add(fn); return () => liveListeners.delete(fn); }
/* at most one refresh in flight, and one more queued behind it */
function throttled(fn) {
  let busy = false, again = false;
  const run = async () => {
    if (busy) { again = true; return; }
    busy = true;
    try { await fn(); } finally { busy = false; if (again) { again = false; run(); } }
  };
  return run;
}

/* ---- sortable, filterable table ---- */
function sortable(table, rows, columns, render) {
  let key = columns[0].key, dir = 1;
  const thead = table.createTHead().insertRow();
  columns.forEach(c => {
    const th = document.createElement('th');
    th.textContent = c.title;
    th.className = 'sortable';
    th.dataset.key = c.key;
    th.onclick = () => { dir = key === c.key ? -dir : 1; key = c.key; draw(); };
    thead.appendChild(th);
  });
  const tbody = table.createTBody();
  let filter = '';
  function draw() {
    const col = columns.find(c => c.key === key);
    const shown = rows.filter(r => !filter || JSON.stringify(r).toLowerCase().includes(filter))
      .sort((a, b) => { const x = col.value(a), y = col.value(b); return (x > y ? 1 : x < y ? -1 : 0) * dir; });
    tbody.innerHTML = shown.map(render).join('');
    for (const th of thead.children) th.className = 'sortable' + (th.dataset.key === key ? dir > 0 ? ' sorted-asc' : ' sorted-desc' : '');
  }
  draw();
  return { setFilter(f) { filter = f.toLowerCase(); draw(); }, draw };
}

/* ---- fleet overview ---- */
function dayOf(v, back) {
  const d = new Date(Date.now() - back * 86400000).toISOString().slice(0, 10);
  return (v.completeness || []).find(c => c.day === d);
}
/* the Health records' figures: problems first, then the usual numbers */
function healthCell(h) {
  if (!h) return '<span class="muted">no Health records</span>';
  const bits = [];
  if (h.uplink_backlog != null) bits.push(`backlog ${h.uplink_backlog}`);
  if (h.latency_p99_us != null) bits.push(`p99 ${h.latency_p99_us} µs`);
  bits.push(`${fmtAge(h.age_s)} old`);
  return (h.problems.length ? h.problems.map(p => `<div class="problem">${esc(p)}</div>`).join('') : '<div class="ok">ok</div>')
    + `<div class="figures">${esc(bits.join(' · '))}</div>`;
}
async function pageFleet() {
  view.innerHTML = `<h2>Fleet</h2><div class="controls"><input id="filter" placeholder="filter vehicles, events…"></div>
    <table id="fleet"></table><p class="note">Completeness: records received over records received plus missing in the
    ledger's holes (UTC day); a hole the vehicle answered "gone" for is explained (data it no longer had). Records the
    vehicle sent reduced (not every value over the air) are "on board": in its log, counted as complete, not missing.</p>`;
  const answer = await api('/api/vehicles'), vs = answer.vehicles;
  if (answer.truncated)
    view.insertAdjacentHTML('beforeend', `<p class="note" id="truncated">the first ${answer.limit} vehicles only (by name): a vehicle's page (#/vehicle/NAME) shows any other</p>`);
  const cols = [
    { key: 'vehicle', title: 'Vehicle', value: v => v.vehicle },
    { key: 'state', title: 'State', value: v => v.online ? 0 : 1 },
    { key: 'seen', title: 'Last seen', value: v => -v.last_seen },
    { key: 'lag', title: 'Lag / backlog', value: v => v.last_batch ? v.last_batch.lag_s : 1e12 },
    { key: 'health', title: 'Health', value: v => v.health ? v.health.problems.length : -1 },
    { key: 'today', title: 'Today', value: v => (dayOf(v, 0) || {}).complete ?? -1 },
    { key: 'yesterday', title: 'Yesterday', value: v => (dayOf(v, 1) || {}).complete ?? -1 },
    { key: 'gaps', title: 'Gaps', value: v => (v.gaps || []).length },
    { key: 'events', title: 'Active events', value: v => (v.events || []).reduce((n, e) => n + e.count, 0) },
  ];
  /* a day's percentage, then its missing and on-board counts when any */
  const dayCell = c => {
    if (!c) return '–';
    const n = [c.missing ? `${c.missing} missing` : '', c.on_board ? `${c.on_board} on board` : ''].filter(Boolean);
    return `<span class="pct">${pct(c.complete)}</span>${n.length ? `<div class="counts">${esc(n.join(' · '))}</div>` : ''}`;
  };
  const render = v => {
    const t = dayOf(v, 0), y = dayOf(v, 1), lb = v.last_batch;
    const gaps = (v.gaps || []).map(g => `<div class="gap">${g.records} records (seq ${g.from_seq}–${g.to_seq}) before ${esc(fmtTime(g.t_after))}${g.explained ? ', explained: gone from the vehicle' : ', asked again'}</div>`).join('');
    const evs = (v.events || []).map(e => `<span class="ev" data-code="${e.code}">${esc(e.name)} ×${e.count}</span>`).join('');
    return `<tr data-vehicle="${esc(v.vehicle)}"><td><a href="#/vehicle/${encodeURIComponent(v.vehicle)}">${esc(v.vehicle)}</a></td>
      <td class="state ${v.online ? 'online' : 'offline'}" data-state="${v.online ? 'online' : 'offline'}" data-from="${v.state_from}" title="${v.state_from === 'status'
        ? 'from the vehicle\'s status topic' : 'from its last Batch (no status heard)'}">${v.online ? 'online' : 'offline'}${v.state_since != null
        ? `<div class="since">since ${esc(fmtAge(Date.now() / 1000 - v.state_since))}</div>` : ''}</td>
      <td title="${esc(fmtTime(v.last_seen))}">${fmtAge(v.age_s)} ago</td>
      <td>${lb ? fmtAge(lb.lag_s) + (lb.historical ? ', sending backlog' : '') : ''}${v.backlog_batches_1h ? ` (${v.backlog_batches_1h} historical Batches in 1 h)` : ''}</td>
      <td class="health">${healthCell(v.health)}</td>
      <td class="num today">${dayCell(t)}</td><td class="num yesterday">${dayCell(y)}</td>
      <td class="gaps" data-n="${(v.gaps || []).length}">${gaps}</td><td class="events">${evs}</td></tr>`;
  };
  const tbl = sortable($('#fleet'), vs, cols, render);
  $('#filter').oninput = e => tbl.setFilter(e.target.value);
  document.body.dataset.ready = 'fleet';
}

/* ---- vehicle page ---- */
function spark(canvas, pts) {
  const ctx = canvas.getContext('2d'), w = canvas.width, h = canvas.height;
  ctx.clearRect(0, 0, w, h);
  if (!pts || !pts.length) return;
  const t0 = Date.now() / 1000 - 3600, ys = pts.map(p => p[1]);
  const lo = Math.min(...ys), hi = Math.max(...ys), span = hi - lo || 1;
  ctx.strokeStyle = '#1d3557';
  ctx.beginPath();
  pts.forEach((p, i) => {
    const x = (p[0] - t0) / 3600 * (w - 2) + 1, y = h - 2 - (p[1] - lo) / span * (h - 4);
    i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
  });
  if (pts.length === 1) ctx.arc((pts[0][0] - t0) / 3600 * (w - 2) + 1, h / 2, 1.5, 0, 7);
  ctx.stroke();
}
/* what the receivers' door refused of a vehicle (issue 26), in words; a
   reason this page does not know yet is shown by its name */
const REFUSED = {
  'time': 'record times outside the accepted window',
  'seq-jump': 'a Batch over 2^40 records (seq) from the rest of its log',
  'dictionary': 'a dictionary over the size, channel or rate limit',
  'gone-unasked': 'a gap-repair answer ("gone") for a range not asked for',
};
function refusalsBlock(rs) {
  if (!rs) return '';
  return `<h3>Refused at the door</h3><table id="refusals"><thead><tr><th>What</th><th>Times</th><th>First</th><th>Last</th>
    <th>The last one</th></tr></thead><tbody>${rs.map(r => `<tr data-reason="${esc(r.reason)}">
      <td class="what">${esc(REFUSED[r.reason] || r.reason)}</td><td class="num count warn">${esc(r.count)}</td>
      <td class="first">${esc(fmtTime(r.first_at))}</td><td class="last">${esc(fmtTime(r.last_at))}</td>
      <td class="detail">${esc(r.detail)}</td></tr>`).join('')}</tbody></table>`;
}
/* the vehicle's last remote board configuration (issue 32): applied, or
   refused / rolled back with the vehicle's reason (its text, escaped) */
function configLine(c) {
  if (!c) return '';
  const bad = c.outcome !== 'applied';
  return `<span class="config-status${bad ? ' warn' : ''}" data-outcome="${esc(c.outcome)}">config version ${esc(c.version)}: `
    + `<span class="outcome">${esc(c.outcome)}</span>${bad && c.why ? ` (<span class="why">${esc(c.why)}</span>)` : ''}, `
    + `at <span class="at">${esc(fmtTime(c.at))}</span></span>`;
}
async function pageVehicle(name) {
  view.innerHTML = `<h2>${esc(name)} <span id="vstate"></span></h2><p><a href="#/chart?vehicle=${encodeURIComponent(name)}">chart</a> ·
    <a href="#/frames?vehicle=${encodeURIComponent(name)}">CAN frames</a></p><p id="config"></p><div id="door"></div><div id="health"></div><div id="buses"></div>`;
  const draw = async () => {
    /* the name in the query: in a path, fetch() would resolve a vehicle
       named '..' or '.' away (/api/vehicle/../channels is /api/channels) */
    const d = await api(`/api/vehicle?vehicle=${encodeURIComponent(name)}`);
    $('#vstate').innerHTML = d.status ? `<span class="state ${d.status.state}">${d.status.state}</span>
      <small>since ${esc(fmtTime(d.status.since))}</small>` : '';
    $('#config').innerHTML = configLine(d.config);
    $('#door').innerHTML = refusalsBlock(d.refusals);
    $('#health').innerHTML = d.health ? `<h3>Health</h3><table id="health-parts"><thead><tr><th>Part</th><th>Kind</th><th>State</th>
      <th>Items</th><th>Rate</th><th>Drops</th><th>Errors</th><th>Backlog</th><th>Latency p99</th><th>Age</th></tr></thead><tbody>
      ${d.health.map(h => `<tr data-part="${esc(h.name)}">
        <td>${esc(h.name)}</td><td>${esc(h.kind)}</td>
        <td class="${(h.kind === 'can' || h.kind === 'modbus') && h.state && h.state !== 'up' || h.clock_unsynced ? 'warn' : ''}">${esc(h.state)}</td>
        <td class="num">${h.items}</td><td class="num">${h.rate_hz ? h.rate_hz.toFixed(1) + ' /s' : ''}</td>
        <td class="num drops ${h.drops ? 'warn' : ''}">${h.drops}</td><td class="num errors ${h.errors ? 'warn' : ''}">${h.errors}</td>
        <td class="num backlog">${h.backlog}</td>
        <td class="num">${h.kind === 'can' || h.kind === 'modbus' ? h.latency_p99_us + ' µs' : ''}</td><td>${fmtAge(h.age_s)}</td></tr>`).join('')}
      </tbody></table>` : '<p class="muted">no Health records from this vehicle yet</p>';
    const buses = new Map();
    for (const c of d.channels) { if (!buses.has(c.bus)) buses.set(c.bus, []); buses.get(c.bus).push(c); }
    $('#buses').innerHTML = [...buses].map(([bus, chs]) => `<h3>bus ${bus}</h3><table data-bus="${bus}">
      <thead><tr><th>Channel</th><th>Value</th><th>Label</th><th>Unit</th><th>Age</th><th>Last hour</th><th>Source</th></tr></thead><tbody>
      ${chs.map(c => `<tr data-channel="${esc(c.name)}" class="${c.stale ? 'stale' : ''}">
        <td><a href="#/chart?vehicle=${encodeURIComponent(name)}&ch=${encodeURIComponent(c.name)}">${esc(c.name)}</a></td>
        <td class="num value">${fmtVal(c.value)}</td><td class="label">${esc(c.label ?? '')}</td><td>${esc(c.unit)}</td><td class="age">${fmtAge(c.age_s)}</td>
        <td><canvas class="spark" width="120" height="24"></canvas></td><td><code>${esc(c.source)}</code></td></tr>`).join('')}
      </tbody></table>`).join('')
      /* the answer is bounded (limit): say so rather than look complete */
      + (d.truncated ? `<p class="note" id="truncated">the first ${d.limit} channels only (by bus and name): the chart's search finds the others</p>` : '');
    for (const c of d.channels)
      spark($(`tr[data-channel="${CSS.escape(c.name)}"] canvas`), c.spark);
    window.railmon.updates++;
    document.body.dataset.ready = 'vehicle';
  };
  await draw();
  const refresh = throttled(draw);
  state.page.cleanup = onLive(v => { if (v === name) refresh(); });
}

/* ---- chart ---- */
const COLORS = ['#1d3557', '#e63946', '#2a9d8f', '#f4a261', '#6a4c93', '#8ab17d'];
const RANGES = [['15 min', 900], ['1 h', 3600], ['6 h', 21600], ['24 h', 86400], ['7 d', 604800]];

function eventsPlugin(getEvents) {
  return { hooks: { draw: u => {
    const ctx = u.ctx, top = u.bbox.top, h = u.bbox.height;
    ctx.save();
    ctx.strokeStyle = '#e76f51';
    ctx.fillStyle = '#e76f51';
    ctx.lineWidth = 2;
    ctx.font = `${Math.round(10 * devicePixelRatio)}px sans-serif`;
    for (const e of getEvents()) {
      const x = Math.round(u.valToPos(e.t, 'x', true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + h); ctx.stroke();
      ctx.fillText(e.name, x + 3, top + 12 * devicePixelRatio);
    }
    ctx.restore();
  } } };
}

/* the value table's label of a value, for the cursor: " (open)", or "" */
function labeller(table) {
  const m = new Map((table || []).map(e => { const i = e.indexOf(' '); return [+e.slice(0, i), e.slice(i + 1)]; }));
  return v => v != null && m.has(v) ? ` (${m.get(v)})` : '';
}
async function pageChart(q) {
  const now = Date.now() / 1000;
  const st = {
    /* one ch parameter per channel: a channel's name may hold a comma */
    vehicle: q.get('vehicle') || '', chs: q.getAll('ch').filter(Boolean),
    to: +q.get('to') || now, from: +q.get('from') || now - 3600, live: !q.get('to'), axes: q.get('axes') || 'shared',
    events: [],
  };
  view.innerHTML = `<h2>Chart</h2><div class="controls">
    <input id="search" placeholder="search channels (qualified name)" size="32"><div id="results"></div>
    <span>range: ${RANGES.map(([l, s]) => `<button data-span="${s}">${l}</button>`).join('')}</span>
    <label>from <input id="from" type="datetime-local" step="1"></label><label>to <input id="to" type="datetime-local" step="1"></label>
    <button id="apply">apply</button><button id="panl">◀</button><button id="zoomout">zoom out</button><button id="panr">▶</button>
    <label><input type="checkbox" id="separate" ${st.axes === 'separate' ? 'checked' : ''}> separate axes</label></div>
    <p class="note">Drag across the chart to zoom in (finer data is fetched), the wheel zooms, ◀ ▶ pan; the legend reads the values
    under the cursor (min–max of each pixel column: a single-sample spike stays visible).</p>
    <div id="chart"></div><p id="info"></p>`;
  const toLocal = t => new Date(t * 1000 - new Date().getTimezoneOffset() * 60000).toISOString().slice(0, 19);
  const fromLocal = s => new Date(s).getTime() / 1000;
  let searches = 0;
  const search = async () => {
    const qs = new URLSearchParams({ q: $('#search').value, limit: '50' });
    const mine = ++searches;
    let list;
    try {
      list = await api('/api/channels?' + qs);
    } catch (e) {
      /* a search that fails (a 503 when the dictionaries are huge) is
         said in its list; the chart itself still loads */
      if (mine !== searches) return;
      $('#results').innerHTML = `<p class="error search">search: ${esc(e.message)}</p>`;
      $('#results').dataset.q = qs.get('q');
      return;
    }
    /* typing sends one search per key: an older answer that comes last must not win */
    if (mine !== searches) return;
    $('#results').innerHTML = list.map(c => {
      const id = c.vehicle + '/' + c.name;
      const on = c.vehicle === st.vehicle && st.chs.includes(c.name);
      return `<label><input type="checkbox" data-vehicle="${esc(c.vehicle)}" data-name="${esc(c.name)}" ${on ? 'checked' : ''}> ${esc(id)} ${c.unit ? '[' + esc(c.unit) + ']' : ''}</label>`;
    }).join('');
    for (const box of $('#results').querySelectorAll('input')) box.onchange = () => {
      if (box.dataset.vehicle !== st.vehicle) { st.vehicle = box.dataset.vehicle; st.chs = []; }
      st.chs = box.checked ? [...new Set([...st.chs, box.dataset.name])] : st.chs.filter(c => c !== box.dataset.name);
      load();
    };
    /* the query this list answers: a test (or a user's script) waits for
       the answer to what was typed last, not for a list that a later
       answer will replace */
    $('#results').dataset.q = qs.get('q');
  };
  $('#search').oninput = search;
  for (const b of view.querySelectorAll('button[data-span]')) b.onclick = () => {
    st.to = Date.now() / 1000; st.from = st.to - +b.dataset.span; st.live = true; load();
  };
  $('#apply').onclick = () => { st.from = fromLocal($('#from').value); st.to = fromLocal($('#to').value); st.live = false; load(); };
  const pan = k => { const s = st.to - st.from; st.from += k * s / 2; st.to += k * s / 2; st.live = false; load(); };
  $('#panl').onclick = () => pan(-1); $('#panr').onclick = () => pan(1);
  $('#zoomout').onclick = () => { const s = st.to - st.from; st.from -= s / 2; st.to += s / 2; st.live = false; load(); };
  $('#separate').onchange = e => { st.axes = e.target.checked ? 'separate' : 'shared'; load(); };
  let plot = null;
  const width = () => Math.max(300, view.clientWidth - 20);

  async function load() {
    if (st.live) { const s = st.to - st.from; st.to = Date.now() / 1000; st.from = st.to - s; }
    $('#from').value = toLocal(st.from); $('#to').value = toLocal(st.to);
    const h = new URLSearchParams({ vehicle: st.vehicle, from: st.from.toFixed(3), axes: st.axes });
    for (const c of st.chs) h.append('ch', c);
    if (!st.live) h.set('to', st.to.toFixed(3));
    history.replaceState(null, '', '#/chart?' + h);
    if (!st.vehicle || !st.chs.length) { $('#info').textContent = 'pick channels'; document.body.dataset.ready = 'chart'; return; }
    const px = Math.min(5000, Math.round(width()));
    const rng = `from=${st.from.toFixed(3)}&to=${st.to.toFixed(3)}`;
    const [series, ev] = await Promise.all([
      Promise.all(st.chs.map(c => api(`/api/series?vehicle=${encodeURIComponent(st.vehicle)}&channel=${encodeURIComponent(c)}&${rng}&px=${px}`))),
      api(`/api/events?vehicle=${encodeURIComponent(st.vehicle)}&${rng}&limit=500`)]);
    st.events = ev.events;
    draw(series, px);
  }

  function draw(series, px) {
    /* one x array for all: min and max of each channel per pixel column */
    const data = uPlot.join(series.map(s => [s.t, s.max, s.min]));
    const sers = [{ value: (u, v) => v == null ? '' : fmtTime(v) }], bands = [], scales = { x: { time: true } }, axes = [{}];
    series.forEach((s, i) => {
      const scale = st.axes === 'separate' ? 'y' + i : 'y', color = COLORS[i % COLORS.length];
      if (!scales[scale]) {
        scales[scale] = {};
        axes.push({ scale, side: i % 2 ? 1 : 3, stroke: st.axes === 'separate' ? color : undefined,
                    label: st.axes === 'separate' ? `${s.name} ${s.unit ? '[' + s.unit + ']' : ''}` : undefined });
      }
      const lab = labeller(s.value_table);
      sers.push({ label: `${s.name} max`, scale, stroke: color, width: 1, value: (u, v) => fmtVal(v) + lab(v) });
      sers.push({ label: `${s.name} min`, scale, stroke: color, width: 1, value: (u, v) => fmtVal(v) + lab(v) });
      bands.push({ series: [1 + 2 * i, 2 + 2 * i], fill: color + '33' });
    });
    const opts = {
      width: width(), height: 360, series: sers, bands, scales, axes, plugins: [eventsPlugin(() => st.events)],
      cursor: { drag: { x: true, y: false } },
      hooks: { setSelect: [u => {
        if (u.select.width < 3) return;
        st.from = u.posToVal(u.select.left, 'x'); st.to = u.posToVal(u.select.left + u.select.width, 'x'); st.live = false;
        u.setSelect({ width: 0, height: 0 }, false);
        load();
      }] },
    };
    if (plot) plot.destroy();
    plot = new uPlot(opts, data, $('#chart'));
    window.railmon.plot = plot;
    plot.over.addEventListener('wheel', e => {
      e.preventDefault();
      const x = plot.posToVal(e.offsetX, 'x'), k = e.deltaY > 0 ? 1.5 : 1 / 1.5;
      st.from = x - (x - st.from) * k; st.to = x + (st.to - x) * k; st.live = false; load();
    }, { passive: false });
    window.railmon.chart = { points: series.map(s => s.t.length), sources: series.map(s => s.source), rows: series.map(s => s.rows),
                             bucket_s: series.map(s => s.bucket_s), events: st.events.length, from: st.from, to: st.to,
                             max: series.map(s => Math.max(...s.max)), names: series.map(s => s.name), px };
    window.railmon.updates++;
    $('#info').textContent = series.map(s => `${s.name}: ${s.t.length} columns from ${s.rows} samples (${s.source}, ${s.bucket_s.toPrecision(3)} s each)`).join('; ')
      + (st.events.length ? `; ${st.events.length} events` : '');
    document.body.dataset.ready = 'chart';
  }
  if (st.vehicle) { $('#search').value = ''; }
  await search();
  await load();
  const refresh = throttled(load);
  state.page.cleanup = onLive(v => { if (st.live && v === st.vehicle) refresh(); });
}

/* ---- CAN frames ---- */
async function pageFrames(q) {
  const now = Date.now() / 1000;
  const v = q.get('vehicle') || '', from = +q.get('from') || now - 600, to = +q.get('to') || now, id = q.get('id') || '';
  view.innerHTML = `<h2>CAN frames</h2><form class="controls" id="f">
    <input name="vehicle" placeholder="vehicle" value="${esc(v)}"><input name="id" placeholder="CAN id (0x123)" value="${esc(id)}">
    <label>from (epoch s) <input name="from" value="${from.toFixed(3)}"></label><label>to <input name="to" value="${to.toFixed(3)}"></label>
    <button>show</button></form><table id="frames"></table><p id="info"></p>`;
  $('#f').onsubmit = e => {
    e.preventDefault();
    const p = new URLSearchParams(new FormData(e.target));
    for (const [k, x] of [...p]) if (!x) p.delete(k);
    location.hash = '#/frames?' + p;
  };
  if (!v) { document.body.dataset.ready = 'frames'; return; }
  const p = new URLSearchParams({ vehicle: v, from: from.toFixed(6), to: to.toFixed(6) });
  if (id) p.set('id', id);
  const d = await api('/api/frames?' + p);
  $('#frames').innerHTML = `<thead><tr><th>Time</th><th>Bus</th><th>Id</th><th>Data</th><th>Decoded signals</th><th>Ground DBC</th></tr></thead><tbody>` +
    d.frames.map(f => `<tr data-id="${f.id}"><td>${esc(fmtTime(f.t))}.${String(Math.round((f.t % 1) * 1e6)).padStart(6, '0')}</td><td>${f.bus}</td>
      <td class="id"><code>0x${f.id.toString(16).toUpperCase()}</code></td><td><code>${f.data.replace(/(..)/g, '$1 ').trim()}</code></td>
      <td class="signals">${(f.signals || []).map(s => `<span data-signal="${esc(s.name)}">${esc(s.name)} = ${fmtVal(s.value)} ${esc(s.unit || '')}</span>`).join('<br>')}</td>
      <td class="ground">${(f.decoded || []).map(s => `<span data-signal="${esc(s.name)}">${esc(s.name)} = ${fmtVal(s.value)}${s.label != null ? ' (' + esc(s.label) + ')' : ''} ${esc(s.unit || '')}</span>`).join('<br>')}</td></tr>`).join('') + '</tbody>';
  $('#info').textContent = `${d.frames.length} frames${d.truncated ? ' (more in this range: narrow it)' : ''}`;
  document.body.dataset.ready = 'frames';
}

/* ---- router ---- */
async function route() {
  if (state.page && state.page.cleanup) state.page.cleanup();
  state.page = {};
  document.body.dataset.ready = '';
  const h = location.hash.slice(1) || '/';
  const [path, qs] = h.split('?');
  const q = new URLSearchParams(qs || '');
  try {
    if (path.startsWith('/vehicle/')) await pageVehicle(decodeURIComponent(path.slice(9)));
    else if (path === '/chart') await pageChart(q);
    else if (path === '/frames') await pageFrames(q);
    else await pageFleet();
  } catch (e) {
    showError(e);
    document.body.dataset.ready = 'error';
  }
}
window.addEventListener('hashchange', route);
startLive();
route();
