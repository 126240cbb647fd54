#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A TRDP bus with `interface =` follows the interface's carrier, not its
operstate, and sees its return by rtnetlink (bus/trdp.c link_state,
trdp_await).

The operstate (IFF_RUNNING) is set by the kernel's linkwatch work, up to a
second after the carrier (~900 ms seen on a new veth pair): a bus opened on
a freshly made interface was gone at its first idle wait, and its reopen,
failing while the operstate lagged, was retried only at the 5 s safety
step.  Here the lag is made to last: railmon's end of the veth pair is set
to `mode dormant`, so its operstate stays DORMANT (IFF_RUNNING clear) while
its carrier is on, the state a fresh interface is in until linkwatch runs.

railmon run in namespace B (root) must then
  - receive PD telegrams sent from A to a group it joined on that
    interface, with no CAN_GONE event before the carrier goes;
  - say CAN_GONE (cause ENETDOWN) once the peer's end is set down (the
    carrier gone), and none before that;
  - say CAN_BACK once the peer is up again, its return seen by the link
    watch (the event's blind time known: a timed retry does not know it),
    and receive the telegrams sent after it (the group joined again).

    test-trdp-carrier.py RAILMON [capture]

capture: the same with receive = capture (the packet ring).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PUB = os.path.join(HERE, "trdp_pub.py")
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from railmon_test import netns_export, netns_pair, wait_for  # noqa: E402

ENETDOWN = 100
BLIND_UNKNOWN = 4294967295  # acquisition: ACQ_BLIND_UNKNOWN, the return not seen


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check)


def main():
    railmon = sys.argv[1]
    capture = sys.argv[2:] == ["capture"]
    if os.geteuid() != 0:
        print("needs root (network namespaces; CI runs as root)")
        return 77
    rm = None
    bad = []
    first = second = gone = back = []
    with netns_pair("rmtc") as net:
        a, b, vb = net.a, net.b, net.dev_b
        tmp = tempfile.mkdtemp(prefix="trdp-carrier-")
        try:
            # B's end: carrier on, operstate held at DORMANT (not RUNNING);
            # the mode counts from the link's next up
            sh("ip", "-n", b, "link", "set", vb, "down")
            sh("ip", "-n", b, "link", "set", vb, "mode", "dormant")
            sh("ip", "-n", b, "link", "set", vb, "up")
            wait_for("%s's operstate to be DORMANT" % vb,
                     lambda: "state DORMANT" in sh("ip", "-n", b, "-o", "link", "show", vb).stdout)
            board = os.path.join(tmp, "trdp.ini")
            with open(board, "w") as f:
                f.write("[board]\nvehicle = carrier\n[trdp ecn]\ninterface = %s\ngroup = 239.193.0.1\n%s"
                        % (vb, "receive = capture\n" if capture else ""))
            log = os.path.join(tmp, "log")
            rm = subprocess.Popen(["ip", "netns", "exec", b, railmon, "run", "--board", board, "--data", log],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            joined = lambda: "0100C1EF" in sh("ip", "netns", "exec", b, "cat", "/proc/net/igmp").stdout
            wait_for("railmon to join 239.193.0.1", joined)
            pub = ["ip", "netns", "exec", a, sys.executable, PUB]

            def send(first, name):
                path = os.path.join(tmp, name)
                sh(*pub, "pd", "--dest", "239.193.0.1", "--bind", net.addr_a, "--count", "10", "--cycle-ms", "10",
                   "--first-seq", str(first), "--log", path)
                return [json.loads(x)["payload"] for x in open(path)]

            def received(payloads):
                got = {x.get("data") for x in netns_export(railmon, b, log) if x["kind"] == "trdp"}
                return all(p in got for p in payloads)

            def events(name):
                return [x for x in netns_export(railmon, b, log) if x["kind"] == "event" and x["event"] == name
                        and x["bus"] == 0]

            try:
                first, second, gone, back = steps(net, joined, send, received, events, bad)
            except AssertionError as e:  # a wait timed out: said with what was found before it
                bad.append(str(e))
            rm.send_signal(2)
            out, _ = rm.communicate(timeout=30)
            code, rm = rm.returncode, None
            if code != 0:
                raise SystemExit("railmon run exited %d:\n%s" % (code, out[-3000:]))
            n_gone, n_back = len(events("CAN_GONE")), len(events("CAN_BACK"))
            if (n_gone, n_back) != (1, 1):
                bad.append("the log has %d CAN_GONE and %d CAN_BACK, want 1 and 1" % (n_gone, n_back))
        finally:
            if rm:
                rm.kill()
                rm.wait()
            shutil.rmtree(tmp, ignore_errors=True)
    for x in bad:
        print(x)
    print("%s: dormant link with a carrier: %d telegrams received, gone only when the carrier went (causes %s), "
          "back seen by the link watch (blind %s ms), %d received after; %d wrong"
          % ("capture" if capture else "socket", len(first), [x["arg"] for x in gone],
             [x.get("detail") for x in back], len(second), len(bad)))
    return 1 if bad else 0


def steps(net, joined, send, received, events, bad):
    """The carrier there, gone, back; returns the telegrams sent before and
    after, the CAN_GONE and the CAN_BACK events."""
    a, va = net.a, net.dev_a
    # received on the dormant link with its carrier: the bus is up
    first = send(0, "pd1.jsonl")
    wait_for("the telegrams sent on the dormant link in the log", lambda: received(first))
    # the carrier goes: gone, and not before
    t_down = time.time_ns()
    sh("ip", "-n", a, "link", "set", va, "down")
    gone = wait_for("a CAN_GONE event after the peer went down", lambda: events("CAN_GONE"))
    early = [x for x in gone if x["time_ns"] < t_down]
    if early or len(gone) != 1 or gone[0]["arg"] != -ENETDOWN:
        bad.append("CAN_GONE events %s (%d before the carrier went), want one after it, cause -%d"
                   % ([(x["time_ns"], x["arg"]) for x in gone], len(early), ENETDOWN))
    # the carrier back: back, seen by the link watch
    sh("ip", "-n", a, "link", "set", va, "up")
    # the group's route went with the link
    sh("ip", "-n", a, "route", "replace", "239.0.0.0/8", "dev", va)
    back = wait_for("a CAN_BACK event after the peer came up", lambda: events("CAN_BACK"))
    if len(back) != 1 or back[0].get("detail") == BLIND_UNKNOWN:
        bad.append("CAN_BACK events %s: want one, its blind time known (the link watch saw the return)"
                   % [(x["arg"], x.get("detail")) for x in back])
    wait_for("railmon to join 239.193.0.1 again", joined)
    second = send(100, "pd2.jsonl")
    wait_for("the telegrams sent after the return in the log", lambda: received(second))
    return first, second, gone, back


if __name__ == "__main__":
    sys.exit(main())
