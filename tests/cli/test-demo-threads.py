#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-demo-threads.py RAILMON - the threads of `railmon demo`: every one
but the main thread is named (what top -H and /proc/PID/task show) and
has a stack of 1 MiB or less, not glibc's 8 MiB default, which a process
that mlockall()s holds whole (`run` locks; tests/system's rt-alloc runs
the demo's peers beside a locked daemon).  The demo's own peers, the
simulated Modbus devices (sim-train) and the TRDP consist (demo-trdp),
were the two left at the default.  /proc's view of each thread's stack
mapping, printed with the pages it touched (demo does not lock)."""
import os
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import start_peer, stop_peer, thread_stacks, wait_for  # noqa: E402

RAILMON = sys.argv[1]
STACK_MAX = 1 << 20
# the daemon's threads and the demo's two peers
WANT = {"sim-train", "demo-trdp", "collector", "stat"}


def said(path, what):
    with open(path) as fh:
        return what in fh.read()


with tempfile.TemporaryDirectory(prefix="railmon-demo-threads-") as tmp:
    err_path = os.path.join(tmp, "err")
    demo = start_peer([RAILMON, "demo", "--duration", "30", "--no-live", "--data", os.path.join(tmp, "log")],
                      stdout=open(os.path.join(tmp, "out"), "w"), stderr=open(err_path, "w"))
    # the consist starts last, after the daemon: every thread is up then
    wait_for("demo's line on the TRDP consist", lambda: said(err_path, "simulated TRDP consist"), timeout=20)
    stacks = thread_stacks(demo.pid)
    for tid, name, size, rss in stacks:
        print("thread %d %-16s stack mapping %s bytes, %s resident" % (tid, name, size, rss))
    big = [(name, size) for _, name, size, _ in stacks if size is None or size > STACK_MAX]
    unnamed = [tid for tid, name, _, _ in stacks if name == "railmon"]
    missing = WANT - {name for _, name, _, _ in stacks}
    rc = stop_peer(demo)
    with open(err_path) as fh:
        err = fh.read()
if big or unnamed or missing or rc != 0:
    print("FAIL: threads whose stack is over %d bytes (or not found): %r; unnamed threads %r; not there %r; "
          "demo exit %s\n%s" % (STACK_MAX, big, unnamed, sorted(missing), rc, err))
    sys.exit(1)
print("ok: %d threads of railmon demo, each named, each stack at most %d bytes" % (len(stacks), STACK_MAX))
