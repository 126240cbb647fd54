#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""thread-cpu.py PID SECONDS MAX_PCT NAME...: CPU used by named threads.

Finds each thread of process PID whose name (comm, as set with
pthread_setname_np: railmon names its bus threads "rx-<bus>") is NAME,
reads its utime + stime from /proc/PID/task/TID/stat at the start and the
end of SECONDS, and prints "NAME: X.X% of a CPU over S s".  Exits 1 if a
thread used more than MAX_PCT percent of one CPU, or is not found.
"""
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def find_tid(pid, name):
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == name:
                    return tid
        except OSError:
            pass  # the thread ended meanwhile
    return None


def ticks(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/stat") as f:
        # comm may hold spaces: the fields after it start past the last ')'
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14, 15)


def measure(pid, seconds, names):
    """{name: percent of one CPU}; None for a thread that was not found."""
    tids = {n: find_tid(pid, n) for n in names}
    start = {n: ticks(pid, t) for n, t in tids.items() if t}
    t0 = time.monotonic()
    time.sleep(seconds)
    dt = time.monotonic() - t0
    return {n: (100.0 * (ticks(pid, t) - start[n]) / TICK / dt if t else None) for n, t in tids.items()}


def main():
    pid, seconds, limit, names = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
    bad = 0
    for name, pct in measure(pid, seconds, names).items():
        if pct is None:
            print(f"{name}: no such thread in process {pid}")
            bad = 1
            continue
        print(f"{name}: {pct:.1f}% of a CPU over {seconds:g} s (limit {limit:g}%)")
        bad |= pct > limit
    sys.exit(bad)


if __name__ == "__main__":
    main()
