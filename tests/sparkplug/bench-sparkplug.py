#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-sparkplug.py RAILMON SRC UPLINK_BUILD [SECONDS] - what `[sparkplug]`
costs `railmon run`, to show issue #33's claim "it never slows acquisition
or the railmon uplink": two `railmon run` at the same time on the same
paced workload (bench-paced's live board: emu-regional's two CAN buses
from a trace of gen-load-trace.py at 70% load, about 5,000 frames/s, DBC
decoding, the log), each with its railmon uplink to one mosquitto, one of
them also with `[sparkplug]` to it (its DDATA read by a mosquitto_sub, the
host), SECONDS (default 30, else RAILMON_BENCH_SECS) after 3 s of warm-up.
Both run at once so the machine's load is the same for both.

Figures, over the same window:
  - CPU of the bus threads (rx-*), the collector, the forwarder and the
    Sparkplug thread (named "sparkplug"): utime + stime from
    /proc/PID/task, in % of one core
  - ring drops: the daemon's ring_drops (railmon stat --json) at the end
    against the start
  - the railmon uplink as a consumer sees it (paho, protoc's railmon_pb2
    from UPLINK_BUILD): Batches/s on railmon/<vehicle>/data and their
    latency, the arrival time less the Batch's newest record time
    (records are stamped with CLOCK_REALTIME as the paced trace is read),
    p50 and p90
  - the Sparkplug thread's CPU per 1000 frames/s
and a table of ratios with/without.  A benchmark: it prints, it asserts
nothing on times (it fails only if a run did not happen: no frames, no
Batches, no DDATA).  Run it more than once: the ratios move from run to
run by the machine's load (docs/figures.md has two runs)."""
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt

RAILMON, SRC, UPLINK_BUILD = (os.path.realpath(x) for x in sys.argv[1:4])
SECS = int(sys.argv[4] if len(sys.argv) > 4 else os.environ.get("RAILMON_BENCH_SECS", "30"))
WARM_S = 3
sys.path.insert(0, UPLINK_BUILD)
import railmon_pb2  # noqa: E402
MOSQUITTO = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"
TCK = os.sysconf("SC_CLK_TCK")
RUNS = ("without", "with")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def threads_cpu(pid):
    """{thread name: CPU ticks (utime + stime)}, threads of one name summed."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as fh:
                st = fh.read()
        except OSError:
            continue  # a thread gone meanwhile
        name = st[st.index("(") + 1:st.rindex(")")]
        f = st[st.rindex(")") + 2:].split()
        out[name] = out.get(name, 0) + int(f[11]) + int(f[12])
    return out


def stat(sock):
    """railmon stat --json of a running daemon: (daemon line, bus items sum)."""
    r = subprocess.run([RAILMON, "stat", "--socket", sock, "--json"], capture_output=True, text=True, timeout=30)
    daemon, items = {}, 0
    for line in r.stdout.splitlines():
        j = json.loads(line)
        if j.get("name") == "daemon":
            daemon = j
        elif j.get("kind") in ("can", "canfd", "trace", "can-trace"):
            items += j.get("items", 0)
    return daemon, items


class Uplink:
    """The railmon uplink's consumer: every Batch's arrival and newest record time, per vehicle."""

    def __init__(self, port):
        self.got, self.lock, self.ready = {}, threading.Lock(), threading.Event()
        self.c = mqtt.Client(client_id="bench-spb-uplink-%d" % os.getpid())
        self.c.on_connect = lambda c, u, f, rc: c.subscribe("railmon/+/data", qos=1)
        self.c.on_subscribe = lambda c, u, m, q: self.ready.set()
        self.c.on_message = self.on_message
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        if not self.ready.wait(30):
            raise SystemExit("the uplink consumer did not subscribe")

    def on_message(self, c, u, msg):
        now = time.time_ns()
        b = railmon_pb2.Batch()
        b.ParseFromString(msg.payload)
        newest = None
        for col in (b.can, b.samples):
            if len(col.t_delta_ns):
                t = b.t0_ns + sum(col.t_delta_ns)
                newest = t if newest is None else max(newest, t)
        if newest is None or b.historical:
            return  # a dictionary or a backlog Batch: no live latency
        with self.lock:
            self.got.setdefault(b.vehicle, []).append((now, now - newest))


with tempfile.TemporaryDirectory(prefix="bench-spb-", dir="/var/tmp") as tmp:
    procs = []
    try:
        port = free_port()
        conf = os.path.join(tmp, "mosquitto.conf")
        with open(conf, "w") as fh:
            fh.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 100000\n"
                     % port)
        procs.append(subprocess.Popen([MOSQUITTO, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        end = time.monotonic() + 30
        while True:  # the broker listening: connect until it accepts
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > end:
                    raise SystemExit("mosquitto did not start")
                time.sleep(0.05)  # polling a port, bounded by end
        # the Sparkplug host: every DDATA delivered to a subscriber
        sub = subprocess.Popen(["stdbuf", "-oL", "mosquitto_sub", "-p", str(port), "-t", "spBv1.0/#", "-d"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace")
        procs.append(sub)
        for line in sub.stdout:
            if "SUBACK" in line:
                break
        threading.Thread(target=lambda: [None for _ in sub.stdout], daemon=True).start()  # drained
        uplink = Uplink(port)

        trace = os.path.join(tmp, "load.log")
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "system", "gen-load-trace.py"),
                        str(SECS + WARM_S + 15), "0.7", trace], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "system", "live-board.py"), SRC, trace,
                        os.path.join(tmp, "live.ini")], check=True)
        with open(os.path.join(tmp, "live.ini")) as fh:
            live = fh.read()
        live = re.sub(r"\n\[uplink\][^\[]*", "\n", live)  # the operator's broker and TLS: not here
        run, socks = {}, {}
        for name in RUNS:
            socks[name] = "@railmon-bench-spb-%d-%s" % (os.getpid(), name)
            board = re.sub(r"^vehicle = .*$", "vehicle = BENCH-%s\nstat_socket = %s" % (name.upper(), socks[name]),
                           live, count=1, flags=re.M)
            board += "\n[uplink]\nbroker = mqtt://127.0.0.1:%d\n" % port
            if name == "with":
                board += "\n[sparkplug]\nbroker = mqtt://127.0.0.1:%d\ngroup_id = Bench\n" % port
            path = os.path.join(tmp, name + ".ini")
            with open(path, "w") as fh:
                fh.write(board)
            err = open(os.path.join(tmp, name + ".err"), "w")
            run[name] = subprocess.Popen([RAILMON, "run", "--board", path, "--data", os.path.join(tmp, name),
                                          "--duration", str(SECS + WARM_S + 5)], stdout=subprocess.DEVNULL,
                                         stderr=err)
            procs.append(run[name])
        # the warm-up: connected, the first Batches gone (the window's
        # edges are the measurement's, not a wait for a peer)
        time.sleep(WARM_S)
        a = {n: (threads_cpu(run[n].pid), stat(socks[n]), time.monotonic()) for n in RUNS}
        time.sleep(SECS)
        b = {n: (threads_cpu(run[n].pid), stat(socks[n]), time.monotonic()) for n in RUNS}
        t_a, t_b = time.time_ns() - int((time.monotonic() - a["with"][2]) * 1e9), time.time_ns()
        for n in RUNS:
            if run[n].wait(timeout=120) != 0:
                with open(os.path.join(tmp, n + ".err")) as fh:
                    raise SystemExit("railmon run (%s) exit %d: %s" % (n, run[n].returncode, fh.read()))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=30)
    with open(os.path.join(tmp, "with.err")) as fh:
        said = [line.strip() for line in fh if "sparkplug to" in line]

rows, fig = [], {}
for n in RUNS:
    (c0, (d0, i0), m0), (c1, (d1, i1), m1) = a[n], b[n]
    secs = m1 - m0

    def pct(pred):
        return sum(c1.get(k, 0) - c0.get(k, 0) for k in c1 if pred(k)) / TCK / secs * 100

    lat = [(t, ms) for t, ms in uplink.got.get("BENCH-" + n.upper(), []) if t_a <= t <= t_b]
    fps = (i1 - i0) / secs
    f = fig[n] = {
        "frames/s": fps,
        "bus threads CPU %": pct(lambda k: k.startswith("rx-")),
        "collector CPU %": pct(lambda k: k == "collector"),
        "forwarder CPU %": pct(lambda k: k == "forwarder"),
        "sparkplug thread CPU %": pct(lambda k: k == "sparkplug"),
        "process CPU %": pct(lambda k: True),
        "ring drops": d1.get("ring_drops", 0) - d0.get("ring_drops", 0),
        "uplink Batches/s": len(lat) / secs,
        "uplink latency p50 ms": statistics.median(x for _, x in lat) / 1e6 if lat else float("nan"),
        "uplink latency p90 ms": statistics.quantiles([x for _, x in lat], n=10)[-1] / 1e6 if len(lat) > 1
        else float("nan"),
        "sparkplug CPU %/kfps": pct(lambda k: k == "sparkplug") / (fps / 1000) if fps else float("nan"),
        "DDATA/s": (d1.get("spb_ddata", 0) - d0.get("spb_ddata", 0)) / secs,
    }
print("sparkplug: %d s window of two `railmon run` at once on one paced trace (emu-regional, 2 CAN buses), "
      "with and without [sparkplug]" % SECS)
print("%-26s %12s %12s %12s" % ("figure", "without", "with", "with/without"))
for k in fig["with"]:
    w, o = fig["with"][k], fig["without"][k]
    ratio = "%.2fx" % (w / o) if o and o == o and w == w else "-"
    print("%-26s %12.3f %12.3f %12s" % (k, o, w, ratio))
print("run (with):", said[-1] if said else None)
bad = [n for n in RUNS if not fig[n]["frames/s"] or not fig[n]["uplink Batches/s"]]
if bad or not fig["with"]["DDATA/s"]:
    raise SystemExit("a run did not happen: %r" % fig)
