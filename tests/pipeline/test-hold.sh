#!/bin/bash
# test-hold.sh RAILMON SRCDIR - event holds and required channels through
# the real binary: `railmon run` with [trigger] sections (an event code and
# a channel condition) and a required signal; `hold list` shows the holds
# with their window, records, segments, bytes and expiry; export has the
# TRIGGER events (arg = hold id) and CHANNEL_STALE / CHANNEL_FRESH naming
# the channel by id; `hold release`; a hold's expiry while `run` runs
# (HOLD_ENDED); a holds file damaged under a running `run` (file and line
# said, recording goes on, exit 1); kill -9 and a restart; a damaged holds
# file at start: `hold list` and `run` name it with its line and refuse,
# and it is never rewritten.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init hold
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.out; do [ -s "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

cat > "$T/board.ini" <<EOF
[board]
vehicle = HOLD-TEST
batch_ms = 100
[storage]
segment_size = 64K
retention_min_age = 48h
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
speed = 1
loop = true
[trigger Start]
when = event START
pre = 1m
post = 10s
[trigger Moving]
when = Speed >= 0
pre = 30s
post = 30s
hold = 1h
; Odometer comes every 100 ms: 50 ms is missed between frames
[signal Odometer.TripDistance]
required_within_ms = 50
EOF

"$RAILMON" run --board "$T/board.ini" --data "$T/log" --duration 2 > "$T/run.out" 2> "$T/run.err" || fail "run"
"$RAILMON" hold list --board "$T/board.ini" --data "$T/log" > "$T/list.out" 2> "$T/list.err" || fail "hold list"
has_lines "$T/list.out" '^1 *Start .* -1m +10s  *1-[0-9]* *1 *[0-9]* *at release$' || fail "hold 1 in the list"
has_lines "$T/list.out" '^2 *Moving .* -30s +30s .* 20[0-9-]* [0-9:.]*Z$' || fail "hold 2 with its expiry"
"$RAILMON" export --data "$T/log" --format jsonl > "$T/export.jsonl" 2> "$T/export.err" || fail "export"
has_lines "$T/export.jsonl" '"event":"TRIGGER","arg":1,"detail":0' || fail "TRIGGER event of hold 1"
has_lines "$T/export.jsonl" '"event":"TRIGGER","arg":2,"detail":1' || fail "TRIGGER event of hold 2"
# TripDistance: stale between its frames (every 100 ms), fresh at each
id=$("$RAILMON" channels --board "$T/board.ini" 2> /dev/null | awk '$3 == "Odometer.TripDistance" && id == "" {id = $1} END {print id}')
[ -n "$id" ] || fail "no channel id for Odometer.TripDistance"
grep -q "\"event\":\"CHANNEL_STALE\",\"arg\":[0-9-]*,\"detail\":$((id))}" "$T/export.jsonl" || fail "CHANNEL_STALE for channel $id"
grep -q "\"event\":\"CHANNEL_FRESH\",\"arg\":[0-9]*,\"detail\":$((id))}" "$T/export.jsonl" || fail "CHANNEL_FRESH for channel $id"

# release
"$RAILMON" hold release 1 --data "$T/log" > "$T/rel.out" 2> "$T/rel.err" || fail "release"
"$RAILMON" hold release 1 --data "$T/log" > "$T/rel2.out" 2> "$T/rel2.err" && fail "a second release succeeded"
has_lines "$T/rel2.err" 'no hold 1' || fail "second release message"
"$RAILMON" hold list --data "$T/log" > "$T/list2.out" 2>&1 || fail "list after release"
grep -q '^1 ' "$T/list2.out" && fail "hold 1 still listed"
has_lines "$T/list2.out" '^2 *Moving' || fail "hold 2 gone"

# a hold that cannot be written (a directory where its temporary file
# goes): TRIGGER says -errno, stderr says what it costs
mkdir -p "$T/log2/holds.tmp"
"$RAILMON" run --board "$T/board.ini" --data "$T/log2" --duration 1 > "$T/run3.out" 2> "$T/run3.err" || true
has_lines "$T/run3.err" "a trigger fired but its hold could not be written (Is a directory)" || fail "unwritable hold not said"
"$RAILMON" export --data "$T/log2" --format jsonl > "$T/export2.jsonl" 2> /dev/null || fail "export of log2"
has_lines "$T/export2.jsonl" '"event":"TRIGGER","arg":-21,"detail":0' || fail "TRIGGER with -EISDIR"

# A hold's expiry noticed on time (issue 24): default 16 MiB segments (no
# roll in this run), no retention setting; a hold of 2 s made by the START
# event ends within the log's once-a-second pass: HOLD_ENDED in the log
# while `run` is still running, and `hold list` says no holds.
cat > "$T/expiry.ini" <<EOF
[board]
vehicle = HOLD-TEST
batch_ms = 100
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
speed = 1
loop = true
[trigger Start]
when = event START
pre = 1m
post = 1s
hold = 2s
EOF
live_export() { "$RAILMON" export --data "$1" --format jsonl > "$T/live.jsonl" 2> /dev/null || true; }
has_event() { live_export "$1"; grep -q "\"event\":\"$2\"" "$T/live.jsonl"; }
event_ns() { grep -o "\"time_ns\":[0-9]*,.*\"event\":\"$1\"" "$T/live.jsonl" | head -1 | sed 's/"time_ns":\([0-9]*\),.*/\1/'; }
start_peer "$RAILMON" run --board "$T/expiry.ini" --data "$T/log4" > "$T/run4.out" 2> "$T/run4.err"
run4=$LIB_PID
wait_for 60 has_event "$T/log4" HOLD_ENDED || fail "no HOLD_ENDED within 60 s of a 2 s hold"
alive "$run4" || fail "run ended early"
echo "HOLD_ENDED $((($(event_ns HOLD_ENDED) - $(event_ns TRIGGER)) / 1000000)) ms after the TRIGGER of a 2 s hold (16 MiB segments)"
"$RAILMON" hold list --data "$T/log4" > "$T/list4.out" 2>&1 || fail "hold list of the live log"
has_lines "$T/list4.out" 'no holds' || fail "the ended hold is still listed"
[ "$(find "$T/log4" -name '*.seg' | wc -l)" = 1 ] || fail "a segment rolled: the test proves nothing"
stop_pid "$run4"

# A holds file damaged while `run` runs (issue 24): recording goes on,
# retention deletes nothing, stderr names the file and line at once, the
# log has a HOLD_FAULT event (arg -EBADMSG, detail the line), the file is
# never rewritten, and `run` exits 1 saying so.
max_seq() { live_export "$1"; grep -o '"seq":[0-9]*' "$T/live.jsonl" | cut -d: -f2 | sort -n | tail -1; }
both_holds() { "$RAILMON" hold list --data "$T/log5" > "$T/list5.out" 2>&1 && has_lines "$T/list5.out" '^2 *Moving'; }
"$RAILMON" run --board "$T/board.ini" --data "$T/log5" > "$T/run5.out" 2> "$T/run5.err" &
run5=$!
pids+=("$run5")
wait_for 60 both_holds || fail "the two holds were not made"
sed -i 's/^hold 1 Start \([0-9]\)/hold 1 Start 9/' "$T/log5/holds"
cp "$T/log5/holds" "$T/holds5.damaged"
"$RAILMON" hold list --data "$T/log5" > /dev/null 2> "$T/list5.err" && fail "list of the damaged file succeeded"
where=$(grep -o "$T/log5/holds:[0-9]*" "$T/list5.err") || fail "hold list names no line"
said() { has_lines "$T/run5.err" "railmon run: the log: $where: the holds file is damaged"; }
wait_for 30 said || fail "run does not name $where on stderr"
alive "$run5" || fail "run stopped on a damaged holds file"
wait_for 30 has_event "$T/log5" HOLD_FAULT || fail "no HOLD_FAULT event in the log"
has_lines "$T/live.jsonl" "\"event\":\"HOLD_FAULT\",\"arg\":-74,\"detail\":${where##*:}}" || fail "HOLD_FAULT without -EBADMSG and line ${where##*:}"
s0=$(max_seq "$T/log5")
grows() { [ "$(max_seq "$T/log5")" -gt "$s0" ]; }
wait_for 30 grows || fail "recording stopped after the damage (seq $s0)"
kill -TERM "$run5"
rc=0; wait "$run5" || rc=$?
[ "$rc" = 1 ] || fail "run exited $rc after the holds file was damaged during the run"
has_lines "$T/run5.err" "the holds file $T/log5/holds was damaged during the run (line ${where##*:}): retention deleted nothing while it was so; it still is" || fail "the exit verdict does not say the holds file"
cmp -s "$T/log5/holds" "$T/holds5.damaged" || fail "the damaged file was changed by run"

# kill -9 while holds exist, and a restart: the holds survive whole (the
# file is replaced by rename, never written in place) and the restart's
# triggers get new ids, never reused ones.
"$RAILMON" run --board "$T/board.ini" --data "$T/log6" > "$T/run6.out" 2> "$T/run6.err" &
run6=$!
pids+=("$run6")
six_holds() { "$RAILMON" hold list --data "$T/log6" > "$T/list6.out" 2>&1 && has_lines "$T/list6.out" '^2 *Moving'; }
wait_for 60 six_holds || fail "the two holds were not made before the kill"
kill -KILL "$run6"
wait "$run6" 2> /dev/null || true
"$RAILMON" run --board "$T/board.ini" --data "$T/log6" --duration 1 > "$T/run7.out" 2> "$T/run7.err" || fail "run after kill -9"
"$RAILMON" hold list --data "$T/log6" > "$T/list7.out" 2>&1 || fail "hold list after kill -9 and restart"
for want in '^1 *Start .* at release$' '^2 *Moving ' '^3 *Start .* at release$' '^4 *Moving '; do
	has_lines "$T/list7.out" "$want" || fail "after kill -9 and restart: no '$want'"
done

# a damaged holds file: named with its line, never rewritten, run refuses
sed -i 's/^hold 2 Moving \([0-9]\)/hold 2 Moving 9/' "$T/log/holds"
cp "$T/log/holds" "$T/holds.damaged"
"$RAILMON" hold list --data "$T/log" > "$T/list3.out" 2> "$T/list3.err" && fail "list of a damaged file succeeded"
has_lines "$T/list3.err" "$T/log/holds:4: the holds file is damaged" || fail "list names the file and line"
"$RAILMON" run --board "$T/board.ini" --data "$T/log" --duration 1 > "$T/run2.out" 2> "$T/run2.err" && fail "run on a damaged holds file"
has_lines "$T/run2.err" "$T/log/holds:4: the holds file is damaged" || fail "run names the file and line"
cmp -s "$T/log/holds" "$T/holds.damaged" || fail "the damaged file was changed"
echo ok
