#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-trace-interop.py TRACE-DUMP

python-can (Debian python3-can) writes the same random frames as Vector
ASC, Vector BLF and PEAK TRC 2.1; railmon's trace driver (through
trace-dump) must read each file frame by frame as python-can meant it:
  - against the messages written: id, extended, remote, FD with BRS/ESI,
    error, direction, length, bytes, and the time since the first frame
    to the microsecond;
  - against python-can's own reader of the same file: the same, with the
    absolute timestamps to the microsecond (ASC and BLF keep the start
    date; python-can's TRC reader ignores $STARTTIME, so TRC compares
    offsets);
  - channel mapping: with `channel = N` only channel N's frames (python-can
    channel N-1, as it numbers from 0), with 0 every frame;
  - python-can's TRC 1.0 (whole milliseconds, no version line) as its reader
    reads it.
Run with TZ=UTC: ASC and BLF dates are local time in both readers.
"""
import os
import random
import subprocess
import sys
import tempfile

import can

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from can_frames import random_message  # noqa: E402

ACQ_EXT, ACQ_FD, ACQ_BRS, ACQ_ESI, ACQ_RTR, ACQ_ERR, ACQ_TX = 1, 2, 4, 8, 16, 32, 64
FRAMES = 3000


def fields(m):
    """(id, flags, len, hex) railmon gives for python-can message m."""
    if m.is_error_frame:
        return (0x80, ACQ_ERR, 0, "")  # CAN_ERR_BUSERROR: the class traces do not say
    flags = (ACQ_EXT if m.is_extended_id else 0) | (0 if m.is_rx else ACQ_TX)
    if m.is_remote_frame:
        return (m.arbitration_id, flags | ACQ_RTR, m.dlc, "")
    if m.is_fd:
        flags |= ACQ_FD | (ACQ_BRS if m.bitrate_switch else 0) | (ACQ_ESI if m.error_state_indicator else 0)
    return (m.arbitration_id, flags, len(m.data), bytes(m.data).hex())


def usec(t):
    return int(round(t * 1e6))


def dump(tool, path, channel=0):
    p = subprocess.run([tool, path, str(channel)], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f"FAIL trace-dump {path}: exit {p.returncode}: {p.stderr.strip()}")
    frames, fmt, bad = [], None, None
    for line in p.stdout.splitlines():
        f = line.split(" ", 1)
        if f[0] == "F":
            t, ident, flags, n, *data = f[1].split(" ")
            frames.append((int(t) // 1000 + (1 if int(t) % 1000 >= 500 else 0),
                           (int(ident, 16), int(flags, 16), int(n), data[0] if data else "")))
        elif f[0] == "format":
            fmt = f[1]
        elif f[0] == "bad":
            bad = f[1]
        elif f[0] == "E":
            sys.exit(f"FAIL {path}: event {line} (bad line?) in {p.stdout[-400:]}")
    return frames, fmt, bad


def check_same(name, ours, theirs, absolute):
    """ours: [(usec, fields)], theirs: python-can Messages."""
    if len(ours) != len(theirs):
        sys.exit(f"FAIL {name}: {len(ours)} frames read, {len(theirs)} written")
    t0o, t0t = ours[0][0], usec(theirs[0].timestamp)
    for i, (o, m) in enumerate(zip(ours, theirs)):
        want = fields(m)
        if o[1] != want:
            sys.exit(f"FAIL {name} frame {i}: read {o[1]}, expected {want} ({m})")
        if o[0] - t0o != usec(m.timestamp) - t0t:
            sys.exit(f"FAIL {name} frame {i}: at +{o[0] - t0o} us, expected +{usec(m.timestamp) - t0t} us")
        if absolute and o[0] != usec(m.timestamp):
            sys.exit(f"FAIL {name} frame {i}: at {o[0]} us, python-can reads {usec(m.timestamp)} us")


def write(writer, path, msgs):
    w = writer(path)
    for m in msgs:
        w.on_message_received(m)
    w.stop()


def check_format(tool, tmp, ext, writer, reader, fmt_name, msgs, absolute):
    path = os.path.join(tmp, "t." + ext)
    write(writer, path, msgs)
    ours, fmt, bad = dump(tool, path)
    if fmt != fmt_name or bad:
        sys.exit(f"FAIL {ext}: detected as {fmt}, bad: {bad}")
    check_same(ext + " vs written", ours, msgs, False)
    check_same(ext + " vs python-can's reader", ours, list(reader(path)), absolute)
    for ch in (1, 2, 3):
        sub, _, _ = dump(tool, path, ch)
        # python-can's ASC writer puts every error frame on its default channel 1
        want = [m for m in msgs
                if (m.channel if not (ext == "asc" and m.is_error_frame) else 0) == ch - 1]
        check_same(f"{ext} channel {ch}", sub, want, False)
    print(f"ok {ext}: {len(ours)} frames equal, channels 1-3 split as written")


def check_trc_1_0(tool, tmp, msgs):
    """python-can's TRC 1.0 (no version line, whole milliseconds, one
    channel): read as python-can's reader reads it, times included."""
    from can.io.trc import TRCFileVersion
    path = os.path.join(tmp, "v10.trc")
    w = can.TRCWriter(path)
    w.file_version = TRCFileVersion.V1_0
    for m in msgs:
        w.on_message_received(m)
    w.stop()
    ours, fmt, bad = dump(tool, path)
    theirs = list(can.TRCReader(path))
    if fmt != "PEAK TRC" or bad or len(ours) != len(theirs):
        sys.exit(f"FAIL trc 1.0: {fmt}, bad {bad}, {len(ours)} of {len(theirs)} frames")
    for i, (o, m) in enumerate(zip(ours, theirs)):
        want = (m.arbitration_id, ACQ_EXT if m.is_extended_id else 0, len(m.data), bytes(m.data).hex())
        if o != (usec(m.timestamp), want):
            sys.exit(f"FAIL trc 1.0 frame {i}: {o}, python-can reads {(usec(m.timestamp), want)}")
    print(f"ok trc 1.0: {len(ours)} frames as python-can reads them")


def main():
    tool = sys.argv[1]
    rng = random.Random(1313)
    t = 1700000000.0 + rng.random()
    msgs, classic = [], []
    for _ in range(FRAMES):
        t += rng.randrange(1, 20000) / 1e6
        msgs.append(random_message(rng, round(t, 6), 3))
        classic.append(random_message(rng, round(t, 6), 3, classic_only=True))
    with tempfile.TemporaryDirectory() as tmp:
        check_format(tool, tmp, "asc", can.ASCWriter, lambda p: can.ASCReader(p, relative_timestamp=False), "Vector ASC", msgs, True)
        check_format(tool, tmp, "blf", can.BLFWriter, can.BLFReader, "Vector BLF", msgs, True)
        # python-can writes TRC 2.1 for classic data frames only
        check_format(tool, tmp, "trc", can.TRCWriter, can.TRCReader, "PEAK TRC", classic, False)
        check_trc_1_0(tool, tmp, classic)
    print("trace-interop: ok")


if __name__ == "__main__":
    main()
