#!/bin/bash
# test-config-push.sh RAILMON SRCDIR - `railmon config push` (issue 32), through
# the binary, checked with tests/evidence/rconf.py (the message format read
# from docs/remote-config.md with python3-cryptography, no railmon code):
# 1. --output: the message verifies with the ground key's public half, for
#    the vehicle, with the version given, the board file and its DBC (from a
#    subdirectory) byte for byte; --by-hash sends the DBC's BLAKE2b-256;
#    signed with another key it does not verify;
# 2. refused before signing: a board that fails check (a DBC missing), a
#    board of another vehicle, a DBC outside the board's directory, a key
#    others can read, no --broker/--output; each said in words;
# 3. published to a real mosquitto: retained at railmon/<vehicle>/config
#    (a subscriber that comes after gets it), the same bytes verify; an
#    unreachable broker is said, exit 1;
# 4. with uplink/examples/mosquitto-acl: the ground's push is retained and
#    the vehicle reads it; the vehicle's own push is dropped; a refused
#    login is said, exit 1.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init config-push
RCONF=$(dirname "$0")/rconf.py
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

"$RAILMON" keygen --output "$T/ground.key" > /dev/null || fail "keygen"
"$RAILMON" keygen --output "$T/other.key" > /dev/null || fail "keygen other"
mkdir -p "$T/cfg/dbc"
cp "$SRC/cli/demo/train.dbc" "$T/cfg/dbc/train.dbc"
head -200 "$SRC/cli/demo/train.log" > "$T/cfg/trace.log"
board() { # FILE VEHICLE DBC
	printf '[board]\nvehicle = %s\n[can vehicle]\ndriver = trace\nfile = trace.log\ndbc = %s\nspeed = 0\n' \
		"$2" "$3" > "$1"
}
board "$T/cfg/board.ini" EV-7 dbc/train.dbc

# --- 1. the message, read by an implementation of the spec alone
"$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" --version 42 \
	--output "$T/msg" > "$T/push1.out" 2> "$T/push1.err" || fail "push --output"
grep -q "version 42 for EV-7 written to $T/msg" "$T/push1.out" || fail "push does not say what it wrote"
$PY "$RCONF" check "$T/msg" "$T/ground.key.pub" EV-7 > "$T/py1.out" || fail "rconf.py refuses the message"
grep -qx 'version 42 vehicle EV-7 files 2' "$T/py1.out" || fail "fields: $(head -1 "$T/py1.out")"
bh=$($PY -c 'import hashlib,sys; print(hashlib.blake2b(open(sys.argv[1],"rb").read(),digest_size=32).hexdigest())' \
	"$T/cfg/board.ini")
dh=$($PY -c 'import hashlib,sys; print(hashlib.blake2b(open(sys.argv[1],"rb").read(),digest_size=32).hexdigest())' \
	"$T/cfg/dbc/train.dbc")
grep -qx "file board.ini content $bh $(stat -c %s "$T/cfg/board.ini")" "$T/py1.out" || fail "board file not as sent"
grep -qx "file dbc/train.dbc content $dh $(stat -c %s "$T/cfg/dbc/train.dbc")" "$T/py1.out" || fail "DBC not as sent"
if $PY "$RCONF" check "$T/msg" "$T/other.key.pub" EV-7 > "$T/py-other.out"; then fail "verifies with another key"; fi
grep -q 'bad: InvalidSignature' "$T/py-other.out" || fail "another key: $(cat "$T/py-other.out")"
"$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" --version 43 --by-hash \
	--output "$T/msg-h" > /dev/null 2> "$T/push2.err" || fail "push --by-hash"
$PY "$RCONF" check "$T/msg-h" "$T/ground.key.pub" EV-7 > "$T/py2.out" || fail "rconf.py refuses --by-hash"
grep -qx "file dbc/train.dbc hash $dh 0" "$T/py2.out" || fail "--by-hash: $(cat "$T/py2.out")"
[ "$(stat -c %s "$T/msg-h")" -lt "$(stat -c %s "$T/msg")" ] || fail "--by-hash is not smaller"
echo "message: version 42, board file and DBC byte for byte (python3 reads and verifies it), --by-hash names the DBC by BLAKE2b"

# --- 1b. the default version: five pushes in a row (several in one second)
# strictly increasing, each the time in ms when it was made (seconds gave
# two pushes in one second the same version: the second "an old version")
t0=$(date +%s%3N)
for i in 1 2 3 4 5; do
	"$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" \
		--output "$T/msg-d$i" > /dev/null 2> "$T/push-d$i.err" || fail "push without --version"
	$PY "$RCONF" check "$T/msg-d$i" "$T/ground.key.pub" EV-7 > "$T/py-d$i.out" || fail "rconf.py: msg-d$i"
	head -1 "$T/py-d$i.out" | cut -d' ' -f2 >> "$T/versions"
done
t1=$(date +%s%3N)
$PY -c 'import sys; v=[int(x) for x in open(sys.argv[1])]; lo,hi=int(sys.argv[2]),int(sys.argv[3])
sys.exit(0 if len(v)==5 and all(a<b for a,b in zip(v,v[1:])) and lo<=v[0] and v[-1]<=hi else "versions %s not strictly increasing within [%d, %d] ms" % (v,lo,hi))' \
	"$T/versions" "$t0" "$t1" || fail "default versions: $(tr '\n' ' ' < "$T/versions")"
echo "default version: 5 pushes in $((t1 - t0)) ms, strictly increasing ms timestamps: $(tr '\n' ' ' < "$T/versions")"

# --- 2. refused before anything is signed
refused() { # WORDS ARGS...: exit 1 or 2, WORDS on stderr, no message written
	local words=$1 rc; shift
	rm -f "$T/msg-r"
	set +e; "$RAILMON" config push "$@" > /dev/null 2> "$T/refused.err"; rc=$?; set -e
	[ $rc = 1 ] || [ $rc = 2 ] || fail "$* : exit $rc"
	grep -q -- "$words" "$T/refused.err" || fail "$* : does not say '$words': $(cat "$T/refused.err")"
	[ ! -e "$T/msg-r" ] || fail "$* : wrote a message"
}
board "$T/cfg/nodbc.ini" EV-7 dbc/missing.dbc
refused "fails \`railmon check\`" --vehicle EV-7 --board "$T/cfg/nodbc.ini" --key "$T/ground.key" --output "$T/msg-r"
grep -q 'missing.dbc' "$T/refused.err" || fail "the check failure does not name the DBC"
refused "is the board of vehicle EV-7, not EV-8" --vehicle EV-8 --board "$T/cfg/board.ini" --key "$T/ground.key" \
	--output "$T/msg-r"
cp "$T/cfg/dbc/train.dbc" "$T/outside.dbc"
board "$T/cfg/outside.ini" EV-7 ../outside.dbc
refused "not below the board file's directory" --vehicle EV-7 --board "$T/cfg/outside.ini" --key "$T/ground.key" \
	--output "$T/msg-r"
chmod 644 "$T/ground.key"
refused "readable or writable by others" --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" \
	--output "$T/msg-r"
chmod 600 "$T/ground.key"
refused "give --broker URL to publish, or --output FILE" --vehicle EV-7 --board "$T/cfg/board.ini" \
	--key "$T/ground.key"
install -m 600 "$T/ground.key.pub" "$T/pub-600"
refused "not a railmon secret key" --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/pub-600" \
	--output "$T/msg-r"
refused "expected a number from 1 to 9223372036854775807" --vehicle EV-7 --board "$T/cfg/board.ini" \
	--key "$T/ground.key" --version 9223372036854775808 --output "$T/msg-r"
echo "refused: a board failing check, another vehicle's board, a DBC outside, a 0644 key, a public key, no destination, a version over bigint"

# --- 3. published, retained
BPORT=$(free_port)
printf 'listener %s 127.0.0.1\nuser root\npersistence false\nallow_anonymous true\n' "$BPORT" > "$T/mosq.conf"
set +e; "$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" \
	--broker "mqtt://127.0.0.1:$BPORT" > /dev/null 2> "$T/nobroker.err"; rc=$?; set -e
[ $rc = 1 ] || fail "no broker: exit $rc"
grep -q "127.0.0.1:$BPORT: .*refused" "$T/nobroker.err" || fail "no broker: $(cat "$T/nobroker.err")"
start_peer mosquitto -c "$T/mosq.conf" 2>> "$T/mosq.log"
wait_for 10 port_open "$BPORT" || fail "mosquitto did not start"
"$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" --version 44 \
	--broker "mqtt://127.0.0.1:$BPORT" > "$T/push3.out" 2> "$T/push3.err" || fail "push to the broker"
grep -q "version 44 for EV-7 published on railmon/EV-7/config" "$T/push3.out" || fail "push does not say it published"
# a subscriber that comes afterwards: the broker kept it (retained)
timeout 20 mosquitto_sub -h 127.0.0.1 -p "$BPORT" -t railmon/EV-7/config -C 1 -N > "$T/sub.msg" ||
	fail "no retained message on railmon/EV-7/config"
$PY "$RCONF" check "$T/sub.msg" "$T/ground.key.pub" EV-7 > "$T/py3.out" || fail "the published message: $(cat "$T/py3.out")"
grep -qx 'version 44 vehicle EV-7 files 2' "$T/py3.out" || fail "published fields: $(head -1 "$T/py3.out")"
echo "published: retained on railmon/EV-7/config (read afterwards by mosquitto_sub), verifies; no broker: said, exit 1"

# --- 4. the example ACL: the ground may push, a vehicle may not (not even its own)
stop_pid "$LIB_PID"
mosquitto_passwd -b -c "$T/passwd" ground g-pw > /dev/null
mosquitto_passwd -b "$T/passwd" EV-7 v-pw > /dev/null
APORT=$(free_port)
printf 'listener %s 127.0.0.1\nuser root\npersistence false\nallow_anonymous false\npassword_file %s\nacl_file %s\n' \
	"$APORT" "$T/passwd" "$SRC/uplink/examples/mosquitto-acl" > "$T/mosq-acl.conf"
start_peer mosquitto -c "$T/mosq-acl.conf" 2>> "$T/mosq-acl.log"
wait_for 10 port_open "$APORT" || fail "mosquitto (ACL) did not start"
printf 'g-pw\n' > "$T/g-pw"
printf 'v-pw\n' > "$T/v-pw"
"$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" --version 50 \
	--broker "mqtt://127.0.0.1:$APORT" --username ground --password-file "$T/g-pw" > /dev/null 2> "$T/acl1.err" ||
	fail "push as ground through the ACL"
# the vehicle itself tries to push a newer one: the broker drops it (MQTT 3.1.1 acknowledges it anyway)
"$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" --version 51 \
	--broker "mqtt://127.0.0.1:$APORT" --username EV-7 --password-file "$T/v-pw" > /dev/null 2> "$T/acl2.err" ||
	fail "push as the vehicle: $(cat "$T/acl2.err")"
timeout 20 mosquitto_sub -h 127.0.0.1 -p "$APORT" -u EV-7 -P v-pw -t railmon/EV-7/config -C 1 -N \
	> "$T/acl.msg" || fail "the vehicle cannot read its config topic"
$PY "$RCONF" check "$T/acl.msg" "$T/ground.key.pub" EV-7 > "$T/py4.out" || fail "ACL message: $(cat "$T/py4.out")"
grep -qx 'version 50 vehicle EV-7 files 2' "$T/py4.out" || fail "the vehicle's own push got through: $(head -1 "$T/py4.out")"
set +e; "$RAILMON" config push --vehicle EV-7 --board "$T/cfg/board.ini" --key "$T/ground.key" \
	--broker "mqtt://127.0.0.1:$APORT" --username ground --password-file "$T/v-pw" > /dev/null 2> "$T/acl3.err"; rc=$?; set -e
[ $rc = 1 ] || fail "a wrong password: exit $rc"
grep -q "refused the connection" "$T/acl3.err" || fail "a wrong password: $(cat "$T/acl3.err")"
echo "ACL: the ground's push is retained and readable by the vehicle; the vehicle's own push is dropped; a wrong password said"
echo "ok"
