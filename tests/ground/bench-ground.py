#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-ground.py RAILMON PB2_DIR - the ground station's figures, all in
one run on one machine, printed as a ratio table (no timing assertions):

- records/s committed into PostgreSQL through one `railmon recv --db`,
  against `psql \\copy` of the same rows into the same table (the goal of
  issue 15: >= 0.7x);
- two receivers on one shared subscription against one;
- bytes per sample in the database (the samples partitions, indexes
  included);
- the completeness view over a day of a 20-vehicle fleet (one Batch a
  second per vehicle: 1,728,000 ledger rows) against a plain count of the
  same ledger, and against the view as it was before ledger_days (its
  query, walking the ledger);
- with RAILMON_BEFORE=path/to/an/older/railmon: that binary's receiver on
  the same Batches in the same run (before/after).

The Batches (BATCHES of SAMPLES samples, VEHICLES vehicles; BATCHES from
RAILMON_BENCH_BATCHES, 400: enough that start-up and the twice-a-second
polling do not dominate) are queued at
the broker for the receivers' persistent sessions while they are away,
then the receivers start and the clock runs until the database holds
every record: the receiver and the database are measured, not the
publisher.
"""
import os
import subprocess
import sys
import time

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from railmon_test import wait_for  # noqa: E402
from mqtt_peers import Recv, publish, check, sample_batch, ground_peers  # noqa: E402

VEHICLES, BATCHES, SAMPLES = 4, int(os.environ.get("RAILMON_BENCH_BATCHES", "400")), 1000
T0 = (time.time_ns() // 1000) * 1000
LOG = bytes.fromhex("b0" * 15 + "01")


def batch(vehicle, k):
    return sample_batch(railmon_pb2, vehicle, k, SAMPLES, T0, LOG)


def fresh_db(pg, name, railmon=RAILMON):
    pg.psql("CREATE DATABASE %s" % name, db="postgres")
    url = "postgresql:///%s?host=%s&user=railmon" % (name, pg.dir)
    r = subprocess.run([railmon, "db", "init", "--db", url], capture_output=True, text=True)
    check(r.returncode == 0, "db init", r.stderr)
    return url


def run_receivers(pg, broker, url, n, msgs, tag, railmon=RAILMON):
    """n receivers in share group tag: subscribe, go away, the Batches are
    queued for them, they come back; seconds until all is committed."""
    args = lambda k: ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", url, "--share", tag,
                      "--client-id", "%s-%d" % (tag, k), "--repair-after", "0"]
    rs = [Recv(railmon, args(k)) for k in range(n)]
    for r in rs:
        r.wait_subscribed()
    for r in rs:
        r.terminate()
    publish(broker.port, msgs)
    total = VEHICLES * BATCHES * SAMPLES
    t0 = time.monotonic()
    rs = [Recv(railmon, args(k)) for k in range(n)]
    db = url.split("/")[3].split("?")[0]
    # polled twice a second: each poll is a psql process, which would take
    # CPU from the receiver on a 2-core machine if it ran more often
    wait_for("all committed", lambda: pg.psql("SELECT coalesce(sum(count), 0) FROM batches", db=db) == str(total),
             600, 0.5)
    dt = time.monotonic() - t0
    for r in rs:
        r.terminate()
    return dt


def copy_baseline(pg, tmp):
    """The same rows by psql \\copy into a fresh database's samples."""
    url = fresh_db(pg, "copybase")
    rows = pg.rows("SELECT vehicle_id, t, seq, channel, value, quality FROM samples")
    path = os.path.join(tmp, "rows.tsv")
    with open(path, "w") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")
    os.chmod(tmp, 0o755)
    os.chmod(path, 0o644)
    # the same day partitions, made beforehand (the receiver makes its own)
    for name in pg.rows("SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c "
                        "ON c.oid = i.inhrelid WHERE i.inhparent = 'samples'::regclass"):
        pg.psql("CREATE TABLE %s PARTITION OF samples %s" % (name[0], name[1]), db="copybase")
    pg.psql("INSERT INTO vehicles (name) SELECT 'v' || g FROM generate_series(1, %d) g" % VEHICLES, db="copybase")
    t0 = time.monotonic()
    r = subprocess.run(["psql", "-X", "-q", "-h", pg.dir, "-U", "railmon", "-d", "copybase", "-c",
                        "\\copy samples (vehicle_id, t, seq, channel, value, quality) FROM '%s'" % path],
                       capture_output=True, text=True)
    dt = time.monotonic() - t0
    check(r.returncode == 0, "psql \\copy", r.stderr)
    check(pg.psql("SELECT count(*) FROM samples", db="copybase") == str(len(rows)), "copied")
    return dt, url


def completeness(pg):
    """A day of a 20-vehicle fleet in a ledger of its own database."""
    fresh_db(pg, "fleetday")
    pg.psql("INSERT INTO vehicles (name) SELECT 'emu' || g FROM generate_series(1, 20) g", db="fleetday")
    # one Batch of 100 records a second per vehicle, one Batch in 1000 missing
    pg.psql("INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, "
            "config_hash, digest) SELECT v, '\\x01', 1 + s * 100, 100, "
            "timestamptz '2026-12-01 00:00:00+00' + s * interval '1 second', "
            "timestamptz '2026-12-01 00:00:00+00' + s * interval '1 second' + interval '0.99 second', "
            "false, 0, 0 FROM generate_series(1, 20) v, generate_series(0, 86399) s WHERE s % 1000 <> 999",
            db="fleetday", timeout=1200)
    # the summary the receiver keeps as it commits, filled here by the
    # statement of migration 0004 (these rows bypassed the receiver)
    pg.psql("INSERT INTO ledger_days SELECT vehicle_id, log_id, CAST(t_first AT TIME ZONE 'UTC' AS date), "
            "count(*), sum(count), min(first_seq), max(first_seq + count) FROM batches GROUP BY 1, 2, 3",
            db="fleetday", timeout=600)
    pg.psql("ANALYZE batches", db="fleetday", timeout=600)
    n = pg.psql("SELECT count(*) FROM batches", db="fleetday")
    t0 = time.monotonic()
    pg.psql("SELECT count(*) FROM batches", db="fleetday", timeout=600)
    base = time.monotonic() - t0
    t0 = time.monotonic()
    out = pg.rows("SELECT vehicle, batches, records, missing FROM completeness WHERE day = '2026-12-01'",
                  db="fleetday", timeout=600)
    dt = time.monotonic() - t0
    check(len(out) == 20 and all(r[3] == str(86 * 100) for r in out), "completeness right", out[:3])
    t0 = time.monotonic()
    old = pg.rows(OLD_COMPLETENESS + " WHERE day = '2026-12-01' ORDER BY 1", db="fleetday", timeout=600)
    dt_old = time.monotonic() - t0
    check(sorted(out) == old, "the old view's answer", out[:3], old[:3])
    return int(n), base, dt, dt_old


# The completeness view before migration 0004 (0001-init.sql), on the
# gaps view: it walks the whole ledger with a window function.
OLD_COMPLETENESS = """SELECT vehicle, batches, records, missing FROM (
SELECT v.name AS vehicle, d.day, d.batches, d.records, coalesce(g.missing, 0) AS missing
FROM (SELECT vehicle_id, CAST(t_first AT TIME ZONE 'UTC' AS date) AS day, count(*) AS batches, sum(count) AS records
      FROM batches GROUP BY 1, 2) d
JOIN vehicles v USING (vehicle_id)
LEFT JOIN (SELECT vehicle_id, CAST(t_after AT TIME ZONE 'UTC' AS date) AS day, sum(records) AS missing
           FROM gaps GROUP BY 1, 2) g USING (vehicle_id, day)) c"""


def export_time(railmon, url):
    """Seconds for `export --db` of every vehicle, and its lines."""
    t0 = time.monotonic()
    out = []
    for v in range(VEHICLES):
        r = subprocess.run([railmon, "export", "--db", url, "--vehicle", "bv%d" % v, "--format", "csv"],
                           capture_output=True, text=True, timeout=600)
        check(r.returncode == 0, "export --db", r.stderr)
        out += r.stdout.splitlines()
    return time.monotonic() - t0, out


def main():
    with ground_peers("bench-ground-") as (pg, broker, tmp):
        msgs = [("railmon/bv%d/data" % v, batch("bv%d" % v, k)) for k in range(BATCHES) for v in range(VEHICLES)]
        total = VEHICLES * BATCHES * SAMPLES
        one_url = fresh_db(pg, "one")
        t_one = run_receivers(pg, broker, one_url, 1, msgs, "one")
        pg_db = pg.db
        pg.db = "one"
        size = int(pg.psql("SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits "
                           "WHERE inhparent = 'samples'::regclass"))
        t_copy, _ = copy_baseline(pg, tmp)
        pg.db = pg_db
        two_url = fresh_db(pg, "two")
        t_two = run_receivers(pg, broker, two_url, 2, msgs, "two")
        before = os.environ.get("RAILMON_BEFORE")
        t_before = None
        if before:
            t_before = run_receivers(pg, broker, fresh_db(pg, "before", before), 1, msgs, "before", before)
        n, t_count, t_view, t_old = completeness(pg)
        if before:
            url = lambda name: "postgresql:///%s?host=%s&user=railmon" % (name, pg.dir)
            t_exp_before, lines_before = export_time(before, url("before"))
            t_exp, lines = export_time(RAILMON, url("one"))
            check(sorted(lines) == sorted(lines_before) and len(lines) > total, "the same export", len(lines),
                  len(lines_before))
        print("ground station benchmark: %d vehicles x %d Batches x %d samples = %d records"
              % (VEHICLES, BATCHES, SAMPLES, total))
        print("| what | figure | ratio |")
        print("|---|---|---|")
        print("| psql \\copy of the same rows (baseline) | %.0f records/s | 1.00x |" % (total / t_copy))
        if t_before:
            print("| one `recv --db` of RAILMON_BEFORE (%s) | %.0f records/s | %.2fx of \\copy |"
                  % (before, total / t_before, t_copy / t_before))
        print("| one `recv --db` (MQTT, decode, ledger, COPY BINARY, groups of Batches) | %.0f records/s | "
              "%.2fx of \\copy |" % (total / t_one, t_copy / t_one))
        print("| two `recv --db`, one shared subscription | %.0f records/s | %.2fx of one |"
              % (total / t_two, t_one / t_two))
        print("| bytes per sample in the database (samples partitions with indexes) | %.1f B | |" % (size / total))
        print("| plain count of a 20-vehicle day's ledger (%d Batches, baseline) | %.3f s | 1.00x |" % (n, t_count))
        if before:
            print("| `export --db` of every vehicle (%d lines), RAILMON_BEFORE (a subquery per row) | %.2f s | "
                  "1.00x |" % (len(lines), t_exp_before))
            print("| `export --db` of the same (one lateral join on the ledger's key) | %.2f s | %.2fx faster |"
                  % (t_exp, t_exp_before / t_exp))
        print("| completeness over that day, the view before ledger_days (walks the ledger) | %.3f s | %.1fx of "
              "the count |" % (t_old, t_old / t_count))
        print("| completeness view over that day (ledger_days) | %.3f s | %.2fx of the count |"
              % (t_view, t_view / t_count))


main()
