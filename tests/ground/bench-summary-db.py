#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-summary-db.py RAILMON SRC - `railmon summary --db` over a day of
one channel at 100 Hz (issue 29), from the summary rollup against every
raw row (`--raw`, what a summary of the database costs without it), all
in one run on one machine, printed as a ratio table (no timing
assertions):

- a day of one channel at 100 Hz (RAILMON_BENCH_HZ, 100: 8.64 M samples;
  1% invalid, one NaN a minute, a 3 s pause every hour between seconds and
  a 0.6 s one inside a second every hour, so the rollup path reads the raw
  rows there) plus a second channel at 1 Hz, loaded by SQL into a
  PostgreSQL 15 started here (pg.py) at schema version 8; then `railmon db
  migrate` to version 9, whose backfill builds rollup_summary_1s (timed:
  what an upgrade of such a day costs);
- `summary --db` of the day and of a range cutting seconds (10:00:00.5 to
  16:30:00.25), rollup and --raw, interleaved, best of 3 each, their
  outputs compared (the same bytes, or the benchmark fails), and each
  one's peak memory.
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
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from pg import Postgres  # noqa: E402
from mqtt_peers import check  # noqa: E402

HZ = int(os.environ.get("RAILMON_BENCH_HZ", "100"))
N = 86400 * HZ
DAY = "2026-12-01"
T0 = DAY + " 00:00:00+00"
TMP = tempfile.mkdtemp(prefix="bench-summary-db-")
RSS = {}


def load(pg):
    """Version 8, then the day's rows by SQL; returns the seconds db migrate to 9 took."""
    pg.schema_at(SRC, 8, after="0009-summary-rollup.sql")
    q = lambda sql: pg.psql(sql, timeout=3600)  # noqa: E731
    q("INSERT INTO vehicles (vehicle_id, name) VALUES (1, 'bench')")
    q("INSERT INTO dictionaries (vehicle_id, config_hash) VALUES (1, 7)")
    q("INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source, decimals) VALUES "
      "(1, 7, 1, 'Vehicle.Speed', 'km/h', 0, 'can vehicle Vehicle', 2), "
      "(1, 7, 2, 'Vehicle.Pressure', 'bar', 0, 'can vehicle Vehicle', NULL)")
    q("CREATE TABLE samples_d PARTITION OF samples FOR VALUES FROM ('%s') TO ('%s'::timestamptz + "
      "interval '1 day')" % (T0, T0))
    step = 10**6 // HZ
    # channel 1 at HZ: i-th sample at i * step us (+ a little jitter); the
    # hour's pauses left out
    q("INSERT INTO samples (vehicle_id, t, seq, channel, value, quality) SELECT 1, timestamptz '%s' + "
      "(i * %d + (i %% 3) * 7) * interval '1 microsecond', i + 1, 1, "
      "CASE WHEN i %% 6000 = 17 THEN 'NaN'::float8 ELSE (i %% 2000) * 0.25 - 100 END, "
      "CASE WHEN i %% 100 = 3 THEN 2 WHEN i %% 250 = 7 THEN 1 ELSE 0 END FROM generate_series(0::bigint, %d) i "
      "WHERE NOT ((i * %d) %% 3600000000 BETWEEN 1800000000 AND 1802999999 "
      "OR (i * %d) %% 3600000000 BETWEEN 2700200000 AND 2700799999)" % (T0, step, N - 1, step, step))
    q("INSERT INTO samples (vehicle_id, t, seq, channel, value, quality) SELECT 1, timestamptz '%s' + "
      "k * interval '1 second' + interval '500 milliseconds', %d + k, 2, (k %% 40) * 0.5, 0 "
      "FROM generate_series(0, 86399) k" % (T0, N + 1))
    q("VACUUM ANALYZE samples")
    t0 = time.monotonic()
    r = subprocess.run([RAILMON, "db", "migrate", "--db", pg.url], capture_output=True, text=True, timeout=3600)
    dt = time.monotonic() - t0
    check(r.returncode == 0 and "0009-summary-rollup" in r.stdout, "db migrate to 9", r.stdout, r.stderr)
    q("VACUUM ANALYZE rollup_summary_1s")
    return dt


def timed(argv):
    """(seconds, stdout, stderr) of argv; its peak resident memory kept in RSS (KiB)."""
    rss = os.path.join(TMP, "rss")
    t0 = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%M"] + argv, capture_output=True, text=True,
                       timeout=3600)
    dt = time.monotonic() - t0
    check(r.returncode == 0, " ".join(argv), r.stderr[-2000:])
    key = "raw" if "--raw" in argv else "rollup"
    with open(rss) as f:
        RSS[key] = max(RSS.get(key, 0), int(f.read().split()[-1]))
    return dt, r.stdout, r.stderr


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    pg = Postgres()
    try:
        t0 = time.monotonic()
        migrate_s = load(pg)
        rows = int(pg.psql("SELECT count(*) FROM samples"))
        secs = int(pg.psql("SELECT count(*) FROM rollup_summary_1s"))
        print("loaded %d samples in %.1f s; db migrate to version 9 (backfill of %d rollup seconds) %.1f s"
              % (rows, time.monotonic() - t0, secs, migrate_s))
        base = [RAILMON, "summary", "--db", pg.url, "--vehicle", "bench"]
        cases = [("a day of Vehicle.Speed (%d Hz)" % HZ, ["--channel", "Speed"]),
                 ("10:00:00.5 to 16:30:00.25 of it", ["--channel", "Speed", "--from", DAY + "T10:00:00.5Z",
                                                      "--to", DAY + "T16:30:00.25Z"]),
                 ("the day, both channels, --json", ["--json"])]
        print("| summary --db | raw rows (--raw) | rollup | ratio | rollup seconds taken, raw reads |")
        print("|---|---|---|---|---|")
        for what, args in cases:
            times = {"raw": [], "rollup": []}
            outs = {}
            for _ in range(3):  # interleaved: the machine's load falls on both
                for key, extra in (("raw", ["--raw"]), ("rollup", [])):
                    dt, out, err = timed(base + args + extra)
                    times[key].append(dt)
                    outs[key] = (out, err)
            check(outs["raw"][0] == outs["rollup"][0] and outs["raw"][0], what + ": the same answer",
                  outs["raw"][0], outs["rollup"][0])
            said = [line for line in outs["rollup"][1].splitlines() if "from the rollup" in line]
            said = said[0].split("--db: ")[1] if said else "?"
            raw, roll = min(times["raw"]), min(times["rollup"])
            print("| %s | %.3f s | %.3f s | %.1fx | %s |" % (what, raw, roll, raw / roll, said))
        print("the same bytes from both in every case: yes")
        print("peak memory: --raw %d KiB, rollup %d KiB" % (RSS["raw"], RSS["rollup"]))
        print(outs["rollup"][0], end="")
    finally:
        pg.fini()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
