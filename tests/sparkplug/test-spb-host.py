#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-host.py NODE_MODULES SRC - the checker checked: spb-host.js (the
Sparkplug host application that checks railmon's session rules in
spb-live, spb-outage and spb-run-session) against spb-bad-edge.js, an
edge node that breaks each rule a known number of times (EXPECTED),
through mosquitto.  The host must count exactly those, every rule at
least once, and resolve a DDATA's alias to its DBIRTH's name in its
values file.  A rule check that cannot see its bug fails here."""
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
from spb_host import Broker, Lines, SpbHost, check, failures, stop  # noqa: E402

NODE_MODULES, SRC = sys.argv[1:3]
# what spb-bad-edge.js breaks (its comments say where)
EXPECTED = {"decode": 1, "seq": 2, "ndeath-bdseq": 1, "bdseq-next": 1, "before-birth": 2, "device-not-born": 2,
            "alias-undeclared": 2, "historical-order": 1, "birth-while-offline": 1, "rebirth-late": 1}
LATE_MS = 4000  # the bad edge node's late Rebirth answer; the host's limit below is half that

with tempfile.TemporaryDirectory(prefix="spb-host-") as tmp:
    procs = []
    try:
        broker = Broker(tmp, procs)
        broker.start()
        # a limit of 2 s for the Rebirth: the prompt answer is far below it
        # on a loaded machine, the late one (4 s) far above
        host = SpbHost(broker.port, procs, NODE_MODULES, SRC, tmp, host_id="scada", extra=("--rebirth-ms", "2000"))
        edge_p = subprocess.Popen(["node", os.path.join(SRC, "tests", "sparkplug", "spb-bad-edge.js"),
                                   "mqtt://127.0.0.1:%d" % broker.port], stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, NODE_PATH=NODE_MODULES, SPB_BAD_EDGE_LATE_MS=str(LATE_MS)))
        procs.append(edge_p)
        edge = Lines(edge_p)

        def mark(name):
            """The edge node's mark seen by the host: the host has all it sent before."""
            host.wait(lambda ls: any(line.startswith("spBv1.0/Fleet/DCMD/E-1/%s " % name) for line in ls),
                      "the edge node's mark %s at the host" % name)

        for k in (1, 2):
            mark("rebirth-wait-%d" % k)
            host.send("rebirth E-1")
        mark("state-wait-offline")
        host.state(False)
        mark("state-wait-online")
        host.state(True)
        mark("done")
        edge.wait(lambda ls: "ended" in ls, "the edge node's end")
        check(edge_p.wait(timeout=30) == 0, "spb-bad-edge.js exit %r" % edge_p.returncode)
        verdict = host.finish()
    finally:
        stop(procs)
    view = host.view()
    if os.environ.get("SPB_HOST_DEBUG"):
        print("\n".join(host.lines))

print("host's violations %r" % verdict["violations"])
print("host's checks %r" % verdict["checked"])
for rule, n in EXPECTED.items():
    check(verdict["violations"].get(rule) == n, "rule %s: the host counted %r violations, the edge node made %d"
          % (rule, verdict["violations"].get(rule), n))
check(set(verdict["violations"]) == set(EXPECTED), "rules the test does not know: %r"
      % sorted(set(verdict["violations"]) - set(EXPECTED)))
check(verdict["violations_total"] == sum(EXPECTED.values()), "total %r" % verdict["violations_total"])
# the values file: a DDATA by alias only, named from its DBIRTH
dd = [m for v in view if v["kind"] == "DDATA" and v["seq"] == 3 for m in v["metrics"]]
check([(m["name"], m["alias"], m["value"], m["timestamp"]) for m in dd] ==
      [("Speed", 10, 2, 1733400000002), (None, 12, 0, 1733400000002)], "the values of DDATA seq 3: %r" % dd)
hist = [m["historical"] for v in view if v["kind"] == "DDATA" and v["seq"] == 6 for m in v["metrics"]]
check(hist == [True, True], "historical flags %r" % hist)

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: the host counted each of the %d rule violations the edge node made, and no other"
      % sum(EXPECTED.values()))
