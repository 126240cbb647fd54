#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-monitor-vcan.py RAILMON - runs INSIDE the CAN VM
(tests/vm/vm-run.sh): `railmon monitor vcan0 --dbc FILE` on real SocketCAN.

  1. an interface that does not exist (vcan9): "vcan9: no such device", exit 1;
  2. monitor vcan0 on a terminal (a pty): its first frame is drawn once the
     socket is open; `cansend` a frame the DBC lacks and two Drive frames: the
     live screen shows the second frame's values with its label; SIGINT:
     the final table with them, exit 0;
  3. again, then `ip link set vcan0 down`: "the device is gone (Network is
     down)", the final table, exit 1.

The DBC, the frames and the pty are tests/cli/test-monitor.py's.
"""
import importlib.util
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
import railmon_test  # noqa: E402

spec = importlib.util.spec_from_file_location("test_monitor", HERE.parent / "cli" / "test-monitor.py")
tm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tm)

RAILMON = sys.argv[1]
FRAMES = [(100, 0, 0, 0, 0), (1517, 1, 60, 1, 12345)]  # the second's values are tm.SLCAN_WANT


def cansend(*frames):
    for f in frames:
        subprocess.run(["cansend", "vcan0", f], check=True)


def live(d, name):
    mon = tm.Live([RAILMON, "monitor", "vcan0", "--dbc", str(d / "test.dbc"), "--interval", "0.1"],
                  d / f"{name}.err")
    # the first frame is drawn after the socket is open: frames sent from now on are read
    railmon_test.wait_for("monitor's first frame", lambda: "monitor 0 frames" in mon.last_screen())
    # the frame the DBC lacks first: once the values show, every frame was read
    cansend("7FF#0102", *(f"123#{tm.drive_frame(*raw).hex().upper()}" for raw in FRAMES))
    s = mon.wait_values("the live screen with cansend's values", tm.SLCAN_WANT, "forward")
    assert re.search(r"monitor 3 frames, 2 decoded, 1 not in the DBC, 0 errors  vcan0", s), s.splitlines()[0]
    return mon


def main():
    d = Path(tempfile.mkdtemp(prefix="test-monitor-vcan."))
    (d / "test.dbc").write_text(tm.DBC)
    try:
        r = subprocess.run([RAILMON, "monitor", "vcan9", "--dbc", str(d / "test.dbc")], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and r.stderr == "railmon monitor: vcan9: no such device\n", (r.returncode, r.stderr)
        print("ok: vcan9: no such device, exit 1")

        mon = live(d, "sigint")
        os.kill(mon.proc.pid, signal.SIGINT)
        code, said, final = mon.end()
        assert code == 0 and said == "", (code, said)
        title, rows, _ = tm.parse_table(final)
        assert title.group(1, 2, 3, 4, 5) == ("3", "2", "1", "0", None), title.group(0)
        assert {k: rows[k][0] for k in tm.SLCAN_WANT} == tm.SLCAN_WANT, rows
        print("ok: vcan0: cansend's frames on the live screen; SIGINT: the final table, exit 0")

        mon = live(d, "down")
        subprocess.run(["ip", "link", "set", "vcan0", "down"], check=True)
        code, said, final = mon.end()
        assert code == 1 and said == "railmon monitor: vcan0: the device is gone (Network is down)\n", (code, said)
        title, rows, _ = tm.parse_table(final)
        assert title.group(5) == ", gone: Network is down" and title.group(6) == "vcan0", title.group(0)
        assert {k: rows[k][0] for k in tm.SLCAN_WANT} == tm.SLCAN_WANT, rows
        subprocess.run(["ip", "link", "set", "vcan0", "up"], check=True)
        print("ok: vcan0 down: the device is gone, the final table, exit 1")
    finally:
        railmon_test.stop_peers()


if __name__ == "__main__":
    main()
