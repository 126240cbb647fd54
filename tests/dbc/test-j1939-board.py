#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-j1939-board.py RAILMON: a board with a J1939 bus (j1939 = true) runs
a candump trace written here (test-j1939.py's session writer) and its log
must hold:
- single frames decoded by PGN whatever their source address and priority
  (the DBC says SA 0x00, priority 3; the frames come from 0x17, priority 6);
- a 16-byte PGN reassembled from a BAM and decoded, signals past byte 8;
- DM1 trouble codes as events when they appear (single frame, then three
  codes in a BAM) and when they clear (a DM1 without codes);
- a BAM with a missing packet and one that stops as TP_FAULT events."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("tp", os.path.join(HERE, "test-j1939.py"))
tp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tp)

DBC = '''VERSION ""

NS_ :

BS_:

BU_: ECU LOG

BO_ 2566841600 EngineHours: 16 ECU
 SG_ Hours : 0|32@1+ (0.05,0) [0|210554060.75] "h" LOG
 SG_ Revolutions : 32|32@1+ (1000,0) [0|0] "r" LOG
 SG_ Tail : 96|32@1+ (1,0) [0|0] "" LOG

BO_ 2364540158 EEC1: 8 ECU
 SG_ EngineSpeed : 24|16@1+ (0.125,0) [0|8031.875] "rpm" LOG
'''


def dtc(spn, fmi, oc):
    return [spn & 0xFF, spn >> 8 & 0xFF, (spn >> 16) << 5 | fmi, oc]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    railmon = sys.argv[1]
    log = tp.Log()
    t_eec1 = log.frame(0xF0, 0x04, 0x17, [0xFF, 0xFF, 0xFF, 0x80, 0x3E, 0xFF, 0xFF, 0xFF], 6)
    hours = list((123456).to_bytes(4, "little")) + list((789).to_bytes(4, "little")) + [0xAA] * 4 + \
        list((0xDEADBEEF).to_bytes(4, "little"))
    t_hours = tp.bam(log, 0x03, 0xFEE5, hours)
    # DM1: MIL on (0x40), amber warning (0x04); one code, then three, then none
    t_dm1a = log.frame(0xFE, 0xCA, 0x00, [0x44, 0x00] + dtc(100, 1, 3) + [0xFF, 0xFF], 6)
    t_dm1b = tp.bam(log, 0x00, 0xFECA, [0x44, 0x00] + dtc(100, 1, 4) + dtc(110, 0, 1) + dtc(520000, 31, 2))
    t_dm1c = log.frame(0xFE, 0xCA, 0x00, [0x00, 0x00, 0, 0, 0, 0, 0xFF, 0xFF], 6)
    t_seq = tp.bam(log, 0x05, 0xFEE5, hours, skip=(2,))  # packet 3 comes where 2 should
    log.cm(0x06, 0xFF, 32, 16, 0, 3, 0xFF, 0xFEE5, 6)
    log.dt(0x06, 0xFF, 1, hours)
    t_late = log.frame(0xF0, 0x04, 0x17, [0xFF, 0xFF, 0xFF, 0x80, 0x3E, 0xFF, 0xFF, 0xFF], 6, 2_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "j1939.dbc"), "w") as f:
            f.write(DBC)
        with open(os.path.join(tmp, "j1939.log"), "w") as f:
            f.write("\n".join(log.lines) + "\n")
        with open(os.path.join(tmp, "b.ini"), "w") as f:
            f.write("[board]\nvehicle = J1939\n[storage]\nsegment_size = 1M\n[can engine]\ndriver = trace\n"
                    "file = j1939.log\ndbc = j1939.dbc\nj1939 = true\nspeed = 0\n")
        p = subprocess.run([railmon, "run", "--board", os.path.join(tmp, "b.ini"), "--data",
                            os.path.join(tmp, "d"), "--duration", "1"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            fail("run: %s" % p.stderr)
        p = subprocess.run([railmon, "export", "--data", os.path.join(tmp, "d"), "--format", "jsonl",
                            "-k", "sample", "-k", "event"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            fail("export: %s" % p.stderr)
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    got = [(r["time_ns"] // 1000, r["name"], r["value"]) for r in recs if r["kind"] == "sample"]
    want = [(t_eec1, "EEC1.EngineSpeed", 2000.0),
            (t_hours, "EngineHours.Hours", 123456 * 0.05), (t_hours, "EngineHours.Revolutions", 789000.0),
            (t_hours, "EngineHours.Tail", float(0xDEADBEEF)),
            (t_late, "EEC1.EngineSpeed", 2000.0)]
    for g, w in zip(got, want):
        print("sample %s %s" % (g, "ok" if g == w else "WANT %s" % (w,)))
    if got != want:
        fail("samples: got %s, want %s" % (got, want))

    def dtc_arg(spn, fmi, oc, lamps):
        return spn | fmi << 19 | oc << 24 | lamps << 32

    def fault_arg(kind, reason, expected, nr, total, da):
        return kind | reason << 8 | expected << 16 | nr << 24 | total << 32 | da << 40

    got = [(r["time_ns"] // 1000, r["event"], r["arg"], r["detail"]) for r in recs
           if r["kind"] == "event" and r["event"].startswith("J1939")]
    want = [(t_dm1a, "J1939_DTC_ACTIVE", dtc_arg(100, 1, 3, 0x44), 0),
            (t_dm1b, "J1939_DTC_ACTIVE", dtc_arg(110, 0, 1, 0x44), 0),
            (t_dm1b, "J1939_DTC_ACTIVE", dtc_arg(520000, 31, 2, 0x44), 0),
            (t_dm1c, "J1939_DTC_CLEARED", dtc_arg(100, 1, 4, 0), 0),
            (t_dm1c, "J1939_DTC_CLEARED", dtc_arg(110, 0, 1, 0), 0),
            (t_dm1c, "J1939_DTC_CLEARED", dtc_arg(520000, 31, 2, 0), 0),
            (t_seq, "J1939_TP_FAULT", fault_arg(3, 3, 2, 1, 3, 0xFF), 0xFEE5 | 0x05 << 24),
            (t_late, "J1939_TP_FAULT", fault_arg(2, 0, 2, 1, 3, 0xFF), 0xFEE5 | 0x06 << 24)]
    for g, w in zip(got, want):
        print("event %s %s" % (g, "ok" if g == w else "WANT %s" % (w,)))
    if got != want:
        fail("events: got %s, want %s" % (got, want))
    print("j1939-board: 5 samples by PGN, %d J1939 events, as written" % len(got))


if __name__ == "__main__":
    main()
