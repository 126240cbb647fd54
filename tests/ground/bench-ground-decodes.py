#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-ground-decodes.py RAILMON PB2_DIR PRELOAD - how many times the
ground decodes each Batch, counted in libprotobuf-c (PRELOAD: the
count-decodes library) while one `railmon recv --db --log` takes 200 new
Batches of 4 vehicles, then, restarted (its memory gone), 20 of them again
(its ground log holds them: the behind-the-end check).  With
RAILMON_BEFORE=path/to/an/older/railmon that binary's counts in the same
run (before/after).  Figures, no assertions beyond the database holding
every record once.
"""
import os
import subprocess
import sys
import time

RAILMON, PB2_DIR, PRELOAD = sys.argv[1:4]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from mqtt_peers import Recv, publish, check, sample_batch, ground_peers  # noqa: E402

V, B, S, AGAIN = 4, 50, 100, 20
T0 = (time.time_ns() // 1000) * 1000
LOG = bytes.fromhex("c0" * 15 + "01")


def batch(vehicle, k):
    return sample_batch(railmon_pb2, vehicle, k, S, T0, LOG)


def counted(path):
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return sum(int(line.split()[1]) for line in f if line.strip())


def run(pg, broker, railmon, tag, tmp):
    """(decodes of the new Batches, decodes of the ones sent again)."""
    pg.psql("CREATE DATABASE %s" % tag, db="postgres")
    url = "postgresql:///%s?host=%s&user=railmon" % (tag, pg.dir)
    r = subprocess.run([railmon, "db", "init", "--db", url], capture_output=True, text=True)
    check(r.returncode == 0, "db init", r.stderr)
    logdir = os.path.join(tmp, tag)
    topic = lambda v: "railmon/%s%d/data" % (tag, v)

    def recv(count, out):
        os.environ["DECODE_COUNT_FILE"] = out
        os.environ["LD_PRELOAD"] = PRELOAD
        try:
            return Recv(railmon, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", url, "--log", logdir,
                                  "--client-id", tag, "--repair-after", "0", "--count", str(count)])
        finally:
            del os.environ["LD_PRELOAD"]
            del os.environ["DECODE_COUNT_FILE"]

    # the new Batches, queued at the broker while the receiver is away
    r = recv(10**9, "/dev/null")
    r.wait_subscribed()
    r.terminate()
    publish(broker.port, [(topic(v), batch("%s%d" % (tag, v), k)) for k in range(B) for v in range(V)])
    f1 = os.path.join(tmp, tag + ".new")
    rc, err = recv(V * B * S, f1).finish(120)
    check(rc == 0, "recv", err)
    # restarted: the same Batches again are new to it, not to its ground log
    f2 = os.path.join(tmp, tag + ".again")
    r = recv(AGAIN * S, f2)
    r.wait_subscribed()
    publish(broker.port, [(topic(0), batch("%s0" % tag, k)) for k in range(AGAIN)])
    rc, err = r.finish(120)
    check(rc == 0, "recv again", err)
    rows = pg.psql("SELECT count(*) FROM samples", db=tag)
    check(rows == str(V * B * S), "every record once in the database", rows)
    return counted(f1), counted(f2)


def main():
    with ground_peers("bench-decodes-") as (pg, broker, tmp):
        rows = []
        before = os.environ.get("RAILMON_BEFORE")
        if before:
            rows.append(("RAILMON_BEFORE (%s)" % before, run(pg, broker, before, "before", tmp)))
        rows.append(("this railmon", run(pg, broker, RAILMON, "now", tmp)))
        print("Batch decodes in `recv --db --log`: %d new Batches (%d vehicles), then %d sent again after a "
              "restart" % (V * B, V, AGAIN))
        print("| railmon | decodes per new Batch | decodes per Batch sent again |")
        print("|---|---|---|")
        for name, (n1, n2) in rows:
            print("| %s | %.2f (%d) | %.2f (%d) |" % (name, n1 / (V * B), n1, n2 / AGAIN, n2))


main()
