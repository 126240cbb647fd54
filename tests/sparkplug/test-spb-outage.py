#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-outage.py SPB_PUB_DEMO NODE_MODULES SRC - store-and-forward of
uplink/'s Sparkplug B publisher through a 60 s broker outage, seen by
spb-host.js, a Sparkplug host application in Node.js (npm mqtt, Eclipse
Tahu's sparkplug-payload) that decodes every message and checks the
session rules itself (its verdict: no violation; historical metrics in
time order among them); the primary host "scada" the publisher waits for.

spb-pub-demo.c publishes a growing log (a Batch every 500 ms) with a
primary host.  The broker (mosquitto) is frozen (SIGSTOP: the connection
stays up, the DDATAs the publisher sends go into a socket nobody reads,
as on a dead link), then killed, and restarted on the same port 60 s
after the freeze.  DDATA is QoS 0, so only the publisher's barrier says
what the broker took: the Batches sent into the frozen broker must come
again.  The host must see every value of the log (none lost), none twice
except at most one Batch in flight at the freeze, and after the
restart's NBIRTH the backlog is_historical, in time order, continuing
from the last value it had before the outage."""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
from spb_host import Broker, Lines, SpbHost, check, count, failures, stop  # noqa: E402

DEMO, NODE_MODULES, SRC = sys.argv[1:4]
T0_MS = 1733400000000
BATCHES, EVERY_MS, OUTAGE_S = 150, 500, 60


def progress(lines):
    """The demo's last progress line as a dict of ints."""
    for line in reversed(lines):
        if line.startswith("progress "):
            w = line.split()[1:]
            return {k: int(v) for k, v in zip(w[::2], w[1::2])}
    return {"ddata": 0, "acked": 0, "failures": 0, "rewinds": 0}


with tempfile.TemporaryDirectory(prefix="spb-outage-") as tmp:
    procs = []
    b = Broker(tmp, procs)
    port = b.port

    try:
        broker = b.start()
        # the host: reconnects, subscribes and says its STATE online again by itself
        host = SpbHost(port, procs, NODE_MODULES, SRC, tmp, host_id="scada", timeout=120)
        state = os.path.join(tmp, "state")
        os.mkdir(state)
        pub = subprocess.Popen([DEMO, str(port), state, str(BATCHES), "scada"], stdout=subprocess.PIPE, text=True,
                               env=dict(os.environ, SPB_DEMO_EVERY_MS=str(EVERY_MS)))
        procs.append(pub)
        out = Lines(pub, 120)
        host.wait(lambda ls: count(ls, "DDATA") >= 10, "10 DDATA before the outage")

        # the outage: the broker frozen, DDATA sent into it, then killed
        d0 = progress(out.lines)["ddata"]
        broker.send_signal(signal.SIGSTOP)
        t_out = time.monotonic()
        out.wait(lambda ls: progress(ls)["ddata"] >= d0 + 6, "DDATA sent into the frozen broker")
        sent_frozen = progress(out.lines)["ddata"] - d0
        broker.kill()
        broker.wait()
        out.wait(lambda ls: progress(ls)["failures"] >= 1, "the publisher's failed reconnect")
        # the outage's length is the scenario, not a wait for a peer
        time.sleep(max(0.0, t_out + OUTAGE_S - time.monotonic()))
        print("outage %.0f s, %d DDATA sent into the frozen broker" % (time.monotonic() - t_out, sent_frozen))
        broker = b.start()
        # the restarted broker (no persistence) lost the retained STATE:
        # the host says it again when it is back
        host.wait(lambda ls: ls.count("state online") >= 2, "the host's STATE online after the restart")
        # the last Batch (seqs 1 + 4k .. 3 + 4k) confirmed by the broker;
        # the NDEATH of the stop, after it in the broker's order, says the
        # host has all
        out.wait(lambda ls: progress(ls)["acked"] >= 4 * BATCHES, "the broker's barrier for the last Batch",
                 timeout=180)
        pub.send_signal(signal.SIGTERM)
        check(pub.wait(timeout=60) == 0, "the clean stop's exit status %r (a sanitizer's report?)" % pub.returncode)
        out.wait(lambda ls: any(line.startswith("stopped") for line in ls), "the publisher's stats")
        host.wait(lambda ls: count(ls, "NDEATH") >= 1, "the clean stop's NDEATH")
        stop_line = [line for line in out.lines if line.startswith("stopped")][0]
        print(stop_line)
        stats = {k: int(v) for k, v in zip(*[iter(stop_line.split()[1:])] * 2)}
        check(stats["rewinds"] >= 1, "the lost connection read the log again: %r" % stats)
        check(stats["resent"] >= 1, "Batches sent again after the outage: %r" % stats)
        verdict = host.finish()
    finally:
        stop(procs)  # thaws a frozen broker, if it failed there
    view = host.view()

# the session rules: the host's (through the outage it lost its own
# connection too: the new connection's bdSeq need only differ)
for rule, n in verdict["violations"].items():
    check(n == 0, "the host's rule %s: %d violations" % (rule, n))
check(verdict["checked"]["historical-order"] >= 100, "historical values the host checked: %r" % verdict["checked"])

# the host's view: sessions by NBIRTH; values with the session they came in
nbirths, events = 0, []
seen = []  # (session index, device, name, ms, value, historical)
for v in view:
    kind = v["kind"]
    if kind == "NBIRTH":
        nbirths += 1
    elif kind == "NDATA":  # the node's Events metric (mb1's gone and back, Batches 2 and 3)
        events += [(m["value"], m["timestamp"]) for m in v["metrics"]]
    elif kind == "DDATA":
        seen += [(v["session"], v["device"], m["name"], m["timestamp"], m["value"], m["historical"])
                 for m in v["metrics"]]

want = {("Engine.Speed", T0_MS + k, 1000.0 + k) for k in range(BATCHES)} | \
       {("Door.State", T0_MS + k, "door %d" % k) for k in range(BATCHES)} | \
       {("Brake.Pressure", T0_MS + k, k / 4.0) for k in range(BATCHES)}
have = [(n, t, v) for _, _, n, t, v, _ in seen]
missing = sorted(want - set(have), key=lambda x: x[1])
check(not missing, "%d values lost, first %r" % (len(missing), missing[:3]))
check(set(have) <= want, "values not in the log: %r" % sorted(set(have) - want, key=str)[:3])
dups = sorted({x for x in have if have.count(x) > 1}, key=lambda x: x[1])
dup_batches = {t for _, t, _ in dups}
check(len(dup_batches) <= 1, "values twice beyond the one Batch in flight: %d Batches %r" % (len(dup_batches), dups[:6]))
check(events == [("MB_DISCONNECT mb1 detail 0 arg 0", T0_MS + 2), ("MB_CONNECT mb1 detail 0 arg 0", T0_MS + 3)],
      "the Events metric: %r" % events)
check(nbirths == 2, "one NBIRTH per connection, two connections: %d" % nbirths)
# after the restart's NBIRTH: historical (in time order: the host's rule), on
# from the last value the host had before the outage
before = [s for s in seen if s[0] == 1]
after = [s for s in seen if s[0] == 2]
check(before and after, "values before (%d) and after (%d) the outage" % (len(before), len(after)))
check(all(s[5] for s in after), "a value after the outage not is_historical")
last_before = max(s[3] for s in before)
first_after = min(s[3] for s in after)
check(first_after <= last_before + 1, "a gap at the outage: last before %d, first after %d" % (last_before, first_after))
print("host: %d values (%d distinct of %d in the log), %d before the outage, %d after (first %d, last before %d), "
      "%d Batch(es) twice" % (len(have), len(set(have)), len(want), len(before), len(after), first_after, last_before,
                              len(dup_batches)))
if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: no value lost through a %d s broker outage; the backlog historical and in order after the rebirth" % OUTAGE_S)
