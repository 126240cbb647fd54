#!/bin/bash
# test-config-run.sh RAILMON SRCDIR - `railmon run` taking the ground's signed
# board files (issue 32) from a real mosquitto, pushed by `railmon config push`:
# Each outcome also retained on railmon/EV-7/config/status (JSON: version,
# outcome, why), read with mosquitto_sub.
# 1. pushed while the vehicle is offline (retained): applied at connect, the
#    board file is the pushed one, the previous kept as .prev, config.version
#    is the version, the daemon restarted on it and the bus it adds has
#    its channels in the log's dictionary;
# 2. the same version pushed again (and the retained one at the restart's
#    reconnect): nothing happens a second time;
# 3. signed with another key: refused, saying the signature, board unchanged;
# 4. an old version: refused, saying the versions, board unchanged;
# 5. a board with a bus that cannot open (and two buses naming one DBC, sent
#    once): rolled back, the bus named, the previous board back and started.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init config-run
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.out "$T"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; }; done; exit 1; }

"$RAILMON" keygen --output "$T/ground.key" > /dev/null || fail "keygen"
"$RAILMON" keygen --output "$T/other.key" > /dev/null || fail "keygen other"
mkdir -p "$T/cfg" "$T/push"
cp "$SRC/cli/demo/train.dbc" "$T/cfg/train.dbc"
cp "$SRC/cli/demo/train.dbc" "$T/push/train.dbc"
# a slow trace: the bus keeps delivering while the test runs
cp "$SRC/cli/demo/train.log" "$T/cfg/trace.log"
cp "$SRC/cli/demo/train.log" "$T/push/trace.log"
BPORT=$(free_port)
board() { # FILE BATCH_MS
	printf '[board]\nvehicle = EV-7\nbatch_ms = %s\n[storage]\nsegment_size = 64K\nsync_window_ms = 50\n' "$2" > "$1"
	printf '[uplink]\nbroker = mqtt://127.0.0.1:%s\nconfig_pubkey = %s\n' "$BPORT" "$T/ground.key.pub" >> "$1"
	printf '[can vehicle]\ndriver = trace\nfile = trace.log\ndbc = train.dbc\nspeed = 1\n' >> "$1"
}
board "$T/cfg/board.ini" 50
board "$T/push/board.ini" 40
# the pushed board adds a bus: its channels must show up in the log
printf '[can second]\ndriver = trace\nfile = trace.log\ndbc = train.dbc\nspeed = 1\n' >> "$T/push/board.ini"
cp "$T/cfg/board.ini" "$T/board-v1.ini"
push() { # VERSION KEY NAME
	"$RAILMON" config push --vehicle EV-7 --board "$T/push/board.ini" --key "$2" --version "$1" \
		--broker "mqtt://127.0.0.1:$BPORT" > "$T/push-$3.out" 2> "$T/push-$3.err" || fail "push $3"
}
# the retained status the vehicle published: VERSION OUTCOME WHY-PREFIX
# (read by python3's json, not by grep; an older retained one is waited past)
status_is() {
	timeout 5 mosquitto_sub -h 127.0.0.1 -p "$BPORT" -t railmon/EV-7/config/status -C 1 -W 3 > "$T/status.json" \
		2> /dev/null || return 1
	$PY -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["version"]==int(sys.argv[2]) and d["outcome"]==sys.argv[3] and d["why"].startswith(sys.argv[4]) else 1)' \
		"$T/status.json" "$1" "$2" "$3"
}
printf 'listener %s 127.0.0.1\nuser root\npersistence false\nallow_anonymous true\n' "$BPORT" > "$T/mosq.conf"
start_peer mosquitto -c "$T/mosq.conf" 2>> "$T/mosq.log"
wait_for 10 port_open "$BPORT" || fail "mosquitto did not start"

# --- 1. pushed while the vehicle is offline: retained, applied at connect
push 5 "$T/ground.key" offline
start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run.log"
RUN=$LIB_PID
wait_for 60 has_lines "$T/run.log" "remote configuration version 5 applied" || fail "version 5 not applied"
cmp -s "$T/cfg/board.ini" "$T/push/board.ini" || fail "the board file is not the pushed one"
cmp -s "$T/cfg/board.ini.prev" "$T/board-v1.ini" || fail "the previous board file is not kept as .prev"
grep -qx 'railmon-config-version 5' "$T/log/config.version" || fail "config.version: $(cat "$T/log/config.version")"
alive "$RUN" || fail "run died"
wait_for 30 status_is 5 applied "" || fail "status not 'version 5 applied': $(cat "$T/status.json")"
second_in_log() { "$RAILMON" channels --data "$T/log" > "$T/channels.out" 2>&1 && grep -q ' second .*VehicleSpeed.Speed' "$T/channels.out"; }
wait_for 30 second_in_log || fail "the new bus's channels are not in the log's dictionary"
echo "offline push: version 5 applied at connect (status retained); its new bus's channels in the log; board.ini = pushed, .prev = previous, config.version 5"

# --- 2. twice: applied once (the restart's reconnect got the retained one too)
push 5 "$T/ground.key" again
# --- 3. another key: refused (processed after the repeat: one at a time, in order)
push 6 "$T/other.key" otherkey
wait_for 60 has_lines "$T/run.log" "remote configuration version 6 refused: bad signature" ||
	fail "another key's push not refused with its reason"
[ "$(grep -c 'remote configuration version 5 applied' "$T/run.log")" = 1 ] || fail "version 5 applied twice"
cmp -s "$T/cfg/board.ini" "$T/push/board.ini" || fail "a refused push changed the board file"
grep -qx 'railmon-config-version 5' "$T/log/config.version" || fail "a refused push changed config.version"
wait_for 30 status_is 6 refused "bad signature" || fail "status not 'version 6 refused: bad signature': $(cat "$T/status.json")"
echo "twice: applied once; another key: refused (bad signature), board unchanged"

# --- 4. an old version
push 4 "$T/ground.key" old
wait_for 60 has_lines "$T/run.log" "remote configuration version 4 refused: version 4 is not above the vehicle's current version 5" ||
	fail "an old version not refused with its reason"
cmp -s "$T/cfg/board.ini" "$T/push/board.ini" || fail "an old version changed the board file"
wait_for 30 status_is 4 refused "version 4 is not above" || fail "status not 'version 4 refused': $(cat "$T/status.json")"
alive "$RUN" || fail "run died"
stop_pid "$RUN" 10
echo "old version 4: refused (not above 5), board unchanged"

# --- 5. a board whose bus cannot open: rolled back, the previous one runs
mkdir -p "$T/push2"
cp "$T/push/train.dbc" "$T/push/trace.log" "$T/push2/"
board "$T/push2/board.ini" 30
printf '[can extra]\ndriver = socketcan\ninterface = rmnone0\ndbc = train.dbc\n' >> "$T/push2/board.ini"
start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run2.log"
RUN=$LIB_PID
"$RAILMON" config push --vehicle EV-7 --board "$T/push2/board.ini" --key "$T/ground.key" --version 7 \
	--broker "mqtt://127.0.0.1:$BPORT" > "$T/push-nobus.out" 2> "$T/push-nobus.err" || fail "push nobus"
wait_for 60 has_lines "$T/run2.log" "remote configuration version 7 rolled back: the new board did not start" ||
	fail "a board whose bus cannot open was not rolled back"
wait_for 30 status_is 7 "rolled back" "the new board did not start: $T/cfg/board.ini: bus 'extra': " ||
	fail "status not 'version 7 rolled back': $(cat "$T/status.json")"
grep -q "bus 'extra'" "$T/run2.log" || fail "the bus that did not open is not named"
cmp -s "$T/cfg/board.ini" "$T/push/board.ini" || fail "the rollback did not put the previous board file back"
# the previous board starts again after the rollback (its second start line)
wait_for 30 has_lines "$T/run2.log" "vehicle EV-7, 2 buses" 2 || fail "the previous board did not start again"
[ ! -e "$T/cfg/board.ini.prev" ] || fail "board.ini.prev left after the rollback"
alive "$RUN" || fail "run died after the rollback"
stop_pid "$RUN" 10
grep -qx 'railmon-config-version 7' "$T/log/config.version" || fail "a rolled-back version is not kept as taken"
echo "bus cannot open: version 7 rolled back (bus 'extra' named), previous board back and running"
