#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-export-db.py RAILMON - `railmon export --db` against its floor,
all in one run on one machine, printed as a ratio table (issue 29; no
timing assertions):

- N records of one vehicle (RAILMON_BENCH_RECORDS, 1,000,000: 95% samples
  of 50 channels with names, units, value tables, bus name and decimals,
  5% CAN frames; a ledger of Batches of 1000) loaded into a PostgreSQL 15
  started here (pg.py) by SQL;
- the floor: `psql -c "\\copy (SELECT ...) TO STDOUT CSV"` of the same
  rows in time order (the SELECT export runs);
- `railmon export --db URL --vehicle V --format csv` of them, and
  --format jsonl; each best of 3, all to /dev/null; the ratio
  floor / export (goal: >= 0.8); export's peak memory (bounded: the same
  for any N but for the ledger's Batches, 40 bytes each);
- with RAILMON_BEFORE=path/to/an/older/railmon (schema version 7): the
  same rows in a database of version 7 exported by it, then that database
  upgraded (`db migrate`) and exported by this railmon: the bytes must be
  the same (rows of version 7 have no bus name and no decimals), and the
  times side by side.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RAILMON = sys.argv[1]
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
from railmon_test import stop_peers  # noqa: E402
from pg import Postgres  # noqa: E402
from mqtt_peers import check  # noqa: E402

N = int(os.environ.get("RAILMON_BENCH_RECORDS", "1000000"))
BEFORE = os.environ.get("RAILMON_BEFORE")
T0 = "2026-12-01 00:00:00+00"
TMP = tempfile.mkdtemp(prefix="bench-export-db-")

# The rows of the database, in time order: the SELECT that export --db's
# COPY runs, as CSV (the floor).
FLOOR = ("SELECT * FROM (SELECT 0::int2 AS kind, t, seq, bus::int8 AS a, can_id::int8 AS b, flags::int8 AS c, "
         "NULL::float8 AS v, data AS d, NULL::text AS x FROM can_frames WHERE vehicle_id = 1 "
         "UNION ALL SELECT 1::int2, t, seq, channel, quality::int8, NULL, value, NULL, NULL FROM samples "
         "WHERE vehicle_id = 1 UNION ALL SELECT 2::int2, t, seq, source::int8, code::int8, arg, detail::float8, "
         "NULL, NULL FROM events WHERE vehicle_id = 1 UNION ALL SELECT 3::int2, t, seq, channel, quality::int8, "
         "NULL, NULL, NULL, text FROM texts WHERE vehicle_id = 1) r ORDER BY t, seq")


def load(pg, db, version8):
    """N records of vehicle 'bench' into database db (its schema made)."""
    q = lambda sql: pg.psql(sql, db=db, timeout=1200)  # noqa: E731
    q("INSERT INTO vehicles (vehicle_id, name) VALUES (1, 'bench')")
    q("INSERT INTO dictionaries (vehicle_id, config_hash) VALUES (1, 7)")
    extra = ", bus_name, decimals" if version8 else ""
    extra_v = ", 'vehicle', CASE WHEN c % 2 = 0 THEN 2 END" if version8 else ""
    q("INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source, value_table%s) "
      "SELECT 1, 7, c, 'Message' || (c / 5) || '.Signal' || c, CASE WHEN c %% 3 = 0 THEN 'km/h' ELSE '' END, 0, "
      "'can vehicle', CASE WHEN c %% 10 = 0 THEN ARRAY['0 off', '0.25 on', '0.5 fault'] END%s "
      "FROM generate_series(0, 49) c" % (extra, extra_v))
    for t in ("samples", "can_frames", "events", "texts"):
        q("CREATE TABLE %s_all PARTITION OF %s DEFAULT" % (t, t))
    # one record a millisecond; every 20th a CAN frame
    q("INSERT INTO samples (vehicle_id, t, seq, channel, value, quality) SELECT 1, timestamptz '%s' + "
      "i * interval '1 millisecond', i + 1, i %% 50, (i %% 1000) * 0.25 + 0.005 * (i %% 7), 0 "
      "FROM generate_series(0, %d) i WHERE i %% 20 <> 0" % (T0, N - 1))
    q("INSERT INTO can_frames (vehicle_id, t, seq, bus, can_id, flags, data) SELECT 1, timestamptz '%s' + "
      "i * interval '1 millisecond', i + 1, 0, 256 + i %% 7, 0, int8send(i) FROM generate_series(0, %d) i "
      "WHERE i %% 20 = 0" % (T0, N - 1))
    q("INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, config_hash, digest) "
      "SELECT 1, '\\xb0b0b0b0b0b0b0b0b0b0b0b0b0b0b001', 1 + k * 1000, 1000, timestamptz '%s' + k * interval "
      "'1 second', timestamptz '%s' + k * interval '1 second' + interval '999 milliseconds', false, 7, 0 "
      "FROM generate_series(0, %d) k" % (T0, T0, (N - 1) // 1000))
    q("VACUUM ANALYZE")


RSS = {}


def timed(argv):
    """Seconds argv takes; its peak resident memory kept in RSS (KiB)."""
    # GNU time's own child: this script's memory (a fork of it) is not
    # counted in (wait4's ru_maxrss of a child forked from here would be)
    rss = os.path.join(TMP, "rss")
    t0 = time.monotonic()
    r = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%M"] + argv, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=1800)
    dt = time.monotonic() - t0
    check(r.returncode == 0, " ".join(argv), r.stderr[-2000:])
    with open(rss) as f:
        RSS[argv[0]] = max(RSS.get(argv[0], 0), int(f.read().split()[-1]))
    return dt


def best(fn, n=3):
    return min(fn() for _ in range(n))


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    pg = Postgres()
    try:
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)
        t0 = time.monotonic()
        load(pg, pg.db, True)
        print("loaded %d records in %.1f s" % (N, time.monotonic() - t0))
        psql = ["psql", "-X", "-q", "-h", pg.dir, "-U", "railmon", "-d", pg.db, "-c",
                "\\copy (%s) TO STDOUT CSV" % FLOOR]
        exp = [RAILMON, "export", "--db", pg.url, "--vehicle", "bench"]
        rows = {}
        for fmt in ("csv", "jsonl"):
            out = subprocess.run(exp + ["--format", fmt], capture_output=True, timeout=1800)
            check(out.returncode == 0, "export --db", out.stderr[-2000:])
            rows[fmt] = out.stdout.count(b"\n")
        check(rows["csv"] == N + 1 and rows["jsonl"] == N, "every record exported", rows)
        # interleaved, best of 3 each: the machine's load falls on all
        t_floor, t_csv, t_jsonl = [], [], []
        for _ in range(3):
            t_floor.append(timed(psql))
            t_csv.append(timed(exp + ["--format", "csv"]))
            t_jsonl.append(timed(exp + ["--format", "jsonl"]))
        t_floor, t_csv, t_jsonl = min(t_floor), min(t_csv), min(t_jsonl)
        t_before = None
        if BEFORE:
            old = "old"
            pg.psql("CREATE DATABASE %s" % old, db="postgres")
            pg.schema_at(os.path.join(HERE, "..", ".."), 7, after="0008-export-fields.sql", db=old)
            load(pg, old, False)
            old_url = pg.url.replace("/%s?" % pg.db, "/%s?" % old)
            before_out = subprocess.run([BEFORE, "export", "--db", old_url, "--vehicle", "bench", "--format", "csv"],
                                        capture_output=True, timeout=3600)
            check(before_out.returncode == 0, "RAILMON_BEFORE export --db", before_out.stderr[-2000:])
            t_before = timed([BEFORE, "export", "--db", old_url, "--vehicle", "bench", "--format", "csv"])
            r = subprocess.run([RAILMON, "db", "migrate", "--db", old_url], capture_output=True, text=True)
            check(r.returncode == 0, "db migrate", r.stderr)
            now_out = subprocess.run(exp[:2] + ["--db", old_url, "--vehicle", "bench", "--format", "csv"],
                                     capture_output=True, timeout=1800)
            check(before_out.stdout == now_out.stdout and len(now_out.stdout) > N,
                  "the same bytes as RAILMON_BEFORE's export --db", len(before_out.stdout), len(now_out.stdout))
        print("export --db of %d records (%d CAN frames, the rest samples), best of 3, to /dev/null" %
              (N, (N + 19) // 20))
        print("| what | time | records/s | ratio to the floor |")
        print("|---|---|---|---|")
        print("| psql \\copy (SELECT the same rows in time order) TO STDOUT CSV (floor) | %.2f s | %.0f | 1.00x |"
              % (t_floor, N / t_floor))
        if t_before:
            print("| `export --db --format csv`, RAILMON_BEFORE (%s) | %.2f s | %.0f | %.2fx |"
                  % (BEFORE, t_before, N / t_before, t_floor / t_before))
        print("| `export --db --format csv` | %.2f s | %.0f | %.2fx |" % (t_csv, N / t_csv, t_floor / t_csv))
        print("| `export --db --format jsonl` | %.2f s | %.0f | %.2fx |" % (t_jsonl, N / t_jsonl, t_floor / t_jsonl))
        print("peak memory of export --db: %d KiB (psql: %d KiB)" % (RSS[RAILMON], RSS["psql"]))
        if t_before:
            print("byte-identical to RAILMON_BEFORE on a version 7 database upgraded: yes (%d bytes)"
                  % len(now_out.stdout))
    finally:
        stop_peers(signal.SIGKILL)
        pg.fini()
        shutil.rmtree(TMP, ignore_errors=True)


main()
