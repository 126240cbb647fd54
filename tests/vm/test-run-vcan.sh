#!/bin/bash
# test-run-vcan.sh RAILMON SRCDIR - runs INSIDE the CAN VM (tests/vm/vm-run.sh:
# vcan0 and vcan1 up, can-utils from the host root):
#  1. `railmon run` acquires vcan0 through the SocketCAN driver while
#     canplayer sends 2000 frames of the demo trace: every frame logged, in
#     order, and decoded with the DBC;
#     three bus-off error frames (cansend) are said on stderr once, then
#     summed up at the stop ("2 more bus-off events"), not a line each;
#  2. `railmon replay --to-can vcan1` sends a trace onto vcan1 and candump
#     receives exactly its frames.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init run-vcan
fail() { echo "FAIL: $*"; cat "$T/run.err" 2>/dev/null || true; exit 1; }
N=2000
head -n $N "$SRC/cli/demo/train.log" > "$T/part.log"

cat > "$T/board.ini" <<EOF
[board]
vehicle = VM-TEST
batch_ms = 100
stat_socket = @railmon-vm-test
health_interval_s = 1
[can vehicle]
driver = socketcan
interface = vcan0
dbc = $SRC/cli/demo/train.dbc
EOF
"$RAILMON" run --board "$T/board.ini" --data "$T/log" 2> "$T/run.err" &
rpid=$!
pids+=("$rpid")
# ready when its stat socket answers (bounded; the 9p scratch dir cannot
# hold a socket file, so it is an abstract one)
stat_up() { "$RAILMON" stat --socket @railmon-vm-test > /dev/null 2>&1; }
wait_for 60 stat_up || fail "railmon run did not come up within 60 s"
# -g 1: one frame per ms, ignoring the trace's own timing
canplayer -I "$T/part.log" -t -g 1 vcan0=can0
"$RAILMON" stat --socket @railmon-vm-test > "$T/stat.out" || fail "stat socket"
grep -qE '^vehicle +can' "$T/stat.out" || fail "stat shows no vehicle bus"
# the controller goes bus-off three times: one line at once, the rest summed
for _ in 1 2 3; do cansend vcan0 20000040#0000000000000000; done
said_off() { grep -q "bus 'vehicle' (socketcan vcan0): the CAN controller went bus-off: Network is down" "$T/run.err"; }
wait_for 5 said_off || fail "bus-off not said on stderr"
# SIGTERM right away: what the socket already holds must still be logged
kill -TERM $rpid
wait $rpid || fail "railmon run exited $?"
[ "$(grep -c '): the CAN controller went bus-off' "$T/run.err")" = 1 ] || fail "bus-off said more than once"
grep -q "bus 'vehicle' (socketcan vcan0): 2 more bus-off events in the last" "$T/run.err" || fail "no bus-off summary at the stop"
echo "bus-off: 3 error frames, one line on stderr, '2 more' at the stop"
# the error frames are records too; the trace's frames are compared
"$RAILMON" export --data "$T/log" --format candump 2>/dev/null | awk '{print $3}' | grep -v '^20000040#' > "$T/got"
awk '{print $3}' "$T/part.log" > "$T/want"
cmp -s "$T/got" "$T/want" || fail "logged frames differ from the $N sent ($(wc -l < "$T/got") logged)"
"$RAILMON" export --data "$T/log" --format jsonl -c Speed > "$T/speed.jsonl" 2>/dev/null
grep -q '"unit":"km/h"' "$T/speed.jsonl" || fail "no decoded Speed"
echo "run: $N frames sent by canplayer on vcan0, all logged in order and decoded"

# candump writes to devtmpfs: the 9p scratch dir is too slow for it to keep
# up, and its socket would overflow (that would be candump's loss, not ours)
CAP=/dev/railmon-cap.log
candump -L vcan1 > $CAP &
cpid=$!
pids+=("$cpid")
"$RAILMON" replay "$T/part.log" --to-can vcan1 --speed 5 2> "$T/replay.err" || { cat "$T/replay.err"; fail "replay --to-can"; }
# candump has read what the socket holds once the count matches (bounded)
captured() { [ "$(wc -l < $CAP)" -ge $N ]; }
wait_for 10 captured || true
kill $cpid; wait $cpid 2>/dev/null || true
awk '{print $3}' $CAP > "$T/got"
rm -f $CAP
cmp -s "$T/got" "$T/want" || fail "candump on vcan1 saw $(wc -l < "$T/got") frames, not the $N replayed"
grep -q "$N frames sent on vcan1" "$T/replay.err" || fail "replay did not report $N frames"
echo "replay --to-can: $N frames on vcan1, identical"
echo PASS
