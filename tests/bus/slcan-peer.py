#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""slcan-peer.py PTY EXPECTED [INIT]: plays a USB-CAN adapter on one end
of a socat pty pair.

Prints "OPEN" when the pty is open, answers the driver's init commands
(BELL for "C" on a closed channel, CR for the others) and checks them
against INIT (default "C,S6,L": listen-only, never "O").  Then prints
"SENDING <frames> <garbage>", writes the frames interleaved with
malformed lines, bare CRs and binary junk, writes the expected frames
("id flags len hex" per line) to EXPECTED, and waits for the driver's
closing "C".  Exits non-zero if anything the driver sent was wrong.

slcan-peer.py --serial PTY FIRST COUNT [INIT]: an adapter that is plugged
in, answers the init commands, sends COUNT standard frames with id 0x123
whose 8 data bytes are the numbers FIRST..FIRST+COUNT-1 (big-endian), prints
"SENT <count>", then stays plugged in until the driver's closing "C" or the
pty goes away (its socat was killed: an unplug).  The numbers let a test
tell which frames were logged across unplugs and replugs.

slcan-peer.py --stream PTY FIRST: the same adapter on a busy bus: after
the init commands it sends frames numbered FIRST, FIRST+1, ... without end
(bursts of 8, about one burst per millisecond), until the driver's
closing "C" or the pty goes away.  Prints "STREAMING" before the first.

slcan-peer.py --stream PTY FIRST INIT LATE_MS: the same, from an adapter
that is not ready when its path appears (a USB adapter whose firmware is
still booting): LATE_MS after "OPEN" it throws away whatever the driver
sent so far, unanswered, prints "READY <CLOCK_REALTIME ns>" and only then
answers the init commands.
"""
import os
import random
import select
import sys
import termios
import time
import tty

FD_LENS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64]
EXT, FD, BRS, RTR = 1, 2, 4, 16

GARBAGE = [
    b"hello", b"t12", b"t1239AABBCCDDEEFF001122", b"t1232AA", b"t1232AABBCC",
    b"T2000000010", b"tGGG0", b"r1239", b"t1230\x00junk", b"x" * 300, b"\x00\xff\x10junk",
    b"d1239" + b"00" * 10, b"t8000", b"T1234567", b"t1232AABBZZZZ", b"Z", b"F",
]


def read_command(fd, buf, deadline):
    while b"\r" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None, buf
        chunk = os.read(fd, 256)
        if not chunk:
            return None, buf
        buf += chunk
    cmd, _, buf = buf.partition(b"\r")
    return cmd.decode("ascii", "replace"), buf


def frame(rng):
    kind = rng.choice("tTrRdDbB")
    ext = kind in "TRDB"
    ident = rng.randrange(1 << 29) if ext else rng.randrange(1 << 11)
    flags = (EXT if ext else 0) | (RTR if kind in "rR" else 0)
    if kind in "dDbB":
        flags |= FD | (BRS if kind in "bB" else 0)
        dlc = rng.randrange(16)
    else:
        dlc = rng.randrange(9)
    length = FD_LENS[dlc]
    data = b"" if kind in "rR" else bytes(rng.randrange(256) for _ in range(length))
    line = "%s%s%X%s" % (kind, ("%08X" if ext else "%03X") % ident, dlc, data.hex().upper())
    if rng.random() < 0.3:
        line += "%04X" % rng.randrange(60000)  # Z1 adapter timestamp
    if rng.random() < 0.3:
        line = line.lower()  # hex digits in either case; the kind letter stays
        line = kind + line[1:]
    return line.encode(), "%x %x %d %s" % (ident, flags, length, data.hex())


def answer_init(fd, want_init):
    """Answer the driver's init commands; returns what is left unread."""
    buf, cmds = b"", []
    deadline = time.monotonic() + 10
    while not cmds or cmds[-1] not in ("L", "O"):
        cmd, buf = read_command(fd, buf, deadline)
        if cmd is None:
            sys.exit("peer: init incomplete, got %s" % cmds)
        cmds.append(cmd)
        os.write(fd, b"\a" if cmd == "C" else b"\r")
    # A driver whose first "C" went unanswered in time (a loaded machine)
    # closes and tries again: a real adapter takes any number of "C"s, and
    # so does this one; what must be exact is the order of the rest.
    got = [c for i, c in enumerate(cmds) if not (c == "C" and i > 0 and cmds[i - 1] == "C")]
    if got != want_init:
        sys.exit("peer: wrong init sequence %s (want %s)" % (cmds, want_init))
    return buf


def serial(pty, first, count, want_init):
    fd = os.open(pty, os.O_RDWR | os.O_NOCTTY)
    # TCSANOW: a driver reopening the adapter may have written its first
    # command already; TCSAFLUSH would throw it away
    tty.setraw(fd, termios.TCSANOW)
    print("OPEN", flush=True)
    buf = answer_init(fd, want_init)
    for k in range(first, first + count):
        os.write(fd, b"t1238%016X\r" % k)
    print("SENT %d" % count, flush=True)
    try:
        cmd, buf = read_command(fd, buf, time.monotonic() + 300)
    except OSError:
        cmd = None  # EIO: socat is gone, the adapter was unplugged
    if cmd not in (None, "C"):
        sys.exit("peer: expected the closing C, got %r" % cmd)


def stream_frames(pty, first, want_init, late_ms=0):
    fd = os.open(pty, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd, termios.TCSANOW)
    print("OPEN", flush=True)
    if late_ms:
        time.sleep(late_ms / 1000)  # the scenario: booting this long
        # what came while booting is lost, as in an adapter's firmware
        termios.tcflush(fd, termios.TCIFLUSH)
        print("READY %d" % time.time_ns(), flush=True)
    buf = answer_init(fd, want_init)
    print("STREAMING", flush=True)
    k = first
    try:
        while True:
            os.write(fd, b"".join(b"t1238%016X\r" % (k + i) for i in range(8)))
            k += 8
            # the wait between bursts also hears a closing "C"
            if select.select([fd], [], [], 0.001)[0]:
                chunk = os.read(fd, 256)
                if not chunk or b"C\r" in buf + chunk:
                    return
                buf += chunk
    except OSError:
        return  # EIO: socat is gone, the adapter was unplugged


def main():
    if sys.argv[1] == "--stream":
        init = sys.argv[4] if len(sys.argv) > 4 else "C,S6,L"
        late = int(sys.argv[5]) if len(sys.argv) > 5 else 0
        stream_frames(sys.argv[2], int(sys.argv[3]), init.split(","), late)
        return
    if sys.argv[1] == "--serial":
        init = sys.argv[5] if len(sys.argv) > 5 else "C,S6,L"
        serial(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), init.split(","))
        return
    pty, expected_path = sys.argv[1], sys.argv[2]
    want_init = (sys.argv[3] if len(sys.argv) > 3 else "C,S6,L").split(",")
    fd = os.open(pty, os.O_RDWR | os.O_NOCTTY)
    tty.setraw(fd)
    print("OPEN", flush=True)
    buf = answer_init(fd, want_init)

    rng = random.Random(5)
    stream, expected, ngarbage = [], [], 0
    for i in range(2000):
        if rng.random() < 0.05:
            stream.append(b"\r")  # a late acknowledgement: not garbage
        if i % 40 == 7:
            stream.append(rng.choice(GARBAGE) + b"\r")
            ngarbage += 1
        if i % 500 == 250:
            stream.append(b"\a")  # BELL, no CR: one bad input
            ngarbage += 1
        line, exp = frame(rng)
        stream.append(line + b"\r")
        expected.append(exp)
    with open(expected_path, "w") as f:
        f.write("\n".join(expected) + "\n")
    print("SENDING %d %d" % (len(expected), ngarbage), flush=True)
    data = b"".join(stream)
    for off in range(0, len(data), 997):  # odd chunks: lines split across reads
        os.write(fd, data[off:off + 997])

    cmd, buf = read_command(fd, buf, time.monotonic() + 30)
    if cmd != "C":
        sys.exit("peer: expected the closing C, got %r" % cmd)
    if b"O\r" in buf or b"L\r" in buf:
        sys.exit("peer: driver reopened the channel after init")
    os.close(fd)


if __name__ == "__main__":
    main()
