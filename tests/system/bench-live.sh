#!/bin/bash
# bench-live.sh VM_RUN RAILMON SRCDIR [SECONDS] [LOAD] [BASELINE_RAILMON] - on
# the host: writes the trace (Python is slow under TCG), then runs itself
# inside the CAN VM with VM_RUN (tests/vm/vm-run.sh: vcan0 and vcan1 up,
# can-utils from the host root) to measure.  The CPU cost of live acquisition per frame, railmon against
# `candump -l` (can-utils), all receiving the same traffic at the same time:
#   canplayer plays a trace of gen-load-trace.py on vcan0 and vcan1 for
#   SECONDS (default 20): the messages of the emu-regional board's two DBCs,
#   8 bytes each, at LOAD times a 500 kbit/s bus's capacity (default 2.2:
#   about 8,000 frames/s per bus, a saturated 1 Mbit/s bus), so railmon
#   decodes them.  canplayer sends what is due after each of its 1 ms
#   sleeps, so it keeps the rate even where the VM's timers are coarse
#   (under TCG a 125 us cangen gap takes milliseconds);
#   receivers, started before the traffic and all reading both buses:
#     candump -l vcan0 vcan1       (the anchor: a log file of every frame)
#     railmon run, DBC decoding    (frames + samples, Batches, the log)
#     railmon run, raw frames only (no dbc =)
#     and the same two of BASELINE_RAILMON when given (an older build)
#   CPU seconds of each process (utime + stime of all its threads, from
#   /proc/PID/stat) over the traffic window only, frames each one stored.
# Logs go to a tmpfs: the 9p scratch dir would make candump fall behind.
# The table's ratio is CPU per frame against candump's; the goals are <= 2x
# with DBC and <= 1.5x raw.  The VM has one vCPU (TCG): the receivers share
# it, as they would share a small board's core.  canplayer gets its share
# too: on a loaded host 2 s of trace took 124 s to 10 min to send (the VM
# is given 20 min).
# RAILMON_BENCH_PERF=1: also profile the traffic window with perf (Debian
# linux-perf, run from the host root inside the VM: its perf_6.1 matches
# the VM's kernel) sampling cpu-clock on every CPU (a TCG vCPU has no
# hardware counters), and print each receiver's top symbols (kernel and
# user) after the table.
set -euo pipefail
if [ "$1" != --in-vm ]; then
	VMRUN=$1 RAILMON=$2 SRC=$3 SECS=${4:-20} LOAD=${5:-2.2} BASE=${6:-}
	trace=$(mktemp "${TMPDIR:-/tmp}/railmon-bench-live.XXXXXX")
	trap 'rm -f "$trace"' EXIT
	/usr/bin/python3 "$SRC/tests/system/gen-load-trace.py" "$SECS" "$LOAD" "$trace" > /dev/null
	bash "$VMRUN" --timeout 1200 "$0" --in-vm "$trace" "$RAILMON" "$SRC" "$SECS" "$LOAD" "$BASE"
	exit
fi
TRACE=$2 RAILMON=$3 SRC=$4 SECS=$5 LOAD=$6 BASE=${7:-}
# The VM's devtmpfs has no /dev/fd (udev makes it elsewhere); lib.sh's
# sleep reads from a process substitution, which needs it.
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
. "$(dirname "$0")/../lib/lib.sh"
lib_init bench-live
fail() { echo "FAIL: $*"; exit 1; }
lib_tmpfs 256M
TCK=$(getconf CLK_TCK)

board() { # NAME DBC(0|1) SOCKET
	local d0="" d1=""
	if [ "$2" = 1 ]; then
		d0="dbc = $SRC/cli/demo/train.dbc"
		d1="dbc = $SRC/cli/vehicles/emu-traction.dbc"
	fi
	cat > "$T/$1.ini" <<EOF
[board]
vehicle = BENCH
stat_socket = $3
[can vehicle]
driver = socketcan
interface = vcan0
$d0
[can traction]
driver = socketcan
interface = vcan1
$d1
EOF
}

# Big socket buffers for every receiver (as test-can-socket does): the one
# vCPU is shared by five processes and canplayer sends in bursts, and a
# receiver descheduled for longer than rmem_default's ~200 frames would
# lose frames to scheduling, not to its own cost.
echo $((16 << 20)) > /proc/sys/net/core/rmem_default
sent=$(wc -l < "$TRACE")
names=(candump)
declare -A pid
mkdir "$M/candump"
(cd "$M/candump" && exec candump -l vcan0 vcan1) &
pid[candump]=$!
pids+=("${pid[candump]}")
start_railmon() { # NAME BINARY DBC
	board "$1" "$3" "@railmon-bench-$1"
	"$2" run --board "$T/$1.ini" --data "$M/$1" 2> "$T/$1.err" &
	pid[$1]=$!
	pids+=("${pid[$1]}")
	names+=("$1")
	up() { "$RAILMON" stat --socket "@railmon-bench-$1" > /dev/null 2>&1; }
	wait_for 180 up "$1" || { cat "$T/$1.err"; fail "$1 did not come up"; }
}
echo "bench-live: receivers starting" >&2
start_railmon railmon-dbc "$RAILMON" 1
start_railmon railmon-raw "$RAILMON" 0
if [ -n "$BASE" ]; then
	start_railmon before-dbc "$BASE" 1
	start_railmon before-raw "$BASE" 0
fi

echo "bench-live: receivers up, traffic for $SECS s" >&2
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
declare -A c0 c1
for n in "${names[@]}"; do c0[$n]=$(cpu "${pid[$n]}"); done
perf_pid=""
if [ "${RAILMON_BENCH_PERF:-0}" = 1 ]; then
	perf record -q -a -e cpu-clock -F 1000 -o "$M/perf.data" 2> "$T/perf.err" &
	perf_pid=$!
	pids+=("$perf_pid")
	sleep_s 1
fi
t0=$(date +%s.%N)
canplayer -I "$TRACE" vcan0=can0 vcan1=can1
t1=$(date +%s.%N)
if [ -n "$perf_pid" ]; then
	kill -INT "$perf_pid"
	stop_pid "$perf_pid" 60
fi
echo "bench-live: traffic sent" >&2
# what the sockets still hold is read within a few ms
sleep_s 0.5
for n in "${names[@]}"; do c1[$n]=$(cpu "${pid[$n]}"); done
for n in "${names[@]}"; do kill -TERM "${pid[$n]}"; done
for n in "${names[@]}"; do stop_pid "${pid[$n]}" 10; done

wall=$(echo "$t1 - $t0" | bc -l)
frames() { # NAME: frames it stored
	if [ "$1" = candump ]; then
		cat "$M"/candump/*.log | wc -l
	else
		"$RAILMON" export --data "$M/$1" --kind can --format candump 2>/dev/null | wc -l
	fi
}
printf '\nlive acquisition in the VM (1 vCPU, TCG): canplayer on vcan0 and vcan1, %d s at %s x 500 kbit/s load\n' "$SECS" "$LOAD"
printf 'sent %d frames in %.1f s (%.0f frames/s on the two buses together)\n' "$sent" "$wall" "$(echo "$sent / $wall" | bc -l)"
printf '%-12s %10s %9s %11s %13s %10s\n' receiver frames "CPU s" "us/frame" "% of a core" "vs candump"
base_us=""
lost=""
for n in "${names[@]}"; do
	f=$(frames "$n")
	s=$(echo "(${c1[$n]} - ${c0[$n]}) / $TCK" | bc -l)
	[ "$f" -gt 0 ] || fail "$n stored no frame"
	# no loss of function: railmon logs every frame sent (candump's losses
	# are its own, said in the table)
	# (the profile is printed first, and what railmon said at its stop)
	[[ $n = candump || $f -eq $sent ]] || lost+="$n stored $f frames of the $sent sent; "
	us=$(echo "$s * 1000000 / $f" | bc -l)
	[ -n "$base_us" ] || base_us=$us
	printf '%-12s %10d %9.2f %11.2f %12.1f%% %9.2fx\n' "$n" "$f" "$s" "$us" \
		"$(echo "$s / $wall * 100" | bc -l)" "$(echo "$us / $base_us" | bc -l)"
done

# Where each receiver's CPU goes: perf's samples of its pid, by symbol.
if [ -n "$perf_pid" ]; then
	for n in "${names[@]}"; do
		# (no split by thread: perf's thread names in the VM did not
		# agree with the symbols from one run to the next)
		printf '\nprofile of %s (pid %s), cpu-clock samples, top symbols:\n' "$n" "${pid[$n]}"
		perf report -q -i "$M/perf.data" --pid "${pid[$n]}" --no-children --percentage relative --sort dso,sym \
			--percent-limit 1.5 --stdio 2> /dev/null | grep -v '^$' | head -25
	done
fi
if [ -n "$lost" ]; then
	for n in "${names[@]}"; do [ "$n" = candump ] || { echo "$n:"; tail -5 "$T/$n.err"; }; done
	fail "$lost"
fi
