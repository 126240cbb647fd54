#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""live-board.py SRCDIR TRACE OUT - the board of the live benchmarks
(bench-pipeline.sh, bench-paced.sh): emu-regional with its two DBCs, both
CAN buses reading TRACE (filtered by interface) paced at real time, no
Modbus, no watchdog, stat socket, data dir or realtime priority (the
command line gives --data)."""
import re
import sys

src, trace, out = sys.argv[1:4]
s = open(f"{src}/cli/vehicles/emu-regional.ini").read()
s = s.replace("../demo/train.dbc", f"{src}/cli/demo/train.dbc")
s = s.replace("emu-traction.dbc", f"{src}/cli/vehicles/emu-traction.dbc")
s = re.sub(r"driver = socketcan\n", f"driver = trace\nfile = {trace}\nspeed = 1\n", s)
s = re.sub(r"\n\[modbus hvac\].*", "\n", s, flags=re.S)
s = re.sub(r"^(hw_watchdog.*|stat_socket.*|dir = .*|rt_priority = .*)$", "", s, flags=re.M)
open(out, "w").write(s)
