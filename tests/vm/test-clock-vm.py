#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-clock-vm.py RAILMON - runs INSIDE the CAN VM (tests/vm/vm-run.sh),
where stepping the clock harms nobody: `railmon run` on vcan0 while
CLOCK_REALTIME is stepped an hour forward (`date -s`, a wrong setting) and
back to the truth (clock_settime to the monotonic clock plus the offset
read at the start, as a time daemon's step would).

A sender thread puts a frame on vcan0 every 2 ms throughout, its 8 data
bytes its number k; it notes CLOCK_MONOTONIC just before and after each
send: the truth for frame k lies between those two plus the offset the
clocks had at the start (a window, as the thread may be held up between
a reading and the send by the interpreter's lock).
  1. two EVENT_CLOCK_STEP with the sizes the steps had (+1 h less date's
     own latency, and back);
  2. the kernel's sync state in `stat --json` (clock_unsynced,
     clock_max_error_us, clock_est_error_us, clock_status) and the
     CLOCK_UNSYNCED event (nothing disciplines the VM's clock);
  3. `export`: the frames sent while the clock was wrong are an hour off;
  4. `export --corrected-time`: every frame within a few ms of its truth,
     in send order, rising;
  5. the steps are said on stderr (the journal), as faults are.
"""
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import start_peer, stop_peer, wait_for  # noqa: E402

RAILMON = sys.argv[1]
SOCK = "railmon-clock-vm"  # abstract: the 9p scratch dir cannot hold a socket
HOUR = 3600 * 10**9
MS = 10**6


def offset():
    """CLOCK_REALTIME - CLOCK_MONOTONIC, read between two monotonic reads."""
    m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    r = time.clock_gettime_ns(time.CLOCK_REALTIME)
    m1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return r - (m0 + m1) // 2


def stat_lines():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + SOCK)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        return []
    finally:
        s.close()
    return [json.loads(l) for l in data.decode().splitlines()]


def entry(name):
    return next((j for j in stat_lines() if j.get("name") == name), {})


class Sender(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.sent = 0
        self.window = []  # (monotonic before, after) of frame k's send

    def run(self):
        s = socket.socket(socket.AF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
        s.bind(("vcan0",))
        while not self.stop.is_set():
            m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            s.send(struct.pack("=IB3x8s", 0x321, 8, self.sent.to_bytes(8, "big")))
            self.window.append((m0, time.clock_gettime_ns(time.CLOCK_MONOTONIC)))
            self.sent += 1
            time.sleep(0.002)
        s.close()


def export(T, *extra):
    out = subprocess.run([RAILMON, "export", "--data", f"{T}/log", "--format", "jsonl", *extra],
                         capture_output=True, text=True, check=True)
    return [json.loads(l) for l in out.stdout.splitlines()], out.stderr


def steps(T, off_true):
    """Forward with date -s (its latency measured), back with clock_settime."""
    m0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    target = time.clock_gettime_ns(time.CLOCK_REALTIME) + HOUR
    subprocess.run(["date", "-s", "@%d.%09d" % divmod(target, 10**9)], check=True, stdout=subprocess.DEVNULL)
    date_ns = time.clock_gettime_ns(time.CLOCK_MONOTONIC) - m0
    print(f"date -s: +1 h, the command took {date_ns / MS:.1f} ms")
    wait_for("the forward step in stat", lambda: entry("clock").get("items", 0) >= 1)
    time.sleep(1)
    time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_MONOTONIC) + off_true)
    off_final = offset()
    # the call's own latency under TCG (ms) is a setting error like date's
    print(f"clock_settime: back to the start's offset, {(off_final - off_true) / 1e3:.0f} us from it")
    wait_for("the backward step in stat", lambda: entry("clock").get("items", 0) >= 2)
    return date_ns, off_final


def check_steps(recs, date_ns, settime_err):
    # in seq order: by recorded time the step back comes an hour before the step
    ev = sorted((r for r in recs if r["kind"] == "event" and r["event"] == "CLOCK_STEP"), key=lambda r: r["seq"])
    assert len(ev) == 2, f"{len(ev)} CLOCK_STEP events, not 2: {ev}"
    fwd, back = int(ev[0]["arg"]), int(ev[1]["arg"])
    # date's own latency between our reading and its settime shortens the step
    assert HOUR - date_ns - 5 * MS <= fwd <= HOUR + 5 * MS, f"forward step {fwd} ns"
    # back from start + fwd to start + the settime's own error
    assert abs(back - (settime_err - fwd)) < 5 * MS, f"backward step {back} ns against forward {fwd}"
    print(f"CLOCK_STEP events: {fwd / 1e9:+.6f} s (window {ev[0]['detail']} ms), "
          f"{back / 1e9:+.6f} s (window {ev[1]['detail']} ms)")
    assert any(r["kind"] == "event" and r["event"] == "CLOCK_UNSYNCED" for r in recs), "no CLOCK_UNSYNCED event"


def check_sync():
    c = entry("clock")
    for k in ("clock_unsynced", "clock_max_error_us", "clock_est_error_us", "clock_status"):
        assert k in c, f"stat --json clock entry lacks {k}: {c}"
    assert c["clock_unsynced"] is True and c["state"] == "unsynced", c
    print(f"stat: clock {c['state']}, max error {c['clock_max_error_us']} us, "
          f"est. {c['clock_est_error_us']} us, status {c['clock_status']:#x}, {c['items']} steps")


def frames(recs):
    """(k, logged time ns) per frame of the sender, in send order."""
    f = [(int(r["data"], 16), r["time_ns"]) for r in recs if r["kind"] == "can" and r["can_id"] == "321"]
    return sorted(f)


def miss(t, window, off):
    """How far time t lies outside the send window on the true clock."""
    m = t - off
    return max(0, window[0] - m, m - window[1])


def check_export(T, off_true, snd):
    """off_true: the clock's offset after the last step, the truth the
    correction puts every record on."""
    raw, _ = export(T)
    fixed, err = export(T, "--corrected-time")
    assert "corrected time: 1 run, 2 clock steps" in err, err
    fr, fc = frames(raw), frames(fixed)
    assert [k for k, _ in fc] == list(range(snd.sent)), f"{len(fc)} frames logged of {snd.sent} sent"
    wrong = sum(1 for k, t in fr if t - (snd.window[k][0] + off_true) > HOUR // 2)
    assert wrong > 100, f"only {wrong} frames an hour off in the plain export: was the clock stepped?"
    err_c = [miss(t, snd.window[k], off_true) for k, t in fc]
    worst = max(err_c)
    assert worst < 5 * MS, f"corrected time {worst / MS:.3f} ms outside its send window"
    assert all(b[1] > a[1] for a, b in zip(fc, fc[1:])), "corrected times do not rise in send order"
    late = [t - off_true - snd.window[k][1] for k, t in fc]
    print(f"export: {wrong} of {snd.sent} frames an hour off as recorded; --corrected-time: every frame within "
          f"{worst / MS:.3f} ms of its send window on the true clock (stamp - send end: median "
          f"{statistics.median(late) / 1e3:.0f} us), rising")
    return raw


def run(T, rm, err):
    sys.setswitchinterval(0.0005)  # the sender's readings closer to its sends
    wait_for("railmon run", lambda: "items" in entry("vehicle"))
    off_true = offset()
    snd = Sender()
    snd.start()
    try:
        time.sleep(1)
        date_ns, off_final = steps(T, off_true)
        time.sleep(1)
        check_sync()
    finally:
        snd.stop.set()
        snd.join()
    wait_for("every frame acquired", lambda: entry("vehicle").get("items", 0) >= snd.sent)
    rm.send_signal(signal.SIGTERM)
    assert rm.wait(60) == 0, "railmon run failed"
    with open(err) as f:
        said = [l.rstrip() for l in f if "the system clock" in l]
    # the first at once, the second in the summary at the stop
    assert len(said) == 2 and "CLOCK_REALTIME stepped by +359" in said[0] and "1 more clock steps" in said[1], said
    print("stderr: " + "\nstderr: ".join(said))
    raw = check_export(T, off_final, snd)
    check_steps(raw, date_ns, off_final - off_true)


def main():
    T = tempfile.mkdtemp()
    with open(f"{T}/board.ini", "w") as f:
        f.write(f"[board]\nvehicle = CLOCK-VM\nbatch_ms = 100\nhealth_interval_s = 1\nstat_socket = @{SOCK}\n"
                "[can vehicle]\ndriver = socketcan\ninterface = vcan0\n")
    err = f"{T}/run.err"
    off0 = offset()
    rm = start_peer([RAILMON, "run", "--board", f"{T}/board.ini", "--data", f"{T}/log"], stderr=open(err, "w"))
    try:
        run(T, rm, err)
    except BaseException:
        with open(err) as f:
            sys.stderr.write("--- railmon stderr:\n" + f.read())
        raise
    finally:
        stop_peer(rm, signal.SIGKILL)
        # the VM's clock back where it was, whatever failed (it dies with the VM anyway)
        if abs(offset() - off0) > MS:
            time.clock_settime_ns(time.CLOCK_REALTIME, time.clock_gettime_ns(time.CLOCK_MONOTONIC) + off0)
    print("PASS")


if __name__ == "__main__":
    main()
