#!/bin/bash
# test-run-load.sh RAILMON SRCDIR - `railmon run` says at start what
# `check` says of a bus over 70% of its time (bus/load.h): a CAN bus whose
# DBC's cycle times fill a 10 kbit/s bus (a trace source), and a Modbus RTU
# line polled faster than 1200 baud carries (a socat pty pair: nothing
# answers, which does not matter here).  A bus within its load is not
# warned about.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init run-load
fail() { echo "FAIL: $*"; cat "$T"/*.err 2>/dev/null || true; exit 1; }

cat > "$T/can.ini" <<BOARD
[board]
vehicle = LOAD
[storage]
segment_size = 1M
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
speed = 1
bitrate = 10000
BOARD
"$RAILMON" check --board "$T/can.ini" --data "$T/d1" > "$T/check-can.out" 2>&1 || fail "check refused the CAN board"
"$RAILMON" run --board "$T/can.ini" --data "$T/d1" --duration 0.5 2> "$T/can.err" || fail "run failed"
want="[can vehicle]: about 159% of the bus at 10 kbit/s (above 70%: frames will queue)"
grep -qF "railmon run: warning: $want" "$T/can.err" || fail "run did not warn: $want"
grep -qF "about 159% of the bus at 10 kbit/s (above 70%: frames will queue)" "$T/check-can.out" ||
	fail "check says another load"

start_peer socat pty,raw,echo=0,link="$T/tty0" pty,raw,echo=0,link="$T/tty1"
wait_for 5 test -e "$T/tty0" || fail "socat made no pty"
cat > "$T/rtu.ini" <<BOARD
[board]
vehicle = LOAD
[storage]
segment_size = 1M
[modbus line]
transport = rtu
device = $T/tty0
baud = 1200
period_ms = 50
response_timeout_ms = 20
[channel a]
bus = line
unit_id = 1
table = holding
address = 0
type = u16
[channel b]
bus = line
unit_id = 2
table = input
address = 9
type = u32
BOARD
"$RAILMON" check --board "$T/rtu.ini" --data "$T/d2" > "$T/check-rtu.out" 2>&1 || fail "check refused the RTU board"
line=$(grep -o '[0-9.]*% of the line at 1200 baud (TOO BUSY: lengthen periods)' "$T/check-rtu.out") ||
	fail "check did not find the line too busy"
"$RAILMON" run --board "$T/rtu.ini" --data "$T/d2" --duration 0.5 2> "$T/rtu.err" || fail "run failed"
grep -qF "railmon run: warning: [modbus line]: $line" "$T/rtu.err" || fail "run did not warn: $line"

# within its load: no warning
sed -i 's/^baud = 1200/baud = 115200/' "$T/rtu.ini"
"$RAILMON" run --board "$T/rtu.ini" --data "$T/d2" --duration 0.5 2> "$T/ok.err" || fail "run failed"
if grep -q "TOO BUSY\|frames will queue" "$T/ok.err"; then fail "a line within its load was warned about"; fi
echo "run warns as check does: $want; [modbus line]: $line"
