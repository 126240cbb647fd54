#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-db.py RAILMON PB2_DIR GROUND_MD - the ground station on a real
PostgreSQL 15 (started here, pg.py) and a real mosquitto, with Batches
built by an independent encoder (protoc's railmon_pb2) and published with
paho-mqtt:

- `railmon db status|init|migrate`: an empty database is said, init applies
  the migrations and records them, a second init is refused, migrate has
  nothing to do; recv refuses a database without the schema, in words;
- exactly once: every Batch published twice and out of order gives each
  record once (samples, CAN frames, events, every column checked), the
  ledger one row per Batch; a Batch with other records under committed
  seqs is kept in `conflicts` (once, however often it comes) and nothing
  of it in the data tables;
- names: samples committed before their dictionary are stored by id and
  named (samples_named) once a Batch carrying the dictionary arrives; the
  retained railmon/<vehicle>/channels message fills configs before any
  Batch of that vehicle;
- outage: the database stopped under a running receiver: recv says so,
  waits, and once the server is back every Batch published meanwhile is
  committed, none lost, none twice; a transient SQLSTATE (57P01) is
  retried, nothing refused;
- permanent errors (a constraint, a type, a permission): only the Batch
  that fails is refused and kept in `refused` with its SQLSTATE, said once;
  the rest of its group is committed;
- `db prune --older-than 90d` drops the day partitions older than that and
  keeps the rest; the ledger and the gaps/completeness views agree;
- docs/ground.md's three example queries (the README's before issue 28) run and give what they say.

Every server, broker and receiver started here is stopped on every exit
path (and dies with this script).
"""
import json
import os
import pty
import re
import subprocess
import sys
import termios
import time

RAILMON, PB2_DIR, README = sys.argv[1:4]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
HERE = ground_paths.HERE
import paho.mqtt.client as mqtt  # noqa: E402
from railmon_test import wait_for  # noqa: E402
from mqtt_peers import Recv, big_batch, publish, check, ground_peers  # noqa: E402

NOW_NS = time.time_ns()
LOG_A = bytes.fromhex("a1" * 15 + "01")


def batch(vehicle, first_seq, n, t0=NOW_NS, salt=0, channels=False, historical=False, log_id=LOG_A, text=None):
    """n records: a CAN frame, then samples on channels 7 and 8, then an event;
    with text, one more record: that text on text channel 9 (Batch.texts)."""
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0, log_id=log_id,
                          config_hash=0x1234, historical=historical)
    b.can.t_delta_ns.append(0)
    b.can.bus.append(1)
    b.can.id.append(0x123)
    b.can.flags.append(0)
    b.can.len.append(3)
    b.can.data = bytes([first_seq & 0xff, 2, 3])
    for i in range(n - 2):
        b.samples.t_delta_ns.append(1000 * (i + 1))
        b.samples.channel.append(7 + i % 2)
        b.samples.value.append(float(first_seq + i + salt) + 0.25)
    b.events.t_delta_ns.append(1000 * n)
    b.events.source.append(65535)
    b.events.code.append(1)
    b.events.arg.append(first_seq)
    b.events.detail.append(9)
    if text is not None:
        b.texts.t_delta_ns.append(1000 * (n + 1))  # whole microseconds, as the database keeps them
        b.texts.channel.append(9)
        b.texts.text.append(text)
    if channels:
        for cid, name, unit in ((7, "line_voltage", "V"), (8, "speed", "km/h"), (9, "vehicle_number", "")):
            b.channels.add(id=cid, name=name, unit=unit, bus=0, source="modbus:test")
    return b.SerializeToString()


def db(*args):
    r = subprocess.run([RAILMON, "db"] + list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test_schema(pg):
    rc, out = db("status", "--db", pg.url)
    check(rc == 1 and "empty, run `railmon db init`" in out, "empty database said", out)
    # a database at version 1 is migrated to the current one
    pg.psql("CREATE DATABASE old")
    old = pg.url.replace("/railmon_test?", "/old?")
    names = [n[:-4] for n in pg.schema_at(os.path.join(HERE, "..", ".."), 1, db="old")]
    rc, out = db("status", "--db", old)
    check(rc == 1 and "run `railmon db migrate`" in out, "old schema said", out)
    r = subprocess.run([RAILMON, "recv", "--broker", "mqtt://127.0.0.1:1", "--db", old, "--duration", "1"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "run `railmon db migrate` first" in r.stderr, "recv refuses an old schema",
          r.stderr)
    rc, out = db("migrate", "--db", old)
    check(rc == 0 and out.strip() == "\n".join("applied " + n for n in names[1:]),
          "migrate applies what is missing (2 to %d)" % len(names), out)
    check(pg.psql("SELECT count(*) FROM gaps", db="old") == "0", "the new gaps view works")
    check(pg.psql("SELECT string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
                  "WHERE table_name = 'completeness'", db="old")
          == "vehicle,day,batches,records,missing,complete,on_board",
          "completeness keeps its columns and order, on_board last (migration 0012)")
    r = subprocess.run([RAILMON, "recv", "--broker", "mqtt://127.0.0.1:1", "--db", pg.url, "--duration", "1"],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 2 and "run `railmon db init` first" in r.stderr, "recv refuses no schema", r.stderr)
    rc, out = db("init", pg.url)
    check(rc == 0 and "applied 0001-init\napplied 0002-gap-repair\napplied 0003-rollups\napplied 0004-texts\n"
          "applied 0005-groups-refused-days" in out, "init", out)
    check(pg.psql("SELECT string_agg(version || ' ' || name, ',' ORDER BY version) FROM schema_migrations")
          == ",".join("%d %s" % (v, n[5:]) for v, n in enumerate(names, 1)), "recorded")
    rc, out = db("init", "--db", pg.url)
    check(rc == 1 and "already initialised" in out, "second init refused", out)
    rc, out = db("migrate", "--db", pg.url)
    check(rc == 0 and "nothing to do" in out and "NOTICE" not in out, "migrate: nothing to do", out)
    rc, out = db("status", "--db", pg.url)
    check(rc == 0 and "current" in out, "status current", out)
    rc, out = db("prune", "--db", pg.url)
    check(rc == 2 and "prune needs --older-than" in out, "prune without --older-than", out)
    rc, out = db("init", "--db", "postgresql:///nosuchdb?host=%s&user=railmon" % pg.dir)
    check(rc == 1 and "nosuchdb" in out, "unreachable database said", out)
    print("db status/init/migrate: ok")


def expected_rows(first_seq, n, salt=0):
    return [(7 + i % 2, float(first_seq + i + salt) + 0.25) for i in range(n - 2)]


def test_exactly_once(pg, broker):
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                       "--client-id", "ground-1"])
    r.wait_subscribed()
    seqs = [(1 + 10 * k, 10) for k in range(20)]
    msgs = [("railmon/emu1/data", batch("emu1", s, n)) for s, n in seqs]
    # twice, the second time backwards: every one a duplicate
    publish(broker.port, msgs + list(reversed(msgs)))
    # a conflict: other values under seqs 11..20, twice
    bad = batch("emu1", 11, 10, salt=1000)
    publish(broker.port, [("railmon/emu1/data", bad), ("railmon/emu1/data", bad)])
    wait_for("200 records committed", lambda: pg.psql("SELECT coalesce(sum(count), 0) FROM batches") == "200")
    wait_for("the conflict kept", lambda: pg.psql("SELECT count(*) FROM conflicts") == "1")
    rc, err = r.terminate()
    check(rc == 0, "recv exit", err)
    check(pg.psql("SELECT count(*) FROM batches") == "20", "one ledger row per Batch")
    got = sorted((int(c), float(v)) for c, v in pg.rows("SELECT channel, value FROM samples"))
    want = sorted(x for s, n in seqs for x in expected_rows(s, n))
    check(got == want, "every sample once", len(got), len(want))
    check(pg.psql("SELECT count(*), count(DISTINCT data) FROM can_frames") == "20|20", "CAN frames once")
    check(pg.psql("SELECT encode(data, 'hex'), bus, can_id FROM can_frames WHERE data = '\\x0b0203'")
          == "0b0203|1|291", "CAN columns")
    check(pg.psql("SELECT count(*), sum(arg) FROM events WHERE code = 1 AND detail = 9 AND source = 65535")
          == "20|%d" % sum(s for s, _ in seqs), "events once")
    check(pg.psql("SELECT first_seq, count, reason FROM conflicts") ==
          "11|10|other records under seqs committed before", "conflict row")
    check(pg.psql("SELECT count(*) FROM samples WHERE value >= 1000") == "0", "nothing of the conflict stored")
    # the timestamps: t0 + delta, to the microsecond
    t = pg.psql("SELECT (extract(epoch FROM t) * 1000000)::bigint FROM events WHERE arg = 1")
    check(int(t) == (NOW_NS + 10 * 1000) // 1000, "event time", t, NOW_NS)
    check("20 Batches committed" in err and "duplicates" in err, "summary says the database", err)
    # the rollups, maintained in each Batch's transaction: every Batch came
    # twice, each sample counts once
    vals = [v for _, v in want]
    for table in ("rollup_1s", "rollup_1min"):
        got = pg.psql("SELECT sum(n), min(vmin), max(vmax), sum(vsum) FROM %s r JOIN vehicles v "
                      "USING (vehicle_id) WHERE v.name = 'emu1'" % table).split("|")
        check(int(got[0]) == len(vals) and float(got[1]) == min(vals) and float(got[2]) == max(vals)
              and abs(float(got[3]) - sum(vals)) < 1e-6, table + " counts each sample once", got)
    by_channel = pg.rows("SELECT channel, sum(count), round(sum(mean * count)::numeric, 6) FROM samples_1s "
                         "WHERE vehicle = 'emu1' GROUP BY 1 ORDER BY 1")
    check([(int(c), int(n), float(s_)) for c, n, s_ in by_channel] ==
          [(c, sum(1 for x, _ in want if x == c), round(sum(v for x, v in want if x == c), 6)) for c in (7, 8)],
          "samples_1s per channel", by_channel)
    print("exactly once (each Batch twice, out of order), conflict kept once: ok")


def test_names(pg, broker):
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                       "--client-id", "ground-2"])
    r.wait_subscribed()
    publish(broker.port, [("railmon/emu2/data", batch("emu2", 1, 6))])
    wait_for("emu2's first Batch", lambda: pg.psql(
        "SELECT count(*) FROM samples_named WHERE vehicle = 'emu2'") == "4")
    check(pg.psql("SELECT count(*) FROM samples_named WHERE vehicle = 'emu2' AND channel_name IS NULL") == "4",
          "by id before the dictionary")
    publish(broker.port, [("railmon/emu2/data", batch("emu2", 7, 6, channels=True))])
    wait_for("emu2's dictionary", lambda: pg.psql(
        "SELECT count(*) FROM samples_named WHERE vehicle = 'emu2' AND channel_name IS NOT NULL") == "8")
    check(pg.psql("SELECT DISTINCT channel_name || ' ' || unit FROM samples_named WHERE vehicle = 'emu2' "
                  "AND channel = 8") == "speed km/h", "named")
    r.terminate()
    # the retained dictionary (railmon/<vehicle>/channels, as the vehicle's
    # forwarder publishes it): in configs as the receiver subscribes, before
    # any Batch of that vehicle, so its first samples are named at once
    d = railmon_pb2.Batch(schema_version=1, first_seq=1, vehicle="emu2r", t0_ns=NOW_NS, log_id=LOG_A,
                          config_hash=0x1234)
    for cid, name, unit in ((7, "line_voltage", "V"), (8, "speed", "km/h")):
        d.channels.add(id=cid, name=name, unit=unit, bus=0, source="modbus:test")
    c = mqtt.Client(client_id="test-retain-%d" % os.getpid(), clean_session=True)
    c.connect("127.0.0.1", broker.port, 20)
    c.loop_start()
    try:
        c.publish("railmon/emu2r/channels", d.SerializeToString(), qos=1, retain=True).wait_for_publish(20)
        r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                           "--client-id", "ground-2r"])
        r.wait_subscribed()
        wait_for("the retained dictionary in configs", lambda: pg.psql(
            "SELECT string_agg(c.name || ' ' || c.unit, ',' ORDER BY c.channel) FROM configs c "
            "JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu2r'") == "line_voltage V,speed km/h", 20)
        check(pg.psql("SELECT count(*) FROM batches b JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu2r'")
              == "0", "no Batch yet")
        publish(broker.port, [("railmon/emu2r/data", batch("emu2r", 1, 6))])
        wait_for("emu2r's samples named", lambda: pg.psql(
            "SELECT count(*) FROM samples_named WHERE vehicle = 'emu2r' AND channel_name IS NOT NULL") == "4")
        rc, err = r.terminate()
        check(rc == 0, "recv exit", err)
        c.publish("railmon/emu2r/channels", b"", qos=1, retain=True).wait_for_publish(20)
    finally:
        c.disconnect()
        c.loop_stop()
    print("samples before their dictionary named when it arrives; the retained dictionary fills configs: ok")


def test_outage(pg, broker):
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                       "--client-id", "ground-3"])
    r.wait_subscribed()
    publish(broker.port, [("railmon/emu3/data", batch("emu3", 1, 5))])
    wait_for("emu3's first Batch", lambda: pg.psql("SELECT count(*) FROM batches b JOIN vehicles v "
                                                    "USING (vehicle_id) WHERE v.name = 'emu3'") == "1")
    pg.stop()
    publish(broker.port, [("railmon/emu3/data", batch("emu3", 1 + 5 * k, 5)) for k in range(1, 30)])
    try:
        wait_for("the outage said", lambda: any("database:" in x and "retrying" in x for x in r.lines), 30)
    except AssertionError:
        sys.stderr.write("".join(r.lines))
        raise
    time.sleep(1.5)
    pg.start()
    wait_for("all 30 Batches after the outage", lambda: pg.psql(
        "SELECT count(*), sum(count) FROM batches b JOIN vehicles v USING (vehicle_id) "
        "WHERE v.name = 'emu3'") == "30|150", 60)
    wait_for("back said", lambda: any("committing again" in x for x in r.lines), 10)
    rc, err = r.terminate()
    check(rc == 0, "recv exit", err)
    check(pg.psql("SELECT count(*) FROM gaps g JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu3'") == "0",
          "no gaps")
    check(pg.psql("SELECT count(*) FROM samples s JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu3'")
          == "90", "samples once")
    print("database stopped and started under the receiver: nothing lost, nothing twice: ok")


def test_transient(pg, broker):
    """A transient SQLSTATE (57P01: the server ended the receiver's session,
    as an administrator or a failover does) is retried: nothing refused,
    nothing lost."""
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                       "--client-id", "ground-3t"])
    r.wait_subscribed()
    t = "railmon/emu3t/data"
    publish(broker.port, [(t, batch("emu3t", 1, 5))])
    wait_for("emu3t's first Batch", lambda: vehicle_batches(pg, "emu3t") == "1")
    check(pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() "
                  "AND pid <> pg_backend_pid() AND backend_type = 'client backend'") != "0", "session ended")
    publish(broker.port, [(t, batch("emu3t", 1 + 5 * k, 5)) for k in range(1, 10)])
    wait_for("emu3t all", lambda: pg.psql("SELECT count(*), sum(count) FROM batches b JOIN vehicles v "
                                          "USING (vehicle_id) WHERE v.name = 'emu3t'") == "10|50", 30)
    rc, err = r.terminate()
    check(rc == 0 and "refused for good" not in err and "Batches refused" not in err, "nothing refused", err)
    check(pg.psql("SELECT count(*) FROM refused WHERE vehicle = 'emu3t'") == "0", "nothing in refused")
    print("a transient SQLSTATE (the session ended by the server) retried: nothing lost, nothing refused: ok")


def test_bad_input(pg, broker):
    """Malformed and oversize Batches: counted, said, stored nowhere, and
    the receiver goes on."""
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                       "--client-id", "ground-6"])
    r.wait_subscribed()
    big = big_batch(railmon_pb2, "emu6", LOG_A, 1, 17000, NOW_NS)
    check(len(big) > 1 << 20, "over 1 MiB", len(big))
    # a dictionary name that is not UTF-8 (the database would refuse it for
    # ever): that entry is left out, the records and the other names stored
    bad_name = batch("emu6", 17006, 6, channels=True).replace(b"line_voltage", b"\xff\xfene_voltage")
    publish(broker.port, [("railmon/emu6/data", b"\x08\x01garbage"), ("railmon/emu6/data", big),
                          ("railmon/emu6/data", batch("emu6", 17001, 5)), ("railmon/emu6/data", bad_name)])
    wait_for("emu6's good Batches", lambda: pg.psql("SELECT count(*) FROM batches b JOIN vehicles v "
                                                     "USING (vehicle_id) WHERE v.name = 'emu6'") == "2")
    rc, err = r.terminate()
    check("1 channel dictionary, value-table or Health entries not stored: a name, unit, source or label" in err,
          "the bad name said", err)
    check(pg.psql("SELECT string_agg(c.name, ',' ORDER BY c.name) FROM configs c JOIN vehicles v USING (vehicle_id) "
                  "WHERE v.name = 'emu6'") == "speed,vehicle_number", "the good names stored")
    check(rc == 0 and "1 malformed payloads" in err, "malformed counted", err)
    check("emu6 log a1a1a1a1: seq 1..17000 not stored: over 1 MiB" in err, "oversize said", err)
    check(pg.psql("SELECT count(*) FROM can_frames c JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu6'")
          == "2", "nothing of the oversize Batch stored (one CAN frame in each good Batch)")
    print("malformed and oversize Batches: counted, said, stored nowhere: ok")


def samples_only(vehicle, first_seq, n, value=1.5, t0=None):
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0 or NOW_NS,
                          log_id=LOG_A, config_hash=0x1234)
    for i in range(n):
        b.samples.t_delta_ns.append(1000 if i else 0)
        b.samples.channel.append(7)
        b.samples.value.append(value)
    return b.SerializeToString()


def queued(pg, broker, url, client, msgs):
    """A receiver that subscribes, goes away while msgs are queued for it,
    and comes back: they arrive at once, so they share groups."""
    args = ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", url, "--client-id", client]
    r = Recv(RAILMON, args)
    r.wait_subscribed()
    r.terminate()
    publish(broker.port, msgs)
    r = Recv(RAILMON, args)
    r.wait_subscribed()
    return r


def vehicle_batches(pg, v):
    return pg.psql("SELECT string_agg(first_seq::text, ',' ORDER BY first_seq) FROM batches b "
                   "JOIN vehicles v USING (vehicle_id) WHERE v.name = '%s'" % v)


def test_group_ledger(pg, broker):
    """One group, its ledger in one round trip (each Batch's statement sees
    the ones before it): a Batch twice in the group is a duplicate the
    second time, a Batch overlapping one earlier in the same group (another
    first_seq) is a conflict, one that only touches it is new."""
    t = "railmon/emu15/data"
    r = queued(pg, broker, pg.url, "ground-15", [(t, samples_only("emu15", 1, 10)), (t, samples_only("emu15", 1, 10)),
                                                 (t, samples_only("emu15", 5, 10, 4.0)),
                                                 (t, samples_only("emu15", 11, 10)),
                                                 (t, samples_only("emu15", 21, 10)),
                                                 (t, samples_only("emu15", 21, 10))])
    wait_for("emu15 committed", lambda: vehicle_batches(pg, "emu15") == "1,11,21", 30)
    wait_for("emu15's conflict", lambda: pg.psql("SELECT count(*) FROM conflicts c JOIN vehicles v USING "
                                                "(vehicle_id) WHERE v.name = 'emu15'") == "1", 30)
    rc, err = r.terminate()
    check(rc == 0, "recv ends cleanly", err)
    check(pg.psql("SELECT first_seq, count FROM conflicts c JOIN vehicles v USING (vehicle_id) WHERE v.name = "
                  "'emu15'") == "5|10", "the overlapping Batch kept as a conflict")
    check(pg.psql("SELECT count(*), count(DISTINCT seq), min(seq), max(seq), sum(value) FROM samples s "
                  "JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu15'") == "30|30|1|30|45",
          "each record once, nothing of the conflict")
    check(pg.psql("SELECT sum(batches), sum(records), min(min_first), max(max_end) FROM ledger_days d "
                  "JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu15'") == "3|30|1|31",
          "ledger_days counts the new Batches only")
    check(pg.psql("SELECT sum(n), sum(vsum) FROM rollup_1s r JOIN vehicles v USING (vehicle_id) "
                  "WHERE v.name = 'emu15'") == "30|45", "the rollups count each sample once")
    print("one group's ledger: a Batch twice is a duplicate, an overlap in the group a conflict: ok")


def test_refused(pg, broker):
    """Permanent database errors (a constraint, a type, a permission):
    only the Batch that fails is refused, kept in the table refused with
    its SQLSTATE, said once, and the receiver goes on; the other Batches of
    its group (a duplicate and a conflict among them) are committed exactly
    once."""
    # constraint (class 23): a CHECK the operator added
    pg.psql("ALTER TABLE samples ADD CONSTRAINT value_sane CHECK (value < 1e9)")
    t = "railmon/emu7/data"
    r = queued(pg, broker, pg.url, "ground-7", [(t, samples_only("emu7", 1, 5)), (t, samples_only("emu7", 6, 5, 2e9)),
                                                 (t, samples_only("emu7", 11, 5)), (t, samples_only("emu7", 1, 5)),
                                                 (t, samples_only("emu7", 11, 5, 3.0))])
    wait_for("emu7 refused", lambda: pg.psql("SELECT count(*) FROM refused WHERE vehicle = 'emu7'") == "1", 30)
    publish(broker.port, [(t, samples_only("emu7", 16, 5))])
    wait_for("emu7 goes on", lambda: vehicle_batches(pg, "emu7") == "1,11,16", 30)
    rc, err = r.terminate()
    pg.psql("ALTER TABLE samples DROP CONSTRAINT value_sane")
    check(rc == 0 and err.count("refused for good (kept in table refused, 1 so far): emu7 seq 6..10: SQLSTATE "
                                "23514") == 1, "the refusal said once", err)
    check("1 Batches refused for good, kept in table refused" in err, "the refusal in the summary", err)
    check(pg.psql("SELECT first_seq, count, sqlstate, reason LIKE '%value_sane%', length(payload) > 0 "
                  "FROM refused WHERE vehicle = 'emu7'") == "6|5|23514|t|t", "kept with its reason")
    check(pg.psql("SELECT count(*) FROM samples s JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu7'")
          == "15", "the others once, nothing of the refused one")
    check(pg.psql("SELECT first_seq FROM conflicts c JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu7'")
          == "11", "a conflict in the group kept, the rest committed")
    check(pg.psql("SELECT count(*) FROM gaps g JOIN vehicles v USING (vehicle_id) WHERE v.name = 'emu7' "
                  "AND NOT explained") == "0", "the refused hole is explained (not asked for again)")
    # type (class 22): a column that cannot take what the Batch holds
    pg.psql("ALTER TABLE events ALTER COLUMN arg TYPE integer")
    t = "railmon/emu8/data"
    r = queued(pg, broker, pg.url, "ground-8", [(t, samples_only("emu8", 1, 5)), (t, batch("emu8", 6, 5)),
                                                 (t, samples_only("emu8", 11, 5))])
    wait_for("emu8", lambda: vehicle_batches(pg, "emu8") == "1,11", 30)
    rc, err = r.terminate()
    pg.psql("ALTER TABLE events ALTER COLUMN arg TYPE bigint")
    check(pg.psql("SELECT first_seq, substr(sqlstate, 1, 2) FROM refused WHERE vehicle = 'emu8'") == "6|22",
          "a type error refused", err)
    # permission (class 42): a role that may not write CAN frames (nor
    # create tables: today's partitions exist, and the receiver only checks)
    pg.psql("CREATE ROLE ingest LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO ingest; "
            "GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ingest; REVOKE INSERT ON can_frames FROM ingest")
    url = pg.url.replace("user=railmon", "user=ingest")
    t = "railmon/emu9/data"
    r = queued(pg, broker, url, "ground-9", [(t, samples_only("emu9", 1, 5)), (t, batch("emu9", 6, 5)),
                                              (t, samples_only("emu9", 11, 5))])
    try:
        wait_for("emu9", lambda: vehicle_batches(pg, "emu9") == "1,11", 30)
    except AssertionError:
        sys.stderr.write("".join(r.lines))
        raise
    rc, err = r.terminate()
    check(pg.psql("SELECT first_seq, sqlstate FROM refused WHERE vehicle = 'emu9'") == "6|42501",
          "a permission error refused", err)
    check(rc == 0 and "permission denied" in err, "said in the server's words", err)
    print("permanent errors (constraint 23514, type 22, permission 42501): only the failing Batch refused, "
          "kept with its reason, said once; the rest of its group committed: ok")


def test_prune_and_views(pg, broker):
    day = 86400 * 10**9
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url,
                       "--client-id", "ground-4"])
    r.wait_subscribed()
    old = NOW_NS - 100 * day
    # emu4: a Batch 100 days ago, a hole (seq 11..20), then today
    publish(broker.port, [("railmon/emu4/data", batch("emu4", 1, 10, t0=old)),
                          ("railmon/emu4/data", batch("emu4", 21, 10))])
    wait_for("emu4", lambda: pg.psql("SELECT count(*) FROM batches b JOIN vehicles v USING (vehicle_id) "
                                     "WHERE v.name = 'emu4'") == "2")
    r.terminate()
    check(pg.psql("SELECT from_seq, to_seq, records FROM gaps g JOIN vehicles v USING (vehicle_id) "
                  "WHERE v.name = 'emu4'") == "11|20|10", "the gap")
    check(pg.psql("SELECT batches, records, missing FROM completeness WHERE vehicle = 'emu4' "
                  "ORDER BY day DESC LIMIT 1") == "1|10|10", "completeness today")
    # the view read from ledger_days gives what the old one, walking the
    # ledger through the gaps view, gives, for every vehicle and day here
    # (completeness counts the holes between a log's Batches; the gaps view
    # lists a log's start not received too, from_seq 1: migration 0011)
    exact = pg.rows("SELECT v.name, d.day, d.batches, d.records, coalesce(g.missing, 0) FROM (SELECT vehicle_id, "
                    "CAST(t_first AT TIME ZONE 'UTC' AS date) AS day, count(*) AS batches, sum(count) AS records "
                    "FROM batches GROUP BY 1, 2) d JOIN vehicles v USING (vehicle_id) LEFT JOIN (SELECT vehicle_id, "
                    "CAST(t_after AT TIME ZONE 'UTC' AS date) AS day, sum(records) AS missing FROM gaps "
                    "WHERE from_seq > 1 GROUP BY 1, 2) g USING (vehicle_id, day) ORDER BY 1, 2")
    view = pg.rows("SELECT vehicle, day, batches, records, missing FROM completeness ORDER BY 1, 2")
    check(view == exact and len(view) >= 10, "completeness = the ledger's own figures", view, exact)
    before = int(pg.psql("SELECT count(*) FROM samples"))
    check(pg.psql("SELECT sum(n_all) FROM rollup_summary_1s WHERE t < now() - interval '90 days'") == "8",
          "summary's rollup holds the old day")
    rc, out = db("prune", "--older-than", "90d", "--db", pg.url)
    check(rc == 0 and "dropped 5 day partitions" in out,
          "prune drops the old day (samples, can_frames, events, texts, trdp_telegrams)", out)
    check(pg.psql("SELECT count(*) FROM pg_inherits WHERE inhparent = 'trdp_telegrams'::regclass AND "
                  "inhrelid::regclass::text < 'trdp_telegrams_p%s'" % time.strftime("%Y%m%d", time.gmtime(
                      time.time() - 90 * 86400))) == "0", "the old day's trdp_telegrams partition gone")
    check(int(pg.psql("SELECT count(*) FROM samples")) == before - 8, "only the old day's samples gone")
    check(pg.psql("SELECT count(*) FROM samples WHERE t < now() - interval '90 days'") == "0", "old gone")
    check(pg.psql("SELECT count(*) FROM rollup_1s WHERE t < now() - interval '90 days'") == "0", "old 1 s gone")
    check(pg.psql("SELECT count(*) FROM rollup_summary_1s WHERE t < now() - interval '90 days'") == "0",
          "summary's rollup of the old day gone with its rows")
    check(pg.psql("SELECT sum(n) FROM rollup_1min WHERE t < now() - interval '90 days'") == "8", "1 min kept")
    rc, out = db("prune", "--older-than", "90d", "--db", pg.url)
    check(rc == 0 and "dropped 0 day partitions" in out, "prune again: nothing", out)
    print("prune --older-than 90d drops whole days; gaps and completeness views: ok")


def export(args):
    r = subprocess.run([RAILMON, "export"] + args, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "export " + " ".join(args), r.stderr)
    return r.stdout


def test_export(pg, broker, tmp):
    """The database as a source: export --db gives the lines export of a
    ground log of the same Batches gives, with the same filters and
    formats (influx, --wide, --raster and the ASC trace too), each record
    with its Batch's log id; in time order."""
    logdir = os.path.join(tmp, "ground")
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--log", logdir,
                       "--client-id", "ground-5"])
    r.wait_subscribed()
    t0 = (NOW_NS // 1000) * 1000  # the database keeps microseconds
    # Batches 2 and 4 carry a text (channel 9, Modbus type = string): 9 records
    first = [1, 9, 17, 26, 34, 43]
    publish(broker.port, [("railmon/emu5/data", batch("emu5", first[k], 8, t0=t0 + k * 10**7, channels=(k == 3),
                                                       text={2: "EMU-4021", 4: 'a\\b "5"'}.get(k)))
                          for k in range(6)])
    wait_for("emu5", lambda: pg.psql("SELECT count(*) FROM batches b JOIN vehicles v USING (vehicle_id) "
                                     "WHERE v.name = 'emu5'") == "6")
    r.terminate()
    data = os.path.join(logdir, "emu5")
    tf = "%.6f" % ((t0 + 2 * 10**7) / 1e9)
    tt = "%.6f" % ((t0 + 5 * 10**7) / 1e9)
    cases = [["--format", "jsonl"], ["--format", "csv"], ["--format", "candump"],
             ["--format", "csv", "--kind", "sample", "--channel", "speed"],
             ["--format", "jsonl", "--kind", "event", "--kind", "can", "--from", tf, "--to", tt],
             ["--format", "influx"], ["--format", "csv", "--wide"],
             ["--format", "csv", "--wide", "--raster", "10ms", "--channel", "speed"],
             ["--format", "asc"]]
    for args in cases:
        a = export(args + ["--data", data])
        b = export(args + ["--db", pg.url, "--vehicle", "emu5"])
        la, lb = a.splitlines(), b.splitlines()
        head = 1 if args[1] == "csv" else 0
        check(la[:head] == lb[:head] and sorted(la[head:]) == sorted(lb[head:]) and len(la) > 2,
              "export --db " + " ".join(args) + " as from the log", a, b)
        if args[1] == "jsonl":
            times = [json.loads(x)["time_ns"] for x in lb]
            check(times == sorted(times), "export --db in time order", b)
    texts = [json.loads(x) for x in export(["--format", "jsonl", "--kind", "text", "--db", pg.url, "--vehicle",
                                            "emu5"]).splitlines()]
    check([(t["seq"], t["name"], t["label"]) for t in texts] == [(25, "vehicle_number", "EMU-4021"),
                                                                  (42, "vehicle_number", 'a\\b "5"')],
          "texts stored in the texts table and exported", texts)
    check(pg.psql("SELECT string_agg(text, '|' ORDER BY seq) FROM texts") == 'EMU-4021|a\\b "5"', "texts table")
    # under a terminal: a rate line of the records read (no total known),
    # cleared before the totals; none with --quiet (issue 28)
    for quiet in ([], ["--quiet"]):
        m, s = pty.openpty()
        attrs = termios.tcgetattr(s)
        attrs[1] &= ~termios.OPOST
        termios.tcsetattr(s, termios.TCSANOW, attrs)
        p = subprocess.Popen([RAILMON, "export", "--db", pg.url, "--vehicle", "emu5", "-o", os.devnull] + quiet,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=s)
        os.close(s)
        got = b""
        while True:
            try:
                chunk = os.read(m, 65536)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        os.close(m)
        check(p.wait(60) == 0, "export --db under a terminal", got)
        bar = list(re.finditer(rb"\rexport: \d+ records, \d+ records/s\x1b\[K", got))
        if quiet:
            check(got == b"", "export --db --quiet: nothing said", got)
        else:
            check(bar and got[bar[-1].end():].startswith(b"\r\x1b[Krailmon export: "),
                  "export --db: a rate line, cleared before the totals", got)
    r2 = subprocess.run([RAILMON, "export", "--db", pg.url], capture_output=True, text=True)
    check(r2.returncode == 2 and "--db needs --vehicle" in r2.stderr, "--vehicle required", r2.stderr)
    # a vehicle the database does not know: one sentence and exit 1, not a
    # header and "0 records written" with exit 0 (issue 28)
    r3 = subprocess.run([RAILMON, "export", "--db", pg.url, "--vehicle", "emu55", "--format", "csv"],
                        capture_output=True, text=True)
    check(r3.returncode == 1 and r3.stdout == "" and r3.stderr ==
          "railmon export: --vehicle emu55: the database has no such vehicle (it never sent a Batch)\n",
          "unknown vehicle refused", r3.stdout, r3.stderr)
    # plot --db draws the picture plot of the ground log draws, byte for byte
    pics = []
    nspeed = len(export(["--format", "csv", "--kind", "sample", "--channel", "speed", "--data", data]).splitlines()) - 1
    for src in (["--data", data], ["--db", pg.url, "--vehicle", "emu5"]):
        out = os.path.join(tmp, "plot-%d.png" % len(pics))
        rp = subprocess.run([RAILMON, "plot", "-c", "speed", "--title", "emu5", "-o", out] + src,
                            capture_output=True, text=True, timeout=60)
        check(rp.returncode == 0 and "speed %d samples" % nspeed in rp.stderr, "plot " + " ".join(src), rp.stderr)
        pics.append(open(out, "rb").read())
    check(pics[0] == pics[1], "plot --db: the same picture as plot of the ground log")
    print("export --db: the same lines as export of the ground log, in every format and filter: ok")


def test_readme_queries(pg):
    text = open(README).read()
    sec = text[text.index("## Ground station on PostgreSQL"):]
    sec = sec[:sec.find("\n## ", 3) if "\n## " in sec[3:] else len(sec)]  # this section only
    queries = re.findall(r"```sql\n(.*?)```", sec, re.S)
    check(len(queries) == 3, "three example queries in the README", len(queries))
    # the third names a channel as recv names a DBC signal, Message.Signal
    # (the demo DBC's speed); this database's synthetic Batches call it speed
    m = re.search(r"channel_name = '(\w+)\.(\w+)'", queries[2])
    dbc = open(os.path.join(os.path.dirname(README), "..", "cli", "demo", "train.dbc")).read()  # README: docs/ground.md
    check(m and re.search(r"BO_ \d+ %s\b" % m.group(1), dbc) and re.search(r"SG_ %s\b" % m.group(2), dbc),
          "the README's channel name is a qualified name of the demo DBC", queries[2])
    queries[2] = queries[2].replace(m.group(0), "channel_name = 'speed'")
    results = [pg.rows(q) for q in queries]
    check(any(row[0] == "emu1" for row in results[0]), "latest values per vehicle", results[0])
    check(any(row[0] == "emu4" and row[4] == "10" for row in results[1]), "completeness shows emu4's gap",
          results[1])
    check(len(results[2]) > 0, "the time window query returns rows", results[2])
    print("README's three queries: ok")


def test_db_init_hints(pg):
    """db init against a fresh PostgreSQL without railmon's role or
    database: libpq's words, then the one command that makes the missing
    one (issue 28)."""
    host = pg.url.split("host=")[1].split("&")[0]
    for url, want in (("postgresql:///railmon_test?host=%s&user=nosuchrole" % host, "createuser nosuchrole"),
                      ("postgresql:///nosuchdb?host=%s&user=railmon" % host, "createdb -O ROLE nosuchdb")):
        r = subprocess.run([RAILMON, "db", "init", "--db", url], capture_output=True, text=True, timeout=60)
        check(r.returncode == 1 and "does not exist" in r.stderr and want in r.stderr, "db init says " + want,
              r.stderr)
    print("db init names the role or database to create: ok")


def main():
    with ground_peers("ground-db-") as (pg, broker, tmp):
        test_schema(pg)
        test_db_init_hints(pg)
        test_exactly_once(pg, broker)
        test_names(pg, broker)
        test_outage(pg, broker)
        test_transient(pg, broker)
        test_bad_input(pg, broker)
        test_group_ledger(pg, broker)
        test_refused(pg, broker)
        test_prune_and_views(pg, broker)
        test_export(pg, broker, tmp)
        test_readme_queries(pg)


main()
