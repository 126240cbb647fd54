#!/bin/bash
# test-demo.sh RAILMON SRCDIR - the spine end to end:
#  * `railmon demo` acquires its three buses (candump trace, real libmodbus
#    TCP server, the TRDP consist published on loopback) through the
#    realtime threads, rings, collector, DBC and TRDP XML decoding, Batches
#    and the flash log, and stops by itself with the record count;
#  * the TRDP channels tell the simulated journey (bus/sim-train.h): doors
#    open at the station, then closed, traction effort from 1 s after they
#    close, scale and offset applied, the TIMEDATE64 the sending time;
#  * `railmon export` gives back contiguous sequence numbers, the trace's
#    frames in order, plausible Modbus values, valid JSON and candump;
#  * `railmon replay` of the whole trace stores every frame, deterministically.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init demo
fail() { echo "FAIL: $*"; exit 1; }

# --- the demo, 9 s (the journey's station stop ends at 5 s, acceleration
#     starts at 6 s), no live redraw
"$RAILMON" demo --duration 9 --no-live --data "$T/log" > "$T/demo.out" 2> "$T/demo.err" ||
	{ cat "$T/demo.err"; fail "railmon demo exited non-zero"; }
summary=$(grep 'railmon demo: stopped after' "$T/demo.out") || fail "no summary line"
echo "$summary"
read -r records can mb trdp drops refused < <(echo "$summary" |
	sed -E 's/.*: ([0-9]+) records stored .* ([0-9]+) CAN frames, ([0-9]+) Modbus samples and ([0-9]+) TRDP telegrams acquired, ([0-9]+) ring drops, ([0-9]+) records refused.*/\1 \2 \3 \4 \5 \6/')
[ "$can" -gt 100 ] || fail "only $can CAN frames in 9 s"
[ "$mb" -gt 50 ] || fail "only $mb Modbus samples in 9 s"
# 20 telegrams/s of Doors and Traction, 1/s of Hvac
[ "$trdp" -gt 100 ] || fail "only $trdp TRDP telegrams in 9 s"
[ "$drops" -eq 0 ] || fail "$drops ring drops"
[ "$refused" -eq 0 ] || fail "$refused records refused by the log"
# the final table shows values from both buses
grep -qE '^[ *~] VehicleSpeed\.Speed +[0-9.-]+ +km/h' "$T/demo.out" || fail "no decoded CAN speed in the table"
grep -qE '^[ *~] line_voltage +1[45][0-9][0-9](\.[0-9]+)? +V' "$T/demo.out" || fail "no Modbus line voltage in the table"
grep -qE '^[ *~] DoorStatus\.Car1Door1 .*(closed|open|locked)' "$T/demo.out" || fail "door state label missing"
grep -qE '^[ *~] Traction\.LineVoltage +1[45][0-9][0-9](\.[0-9]+)? +V' "$T/demo.out" || fail "no TRDP line voltage in the table"
grep -qE '^[ *~] Hvac\.CabinTemp\[1\] +2[0-9](\.[0-9]+)? +degC' "$T/demo.out" || fail "no TRDP cabin temperature in the table"

# the demo's log holds Health records like run's: stat works on it, with
# real rates for the buses, the collector and the log
"$RAILMON" stat --data "$T/log" > "$T/stat.out" || fail "stat on the demo log: $(cat "$T/stat.out")"
for n in vehicle traction collector log; do
	rate=$(awk -v n=$n '$1 == n { print $4 }' "$T/stat.out")
	awk -v r="${rate:-0}" 'BEGIN { exit !(r > 0) }' || fail "stat: rate of $n is '${rate:-}': $(cat "$T/stat.out")"
done
# the closing hint is a command that works as printed, from anywhere
hint=$(sed -n 's/^try: //p' "$T/demo.out")
[ -n "$hint" ] || fail "no closing hint"
(cd / && env -i PATH=/usr/bin:/bin bash -c "$hint" > "$T/hint.out") || fail "the closing hint failed: $hint"
[ "$(grep -c "^DEMO-" "$T/hint.out")" -ge 9 ] && head -1 "$T/hint.out" | grep -q '^vehicle,log_id,seq,' \
	|| fail "the hint printed no records: $(head -3 "$T/hint.out")"
echo "demo: stat shows rates on the demo log; the hint runs as printed: $hint"

# --- export: CSV, JSON lines, candump
"$RAILMON" export --data "$T/log" > "$T/all.csv" 2>"$T/export.err" || fail "export csv"
"$RAILMON" export --data "$T/log" --format jsonl > "$T/all.jsonl" 2>>"$T/export.err" || fail "export jsonl"
"$RAILMON" export --data "$T/log" --format candump > "$T/frames.log" 2>>"$T/export.err" || fail "export candump"
"$RAILMON" export --data "$T/log" --format jsonl -c line_voltage > "$T/lv.jsonl" 2>>"$T/export.err" || fail "export -c"

/usr/bin/python3 - "$T" "$SRC/cli/demo/train.log" "$records" "$can" "$trdp" <<'PY'
import csv, json, sys
T, trace, records, can, trdp = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rows = list(csv.DictReader(open(f"{T}/all.csv")))
js = [json.loads(l) for l in open(f"{T}/all.jsonl")]
assert len(rows) == len(js) == records, (len(rows), len(js), records)
seqs = sorted(int(r["seq"]) for r in rows)
assert seqs == list(range(seqs[0], seqs[0] + records)), "sequence numbers not contiguous"
assert [j["seq"] for j in js] == [int(r["seq"]) for r in rows]
kinds = {k: sum(1 for j in js if j["kind"] == k) for k in ("can", "sample", "event", "trdp")}
assert kinds["can"] == can, (kinds, can)
assert kinds["trdp"] == trdp, (kinds, trdp)
# the evidence chain's own events (SEAL_CHAIN_NEW, SEAL_UNSIGNED, SEAL) aside
events = [j["event"] for j in js if j["kind"] == "event" and not j["event"].startswith("SEAL")]
assert events[0] == "START" and events[-1] == "STOP", events
assert "MB_CONNECT" in events, events
# the CAN frames are the trace's first frames, in order, payload for payload
want = [l.split()[2] for l in open(trace) if l.strip()][:can]
got = [l.split()[2] for l in open(f"{T}/frames.log")]
assert got == want, f"frame {next(i for i,(a,b) in enumerate(zip(got,want)) if a!=b)} differs"
# Modbus values are what the simulated converter serves
lv = [json.loads(l) for l in open(f"{T}/lv.jsonl")]
assert len(lv) > 20 and all(j["name"] == "line_voltage" and j["unit"] == "V" for j in lv)
assert all(1400 < j["value"] < 1600 for j in lv), [j["value"] for j in lv][:5]
# decoded CAN samples carry names and units from the DBC
speed = [j for j in js if j["kind"] == "sample" and j["name"] == "VehicleSpeed.Speed"]
assert speed and all(j["unit"] == "km/h" and 0 <= j["value"] <= 250 for j in speed)
print(f"export: {records} records, contiguous seq, {can} frames identical to the trace, "
      f"{len(lv)} line_voltage samples in range")
PY

# --- the TRDP consist (cli/demo/consist.xml) tells the journey the
#     simulated devices play (bus/sim-train.c): the doors open at the
#     station until t = 5 s, acceleration from t = 6 s with the effort
#     falling from 180 kN, the line voltage and cabin temperature the Modbus
#     devices' formulas give
/usr/bin/python3 - "$T/all.jsonl" <<'PY'
import json, sys
js = [json.loads(l) for l in open(sys.argv[1])]
tele = [j for j in js if j["kind"] == "trdp"]
# every header valid (its FCS, version, type, length): a refused one's flags name the reason
assert tele and all(j["flags"] == "Pd" for j in tele), [j["flags"] for j in tele if j["flags"] != "Pd"][:3]
s = {}
for j in js:
    if j["kind"] == "sample" and j["name"].split(".")[0] in ("Doors", "Hvac", "Traction"):
        s.setdefault(j["name"], []).append((j["time_ns"], j["value"], j["unit"]))
want = {"Doors.Car1Open[0]", "Doors.Car1Open[1]", "Doors.Car2Open[0]", "Doors.Car2Open[1]", "Hvac.CabinTemp[0]",
        "Hvac.CabinTemp[1]", "Hvac.Setpoint", "Traction.State", "Traction.Effort", "Traction.LineVoltage",
        "Traction.MotorTemp", "Traction.Time"}
assert set(s) == want, sorted(set(s) ^ want)
units = {n: {u for _, _, u in v} for n, v in s.items()}
assert units["Traction.Effort"] == {"kN"} and units["Hvac.CabinTemp[0]"] == {"degC"} and \
    units["Traction.LineVoltage"] == {"V"} and units["Traction.MotorTemp"] == {"degC"}, units
# every door of both cars open together, then closed: the station stop
doors = [s[n] for n in sorted(n for n in want if n.startswith("Doors."))]
assert len({len(d) for d in doors}) == 1 and all(len({x[1] for x in row}) == 1 for row in zip(*doors)), \
    "the four doors disagree"
door = s["Doors.Car1Open[0]"]
assert {v for _, v, _ in door} == {0, 1}, {v for _, v, _ in door}
opened = [t for t, v, _ in door if v == 1]
closed = [t for t, v, _ in door if v == 0]
assert max(opened) < min(closed), "doors opened again after closing"
t_close = min(closed)
eff = dict((t, v) for t, v, _ in s["Traction.Effort"])
state = dict((t, v) for t, v, _ in s["Traction.State"])
assert all(eff[t] == 0 and state[t] == 0 for t in eff if t < t_close), "traction effort at the station"
moving = sorted(t for t in eff if eff[t] > 0)
assert moving, "no traction effort: the demo ended before the acceleration"
assert all(state[t] == 1 for t in moving), "effort without the motoring state"
lag = (moving[0] - t_close) / 1e9
assert 0.7 <= lag <= 1.5, f"effort {lag:.2f} s after the doors closed, not 1 s"
assert 170 <= eff[moving[0]] <= 180.05, eff[moving[0]]          # Effort INT16, scale 0.1
assert all(a >= b for a, b in zip([eff[t] for t in moving], [eff[t] for t in moving[1:]])), "effort rose"
assert all(1400 < v < 1600 for _, v, _ in s["Traction.LineVoltage"])  # UINT16, scale 0.1
assert all(40 < v < 75 for _, v, _ in s["Traction.MotorTemp"])         # UINT8, offset -40
assert all(abs(v - t / 1e9) < 0.5 for t, v, _ in s["Traction.Time"])  # TIMEDATE64: when it was sent
assert all(v == 21.5 for _, v, _ in s["Hvac.Setpoint"])
c0, c1 = s["Hvac.CabinTemp[0]"], s["Hvac.CabinTemp[1]"]
# REAL32 at 1/16 degC, exact in a float: decoded exactly
assert len(c0) >= 5 and all(21.1 < v < 22.5 and v * 16 == int(v * 16) for _, v, _ in c0), c0
assert all(b[1] - a[1] == 0.5 for a, b in zip(c0, c1)), "car 2 is not 0.5 degC above car 1"
print(f"trdp: {len(tele)} telegrams; doors open for {len(opened)} telegrams, closed {len(closed)}; effort "
      f"{eff[moving[0]]:.1f} kN {lag:.2f} s after the doors closed; {len(c0)} HVAC telegrams")
PY

# --- replay the whole trace as fast as possible, twice: every frame stored,
#     and the same records both times (boot id and pid aside)
frames=$(grep -c . "$SRC/cli/demo/train.log")
for i in 1 2; do
	"$RAILMON" replay "$SRC/cli/demo/train.log" --board "$SRC/cli/demo.ini" --data "$T/replay$i" \
		2> "$T/replay$i.err" || { cat "$T/replay$i.err"; fail "replay $i"; }
	# without the log id (column 2): each replay makes a new log
	"$RAILMON" export --data "$T/replay$i" --kind can --kind sample 2>/dev/null | cut -d, -f1,3- > "$T/replay$i.csv"
done
got=$("$RAILMON" export --data "$T/replay1" --format candump 2>/dev/null | wc -l)
[ "$got" -eq "$frames" ] || fail "replay stored $got of $frames frames"
cmp -s "$T/replay1.csv" "$T/replay2.csv" || fail "two replays of the same trace differ"
"$RAILMON" export --data "$T/replay1" --format candump 2>/dev/null | cut -d' ' -f1,3 > "$T/replayed.log"
cut -d' ' -f1,3 "$SRC/cli/demo/train.log" | cmp -s - "$T/replayed.log" || fail "replayed frames or timestamps differ from the trace"
echo "replay: $frames frames stored with their original timestamps, two runs identical"

# --- replay the demo's own log, twice: same frames and Modbus samples as
#     recorded, CAN decoded again, identical both times
for i in 1 2; do
	"$RAILMON" replay "$T/log" --board "$SRC/cli/demo.ini" --data "$T/relog$i" 2> "$T/relog$i.err" ||
		{ cat "$T/relog$i.err"; fail "log replay $i"; }
	"$RAILMON" export --data "$T/relog$i" --kind can --kind sample 2>/dev/null | cut -d, -f1,3- > "$T/relog$i.csv"
done
cmp -s "$T/relog1.csv" "$T/relog2.csv" || fail "two replays of the same log differ"
"$RAILMON" export --data "$T/relog1" --format candump 2>/dev/null > "$T/relog.can"
cmp -s "$T/frames.log" "$T/relog.can" || fail "log replay changed the CAN frames"
/usr/bin/python3 - "$T/all.jsonl" "$T/relog1.csv" <<'PY'
import csv, json, sys
orig = [(j["time_ns"], j["name"], j["value"]) for j in map(json.loads, open(sys.argv[1]))
        if j["kind"] == "sample"]
rep = [(int(r["time_ns"]), r["name"], float(r["value"])) for r in csv.DictReader(open(sys.argv[2]))
       if r["kind"] == "sample"]
assert sorted(orig) == sorted(rep), (len(orig), len(rep))
assert any(n.startswith("Traction.") for _, n, _ in rep), "the replay decoded no TRDP sample"
print(f"log replay: {len(rep)} samples (Modbus kept, CAN and TRDP decoded again) identical to the recording")
PY

# --- the recording's seal events are not fed back: the replay's log holds
#     only the seals of its own chain (one SEAL_CHAIN_NEW from seq 1, its own
#     times), and verifies against them
"$RAILMON" export --data "$T/relog1" --format jsonl --kind event 2>/dev/null > "$T/relog-events.jsonl"
/usr/bin/python3 - "$T/all.jsonl" "$T/relog-events.jsonl" <<'PY'
import json, sys
def seals(path):
    return [j for j in map(json.loads, open(path)) if j["kind"] == "event" and j["event"].startswith("SEAL")]
orig, rep = seals(sys.argv[1]), seals(sys.argv[2])
assert orig, "the demo's log has no seal events to replay"
assert not {j["time_ns"] for j in orig} & {j["time_ns"] for j in rep}, "a recorded seal event was replayed"
new = [j for j in rep if j["event"] == "SEAL_CHAIN_NEW"]
assert len(new) == 1 and new[0]["arg"] == 1, new
assert any(j["event"] == "SEAL" for j in rep), "the replay sealed nothing"
print(f"log replay: the recording's {len(orig)} seal events left out, {len(rep)} of the replay's own")
PY
"$RAILMON" verify --data "$T/relog1" --unsigned > "$T/verify.out" 2>&1 || { cat "$T/verify.out"; fail "verify of the replayed log"; }

# --- bad input: clear errors, no crash
if "$RAILMON" run --board /nonexistent.ini 2> "$T/err"; then fail "run with a missing board file succeeded"; fi
grep -q '/nonexistent.ini: No such file' "$T/err" || fail "missing board file: $(cat "$T/err")"
printf '[board]\nvehicle = x\n[can a]\ndriver = trace\nfile = %s\ndbc = %s\n' "$SRC/cli/demo/train.log" "$T/bad.dbc" > "$T/b.ini"
printf 'BO_ 100 X: 8 N\n SG_ S : 0|8@1+ (1,0) [0|1] "" N\nnonsense here\n' > "$T/bad.dbc"
if "$RAILMON" check --board "$T/b.ini" > /dev/null 2> "$T/err"; then fail "check accepted a bad DBC"; fi
grep -q "bad.dbc:3:" "$T/err" || fail "bad DBC error lacks file:line: $(cat "$T/err")"
for b in "$SRC/cli/demo.ini" "$SRC"/cli/vehicles/*.ini; do
	"$RAILMON" check --board "$b" > "$T/check.out" || fail "railmon check $b"
	grep -q '^ok$' "$T/check.out" || fail "check of $b did not say ok"
	! grep "outside the bus's filters" "$T/check.out" || fail "$b: a bus filter drops messages of its own DBC"
done
echo "check: every shipped board file validates, its bus filters pass every message of its DBCs"
# a filter that drops DBC messages (train.dbc: 0x100 0x120 0x200 0x300 0x310
# and the extended 0x18FF0121): check names them, extended ids with 8 digits
printf '[board]\nvehicle = x\n[can a]\ndriver = trace\nfile = %s\ndbc = %s\nfilter = 0x300/0x7E0\nfilter = 0x120/0x7FF\n' \
	"$SRC/cli/demo/train.log" "$SRC/cli/demo/train.dbc" > "$T/f.ini"
"$RAILMON" check --board "$T/f.ini" > "$T/check.out" || fail "check of a board with filters"
grep -q "warning: 3 of 6 DBC messages outside the bus's filters, never decoded: VehicleSpeed 0x100, DoorStatus 0x200, TractionMotor1 0x18FF0121$" \
	"$T/check.out" || { cat "$T/check.out"; fail "check: DBC messages a filter drops"; }
# the plan: cycle times from the DBC (20+40+100+50+100+100 ms -> 125 frames/s),
# the Modbus requests merged from the channels
"$RAILMON" check --board "$SRC/cli/demo.ini" > "$T/check.out"
grep -q "6 of 6 messages cyclic: 125 frames/s, about 3% of the bus at 500 kbit/s" "$T/check.out" ||
	{ cat "$T/check.out"; fail "check: CAN bus load estimate"; }
grep -q "10 channels in 4 requests: 16.0 requests/s" "$T/check.out" || fail "check: Modbus request plan"
# the TRDP plan of cli/demo/consist.xml: Doors and Traction every 100 ms,
# Hvac every second, each telegram's header, data set and padding to 4
grep -q "^  \[trdp consist\] .*bound to 127.0.0.1, PD UDP 17224" "$T/check.out" || fail "check: no TRDP bus"
grep -q "XML .*consist.xml: 3 telegrams, 3 data sets" "$T/check.out" || fail "check: the consist's XML"
grep -q "12 leaves (channels.*PD 1052 bytes/s" "$T/check.out" || { cat "$T/check.out"; fail "check: TRDP plan"; }
echo "PASS"
