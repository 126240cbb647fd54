#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-trdp.py RAILMON PB2_DIR SRCDIR - raw TRDP telegrams on the
ground (issue 31), on a real PostgreSQL 15 and a real mosquitto:

- a real `railmon run` with a TRDP bus bound to loopback (the XML of
  tests/trdp/all-types.xml: its telegrams decoded into samples) gets PD
  telegrams of every data set with topology counters, one with a bad
  header FCS (recorded raw, refused), MD notifications over UDP and over
  TCP (with their session ids), from trdp_pub.py; its log goes through
  mosquitto to `railmon recv --db --log`;
- every telegram of the vehicle's `export --format jsonl` is in
  trdp_telegrams once, each field equal; no telegram became another kind
  of row (the events table holds the log's events, no more);
- the Batches as mosquitto carried them, decoded by protoc's Python
  code (not railmon's decoder), hold the same telegrams;
- `export --db` gives the vehicle export's records (telegrams, samples
  by their channel names, events), `summary --db` answers as `summary`
  of the vehicle log, the dashboard
  (`serve --db`) shows the log's events and a TRDP channel's series, the ground
  log (recv --log) exports as the vehicle log does, and recv says how
  many telegrams it stored;
- a receiver restarted, sent every Batch again: duplicates to the
  database, every telegram still once;
- recv's text output (no database) of the same Batches: the vehicle
  export's lines;
- the TRDP bus's row of the health table (migration 0013): its telegrams,
  refused headers (the bad FCS among them), sequence gaps, byte ring drops
  and refused socket options as its newest Health entry in the Batches;
- the telegrams in the Batch's own transaction: a role that may not
  write trdp_telegrams gets each Batch with telegrams refused whole.

Every server, broker and railmon started here is stopped on every exit
path (and dies with this script).
"""
import csv
import io
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request

RAILMON, PB2_DIR, SRC = sys.argv[1:4]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
sys.path.insert(0, os.path.join(SRC, "tests", "trdp"))
import trdp_dataset  # noqa: E402
import trdp_pub  # noqa: E402
import paho.mqtt.client as mqtt  # noqa: E402
from railmon_test import free_port_udp_tcp, start_peer, stop_peer, wait_for  # noqa: E402
from mqtt_peers import Recv, check, ground_peers, publish  # noqa: E402

VEHICLE = "trdp31"
TOPIC = "railmon/%s/data" % VEHICLE
DATA = []
ROUNDS = 30  # PD telegrams of each data set


def run(args, rc=0):
    r = subprocess.run([RAILMON] + args, capture_output=True, text=True, timeout=120)
    check(r.returncode == rc, "railmon " + " ".join(args) + " exited %d" % r.returncode, r.stderr[-3000:])
    return r.stdout


def jsonl(args):
    return [json.loads(x) for x in run(["export", "--format", "jsonl"] + args).splitlines()]


class Capture:
    """Every payload published on the vehicle's data topic, as the broker
    carried it (subscribed before the vehicle starts)."""

    def __init__(self, port):
        self.got = []
        self.c = mqtt.Client(client_id="trdp-capture-%d" % os.getpid(), clean_session=True)
        self.c.on_message = lambda c, u, m: self.got.append(bytes(m.payload))
        subscribed = threading.Event()
        self.c.on_subscribe = lambda *a: subscribed.set()
        self.c.connect("127.0.0.1", port, 20)
        self.c.loop_start()
        self.c.subscribe(TOPIC, qos=1)
        check(subscribed.wait(20), "capture subscribed")

    def stop(self):
        self.c.loop_stop()
        self.c.disconnect()


def cut_us(rec):
    """A record as the database keeps it: its time to the microsecond."""
    rec = dict(rec)
    rec["time_ns"] = rec["time_ns"] // 1000 * 1000
    head, _, frac = rec["time"].rstrip("Z").partition(".")
    rec["time"] = "%s.%s000Z" % (head, (frac + "000000")[:6]) if frac else rec["time"]
    return rec


def by_key(recs):
    return sorted(recs, key=lambda r: (r["time_ns"], r["seq"]))


def gaps(ts):
    """summary's gaps of a channel's sample times in time order: an
    interval longer than 5 times the shortest positive one before it, from
    the second interval on (report/summary.c take(), written again)."""
    n, shortest = 0, None
    for i in range(1, len(ts)):
        dt = ts[i] - ts[i - 1]
        n += i > 1 and shortest is not None and dt > 5 * shortest
        if dt > 0 and (shortest is None or dt < shortest):
            shortest = dt
    return n


def send_telegrams(pd_port, md_port, xml, log):
    """PD of every data set (topology counters changing), a bad FCS, MD
    over UDP and TCP; returns how many telegrams the vehicle's log holds
    once it holds every one sent after the first ping it logged."""
    cfg = trdp_dataset.Config(xml)
    rng = random.Random(31)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    seq = [0]

    def pd(comid, payload, **kw):
        s.sendto(trdp_pub.pd_header(seq[0], comid, len(payload), **kw) + trdp_pub.pad4(payload, b"\xa5"),
                 ("127.0.0.1", pd_port))
        seq[0] += 1

    def logged(but_pings=False):
        """The telegrams in the vehicle log (none before its first
        segment); but_pings: not counting the pings (ComId 106)."""
        had_log = any(f.endswith(".seg") for f in os.listdir(log)) if os.path.isdir(log) else False
        r = subprocess.run([RAILMON, "export", "--data", log, "--kind", "trdp", "--format", "jsonl"],
                           capture_output=True, text=True, timeout=60)
        # a log being written reads to its last whole record (CI once
        # had export exit 1 here: storage/reader.c stor_reader_tail)
        check(r.returncode == 0 or not had_log, "export of the log being written", r.returncode, r.stderr[-2000:])
        if r.returncode:
            return 0
        return sum(1 for x in r.stdout.splitlines() if not but_pings or json.loads(x)["com_id"] != 106)

    # pings (ComId 106, no data set) until one is logged: then the socket
    # is bound (those sent before are nobody's)
    wait_for("railmon run to log a telegram", lambda: pd(106, b"") or logged() > 0, 60, 0.2)
    sent = 0
    for k in range(ROUNDS):
        for comid in sorted(cfg.telegrams):
            payload, _ = cfg.encode(comid, rng)
            pd(comid, payload, etb=k // 10, optrn=0x10000 + k // 15)
            sent += 1
        # in bursts the socket's buffer holds at any load (a datagram
        # costs the kernel over 1 KB of it): loopback drops none then
        if k % 5 == 4:
            wait_for("%d telegrams logged" % sent, lambda: logged(True) >= sent, 60, 0.05)
    pd(100, b"\x01\x02\x03\x04", bad_fcs=True)
    sent += 1
    for k in range(3):
        body = bytes(range(k, k + 24))
        msg = trdp_pub.md_header(k, 2000 + k, len(body), session=bytes([0xc0 + k]) * 16) + trdp_pub.pad4(body)
        s.sendto(msg, ("127.0.0.1", md_port))
        t = socket.create_connection(("127.0.0.1", md_port), 10)
        t.sendall(trdp_pub.md_header(100 + k, 3000 + k, len(body), session=bytes([0xd0 + k]) * 16)
                  + trdp_pub.pad4(body))
        t.close()
        sent += 2
    s.close()
    wait_for("the %d telegrams in the vehicle log" % sent, lambda: logged(True) >= sent, 60, 0.2)
    if logged(True) != sent:
        recs = [x for x in jsonl(["--data", log, "--kind", "trdp"]) if x["com_id"] != 106]
        by = {}
        for x in recs:
            by[(x["flags"], x["com_id"])] = by.get((x["flags"], x["com_id"]), 0) + 1
        check(False, "each telegram logged once", len(recs), sent, sorted(by.items()))
    # (a CI run once took a failed export's 0 for the count; logged()
    # now fails the test if export of the log being written fails)
    counted = []
    wait_for("the vehicle log's telegrams counted", lambda: counted.append(logged()) or counted[-1] > 0, 60, 0.2)
    return counted[-1]


def vehicle_log(tmp, broker):
    """A real `railmon run` with a TRDP bus and an uplink; returns its
    data directory once it has stopped cleanly (everything forwarded)."""
    xml = os.path.join(tmp, "consist.xml")
    shutil.copy(os.path.join(SRC, "tests", "trdp", "all-types.xml"), xml)
    pd_port, md_port = free_port_udp_tcp(), free_port_udp_tcp()
    board = os.path.join(tmp, "board.ini")
    with open(board, "w") as f:
        f.write("[board]\nvehicle = %s\nrt_priority = 0\nbatch_ms = 100\n"
                "[storage]\nsync_window_ms = 50\nsegment_size = 4M\n"
                "[uplink]\nbroker = mqtt://127.0.0.1:%d\n"
                "[trdp ecn]\nbind = 127.0.0.1\npd_port = %d\nmd_port = %d\nxml = %s\n"
                % (VEHICLE, broker.port, pd_port, md_port, xml))
    data = os.path.join(tmp, "vehicle")
    err = open(os.path.join(tmp, "run.err"), "w")
    p = start_peer([RAILMON, "run", "--board", board, "--data", data], stdout=subprocess.DEVNULL, stderr=err)
    try:
        sent = send_telegrams(pd_port, md_port, xml, data)
    finally:
        rc = stop_peer(p)
    check(rc == 0, "railmon run stopped cleanly", open(os.path.join(tmp, "run.err")).read()[-3000:])
    return data, sent


def stored(pg):
    return int(pg.psql("SELECT coalesce(sum(count), 0) FROM batches"))


DB_COLS = ("seq, (extract(epoch FROM t) * 1000000)::bigint, bus, host(src_ip), src_port, host(dst_ip), dst_port, "
           "com_id, seq_counter, etb_topo, op_trn_topo, msg_type, flags, encode(payload, 'hex'), "
           "coalesce(encode(session_id, 'hex'), '')")


def db_telegrams(pg):
    """trdp_telegrams as tuples in the vehicle export's terms."""
    out = []
    for r in pg.rows("SELECT %s FROM trdp_telegrams ORDER BY seq" % DB_COLS):
        seq, t_us, bus, src, sport, dst, dport, comid, counter, etb, optrn, mtype, flags, payload, sid = r
        out.append((int(seq), int(t_us) * 1000, int(bus), src, int(sport), dst, int(dport), int(comid),
                    int(counter), int(etb), int(optrn), int(mtype), int(flags), payload, sid))
    return out


def log_telegrams(recs):
    """The vehicle export's telegrams as db_telegrams() gives them: msg_type
    and flags from the letters and flags text, the rest as they are."""
    out = []
    for x in recs:
        if x["kind"] != "trdp":
            continue
        words = x["flags"].split("|")
        # "??": a header refused by its FCS, whose fields are 0 (railmon.proto)
        mtype = 0 if words[0] == "??" else ord(words[0][0]) << 8 | ord(words[0][1])
        md = 1 if mtype >> 8 == ord("M") else 0
        flags = md | (2 if "TCP" in words else 0) | x["result"] << 8
        out.append((x["seq"], x["time_ns"] // 1000 * 1000, x["bus"], x["src"], x["src_port"], x["dst"],
                    x["dst_port"], x["com_id"], x["seq_counter"], x["etb_topo"], x["op_trn_topo"], mtype, flags,
                    x["data"], x.get("session_id", "")))
    return sorted(out)


def pb2_telegrams(payloads):
    """The telegrams of the Batches as mosquitto carried them, decoded by
    protoc's Python code: (seq, time us floor, com_id, counter, etb, optrn,
    msg_type, flags, bytes hex, session hex) once per seq."""
    out = {}
    for raw in payloads:
        b = railmon_pb2.Batch()
        b.ParseFromString(raw)
        tr = b.trdp
        before = (len(b.can.t_delta_ns) + len(b.samples.t_delta_ns) + len(b.events.t_delta_ns)
                  + len(b.texts.t_delta_ns))
        t, off, soff = b.t0_ns, 0, 0
        for i in range(len(tr.com_id)):
            t += tr.t_delta_ns[i]
            data = tr.data[off:off + tr.len[i]]
            off += tr.len[i]
            sid = ""
            if tr.flags[i] & 1:
                sid = tr.session_id[soff:soff + 16].hex()
                soff += 16
            out[b.first_seq + before + i] = (t // 1000 * 1000, tr.bus[i], tr.com_id[i], tr.seq[i], tr.etb_topo[i],
                                             tr.op_trn_topo[i], tr.msg_type[i], tr.flags[i], data.hex(), sid,
                                             tr.ports[i])
        check(off == len(tr.data) and soff == len(tr.session_id), "a Batch's telegram bytes add up")
    return out


def test_stored(pg, data, sent, capture):
    log = jsonl(["--data", data])
    total = len(log)
    try:
        wait_for("every record in the database", lambda: stored(pg) == total, 60, 0.2)
    except AssertionError:
        check(False, "the database holds %d of the log's %d records" % (stored(pg), total))
    want = log_telegrams(log)
    check(len(want) == sent, "the vehicle export has every telegram", len(want), sent)
    kinds = {(x["flags"], x["result"]) for x in log if x["kind"] == "trdp"}
    check({("Pd", 0), ("??|bad-fcs", 2), ("Mn", 0), ("Mn|TCP", 0)} <= kinds, "every way a telegram came", kinds)
    # not stored as something else: the events table holds the log's
    # events and nothing more (a telegram written as an event row would
    # add one with the telegram's address for a code)
    events = sum(1 for x in log if x["kind"] == "event")
    check(int(pg.psql("SELECT count(*) FROM events")) == events, "the events table holds the log's events only",
          pg.psql("SELECT count(*) FROM events"), events)
    got = db_telegrams(pg)
    check(len(got) == len(want), "trdp_telegrams holds each telegram", len(got), len(want))
    check(len({g[0] for g in got}) == len(got), "no telegram twice")
    for a, b in zip(want, got):
        check(a == b, "telegram seq %d: every field" % a[0], a, b)
    print("trdp_telegrams: %d telegrams (PD, a bad FCS, MD over UDP and TCP), once each, every field equal" % len(got))
    # protoc's decoder: the same telegrams in the Batches mosquitto carried
    pb = pb2_telegrams(capture.got)
    check(len(pb) == len(got), "the Batches on the broker hold as many telegrams", len(pb), len(got))
    for g in got:
        p = pb[g[0]]
        check(p == (g[1], g[2], g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[4] << 16 | g[6]),
              "seq %d as protobuf decodes it" % g[0], p, g)
    print("protobuf's own decoder: %d Batches, the same %d telegrams" % (len(capture.got), len(pb)))
    return log


def test_health(pg, capture):
    """The health row of the TRDP bus (migration 0013's columns) against
    its newest Health entry in the Batches mosquitto carried, as protoc's
    Python code decodes them; the bad FCS sent is among the refused."""
    def newest():
        best = None
        for raw in list(capture.got):
            b = railmon_pb2.Batch()
            b.ParseFromString(raw)
            for h in b.health:
                if h.name == "ecn" and (best is None or b.t0_ns >= best[0]):
                    best = (b.t0_ns, h)
        if best is None:
            return None, None
        h = best[1]
        return h, (h.trdp_telegrams, h.trdp_bad_short + h.trdp_bad_fcs + h.trdp_bad_version + h.trdp_bad_type
                   + h.trdp_bad_too_long + h.trdp_bad_truncated, h.trdp_seq_gaps, h.trdp_byte_ring_drops,
                   h.trdp_opts_refused)

    def row():
        return pg.rows("SELECT kind, trdp_telegrams, trdp_refused, trdp_seq_gaps, trdp_byte_ring_drops,"
                       " trdp_opts_refused FROM health h JOIN vehicles v USING (vehicle_id)"
                       " WHERE v.name = '%s' AND h.name = 'ecn'" % VEHICLE)

    # the vehicle has stopped, every Batch is at the broker: wait until the
    # capture and the receiver both have the last one
    try:
        wait_for("the health row of the newest entry",
                 lambda: len(row()) == 1 and tuple(int(x) for x in row()[0][1:]) == newest()[1], 60, 0.2)
    except AssertionError:
        pass  # said by the checks below, with the values
    h, want = newest()
    check(h is not None, "the Batches carry the TRDP bus's health")
    rows = row()
    check(len(rows) == 1 and rows[0][0] == "trdp", "one health row of the TRDP bus", rows)
    got = tuple(int(x) for x in rows[0][1:])
    check(got == want, "the health row's TRDP counters are its newest entry's", got, want)
    check(h.trdp_bad_fcs >= 1 and got[0] > got[1] >= 1, "telegrams received, the bad FCS refused", got)
    # the other parts of the vehicle have none of them
    other = pg.psql("SELECT count(*) FROM health WHERE kind <> 'trdp' AND (trdp_telegrams, trdp_refused,"
                    " trdp_seq_gaps, trdp_byte_ring_drops, trdp_opts_refused) <> (0, 0, 0, 0, 0)")
    check(int(other) == 0, "no TRDP counters in the rows of other parts", other)
    print("health: the TRDP bus's row holds %d telegrams, %d refused, %d gaps, %d byte ring drops, options %d,"
          " as its newest Health entry" % got)


def test_export(pg, log):
    db = ["--db", pg.url, "--vehicle", VEHICLE]
    got = by_key(jsonl(db))
    want = by_key([cut_us(x) for x in log])
    check(len(got) == len(want), "export --db: as many records as the vehicle export", len(got), len(want))
    for a, b in zip(want, got):
        check(a == b, "export --db: record seq %d" % a["seq"], a, b)
    names = {x["name"] for x in got if x["kind"] == "sample"}
    check(len(names) > 20 and all("." in n for n in names), "the decoded samples by their channel names",
          sorted(names)[:10])
    tel = [x for x in got if x["kind"] == "trdp"]
    only = jsonl(db + ["--kind", "trdp"])
    check(by_key(only) == tel and len(tel) > 100, "export --db --kind trdp", len(only), len(tel))
    print("export --db: %d records (%d telegrams, %d channels) as the vehicle's export, line by line"
          % (len(got), len(tel), len(names)))
    # CSV: the telegram in the common columns (its type and flags, its bytes)
    def rows(args):
        out = []
        for x in csv.DictReader(io.StringIO(run(["export", "--format", "csv", "--kind", "trdp"] + args))):
            x = cut_us(dict(x, time_ns=int(x["time_ns"])))
            out.append(x)
        return by_key([dict(x, seq=int(x["seq"])) for x in out])
    a, b = rows(["--data", DATA[0]]), rows(db)
    check(a == b and len(a) == len(tel), "export --db --format csv --kind trdp", len(a), len(b),
          next((x, y) for x, y in zip(a, b) if x != y) if a != b and len(a) == len(b) else None)
    print("export --db --format csv: %d telegrams as the vehicle's" % len(b))
    r = subprocess.run([RAILMON, "summary"] + db, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and any(n in r.stdout for n in names), "summary --db with telegrams stored",
          r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    # the vehicle log's summary, but for the columns of times (the
    # database's are to the us: a rounding to the ms may differ) and the
    # gaps, which are judged on those times: an interval within a us of 5
    # times the shortest one is a gap at one resolution and not at the
    # other (CI: Var.i32[1], 11 gaps in the database, 10 in the log)
    def cols(text):
        return [x.split()[:4] + x.split()[6:9] + x.split()[11:] for x in text.splitlines()]
    want = run(["summary", "--data", DATA[0]])
    check(cols(r.stdout) == cols(want) and len(want.splitlines()) > 200, "summary --db as summary of the log",
          len(r.stdout.splitlines()), len(want.splitlines()),
          [(x, y) for x, y in zip(r.stdout.splitlines(), want.splitlines()) if cols(x) != cols(y)][:5])
    # the gaps: each summary's as this script counts them in the log's
    # records (ns) and in the same times cut to the us (the database's)
    times = {}
    for x in by_key(log):
        if x["kind"] == "sample":
            times.setdefault(x["channel"], []).append(x["time_ns"])
    for got, mine in ((want, lambda t: t), (r.stdout, lambda t: t // 1000)):
        for line in got.splitlines()[1:]:
            f = line.split()
            ts = [mine(t) for t in times[int(f[0])]]
            check(int(f[9]) == gaps(ts), "summary%s: the gaps of %s" % (" --db" if got is r.stdout else "", f[1]),
                  line, gaps(ts), [b - a for a, b in zip(ts, ts[1:])])
    differ = sum(gaps(t) != gaps([x // 1000 for x in t]) for t in times.values())
    print("summary --db: %d channels as summary of the vehicle log, the gaps of both as counted here (at the us "
          "and the ns: %d channels differ)" % (len(want.splitlines()) - 1, differ))


def test_dashboard(pg, log):
    """railmon serve over the database holding telegrams: the vehicle's
    events are the log's (no telegram among them), a decoded TRDP channel
    has its series."""
    srv = start_peer([RAILMON, "serve", "--db", pg.url, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        check("port " in line, "railmon serve started", line)
        base = "http://127.0.0.1:%d" % int(line.split("port ")[1].split()[0])

        def get(path):
            with urllib.request.urlopen(base + path, timeout=30) as r:
                return json.loads(r.read())
        t = [x["time_ns"] / 1e9 for x in log]
        span = "from=%.3f&to=%.3f" % (min(t) - 1, max(t) + 1)
        ev = get("/api/events?vehicle=%s&%s" % (VEHICLE, span))["events"]
        want = sorted(x["event"] for x in log if x["kind"] == "event")
        check(sorted(e["name"] for e in ev) == want, "the dashboard's events are the log's", ev[:5], want[:5])
        name = next(x["name"] for x in log if x["kind"] == "sample")
        n = sum(1 for x in log if x.get("name") == name)
        series = get("/api/series?vehicle=%s&channel=%s&%s&px=1000" % (VEHICLE, urllib.parse.quote(name), span))
        check(series["rows"] == n, "the dashboard's series of " + name, series.get("rows"), n)
        print("dashboard: %d events as the log's, %s's %d samples" % (len(ev), name, n))
    finally:
        check(stop_peer(srv) == 0, "railmon serve exits 0", srv.stderr.read()[-2000:])


def test_ground_log(logdir, log):
    ground = jsonl(["--data", os.path.join(logdir, VEHICLE)])
    check(ground == log, "the ground log exports as the vehicle log, line by line", len(ground), len(log))
    print("ground log: %d records as the vehicle log's" % len(ground))


def unique_batches(capture):
    """The Batches with records the broker carried, each once (a re-send
    from the vehicle's backlog left out), and their records."""
    ranges, batches = {}, []
    for raw in capture.got:
        b = railmon_pb2.Batch()
        b.ParseFromString(raw)
        n = (len(b.can.t_delta_ns) + len(b.samples.t_delta_ns) + len(b.events.t_delta_ns)
             + len(b.texts.t_delta_ns) + len(b.trdp.com_id))
        if n and b.first_seq not in ranges:
            ranges[b.first_seq] = n
            batches.append(raw)
    return batches, sum(ranges.values())


def test_resend(pg, broker, capture, total_tel):
    """A restarted receiver (a session of its own, its memory gone) gets
    every Batch again: the database's ledger says duplicate."""
    batches, records = unique_batches(capture)
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id", "g31b",
                       "--repair-after", "0", "--count", str(records)])
    r.wait_subscribed()
    publish(broker.port, [(TOPIC, p) for p in batches])
    rc, err = r.finish(120)
    check(rc == 0, "the restarted receiver", err)
    m = re.search(r"database: (\d+) Batches committed \(.*?(\d+) TRDP telegrams\), (\d+) duplicates", err)
    check(m and m.group(1) == "0" and m.group(2) == "0" and int(m.group(3)) > 0,
          "every Batch a duplicate, no telegram stored again", err)
    got = db_telegrams(pg)
    check(len(got) == total_tel and len({g[0] for g in got}) == total_tel, "each telegram still once",
          len(got), total_tel)
    print("receiver restarted, %d Batches sent again: %s duplicates, %d telegrams once each"
          % (len(batches), m.group(3), total_tel))


def test_atomic(pg, broker, capture):
    """The telegrams in the Batch's transaction: the same Batches as
    another vehicle, to a receiver whose role may not write trdp_telegrams
    (a permanent error, 42501): each Batch with telegrams refused whole
    (kept in refused; neither its ledger row nor any sample or event of
    it stored), the others committed."""
    pg.psql("CREATE ROLE ingest LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO ingest; "
            "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ingest; REVOKE INSERT ON trdp_telegrams FROM ingest")
    batches, _ = unique_batches(capture)
    other, with_tel, without = VEHICLE + "x", [], []
    msgs = []
    for raw in batches:
        b = railmon_pb2.Batch()
        b.ParseFromString(raw)
        b.vehicle = other
        (with_tel if len(b.trdp.com_id) else without).append(b.first_seq)
        msgs.append(("railmon/%s/data" % other, b.SerializeToString()))
    check(with_tel and without, "Batches with telegrams and without", with_tel, without)
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url.replace("user=railmon",
                       "user=ingest"), "--client-id", "g31x", "--repair-after", "0"])
    r.wait_subscribed()
    publish(broker.port, msgs)
    vid = "(SELECT vehicle_id FROM vehicles WHERE name = '%s')" % other

    def done():
        return int(pg.psql("SELECT count(*) FROM refused WHERE vehicle = '%s'" % other)) == len(with_tel) and \
            int(pg.psql("SELECT count(*) FROM batches WHERE vehicle_id = %s" % vid)) == len(without)
    try:
        wait_for("the Batches refused or committed", done, 60, 0.2)
    finally:
        rc, err = r.terminate()
    refused = pg.rows("SELECT first_seq, sqlstate FROM refused WHERE vehicle = '%s' ORDER BY first_seq" % other)
    check(refused == [[str(f), "42501"] for f in sorted(with_tel)], "each Batch with telegrams refused", refused,
          with_tel, err[-2000:])
    check(rc == 0 and "permission denied" in err, "said in the server's words", err[-2000:])
    committed = sorted(int(x[0]) for x in pg.rows("SELECT first_seq FROM batches WHERE vehicle_id = %s" % vid))
    check(committed == sorted(without), "the Batches without telegrams committed", committed, without)
    # nothing of a refused Batch: its records' seqs are none of the rows'
    stored = {int(x[0]) for t in ("samples", "events", "texts", "can_frames", "trdp_telegrams")
              for x in pg.rows("SELECT seq FROM %s WHERE vehicle_id = %s" % (t, vid))}
    for raw in batches:
        b = railmon_pb2.Batch()
        b.ParseFromString(raw)
        n = (len(b.can.t_delta_ns) + len(b.samples.t_delta_ns) + len(b.events.t_delta_ns)
             + len(b.texts.t_delta_ns) + len(b.trdp.com_id))
        seqs = set(range(b.first_seq, b.first_seq + n))
        check(not (seqs & stored) if b.first_seq in with_tel else seqs <= stored,
              "Batch %d: all its rows or none" % b.first_seq, len(seqs & stored), n)
    print("a role that may not write trdp_telegrams: %d Batches with telegrams refused whole (nothing of them "
          "stored), %d without committed" % (len(with_tel), len(without)))


def test_text(broker, capture, tmp, log):
    """recv's text output (no database): every record of the Batches sent
    again, telegrams too, as the vehicle's export writes them (its time
    order holds telegrams' bytes until their turn)."""
    batches, records = unique_batches(capture)
    out = os.path.join(tmp, "recv.jsonl")
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--client-id", "g31t", "--format", "jsonl",
                       "--output", out, "--count", str(records)])
    r.wait_subscribed()
    publish(broker.port, [(TOPIC, p) for p in batches])
    rc, err = r.finish(120)
    check(rc == 0, "recv --format jsonl", err)
    with open(out) as f:
        got = [json.loads(x) for x in f]
    key = lambda x: (x["seq"], x["kind"])  # noqa: E731
    check(sorted(got, key=key) == sorted(log, key=key), "recv's JSON lines are the vehicle export's", len(got),
          len(log))
    print("recv --format jsonl: %d records (%d telegrams) as the vehicle export's" %
          (len(got), sum(1 for x in got if x["kind"] == "trdp")))


def main():
    with ground_peers("ground-trdp-") as (pg, broker, tmp):
        run(["db", "init", "--db", pg.url])
        logdir = os.path.join(tmp, "ground")
        capture = Capture(broker.port)
        r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--log", logdir,
                           "--client-id", "g31"])
        r.wait_subscribed()
        data, sent = vehicle_log(tmp, broker)
        DATA.append(data)
        log = test_stored(pg, data, sent, capture)
        test_health(pg, capture)
        test_export(pg, log)
        test_dashboard(pg, log)
        rc, err = r.terminate()
        m = re.search(r"database: \d+ Batches committed \(.*?(\d+) TRDP telegrams\)", err)
        check(rc == 0 and m and int(m.group(1)) == sent, "recv says the telegrams it stored", rc, err[-3000:])
        test_ground_log(logdir, log)
        test_resend(pg, broker, capture, sent)
        test_text(broker, capture, tmp, log)
        test_atomic(pg, broker, capture)
        capture.stop()


main()
