#!/bin/bash
# test-log-full.sh RAILMON SRCDIR - drop accounting across a full disk, on a
# real 4 MiB tmpfs (needs root for the mount: it FAILS, never skips,
# without it).  `railmon run` logs a looping trace at 10x; the filesystem
# is filled while it acquires; the daemon must say at once on stderr that
# the log refuses records; space is freed and it must say the log takes
# records again; after SIGTERM it exits 1 naming the number refused, and
# the LOG_DROPPED events in the log (read back with `railmon export`) add up
# exactly to that number, while stored + refused covers every seq.
set -euo pipefail
RAILMON=$1
SRC=$2
fail() { echo "FAIL: $*"; echo "--- railmon stderr:"; cat "$T/run.err" 2>/dev/null || true; exit 1; }
# said PATTERN: railmon's stderr has it (and railmon still runs)
said() {
	has_lines "$T/run.err" "$1" && return 0
	kill -0 "$rpid" 2>/dev/null || fail "railmon run died waiting for '$1'"
	return 1
}
# wait_said PATTERN: poll railmon's stderr (bounded, 30 s)
wait_said() { wait_for 30 said "$1" || fail "timed out waiting for '$1'"; }

. "$(dirname "$0")/../lib/lib.sh"
lib_init full
lib_tmpfs 4m
cat > "$T/board.ini" <<EOF
[board]
vehicle = FULL-TEST
batch_ms = 50
health_interval_s = 1
[storage]
sync_window_ms = 20
segment_size = 256K
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
speed = 10
loop = true
EOF

"$RAILMON" run --board "$T/board.ini" --data "$M/log" 2> "$T/run.err" &
rpid=$!
pids+=($rpid)
wait_said "log in $M/log"
sleep_s 1
# Fill the filesystem while it acquires (dd stops at ENOSPC).
dd if=/dev/zero of="$M/filler" bs=64K 2> /dev/null || true
wait_said "THE LOG IS REFUSING RECORDS (No space left on device)"
echo "disk full: $(grep -m1 'THE LOG IS REFUSING' "$T/run.err")"
sleep_s 3 # keeps acquiring: every Batch and every event refused
rm "$M/filler"
wait_said "the log takes records again"
echo "space back: $(grep -m1 'the log takes records again' "$T/run.err")"
sleep_s 1
kill -TERM $rpid
rc=0
wait $rpid || rc=$?
[ $rc -eq 1 ] || fail "railmon run exited $rc after refusing records, expected 1"
refused=$(sed -n 's/^railmon run: \([0-9]*\) records were refused by the log (No space left on device)$/\1/p' "$T/run.err")
[ -n "$refused" ] && [ "$refused" -gt 1000 ] || fail "no final count of refused records (or too few: '$refused')"
! grep -q "are in no LOG_DROPPED event" "$T/run.err" || fail "some refused records are in no event"

"$RAILMON" export --data "$M/log" --format jsonl --order seq > "$T/all.jsonl" 2> "$T/export.err" \
	|| { cat "$T/export.err"; fail "export of the log"; }
"$PY" - "$T/all.jsonl" "$refused" <<'PY' || fail "the log's events do not account for the refused records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
refused = int(sys.argv[2])
ev = [r for r in recs if r["kind"] == "event"]
dropped = [r["arg"] for r in ev if r["event"] == "LOG_DROPPED"]
faults = [r for r in ev if r["event"] == "LOG_FAULT"]
seqs = [r["seq"] for r in recs]
assert sum(dropped) == refused, f"LOG_DROPPED events add up to {sum(dropped)} ({dropped}), {refused} refused"
assert all(r["detail"] == 28 for r in ev if r["event"] == "LOG_DROPPED"), "detail is not ENOSPC"
assert faults and all(r["arg"] == -28 for r in faults), faults
assert seqs == sorted(set(seqs)), "seq numbers repeat or go back"
assert len(seqs) + refused == max(seqs), f"{len(seqs)} stored + {refused} refused != {max(seqs)} numbered"
print(f"log: {len(seqs)} records stored, {refused} refused = seq 1..{max(seqs)}; "
      f"{len(dropped)} LOG_DROPPED event(s) adding up to {sum(dropped)}, {len(faults)} LOG_FAULT (ENOSPC)")
PY
# Exit status 1 is expected here, and is also a sanitizer's: no report may
# hide behind it.
if grep -lE "Sanitizer|runtime error:" "$T"/*.err 2> /dev/null; then fail "sanitizer report (see above)"; fi
echo PASS
