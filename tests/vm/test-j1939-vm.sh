#!/bin/bash
# test-j1939-vm.sh J1939_DUMP - runs INSIDE the CAN VM (tests/vm/vm-run.sh;
# can-j1939 loaded, can-utils from the host root): the kernel's J1939 stack,
# an implementation independent of railmon's, carries testj1939 transfers
# on vcan0 while candump records the frames:
#  - RTS/CTS from SA 0x80 to 0x90: 100 bytes and 128 (testj1939's largest);
#  - BAM from SA 0x81 to everyone: 50 bytes and 9 (the smallest TP message).
# A kernel receiver bound to 0x90 prints what it got.  The recording, run
# through railmon's reassembler (j1939-dump), must give the same messages,
# byte for byte, with no transport fault.
set -euo pipefail
DUMP=$1
# the VM's fresh devtmpfs has no /dev/fd, which lib.sh's process
# substitution needs
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
. "$(dirname "$0")/../lib/lib.sh"
lib_init j1939-vm
fail() { echo "FAIL: $*"; cat "$T"/*.err "$T/rx.out" 2>/dev/null | head -50 || true; exit 1; }

candump -L vcan0 > "$T/rec.log" 2> "$T/candump.err" &
pids+=($!)
# line-buffered: the receiver is stopped by a signal, its output must be out
stdbuf -oL testj1939 -B -r vcan0:0x90 > "$T/rx.out" 2> "$T/rx.err" &
pids+=($!)
# candump records once a frame of ours shows up (a loaded VM starts it slowly)
mark() { cansend vcan0 7FF#00; grep -q ' 7FF#00' "$T/rec.log"; }
wait_for 10 mark || fail "candump did not start"
sleep_s 0.3
testj1939 -s100 vcan0:0x80 :0x90,0x12300 2> "$T/tx.err" || fail "testj1939 RTS/CTS 100 bytes"
testj1939 -s128 vcan0:0x80 :0x90,0x12300 2>> "$T/tx.err" || fail "testj1939 RTS/CTS 128 bytes"
testj1939 -B -s50 vcan0:0x81 :0xff,0x12300 2>> "$T/tx.err" || fail "testj1939 BAM 50 bytes"
testj1939 -B -s9 vcan0:0x81 :0xff,0x12300 2>> "$T/tx.err" || fail "testj1939 BAM 9 bytes"
sleep_s 1
for p in "${pids[@]}"; do stop_pid "$p"; done
pids=()

# the kernel receiver's messages, "SA PGN: b0 b1 .." with 8 bytes a line
awk '/^[0-9a-f][0-9a-f] [0-9a-f]+:/ { if (m) print m; sub(":", ""); m = $1 " " $2 " "; for (i = 3; i <= NF; i++) m = m $i; next }
     { for (i = 2; i <= NF; i++) m = m $i } END { if (m) print m }' "$T/rx.out" > "$T/kernel"
"$DUMP" "$T/rec.log" > "$T/dump.out" || fail "j1939-dump"
echo "frames recorded: $(grep -c . "$T/rec.log"); $(tail -1 "$T/dump.out")"
grep '^fault' "$T/dump.out" && fail "transport faults in the kernel's sessions"
awk '/^msg/ { sub("sa=", "", $4); print $4, $3, $9 }' "$T/dump.out" > "$T/railmon"
[ "$(grep -c . "$T/kernel")" -eq 4 ] || fail "the kernel receiver did not get 4 messages: $(cat "$T/kernel")"
diff "$T/kernel" "$T/railmon" > "$T/diff" || { head -c 3000 "$T/diff"; fail "railmon's messages differ from the kernel's"; }
[ "$(grep -c 'bam=0' "$T/dump.out")" -eq 2 ] && [ "$(grep -c 'bam=1' "$T/dump.out")" -eq 2 ] ||
	fail "not 2 RTS/CTS and 2 BAM messages"
echo "j1939-vm: 4 kernel sessions (2 RTS/CTS, 2 BAM) reassembled as the kernel's receiver got them"
