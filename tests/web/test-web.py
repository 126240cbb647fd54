#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-web.py RAILMON PB2_DIR NODE_MODULES OUT_DIR - `railmon serve` end
to end: a real PostgreSQL 15 (tests/ground/pg.py) filled by a real
`railmon recv --db` from a real mosquitto (fleet.py: three vehicles, a
hole, an event, a spike, CAN frames with decoded signals), then:

- the API's JSON against SQL run here (vehicles, online/offline,
  completeness and gaps, active events; channels' last values and stale
  flags; series per pixel column with the count of samples and the spike
  kept by raw rows and both rollups; events; frames with their signals);
- bad input: every malformed parameter is a 4xx JSON error naming it, and
  the server is still there afterwards;
- /api/live delivers a message once a new Batch commits (within ~1 s);
- a non-loopback --listen is refused without a token; with one, requests
  without it get 401 and with it 200; a token file readable by others is
  refused;
- headless Chromium (browser.js, puppeteer-core) loads every page and
  checks what it shows against the database, zooms, sees a live update,
  and fails on any JavaScript console error; screenshots land in OUT_DIR.

Every server, broker and receiver started here is stopped on every exit path.
"""
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

RAILMON, PB2_DIR, NODE_MODULES, OUT_DIR = sys.argv[1:5]
sys.path.insert(0, PB2_DIR)
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
sys.path.insert(0, HERE)
from railmon_test import start_peer, stop_peer, stop_peers, wait_for  # noqa: E402
from pg import Postgres  # noqa: E402
from mqtt_peers import Broker, Recv, cleanup, publish, check  # noqa: E402
import fleet  # noqa: E402


class Serve:
    def __init__(self, url, *args):
        self.proc = start_peer([RAILMON, "serve", "--db", url] + list(args), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        check("port " in line, "railmon serve did not start", line, self.proc.stderr.read() if not line else "")
        self.port = int(line.split("port ")[1].split()[0])
        self.base = "http://127.0.0.1:%d" % self.port

    def get(self, path, headers=None, method="GET"):
        req = urllib.request.Request(self.base + path, headers=headers or {}, method=method)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read()) if "json" in r.headers["Content-Type"] else None, r.headers
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read()), e.headers

    def ok(self, path):
        st, body, _ = self.get(path)
        check(st == 200, "GET %s: %d" % (path, st), body)
        return body

    def stop(self):
        rc = stop_peer(self.proc)
        err = self.proc.stderr.read()
        check(rc == 0, "railmon serve exits 0 on SIGTERM", err)
        return err


def fill(pg, broker):
    r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
    check(r.returncode == 0, "db init", r.stderr)
    recv = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--repair-after", "0"])
    recv.wait_subscribed()
    publish(broker.port, fleet.emu3_batches())
    wait_for("emu3 committed", lambda: pg.psql("SELECT count(*) FROM batches") == "1")
    emu1, next_seq = fleet.emu1_batches()
    publish(broker.port, emu1 + fleet.emu2_batches())
    wait_for("all committed", lambda: pg.psql("SELECT count(*) FROM batches") == str(1 + len(emu1) + 3), 60)
    # emu3 went quiet two hours ago (the clock moved on, not the receiver):
    # offline for serve's --offline-after 60
    pg.psql("UPDATE vehicles SET last_seen = now() - interval '2 hours' WHERE name = 'emu3'")
    return recv, next_seq


def test_vehicles(pg, srv):
    vs = {v["vehicle"]: v for v in srv.ok("/api/vehicles")}
    check(sorted(vs) == sorted(r[0] for r in pg.rows("SELECT name FROM vehicles")), "every vehicle", vs)
    check(vs["emu1"]["online"] and vs["emu2"]["online"] and not vs["emu3"]["online"], "online/offline", vs)
    for name, v in vs.items():
        sql = pg.rows("SELECT day, records, missing, complete FROM completeness WHERE vehicle = '%s' ORDER BY day DESC"
                      % name)
        check(len(v["completeness"]) == len(sql), "completeness days " + name, v, sql)
        for got, want in zip(v["completeness"], sql):
            check(got["day"] == want[0] and got["records"] == int(want[1]) and got["missing"] == int(want[2]) and
                  abs(got["complete"] - float(want[3])) < 1e-9, "completeness " + name, got, want)
    gaps = vs["emu2"]["gaps"]
    check(gaps and len(gaps) == 1 and gaps[0]["from_seq"] == 101 and gaps[0]["to_seq"] == 200 and
          gaps[0]["records"] == 100 and not gaps[0]["explained"], "emu2's hole", gaps)
    check(abs(vs["emu2"]["completeness"][0]["complete"] - 300 / 400) < 1e-9, "emu2 75 % complete", vs["emu2"])
    check(vs["emu1"]["gaps"] is None, "emu1 has no hole", vs["emu1"])
    ev = vs["emu1"]["events"]
    check(ev and ev[0]["name"] == "CAN_BUS_OFF" and ev[0]["count"] == 1, "emu1's bus-off event is active", ev)
    st, body, _ = srv.get("/api/vehicles?events_s=60")
    check(st == 200 and not [v for v in body if v["events"]], "a 60 s window: the bus-off is not active", body)
    print("vehicles: 3, online/offline, completeness, the hole and the event as in SQL")
    return vs


def test_channels(pg, srv):
    d = srv.ok("/api/vehicle/emu1/channels")
    chans = {c["name"]: c for c in d["channels"]}
    check(sorted(chans) == ["Motor.Torque", "line_voltage", "speed"], "emu1's channels", chans)
    for name, c in chans.items():
        want = pg.rows("SELECT s.value, extract(epoch from s.t) FROM samples s JOIN channel_names n USING (vehicle_id, "
                       "channel) WHERE n.name = '%s' ORDER BY s.t DESC LIMIT 1" % name)[0]
        check(abs(c["value"] - float(want[0])) < 1e-9 and abs(c["t"] - float(want[1])) < 1e-5, "last value " + name,
              c, want)
    check(chans["line_voltage"]["stale"] and not chans["speed"]["stale"], "stale flags", chans)
    check(chans["speed"]["unit"] == "km/h" and chans["Motor.Torque"]["bus"] == 1, "unit and bus", chans)
    check(chans["speed"]["spark"] and len(chans["speed"]["spark"]) >= 40, "an hour's sparkline", chans["speed"])
    st, body, _ = srv.get("/api/vehicle/nosuch/channels")
    check(st == 404 and body["param"] == "vehicle", "unknown vehicle: 404", body)
    print("channels: last values, units, buses and stale flags as in SQL")


def buckets(rows, frm, bw):
    out = {}
    for t, v in rows:
        b = int((t - frm) // bw)
        lo, hi, n = out.get(b, (v, v, 0))
        out[b] = (min(lo, v), max(hi, v), n + 1)
    return out


def test_series(pg, srv):
    spike = fleet.SPIKE_S / 1e9
    # no sample on a column boundary (floating point would decide its column)
    frm, to = spike - 300.25, spike + 299.75
    rows = [(float(t), float(v)) for t, v in pg.rows(
        "SELECT extract(epoch from t), value FROM samples WHERE channel = 1 AND vehicle_id = (SELECT vehicle_id FROM "
        "vehicles WHERE name = 'emu1') AND t >= to_timestamp(%.6f) AND t < to_timestamp(%.6f)" % (frm, to))]
    for px in (1000, 4000):
        s = srv.ok("/api/series?vehicle=emu1&channel=speed&from=%.6f&to=%.6f&px=%d" % (frm, to, px))
        want = buckets(rows, frm, (to - frm) / px)
        check(s["source"] == "raw" and len(s["t"]) == len(want) and s["rows"] == len(rows), "raw columns", px, s["rows"], len(rows),
              len(s["t"]), len(want))
        for i, t in enumerate(s["t"]):
            lo, hi, n = want[round((t - frm) / s["bucket_s"])]
            check(abs(s["min"][i] - lo) < 1e-9 and abs(s["max"][i] - hi) < 1e-9 and s["n"][i] == n, "column", i)
        check(s["max"].count(1000.0) == 1, "the spike survives in one column", px)
    s = srv.ok("/api/series?vehicle=emu1&channel=speed&from=%.6f&to=%.6f&px=200" % (frm, to))
    check(s["source"] == "1s" and s["max"].count(1000.0) == 1 and s["rows"] >= len(rows) - 20, "200 px: 1 s rollups", s)
    day = srv.ok("/api/series?vehicle=emu1&channel=speed&from=%.3f&to=%.3f&px=300" % (spike - 43200, spike + 43200))
    check(day["source"] == "1min" and 1000.0 in day["max"], "a day: 1 min rollups, the spike kept", day["source"])
    hour = srv.ok("/api/series?vehicle=emu1&channel=1&from=%.3f&to=%.3f&px=600" % (spike - 1800, spike + 1800))
    check(hour["source"] == "1s" and 1000.0 in hour["max"] and hour["channel"] == 1, "an hour: 1 s rollups", hour)
    total = int(pg.psql("SELECT count(*) FROM samples WHERE channel = 1 AND vehicle_id = (SELECT vehicle_id FROM "
                        "vehicles WHERE name = 'emu1') AND t >= to_timestamp(%.3f) AND t < to_timestamp(%.3f)"
                        % (spike - 1800, spike + 1800)))
    check(hour["rows"] == total, "1 s rollups count every sample", hour["rows"], total)
    print("series: raw columns equal SQL's min/max/count per column (px 1000, 4000); the spike kept by raw, 1 s, 1 min")


def test_events_frames(pg, srv):
    now = time.time()
    ev = srv.ok("/api/events?vehicle=emu1&from=%.3f&to=%.3f" % (now - 3600, now + 60))
    sql = pg.rows("SELECT extract(epoch from t), code FROM events")
    check(len(ev["events"]) == len(sql) == 1 and ev["events"][0]["name"] == "CAN_BUS_OFF" and
          abs(ev["events"][0]["t"] - float(sql[0][0])) < 1e-5, "events as in SQL", ev, sql)
    fr = srv.ok("/api/frames?vehicle=emu1&from=%.3f&to=%.3f&id=0x123" % (now - 3600, now + 60))
    sql = pg.rows("SELECT extract(epoch from f.t), encode(f.data, 'hex'), s.value FROM can_frames f JOIN samples s "
                  "ON s.t = f.t AND s.channel = %d WHERE f.can_id = 291 ORDER BY f.t" % fleet.TORQUE)
    check(len(fr["frames"]) == len(sql) == 120 and not fr["truncated"], "0x123's frames", len(fr["frames"]), len(sql))
    for f, w in zip(fr["frames"], sql):
        check(f["id"] == 0x123 and f["data"] == w[1] and f["signals"] and f["signals"][0]["name"] == "Motor.Torque" and
              f["signals"][0]["value"] == float(w[2]), "frame and its decoded signal", f, w)
    fr = srv.ok("/api/frames?vehicle=emu1&from=%.3f&to=%.3f&id=0x456&limit=50" % (now - 3600, now + 60))
    check(len(fr["frames"]) == 50 and fr["truncated"] and all(not f["signals"] for f in fr["frames"]),
          "0x456: no signals, the limit said", fr)
    print("events and frames (with decoded signals) as in SQL; limits said")


BAD = [
    ("/api/series?vehicle=emu1&channel=speed&from=abc&to=1800000000", 400, "from"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1700000000", 400, "to"),
    ("/api/series?vehicle=emu1&channel=speed&from=1000&to=1800000000", 400, "from"),
    ("/api/series?vehicle=emu1&channel=speed&from=2001-01-01T00:00:00Z&to=2099-01-01T00:00:00Z", 400, "to"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1800003600&px=0", 400, "px"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1800003600&px=10000000", 400, "px"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1800003600&px=12abc", 400, "px"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1800900000&source=raw", 400, "source"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1800003600&source=5s", 400, "source"),
    ("/api/series?vehicle=emu1&from=1800000000&to=1800003600", 400, "channel"),
    ("/api/series?vehicle=emu1&channel=speed&from=1800000000&to=1800003600&pixels=3", 400, "pixels"),
    ("/api/series?vehicle=nosuch&channel=speed&from=1800000000&to=1800003600", 404, "vehicle"),
    ("/api/series?vehicle=emu1&channel=nosuch&from=1800000000&to=1800003600", 404, "channel"),
    ("/api/events?from=1800000000&to=1800003600&limit=-1", 400, "limit"),
    ("/api/events?vehicle=nosuch&from=1800000000&to=1800003600", 404, "vehicle"),
    ("/api/frames?vehicle=emu1&from=1800000000&to=1800003600&id=zz", 400, "id"),
    ("/api/frames?vehicle=emu1&from=1800000000&to=1800999999", 400, "to"),
    ("/api/series?vehicle=emu1&channel=%zz&from=%ff%00&to=1800003600", 400, "from"),
    ("/api/series?vehicle=emu1&&&=&channel=speed&from=1800000000&to=1800003600", 400, ""),
    ("/api/nosuch", 404, None),
]


def test_bad_input(srv):
    for path, status, param in BAD:
        st, body, _ = srv.get(path)
        check(st == status and body["param"] == param and body["error"], "%s: %d naming %s" % (path, status, param),
              st, body)
    st, body, _ = srv.get("/api/vehicles", method="POST")
    check(st == 405 and "read-only" in body["error"], "POST refused", st, body)
    # the server answers well after all of it
    srv.ok("/api/vehicles")
    print("bad input: %d malformed requests, each a 4xx naming its parameter" % (len(BAD) + 1))


def test_live(pg, srv, broker, next_seq):
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    try:
        s.sendall(b"GET /api/live HTTP/1.1\r\nHost: x\r\n\r\n")
        buf = b""
        while b"event: hello" not in buf:
            buf += s.recv(4096)
        t0 = time.monotonic()
        publish(broker.port, [fleet.live_batch(next_seq, 77.0)])
        while b"event: batch" not in buf.split(b"event: hello", 1)[1]:
            buf += s.recv(4096)
        dt = time.monotonic() - t0
    finally:
        s.close()
    check(b'"vehicle":"emu1"' in buf, "the message names the vehicle", buf)
    check(pg.psql("SELECT count(*) FROM batches WHERE first_seq = %d" % next_seq) == "1", "sent after the commit")
    print("live: the Batch's message %.3f s after its publication (through mosquitto, recv and the commit)" % dt)
    check(dt < 2.0, "live within ~1 s", dt)
    return next_seq + 1


def test_token(pg):
    r = subprocess.run([RAILMON, "serve", "--db", pg.url, "--listen", "0.0.0.0:0"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 2 and "a token is required" in r.stderr, "non-loopback without a token refused", r.stderr)
    r = subprocess.run([RAILMON, "serve", "--db", pg.url, "--listen", "8080"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "expected HOST:PORT" in r.stderr, "a malformed --listen said", r.stderr)
    r = subprocess.run([RAILMON, "serve", "--db", "postgresql:///nosuchdb?host=%s&user=railmon" % pg.dir],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and "nosuchdb" in r.stderr, "an unreachable database said at the start", r.stderr)
    local = Serve(pg.url, "--listen", "localhost:0", "--budget", "0.001")
    # a query over its time budget (1 ms here: 24,000 raw rows) is a 503 that says so
    now = time.time()
    st, body, _ = local.get("/api/series?vehicle=emu1&channel=speed&from=%.0f&to=%.0f&source=raw" % (now - 7200, now))
    check(st == 503 and "time budget" in body["error"], "the time budget", st, body)
    err = local.stop()
    check("1 failed (5xx)" in err, "the failure counted and said", err)
    d = tempfile.mkdtemp(prefix="token-")
    path = os.path.join(d, "token")
    with open(path, "w") as f:
        f.write("s3cret-token-0123456789\n")
    os.chmod(path, 0o644)
    r = subprocess.run([RAILMON, "serve", "--db", pg.url, "--listen", "0.0.0.0:0", "--token-file", path],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "readable by others" in r.stderr, "a token file readable by others refused", r.stderr)
    os.chmod(path, 0o600)
    srv = Serve(pg.url, "--listen", "0.0.0.0:0", "--token-file", path)
    try:
        st, body, _ = srv.get("/api/vehicles")
        check(st == 401 and body["param"] == "token", "no token: 401", st, body)
        st, _, _ = srv.get("/", {"Authorization": "Bearer wrong-token-0123456789"})
        check(st == 401, "a wrong token: 401", st)
        st, body, _ = srv.get("/api/vehicles", {"Authorization": "Bearer s3cret-token-0123456789"})
        check(st == 200 and len(body) == 3, "the token: 200", st)
        st, _, h = srv.get("/?token=s3cret-token-0123456789")
        check(st == 200 and "railmon_token=s3cret" in h["Set-Cookie"] and "HttpOnly" in h["Set-Cookie"], "cookie set", h)
        st, _, _ = srv.get("/api/vehicles", {"Cookie": "railmon_token=s3cret-token-0123456789"})
        check(st == 200, "the cookie: 200", st)
    finally:
        err = srv.stop()
        os.unlink(path)
        os.rmdir(d)
    check("2 without the token" in err, "refusals counted and said", err)
    print("token: non-loopback refused without one; 401 without it, 200 with it (header, cookie)")


def test_browser(pg, srv, broker, next_seq, vehicles):
    os.makedirs(OUT_DIR, exist_ok=True)
    spike = fleet.SPIKE_S / 1e9
    want = {
        "vehicles": {n: {"online": v["online"], "today": v["completeness"][0]["complete"] if v["completeness"] else None,
                         "events": [e["name"] for e in v["events"] or []]} for n, v in vehicles.items()},
        "channels": {r[0]: float(r[1]) for r in pg.rows(
            "SELECT channel_name, value FROM latest_values WHERE vehicle = 'emu1'")},
        "stale": ["line_voltage"],
        "chart": {"from": spike - 300, "to": fleet.EVENT_S / 1e9 + 120, "event_t": fleet.EVENT_S / 1e9},
        "frames": {"from": time.time() - 3600, "to": time.time() + 60, "count": 120},
        "live_value": 55.5,
    }
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    p = start_peer(["node", os.path.join(HERE, "browser.js"), srv.base, json.dumps(want), OUT_DIR], env=env,
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    result = None
    try:
        for line in p.stdout:
            sys.stdout.write("browser: " + line)
            if line.startswith("PUBLISH "):
                publish(broker.port, [fleet.live_batch(next_seq, float(line.split()[1]))])
                next_seq += 1
                p.stdin.write("published\n")
                p.stdin.flush()
            elif line.startswith("RESULT "):
                result = json.loads(line[7:])
        rc = p.wait(120)
    finally:
        stop_peer(p, signal.SIGKILL)
    check(rc == 0 and result, "the browser checks pass", rc)
    # what the chart drew, against SQL for the pixel columns it asked for
    c = result["chart"]
    # from the table the chart was served from: a 1 s rollup row stands at
    # its second's start, which can fall in the column before its samples'
    table, col = {"1s": ("rollup_1s", "vmax"), "1min": ("rollup_1min", "vmax")}.get(c["sources"][0],
                                                                                ("samples", "value"))
    rows = [(float(t), float(v)) for t, v in pg.rows(
        "SELECT extract(epoch from t), %s FROM %s WHERE channel = 1 AND vehicle_id = (SELECT vehicle_id FROM "
        "vehicles WHERE name = 'emu1') AND t >= to_timestamp(%.3f) AND t < to_timestamp(%.3f)"
        % (col, table, c["from"], c["to"]))]
    n = len(buckets(rows, c["from"], (c["to"] - c["from"]) / c["px"]))
    check(c["points"][0] == n, "the chart drew one point per non-empty pixel column", c, n)
    check(result["zoom"]["bucket_s"][0] < c["bucket_s"][0] and result["zoom"]["fetches"] > c["fetches"],
          "zooming fetched finer data", result)
    return next_seq + 1


def main():
    pg = Postgres()
    broker = recv = srv = None
    try:
        broker = Broker()
        recv, next_seq = fill(pg, broker)
        # serve as a role that may only read (README's recipe): it needs no more
        pg.psql("CREATE ROLE dashboard LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO dashboard")
        srv = Serve(pg.url.replace("user=railmon", "user=dashboard"), "--offline-after", "60", "--stale-after", "300")
        vehicles = test_vehicles(pg, srv)
        test_channels(pg, srv)
        test_series(pg, srv)
        test_events_frames(pg, srv)
        test_bad_input(srv)
        next_seq = test_live(pg, srv, broker, next_seq)
        test_token(pg)
        test_browser(pg, srv, broker, next_seq, vehicles)
        err = srv.stop()
        srv = None
        print(err.strip())
    finally:
        if srv:
            stop_peer(srv.proc)
        if recv:
            recv.kill()
        stop_peers()
        if broker:
            broker.stop()
        cleanup()
        pg.fini()
    print("web: all checks passed")


if __name__ == "__main__":
    main()
