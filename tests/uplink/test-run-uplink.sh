#!/bin/bash
# test-run-uplink.sh RAILMON SRCDIR - `railmon run`'s uplink as an operator
# sees it, against a real mosquitto, with `railmon recv --log` on the ground
# as the subscriber that checks every record arrives.
#
# 1. A damaged uplink.cursor (empty, garbage, negative, beyond the log, a
#    directory, a FIFO) under a log that already holds records: run starts
#    anyway, warns naming the file and the damage, logs an UPLINK_FAULT
#    event (detail 4 = cursor reset, arg = -errno), and the ground ends up
#    with every record of the log from seq 1; after SIGTERM the cursor file
#    is valid and says everything was acknowledged.
# 2. No broker: a closed port and an unknown host name are said once, with
#    the reason, while the attempts go on (rate-limited: one line for
#    several failures); a broker that refuses the credentials is said so;
#    a broker that starts later: "connected ... after N failed attempts",
#    and the broker acknowledges the whole log.
set -euo pipefail
RAILMON=$1
SRC=$2
# every peer is stopped on every exit path: SIGTERM, and SIGKILL for one
# that ignores it (a railmon blocked in open() cannot act on SIGTERM)
. "$(dirname "$0")/../lib/lib.sh"
lib_init run-uplink
fail() { echo "FAIL: $*"; for f in "$T"/*.err; do echo "--- $f"; tail -20 "$f"; done; exit 1; }

# start_broker PORT [EXTRA-CONFIG]: a mosquitto that dies with this script
# (parent-death signal), even if the script itself is killed.
start_broker() {
	local conf=$T/mosq-$1.conf
	printf 'listener %s 127.0.0.1\nuser root\npersistence false\nmax_queued_messages 1000000\n%s\n' \
		"$1" "${2:-allow_anonymous true}" > "$conf"
	start_peer mosquitto -c "$conf" 2>>"$T/mosq-$1.log"
	wait_for 10 port_open "$1" || fail "mosquitto did not start on port $1"
}

# The first 1000 frames of the demo trace (with DBC decoding about 12,000
# records per run): enough Batches, and quick to export under ASan.
head -1000 "$SRC/cli/demo/train.log" > "$T/trace.log"

# board NAME VEHICLE [BROKER_URL]: the trace read as fast as possible, with
# an uplink if a URL is given
board() {
	{
		printf '[board]\nvehicle = %s\nbatch_ms = 100\nhealth_interval_s = 1\n' "$2"
		printf '[storage]\nsync_window_ms = 50\n'
		[ -z "${3:-}" ] || printf '[uplink]\nbroker = %s\n' "$3"
		printf '[can vehicle]\ndriver = trace\nfile = %s\ndbc = %s\nspeed = 0\n' \
			"$T/trace.log" "$SRC/cli/demo/train.dbc"
	} > "$T/$1.ini"
}

# the ground has every record of the vehicle log (same export, byte for byte)
ground_has_all() { # DATA VEHICLE
	"$RAILMON" export --data "$1" --order seq > "$T/v.csv" 2>/dev/null || return 1
	"$RAILMON" export --data "$T/ground/$2" --order seq > "$T/g.csv" 2>/dev/null || return 1
	[ -s "$T/v.csv" ] && cmp -s "$T/v.csv" "$T/g.csv"
}

BPORT=$(free_port)
start_broker "$BPORT"
"$RAILMON" recv --broker "mqtt://127.0.0.1:$BPORT" --format none --log "$T/ground" \
	--client-id ground-run-uplink 2> "$T/recv.err" &
pids+=($!)
wait_for 20 grep -q subscribed "$T/recv.err" || fail "railmon recv did not subscribe"

# --- 1. damaged cursors
declare -A CONTENT=(
	[empty]=''
	[garbage]='\x7fELF not a cursor at all\n'
	[negative]='railmon-cursor 1 -5\n'
	[beyond]='railmon-cursor 1 999999999\n'
)
declare -A WORDS=(
	[empty]='is empty'
	[garbage]='does not hold a cursor line'
	[negative]='holds a sequence number that is zero, negative or too large'
	[beyond]='points at seq 999999999, past the end of the log'
	[directory]='is a directory, not a file'
	[fifo]='is not a regular file'
)
declare -A ERRNO=([empty]=-61 [garbage]=-74 [negative]=-34 [beyond]=-75 [directory]=-21 [fifo]=-29)
for kind in empty garbage negative beyond directory fifo; do
	veh="CUR-$kind" data="$T/$kind" cur="$T/$kind/uplink.cursor"
	board "$kind-a" "$veh"
	board "$kind" "$veh" "mqtt://127.0.0.1:$BPORT"
	# a log with records that were never forwarded
	"$RAILMON" replay "$T/trace.log" --board "$T/$kind-a.ini" --data "$data" 2> "$T/replay.err" \
		|| fail "$kind: replay"
	# seq: the third column of export's CSV (vehicle, log_id, seq, ...)
	before=$("$RAILMON" export --data "$data" --order seq 2>/dev/null | tail -1 | cut -d, -f3)
	case $kind in
	directory) mkdir "$cur" ;;
	fifo) mkfifo "$cur" ;;
	*) printf "${CONTENT[$kind]}" > "$cur" ;;
	esac
	"$RAILMON" run --board "$T/$kind.ini" --data "$data" 2> "$T/$kind.err" &
	rpid=$!
	pids+=($rpid)
	wait_for 20 grep -q "railmon run: vehicle $veh" "$T/$kind.err" || fail "$kind: run did not start"
	grep -qF "railmon run: warning: the uplink cursor $cur ${WORDS[$kind]}" "$T/$kind.err" \
		|| fail "$kind: no warning naming $cur and what is wrong with it"
	grep -qF "sending the whole log again from its oldest record" "$T/$kind.err" || fail "$kind: warning"
	wait_for 30 ground_has_all "$data" "$veh" || fail "$kind: the ground never got every record of the log"
	kill -TERM $rpid
	wait $rpid || fail "$kind: railmon run exited $?"
	# the STOP record too, once it is forwarded at the clean stop
	wait_for 20 ground_has_all "$data" "$veh" || fail "$kind: the ground is missing records after the stop"
	last=$(tail -1 "$T/v.csv" | cut -d, -f3)
	first=$(sed -n 2p "$T/g.csv" | cut -d, -f3)
	[ "$first" = 1 ] && [ "$last" -gt "$before" ] || fail "$kind: ground has seq $first..$last"
	"$RAILMON" export --data "$data" --kind event 2>/dev/null | grep ",UPLINK_FAULT,${ERRNO[$kind]},4$" >/dev/null \
		|| fail "$kind: no UPLINK_FAULT event (cursor reset, ${ERRNO[$kind]}) in the log"
	if [ "$kind" = directory ]; then
		grep -q "cursor file write failures: [1-9]" "$T/$kind.err" || fail "directory: write failures not said"
	else
		want="railmon-cursor 1 $((last + 1))"
		[ "$(cat "$cur")" = "$want" ] || fail "$kind: cursor after a clean stop is '$(cat "$cur")', not '$want'"
	fi
	echo "cursor $kind: warned ('${WORDS[$kind]}'), event logged, all $last records on the ground from seq 1"
done

# --- 2. connection problems, said in plain words
# a closed port: one line for several failed attempts
CPORT=$(free_port)
board closed CONN-CLOSED "mqtt://127.0.0.1:$CPORT"
"$RAILMON" run --board "$T/closed.ini" --data "$T/closed" --duration 4 2> "$T/closed.err" || fail "closed: run failed"
n=$(grep -c "uplink: cannot connect to mqtt://127.0.0.1:$CPORT: Connection refused; retrying" "$T/closed.err" || true)
tries=$( (grep -o '[0-9]* failed connection attempts' "$T/closed.err" || true) | tail -1 | cut -d' ' -f1)
[ "$n" = 1 ] || fail "closed port: said $n times, not once"
[ "${tries:-0}" -ge 2 ] || fail "closed port: only ${tries:-0} attempts in 4 s"
grep -q "last connection error: Connection refused" "$T/closed.err" || fail "closed port: summary without the reason"
echo "closed port: 'Connection refused' said once for $tries failed attempts"

# an unknown host name (.invalid never resolves, RFC 6761)
board unknown CONN-UNKNOWN "mqtt://no-such-broker.invalid:1883"
"$RAILMON" run --board "$T/unknown.ini" --data "$T/unknown" --duration 3 2> "$T/unknown.err" || fail "unknown: run failed"
grep -q "uplink: cannot connect to mqtt://no-such-broker.invalid:1883: cannot resolve the host name: " "$T/unknown.err" \
	|| fail "unknown host: reason not said"
[ "$(grep -c 'uplink: cannot connect' "$T/unknown.err")" = 1 ] || fail "unknown host: said more than once"
echo "unknown host: $(grep -o 'cannot resolve the host name: .*; retrying' "$T/unknown.err" || true)"

# a broker that refuses the credentials
APORT=$(free_port)
mosquitto_passwd -c -b "$T/passwd" someone s3cret
start_broker "$APORT" "allow_anonymous false
password_file $T/passwd"
board auth CONN-AUTH "mqtt://127.0.0.1:$APORT"
"$RAILMON" run --board "$T/auth.ini" --data "$T/auth" --duration 2 2> "$T/auth.err" || fail "auth: run failed"
grep -q "uplink: cannot connect to mqtt://127.0.0.1:$APORT: the broker refused the connection: .*not authorised" \
	"$T/auth.err" || fail "not authorised: reason not said"
echo "not authorised: $(grep -o 'the broker refused the connection: [^;]*' "$T/auth.err" || true)"

# a broker that starts later
LPORT=$(free_port)
board later CONN-LATER "mqtt://127.0.0.1:$LPORT"
"$RAILMON" run --board "$T/later.ini" --data "$T/later" 2> "$T/later.err" &
rpid=$!
pids+=($rpid)
wait_for 20 grep -q "uplink: cannot connect to mqtt://127.0.0.1:$LPORT: Connection refused" "$T/later.err" \
	|| fail "later: refusal not said"
start_broker "$LPORT"
wait_for 60 grep -q "uplink: connected to mqtt://127.0.0.1:$LPORT after [0-9]* failed attempts\? in" "$T/later.err" \
	|| fail "later: the reconnection was not said"
kill -TERM $rpid
wait $rpid || fail "later: railmon run exited $?"
[ "$(grep -c 'uplink: cannot connect' "$T/later.err")" = 1 ] || fail "later: the failure was said more than once"
# and the log went out: the broker acknowledged every record (the summary
# and the cursor file agree with the log's last record)
last=$("$RAILMON" export --data "$T/later" --order seq 2>/dev/null | tail -1 | cut -d, -f3)
grep -q "uplink to mqtt://127.0.0.1:$LPORT: .* 0 records not yet acknowledged (from seq $((last + 1)))" "$T/later.err" \
	|| fail "later: not everything was acknowledged"
[ "$(cat "$T/later/uplink.cursor")" = "railmon-cursor 1 $((last + 1))" ] || fail "later: cursor"
echo "broker started later: $(grep -o 'uplink: connected to .*' "$T/later.err" || true)"
echo PASS
