#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-run-times.py RAILMON SRCDIR [RUNS] - the times of a run's records
are honest against its START and STOP (docs/time.md, "Paced traces").

A trace paced at speed 20 plays a live bus: its frames are stamped with
the instant they were due.  RUNS runs of `railmon run` on one log, each
stopped by SIGTERM after 0.3-0.8 s; the log is split into runs after each
STOP in seq order, and in every run each frame, sample and event lies at
or after its run's START and at or before its STOP, and the run's frames
rise in time.  The plain export and --corrected-time agree on this (no
step here: they are the same times to within the slew of a run).  A
replay of the trace carries no monotonic base: --corrected-time leaves its
times as recorded and says how many records it left.
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

RAILMON, SRC = sys.argv[1], sys.argv[2]
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 5


def runs_of(recs):
    runs, cur = [], []
    for r in recs:
        # the closing Seal is written after the STOP it covers
        if not cur and runs and r["kind"] == "event" and r["event"] == "SEAL":
            runs[-1].append(r)
            continue
        cur.append(r)
        if r["kind"] == "event" and r["event"] == "STOP":
            runs.append(cur)
            cur = []
    assert not cur, f"{len(cur)} records after the last STOP"
    return runs


def check(recs, label, back_ns=0):
    """back_ns: how far a frame may lie before the one logged before it.
    The plain times rise strictly; --corrected-time moves each Batch by the
    clock offset read for it, a reading two clocks apart by up to the time
    between their reads on a loaded machine, so it agrees "to within the
    slew of a run" (docs/time.md), not to the nanosecond."""
    runs = runs_of(recs)
    assert len(runs) == RUNS, f"{label}: {len(runs)} runs, not {RUNS}"
    frames = 0
    for i, run in enumerate(runs):
        start = [r["time_ns"] for r in run if r["kind"] == "event" and r["event"] == "START"]
        stop = [r["time_ns"] for r in run if r["kind"] == "event" and r["event"] == "STOP"]
        assert len(start) == 1 and len(stop) == 1, f"{label}: run {i}: START {start} STOP {stop}"
        # Seals and the chain's events are the log's, not the run's acquisition
        own = [r for r in run if not (r["kind"] == "event" and r["event"].startswith("SEAL"))]
        early = [r for r in own if r["time_ns"] < start[0]]
        late = [r for r in own if r["time_ns"] > stop[0]]
        assert not early, f"{label}: run {i}: {len(early)} records before START, the first " \
                          f"{(start[0] - early[0]['time_ns']) / 1e6:.3f} ms before: {early[0]}"
        assert not late, f"{label}: run {i}: {len(late)} records after STOP: {late[0]}"
        t = [r["time_ns"] for r in run if r["kind"] == "can"]
        worst = max((a - b for a, b in zip(t, t[1:])), default=0)
        assert worst <= back_ns, f"{label}: run {i}: frames do not rise in time (one {worst} ns before the " \
                                 f"frame logged before it; {back_ns} ns allowed)"
        frames += len(t)
    return frames


def main():
    T = tempfile.mkdtemp(prefix="railmon-test-run-times.")
    try:
        record_and_check(T)
        replay_uncorrected(T)
    finally:
        shutil.rmtree(T, ignore_errors=True)
    print("PASS")


def replay_uncorrected(T):
    """A replay keeps the trace's times and carries no monotonic base: the
    correction leaves its records as recorded, and says how many."""
    subprocess.run([RAILMON, "replay", f"{SRC}/cli/demo/train.log", "--dbc", f"{SRC}/cli/demo/train.dbc",
                    "--data", f"{T}/replay"], capture_output=True, check=True)
    plain = subprocess.run([RAILMON, "export", "--data", f"{T}/replay", "--format", "jsonl", "-k", "can"],
                           capture_output=True, text=True, check=True)
    fixed = subprocess.run([RAILMON, "export", "--data", f"{T}/replay", "--format", "jsonl", "-k", "can",
                            "--corrected-time"], capture_output=True, text=True, check=True)
    n = len(plain.stdout.splitlines())
    assert n > 1000 and plain.stdout == fixed.stdout, "a replay's times changed by --corrected-time"
    assert "records without a monotonic base (a replay, railmon before it) left as recorded" in fixed.stderr, \
        fixed.stderr
    print(f"replay: {n} frames, --corrected-time leaves them as recorded and says so")


def record_and_check(T):
    with open(f"{T}/board.ini", "w") as f:
        f.write(f"[board]\nvehicle = RUN-TIMES\nbatch_ms = 100\n[storage]\nsync_window_ms = 50\n"
                f"[can vehicle]\ndriver = trace\nfile = {SRC}/cli/demo/train.log\n"
                f"dbc = {SRC}/cli/demo/train.dbc\nspeed = 20\n")
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(f"{T}/notify.sock")
    notify.settimeout(30)
    rng = random.Random(int.from_bytes(os.urandom(4), "little"))
    for _ in range(RUNS):
        p = subprocess.Popen([RAILMON, "run", "--board", f"{T}/board.ini", "--data", f"{T}/log"],
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ, NOTIFY_SOCKET=f"{T}/notify.sock"))
        try:
            while b"READY=1" not in notify.recv(4096):
                pass
            time.sleep(rng.uniform(0.3, 0.8))
            p.send_signal(signal.SIGTERM)
            _, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert p.returncode == 0, (p.returncode, err)
    for extra, label, back in (([], "export", 0), (["--corrected-time"], "export --corrected-time", 1000000)):
        out = subprocess.run([RAILMON, "export", "--data", f"{T}/log", "--format", "jsonl", "--order", "seq", *extra],
                             capture_output=True, text=True, check=True)
        n = check([json.loads(l) for l in out.stdout.splitlines()], label, back)
        print(f"{label}: {RUNS} runs of a trace paced at 20x, {n} frames, every record of a run between its "
              "START and its STOP")


if __name__ == "__main__":
    main()
