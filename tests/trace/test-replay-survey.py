#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-replay-survey.py RAILMON DBC

What `railmon replay` says a candump trace holds before it replays it (its
survey: frames, damaged lines, the first) is the same whether the file is
read through the trace driver (RAILMON_REPLAY_SURVEY=serial) or cut into
1 to 4 parts tallied in threads (=N; the default for a large file), and
equal to the counts this script knows from writing the file: damage
throughout the file and damage only in its last part (the first damaged
line is then numbered across the parts before it), blank and CRLF lines,
a NUL, lines longer than the driver's 64 KiB buffer, no final newline.
The replay's verdict (exit 1 and its sentence for damage) is the same too.
"""
import os
import random
import re
import subprocess
import sys
import tempfile

RAILMON, DBC = sys.argv[1], sys.argv[2]


def fail(msg):
    sys.exit("FAIL: " + msg)


def write_trace(path, nlines, damage_from, rng):
    """A candump log; returns (frames, damaged lines, first damaged line)."""
    frames, bad, first = 0, 0, 0
    out = []
    for i in range(1, nlines + 1):
        t = 1700000000 + i / 1000
        kind = rng.random()
        if i >= damage_from and kind < 0.05:
            line = rng.choice([b"not a frame", b"(%.6f) can0 1G0#00" % t, b"(%.6f) c\0n0 100#01" % t,
                               b"x" * (64 * 1024 + rng.randrange(3)), b"(%.6f) can0 100#0" % t])
            bad += 1
            first = first or i
        elif kind < 0.08:
            line = rng.choice([b"", b"  ", b"\r"])
        else:
            line = b"(%.6f) can%d %03X#%s%s" % (t, rng.randrange(2), rng.randrange(0x800),
                                                bytes(rng.randrange(256) for _ in range(8)).hex().encode(),
                                                b"\r" if kind > 0.97 else b"")
            frames += 1
        out.append(line)
    with open(path, "wb") as f:
        f.write(b"\n".join(out))  # no final newline
    return frames, bad, first


def survey(path, how, tmp):
    data = os.path.join(tmp, "data-" + how)
    env = dict(os.environ, RAILMON_REPLAY_SURVEY=how)
    p = subprocess.run([RAILMON, "replay", path, "--dbc", DBC, "--data", data, "-q"], env=env,
                       capture_output=True, text=True, timeout=120)
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("railmon replay: " + path)
            or "damaged part" in ln]
    subprocess.run(["rm", "-rf", data], check=True)
    return p.returncode, said


def main():
    rng = random.Random(29)
    with tempfile.TemporaryDirectory() as tmp:
        for name, nlines, damage_from in (("throughout", 3000, 1), ("last-part", 3000, 2900),
                                          ("clean", 500, 10**9)):
            path = os.path.join(tmp, name + ".log")
            frames, bad, first = write_trace(path, nlines, damage_from, rng)
            if name != "clean" and not bad:
                fail(name + ": the generator wrote no damage")
            want = "railmon replay: %s: candump, %d frames" % (path, frames)
            if bad:
                want += "; %d damaged part%s skipped, the first: %s:%d: malformed candump line" % (
                    bad, "" if bad == 1 else "s", path, first)
            base = survey(path, "serial", tmp)
            if base[1][0] != want:
                fail("%s, serial: said %r, expected %r" % (name, base[1][0], want))
            if base[0] != (1 if bad else 0):
                fail("%s, serial: exit %d" % (name, base[0]))
            for how in ("1", "2", "3", "4", "auto"):
                got = survey(path, how, tmp)
                if got != base:
                    fail("%s, %s parts: %r, the driver's survey %r" % (name, how, got, base))
            print("ok %s: %d frames, %d damaged lines (first %d), the same in 1 to 4 parts" %
                  (name, frames, bad, first))


main()
