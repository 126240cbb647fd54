# SPDX-License-Identifier: MIT
"""railmon_test.py: what the device-loss tests (test-devgone.py on the host,
test-vcan-gone.py in the CAN VM) share.

thread_cpu(pid, seconds, names): CPU used by named threads of process pid
(the name is the comm set with pthread_setname_np: railmon names its bus
threads "rx-<bus>"), from utime + stime in /proc/PID/task/TID/stat at the
start and the end of seconds, as {name: percent of one CPU}, None for a
thread that is not there.

wait_for(what, cond, timeout): poll cond every 100 ms until it returns
something true (returned), or fail naming what did not happen.
"""
import os
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


def thread_cpu(pid, seconds, names):
    tids = {n: find_tid(pid, n) for n in names}
    start = {n: ticks(pid, t) for n, t in tids.items() if t}
    t0 = time.monotonic()
    time.sleep(seconds)
    dt = time.monotonic() - t0
    return {n: (100.0 * (ticks(pid, t) - start[n]) / TICK / dt if t else None) for n, t in tids.items()}


def wait_for(what, cond, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
