#!/bin/bash
# readme-example.sh PROTO EXAMPLE_PY BATCH_BIN - run the README's decoding
# example exactly as documented: protoc into a temp dir, decode one Batch.
set -euo pipefail
proto=$1 example=$2 batch=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
protoc --proto_path="$(dirname "$proto")" --python_out="$tmp" "$proto"
out=$(PYTHONPATH=$tmp /usr/bin/python3 "$example" "$batch")
echo "$out"
# seed-2.bin: 9 records from seq 201 with a channel dictionary.
grep -q '^batch vehicle=tram7 log_id=none first_seq=201 historical=False schema=1$' <<<"$out"
[ "$(grep -c '^20[0-9] ' <<<"$out")" -eq 9 ]
grep -q ' can bus=0 id=0x' <<<"$out"
grep -q ' sample line_voltage=.* V quality=QUALITY_GOOD$' <<<"$out"
grep -q ' event EVENT_CAN_BUS_OFF source=65535 ' <<<"$out"
# stdin works too.
out2=$(PYTHONPATH=$tmp /usr/bin/python3 "$example" < "$batch")
[ "$out2" = "$out" ]
echo "readme example: ok"
