#!/bin/bash
# test-config-run-backlog.sh RAILMON SRCDIR - a remote configuration pushed
# while the broker holds a backlog for the ground (issue 32): the ground's
# receiver (`railmon recv --log`, a persistent session) is away while the
# vehicle records and forwards, so mosquitto queues every Batch for it; a
# new board is pushed and applied (the daemon restarts on the same log, its
# forwarder resumes from the cursor); then the vehicle stops and the
# receiver comes back.  The ground must end with every record of the
# vehicle's log exactly once: `export --order seq` of both, byte for byte
# (a lost record, a repeated one or a changed one differs).
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init config-run-backlog
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -30 "$f"; }; done; exit 1; }
export RAILMON_CONFIG_PROBATION_MS=300

"$RAILMON" keygen --output "$T/ground.key" > /dev/null || fail "keygen"
mkdir -p "$T/cfg" "$T/push"
for d in cfg push; do
	cp "$SRC/cli/demo/train.dbc" "$SRC/cli/demo/train.log" "$T/$d/"
done
BPORT=$(free_port)
board() { # FILE BATCH_MS
	printf '[board]\nvehicle = EV-8\nbatch_ms = %s\n[storage]\nsegment_size = 64K\nsync_window_ms = 50\n' "$2" > "$1"
	printf '[uplink]\nbroker = mqtt://127.0.0.1:%s\nconfig_pubkey = %s\n' "$BPORT" "$T/ground.key.pub" >> "$1"
	printf '[can vehicle]\ndriver = trace\nfile = train.log\ndbc = train.dbc\nspeed = 1\n' >> "$1"
}
board "$T/cfg/board.ini" 50
board "$T/push/board.ini" 40
printf '[can second]\ndriver = trace\nfile = train.log\ndbc = train.dbc\nspeed = 1\n' >> "$T/push/board.ini"
printf 'listener %s 127.0.0.1\nuser root\npersistence false\nallow_anonymous true\nmax_queued_messages 1000000\n' \
	"$BPORT" > "$T/mosq.conf"
start_peer mosquitto -c "$T/mosq.conf" 2>> "$T/mosq.log"
wait_for 10 port_open "$BPORT" || fail "mosquitto did not start"

recv_start() { # N: the ground's receiver, its persistent session ground-cfg
	start_peer "$RAILMON" recv --broker "mqtt://127.0.0.1:$BPORT" --format none --log "$T/ground" \
		--client-id ground-cfg 2> "$T/recv$1.err"
	RECV=$LIB_PID
	wait_for 30 has_lines "$T/recv$1.err" subscribed || fail "railmon recv $1 did not subscribe"
}
# the session exists at the broker, then the ground goes away
recv_start 1
stop_pid "$RECV" 10

start_peer "$RAILMON" run --board "$T/cfg/board.ini" --data "$T/log" 2> "$T/run.log"
RUN=$LIB_PID
wait_for 60 has_lines "$T/run.log" "uplink: connected to" || fail "the vehicle did not connect"
"$RAILMON" config push --vehicle EV-8 --board "$T/push/board.ini" --key "$T/ground.key" --version 2 \
	--broker "mqtt://127.0.0.1:$BPORT" > "$T/push.out" 2> "$T/push.err" || fail "push"
wait_for 60 has_lines "$T/run.log" "remote configuration version 2 applied" || fail "version 2 not applied"
# the new board's records too: its second bus's channels in the log
second_in_log() { "$RAILMON" channels --data "$T/log" > "$T/channels.out" 2>&1 && grep -q ' second .*VehicleSpeed.Speed' "$T/channels.out"; }
wait_for 30 second_in_log || fail "the new board's bus records nothing"
stop_pid "$RUN" 20
grep 'not yet acknowledged' "$T/run.log" | tail -1 | grep -q ', 0 records not yet acknowledged' ||
	fail "the vehicle stopped with records the broker did not take: $(grep 'not yet acknowledged' "$T/run.log" | tail -1)"
N=$("$RAILMON" export --data "$T/log" --order seq 2> /dev/null | tail -n +2 | wc -l)
[ "$N" -gt 100 ] || fail "only $N records in the vehicle's log"

# the ground comes back: the broker's backlog, every record once
recv_start 2
ground_has_all() {
	"$RAILMON" export --data "$T/log" --order seq > "$T/v.csv" 2> /dev/null || return 1
	"$RAILMON" export --data "$T/ground/EV-8" --order seq > "$T/g.csv" 2> /dev/null || return 1
	[ -s "$T/v.csv" ] && cmp -s "$T/v.csv" "$T/g.csv"
}
wait_for 60 ground_has_all ||
	fail "the ground's records differ from the vehicle's log: $(wc -l < "$T/g.csv") vs $(wc -l < "$T/v.csv") lines; $(diff "$T/v.csv" "$T/g.csv" | head -5)"
stop_pid "$RECV" 10
# nothing resent across the change: the first daemon stopped with every
# record acknowledged, so the broker got no Batch twice (the receiver counts
# the duplicates it skipped); one log, seq from 1 without a hole
wait_for 10 has_lines "$T/recv2.err" "duplicates skipped" || fail "recv 2 said no summary"
FIRST=$(grep 'not yet acknowledged' "$T/run.log" | head -1)
if [[ $FIRST == *", 0 records not yet acknowledged"* ]]; then
	grep -q ' 0 duplicates skipped, 0 missing, ' "$T/recv2.err" ||
		fail "records resent or missing across the change: $(grep 'duplicates skipped' "$T/recv2.err")"
	echo "the change's stop left nothing unacknowledged: the ground got no Batch twice"
fi
grep -q " 1 vehicles, 1 logs" "$T/recv2.err" || fail "the ground saw more than one log: $(grep 'duplicates skipped' "$T/recv2.err")"
echo "push during a backlog at the broker: version 2 applied; the ground has all $N records of the vehicle's log, each once"
