#!/usr/bin/python3
"""cyclictest-row.py LABEL OUT [PERIOD_US] - one row of the latency
benchmarks (tests/system/bench-latency.sh, tests/vm/bench-can-latency.sh)
from the output of `cyclictest -q -h N`:

  LABEL samples p50 p99 p99.9 max late skipped

in us, percentiles as the upper edge of their 1 us bucket (as railmon
reports its own; the histogram's top, N, when beyond it); late: samples at
or over PERIOD_US (default 1000, the -i 1000 period: a wakeup that late
missed the next period); skipped: the periods those skipped, floor(latency
/ period) each, as cyclictest does not catch up (its next deadline is the
first one ahead); an overflow (beyond the histogram) counts the max's
periods, an upper bound.
"""
import sys

label, path = sys.argv[1], sys.argv[2]
period_us = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
hist, overflow, mx = {}, 0, 0
for line in open(path):
    if line.startswith("#"):
        if "Max Latencies" in line:
            mx = int(line.split(":")[1].split()[0])
        if "Histogram Overflows" in line:
            overflow = int(line.split(":")[1].split()[0])
        continue
    parts = line.split()
    if len(parts) >= 2 and parts[0].isdigit():
        hist[int(parts[0])] = int(parts[1])
if not hist:
    sys.exit(f"cyclictest-row: no histogram in {path}")
n = sum(hist.values()) + overflow


def pct(p):
    want, seen = n * p / 100.0, 0
    for us in sorted(hist):
        seen += hist[us]
        if seen >= want:
            return us + 1
    return max(hist) + 1  # beyond the histogram: its top


late = overflow + sum(c for us, c in hist.items() if us >= period_us)
skipped = overflow * (mx // period_us) + sum(c * (us // period_us) for us, c in hist.items() if us >= period_us)
print(f"{label} {n} {pct(50)} {pct(99)} {pct(99.9)} {mx} {late} {skipped}")
