#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-uplink-request-db.py RAILMON SRCDIR PB2DIR - a full-rate request
# (issue 32) stored by the ground's database, with the real peers:
# mosquitto with passwords and the example ACL, a real PostgreSQL 15,
# `railmon run` recording the demo journey (cli/demo/train.log with its
# DBC, 10x real time) with a reducing board (REQ-2: `change, every 10s`,
# raw frames none), `railmon recv --db` as the ground's receiver and
# `railmon request --db` asking for a sixth of the journey.
#
# After the journey is forwarded reduced and committed: the database holds
# only some of the window's records, the rest counted on board.  After the
# request: every record of the window (`railmon export` of the vehicle's
# log: its seqs and times) is in the database exactly once (no seq of the
# vehicle twice anywhere), each Batch row over the window is whole (not
# reduced) and holds its count of records, ledger_days moved exactly the
# records added from on_board to records (completeness: on board less by
# as many, nothing missing).  The round trip (request published to the
# window stored) is printed.
# Catches: the answer taken as a conflict (the window never complete), the
# reduced records stored again (a seq twice), on_board not moved or moved
# by another number, a window record missing.
import csv
import io
import json
import os
import shutil
import signal
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
from mqtt_peers import Broker, Recv, stop_all  # noqa: E402
from pg import Postgres  # noqa: E402
from railmon_test import die_with_us, start_peer, stop_peer, wait_for  # noqa: E402

T = tempfile.mkdtemp(prefix="railmon-request-db-")
TRACE = os.path.join(SRC, "cli/demo/train.log")
DBC = os.path.join(SRC, "cli/demo/train.dbc")
ACL = os.path.join(SRC, "uplink/examples/mosquitto-acl")
FRAMES = sum(1 for _ in open(TRACE))
USERS = {"ground": "g-pw", "REQ-2": "v-pw"}
SPEED = 10
TABLES = ("samples", "can_frames", "events", "texts", "trdp_telegrams")

broker = pg = None


def fail(msg):
    print("FAIL:", msg)
    for f in sorted(os.listdir(T)):
        if f.endswith(".err"):
            print("---", f)
            print(open(os.path.join(T, f), errors="replace").read()[-3000:])
    if pg:
        stop_all(broker, pg, T)
    sys.exit(1)


def check(cond, what):
    if not cond:
        fail(what)


def export(data):
    p = subprocess.run([RAILMON, "export", "--data", data, "--order", "seq"], capture_output=True, text=True)
    check(p.returncode == 0, f"export {data}: {p.stderr}")
    return list(csv.DictReader(io.StringIO(p.stdout)))


def stat_uplink():
    import json
    p = subprocess.run([RAILMON, "stat", "--data", f"{T}/REQ-2", "--json"], capture_output=True, text=True)
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if d.get("name") in ("uplink", "vehicle"):
            yield d


def db_records():
    """{seq: [time in us since the epoch, ...]} of every record of REQ-2 in the database."""
    q = " UNION ALL ".join("SELECT seq, (extract(epoch FROM t) * 1000000)::bigint FROM %s JOIN vehicles v "
                           "USING (vehicle_id) WHERE v.name = 'REQ-2'" % t for t in TABLES)
    out = {}
    for seq, t in pg.rows(q):
        out.setdefault(int(seq), []).append(int(t))
    return out


def ledger():
    """(records, on_board) of REQ-2 in ledger_days, summed."""
    r = pg.rows("SELECT coalesce(sum(records), 0), coalesce(sum(on_board), 0) FROM ledger_days JOIN vehicles v "
                "USING (vehicle_id) WHERE v.name = 'REQ-2'")
    return int(r[0][0]), int(r[0][1])


def rows_over(lo_seq, hi_seq):
    """The batches rows over seqs [lo_seq, hi_seq]: (first_seq, count, reduced)."""
    return [(int(f), int(c), r == "t") for f, c, r in pg.rows(
        "SELECT first_seq, count, reduced FROM batches JOIN vehicles v USING (vehicle_id) WHERE v.name = 'REQ-2' "
        "AND first_seq <= %d AND first_seq + count > %d ORDER BY first_seq" % (hi_seq, lo_seq))]


die_with_us()
pw = os.path.join(T, "passwd")
for i, (u, p) in enumerate(USERS.items()):
    subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [pw, u, p], check=True)
pg = Postgres()
broker = Broker(tmp=T, extra=f"allow_anonymous false\npassword_file {pw}\nacl_file {ACL}\n")
PORT = broker.port
r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
check(r.returncode == 0, f"db init: {r.stderr}")
recv = Recv(RAILMON, ["--broker", f"mqtt://127.0.0.1:{PORT}", "--db", pg.url, "--client-id", "request-db-recv",
                      "--repair-after", "0", "--username", "ground"], env={"RAILMON_MQTT_PASSWORD": USERS["ground"]})
recv.wait_subscribed()
# beside it a receiver with the in-memory ledger: a ground log and its
# records as JSON lines
LOGOUT = os.path.join(T, "recv-log.jsonl")
recv_log = Recv(RAILMON, ["--broker", f"mqtt://127.0.0.1:{PORT}", "--log", os.path.join(T, "ground"), "-o", LOGOUT,
                          "--client-id", "request-db-log", "--username", "ground"],
                env={"RAILMON_MQTT_PASSWORD": USERS["ground"]})
recv_log.wait_subscribed()
BOARD = os.path.join(T, "REQ-2.ini")
with open(BOARD, "w") as f:
    f.write(f"[board]\nvehicle = REQ-2\nbatch_ms = {500 // SPEED}\nhealth_interval_s = 10\n"
            f"[storage]\ndir = {T}/REQ-2\nsync_window_ms = 50\n"
            f"[uplink]\nbroker = mqtt://127.0.0.1:{PORT}\nusername = REQ-2\npassword = {USERS['REQ-2']}\n"
            f"[can vehicle]\ndriver = trace\nfile = {TRACE}\ndbc = {DBC}\nspeed = {SPEED}\n"
            "uplink = change, every 10s\nuplink_frames = none\n")
run = start_peer([RAILMON, "run", "--board", BOARD], stderr=open(os.path.join(T, "run.err"), "a"))


def forwarded():
    s = {d["name"]: d for d in stat_uplink()}
    return (s.get("vehicle", {}).get("items") == FRAMES and s.get("uplink", {}).get("state") == "connected"
            and s.get("uplink", {}).get("backlog") == 0)


try:
    wait_for("REQ-2: the journey recorded and forwarded", forwarded, 120 + 600 // SPEED)
except AssertionError as e:
    fail(str(e))
rows = export(f"{T}/REQ-2")
log_end = max(int(r["seq"]) for r in rows) + 1
# every Batch forwarded so far committed: the ledger's seqs reach the log's end
try:
    wait_for("the reduced journey committed", lambda: int(pg.psql(
        "SELECT coalesce(max(first_seq + count), 0) FROM batches")) >= log_end, 60)
except AssertionError as e:
    fail(str(e))
t_first, t_last = int(rows[0]["time_ns"]) / 1e9, int(rows[-1]["time_ns"]) / 1e9
SPAN = t_last - t_first
lo, hi = t_first + SPAN / 2, t_first + SPAN * 2 / 3
want = {int(r["seq"]): int(r["time_ns"]) // 1000 for r in rows if lo <= int(r["time_ns"]) / 1e9 < hi}
check(want, f"records in [{lo}, {hi})")
lo_seq, hi_seq = min(want), max(want)
before = db_records()
rec0, ob0 = ledger()
missing0 = set(want) - set(before)
check(missing0 and ob0 > 0, f"reduced: {len(missing0)} of the window's {len(want)} records not in the database, "
      f"{ob0} on board")
check(any(red for _, _, red in rows_over(lo_seq, hi_seq)), "reduced rows over the window")

pwfile = os.path.join(T, "ground.pw")
with open(pwfile, "w") as f:
    f.write(USERS["ground"] + "\n")

# --- a request naming channels (--channel, a full name and a DBC signal's
# alone) over another part of the journey: only their samples and the
# events come, as reduced Batches; the database adds exactly those, the
# rows stay reduced and the range stays on board for the other channels
# (completeness is not claimed complete), nothing missing.
# Catches: the answer taken as a conflict (nothing stored), the channels
# ignored (whole Batches: other channels' records, rows not reduced), the
# short name not matched, on_board not moved.
CHANNELS = ("VehicleSpeed.Speed", "MotorCurrent")
clo, chi = t_first + SPAN / 6, t_first + SPAN / 3
cwant = {int(r["seq"]): int(r["time_ns"]) // 1000 for r in rows if clo <= int(r["time_ns"]) / 1e9 < chi and
         (r["kind"] == "event" or r["name"] in ("VehicleSpeed.Speed", "TractionMotor1.MotorCurrent"))}
kind_of = {int(r["seq"]): (r["kind"], r["name"]) for r in rows}
cmissing0 = set(cwant) - set(before)
check(cmissing0, f"channels: all {len(cwant)} records of the channels' window in the database already")
crows = rows_over(min(cwant), max(cwant))
t0 = time.monotonic()
p = subprocess.run([RAILMON, "request", "--db", pg.url, "--broker", f"mqtt://127.0.0.1:{PORT}", "--vehicle", "REQ-2",
                    "--from", "%.9f" % clo, "--to", "%.9f" % chi, "--username", "ground", "--password-file", pwfile]
                   + [a for c in CHANNELS for a in ("--channel", c)], capture_output=True, text=True, timeout=60)
check(p.returncode == 0 and "of the channels named published on railmon/REQ-2/request" in p.stdout,
      f"railmon request --channel: {p.returncode} {p.stdout} {p.stderr}")
try:
    wait_for("the channels' window stored", lambda: set(cwant) <= set(db_records()), 60)
except AssertionError:
    fail("the channels' records never all in the database: %d of %d missing"
         % (len(set(cwant) - set(db_records())), len(cwant)))
crtt = time.monotonic() - t0
cafter = db_records()
cadded = set(cafter) - set(before)
check(not {s for s, t in cafter.items() if len(t) > 1}, "channels: a seq twice in the database")
other = [s for s in cadded if kind_of[s][0] != "event" and
         kind_of[s][1] not in ("VehicleSpeed.Speed", "TractionMotor1.MotorCurrent")]
check(not other, f"channels: {len(other)} records of other channels added, e.g. {[kind_of[s] for s in other[:3]]}")
check(all(red for _, _, red in rows_over(min(cwant), max(cwant))),
      f"channels: a row over the window no longer reduced: {rows_over(min(cwant), max(cwant))}")
rec_c, ob_c = ledger()
check(rec_c - rec0 == len(cadded) and ob0 - ob_c == len(cadded),
      f"channels: ledger_days records {rec0} -> {rec_c}, on_board {ob0} -> {ob_c}, {len(cadded)} records added")
comp = pg.rows("SELECT sum(records), sum(on_board), sum(missing) FROM completeness WHERE vehicle = 'REQ-2'")
check(comp == [[str(rec_c), str(ob_c), "0"]] and ob_c > 0,
      f"channels: completeness {comp}: {rec_c} records, {ob_c} on board, none missing")
print(f"request --channel {' '.join(CHANNELS)}: {len(cwant)} records of the window ({len(cmissing0)} on board "
      f"before), {len(cadded)} added once, none of another channel; {len(crows)} rows stay reduced; on_board "
      f"{ob0} -> {ob_c}, 0 missing; round trip {crtt * 1000:.0f} ms")


def log_seqs():
    """seq -> how often recv --log's text output has it."""
    n = {}
    with open(LOGOUT) as f:
        for line in f:
            if line.endswith("\n"):
                q = json.loads(line)["seq"]
                n[q] = n.get(q, 0) + 1
    return n


# recv --log (the in-memory ledger) took the same answer: the channels'
# records it lacked handed on once each, none of another channel.
# Catches: the answer over a reduced range taken for duplicates (the
# channels' records dropped), handed on twice, the request's channels not
# applied on that path.
try:
    wait_for("recv --log: the channels' window in its output", lambda: set(cwant) <= set(log_seqs()), 60)
except AssertionError:
    fail("recv --log: %d of the channels' %d records never in its output"
         % (len(set(cwant) - set(log_seqs())), len(cwant)))
lseqs = log_seqs()
check(all(v == 1 for v in lseqs.values()), f"recv --log: a seq twice: {[q for q, v in lseqs.items() if v > 1][:5]}")
lother = [q for q in set(lseqs) - set(before) if kind_of.get(q, ("?",))[0] != "event" and
          kind_of.get(q, ("?", "?"))[1] not in ("VehicleSpeed.Speed", "TractionMotor1.MotorCurrent")]
check(not lother, f"recv --log: {len(lother)} records of other channels, e.g. {[kind_of[q] for q in lother[:3]]}")
said = [ln.strip() for ln in recv_log.lines if "REQ-2" in ln and ("not stored" in ln or "refused" in ln)]
print(f"recv --log: the channels' {len(cwant)} records in its output once each, none of another channel; "
      f"its ground log said {len(said)} lines of not stored/refused{': ' + said[0] if said else ''}")
before, rec0, ob0 = cafter, rec_c, ob_c


# the request
t0 = time.monotonic()
p = subprocess.run([RAILMON, "request", "--db", pg.url, "--broker", f"mqtt://127.0.0.1:{PORT}", "--vehicle", "REQ-2",
                    "--from", "%.9f" % lo, "--to", "%.9f" % hi, "--username", "ground", "--password-file", pwfile],
                   capture_output=True, text=True, timeout=60)
check(p.returncode == 0 and "published on railmon/REQ-2/request" in p.stdout,
      f"railmon request --db: {p.returncode} {p.stdout} {p.stderr}")


def window_stored():
    return all(not red for _, _, red in rows_over(lo_seq, hi_seq)) and set(want) <= set(db_records())


try:
    wait_for("the window stored whole", window_stored, 60)
except AssertionError:
    fail("the window's records never all in the database: %d of %d missing; rows over it %s"
         % (len(set(want) - set(db_records())), len(want), rows_over(lo_seq, hi_seq)))
rtt = time.monotonic() - t0
after = db_records()
twice = {s: t for s, t in after.items() if len(t) > 1}
check(not twice, f"{len(twice)} seqs twice in the database, e.g. {sorted(twice)[:5]}")
wrong_t = [s for s, t in want.items() if after[s] != [t]]
check(not wrong_t, f"{len(wrong_t)} of the window's records at other times than the log's, e.g. {wrong_t[:5]}")
# each row over the window whole: its count of records in the database
over = rows_over(lo_seq, hi_seq)
for f, c, _ in over:
    n = sum(1 for s in range(f, f + c) if s in after)
    check(n == c, f"the row from seq {f}: {n} of {c} records stored")
added = len(after) - len(before)
rec1, ob1 = ledger()
check(added == len(set().union(*(range(f, f + c) for f, c, _ in over)) - set(before)),
      f"{added} records added: exactly those of the rows over the window not stored before")
check(rec1 - rec0 == added and ob0 - ob1 == added,
      f"ledger_days: records {rec0} -> {rec1}, on_board {ob0} -> {ob1}, {added} records added")
comp = pg.rows("SELECT sum(records), sum(on_board), sum(missing) FROM completeness WHERE vehicle = 'REQ-2'")
check(comp == [[str(rec1), str(ob1), "0"]], f"completeness {comp}: {rec1} records, {ob1} on board, none missing")
print(f"request --db: window of {len(want)} records ({len(missing0)} of them on board before), {len(over)} Batches "
      f"whole, {added} records added once, on_board {ob0} -> {ob1}; round trip (railmon request started to the "
      f"window stored in the database) {rtt * 1000:.0f} ms (under load)")

stop_peer(run)
rc, err = recv.terminate()
check(rc == 0, f"recv exit {rc}: {err}")
rc, err = recv_log.terminate()
check(rc == 0, f"recv --log exit {rc}: {err}")
stop_all(broker, pg, T)
print("OK")
