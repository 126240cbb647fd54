#!/usr/bin/python3
# test-uplink-reduce.py RAILMON SRCDIR PB2DIR - the uplink's reduced stream
# (issue 32) with the real peers: `railmon run` recording the demo journey
# (cli/demo/train.log with its DBC, read at 10x real time) into its log
# and forwarding it to a real mosquitto, `railmon recv --log` on the ground,
# and mosquitto_sub capturing every payload published on .../data.
#
# 1. `all` (no policy): every payload published is a stored Batch of the
#    vehicle's log byte for byte (found verbatim in its segment files, a
#    backlog one with the two bytes of Batch.historical after it), none is
#    flagged reduced, and the ground log exports the vehicle log's records
#    exactly.
# 2. A reducing board (bus default `change, every 10s`, raw frames none,
#    per-signal deadbands at about 50 times each signal's resolution, alive
#    counter and multiplexor none): every
#    data payload but the Seals' is a reduced Batch (decoded here by
#    protoc's Python code from the public proto, not railmon's decoder);
#    the ground has 0 missing, the seqs not sent are counted "on board" and
#    are exactly the vehicle's records the ground lacks; every event is on
#    the ground; no raw frame is; and against `railmon export` of the
#    vehicle's full log, at every sample of every channel the last value the
#    ground received is within the deadband of the true value (exact for
#    `change`) and at most 10 s old.
# 3. A board whose one bus sends nothing (raw frames none, no DBC, so no
#    sample either): its Batches go as reduced ones of no record but their
#    source's range and time; the ground log, recv and the database (recv
#    --db, gap repair after 5 s) see the ranges as on board: 0 missing, no
#    gap, no resend request, completeness 0 missing.
# 4. Bytes: the reduced stream is at least 10x smaller than `all` on the
#    same journey (the figure is printed; the benchmark bench-uplink-reduce
#    measures it at the demo's real Batch size).
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

RAILMON, SRC, PB2_DIR = sys.argv[1:4]
# the benchmark (bench-uplink-reduce) passes 1: the journey at real time
# with the demo board's 500 ms Batches; the test 10 (50 ms Batches)
SPEED = int(sys.argv[4]) if len(sys.argv) > 4 else 10
sys.path.insert(0, PB2_DIR)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ground"))
import railmon_pb2  # noqa: E402
from pg import Postgres  # noqa: E402
from railmon_test import die_with_us, free_port, start_peer, stop_peers, wait_for  # noqa: E402

T = tempfile.mkdtemp(prefix="railmon-reduce-")
TRACE = os.path.join(SRC, "cli/demo/train.log")
DBC = os.path.join(SRC, "cli/demo/train.dbc")
FRAMES = sum(1 for _ in open(TRACE))

# deadband per signal: about 50x its DBC factor (resolution), every 10 s
DEADBANDS = {
    "Speed": 0.5, "Acceleration": 0.05, "BrakePipePressure": 0.05, "BrakeCylinder1": 0.05,
    "BrakeCylinder2": 0.05, "MainReservoir": 0.5, "TractiveEffort": 5, "MotorTemperature": 2,
    "MotorCurrent": 5, "MotorSpeed": 50, "Odometer": 0.05, "TripDistance": 50, "CatenaryVoltage": 100,
    "LineCurrent": 5,
}
# a message's alive counter and a multiplexor change at every frame and
# tell the ground nothing: not sent
NONE = ("AliveCounter", "CarIndex")
EVERY_NS = 10 * 10**9


def fail(msg):
    print("FAIL:", msg)
    for f in sorted(os.listdir(T)):
        if f.endswith(".err"):
            print("---", f)
            print(open(os.path.join(T, f), errors="replace").read()[-3000:])
    stop_peers()
    if "pg" in globals():
        pg.fini()
    sys.exit(1)


def board(vehicle, policy, dbc=True):
    path = os.path.join(T, vehicle + ".ini")
    with open(path, "w") as f:
        # at 10x real time, Batches of 50 ms hold 500 ms of the journey, as
        # the demo board's batch_ms = 500 at real time
        f.write(f"[board]\nvehicle = {vehicle}\nbatch_ms = {500 // SPEED}\nhealth_interval_s = 10\n"
                f"[storage]\ndir = {T}/{vehicle}\nsync_window_ms = 50\n"
                f"[uplink]\nbroker = mqtt://127.0.0.1:{PORT}\n"
                f"[can vehicle]\ndriver = trace\nfile = {TRACE}\n" + (f"dbc = {DBC}\n" if dbc else "") +
                f"speed = {SPEED}\n{policy}")
    return path


def stat_json(vehicle):
    import json
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


def record_and_forward(vehicle, policy, dbc=True):
    """run records the whole journey and forwards it; stopped once the trace
    is read and the uplink has nothing left unacknowledged."""
    err = open(os.path.join(T, vehicle + ".err"), "w")
    run = start_peer([RAILMON, "run", "--board", board(vehicle, policy, dbc)], stderr=err)

    def done():
        s = stat_json(vehicle)
        return (s.get("vehicle", {}).get("items") == FRAMES and s.get("uplink", {}).get("state") == "connected"
                and s.get("uplink", {}).get("backlog") == 0)
    if not wait_for(f"{vehicle}: trace read and forwarded", done, timeout=120 + 60 * 10 // SPEED):
        fail(f"{vehicle}: the journey was not recorded and forwarded")
    run.terminate()
    if run.wait(timeout=60) != 0:
        fail(f"{vehicle}: run exited {run.returncode}")
    # the log ends with the stop's event and Seal, which always go: the
    # ground has taken everything once its log ends where the vehicle's does
    last = export(f"{T}/{vehicle}")[-1]["seq"]
    if not wait_for(f"{vehicle}: the ground has seq {last}", lambda: os.path.isdir(f"{T}/ground/{vehicle}") and
                    (export(f"{T}/ground/{vehicle}") or [{"seq": 0}])[-1]["seq"] == last, timeout=60):
        fail(f"{vehicle}: the ground never got the log's last record, seq {last}")


def export(data):
    p = subprocess.run([RAILMON, "export", "--data", data, "--order", "seq"], capture_output=True, text=True)
    if p.returncode:
        fail(f"export {data}: {p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def captured(vehicle, what="data"):
    """The payloads mosquitto_sub saw on railmon/<vehicle>/<what>, in order."""
    out = []
    for line in open(os.path.join(T, "sub.out")):
        topic, _, hexpay = line.rstrip("\n").partition(" ")
        if topic == f"railmon/{vehicle}/{what}":
            out.append(bytes.fromhex(hexpay))
    return out


def segments(vehicle):
    blob = b""
    d = os.path.join(T, vehicle)
    for f in sorted(os.listdir(d)):
        if f.endswith(".seg") or f.startswith("seg") or f.endswith(".log"):
            blob += open(os.path.join(d, f), "rb").read()
    return blob


die_with_us()
PORT = free_port()
conf = os.path.join(T, "mosq.conf")
with open(conf, "w") as f:
    f.write(f"listener {PORT} 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 1000000\n"
            + ("user root\n" if os.getuid() == 0 else ""))
start_peer(["mosquitto", "-c", conf], stderr=open(os.path.join(T, "mosq.err"), "w"))


def port_open():
    import socket
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=1).close()
        return True
    except OSError:
        return False


if not wait_for("mosquitto listening", port_open, 20):
    fail("mosquitto did not start")
sub = start_peer(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(PORT), "-q", "1", "-t", "railmon/+/data",
                  "-t", "railmon/+/resend", "-t", "probe", "-F", "%t %x"], stdout=open(os.path.join(T, "sub.out"), "w"),
                 stderr=open(os.path.join(T, "sub.err"), "w"))
# a second ground: recv --db into a throwaway PostgreSQL
pg = Postgres()
if subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True).returncode:
    fail("db init failed")
recv_db = start_peer([RAILMON, "recv", "--broker", f"mqtt://127.0.0.1:{PORT}", "--format", "none", "--db", pg.url,
                      "--client-id", "ground-reduce-db", "--repair-after", "5"], stderr=open(os.path.join(T, "recv-db.err"), "w"))
if not wait_for("recv --db subscribed", lambda: "subscribed" in open(os.path.join(T, "recv-db.err")).read(), 30):
    fail("recv --db did not subscribe")
recv_err = open(os.path.join(T, "recv.err"), "w")
recv = start_peer([RAILMON, "recv", "--broker", f"mqtt://127.0.0.1:{PORT}", "--format", "none", "--log",
                   f"{T}/ground", "--client-id", "ground-reduce"], stderr=recv_err)
if not wait_for("recv subscribed", lambda: "subscribed" in open(os.path.join(T, "recv.err")).read(), 20):
    fail("recv did not subscribe")
# the subscriber is subscribed once it has a probe published after it started
if not wait_for("mosquitto_sub subscribed", lambda: subprocess.run(
        ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(PORT), "-q", "1", "-t", "probe", "-m", "x"]
        ).returncode == 0 and "probe 78" in open(os.path.join(T, "sub.out")).read(), 20):
    fail("mosquitto_sub did not subscribe")

signals = "".join(f"[signal {s}]\nuplink = deadband {d}, every 10s\n" for s, d in DEADBANDS.items())
signals += "".join(f"[signal {s}]\nuplink = none\n" for s in NONE)
# check says every channel's policy, and refuses one naming no channel
p = subprocess.run([RAILMON, "check", "--board", board("RED-1", "uplink = change, every 10s\nuplink_frames = none\n"
                                                         + signals)], capture_output=True, text=True)
if p.returncode or "uplink reduced (the log keeps every record" not in p.stdout or \
   "[vehicle] channels change, every 10s, frames none" not in p.stdout or \
   not any(ln.split()[:1] == ["VehicleSpeed.Speed"] and "deadband 0.5, every 10s (line" in ln
           for ln in p.stdout.splitlines()) or \
   not any(ln.split()[:1] == ["VehicleSpeed.Direction"] and ln.endswith("change, every 10s")
           for ln in p.stdout.splitlines()):
    fail(f"check of the reducing board:\n{p.stdout}{p.stderr}")
path = board("BAD-1", "[signal NoSuch]\nuplink = none\n")
p = subprocess.run([RAILMON, "check", "--board", path], capture_output=True, text=True)
if p.returncode == 0 or f"{path}:16: uplink: no channel 'NoSuch'" not in p.stderr:
    fail(f"check of a policy naming no channel (exit {p.returncode}):\n{p.stderr}")
print("check: every channel's policy said; a policy naming no channel refused at its line")

record_and_forward("ALL-1", "")
record_and_forward("RED-1", "uplink = change, every 10s\nuplink_frames = none\n" + signals)
# (the benchmark measures bytes only)
NOTHING = SPEED != 1
if NOTHING:
    record_and_forward("RED-2", "uplink_frames = none\n", dbc=False)

# the ground has taken everything: recv says its summary at the end
recv.terminate()
recv.wait(timeout=60)
last_red = export(f"{T}/RED-1")[-1]["seq"]
if not wait_for("the database has RED-1's last seq", lambda: pg.psql(
        "SELECT coalesce(max(first_seq + count), 0) FROM batches JOIN vehicles USING (vehicle_id) "
        "WHERE name = 'RED-1'").strip() == str(int(last_red) + 1), 60):
    fail("recv --db never committed RED-1's last Batch")
last_red2 = export(f"{T}/RED-2")[-1]["seq"] if NOTHING else None
if NOTHING and not wait_for("the database has RED-2's last seq", lambda: pg.psql(
        "SELECT coalesce(max(first_seq + count), 0) FROM batches JOIN vehicles USING (vehicle_id) "
        "WHERE name = 'RED-2'").strip() == str(int(last_red2) + 1), 60):
    fail("recv --db never committed RED-2's last Batch")
recv_db.terminate()
recv_db.wait(timeout=60)
sub.terminate()
sub.wait(timeout=10)
said = open(os.path.join(T, "recv.err")).read()

# --- 1. all: the stored Batches as they are
vall, gall = export(f"{T}/ALL-1"), export(f"{T}/ground/ALL-1")
if vall != gall:
    fail("ALL-1: the ground log's records differ from the vehicle log's")
blob = segments("ALL-1")
pay_all = captured("ALL-1")
if not pay_all:
    fail("ALL-1: mosquitto_sub captured nothing (is -F %x supported?)")
for p in pay_all:
    stored = p[:-2] if p.endswith(b"\x38\x01") and p[:-2] in blob else p
    if stored not in blob:
        fail("ALL-1: a published payload is not a stored Batch byte for byte")
    b = railmon_pb2.Batch()
    b.ParseFromString(p)
    if b.reduced or b.source_end_seq or len(b.seq_delta):
        fail("ALL-1: a Batch flagged reduced without any policy")
print(f"all: {len(pay_all)} payloads, each a stored Batch byte for byte; ground export = vehicle export "
      f"({len(vall)} records)")

# --- 2. reduced: what the ground has and may not say is missing
vred, gred = export(f"{T}/RED-1"), export(f"{T}/ground/RED-1")
last = int(vred[-1]["seq"])
line = [ln for ln in said.splitlines() if "RED-1 log" in ln]
if not line or f"seq 1..{last}, 0 missing" not in line[0]:
    fail(f"RED-1: recv did not say seq 1..{last} with 0 missing: {line}")
gseqs = {int(r["seq"]) for r in gred}
on_board = len(vred) - len(gseqs)
if f"{on_board} on board" not in line[0]:
    fail(f"RED-1: recv did not say the {on_board} records on board: {line[0]}")
if len(gseqs) != len(gred) or not gseqs <= {int(r["seq"]) for r in vred}:
    fail("RED-1: the ground has a record twice or one the vehicle never had")
vmap = {int(r["seq"]): r for r in vred}
for r in gred:
    v = vmap[int(r["seq"])]
    if (r["time_ns"], r["kind"], r["channel"], r["value"], r["event"]) != \
       (v["time_ns"], v["kind"], v["channel"], v["value"], v["event"]):
        fail(f"RED-1: seq {r['seq']} differs from the vehicle's record")
events = [r for r in vred if r["kind"] == "event"]
if any(int(r["seq"]) not in gseqs for r in events):
    fail("RED-1: an event was not sent")
if any(r["kind"] == "can" for r in gred):
    fail("RED-1: a raw frame was sent with uplink_frames = none")
pay_red = captured("RED-1")
reduced = 0
for p in pay_red:
    b = railmon_pb2.Batch()
    b.ParseFromString(p)
    if b.HasField("seal"):
        continue
    n = len(b.can.id) + len(b.samples.channel) + len(b.events.code) + len(b.texts.channel) + len(b.trdp.com_id)
    if not b.reduced or len(b.seq_delta) != n or b.source_end_seq <= b.first_seq:
        fail(f"RED-1: a data Batch (seq {b.first_seq}) is not a reduced one")
    reduced += 1

# (a) the ground's last value against the truth at every sample time
names = {}
ground_last = {}
checked = 0
worst = {}
for r in vred:
    if r["kind"] != "sample":
        continue
    ch, seq, t, v = r["channel"], int(r["seq"]), int(r["time_ns"]), float(r["value"])
    short = r["name"].split(".")[-1]
    if short in NONE:
        if seq in gseqs:
            fail(f"RED-1: {r['name']} was sent with uplink = none")
        continue
    if seq in gseqs:
        ground_last[ch] = (t, v)
    if ch not in ground_last:
        fail(f"RED-1: {r['name']} has a value on board at seq {seq} and none at the ground")
    gt, gv = ground_last[ch]
    band = DEADBANDS.get(short, 0.0)
    if (band and abs(v - gv) >= band) or (not band and v != gv):
        fail(f"RED-1: {r['name']} at seq {seq}: true {v}, the ground's {gv} (deadband {band or 'change'})")
    if t - gt >= EVERY_NS:
        fail(f"RED-1: {r['name']} at seq {seq}: the ground's value is {(t - gt) / 1e9:.3f} s old (every 10s)")
    worst[short] = max(worst.get(short, 0.0), abs(v - gv))
    checked += 1
print(f"reduced: {reduced} reduced Batches; {len(gred)} of {len(vred)} records sent, {on_board} on board, "
      f"0 missing; {checked} samples checked within their deadband (exact for change) and under 10 s old")
print("  largest error per deadband signal:",
      ", ".join(f"{k} {worst.get(k, 0):.4g}/{d}" for k, d in DEADBANDS.items()))

# evidence: the ground log's reduced Batches are named as such, the Seals
# (sent whole) and the Batches they list verify, nothing is called changed
gdir = os.path.join(T, "ground", "RED-1")
logdir = os.path.join(gdir, os.listdir(gdir)[0])
p = subprocess.run([RAILMON, "verify", "--unsigned", "--data", logdir], capture_output=True, text=True)
if p.returncode != 0 or "reduced: the uplink sent these seqs reduced" not in p.stdout or "CHANGED" in p.stdout \
   or "verified: seq" not in p.stdout:
    fail(f"RED-1: verify of the ground log (exit {p.returncode}):\n{p.stdout}{p.stderr}")
print("evidence: verify of the ground log names the reduced ranges, verifies the Seals' own, exit 0")

# (b) the database: the reduced samples stored once each, as sent; no hole
# in its ledger (no gap repair asked), completeness without missing
want = sorted(int(r["seq"]) for r in gred if r["kind"] == "sample")
got = [int(x) for x in pg.psql("SELECT seq FROM samples JOIN vehicles USING (vehicle_id) WHERE name = 'RED-1' "
                                "ORDER BY seq").split()]
if got != want:
    fail(f"RED-1: the database holds {len(got)} samples ({len(set(got))} seqs), the ground received {len(want)}")
gaps = pg.psql("SELECT count(*) FROM gaps JOIN vehicles USING (vehicle_id) WHERE name = 'RED-1'").strip()
missing, records, db_board = pg.psql("SELECT coalesce(sum(missing), 0), coalesce(sum(records), 0), "
                                     "coalesce(sum(on_board), 0) FROM completeness WHERE vehicle = 'RED-1'").split("|")
if gaps != "0" or missing != "0":
    fail(f"RED-1: the database's ledger has {gaps} gaps, completeness {missing} missing")
# completeness: the seqs not sent are on board (recv's own figure), not
# records received; together they are the whole log, seq 1..last
if (int(records), int(db_board)) != (len(gseqs), on_board) or int(records) + int(db_board) != last:
    fail(f"RED-1: completeness says {records} records and {db_board} on board; recv received {len(gseqs)} of "
         f"seqs 1..{last} and said {on_board} on board")
print(f"database: {len(got)} samples stored once each (as received), 0 gaps; completeness 0 missing, "
      f"{records} records, {db_board} on board (= recv's)")

# --- 3. a bus that sends nothing: its ranges on board, no hole anywhere
if NOTHING:
    v2, g2 = export(f"{T}/RED-2"), export(f"{T}/ground/RED-2")
    last = int(v2[-1]["seq"])
    g2seqs = {int(r["seq"]) for r in g2}
    if any(r["kind"] == "can" for r in g2) or any(int(r["seq"]) not in g2seqs for r in v2 if r["kind"] == "event"):
        fail("RED-2: a raw frame sent with uplink_frames = none, or an event not sent")
    empty = 0
    for p in captured("RED-2"):
        b = railmon_pb2.Batch()
        b.ParseFromString(p)
        n = len(b.can.id) + len(b.samples.channel) + len(b.events.code) + len(b.texts.channel) + len(b.trdp.com_id)
        if b.HasField("seal") or n:
            continue
        # the range alone, placed by its source's time (the journey's, not 1970)
        if not b.reduced or b.source_end_seq <= b.first_seq or b.t0_ns < 10**18:
            fail(f"RED-2: a Batch of no record (seq {b.first_seq}) without its range or time: reduced "
                 f"{b.reduced}, source_end_seq {b.source_end_seq}, t0_ns {b.t0_ns}")
        empty += 1
    if empty < 10:
        fail(f"RED-2: only {empty} reduced Batches of no record (the journey's frames should make many)")
    line = [ln for ln in said.splitlines() if "RED-2 log" in ln]
    on_board = len(v2) - len(g2seqs)
    if not line or f"seq 1..{last}, 0 missing" not in line[0] or f"{on_board} on board" not in line[0]:
        fail(f"RED-2: recv did not say seq 1..{last}, 0 missing, {on_board} on board: {line}")
    gdir = os.path.join(T, "ground", "RED-2")
    p = subprocess.run([RAILMON, "verify", "--unsigned", "--data", os.path.join(gdir, os.listdir(gdir)[0])],
                       capture_output=True, text=True)
    if p.returncode != 0 or "CHANGED" in p.stdout:
        fail(f"RED-2: verify of the ground log (exit {p.returncode}):\n{p.stdout}{p.stderr}")
    q = "FROM {} JOIN vehicles USING (vehicle_id) WHERE name = 'RED-2'"
    covered = pg.psql("SELECT coalesce(sum(count), 0) " + q.format("batches")).strip()
    days = pg.psql("SELECT coalesce(sum(records + on_board), 0) " + q.format("ledger_days")).strip()
    gaps = pg.psql("SELECT count(*) " + q.format("gaps")).strip()
    missing, db_board = pg.psql("SELECT coalesce(sum(missing), 0), coalesce(sum(on_board), 0) FROM completeness "
                                "WHERE vehicle = 'RED-2'").split("|")
    asked = captured("RED-2", "resend")
    if (covered, days, gaps, missing, int(db_board)) != (str(last), str(last), "0", "0", on_board) or asked:
        fail(f"RED-2: the database's ledger covers {covered} and ledger_days {days} of seqs 1..{last}, "
             f"{gaps} gaps, completeness {missing} missing and {db_board} on board (recv: {on_board}), "
             f"{len(asked)} resend requests")
    print(f"nothing sent: {empty} reduced Batches of no record; recv seq 1..{last}, 0 missing, {on_board} on "
          f"board; database ledger and ledger_days cover {last} seqs, 0 gaps, completeness 0 missing and "
          f"{db_board} on board, 0 resend requests; verify exit 0")

# --- 4. bytes over the air
ball, bred = sum(map(len, pay_all)), sum(map(len, pay_red))
# the journey's span in the trace, for bytes per hour
span = 60.0  # the trace's own span (cli/demo/train.log: 60 s); run's records add its start and stop
print(f"bytes on railmon/<vehicle>/data for the demo journey at {SPEED}x real time:")
print(f"  {'policy':<8} {'messages':>8} {'records':>8} {'bytes':>9} {'bytes/hour':>11}")
print(f"  {'all':<8} {len(pay_all):>8} {len(vall):>8} {ball:>9} {ball * 3600 / span:>11.0f}")
print(f"  {'reduced':<8} {len(pay_red):>8} {len(gred):>8} {bred:>9} {bred * 3600 / span:>11.0f}")
print(f"  ratio {ball / bred:.1f}x fewer bytes")
if ball < 10 * bred:
    fail(f"the reduced stream is only {ball / bred:.1f}x smaller than all")
stop_peers()
pg.fini()
shutil.rmtree(T)
print("uplink-reduce: ok")
