#!/bin/bash
# bench-latency.sh RAILMON MB_SERVER [SECONDS] - the wakeup latency of
# `railmon run`'s Modbus poll thread (SCHED_FIFO 80, 1 ms period, mlockall,
# polling a libmodbus server on loopback) beside cyclictest with the same
# period and priority, run one after the other in this script, idle and
# under stress-ng (2 CPU hogs).  railmon's figures are the cumulative
# histogram of its last health record (railmon stat --json).
set -euo pipefail
RAILMON=$(realpath "$1")
MB_SERVER=$(realpath "$2")
SECS=${3:-15}
. "$(dirname "$0")/../lib/lib.sh"
lib_init bench-lat
command -v cyclictest >/dev/null || { echo "cyclictest missing (rt-tests)"; exit 1; }
command -v stress-ng >/dev/null || { echo "stress-ng missing"; exit 1; }

coproc SRV { exec "$MB_SERVER" --tcp 0; }
pids+=($SRV_PID)
read -r ready port <&"${SRV[0]}"
[ "$ready" = READY ] || { echo "mb-fault-server did not start"; exit 1; }

cat > "$T/board.ini" <<EOF
[board]
vehicle = LATENCY
rt_priority = 80
health_interval_s = 1
[modbus m]
host = 127.0.0.1
port = $port
period_ms = 1
response_timeout_ms = 100
[channel v]
bus = m
unit_id = 1
table = input
address = 0
EOF

railmon_run() { # label
	rm -rf "$T/log"
	"$RAILMON" run --board "$T/board.ini" --data "$T/log" --duration "$SECS" 2> "$T/run.err"
	"$RAILMON" stat --data "$T/log" --json > "$T/stat.json"
	"$PY" - "$1" "$T/stat.json" <<'PY'
import json, sys
for line in open(sys.argv[2]):
    h = json.loads(line)
    if h.get("kind") == "modbus":
        print(f'{sys.argv[1]} {h["latency_count"]} {h["latency_p50_us"]} {h["latency_p99_us"]} '
              f'{h["latency_p999_us"]} {h["latency_max_ns"] / 1000:.0f} {h["overruns"]}')
PY
}

cyclic_run() { # label
	local loops=$((SECS * 1000))
	cyclictest -m -p 80 -i 1000 -l "$loops" -q -h 4096 > "$T/cyclic.out" 2>&1
	"$PY" - "$1" "$T/cyclic.out" <<'PY'
import sys
hist, overflow, mx = {}, 0, 0
for line in open(sys.argv[2]):
    if line.startswith("#"):
        if "Max Latencies" in line:
            mx = int(line.split(":")[1].split()[0])
        if "Histogram Overflows" in line:
            overflow = int(line.split(":")[1].split()[0])
        continue
    parts = line.split()
    if len(parts) >= 2 and parts[0].isdigit():
        hist[int(parts[0])] = int(parts[1])
n = sum(hist.values()) + overflow
def pct(p):
    want, seen = n * p / 100.0, 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= want:
            return us + 1  # upper edge of the 1 us bucket, as railmon reports
    return 4096
print(f"{sys.argv[1]} {n} {pct(50)} {pct(99)} {pct(99.9)} {mx} -")
PY
}

{
	railmon_run "railmon-idle"
	cyclic_run "cyclictest-idle"
	stress-ng --cpu 2 --timeout $((SECS * 2 + 10))s --quiet &
	spid=$!
	pids+=($spid)
	railmon_run "railmon-stress"
	cyclic_run "cyclictest-stress"
	kill $spid 2>/dev/null || true
} > "$T/rows"

"$PY" - "$T/rows" "$SECS" <<'PY'
import sys
rows = {r.split()[0]: r.split()[1:] for r in open(sys.argv[1])}
print(f"\nwakeup latency, 1 ms period, SCHED_FIFO 80, {sys.argv[2]} s each (us; 1 us buckets)")
print(f"{'run':<20}{'wakeups':>9}{'p50':>7}{'p99':>7}{'p99.9':>8}{'max':>8}{'overruns':>10}")
for k in ("railmon-idle", "cyclictest-idle", "railmon-stress", "cyclictest-stress"):
    n, p50, p99, p999, mx, ov = rows[k]
    print(f"{k:<20}{n:>9}{p50:>7}{p99:>7}{p999:>8}{mx:>8}{ov:>10}")
for load in ("idle", "stress"):
    r, c = int(rows[f"railmon-{load}"][2]), int(rows[f"cyclictest-{load}"][2])
    print(f"p99 ratio railmon/cyclictest, {load}: {r / max(c, 1):.2f} (goal <= 1.2)")
PY
exec {SRV[1]}>&-
