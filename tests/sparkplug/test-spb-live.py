#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-live.py SPB_PUB_DEMO NODE_MODULES SRC - uplink/'s Sparkplug B
publisher against real peers: the mosquitto broker (Debian) and
spb-host.js, a Sparkplug host application in Node.js (npm mqtt, Eclipse
Tahu's sparkplug-payload) that decodes every message and checks the
session rules itself (seq, NDEATH bdSeq = NBIRTH's, bdSeq + 1 a new
connection, every DATA alias declared, nothing before its BIRTH or after
its DEATH, historical in time order, no NBIRTH while its STATE says
offline): its verdict must be no violation.  It sends the Rebirth; a
command Tahu encodes (tahu-encode-cmd.js) goes by mosquitto_pub.
spb-pub-demo.c publishes a log of 5 Batches; here: NBIRTH then a DBIRTH
per device with the metric list, values and times those of the log, a
refused NCMD answered by nothing, Rebirth answered with NBIRTH and
DBIRTHs (same bdSeq), the will (NDEATH) after a kill -9 and an NDEATH
after a clean stop, the restart's bdSeq + 1, and no Batch published twice
(the cursor); with a primary host (the Node host is "scada"), no birth
while its STATE says offline, NDEATH when it goes offline, births again
(new bdSeq) when it is back."""
import os
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
from spb_host import Broker, Lines, SpbHost, check, count, failures, stop  # noqa: E402

DEMO, NODE_MODULES, SRC = sys.argv[1:4]
T0_MS = 1733400000000
BATCHES = 5


with tempfile.TemporaryDirectory(prefix="spb-live-") as tmp:
    procs = []
    try:
        broker = Broker(tmp, procs)
        broker.start()
        port = broker.port
        # the host: the primary host "scada" (STATE online) for the
        # sessions that name one (3 and 4)
        host = SpbHost(port, procs, NODE_MODULES, SRC, tmp, host_id="scada")

        env = dict(os.environ, NODE_PATH=NODE_MODULES)
        subprocess.run(["node", os.path.join(SRC, "tests", "sparkplug", "tahu-encode-cmd.js"), tmp], check=True,
                       env=env, timeout=60)
        state = os.path.join(tmp, "state")
        os.mkdir(state)

        def start(*primary):
            p = subprocess.Popen([DEMO, str(port), state, str(BATCHES)] + list(primary), stdout=subprocess.PIPE,
                                 text=True)
            procs.append(p)
            out = Lines(p)
            out.wait(lambda ls: any(line.startswith("started") for line in ls), "the publisher's connect")
            return p, out

        def ncmd(name):
            subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1",
                            "-t", "spBv1.0/Fleet/NCMD/T-7", "-f", os.path.join(tmp, name)], check=True, timeout=30)

        # session 1: births and the whole log
        pub, out = start()
        host.wait(lambda ls: count(ls, "DDATA") >= 2 * BATCHES, "%d DDATA" % (2 * BATCHES))
        # a command that is not Rebirth: refused, no NBIRTH (the Rebirth
        # after it is answered in order, so its NBIRTH count proves it)
        ncmd("ncmd-other.bin")
        host.send("rebirth T-7")
        host.wait(lambda ls: any(line.startswith("rebirth T-7 answered") for line in ls), "the NBIRTH answering Rebirth")
        print("host: %s (under load; not asserted here, spb-run-session does)"
              % [line for line in host.lines if line.startswith("rebirth T-7 answered")][0])
        host.wait(lambda ls: count(ls, "DBIRTH") >= 4, "the DBIRTHs answering Rebirth")
        check(count(host.lines, "NBIRTH") == 2, "one NBIRTH per Rebirth, none for the other NCMD")
        pub.kill()  # kill -9: the broker sends the will
        pub.wait()
        host.wait(lambda ls: count(ls, "NDEATH") >= 1, "the will (NDEATH) after kill -9")

        # session 2: the restart, then a clean stop
        pub, out = start()
        host.wait(lambda ls: count(ls, "NBIRTH") >= 3 and count(ls, "DBIRTH") >= 6, "the restart's births")
        pub.send_signal(signal.SIGTERM)
        check(pub.wait(timeout=60) == 0, "the clean stop's exit status %r (a sanitizer's report?)" % pub.returncode)
        out.wait(lambda ls: any(line.startswith("stopped") for line in ls), "the publisher's stats")
        host.wait(lambda ls: count(ls, "NDEATH") >= 2, "the clean stop's NDEATH")
        print("\n".join(out.lines))
        stats = dict(zip(*[iter(out.lines[-1].split()[1:])] * 2))
        check(stats.get("ddata") == "0", "restart: no Batch sent again (cursor): %r" % stats)

        # session 3 and 4: a primary host; births only while its STATE
        # (retained, the Node host's) says online
        host.state(False)
        pub, out = start("scada")
        host.state(True)
        host.wait(lambda ls: count(ls, "NBIRTH") >= 4 and count(ls, "DBIRTH") >= 8, "the births after STATE online")
        host.state(False)
        host.wait(lambda ls: count(ls, "NDEATH") >= 3, "the NDEATH after STATE offline")
        host.state(True)
        host.wait(lambda ls: count(ls, "NBIRTH") >= 5 and count(ls, "DBIRTH") >= 10, "the births of the next "
                  "connection after STATE online")
        pub.send_signal(signal.SIGTERM)
        check(pub.wait(timeout=60) == 0, "the clean stop's exit status %r" % pub.returncode)
        host.wait(lambda ls: count(ls, "NDEATH") >= 4, "the last clean stop's NDEATH")
        verdict = host.finish()
    finally:
        stop(procs)
    # the host's view: every message Tahu decoded, names resolved by alias
    view = host.view()

# the session rules: the host's
for rule, n in verdict["violations"].items():
    check(n == 0 or rule == "rebirth-late", "the host's rule %s: %d violations" % (rule, n))
check(verdict["checked"]["ndeath-bdseq"] == 4 and verdict["checked"]["birth-while-offline"] == 5,
      "the host checked 4 NDEATHs and 5 NBIRTHs: %r" % verdict["checked"])

nbirth_bdseq, sessions, declared, dead = [], [], {}, set()
device_events, node_events = [], []
values = {"can0": [], "mb1": []}
for v in view:
    kind, level = v["kind"], v["topic"].split("/")
    check(level[:2] == ["spBv1.0", "Fleet"] and v["node"] == "T-7", "topic %r" % v["topic"])
    metrics = {m["name"]: m for m in v["metrics"]}
    if kind == "NBIRTH":
        check(sorted(metrics) == ["Events", "Node Control/Rebirth", "bdSeq"], "NBIRTH metrics %r" % sorted(metrics))
        check(metrics.get("Events", {}).get("type") == "String" and metrics["Events"]["alias"] == 2 + 2**32,
              "NBIRTH's Events metric %r" % metrics.get("Events"))
        nbirth_bdseq.append(int(metrics["bdSeq"]["value"]))
        dead.clear()  # births say every device again
        if not sessions or sessions[-1]:
            sessions.append(False)
    elif kind == "NDEATH":
        check(v["seq"] is None, "NDEATH has a seq")
        sessions[-1] = True
    elif kind == "NDATA":  # the node's Events metric: the log's events
        for m in v["metrics"]:
            check(m["name"] == "Events", "NDATA metric %r is not Events" % m)
            node_events.append((m["value"], m["timestamp"], m["historical"], len(values["mb1"])))
    elif kind == "DDEATH":
        check(not v["metrics"], "DDEATH %s: %r" % (v["device"], v["metrics"]))
        device_events.append(("DDEATH", v["device"], len(values[v["device"]])))
        dead.add(v["device"])
    elif kind == "DBIRTH":
        dev = v["device"]
        if dev in dead:
            device_events.append(("DBIRTH", dev, len(values[dev])))
        dead.discard(dev)
        want = {"can0": [("Engine.Speed", 2, "Double", "rpm"), ("Door.State", 3, "String", None)],
                "mb1": [("Brake.Pressure", 2 + 0x10000, "Double", "bar")]}[dev]
        have = [(m["name"], m["alias"], m["type"], m["properties"].get("engUnit", {}).get("value"))
                for m in v["metrics"]]
        check(have == want, "DBIRTH %s metrics %r" % (dev, have))
        if dev not in declared:
            print("host's DBIRTH %s: %r" % (dev, have))
        declared[dev] = have
    elif kind == "DDATA":
        for m in v["metrics"]:
            values[v["device"]].append((m["name"], m["timestamp"], m["value"]))
            # the log's records are from 2024: the backlog, historical
            check(m["historical"], "DDATA %s %r not historical" % (v["device"], m["name"]))
# mb1 gone in Batch 2 (after its value), back in Batch 3 (before its value)
check(device_events == [("DDEATH", "mb1", 3), ("DBIRTH", "mb1", 3)], "mb1's DDEATH/DBIRTH %r" % device_events)
# mb1's events as the host reads them, at their times, historical, each in
# its Batch's place (after that Batch's mb1 value: 3 values then 4)
check(node_events == [("MB_DISCONNECT mb1 detail 0 arg 0", T0_MS + 2, True, 3),
                      ("MB_CONNECT mb1 detail 0 arg 0", T0_MS + 3, True, 4)], "the Events metric: %r" % node_events)
check(nbirth_bdseq == [0, 0, 1, 2, 3], "bdSeq of the NBIRTHs %r: Rebirth the same, + 1 a connection" % nbirth_bdseq)
check(sessions == [True] * 4, "four connections, each ended by its NDEATH: %r" % sessions)
want_can = sorted([("Engine.Speed", T0_MS + k, 1000.0 + k) for k in range(BATCHES)] +
                  [("Door.State", T0_MS + k, "door %d" % k) for k in range(BATCHES)], key=str)
want_mb = [("Brake.Pressure", T0_MS + k, k / 4.0) for k in range(BATCHES)]
check(sorted(values["can0"], key=str) == want_can, "can0 values %r" % values["can0"])
check(values["mb1"] == want_mb, "mb1 values %r" % values["mb1"])

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: %d messages seen by a Tahu host with no session rule broken: births, %d DDATA values as in the log, "
      "bdSeq %r, NDEATH after kill -9 and a clean stop" % (len(view), len(values["can0"]) + len(values["mb1"]),
                                                          nbirth_bdseq))
