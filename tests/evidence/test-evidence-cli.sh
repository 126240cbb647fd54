#!/bin/bash
# test-evidence-cli.sh RAILMON SRCDIR - the evidence chain as an operator and
# an investigator use it, through the binary:
# 1. keygen: a 0600 secret key and its public key, never overwritten;
#    check says signed (key id) or UNSIGNED, and refuses a key others can
#    read, naming board file, line and key;
# 2. a vehicle that logs while its broker is down, then forwards its backlog
#    (re-sent Batches carry Batch.historical) to `recv --log`: `verify`
#    passes on the vehicle log and on the ground log with the public key,
#    and fails with another key's;
# 3. one byte flipped in a vehicle segment: verify exits 1 naming segment
#    file, offset and seq;
# 4. a board without a key: verify --unsigned passes, --pubkey refuses it.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init evidence-cli
fail() { echo "FAIL: $*"; for f in "$T"/*.err "$T"/*.out; do [ -f "$f" ] && { echo "--- $f"; tail -20 "$f"; }; done; exit 1; }

# --- 1. keygen and check
"$RAILMON" keygen --out "$T/v.key" > "$T/keygen.out" || fail "keygen"
[ "$(stat -c %a "$T/v.key")" = 600 ] || fail "secret key mode $(stat -c %a "$T/v.key")"
grep -q '^railmon-ed25519-public [0-9a-f]\{64\}$' "$T/v.key.pub" || fail "public key file"
keyid=$(sed -n 's/.*key id \([0-9a-f]*\).*/\1/p' "$T/keygen.out")
[ ${#keyid} = 16 ] || fail "keygen names no key id"
if "$RAILMON" keygen --out "$T/v.key" 2> "$T/keygen2.err"; then fail "keygen overwrote a key"; fi
grep -q 'never overwritten' "$T/keygen2.err" || fail "keygen's refusal does not say why"
"$RAILMON" keygen --out "$T/other.key" > /dev/null || fail "second keygen"
set +e; "$RAILMON" keygen > /dev/null 2>&1; rc=$?; set -e
[ $rc = 2 ] || fail "keygen without --out: exit $rc, not 2"

head -2000 "$SRC/cli/demo/train.log" > "$T/trace.log"
board() { # NAME KEY BROKER_URL
	{
		printf '[board]\nvehicle = EV-1\nbatch_ms = 50\n'
		[ -z "$2" ] || printf 'key = %s\n' "$2"
		printf '[storage]\nsegment_size = 64K\nsync_window_ms = 50\n'
		[ -z "$3" ] || printf '[uplink]\nbroker = %s\n' "$3"
		printf '[can vehicle]\ndriver = trace\nfile = %s\ndbc = %s\nspeed = 0\n' \
			"$T/trace.log" "$SRC/cli/demo/train.dbc"
	} > "$T/$1.ini"
}
BPORT=$(free_port)
board signed "$T/v.key" "mqtt://127.0.0.1:$BPORT"
"$RAILMON" check --board "$T/signed.ini" --data "$T/vlog" > "$T/check.out" || fail "check"
grep -q "evidence: .*signed with $T/v.key (key id $keyid)" "$T/check.out" || fail "check does not name the key"
board unsigned "" ""
"$RAILMON" check --board "$T/unsigned.ini" --data "$T/ulog" > "$T/check-u.out" || fail "check unsigned"
grep -q 'evidence: .*UNSIGNED (no \[board\] key)' "$T/check-u.out" || fail "check does not say unsigned"
chmod 644 "$T/v.key"
if "$RAILMON" check --board "$T/signed.ini" --data "$T/vlog" > /dev/null 2> "$T/check-bad.err"; then
	fail "check took a key others can read"
fi
grep -q "signed.ini:4: key $T/v.key: readable or writable by others" "$T/check-bad.err" ||
	fail "check's refusal of the key does not name file, line and key"
chmod 600 "$T/v.key"
echo "keygen and check: 0600 key, id $keyid, never overwritten; check says signed / UNSIGNED / refuses 0644"

# --- 2. the vehicle log and the ground log, with a backlog re-sent
"$RAILMON" run --board "$T/signed.ini" --data "$T/vlog" --duration 2 > /dev/null 2> "$T/run1.err" ||
	fail "run without broker"
conf=$T/mosq.conf
printf 'listener %s 127.0.0.1\nuser root\npersistence false\nmax_queued_messages 1000000\nallow_anonymous true\n' \
	"$BPORT" > "$conf"
start_peer mosquitto -c "$conf" 2>> "$T/mosq.log"
wait_for 10 port_open "$BPORT" || fail "mosquitto did not start"
"$RAILMON" recv --broker "mqtt://127.0.0.1:$BPORT" --format none --log "$T/ground" \
	--client-id ground-evidence 2> "$T/recv.err" &
pids+=($!)
wait_for 20 grep -q subscribed "$T/recv.err" || fail "railmon recv did not subscribe"
"$RAILMON" run --board "$T/signed.ini" --data "$T/vlog" --duration 4 > /dev/null 2> "$T/run2.err" ||
	fail "run with broker"
gdir=$(dirname "$(find "$T/ground" -name '*.seg' | head -1)")
[ -d "$gdir" ] || fail "no ground log"
vlast=$("$RAILMON" export --order seq --data "$T/vlog" 2>/dev/null | tail -1 | cut -d, -f3)
wait_for 30 sh -c "\"$RAILMON\" export --order seq --data \"$gdir\" 2>/dev/null | tail -1 | cut -d, -f3 | grep -qx $vlast" ||
	fail "the ground log did not reach seq $vlast"
"$RAILMON" verify --data "$T/vlog" --pubkey "$T/v.key.pub" > "$T/verify-v.out" 2> "$T/verify-v.err" ||
	fail "verify of the vehicle log"
grep -qx "verified: seq 1\.\.$vlast" "$T/verify-v.out" &&
	grep -q "^verified: [0-9]* seqs by .* Seals, each signed by key $keyid" "$T/verify-v.out" ||
	fail "verify does not report seq 1..$vlast: $(cat "$T/verify-v.out")"
# seq 1..vlast is one verified range: nothing unproven in the vehicle log
[ "$(grep -c ': seq ' "$T/verify-v.out")" = 1 ] || fail "unproven ranges in a clean log: $(cat "$T/verify-v.out")"
grep -q "warning" "$T/verify-v.err" && fail "a warning with the public key: $(cat "$T/verify-v.err")"
# the secret key file names its public half: verified, with a warning
"$RAILMON" verify --data "$T/vlog" --pubkey "$T/v.key" > "$T/verify-s.out" 2> "$T/verify-s.err" ||
	fail "verify with the secret key file"
cmp -s "$T/verify-v.out" "$T/verify-s.out" || fail "verify with the secret key says otherwise"
grep -q "warning: .*v.key is the vehicle's secret key" "$T/verify-s.err" || fail "no warning: $(cat "$T/verify-s.err")"
"$RAILMON" verify --data "$gdir" --pubkey "$T/v.key.pub" > "$T/verify-g.out" 2> "$T/verify-g.err" ||
	fail "verify of the ground log"
grep -qx "verified: seq 1\.\.$vlast" "$T/verify-g.out" && [ "$(grep -c ': seq ' "$T/verify-g.out")" = 1 ] ||
	fail "ground verify: $(cat "$T/verify-g.out")"
# re-sent Batches end in Batch.historical (field 7 = true: 0x38 0x01), which
# the chain leaves out: count the ground log's frames that do
resent=$("$PY" - "$gdir" <<'PY'
import glob, struct, sys
n = 0
for seg in sorted(glob.glob(sys.argv[1] + "/*.seg")):
    b = open(seg, "rb").read()
    off = 512
    while off + 40 <= len(b):
        ln, crc, first, count, flags = struct.unpack_from("<IIQII", b, off)
        if flags == 0 and count and b[off + 40 + ln - 2:off + 40 + ln] == b"\x38\x01":
            n += 1
        if flags == 1 or (not ln and not count):
            break
        off += (40 + ln + 7) & ~7
print(n)
PY
)
[ "$resent" -gt 0 ] || fail "no re-sent (historical) Batch in the ground log: the backlog case was not exercised"
if "$RAILMON" verify --data "$gdir" --pubkey "$T/other.key.pub" > "$T/verify-o.out" 2> "$T/verify-o.err"; then
	fail "verify passed with another vehicle's key"
fi
# a wrong key is said as such, on stdout too, and nothing about retention
grep -q "^no Seal verifies with key" "$T/verify-o.out" && ! grep -qi "retention\|before the first Seal" "$T/verify-o.out" &&
	! grep -q "^verified: seq" "$T/verify-o.out" || fail "another key, stdout: $(cat "$T/verify-o.out")"
grep -q 'a Seal not signed by this key: the signature does not verify' "$T/verify-o.err" ||
	fail "another key: $(head -2 "$T/verify-o.err")"
echo "vehicle and ground log ($resent Batches re-sent as historical): seq 1..$vlast verified with key $keyid; another key refused"

# --- 3. one flipped byte
seg=$(ls "$T/vlog"/*.seg | sed -n 2p)
printf '\x5a' | dd of="$seg" bs=1 seek=3000 conv=notrunc status=none
set +e; "$RAILMON" verify --data "$T/vlog" --pubkey "$T/v.key.pub" > /dev/null 2> "$T/verify-f.err"; rc=$?; set -e
[ $rc = 1 ] || fail "verify of a changed log: exit $rc"
grep -q "$(basename "$seg"): offset [0-9]*: seq [0-9]*: damaged frame" "$T/verify-f.err" ||
	fail "the flipped byte is not located: $(head -2 "$T/verify-f.err")"
echo "flipped byte: $(head -1 "$T/verify-f.err")"

# --- 4. a board without a key
"$RAILMON" run --board "$T/unsigned.ini" --data "$T/ulog" --duration 2 > /dev/null 2> "$T/run-u.err" || fail "run unsigned"
"$RAILMON" verify --data "$T/ulog" --unsigned > "$T/verify-u.out" || fail "verify --unsigned"
grep -q 'UNSIGNED: chain only, not authenticated' "$T/verify-u.out" || fail "verify --unsigned does not say so"
if "$RAILMON" verify --data "$T/ulog" --pubkey "$T/v.key.pub" > /dev/null 2> "$T/verify-u.err"; then
	fail "an unsigned log verified against a key"
fi
grep -q 'unsigned' "$T/verify-u.err" || fail "the unsigned Seals are not said"
set +e; "$RAILMON" verify --data "$T/ulog" > /dev/null 2>&1; rc=$?; set -e
[ $rc = 2 ] || fail "verify without --pubkey or --unsigned: exit $rc, not 2"
echo "unsigned board: chain verified with --unsigned, refused with --pubkey"
