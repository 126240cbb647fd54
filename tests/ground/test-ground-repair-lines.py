#!/usr/bin/python3
"""test-ground-repair-lines.py RAILMON PB2_DIR - gap repair's resend messages
(ground/repair.c, the lines written by uplink/range.c), one per vehicle.

The holes come oldest first, not by vehicle, and a hole of a sender
without log ids cannot be asked for by range.  Holes here: vehicle ra's
(log LOG, 6..10), then ra's without a log id, then rb's (LOG, 6..20).  ra
must get its line on railmon/ra/resend and rb only its own on
railmon/rb/resend: when the hole without a log id was skipped before the
check for a change of vehicle, ra's line was sent with rb's, to rb, and
ra was asked nothing.  A real PostgreSQL 15 and mosquitto.
"""
import os
import sys

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
ground_paths.paths()
from railmon_test import wait_for  # noqa: E402
from mqtt_peers import Listener, Recv, check, ground_peers  # noqa: E402

LOG = bytes.fromhex("d0" * 15 + "02")


def batches(pg, vehicle, log_hex, seqs, hours_ago):
    pg.psql("INSERT INTO vehicles (name) VALUES ('%s') ON CONFLICT DO NOTHING" % vehicle)
    pg.psql("INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, config_hash, "
            "digest, received_at) SELECT vehicle_id, '\\x%s', s, 5, now(), now(), false, 0, 0, now() - interval "
            "'%d hours' FROM vehicles, (VALUES %s) x(s) WHERE name = '%s'"
            % (log_hex, hours_ago, ", ".join("(%d)" % s for s in seqs), vehicle))


def main():
    with ground_peers() as (pg, broker, _):
        listen = None
        try:
            out = os.popen("%s db init --db '%s' 2>&1" % (RAILMON, pg.url)).read()
            check("applied 0001-init" in out, "db init", out)
            batches(pg, "ra", LOG.hex(), (1, 11), 3)
            batches(pg, "ra", "", (1, 11), 2)  # a sender without log ids: log_id is empty
            batches(pg, "rb", LOG.hex(), (1, 21), 1)
            holes = pg.psql("SELECT string_agg(v.name || ':' || encode(g.log_id, 'hex') || ':' || g.from_seq || "
                            "'..' || g.to_seq, ' ' ORDER BY g.received_after) FROM gaps g JOIN vehicles v "
                            "USING (vehicle_id)")
            check(holes == "ra:%s:6..10 ra::6..10 rb:%s:6..20" % (LOG.hex(), LOG.hex()), "the holes, oldest first",
                  holes)
            listen = Listener(broker.port)
            r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id",
                               "lines-recv", "--repair-after", "3"])
            r.wait_subscribed()
            wait_for("a resend to each vehicle", lambda: {"railmon/ra/resend", "railmon/rb/resend"} <=
                     {t for t, _ in listen.got}, 30)
            first = {}
            for t, p in listen.got:
                first.setdefault(t, p)
            check(first["railmon/ra/resend"] == "%s 6 10\n" % LOG.hex(), "ra asked for its hole only", listen.got)
            check(first["railmon/rb/resend"] == "%s 6 20\n" % LOG.hex(), "rb asked for its hole only", listen.got)
            check(set(first) == {"railmon/ra/resend", "railmon/rb/resend"}, "no other topic", listen.got)
            # A hole asked for and not answered yet (pending: nobody
            # answers here) is not asked again on the next passes (one a
            # second) for 10 grace periods (30 s, far more than this part
            # takes): a new hole of rb's, asked by a later pass, comes
            # alone, and ra's and rb's first holes were asked once.  Before,
            # every pass asked all of them again.
            batches(pg, "rb", LOG.hex(), (31,), 1)
            new = "%s 26 30\n" % LOG.hex()
            wait_for("rb's new hole asked", lambda: ("railmon/rb/resend", new) in listen.got, 30)
            r.terminate()
            check(listen.got.count(("railmon/rb/resend", new)) == 1 and
                  listen.got[:2] + [("railmon/rb/resend", new)] == listen.got[:listen.got.index(("railmon/rb/resend",
                                                                                               new)) + 1],
                  "the new hole asked alone, the pending ones not again", listen.got)
        finally:
            if listen:
                listen.stop()
    print("gap repair: ra's line on ra's topic though its last hole has no log id, rb's alone on rb's; "
          "holes asked and pending not asked again, a new one alone")


main()
