#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-repair-start.py RAILMON FLEET_VEHICLES - the hole at the start
of a log (migration 0011).  Every log starts at seq 1, so a log whose first
committed Batch starts later lacks 1..first - 1: the gaps view must list
that hole, gap repair must ask for it, and the vehicle's re-send must make
the log complete.  Before 0011 the view knew only holes between committed
Batches (lag() is NULL for a log's first): the ground-fleet test saw, at
load, vehicles without seqs 1..40 (their first Batch lost with a killed
receiver or the restarted broker), an empty gaps view and no request.

1. The view on a ledger written directly: a log from seq 11 has the gap
   1..10; a "gone" answer for 1..10 explains it; refused Batches that fill
   1..10 explain it; a log from seq 1 has none.
2. End to end, deterministic: a real forwarder (fleet-vehicles, one
   vehicle) publishes its first Batch (seqs 1..10) while no receiver is
   subscribed (the broker drops it: seen by a plain subscriber), then a
   receiver starts and gets the second Batch (11..20) only.  The ground
   must ask railmon/veh00/resend for 1..10 and end with seqs 1..20.
A real PostgreSQL 15 and mosquitto.
"""
import subprocess
import sys

RAILMON, FLEET = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
ground_paths.paths()
from railmon_test import start_peer, wait_for  # noqa: E402
from mqtt_peers import Listener, Recv, check, ground_peers  # noqa: E402

LOG = "d0" * 15 + "03"


def batches(pg, vehicle, seqs):
    pg.psql("INSERT INTO vehicles (name) VALUES ('%s') ON CONFLICT DO NOTHING" % vehicle)
    pg.psql("INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, config_hash, "
            "digest) SELECT vehicle_id, '\\x%s', s, 5, now(), now(), false, 0, 0 FROM vehicles, (VALUES %s) x(s) "
            "WHERE name = '%s'" % (LOG, ", ".join("(%d)" % s for s in seqs), vehicle))


def gaps(pg, vehicle):
    return pg.psql("SELECT coalesce(string_agg(g.from_seq || '..' || g.to_seq || ':' || g.records || ':' || "
                   "CASE WHEN g.explained THEN 't' ELSE 'f' END, ' ' ORDER BY g.from_seq), '') FROM gaps g "
                   "JOIN vehicles v USING (vehicle_id) WHERE v.name = '%s'" % vehicle)


def test_view(pg):
    batches(pg, "s1", (1, 6))
    check(gaps(pg, "s1") == "", "a log from seq 1 without holes: no gap", gaps(pg, "s1"))
    batches(pg, "s11", (11, 16, 26))
    check(gaps(pg, "s11") == "1..10:10:f 21..25:5:f", "the log's start 1..10 is a gap, as 21..25",
          gaps(pg, "s11"))
    pg.psql("INSERT INTO gone (vehicle_id, log_id, first_seq, last_seq) SELECT vehicle_id, '\\x%s', 1, 10 FROM "
            "vehicles WHERE name = 's11'" % LOG)
    check(gaps(pg, "s11") == "1..10:10:t 21..25:5:f", "\"gone\" for 1..10 explains the start", gaps(pg, "s11"))
    batches(pg, "sr", (11,))
    for first in (1, 6):
        pg.psql("INSERT INTO refused (vehicle, log_id, first_seq, count, sqlstate, reason, payload) VALUES "
                "('sr', '\\x%s', %d, 5, '23514', 'check', '')" % (LOG, first))
    check(gaps(pg, "sr") == "1..10:10:t", "refused Batches filling 1..10 explain it", gaps(pg, "sr"))
    pg.psql("TRUNCATE batches, gone, refused, vehicles CASCADE")
    print("the gaps view: a log's start not received is a gap (1..first - 1), explained by \"gone\" or refused")


def test_repair(pg, broker, tmp):
    data = Listener(broker.port, "railmon/+/data")
    fleet = start_peer([FLEET, str(broker.port), "1", "2", "10", "0.05", tmp], stdin=subprocess.PIPE,
                       stdout=subprocess.PIPE, text=True)
    r = None
    try:
        check(fleet.stdout.readline() == "appended\n", "the first Batch appended")
        wait_for("the first Batch published with no receiver subscribed", lambda: data.got, 30)
        data.stop()
        resend = Listener(broker.port)
        r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id",
                           "start-recv", "--repair-after", "1"])
        r.wait_subscribed()
        fleet.stdin.write("final\n")
        fleet.stdin.flush()
        check(fleet.stdout.readline() == "final\n", "the second Batch appended")
        wait_for("veh00's log complete, 1..20", lambda: pg.rows(
            "SELECT count(*), sum(count), min(first_seq), max(first_seq + count) FROM batches b JOIN vehicles v "
            "USING (vehicle_id) WHERE v.name = 'veh00'") == [["2", "20", "1", "21"]], 60)
        log = pg.psql("SELECT DISTINCT encode(log_id, 'hex') FROM batches")
        asked = [p for t, p in resend.got if t == "railmon/veh00/resend"]
        resend.stop()
        check(asked and asked[0] == "%s 1 10\n" % log, "the ground asked veh00 for 1..10", resend.got)
        check(pg.psql("SELECT first_seq, last_seq FROM resend_asked") == "1|10", "the ask recorded")
        check(pg.psql("SELECT historical FROM batches WHERE first_seq = 1") == "t", "1..10 came as a re-send")
        check(pg.psql("SELECT count(*) FROM gaps") == "0", "no gap left")
        rc, err = r.terminate()
        r = None
        check(rc == 0 and "gap repair: " in err and int(err.split("gap repair: ")[1].split()[0]) >= 1,
              "recv says it asked", err)
    finally:
        if r:
            r.kill()
        fleet.stdin.close()
        out = fleet.stdout.read()
        fleet.wait(30)
    check("veh00 resend: " in out and " 0 batches" not in out, "the vehicle re-sent a Batch", out)
    print("a log whose first Batch never reached the ground: 1..10 listed as a gap, asked for, re-sent, "
          "complete")


def main():
    with ground_peers("start-") as (pg, broker, tmp):
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)
        test_view(pg)
        test_repair(pg, broker, tmp)


main()
