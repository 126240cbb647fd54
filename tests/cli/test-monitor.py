#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-monitor.py RAILMON - `railmon monitor SOURCE --dbc FILE` (issue 28).

- traces: frames made here (raw values known), written by python-can's
  BLF, ASC and candump writers; python-can reads the BLF and ASC back (the
  independent reader: the frames it reads are the ones made).  monitor
  --speed 0 of each trace, not on a terminal, prints the table once: every
  signal's last value equals the value made here (raw * factor + offset),
  and `railmon decode` of the candump log agrees (its last value of each
  signal); the value-table label, the title's counts (frames, decoded, not
  in the DBC, errors), "-" for a signal never sent; also --once at --speed
  10, --filter and --sort;
- a trace of frames none of which the DBC has, and a damaged candump line:
  a sentence each, exit 1;
- slcan: socat makes a pty whose other end is socat's stdin and stdout,
  where this test plays the adapter: answers the driver's set-up, sends
  `t123...` lines; monitor on a terminal (a pty here) draws the values;
  the adapter closes (socat's stdin, socat ends, the pty hangs up):
  monitor says the device is gone, prints the final table, exit 1;
- --j1939: a PGN from another source address, a BAM reassembled;
- keys on the live screen of a trace at --speed 1: s, / filter, q;
  --duration ending it off a terminal;
- bad input: no DBC file, a DBC with a syntax error (file:line), an
  interface that does not exist, --speed -1, no source: one sentence
  (and the --help pointer for a usage error), exit 1 or 2, no usage;
- --help: the usage with an Examples block, every example a monitor command.
"""
import os
import re
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import fcntl
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "lib"))
import railmon_test  # noqa: E402

DBC = """VERSION ""

NS_ :

BS_:

BU_: ECU

BO_ 291 Drive: 8 ECU
 SG_ Speed : 0|16@1+ (0.05,0) [0|3276.75] "km/h" Vector__XXX
 SG_ Direction : 16|2@1+ (1,0) [0|3] "" Vector__XXX
 SG_ Temp : 24|8@1- (1,-40) [-168|87] "degC" Vector__XXX
 SG_ Flag : 32|1@1+ (1,0) [0|1] "" Vector__XXX
 SG_ Pressure : 47|16@0+ (0.01,0) [0|655.35] "bar" Vector__XXX

BO_ 2566844672 CCVS: 8 ECU
 SG_ WheelSpeed : 8|16@1+ (0.00390625,0) [0|255.99] "km/h" Vector__XXX

BO_ 1024 Unused: 2 ECU
 SG_ Never : 0|8@1+ (1,0) [0|255] "" Vector__XXX

VAL_ 291 Direction 0 "standstill" 1 "forward" 2 "reverse" ;
"""
LABELS = {0: "standstill", 1: "forward", 2: "reverse"}
DRIVE, CCVS, STRAY_STD, STRAY_EXT = 0x123, 0x18FEF100, 0x7FF, 0x1ABCDEF


def drive_frame(speed, direction, temp, flag, pressure):
    """Drive's 8 bytes from raw values (Pressure big-endian in bytes 5-6)."""
    d = bytearray(8)
    d[0:2] = struct.pack("<H", speed)
    d[2] = direction
    d[3] = struct.pack("<b", temp)[0]
    d[4] = flag
    d[5:7] = struct.pack(">H", pressure)
    return bytes(d)


def drive_values(speed, direction, temp, flag, pressure):
    return {"Drive.Speed": speed * 0.05, "Drive.Direction": direction, "Drive.Temp": temp - 40,
            "Drive.Flag": flag, "Drive.Pressure": pressure * 0.01}


def make_frames(n=600, seed=28):
    """(t, id, extended, data) frames and the last physical value of each signal."""
    import random
    rng = random.Random(seed)
    frames, last, t = [], {}, 1764748800.0
    for i in range(n):
        t += rng.uniform(0.0005, 0.003)
        k = i % 6
        if k < 3:
            raw = (rng.randrange(65536), rng.randrange(3), rng.randrange(-128, 128), rng.randrange(2),
                   rng.randrange(65536))
            frames.append((t, DRIVE, False, drive_frame(*raw)))
            last.update(drive_values(*raw))
        elif k == 3:
            ws = rng.randrange(65536)
            frames.append((t, CCVS, True, bytes([0xFF]) + struct.pack("<H", ws) + bytes(5)))
            last["CCVS.WheelSpeed"] = ws * 0.00390625
        elif k == 4:
            frames.append((t, STRAY_STD, False, bytes(rng.randrange(256) for _ in range(4))))
        else:
            frames.append((t, STRAY_EXT, True, bytes(8)))
    return frames, last


def write_traces(d, frames):
    import can
    msgs = [can.Message(timestamp=t, arbitration_id=i, is_extended_id=e, data=data, channel=0)
            for t, i, e, data in frames]
    paths = {"blf": d / "trace.blf", "asc": d / "trace.asc", "log": d / "candump.log"}
    for w in (can.BLFWriter(str(paths["blf"])), can.ASCWriter(str(paths["asc"])),
              can.CanutilsLogWriter(str(paths["log"]), channel="can0")):
        for m in msgs:
            w.on_message_received(m)
        w.stop()
    # python-can reads them back: the frames in the files are the ones made
    for fmt, reader in (("blf", can.BLFReader), ("asc", can.ASCReader)):
        got = [(m.arbitration_id, m.is_extended_id, bytes(m.data)) for m in reader(str(paths[fmt]))
               if not m.is_error_frame]
        want = [(i, e, data) for _, i, e, data in frames]
        assert got == want, f"python-can reads {len(got)} frames back from the {fmt}, not the {len(want)} written"
    return paths


def run(railmon, *args, **kw):
    return subprocess.run([railmon, *args], capture_output=True, text=True, timeout=120,
                          preexec_fn=railmon_test.die_with_us, **kw)


ROW = re.compile(r"^(.) (\S+)\s+(\S+)\s+(.*?)\s*$")
TITLE = re.compile(r"^monitor (\d+) frames?, (\d+) decoded, (\d+) not in the DBC, (\d+) errors?(, (?:trace ended|gone: .*?))?  (.*)$")


def parse_table(text):
    """The plain table: (title match, {name: (value text, rest of the line)}, footer)."""
    lines = text.splitlines()
    assert lines and lines[1].startswith("  channel "), f"no table:\n{text}"
    title = TITLE.match(lines[0])
    assert title, f"title {lines[0]!r}"
    rows = {}
    for ln in lines[2:-1]:
        m = ROW.match(ln)
        assert m, f"row {ln!r}"
        rows[m.group(2)] = (m.group(3), m.group(4))
    return title, rows, lines[-1]


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def decode_last(railmon, dbc, log):
    """`railmon decode --format jsonl` of the candump log: each signal's last value."""
    import json
    r = run(railmon, "decode", "--dbc", str(dbc), "--format", "jsonl", "--input", str(log))
    assert r.returncode == 0, r.stderr
    last = {}
    for ln in r.stdout.splitlines():
        rec = json.loads(ln)
        if rec.get("kind") == "sample":
            last[rec["name"]] = float(rec["value"])
    return last


def check_values(what, rows, last, decoded):
    for name, v in last.items():
        assert name in rows, f"{what}: {name} not in the table"
        got = float(rows[name][0])
        assert close(got, v), f"{what}: {name} = {got}, made {v}"
        assert close(got, decoded[name]), f"{what}: {name} = {got}, railmon decode's last {decoded[name]}"
        if name == "Drive.Direction":
            assert rows[name][1].startswith(LABELS[int(v)]), f"{what}: Direction's label: {rows[name][1]!r}"
    assert rows["Unused.Never"][0] == "-", f"{what}: a signal never sent shows {rows['Unused.Never']}"
    assert set(rows) == set(last) | {"Unused.Never"}, f"{what}: rows {sorted(rows)}"


def test_traces(railmon, d):
    dbc = d / "test.dbc"
    dbc.write_text(DBC)
    frames, last = make_frames()
    paths = write_traces(d, frames)
    decoded = decode_last(railmon, dbc, paths["log"])
    assert set(decoded) == set(last), f"decode's signals {sorted(decoded)}"
    n = len(frames)
    ndec = sum(1 for f in frames if f[1] in (DRIVE, CCVS))
    for fmt, p in paths.items():
        r = run(railmon, "monitor", str(p), "--dbc", str(dbc), "--speed", "0")
        assert r.returncode == 0, f"{fmt}: exit {r.returncode}: {r.stderr}"
        assert "\033" not in r.stdout, f"{fmt}: escapes in the output to a pipe"
        assert r.stderr == "", f"{fmt}: said {r.stderr!r}"
        title, rows, foot = parse_table(r.stdout)
        assert title.group(1, 2, 3, 4) == (str(n), str(ndec), str(n - ndec), "0"), \
            f"{fmt}: title {title.group(0)!r}, want {n} frames, {ndec} decoded"
        assert title.group(5) == ", trace ended" and str(p).startswith(title.group(6)), f"{fmt}: {title.group(0)!r}"
        check_values(fmt, rows, last, decoded)
        assert foot.startswith("1-7 of 7 channels, sort id"), f"{fmt}: footer {foot!r}"
    print(f"ok: blf, asc, candump at --speed 0: {len(last)} signals' last values as made and as decode says,"
          f" {n} frames ({ndec} decoded)")
    # --once on a paced trace; a filter; a sort
    r = run(railmon, "monitor", str(paths["blf"]), "--dbc", str(dbc), "--speed", "1000", "--once",
            "--filter", "drive", "--sort", "name")
    assert r.returncode == 0, r.stderr
    title, rows, foot = parse_table(r.stdout)
    assert list(rows) == sorted(k for k in last if k.startswith("Drive.")), f"--filter/--sort: {list(rows)}"
    assert foot.startswith("1-5 of 5 channels (filter 'drive' of 7), sort name"), foot
    for name in rows:
        assert close(float(rows[name][0]), last[name]), f"--speed 1000: {name}"
    print("ok: --speed 1000 --once --filter --sort")

    # ages at --speed 0 are on the trace's clock (its newest frame), stale
    # ones marked: Drive 12.3 s before the end (> --stale 5), CCVS 0.3 s
    ages = d / "ages.log"
    ages.write_text(f"(1764748800.000000) can0 123#{drive_frame(1517, 1, 60, 1, 12345).hex().upper()}\n"
                    "(1764748812.000000) can1 18FEF100#FF00640000000000\n"
                    "(1764748812.300000) can0 7FF#01\n")
    r = run(railmon, "monitor", str(ages), "--dbc", str(dbc), "--speed", "0")
    assert r.returncode == 0, r.stderr
    marks = {m.group(2): (m.group(1), m.group(4).split()) for m in map(ROW.match, r.stdout.splitlines()[2:-1])}
    assert marks["Drive.Speed"][0] == "~" and "12.3s" in marks["Drive.Speed"][1], marks["Drive.Speed"]
    assert marks["CCVS.WheelSpeed"][0] == " " and "0.3s" in marks["CCVS.WheelSpeed"][1], marks["CCVS.WheelSpeed"]
    r = run(railmon, "monitor", str(ages), "--dbc", str(dbc), "--speed", "0", "--stale", "20")
    assert ROW.match(r.stdout.splitlines()[2]).group(1) == " ", "--stale 20: Drive still marked stale"
    print("ok: ages on the trace's clock at --speed 0, '~' past --stale")

    # nothing of the DBC in the trace: said, exit 1
    stray = d / "stray.log"
    stray.write_text("".join(f"({1764748800 + k}.000000) can0 7FF#0102\n" for k in range(5)))
    r = run(railmon, "monitor", str(stray), "--dbc", str(dbc), "--speed", "0")
    assert r.returncode == 1, f"stray: exit {r.returncode}"
    assert re.search(r"no signal of .*test\.dbc seen \(5 frames, none of them in it\)", r.stderr), r.stderr
    # a damaged line: the values, and the place said, exit 1 (decode's rule)
    bad = d / "damaged.log"
    text = paths["log"].read_text().splitlines(keepends=True)
    bad.write_text("".join(text[:10]) + "this is no candump line\n" + "".join(text[10:]))
    r = run(railmon, "monitor", str(bad), "--dbc", str(dbc), "--speed", "0")
    assert r.returncode == 1, f"damaged: exit {r.returncode}"
    assert re.search(r"1 damaged part skipped, the first: .*damaged\.log:11", r.stderr), r.stderr
    title, rows, _ = parse_table(r.stdout)
    assert title.group(4) == "1", f"damaged: errors in {title.group(0)!r}"
    check_values("damaged", rows, last, decoded)
    print("ok: a trace with nothing of the DBC and a damaged line: said, exit 1")
    return dbc


J1939_DBC = DBC + """
BO_ 2566852608 Prop: 16 ECU
 SG_ Big : 96|16@1+ (0.5,0) [0|32767.5] "l" Vector__XXX
"""


def test_j1939(railmon, d):
    """--j1939: CCVS from another source address (0x17) matched by PGN, and
    a 16-byte message of PGN 0xFF10 in a BAM (TP.CM + 3 TP.DT)
    reassembled; without --j1939 neither decodes (ids differ from the DBC's)."""
    dbc = d / "j1939.dbc"
    dbc.write_text(J1939_DBC)
    payload = bytes(12) + struct.pack("<H", 4321) + bytes(2)  # Big = 4321 * 0.5
    lines = [("18FEF117", bytes([0xFF]) + struct.pack("<H", 25600) + bytes(5)),  # 100 km/h
             ("1CECFF00", bytes([0x20, 16, 0, 3, 0xFF, 0x10, 0xFF, 0x00]))]   # BAM: 16 bytes, 3 packets
    for k in range(3):
        lines.append(("1CEBFF00", bytes([k + 1]) + (payload[7 * k:7 * k + 7] + b"\xff" * 7)[:7]))
    log = d / "j1939.log"
    log.write_text("".join(f"(1764748800.{10 * (i + 1):06d}) can0 {cid}#{data.hex().upper()}\n"
                           for i, (cid, data) in enumerate(lines)))
    r = run(railmon, "monitor", str(log), "--dbc", str(dbc), "--speed", "0", "--j1939")
    assert r.returncode == 0, r.stderr
    title, rows, _ = parse_table(r.stdout)
    assert rows["CCVS.WheelSpeed"][0] == "100" and rows["Prop.Big"][0] == "2160.5", rows
    # frames 5: CCVS and the last TP.DT decode; the other packets are no unknown frames
    assert title.group(1, 2, 3, 4) == ("5", "2", "0", "0"), title.group(0)
    r = run(railmon, "monitor", str(log), "--dbc", str(dbc), "--speed", "0")
    assert r.returncode == 1 and "no signal of" in r.stderr, (r.returncode, r.stderr)
    title, rows, _ = parse_table(r.stdout)
    assert rows["CCVS.WheelSpeed"][0] == "-" and rows["Prop.Big"][0] == "-", rows
    assert title.group(1, 2, 3) == ("5", "0", "5"), title.group(0)
    print("ok: --j1939: a PGN from another source address and a BAM's 16 bytes decoded; not without it")


def test_bad_input(railmon, d, dbc):
    bad = d / "bad.dbc"
    bad.write_text(DBC.replace("BO_ 1024 Unused", "BO_ 1024 Unused\n garbage here\nBO_ 1025 X"))
    empty = d / "empty.dbc"
    empty.write_text('VERSION ""\n')
    cases = [
        (["monitor", "can0", "--dbc", str(d / "none.dbc")], 1, r"^railmon monitor: .*none\.dbc: No such file"),
        (["monitor", "can0", "--dbc", str(bad)], 1, r"^railmon monitor: .*bad\.dbc:20: "),
        (["monitor", "can0", "--dbc", str(empty)], 1, r"^railmon monitor: .*empty\.dbc defines no signal: nothing to "
                                                      r"monitor$"),
        (["monitor", "nosuch0", "--dbc", str(dbc)], 1, r"^railmon monitor: nosuch0: no such device$"),
        (["monitor", str(d / "none.log"), "--dbc", str(dbc)], 1, r"none\.log: No such file or directory$"),
        (["monitor", "slcan:" + str(d / "nosuchtty"), "--dbc", str(dbc)], 1, r"nosuchtty: No such file"),
        (["monitor", "can0", "--dbc", str(dbc), "--speed", "-1"], 2, r"^railmon monitor: --speed: expected .*'-1'$"),
        (["monitor", "slcan:/dev/null@12", "--dbc", str(dbc)], 2, r"expected a baud rate .* not '12'$"),
        (["monitor", "--dbc", str(dbc)], 2, r"^railmon monitor: which bus\?"),
        (["monitor", "/dev/null", "--dbc", str(dbc)], 2, r"^railmon monitor: /dev/null is a device, not a trace: "
                                                         r"an slcan adapter is slcan:/dev/null$"),
        (["monitor", "can0", "--dbc", str(dbc), "--speed", "2"], 2, r"--speed is for a trace, not a bus \(can0\)$"),
        (["monitor", str(dbc), "--dbc", str(dbc), "--bitrate", "500000"], 2, r"--bitrate is for a bus, not a trace"),
        (["monitor", str(dbc), "--dbc", str(dbc)], 1, r"test\.dbc: not a trace railmon reads \(candump log, ASC, BLF"),
        (["monitor", "can0"], 2, r"^railmon monitor: --dbc FILE is required$"),
    ]
    for argv, code, pat in cases:
        r = run(railmon, *argv)
        lines = r.stderr.splitlines()
        assert r.returncode == code, f"{argv}: exit {r.returncode}, want {code}: {r.stderr}"
        assert re.search(pat, lines[0] if lines else ""), f"{argv}: said {r.stderr!r}"
        assert len(lines) == (2 if code == 2 else 1), f"{argv}: {len(lines)} lines"
        assert "Usage:" not in r.stderr and r.stdout == "", f"{argv}: usage or output"
    print(f"ok: {len(cases)} bad inputs: one sentence each, exit 1 or 2")


def test_help(railmon):
    r = run(railmon, "monitor", "--help")
    assert r.returncode == 0 and r.stdout.startswith("Usage: railmon monitor SOURCE --dbc FILE"), r.stdout
    ex = r.stdout.split("\nExamples:\n")
    assert len(ex) == 2, "no Examples block"
    examples = [ln.strip() for ln in ex[1].splitlines() if ln.strip()]
    assert len(examples) >= 3 and all(e.startswith("railmon monitor ") and "--dbc" in e for e in examples), examples
    assert "slcan:" in r.stdout, "--help does not say the slcan syntax"
    print(f"ok: --help with {len(examples)} examples")


# ------------------------------------------------------------------ slcan

def slcan_setup(sock):
    """The driver's set-up commands up to "L" or "O", answered ("C" with
    BELL as on a closed channel, then CR).  A "C" said again is the
    driver's retry of one not answered within 50 ms: it counts once and
    gets no answer of its own, for under load this adapter answers late,
    and an answer to a retry coming more than the driver's 100 ms drain
    after the first one's is read as the next command's (seen: EIO on
    "L", the set-up failed).  A command not coming within 30 s fails the
    test (before: a read that never returned)."""
    buf, cmds = b"", []
    while not cmds or cmds[-1] not in ("L", "O"):
        ready, _, _ = select.select([sock.stdout], [], [], 30)
        assert ready, f"no set-up command within 30 s after {cmds}"
        chunk = os.read(sock.stdout.fileno(), 256)
        assert chunk, f"socat ended during the set-up: {cmds}"
        buf += chunk
        while b"\r" in buf:
            cmd, _, buf = buf.partition(b"\r")
            if cmd == b"C" and cmds[-1:] == ["C"]:
                continue
            cmds.append(cmd.decode())
            sock.stdin.write(b"\a" if cmd == b"C" else b"\r")
            sock.stdin.flush()
    return cmds


def slcan_adapter(sock, want):
    """An slcan adapter on socat's pipes: the set-up must be want (listen-only,
    never "O"); then a frame the DBC does not have and two Drive frames (the
    second's values are the last)."""
    cmds = slcan_setup(sock)
    assert cmds == want, f"set-up {cmds}, want {want}"
    sock.stdin.write(b"t7FF20102\r")  # not in the DBC; first: once the values show, all was read
    for raw in ((100, 0, 0, 0, 0), (1517, 1, 60, 1, 12345)):
        sock.stdin.write(b"t1238" + drive_frame(*raw).hex().upper().encode() + b"\r")
    sock.stdin.flush()


def socat_pty(path):
    """socat: a pty at path for monitor, its other end on socat's stdin and
    stdout, where the adapter (this test) speaks; closing socat's stdin
    ends socat, which hangs the pty up: an adapter unplugged."""
    socat = railmon_test.start_peer(["socat", f"PTY,link={path},raw,echo=0", "STDIO"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    railmon_test.wait_for("socat's pty", path.exists)
    return socat


ESC = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SLCAN_WANT = {"Drive.Speed": "75.85", "Drive.Direction": "1", "Drive.Temp": "20", "Drive.Flag": "1",
              "Drive.Pressure": "123.45"}


class Live:
    """monitor on a terminal: a pty of 160 x 40 as its stdin and stdout,
    read on a thread; stderr into a file.  Also for tests/vm/'s test."""

    def __init__(self, argv, errpath):
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
        self.err = open(errpath, "w+")
        self.proc = railmon_test.start_peer(argv, stdin=slave, stdout=slave, stderr=self.err,
                                            start_new_session=True)
        os.close(slave)
        self.screen = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return  # EIO: monitor closed the terminal
            if not chunk:
                return
            self.screen.extend(chunk)

    def last_screen(self):
        """The last frame drawn in place, without escapes ("" before the first)."""
        text = self.screen.decode(errors="replace")
        return ESC.sub("", text.split("\x1b[H")[-1]) if "\x1b[H" in text else ""

    def wait_values(self, what, want, also=""):
        """Wait for a frame that shows every name: value of want (and the text also)."""
        def shows():
            s = self.last_screen()
            got = {m.group(2): m.group(3) for m in map(ROW.match, s.splitlines()) if m}
            return all(got.get(k) == v for k, v in want.items()) and also in s and s
        return railmon_test.wait_for(what, shows)

    def end(self):
        """Wait for monitor to exit: its code, stderr, and the final table
        it printed after leaving the alternate screen."""
        code = self.proc.wait(timeout=30)
        self.reader.join(timeout=10)
        self.err.seek(0)
        final = ESC.sub("", self.screen.decode(errors="replace").split("\x1b[?1049l")[-1])
        os.close(self.master)
        return code, self.err.read(), final.replace("\r\n", "\n").strip("\n")


def test_slcan(railmon, d, dbc):
    a = d / "pty-monitor"
    socat = socat_pty(a)
    mon = Live([railmon, "monitor", f"slcan:{a}@57600", "--dbc", str(dbc), "--interval", "0.1",
                "--bitrate", "500000"], d / "monitor.err")
    slcan_adapter(socat, ["C", "S6", "L"])
    mon.wait_values("the live screen with the adapter's values", SLCAN_WANT, "forward")
    # a frame can be read half drawn (values, not yet the keys line at its
    # foot): wait for a whole one (CI 18:20, at low load)
    s = railmon_test.wait_for("a whole frame, the keys line at its foot",
                              lambda: (lambda t: "q quit" in t and t)(mon.last_screen()))
    assert re.search(r"monitor 3 frames, 2 decoded, 1 not in the DBC, 0 errors", s), s.splitlines()[0]
    assert "q quit" in s, "no keys line on the live screen"
    socat.stdin.close()
    code, said, final = mon.end()
    assert code == 1, f"monitor exit {code} when the device went: {said}"
    assert re.fullmatch(rf"railmon monitor: slcan:{re.escape(str(a))}@57600: the device is gone \(hung up\)\n",
                        said), said
    title, rows, _ = parse_table(final)
    assert title.group(1, 2, 3) == ("3", "2", "1") and title.group(5) == ", gone: hung up", title.group(0)
    assert {k: rows[k][0] for k in SLCAN_WANT} == SLCAN_WANT, rows
    assert socat.wait(timeout=30) == 0, "socat did not end at the end of its input"
    print("ok: slcan through socat: the live screen shows the values; the adapter goes: "
          "'the device is gone', the final table, exit 1")

    # a rate slcan has no S command for: said (the driver refuses it before a command)
    b = d / "pty-2"
    socat = socat_pty(b)
    mon = subprocess.Popen([railmon, "monitor", f"slcan:{b}", "--dbc", str(dbc), "--bitrate", "33333"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=railmon_test.die_with_us)
    out, said = mon.communicate(timeout=30)
    assert mon.returncode == 1 and out == "", (mon.returncode, out)
    assert said == f"railmon monitor: slcan:{b}: --bitrate 33333: an slcan adapter has 10000, 20000, 50000, " \
                   "100000, 125000, 250000, 500000, 800000 or 1000000\n", said
    # without --bitrate the adapter's rate is left ("C", "L"); not on a
    # terminal, SIGTERM ends it: the final table, nothing seen said, exit 1
    mon = subprocess.Popen([railmon, "monitor", f"slcan:{b}", "--dbc", str(dbc)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, preexec_fn=railmon_test.die_with_us)
    assert slcan_setup(socat) == ["C", "L"]
    mon.terminate()
    out, said = mon.communicate(timeout=30)
    assert mon.returncode == 1, mon.returncode
    assert said == f"railmon monitor: slcan:{b}: no signal of {dbc} seen (0 frames, none of them in it)\n", said
    title, rows, _ = parse_table(out)
    assert title.group(1) == "0" and title.group(5) is None and all(v == "-" for v, _ in rows.values()), out
    socat.stdin.close()
    print("ok: slcan: --bitrate 500000 is S6, 33333 is said, none is no S; SIGTERM: the final table")


def test_keys(railmon, d, dbc):
    """A trace at --speed 1 on a terminal: 's' sorts by name, '/' filters,
    'q' quits: exit 0 and the final table as the screen last was."""
    log = d / "long.log"
    log.write_text("".join(f"({1764748800 + 30 * k}.000000) can0 123#{drive_frame(k, 1, 0, 0, 0).hex().upper()}\n"
                           for k in range(20)))
    mon = Live([railmon, "monitor", str(log), "--dbc", str(dbc), "--interval", "0.1"], d / "keys.err")
    railmon_test.wait_for("the first frame", lambda: "1-7 of 7 channels, sort id" in mon.last_screen())
    os.write(mon.master, b"s")
    railmon_test.wait_for("sort name", lambda: "1-7 of 7 channels, sort name" in mon.last_screen())
    os.write(mon.master, b"/drive\r")
    railmon_test.wait_for("the filter", lambda: "(filter 'drive' of 7), sort name" in mon.last_screen())
    os.write(mon.master, b"q")
    code, said, final = mon.end()
    assert code == 0 and said == "", (code, said)
    title, rows, foot = parse_table(final)
    assert list(rows) == sorted(k for k in rows if k.startswith("Drive.")) and len(rows) == 5, list(rows)
    assert foot == "1-5 of 5 channels (filter 'drive' of 7), sort name", foot
    print("ok: keys on a trace at --speed 1: s, / filter, q; the final table as the screen was")

    # --duration ends a paced trace: its first frame is in the table, the
    # next one (30 s of the trace later) is not, and that is no error
    r = run(railmon, "monitor", str(log), "--dbc", str(dbc), "--duration", "1", "--interval", "0.1")
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    title, rows, _ = parse_table(r.stdout)
    assert title.group(1, 2, 5) == ("1", "1", None) and rows["Drive.Speed"][0] == "0", r.stdout
    print("ok: --duration 1 on a paced trace: the table of its first frame, exit 0")
    # The same when the duration is over before the loop first reads (a
    # machine so loaded that 1 s passed there, made certain with 1 ns):
    # what is due is read before the stop is looked at, so the first frame
    # is in the table whatever the load (the title counted it before).
    r = run(railmon, "monitor", str(log), "--dbc", str(dbc), "--duration", "0.000000001")
    assert r.returncode == 0 and r.stderr == "", (r.returncode, r.stderr)
    title, rows, _ = parse_table(r.stdout)
    assert title.group(1, 2, 5) == ("1", "1", None) and rows["Drive.Speed"][0] == "0", r.stdout
    print("ok: --duration over before the first read: the first frame read all the same, exit 0")


def main():
    railmon = sys.argv[1]
    d = Path(tempfile.mkdtemp(prefix="test-monitor."))
    try:
        dbc = test_traces(railmon, d)
        test_j1939(railmon, d)
        test_bad_input(railmon, d, dbc)
        test_help(railmon)
        test_keys(railmon, d, dbc)
        if shutil.which("socat"):
            test_slcan(railmon, d, dbc)
        else:
            sys.exit("socat is not installed (tests/deps.sh installs it)")
    finally:
        railmon_test.stop_peers()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
