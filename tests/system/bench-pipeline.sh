#!/bin/bash
# bench-pipeline.sh RAILMON SRCDIR - whole-pipeline figures, one run:
#  1. replay throughput: a 10 min trace of two 500 kbit/s buses at 70% load
#     (gen-load-trace.py) through `railmon replay` as fast as possible, with
#     DBC decoding (trace -> frames + samples -> Batches -> log) and without
#     (raw frames only); baseline: reading the same file with `cat` (the
#     I/O floor) in the same run;
#  2. CPU per 1000 frames/s of live load: `railmon run` acquiring the same
#     trace paced at real time (about 5000 frames/s) for 20 s; CPU seconds
#     from /proc of the daemon.
set -euo pipefail
# absolute: the board files written below live in a temp dir, and a
# relative DBC path in them would be read relative to that dir
RAILMON=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/../lib/lib.sh"
lib_init bench /var/tmp
now() { date +%s.%N; }

"$PY" "$SRC/tests/system/gen-load-trace.py" 600 0.7 "$T/load.log" >/dev/null
frames=$(wc -l < "$T/load.log")
sed "s|^dbc = .*||" "$SRC/cli/vehicles/emu-regional.ini" > "$T/nodbc.ini"
sed -i "s|\.\./demo/train.dbc||; s|emu-traction.dbc||" "$T/nodbc.ini"
cp "$SRC/cli/vehicles/emu-regional.ini" "$T/dbc.ini"
sed -i "s|\.\./demo/train.dbc|$SRC/cli/demo/train.dbc|; s|emu-traction.dbc|$SRC/cli/vehicles/emu-traction.dbc|" "$T/dbc.ini"

best() { # label cmd...: best wall time of 3 runs
	local b=1000000 t0 t1 d
	for _ in 1 2 3; do
		rm -rf "$T/out"
		t0=$(now); "$@" > /dev/null 2>&1; t1=$(now)
		d=$(echo "$t1 - $t0" | bc -l)
		if [ "$(echo "$d < $b" | bc -l)" = 1 ]; then b=$d; fi
	done
	echo "$b"
}
t_cat=$(best cat "$T/load.log")
t_raw=$(best "$RAILMON" replay "$T/load.log" --board "$T/nodbc.ini" --data "$T/out")
t_dbc=$(best "$RAILMON" replay "$T/load.log" --board "$T/dbc.ini" --data "$T/out")
records=$("$RAILMON" export --data "$T/out" --kind can --kind sample --order seq 2>&1 >/dev/null | grep -o '[0-9]* records written' | cut -d' ' -f1)
printf '\nreplay of %d frames (10 min, 2 buses at 70%% load), best of 3\n' "$frames"
printf '%-34s %10s %14s %14s\n' "path" "seconds" "frames/s" "vs cat"
printf '%-34s %10.3f %14.0f %14s\n' "cat (read the file)" "$t_cat" "$(echo "$frames / $t_cat" | bc -l)" "1.00"
printf '%-34s %10.3f %14.0f %13.2fx\n' "replay, raw frames only" "$t_raw" "$(echo "$frames / $t_raw" | bc -l)" "$(echo "$t_cat / $t_raw" | bc -l)"
printf '%-34s %10.3f %14.0f %13.2fx\n' "replay with DBC decoding" "$t_dbc" "$(echo "$frames / $t_dbc" | bc -l)" "$(echo "$t_cat / $t_dbc" | bc -l)"
printf 'with DBC: %s records stored (frames + decoded samples), %.0f records/s\n' "$records" "$(echo "$records / $t_dbc" | bc -l)"

# live: the trace paced at real time, 20 s
"$PY" "$SRC/tests/system/live-board.py" "$SRC" "$T/load.log" "$T/live.ini"
"$RAILMON" run --board "$T/live.ini" --data "$T/live" --duration 20 2> "$T/live.err" &
pid=$!
ticks=$(getconf CLK_TCK)
while kill -0 $pid 2>/dev/null; do
	cpu=$(awk '{print $14 + $15}' /proc/$pid/stat 2>/dev/null || echo "$cpu")
	sleep_s 0.2
done
wait $pid
in=$(grep -o '[a-z]*: [0-9]* in' "$T/live.err" | tail -2 | awk '{s += $2} END {print s}')
cpu_s=$(echo "$cpu / $ticks" | bc -l)
rate=$(echo "$in / 20" | bc -l)
printf '\nlive: %d frames in 20 s (%.0f frames/s), %.2f CPU s: %.2f%% of one core per 1000 frames/s\n' \
	"$in" "$rate" "$cpu_s" "$(echo "$cpu_s / 20 * 100 / ($rate / 1000)" | bc -l)"
