#!/bin/bash
# test-watch.sh RAILMON - `railmon watch` in a real terminal (tmux: send-keys,
# capture-pane) at 80x24 and at 200x60, against `railmon demo` (its stat
# socket; the demo draws the same table):
#  * sized to the terminal: 24 and 60 lines, none wider than the pane, the
#    rows that do not fit counted in the footer;
#  * every channel with value, unit, value-table label, age and source; flags
#    and integral values as integers (never "1.000");
#  * keys: s sorts (by name: Acceleration first), / filters, q quits;
#  * changed values marked '*' and bold, stale ones '~' and dim;
#  * a daemon that goes away is said in the title and watch keeps trying;
#  * --once without a terminal: the table once, no escapes; bad options.
set -euo pipefail
RAILMON=$1
. "$(dirname "$0")/../lib/lib.sh"
lib_init watch
fail() { echo "FAIL: $*"; for f in "$T"/*.txt; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

TM=(tmux -S "$T/tmux.sock" -f /dev/null)
tm_cleanup() { "${TM[@]}" kill-server 2>/dev/null || true; lib_cleanup; }
trap tm_cleanup EXIT

start_peer "$RAILMON" demo --no-live --duration 120 --data "$T/log" >"$T/demo.out" 2>"$T/demo.err"
demo=$LIB_PID
wait_for 10 test -S "$T/log/railmon.sock" || fail "the demo's stat socket did not appear"

# capture NAME [-e]: the pane as text (with escapes for -e) in $T/NAME.txt
capture() { "${TM[@]}" capture-pane -p ${2:-} -t "$1" > "$T/$1.txt"; }
pane_has() { capture "$1" && grep -qE "$2" "$T/$1.txt"; }

# --- 80x24
"${TM[@]}" new-session -d -s small -x 80 -y 24 "TERM=xterm-256color $RAILMON watch --data $T/log --interval 0.2"
wait_for 10 pane_has small 'of 54 channels' || fail "80x24: no table"
capture small
lines=$(wc -l < "$T/small.txt")
[ "$lines" -le 24 ] || fail "80x24: $lines lines"
awk 'length($0) > 80 { bad = 1 } END { exit bad }' "$T/small.txt" || fail "80x24: a line wider than 80"
grep -q '^railmon watch ' "$T/small.txt" || fail "80x24: no title"
grep -qE '^  channel +value +unit +label +age +source' "$T/small.txt" || fail "80x24: no header"
grep -qE '^1-21 of 54 channels, sort id' "$T/small.txt" || fail "80x24: footer does not count 21 of 54 rows"
grep -qE '^[ *~] VehicleSpeed\.Speed +[0-9.-]+ +km/h' "$T/small.txt" || fail "80x24: no CAN speed"
grep -qE '^[ *~] VehicleSpeed\.Direction +[0-9]+ +(standstill|forward|reverse)' "$T/small.txt" || fail "80x24: no value-table label"
grep -qE '\.000 ' "$T/small.txt" && fail "80x24: a value printed as x.000"
grep -qE '^[ *~] VehicleSpeed\.SpeedValid +[01] ' "$T/small.txt" || fail "80x24: a flag is not printed as 0/1"
# changed values: '*' and bold within a few redraws (the train moves)
wait_for 10 pane_has small '^\* ' || fail "no changed value marked"
found=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	capture small -e
	grep -q $'\e\\[1m\\*' "$T/small.txt" && { found=1; break; }
	sleep_s 0.2
done
[ -n "$found" ] || fail "a changed value is not bold"
# scroll: j moves the window of rows
"${TM[@]}" send-keys -t small j j
wait_for 5 pane_has small '^3-23 of 54 channels' || fail "j j did not scroll two rows"
# s: sort by name
"${TM[@]}" send-keys -t small g s
wait_for 5 pane_has small 'sort name' || fail "s did not sort by name"
capture small
# by name, case-insensitive: the Modbus brake_cylinder ('_' before 'P')
# comes before the CAN BrakePressure.* signals
[ "$(sed -n 3p "$T/small.txt" | cut -c3- | awk '{print $1}')" = brake_cylinder ] || fail "sorted by name, but the first row is not brake_cylinder"
# /: a filter typed in, Enter applies it
"${TM[@]}" send-keys -t small / d o o r Enter
wait_for 5 pane_has small "\\(filter 'door' of 54\\)" || fail "/door did not filter"
capture small
rows=$(grep -vE '^  channel ' "$T/small.txt" | grep -cE '^[ *~] ' || true)
drows=$(grep -ciE '^[ *~] [a-z0-9.~]*door' "$T/small.txt" || true)
n=$(grep -oE "^1-[0-9]+ of [0-9]+ channels \(filter 'door'" "$T/small.txt" | cut -d' ' -f3)
# door in the name or in the source (the DoorStatus message's signals)
[ "$drows" -ge 10 ] && [ "$rows" = "$n" ] || fail "filter door: $rows rows, $drows named door, footer $n"
grep -qE '^[ *~] (VehicleSpeed\.Speed|line_voltage) ' "$T/small.txt" && fail "filter door shows Speed or line_voltage"
"${TM[@]}" send-keys -t small q
wait_for 5 bash -c "! ${TM[*]} has-session -t small 2>/dev/null" || fail "q did not quit"
echo "80x24: 24 lines, 21 of 54 rows, labels, integers, changed in bold, scroll, sort, filter, quit"

# a terminal that goes away (tmux kills the pane: SIGHUP, then EOF/EIO on
# the tty) ends watch at once; it must not keep polling a dead terminal
"${TM[@]}" new-session -d -s hup -x 80 -y 24 "exec env TERM=xterm $RAILMON watch --data $T/log"
wait_for 10 pane_has hup 'of 54 channels' || fail "hup: no table"
wpid=$("${TM[@]}" display -p -t hup '#{pane_pid}')
pids+=("$wpid")
"${TM[@]}" kill-session -t hup
wait_for 3 gone "$wpid" || fail "watch still runs after its terminal went away"
echo "a closed terminal ends watch"

# --- 200x60, stale values marked: everything older than 1 ms
"${TM[@]}" new-session -d -s big -x 200 -y 60 "TERM=xterm-256color $RAILMON watch --data $T/log --stale 0.001"
wait_for 10 pane_has big '^1-54 of 54 channels' || fail "200x60: not every channel shown"
capture big
awk 'length($0) > 200 { bad = 1 } END { exit bad }' "$T/big.txt" || fail "200x60: a line wider than 200"
grep -qE 'can vehicle VehicleSpeed' "$T/big.txt" || fail "200x60: source cut"
grep -qE 'modbus traction' "$T/big.txt" || fail "200x60: no Modbus source"
grep -qE 'trdp consist ComId 100[123]' "$T/big.txt" || fail "200x60: no TRDP source"
wait_for 10 pane_has big '^[ *~] line_voltage +1[0-9]+\.?[0-9]* +V ' || fail "200x60: no Modbus value"
wait_for 5 pane_has big '^~ ' || fail "no stale value marked"
capture big -e
grep -q $'\e\\[2m~' "$T/big.txt" || fail "a stale value is not dim"
# the daemon goes: said in the title, watch keeps trying
stop_pid "$demo"
wait_for 10 pane_has big 'railmon watch .*(Connection refused|No such file).*retrying' || fail "a gone daemon is not said"
"${TM[@]}" send-keys -t big q
cp "$T/big.txt" "$T/big-last.txt"
echo "200x60: 54 of 54 rows, whole sources, stale in dim, a gone daemon said"

# --- no terminal, no daemon, bad options
if "$RAILMON" watch --data "$T/log" > "$T/none.out" 2> "$T/none.err"; then fail "watch without a daemon succeeded"; fi
grep -q "railmon watch: $T/log/railmon.sock: " "$T/none.err" || fail "no daemon: $(cat "$T/none.err")"
if "$RAILMON" watch --sort bogus 2> "$T/bad.err"; then fail "--sort bogus accepted"; fi
grep -q -- "--sort: expected id, name, age or source, not 'bogus'" "$T/bad.err" || fail "bad --sort: $(cat "$T/bad.err")"
start_peer "$RAILMON" demo --no-live --duration 60 --data "$T/log2" >"$T/demo2.out" 2>"$T/demo2.err"
wait_for 10 test -S "$T/log2/railmon.sock" || fail "the second demo's socket"
wait_for 10 bash -c "'$RAILMON' watch --data '$T/log2' --filter door_1 | grep -qE '^  door_1_closed +[01] '" \
	|| fail "watch --filter to a pipe"
"$RAILMON" watch --data "$T/log2" > "$T/once.out"
grep -q $'\e' "$T/once.out" && fail "escapes in watch's output to a file"
grep -qE '^1-54 of 54 channels' "$T/once.out" || fail "watch to a file: not every channel"
echo "no terminal: once, plain text; no daemon and bad options refused"
echo PASS
