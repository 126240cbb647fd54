#!/bin/bash
# test-dbc-board.sh RAILMON CORPUS - what a board sees of a lenient DBC load:
# `railmon check` lists every warning with the DBC's file:line and their
# count, `run` and `replay --dbc` say the first 5 at start and the count of
# the others, `decode` says every one, `dbc_strict = true` refuses the same
# file naming file:line; and a DBC written in CP1252 (unit "°C" as the byte
# 0xB0) gives names and units in valid UTF-8 in every output of check, run,
# export (csv, jsonl, candump) and stat.  Qualified names: export -c takes
# Message.Signal, a bare signal name where unique, and refuses an ambiguous
# one listing the candidates.  Units of 16-49 characters reach channels,
# the log's dictionary and export whole; a DBC without messages loads with
# a warning.
set -euo pipefail
RAILMON=$1
CORPUS=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init dbc-board
fail() { echo "FAIL: $*"; cat "$T"/*.out "$T"/*.err 2>/dev/null || true; exit 1; }

# message 309 (Heizung: Innentemp, Preis) and the base message 256
for i in $(seq 0 49); do
	printf '(%d.%06d) can0 135#%02X%02X000000000000\n' $((1764748800 + i)) 0 $((i % 100)) $((i % 3)) >> "$T/cp.log"
	printf '(%d.%06d) can0 100#E803010000000000\n' $((1764748800 + i)) 500000 >> "$T/cp.log"
done

board() { # board FILE DBC [extra line]
	cat > "$1" <<BOARD
[board]
vehicle = DBC
[storage]
segment_size = 1M
[can vehicle]
driver = trace
file = ${LOG:-$T/cp.log}
dbc = $2
speed = 0
${3:-}
BOARD
}

# 1. every warning, with file:line, and the count
board "$T/warn.ini" "$CORPUS/31-many-warnings.dbc"
"$RAILMON" check --board "$T/warn.ini" --data "$T/d0" > "$T/check.out" 2>&1 || fail "check refused a lenient DBC"
while read -r w; do
	grep -qF "    warning: $CORPUS/${w#warning: }" "$T/check.out" || fail "check did not print: $w"
done < "$CORPUS/31-many-warnings.warnings"
grep -qF "    4 DBC warnings (dbc_strict = true refuses the file instead)" "$T/check.out" || fail "no count"
"$RAILMON" run --board "$T/warn.ini" --data "$T/d0" --duration 0.3 2> "$T/run.err" || fail "run failed"
while read -r w; do
	grep -qxF "railmon run: ${w/warning: /warning: $CORPUS/}" "$T/run.err" || fail "run did not say: $w"
done < "$CORPUS/31-many-warnings.warnings"
"$RAILMON" replay "$T/cp.log" --dbc "$CORPUS/31-many-warnings.dbc" --data "$T/d0r" > "$T/replay.out" 2> "$T/replay.err" ||
	fail "replay --dbc failed"
"$RAILMON" decode --dbc "$CORPUS/31-many-warnings.dbc" < "$T/cp.log" > "$T/decode.out" 2> "$T/decode.err" ||
	fail "decode failed"
while read -r w; do
	grep -qxF "railmon replay: ${w/warning: /warning: $CORPUS/}" "$T/replay.err" || fail "replay did not say: $w"
	grep -qxF "railmon decode: ${w/warning: /warning: $CORPUS/}" "$T/decode.err" || fail "decode did not say: $w"
done < "$CORPUS/31-many-warnings.warnings"

# 2. dbc_strict = true: the same file is refused, the DBC's file:line first
board "$T/strict.ini" "$CORPUS/31-many-warnings.dbc" "dbc_strict = true"
if "$RAILMON" check --board "$T/strict.ini" --data "$T/d1" > "$T/strict.out" 2>&1; then
	fail "dbc_strict = true accepted a DBC with warnings"
fi
grep -qF "railmon check: $CORPUS/31-many-warnings.dbc:27: CM_ SG_ 319 without a signal name (the dbc of [can vehicle], $T/strict.ini:" \
	"$T/strict.out" || fail "strict: not the DBC's error"
board "$T/strict-ok.ini" "$CORPUS/13-two-M-mul-val.dbc" "dbc_strict = true"
"$RAILMON" check --board "$T/strict-ok.ini" --data "$T/d1" > "$T/strict-ok.out" 2>&1 || fail "strict refused a clean DBC"
grep -q "warning" "$T/strict-ok.out" && fail "a clean DBC warned"

# 3. CP1252 DBC: everything railmon writes is UTF-8 and says °C
board "$T/cp.ini" "$CORPUS/19-cp1252.dbc"
"$RAILMON" check --board "$T/cp.ini" --data "$T/d2" > "$T/cp-check.out" 2>&1 || fail "check refused the CP1252 DBC"
grep -qF "19-cp1252.dbc:21: not UTF-8 (byte 0xb0); read as CP1252" "$T/cp-check.out" || fail "no CP1252 note"
"$RAILMON" run --board "$T/cp.ini" --data "$T/d2" --duration 1 > "$T/cp-run.out" 2> "$T/cp-run.err" || fail "run failed"
for f in csv jsonl candump; do
	"$RAILMON" export --data "$T/d2" --format $f > "$T/export.$f.out" 2> "$T/export.$f.err" || fail "export $f"
done
"$RAILMON" stat --data "$T/d2" > "$T/stat.out" 2>&1 || fail "stat"
grep -qF "°C" "$T/export.csv.out" || fail "export csv has no °C"
grep -qF "°C" "$T/export.jsonl.out" || fail "export jsonl has no °C"
# 4. qualified names: two messages carry AliveCounter
board "$T/names.ini" "$CORPUS/36-same-signal-two-messages.dbc"
"$RAILMON" run --board "$T/names.ini" --data "$T/d3" --duration 1 > "$T/names-run.out" 2> "$T/names-run.err" ||
	fail "run failed"
if "$RAILMON" export --data "$T/d3" -c AliveCounter > "$T/ambiguous.out" 2> "$T/ambiguous.err"; then
	fail "export -c AliveCounter accepted an ambiguous name"
fi
grep -qF "railmon export: --channel: 'AliveCounter' is ambiguous: Base.AliveCounter, Brake.AliveCounter (give one of them)" \
	"$T/ambiguous.err" || fail "no candidates listed"
"$RAILMON" export --data "$T/d3" --format jsonl -c Brake.AliveCounter > "$T/brake.out" 2> "$T/brake.err" ||
	fail "export -c Brake.AliveCounter"
[ "$(grep -c '"name":"Brake.AliveCounter"' "$T/brake.out")" -eq 50 ] || fail "not 50 Brake.AliveCounter samples"
[ "$(wc -l < "$T/brake.out")" -eq 50 ] || fail "other samples than Brake.AliveCounter"
"$RAILMON" export --data "$T/d3" --format jsonl -c Speed -c Pressure > "$T/bare.out" 2> "$T/bare.err" ||
	fail "export -c Speed -c Pressure (bare, unique)"
[ "$(grep -c '"name":"Base.Speed"' "$T/bare.out")" -eq 50 ] || fail "bare Speed: not 50 Base.Speed samples"
[ "$(grep -c '"name":"Brake.Pressure"' "$T/bare.out")" -eq 50 ] || fail "bare Pressure: not 50 samples"
"$RAILMON" export --data "$T/d3" -c Nothing > "$T/none.out" 2> "$T/none.err" && fail "export -c Nothing succeeded"
grep -qF "no such channel" "$T/none.err" || fail "an unknown name is not refused: $(cat "$T/none.err")"
[ ! -s "$T/none.out" ] || fail "an unknown name exported something"

# 5. units of 16-49 characters: whole in channels, the log's dictionary, export
for i in $(seq 0 9); do
	printf '(%d.000000) can0 144#0A00E8FF64000000\n' $((1764748800 + i)) >> "$T/units.log"
done
LOG="$T/units.log" board "$T/units.ini" "$CORPUS/37-long-units.dbc"
"$RAILMON" check --board "$T/units.ini" --data "$T/d4" > "$T/units-check.out" 2>&1 || fail "check refused long units"
"$RAILMON" channels --board "$T/units.ini" > "$T/units-channels.out" 2>&1 || fail "channels --board"
"$RAILMON" run --board "$T/units.ini" --data "$T/d4" --duration 1 > "$T/units-run.out" 2> "$T/units-run.err" ||
	fail "run with long units failed"
"$RAILMON" channels --data "$T/d4" --json > "$T/units-dict.out" 2>&1 || fail "channels --data"
"$RAILMON" export --data "$T/d4" --format jsonl > "$T/units-export.out" 2> "$T/units-export.err" || fail "export"
for u in litre_per_minute newton_metre_per_wheel_axle_x "percent of rated continuous traction power [%]"; do
	grep -qF " $u " "$T/units-channels.out" || fail "channels --board cut '$u'"
	grep -qF "\"unit\":\"$u\"" "$T/units-dict.out" || fail "the log's dictionary cut '$u'"
	[ "$(grep -cF "\"unit\":\"$u\"" "$T/units-export.out")" -eq 10 ] || fail "export: not 10 samples in '$u'"
done

# 6. a DBC that defines no message: a warning, raw frames logged
printf 'VERSION ""\n\nNS_ :\n\nBS_:\n\nBU_: A\n' > "$T/nomsg.dbc"
board "$T/nomsg.ini" "$T/nomsg.dbc"
"$RAILMON" check --board "$T/nomsg.ini" --data "$T/d5" > "$T/nomsg-check.out" 2>&1 || fail "check refused a DBC without messages"
grep -qF "    warning: $T/nomsg.dbc:1: defines no message (BO_); nothing will be decoded" "$T/nomsg-check.out" ||
	fail "check did not warn of no message"
"$RAILMON" run --board "$T/nomsg.ini" --data "$T/d5" --duration 1 > "$T/nomsg-run.out" 2> "$T/nomsg-run.err" ||
	fail "run refused a DBC without messages"
grep -qxF "railmon run: warning: $T/nomsg.dbc:1: defines no message (BO_); nothing will be decoded" "$T/nomsg-run.err" ||
	fail "run did not warn of no message"
[ "$("$RAILMON" export --data "$T/d5" --format candump | wc -l)" -eq 100 ] || fail "not the 100 raw frames"

# every output of every command above
for f in "$T"/*.out "$T"/*.err; do
	"$PY" -c 'import sys; open(sys.argv[1], encoding="utf-8", errors="strict").read()' "$f" ||
		fail "$(basename "$f") is not valid UTF-8"
done
echo "dbc-board: $(wc -l < "$CORPUS/31-many-warnings.warnings") warnings listed by check, strict refuses, $(ls "$T"/*.out "$T"/*.err | wc -l) outputs valid UTF-8"
