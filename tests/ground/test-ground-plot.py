#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-plot.py RAILMON SRC - `railmon plot --db` (issue 29) on a
real PostgreSQL 15 holding a day of one channel at 10 Hz and one at 1 Hz
(plot_day.py: ties between the seconds of a bucket, NaN, invalid and
out-of-range samples, pauses between seconds and inside one):

- over the day, and over 03:00:00.25 to 21:30:00.75 (a window cutting
  seconds), the picture from the rollup (rollup_summary_1s and the raw
  rows of the seconds that can hold a drawn point) is byte for byte the
  one from every raw row (--raw): PNG, SVG and HTML, one channel and two;
  the lines on stderr (samples drawn, invalid and NaN ones left out) too;
- the rollup is what answered: its line on stderr says the seconds taken
  from it and the rows of how many read, far fewer than the day's;
- a shorter window (10 minutes; 6 hours: buckets of 2^33 ns, narrower
  than the rule's 2^34) reads the raw rows: no rollup line, the same
  picture as --raw;
- --raw without --db is a usage error.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

RAILMON, SRC = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
ground_paths.paths()
from pg import Postgres  # noqa: E402
from mqtt_peers import check  # noqa: E402
import plot_day  # noqa: E402

HZ = 10
TMP = tempfile.mkdtemp(prefix="test-ground-plot-")
ROLLUP = re.compile(r"^railmon plot: --db: (\d+) seconds? from the rollup, the rows of (\d+) read "
                    r"\(and the invalid or NaN ones of (\d+) more\)$")


def plot(pg, args, out, raw):
    path = os.path.join(TMP, ("raw-" if raw else "rollup-") + out)
    argv = [RAILMON, "plot", "--db", pg.url, "--vehicle", "day", "-o", path] + args + (["--raw"] if raw else [])
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, " ".join(argv), r.stderr)
    with open(path, "rb") as f:
        return f.read(), r.stderr.splitlines()


def same(pg, what, args, out, rolled):
    """The picture and the stderr lines of both paths; the rollup's line
    there (rolled) or not; returns (seconds, read, more) of that line."""
    a, ea = plot(pg, args, out, False)
    b, eb = plot(pg, args, out, True)
    check(len(a) > 1000 and a == b, what + " " + out + ": the same bytes from the rollup as from --raw",
          len(a), len(b))
    said = [ROLLUP.match(line) for line in ea if ROLLUP.match(line)]
    rest = [line for line in ea if not ROLLUP.match(line)]
    check(rest == [line.replace("raw-", "rollup-") for line in eb], what + ": the same lines on stderr", ea, eb)
    check(not any(ROLLUP.match(line) for line in eb), what + ": --raw reads no rollup", eb)
    check(bool(said) == rolled, what + (": the rollup answered" if rolled else ": the raw rows answered"), ea)
    print("%s %s: %d bytes, the same; %s" % (what, out, len(a), ea[-1] if said else "raw rows"))
    return tuple(int(g) for g in said[0].groups()) if said else None


def main():
    pg = Postgres()
    try:
        rows = plot_day.load(pg, RAILMON, SRC, HZ)
        print("loaded %d samples" % rows)
        day = ["-c", "Speed"]
        for out in ("day.svg", "day.png", "day.html"):
            secs, read, more = same(pg, "a day of Speed", day, out, True)
        # the day's seconds less the pauses: every one taken, few read
        check(secs == 86400 - 24 * 3, "the day's seconds taken from the rollup", secs)
        # read whole: per bucket (2^35 ns: a day in 4096 buckets) at most
        # the one across its edge and its first, last, lowest and highest;
        # of the others with an invalid or NaN sample, those only
        buckets = 86400 * 10**9 // 2**35 + 2
        check(read <= 5 * buckets, "the rows of few seconds read", read, buckets)
        bad = int(pg.psql("SELECT count(*) FROM rollup_summary_1s WHERE channel = 1 AND n_inv > 0"))
        check(bad - read <= more <= bad, "the invalid or NaN rows of the other seconds read", more, bad, read)
        same(pg, "a day of Speed and Pressure", ["-c", "Speed", "-c", "Pressure"], "two.svg", True)
        same(pg, "a day of Speed, no events, 3000 px", day + ["--no-events", "--size", "3000x400"], "wide.png",
             True)
        cut = day + ["--from", plot_day.DAY + "T03:00:00.25Z", "--to", plot_day.DAY + "T21:30:00.75Z"]
        for out in ("cut.svg", "cut.html"):
            same(pg, "03:00:00.25 to 21:30:00.75", cut, out, True)
        short = day + ["--from", plot_day.DAY + "T12:00:00Z", "--to", plot_day.DAY + "T12:10:00Z"]
        same(pg, "10 minutes", short, "short.svg", False)
        six = day + ["--from", plot_day.DAY + "T06:00:00Z", "--to", plot_day.DAY + "T12:00:00Z"]
        same(pg, "6 hours", six, "six.svg", False)
        r = subprocess.run([RAILMON, "plot", "-c", "Speed", "-o", os.path.join(TMP, "x.svg"), "--raw"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and "--raw is for --db" in r.stderr, "--raw without --db", r.stderr)
        print("plot --db: ok")
    finally:
        pg.fini()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
