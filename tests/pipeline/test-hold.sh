#!/bin/bash
# test-hold.sh RAILMON SRCDIR - event holds and required channels through
# the real binary: `railmon run` with [trigger] sections (an event code and
# a channel condition) and a required signal; `hold list` shows the holds
# with their window, records, segments, bytes and expiry; export has the
# TRIGGER events (arg = hold id) and CHANNEL_STALE / CHANNEL_FRESH naming
# the channel by id; `hold release`; a damaged holds file: `hold list` and
# `run` name it with its line and refuse, and it is never rewritten.
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
file = $SRC/board/demo/train.log
dbc = $SRC/board/demo/train.dbc
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
id=$("$RAILMON" channels --board "$T/board.ini" 2> /dev/null | awk '$3 == "Odometer.TripDistance" {print $1; exit}')
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

# a damaged holds file: named with its line, never rewritten, run refuses
sed -i 's/^hold 2 Moving \([0-9]\)/hold 2 Moving 9/' "$T/log/holds"
cp "$T/log/holds" "$T/holds.damaged"
"$RAILMON" hold list --data "$T/log" > "$T/list3.out" 2> "$T/list3.err" && fail "list of a damaged file succeeded"
has_lines "$T/list3.err" "$T/log/holds:4: the holds file is damaged" || fail "list names the file and line"
"$RAILMON" run --board "$T/board.ini" --data "$T/log" --duration 1 > "$T/run2.out" 2> "$T/run2.err" && fail "run on a damaged holds file"
has_lines "$T/run2.err" "$T/log/holds:4: the holds file is damaged" || fail "run names the file and line"
cmp -s "$T/log/holds" "$T/holds.damaged" || fail "the damaged file was changed"
echo ok
