#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-reduced-db.py RAILMON PB2_DIR - a whole Batch over a reduced
Batch's ledger row (issue 32: a `railmon request`'s answer, gap repair)
on a real PostgreSQL 15 through a real mosquitto and `railmon recv --db`,
with Batches from protoc's Python encoder (migration 0014).

A vehicle's log: seqs 1..100 (samples, value = seq, 1 ms apart) and
101..200.  The uplink sent them reduced: A (1..100) with the ten records
1, 11, .., 91 and B (101..200) with none (nothing passed its policies).
1. A and B committed: two rows marked reduced, ten samples, ledger_days
   10 records and 190 on board;
2. the whole Batch 1..100 reaches two receivers (sessions of their own)
   whose ledger statements both wait on the row (held by a transaction of
   this test's, as a racing third receiver would): one takes the row, the
   other's retry finds a duplicate.  The row now has the whole Batch's
   digest and is not reduced; each seq 1..100 is in samples once, the
   rollups count 100 samples, ledger_days moved the 90 from on_board to
   records; no conflict;
3. the whole 101..200 over B (no record stored before) after a restart of
   a receiver, and then again: stored once, a duplicate the second time;
4. A again (a reduced Batch over a range now held whole): a duplicate,
   not a conflict; another whole 1..100 (a value changed): a conflict,
   nothing stored; completeness: complete, nothing on board.
Catches: no reduced mark or no upgrade (a conflict, samples 10), the
reduced Batch's records stored again (samples 110 or a seq twice, or
rollups 110), ledger_days not moved (on_board 90) or moved twice (the
loser of the race counting too), the racing receiver taking the row too
(seq twice) or calling it a conflict, a repeated whole Batch stored again,
a whole Batch taking a row that is not reduced (the other 1..100 stored).
"""
import os
import re
import subprocess
import sys
import time

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from railmon_test import start_peer, wait_for  # noqa: E402
from mqtt_peers import Recv, publish, check, ground_peers, vehicle_batch  # noqa: E402

LOG = bytes.fromhex("3e" * 15 + "14")
VEHICLE = "red1"
TOPIC = "railmon/%s/data" % VEHICLE
STEP = 10**6  # ns between records
T0 = (time.time_ns() - 600 * 10**9) // 10**9 * 10**9
HOLDER = "reduced-db-holder"


def reduced(first, end, keep):
    """The uplink's reduced Batch of the source range [first, end) keeping
    the seqs in keep (the whole Batch's records: value = seq, t = T0 +
    (seq - 1) * STEP)."""
    b = railmon_pb2.Batch(schema_version=1, first_seq=first, vehicle=VEHICLE, log_id=LOG, config_hash=0x77,
                          t0_ns=T0 + (first - 1) * STEP, reduced=True, source_end_seq=end)
    prev_seq, prev_t = first, T0 + (first - 1) * STEP
    for s in keep:
        b.samples.t_delta_ns.append(T0 + (s - 1) * STEP - prev_t)
        b.samples.channel.append(1)
        b.samples.value.append(float(s))
        b.seq_delta.append(s - prev_seq)
        prev_seq, prev_t = s, T0 + (s - 1) * STEP
    return b.SerializeToString()


def whole(first, n):
    return vehicle_batch(railmon_pb2, VEHICLE, first, n, log_id=LOG, t0=T0 + (first - 1) * STEP, step=STEP)


def other_whole():
    """1..100 whole with another value at seq 6: not the log's Batch."""
    b = railmon_pb2.Batch()
    b.ParseFromString(whole(1, 100))
    b.samples.value[5] += 0.5
    return b.SerializeToString()


def rows(pg):
    return pg.rows("SELECT first_seq, count, reduced FROM batches ORDER BY first_seq")


def day(pg):
    return pg.rows("SELECT batches, records, on_board FROM ledger_days")


def totals(err):
    """(committed, duplicates) of a receiver's database."""
    d = re.search(r"database: (\d+) Batches committed \(.*?\), (\d+) duplicates", err)
    check(d, "recv's database totals", err)
    check("NOT committed" not in err, "nothing cancelled", err)
    return int(d.group(1)), int(d.group(2))


def main():
    with ground_peers() as (pg, broker, _):
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)

        def recv(cid, *more):
            a = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                               "--client-id", cid, "--repair-after", "0"] + list(more))
            a.wait_subscribed()
            return a

        def stop(a):
            rc, err = a.terminate()
            check(rc == 0, "recv exits 0", rc, err)
            return err

        # 1. the reduced stream
        a = recv("red-a")
        b = recv("red-b")
        publish(broker.port, [(TOPIC, reduced(1, 101, range(1, 101, 10))), (TOPIC, reduced(101, 201, []))])
        wait_for("both reduced Batches committed", lambda: len(rows(pg)) == 2)
        check(rows(pg) == [["1", "100", "t"], ["101", "100", "t"]], "two reduced rows", rows(pg))
        check(pg.psql("SELECT count(*) FROM samples") == "10", "the ten records sent")
        check(day(pg) == [["2", "10", "190"]], "10 records, 190 on board", day(pg))
        digest_reduced = pg.psql("SELECT digest FROM batches WHERE first_seq = 1")

        # 2. the whole 1..100 to both receivers at once, both held on the row
        holder = start_peer(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.dir, "-U", "railmon", "-d",
                             pg.db], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PGAPPNAME=HOLDER))
        holder.stdin.write("BEGIN;\nSELECT 1 FROM batches WHERE first_seq = 1 FOR UPDATE;\n")
        holder.stdin.flush()
        wait_for("the holder's lock on the row", lambda: pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s' AND state = 'idle in transaction'"
            % HOLDER) == "1")
        publish(broker.port, [(TOPIC, whole(1, 100))])
        # (the statement's start: pg_stat_activity keeps only its first 1 kB)
        wait_for("both receivers' ledger statements to wait on the row", lambda: pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE "
            "'WITH prev AS ((SELECT first_seq, count, digest, reduced FROM batches%'") == "2")
        holder.stdin.write("COMMIT;\n")
        holder.stdin.close()
        check(holder.wait(30) == 0, "the holder's commit", holder.stderr.read())
        wait_for("the whole Batch stored", lambda: rows(pg)[0] == ["1", "100", "f"])
        # the other receiver: its ledger statement found the row taken, it
        # rolled back (last query ROLLBACK while it waits to retry), and its
        # retry found a duplicate; stopped before, it would not commit
        wait_for("the other receiver's retry", lambda: pg.psql(
            "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = "
            "current_database() AND (state <> 'idle' OR query = 'ROLLBACK')") == "0")
        check(pg.psql("SELECT digest FROM batches WHERE first_seq = 1") != digest_reduced, "the whole digest")
        check(pg.rows("SELECT count(*), count(DISTINCT seq), min(seq), max(seq), sum(value) FROM samples "
                      "WHERE seq <= 100") == [["100", "100", "1", "100", "5050"]],
              "each of seqs 1..100 once, each its value",
              pg.rows("SELECT seq, count(*) FROM samples GROUP BY seq HAVING count(*) > 1"))
        ea, eb = stop(a), stop(b)
        ta, tb = totals(ea), totals(eb)
        # each committed the two reduced Batches or found them duplicates;
        # of the whole one: one commit, one duplicate
        # (the retry after a row taken meanwhile is no failed attempt)
        check(ta[0] + tb[0] == 3 and ta[1] + tb[1] == 3, "one took the row, the other retried and found a "
              "duplicate (committed, duplicates)", ta, tb, ea, eb)
        check(day(pg) == [["2", "100", "100"]], "the 90 moved from on_board to records", day(pg))
        check(pg.psql("SELECT sum(n) FROM rollup_1s") == "100", "the rollups count each sample once",
              pg.psql("SELECT sum(n) FROM rollup_1s"))

        # 3. the whole 101..200 over B (none stored) after a restart, twice
        a = recv("red-a")
        publish(broker.port, [(TOPIC, whole(101, 100))])
        wait_for("101..200 stored", lambda: rows(pg)[1] == ["101", "100", "f"])
        stop(a)
        # new to the restarted receiver: 100 + 10 + 90 records (--count)
        a = recv("red-a", "--count", "200")
        publish(broker.port, [(TOPIC, whole(101, 100))])
        # 4. A again: a reduced Batch over a range held whole; then another
        #    whole 1..100 (the row is no longer reduced: a conflict)
        publish(broker.port, [(TOPIC, reduced(1, 101, range(1, 101, 10))), (TOPIC, other_whole())])
        rc, ea = a.finish(60)
        check(rc == 0, "recv exits 0", ea)
        check(totals(ea) == (0, 2) and " 1 conflicts kept" in ea, "after the restart: the whole 101..200 and "
              "the reduced A duplicates, the other 1..100 a conflict", totals(ea), ea)
        check(pg.rows("SELECT count(*), count(DISTINCT seq), sum(value) FROM samples") ==
              [["200", "200", str(sum(range(1, 201)))]], "each of seqs 1..200 once")
        check(day(pg) == [["2", "200", "0"]], "200 records, none on board", day(pg))
        check(pg.rows("SELECT first_seq, count FROM conflicts") == [["1", "100"]], "the other 1..100 a conflict",
              pg.rows("SELECT first_seq, count FROM conflicts"))
        check(pg.rows("SELECT batches, records, missing, complete, on_board FROM completeness") ==
              [["2", "200", "0", "1", "0"]], "complete", pg.rows("SELECT * FROM completeness"))
    print("ground-reduced-db: 2 reduced rows (10 records, 190 on board); the whole Batch over them taken once "
          "by two racing receivers (one committed, one duplicate), once after a restart and a duplicate after; "
          "200 records once, 0 on board, completeness 1; another whole 1..100 a conflict")


main()
