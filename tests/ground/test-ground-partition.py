#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-partition.py RAILMON PB2_DIR - a day's partition made by
someone else while the receiver makes it too (two receivers of a fleet on
a new day), on a real PostgreSQL 15 and a real mosquitto; the race forced,
not hoped for:

another connection (psql) begins a transaction and creates today's
samples partition, and holds it open; recv --db gets a Batch of today, its
CREATE TABLE IF NOT EXISTS finds no committed table and waits for the
parent's lock (seen in pg_stat_activity); then the other transaction
commits, and the receiver's CREATE meets the table it did not see (42P07,
"relation ... already exists").  The receiver must take the partition as
made: the Batch committed at the first attempt (0 failed attempts, no
error said), its rows there once, one samples partition for the day.
"""
import datetime
import os
import subprocess
import sys
import time

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from mqtt_peers import Recv, publish, check, sample_batch, ground_peers  # noqa: E402
from railmon_test import start_peer, wait_for  # noqa: E402

N = 50
T0 = (time.time_ns() // 1000) * 1000
LOG = bytes.fromhex("0d" * 15 + "02")
VEHICLE = "part1"
HOLDER = "railmon-partition-holder"


def main():
    day = datetime.datetime.fromtimestamp(T0 // 10**9, datetime.timezone.utc).date()
    part = "samples_p" + day.strftime("%Y%m%d")
    with ground_peers() as (pg, broker, _):
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)
        check(pg.psql("SELECT to_regclass('%s') IS NULL" % part) == "t", "no partition for today before")

        # the other maker: its partition created, not committed
        holder = start_peer(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.dir, "-U", "railmon", "-d",
                             pg.db], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ, PGAPPNAME=HOLDER))
        holder.stdin.write("BEGIN;\nCREATE TABLE %s PARTITION OF samples FOR VALUES FROM ('%s 00:00:00+00') TO "
                           "('%s 00:00:00+00');\n" % (part, day, day + datetime.timedelta(days=1)))
        holder.stdin.flush()
        wait_for("the holder's transaction to hold the new partition",
                 lambda: pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s' AND state = "
                                 "'idle in transaction' AND query LIKE 'CREATE TABLE %s %%'" % (HOLDER, part)) == "1")

        recv = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                              "--client-id", "part-a", "--repair-after", "0", "--count", str(N)])
        recv.wait_subscribed()
        publish(broker.port, [("railmon/%s/data" % VEHICLE,
                               sample_batch(railmon_pb2, VEHICLE, 0, N, T0, LOG, channels=5))])
        # the receiver's CREATE waits for the lock the holder has on samples
        wait_for("the receiver's CREATE of %s to wait for the holder" % part,
                 lambda: pg.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query "
                                 "LIKE 'CREATE TABLE IF NOT EXISTS %s %%'" % part) == "1")
        holder.stdin.write("COMMIT;\n")
        holder.stdin.close()
        check(holder.wait(30) == 0,
              "the holder's commit", holder.stderr.read())

        rc, err = recv.finish(60)
        print("".join(x for x in err.splitlines(True) if "database:" in x or "partition" in x), end="")
        check(rc == 0, "recv exit", err)
        check("already exists" not in err, "the receiver said the partition made meanwhile as an error", err)
        check(" 1 Batches committed (%d samples" % N in err and " 0 failed attempts" in err,
              "the Batch committed at the first attempt", err)
        check(pg.psql("SELECT count(*) FROM samples") == str(N), "the Batch's rows once")
        parts = pg.psql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'samples'::regclass AND "
                        "inhrelid::regclass::text LIKE 'samples_p%s'" % day.strftime("%Y%m%d"))
        check(parts == "1", "one samples partition for the day", parts)
        print("a partition made by another connection while the receiver made it: taken as made: ok")


main()
