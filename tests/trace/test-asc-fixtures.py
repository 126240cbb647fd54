#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-asc-fixtures.py TRACE-DUMP RAILMON FIXTURE-DIR

The Vector ASC fixtures in tests/trace/asc/, written by hand from the
grammar CANoe writes (one file per class: a remote frame without DLC,
classic lines with FD lengths, CANoe's CANFD layouts and flags, error
frames only, several trigger blocks, relative stamps in base dec, frames
out of time order), each read through the trace driver (trace-dump) must
give exactly its .expect (written by hand: time ns, id, flags, length,
bytes).  The same file gzip-compressed (.asc.gz), and as two gzip members,
reads the same; a cut .asc.gz gives the frames before the cut and says
"damaged gzip data".  Then `railmon replay` of the fixtures:
  - frames on channel 2 and a one-bus board reading channel 1: refused
    (exit 1), saying the channel no bus reads and its frames;
  - --dbc takes the trace's one channel; with several it asks for
    --channel N (exit 2), and --channel 2 stores channel 2's frames;
  - frames out of time order are stored in file order with their own
    times: export --order seq gives them back as in the file.
Run with TZ=UTC: ASC dates are local time.
"""
import gzip
import os
import re
import subprocess
import sys
import tempfile

DUMP, RAILMON, FIX = sys.argv[1], sys.argv[2], sys.argv[3]
DBC = 'VERSION ""\n\nBU_: X\n\nBO_ 256 M: 1 X\n SG_ S : 0|8@1+ (1,0) [0|255] "" X\n'


def fail(msg):
    sys.exit("FAIL: " + msg)


def dump(path):
    p = subprocess.run([DUMP, path], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        fail(f"trace-dump {path}: exit {p.returncode}: {p.stderr.strip()}")
    frames = [line.rstrip() for line in p.stdout.splitlines() if line.startswith("F ")]
    other = [line for line in p.stdout.splitlines() if not line.startswith("F ")]
    return frames, other


def run(args, rc):
    p = subprocess.run([RAILMON] + args, capture_output=True, text=True, check=False)
    if p.returncode != rc:
        fail(f"railmon {' '.join(args)}: exit {p.returncode}, wanted {rc}: {p.stderr.strip()}")
    return p


def check_fixtures(tmp):
    names = sorted(f[:-4] for f in os.listdir(FIX) if f.endswith(".asc"))
    if len(names) < 7:
        fail(f"only {names} in {FIX}")
    for name in names:
        src = os.path.join(FIX, name + ".asc")
        want = open(os.path.join(FIX, name + ".expect"), encoding="ascii").read().split("\n")[:-1]
        got, other = dump(src)
        if got != want or other != ["format Vector ASC"]:
            fail(f"{name}.asc:\n got  {got} {other}\n want {want}")
        gz = os.path.join(tmp, name + ".asc.gz")
        with gzip.open(gz, "wb") as f:
            f.write(open(src, "rb").read())
        got, other = dump(gz)
        if got != want or other != ["format Vector ASC"]:
            fail(f"{name}.asc.gz: {got} {other}")
        print(f"ok {name}: {len(want)} frames as written, and the same from .asc.gz")
    # two gzip members (gzip -c a b): both read
    text = open(os.path.join(FIX, "remote-no-dlc.asc"), "rb").read()
    two = os.path.join(tmp, "two.asc.gz")
    with open(two, "wb") as f:
        f.write(gzip.compress(text[:200]) + gzip.compress(text[200:]))
    want = open(os.path.join(FIX, "remote-no-dlc.expect"), encoding="ascii").read().split("\n")[:-1]
    got, other = dump(two)
    if got != want or other != ["format Vector ASC"]:
        fail(f"two gzip members: {got} {other}")
    # a cut .asc.gz: the frames before the cut, then the damage said
    lines = ["   %d.%06d 1  100             Rx   d 2 %02X %02X" % (i // 1000, i % 1000 * 1000, i % 256, i // 256 % 256)
             for i in range(1, 20001)]
    big = ("date Thu Dec 3 15:30:00.000 2026\nbase hex  timestamps absolute\ninternal events logged\n"
           "Begin Triggerblock Thu Dec 3 15:30:00.000 2026\n" + "\n".join(lines) + "\nEnd TriggerBlock\n")
    cut = os.path.join(tmp, "cut.asc.gz")
    z = gzip.compress(big.encode(), compresslevel=1)
    with open(cut, "wb") as f:
        f.write(z[:len(z) // 2])
    got, other = dump(cut)
    full, _ = dump_text(tmp, big)
    bad = [o for o in other if o.startswith("bad ")]
    if not got or len(got) >= len(full) or got != full[:len(got)] or len(bad) != 1 or \
            "damaged gzip data: the rest of the file is lost" not in bad[0]:
        fail(f"cut .asc.gz: {len(got)} of {len(full)} frames, {other}")
    print(f"ok .asc.gz as two members; cut in half: {len(got)} of {len(full)} frames, then {bad[0]}")


def dump_text(tmp, text):
    path = os.path.join(tmp, "whole.asc")
    with open(path, "w", encoding="ascii") as f:
        f.write(text)
    return dump(path)


def exported(data, order):
    p = run(["export", "--data", data, "--kind", "can", "--format", "candump", "--order", order], 0)
    return p.stdout.splitlines()


def check_replay(tmp):
    dbc = os.path.join(tmp, "t.dbc")
    with open(dbc, "w", encoding="ascii") as f:
        f.write(DBC)
    ooo = os.path.join(FIX, "out-of-order.asc")  # 5 frames, all on channel 2
    board = os.path.join(tmp, "one.ini")
    with open(board, "w", encoding="ascii") as f:
        f.write("[board]\nvehicle = T\nrt_priority = 0\n[storage]\ndir = railmon-data\n"
                "[can a]\ndriver = trace\nfile = none.log\nchannel = 1\n")
    p = run(["replay", ooo, "--board", board, "--data", os.path.join(tmp, "d1")], 1)
    for want in (": Vector ASC, 5 frames: channel 2 5\n", "bus a reads channel 1: 0 frames\n",
                 "channel 2: 5 frames no bus reads (a bus's 'channel = 2' would)\n",
                 "none of the trace's 5 frames is on a channel a bus reads: nothing to replay\n"):
        if want not in p.stderr:
            fail(f"one-bus board on channel 1, trace on channel 2: no '{want.strip()}' in: {p.stderr}")
    if os.path.exists(os.path.join(tmp, "d1")) and os.listdir(os.path.join(tmp, "d1")):
        fail("a refused replay left a log")
    print("ok replay: a trace on channel 2 and a bus on channel 1: refused, saying so")
    # --dbc: the one channel the trace holds; the log in file order
    data = os.path.join(tmp, "d2")
    p = run(["replay", ooo, "--dbc", dbc, "--data", data], 0)
    if "bus can0 reads channel 2: 5 frames\n" not in p.stderr or "can0: 5 in" not in p.stderr:
        fail("--dbc with one channel: " + p.stderr)
    seq = exported(data, "seq")
    want = ["(1796311801.000000) can0 100#01", "(1796311803.000000) can0 100#03", "(1796311802.000000) can0 100#02",
            "(1796311800.500000) can0 100#00", "(1796311804.000000) can0 100#04"]
    if seq != want:
        fail(f"out of order: export --order seq {seq}, wanted the file's order {want}")
    if exported(data, "time") != sorted(want):
        fail("out of order: export in time order " + str(exported(data, "time")))
    print("ok replay --dbc: the trace's one channel (2); frames out of time order kept in file order with "
          "their own times")
    # several channels: --dbc asks which
    tb = os.path.join(FIX, "triggerblocks.asc")  # channel 1: 2 frames, channel 2: 1
    p = run(["replay", tb, "--dbc", dbc, "--data", os.path.join(tmp, "d3")], 2)
    if "the trace holds several channels (channel 1 2, channel 2 1); --dbc decodes one bus: give --channel N" \
            not in p.stderr:
        fail("--dbc with two channels: " + p.stderr)
    p = run(["replay", tb, "--dbc", dbc, "--channel", "2", "--data", os.path.join(tmp, "d4")], 0)
    if "bus can0 reads channel 2: 1 frames\n" not in p.stderr or exported(os.path.join(tmp, "d4"), "seq") != \
            ["(1796313600.502000) can0 100#03"]:
        fail("--channel 2: " + p.stderr)
    p = run(["replay", tb, "--dbc", dbc, "--channel", "3", "--data", os.path.join(tmp, "d5")], 2)
    if "--channel 3: the trace has no frame on it; it holds channel 1 2, channel 2 1" not in p.stderr:
        fail("--channel 3: " + p.stderr)
    print("ok replay --dbc of two channels: asks for --channel N; --channel 2 stores its 1 frame; "
          "--channel 3 refused")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        check_fixtures(tmp)
        check_replay(tmp)
    print("asc-fixtures: ok")


if __name__ == "__main__":
    main()
