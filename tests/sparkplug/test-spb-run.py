#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-run.py RAILMON NODE_MODULES SRC - `railmon run` with a
[sparkplug] section (the demo's CAN trace and DBC as the bus "vehicle"),
mosquitto as the broker and spb-host.js, a Sparkplug host application
in Node.js on Eclipse Tahu's npm sparkplug-payload that checks the
session rules itself (its verdict: no violation): the DBIRTH names the
board's channels with their units, and the values the host receives are
those `railmon export` prints from the same log, each sample once (a
clean stop sends what the log holds first)."""
import collections
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
from spb_host import Broker, SpbHost, check, count, failures, start_host, stop  # noqa: E402

RAILMON, NODE_MODULES, SRC = sys.argv[1:4]
# "reduce": the bus has `uplink = change`, so DDATA carries a channel's
# sample only when its value or quality differs from the last sent (the
# first after the births always): checked against that rule applied here
# to export's samples
REDUCE = sys.argv[4:5] == ["reduce"]


with tempfile.TemporaryDirectory(prefix="spb-run-") as tmp:
    procs = []
    broker = Broker(tmp, procs)
    port = broker.port
    demo = os.path.join(SRC, "cli", "demo")
    board = os.path.join(tmp, "b.ini")
    with open(board, "w") as fh:
        fh.write("[board]\nvehicle = T-8\nrt_priority = 0\nbatch_ms = 200\nstat_socket = @railmon-spbrun-%d\n"
                 "[storage]\ndir = data\n"
                 "segment_size = 4M\n[can vehicle]\ndriver = trace\nfile = %s/train.log\ndbc = %s/train.dbc\n"
                 "speed = 1\nloop = true\n%s[sparkplug]\nbroker = mqtt://127.0.0.1:%d\ngroup_id = Fleet\n"
                 "[uplink]\nbroker = mqtt://127.0.0.1:%d\n"  # railmon's own Batches, for their bytes
                 % (os.getpid(), demo, demo, "uplink = change\n" if REDUCE else "", port, port))
    try:
        broker.start()
        host = SpbHost(port, procs, NODE_MODULES, SRC, tmp)
        sub = start_host(port, procs, ("railmon/T-8/data",))  # railmon's own Batches, for their bytes
        run = subprocess.Popen([RAILMON, "run", "--board", board, "--duration", "8"], cwd=tmp,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # `railmon stat` of the running daemon: the publisher's line in
        # the table, its counters in the JSON
        sock = "@railmon-spbrun-%d" % os.getpid()
        table, end = "", time.monotonic() + 60
        while "; sparkplug connected, " not in table or " 0 DDATA" in table:
            if run.poll() is not None or time.monotonic() > end:
                break
            table = subprocess.run([RAILMON, "stat", "--socket", sock], capture_output=True, text=True).stdout
            time.sleep(0.1)  # polling the daemon's state, not a wait for a peer
        daemon = [line for line in table.splitlines() if line.startswith("daemon:")]
        print("stat:", daemon)
        check(daemon and "; sparkplug connected, " in daemon[0] and " 0 DDATA" not in daemon[0],
              "railmon stat's daemon line says the publisher: %r" % daemon)
        js = subprocess.run([RAILMON, "stat", "--socket", sock, "--json"], capture_output=True, text=True).stdout
        dj = [json.loads(line) for line in js.splitlines() if '"name":"daemon"' in line]
        check(dj and dj[0].get("sparkplug") == "connected" and dj[0].get("spb_ddata", 0) > 0 and
              dj[0].get("spb_bdseq_damage") == 0 and dj[0].get("spb_cursor_damage") == 0 and
              dj[0].get("spb_nulled") == 0,
              "railmon stat --json's daemon: %r" % dj)
        out, err = run.communicate(timeout=120)
        run.stderr = err
        print(run.stderr, end="")
        check(run.returncode == 0, "railmon run exit %d" % run.returncode)
        host.wait(lambda ls: count(ls, "NDEATH") >= 1, "the NDEATH")
        verdict = host.finish()
    finally:
        stop(procs)
    view = host.view()
    export = subprocess.run([RAILMON, "export", "-d", os.path.join(tmp, "data"), "-k", "sample", "-f", "jsonl",
                             "--order", "seq", "-q"], check=True, capture_output=True, text=True).stdout
    samples = [json.loads(line) for line in export.splitlines()]
    export_ev = subprocess.run([RAILMON, "export", "-d", os.path.join(tmp, "data"), "-k", "event", "-f", "jsonl",
                                "--order", "seq", "-q"], check=True, capture_output=True, text=True).stdout
    events = [json.loads(line) for line in export_ev.splitlines()]

# the session rules: the host's
for rule, n in verdict["violations"].items():
    check(n == 0, "the host's rule %s: %d violations" % (rule, n))
kinds = collections.Counter(v["kind"] for v in view)
print("host saw %r" % dict(kinds))
check(kinds["NBIRTH"] == 1 and kinds["DBIRTH"] == 1 and kinds["NDEATH"] == 1 and kinds["DDATA"] > 0,
      "messages %r" % dict(kinds))
aliases, host, host_events = {}, [], []


def as_number(v):
    """A host's value as export's number: a Boolean 0 or 1, an Int64 (a
    Long, which the host writes as a string) its integer."""
    return float(v) if isinstance(v, (bool, str)) else v



ddata_bytes = 0
for v in view:
    kind, topic = v["kind"], v["topic"]
    if kind in ("NBIRTH", "NDEATH"):
        continue
    if kind == "NDATA":  # the node's Events metric
        check(topic == "spBv1.0/Fleet/NDATA/T-8", "NDATA topic %s" % topic)
        for m in v["metrics"]:
            check(m["alias"] == 2 + 2**32, "NDATA alias %r is not Events'" % m["alias"])
            host_events.append((m["timestamp"], m["value"].split(" ")[0]))
        continue
    check(topic.endswith("/T-8/vehicle"), "device topic %s" % topic)
    if kind == "DBIRTH":
        aliases = {m["alias"]: m for m in v["metrics"]}
        print("host's DBIRTH vehicle: %d metrics, first %r" % (len(aliases), [
            (m["name"], m["type"], m["properties"].get("engUnit", {}).get("value")) for m in v["metrics"][:4]]))
        continue
    ddata_bytes += v["bytes"]
    for m in v["metrics"]:
        # DDATA in the datatype its DBIRTH declared
        check(m["type"] == aliases.get(m["alias"], {}).get("type"),
              "DDATA %s type %r, DBIRTH's %r" % (m["name"], m["type"], aliases.get(m["alias"], {}).get("type")))
        host.append((m["name"], m["timestamp"], as_number(m["value"])))
        # live records (seconds old): current values
        check(not m["historical"], "DDATA %s historical" % m["name"])
# the run's summary says what the host saw: its DDATA, nothing unconfirmed
said = [line for line in run.stderr.splitlines() if line.startswith("railmon: sparkplug to mqtt://127.0.0.1:%d: " % port)]
check(said, "no sparkplug line in run's stderr")
if said:
    check(", %d DDATA (" % kinds["DDATA"] in said[-1] and " 0 records not yet confirmed by the broker" in said[-1],
          "run's last sparkplug line %r, the host saw %d DDATA" % (said[-1], kinds["DDATA"]))
# the Events metric: every event of the log, its name and time as export's
want_ev = [(e["time_ns"] // 1000000, e["event"]) for e in events]
print("events: host %r, export %r" % (host_events[:6], want_ev[:6]))
check(host_events == want_ev, "host's Events %r, export's %r" % (host_events[:5], want_ev[:5]))
# value tables as DBIRTH properties: the demo DBC's VAL_ lines
vt = {m["name"].split(".")[-1]: m["properties"].get("railmonValueTable", {}).get("value")
      for m in aliases.values()}
print("DBIRTH railmonValueTable: Direction %r, Car1Door1 %r" % (vt.get("Direction"), vt.get("Car1Door1")))
for sig, want_vt in (("Direction", {"0 standstill", "1 forward", "2 reverse"}),
                     ("Car1Door1", {"3 fault", "2 locked", "1 open", "0 closed"})):
    check(vt.get(sig) is not None and set(vt[sig].split("\n")) == want_vt,
          "DBIRTH %s railmonValueTable %r" % (sig, vt.get(sig)))
check(sum(v is not None for v in vt.values()) >= 2, "value tables in the DBIRTH: %r" % vt)
# datatypes from the dictionary: decimals 0 an integer (a value table or
# not), range [0, 1] too a Boolean, a factor of 0.01 a Double
types = {m["name"].split(".")[-1]: m["type"] for m in aliases.values()}
print("DBIRTH datatypes: %r; first %r" % (dict(collections.Counter(types.values())), sorted(types.items())[:12]))
for sig, want_t in (("Car1Door1", "Int32"), ("Direction", "Int32"), ("ObstacleCount", "Int32"),
                    ("TripDistance", "Int32"), ("MotorTemperature", "Int32"), ("SpeedValid", "Boolean"),
                    ("EmergencyBrake", "Boolean"), ("DoorsReleased", "Boolean"), ("Speed", "Double"),
                    ("Odometer", "Double"), ("BrakePipePressure", "Double")):
    check(types.get(sig) == want_t, "DBIRTH %s datatype %r, want %r" % (sig, types.get(sig), want_t))
names = {s["name"]: s["unit"] for s in samples}
for name, unit in names.items():
    m = [x for x in aliases.values() if x["name"] == name]
    check(len(m) == 1 and m[0]["properties"].get("engUnit", {}).get("value") == (unit or None),
          "DBIRTH %s (unit %r): %r" % (name, unit, m))
if REDUCE:
    last, kept = {}, []
    for x in samples:  # seq order
        key = (x["value"], x.get("quality"))
        if last.get(x["name"]) != key:
            kept.append(x)
            last[x["name"]] = key
    print("uplink = change: %d of %d samples go" % (len(kept), len(samples)))
    check(len(kept) < len(samples), "the policy reduced nothing: %d samples" % len(samples))
    samples = kept
want = sorted((s["name"], s["time_ns"] // 1000000, s["value"]) for s in samples)
host.sort()
check(len(host) == len(want), "host has %d samples, export %d" % (len(host), len(want)))
bad = [(h, w) for h, w in zip(host, want) if h[:2] != w[:2] or abs(h[2] - w[2]) > 1e-9 * max(1.0, abs(w[2]))]
check(not bad, "%d values differ from export, first %r" % (len(bad), bad[:3]))
# railmon's own Batches of the same log on railmon/T-8/data (the uplink,
# policy all: every record, frames too, which Sparkplug does not carry)
batches = [line.split(" ", 1)[1] for line in sub.lines if line.startswith("railmon/T-8/data ")]
batch_bytes = sum(len(h) // 2 for h in batches)
check(batches and batch_bytes > 0, "no railmon Batches on railmon/T-8/data")
print("bytes per sample, same log (%d samples): Sparkplug B DDATA %.1f (%d bytes in %d DDATA); railmon Batches "
      "%.1f (%d bytes in %d Batches, frames included); ratio %.2f"
      % (len(host), ddata_bytes / max(1, len(host)), ddata_bytes, kinds["DDATA"], batch_bytes / max(1, len(host)),
         batch_bytes, len(batches), ddata_bytes / max(1, batch_bytes)))

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: railmon run's Sparkplug node as a Tahu host sees it; values = railmon export's")
