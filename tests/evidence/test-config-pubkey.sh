#!/bin/bash
# test-config-pubkey.sh RAILMON SRCDIR - [uplink] config_pubkey (issue 32,
# the ground's key remote configuration is taken with) through `check`:
# named with its key id when good; a missing file, a file that is not a
# key and the ground's SECRET key are each refused naming board file, line
# and key file; a board without it says nothing of remote configuration.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init config-pubkey
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

"$RAILMON" keygen --out "$T/ground.key" > "$T/keygen.out" || fail "keygen"
keyid=$(sed -n 's/.*key id \([0-9a-f]*\).*/\1/p' "$T/keygen.out")
[ ${#keyid} = 16 ] || fail "keygen names no key id"
head -200 "$SRC/cli/demo/train.log" > "$T/trace.log"
board() { # NAME PUBKEY_LINE (empty: none)
	{
		printf '[board]\nvehicle = EV-1\n'
		printf '[uplink]\nbroker = mqtt://127.0.0.1:1\n'
		[ -z "$2" ] || printf 'config_pubkey = %s\n' "$2"
		printf '[can vehicle]\ndriver = trace\nfile = %s\ndbc = %s\nspeed = 0\n' \
			"$T/trace.log" "$SRC/cli/demo/train.dbc"
	} > "$T/$1.ini"
}

board good "$T/ground.key.pub"
"$RAILMON" check --board "$T/good.ini" --data "$T/log" > "$T/good.out" 2> "$T/good.err" || fail "check good"
grep -q "remote configuration: taken when signed with $T/ground.key.pub (key id $keyid)" "$T/good.out" ||
	fail "check does not name the config key and its id"

board none ""
"$RAILMON" check --board "$T/none.ini" --data "$T/log" > "$T/none.out" 2> "$T/none.err" || fail "check none"
if grep -q "remote configuration" "$T/none.out"; then fail "a board without config_pubkey speaks of it"; fi

refused() { # NAME FILE WHY-REGEX
	board "$1" "$2"
	if "$RAILMON" check --board "$T/$1.ini" --data "$T/log" > "$T/$1.out" 2> "$T/$1.err"; then
		fail "check took config_pubkey $2 ($1)"
	fi
	# line 5: [board], vehicle, [uplink], broker, config_pubkey
	grep -q "$1.ini:5: config_pubkey $2: $3" "$T/$1.err" ||
		fail "$1: the refusal does not name file:line, key file and why"
}
refused missing "$T/nothere.pub" "No such file"
printf 'hello\n' > "$T/junk.pub"
refused junk "$T/junk.pub" "not a railmon public key"
refused secret "$T/ground.key" "a secret key: the vehicle needs only the ground's public key"
echo "config_pubkey: named with id $keyid; missing, junk and secret key refused at file:5"
