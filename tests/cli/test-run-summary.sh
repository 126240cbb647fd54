#!/bin/bash
# test-run-summary.sh RAILMON MB_SERVER - the summary `railmon run` prints
# at its end and `railmon stat` on the log it leaves say the same: a Modbus
# TCP bus polled against the libmodbus fault server injecting faults
# (exceptions, garbage, wrong unit, timeouts) into 30% of the replies.
# Both must count every failed transaction, and agree to the unit.
set -euo pipefail
RAILMON=$1
MB_SERVER=$2
# every peer is stopped on every exit path: SIGTERM, and SIGKILL for one
# that ignores it (a railmon blocked in open() cannot act on SIGTERM)
. "$(dirname "$0")/../lib/lib.sh"
lib_init run-summary
fail() { echo "FAIL: $*"; cat "$T/run.err" 2>/dev/null || true; exit 1; }

# The server stops at EOF on its stdin, or with this script (parent-death signal).
coproc SRV { exec setpriv --pdeathsig KILL -- "$MB_SERVER" --tcp 0 --seed 7 --fault-pct 30 \
	--weights exc=1,garbage=1,unit=1,short=1,delay=1 --delay-ms 80; }
pids+=($SRV_PID)
read -r ready port <&"${SRV[0]}" || true
[ "${ready:-}" = READY ] || fail "mb-fault-server did not start"

cat > "$T/board.ini" <<EOF
[board]
vehicle = SUMMARY
health_interval_s = 1
[modbus devices]
transport = tcp
host = 127.0.0.1
port = $port
period_ms = 10
response_timeout_ms = 40
[channel a]
bus = devices
unit_id = 1
table = input
address = 1
type = u16
[channel b]
bus = devices
unit_id = 2
table = holding
address = 7
type = u16
EOF

# Health every second while it runs; what stat shows of a stopped run is
# the last health, which must be the one written at the stop.  It runs
# until its log holds what the checks below stand on (a timeout, a reply,
# a wakeup, as the health says them), not for a fixed time: at a high load
# a few seconds may hold none of them.
devices_json() { "$RAILMON" stat --data "$T/log" --json 2>/dev/null | grep '"name":"devices"'; }
enough() {
	gone "$run" && fail "railmon run ended by itself"
	devices_json | grep -qE '"errors":[1-9].*"latency_count":[1-9].*"transaction_count":[1-9]' &&
		"$RAILMON" export --data "$T/log" --format csv 2>/dev/null | grep -q MB_TIMEOUT
}
"$RAILMON" run --board "$T/board.ini" --data "$T/log" 2> "$T/run.err" &
run=$!
pids+=("$run")
wait_for 120 enough || fail "no timeout, reply and wakeup in the health within 120 s: $(devices_json)"
kill -TERM $run
wait $run || fail "run exited $? on SIGTERM"
summary=$( (grep -oE 'devices: [0-9]+ in, [0-9]+ errors' "$T/run.err" || true) | tail -1)
[ -n "$summary" ] || fail "no summary for bus 'devices'"
run_errors=$(echo "$summary" | grep -oE '[0-9]+ errors' | cut -d' ' -f1)
"$RAILMON" stat --data "$T/log" --json > "$T/stat.json" || fail "railmon stat failed"
stat_errors=$("$PY" -c '
import json, sys
for line in open(sys.argv[1]):
    h = json.loads(line)
    if h.get("name") == "devices":
        print(h["errors"])' "$T/stat.json")
echo "run summary: '$summary'; railmon stat: $stat_errors errors"
[ -n "$stat_errors" ] || fail "railmon stat shows no bus 'devices'"
[ "$run_errors" -gt 0 ] || fail "the summary says $run_errors errors with 30% of the replies broken"
[ "$run_errors" = "$stat_errors" ] || fail "the summary says $run_errors errors, stat says $stat_errors"
# The transaction times came through the log apart from the wakeups:
# replies only, whatever they said (the 80 ms delays are 40 ms timeouts,
# errors, not times): as many as the log holds values (one register a
# reply), exceptions and bad replies.  Counted, not timed: a reply's time
# at a high load may be anything (before: max <= 41 ms, p99 <= 4 ms).
"$RAILMON" export --data "$T/log" --format csv > "$T/log.csv" 2>/dev/null || fail "export"
"$PY" - "$T/stat.json" "$T/log.csv" <<'PY' || fail "transaction histogram"
import csv, json, sys
kinds = {}
for r in csv.DictReader(open(sys.argv[2])):
    k = r["event"] if r["kind"] == "event" else r["kind"]
    kinds[k] = kinds.get(k, 0) + 1
replies = kinds.get("sample", 0) + kinds.get("MB_EXCEPTION", 0) + kinds.get("MB_BAD_REPLY", 0)
for line in open(sys.argv[1]):
    h = json.loads(line)
    if h.get("name") == "devices":
        print(f'transactions: {h["transaction_count"]} replies, p99 {h["transaction_p99_us"]} us, '
              f'max {h["transaction_max_ns"] / 1e6:.1f} ms; wakeups: {h["latency_count"]}; the log: '
              f'{kinds.get("sample", 0)} values, {kinds.get("MB_EXCEPTION", 0)} exceptions, '
              f'{kinds.get("MB_BAD_REPLY", 0)} bad replies, {kinds.get("MB_TIMEOUT", 0)} timeouts')
        assert kinds.get("MB_TIMEOUT", 0) > 0 and h["latency_count"] > 0
        assert h["transaction_count"] == replies > 0, (h["transaction_count"], replies)
        assert h["transaction_max_ns"] > 0 and h["transaction_p99_us"] > 0
PY
echo PASS
