#!/bin/bash
# test-hold-uplink.sh RAILMON SRCDIR - held data goes to the ground first,
# through the real binary: `railmon run` with a [trigger] and an [uplink]
# whose broker cannot be reached at first (a closed port), so a backlog
# builds; EmergencyBrake goes to 1 at 2 s into the trace (a hold of
# [t - 1s, t + 1s]); then a TCP relay to a real mosquitto opens and the
# forwarder connects.  `railmon recv --order seq` writes the records as
# their Batches arrive: the held window's records come first, then the
# older backlog from seq 1, then the rest; every record exactly once;
# `stat --json` counts the held Batches (hold_batches) while it runs.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init hold-uplink
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.log; do [ -s "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

# BrakePressure (0x120) every 50 ms for 12 s; EmergencyBrake (bit 59,
# Motorola: byte 7, 0x08) is 1 from 2.0 s to 2.2 s
awk 'BEGIN { for (i = 0; i < 240; i++) { t = i * 0.05; b7 = (t >= 2.0 && t < 2.25) ? "CA" : "C2";
	printf "(%.6f) can0 120#11FC0642064435%s\n", 1764748800 + t, b7 } }' > "$T/trace.log"
has_lines "$T/trace.log" '120#11FC0642064435CA' 5 || fail "trace generation"

BPORT=$(free_port)
PPORT=$(free_port)
printf 'listener %s 127.0.0.1\nuser root\npersistence false\nallow_anonymous true\n' "$BPORT" > "$T/mosq.conf"
start_peer mosquitto -c "$T/mosq.conf" 2>> "$T/mosq.log"
wait_for 10 port_open "$BPORT" || fail "mosquitto did not start on port $BPORT"
start_peer "$RAILMON" recv --broker "mqtt://127.0.0.1:$BPORT" --order seq --topic 'railmon/HOLDUP/data' \
	--client-id hold-uplink-recv -o "$T/recv.jsonl" 2> "$T/recv.err"
RECV=$LIB_PID

cat > "$T/board.ini" <<EOF
[board]
vehicle = HOLDUP
batch_ms = 100
[storage]
sync_window_ms = 50
[uplink]
broker = mqtt://127.0.0.1:$PPORT
[can vehicle]
driver = trace
file = $T/trace.log
dbc = $SRC/cli/demo/train.dbc
speed = 1
[trigger Emergency]
when = EmergencyBrake == 1
pre = 1s
post = 1s
EOF

start_peer "$RAILMON" run --board "$T/board.ini" --data "$T/log" --duration 12 > "$T/run.out" 2> "$T/run.err"
RUN=$LIB_PID
# the broker is unreachable until the trigger has fired (2 s into the
# trace) and its post window has ended (3 s) with nothing sent.  Waited for
# by the forwarder's own count, not by a fixed 4.5 s: on a loaded machine
# run starts late, the relay opened before the hold was requested, and the
# backlog went first (CI saw it)
wait_for 30 sh -c "'$RAILMON' stat --data '$T/log' --json 2> /dev/null | grep -q '\"hold_requests\":[1-9]'" ||
	fail "no hold requested of the forwarder"
sleep_s 2
start_peer socat "TCP-LISTEN:$PPORT,bind=127.0.0.1,reuseaddr,fork" "TCP:127.0.0.1:$BPORT"
wait_for 15 grep -q 'uplink: connected' "$T/run.err" || fail "the forwarder did not connect"
wait_for 5 sh -c "'$RAILMON' stat --data '$T/log' --json > '$T/stat.json' 2> /dev/null && grep -q '\"hold_batches\":[1-9]' '$T/stat.json'" ||
	fail "stat --json: no hold_batches"
wait_for 20 gone "$RUN" || fail "run did not end"
wait "$RUN" || fail "run failed"
"$RAILMON" hold list --data "$T/log" > "$T/list.out" 2> "$T/list.err" || fail "hold list"
has_lines "$T/list.out" '^1 *Emergency ' || fail "no hold made"
"$RAILMON" export --data "$T/log" --format jsonl --order seq > "$T/export.jsonl" 2> "$T/export.err" || fail "export"
# the broker acknowledged everything before run ended (its summary says
# so); recv writes its file out when it stops
has_lines "$T/run.err" '0 records not yet acknowledged' || fail "run ended with records unacknowledged"
sleep_s 1
stop_pid "$RECV"

# The order of arrival: the held window (the TRIGGER event's time +-1 s),
# then seq 1 onwards without the window; every seq once.
"$PY" - "$T/export.jsonl" "$T/recv.jsonl" <<'EOF' || fail "arrival order"
import json, sys
from datetime import datetime

def ns(iso):  # 2025-12-03T08:00:02.123456789Z
    head, frac = iso.rstrip("Z").split(".")
    return int(datetime.fromisoformat(head + "+00:00").timestamp()) * 10**9 + int(frac.ljust(9, "0"))

log = [json.loads(l) for l in open(sys.argv[1])]
got = [json.loads(l)["seq"] for l in open(sys.argv[2])]
trig = [r for r in log if r.get("event") == "TRIGGER"]
assert len(trig) == 1, f"{len(trig)} TRIGGER events"
t = ns(trig[0]["time"])
seqs = [r["seq"] for r in log]
assert sorted(got) == seqs, f"recv: {len(got)} records, {len(set(got))} distinct, log {len(seqs)}"
# the held records: those of the Batches arriving before seq 1
first = got.index(1)
held = got[:first]
assert held, "nothing arrived before seq 1: the hold was not sent first"
assert held == list(range(held[0], held[-1] + 1)), "the held records are not one run"
times = {r["seq"]: ns(r["time"]) for r in log}
lo, hi = times[held[0]], times[held[-1]]
# the window [t - 1s, t + 1s] is covered, Batches (100 ms) reach a little past it
assert lo <= t - 10**9 + 2 * 10**8 and hi >= t + 10**9 - 2 * 10**8, (lo - t, hi - t)
assert lo >= t - 10**9 - 5 * 10**8 and hi <= t + 10**9 + 5 * 10**8, (lo - t, hi - t)
rest = got[first:]
assert rest == [s for s in seqs if s not in set(held)], "the backlog after the window is not in seq order"
print(f"ok: {len(held)} held records (seq {held[0]}..{held[-1]}, {(lo - t) / 1e9:+.2f} s .. "
      f"{(hi - t) / 1e9:+.2f} s around the trigger) arrived first, then {len(rest)} from seq 1; "
      f"{len(got)} records, each once")
EOF
grep -o '"hold_requests":[0-9]*,"hold_batches":[0-9]*,"hold_refused":[0-9]*' "$T/stat.json"
echo ok
