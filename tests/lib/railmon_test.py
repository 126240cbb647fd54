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

thread_stacks(pid): each thread of pid but the main one as (tid, name,
bytes of its stack's mapping, of them resident): whether a thread kept
glibc's 8 MiB default stack, and (in a process without mlockall) how
much of its stack it touched.

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

Two hosts on one Ethernet (root; /work/shared/recipes/netns-multicast.md):
with netns_pair(tag) as net: network namespaces net.a and net.b joined by
a veth pair (net.dev_a in a, net.dev_b in b: "vA", "vB"), addresses
net.addr_a and net.addr_b (192.0.2.1, .2 /24), lo up and 239.0.0.0/8
routed out of the veth (multicast).  Both namespaces, and with them the
links, are removed on leaving however it is left: an exception, or the
SIGTERM of meson's timeout (raised as SystemExit inside the block).  On
entering, namespaces of the same tag whose process is gone (SIGKILLed)
are removed.  netns_names(tag): the two names netns_pair(tag) gives in
this process.  netns_exec(ns, *argv): argv as run inside namespace ns.
"""
import collections
import contextlib
import ctypes
import json
import os
import re
import signal
import socket
import subprocess
import time

TICK = os.sysconf("SC_CLK_TCK")
PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True)
PEERS = []


def wait_for(what, cond, timeout=30.0, interval=0.1):
    """Until cond() gives something true (polled, not a fixed sleep); the
    timeout's error says the last thing cond() gave."""
    end = time.monotonic() + timeout
    v = None
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what} (last: {v!r})")


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


def thread_stacks(pid):
    """Each thread of pid but the main one: (tid, name, bytes of the
    mapping its stack pointer is in, of them resident).  The stack
    pointer is /proc's syscall file's (a thread blocked in a call; one
    running is looked at again), the mapping /proc's smaps' (a thread's
    stack is one mapping, its guard page another).  A thread that ends
    while looked at is left out."""
    maps, cur = [], None
    with open("/proc/%d/smaps" % pid) as fh:
        for line in fh:
            f = line.split()
            if "-" in f[0] and len(f) >= 5 and ":" in f[3]:
                lo, hi = (int(x, 16) for x in f[0].split("-"))
                cur = [lo, hi, 0]
                maps.append(cur)
            elif f[0] == "Rss:" and cur:
                cur[2] = int(f[1]) * 1024
    out = []
    for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % pid)):
        if tid == pid:
            continue
        try:
            with open("/proc/%d/task/%d/comm" % (pid, tid)) as fh:
                name = fh.read().strip()
            sp = None
            for _ in range(200):  # running now: blocked again within moments
                with open("/proc/%d/task/%d/syscall" % (pid, tid)) as fh:
                    f = fh.read().split()
                if len(f) >= 3 and f[0] != "running":
                    sp = int(f[-2], 16)
                    break
                time.sleep(0.005)  # a running thread, looked at again
        except (FileNotFoundError, ProcessLookupError):
            continue
        m = [x for x in maps if sp is not None and x[0] <= sp < x[1]]
        out.append((tid, name, m[0][1] - m[0][0] if m else None, m[0][2] if m else None))
    return out


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


def free_port_udp_tcp(tries=50):
    """A loopback port free for UDP and for TCP both (TRDP's MD port is
    both): a UDP port the kernel gave, kept if TCP can bind it too."""
    for _ in range(tries):
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind(("127.0.0.1", 0))
        port = u.getsockname()[1]
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            t.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue
        finally:
            u.close()
            t.close()
    raise AssertionError("no loopback port free for both UDP and TCP in %d tries" % tries)


NetPair = collections.namedtuple("NetPair", "a b dev_a dev_b addr_a addr_b")


def netns_names(tag):
    return "%sa%d" % (tag, os.getpid()), "%sb%d" % (tag, os.getpid())


def netns_exec(ns, *argv):
    return ["ip", "netns", "exec", ns] + list(argv)


def netns_export(railmon, ns, log):
    """railmon export --format jsonl of log, run in namespace ns, as
    records; [] while export cannot read it yet (a log being written)."""
    r = subprocess.run(netns_exec(ns, railmon, "export", "--data", log, "--format", "jsonl"),
                       capture_output=True, text=True)
    return [json.loads(x) for x in r.stdout.splitlines()] if r.returncode == 0 else []


def _ip(*args, check=True):
    return subprocess.run(["ip"] + list(args), check=check, capture_output=True, text=True)


def _netns_sweep(tag):
    """Namespaces <tag>a<pid>/<tag>b<pid> of a test run that is gone."""
    for line in _ip("netns", "list").stdout.splitlines():
        m = re.fullmatch(re.escape(tag) + r"[ab](\d+)", line.split(" ")[0])
        if m and not os.path.exists("/proc/" + m.group(1)):
            _ip("netns", "del", m.group(0), check=False)


def _term_exit(signum, frame):
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def netns_pair(tag, dev_a="vA", dev_b="vB", addr_a="192.0.2.1", addr_b="192.0.2.2", prefix=24):
    _netns_sweep(tag)
    a, b = netns_names(tag)
    # meson stops a test that overran with SIGTERM (SIGKILL 0.5 s later):
    # as an exception, the finally below still deletes the namespaces
    old_term = signal.signal(signal.SIGTERM, _term_exit)
    try:
        _ip("netns", "add", a)
        _ip("netns", "add", b)
        # each end made inside its namespace: no end is ever left in the
        # host's, and deleting the namespaces deletes the link
        _ip("link", "add", dev_a, "netns", a, "type", "veth", "peer", "name", dev_b, "netns", b)
        for ns, dev, addr in ((a, dev_a, addr_a), (b, dev_b, addr_b)):
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "addr", "add", "%s/%d" % (addr, prefix), "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up")
            _ip("-n", ns, "route", "add", "239.0.0.0/8", "dev", dev)
        yield NetPair(a, b, dev_a, dev_b, addr_a, addr_b)
    finally:
        # a second SIGTERM must not cut the clean-up short: held until the
        # old handler is back, then it acts as it would have
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            for ns in (a, b):
                _ip("netns", "del", ns, check=False)
        finally:
            signal.signal(signal.SIGTERM, old_term)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
