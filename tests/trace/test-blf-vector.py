#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-blf-vector.py TRACE-DUMP RAILMON

The BLF object classes Vector's tools write (blf_vector.py writes each
byte by byte from the object layouts) read frame by frame through the
trace driver (trace-dump): time in ns, id, flags, length, data, and the
channel (each channel read alone must give exactly its frames), nothing
said damaged but a file cut inside its last container (the objects whole
in what came are read), and the objects that are no CAN frame counted by
type.
Every class is checked and every mismatch said before the exit.  Then
`railmon replay` of the unknown-types file says those counts in its
summary.  Run with TZ=UTC (BLF start times are local time).
"""
from collections import Counter
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import blf_vector  # noqa: E402
from can_frames import trace_board  # noqa: E402

TRACE_DUMP, RAILMON = sys.argv[1], sys.argv[2]


def dump(path, channel):
    p = subprocess.run([TRACE_DUMP, path, str(channel)], capture_output=True, text=True, check=False)
    frames, bad, skipped = [], "", ""
    for line in p.stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "F":
            f = rest.split(" ")
            frames.append((int(f[0]), int(f[1], 16), int(f[2], 16), int(f[3]), f[4] if len(f) > 4 else ""))
        elif kind == "bad":
            bad = rest
        elif kind == "skipped":
            skipped = rest
    return p.returncode, frames, bad, skipped, p.stderr.strip()


def check(cls, tmp):
    """The mismatches of one class (empty: all as written)."""
    data, want, want_bad, want_skipped = cls()
    path = os.path.join(tmp, cls.__name__ + ".blf")
    with open(path, "wb") as f:
        f.write(data)
    errs = []
    rc, got, bad, skipped, err = dump(path, 0)
    if rc != 0:
        return [f"trace-dump exit {rc}: {err}"]
    plain = [w[:5] for w in want]
    if len(got) != len(plain):
        errs.append(f"{len(got)} frames, written {len(plain)}")
    for i, (g, w) in enumerate(zip(got, plain)):
        if g != w:
            errs.append(f"frame {i}: {g}, written {w}")
    if bad != (f"{path}: {want_bad}" if want_bad else ""):
        errs.append(f"said damaged: {bad!r}, expected {want_bad!r}")
    if skipped != want_skipped:
        errs.append(f"skipped {skipped!r}, expected {want_skipped!r}")
    for ch in sorted({w[5] for w in want}):
        _, got_ch, _, _, _ = dump(path, ch)
        if got_ch != [w[:5] for w in want if w[5] == ch]:
            errs.append(f"channel {ch}: {got_ch}")
    return errs


def check_replay(tmp):
    """railmon replay's summary says the skipped objects by type."""
    data, want, _, skipped = blf_vector.unknown_types()
    path = os.path.join(tmp, "replay-unknown.blf")
    with open(path, "wb") as f:
        f.write(data)
    board = os.path.join(tmp, "board.ini")
    with open(board, "w", encoding="ascii") as f:
        f.write(trace_board("BLF-TEST", [("a", "")]))
    p = subprocess.run([RAILMON, "replay", path, "--board", board, "--data", os.path.join(tmp, "data")],
                       capture_output=True, text=True, check=False)
    per_ch = ", ".join(f"channel {c} {n}" for c, n in sorted(Counter(w[5] for w in want).items()))
    line = f"{path}: Vector BLF, {len(want)} frames: {per_ch}; objects that are no CAN frame skipped: {skipped}"
    if p.returncode != 0 or line not in p.stderr:
        return [f"replay exit {p.returncode}, wanted the line {line!r} in: {p.stderr.strip()}"]
    return []


def main():
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for cls in blf_vector.CLASSES:
            errs = check(cls, tmp)
            n = len(cls()[1])
            if errs:
                failed += 1
                print(f"FAIL {cls.__name__}: " + "; ".join(errs)[:2000])
            else:
                print(f"ok {cls.__name__}: {n} frames as written, channels apart")
        errs = check_replay(tmp)
        if errs:
            failed += 1
            print("FAIL replay summary: " + "; ".join(errs))
        else:
            print("ok replay summary says the skipped objects by type")
    if failed:
        sys.exit(f"FAIL: {failed} of {len(blf_vector.CLASSES) + 1} checks")


if __name__ == "__main__":
    main()
