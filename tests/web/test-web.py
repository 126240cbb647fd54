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
import re
import shutil
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
    # emu3's Batch, emu1's (its last message is a health-only Batch: no
    # ledger row), emu2's four
    want = 1 + len(emu1) - 1 + 4
    try:
        wait_for("all committed", lambda: pg.psql("SELECT count(*) FROM batches") == str(want), 60)
    except AssertionError:
        sys.stderr.write("recv:\n%s\nrefused: %s\n" % ("\n".join(recv.lines), pg.psql("SELECT * FROM refused")))
        recv.kill()
        raise
    # emu3 went quiet two hours ago (the clock moved on, not the receiver):
    # offline for serve's --offline-after 60
    pg.psql("UPDATE vehicles SET last_seen = now() - interval '2 hours' WHERE name = 'emu3'")
    pg.psql("UPDATE batches SET received_at = now() - interval '2 hours' WHERE vehicle_id = "
            "(SELECT vehicle_id FROM vehicles WHERE name = 'emu3')")
    return recv, next_seq


def test_vehicles(pg, srv):
    vs = {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}
    check(sorted(vs) == sorted(r[0] for r in pg.rows("SELECT name FROM vehicles")), "every vehicle", vs)
    check(vs["emu1"]["online"] and vs["emu2"]["online"] and not vs["emu3"]["online"], "online/offline", vs)
    # last seen: the newest Batch (vehicles.last_seen is set when the receiver first meets a vehicle)
    for name, v in vs.items():
        want = float(pg.psql("SELECT extract(epoch from greatest(v.last_seen, max(b.received_at))) FROM vehicles v "
                             "LEFT JOIN batches b USING (vehicle_id) WHERE v.name = '%s' GROUP BY v.last_seen" % name))
        check(abs(v["last_seen"] - want) < 1e-5, name + ": last seen at its newest Batch", v["last_seen"], want)
    for name, v in vs.items():
        sql = pg.rows("SELECT day, records, missing, complete, on_board FROM completeness WHERE vehicle = '%s' "
                      "ORDER BY day DESC" % name)
        check(len(v["completeness"]) == len(sql), "completeness days " + name, v, sql)
        for got, want in zip(v["completeness"], sql):
            check(got["day"] == want[0] and got["records"] == int(want[1]) and got["missing"] == int(want[2]) and
                  abs(got["complete"] - float(want[3])) < 1e-9 and got["on_board"] == int(want[4]),
                  "completeness " + name, got, want)
    gaps = vs["emu2"]["gaps"]
    check(gaps and len(gaps) == 1 and gaps[0]["from_seq"] == 101 and gaps[0]["to_seq"] == 200 and
          gaps[0]["records"] == 100 and not gaps[0]["explained"], "emu2's hole", gaps)
    # 310 records arrived (300 whole, 10 reduced), 90 on board, 100 missing
    e2 = vs["emu2"]["completeness"][0]
    check((e2["records"], e2["on_board"], e2["missing"]) == (300 + len(fleet.EMU2_REDUCED), 100 - len(fleet.EMU2_REDUCED),
                                                            100) and abs(e2["complete"] - 400 / 500) < 1e-9,
          "emu2 80 % complete, 90 on board", e2)
    check(all(c["on_board"] == 0 for n in ("emu1", "emu3") for c in vs[n]["completeness"] or []), "nothing on board of emu1, emu3",
          vs["emu1"]["completeness"], vs["emu3"]["completeness"])
    check(vs["emu1"]["gaps"] is None, "emu1 has no hole", vs["emu1"])
    ev = vs["emu1"]["events"]
    check(ev and ev[0]["name"] == "CAN_BUS_OFF" and ev[0]["count"] == 1, "emu1's bus-off event is active", ev)
    # a restart on the same bus after it ends it; on another bus it does not
    pg.psql("INSERT INTO events SELECT vehicle_id, t + interval '1 s', seq + 1, %d, 13, 0, 0 FROM events "
            "WHERE code = 10" % (ev[0]["source"] + 1))
    check([e["name"] for e in {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}["emu1"]["events"] or []] ==
          ["CAN_BUS_OFF"],
          "a restart on another bus leaves the bus-off active")
    pg.psql("UPDATE events SET source = %d WHERE code = 13" % ev[0]["source"])
    cleared = {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}["emu1"]["events"]
    pg.psql("DELETE FROM events WHERE code = 13")
    check(not cleared, "CAN_RESTARTED on its bus after the bus-off: no longer active", cleared)
    st, body, _ = srv.get("/api/vehicles?events_s=60")
    check(st == 200 and not [v for v in body["vehicles"] if v["events"]], "a 60 s window: the bus-off is not active", body)
    print("vehicles: 3, online/offline, completeness, the hole and the event as in SQL")
    return vs


HEALTH_SQL = """SELECT v.name, max(extract(epoch from h.t)), count(*),
  sum(h.backlog) FILTER (WHERE h.kind = 'uplink'), sum(h.backlog) FILTER (WHERE h.kind = 'log'), sum(h.drops) + sum(h.rx_dropped),
  coalesce(sum(h.errors) FILTER (WHERE h.kind IN ('can', 'modbus')), 0), sum(h.rx_dropped),
  coalesce(sum(h.errors) FILTER (WHERE h.kind = 'log'), 0), max(h.latency_p99_us) FILTER (WHERE h.kind IN ('can', 'modbus')),
  coalesce(bool_or(h.clock_unsynced), false)
  FROM health h JOIN vehicles v USING (vehicle_id) GROUP BY v.name"""


def num(x):
    return None if x == "" else float(x)


def check_health(pg, vs):
    """Every vehicle's health summary in /api/vehicles against SQL over the
    health table."""
    sql = {r[0]: r[1:] for r in pg.rows(HEALTH_SQL)}
    for name, v in vs.items():
        h = v["health"]
        if name not in sql:
            check(h is None, name + ": no Health records, no health", h)
            continue
        t, parts, up_bl, log_bl, drops, bus_err, rx_drop, log_faults, p99, unsynced = sql[name]
        check(abs(h["t"] - float(t)) < 1e-5 and h["parts"] == int(parts) and h["uplink_backlog"] == num(up_bl) and
              h["log_backlog"] == num(log_bl) and h["drops"] == int(drops) and h["bus_errors"] == int(bus_err) and
              h["rx_dropped"] == int(rx_drop) and h["log_faults"] == int(log_faults) and
              h["latency_p99_us"] == num(p99) and h["clock_unsynced"] == (unsynced == "t"),
              name + ": health as in SQL", h, sql[name])


def test_health(pg, vs):
    check_health(pg, vs)
    # emu1's figures are those of its newest Batch's entries, not the older
    # health-only Batch from its backlog that came after it
    h = vs["emu1"]["health"]
    want = {e["name"]: e for e in fleet.EMU1_HEALTH}
    # drops as `railmon stat` counts them (cli/stat-table.c): the ring's 2
    # and the CAN socket's 1 the kernel dropped; bus errors the 3 errors only
    stat_drops = sum(e.get("drops", 0) + e.get("rx_dropped", 0) for e in fleet.EMU1_HEALTH)
    check(stat_drops == 3, "the fleet's emu1: 2 ring drops and 1 socket drop", fleet.EMU1_HEALTH)
    check(h["parts"] == 4 and h["uplink_backlog"] == 40 and h["log_backlog"] == 12 and h["drops"] == stat_drops and
          h["bus_errors"] == 3 and h["rx_dropped"] == 1 and h["log_faults"] == 0 and h["latency_p99_us"] == 950 and
          abs(h["t"] - (fleet.NOW - 60 * 10**9) / 1e9) < 1e-5, "emu1's health: the newest entries", h, want)
    check(h["problems"] == ["3 records dropped", "3 bus errors"], "emu1's problems", h["problems"])
    check(vs["emu2"]["health"]["clock_unsynced"] and vs["emu2"]["health"]["problems"] == ["clock not synchronised"],
          "emu2: the clock", vs["emu2"]["health"])
    check(vs["emu3"]["health"] is None, "emu3 sent no Health", vs["emu3"])
    check(all(v["state_from"] == "last_batch" and v["state_since"] is None for v in vs.values()),
          "no status heard: online/offline from the last Batch", vs)
    print("health: the overview's figures as in SQL; the newest entries win over an older Batch's; problems named")


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
    check(all(c["label"] is None and c["value_table"] is None for c in chans.values()), "no value tables", chans)
    parts = {h["name"]: h for h in d["health"]}
    sql = {r[0]: r[1:] for r in pg.rows("SELECT name, kind, drops + rx_dropped, errors, backlog, latency_p99_us, state FROM health "
                                        "WHERE vehicle_id = (SELECT vehicle_id FROM vehicles WHERE name = 'emu1')")}
    check(sorted(parts) == sorted(sql) == sorted(e["name"] for e in fleet.EMU1_HEALTH), "emu1's health parts", parts)
    for name, h in parts.items():
        w = sql[name]
        check([h["kind"], h["drops"], h["errors"], h["backlog"], h["latency_p99_us"], h["state"]] ==
              [w[0], int(w[1]), int(w[2]), int(w[3]), int(w[4]), w[5]], "health part " + name, h, w)
    check(parts["vehicle"]["drops"] == 1 and parts["vehicle"]["errors"] == 3,
          "the CAN part's drops: its socket's 1 (as stat's), errors its 3", parts["vehicle"])
    check(d["status"] is None, "emu1: no status heard", d["status"])
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


# The ground's DBC for emu1's bus 1 (serve --dbc 1=FILE): 0x123 as two
# signals, Step with a value table; 0x456 is not in it.
GROUND_DBC = """VERSION ""
BU_: VCU
BO_ 291 Motor: 2 VCU
 SG_ Count : 0|8@1+ (10,0) [0|2550] "Nm" Vector__XXX
 SG_ Step : 8|8@1+ (1,0) [0|255] "" Vector__XXX
VAL_ 291 Step 0 "zero" 2 "two" 4 "four" ;
"""


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
    # the ground's DBC: each 0x123 frame's bytes [minute, k] decoded
    labels = {0: "zero", 2: "two", 4: "four"}
    for f in fr["frames"]:
        m, k = bytes.fromhex(f["data"])
        d = {s["name"]: s for s in f["decoded"]}
        check(sorted(d) == ["Motor.Count", "Motor.Step"] and d["Motor.Count"]["value"] == m * 10 and
              d["Motor.Count"]["unit"] == "Nm" and d["Motor.Step"]["value"] == k and
              d["Motor.Step"]["label"] == labels.get(k) and d["Motor.Count"]["label"] is None,
              "the ground DBC's decoding", f)
    fr = srv.ok("/api/frames?vehicle=emu1&from=%.3f&to=%.3f&id=0x456&limit=50" % (now - 3600, now + 60))
    check(len(fr["frames"]) == 50 and fr["truncated"] and all(not f["signals"] and f["decoded"] is None
                                                               for f in fr["frames"]),
          "0x456: no signals (in neither DBC), the limit said", fr)
    print("events and frames (with the vehicle's decoded signals, and the ground DBC's) as in SQL; limits said")


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
        # the server's own Host (a token-less serve answers no other: DNS rebinding)
        s.sendall(b"GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % srv.port)
        buf = b""

        def more():
            got = s.recv(4096)
            check(got, "the stream ended", buf)
            return got
        while b"event: hello" not in buf:
            buf += more()
        t0 = time.monotonic()
        publish(broker.port, [fleet.live_batch(next_seq, 77.0)])
        while b"event: batch" not in buf.split(b"event: hello", 1)[1]:
            buf += more()
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
    r = subprocess.run([RAILMON, "serve", "--db", pg.url, "--dbc", "vehicle.dbc"], capture_output=True, text=True,
                       timeout=30)
    check(r.returncode == 2 and "--dbc vehicle.dbc: expected BUS=FILE" in r.stderr, "a --dbc without its bus said",
          r.stderr)
    d = tempfile.mkdtemp(prefix="dbc-")
    bad = os.path.join(d, "bad.dbc")
    with open(bad, "w") as f:
        f.write(GROUND_DBC + "BOGUS 1 2 3\n")
    r = subprocess.run([RAILMON, "serve", "--db", pg.url, "--dbc", "1=" + bad], capture_output=True, text=True,
                       timeout=30)
    shutil.rmtree(d)
    check(r.returncode == 2 and "%s:%d: unknown keyword 'BOGUS'" % (bad, GROUND_DBC.count("\n") + 1) in r.stderr,
          "a bad DBC line said with its file and line", r.stderr)
    r = subprocess.run([RAILMON, "serve", "--db", "postgresql:///nosuchdb?host=%s&user=railmon" % pg.dir],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and "nosuchdb" in r.stderr, "an unreachable database said at the start", r.stderr)
    local = Serve(pg.url, "--listen", "localhost:0", "--budget", "0.001")
    # a query over its time budget (1 ms here: 24,000 raw rows) is a 503 that says so
    now = time.time()
    st, body, _ = local.get("/api/series?vehicle=emu1&channel=speed&from=%.0f&to=%.0f&source=raw" % (now - 7200, now))
    check(st == 503 and "time budget" in body["error"], "the time budget", st, body)
    err = local.stop()
    check("1 failed (5xx, 0 busy)" in err, "the failure counted and said", err)
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


DEMO = os.path.join(HERE, "..", "..", "cli", "demo")


def dbc_value_tables(path):
    """VAL_ <id> <signal> v "label" ... ; from the DBC, by signal name."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("VAL_ "):
                head, rest = line.split('"', 1)[0].split(), '"' + line.split('"', 1)[1]
                pairs = re.findall(r'(-?[0-9.]+)\s+"([^"]*)"', " " + " ".join(head[3:]) + " " + rest)
                out[head[2]] = {float(v): label for v, label in pairs}
    return out


def real_vehicle(broker, tmp):
    """emu4: a real `railmon run` replaying the demo trace (its DBC has VAL_
    tables) in real time, forwarding to the broker: the forwarder publishes
    its retained status and Health entries every second."""
    board = os.path.join(tmp, "emu4.ini")
    with open(board, "w") as f:
        f.write("[board]\nvehicle = emu4\nrt_priority = 0\nbatch_ms = 200\nhealth_interval_s = 1\n"
                "[storage]\nsync_window_ms = 50\nsegment_size = 4M\n"
                "[uplink]\nbroker = mqtt://127.0.0.1:%d\n"
                "[can vehicle]\ndriver = trace\nfile = %s/train.log\ndbc = %s/train.dbc\nspeed = 1\nloop = true\n"
                % (broker.port, DEMO, DEMO))
    return start_peer([RAILMON, "run", "--board", board, "--data", os.path.join(tmp, "emu4-log")],
                      stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "emu4.err"), "w"))


def test_real_vehicle(pg, srv, broker):
    """Health, status and value-table labels from a real vehicle, then its
    forwarder killed: the broker publishes its will, and the overview says
    offline within a few seconds."""
    tmp = tempfile.mkdtemp(prefix="emu4-")
    run = real_vehicle(broker, tmp)

    def said():
        with open(os.path.join(tmp, "emu4.err")) as f:
            return "emu4's railmon run:\n%s\nstatus: %s\nhealth: %s\nchannels: %s" % (
                f.read()[-3000:], pg.psql("SELECT * FROM vehicle_status"),
                pg.psql("SELECT v.name, h.name FROM health h JOIN vehicles v USING (vehicle_id)"),
                pg.psql("SELECT vehicle, channel_name FROM latest_values WHERE vehicle = 'emu4'"))
    try:
        wait_for("emu4 online with health and labels", lambda: run.poll() is None and pg.psql(
            "SELECT (SELECT state FROM vehicle_status JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu4') = 'online'"
            " AND (SELECT count(*) FROM health JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu4') >= 3"
            " AND EXISTS (SELECT 1 FROM latest_values WHERE vehicle = 'emu4' AND channel_name LIKE '%.Direction')") == "t" or
            check(run.poll() is None, "emu4's railmon run ended", said()), 60)
        vs = {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}
        e4 = vs["emu4"]
        check(e4["online"] and e4["state_from"] == "status" and e4["state_since"] and e4["health"], "emu4 online", e4)
        # a real run logs START, UPLINK_CONNECT, SEAL_CHAIN_NEW...: information,
        # never an active event; only what the log holds of problems is
        info = {1, 2, 13, 17, 19, 25, 51, 60, 72, 80, 81, 86, 90, 93}
        logged = {int(c) for c in pg.psql("SELECT DISTINCT code FROM events JOIN vehicles USING (vehicle_id) "
                                          "WHERE name = 'emu4'").split()}
        shown = {e["code"] for e in e4["events"] or []}
        check(logged & info and shown <= logged - info,
              "emu4's active events: the problems it logged, none of its information", shown, logged)
        kinds = {h["kind"] for h in srv.ok("/api/vehicle/emu4/channels")["health"]}
        check({"can", "log", "uplink"} <= kinds, "emu4's parts: the bus, the log, the uplink", kinds)
        # labels: every channel with a value table, as the DBC says
        dbc = dbc_value_tables(os.path.join(DEMO, "train.dbc"))
        d = srv.ok("/api/vehicle/emu4/channels")
        labelled = [c for c in d["channels"] if c["value_table"]]
        check(sorted(c["name"].split(".")[-1] for c in labelled) ==
              sorted(n for n in dbc if n in {c["name"].split(".")[-1] for c in d["channels"]}),
              "every channel the DBC gives a value table has it", labelled, sorted(dbc))
        for c in labelled:
            table = dbc[c["name"].split(".")[-1]]
            got = {float(e.split(" ", 1)[0]): e.split(" ", 1)[1] for e in c["value_table"]}
            check(got == table, "the value table of " + c["name"], got, table)
            check(c["value"] is None or c["label"] == table.get(c["value"]), "the label of %s's last value" % c["name"],
                  c)
        direction = [c for c in labelled if c["name"].endswith("Direction")][0]
        check(direction["label"] in ("standstill", "forward", "reverse"), "Direction has a label", direction)
        # the chart's series carries the table too (its cursor labels values)
        now = time.time()
        ser = srv.ok("/api/series?vehicle=emu4&channel=%s&from=%.3f&to=%.3f&px=100" % (direction["name"], now - 600, now + 1))
        check(ser["value_table"] == direction["value_table"] and
              {float(e.split(" ", 1)[0]) for e in ser["value_table"]} == set(dbc["Direction"]),
              "the series carries Direction's value table", ser["value_table"])
        sp = srv.ok("/api/series?vehicle=emu1&channel=speed&from=%.3f&to=%.3f&px=10" % (now - 600, now + 1))
        check(sp["value_table"] is None, "speed has none", sp["value_table"])
        print("emu4 (real railmon run): online from its status topic, health as in SQL, %d channels with their "
              "DBC value tables and labels (Direction = %s %s)" % (len(labelled), direction["value"], direction["label"]))
        # the forwarder dies without a word: the broker publishes its will
        t0 = time.monotonic()
        stop_peer(run, signal.SIGKILL)
        wait_for("emu4 offline", lambda: not {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}["emu4"]["online"], 30)
        dt = time.monotonic() - t0
        e4 = {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}["emu4"]
        sql = pg.rows("SELECT state, extract(epoch from since) FROM vehicle_status JOIN vehicles USING (vehicle_id) "
                      "WHERE name = 'emu4'")[0]
        check(e4["state_from"] == "status" and sql[0] == "offline" and abs(e4["state_since"] - float(sql[1])) < 1e-5 and
              e4["age_s"] < 30, "emu4 offline from its will while its last Batch is recent", e4, sql)
        print("emu4's forwarder killed: offline in the overview %.2f s later (its will on the status topic)" % dt)
        # its health no longer moves: the overview's figures against SQL
        vs = {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}
        check_health(pg, vs)
        print("emu4's health: %s" % json.dumps(vs["emu4"]["health"]))
    except AssertionError:
        sys.stderr.write(said() + "\n")
        raise
    finally:
        stop_peer(run, signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    return vs


def test_browser(pg, srv, broker, next_seq, vehicles):
    os.makedirs(OUT_DIR, exist_ok=True)
    spike = fleet.SPIKE_S / 1e9
    emu4 = srv.ok("/api/vehicle/emu4/channels")
    want = {
        "vehicles": {n: {"online": v["online"], "today": v["completeness"][0]["complete"] if v["completeness"] else None,
                         "today_counts": [v["completeness"][0]["missing"], v["completeness"][0]["on_board"]]
                         if v["completeness"] else None,
                         "events": [e["name"] for e in v["events"] or []], "state_from": v["state_from"],
                         "problems": v["health"]["problems"] if v["health"] else None} for n, v in vehicles.items()},
        "labelled": {"vehicle": "emu4", "state": "offline",
                     "labels": {c["name"]: c["label"] or "" for c in emu4["channels"]},
                     "parts": [h["name"] for h in emu4["health"]]},
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
    dbc = tempfile.mktemp(prefix="ground-", suffix=".dbc")
    broker = recv = srv = None
    try:
        broker = Broker()
        recv, next_seq = fill(pg, broker)
        # serve as a role that may only read (README's recipe): it needs no more
        pg.psql("CREATE ROLE dashboard LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO dashboard")
        with open(dbc, "w") as f:
            f.write(GROUND_DBC)
        srv = Serve(pg.url.replace("user=railmon", "user=dashboard"), "--offline-after", "60", "--stale-after", "300",
                    "--listen", "127.0.0.1:0", "--dbc", "1=" + dbc)
        vehicles = test_vehicles(pg, srv)
        test_health(pg, vehicles)
        test_channels(pg, srv)
        test_series(pg, srv)
        test_events_frames(pg, srv)
        test_bad_input(srv)
        next_seq = test_live(pg, srv, broker, next_seq)
        test_token(pg)
        test_real_vehicle(pg, srv, broker)
        vehicles = {v["vehicle"]: v for v in srv.ok("/api/vehicles")["vehicles"]}
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
        if os.path.exists(dbc):
            os.unlink(dbc)
    print("web: all checks passed")


if __name__ == "__main__":
    main()
