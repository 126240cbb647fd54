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
#    The retained old version again at each reconnect (three SIGHUP
#    restarts): refused once, not at each (line, status, event);
# 4b. a board that fails check (signed by rconf.py: config push checks
#    first) and a message over 4 MiB: refused, saying so, board unchanged;
# 5. a board with a bus that cannot open (and two buses naming one DBC, sent
#    once): rolled back, the bus named, the previous board back and started.
# 6. a board that starts but whose collector does not run (its thread
#    stopped from outside by freeze-thread.py, ptrace) within the
#    probation (RAILMON_CONFIG_PROBATION_MS, 30 s on a vehicle): rolled
#    back, the previous board back and running.
# 6b. a stop (SIGTERM) during the probation with the collector running:
#    applied; a kill (SIGKILL) during the probation: the next start goes
#    back to the previous files (config.trial) and says so.
# 7. every refusal and rollback is an event in the log (export): version
#    and why (CONFIG_REFUSED / CONFIG_ROLLED_BACK, record/railmon.proto).
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init config-run
# a pushed board is applied once it ran this long (30 s on a vehicle)
export RAILMON_CONFIG_PROBATION_MS=300
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
echo "old version 4: refused (not above 5), board unchanged"

# --- 4a. the retained refused message again at each reconnect: said once.
# A round that reloads also takes what the last connection delivered, so
# after three reloads, each waited for up to its connection, the
# redelivered message was taken at least twice.
for i in 1 2 3; do
	n=$(grep -c 'uplink: connected to' "$T/run.log" || true)
	kill -HUP "$RUN"
	wait_for 60 has_lines "$T/run.log" "reloaded $T/cfg/board.ini" "$i" || fail "reload $i"
	wait_for 60 has_lines "$T/run.log" 'uplink: connected to' $((n + 1)) || fail "no connection after reload $i"
done
[ "$(grep -c 'remote configuration version 4 refused' "$T/run.log")" = 1 ] ||
	fail "the retained refused message was refused again at a reconnect: $(grep -c 'version 4 refused' "$T/run.log") times"
echo "retained refused message at 3 reconnects: said once"

# --- 4b. fails check; too large
PUSHSEED=$(cut -d' ' -f2 "$T/ground.key")
sign() { # VERSION BOARD-TEXT OUT: a message signed with the ground key, by rconf.py
	$PY -c 'import sys; sys.path.insert(0, sys.argv[1]); import rconf
open(sys.argv[5], "wb").write(rconf.encode(bytes.fromhex(sys.argv[2]), int(sys.argv[3]), "EV-7", [("board.ini", sys.argv[4].encode())]))' \
		"$(dirname "$0")" "$PUSHSEED" "$1" "$2" "$3"
}
sign 9 "$(printf '[board]\nvehicle = EV-7\nbatch_ms = fast\n')" "$T/badcheck.msg" || fail "rconf.py sign"
mosquitto_pub -h 127.0.0.1 -p "$BPORT" -r -q 1 -t railmon/EV-7/config -f "$T/badcheck.msg" || fail "publish badcheck"
wait_for 60 has_lines "$T/run.log" "remote configuration version 9 refused: fails check: " ||
	fail "a board failing check was not refused with its reason"
wait_for 30 status_is 9 refused "fails check: " || fail "status not 'version 9 refused: fails check': $(cat "$T/status.json")"
head -c 4194305 /dev/zero > "$T/big.msg"
mosquitto_pub -h 127.0.0.1 -p "$BPORT" -r -q 1 -t railmon/EV-7/config -f "$T/big.msg" || fail "publish big"
wait_for 60 has_lines "$T/run.log" "remote configuration version 0 refused: too large: 4194305 bytes, at most 4194304" ||
	fail "a message over 4 MiB was not refused with its reason"
wait_for 30 status_is 0 refused "too large: 4194305 bytes" || fail "status not 'refused: too large': $(cat "$T/status.json")"
cmp -s "$T/cfg/board.ini" "$T/push/board.ini" || fail "a refused push changed the board file"
grep -qx 'railmon-config-version 5' "$T/log/config.version" || fail "a refused push changed config.version"
alive "$RUN" || fail "run died"
stop_pid "$RUN" 10
echo "fails check (version 9) and over 4 MiB: refused with their reasons, board unchanged"

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

# --- 6. the collector does not run within the probation: rolled back
mkdir -p "$T/push3"
cp "$T/push/train.dbc" "$T/push/trace.log" "$T/push3/"
board "$T/push3/board.ini" 30
RAILMON_CONFIG_PROBATION_MS=20000 start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run3.log"
RUN=$LIB_PID
wait_for 60 has_lines "$T/run3.log" "vehicle EV-7, 2 buses" || fail "run3 did not start"
"$RAILMON" config push --vehicle EV-7 --board "$T/push3/board.ini" --key "$T/ground.key" --version 8 \
	--broker "mqtt://127.0.0.1:$BPORT" > "$T/push-wedge.out" 2> "$T/push-wedge.err" || fail "push wedge"
wait_for 60 has_lines "$T/run3.log" "vehicle EV-7, 1 bus" || fail "the pushed board did not start"
$PY "$(dirname "$0")/freeze-thread.py" "$RUN" collector 6 > "$T/freeze.out" 2>&1 &
FREEZE=$!
wait_for 30 has_lines "$T/freeze.out" "^frozen" || fail "the collector thread was not frozen: $(cat "$T/freeze.out")"
wait_for 60 has_lines "$T/run3.log" "remote configuration version 8 rolled back: the new board's collector did not run for " ||
	fail "a board whose collector does not run was not rolled back"
wait "$FREEZE" || fail "freeze-thread: $(cat "$T/freeze.out")"
wait_for 30 status_is 8 "rolled back" "the new board's collector did not run" ||
	fail "status not 'version 8 rolled back': $(cat "$T/status.json")"
cmp -s "$T/cfg/board.ini" "$T/push/board.ini" || fail "the rollback did not put the previous board file back"
wait_for 30 has_lines "$T/run3.log" "vehicle EV-7, 2 buses" 2 || fail "the previous board did not start again"
! grep -q "remote configuration version 8 applied" "$T/run3.log" || fail "version 8 said applied"
alive "$RUN" || fail "run died after the rollback"
stop_pid "$RUN" 10
echo "collector not running: version 8 rolled back, previous board back and running"

# --- 6b. stopped or killed during the probation
RAILMON_CONFIG_PROBATION_MS=60000 start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run4.log"
RUN=$LIB_PID
wait_for 60 has_lines "$T/run4.log" "vehicle EV-7, 2 buses" || fail "run4 did not start"
"$RAILMON" config push --vehicle EV-7 --board "$T/push3/board.ini" --key "$T/ground.key" --version 10 \
	--broker "mqtt://127.0.0.1:$BPORT" > "$T/push-10.out" 2> "$T/push-10.err" || fail "push 10"
wait_for 60 has_lines "$T/run4.log" "vehicle EV-7, 1 bus" || fail "version 10 did not start"
[ -s "$T/log/config.trial" ] || fail "no config.trial while version 10 is on probation"
stop_pid "$RUN" 20
grep -q "remote configuration version 10 applied" "$T/run4.log" || fail "a clean stop during the probation did not apply it"
[ ! -e "$T/log/config.trial" ] || fail "config.trial left after a clean stop"
cmp -s "$T/cfg/board.ini" "$T/push3/board.ini" || fail "version 10's board is not in place"
RAILMON_CONFIG_PROBATION_MS=60000 start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run5.log"
RUN=$LIB_PID
wait_for 60 has_lines "$T/run5.log" "vehicle EV-7, 1 bus" || fail "run5 did not start"
"$RAILMON" config push --vehicle EV-7 --board "$T/push/board.ini" --key "$T/ground.key" --version 11 \
	--broker "mqtt://127.0.0.1:$BPORT" > "$T/push-11.out" 2> "$T/push-11.err" || fail "push 11"
wait_for 60 has_lines "$T/run5.log" "vehicle EV-7, 2 buses" || fail "version 11 did not start"
[ -s "$T/log/config.trial" ] || fail "no config.trial while version 11 is on probation"
kill -KILL "$RUN"
wait "$RUN" 2> /dev/null || true
start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run6.log"
RUN=$LIB_PID
wait_for 60 has_lines "$T/run6.log" "remote configuration version 11 rolled back: railmon stopped before the new board's probation ended" ||
	fail "a kill during the probation was not rolled back at the next start"
cmp -s "$T/cfg/board.ini" "$T/push3/board.ini" || fail "the previous board file (version 10's) is not back"
grep -q "vehicle EV-7, 1 bus" "$T/run6.log" || fail "the next start did not run the previous board"
[ ! -e "$T/log/config.trial" ] || fail "config.trial left after the rollback"
wait_for 30 status_is 11 "rolled back" "railmon stopped before" || fail "status not 'version 11 rolled back': $(cat "$T/status.json")"
alive "$RUN" || fail "run6 died"
stop_pid "$RUN" 10
echo "probation: a clean stop applied version 10; a kill left version 11 on probation, rolled back at the next start"

# --- 7. the refusals and rollbacks in the log: CONFIG_REFUSED / CONFIG_ROLLED_BACK (arg version, detail why)
"$RAILMON" export --data "$T/log" --kind event --format jsonl > "$T/events.jsonl" 2> "$T/export.err" || fail "export"
$PY - "$T/events.jsonl" <<'PYEOF' || fail "the configuration events in the log"
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
got = [(e["event"], e["arg"], e["detail"]) for e in ev if e["event"].startswith("CONFIG_R") and e["event"] != "CONFIG_RELOAD"]
want = [("CONFIG_REFUSED", 6, 3), ("CONFIG_REFUSED", 4, 5), ("CONFIG_REFUSED", 9, 6), ("CONFIG_REFUSED", 0, 1),
        ("CONFIG_ROLLED_BACK", 7, 10), ("CONFIG_ROLLED_BACK", 8, 11), ("CONFIG_ROLLED_BACK", 11, 13)]
# the retained over-4-MiB message is refused again by run 2 (a new process
# remembers nothing) if it connected before version 7 replaced it
if len(got) == len(want) + 1 and got[3] == got[4] == ("CONFIG_REFUSED", 0, 1):
    del got[4]
if got != want:
    print("got %r\nwant %r" % (got, want))
    sys.exit(1)
print("events: %d configuration outcomes as wanted" % len(got))
PYEOF
echo "log events: refused 6 (signature), 4 (old), 9 (check), too large; rolled back 7 (start), 8 (collector), 11 (killed on probation)"
