#!/bin/bash
# test-log-damage.sh RAILMON SRCDIR - the offline tools on a damaged log,
# through the real binary.  In place of a middle segment: a directory, a
# FIFO, a symbolic link, a zero-length file, another segment's file, no file
# at all, a file nobody may read; in place of the newest one: a FIFO and a
# directory.  `export`, `stat` and `replay` must each (bounded: a tool that
# blocks fails the test) name the file and the seq range lost, go on with
# every later segment, and exit 1.  A paced replay stops on SIGTERM even in
# the middle of an hour's gap between records.  A writer (replay into the
# damaged log) sets a directory in place of the newest segment aside and
# goes on.
set -euo pipefail
RAILMON=$1
SRC=$2
# On the disk, not a tmpfs: a directory read there fails with EISDIR (the
# case that stopped export), on tmpfs it merely looks short.
. "$(dirname "$0")/../lib/lib.sh"
lib_init damage /var/tmp
chmod 755 "$T"
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do [ -s "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

cat > "$T/board.ini" <<EOF
[board]
vehicle = DAMAGE-TEST
batch_ms = 100
health_interval_s = 1
[storage]
segment_size = 64K
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
EOF

# Paced (3 s), so the log holds health records (every second) after the damage.
"$RAILMON" replay "$SRC/cli/demo/train.log" --board "$T/board.ini" --data "$T/good" --speed 20 \
	2> "$T/setup.err" || fail "making the test log"
"$RAILMON" export --data "$T/good" --format jsonl > "$T/good.jsonl" 2>> "$T/setup.err" || fail "export of the good log"
total=$(wc -l < "$T/good.jsonl")
mapfile -t segs < <(cd "$T/good" && ls -- *.seg | sort)
[ ${#segs[@]} -ge 5 ] || fail "only ${#segs[@]} segments"
mid=${segs[2]}
first=$((10#${mid%.seg}))
end=$((10#${segs[3]%.seg}))
echo "test log: $total records in ${#segs[@]} segments; damaging $mid (records $first..$((end - 1)))"

# bounded TOOL-NAME CASE CMD...: run with a time bound, stderr to CASE.TOOL.err,
# stdout to CASE.TOOL.out; sets $rc.  A tool still running after 20 s blocked.
bounded() {
	local tool=$1 case=$2
	shift 2
	rc=0
	timeout -k 2 20 "$@" > "$T/$case.$tool.out" 2> "$T/$case.$tool.err" || rc=$?
	[ $rc -ne 124 ] && [ $rc -ne 137 ] || fail "$case: railmon $tool blocked (killed after 20 s)"
}

# check_tools CASE DIR PATTERN LOST_FIRST LOST_LAST [AS_USER]
check_tools() {
	local case=$1 dir=$2 pattern=$3 lf=$4 ll=$5 user=${6:-}
	local as=()
	[ -n "$user" ] && as=(setpriv --reuid="$user" --regid="$user" --clear-groups)
	bounded export "$case" "${as[@]}" "$RAILMON" export --data "$dir" --format jsonl --order seq
	[ $rc -eq 1 ] || fail "$case: export exited $rc, expected 1"
	grep -qE -- "$pattern" "$T/$case.export.err" || fail "$case: export does not say '$pattern'"
	grep -q -- "$lf\\.\\.$ll" "$T/$case.export.err" || fail "$case: export does not name records $lf..$ll"
	"$PY" - "$T/$case.export.out" "$total" "$lf" "$ll" <<'PY' || fail "$case: export did not write every other record"
import json, sys
seqs = [json.loads(l)["seq"] for l in open(sys.argv[1])]
total, lf, ll = map(int, sys.argv[2:])
want = [s for s in range(1, total + 1) if not lf <= s <= ll]
assert seqs == want, f"{len(seqs)} records, expected {len(want)} (max {max(seqs, default=0)})"
PY
	bounded stat "$case" "${as[@]}" "$RAILMON" stat --data "$dir"
	[ $rc -eq 1 ] || fail "$case: stat exited $rc, expected 1"
	grep -qE -- "$pattern" "$T/$case.stat.err" || fail "$case: stat does not say '$pattern'"
	grep -q '^vehicle ' "$T/$case.stat.out" || fail "$case: stat shows no health (the later segments hold it)"
	rm -rf "$T/$case.replayed"
	mkdir -m 1777 "$T/$case.replayed"
	bounded replay "$case" "${as[@]}" "$RAILMON" replay "$dir" --board "$T/board.ini" --data "$T/$case.replayed/log"
	[ $rc -eq 1 ] || fail "$case: replay exited $rc, expected 1"
	grep -qE -- "$pattern" "$T/$case.replay.err" || fail "$case: replay does not say '$pattern'"
	grep -q "1 unreadable part of the source log skipped" "$T/$case.replay.err" || fail "$case: replay's summary"
	# Every CAN frame that could be read went through again.
	"$RAILMON" export --data "$T/$case.replayed/log" --kind can --format jsonl 2>/dev/null | wc -l > "$T/n.replayed"
	grep -c '"kind":"can"' "$T/$case.export.out" > "$T/n.read" || true
	cmp -s "$T/n.replayed" "$T/n.read" || fail "$case: replay sent $(cat "$T/n.replayed") frames, export read $(cat "$T/n.read")"
	echo "$case: export, stat and replay said it, went on, exited 1"
}

damaged() { # CASE: a fresh copy of the good log
	rm -rf "$T/$1"
	cp -a "$T/good" "$T/$1"
	echo "$T/$1/$mid"
}

p=$(damaged dir); rm "$p"; mkdir "$p"
check_tools dir "$T/dir" "$mid: a directory, not a segment file: skipped" $first $((end - 1))
p=$(damaged fifo); rm "$p"; mkfifo "$p"
check_tools fifo "$T/fifo" "$mid: a FIFO, not a segment file: skipped" $first $((end - 1))
p=$(damaged symlink); rm "$p"; ln -s "$T/good/${segs[0]}" "$p"
check_tools symlink "$T/symlink" "$mid: a symbolic link \\(never followed\\)" $first $((end - 1))
p=$(damaged empty); : > "$p"
check_tools empty "$T/empty" "$mid: empty or shorter than a segment header" $first $((end - 1))
p=$(damaged misnamed); cp "$T/good/${segs[0]}" "$p"
check_tools misnamed "$T/misnamed" "$mid: its header names another segment" $first $((end - 1))
p=$(damaged deleted); rm "$p"
check_tools deleted "$T/deleted" "records $first\\.\\.$((end - 1)) missing: no segment file holds them" \
	$first $((end - 1))
p=$(damaged unreadable); chmod 0 "$p"; chmod 755 "$T/unreadable"
check_tools unreadable "$T/unreadable" "$mid: Permission denied: skipped" $first $((end - 1)) 65534

# Replaying a log into itself would read back what it writes: refused.
rc=0
"$RAILMON" replay "$T/good" --board "$T/board.ini" --data "$T/good/" > /dev/null 2> "$T/self.err" || rc=$?
[ $rc -eq 2 ] || fail "replay of a log into itself exited $rc, expected 2"
grep -q "is the log being replayed: give another --data DIR" "$T/self.err" || fail "replay into itself: no reason"
[ "$(cd "$T/good" && ls -- *.seg | sort)" = "$(printf '%s\n' "${segs[@]}")" ] || fail "replay into itself wrote"
echo "replay of a log into itself: refused, nothing written"

# The newest segment: what it held is lost to the end of the log.
last=${segs[-1]}
lfirst=$((10#${last%.seg}))
for kind in fifo dir; do
	rm -rf "$T/last-$kind"; cp -a "$T/good" "$T/last-$kind"; rm "$T/last-$kind/$last"
	if [ $kind = fifo ]; then mkfifo "$T/last-$kind/$last"; else mkdir "$T/last-$kind/$last"; fi
	bounded export "last-$kind" "$RAILMON" export --data "$T/last-$kind" --format jsonl
	[ $rc -eq 1 ] || fail "last-$kind: export exited $rc"
	grep -q "records $lfirst\\.\\. (to the end of the log) lost" "$T/last-$kind.export.err" \
		|| fail "last-$kind: export does not say what is lost"
	[ "$(wc -l < "$T/last-$kind.export.out")" -eq $((lfirst - 1)) ] || fail "last-$kind: records before it"
done
echo "newest segment a FIFO or a directory: said, records $lfirst.. to the end lost, exit 1"

# A writer on that log: the directory is set aside, the log goes on after
# the last real segment (it used to refuse to open: "Is a directory").
"$RAILMON" replay "$SRC/cli/demo/train.log" --board "$T/board.ini" --data "$T/last-dir" --append 2> "$T/writer.err" \
	|| fail "replay into a log whose newest segment is a directory: exit $?"
[ -d "$T/last-dir/$last.damaged" ] || fail "the directory was not set aside as $last.damaged"
"$RAILMON" export --data "$T/last-dir" --format jsonl --order seq > "$T/writer.jsonl" 2> "$T/writer-export.err" \
	|| fail "export after the writer went on"
"$PY" - "$T/writer.jsonl" "$lfirst" <<'PY' || fail "the writer did not go on from the last real segment"
import json, sys
seqs = [json.loads(l)["seq"] for l in open(sys.argv[1])]
assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) > int(sys.argv[2]), (len(seqs), sys.argv[2])
PY
echo "writer: a directory in place of the newest segment set aside, the log goes on"

# A paced replay across an hour's gap between two records stops on SIGTERM.
"$PY" - "$SRC/cli/demo/train.log" "$T/gap.log" <<'PY'
import sys
lines = [l for l in open(sys.argv[1]) if l.strip()][:200]
with open(sys.argv[2], "w") as out:
    for shift in (0, 3600):
        for l in lines:
            t, rest = l.split(" ", 1)
            out.write(f"({float(t.strip('()')) + shift:.6f}) {rest}")
PY
"$RAILMON" replay "$T/gap.log" --board "$T/board.ini" --data "$T/gaplog" 2> "$T/gap-setup.err" || fail "gap log"
"$RAILMON" replay "$T/gaplog" --board "$T/board.ini" --data "$T/gap-replayed" --speed 1 2> "$T/gap-replay.err" &
rpid=$!
pids+=($rpid)
wait_for 10 grep -q 'log in' "$T/gap-replay.err" || true
sleep_s 1.5 # past the first 200 frames, into the gap
kill -0 $rpid || fail "the paced replay ended before the gap"
kill -TERM $rpid
wait_for 5 gone $rpid || true
kill -0 $rpid 2>/dev/null && fail "replay --speed 1 ignored SIGTERM for 5 s (waiting out the gap)"
wait $rpid || true
echo "replay --speed 1: stopped by SIGTERM inside an hour's gap"
# Exit status 1 is expected here, and is also a sanitizer's: no report may
# hide behind it.
if grep -lE "Sanitizer|runtime error:" "$T"/*.err 2> /dev/null; then fail "sanitizer report (see above)"; fi
echo PASS
