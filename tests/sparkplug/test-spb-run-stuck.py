#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-run-stuck.py RAILMON SRC - `railmon run` with [sparkplug]
pointed at a broker whose listen queue is full (a loopback socket that
never accepts, its queue filled first: the kernel drops the edge node's
SYN, as a blackholed address or a firewall that drops does).  The
publisher's TCP connect never completes:

  1. it gives up on each attempt and tries again with its back-off: the
     daemon's bdSeq (a new one at every attempt, `railmon stat --json`)
     moves to 2 within 60 s (the old blocking mosquitto_connect() sat in
     the kernel's SYN retries, over 2 minutes, on its first attempt);
  2. the buses go on meanwhile: the log's records grow;
  3. a SIGTERM in the middle of an attempt stops railmon run within 5 s
     (railmon.service's TimeoutStopSec is 30 s; the old code waited for
     the connect to fail, up to 2 minutes); its summary says the
     failed attempts;
  4. every thread of the daemon has a stack of 1 MiB or less, not glibc's
     8 MiB default (which mlockall makes resident): /proc's view of each
     thread's stack mapping, printed."""
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
from spb_host import check, failures  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import thread_stacks  # noqa: E402

RAILMON, SRC = sys.argv[1:3]
STACK_MAX = 1 << 20


def full_listener():
    """A loopback listener that never accepts, its queue full: (socket,
    port, the connections that fill it)."""
    lsn = socket.socket()
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(0)
    port, fill = lsn.getsockname()[1], []
    while len(fill) < 8:
        c = socket.socket()
        c.setblocking(False)
        fill.append(c)
        if c.connect_ex(("127.0.0.1", port)) not in (0, errno.EINPROGRESS):
            break
        # a connect the kernel completes at once has a place in the queue;
        # one still pending after 300 ms had its SYN dropped: full
        if not select.select([], [c], [], 0.3)[1]:
            return lsn, port, fill
    raise SystemExit("the listen queue of %d did not fill" % port)


def stat(sock):
    js = subprocess.run([RAILMON, "stat", "--socket", sock, "--json"], capture_output=True, text=True).stdout
    d = [json.loads(line) for line in js.splitlines() if '"name":"daemon"' in line]
    return d[0] if d else None


with tempfile.TemporaryDirectory(prefix="spb-stuck-") as tmp:
    lsn, port, fill = full_listener()
    demo = os.path.join(SRC, "cli", "demo")
    sock = "@railmon-spbstuck-%d" % os.getpid()
    board = os.path.join(tmp, "b.ini")
    with open(board, "w") as fh:
        fh.write("[board]\nvehicle = T-7\nrt_priority = 0\nbatch_ms = 200\nstat_socket = %s\n"
                 "[storage]\ndir = data\nsegment_size = 4M\n"
                 "[can vehicle]\ndriver = trace\nfile = %s/train.log\ndbc = %s/train.dbc\nspeed = 1\nloop = true\n"
                 "[sparkplug]\nbroker = mqtt://127.0.0.1:%d\ngroup_id = Fleet\n" % (sock, demo, demo, port))
    run = subprocess.Popen([RAILMON, "run", "--board", board], cwd=tmp, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        # 1. attempts given up and made again: bdSeq 0, 1, 2
        first, st, end = None, None, time.monotonic() + 60
        while run.poll() is None and time.monotonic() < end:
            st = stat(sock)
            if st and first is None:
                first = st
            if st and st.get("spb_bdseq", 0) >= 2:
                break
            time.sleep(0.2)  # polling the daemon's state, bounded by end
        print("stat at the start: %r\nstat now: %r" % (first, st))
        check(st and st.get("spb_bdseq", 0) >= 2 and st.get("sparkplug") == "offline",
              "the publisher did not try a third time within 60 s (bdSeq %r)" % (st or {}).get("spb_bdseq"))
        # 2. the buses unaffected
        check(first and st and st["records"] > first["records"],
              "the log did not grow while the publisher was stuck: %r then %r"
              % ((first or {}).get("records"), (st or {}).get("records")))
        # 4. the threads' stacks
        if run.poll() is None:
            stacks = thread_stacks(run.pid)
            for tid, name, size, rss in stacks:
                print("thread %d %-16s stack mapping %s bytes, %s resident" % (tid, name, size, rss))
            check(any(name == "sparkplug" for _, name, _, _ in stacks), "no thread named sparkplug")
            big = [(name, size) for _, name, size, _ in stacks if size is None or size > STACK_MAX]
            check(not big, "threads whose stack is over %d bytes (or not found): %r" % (STACK_MAX, big))
        # 3. the stop, in the middle of an attempt
        t0 = time.monotonic()
        run.send_signal(signal.SIGTERM)
        try:
            out, err = run.communicate(timeout=180)  # the bound: the old code's 2 minutes are measured
        except subprocess.TimeoutExpired:
            run.kill()
            out, err = run.communicate()
        took = time.monotonic() - t0
        print(err, end="")
        print("SIGTERM to exit: %.2f s" % took)
        check(took < 5, "railmon run took %.1f s to stop (the publisher in a connect)" % took)
        check(run.returncode == 0, "railmon run exit %r" % run.returncode)
        said = [line for line in err.splitlines() if line.startswith("railmon: sparkplug to mqtt://127.0.0.1:%d: "
                                                                     % port)]
        check(said and " not connected, " in said[-1] and " 0 failed connection attempts" not in said[-1]
              and " 1 failed connection attempts" not in said[-1],
              "run's last sparkplug line %r" % (said[-1:],))
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for c in fill:
            c.close()
        lsn.close()

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: the Sparkplug publisher against a broker that never accepts: retries, stops at once, small stack")
