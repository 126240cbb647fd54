#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-web-limits.py RAILMON NODE_MODULES - `railmon serve` under one
hostile vehicle or client (issue 26, the web side), against a real
PostgreSQL 15 (tests/ground/pg.py) filled here by SQL:

- slowloris: 140 connections from 127.0.0.1 trickling a header line every
  second hold at most --per-address of them; a request with the token from
  127.0.0.2 is answered meanwhile, and every trickling connection is closed
  at the header timeout although it never went idle;
- the pool: 40 heavy requests blocked (a lock the test holds) do not make
  the overview wait (a connection is kept for cheap requests), and those
  that find no connection within their budget get a 503 with Retry-After;
- /api/frames for 202 frames over 211k samples not yet summarised by BRIN
  answers within a 3 s budget (it scanned the samples once per frame);
- /api/series of one vehicle is not slowed by another's 20 dictionaries of
  100,000 channels (the vehicle filter reaches into channel_names);
- /api/vehicle/NAME/channels is bounded (limit, truncated);
- the Host header of the token-less server (DNS rebinding), a parameter
  that is not UTF-8 (400), vehicle names outside the rule (404 JSON, left
  out of /api/live), "." and ".." (a 404, also in the dashboard), a
  channel named with a comma charted, the door's refusals on the vehicle
  page (headless Chromium, browser-limits.js; RAILMON_SHOT=FILE.png saves
  that page), the token's cookie Secure behind TLS, a token line
  over 255 characters refused.

Every wait is for an event (a socket closed, a backend waiting for a lock,
an answer), each bounded.
"""
import http.client
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time

RAILMON, NODE_MODULES = sys.argv[1:3]
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
from railmon_test import start_peer, stop_peer, stop_peers, wait_for  # noqa: E402
from pg import Postgres  # noqa: E402

TOKEN = "limits-token-0123456789"
NOW = time.time()
BASE = NOW - 1800                 # the frames start here (s)
TORQUE = (1 << 16) | 1
REFUSED_AT = (1764788000, 1764790500)   # door_refusals' first_at, last_at (s)
HOSTILE = "<img src=x onerror=\"window.pwned=1\"> over 20000 channels & 'quoted'"


def check(cond, what, *context):
    if not cond:
        for c in context:
            sys.stderr.write(str(c)[:3000] + "\n")
        raise AssertionError(what)
    print("ok: " + what)


class Serve:
    def __init__(self, url, *args):
        self.proc = start_peer([RAILMON, "serve", "--db", url] + list(args), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        check("port " in line, "railmon serve started", line, self.proc.stderr.read() if not line else "")
        self.port = int(line.split("port ")[1].split()[0])

    def get(self, path, headers=None, source="127.0.0.1", timeout=60, host=None):
        """status, JSON body (or None), headers; path is sent as it is."""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout, source_address=(source, 0))
        try:
            c.putrequest("GET", path, skip_host=host is not None)
            if host is not None and host != "":
                c.putheader("Host", host)
            for k, v in (headers or {}).items():
                c.putheader(k, v)
            c.endheaders()
            r = c.getresponse()
            body = r.read()
            ctype = r.getheader("Content-Type") or ""
            return r.status, json.loads(body) if "json" in ctype else body, r
        finally:
            c.close()

    def stop(self):
        rc = stop_peer(self.proc)
        err = self.proc.stderr.read()
        check(rc == 0, "railmon serve exits 0 on SIGTERM", err)
        return err


def day_partitions(pg):
    for d in (-1, 0, 1):
        day = time.strftime("%Y%m%d", time.gmtime(NOW + d * 86400))
        frm = time.strftime("%Y-%m-%d", time.gmtime(NOW + d * 86400))
        to = time.strftime("%Y-%m-%d", time.gmtime(NOW + (d + 1) * 86400))
        for t in ("samples", "can_frames", "events", "texts"):
            pg.psql("CREATE TABLE %s_p%s PARTITION OF %s FOR VALUES FROM ('%s 00:00:00+00') TO ('%s 00:00:00+00')"
                    % (t, day, t, frm, to))
            # the BRIN tail stays unsummarised, as between two vacuums
            pg.psql("ALTER TABLE %s_p%s SET (autovacuum_enabled = off)" % (t, day))


def fill(pg):
    r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
    check(r.returncode == 0, "db init", r.stderr)
    day_partitions(pg)
    for name in ("emu1", "hog", "wide", "x" * 59, "x" * 60, "..", "."):
        pg.psql("INSERT INTO vehicles (name) VALUES ('%s')" % name)
    vid = {n: int(i) for n, i in pg.rows("SELECT name, vehicle_id FROM vehicles")}
    e = vid["emu1"]
    pg.psql("INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source) VALUES "
            "(%d, 1, 1, 'speed', 'km/h', 0, 'm'), (%d, 1, %d, 'Motor.Torque', 'Nm', 1, 'dbc'), "
            "(%d, 1, 3, 'a,b', 'V', 0, 'm')" % (e, e, TORQUE, e))
    # 202 CAN frames a second apart, each with its decoded signal at its time
    pg.psql("INSERT INTO can_frames SELECT %d, to_timestamp(%f + i), i, 1, 291, 0, '\\x0102'::bytea "
            "FROM generate_series(0, 201) i" % (e, BASE))
    pg.psql("INSERT INTO samples SELECT %d, to_timestamp(%f + i), 1000000 + i, %d, i * 10, 0 FROM generate_series(0, 201) i"
            % (e, BASE, TORQUE))
    # 211,000 samples of speed around them, never vacuumed
    pg.psql("INSERT INTO samples SELECT %d, to_timestamp(%f - 5 + i * 0.001), i, 1, i %% 100, 0 "
            "FROM generate_series(0, 210999) i" % (e, BASE))
    # a, b: ten samples a minute apart in the last quarter hour
    pg.psql("INSERT INTO samples SELECT %d, to_timestamp(%f - 900 + i * 60), 2000000 + i, 3, i, 0 "
            "FROM generate_series(0, 9) i" % (e, NOW))
    # and their 1 s rollups, as the receiver keeps them (the chart's source)
    pg.psql("INSERT INTO rollup_1s SELECT vehicle_id, channel, date_trunc('second', t), 1, value, value, value "
            "FROM samples WHERE channel = 3")
    # hog: 20 dictionaries (config hashes) of 100,000 channels
    # (without the foreign key's trigger per row: the vehicle is there, and it halves the time)
    pg.psql("SET session_replication_role = replica; INSERT INTO configs SELECT %d, h, c, 'hog.' || c, 'V', 0, 'x' "
            "FROM generate_series(1, 20) h, generate_series(1, 100000) c" % vid["hog"], timeout=600)
    # wide: one dictionary of 20,000 channels
    pg.psql("INSERT INTO configs SELECT %d, 1, c, 'w.' || lpad(c::text, 6, '0'), 'V', 0, 'x' "
            "FROM generate_series(1, 20000) c" % vid["wide"])
    pg.psql("INSERT INTO configs VALUES (%d, 1, 1, 'long', 'V', 0, 'x')" % vid["x" * 59])
    # each vehicle's dictionaries, as the receiver records them (channel_names reads the newest only)
    pg.psql("INSERT INTO dictionaries (vehicle_id, config_hash) SELECT DISTINCT vehicle_id, config_hash FROM configs")
    # what the door refused of emu1 (the receiver's rows, written here as
    # it writes them): the vehicle page says them; the last detail is
    # hostile markup (a vehicle's own text), shown as text
    pg.psql("INSERT INTO door_refusals (vehicle_id, reason, count, first_at, last_at, detail) VALUES "
            "(%d, 'time', 3, to_timestamp(%d), to_timestamp(%d), 'record times 2262-04-11 outside the window'), "
            "(%d, 'dictionary', 12345678901, to_timestamp(%d), to_timestamp(%d), '%s')"
            % (e, REFUSED_AT[0], REFUSED_AT[1], e, REFUSED_AT[0] + 60, REFUSED_AT[1] + 60, HOSTILE.replace("'", "''")))
    pg.psql("ANALYZE")


def rng(frm, to):
    return "from=%.3f&to=%.3f" % (frm, to)


def test_queries(pg, srv):
    # 7: 202 frames over 211k unsummarised samples, within a 3 s budget
    t0 = time.monotonic()
    st, fr, _ = srv.get("/api/frames?vehicle=emu1&%s&limit=500" % rng(BASE - 1, BASE + 300))
    dt = time.monotonic() - t0
    check(st == 200, "/api/frames over 211k unsummarised samples within the budget (%.3f s)" % dt, st, fr)
    check(len(fr["frames"]) == 202 and not fr["truncated"], "202 frames", len(fr["frames"]))
    check(all(f["signals"] and len(f["signals"]) == 1 and f["signals"][0]["name"] == "Motor.Torque" and
              f["signals"][0]["value"] == f["seq"] * 10 for f in fr["frames"]), "each frame with its signal",
          fr["frames"][:3])
    # 3: emu1's series beside hog's 2,000,000 dictionary rows
    t0 = time.monotonic()
    st, s, _ = srv.get("/api/series?vehicle=emu1&channel=a,b&%s&px=100&source=raw" % rng(NOW - 1000, NOW))
    dt = time.monotonic() - t0
    check(st == 200 and s["name"] == "a,b" and s["rows"] == 10,
          "emu1's series beside hog's 20 dictionaries of 100,000 channels (%.3f s)" % dt, st, s)
    st, s, _ = srv.get("/api/channels?vehicle=emu1&q=speed")
    check(st == 200 and [c["name"] for c in s] == ["speed"], "emu1's channel search beside hog's", st, s)
    # the fleet-wide search reads each vehicle's newest dictionary only (channel_names), not hog's 20
    t0 = time.monotonic()
    st, s, _ = srv.get("/api/channels?q=speed")
    dt = time.monotonic() - t0
    check(st == 200 and [(c["vehicle"], c["name"]) for c in s] == [("emu1", "speed")],
          "the fleet's channel search beside hog's 20 dictionaries (%.3f s)" % dt, st, s)
    # 3: every answer bounded: channels of a vehicle
    st, w, _ = srv.get("/api/vehicle/wide/channels")
    check(st == 200 and len(w["channels"]) == 1000 and w["truncated"] and w["limit"] == 1000,
          "20,000 channels: the first 1000 and truncated", st, len(w.get("channels", [])) if st == 200 else w)
    check(w["channels"][0]["name"] == "w.000001" and w["channels"][-1]["name"] == "w.001000", "in order",
          w["channels"][0], w["channels"][-1])
    st, w, _ = srv.get("/api/vehicle?vehicle=wide&limit=10")
    check(st == 200 and len(w["channels"]) == 10 and w["truncated"], "limit=10", st)
    st, w, _ = srv.get("/api/vehicle?vehicle=wide&limit=5001")
    check(st == 400 and w["param"] == "limit", "limit over 5000: 400", st, w)
    st, w, _ = srv.get("/api/vehicle/emu1/channels")
    check(st == 200 and len(w["channels"]) == 3 and not w["truncated"], "emu1: 3 channels, whole", st, w)
    # the fleet overview: at most limit vehicles (default 1000, at most 5000), by name, and truncated
    # (before: every vehicle the database had, a bare array)
    st, f, _ = srv.get("/api/vehicles")
    check(st == 200 and f["limit"] == 1000 and not f["truncated"] and len(f["vehicles"]) == 7,
          "/api/vehicles: 7 vehicles, whole", st, f)
    st, f, _ = srv.get("/api/vehicles?limit=3")
    check(st == 200 and f["limit"] == 3 and f["truncated"] and [v["vehicle"] for v in f["vehicles"]] ==
          sorted(n for n, in pg.rows("SELECT name FROM vehicles"))[:3], "/api/vehicles?limit=3: the first 3, truncated",
          st, f)
    for bad in ("0", "5001", "x"):
        st, f, _ = srv.get("/api/vehicles?limit=" + bad)
        check(st == 400 and f["param"] == "limit", "/api/vehicles?limit=%s: 400" % bad, st, f)


def test_input(pg, srv):
    frm_to = rng(NOW - 1000, NOW)
    # 9: not UTF-8: 400 naming the parameter (was 500 with PostgreSQL's message)
    for path, param in (("/api/series?vehicle=emu1&channel=%%FF&%s" % frm_to, "channel"),
                        ("/api/channels?q=%C3%28", "q"),
                        ("/api/events?vehicle=emu1&%s&x=%%E0%%80%%80" % frm_to, "x"),
                        ("/api/series?vehicle=%%C0%%AF&channel=speed&%s" % frm_to, "vehicle")):
        st, b, _ = srv.get(path)
        check(st == 400 and b["param"] == param and "UTF-8" in b["error"], "%s: 400 naming %s" % (path, param), st, b)
    # 9: vehicle names: the rule (1-59 of [A-Za-z0-9._-], not . or ..), a 404 JSON everywhere
    long256, long700 = "a" * 256, "b" * 700
    for path in ("/api/vehicle/%s/channels" % long256, "/api/vehicle?vehicle=%s" % long700,
                 "/api/series?vehicle=%s&channel=speed&%s" % (long700, frm_to),
                 "/api/frames?vehicle=%s&%s" % (long256, frm_to), "/api/events?vehicle=%s&%s" % (long700, frm_to),
                 "/api/channels?vehicle=%s" % long256, "/api/vehicle/../channels", "/api/vehicle/./channels",
                 "/api/vehicle?vehicle=..", "/api/vehicle?vehicle=.", "/api/vehicle?vehicle=" + "x" * 60,
                 "/api/vehicle?vehicle=a%2Fb", "/api/vehicle?vehicle=%20emu1"):
        st, b, _ = srv.get(path)
        check(st == 404 and isinstance(b, dict) and b["param"] == "vehicle", "%.60s: 404 JSON (vehicle)" % path, st, b)
    st, b, _ = srv.get("/api/vehicle?vehicle=" + "x" * 59)
    check(st == 200 and b["vehicle"] == "x" * 59 and [c["name"] for c in b["channels"]] == ["long"],
          "a 59-character name: its page", st, b)
    # 9: the Host header of a token-less server (DNS rebinding)
    for host, want in (("127.0.0.1:%d" % srv.port, 200), ("localhost:%d" % srv.port, 200),
                       ("LOCALHOST:%d" % srv.port, 200), ("evil.example:%d" % srv.port, 421),
                       ("127.0.0.1.evil.example:%d" % srv.port, 421), ("127.0.0.1:%d" % (srv.port + 1), 421),
                       ("localhost", 421)):
        st, b, _ = srv.get("/api/vehicles", host=host)
        check(st == want, "Host %s: %d" % (host, want), st, b)
    st, b, _ = srv.get("/", host="rebind.example:%d" % srv.port)
    check(st == 421 and b["param"] == "Host", "the page itself refused to another Host", st, b)


def test_live_names(pg, srv):
    # 9: a name over 600 bytes in a notification: left out, never an empty vehicle
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=10)
    s.sendall(b"GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % srv.port)
    buf = b""
    end = time.monotonic() + 20
    while b"event: hello" not in buf and time.monotonic() < end:
        got = s.recv(4096)
        if not got:
            check(False, "the stream stays open", buf)
        buf += got
    check(b"event: hello" in buf, "the stream listens", buf)
    pg.psql("NOTIFY railmon_batch, '%s'; NOTIFY railmon_batch, '..'; NOTIFY railmon_batch, 'emu1'" % ("n" * 700))
    while b'"vehicle":"emu1"' not in buf and time.monotonic() < end:
        got = s.recv(4096)
        if not got:
            check(False, "the stream stays open", buf)
        buf += got
    s.close()
    check(b'"vehicle":"emu1"' in buf, "emu1's message came", buf)
    check(b'"vehicle":""' not in buf and b'"vehicle":".."' not in buf and b"nnnn" not in buf,
          "names outside the rule left out of the stream, never sent empty", buf)


def test_browser(srv):
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    want = {"from": NOW - 1000, "to": NOW, "shot": os.environ.get("RAILMON_SHOT", ""),
            "refusals": {"time": {"count": "3", "first": REFUSED_AT[0], "last": REFUSED_AT[1],
                                  "detail": "record times 2262-04-11 outside the window",
                                  "what": "record times outside the accepted window"},
                         "dictionary": {"count": "12345678901", "first": REFUSED_AT[0] + 60, "last": REFUSED_AT[1] + 60,
                                        "detail": HOSTILE, "what": "a dictionary over the size, channel or rate limit"}}}
    p = start_peer(["node", os.path.join(HERE, "browser-limits.js"), "http://127.0.0.1:%d" % srv.port, json.dumps(want)],
                   env=env, stdout=subprocess.PIPE, text=True)
    out = p.communicate(timeout=120)[0]
    sys.stdout.write("".join("browser: " + line + "\n" for line in out.splitlines()))
    check(p.returncode == 0, "the dashboard: a comma in a channel's name, vehicles named . and .., refusals at the door",
          out)


def test_pool(pg):
    # 6: a pool of 2, a 10 s budget; 40 heavy requests block on a lock the test holds
    # (all from 127.0.0.1: the per-address limit is the whole one here, as behind a proxy)
    srv = Serve(pg.url, "--listen", "127.0.0.1:0", "--pool", "2", "--budget", "10", "--per-address", "128")
    lock = subprocess.Popen(["psql", "-X", "-q", "-A", "-t", "-h", pg.dir, "-U", "railmon", "-d", pg.db],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    heavy, done = [], []
    mu = threading.Lock()

    def one(i):
        try:
            st, b, r = srv.get("/api/series?vehicle=emu1&channel=speed&%s&px=100" % rng(BASE, BASE + 100),
                               timeout=120)
            res = (st, b, r.getheader("Retry-After"))
        except OSError as e:
            res = (0, repr(e), None)
        with mu:
            heavy.append(res)
    try:
        lock.stdin.write("BEGIN; LOCK TABLE configs IN ACCESS EXCLUSIVE MODE; SELECT 'locked';\n")
        lock.stdin.flush()
        check(lock.stdout.readline().strip() == "locked", "the test holds configs locked")
        threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(40)]
        for t in threads:
            t.start()
        wait_for("a heavy request waiting for the lock", lambda: int(pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'railmon serve' "
            "AND wait_event_type = 'Lock'")) >= 1, 30)
        t0 = time.monotonic()
        try:
            st, b, _ = srv.get("/api/vehicles", timeout=120)
        except OSError as e:
            # (before: still queued behind the 40 after 120 s)
            st, b = 0, repr(e)
        dt = time.monotonic() - t0
        with mu:
            answered = len(heavy)
        check(st == 200 and len(b["vehicles"]) == 7, "the overview answered (%.3f s) while 40 heavy requests hold or wait for "
              "the pool" % dt, st, b)
        check(answered == 0, "... before any of them (it did not queue behind them)", answered, heavy[:3])
        end = time.monotonic() + 60
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        check(len(heavy) == 40, "every heavy request answered within its budget (no unbounded wait)", len(heavy))
        busy = [h for h in heavy if h[0] == 503 and "busy" in h[1]["error"]]
        check(all(h[0] == 503 for h in heavy), "all 503 (blocked or no connection in time)", heavy[:3])
        check(len(busy) >= 20 and all(h[2] == "10" for h in busy), "%d busy with Retry-After: 10" % len(busy),
              heavy[:3])
        check("no database connection came free" in busy[0][1]["error"], "a plain message", busy[0])
    finally:
        lock.stdin.write("ROLLBACK;\n\\q\n")
        lock.stdin.flush()
        lock.wait(30)
    st, b, _ = srv.get("/api/series?vehicle=emu1&channel=a,b&%s&px=100&source=raw" % rng(NOW - 1000, NOW))
    check(st == 200 and b["rows"] == 10, "the lock gone: series again", st, b)
    err = srv.stop()
    check(" busy)" in err and "(5xx, %d busy)" % len(busy) in err, "busy answers counted and said", err)
    print(err.strip())


def test_slowloris(pg):
    # 2: 140 connections from 127.0.0.1, each sending a header line every second
    d = tempfile.mkdtemp(prefix="token-")
    path = os.path.join(d, "token")
    with open(path, "w") as f:
        f.write(TOKEN + "\n")
    os.chmod(path, 0o600)
    srv = Serve(pg.url, "--listen", "127.0.0.1:0", "--token-file", path, "--header-timeout", "3")
    os.unlink(path)
    os.rmdir(d)
    socks, closed = [], set()
    stop = threading.Event()
    mu = threading.Lock()

    def reap(ss):
        """Those the server closed (EOF or reset) join closed."""
        r, _, _ = select.select(ss, [], [], 0)
        for s in r:
            try:
                gone = s.recv(4096) == b""
            except OSError:
                gone = True
            if gone:
                with mu:
                    closed.add(s)

    def trickle():
        while not stop.wait(1.0):
            with mu:
                live = [s for s in socks if s not in closed]
            reap(live)
            for s in live:
                try:
                    s.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    with mu:
                        closed.add(s)
    t = threading.Thread(target=trickle, daemon=True)
    try:
        for i in range(140):
            s = socket.socket()
            s.settimeout(10)
            s.bind(("127.0.0.1", 0))
            try:
                s.connect(("127.0.0.1", srv.port))
                s.sendall(b"GET /api/vehicles HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            except OSError:
                closed.add(s)
            s.setblocking(False)
            socks.append(s)
        t.start()
        # the server has dealt with every one: over its limit closed at once
        wait_for("the connections over a limit closed", lambda: len(closed) >= 140 - 128, 30)
        with mu:
            held = 140 - len(closed)
        t0 = time.monotonic()
        # a client with the token from another address is answered meanwhile
        try:
            st, b, _ = srv.get("/api/vehicles", {"Authorization": "Bearer " + TOKEN}, source="127.0.0.2", timeout=20)
        except OSError as e:
            st, b = 0, repr(e)
        check(st == 200 and len(b["vehicles"]) == 7, "a request with the token from 127.0.0.2 answered while 127.0.0.1 holds %d"
              % held, st, b)
        check(held <= 16, "one address holds at most --per-address (16) connections", held)
        # the trickling ones are closed at the header timeout (3 s), though never idle
        wait_for("every trickling connection closed", lambda: len(closed) == 140, 30)
        check(len(closed) == 140, "every slow connection closed by the header timeout (%.1f s after the request)"
              % (time.monotonic() - t0))
        # 9: the token cookie is Secure when the client came over TLS (a proxy says so)
        st, _, r = srv.get("/?token=" + TOKEN, {"X-Forwarded-Proto": "https"})
        check(st == 200 and "; Secure" in r.getheader("Set-Cookie"), "cookie Secure behind TLS", r.getheader("Set-Cookie"))
        st, _, r = srv.get("/?token=" + TOKEN, {"Forwarded": "for=10.0.0.1;proto=https"})
        check(st == 200 and "; Secure" in r.getheader("Set-Cookie"), "cookie Secure (Forwarded)", r.getheader("Set-Cookie"))
        st, _, r = srv.get("/?token=" + TOKEN)
        check(st == 200 and "Secure" not in r.getheader("Set-Cookie"), "no Secure over plain HTTP",
              r.getheader("Set-Cookie"))
        # a token-holding server answers any Host (the token is the guard)
        st, _, _ = srv.get("/api/vehicles", {"Authorization": "Bearer " + TOKEN}, host="dash.example:443")
        check(st == 200, "with a token any Host", st)
    finally:
        stop.set()
        if t.is_alive():
            t.join(10)
        for s in socks:
            s.close()
    err = srv.stop()
    n = int(err.split(" connections closed without a whole request")[0].rsplit(", ", 1)[1])
    check(n >= held, "%d closed by the header timeout, counted and said" % n, err)
    print(err.strip())


def test_token_file(pg):
    d = tempfile.mkdtemp(prefix="token-")
    path = os.path.join(d, "token")
    try:
        for n, ok in ((300, False), (256, False), (255, True)):
            with open(path, "w") as f:
                f.write("t" * n + "\n")
            os.chmod(path, 0o600)
            if ok:
                srv = Serve(pg.url, "--listen", "127.0.0.1:0", "--token-file", path)
                st, _, _ = srv.get("/api/vehicles", {"Authorization": "Bearer " + "t" * n})
                st2, _, _ = srv.get("/api/vehicles", {"Authorization": "Bearer " + "t" * (n - 1)})
                srv.stop()
                check(st == 200 and st2 == 401, "a 255-character token: whole", st, st2)
            else:
                p = start_peer([RAILMON, "serve", "--db", pg.url, "--listen", "127.0.0.1:0", "--token-file", path],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                # it exits at once; one that started (with the token cut) prints its port first
                first = p.stdout.readline()
                stop_peer(p)
                err = p.stderr.read()
                check(not first and p.returncode == 2 and "longer than 255 characters" in err,
                      "a %d-character token line refused, not cut" % n, first, p.returncode, err)
        r = subprocess.run([RAILMON, "serve", "--db", pg.url, "--per-address", "0"], capture_output=True, text=True,
                           timeout=30)
        check(r.returncode == 2 and "--per-address: 1 to 128" in r.stderr, "--per-address 0 refused", r.stderr)
    finally:
        if os.path.exists(path):
            os.unlink(path)
        os.rmdir(d)


def main():
    pg = Postgres()
    try:
        fill(pg)
        srv = Serve(pg.url, "--listen", "127.0.0.1:0", "--budget", "3")
        test_queries(pg, srv)
        test_input(pg, srv)
        test_live_names(pg, srv)
        test_browser(srv)
        err = srv.stop()
        check("(2 left out: a vehicle name outside the rule)" in err, "the names left out of /api/live counted and said",
              err)
        test_pool(pg)
        test_slowloris(pg)
        test_token_file(pg)
    finally:
        stop_peers()
        pg.fini()
    print("web-limits: all checks passed")


if __name__ == "__main__":
    main()
