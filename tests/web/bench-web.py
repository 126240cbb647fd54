#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-web.py RAILMON NODE_MODULES - railmon serve's figures, in one run
on one machine, as ratio tables against psql running plain SQL over the
same rows (no timing assertions):

- a day of one 50 Hz channel (4,320,000 rows) drawn at 1000 px through
  /api/series from the 1 min rollups (auto), the 1 s rollups and the raw
  rows, against psql's `SELECT t, value` and `SELECT count(*)` of the day;
- a week of 10 channels at 0.1 Hz (604,800 rows): each channel's week
  through /api/series (auto: 1 min rollups), against psql's count;
- the fleet overview (/api/vehicles) with 20 vehicles and a day's ledger
  each (8,640 Batches, a hole every 1,000), 6 Health parts each and half
  of them with a status-topic state, against psql's
  `SELECT * FROM completeness`;
- page load in headless Chromium: the fleet page and the day's chart.

The rows and rollups are made by SQL here (generate_series, the rollups
by GROUP BY as the receiver keeps them): the receiver's own speed is
bench-ground's.  p50 and p95 of REPEAT requests each.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

RAILMON, NODE_MODULES = sys.argv[1:3]
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
from railmon_test import start_peer, stop_peer, stop_peers  # noqa: E402
from pg import Postgres  # noqa: E402
from mqtt_peers import check  # noqa: E402

REPEAT = 10
DAY = int(time.time()) // 86400 * 86400 - 86400     # yesterday 00:00 UTC
WEEK0 = DAY - 6 * 86400


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def setup(pg):
    r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
    check(r.returncode == 0, "db init", r.stderr)
    for d in range(WEEK0, DAY + 86400, 86400):
        day = time.strftime("%Y%m%d", time.gmtime(d))
        for table in ("samples", "events", "can_frames"):
            pg.psql("CREATE TABLE %s_p%s PARTITION OF %s FOR VALUES FROM (to_timestamp(%d)) TO (to_timestamp(%d))"
                    % (table, day, table, d, d + 86400))
    pg.psql("INSERT INTO vehicles (name) VALUES ('day50hz'), ('week10ch')")
    pg.psql("INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source) VALUES "
            "(1, 1, 1, 'speed', 'km/h', 0, 'bench')")
    pg.psql("INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source) SELECT 2, 1, c, "
            "'ch' || c, 'V', 0, 'bench' FROM generate_series(1, 10) c")
    t0 = time.monotonic()
    # a day at 50 Hz with one single-sample spike
    pg.psql("INSERT INTO samples SELECT 1, to_timestamp(%d) + g * interval '20 ms', g, 1, "
            "CASE WHEN g = 2000000 THEN 1000 ELSE 50 + 40 * sin(g / 3000.0) END, 0 "
            "FROM generate_series(0, 4319999) g" % DAY, timeout=900)
    pg.psql("INSERT INTO samples SELECT 2, to_timestamp(%d) + s * interval '10 s', s * 10 + c, c, c * 10 + sin(s / 60.0), 0 "
            "FROM generate_series(0, 60479) s, generate_series(1, 10) c" % WEEK0, timeout=900)
    for table, unit in (("rollup_1s", "second"), ("rollup_1min", "minute")):
        pg.psql("INSERT INTO %s (vehicle_id, channel, t, n, vmin, vmax, vsum) SELECT vehicle_id, channel, "
                "date_trunc('%s', t), count(*), min(value), max(value), sum(value) FROM samples GROUP BY 1, 2, 3"
                % (table, unit), timeout=900)
    # 20 vehicles, a day's ledger each: a Batch of 100 records every 10 s, one in 1000 missing
    pg.psql("INSERT INTO vehicles (name) SELECT 'emu' || lpad(g::text, 2, '0') FROM generate_series(1, 20) g")
    pg.psql("INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, config_hash, digest) "
            "SELECT v.vehicle_id, '\\x01', 1 + s * 100, 100, now() - interval '1 day' + s * interval '10 s', "
            "now() - interval '1 day' + s * interval '10 s' + interval '9 s', false, 1, 0 FROM vehicles v, "
            "generate_series(0, 8639) s WHERE v.name LIKE 'emu%' AND s % 1000 <> 999", timeout=900)
    # the per-day ledger the receiver keeps in each group's transaction
    # (migration 0005): the completeness view reads it, so the baseline
    # below is the same work as the overview's completeness
    pg.psql("INSERT INTO ledger_days SELECT vehicle_id, log_id, CAST(t_first AT TIME ZONE 'UTC' AS date), count(*),"
            " sum(count), min(first_seq), max(first_seq + count) FROM batches GROUP BY 1, 2, 3", timeout=900)
    pg.psql("UPDATE vehicles SET last_seen = now()")
    # each with the Health entries of a two-bus board (6 parts), half of
    # them with a state from the status topic
    pg.psql("INSERT INTO health (vehicle_id, name, kind, bus, t, items, drops, errors, overruns, rx_dropped, bad_input,"
            " backlog, latency_p99_us, latency_max_us, transaction_p99_us, ring_fill_pct, rate_hz, state, reopens,"
            " window_alarm, clock_unsynced) SELECT v.vehicle_id, p.name, p.kind, p.bus, now(), 1000, 0, v.vehicle_id % 3,"
            " 0, 0, 0, 10, 200, 900, 0, 1, 100, p.state, 0, 0, false FROM vehicles v, (VALUES ('vehicle', 'can', 0, 'up'),"
            " ('traction', 'modbus', 1, 'up'), ('collector', 'collector', 65535, ''), ('log', 'log', 65535, ''),"
            " ('uplink', 'uplink', 65535, 'connected'), ('clock', 'clock', 65535, '')) p(name, kind, bus, state)"
            " WHERE v.name LIKE 'emu%'")
    pg.psql("INSERT INTO vehicle_status (vehicle_id, state) SELECT vehicle_id, 'online' FROM vehicles "
            "WHERE name LIKE 'emu%' AND vehicle_id % 2 = 0")
    pg.psql("VACUUM ANALYZE", timeout=900)
    print("data: %s samples, %s rollup_1s rows, %s ledger rows, made in %.0f s" % (
        pg.psql("SELECT count(*) FROM samples"), pg.psql("SELECT count(*) FROM rollup_1s"),
        pg.psql("SELECT count(*) FROM batches"), time.monotonic() - t0))


def timed_get(url):
    t = time.monotonic()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = r.read()
        check(r.status == 200, url)
    return time.monotonic() - t, body


def timed_psql(pg, sql):
    t = time.monotonic()
    r = subprocess.run(["psql", "-X", "-q", "-A", "-t", "-h", pg.dir, "-U", "railmon", "-d", pg.db, "-c", sql],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    check(r.returncode == 0, sql, r.stderr)
    return time.monotonic() - t, r.stdout


def measure(fn, n=REPEAT):
    times, size = [], 0
    for _ in range(n):
        dt, body = fn()
        times.append(dt)
        size = len(body)
    return pct(times, 50), pct(times, 95), size


def row(rows, name, m, base):
    rows.append((name, m[0] * 1000, m[1] * 1000, m[2], m[0] / base[0]))


def table(title, rows):
    print("\n" + title)
    print("| what | p50 ms | p95 ms | bytes | p50 / baseline |")
    print("|---|---:|---:|---:|---:|")
    for name, p50, p95, size, ratio in rows:
        print("| %s | %.1f | %.1f | %d | %.3f |" % (name, p50, p95, size, ratio))


def bench_day(pg, base):
    rng = "from=%d&to=%d" % (DAY, DAY + 86400)
    where = "vehicle_id = 1 AND channel = 1 AND t >= to_timestamp(%d) AND t < to_timestamp(%d)" % (DAY, DAY + 86400)
    sel = measure(lambda: timed_psql(pg, "SELECT t, value FROM samples WHERE " + where), 3)
    cnt = measure(lambda: timed_psql(pg, "SELECT count(*) FROM samples WHERE " + where), 3)
    rows = []
    row(rows, "psql SELECT t, value (4.32 M rows, the baseline)", sel, sel)
    row(rows, "psql SELECT count(*)", cnt, sel)
    for source, n in (("auto", REPEAT), ("1s", REPEAT), ("raw", 3)):
        url = "%s/api/series?vehicle=day50hz&channel=speed&%s&px=1000&source=%s" % (base, rng, source)
        m = measure(lambda: timed_get(url), n)
        _, body = timed_get(url)
        s = json.loads(body)
        check(1000.0 in s["max"] and s["rows"] == 4320000, "the day's series", source, s["rows"])
        row(rows, "/api/series px 1000, %s (%s)" % (source, s["source"]), m, sel)
    table("A day of one 50 Hz channel (4,320,000 rows), 1000 pixel columns; baseline: psql's plain SELECT", rows)


def bench_week(pg, base):
    where = "vehicle_id = 2 AND t >= to_timestamp(%d) AND t < to_timestamp(%d)" % (WEEK0, DAY + 86400)
    cnt = measure(lambda: timed_psql(pg, "SELECT channel, count(*) FROM samples WHERE %s GROUP BY 1" % where), 3)

    def ten():
        t, size = time.monotonic(), 0
        for c in range(1, 11):
            _, body = timed_get("%s/api/series?vehicle=week10ch&channel=ch%d&from=%d&to=%d&px=1000"
                                % (base, c, WEEK0, DAY + 86400))
            size += len(body)
        return time.monotonic() - t, b"x" * size
    m = measure(ten, 5)
    rows = []
    row(rows, "psql SELECT channel, count(*) of the week (604,800 rows, the baseline)", cnt, cnt)
    row(rows, "/api/series px 1000 x 10 channels (1 min rollups)", m, cnt)
    table("A week of 10 channels at 0.1 Hz; baseline: psql's count", rows)


def bench_fleet(pg, base):
    sql = measure(lambda: timed_psql(pg, "SELECT * FROM completeness"), 5)
    m = measure(lambda: timed_get(base + "/api/vehicles"), REPEAT)
    _, body = timed_get(base + "/api/vehicles")
    check(len([v for v in json.loads(body)["vehicles"] if v["vehicle"].startswith("emu")]) == 20, "20 vehicles")
    rows = []
    row(rows, "psql SELECT * FROM completeness (the baseline)", sql, sql)
    row(rows, "/api/vehicles (state, health, completeness, gaps, events)", m, sql)
    table("The fleet overview: 20 vehicles, 172,640 ledger rows; baseline: psql's completeness view", rows)


def bench_pages(base):
    js = r"""
const puppeteer = require('puppeteer-core');
(async () => {
  const [base, day] = process.argv.slice(1);
  const b = await puppeteer.launch({ executablePath: '/usr/lib/chromium/chromium', headless: true, args: ['--no-sandbox'] });
  const p = await b.newPage(); await p.setViewport({ width: 1100, height: 700 });
  const out = {};
  for (const [name, hash] of [['fleet', '#/'], ['chart, the 50 Hz day', `#/chart?vehicle=day50hz&ch=speed&from=${day}&to=${+day + 86400}`]]) {
    const ts = [];
    for (let i = 0; i < 5; i++) {
      const t = Date.now();
      await p.goto('about:blank');
      await p.goto(base + '/' + hash, { waitUntil: 'load' });
      await p.waitForFunction(() => ['fleet', 'chart'].includes(document.body.dataset.ready), { timeout: 60000 });
      ts.push(Date.now() - t);
    }
    ts.sort((a, c) => a - c);
    out[name] = ts;
  }
  await b.close();
  console.log(JSON.stringify(out));
})();
"""
    r = subprocess.run(["node", "-e", js, base, str(DAY)], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, NODE_PATH=NODE_MODULES))
    check(r.returncode == 0, "page load", r.stderr)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    print("\nPage load in headless Chromium (goto until the page says it is drawn), 5 loads")
    print("| page | p50 ms | max ms |\n|---|---:|---:|")
    for name, ts in res.items():
        print("| %s | %d | %d |" % (name, ts[len(ts) // 2], ts[-1]))


def main():
    pg = Postgres()
    srv = None
    try:
        setup(pg)
        srv = start_peer([RAILMON, "serve", "--db", pg.url, "--listen", "127.0.0.1:0", "--budget", "60"],
                         stdout=subprocess.PIPE, text=True)
        port = int(srv.stdout.readline().split("port ")[1].split()[0])
        base = "http://127.0.0.1:%d" % port
        bench_day(pg, base)
        bench_week(pg, base)
        bench_fleet(pg, base)
        bench_pages(base)
    finally:
        if srv:
            stop_peer(srv)
        stop_peers()
        pg.fini()


if __name__ == "__main__":
    main()
