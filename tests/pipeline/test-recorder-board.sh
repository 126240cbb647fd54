#!/bin/bash
# test-recorder-board.sh RAILMON SRCDIR - the example locomotive event
# recorder (cli/vehicles/loco-recorder.ini, its DBC) passes `railmon
# check`: every 49 CFR 229.135 element it names is a signal of the DBC and
# required, its triggers resolve, the 48 h window fits its retention_size
# with the figures said; the same board with a budget too small, a window
# too long for the disk, and a trigger on an unknown channel is refused with
# the file, line and figures.
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init recorder
fail() { echo "FAIL: $*"; for f in "$T"/*.out "$T"/*.err; do [ -s "$f" ] && { echo "--- $f"; cat "$f"; }; done; exit 1; }

cp "$SRC/cli/vehicles/loco-recorder.ini" "$SRC/cli/vehicles/loco-recorder.dbc" "$T/"
"$RAILMON" keygen --out "$T/loco.key" > /dev/null 2> "$T/keygen.err" || fail keygen
sed -i "s|^; key = .*|key = $T/loco.key|" "$T/loco-recorder.ini"
"$RAILMON" check --board "$T/loco-recorder.ini" --data "$T/log" > "$T/check.out" 2> "$T/check.err" || fail "check of the example"
has_lines "$T/check.out" 'retention window 48.0 h: .* B/s (CAN 51 frames/s, 273 samples/s; .* of retention_size 4G (.*%); 4 trigger(s), 22 required channel(s)' ||
	fail "the window line"
# what the holds need (issue 24): the longest pre (30 min) + 10 s kept
# undeletable, the most one hold keeps, how many fit beside the window
has_lines "$T/check.out" 'holds: the newest 1810 s (the longest trigger pre + 10 s), 38.[0-9]M, is never deleted for the budget, so a hold finds its pre window; one hold keeps up to 41.[0-9]M (its pre + post and two segments); retention_size 4G leaves room for 8[0-9] hold(s) beside the window$' ||
	fail "the holds line"
# a budget that keeps the window but fewer holds than triggers: said
sed 's/^retention_size = 4G/retention_size = 800M/' "$T/loco-recorder.ini" > "$T/tight.ini"
"$RAILMON" check --board "$T/tight.ini" --data "$T/log" > "$T/tight.out" 2> "$T/tight.err" || fail "check of 800M"
has_lines "$T/tight.out" 'retention_size 800M leaves room for 2 hold(s) beside the window (fewer than one per trigger: ' ||
	fail "the holds line of a tight budget"
has_lines "$T/check.out" "evidence: hash chain and Seals every 60 s, signed with $T/loco.key" || fail "the key"
# every data element the rule asks for is required
for s in Speed Direction Distance UtcSeconds ThrottleNotch BrakePipePressure BrakeCylinderPressure EmergencyBrake \
	IndependentBrake DynamicBrake CabSignal Horn Alerter Headlight WheelSlip; do
	grep -q "^\[signal $s\]" "$T/loco-recorder.ini" || fail "$s is not required"
done

# a budget that cannot hold 48 h at this rate: refused with the figures
line=$(grep -n '^retention_min_age' "$T/loco-recorder.ini" | cut -d: -f1)
sed 's/^retention_size = 4G/retention_size = 512M/' "$T/loco-recorder.ini" > "$T/small.ini"
"$RAILMON" check --board "$T/small.ini" --data "$T/log" > "$T/small.out" 2> "$T/small.err" && fail "512M accepted"
has_lines "$T/small.err" "small.ini:$line: retention_min_age 48.0 h needs 683.[0-9]M at this board's rate, 39[0-9][0-9] B/s (CAN 51 frames/s and 273 samples/s .* retention_size for .* can hold only 512M" ||
	fail "the refusal's words"
# without a budget, the filesystem: a 10-year window does not fit
sed 's/^retention_size = 4G/retention_size = 0/; s/^retention_min_age = 48h/retention_min_age = 3650d/' \
	"$T/loco-recorder.ini" > "$T/fs.ini"
"$RAILMON" check --board "$T/fs.ini" --data "$T/log" > "$T/fs.out" 2> "$T/fs.err" && fail "10 years accepted"
has_lines "$T/fs.err" "retention_min_age 87600.0 h needs .* the filesystem holding $T/log can hold only" || fail "fs refusal"
# a required signal its message's cycle time cannot keep (Brakes: 50 ms)
sed 's/^required_within_ms = 250$/required_within_ms = 20/' "$T/loco-recorder.ini" > "$T/fast.ini"
n=$(grep -n '^required_within_ms = 20$' "$T/fast.ini" | head -1 | cut -d: -f1)
"$RAILMON" check --board "$T/fast.ini" --data "$T/log" > "$T/fast.out" 2> "$T/fast.err" && fail "20 ms on a 50 ms message accepted"
has_lines "$T/fast.err" "fast.ini:$((n - 1)): BrakePipePressure: required_within_ms 20 is shorter than its message's cycle time, 50 ms" ||
	fail "cycle time message"
# a trigger on nothing
printf '[trigger Nothing]\nwhen = NoSuchSignal > 1\n' >> "$T/small.ini"
sed -i 's/^retention_size = 512M/retention_size = 4G/' "$T/small.ini"
"$RAILMON" check --board "$T/small.ini" --data "$T/log" > "$T/bad.out" 2> "$T/bad.err" && fail "unknown channel accepted"
n=$(wc -l < "$T/small.ini")
has_lines "$T/bad.err" "small.ini:$n: no channel 'NoSuchSignal'" || fail "unknown channel message"
echo ok
