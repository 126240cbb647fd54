#!/bin/bash
# test-watchdog-vm.sh RAILMON SRCDIR - runs INSIDE the CAN VM (softdog
# loaded): `railmon run` with hw_watchdog = /dev/watchdog and a 3 s timeout
# arms the watchdog, keeps the machine alive by kicking it for longer than
# two timeouts (a missed kick would reset the VM and this script would
# never finish), and disarms it on a clean stop (magic close): the machine
# then stays up past the timeout again.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init watchdog
W=/sys/class/watchdog/watchdog0
fail() { echo "FAIL: $*"; cat "$T/run.err" 2>/dev/null || true; exit 1; }
[ -c /dev/watchdog ] || fail "no /dev/watchdog (softdog not loaded)"
[ "$(cat $W/state)" = inactive ] || fail "watchdog already active"

cat > "$T/board.ini" <<EOI
[board]
vehicle = WDOG-TEST
hw_watchdog = /dev/watchdog
hw_watchdog_timeout_s = 3
stat_socket = @railmon-wdog-test
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
loop = true
EOI
"$RAILMON" run --board "$T/board.ini" --data "$T/log" 2> "$T/run.err" &
rpid=$!
pids+=("$rpid")
stat_up() { "$RAILMON" stat --socket @railmon-wdog-test > /dev/null 2>&1; }
wait_for 60 stat_up || fail "railmon run did not come up within 60 s"
[ "$(cat $W/state)" = active ] || fail "railmon did not arm the watchdog"
[ "$(cat $W/timeout)" = 3 ] || fail "timeout is $(cat $W/timeout), not the board file's 3 s"
sleep_s 7  # two timeouts and more: only railmon's kicks keep us alive
[ "$(cat $W/state)" = active ] || fail "watchdog no longer active"
echo "armed: 7 s alive with a 3 s watchdog, kicked by railmon"
kill -TERM $rpid
wait $rpid || fail "railmon run exited $?"
[ "$(cat $W/state)" = inactive ] || fail "a clean stop left the watchdog armed"
sleep_s 4  # past the timeout: disarmed for real
echo "disarmed on SIGTERM (magic close): still alive 4 s later"
echo PASS
