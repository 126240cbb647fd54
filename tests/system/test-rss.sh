#!/bin/bash
# test-rss.sh RAILMON SRCDIR [SECONDS] - resident memory of `railmon run` on
# the emu-regional board, and no growth over a long run (suite soak, 10 min):
# both CAN buses read gen-load-trace.py traces paced at real time (about
# 1,750 frames/s each, DBC decoding, the log written), no Modbus server and
# no broker (those sections are left out: a peer that is not there would
# only add reconnect attempts).  VmRSS is read every 10 s; after the first
# minute (rings, Batches, DBC tables and stacks are all allocated and
# locked by then: the daemon runs mlockall) it must not grow by more than
# 256 KiB.  Prints the figure and the largest mappings.
set -euo pipefail
RAILMON=$1
SRC=$2
SECS=${3:-600}
. "$(dirname "$0")/../lib/lib.sh"
lib_init rss /var/tmp
fail() { echo "FAIL: $*"; cat "$T/run.err" 2>/dev/null || true; exit 1; }

"$PY" "$SRC/tests/system/gen-load-trace.py" "$((SECS + 30))" 0.35 "$T/load.log" > /dev/null
cp "$SRC/cli/vehicles/emu-regional.ini" "$T/board.ini"
"$PY" - "$T/board.ini" "$T/load.log" "$SRC" <<'PY'
import re, sys
p, trace, src = sys.argv[1:4]
s = open(p).read()
s = s.replace("../demo/train.dbc", f"{src}/cli/demo/train.dbc")
s = s.replace("emu-traction.dbc", f"{src}/cli/vehicles/emu-traction.dbc")
s = re.sub(r"driver = socketcan\n", f"driver = trace\nfile = {trace}\nspeed = 1\n", s)
s = re.sub(r"\n\[modbus hvac\].*", "\n", s, flags=re.S)
s = re.sub(r"\n\[uplink\].*?(?=\n\[)", "\n", s, flags=re.S)
s = re.sub(r"^(hw_watchdog.*|stat_socket.*|dir = .*|rt_priority = .*)$", "", s, flags=re.M)
open(p, "w").write(s)
PY
"$RAILMON" run --board "$T/board.ini" --data "$T/log" --duration "$SECS" 2> "$T/run.err" &
pid=$!
pids+=("$pid")
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$pid/status"; }
start=$(date +%s)
base="" peak=0
while alive "$pid"; do
	sleep_s 10
	r=$(rss 2>/dev/null) || break
	el=$(($(date +%s) - start))
	if [ $el -ge 60 ] && [ -z "$base" ]; then
		base=$r
		echo "rss: ${r} KiB after ${el} s"
		# the largest mappings: rings and Batches are anonymous, stacks
		# too; the libraries are file-backed
		awk '/^[0-9a-f]+-/ {n = $6 ? $6 : "[anon]"} /^Rss:/ {if ($2 >= 256) print "  " $2 " KiB " n}' \
			"/proc/$pid/smaps" | sort -rn | head -8
	fi
	[ -z "$base" ] || [ "$r" -le "$peak" ] || peak=$r
done
wait "$pid" || fail "railmon run exited $?"
[ -n "$base" ] || fail "the run ended before a minute"
echo "rss: at most ${peak} KiB from the first minute to $SECS s ($((peak - base)) KiB more)"
[ $((peak - base)) -le 256 ] || fail "resident memory grew by $((peak - base)) KiB"
grep -q "stopped after" "$T/run.err" || fail "no clean stop"
echo PASS
