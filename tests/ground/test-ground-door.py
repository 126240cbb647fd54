#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-door.py RAILMON PB2_DIR - the ground's door under a hostile
publisher (issue 26): Batches built by an independent encoder (protoc's
railmon_pb2), published with paho-mqtt on a real mosquitto into the real
`railmon recv --db` on a real PostgreSQL 15.  Each check is one finding of
the issue and fails on the receiver before the door:

1. record times: one Batch of 200 samples a day apart (and one in 2262)
   made four partitions a day; now refused whole, kept in `refused`,
   counted per vehicle and reason (door_refusals, which the dashboard's
   vehicle page gives as `refusals`), said; no partition made.
   An honest Batch 100 days old still goes in. `db prune` drops a partition
   of a day after tomorrow, which it never did;
3. dictionaries: one over 1 MiB, one over --max-channels and new config hashes past
   --max-configs a day are refused, counted and said; channel_names gives
   the newest dictionary's names only;
4. "gone": an answer for a range nobody asked for (1..2^63-1) is refused
   (the hole stays unexplained, counted); one for a vehicle the database
   never had makes no vehicle; an answer inside the range gap repair
   asked for is recorded;
5. refused files: oversize Batches kept cut to 1 MiB, within --refused-max,
   mode 0640, the rest counted as not kept;
8. seq jumps: after a restart, a Batch at seq 2^62 is refused against the
   ledger (completeness stays exact);
9. vehicle names: 59 bytes (the rule's limit) go in everywhere (database,
   ground log, status, gap repair's topic); 60 and 64 bytes, "." and ".."
   are refused at the door and counted; a hole of an over-long name already
   in the database is not asked for on a cut topic;
and a load test: one hostile vehicle doing all of it while 20 honest ones
publish 20 Batches each; the honest ledger ends exact.

Every server, broker and receiver started here is stopped on every exit path.
"""
import json
import functools
import os
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.request

RAILMON, PB2_DIR = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from railmon_test import start_peer, stop_peer, wait_for  # noqa: E402
from mqtt_peers import (Listener, Recv, big_batch, publish, check, ground_peers, vehicle_batch,  # noqa: E402
                        vehicle_data)

DAY = 86400 * 10**9
LOG = bytes.fromhex("d0" * 15 + "01")
V59 = "v" * 59
V60 = "w" * 60
V64 = "x" * 64


# this test's vehicles' Batches and (topic, Batch) pairs: log LOG
batch = functools.partial(vehicle_batch, railmon_pb2, log_id=LOG)
data = functools.partial(vehicle_data, railmon_pb2, log_id=LOG)


def partitions(pg):
    return int(pg.psql("SELECT count(*) FROM pg_inherits WHERE inhparent IN ('samples'::regclass, "
                       "'can_frames'::regclass, 'events'::regclass, 'texts'::regclass, "
                       "'trdp_telegrams'::regclass)"))


def committed(pg, vehicle):
    return int(pg.psql("SELECT count(*) FROM batches JOIN vehicles v USING (vehicle_id) WHERE v.name = '%s'"
                       % vehicle))


def door(pg, vehicle, reason):
    c = pg.psql("SELECT count FROM door_refusals JOIN vehicles v USING (vehicle_id) WHERE v.name = '%s' AND "
                "reason = '%s'" % (vehicle, reason))
    return int(c) if c else 0


def recv(pg, broker, *extra):
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id",
                       "door-recv"] + list(extra))
    r.wait_subscribed()
    return r


def test_time(pg, broker):
    r = recv(pg, broker)
    now = time.time_ns()
    before = partitions(pg)
    # the attack: 200 samples a day apart, one Batch; and one in 2262
    publish(broker.port, [data("hostile", 1, 200, t0=now, step=DAY), data("hostile", 201, 2, t0=9_000_000_000 * 10**9),
                          data("hostile", 203, 2, t0=now + 10 * DAY),
                          # honest: 100 days ago (gap repair's historical re-send), and now
                          data("honest", 1, 5, t0=now - 100 * DAY, historical=True), data("honest", 6, 5, t0=now)])
    wait_for("the honest ones", lambda: committed(pg, "honest") == 2)
    wait_for("the hostile ones counted", lambda: door(pg, "hostile", "time") == 3)
    after = partitions(pg)
    rc, err = r.terminate()
    check(committed(pg, "hostile") == 0, "nothing of the hostile Batches in the ledger")
    check(pg.psql("SELECT count(*) FROM samples s JOIN vehicles v USING (vehicle_id) WHERE v.name = 'hostile'") == "0",
          "no hostile sample")
    # the honest old day and today (if not made before), five day tables
    # each: 10 at most, never 1000
    check(after - before <= 10, "partitions only for accepted days", before, after)
    rows = pg.rows("SELECT first_seq, sqlstate, bytes, length(payload) > 0 FROM refused WHERE vehicle = 'hostile' "
                   "ORDER BY first_seq")
    check([x[:2] for x in rows] == [["1", "time"], ["201", "time"], ["203", "time"]] and
          all(x[3] == "t" for x in rows), "kept in refused with the reason and payload", rows)
    check("3 Batches with record times outside the window" in err and "hostile: record times" in err,
          "said in the summary", err)
    # the dashboard's vehicle page reads it (railmon serve, /api/vehicle/NAME/channels)
    srv = start_peer([RAILMON, "serve", "--db", pg.url, "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                     stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stdout.readline()
        check("port " in line, "railmon serve started", line)
        port = int(line.split("port ")[1].split()[0])
        with urllib.request.urlopen("http://127.0.0.1:%d/api/vehicle/hostile/channels" % port, timeout=30) as u:
            page = json.loads(u.read())
        with urllib.request.urlopen("http://127.0.0.1:%d/api/vehicle/honest/channels" % port, timeout=30) as u:
            clean = json.loads(u.read())
    finally:
        stop_peer(srv)
    ref = page["refusals"]
    check(len(ref) == 1 and ref[0]["reason"] == "time" and ref[0]["count"] == 3 and "record times" in ref[0]["detail"]
          and clean["refusals"] is None, "the vehicle page's refusals", page, clean)
    # prune: a partition of a day a month ahead (made before the door) goes
    ahead = time.strftime("%Y%m%d", time.gmtime(now // 10**9 + 30 * 86400))
    day_from = time.strftime("%Y-%m-%d", time.gmtime(now // 10**9 + 30 * 86400))
    day_to = time.strftime("%Y-%m-%d", time.gmtime(now // 10**9 + 31 * 86400))
    pg.psql("CREATE TABLE samples_p%s PARTITION OF samples FOR VALUES FROM ('%s') TO ('%s')" % (ahead, day_from, day_to))
    out = os.popen("%s db prune --older-than 400d --db '%s'" % (RAILMON, pg.url)).read()
    check("and 1 of days after tomorrow" in out, "prune says the future day", out)
    check(pg.psql("SELECT to_regclass('samples_p%s') IS NULL" % ahead) == "t", "the future day dropped")
    check(committed(pg, "honest") == 2, "prune kept the honest days")
    print("time: 200 samples a day apart + 2262 + 10 days ahead: %d partitions made (before the door: 4 a day), "
          "3 Batches refused, kept, counted; 100 days old accepted; a future partition pruned" % (after - before))


def test_seq_jump(pg, broker, tmp):
    r = recv(pg, broker)
    publish(broker.port, [data("jumpy", 1, 10), data("jumpy", 11, 10)])
    wait_for("jumpy", lambda: committed(pg, "jumpy") == 2)
    r.terminate()
    # a restart: recv's memory is empty, the ledger is not; with ground logs too, the jump (not in the
    # ground log) is kept in refused/ and said (before: in neither, nothing said)
    logdir = os.path.join(tmp, "jumplog")
    r = recv(pg, broker, "--log", logdir)
    publish(broker.port, [data("jumpy", 2**62, 3), data("jumpy", 21, 10)])
    wait_for("jumpy's next", lambda: committed(pg, "jumpy") == 3)
    wait_for("the jump counted", lambda: door(pg, "jumpy", "seq-jump") == 1)
    rc, err = r.terminate()
    kept = os.listdir(os.path.join(logdir, "refused"))
    check(kept == ["jumpy.%s.%d-%d.seq-jump-db.1.batch" % (LOG.hex(), 2**62, 2**62 + 2)], "kept in refused/", kept)
    check("seq %d..%d not in the ground log: implausible seq" % (2**62, 2**62 + 2) in err and
          "not stored: 1 seq-jump-db;" in err, "said", err)
    missing = pg.psql("SELECT sum(missing) FROM completeness WHERE vehicle = 'jumpy'")
    check(missing == "0", "completeness exact after a restart", missing)
    check(pg.psql("SELECT sqlstate FROM refused WHERE vehicle = 'jumpy'") == "seq-jump", "kept in refused")
    check("1 Batches over 2^40 records from their log's committed Batches" in err, "said", err)
    print("seq jump after a restart: refused against the ledger, completeness missing = %s (before: 4.6e18)"
          % missing)
    # A log's first Batch: nothing committed to check it against.  A lone one at 2^62 is held (refused) and the
    # log's real Batches from seq 1 go in (before: it became the log's first, 1..20 were refused as jumps and
    # completeness said 4.6e18 missing); an honest log first met at 2^41 (its start pruned on board) loses its
    # first Batch to refused only until the next one confirms where the log lies.
    lone, late = bytes.fromhex("d1" * 16), bytes.fromhex("d2" * 16)
    r = recv(pg, broker)
    publish(broker.port, [data("jumpy", 2**62, 3, log_id=lone)])
    wait_for("the lone first Batch held", lambda: door(pg, "jumpy", "seq-jump") == 2)
    publish(broker.port, [data("jumpy", 1, 10, log_id=lone), data("jumpy", 11, 10, log_id=lone)])
    publish(broker.port, [data("jumpy", 2**41, 5, log_id=late)])
    wait_for("the late log's first Batch held", lambda: door(pg, "jumpy", "seq-jump") == 3)
    publish(broker.port, [data("jumpy", 2**41 + 5, 5, log_id=late), data("jumpy", 2**41 + 10, 5, log_id=late)])
    wait_for("jumpy's logs", lambda: committed(pg, "jumpy") == 7)
    rc, err = r.terminate()
    check("2 Batches over 2^40 records from their log's committed Batches (a log's first: from seq 1, until the "
          "next confirms it)" in err, "the held first Batches said", err)
    rows = pg.rows("SELECT encode(log_id, 'hex'), min(first_seq), max(first_seq + count), sum(count) FROM batches "
                   "JOIN vehicles v USING (vehicle_id) WHERE v.name = 'jumpy' AND log_id IN ('\\x%s', '\\x%s') "
                   "GROUP BY 1 ORDER BY 1" % (lone.hex(), late.hex()))
    check(rows == [[lone.hex(), "1", "21", "20"], [late.hex(), str(2**41 + 5), str(2**41 + 15), "10"]],
          "the lone far Batch out, the log from seq 1 in; the late log from its confirmed second Batch", rows)
    missing = pg.psql("SELECT sum(missing) FROM completeness WHERE vehicle = 'jumpy'")
    check(missing == "0", "completeness exact with a lone far first Batch", missing)
    held = pg.rows("SELECT first_seq, sqlstate, length(payload) > 0 FROM refused WHERE vehicle = 'jumpy' AND log_id = "
                   "'\\x%s'" % late.hex())
    check(held == [[str(2**41), "seq-jump", "t"]], "the held first Batch kept in refused", held)
    detail = pg.psql("SELECT detail FROM door_refusals JOIN vehicles v USING (vehicle_id) WHERE v.name = 'jumpy' "
                     "AND reason = 'seq-jump'")
    check("the first Batch of its log" in detail and "confirms it" in detail, "said so", detail)
    print("a log's first Batch far from seq 1: a lone one at 2^62 held (refused, counted), the log from seq 1 "
          "committed, completeness missing = %s (before: 4.6e18); a log first met at 2^41: its first Batch held, "
          "the rest committed" % missing)


def channels_msg(vehicle, config_hash, chans):
    b = railmon_pb2.Batch(schema_version=1, first_seq=1, vehicle=vehicle, t0_ns=time.time_ns(), log_id=LOG,
                          config_hash=config_hash)
    for cid, name in chans:
        b.channels.add(id=cid, name=name, unit="u", bus=0, source="test")
    return ("railmon/%s/channels" % vehicle, b.SerializeToString())


def test_dictionary(pg, broker):
    r = recv(pg, broker, "--max-channels", "1000", "--max-configs", "3")
    publish(broker.port, [data("dict", 1, 3)])
    wait_for("dict", lambda: committed(pg, "dict") == 1)
    big = channels_msg("dict", 100, [(i, "c%d" % i) for i in range(5000)])
    # over 1 MiB: refused before it is decoded (no railmon sends one: a large dictionary is sliced)
    huge = channels_msg("dict", 300, [(i, "n%d-" % i + "x" * 400) for i in range(3000)])
    check(len(huge[1]) > 1 << 20, "over 1 MiB", len(huge[1]))
    msgs = [huge, big] + [channels_msg("dict", 200 + k, [(1, "old%d" % k), (2, "v%d" % k)]) for k in range(5)]
    publish(broker.port, msgs)
    wait_for("the dictionaries counted", lambda: door(pg, "dict", "dictionary") == 3)
    rc, err = r.terminate()
    hashes = pg.psql("SELECT string_agg(DISTINCT config_hash::text, ',') FROM configs JOIN vehicles v "
                     "USING (vehicle_id) WHERE v.name = 'dict'")
    check(hashes == "200,201,202", "the over-size one and the 4th and 5th new hash refused", hashes)
    names = pg.psql("SELECT string_agg(n.name, ',' ORDER BY n.channel) FROM channel_names n JOIN vehicles v "
                    "USING (vehicle_id) WHERE v.name = 'dict'")
    check(names == "old2,v2", "the newest dictionary's names only", names)
    check("3 dictionaries over the limits" in err and "1 malformed payloads" in err, "said", err)
    print("dictionaries: one of %d bytes refused undecoded, 5000 channels (limit 1000) and 2 new config hashes "
          "past 3 a day refused, counted; channel_names from the newest only" % len(huge[1]))


def gone_msg(vehicle, first, last):
    return ("railmon/%s/gone" % vehicle, ("%s %d %d\n" % (LOG.hex(), first, last)).encode())


def test_gone_and_names(pg, broker):
    # a hole of an over-long name already in the database (before the door)
    pg.psql("INSERT INTO vehicles (name) VALUES ('%s')" % ("y" * 70))
    pg.psql("INSERT INTO batches (vehicle_id, log_id, first_seq, count, t_first, t_last, historical, config_hash, "
            "digest, received_at) SELECT vehicle_id, '\\x%s', s, 5, now(), now(), false, 0, 0, now() - interval "
            "'1 hour' FROM vehicles, (VALUES (1), (11)) x(s) WHERE name = '%s'" % (LOG.hex(), "y" * 70))
    listen = Listener(broker.port)
    try:
        r = recv(pg, broker, "--repair-after", "1")
        publish(broker.port, [data("gv", 1, 10), data("gv", 21, 10), data(V59, 1, 5), data(V59, 11, 5),
                              data(V60, 1, 5), data(V64, 1, 5), data(".", 1, 5), data("..", 1, 5)])
        wait_for("gv and the 59-byte name", lambda: committed(pg, "gv") == 2 and committed(pg, V59) == 2)
        # unsolicited: the whole seq space; and a stranger's
        publish(broker.port, [gone_msg("gv", 1, 2**63 - 1), gone_msg("nobody", 1, 10)])
        wait_for("the unasked answer counted", lambda: door(pg, "gv", "gone-unasked") == 1)
        check(pg.psql("SELECT count(*) FROM vehicles WHERE name = 'nobody'") == "0", "gone makes no vehicle")
        check(pg.psql("SELECT explained FROM gaps g JOIN vehicles v USING (vehicle_id) WHERE v.name = 'gv'") == "f",
              "the hole stays unexplained")
        # gap repair asks for gv's hole and the 59-byte name's, each on its own topic
        wait_for("the resends", lambda: {"railmon/gv/resend", "railmon/%s/resend" % V59} <=
                 {t for t, _ in listen.got}, 30)
        # (and jumpy's log first met at 2^41 for its start, 1..2^41 + 4: a gap since migration 0011)
        check(all(t in ("railmon/gv/resend", "railmon/%s/resend" % V59, "railmon/jumpy/resend")
                  for t, _ in listen.got), "no resend on another (cut) name's topic", listen.got)
        check(any(p.startswith(LOG.hex() + " 11 20") for t, p in listen.got if t == "railmon/gv/resend"),
              "gv asked for 11..20", listen.got)
        # the asked range answered: recorded; the 59-byte name's too, and its status
        publish(broker.port, [gone_msg("gv", 11, 20), gone_msg(V59, 6, 10), ("railmon/%s/status" % V59, b"online")])
        wait_for("explained", lambda: pg.psql("SELECT string_agg(g.explained::text, ',') FROM gaps g JOIN vehicles v "
                                              "USING (vehicle_id) WHERE v.name IN ('gv', '%s')" % V59) == "true,true")
        wait_for("the 59-byte name's status", lambda: pg.psql("SELECT state FROM vehicle_status JOIN vehicles v "
                                                              "USING (vehicle_id) WHERE v.name = '%s'" % V59)
                 == "online")
        rc, err = r.terminate()
    finally:
        listen.stop()
    check(pg.psql("SELECT count(*) FROM vehicles WHERE name IN ('%s', '%s', '.', '..')" % (V60, V64)) == "0",
          "names against the rule make no vehicle")
    check("4 vehicle names against the rule" in err, "counted and said", err)
    check("2 \"gone\" ranges recorded, 2 answers refused (2 for ranges not asked for)" in err,
          "unasked gone said (gv's and the stranger's)", err)
    print("gone: 1..2^63-1 unasked refused and counted, a stranger's makes no vehicle, the asked range recorded; "
          "names: 59 bytes in everywhere, 60/64 bytes, '.', '..' refused (4), no resend on a cut name")


def test_refused_files(pg, broker, tmp):
    logdir = os.path.join(tmp, "log")
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--log", logdir, "--format", "none",
                       "--client-id", "door-files", "--refused-max", "3M"])
    r.wait_subscribed()
    # oversize Batches: 1.5 MB of CAN data each (records do not matter: refused by size)
    now = time.time_ns()
    msgs = [("railmon/fat/data", big_batch(railmon_pb2, "fat", LOG, 1 + k * 23000, 23000, now)) for k in range(5)]
    big = msgs[0][1]
    check(len(big) > 3 << 19, "over 1.5 MiB", len(big))
    # the name rule's limit in a ground log: 59 bytes get a directory, 60 and ".." none
    msgs += [data(V59, 1, 3), data(V60, 1, 3), data("..", 1, 3)]
    publish(broker.port, msgs)
    wait_for("five refusals said", lambda: sum("not in the ground log: over 1 MiB" in x for x in r.lines) >= 5, 60)
    # the names against the rule come after the 59-byte one, in order on one session: once both are said
    # refused, its Batch is written (before: the stop came once its directory was there, perhaps before its
    # Batch, and the check of no directory for the other two held without them being read)
    wait_for("60 bytes and '..' refused", lambda: sum("vehicle name against the rule" in x for x in r.lines) >= 2, 60)
    rc, err = r.terminate()
    check(sorted(os.listdir(logdir)) == sorted(["refused", "fat", V59]), "no directory for a name against the rule",
          os.listdir(logdir))
    exp = subprocess.run([RAILMON, "export", "--data", os.path.join(logdir, V59), "--format", "csv"],
                         capture_output=True, text=True, timeout=60)
    check(exp.returncode == 0 and len(exp.stdout.splitlines()) == 4 and V59 in exp.stdout, "export of it", exp)
    kept = os.path.join(logdir, "refused")
    files = sorted(os.listdir(kept))
    sizes = [os.path.getsize(os.path.join(kept, f)) for f in files]
    modes = {stat.S_IMODE(os.stat(os.path.join(kept, f)).st_mode) for f in files}
    check(len(files) == 3 and all(s == 1 << 20 for s in sizes) and all(f.endswith(".cut.batch") for f in files),
          "three files of 1 MiB each (cut): 3M", files, sizes)
    check(modes == {0o640}, "files 0640", modes)
    check("2 refused Batches NOT kept" in err and "its first 1048576 of %d bytes kept in" % len(big) in err,
          "said", err)
    print("refused files: 5 x %d bytes -> %d files, %d bytes kept (before: 5 whole files, %d bytes, 0644)"
          % (len(big), len(files), sum(sizes), 5 * len(big)))


def test_log_window(broker, tmp):
    """recv --log without a database: the same record time window as the database's door (before: a
    ground log took any time); refused Batches kept in refused/ with the reason, counted, said."""
    logdir = os.path.join(tmp, "windowlog")
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--log", logdir, "--format", "none",
                       "--client-id", "door-window", "--max-age", "30d", "--max-skew", "1h",
                       # it ends by itself once all 214 records passed its ledger, each Batch
                       # by then written to the ground log or refused: under load a SIGTERM
                       # once the refusals were said could stop it before the last Batch
                       "--count", "214"])
    r.wait_subscribed()
    now = time.time_ns()
    publish(broker.port, [data("tmv", 1, 200, t0=now, step=DAY),                      # a day apart
                          data("tmv", 201, 3, t0=now - 40 * DAY, historical=True),    # past --max-age 30d
                          data("tmv", 204, 3, t0=now + 2 * 3600 * 10**9),             # past --max-skew 1h
                          data("tmv", 207, 3, t0=now - 20 * DAY, historical=True),    # old, inside
                          data("tmv", 210, 5, t0=now)])
    wait_for("three refusals said", lambda: sum("not in the ground log: record times outside" in x
                                                for x in r.lines) >= 3, 60)
    rc, err = r.finish()
    check(rc == 0, "recv ended by itself after --count 214", rc, err)
    exp = subprocess.run([RAILMON, "export", "--data", os.path.join(logdir, "tmv"), "--format", "csv",
                          "--order", "seq"], capture_output=True, text=True, timeout=60)
    seqs = [int(x.split(",")[2]) for x in exp.stdout.splitlines()[1:]]
    check(seqs == list(range(207, 215)), "the ground log holds the Batches inside the window", seqs, exp.stderr)
    kept = sorted(os.listdir(os.path.join(logdir, "refused")))
    check([k.split(".")[2] + "." + k.split(".")[3] for k in kept] == ["1-200.time", "201-203.time", "204-206.time"],
          "kept in refused/ with the reason", kept)
    check("not stored: 3 time;" in err, "counted in the summary", err)
    print("recv --log: the record time window (--max-age 30d, --max-skew 1h): 3 Batches refused, kept in refused/, "
          "counted (before: all 5 in the ground log)")


def test_load(pg, broker):
    """One hostile vehicle doing all of the above while 20 honest vehicles
    publish 20 Batches each: the honest ledger ends exact."""
    r = recv(pg, broker, "--max-channels", "1000", "--max-configs", "3")
    now = time.time_ns()

    def hostile():
        # the seq jumps may come before any Batch of its log: a log's first Batch far from seq 1 is held
        msgs = []
        for k in range(20):
            msgs += [data("evil", 10 + k * 300, 200, t0=now + k, step=DAY),     # a partition a day
                     data("evil", 2**62 + k * 10, 5),                         # seq jumps
                     channels_msg("evil", 1000 + k, [(i, "e%d" % i) for i in range(2000)]),
                     gone_msg("evil", 1, 2**63 - 1), gone_msg("fair%d" % (k % 20), 1, 2**62),
                     data("x" * 60, 1 + k, 1), ("railmon/../status", b"online")]
        publish(broker.port, msgs, client_id="door-evil")

    def honest(v):
        publish(broker.port, [data("fair%d" % v, 1 + 50 * k, 50, t0=now + k * 10**9) for k in range(20)],
                client_id="door-fair%d" % v)

    before = partitions(pg)
    threads = [threading.Thread(target=hostile)] + [threading.Thread(target=honest, args=(v,)) for v in range(20)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        wait_for("every honest Batch", lambda: int(pg.psql("SELECT count(*) FROM batches JOIN vehicles v USING "
                                                           "(vehicle_id) WHERE v.name LIKE 'fair%'")) == 400, 120)
    except AssertionError:
        r.proc.send_signal(signal.SIGTERM)
        r.proc.wait(30)
        r.reader.join(5)
        check(False, "every honest Batch", pg.psql("SELECT count(*) FROM batches JOIN vehicles v USING (vehicle_id) "
                                                   "WHERE v.name LIKE 'fair%'"), "".join(r.lines[-40:]))
    took = time.monotonic() - t0
    counts = lambda: [door(pg, "evil", why) for why in ("time", "seq-jump", "dictionary")]
    try:
        wait_for("the hostile Batches counted", lambda: counts() == [20, 20, 20], 120)
    except AssertionError:
        check(False, "the hostile Batches counted (time, seq-jump, dictionary)", counts(), "".join(r.lines[-40:]))
    rc, err = r.terminate()
    rows = pg.rows("SELECT vehicle, sum(records), sum(missing) FROM completeness WHERE vehicle LIKE 'fair%' "
                   "GROUP BY 1 ORDER BY 1")
    check(len(rows) == 20 and all(x[1] == "1000" and x[2] == "0" for x in rows), "the honest ledger exact", rows)
    check(pg.psql("SELECT count(*) FROM gone g JOIN vehicles v USING (vehicle_id) WHERE v.name LIKE 'fair%' "
                  "OR v.name = 'evil'") == "0", "no gone recorded for an unasked range")
    check(pg.psql("SELECT count(*) FROM samples s JOIN vehicles v USING (vehicle_id) WHERE v.name LIKE 'fair%'")
          == "20000", "every honest sample")
    made = partitions(pg) - before
    check(made <= 8, "no partition for the hostile days", made)
    print("load: 20 honest vehicles x 20 Batches (20,000 samples) beside a hostile one (20 day-apart Batches, "
          "seq jumps, 20 dictionaries of 2,000 channels, unasked gones, bad names): ledger exact, %d partitions "
          "made, %.1f s" % (made, took))


def main():
    with ground_peers("ground-door-") as (pg, broker, tmp):
        out = os.popen("%s db init --db '%s' 2>&1" % (RAILMON, pg.url)).read()
        check("applied 0007-door-limits" in out, "db init", out)
        test_time(pg, broker)
        test_seq_jump(pg, broker, tmp)
        test_log_window(broker, tmp)
        test_dictionary(pg, broker)
        test_gone_and_names(pg, broker)
        test_refused_files(pg, broker, tmp)
        test_load(pg, broker)
    print("ground-door: all checks passed")


main()
