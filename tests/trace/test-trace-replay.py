#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-trace-replay.py RAILMON

`railmon replay` of traces python-can (Debian python3-can) wrote, and
`railmon export --format asc|blf` read back by python-can:
1. Random frames (classic, extended, remote, FD with BRS/ESI, error, Rx/Tx)
   on channels 1 and 2, written as Vector ASC, Vector BLF and PEAK TRC 2.1,
   replayed into a board with two trace buses: bus 1 stores channel 1's
   frames and bus 2 channel 2's (the default), each frame as python-can's
   own reader reads the file, timestamps to the microsecond (TRC: offsets,
   as python-can's TRC reader ignores $STARTTIME).  With `channel = 2` /
   `channel = 1` in the board the buses swap.
2. The log exported as ASC and BLF: python-can reads every frame back,
   equal to the log's frames, to the microsecond, channel = bus + 1; a
   replay of each export gives the same frames on the same buses; BLF
   written to a pipe (no header rewrite) reads back too.
3. A file in no format is refused (replay: exit 2; a trace bus of run:
   exit 1) naming the formats tried; a
   damaged ASC line, a BLF container with bad zlib data and a cut BLF file
   are replayed around, and the replay says where (file:line, offset).
Run with TZ=UTC: ASC and BLF dates are local time.
"""
import csv
import os
import re
import random
import subprocess
import sys
import tempfile

import can

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from can_frames import random_message, trace_board  # noqa: E402

RAILMON = sys.argv[1]


def fail(msg):
    sys.exit("FAIL: " + msg)


def key(m, t0=0.0):
    """A frame as candump export gives it (railmon's candump carries no
    direction when python-can's reader says rx, as candump -x does)."""
    t_ns = getattr(m, "time_ns", None)
    us = (t_ns + 500) // 1000 - int(round(t0 * 1e6)) if t_ns is not None else int(round(m.timestamp * 1e6)) - int(round(t0 * 1e6))
    if m.is_error_frame:
        return (us, "ERR")
    if m.is_remote_frame:
        return (us, m.arbitration_id, m.is_extended_id, "R", m.dlc, m.is_rx)
    return (us, m.arbitration_id, m.is_extended_id, m.is_fd, m.is_fd and m.bitrate_switch,
            m.is_fd and m.error_state_indicator, bytes(m.data).hex(), m.is_rx)


def run(args, expect_rc=0):
    p = subprocess.run([RAILMON] + args, capture_output=True, text=True, check=False)
    if p.returncode != expect_rc:
        fail(f"railmon {' '.join(args)}: exit {p.returncode}, wanted {expect_rc}: {p.stderr.strip()}")
    return p


class LogFrame(can.Message):
    """A frame of the log, with its exact time_ns beside the float."""


def exported(data, tmp):
    """The log's CAN frames per bus ("can0", "can1"), from the CSV export
    (time_ns exact: candump's microseconds are cut, not rounded)."""
    path = os.path.join(tmp, "export.csv")
    run(["export", "--data", data, "--format", "csv", "--kind", "can", "-o", path])
    per_bus = {}
    with open(path, encoding="ascii") as f:
        for row in csv.DictReader(f):
            names = ("EXT", "FD", "BRS", "ESI", "RTR", "ERR", "TX")  # export's schema: bit n named
            flags = sum(1 << names.index(f) for f in row["flags"].split("|") if f)
            data_hex = row["data"]
            m = LogFrame(timestamp=int(row["time_ns"]) / 1e9, arbitration_id=int(row["can_id"], 16),
                            is_extended_id=bool(flags & 1), is_fd=bool(flags & 2), bitrate_switch=bool(flags & 4),
                            error_state_indicator=bool(flags & 8), is_remote_frame=bool(flags & 16),
                            is_error_frame=bool(flags & 32), is_rx=not flags & 64,
                            data=b"" if flags & 16 else bytes.fromhex(data_hex), channel="can" + row["bus"])
            if flags & 16:
                m.dlc = len(data_hex) // 2
            m.time_ns = int(row["time_ns"])
            per_bus.setdefault(m.channel, []).append(m)
    for v in per_bus.values():
        v.sort(key=lambda m: m.timestamp)
    return per_bus


def replay(tmp, trace, name, ch_a="", ch_b="", expect_rc=0):
    board = os.path.join(tmp, name + ".ini")
    with open(board, "w", encoding="ascii") as f:
        f.write(trace_board("TRACE-TEST", [("a", ch_a), ("b", ch_b)]))
    data = os.path.join(tmp, name + ".data")
    p = run(["replay", trace, "--board", board, "--data", data], expect_rc)
    return data, p.stderr


def compare(what, got, want, relative):
    g0 = got[0].timestamp if relative and got else 0.0
    w0 = want[0].timestamp if relative and want else 0.0
    g = [key(m, g0) for m in got]
    w = [key(m, w0) for m in want]
    if len(g) != len(w):
        fail(f"{what}: {len(g)} frames, expected {len(w)}")
    for i, (a, b) in enumerate(zip(g, w)):
        if a != b:
            fail(f"{what} frame {i}: {a}, expected {b}")


def check_replay(tmp, ext, writer, reader, msgs, relative):
    trace = os.path.join(tmp, "t." + ext)
    w = writer(trace)
    for m in msgs:
        w.on_message_received(m)
    w.stop()
    theirs = list(reader(trace))
    for channels, name in ((("", ""), "default"), (("channel = 2", "channel = 1"), "swapped")):
        data, err = replay(tmp, trace, ext + "-" + name, *channels)
        per_bus = exported(data, tmp)
        for bus, ch in ((0, 1), (1, 2)) if name == "default" else ((0, 2), (1, 1)):
            # python-can's ASC and BLF readers number channels from 0, its TRC reader from 1
            first = 1 if ext == "trc" else 0
            want = [m for m in theirs if (m.channel if m.channel is not None else first) == ch - 1 + first]
            compare(f"{ext} replay ({name}) can{bus} = channel {ch}", per_bus.get(f"can{bus}", []), want, relative)
    print(f"ok replay {ext}: {len(theirs)} frames, channel 1 -> bus a, 2 -> bus b, and swapped by channel =")
    return data


def check_export(tmp, data):
    per_bus = exported(data, tmp)
    frames = sorted((m for v in per_bus.values() for m in v), key=lambda m: (m.timestamp, m.channel))
    for ext, reader in (("asc", lambda p: can.ASCReader(p, relative_timestamp=False)), ("blf", can.BLFReader)):
        path = os.path.join(tmp, "export." + ext)
        run(["export", "--data", data, "--format", ext, "-o", path])
        back = list(reader(path))
        # export writes in log order (per Batch, bus by bus): compare as sets ordered alike
        got = sorted(back, key=lambda m: (round(m.timestamp, 6), m.channel))
        for m in got:
            if not m.is_error_frame and m.channel is None:
                fail(f"export {ext}: frame without channel: {m}")
        want_ch = [("can%d" % m.channel) if m.channel is not None else "?" for m in got]
        compare(f"export {ext} read by python-can", got, frames, False)
        exp_ch = [m.channel for m in frames]
        bad = [i for i, (a, b) in enumerate(zip(want_ch, exp_ch)) if a != b and not frames[i].is_error_frame]
        if bad:
            fail(f"export {ext}: frame {bad[0]} on {want_ch[bad[0]]}, stored on {exp_ch[bad[0]]}")
        print(f"ok export {ext}: python-can reads {len(back)} frames back, to the microsecond, channel = bus + 1")
        # and railmon's own replay of it gives the same log, bus by bus
        again = exported(replay(tmp, path, "again-" + ext)[0], tmp)
        for bus in ("can0", "can1"):
            compare(f"export {ext} replayed, {bus}", again.get(bus, []), per_bus.get(bus, []), False)
        print(f"ok export {ext} replayed: the same frames on the same buses")
    # BLF through a pipe: no seek back, the header keeps zero sizes
    p = subprocess.run([RAILMON, "export", "--data", data, "--format", "blf"], capture_output=True, check=False)
    piped = os.path.join(tmp, "piped.blf")
    with open(piped, "wb") as f:
        f.write(p.stdout)
    if p.returncode != 0 or len(list(can.BLFReader(piped))) != len(frames):
        fail(f"export blf to a pipe: exit {p.returncode}, {p.stderr}")
    print(f"ok export blf to a pipe: python-can reads {len(frames)} frames")


def check_refusals(tmp, msgs):
    junk = os.path.join(tmp, "junk.txt")
    with open(junk, "w", encoding="ascii") as f:
        f.write("this is\nno trace at all\n")
    board = os.path.join(tmp, "default.ini")
    p = run(["replay", junk, "--board", os.path.join(tmp, "asc-default.ini"), "--data", os.path.join(tmp, "j")], 2)
    if "not a trace in any format" not in p.stderr or "Vector ASC, Vector BLF, PEAK TRC" not in p.stderr:
        fail("junk: " + p.stderr)
    print("ok refusal: " + p.stderr.strip())
    # the same file as a trace bus of `railmon run`
    board = os.path.join(tmp, "junk.ini")
    with open(board, "w", encoding="ascii") as f:
        f.write(trace_board("TRACE-TEST", [("a", ""), ("b", "")], trace=junk))
    p = run(["run", "--board", board, "--data", os.path.join(tmp, "jr"), "--duration", "1"], 1)
    if f"bus 'a': {junk}: not a trace in any format railmon reads (tried candump log" not in p.stderr:
        fail("run with a junk trace: " + p.stderr)
    print("ok refusal: " + p.stderr.strip())
    asc = os.path.join(tmp, "t.asc")
    lines = open(asc, encoding="ascii").read().split("\n")
    lines[9] = "garbage in line 10"
    with open(asc, "w", encoding="ascii") as f:
        f.write("\n".join(lines))
    # damaged parts: the rest replayed, and exit 1 as decode's and export's
    _, err = replay(tmp, asc, "bad-asc", expect_rc=1)
    if f"1 damaged part skipped, the first: {asc}:10: malformed Vector ASC line" not in err or \
            f"1 damaged part of {asc} skipped (the first named above); the rest replayed" not in err:
        fail("damaged ASC: " + err)
    blf = os.path.join(tmp, "t.blf")
    w = can.BLFWriter(blf, max_container_size=4096)
    for m in msgs:
        w.on_message_received(m)
    w.stop()
    raw = bytearray(open(blf, "rb").read())
    raw[144 + 32 + 20] ^= 0xff  # inside the first container's zlib data
    raw[144 + 32 + 21] ^= 0x5a
    with open(blf, "wb") as f:
        f.write(raw[:len(raw) - 100])  # and cut inside the last container
    _, err = replay(tmp, blf, "bad-blf", expect_rc=1)
    if not re.search(r": Vector BLF, 1[34][0-9][0-9] frames: channel 1 [0-9]+, channel 2 [0-9]+; 2 damaged parts skipped, the first: " + re.escape(blf) +
                     ": offset 144: bad zlib data in container", err):
        fail("damaged BLF: " + err)
    print("ok damaged input: " + " | ".join(line for line in err.splitlines() if "damaged" in line))


def main():
    rng = random.Random(1313)
    t = 1700000000.0 + rng.random()
    msgs, classic = [], []
    for _ in range(1500):
        t += rng.randrange(1, 20000) / 1e6
        msgs.append(random_message(rng, round(t, 6), 2))
        classic.append(random_message(rng, round(t, 6), 2, classic_only=True))
    with tempfile.TemporaryDirectory() as tmp:
        data = check_replay(tmp, "asc", can.ASCWriter, lambda p: can.ASCReader(p, relative_timestamp=False),
                            msgs, False)
        check_replay(tmp, "blf", can.BLFWriter, can.BLFReader, msgs, False)
        check_replay(tmp, "trc", can.TRCWriter, can.TRCReader, classic, True)
        check_export(tmp, data)
        check_refusals(tmp, msgs)
    print("trace-replay: ok")


if __name__ == "__main__":
    main()
