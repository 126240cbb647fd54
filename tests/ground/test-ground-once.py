#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-once.py RAILMON PB2_DIR - exactly once, deterministically,
on a real PostgreSQL 15 and a real mosquitto, with Batches from protoc's
Python encoder.  Each of the two guards is seen on its own:

- the receiver's memory (uplink's per-log ledger): one receiver gets a
  Batch twice in one run (a QoS 1 re-send): it skips it itself, so its
  records are counted and written once by the receiver and the database
  never sees the second copy (its duplicate count stays 0);
- the database's ledger: the same Batch committed by two receivers (each
  with a session of its own, both get it; one after the other, so that
  the outcome does not depend on timing), and by one receiver after a
  restart (its memory is gone, the ledger is not): one ledger row, the
  rows once, the other commit counted as a duplicate.

Receivers end on --count (new records): each commits its last group
before it exits, so nothing here waits a fixed time.
"""
import re
import subprocess
import sys
import time

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from mqtt_peers import Recv, publish, check, sample_batch, ground_peers  # noqa: E402

N = 100  # records per Batch
T0 = (time.time_ns() // 1000) * 1000
LOG = bytes.fromhex("0e" * 15 + "01")
VEHICLE = "once1"
TOPIC = "railmon/%s/data" % VEHICLE


def batch(k):
    """Batch k: seqs 1 + k * N .. (k + 1) * N, N samples."""
    return sample_batch(railmon_pb2, VEHICLE, k, N, T0, LOG, config_hash=3, channels=7, scale=0.25)


def totals(err):
    """(records, duplicates skipped) of the receiver, (committed, duplicates) of its database."""
    m = re.search(r"railmon recv: (\d+) messages, (\d+) records, (\d+) duplicates skipped", err)
    d = re.search(r"database: (\d+) Batches committed \((\d+) samples.*?\), (\d+) duplicates", err)
    check(m and d, "recv's totals", err)
    return int(m.group(2)), int(m.group(3)), int(d.group(1)), int(d.group(3))


def ledger(pg):
    return pg.rows("SELECT first_seq, count FROM batches ORDER BY first_seq")


def samples(pg):
    return int(pg.psql("SELECT count(*) FROM samples"))


def main():
    with ground_peers() as (pg, broker, _):
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)

        def recv(cid, count):
            return Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                                  "--client-id", cid, "--repair-after", "0", "--count", str(count)])

        # 1. One receiver, Batch 0 twice in one run, then Batch 1: the
        #    receiver's memory skips the second copy.
        a = recv("once-a", 2 * N)
        a.wait_subscribed()
        publish(broker.port, [(TOPIC, batch(0)), (TOPIC, batch(0)), (TOPIC, batch(1))])
        rc, err = a.finish(60)
        check(rc == 0, "recv a", err)
        check(totals(err) == (2 * N, N, 2, 0), "the receiver skips a re-send itself (records, duplicates "
              "skipped; database committed, duplicates)", totals(err), err)
        check(ledger(pg) == [["1", str(N)], [str(N + 1), str(N)]] and samples(pg) == 2 * N, "once in the database",
              ledger(pg), samples(pg))
        print("one receiver, a Batch twice: skipped by the receiver, the database never sees it: ok")

        # 2. Two receivers, each with a persistent session of its own: both
        #    get Batch 2 and commit it; the ledger takes it once.  c is away
        #    while b commits (the broker queues Batch 2 for c), so the two
        #    commits do not race: a race is retried until the other
        #    receiver's row is seen, and --count's stop could end that retry
        #    (counted as not committed) before it says "duplicate".
        c = recv("once-c", N)
        c.wait_subscribed()
        c.terminate()
        b = recv("once-b", N)
        b.wait_subscribed()
        publish(broker.port, [(TOPIC, batch(2))])
        rb, eb = b.finish(60)
        check(rb == 0, "recv b", eb)
        check(len(ledger(pg)) == 3 and samples(pg) == 3 * N, "Batch 2 committed by b", ledger(pg), samples(pg))
        c = recv("once-c", N)
        rc, ec = c.finish(60)
        check(rc == 0, "recv c", ec)
        tb, tc = totals(eb), totals(ec)
        check(tb == (N, 0, 1, 0), "b takes Batch 2 as new and commits it", tb, eb)
        check(tc == (N, 0, 0, 1), "c takes it as new too, and the database tells it is a duplicate", tc, ec)
        check(len(ledger(pg)) == 3 and samples(pg) == 3 * N, "Batch 2 once in the database", ledger(pg),
              samples(pg))
        print("two receivers, the same Batch: one ledger row, its rows once: ok")

        # 3. One receiver, restarted between two copies of Batch 3: its
        #    memory is gone, the ledger is not.
        d = recv("once-d", N)
        d.wait_subscribed()
        publish(broker.port, [(TOPIC, batch(3))])
        rd, ed = d.finish(60)
        check(rd == 0 and totals(ed) == (N, 0, 1, 0), "recv d commits Batch 3", ed)
        d = recv("once-d", N)
        d.wait_subscribed()
        publish(broker.port, [(TOPIC, batch(3))])
        rd, ed = d.finish(60)
        check(rd == 0 and totals(ed) == (N, 0, 0, 1), "after the restart Batch 3 is new to the receiver and a "
              "duplicate to the database", totals(ed), ed)
        want = [[str(1 + k * N), str(N)] for k in range(4)]
        check(ledger(pg) == want and samples(pg) == 4 * N, "Batch 3 once in the database", ledger(pg), samples(pg))
        seqs = pg.psql("SELECT count(DISTINCT seq) FROM samples")
        check(seqs == str(4 * N), "no seq twice", seqs)
        print("one receiver restarted, the same Batch again: a duplicate in the database, its rows once: ok")


main()
