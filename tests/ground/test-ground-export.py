#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-export.py RAILMON SRCDIR - `railmon export --db` gives the
records, with every field, that `railmon export` of the vehicle's own log
gives (issue 28), on a real PostgreSQL 15 (pg.py) and a real mosquitto:

- a real `railmon run` on a board of two CAN buses, each a trace decoded
  with its DBC (the demo's, and one written here with a value table on a
  signal of another message id and a scaled signal), forwards its log
  through mosquitto to `railmon recv --db`;
- `export` of the vehicle's log and `export --db` of the vehicle are then
  compared record by record and field by field (times cut to the
  database's microseconds) in csv and jsonl; influx, --wide and --raster
  line by line;
- a second run (another log: another log id, seq from 1 again): export of
  the ground's logs of both (recv --log) and export --db give each record
  its own log's id;
- a database made by schema version 7 (migrations 0001-0007) holding the
  same rows, upgraded by `db migrate`: export --db then gives every record
  and label, bus_name empty (version 7 did not keep it) and values in
  their shortest round-trip form (it did not keep the decimals either).

Every server, broker and railmon started here is stopped on every exit
path (and dies with this script).
"""
import csv
import io
import json
import os
import subprocess
import sys
import time

RAILMON, SRC = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
ground_paths.paths()
HERE = ground_paths.HERE
from railmon_test import start_peer, stop_peer, wait_for  # noqa: E402
from mqtt_peers import Recv, check, ground_peers  # noqa: E402

VEHICLE = "exp28"

# The second bus's DBC: a value table (by raw value, as DBC files give
# it) on a scaled signal, so the dictionary's entries are by physical
# value 10..16 (a label looked up by the raw value, or on another
# channel, gives another word or none), and a signal with two decimals.
BRAKE_DBC = '''VERSION ""

NS_ :

BS_:

BU_: BCU

BO_ 273 BrakeCommand: 8 BCU
 SG_ Mode : 0|8@1+ (2,10) [10|16] "" Vector__XXX
 SG_ CylinderPressure : 8|16@1+ (0.01,0) [0|10] "bar" Vector__XXX
 SG_ Demand : 24|8@1- (0.5,-10) [-74|53.5] "%" Vector__XXX

VAL_ 273 Mode 0 "release" 1 "service" 2 "emergency" 3 "fault" ;
'''


def brake_trace(path, traction):
    """500 frames of BrakeCommand over the 7 s of the demo trace's first
    1000 frames, on its clock: Mode cycling
    through its table (and one raw value without a label), pressures with
    two decimals."""
    t = int(traction[0].split(")")[0][1:].replace(".", "")) + 500  # us
    with open(path, "w") as f:
        for i in range(500):
            data = bytes([i % 5, (i * 37) & 0xff, (i * 37 >> 8) & 0x3, (i * 11) & 0xff, 0, 0, 0, 0])
            f.write("(%d.%06d) can1 111#%s\n" % (t // 10**6, t % 10**6, data.hex().upper()))
            t += 14000


def run(args, rc=0):
    r = subprocess.run([RAILMON] + args, capture_output=True, text=True, timeout=120)
    check(r.returncode == rc, "railmon " + " ".join(args) + " exited %d" % r.returncode, r.stderr[-3000:])
    return r.stdout


def floor_us(ns):
    return ns // 1000 * 1000


def time_text_us(t):
    """export's time field ("2026-12-05T02:46:28.123456789Z") cut to us."""
    if "." not in t:
        return t
    head, frac = t.rstrip("Z").split(".")
    return "%s.%sZ" % (head, (frac + "000000000")[:6] + "000") if len(frac) > 6 else t


def cut_record(rec):
    """A record of the vehicle log as the database keeps it: time to the
    microsecond, rounded down as the receiver stores it."""
    rec = dict(rec)
    if "time_ns" in rec:
        rec["time_ns"] = str(floor_us(int(rec["time_ns"]))) if isinstance(rec["time_ns"], str) \
            else floor_us(rec["time_ns"])
    if "time" in rec:
        rec["time"] = time_text_us(rec["time"])
    return rec


def records(fmt, text):
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(text)))
    return [json.loads(x) for x in text.splitlines()]


def key(rec):
    return (int(rec["time_ns"]), int(rec["seq"]))


def compare(what, log, db, adjust=None, least=1000):
    """Record by record, field by field; adjust(log record) -> what the
    database should give for it."""
    a = sorted((cut_record(r) for r in log), key=key)
    b = sorted(db, key=key)
    check(len(a) == len(b) and len(a) > least, "%s: %d records from the log, %d from the database" %
          (what, len(a), len(b)))
    for x, y in zip(a, b):
        if adjust:
            x = adjust(x)
        check(list(x.keys()) == list(y.keys()), what + ": the same fields", x, y)
        for f in x:
            check(x[f] == y[f], "%s: field %s of seq %s" % (what, f, x["seq"]), x, y)


def field_counts(recs):
    return (sum(1 for r in recs if r.get("bus_name")), sum(1 for r in recs if r.get("label")),
            {r["bus_name"] for r in recs if r.get("bus_name")})


def lines_cut(text, fmt):
    """influx's trailing timestamp, or --wide's time columns, cut to us."""
    out = []
    for line in text.splitlines():
        if fmt == "influx" and line and not line.startswith("#"):
            head, _, t = line.rpartition(" ")
            line = "%s %d" % (head, floor_us(int(t)))
        elif fmt == "csv" and line[:1].isdigit():  # --wide: time, time_ns, the columns
            t, t_ns, rest = line.split(",", 2)
            line = "%s,%d,%s" % (time_text_us(t), floor_us(int(t_ns)), rest)
            # records of both buses within one microsecond (the run stamps
            # them as they are read, to the ns) are one row at the
            # database's resolution: the row of their cells together
            prev = out[-1].split(",") if out and out[-1][:1].isdigit() else None
            cells = line.split(",")
            if prev and prev[:2] == cells[:2] and len(prev) == len(cells):
                out[-1] = ",".join(c if c != "" else p for p, c in zip(prev, cells))
                continue
        out.append(line)
    return out


def raster_in_doubt(wide, period_ns, max_age_ns=5 * 10**9):
    """The --raster points of the log's samples (its --wide rows' time_ns)
    that the database's microseconds may rightly give otherwise: a sample
    less than 1 us after a point is held there from the database (its time
    cut to the point) and not from the log, and its --max-age (a multiple of
    the period) ends at the point after that one's --max-age later.  Where
    the run stamped its samples is when the trace's frames were read, so
    which points these are differs from run to run."""
    doubt = set()
    for line in wide.splitlines():
        if line[:1].isdigit():
            t = int(line.split(",")[1])
            if 0 < t % period_ns < 1000:
                doubt |= {t - t % period_ns, t - t % period_ns + max_age_ns}
    return doubt


def vehicle_log(tmp, broker, name):
    """The traces through a real `railmon run` with an uplink into a new
    log (tmp/name); returns its directory once the run has stopped
    cleanly."""
    demo = os.path.join(SRC, "cli", "demo")
    # the demo trace moved to a minute ago: the ground's door takes a
    # Batch whose records lie within a day of each other (the run's own
    # events are stamped now)
    with open(os.path.join(demo, "train.log")) as f:
        lines = f.readlines()[:1000]
    shift = int(time.time()) - 60 - int(float(lines[0].split(")")[0][1:]))
    lines = ["(%.6f)%s" % (float(x.split(")")[0][1:]) + shift, x.split(")", 1)[1]) for x in lines]
    with open(os.path.join(tmp, "traction.log"), "w") as f:
        f.writelines(lines)
    brake_trace(os.path.join(tmp, "brake.log"), lines)
    with open(os.path.join(tmp, "brake.dbc"), "w") as f:
        f.write(BRAKE_DBC)
    board = os.path.join(tmp, "board.ini")
    with open(board, "w") as f:
        f.write("[board]\nvehicle = %s\nrt_priority = 0\nbatch_ms = 100\n"
                "[storage]\nsync_window_ms = 50\nsegment_size = 4M\n"
                "[uplink]\nbroker = mqtt://127.0.0.1:%d\n"
                "[can traction]\ndriver = trace\nfile = %s/traction.log\ndbc = %s/train.dbc\nspeed = 1\n"
                "[can brake]\ndriver = trace\nfile = %s/brake.log\ndbc = %s/brake.dbc\nspeed = 1\n"
                % (VEHICLE, broker.port, tmp, demo, tmp, tmp))
    data = os.path.join(tmp, name)
    err = open(os.path.join(tmp, "run.err"), "w")
    p = start_peer([RAILMON, "run", "--board", board, "--data", data], stdout=subprocess.DEVNULL, stderr=err)

    def said():
        return open(os.path.join(tmp, "run.err")).read()[-3000:]

    def frames_logged():
        check(p.poll() is None, "railmon run ended", said())
        r = subprocess.run([RAILMON, "export", "--data", data, "--kind", "can", "--format", "candump"],
                           capture_output=True, text=True)
        return r.returncode == 0 and len(r.stdout.splitlines()) == 1500
    wait_for("both traces in the vehicle log", frames_logged, 120, 0.5)
    check(stop_peer(p) == 0, "railmon run stopped cleanly", said())
    return data


def stored(pg):
    return pg.psql("SELECT coalesce(sum(count), 0) FROM batches b JOIN vehicles v USING (vehicle_id) "
                   "WHERE v.name = '%s'" % VEHICLE)


def test_export(pg, broker, tmp, r):
    data = vehicle_log(tmp, broker, "vehicle")
    total = len(run(["export", "--data", data, "--format", "jsonl"]).splitlines())
    # the clean stop forwarded everything: the ledger holds every record
    try:
        wait_for("every record in the database", lambda: stored(pg) == str(total), 60)
    except AssertionError:
        check(False, "the database holds %s of the log's %d records" % (stored(pg), total), *r.lines[-30:],
              pg.psql("SELECT reason, count, detail FROM door_refusals"),
              open(os.path.join(tmp, "run.err")).read()[-3000:],
              run(["export", "--data", data, "--format", "csv", "--order", "seq"])[:1500])
    db = ["--db", pg.url, "--vehicle", VEHICLE]
    # both buses read in real time: the log's records are in time order
    # within export's window, so its time order is the database's
    r = subprocess.run([RAILMON, "export", "--data", data], capture_output=True, text=True)
    check(r.returncode == 0 and "late" not in r.stderr, "export of the log: no record out of order", r.stderr)
    for fmt in ("csv", "jsonl"):
        log = records(fmt, run(["export", "--data", data, "--format", fmt]))
        dbr = records(fmt, run(["export", "--format", fmt] + db))
        nbus, nlabel, buses = field_counts(log)
        # what the comparison stands on: both buses named, labels of both
        # DBCs' tables (the demo's Direction, doors; the brake's Mode)
        check(buses == {"traction", "brake"} and nlabel > 500 and nbus > total // 2,
              "the log has bus names and labels", nbus, nlabel, buses)
        check({r["label"] for r in log if r.get("name") == "BrakeCommand.Mode" and r.get("label")} ==
              {"release", "service", "emergency", "fault"}, "the brake's labels in " + fmt,
              [r for r in log if r.get("bus_name") == "brake"][:8])
        check(any(r.get("value") in ("0.37", 0.37) for r in log if r.get("name") == "BrakeCommand.CylinderPressure"),
              "values at the DBC's resolution", fmt)
        compare("export --db --format " + fmt, log, dbr)
        print("%s: %d records, %d with a bus name, %d labels: the same from the database, field by field"
              % (fmt, len(log), nbus, nlabel))
    # an output that cannot be written is said as the output's fault, not
    # the database's
    with open("/dev/full", "w") as full:
        f = subprocess.run([RAILMON, "export", "--format", "csv"] + db, stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60)
    check(f.returncode == 1 and "railmon export: write: " in f.stderr and "--db:" not in f.stderr,
          "export --db > /dev/full", f.returncode, f.stderr)
    # --channel (given to the database's query as channel ids): one on the
    # second bus, then three on both buses, CAN frames and events too
    for mode in (["--format", "jsonl", "--kind", "sample", "--channel", "Mode"],
                 ["--format", "jsonl", "--channel", "Mode", "--channel", "Direction", "--channel",
                  "BrakeCommand.CylinderPressure"]):
        a = records("jsonl", run(["export", "--data", data] + mode))
        check({x["name"] for x in a if x["kind"] == "sample"} == set(n for n in (
              ["BrakeCommand.Mode"] + (["VehicleSpeed.Direction", "BrakeCommand.CylinderPressure"]
                                       if len(mode) > 6 else []))), "the channels asked for", mode)
        compare("export --db " + " ".join(mode), a, records("jsonl", run(["export"] + mode + db)), least=400)
    for args in (["--format", "influx"], ["--format", "csv", "--wide"],
                 ["--format", "csv", "--wide", "--raster", "100ms"]):
        a = lines_cut(run(["export", "--data", data] + args), args[1])
        b = lines_cut(run(["export"] + args + db), args[1])
        doubt = set()
        if "--raster" in args:
            # only rows at a point no sample lies within a microsecond after
            # are the same by right (seen once: 4.595 from the log, 4.6 from
            # the database, at a point a sample followed by under 1 us)
            doubt = raster_in_doubt(run(["export", "--data", data, "--format", "csv", "--wide"]), 100 * 10**6)
            keep = lambda rows: [x for x in rows if not x[:1].isdigit() or int(x.split(",")[1]) not in doubt]
            a, b = keep(a), keep(b)
        check(len(a) > 10 and sorted(a) == sorted(b), "export --db " + " ".join(args) + " as from the log",
              "\n".join(sorted(set(a) ^ set(b))[:20]))
        print("export %s: %d lines, the same from the database%s" % (" ".join(args), len(a), " (%d raster points "
              "within 1 us before a sample left out)" % len(doubt) if doubt else ""))
    return total


def test_two_logs(pg, broker, tmp, r, logdir, before):
    """The vehicle's second log (another run: another log id, seq from 1
    again, later times): each record's log id is its own log's, from the
    database as from the ground's logs of both (recv --log)."""
    data = vehicle_log(tmp, broker, "vehicle2")
    total = before + len(run(["export", "--data", data, "--format", "jsonl"]).splitlines())
    wait_for("both logs in the database", lambda: stored(pg) == str(total), 60)
    r.terminate()
    ground = os.path.join(logdir, VEHICLE)
    for fmt in ("csv", "jsonl"):
        log = records(fmt, run(["export", "--data", ground, "--format", fmt]))
        dbr = records(fmt, run(["export", "--format", fmt, "--db", pg.url, "--vehicle", VEHICLE]))
        ids = {x["log_id"] for x in dbr}
        check(len(ids) == 2 and "" not in ids, "two log ids from the database", ids)
        compare("export --db of two logs --format " + fmt, log, dbr)
    print("two logs of the vehicle: %d records, each with its log's id, the same from the database" % total)
    return ground


def copy_table(pg, table, old):
    """table's rows from the test database into the old one, in the columns
    the old schema has."""
    cols = pg.psql("SELECT string_agg(quote_ident(column_name), ',' ORDER BY ordinal_position) FROM "
                   "information_schema.columns WHERE table_schema = 'public' AND table_name = '%s'" % table, db=old)
    out = subprocess.run(["psql", "-X", "-q", "-h", pg.dir, "-U", "railmon", "-d", pg.db, "-c",
                          "\\copy (SELECT %s FROM %s) TO STDOUT" % (cols, table)], capture_output=True, check=True)
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", pg.dir, "-U", "railmon", "-d", old, "-c",
                    "\\copy %s (%s) FROM STDIN" % (table, cols)], input=out.stdout, capture_output=True, check=True)


def test_upgraded(pg, data):
    """A database of schema version 7 with the vehicle's rows, upgraded:
    the old rows have no bus name and no decimals; export --db says the
    rest as before and writes those two as a log without them would."""
    pg.psql("CREATE DATABASE old")
    old_url = pg.url.replace("/%s?" % pg.db, "/old?")
    names = pg.schema_at(SRC, 7, after="0008-export-fields.sql", db="old")
    for t in ("samples", "can_frames", "events", "texts"):
        pg.psql("CREATE TABLE %s_all PARTITION OF %s DEFAULT" % (t, t), db="old")
    for t in ("vehicles", "dictionaries", "configs", "batches", "samples", "can_frames", "events", "texts"):
        copy_table(pg, t, "old")
    r = subprocess.run([RAILMON, "export", "--db", old_url, "--vehicle", VEHICLE], capture_output=True, text=True)
    check(r.returncode == 1 and r.stdout == "" and "the database's schema is at version 7, this railmon's at %d"
          % len(names) in r.stderr, "export --db of a version 7 database refused", r.returncode, r.stdout[:300], r.stderr)
    out = run(["db", "migrate", "--db", old_url])
    check(out.strip() == "\n".join("applied " + n[:-4] for n in names[7:]),
          "db migrate applies version 8 (and 9 to %d)" % len(names), out)
    check(pg.psql("SELECT count(*) FROM configs WHERE bus_name IS NULL AND decimals IS NULL", db="old") ==
          pg.psql("SELECT count(*) FROM configs"), "the old rows have neither")
    class Shortest:
        """The value the stored double writes without decimals: the log's
        value to its resolution (so within half a unit of its last digit),
        written in the shortest form that reads back as itself."""

        def __init__(self, text):
            self.text = text

        def __eq__(self, other):
            v = float(other)
            shortest = repr(v)[:-2] if repr(v).endswith(".0") else repr(v)
            return other == shortest and abs(v - float(self.text)) <= 1e-9 * max(1.0, abs(v))

        def __repr__(self):
            return "shortest(%s)" % self.text

    def as_v7(rec):
        """What a version 7 row gives: no bus name, the value in its
        shortest round-trip form."""
        rec = dict(rec)
        rec["bus_name"] = ""
        if rec["kind"] == "sample" and rec["value"] != "":
            rec["value"] = Shortest(rec["value"])
        return rec
    log = records("csv", run(["export", "--data", data, "--format", "csv"]))
    dbr = records("csv", run(["export", "--format", "csv", "--db", old_url, "--vehicle", VEHICLE]))
    check(any(r["bus_name"] for r in log) and not any(r["bus_name"] for r in dbr), "bus_name empty after upgrade")
    compare("export --db of the upgraded database", log, dbr, as_v7)
    print("upgraded from version 7: %d records, labels kept, bus_name empty, values in shortest form" % len(dbr))


def main():
    with ground_peers("ground-export-") as (pg, broker, tmp):
        out = run(["db", "init", "--db", pg.url])
        check("applied 0008-export-fields" in out, "db init", out)
        logdir = os.path.join(tmp, "ground")
        r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--log", logdir,
                           "--client-id", "g28"])
        r.wait_subscribed()
        total = test_export(pg, broker, tmp, r)
        ground = test_two_logs(pg, broker, tmp, r, logdir, total)
        test_upgraded(pg, ground)


main()
