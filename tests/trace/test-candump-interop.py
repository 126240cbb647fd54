#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-candump-interop.py CANDUMP-RT DBC-DUMP DEMO-DBC DEMO-LOG

1. python-can (Debian python3-can) writes random classic, extended,
   remote, CAN FD (BRS/ESI) and error frames, RX and TX, with
   can.io.CanutilsLogWriter; our parser must read every one as python-can
   meant it.
2. Round trip: read (C) -> write (C) -> read (C) gives identical frames,
   and python-can reads our output back to the messages it wrote.
3. The demo trace re-written by python-can decodes (DBC) to exactly the
   same samples as the original.
"""
import os
import random
import shlex
import subprocess
import sys
import tempfile

import can

FD_LENS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64]
ACQ_EXT, ACQ_FD, ACQ_BRS, ACQ_ESI, ACQ_RTR, ACQ_ERR, ACQ_TX = 1, 2, 4, 8, 16, 32, 64
CAN_ERR_BUSERROR = 0x80


def random_message(rng, t):
    kind = rng.random()
    ext = rng.random() < 0.4
    ident = rng.randrange(1 << 29) if ext else rng.randrange(1 << 11)
    rx = rng.random() < 0.8
    if kind < 0.05:
        return can.Message(timestamp=t, is_error_frame=True, channel="can1")
    if kind < 0.15:
        return can.Message(timestamp=t, arbitration_id=ident, is_extended_id=ext, is_remote_frame=True,
                           is_rx=rx, channel="can0")
    if kind < 0.45:
        n = rng.choice(FD_LENS)
        return can.Message(timestamp=t, arbitration_id=ident, is_extended_id=ext, is_fd=True,
                           bitrate_switch=rng.random() < 0.5, error_state_indicator=rng.random() < 0.3,
                           data=bytes(rng.randrange(256) for _ in range(n)), is_rx=rx, channel="can0")
    n = rng.randrange(9)
    return can.Message(timestamp=t, arbitration_id=ident, is_extended_id=ext,
                       data=bytes(rng.randrange(256) for _ in range(n)), is_rx=rx, channel=rng.choice(["can0", "vcan2"]))


def expected_fields(m):
    """What the C parser must produce for message m: (usec, iface, id, flags, len, hex)."""
    usec = int(round(m.timestamp * 1e6))
    if m.is_error_frame:
        return (usec, "can1", CAN_ERR_BUSERROR, ACQ_ERR, 0, "")
    flags = (ACQ_EXT if m.is_extended_id else 0) | (0 if m.is_rx else ACQ_TX)
    if m.is_remote_frame:
        return (usec, m.channel, m.arbitration_id, flags | ACQ_RTR, 0, "")
    if m.is_fd:
        flags |= ACQ_FD | (ACQ_BRS if m.bitrate_switch else 0) | (ACQ_ESI if m.error_state_indicator else 0)
    return (usec, m.channel, m.arbitration_id, flags, len(m.data), bytes(m.data).hex())


def run(cmd):
    # a cross build's tools run under meson's exe_wrapper (qemu-user)
    wrap = shlex.split(os.environ.get('MESON_EXE_WRAPPER', ''))
    out = subprocess.run(wrap + cmd, capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        sys.exit("%s failed: %s" % (cmd[0], out.stderr))
    return out.stdout


def parse_dump(text):
    rows = []
    for line in text.splitlines():
        t_ns, iface, ident, flags, length, data = (line.split(" ") + [""])[:6]
        if int(t_ns) % 1000:
            sys.exit("sub-microsecond stamp from a candump line: %s" % line)
        rows.append((int(t_ns) // 1000, iface, int(ident, 16), int(flags, 16), int(length), data))
    return rows


def same_message(a, b):
    if a.is_error_frame or b.is_error_frame:
        return a.is_error_frame == b.is_error_frame
    return (abs(a.timestamp - b.timestamp) < 1e-6 and a.arbitration_id == b.arbitration_id
            and a.is_extended_id == b.is_extended_id and a.is_remote_frame == b.is_remote_frame
            and a.is_fd == b.is_fd and a.bitrate_switch == b.bitrate_switch
            and a.error_state_indicator == b.error_state_indicator and a.is_rx == b.is_rx
            and (a.is_remote_frame or bytes(a.data) == bytes(b.data)) and a.channel == b.channel)


def main():
    rt, dbc_dump, demo_dbc, demo_log = sys.argv[1:5]
    rng = random.Random(11)
    tmp = tempfile.mkdtemp(prefix="test-candump-interop-")
    pc_log, c_log, c_log2 = (os.path.join(tmp, n) for n in ("pycan.log", "c.log", "c2.log"))
    demo_pc = os.path.join(tmp, "demo-pycan.log")
    try:
        msgs = [random_message(rng, 1764748800.0 + i * 0.000731) for i in range(3000)]
        writer = can.io.CanutilsLogWriter(pc_log)
        for m in msgs:
            writer.on_message_received(m)
        writer.stop()

        rows = parse_dump(run([rt, pc_log, c_log]))
        want = [expected_fields(m) for m in msgs]
        bad = [(i, w, g) for i, (w, g) in enumerate(zip(want, rows)) if w != g]
        if len(rows) != len(msgs) or bad:
            sys.exit("python-can frames read wrong (%d rows): %s" % (len(rows), bad[:5]))

        rows2 = parse_dump(run([rt, c_log, c_log2]))
        if rows2 != rows or open(c_log).read() != open(c_log2).read():
            sys.exit("read-write-read is not the identity")

        back = list(can.io.CanutilsLogReader(c_log))
        wrong = [i for i, (a, b) in enumerate(zip(msgs, back)) if not same_message(a, b)]
        if len(back) != len(msgs) or wrong:
            sys.exit("python-can reads our output differently at %s" % wrong[:5])

        writer = can.io.CanutilsLogWriter(demo_pc)
        for m in can.io.CanutilsLogReader(demo_log):
            writer.on_message_received(m)
        writer.stop()
        a, b = run([dbc_dump, demo_dbc, demo_log]), run([dbc_dump, demo_dbc, demo_pc])
        if a != b or len(a.splitlines()) < 10000:
            sys.exit("demo trace via python-can decodes differently (%d vs %d samples)"
                     % (len(a.splitlines()), len(b.splitlines())))
        print("%d python-can frames read, round trip identical, %d demo samples identical"
              % (len(msgs), len(a.splitlines())))
    finally:
        for f in (pc_log, c_log, c_log2, demo_pc):
            if os.path.exists(f):
                os.unlink(f)
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
