#!/usr/bin/python3
# test-uplink-request-run.py RAILMON SRCDIR PB2DIR - full-rate requests
# (issue 32) with the real peers: mosquitto with passwords and the example
# ACL (uplink/examples/mosquitto-acl), `railmon run` recording the demo
# journey (cli/demo/train.log with its DBC, 10x real time) with a reducing
# board (REQ-1: `change, every 10s`, raw frames none), and the ground as a
# paho client (user ground) decoding .../data with protoc's Python code.
#
# After the journey is forwarded (reduced):
# 0. `railmon request`'s usage errors (exit 2) and a login the broker
#    refuses (exit 1, said);
# 1. the ground asks with `railmon request` for a sixth of the journey (win-1): Batches
#    arrive whole (not reduced) and historical, and together hold every
#    seq of the vehicle's records in that time (`railmon export` of its
#    log); the round trip (publish to the last of them) is printed;
# 2. another vehicle (OTHER-1) publishes a request on REQ-1's topic: the
#    broker's ACL drops it; win-1 asked again (`railmon request`, the same range: the same
#    default id) is ignored; then win-2
#    (a twentieth of the journey): only win-2's Batches arrive after win-1's, so neither
#    the refused request nor the repeat sent anything;
# 3. `railmon run` stopped, win-3 published while it is down, run started
#    again: win-3 is served (the broker held it for the vehicle's
#    persistent session; the pending-request file across a restart is
#    test uplink-request-fwd's).
import csv
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

RAILMON, SRC, PB2_DIR = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, PB2_DIR)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
import paho.mqtt.client as mqtt  # noqa: E402
import railmon_pb2  # noqa: E402
from mqtt_peers import Broker  # noqa: E402
from railmon_test import die_with_us, start_peer, stop_peer, stop_peers, wait_for  # noqa: E402

T = tempfile.mkdtemp(prefix="railmon-request-")
TRACE = os.path.join(SRC, "cli/demo/train.log")
DBC = os.path.join(SRC, "cli/demo/train.dbc")
ACL = os.path.join(SRC, "uplink/examples/mosquitto-acl")
FRAMES = sum(1 for _ in open(TRACE))
USERS = {"ground": "g-pw", "REQ-1": "v-pw", "OTHER-1": "o-pw"}
SPEED = 10


def fail(msg):
    print("FAIL:", msg)
    for f in sorted(os.listdir(T)):
        if f.endswith(".err"):
            print("---", f)
            print(open(os.path.join(T, f), errors="replace").read()[-3000:])
    stop_peers(signal.SIGKILL)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def records(b):
    """How many records a Batch holds (every column's times)."""
    return sum(len(getattr(b, col).t_delta_ns) for col in ("can", "samples", "events", "texts", "trdp"))


class Ground:
    """The ground's client: every Batch on railmon/REQ-1/data, decoded, with
    its arrival time."""

    def __init__(self, port):
        self.got = []
        self.lock = threading.Lock()
        self.c = mqtt.Client(client_id="request-ground", clean_session=True)
        self.c.username_pw_set("ground", USERS["ground"])
        self.c.on_message = self.on_message
        sub = threading.Event()
        self.c.on_subscribe = lambda *a: sub.set()
        self.c.connect("127.0.0.1", port, 20)
        self.c.loop_start()
        self.c.subscribe("railmon/REQ-1/data", 1)
        check(sub.wait(20), "the ground subscribed")

    def on_message(self, c, u, m):
        b = railmon_pb2.Batch()
        b.ParseFromString(m.payload)
        with self.lock:
            self.got.append((time.monotonic(), b.first_seq, records(b), b.reduced, b.historical))

    def whole_since(self, i):
        """The whole (not reduced) historical Batches from index i on."""
        with self.lock:
            return [g for g in self.got[i:] if not g[3] and g[4]]

    def n(self):
        with self.lock:
            return len(self.got)


def publish(port, user, topic, line):
    c = mqtt.Client(client_id="request-pub-%s" % user, clean_session=True)
    c.username_pw_set(user, USERS[user])
    c.connect("127.0.0.1", port, 20)
    c.loop_start()
    c.publish(topic, line, qos=1).wait_for_publish(20)
    t = time.monotonic()
    c.disconnect()
    c.loop_stop()
    return t


def export(data):
    p = subprocess.run([RAILMON, "export", "--data", data, "--order", "seq"], capture_output=True, text=True)
    check(p.returncode == 0, f"export {data}: {p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def stat_uplink():
    import json
    p = subprocess.run([RAILMON, "stat", "--data", f"{T}/REQ-1", "--json"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("name") in ("uplink", "vehicle"):
            yield d


def start_run():
    err = open(os.path.join(T, "run.err"), "a")
    return start_peer([RAILMON, "run", "--board", BOARD], stderr=err)


def window(rows, lo, hi):
    """The vehicle's records' seqs with lo <= t < hi (export's time_ns, in s)."""
    return {int(r["seq"]) for r in rows if lo <= int(r["time_ns"]) / 1e9 < hi}


def covered(batches):
    s = set()
    for _, first, n, _, _ in batches:
        s.update(range(first, first + n))
    return s


def railmon_request(lo, hi, *extra, password=None):
    """`railmon request` for [lo, hi) as the ground: (exit code, stdout, stderr)."""
    pwfile = os.path.join(T, "ground.pw")
    with open(pwfile, "w") as f:
        f.write((password or USERS["ground"]) + "\n")
    p = subprocess.run([RAILMON, "request", "--broker", f"mqtt://127.0.0.1:{PORT}", "--vehicle", "REQ-1",
                        "--from", "%.9f" % lo, "--to", "%.9f" % hi, "--username", "ground", "--password-file", pwfile,
                        *extra], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def serve(ground, port, rid, lo, hi, rows, at, what):
    """Publish request rid for [lo, hi) (rid None: with `railmon request`)
    and wait until whole Batches from index at on cover its records; the
    round trip in seconds (from the broker's acknowledgement)."""
    want = window(rows, lo, hi)
    check(want, f"{what}: records in [{lo}, {hi})")
    if rid is None:
        rc, out, err = railmon_request(lo, hi)
        t0 = time.monotonic()
        check(rc == 0 and "published on railmon/REQ-1/request" in out, f"{what}: railmon request: {rc} {out} {err}")
    else:
        t0 = publish(port, "ground", "railmon/REQ-1/request", f"{rid} {int(lo * 1e9)} {int(hi * 1e9)}\n")
    try:
        wait_for(f"{what}: the window's records", lambda: want <= covered(ground.whole_since(at)), 60)
    except AssertionError:
        fail(f"{what}: {len(want - covered(ground.whole_since(at)))} of {len(want)} records never came whole")
    last = max(g[0] for g in ground.whole_since(at))
    return want, last - t0


die_with_us()
pw = os.path.join(T, "passwd")
for i, (u, p) in enumerate(USERS.items()):
    subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [pw, u, p], check=True)
# mqtt_peers.Broker (tests/ground): started once it says it runs
broker = Broker(tmp=T, extra=f"allow_anonymous false\npassword_file {pw}\nacl_file {ACL}\n")
PORT = broker.port
BOARD = os.path.join(T, "REQ-1.ini")
with open(BOARD, "w") as f:
    f.write(f"[board]\nvehicle = REQ-1\nbatch_ms = {500 // SPEED}\nhealth_interval_s = 10\n"
            f"[storage]\ndir = {T}/REQ-1\nsync_window_ms = 50\n"
            f"[uplink]\nbroker = mqtt://127.0.0.1:{PORT}\nusername = REQ-1\npassword = {USERS['REQ-1']}\n"
            f"[can vehicle]\ndriver = trace\nfile = {TRACE}\ndbc = {DBC}\nspeed = {SPEED}\n"
            "uplink = change, every 10s\nuplink_frames = none\n")
ground = Ground(PORT)
run = start_run()


def forwarded():
    s = {d["name"]: d for d in stat_uplink()}
    return (s.get("vehicle", {}).get("items") == FRAMES and s.get("uplink", {}).get("state") == "connected"
            and s.get("uplink", {}).get("backlog") == 0)


try:
    wait_for("REQ-1: the journey recorded and forwarded", forwarded, 120 + 600 // SPEED)
except AssertionError as e:
    fail(str(e))
check(ground.n() and all(g[3] for g in ground.got if g[2] > 1), "the journey went reduced")
rows = export(f"{T}/REQ-1")
t_first, t_last = int(rows[0]["time_ns"]) / 1e9, int(rows[-1]["time_ns"]) / 1e9
SPAN = t_last - t_first      # record time: the journey at 10x (about 6 s)
check(SPAN > 3, f"a journey of {SPAN:.1f} s")

# railmon request's own refusals: usage (2), a login the broker refuses (1)
for args, words in ((["--to", "5"], "--from"), (["--from", "x", "--to", "5"], "--from 'x'"),
                    (["--from", "5", "--to", "5"], "after --from"),
                    (["--from", "1", "--to", "5", "--id", ".."], "--id"),
                    (["--from", "1", "--to", "5", "--channel", "a b"], "--channel 'a b'"),
                    (["--from", "1", "--to", "5", "--channel", "S", "--channel", "S"], "--channel 'S' given twice"),
                    (["--from", "1", "--to", "5"] + [a for i in range(9) for a in ("--channel", f"c{i}")],
                     "--channel: at most 8"),
                    (["--from", "1", "--to", "5", "--channel", "x" * 64], "1-63 characters")):
    p = subprocess.run([RAILMON, "request", "--broker", f"mqtt://127.0.0.1:{PORT}", "--vehicle", "REQ-1", *args],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and words in p.stderr and p.stderr.startswith("railmon request: "),
          f"request {args}: exit {p.returncode}, {p.stderr!r}")
rc, out, err = railmon_request(t_first, t_last, password="wrong")
check(rc == 1 and "the broker refused the connection" in err, f"a wrong password: exit {rc}, {err!r}")
print("railmon request: 8 usage errors (exit 2), a refused login (exit 1):", err.strip())

# 1. win-1: a sixth of the journey, from its middle
lo, hi = t_first + SPAN / 2, t_first + SPAN * 2 / 3
at = ground.n()
want1, rtt = serve(ground, PORT, None, lo, hi, rows, at, "win-1 (railmon request)")
b1 = ground.whole_since(at)
print(f"win-1: {len(want1)} records in {hi - lo:.1f} s of record time came in {len(b1)} whole historical Batches; "
      f"request round trip {rtt * 1000:.0f} ms (under load)")

# 2. another vehicle's request (ACL), win-1 again, then win-2
publish(PORT, "OTHER-1", "railmon/REQ-1/request", f"evil {int(t_first * 1e9)} {int(t_last * 1e9)}\n")
rc, out, err = railmon_request(lo, hi)
check(rc == 0, f"railmon request again: {rc} {err}")
at2 = ground.n()
want2, rtt2 = serve(ground, PORT, "win-2", t_first + SPAN * 0.05, t_first + SPAN * 0.1, rows, at2, "win-2")
extra = covered(ground.whole_since(at)) - covered(b1) - covered(ground.whole_since(at2))
check(len(ground.whole_since(at)) == len(b1) + len(ground.whole_since(at2)) and not extra,
      f"only win-2 was sent after win-1: {len(ground.whole_since(at)) - len(b1)} Batches")
# win-2's Batches hold only seqs near its window: not the whole journey
# (what OTHER-1's request would have sent)
check(len(covered(ground.whole_since(at2))) < len(rows) / 4,
      f"win-2 sent {len(covered(ground.whole_since(at2)))} seqs of the journey's {len(rows)}")
print(f"win-2: {len(want2)} records, round trip {rtt2 * 1000:.0f} ms; the repeat of win-1 and OTHER-1's request "
      "sent nothing")

# 3. win-3 published while run is down
run.send_signal(signal.SIGTERM)
check(run.wait(timeout=60) == 0, f"run exited {run.returncode}")
at3 = ground.n()
lo3, hi3 = t_first + SPAN * 0.2, t_first + SPAN * 0.25
want3 = window(rows, lo3, hi3)
publish(PORT, "ground", "railmon/REQ-1/request", f"win-3 {int(lo3 * 1e9)} {int(hi3 * 1e9)}\n")
run = start_run()
try:
    wait_for("win-3 after the restart", lambda: want3 <= covered(ground.whole_since(at3)), 60)
except AssertionError:
    fail("win-3, published while the vehicle was down, was not served after its restart")
print(f"win-3: published while run was down, {len(want3)} records served after its restart")
stop_peer(run)
broker.stop()
stop_peers()
shutil.rmtree(T, ignore_errors=True)
print("OK")
