#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-progress.py RAILMON SRC - the long commands' progress line (issue 28,
cli/progress.c): on stderr when it is a terminal, nothing when not, and
nothing with --quiet.

The demo trace is replayed into a log (a real log of ~0.6 MB), then under
a pseudo-terminal (python3 pty: stderr is its slave, stdout a file):
- `export --data LOG -o FILE` draws "\\rexport: A MB of B MB (P%), R MB/s,
  H:MM:SS left\\e[K" with B the log's segment bytes, and clears the line
  ("\\r\\e[K") before its closing total; at most one redraw per 250 ms;
- the same over a ground vehicle directory of two logs: "log 2 of 2" and
  every other line said start on a line of their own (the line cleared);
- `verify --data LOG --unsigned` the same with "verify:", the verdict on
  stdout untouched;
- `replay TRACE --dbc` "replay: N of 8100 frames (P%), R frames/s, ... left";
  `replay LOG --board` (no total) "replay: N records, R records/s";
- with --quiet none of that: export says nothing at all on a good run,
  verify and replay no progress (their other words stay).
Without a terminal (stderr a pipe), no \\r and no escape in any of them,
and export's stderr is exactly its total line.
"""
import os
import pty
import re
import shutil
import subprocess
import sys
import tempfile
import termios
import time

RAILMON, SRC = sys.argv[1:3]
TRACE = os.path.join(SRC, "cli", "demo", "train.log")
DBC = os.path.join(SRC, "cli", "demo", "train.dbc")
BAR = {
    "export": rb"\rexport: (\d+\.\d) MB of (\d+\.\d) MB \((\d+)%\), \d+\.\d MB/s, \d+:\d\d:\d\d left\x1b\[K",
    "verify": rb"\rverify: (\d+\.\d) MB of (\d+\.\d) MB \((\d+)%\), \d+\.\d MB/s, \d+:\d\d:\d\d left\x1b\[K",
    "replay": rb"\rreplay: (\d+) of (\d+) frames \((\d+)%\), \d+ frames/s, \d+:\d\d:\d\d left\x1b\[K",
}
CLEAR = b"\r\x1b[K"


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def under_pty(args, out):
    """Run with stderr on a pty (stdout to the file out): (stderr bytes,
    exit code, seconds).  The pty's own \\n -> \\r\\n is turned off, so
    every \\r seen is the program's."""
    m, s = pty.openpty()
    attrs = termios.tcgetattr(s)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(s, termios.TCSANOW, attrs)
    t0 = time.monotonic()
    with open(out, "wb") as f:
        p = subprocess.Popen([RAILMON] + args, stdin=subprocess.DEVNULL, stdout=f, stderr=s)
    os.close(s)
    got = b""
    while True:
        try:
            b = os.read(m, 65536)
        except OSError:  # EIO: the slave's last holder closed it
            break
        if not b:
            break
        got += b
    os.close(m)
    return got, p.wait(timeout=120), time.monotonic() - t0


def piped(args):
    p = subprocess.run([RAILMON] + args, capture_output=True, timeout=120)
    return p.stderr, p.returncode


def check_bar(cmd, err, secs):
    """The progress lines of cmd in err: at least one, well formed, the
    total right, rising, redrawn at most 4 times a second, cleared before
    anything else is said after them."""
    draws = list(re.finditer(BAR[cmd], err))
    if not draws:
        fail(f"{cmd} under a terminal drew no progress line: {err[:300]!r}")
    totals = {d.group(2) for d in draws}
    if len(totals) != 1:
        fail(f"{cmd}: the total changed: {totals}")
    dones = [float(d.group(1)) for d in draws]
    # rising, but for a new part (another log of a ground directory), after
    # the line was cleared
    for a, b in zip(draws, draws[1:]):
        if float(b.group(1)) < float(a.group(1)) and CLEAR not in err[a.end():b.start()]:
            fail(f"{cmd}: progress went back without a new part: {dones}")
    if any(int(d.group(3)) > 100 for d in draws):
        fail(f"{cmd}: progress over 100%: {dones}")
    # the throttle: the first draw at once, then one per 250 ms at most
    if len(draws) > 2 + secs / 0.25:
        fail(f"{cmd}: {len(draws)} draws in {secs:.2f} s: more than 4 a second")
    after = err[draws[-1].end():]
    if not after.startswith(CLEAR):
        fail(f"{cmd}: the last progress line is not cleared ({after[:80]!r})")
    if err.count(b"\r") != err.count(CLEAR) + len(draws):
        fail(f"{cmd}: stray \\r: {err!r}")
    return draws


def no_bar(what, err):
    if b"\r" in err or b"\x1b" in err or any(re.search(p, err) for p in BAR.values()):
        fail(f"{what}: progress bytes where there must be none: {err[:300]!r}")


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-test-progress.")
    try:
        log, csv = os.path.join(tmp, "log"), os.path.join(tmp, "out.csv")
        err, rc = piped(["replay", TRACE, "--dbc", DBC, "--data", log])
        if rc:
            fail(f"replay into a log: {err!r}")
        no_bar("replay without a terminal", err)
        seg_bytes = sum(os.path.getsize(os.path.join(log, f)) for f in os.listdir(log) if f.endswith(".seg"))

        # export: bytes of the log's segments
        err, rc, secs = under_pty(["export", "--data", log, "-o", csv], os.devnull)
        if rc:
            fail(f"export under a terminal: {rc} {err!r}")
        draws = check_bar("export", err, secs)
        ndraw = len(draws)
        if draws[0].group(2).decode() != f"{seg_bytes / 1e6:.1f}":
            fail(f"export's total {draws[0].group(2)} MB, the segments hold {seg_bytes} bytes")
        if not err.endswith(b"railmon export: 50105 records written\n"):
            fail(f"export's total line: {err[-120:]!r}")
        want = open(csv, "rb").read()
        perr, rc = piped(["export", "--data", log])
        if perr != b"railmon export: 50105 records written\n":
            fail(f"export without a terminal said {perr!r}")
        err, rc, _ = under_pty(["export", "--data", log, "-o", csv, "--quiet"], os.devnull)
        if err or rc:
            fail(f"export --quiet under a terminal said {err!r} ({rc})")
        if open(csv, "rb").read() != want:
            fail("export --quiet wrote other records")

        # a ground vehicle directory of two logs: each log's line is cleared
        # before "log 2 of 2" is said, never glued to it
        ground = os.path.join(tmp, "ground")
        for sub in ("a", "b"):
            shutil.copytree(log, os.path.join(ground, sub))
        err, rc, secs = under_pty(["export", "--data", ground, "-o", csv], os.devnull)
        check_bar("export", err, secs)
        said = [m.start() for m in re.finditer(rb"railmon export: ", err)]
        if len(said) < 3 or any(k and not (err[:k].endswith(b"\n") or err[:k].endswith(CLEAR)) for k in said):
            fail(f"export of two logs: a line glued to the progress: {err!r}")
        if b"log 2 of 2" not in err:
            fail(f"export of two logs said no 'log 2 of 2': {err!r}")

        # verify: the same bytes, its verdict on stdout as without a terminal
        vout = os.path.join(tmp, "verify.out")
        err, rc, secs = under_pty(["verify", "--data", log, "--unsigned"], vout)
        check_bar("verify", err, secs)
        piped_out = subprocess.run([RAILMON, "verify", "--data", log, "--unsigned"], capture_output=True)
        no_bar("verify without a terminal", piped_out.stderr)
        if open(vout, "rb").read() != piped_out.stdout or rc != piped_out.returncode:
            fail("verify's verdict differs under a terminal")
        err, rc, _ = under_pty(["verify", "--data", log, "--unsigned", "-q"], vout)
        no_bar("verify -q under a terminal", err)

        # replay of a trace: frames of the trace's total
        err, rc, secs = under_pty(["replay", TRACE, "--dbc", DBC, "--data", os.path.join(tmp, "r2")], os.devnull)
        draws = check_bar("replay", err, secs)
        if draws[0].group(2) != b"8100":
            fail(f"replay's total: {draws[0].group(2)} frames, the trace has 8100")
        if rc or b"railmon replay: stopped after" not in err[draws[-1].end():]:
            fail(f"replay's closing words after the progress: {err[-200:]!r}")
        err, rc, _ = under_pty(["replay", TRACE, "--dbc", DBC, "--data", os.path.join(tmp, "r3"), "--quiet"],
                               os.devnull)
        no_bar("replay --quiet under a terminal", err)
        if rc or b"records stored" not in err:
            fail(f"replay --quiet lost its summary: {err!r}")
        # replay of a log: no total known, a rate line of the records stored
        board = os.path.join(tmp, "board.ini")
        with open(board, "w") as f:
            # a board file names paths from its own directory: absolute ones
            f.write(f"[board]\nvehicle = T\n[can vehicle]\ndriver = trace\nfile = {os.path.abspath(TRACE)}\n"
                    f"dbc = {os.path.abspath(DBC)}\n")
        err, rc, _ = under_pty(["replay", log, "--board", board, "--data", os.path.join(tmp, "r4")], os.devnull)
        rate = list(re.finditer(rb"\rreplay: \d+ records, \d+ records/s\x1b\[K", err))
        if rc or not rate or not err[rate[-1].end():].startswith(CLEAR):
            fail(f"replay of a log under a terminal: no rate line, or not cleared: {err!r}")
        err, rc = piped(["replay", log, "--board", board, "--data", os.path.join(tmp, "r5")])
        no_bar("replay of a log without a terminal", err)
        print(f"ok: export {ndraw} draws, replay {len(draws)}; progress lines for export, verify and replay under a pty, "
              f"none without one or with --quiet; log {seg_bytes} bytes")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
