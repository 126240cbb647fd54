#!/bin/bash
# test-stat-rt.sh RAILMON MB_SERVER - `railmon stat` says what a running
# daemon's realtime tail depends on (issue 30), read back from the daemon:
#   1. as root, a board with rt_priority = 60 and cpu_latency_us = 0: stat
#      names the bus thread at SCHED_FIFO 60 (checked against chrt -p,
#      which asks the kernel itself) and the PM QoS request held, no
#      warning about either; the machine's side as check says it, and a
#      warning for no isolated CPUs when this machine has none;
#   2. the same board run by an unprivileged user (SCHED_FIFO and the PM
#      QoS device refused, the daemon degrades and goes on): stat warns
#      that the bus thread runs at normal priority and that no request is
#      held - what the board file says is not what runs.
# Needs root (CI runs as root): without it the test fails, never skips.
set -euo pipefail
RAILMON=$(realpath "$1")
MB_SERVER=$(realpath "$2")
. "$(dirname "$0")/../lib/lib.sh"
lib_init stat-rt
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || fail "needs root (SCHED_FIFO, and a second user to refuse it to)"
chmod 755 "$T"

coproc SRV { exec "$MB_SERVER" --tcp 0; }
pids+=($SRV_PID)
read -r ready port <&"${SRV[0]}"
[ "$ready" = READY ] || fail "mb-fault-server did not start"

cat > "$T/board.ini" <<INI
[board]
vehicle = STATRT
rt_priority = 60
cpu_latency_us = 0
health_interval_s = 1
[modbus m]
host = 127.0.0.1
port = $port
period_ms = 20
response_timeout_ms = 100
[channel v]
bus = m
unit_id = 1
table = input
address = 0
INI
chmod 644 "$T/board.ini"

stat_has() { "$RAILMON" stat --data "$1" > "$T/stat.out" 2>&1 && grep -q '^realtime: daemon' "$T/stat.out"; }

# run_daemon DIR [setpriv args...]: railmon run in the background, its pid
# in DPID once its stat socket answers with the realtime lines.
run_daemon() {
	local dir=$1
	shift
	mkdir -m 777 "$dir"
	start_peer "$@" "$RAILMON" run --board "$T/board.ini" --data "$dir" 2> "$dir.err"
	DPID=$LIB_PID
	wait_for 20 stat_has "$dir" || { cat "$dir.err" "$T/stat.out"; fail "stat never answered with the realtime lines"; }
}

# 1. as asked
run_daemon "$T/root"
cat "$T/stat.out"
tid=$(grep -lx 'rx-m' /proc/"$DPID"/task/*/comm | head -1 | cut -d/ -f5)
[ -n "$tid" ] || fail "no rx-m thread in the daemon"
kernel=$(chrt -p "$tid")
echo "chrt -p $tid: $kernel"
grep -q 'SCHED_FIFO' <<< "$kernel" && grep -q 'priority: 60' <<< "$kernel" || fail "the kernel says: $kernel"
grep -q "^realtime: daemon $DPID: bus threads rx-m SCHED_FIFO 60; PM QoS request held$" "$T/stat.out" ||
	fail "stat does not say rx-m SCHED_FIFO 60 with the request held"
! grep -q 'normal priority\|holds no request\|NOT allowed' "$T/stat.out" || fail "a warning for what is in force"
grep -q '^realtime: SCHED_FIFO allowed; isolated CPUs ' "$T/stat.out" || fail "no machine line"
if [ -z "$(tr -d '[:space:]' < /sys/devices/system/cpu/isolated 2>/dev/null)" ]; then
	grep -q '^WARNING: no isolated CPUs' "$T/stat.out" || fail "no warning for a machine without isolated CPUs"
fi
stop_pid "$DPID"

# 2. the same board, SCHED_FIFO and /dev/cpu_dma_latency refused
run_daemon "$T/nobody" setpriv --reuid=65534 --regid=65534 --clear-groups
cat "$T/stat.out"
grep -q "^realtime: daemon $DPID: bus threads rx-m SCHED_OTHER 0; PM QoS request NOT held$" "$T/stat.out" ||
	fail "stat does not say rx-m SCHED_OTHER without the request"
grep -q '^realtime: SCHED_FIFO NOT allowed; ' "$T/stat.out" || fail "SCHED_FIFO said allowed to the daemon"
grep -q '^WARNING: rt_priority = 60 asks for SCHED_FIFO, but .*will run at normal priority' "$T/stat.out" ||
	fail "no warning for the refused SCHED_FIFO"
grep -q '^WARNING: the board asks for a PM QoS limit of 0 us, but the daemon holds no request' "$T/stat.out" ||
	fail "no warning for the request not held"
stop_pid "$DPID"
echo "test-stat-rt: ok"
