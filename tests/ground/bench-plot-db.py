#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-plot-db.py RAILMON SRC - `railmon plot --db` over a day of one
channel (issue 29), from the summary rollup and the raw rows of the
seconds it cannot answer, against every raw row (`--raw`, what a plot of
the database costs without the rollup), in one run on one machine,
printed as a ratio table (no timing assertions):

- a day of Vehicle.Speed at RAILMON_BENCH_HZ (100: 8.64 M samples) and
  Vehicle.Pressure at 1 Hz (plot_day.py: one sample in
  RAILMON_BENCH_INVALID_EVERY (100) invalid, a NaN a minute, pauses),
  loaded by SQL into a PostgreSQL 15 started here (pg.py), the
  rollup built by `railmon db migrate`'s backfill;
- plot --db of the day (SVG) and of 03:00:00.25 to 21:30:00.75 (PNG),
  rollup and --raw interleaved, best of 3 each, the pictures compared
  (the same bytes, or the benchmark fails), and each one's peak memory.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RAILMON, SRC = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
ground_paths.paths()
from pg import Postgres  # noqa: E402
from mqtt_peers import check  # noqa: E402
import plot_day  # noqa: E402

HZ = int(os.environ.get("RAILMON_BENCH_HZ", "100"))
# one Speed sample in this many invalid: 100 puts one in every second at
# 100 Hz, whose invalid rows the rollup path then reads in every second
INVALID = int(os.environ.get("RAILMON_BENCH_INVALID_EVERY", "100"))
TMP = tempfile.mkdtemp(prefix="bench-plot-db-")
RSS = {}


def timed(argv, key):
    """(seconds, picture bytes, stderr) of argv; its peak resident memory kept in RSS (KiB)."""
    rss = os.path.join(TMP, "rss")
    t0 = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%M"] + argv, capture_output=True, text=True,
                       timeout=3600)
    dt = time.monotonic() - t0
    check(r.returncode == 0, " ".join(argv), r.stderr[-2000:])
    with open(rss) as f:
        RSS[key] = max(RSS.get(key, 0), int(f.read().split()[-1]))
    with open(argv[argv.index("-o") + 1], "rb") as f:
        return dt, f.read(), r.stderr


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    pg = Postgres()
    try:
        t0 = time.monotonic()
        rows = plot_day.load(pg, RAILMON, SRC, HZ, INVALID)
        print("loaded %d samples (1 in %d of Speed invalid) and built the rollup in %.1f s"
              % (rows, INVALID, time.monotonic() - t0))
        base = [RAILMON, "plot", "--db", pg.url, "--vehicle", "day", "-c", "Speed"]
        cut = ["--from", plot_day.DAY + "T03:00:00.25Z", "--to", plot_day.DAY + "T21:30:00.75Z"]
        cases = [("a day of Vehicle.Speed (%d Hz), SVG" % HZ, "day.svg", []),
                 ("03:00:00.25 to 21:30:00.75 of it, PNG", "cut.png", cut)]
        print("| plot --db | raw rows (--raw) | rollup | ratio | what the rollup path read |")
        print("|---|---|---|---|---|")
        for what, out, args in cases:
            times = {"raw": [], "rollup": []}
            pics = {}
            for _ in range(3):  # interleaved: the machine's load falls on both
                for key, extra in (("raw", ["--raw"]), ("rollup", [])):
                    path = os.path.join(TMP, key + "-" + out)
                    dt, pic, err = timed(base + args + ["-o", path] + extra, key)
                    times[key].append(dt)
                    pics[key] = (pic, err)
            check(pics["raw"][0] == pics["rollup"][0] and pics["raw"][0], what + ": the same picture")
            said = [line for line in pics["rollup"][1].splitlines() if "from the rollup" in line]
            said = said[0].split("--db: ")[1] if said else "?"
            raw, roll = min(times["raw"]), min(times["rollup"])
            print("| %s | %.3f s | %.3f s | %.1fx | %s |" % (what, raw, roll, raw / roll, said))
        print("the same bytes from both in every case: yes")
        print("peak memory: --raw %d KiB, rollup %d KiB" % (RSS["raw"], RSS["rollup"]))
    finally:
        pg.fini()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
