#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-vcan-gone.py RAILMON - runs INSIDE the CAN VM
(tests/vm/vm-run.sh): `railmon run` on vcan0 while the interface goes
away and comes back.

  1. frames 1..50 (the 8 data bytes are the number) are logged;
  2. `ip link set vcan0 down`: a "gone" line (Network is down), the live
     stat shows the bus gone/reopening, its RX thread uses at most 3% of a
     CPU; `ip link set vcan0 up`: a "back" line, frames 51..100 logged;
  3. `ip link del vcan0`: a "gone" line, reopen fails with "No such
     device", the same CPU bound; `ip link add ... type vcan` + up: back
     on the new interface (a new ifindex), frames 101..150 logged;
  4. the blind time after a return (issue 30): vcan0 down while frames
     on id 0x124 go out every millisecond (numbered; refused while down),
     then up: the first 0x124 frame logged minus the moment `ip link set
     up` ran (printed between the moments before and after the command;
     fails above 1 s, goal 200 ms);
  5. SIGTERM; `railmon export` holds frames 1..150 each exactly once and
     the events CAN_GONE, CAN_BACK three times for the bus.

Python, not a shell script: under TCG every process start costs, so the
frames go out on a CAN_RAW socket and the stat socket is read directly.
"""
import errno
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import start_peer, stop_peer, thread_cpu, wait_for  # noqa: E402

RAILMON = sys.argv[1]
SOCK = "railmon-vcan-gone"  # abstract: the 9p scratch dir cannot hold a socket


def health():
    """The vehicle bus's entry from the daemon's stat socket, {} if none yet."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\0" + SOCK)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    except OSError:
        return {}
    finally:
        s.close()
    for line in data.decode().splitlines():
        j = json.loads(line)
        if j.get("name") == "vehicle":
            return j
    return {}


def send(first, count):
    s = socket.socket(socket.AF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
    s.bind(("vcan0",))
    for k in range(first, first + count):
        s.send(struct.pack("=IB3x8s", 0x123, 8, k.to_bytes(8, "big")))
    s.close()


def stream(stop):
    """Frames on id 0x124 numbered 0, 1, ... every millisecond until stop;
    the ones refused (link down) are not counted."""
    s = socket.socket(socket.AF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
    s.bind(("vcan0",))
    k = 0
    while not stop.is_set():
        try:
            s.send(struct.pack("=IB3x8s", 0x124, 8, k.to_bytes(8, "big")))
            k += 1
        except OSError:
            pass
        time.sleep(0.001)
    s.close()


def ip(*args):
    subprocess.run(["ip", "link", *args], check=True)


def said(err, pattern):
    with open(err) as f:
        return re.search(pattern, f.read())


def said_all(err, pattern):
    with open(err) as f:
        return re.findall(pattern, f.read())


def cpu_bound(pid):
    pct = thread_cpu(pid, 3, ["rx-vehicle"])["rx-vehicle"]
    print(f"rx-vehicle: {pct:.1f}% of a CPU over 3 s while vcan0 is gone")
    assert pct is not None and pct <= 3.0, "rx-vehicle spins while vcan0 is gone"


def run(T, rm, err):
    global t_before, t_after
    wait_for("railmon run", lambda: "items" in health())
    send(1, 50)
    wait_for("frames 1..50", lambda: health().get("items", 0) >= 50)
    print("vcan0 up: frames 1..50 acquired")

    ip("set", "vcan0", "down")
    wait_for("the gone line (down)", lambda: said(err, r"bus 'vehicle' \(socketcan vcan0\) is gone: Network is down"))
    cpu_bound(rm.pid)
    wait_for("stat: gone", lambda: health().get("state") in ("gone", "reopening"))
    ip("set", "vcan0", "up")
    wait_for("the back line (up)", lambda: said(err, r"bus 'vehicle' \(socketcan vcan0\) is back after .*reopen #1"))
    wait_for("stat: up", lambda: health().get("state") == "up")
    send(51, 50)
    wait_for("frames 51..100", lambda: health().get("items", 0) >= 100)
    print("vcan0 down and up: said, reopened, frames 51..100 acquired")

    ip("del", "vcan0")
    # the kernel takes the link down, then unregisters it: the socket may
    # report either; the reopen attempts then find no such device
    wait_for("the gone line (deleted)", lambda: len(said_all(err, r"vcan0\) is gone: ")) == 2)
    wait_for("reopen failing: no such device", lambda: said(err, r"vcan0\) still gone after .*reopen: No such device"))
    cpu_bound(rm.pid)
    wait_for("stat: gone", lambda: health().get("state") in ("gone", "reopening"))
    ip("add", "dev", "vcan0", "type", "vcan")
    ip("set", "vcan0", "mtu", "72")
    ip("set", "vcan0", "up")
    wait_for("the back line (re-created)", lambda: said(err, r"vcan0\) is back after .*reopen #2"))
    wait_for("stat: 2 reopens", lambda: health().get("reopens", 0) >= 2)
    send(101, 50)
    wait_for("frames 101..150", lambda: health().get("items", 0) >= 150)
    print("vcan0 deleted and re-created: said, reopened, frames 101..150 acquired")

    ip("set", "vcan0", "down")
    wait_for("the gone line (down, busy bus)", lambda: len(said_all(err, r"vcan0\) is gone: ")) == 3)
    stop = threading.Event()
    th = threading.Thread(target=stream, args=(stop,))
    th.start()
    time.sleep(1)  # the scenario: an outage with a busy bus, not a wait for an event
    t_before = time.time_ns()
    ip("set", "vcan0", "up")
    t_after = time.time_ns()
    wait_for("the back line (busy bus)", lambda: said(err, r"vcan0\) is back after .*reopen #3"))
    wait_for("stat: 3 reopens", lambda: health().get("reopens", 0) >= 3)
    n0 = health().get("items", 0)
    wait_for("frames after the return", lambda: health().get("items", 0) >= n0 + 100)
    stop.set()
    th.join()

    rm.send_signal(signal.SIGTERM)
    assert rm.wait(60) == 0, "railmon run failed"
    with open(err) as f:
        print("".join(l for l in f if re.search(r"is (gone|back)|still gone", l)), end="")
    out = subprocess.run([RAILMON, "export", "--data", f"{T}/log", "--format", "jsonl"], capture_output=True,
                         text=True, check=True)
    recs = [json.loads(l) for l in out.stdout.splitlines()]
    got = sorted(int(r["data"], 16) for r in recs if r["kind"] == "can" and int(r["can_id"], 16) == 0x123)
    assert got == list(range(1, 151)), f"{len(got)} frames logged, not 1..150 each once"
    ev = [(r["event"], r["arg"]) for r in sorted(recs, key=lambda r: r["time_ns"])
          if r["kind"] == "event" and r["bus"] == 0]
    assert [e[0] for e in ev] == ["CAN_GONE", "CAN_BACK"] * 3, ev
    assert ev[0][1] == -errno.ENETDOWN and ev[2][1] in (-errno.ENETDOWN, -errno.ENODEV), ev
    print(f"log: frames 1..150 each once; events {ev}")
    first = min(r["time_ns"] for r in recs if r["kind"] == "can" and int(r["can_id"], 16) == 0x124
                and r["time_ns"] >= t_before)
    blind_ms = (first - t_after) / 1e6
    # the link came up while `ip` ran: the blind time is at most the first
    # figure; the second is negative when a frame was logged before `ip`
    # had even returned (a process start under TCG takes 100s of ms)
    print(f"socketcan blind time after vcan0 came up: first frame logged {(first - t_before) / 1e6:.1f} ms after "
          f"`ip link set vcan0 up` started, {blind_ms:.1f} ms after it returned (goal <= 200 ms)")
    assert blind_ms <= 1000, f"blind {blind_ms:.1f} ms after the return (fails above 1 s)"


def main():
    T = tempfile.mkdtemp()
    with open(f"{T}/board.ini", "w") as f:
        f.write(f"[board]\nvehicle = VCAN-GONE\nbatch_ms = 100\nhealth_interval_s = 1\nstat_socket = @{SOCK}\n"
                "[can vehicle]\ndriver = socketcan\ninterface = vcan0\n")
    err = f"{T}/run.err"
    rm = start_peer([RAILMON, "run", "--board", f"{T}/board.ini", "--data", f"{T}/log"],
                    stderr=open(err, "w"))
    try:
        run(T, rm, err)
    except BaseException:
        with open(err) as f:
            sys.stderr.write("--- railmon stderr:\n" + f.read())
        raise
    finally:
        stop_peer(rm, signal.SIGKILL)
    print("PASS")


if __name__ == "__main__":
    main()
