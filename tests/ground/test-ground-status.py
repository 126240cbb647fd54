#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-status.py RAILMON PB2_DIR - `recv --db` records the vehicles'
retained status topic (railmon/<vehicle>/status: the forwarder's "online",
its will "offline") in vehicle_status, on a real PostgreSQL 15 and a real
mosquitto:

- the state of a vehicle the database has (from a Batch) is recorded; a
  state of a name no Batch brought, online or offline, adds no vehicle and
  is counted and said (issue 26);
- since moves only when the state changes: a receiver started again gets
  the retained state again and keeps since;
- a state the database cannot take (the table renamed away: every write
  fails) is kept and written once it can, the newest per vehicle;
- a malformed message is refused, counted and said when recv stops; a
  receiver started while the database is down records what it heard once
  the database is back;
- Health entries: a Batch's entries land in `health`, one row per part,
  and an older Batch's entries (historical, from the backlog) do not
  replace newer ones; a value table's entries whose value is not a number
  are left out, the others stored.

Every server, broker and receiver started here is stopped on every exit path.
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
from mqtt_peers import Recv, publish, check, ground_peers  # noqa: E402

LOG = bytes.fromhex("5a" * 15 + "01")


def retain(port, msgs):
    """Publish msgs retained (a vehicle's last will and status)."""
    publish(port, msgs, client_id="test-status-%d" % os.getpid(), retain=True)


def status(pg, vehicle):
    return pg.rows("SELECT s.state, extract(epoch from s.since) FROM vehicle_status s JOIN vehicles v "
                   "USING (vehicle_id) WHERE v.name = '%s'" % vehicle)


def rolled_back(pg):
    pg.psql("SELECT pg_stat_force_next_flush()")
    return int(pg.psql("SELECT xact_rollback FROM pg_stat_database WHERE datname = current_database()"))


def recv(pg, broker):
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id", "status-recv"])
    r.wait_subscribed()
    return r


def known(pg, broker, names):
    """A Batch of each vehicle, so the database knows it: a status message
    makes no vehicle (issue 26: an unknown name in status creates none)."""
    publish(broker.port, [health_batch(v, 1, time.time_ns(), [], n=2) for v in names])
    wait_for("the vehicles known", lambda: int(pg.psql("SELECT count(*) FROM vehicles WHERE name IN (%s)" %
                                                         ",".join("'%s'" % v for v in names))) == len(names))


def test_status(pg, broker):
    r = recv(pg, broker)
    known(pg, broker, ["st0", "st1", "st2"])
    retain(broker.port, [("railmon/ghost2/status", b"online"), ("railmon/st1/status", b"online"),
                         ("railmon/ghost/status", b"offline")])
    wait_for("st1 online", lambda: status(pg, "st1") and status(pg, "st1")[0][0] == "online")
    since = status(pg, "st1")[0][1]
    check(pg.psql("SELECT count(*) FROM vehicles WHERE name LIKE 'ghost%'") == "0",
          "a stranger's status, online or offline, adds no vehicle")
    # a forwarder says "online" before its first Batch: recorded once the
    # Batch brings the vehicle
    retain(broker.port, [("railmon/late1/status", b"online")])
    known(pg, broker, ["late1"])
    wait_for("late1's state once its Batch came", lambda: status(pg, "late1") and status(pg, "late1")[0][0] == "online")
    # malformed: refused and counted
    # then a good state of another vehicle: once it is in the database, recv
    # has handled the two before it (one publisher, QoS 1: the broker
    # delivers them in order), so stopping it cannot cut them off
    publish(broker.port, [("railmon/st1/status", b"maybe"), ("railmon/st1/status", b"online\n"),
                          ("railmon/st0/status", b"online")])
    wait_for("st0 online", lambda: status(pg, "st0") and status(pg, "st0")[0][0] == "online")
    rc, err = r.terminate()
    check(rc == 0 and "status topic: 5 states, 2 malformed messages refused, 0 not recorded" in err,
          "malformed status messages said", err)
    check("status topic: 2 states of vehicles no Batch brought yet not recorded" in err, "strangers said", err)
    check(status(pg, "st1")[0][0] == "online", "malformed messages change nothing")
    # again: the retained "online" comes again (updated_at moves), since stays
    updated = pg.psql("SELECT updated_at FROM vehicle_status")
    r = recv(pg, broker)
    wait_for("the retained state again", lambda: pg.psql("SELECT updated_at FROM vehicle_status") != updated)
    check(status(pg, "st1") == [["online", since]], "since kept over a reconnect", status(pg, "st1"), since)
    # the database cannot take it (the table renamed away: each write
    # fails, a rollback in the server's statistics): kept, then written
    pg.psql("ALTER TABLE vehicle_status RENAME TO vehicle_status_away")
    rollbacks = rolled_back(pg)
    retain(broker.port, [("railmon/st1/status", b"offline"), ("railmon/st2/status", b"online"),
                         ("railmon/st1/status", b"online"), ("railmon/st1/status", b"offline")])
    wait_for("the receiver's write failed", lambda: rolled_back(pg) > rollbacks)
    check(pg.psql("SELECT count(*) FROM vehicle_status_away s JOIN vehicles v USING (vehicle_id) "
                  "WHERE v.name = 'st2'") == "0", "nothing written meanwhile")
    pg.psql("ALTER TABLE vehicle_status_away RENAME TO vehicle_status")
    wait_for("the kept states written", lambda: status(pg, "st1") and status(pg, "st1")[0][0] == "offline" and
             status(pg, "st2") == [[status(pg, "st2")[0][0], status(pg, "st2")[0][1]]] and
             status(pg, "st2")[0][0] == "online", 20)
    check(float(status(pg, "st1")[0][1]) > float(since), "since moved with the state", status(pg, "st1"), since)
    rc, err = r.terminate()
    # only the retained states of the strangers (ghost, ghost2) are said again
    check(rc == 0 and "malformed messages refused" not in err and
          "status topic: 2 states of vehicles no Batch brought yet" in err, "nothing lost, nothing said", err)
    print("status: online adds a vehicle, offline of a stranger nothing; since kept over a reconnect; "
          "states the database could not take written later; malformed ones refused and said")


def test_status_outage(pg, broker):
    """recv started while the database is down: the status topic is
    subscribed anyway, and the state it heard is written once the server
    is back; gap repair runs too."""
    r = recv(pg, broker)
    known(pg, broker, ["st3"])
    r.terminate()
    pg.stop()
    try:
        r = recv(pg, broker)
        retain(broker.port, [("railmon/st3/status", b"online")])
        wait_for("the outage said", lambda: any("retrying when Batches come" in x for x in r.lines))
    finally:
        pg.start()
    wait_for("st3's state written after the outage", lambda: status(pg, "st3") and status(pg, "st3")[0][0] == "online",
             30)
    rc, err = r.terminate()
    check(rc == 0, "recv exit", err)
    # gap repair and its "gone" subscription are set up whether or not the
    # server answered at the start (they were skipped once)
    check("gap repair:" in err, "gap repair running after a start without the database", err)
    print("status: heard while the database was down, written once it is back; gap repair on")


def health_batch(vehicle, first_seq, t0, entries, historical=False, n=0, value_table=None):
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0, log_id=LOG,
                          config_hash=7, historical=historical)
    for h in entries:
        b.health.add(**h)
    if value_table:
        b.channels.add(id=1, name="door", unit="", bus=0, source="can vehicle Door", value_table=value_table)
    for i in range(n):
        b.samples.t_delta_ns.append(0 if i == 0 else 10**6)
        b.samples.channel.append(1)
        b.samples.value.append(float(i % 2))
    return ("railmon/%s/data" % vehicle, b.SerializeToString())


def test_health(pg, broker):
    r = recv(pg, broker)
    now = time.time_ns()
    new = [dict(name="vehicle", kind="can", bus=0, errors=5, state="gone", latency_p99_us=77),
           dict(name="log", kind="log", bus=65535, backlog=3)]
    old = [dict(name="vehicle", kind="can", bus=0, errors=1, state="up"), dict(name="uplink", kind="uplink", bus=65535)]
    publish(broker.port, [health_batch("h1", 1, now, new, n=4, value_table=["0 closed", "1 open", "x bad", "2",
                                                                        '3 say "hi" \\ there']),
                          health_batch("h1", 5, now - 3600 * 10**9, old, historical=True, n=4)])
    wait_for("both committed", lambda: pg.psql("SELECT count(*) FROM batches JOIN vehicles v USING (vehicle_id) "
                                               "WHERE v.name = 'h1'") == "2")
    rows = {x[0]: x[1:] for x in pg.rows("SELECT h.name, h.errors, h.state, h.latency_p99_us, h.backlog FROM health h "
                                           "JOIN vehicles v USING (vehicle_id) WHERE v.name = 'h1'")}
    check(rows == {"vehicle": ["5", "gone", "77", "0"], "log": ["0", "", "0", "3"], "uplink": ["0", "", "0", "0"]},
          "the newest entry per part; the older Batch adds its new part only", rows)
    vt = pg.psql("SELECT value_table FROM configs JOIN vehicles v USING (vehicle_id) WHERE v.name = 'h1'")
    check(vt == '{"0 closed","1 open","3 say \\"hi\\" \\\\ there"}', "value table: the entries with a number and a label",
          vt)
    check(pg.psql("SELECT value_label(value_table, 1) || '/' || coalesce(value_label(value_table, 5), '-') || '/' || "
                  "value_label(value_table, 3) FROM configs") == 'open/-/say "hi" \\ there', "value_label()")
    rc, err = r.terminate()
    check(rc == 0 and "2 channel dictionary, value-table or Health entries not stored" in err,
          "the two value-table entries left out are said", err)
    print("health: one row per part, the newest entries kept; value-table entries without a number left out")


def main():
    with ground_peers() as (pg, broker, _):
        out = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(out.returncode == 0, "db init", out.stderr)
        test_status(pg, broker)
        test_status_outage(pg, broker)
        test_health(pg, broker)
    print("ground-status: all checks passed")


if __name__ == "__main__":
    main()
