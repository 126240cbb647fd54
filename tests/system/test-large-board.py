#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-large-board.py RAILMON MB_SERVER MODE - boards at railmon's limits,
through the real binary and real peers.

MODE channels: a board with 10,000 channels: 2,000 Modbus registers
  (served by the libmodbus fault server, every register holding
  unit * 1000 + address) and a DBC of 8,000 signals (1,000 messages)
  fed from a generated candump trace.  `railmon run` acquires it and
  `railmon export` must give every channel id with its name and the
  value its source holds.  (rec_encoder_finish once put the channel
  dictionary on the collector's 256 KiB stack: the first Batch of such a
  board crashed.  The names are as long as generated DBCs have them, so
  the dictionary is over 1 MiB, the log's largest record: it must go out
  in slices, and the trace starts with the channels of the last slice.)
MODE wide-frame: one CAN FD message of 64 bytes holding 512 one-bit
  signals; `railmon replay` of frames of it: every frame must give all
  512 samples, each the right bit, in the log.  (The decode scratch once
  held 256 samples: the rest were silently dropped.)
MODE id-limit: channel ids are bus << 16 | n, so a bus can have 65,536
  channels: a DBC of 65,536 signals is accepted and each is stored under
  its own id and name (`replay` + `export`); one of 65,537 must be refused
  by `check` and `run` with the board file's line of 'dbc =' and the
  DBC's name.
MODE over-65536: a log with more channels than one bus has ids: two buses
  of 65,536 signals each (131,072 channels, every name different), one
  frame of every message on each; `replay` + `export` must name every
  channel.  (export's table once held 65,536 names and silently dropped
  the rest.)
Each peer this starts is stopped on every exit path (its stdin closes
with us, which stops the fault server even if we are killed; railmon is
killed by subprocess.run on any exception).  KEEP=1 keeps the files.
"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import start_peer, stop_peer  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def dbc_text(messages):
    """messages: [(id, name, dlc, [(signal, start, size)])]"""
    out = ['VERSION ""', "", "NS_ :", "", "BS_:", "", "BU_: ECU LOGGER", ""]
    for ident, name, dlc, sigs in messages:
        out.append("BO_ %d %s: %d ECU" % (ident, name, dlc))
        for s, start, size in sigs:
            out.append(' SG_ %s : %d|%d@1+ (1,0) [0|0] "u" LOGGER' % (s, start, size))
        out.append("")
    return "\n".join(out) + "\n"


def candump(t_us, ident, data, fd=False):
    sep = "##1" if fd else "#"
    return "(%d.%06d) can0 %03X%s%s\n" % (t_us // 1000000, t_us % 1000000, ident, sep, data.hex().upper())


def run(cmd, timeout=100):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def export_samples(railmon, data):
    p = run([railmon, "export", "--data", data, "--format", "jsonl", "--kind", "sample"])
    if p.returncode != 0:
        fail("export: rc %d: %s" % (p.returncode, p.stderr[-2000:]))
    return [json.loads(line) for line in p.stdout.splitlines()]


class FaultServer:
    """mb-fault-server --tcp 0: ready at "READY <port>", stops at stdin EOF."""

    def __init__(self, path):
        self.p = start_peer([path, "--tcp", "0"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        if len(line) != 2 or line[0] != "READY":
            self.stop()
            fail("mb-fault-server did not start: %r" % line)
        self.port = int(line[1])

    def stop(self):
        stop_peer(self.p, None)


def sig_name(m, k):
    return "TractionConverter%04d_Inverter%d_PhaseCurrentStatusFiltered" % (m, k)


def mode_channels(railmon, mb_server, tmp):
    n_mb, n_msgs, per_msg = 2000, 1000, 8
    msgs, expect = [], {}
    for m in range(n_msgs):
        # names as long as generated (AUTOSAR) DBCs have them: the
        # dictionary alone is then over 1 MiB, the log's largest record
        sigs = [(sig_name(m, k), 8 * k, 8) for k in range(per_msg)]
        msgs.append((0x100 + m, "TractionConverterStatusMessage%04d" % m, 8, sigs))
    with open(os.path.join(tmp, "big.dbc"), "w") as f:
        f.write(dbc_text(msgs))
    # every message twice, the last first: the first Batch then holds
    # samples of the channels whose dictionary entries only fit in a later
    # Batch.  Byte k of message m holds (m * 8 + k) & 0xff.
    with open(os.path.join(tmp, "big.log"), "w") as f:
        for rep in range(2):
            for m in reversed(range(n_msgs)):
                data = bytes((m * 8 + k) & 0xFF for k in range(per_msg))
                f.write(candump(1000000000 + rep * 1000000 + m * 100, 0x100 + m, data))
    srv = FaultServer(mb_server)
    try:
        board = ["[board]", "vehicle = LARGE-1", "batch_ms = 200", "",
                 "[modbus devices]", "transport = tcp", "host = 127.0.0.1", "port = %d" % srv.port,
                 "period_ms = 200", "response_timeout_ms = 500", "",
                 "[can vehicle]", "driver = trace", "file = big.log", "dbc = big.dbc", "speed = 0", ""]
        for a in range(n_mb):
            board += ["[channel aux_converter_holding_%04d]" % a, "bus = devices", "unit_id = 1", "address = %d" % a, ""]
        with open(os.path.join(tmp, "board.ini"), "w") as f:
            f.write("\n".join(board))
        # ids: bus 0 (Modbus) << 16 | board-file order, bus 1 (CAN) << 16 | DBC order
        for a in range(n_mb):
            expect[a] = ("aux_converter_holding_%04d" % a, float((1000 + a) & 0xFFFF))
        for m in range(n_msgs):
            for k in range(per_msg):
                expect[1 << 16 | (m * per_msg + k)] = ("TractionConverterStatusMessage%04d.%s" % (m, sig_name(m, k)),
                                                      float((m * 8 + k) & 0xFF))
        data = os.path.join(tmp, "log")
        p = run([railmon, "run", "--board", os.path.join(tmp, "board.ini"), "--data", data, "--duration", "3"])
        print(p.stderr.strip()[-600:])
        if p.returncode != 0:
            fail("railmon run: rc %d (a negative rc is the signal that killed it)" % p.returncode)
    finally:
        srv.stop()
    samples = export_samples(railmon, data)
    seen, wrong = {}, 0
    for s in samples:
        seen.setdefault(s["channel"], set()).add(s["name"])
        e = expect.get(s["channel"])
        if e is None or s["name"] != e[0] or s["value"] != e[1] or s["quality"] != "good":
            wrong += 1
            if wrong <= 5:
                print("unexpected sample: %r (want %r)" % (s, e))
    missing = [c for c in expect if c not in seen]
    unnamed = [c for c, names in seen.items() if names != {expect.get(c, ("?",))[0]}]
    print("%d channels expected, %d samples exported, %d channels seen, %d missing, %d badly named, "
          "%d wrong" % (len(expect), len(samples), len(seen), len(missing), len(unnamed), wrong))
    if missing or unnamed or wrong:
        fail("missing %s..., badly named %s..." % (missing[:5], unnamed[:5]))


def mode_wide_frame(railmon, tmp):
    nsig, nframes = 512, 20
    sigs = [("Bit%03d" % i, i, 1) for i in range(nsig)]
    with open(os.path.join(tmp, "wide.dbc"), "w") as f:
        f.write(dbc_text([(0x123, "Wide", 64, sigs)]))
    rng = random.Random(7)
    frames = [bytes(rng.randrange(256) for _ in range(64)) for _ in range(nframes)]
    with open(os.path.join(tmp, "wide.log"), "w") as f:
        for i, d in enumerate(frames):
            f.write(candump(1000000000 + i * 1000, 0x123, d, fd=True))
    with open(os.path.join(tmp, "wide.ini"), "w") as f:
        f.write("[board]\nvehicle = WIDE-1\n\n[can fd]\ndriver = trace\nfile = wide.log\n"
                "dbc = wide.dbc\nfd = true\nspeed = 0\n")
    data = os.path.join(tmp, "log")
    p = run([railmon, "replay", os.path.join(tmp, "wide.log"), "--board", os.path.join(tmp, "wide.ini"),
             "--data", data])
    if p.returncode != 0:
        fail("replay: rc %d: %s" % (p.returncode, p.stderr))
    samples = export_samples(railmon, data)
    by_time = {}
    for s in samples:
        by_time.setdefault(s["time_ns"], []).append(s)
    bad = 0
    for i, d in enumerate(frames):
        got = {s["channel"]: (s["name"], s["value"]) for s in by_time.get((1000000000 + i * 1000) * 1000, [])}
        want = {b: ("Wide.Bit%03d" % b, float((d[b // 8] >> (b % 8)) & 1)) for b in range(nsig)}
        if got != want:
            bad += 1
            print("frame %d: %d of %d signals stored, %d right" %
                  (i, len(got), nsig, sum(1 for k, v in got.items() if want.get(k) == v)))
    print("%d frames of a 64-byte message with %d one-bit signals: %d samples stored, %d frames wrong"
          % (nframes, nsig, len(samples), bad))
    if bad or len(samples) != nframes * nsig:
        fail("signals lost or wrong")


def named_samples(railmon, data):
    """{channel id: {(name, value), ...}} of the exported samples"""
    named = {}
    for s in export_samples(railmon, data):
        named.setdefault(s["channel"], set()).add((s["name"], s["value"]))
    return named


def fd_dbc(path, nsig, prefix):
    """nsig one-bit signals in 64-byte FD messages of 512 (extended ids
    0..): (number of messages, {signal index: name})"""
    msgs, names, left, m = [], {}, nsig, 0
    while left:
        k = min(left, 512)
        sigs = [("%s%03d_%03d" % (prefix, m, i), i, 1) for i in range(k)]
        msgs.append((0x80000000 | m, "Fd%03d" % m, 64, sigs))
        names.update({m * 512 + i: "Fd%03d.%s" % (m, s[0]) for i, s in enumerate(sigs)})
        left -= k
        m += 1
    with open(path, "w") as f:
        f.write(dbc_text(msgs))
    return m, names


def mode_over_65536(railmon, tmp):
    want = {}
    with open(os.path.join(tmp, "two.log"), "w") as log:
        for bus, prefix in enumerate(("Left", "Right")):
            nmsg, names = fd_dbc(os.path.join(tmp, "bus%d.dbc" % bus), 65536, prefix)
            want.update({bus << 16 | n: {(name, 1.0)} for n, name in names.items()})
            for k in range(nmsg):
                log.write("(1.%06d) can%d %08X##1%s\n" % (2 * k + bus, bus, k, "FF" * 64))
    board = os.path.join(tmp, "two.ini")
    with open(board, "w") as f:
        f.write("[board]\nvehicle = IDS2\n\n")
        for bus in range(2):
            f.write("[can side%d]\ndriver = trace\nfile = two.log\ninterface = can%d\nfd = true\n"
                    "dbc = bus%d.dbc\n\n" % (bus, bus, bus))
    data = os.path.join(tmp, "log")
    p = run([railmon, "replay", os.path.join(tmp, "two.log"), "--board", board, "--data", data])
    if p.returncode != 0:
        fail("replay of 131,072 channels: rc %d: %s" % (p.returncode, p.stderr))
    named = named_samples(railmon, data)
    right = sum(1 for c in want if named.get(c) == want[c])
    print("%d channels on 2 buses: %d channel ids exported, %d with their own name and value" %
          (len(want), len(named), right))
    if named != want:
        bad = [c for c in want if named.get(c) != want[c]][:5]
        fail("not every channel named: %s" % ["%#x: %r" % (c, named.get(c)) for c in bad])


def mode_id_limit(railmon, tmp):
    def board(nsig):
        m, _ = fd_dbc(os.path.join(tmp, "n%d.dbc" % nsig), nsig, "S")
        # one frame of every message, all bits set
        with open(os.path.join(tmp, "n%d.log" % nsig), "w") as f:
            for k in range(m):
                f.write("(1.%06d) can0 %08X##1%s\n" % (k, k, "FF" * 64))
        path = os.path.join(tmp, "n%d.ini" % nsig)
        with open(path, "w") as f:
            f.write("[board]\nvehicle = IDS\n\n; the bus\n[can huge]\ndriver = trace\nfile = n%d.log\n"
                    "fd = true\ndbc = n%d.dbc\n" % (nsig, nsig))
        return path

    # 65,536 signals use every id n = 0..65535 once: accepted, and each
    # stored under its own id and name (the dictionary, about 1.9 MiB, goes
    # out in slices over several Batches)
    ok = board(65536)
    p = run([railmon, "check", "--board", ok])
    if p.returncode != 0 or "65536 signals" not in p.stdout:
        fail("65,536 signals (ids n = 0..65535) refused: %s%s" % (p.stdout[-300:], p.stderr))
    data = os.path.join(tmp, "log65536")
    p = run([railmon, "replay", os.path.join(tmp, "n65536.log"), "--board", ok, "--data", data])
    if p.returncode != 0:
        fail("replay of 65,536 signals: rc %d: %s" % (p.returncode, p.stderr))
    named = named_samples(railmon, data)
    want = {m * 512 + i: {("Fd%03d.S%03d_%03d" % (m, m, i), 1.0)} for m in range(128) for i in range(512)}
    print("65536 signals: %d channel ids stored, %d as expected" %
          (len(named), sum(1 for c in want if named.get(c) == want[c])))
    if named != want:
        fail("65,536 signals not stored one per id with their names")
    over = board(65537)
    want = "%s:9: [can huge]: %s/n65537.dbc: 65537 signals, but a bus has channel ids for 65536" % (over, tmp)
    for cmd in (["check", "--board", over], ["run", "--board", over, "--data", os.path.join(tmp, "log"),
                                                "--duration", "1"]):
        p = run([railmon] + cmd)
        print("railmon %s: rc %d: %s" % (cmd[0], p.returncode, p.stderr.strip()))
        if p.returncode == 0 or want not in p.stderr:
            fail("railmon %s accepted 65,537 signals on one bus or said it unclearly (want '%s')" % (cmd[0], want))


def main():
    railmon, mb_server, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    # meson stops a test that times out with SIGTERM: leave through finally
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed"))
    tmp = tempfile.mkdtemp(prefix="railmon-test-large.")
    try:
        if mode == "channels":
            mode_channels(railmon, mb_server, tmp)
        elif mode == "wide-frame":
            mode_wide_frame(railmon, tmp)
        elif mode == "id-limit":
            mode_id_limit(railmon, tmp)
        elif mode == "over-65536":
            mode_over_65536(railmon, tmp)
        else:
            fail("unknown mode " + mode)
    finally:
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept " + tmp)
    print("PASS")


if __name__ == "__main__":
    main()
