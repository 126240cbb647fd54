#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-live.py SPB_PUB_DEMO NODE_MODULES SRC - uplink/'s Sparkplug B
publisher against real peers: the mosquitto broker (Debian) and a host
that decodes every message with Eclipse Tahu's npm sparkplug-payload
(tahu-decode.js) and sends its commands encoded by Tahu
(tahu-encode-cmd.js, published with mosquitto_pub).  spb-pub-demo.c
publishes a log of 5 Batches; the host's view must follow the session
rules: NBIRTH then a DBIRTH per device with the metric list, every DDATA
alias declared in its device's DBIRTH, seq continuous from 0, values and
times those of the log, a refused NCMD answered by nothing, Rebirth
answered with NBIRTH and DBIRTHs, NDEATH's bdSeq = the NBIRTH's after a
kill -9 (the broker's will) and after a clean stop, bdSeq + 1 at the
restart, and no Batch published twice (the cursor); with a primary host,
no birth while its STATE says offline, NDEATH when it goes offline, births
again (new bdSeq) when it is back."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
from spb_host import Broker, Lines, check, count, failures, msgs, start_host, stop, tahu_decode  # noqa: E402

DEMO, NODE_MODULES, SRC = sys.argv[1:4]
T0_MS = 1733400000000
BATCHES = 5


with tempfile.TemporaryDirectory(prefix="spb-live-") as tmp:
    procs = []
    try:
        broker = Broker(tmp, procs)
        broker.start()
        port = broker.port
        host = start_host(port, procs)

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
        t_cmd = time.monotonic()
        ncmd("ncmd-rebirth.bin")
        host.wait(lambda ls: count(ls, "NBIRTH") >= 2, "the NBIRTH answering Rebirth")
        print("Rebirth answered in %.0f ms (under load; not asserted)" % ((time.monotonic() - t_cmd) * 1000))
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
        # (retained, as a host publishes it) says online
        def host_state(online):
            subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-r",
                            "-t", "spBv1.0/STATE/scada", "-m",
                            '{"online" : %s, "timestamp" : 1733400000000}' % ("true" if online else "false")],
                           check=True, timeout=30)
        host_state(False)
        pub, out = start("scada")
        host_state(True)
        host.wait(lambda ls: count(ls, "NBIRTH") >= 4 and count(ls, "DBIRTH") >= 8, "the births after STATE online")
        host_state(False)
        host.wait(lambda ls: count(ls, "NDEATH") >= 3, "the NDEATH after STATE offline")
        host_state(True)
        host.wait(lambda ls: count(ls, "NBIRTH") >= 5 and count(ls, "DBIRTH") >= 10, "the births of the next "
                  "connection after STATE online")
        pub.send_signal(signal.SIGTERM)
        check(pub.wait(timeout=60) == 0, "the clean stop's exit status %r" % pub.returncode)
        host.wait(lambda ls: count(ls, "NDEATH") >= 4, "the last clean stop's NDEATH")
        # in the host's order: no NBIRTH while the host's last STATE said offline
        online = None
        for t, h in msgs(host.lines):
            if t == "spBv1.0/STATE/scada":
                online = '"online" : true' in bytes.fromhex(h).decode()
            elif t.split("/")[2] == "NBIRTH" and online is not None:
                check(online, "an NBIRTH while the primary host was offline")
    finally:
        stop(procs)

    # the host's view, every payload decoded by Tahu
    got = [m for m in msgs(host.lines) if m[0].split("/")[1] != "STATE"]  # JSON, the host's own
    tahu = tahu_decode(tmp, NODE_MODULES, SRC, got, timeout=60)
    view = [(topic.split("/"), p) for (topic, _), p in zip(got, tahu)]

seq, bdseq, nbirth_bdseq, declared, sessions = None, None, [], {}, []
dead, device_events, node_events = set(), [], []
values = {"can0": [], "mb1": []}
for level, p in view:
    kind = level[2]
    if kind in ("NCMD", "DCMD"):  # the host's own commands
        continue
    check(level[:2] == ["spBv1.0", "Fleet"] and level[3] == "T-7", "topic %r" % level)
    metrics = {m.get("name"): m for m in p["metrics"]}
    if kind == "NBIRTH":
        check(int(p["seq"]) == 0, "NBIRTH seq %r" % p.get("seq"))
        check(sorted(metrics) == ["Events", "Node Control/Rebirth", "bdSeq"], "NBIRTH metrics %r" % sorted(metrics))
        check(metrics.get("Events", {}).get("type") == "String" and int(metrics["Events"]["alias"]) == 2 + 2**32,
              "NBIRTH's Events metric %r" % metrics.get("Events"))
        b = int(metrics["bdSeq"]["value"])
        if bdseq is not None and not sessions[-1]:  # a Rebirth: same connection
            check(b == bdseq, "Rebirth's NBIRTH bdSeq %d, connection's %d" % (b, bdseq))
        bdseq, seq = b, 0
        nbirth_bdseq.append(b)
        dead.clear()  # births say every device again
        if not sessions or sessions[-1]:
            sessions.append(False)
        continue
    if kind == "NDEATH":
        check(p.get("seq") is None, "NDEATH has a seq")
        check(int(metrics["bdSeq"]["value"]) == bdseq, "NDEATH bdSeq %r, NBIRTH's %r" % (metrics["bdSeq"], bdseq))
        sessions[-1] = True
        continue
    check("seq" in p and int(p["seq"]) == (seq + 1) % 256, "%s %s seq %r after %r" % (kind, level, p.get("seq"), seq))
    seq = int(p.get("seq", -2))
    if kind == "NDATA":  # the node's Events metric: the log's events
        for m in p["metrics"]:
            check(int(m["alias"]) == 2 + 2**32, "NDATA alias %r is not Events'" % m["alias"])
            node_events.append((m["value"], int(m["timestamp"]), m.get("isHistorical") is True, len(values["mb1"])))
        continue
    dev = level[4]
    if kind == "DDEATH":
        check(not p["metrics"] and dev not in dead, "DDEATH %s: %r, dead %r" % (dev, p["metrics"], dead))
        dead.add(dev)
        device_events.append(("DDEATH", dev, len(values[dev])))
        continue
    if kind == "DDATA":
        check(dev not in dead, "DDATA of %s while dead" % dev)
    if kind == "DBIRTH":
        if dev in dead:
            device_events.append(("DBIRTH", dev, len(values[dev])))
        dead.discard(dev)
        declared[dev] = {int(m["alias"]): m for m in p["metrics"]}
        want = {"can0": [("Engine.Speed", 2, "Double", "rpm"), ("Door.State", 3, "String", None)],
                "mb1": [("Brake.Pressure", 2 + 0x10000, "Double", "bar")]}[dev]
        have = [(m["name"], int(m["alias"]), m["type"], m.get("properties", {}).get("engUnit", {}).get("value"))
                for m in p["metrics"]]
        check(have == want, "DBIRTH %s metrics %r" % (dev, have))
        print("host's DBIRTH %s: %r" % (dev, have))
    elif kind == "DDATA":
        for m in p["metrics"]:
            check(int(m["alias"]) in declared.get(dev, {}), "DDATA %s alias %r not in its DBIRTH" % (dev, m["alias"]))
            values[dev].append((declared[dev][int(m["alias"])]["name"], int(m["timestamp"]), m["value"]))
            # the log's records are from 2024: the backlog, historical
            check(m.get("isHistorical") is True, "DDATA %s alias %r not historical" % (dev, m["alias"]))
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
print("ok: %d messages seen by a Tahu host: births, %d DDATA values as in the log, seq continuous, bdSeq %r, "
      "NDEATH after kill -9 and a clean stop" % (len(view), len(values["can0"]) + len(values["mb1"]), nbirth_bdseq))
