#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""freeze-thread.py PID COMM SECONDS - stop the one thread of PID named COMM
(/proc/PID/task/*/comm) for SECONDS while the process's other threads run
on, then let it go: a wedged thread, made from outside (ptrace
PTRACE_SEIZE + PTRACE_INTERRUPT on that thread alone, python3 ctypes).
Prints "frozen TID" once it is stopped, "released TID" at the end."""
import ctypes
import os
import sys
import time

PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
WALL = 0x40000000

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, tid):
    if libc.ptrace(req, tid, None, None) < 0:
        e = ctypes.get_errno()
        raise OSError(e, "ptrace %#x %d: %s" % (req, tid, os.strerror(e)))


def main():
    pid, comm, secs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)
            if open("/proc/%d/task/%s/comm" % (pid, t)).read().strip() == comm]
    if len(tids) != 1:
        print("%d threads named %s in %d" % (len(tids), comm, pid))
        return 1
    tid = tids[0]
    ptrace(PTRACE_SEIZE, tid)
    ptrace(PTRACE_INTERRUPT, tid)
    os.waitpid(tid, WALL)
    print("frozen %d" % tid, flush=True)
    time.sleep(secs)
    ptrace(PTRACE_DETACH, tid)
    print("released %d" % tid, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
