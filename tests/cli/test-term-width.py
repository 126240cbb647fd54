#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-term-width.py RAILMON SRC - tables sized to the terminal (issue 28).

Under a pseudo-terminal with a set window size (TIOCSWINSZ) of 80 and of
160 columns, and through a pipe:
- `channels --data` and `summary --data` of a log whose DBC names a signal
  with a 70-character name: the columns are as wide as the longest name
  (the unit column starts at the same place in the header and in every
  row: no shift); on a terminal no line is wider than it, and a line cut
  ends in the one cut mark '>'; through a pipe nothing is cut, whatever
  $COLUMNS says, and the bytes are the same with COLUMNS=40 and without;
- the demo's closing table (`demo --no-live`): at 160 columns every
  channel name whole (the one `channels --data` lists), at 80 the long
  ones cut with a leading '>' and no line wider than 80; '~' appears only
  as the stale mark (first column), never as a cut.
"""
import fcntl
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import termios

RAILMON, SRC = sys.argv[1:3]
LONG = "VehicleSpeedMeasuredAtTheLeadingBogieWheelSensorNumberOne"
QUAL = "VehicleSpeed." + LONG


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def under_pty(args, cols, env=None):
    """stdout on a pty of cols x 50 (no \\n -> \\r\\n): its lines."""
    m, s = pty.openpty()
    fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    attrs = termios.tcgetattr(s)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(s, termios.TCSANOW, attrs)
    p = subprocess.Popen([RAILMON] + args, stdin=subprocess.DEVNULL, stdout=s, stderr=subprocess.DEVNULL, env=env)
    os.close(s)
    got = b""
    while True:
        try:
            b = os.read(m, 65536)
        except OSError:
            break
        if not b:
            break
        got += b
    os.close(m)
    if p.wait(timeout=120):
        fail(f"{args} under a {cols}-column terminal: exit {p.returncode}")
    return got.decode().split("\n")


def piped(args, env=None):
    p = subprocess.run([RAILMON] + args, capture_output=True, env=env, timeout=120)
    if p.returncode:
        fail(f"{args}: exit {p.returncode}: {p.stderr.decode()}")
    return p.stdout


def aligned(what, lines, unit_of_row):
    """The unit column starts where the header's "unit" does, in every row."""
    col = lines[0].index(" unit ") + 1
    for line in lines[1:]:
        name = line.split()[unit_of_row[0]] if line.strip() else None
        if name is None:
            continue
        unit = line.split()[unit_of_row[1]]
        if line.find(" " + unit, col - 1) != col - 1:
            fail(f"{what}: the unit column shifts (header at {col}): {line!r}")


def check_cut(what, lines, cols):
    for line in lines:
        if len(line) > cols:
            fail(f"{what}: a line of {len(line)} columns on a {cols}-column terminal: {line!r}")


def table_checks(cmd, log, unit_field):
    args = [cmd, "--data", log]
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    plain = piped(args, env)
    if piped(args, dict(env, COLUMNS="40")) != plain:
        fail(f"{cmd} through a pipe depends on $COLUMNS")
    lines = plain.decode().rstrip("\n").split("\n")
    if QUAL not in plain.decode() or any(line.endswith(">") for line in lines):
        fail(f"{cmd} through a pipe: the long name not whole, or a line cut")
    aligned(f"{cmd} (pipe)", lines, (1, unit_field))
    wide = [line for line in under_pty(args, 160) if line]
    check_cut(f"{cmd} at 160", wide, 160)
    row = next((line for line in wide if QUAL in line), None)
    if row is None:
        fail(f"{cmd} at 160 columns: the 70-character name is not whole: {wide[:3]}")
    aligned(f"{cmd} at 160", wide, (1, unit_field))
    narrow = [line for line in under_pty(args, 80) if line]
    check_cut(f"{cmd} at 80", narrow, 80)
    cut = [line for line in narrow if len(line) == 80]
    if not cut or any(not line.endswith(">") for line in cut):
        fail(f"{cmd} at 80 columns: the lines cut do not end in '>': {cut[:2]}")
    for a, b in zip(narrow, lines):
        if not (a == b or (a.endswith(">") and b.startswith(a[:-1]))):
            fail(f"{cmd} at 80 columns: a line is not the pipe's, cut: {a!r} vs {b!r}")
    return len(lines)


def demo_checks(tmp):
    names = {}
    for cols in (160, 80):
        data = os.path.join(tmp, f"demo{cols}")
        lines = under_pty(["demo", "--duration", "1", "--no-live", "--data", data], cols)
        rows = [line for line in lines if re.match(r"^[ *~] \S", line) and not line.startswith("  channel")]
        if not rows:
            fail(f"demo at {cols}: no closing table: {lines[:5]}")
        check_cut(f"demo at {cols}", rows + [line for line in lines if line.startswith("  channel")], cols)
        if any("~" in line[1:] for line in rows):
            fail(f"demo at {cols}: '~' used for something else than stale: {[r for r in rows if '~' in r[1:]][:2]}")
        names[cols] = [line[2:].split()[0] for line in rows]
        if cols == 160:
            want = {line.split()[2] for line in piped(["channels", "--data", data]).decode().split("\n")[1:] if line}
            if any(n.startswith(">") for n in names[cols]) or set(names[cols]) != want:
                fail(f"demo at 160: names cut or missing: {sorted(set(want) ^ set(names[cols]))[:5]}")
    cutn = [n for n in names[80] if n.startswith(">")]
    if not cutn or any(len(n) > 28 for n in names[80]):
        fail(f"demo at 80: long names not cut with a leading '>': {names[80][:8]}")
    full = {n for n in names[160]}
    for n in cutn:
        if not any(f.endswith(n[1:]) for f in full):
            fail(f"demo at 80: {n} is not the end of a name")
    return len(names[160]), len(cutn)


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-test-width.")
    try:
        dbc = os.path.join(tmp, "long.dbc")
        with open(os.path.join(SRC, "cli", "demo", "train.dbc")) as f:
            text = f.read()
        if " SG_ Speed :" not in text:
            fail("train.dbc has no signal Speed to rename")
        with open(dbc, "w") as f:
            f.write(text.replace(" SG_ Speed :", f" SG_ {LONG} :"))
        log = os.path.join(tmp, "log")
        subprocess.run([RAILMON, "replay", os.path.join(SRC, "cli", "demo", "train.log"), "--dbc", dbc, "--data", log],
                       capture_output=True, check=True, timeout=120)
        nch = table_checks("channels", log, 3)
        nsum = table_checks("summary", log, 2)
        nd, ncut = demo_checks(tmp)
        print(f"ok: channels ({nch} lines) and summary ({nsum}) sized to a 70-character name, cut with '>' at 80 "
              f"columns only on a terminal; demo's closing table: {nd} names whole at 160, {ncut} cut at 80")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
