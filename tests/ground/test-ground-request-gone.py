#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-request-gone.py RAILMON PB2_DIR - `railmon request --db`
(issue 32): a request's "gone" answer is taken by the real `railmon recv
--db` on a real PostgreSQL 15 (through a real mosquitto) only because the
request recorded its range as gap repair does.

A vehicle's log (Batches from protoc's railmon_pb2) has seqs 1..10, then
21..30 twenty minutes later: retention deleted 11..20 on board.
1. before any request, "gone 11..20" is refused as gone-unasked (what a
   request's answer met before --db);
2. `railmon request --db` for the window between the two Batches records
   seq 11..20 of that log (printed), and the same answer is now recorded
   in gone, the hole explained, nothing more counted unasked;
3. an answer past the recorded range (31..40) is still refused;
4. a request for a vehicle the database never had records nothing, says
   so and makes no vehicle;
5. with its table renamed away, the statement fails: exit 1 with
   PostgreSQL's message under "request", no range printed.
Catches: --db not recording (1 and 2 alike), a range from the window's own
Batches instead of the ones around it (11..20 not inside), an unbounded
range (3 taken), a vehicle made by the request (4), a failed statement read as rows or
its message lost (5: grd_db_rows()).
"""
import functools
import os
import subprocess
import sys
import time

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from railmon_test import wait_for  # noqa: E402
from mqtt_peers import Recv, publish, check, ground_peers, vehicle_data  # noqa: E402

LOG = bytes.fromhex("d1" * 15 + "02")
MIN = 60 * 10**9
data = functools.partial(vehicle_data, railmon_pb2, log_id=LOG)


def gone_msg(vehicle, first, last):
    return ("railmon/%s/gone" % vehicle, ("%s %d %d\n" % (LOG.hex(), first, last)).encode())


def door(pg, vehicle, reason):
    c = pg.psql("SELECT count FROM door_refusals JOIN vehicles v USING (vehicle_id) WHERE v.name = '%s' AND "
                "reason = '%s'" % (vehicle, reason))
    return int(c) if c else 0


def gone(pg, vehicle):
    return pg.psql("SELECT coalesce(string_agg(first_seq || '..' || last_seq, ' ' ORDER BY first_seq), '') FROM "
                   "gone JOIN vehicles v USING (vehicle_id) WHERE v.name = '%s'" % vehicle)


def request(pg, broker, vehicle, from_ns, to_ns):
    p = subprocess.run([RAILMON, "request", "--db", pg.url, "--broker", "mqtt://127.0.0.1:%d" % broker.port,
                        "--vehicle", vehicle, "--from", "%.3f" % (from_ns / 1e9), "--to", "%.3f" % (to_ns / 1e9)],
                       capture_output=True, text=True, timeout=60)
    check(p.returncode == 0, "railmon request --db ran", p.stdout, p.stderr)
    return p.stdout


def main():
    with ground_peers("ground-request-gone-") as (pg, broker, tmp):
        out = os.popen("%s db init --db '%s' 2>&1" % (RAILMON, pg.url)).read()
        check("applied" in out, "db init", out)
        t0 = (time.time_ns() - 60 * MIN) // 10**9 * 10**9
        r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id",
                           "request-gone-recv", "--repair-after", "0"])
        r.wait_subscribed()
        publish(broker.port, [data("rq", 1, 10, t0=t0), data("rq", 21, 10, t0=t0 + 20 * MIN)])
        wait_for("both Batches committed", lambda: pg.psql(
            "SELECT count(*) FROM batches JOIN vehicles v USING (vehicle_id) WHERE v.name = 'rq'") == "2")
        # 1. unasked: refused
        publish(broker.port, [gone_msg("rq", 11, 20)])
        wait_for("the unasked answer counted", lambda: door(pg, "rq", "gone-unasked") == 1)
        check(gone(pg, "rq") == "", "nothing recorded unasked", gone(pg, "rq"))
        # 2. asked through railmon request --db
        out = request(pg, broker, "rq", t0 + 5 * MIN, t0 + 15 * MIN)
        check("asked rq log %s seq 11..20" % LOG.hex() in out, "the asked range printed", out)
        publish(broker.port, [gone_msg("rq", 11, 20)])
        wait_for("the answer recorded", lambda: gone(pg, "rq") == "11..20")
        check(door(pg, "rq", "gone-unasked") == 1, "not counted unasked", door(pg, "rq", "gone-unasked"))
        wait_for("the hole explained", lambda: pg.psql(
            "SELECT string_agg(g.explained::text, ',') FROM gaps g JOIN vehicles v USING (vehicle_id) "
            "WHERE v.name = 'rq'") == "true")
        # 3. outside the asked range: still refused
        publish(broker.port, [gone_msg("rq", 31, 40)])
        wait_for("the answer past the range refused", lambda: door(pg, "rq", "gone-unasked") == 2)
        check(gone(pg, "rq") == "11..20", "only the asked range recorded", gone(pg, "rq"))
        # 4. a vehicle the database never had
        out = request(pg, broker, "nobody", t0, t0 + MIN)
        check("holds no Batch of nobody" in out, "said", out)
        check(pg.psql("SELECT count(*) FROM vehicles WHERE name = 'nobody'") == "0", "no vehicle made")
        rc, err = r.terminate()
        check(rc == 0, "recv exits 0", rc, err)
        check("2 \"gone\" answers for ranges not asked for" in err, "the refused ones said by recv", err)
        # 5. the database refuses the statement (its table gone): the
        # request fails, says PostgreSQL's words, and prints no range
        pg.psql("ALTER TABLE resend_asked RENAME TO resend_asked_away")
        p = subprocess.run([RAILMON, "request", "--db", pg.url, "--broker", "mqtt://127.0.0.1:%d" % broker.port,
                            "--vehicle", "rq", "--from", "%.3f" % (t0 / 1e9 + 300), "--to", "%.3f" % (t0 / 1e9 + 900)],
                           capture_output=True, text=True, timeout=60)
        pg.psql("ALTER TABLE resend_asked_away RENAME TO resend_asked")
        check(p.returncode == 1 and "--db: request: ERROR:" in p.stderr and "resend_asked" in p.stderr
              and "asked" not in p.stdout, "a failed statement said", p.returncode, p.stdout, p.stderr)
    print("ground-request-gone: unasked gone refused; after railmon request --db (seq 11..20 asked) recorded and "
          "the hole explained; past the range refused; an unknown vehicle gets no range and no row")


main()
