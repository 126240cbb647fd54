# SPDX-License-Identifier: MIT
"""railmon_test.py: what the Python tests share (import it after
sys.path.insert(0, <tests/lib>)).

wait_for(what, cond, timeout=30, interval=0.1): poll cond until it returns
something true (returned), or fail naming what did not happen.

thread_cpu(pid, seconds, names): CPU used by named threads of process pid
(the name is the comm set with pthread_setname_np: railmon names its bus
threads "rx-<bus>"), from utime + stime in /proc/PID/task/TID/stat at the
start and the end of seconds, as {name: percent of one CPU}, None for a
thread that is not there.

Peers (a broker, a Modbus server, socat, railmon itself):
start_peer(argv, **popen_kw): subprocess.Popen that dies with this test,
however it ends (PR_SET_PDEATHSIG), remembered in PEERS for stop_peers().
stop_peer(p, sig=SIGTERM, grace=10): send sig (None: close its stdin, for
a peer that stops at EOF), SIGKILL if it has not exited after grace
seconds, reap; its return code.
stop_peers(sig=SIGTERM): stop_peer() every peer still running, the last
started first.

die_with_us: a preexec_fn for subprocess.run of a child that must not
outlive this test either.

free_port(): a loopback TCP port nobody listens on now.
"""
import ctypes
import os
import signal
import socket
import subprocess
import time

TICK = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
PEERS = []


def wait_for(what, cond, timeout=30.0, interval=0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def find_tid(pid, name):
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == name:
                    return tid
        except OSError:
            pass  # the thread ended meanwhile
    return None


def ticks(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        # comm may hold spaces: the fields after it start past the last ')'
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)


def thread_cpu(pid, seconds, names):
    tids = {n: find_tid(pid, n) for n in names}
    start = {n: ticks(pid, t) for n, t in tids.items() if t}
    t0 = time.monotonic()
    time.sleep(seconds)
    dt = time.monotonic() - t0
    return {n: (100.0 * (ticks(pid, t) - start[n]) / TICK / dt if t else None) for n, t in tids.items()}


def die_with_us():
    _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def start_peer(argv, **kw):
    p = subprocess.Popen(argv, preexec_fn=die_with_us, **kw)
    PEERS.append(p)
    return p


def stop_peer(p, sig=signal.SIGTERM, grace=10):
    if p.poll() is None:
        if sig is None:
            p.stdin.close()
        else:
            p.send_signal(sig)
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            p.kill()
    return p.wait()


def stop_peers(sig=signal.SIGTERM):
    for p in reversed(PEERS):
        stop_peer(p, sig)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
