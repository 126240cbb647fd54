#!/usr/bin/python3
"""test-dictionary-note.py RAILMON SRC - a channel dictionary over 1 MiB.

The retained railmon/<vehicle>/channels message is one Batch (1 MiB at
most): with a board whose DBC names more than that holds, the forwarder
sends what fits and `railmon run` says so, in these words, once, before
the start's other lines.  pipeline/ prints nothing: it counts
(pl_daemon_uplink_dictionary) and board/ says it (cli_uplink_dictionary).
The broker is a port nobody listens on: the dictionary is built when the
uplink is set up, not when it connects.  A small DBC says nothing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import free_port  # noqa: E402

RAILMON, SRC = sys.argv[1:3]
NMSG, NSIG = 48, 64  # 3,072 signals of one bit, each with a value table


def dbc(path):
    with open(path, "w") as f:
        f.write('VERSION ""\n\nNS_ :\n\nBS_:\n\nBU_: ECU\n\n')
        for m in range(NMSG):
            f.write(f"BO_ {256 + m} Message_{m:03d}_with_a_long_name_for_the_dictionary: 8 ECU\n")
            for s in range(NSIG):
                f.write(f" SG_ Signal_{m:03d}_{s:02d}_whose_name_is_long_enough_to_fill_the_dictionary : "
                        f"{s}|1@1+ (1,0) [0|1] \"unit_of_the_signal\" Vector__XXX\n")
            f.write("\n")
        for m in range(NMSG):
            for s in range(NSIG):
                f.write(f"VAL_ {256 + m} Signal_{m:03d}_{s:02d}_whose_name_is_long_enough_to_fill_the_dictionary "
                        "1 \"the first state, described at some length so the table is large\" "
                        "0 \"the other state, described at some length so the table is large\" ;\n")


def run(tmp, dbc_path, name):
    board = os.path.join(tmp, name + ".ini")
    with open(board, "w") as f:
        f.write("[board]\nvehicle = DICT-1\nrt_priority = 0\n[storage]\ndir = %s/%s-log\n"
                "[uplink]\nbroker = mqtt://127.0.0.1:%d\n"
                "[can vehicle]\ndriver = trace\nfile = %s/cli/demo/train.log\ndbc = %s\n"
                % (tmp, name, free_port(), SRC, dbc_path))
    r = subprocess.run([RAILMON, "run", "--board", board, "--duration", "1"], capture_output=True, text=True,
                       timeout=120)
    return r


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-dict-")
    try:
        big = os.path.join(tmp, "big.dbc")
        dbc(big)
        r = run(tmp, big, "big")
        assert r.returncode == 0, r.stderr
        lines = r.stderr.splitlines()
        said = [i for i, x in enumerate(lines) if "retained channels message" in x]
        assert len(said) == 1, r.stderr
        m = re.fullmatch(r"railmon: uplink: the retained channels message holds (\d+) of (\d+) channels \(1 MiB\); "
                         r"the others are named by the Batches' dictionaries", lines[said[0]])
        assert m, lines[said[0]]
        held, total = int(m.group(1)), int(m.group(2))
        assert total == NMSG * NSIG and 0 < held < total, (held, total)
        start = [i for i, x in enumerate(lines) if x.startswith("railmon run: vehicle DICT-1")]
        assert start and said[0] < start[0], r.stderr
        small = run(tmp, os.path.join(SRC, "cli/demo/train.dbc"), "small")
        assert small.returncode == 0 and "retained channels message" not in small.stderr, small.stderr
        print(f"a {total}-channel dictionary: the retained message holds {held}, said once before the start; "
              "the demo's DBC: nothing said")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
