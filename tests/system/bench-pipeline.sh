#!/bin/bash
# bench-pipeline.sh RAILMON SRCDIR - whole-pipeline figures, one run:
#  1. replay throughput: a 10 min trace of two 500 kbit/s buses at 70% load
#     (gen-load-trace.py) through `railmon replay` as fast as possible, with
#     DBC decoding (trace -> frames + samples -> Batches -> log) and without
#     (raw frames only); baselines in the same run: reading the same file
#     with `cat` (the I/O floor) and, with RAILMON_BEFORE=path/to/railmon
#     (e.g. a build of main), that build on the same trace, its runs
#     alternating with this build's so both see the same machine state;
#     wall time (best of 3) and the CPU seconds of that run (user + sys,
#     all threads: steadier than wall time on a loaded machine); and this
#     build with RAILMON_REPLAY_SURVEY=serial, the survey before the replay
#     read through the trace driver as before it was cut into parts
#     (cli/replay-trace.c), its runs alternating with the others;
#     BENCH_TRACE_S sets the trace's length (default 600 s);
#  2. CPU per 1000 frames/s of live load: `railmon run` acquiring the same
#     trace paced at real time (about 5000 frames/s) for 20 s; CPU seconds
#     from /proc of the daemon (skipped with BENCH_REPLAY_ONLY=1).
set -euo pipefail
# absolute: the board files written below live in a temp dir, and a
# relative DBC path in them would be read relative to that dir
RAILMON=$(realpath "$1")
SRC=$(realpath "$2")
. "$(dirname "$0")/../lib/lib.sh"
lib_init bench /var/tmp
now() { date +%s.%N; }

TRACE_S=${BENCH_TRACE_S:-600}
"$PY" "$SRC/tests/system/gen-load-trace.py" "$TRACE_S" 0.7 "$T/load.log" >/dev/null
frames=$(wc -l < "$T/load.log")
sed "s|^dbc = .*||" "$SRC/cli/vehicles/emu-regional.ini" > "$T/nodbc.ini"
sed -i "s|\.\./demo/train.dbc||; s|emu-traction.dbc||" "$T/nodbc.ini"
cp "$SRC/cli/vehicles/emu-regional.ini" "$T/dbc.ini"
sed -i "s|\.\./demo/train.dbc|$SRC/cli/demo/train.dbc|; s|emu-traction.dbc|$SRC/cli/vehicles/emu-traction.dbc|" "$T/dbc.ini"

BEFORE=${RAILMON_BEFORE:+$(realpath "$RAILMON_BEFORE")}
# run1 VAR cmd...: one run; VAR (and VAR_c) become its wall time (and CPU
# seconds, user + sys) if that is the best wall time so far
run1() {
	local v=$1 w c best
	shift
	rm -rf "$T/out"
	read -r w c < <({ TIMEFORMAT='%R %U %S'; time "$@" > /dev/null 2>&1; } 2>&1 | awk '{print $1, $2 + $3}')
	best=${!v:-}
	if [ -z "$best" ] || [ "$(echo "$w < $best" | bc -l)" = 1 ]; then
		printf -v "$v" '%s' "$w"
		printf -v "${v}_c" '%s' "$c"
	fi
}
for _ in 1 2 3; do
	run1 t_cat cat "$T/load.log"
	run1 t_raw "$RAILMON" replay "$T/load.log" --board "$T/nodbc.ini" --data "$T/out"
	run1 t_dbc "$RAILMON" replay "$T/load.log" --board "$T/dbc.ini" --data "$T/out"
	run1 s_raw env RAILMON_REPLAY_SURVEY=serial "$RAILMON" replay "$T/load.log" --board "$T/nodbc.ini" --data "$T/out"
	run1 s_dbc env RAILMON_REPLAY_SURVEY=serial "$RAILMON" replay "$T/load.log" --board "$T/dbc.ini" --data "$T/out"
	if [ -n "$BEFORE" ]; then
		run1 b_raw "$BEFORE" replay "$T/load.log" --board "$T/nodbc.ini" --data "$T/out"
		run1 b_dbc "$BEFORE" replay "$T/load.log" --board "$T/dbc.ini" --data "$T/out"
	fi
done
rm -rf "$T/out"
"$RAILMON" replay "$T/load.log" --board "$T/dbc.ini" --data "$T/out" > /dev/null 2>&1
records=$("$RAILMON" export --data "$T/out" --kind can --kind sample --order seq 2>&1 >/dev/null | grep -o '[0-9]* records written' | cut -d' ' -f1)
row() { # label wall cpu [the before build's wall time]
	local vb=""
	[ -n "${4:-}" ] && vb=$(printf '%.2fx' "$(echo "$4 / $2" | bc -l)")
	printf '%-36s %8.3f %8.3f %12.0f %9.3fx %10s\n' "$1" "$2" "$3" "$(echo "$frames / $2" | bc -l)" \
		"$(echo "$t_cat / $2" | bc -l)" "$vb"
}
printf '\nreplay of %d frames (%d s, 2 buses at 70%% load), best of 3 wall times, CPU (user + sys) of that run\n' "$frames" "$TRACE_S"
printf '%-36s %8s %8s %12s %10s %10s\n' "path" "wall s" "CPU s" "frames/s" "vs cat" "vs before"
row "cat (read the file)" "$t_cat" "$t_cat_c"
row "replay, raw frames only" "$t_raw" "$t_raw_c" "${b_raw:-}"
row "replay with DBC decoding" "$t_dbc" "$t_dbc_c" "${b_dbc:-}"
row "serial survey: replay, raw frames" "$s_raw" "$s_raw_c"
row "serial survey: replay with DBC" "$s_dbc" "$s_dbc_c"
printf 'survey in parts against the serial survey: frames/s raw %.2fx, DBC %.2fx; CPU s raw %.2fx, DBC %.2fx\n' \
	"$(echo "$s_raw / $t_raw" | bc -l)" "$(echo "$s_dbc / $t_dbc" | bc -l)" \
	"$(echo "$t_raw_c / $s_raw_c" | bc -l)" "$(echo "$t_dbc_c / $s_dbc_c" | bc -l)"
if [ -n "$BEFORE" ]; then
	row "before: replay, raw frames only" "$b_raw" "$b_raw_c"
	row "before: replay with DBC decoding" "$b_dbc" "$b_dbc_c"
	printf 'this build against before: frames/s raw %.2fx, DBC %.2fx; CPU s raw %.2fx, DBC %.2fx\n' \
		"$(echo "$b_raw / $t_raw" | bc -l)" "$(echo "$b_dbc / $t_dbc" | bc -l)" \
		"$(echo "$t_raw_c / $b_raw_c" | bc -l)" "$(echo "$t_dbc_c / $b_dbc_c" | bc -l)"
fi
printf 'with DBC: %s records stored (frames + decoded samples), %.0f records/s\n' "$records" "$(echo "$records / $t_dbc" | bc -l)"
[ "${BENCH_REPLAY_ONLY:-0}" = 1 ] && exit 0

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
