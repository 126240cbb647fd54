#!/usr/bin/python3
# test-uplink-reduce-emu.py RAILMON SRCDIR PB2DIR [SECONDS [SPEED]] - the
# reduced uplink (issue 32) on the regional EMU's board at 70% bus load,
# with the real peers: gen-emu-trace.py writes SECONDS (default 20) of both
# CAN buses at 70% of their bitrate by frame timing, every frame a DBC
# message with a train's signal behaviour (slow analog values with noise,
# counters, states, an AC waveform); `railmon run` replays it at SPEED
# (default 4) times real time through the board emu-regional-reduce.ini
# (its policy documented there), once with every policy removed (`all`)
# and once as committed; a real mosquitto, `railmon recv --log` on the
# ground, mosquitto_sub capturing every payload on railmon/<vehicle>/data.
#
# Checks, against `railmon export` of the vehicle's full log:
#  * all: the ground log is the vehicle log record for record;
#  * reduced: the ground has 0 missing and the rest on board (recv's
#    summary), every event, no raw frame, no sample of a `none` signal;
#    at every sample of every other channel the last value the ground
#    received is within the signal's deadband of the true value (exactly
#    it for `change`) and less than 10 s old;
#  * bytes: prints the table (policy, messages, records, bytes,
#    bytes/hour, ratio to all) and fails below 10x fewer bytes.
import csv
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

RAILMON, SRC, PB2_DIR = (os.path.abspath(a) for a in sys.argv[1:4])
SECONDS = float(sys.argv[4]) if len(sys.argv) > 4 else 20.0
SPEED = int(sys.argv[5]) if len(sys.argv) > 5 else 1
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, PB2_DIR)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import railmon_pb2  # noqa: E402
from railmon_test import die_with_us, free_port, start_peer, stop_peers, wait_for  # noqa: E402

T = tempfile.mkdtemp(prefix="railmon-reduce-emu-")
TEMPLATE = os.path.join(HERE, "emu-regional-reduce.ini")
TRACE = os.path.join(T, "emu.log")
EVERY_NS = 10 * 10**9


def fail(msg):
    print("FAIL:", msg)
    for f in sorted(os.listdir(T)):
        if f.endswith(".err"):
            print("---", f)
            print(open(os.path.join(T, f), errors="replace").read()[-3000:])
    stop_peers()
    sys.exit(1)


def policy():
    """The committed board's per-signal policy: {signal: deadband} (0 for
    change) and the set of signals not sent; every other signal goes by
    its bus's `change, every 10s`."""
    band, none, sect = {}, set(), None
    for line in open(TEMPLATE):
        line = line.split(";")[0].strip()
        m = re.match(r"\[signal (\w+)\]$", line)
        if line.startswith("["):
            sect = m.group(1) if m else None
        elif sect and line.startswith("uplink ="):
            v = line.split("=", 1)[1].strip()
            if v == "none":
                none.add(sect)
            else:
                m = re.match(r"deadband ([0-9.]+), every 10s$", v)
                if not m:
                    fail(f"the test reads only 'deadband X, every 10s' and none: [signal {sect}] {v}")
                band[sect] = float(m.group(1))
    return band, none


def board(vehicle, reduced):
    s = open(TEMPLATE).read()
    for k, v in {"VEHICLE": vehicle, "BATCH_MS": str(1000 // SPEED), "DIR": f"{T}/{vehicle}",
                 "BROKER": f"mqtt://127.0.0.1:{PORT}", "TRACE": TRACE, "SPEED": str(SPEED), "SRC": SRC}.items():
        s = s.replace(f"@{k}@", v)
    if not reduced:
        # `all`: the same board without a policy anywhere
        s = re.sub(r"^\[signal \w+\]\n", "", s, flags=re.M)
        s = re.sub(r"^uplink(_frames)? = .*\n", "", s, flags=re.M)
    path = os.path.join(T, vehicle + ".ini")
    open(path, "w").write(s)
    return path


def stat_json(vehicle):
    p = subprocess.run([RAILMON, "stat", "--data", f"{T}/{vehicle}", "--json"], capture_output=True, text=True)
    rows = {}
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "name" in d:
            rows[d["name"]] = d
    return rows


def export(data):
    p = subprocess.run([RAILMON, "export", "--data", data, "--order", "seq"], capture_output=True, text=True)
    if p.returncode:
        fail(f"export {data}: {p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def record_and_forward(vehicle, reduced):
    err = open(os.path.join(T, vehicle + ".err"), "w")
    run = start_peer([RAILMON, "run", "--board", board(vehicle, reduced)], stderr=err)

    def done():
        s = stat_json(vehicle)
        return (s.get("vehicle", {}).get("items", 0) + s.get("traction", {}).get("items", 0) == FRAMES
                and s.get("uplink", {}).get("state") == "connected" and s.get("uplink", {}).get("backlog") == 0)
    if not wait_for(f"{vehicle}: trace read and forwarded", done, timeout=180 + 4 * SECONDS):
        fail(f"{vehicle}: the trace was not recorded and forwarded")
    run.terminate()
    if run.wait(timeout=60) != 0:
        fail(f"{vehicle}: run exited {run.returncode}")
    if not re.search(r"\b0 ring drops", open(os.path.join(T, vehicle + ".err")).read()):
        fail(f"{vehicle}: ring drops")
    last = export(f"{T}/{vehicle}")[-1]["seq"]
    if not wait_for(f"{vehicle}: the ground has seq {last}", lambda: os.path.isdir(f"{T}/ground/{vehicle}") and
                    (export(f"{T}/ground/{vehicle}") or [{"seq": 0}])[-1]["seq"] == last, timeout=120):
        fail(f"{vehicle}: the ground never got the log's last record, seq {last}")


def captured(vehicle):
    out = []
    for line in open(os.path.join(T, "sub.out")):
        topic, _, hexpay = line.rstrip("\n").partition(" ")
        if topic == f"railmon/{vehicle}/data":
            out.append(bytes.fromhex(hexpay))
    return out


def port_open():
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        return True
    except OSError:
        return False


die_with_us()
p = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gen-emu-trace.py"), str(SECONDS), "0.7", TRACE],
                   capture_output=True, text=True)
if p.returncode:
    fail(f"gen-emu-trace.py: {p.stderr}")
print("trace:", p.stdout.strip())
FRAMES = sum(1 for _ in open(TRACE))
BAND, NONE = policy()

PORT = free_port()
conf = os.path.join(T, "mosq.conf")
with open(conf, "w") as f:
    f.write(f"listener {PORT} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 1000000\n"
            + ("user root\n" if os.getuid() == 0 else ""))
start_peer(["mosquitto", "-c", conf], stderr=open(os.path.join(T, "mosq.err"), "w"))
if not wait_for("mosquitto listening", port_open, 20):
    fail("mosquitto did not start")
sub = start_peer(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(PORT), "-q", "1", "-t", "railmon/+/data",
                  "-t", "probe", "-F", "%t %x"], stdout=open(os.path.join(T, "sub.out"), "w"),
                 stderr=open(os.path.join(T, "sub.err"), "w"))
recv = start_peer([RAILMON, "recv", "--broker", f"mqtt://127.0.0.1:{PORT}", "--format", "none", "--log",
                   f"{T}/ground", "--client-id", "ground-reduce-emu"], stderr=open(os.path.join(T, "recv.err"), "w"))
if not wait_for("recv subscribed", lambda: "subscribed" in open(os.path.join(T, "recv.err")).read(), 20):
    fail("recv did not subscribe")
if not wait_for("mosquitto_sub subscribed", lambda: subprocess.run(
        ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(PORT), "-q", "1", "-t", "probe", "-m", "x"]
        ).returncode == 0 and "probe 78" in open(os.path.join(T, "sub.out")).read(), 20):
    fail("mosquitto_sub did not subscribe")

# check accepts the committed board (every signal it names is in a DBC)
p = subprocess.run([RAILMON, "check", "--board", board("EMU-RED", True)], capture_output=True, text=True)
if p.returncode or "[traction] channels change, every 10s, frames none" not in p.stdout:
    fail(f"check of the reducing board:\n{p.stdout}{p.stderr}")

record_and_forward("EMU-ALL", False)
record_and_forward("EMU-RED", True)
recv.terminate()
recv.wait(timeout=60)
sub.terminate()
sub.wait(timeout=10)
said = open(os.path.join(T, "recv.err")).read()

# --- all: the ground's log is the vehicle's
vall, gall = export(f"{T}/EMU-ALL"), export(f"{T}/ground/EMU-ALL")
if vall != gall:
    fail("EMU-ALL: the ground log's records differ from the vehicle log's")
pay_all = captured("EMU-ALL")
kinds = {}
for r in vall:
    kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
print(f"all: {len(pay_all)} payloads; ground export = vehicle export ({len(vall)} records: "
      + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())) + ")")

# --- reduced: against the full log
vred, gred = export(f"{T}/EMU-RED"), export(f"{T}/ground/EMU-RED")
last = int(vred[-1]["seq"])
line = [ln for ln in said.splitlines() if "EMU-RED log" in ln]
gseqs = {int(r["seq"]) for r in gred}
on_board = len(vred) - len(gseqs)
if not line or f"seq 1..{last}, 0 missing" not in line[0] or f"{on_board} on board" not in line[0]:
    fail(f"EMU-RED: recv did not say seq 1..{last}, 0 missing, {on_board} on board: {line}")
vmap = {int(r["seq"]): r for r in vred}
for r in gred:
    v = vmap.get(int(r["seq"]))
    if v is None or (r["time_ns"], r["kind"], r["channel"], r["value"], r["event"]) != \
       (v["time_ns"], v["kind"], v["channel"], v["value"], v["event"]):
        fail(f"EMU-RED: seq {r['seq']} differs from the vehicle's record")
if any(int(r["seq"]) not in gseqs for r in vred if r["kind"] == "event"):
    fail("EMU-RED: an event was not sent")
if any(r["kind"] == "can" for r in gred):
    fail("EMU-RED: a raw frame was sent with uplink_frames = none")

ground_last, worst, checked, sent = {}, {}, 0, {}
for r in vred:
    if r["kind"] != "sample":
        continue
    ch, seq, t, v = r["channel"], int(r["seq"]), int(r["time_ns"]), float(r["value"])
    short = r["name"].split(".")[-1]
    if short in NONE:
        if seq in gseqs:
            fail(f"EMU-RED: {r['name']} was sent with uplink = none")
        continue
    if seq in gseqs:
        ground_last[ch] = (t, v)
        sent[short] = sent.get(short, 0) + 1
    if ch not in ground_last:
        fail(f"EMU-RED: {r['name']} has a value on board at seq {seq} and none at the ground")
    gt, gv = ground_last[ch]
    band = BAND.get(short, 0.0)
    if (band and abs(v - gv) >= band) or (not band and v != gv):
        fail(f"EMU-RED: {r['name']} at seq {seq}: true {v}, the ground's {gv} (deadband {band or 'change'})")
    if t - gt >= EVERY_NS:
        fail(f"EMU-RED: {r['name']} at seq {seq}: the ground's value is {(t - gt) / 1e9:.3f} s old")
    worst[short] = max(worst.get(short, 0.0), abs(v - gv))
    checked += 1
# `every 10s`: a state that never changes still goes again after 10 s
if SECONDS * 10**9 / SPEED > 2 * EVERY_NS and sent.get("Direction", 0) < 2:
    fail(f"EMU-RED: Direction (constant) sent {sent.get('Direction', 0)} times in {SECONDS:g} s with every 10s")
if len(ground_last) < 40:
    fail(f"EMU-RED: only {len(ground_last)} channels reached the ground (both DBCs have 46 not `none`)")
print(f"reduced: {len(gred)} of {len(vred)} records sent, {on_board} on board, 0 missing; {checked} samples of "
      f"{len(ground_last)} channels checked within their deadband (exact for change) and under 10 s old")
print("  largest error / deadband:", ", ".join(f"{k} {worst.get(k, 0):.4g}/{d:g}" for k, d in sorted(BAND.items())))
print("  samples sent per signal:", ", ".join(f"{k} {n}" for k, n in sorted(sent.items(), key=lambda x: -x[1])))

# --- bytes over the air
pay_red = captured("EMU-RED")
for p in pay_red:
    b = railmon_pb2.Batch()
    b.ParseFromString(p)
    if not b.HasField("seal") and not b.reduced:
        fail(f"EMU-RED: a data Batch (seq {b.first_seq}) not flagged reduced")
ball, bred = sum(map(len, pay_all)), sum(map(len, pay_red))
print(f"bytes on railmon/<vehicle>/data, regional EMU at 70% bus load ({FRAMES} frames in {SECONDS:g} s, "
      f"replayed at {SPEED}x):")
print(f"  {'policy':<8} {'messages':>8} {'records':>8} {'bytes':>10} {'bytes/hour':>12} {'ratio':>7}")
for name, pays, recs, b in (("all", pay_all, len(vall), ball), ("reduced", pay_red, len(gred), bred)):
    print(f"  {name:<8} {len(pays):>8} {recs:>8} {b:>10} {b * 3600 / SECONDS:>12.0f} {ball / b:>6.1f}x")
if ball < 10 * bred:
    fail(f"the reduced stream is only {ball / bred:.1f}x smaller than all")
stop_peers()
shutil.rmtree(T)
print("uplink-reduce-emu: ok")
