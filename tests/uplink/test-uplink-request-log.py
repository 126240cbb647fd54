#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-uplink-request-log.py RAILMON SRCDIR PB2DIR - a full-rate request
# (issue 32) reaching `recv --log`'s ground log, with the real peers:
# mosquitto with passwords and the example ACL, `railmon run` recording the
# demo journey (cli/demo/train.log with its DBC, 10x real time) with a
# reducing board (REQ-3: per-signal `deadband X, every 10s`, raw frames
# none), `railmon recv --log` as the ground's receiver and `railmon request`
# asking for a third of the journey.
#
# After the journey is forwarded reduced: `railmon export` of the ground
# vehicle directory lacks most of the window's records (they are on board).
# After the request: the answers (the vehicle log's whole Batches over
# ranges the ground log holds reduced) are in an answers log beside it
# (<log id>/answers.1/), nothing of the vehicle's went to refused/, and the
# export of the ground vehicle directory holds every record of the window
# exactly as `railmon export` of the vehicle's own log has it (seq, time,
# name, value), each seq once, and outside the window still the reduced
# records only.  Then a request naming two channels over an earlier part
# (reduced answers, in answers.2): the export holds every sample of those
# channels the vehicle's log has there, and every other record as before.
# `railmon verify` of the ground log (the vehicle signs Seals every
# second) proves answers.1's whole Batches by its Seals' digest lists,
# names answers.2's reduced ones, and names a whole answer changed.
# Catches: the answer refused as a conflict (the bug of issue 32: the
# ground log never gets the full-rate records), an answer's records
# exported twice or beside the reduced ones (a seq twice), the wrong
# record winning (another value or time than the vehicle's).
import csv
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

RAILMON, SRC, PB2_DIR = sys.argv[1:4]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, PB2_DIR)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
sys.dont_write_bytecode = True
from mqtt_peers import Broker, Recv, cleanup  # noqa: E402
from railmon_test import die_with_us, start_peer, stop_peer, stop_peers, wait_for  # noqa: E402

T = tempfile.mkdtemp(prefix="railmon-request-log-")
TRACE = os.path.join(SRC, "cli/demo/train.log")
DBC = os.path.join(SRC, "cli/demo/train.dbc")
ACL = os.path.join(SRC, "uplink/examples/mosquitto-acl")
FRAMES = sum(1 for _ in open(TRACE))
USERS = {"ground": "g-pw", "REQ-3": "v-pw"}
SPEED = 10
GROUND = os.path.join(T, "ground")
# deadbands as test-uplink-reduce.py's, about 50x each signal's resolution
DEADBANDS = {
    "Speed": 0.5, "Acceleration": 0.05, "BrakePipePressure": 0.05, "BrakeCylinder1": 0.05,
    "BrakeCylinder2": 0.05, "MainReservoir": 0.5, "TractiveEffort": 5, "MotorTemperature": 2,
    "MotorCurrent": 5, "MotorSpeed": 50, "Odometer": 0.05, "TripDistance": 50, "CatenaryVoltage": 100,
    "LineCurrent": 5,
}

broker = None


def finish():
    stop_peers()
    cleanup()
    if broker:
        broker.stop()
    shutil.rmtree(T, ignore_errors=True)


def fail(msg):
    print("FAIL:", msg)
    for f in sorted(os.listdir(T)):
        if f.endswith(".err"):
            print("---", f)
            print(open(os.path.join(T, f), errors="replace").read()[-3000:])
    finish()
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def export(data, check_rc=True, args=()):
    p = subprocess.run([RAILMON, "export", "--data", data, "--order", "seq", *args], capture_output=True, text=True)
    if check_rc:
        check(p.returncode == 0, f"export {data}: {p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def key(r):
    return (r["time_ns"], r["kind"], r["name"], r["value"])


def stat_uplink():
    import json
    p = subprocess.run([RAILMON, "stat", "--data", f"{T}/REQ-3", "--json"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("name") in ("uplink", "vehicle"):
            yield d


die_with_us()
pw = os.path.join(T, "passwd")
for i, (u, p) in enumerate(USERS.items()):
    subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [pw, u, p], check=True)
broker = Broker(tmp=T, extra=f"allow_anonymous false\npassword_file {pw}\nacl_file {ACL}\n")
PORT = broker.port
recv = Recv(RAILMON, ["--broker", f"mqtt://127.0.0.1:{PORT}", "--log", GROUND, "--format", "none",
                      "--client-id", "request-log-recv", "--username", "ground"],
            env={"RAILMON_MQTT_PASSWORD": USERS["ground"]})
recv.wait_subscribed()
KEY = os.path.join(T, "vehicle.key")
subprocess.run([RAILMON, "keygen", "--output", KEY], check=True, capture_output=True)
BOARD = os.path.join(T, "REQ-3.ini")
signals = "".join(f"[signal {s}]\nuplink = deadband {d}, every 10s\n" for s, d in DEADBANDS.items())
with open(BOARD, "w") as f:
    f.write(f"[board]\nvehicle = REQ-3\nbatch_ms = {500 // SPEED}\nhealth_interval_s = 10\n"
            f"key = {KEY}\nseal_interval_s = 1\n"
            f"[storage]\ndir = {T}/REQ-3\nsync_window_ms = 50\n"
            f"[uplink]\nbroker = mqtt://127.0.0.1:{PORT}\nusername = REQ-3\npassword = {USERS['REQ-3']}\n"
            f"[can vehicle]\ndriver = trace\nfile = {TRACE}\ndbc = {DBC}\nspeed = {SPEED}\n"
            "uplink = change, every 10s\nuplink_frames = none\n" + signals)
run = start_peer([RAILMON, "run", "--board", BOARD], stderr=open(os.path.join(T, "run.err"), "a"))


def forwarded():
    s = {d["name"]: d for d in stat_uplink()}
    return (s.get("vehicle", {}).get("items") == FRAMES and s.get("uplink", {}).get("state") == "connected"
            and s.get("uplink", {}).get("backlog") == 0)


try:
    wait_for("REQ-3: the journey recorded and forwarded", forwarded, 120 + 600 // SPEED)
except AssertionError as e:
    fail(str(e))
rows = export(f"{T}/REQ-3")
log_end = max(int(r["seq"]) for r in rows) + 1
vehicle = {int(r["seq"]): key(r) for r in rows}


def ground_seqs():
    """seq -> how often the export of the ground vehicle directory has it
    (a log still being written may end in a frame not yet whole: its
    exit status is not judged while waiting)."""
    n = {}
    for r in export(os.path.join(GROUND, "REQ-3"), check_rc=False):
        n[int(r["seq"])] = n.get(int(r["seq"]), 0) + 1
    return n


t_first, t_last = int(rows[0]["time_ns"]) / 1e9, int(rows[-1]["time_ns"]) / 1e9
SPAN = t_last - t_first
lo, hi = t_first + SPAN / 3, t_first + SPAN * 2 / 3
want = {int(r["seq"]) for r in rows if lo <= int(r["time_ns"]) / 1e9 < hi}
# the reduced Batches over the window all in the ground log: a record past
# it arrived (the forwarder sends in seq order)
try:
    wait_for("the reduced journey past the window in the ground log",
             lambda: max(ground_seqs(), default=0) > max(want), 60)
except AssertionError as e:
    fail(str(e))
before = ground_seqs()
missing0 = want - set(before)
check(missing0, f"reduced: all {len(want)} records of the window in the ground log already")
print(f"before the request: {len(missing0)} of the window's {len(want)} records missing from the export of the "
      f"ground log")

pwfile = os.path.join(T, "ground.pw")
with open(pwfile, "w") as f:
    f.write(USERS["ground"] + "\n")
t0 = time.monotonic()
p = subprocess.run([RAILMON, "request", "--broker", f"mqtt://127.0.0.1:{PORT}", "--vehicle", "REQ-3",
                    "--from", "%.9f" % lo, "--to", "%.9f" % hi, "--username", "ground", "--password-file", pwfile],
                   capture_output=True, text=True, timeout=60)
check(p.returncode == 0 and "published on railmon/REQ-3/request" in p.stdout,
      f"railmon request: {p.returncode} {p.stdout} {p.stderr}")


def seq_ranges(seqs):
    """[first, last] runs of a set of seqs, for a failure's words."""
    runs = []
    for q in sorted(seqs):
        if runs and runs[-1][1] + 1 == q:
            runs[-1][1] = q
        else:
            runs.append([q, q])
    return runs


try:
    wait_for("the window in the export of the ground log", lambda: want <= set(ground_seqs()), 60)
except AssertionError:
    # seen once under load (146 of 16961 missing after 60 s), not
    # reproduced: say which seqs, what the ground's log holds and what the
    # vehicle's uplink row says, so the next one names its cause
    gone = want - set(ground_seqs())
    fail("after the request: %d of the window's %d records missing from the export of the ground log (seqs %s of "
         "the window %d..%d); ground log: %s; the vehicle's stat: %s; recv said: %s"
         % (len(gone), len(want), seq_ranges(gone)[:12], min(want), max(want),
            sorted(os.path.relpath(d, GROUND) for d, _, _ in os.walk(os.path.join(GROUND, "REQ-3"))),
            [d for d in stat_uplink() if d.get("name") == "uplink"],
            "".join(ln for ln in recv.lines if "REQ-3" in ln)[-1500:]))
rtt = time.monotonic() - t0

# --- a request naming channels (--channel) over an earlier part of the
# journey: its answers are reduced Batches (those channels' samples and
# the events), behind answers.1's end: they go to answers.2 (one over a
# Batch the whole answer holds already brings nothing new: held already).
# After it the export of the ground log holds every sample of the two
# channels the vehicle's log has in that window, the vehicle's own, and
# every other record of the ground log as before.
# Catches: the answer refused (issue 32's conflict for reduced answers:
# the channels' full rate never in the ground log), records of another
# channel added or changed, a seq twice (below).
CHANNELS = ("VehicleSpeed.Speed", "MotorCurrent")
NAMES = ("VehicleSpeed.Speed", "TractionMotor1.MotorCurrent")
clo, chi = t_first + SPAN / 6, t_first + SPAN / 3
cwant = {int(r["seq"]) for r in rows if clo <= int(r["time_ns"]) / 1e9 < chi and r["name"] in NAMES}
check(len({r["name"] for r in rows if int(r["seq"]) in cwant}) == 2, "both channels in the vehicle's window")
gbefore = {int(r["seq"]): key(r) for r in export(os.path.join(GROUND, "REQ-3"))}
cmissing0 = cwant - set(gbefore)
check(cmissing0, f"channels: all {len(cwant)} samples of the channels' window in the ground log already")
print(f"before the request naming channels: {len(cmissing0)} of the {len(cwant)} samples of "
      f"{' and '.join(NAMES)} in its window missing from the export of the ground log")
p = subprocess.run([RAILMON, "request", "--broker", f"mqtt://127.0.0.1:{PORT}", "--vehicle", "REQ-3",
                    "--from", "%.9f" % clo, "--to", "%.9f" % chi, "--username", "ground", "--password-file", pwfile]
                   + [a for c in CHANNELS for a in ("--channel", c)], capture_output=True, text=True, timeout=60)
check(p.returncode == 0 and "published on railmon/REQ-3/request" in p.stdout,
      f"railmon request --channel: {p.returncode} {p.stdout} {p.stderr}")
try:
    wait_for("the channels' window in the export of the ground log", lambda: cwant <= set(ground_seqs()), 60)
except AssertionError:
    fail("after the request naming channels: %d of the channels' %d samples missing from the export of the "
         "ground log; recv said: %s" % (len(cwant - set(ground_seqs())), len(cwant),
                                       "".join(ln for ln in recv.lines if "REQ-3" in ln)[-1500:]))
gafter = {int(r["seq"]): (key(r), r["name"]) for r in export(os.path.join(GROUND, "REQ-3"))}
cwrong = [q for q in cwant if gafter[q][0] != vehicle[q]]
check(not cwrong, f"channels: {len(cwrong)} samples not the vehicle's, e.g. {cwrong[:3]}")
cadded = set(gafter) - set(gbefore)
cother = [q for q in cadded if gafter[q][1] not in NAMES]
check(not cother, f"channels: {len(cother)} records of other channels added, e.g. {[gafter[q] for q in cother[:3]]}")
changed = [q for q, k in gbefore.items() if gafter.get(q, (None,))[0] != k]
check(not changed, f"channels: {len(changed)} records of the ground log changed or gone, e.g. {changed[:3]}")
# and as asked for: `export --channel` of each, the ground log's against
# the vehicle's log's over the window
for c in NAMES:
    vs = {int(r["seq"]): key(r) for r in export(f"{T}/REQ-3", args=("--channel", c))
          if clo <= int(r["time_ns"]) / 1e9 < chi}
    gs = {int(r["seq"]): key(r) for r in export(os.path.join(GROUND, "REQ-3"), args=("--channel", c))}
    cbad = [q for q, k in vs.items() if gs.get(q) != k]
    check(vs and not cbad, f"export --channel {c} of the ground log: {len(cbad)} of the vehicle's {len(vs)} "
          f"samples in the window missing or other, e.g. {cbad[:3]}")
print(f"after it: 0 of the {len(cwant)} missing, the vehicle's own; {len(cadded)} samples added (the answers' "
      f"Batches reach past the window's edges), all of the two channels; the {len(gbefore)} records before "
      f"unchanged")

rc, err = recv.terminate()
check(rc == 0, f"recv exit {rc}: {err}")
check("answers" in err, f"recv's summary names no answers stored: {err}")
ground = export(os.path.join(GROUND, "REQ-3"))
n = {}
for r in ground:
    n[int(r["seq"])] = n.get(int(r["seq"]), 0) + 1
twice = [q for q, c in n.items() if c > 1]
unordered = [int(b["seq"]) for a, b in zip(ground, ground[1:]) if int(b["seq"]) <= int(a["seq"])]
check(not unordered, f"--order seq: {len(unordered)} records after a higher seq, e.g. {unordered[:5]}")
check(not twice, f"{len(twice)} seqs twice in the export of the ground log, e.g. {sorted(twice)[:5]}")
wrong = [int(r["seq"]) for r in ground if vehicle.get(int(r["seq"])) != key(r)]
check(not wrong, f"{len(wrong)} records of the ground log not the vehicle's, e.g. "
      f"{[(q, vehicle.get(q)) for q in wrong[:3]]}")
got = set(n)
check(want <= got, f"{len(want - got)} of the window's records missing")
# in time order: the same records, none late (each answer Batch read
# where the vehicle's log has it, not after the rest); a window of 0.5 s,
# as the journey at 10x spans about 6 s of record time, less than the
# default window would show
p = subprocess.run([RAILMON, "export", "--data", os.path.join(GROUND, "REQ-3"), "--window", "0.5s"],
                   capture_output=True, text=True)
check(p.returncode == 0 and "late" not in p.stderr, f"export in time order: {p.returncode} {p.stderr}")
timed = list(csv.DictReader(io.StringIO(p.stdout)))
check(sorted(int(r["seq"]) for r in timed) == sorted(n) and
      all(int(a["time_ns"]) <= int(b["time_ns"]) for a, b in zip(timed, timed[1:])),
      "export in time order: other records than in seq order, or not in time order")
outside = {q for q in got - want if q not in before}
print(f"after the request: 0 of the window's {len(want)} records missing, each seq once and the vehicle's own; "
      f"{len(outside)} records outside the window added (the answer's whole Batches reach past its edges); "
      f"round trip {rtt * 1000:.0f} ms")
logs = [d for d in os.listdir(os.path.join(GROUND, "REQ-3")) if not d.startswith(".")]
check(len(logs) == 1, f"one ground log: {logs}")
log = os.path.join(GROUND, "REQ-3", logs[0])
answers = sorted(d for d in os.listdir(log) if d.startswith("answers."))
check(answers == ["answers.1", "answers.2"], f"the answers logs beside the ground log: {os.listdir(log)}")
refused = os.path.join(GROUND, "refused")
kept = [f for f in os.listdir(refused) if f.startswith("REQ-3.")] if os.path.isdir(refused) else []
check(not kept, f"refused Batches of REQ-3: {kept[:5]}")

# --- evidence: verify of the ground log checks its answers logs against
# its own Seals (signed, sent whole, Seal v2's digest lists): the whole
# answers in answers.1 are the vehicle's Batches a Seal lists, the
# reduced ones in answers.2 are named reduced; then one byte of a whole
# answer changed (its t0_ns, the frame's CRC recomputed, so only the
# Seal's list can tell): verify names that Batch in answers.1, exit 1.
# With another key no Seal verifies, and every whole answer is unproven.
# Catches: answers logs not read by verify, an answer taken as verified
# without its digest listed or by a Seal that did not verify, the change
# not named at its answers log.
def verify_ground(pub=KEY + ".pub"):
    return subprocess.run([RAILMON, "verify", "--data", log, "--pubkey", pub], capture_output=True, text=True)


def answer_lines(out):
    """kind word -> (Batches, seqs) of verify's answers lines."""
    got = {}
    for ln in out.splitlines():
        parts = ln.split()
        if len(parts) > 4 and parts[1] == "Batches," and parts[3] == "seqs:":
            got[parts[4].rstrip(":")] = (int(parts[0]), int(parts[2]))
    return got


def whole_frames(d):
    """(segment path, frame offset, first seq, payload) of each whole Batch
    of the log d (frames as storage/DESIGN.md has them)."""
    out = []
    for name in sorted(f for f in os.listdir(d) if f.endswith(".seg")):
        b = open(os.path.join(d, name), "rb").read()
        hdr_bytes = struct.unpack_from("<I", b, 12)[0]
        off = hdr_bytes
        while off + 40 <= len(b):
            ln, crc, fs, cnt, flags, t0, t1 = struct.unpack_from("<IIQIIqq", b, off)
            if not (fs or ln or cnt):
                break
            payload = b[off + 40:off + 40 + ln]
            if flags == 0 and pb_field(payload, 18) in (None, 0):
                out.append((os.path.join(d, name), off, fs, payload))
            off += 40 + ((ln + 7) & ~7)
    return out


def pb_varint(b, i):
    v = shift = 0
    while True:
        x = b[i]
        v |= (x & 0x7F) << shift
        i += 1
        shift += 7
        if not x & 0x80:
            return v, i


def pb_field(b, num, where=False):
    """The value of top-level varint field num (where: its offset), None."""
    i = 0
    while i < len(b):
        key, i = pb_varint(b, i)
        wt, at = key & 7, i
        if wt == 0:
            v, i = pb_varint(b, i)
            if key >> 3 == num:
                return at if where else v
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            n, i = pb_varint(b, i)
            i += n
        else:
            return None
    return None


CRC_T = []
for c0 in range(256):
    c = c0
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    CRC_T.append(c)


def crc32c(data):
    c = 0xFFFFFFFF
    for x in data:
        c = CRC_T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


p = verify_ground()
got = answer_lines(p.stdout)
wholes = whole_frames(os.path.join(log, "answers.1"))
check(p.returncode == 0 and got.get("verified", (0,))[0] == len(wholes) and "CHANGED" not in p.stdout and
      got.get("reduced", (0,))[0] > 0,
      f"verify of the ground log: {len(wholes)} whole answers in answers.1 (exit {p.returncode}):\n"
      f"{p.stdout}{p.stderr}")
print(f"verify of the ground log: its answers logs' {got['verified'][0]} whole Batches ({got['verified'][1]} seqs) "
      f"listed by its Seals, {got['reduced'][0]} reduced answers named reduced, exit 0")
# with another key no Seal verifies: no list proves an answer
other = os.path.join(T, "other.key")
subprocess.run([RAILMON, "keygen", "--output", other], check=True, capture_output=True)
p = verify_ground(other + ".pub")
got = answer_lines(p.stdout)
check(p.returncode == 1 and "verified" not in got and got.get("unproven", (0,))[0] == len(wholes),
      f"verify with another key: the whole answers not all unproven (exit {p.returncode}):\n{p.stdout}")
print(f"with another key: the {len(wholes)} whole answers unproven, exit 1")
seg, off, first, payload = wholes[len(wholes) // 2]
at = pb_field(payload, 6, where=True)
check(at is not None, "a whole answer without t0_ns")
b = bytearray(open(seg, "rb").read())
b[off + 40 + at] ^= 1
salt = struct.unpack_from("<Q", b, 24)[0]
pad = (len(payload) + 7) & ~7
struct.pack_into("<I", b, off + 4, crc32c(struct.pack("<Q", salt) + b[off:off + 4] + b[off + 8:off + 40 + pad]))
open(seg, "wb").write(b)
p = verify_ground()
name = f"answers.1/{os.path.basename(seg)}: offset {off}: seq {first}: this answer's Batch is not one the Seal"
check(p.returncode == 1 and name in p.stderr and answer_lines(p.stdout).get("CHANGED", (0,))[0] == 1,
      f"verify after a byte of answers.1 changed (seq {first}): exit {p.returncode}\n{p.stdout}{p.stderr}")
print(f"a byte of a whole answer changed (seq {first}, frame CRC recomputed): verify names it, "
      f"{os.path.basename(seg)} offset {off}, exit 1")
stop_peer(run)
finish()
print("OK")
