#!/bin/bash
# readme-example.sh SRC BATCH_BIN - run record/README.md's Python decoding
# example exactly as written (the fenced block after the
# readme-python-example marker), in a copy of the files it names, with
# BROKER replaced by a real mosquitto on a free port that holds BATCH_BIN
# as a retained message; then check what it printed.
set -euo pipefail
src=$1 batch=$2
tmp=$(mktemp -d)
bpid=
cleanup() { [ -n "$bpid" ] && kill "$bpid" 2>/dev/null && wait "$bpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir -p "$tmp/tree/record/examples"
cp "$src/record/railmon.proto" "$tmp/tree/record/"
cp "$src/record/examples/railmon_decode.py" "$tmp/tree/record/examples/"
block=$(awk '/readme-python-example/ {m = 1; next} m && /^```sh/ {b = 1; next} b && /^```/ {exit} b {print}' \
	"$src/record/README.md")
[ "$(grep -c . <<<"$block")" -eq 3 ] || { echo "FAIL: the README's block not found: $block"; exit 1; }
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" > "$tmp/mosq.conf"
mosquitto -c "$tmp/mosq.conf" 2> "$tmp/mosq.log" &
bpid=$!
for _ in $(seq 100); do
	mosquitto_pub -h 127.0.0.1 -p "$port" -r -q 1 -t railmon/tram7/data -f "$batch" 2>/dev/null && break
	sleep 0.1
done
# the block, only BROKER replaced; python3 is Debian's (the README's
# apt line installs python3-protobuf for it), not a python3 earlier in PATH
out=$(cd "$tmp/tree" && PATH=/usr/bin:$PATH bash -euo pipefail -c "${block//BROKER/127.0.0.1 -p $port}")
echo "$block"
echo "$out"
# seed-2.bin: 9 records from seq 201 with a channel dictionary.
grep -q '^batch vehicle=tram7 log_id=none first_seq=201 historical=False schema=1$' <<<"$out"
[ "$(grep -c '^20[0-9] ' <<<"$out")" -eq 9 ]
grep -q ' can bus=0 id=0x' <<<"$out"
grep -q ' sample line_voltage=.* V quality=QUALITY_GOOD$' <<<"$out"
grep -q ' event EVENT_CAN_BUS_OFF source=65535 ' <<<"$out"
cmp -s "$tmp/tree/batch.bin" "$batch" || { echo "FAIL: batch.bin is not the published payload"; exit 1; }
# stdin works too.
out2=$(cd "$tmp/tree" && PYTHONPATH=. /usr/bin/python3 record/examples/railmon_decode.py < batch.bin)
[ "$out2" = "$out" ]
echo "readme example, exactly as written (BROKER: a real mosquitto): ok"
