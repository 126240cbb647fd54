#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-summary.py RAILMON PB2_DIR - `railmon summary --db` (issue
29) on a real PostgreSQL 15 and a real mosquitto, with Batches from
protoc's Python encoder, ingested by `railmon recv --db` in two runs:

- the answer from the summary rollup (rollup_summary_1s, migration 0009)
  equals the answer from every raw row (`--raw`), byte for byte, table and
  JSON, over ranges that cut seconds, one with no whole second, whole
  minutes, with --channel and --gap;
- both equal a summary computed here from the records sent (an
  independent implementation of report/summary.c's rules: counts, first
  and last time, min/max/mean of the valid values, gaps judged by 5 times
  the shortest interval before each, the longest interval, out-of-range
  and invalid), with invalid quality, NaN, out-of-range, gaps between
  seconds and inside one, a second whose samples came in two receiver
  runs (the interval between them kept by the upsert) and one whose two
  runs' samples interleave (not known: read raw);
- the rollup is what answered: its seconds counted on stderr, the raw
  reads only where they must be;
- the migration's backfill of a version 8 database gives the rows the
  receiver maintained; the dashboard's rollups still hold good samples
  only.

The values are multiples of 1/4, so every sum is exact in any order and
the mean's digits are comparable too.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

RAILMON, PB2_DIR = sys.argv[1:3]
SRC = sys.argv[3] if len(sys.argv) > 3 else None
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
railmon_pb2 = ground_paths.paths(PB2_DIR)
from pg import Postgres  # noqa: E402
from mqtt_peers import Broker, Recv, publish, check, stop_all  # noqa: E402

VEHICLE = "sum1"
TOPIC = "railmon/%s/data" % VEHICLE
LOG = bytes.fromhex("5a" * 15 + "01")
MIN_US = 60 * 10**6
# three hours ago, on a minute: the minutes of the data are T0's
T0_US = ((time.time_ns() // 1000 - 3 * 3600 * 10**6) // MIN_US) * MIN_US
SECONDS = 360
GOOD, OOR, INVALID = 0, 1, 2
CHANNELS = {1: ("Speed", "km/h", [1]), 2: ("Pressure", "bar", []), 3: ("Door", "", []), 4: ("Extra", "A", [])}


def speed():
    """Every 100 ms (+ a few us of jitter), a 3 s pause in minute 2
    (between seconds), a 0.7 s one inside second 250, invalid,
    out-of-range and NaN samples among them."""
    out = []
    for i in range(SECONDS * 10):
        t = i * 100000 + 50000 + (i % 3) * 10
        if 130 * 10**6 <= t < 133 * 10**6 or 250200000 <= t < 250800000:
            continue
        q = INVALID if i % 97 == 5 else OOR if i % 89 == 3 else GOOD
        v = float("nan") if i % 151 == 7 else ((i * 7) % 400) * 0.5 - 50
        out.append((t, 1, v, q))
    return out


def pressure():
    """Every 0.4 s with a 2.5 s gap (minute 0), a 1.7 s step (minute 1,
    not a gap), and in second 199 two samples 0.6 s apart, one from each
    receiver run."""
    out, t, k = [], 200000, 0
    while t < SECONDS * 10**6:
        out.append((t, 2, (k % 20) * 0.25, GOOD))
        k += 1
        if 40 * 10**6 <= t < 40400000:
            t += 2500000
        elif 70 * 10**6 <= t < 70400000:
            t += 1700000
        else:
            t += 400000
    out = [r for r in out if not 198600000 <= r[0] < 200 * 10**6]
    return sorted(out + [(199 * 10**6, 2, 1.25, GOOD), (199600000, 2, 1.5, GOOD)])


def door():
    """Every 5 s; all invalid in minute 3."""
    return [(t, 3, float(k % 2), INVALID if 180 * 10**6 <= t < 240 * 10**6 else GOOD)
            for k, t in enumerate(range(2500000, SECONDS * 10**6, 5 * 10**6))]


# channel 4: second 100 gets samples from both runs, interleaved
EXTRA_1 = [(100 * 10**6 + k * 200000, 4, k * 0.25, GOOD) for k in range(4)]
EXTRA_2 = [(100100000 + k * 200000, 4, 3 + k * 0.25, GOOD) for k in range(3)]


class Log:
    def __init__(self):
        self.seq = 1
        self.dictionary_sent = False

    def batch(self, recs, t0_us):
        """One Batch of recs (time, channel, value, quality), in time order."""
        b = railmon_pb2.Batch(schema_version=1, first_seq=self.seq, vehicle=VEHICLE, t0_ns=t0_us * 1000,
                              log_id=LOG, config_hash=0x5151)
        if not self.dictionary_sent:
            for cid, (name, unit, dec) in CHANNELS.items():
                b.channels.add(id=cid, name=name, unit=unit, bus=0, source="test", decimals=dec)
            self.dictionary_sent = True
        prev = t0_us
        for t, c, v, q in sorted(recs, key=lambda r: r[0]):
            b.samples.t_delta_ns.append((T0_US + t - prev) * 1000)  # delta-coded: from the record before
            prev = T0_US + t
            b.samples.channel.append(c)
            b.samples.value.append(v)
            b.samples.quality.append(q)
        self.seq += len(recs)
        return b.SerializeToString()


def ingest(pg, broker, msgs, records, cid):
    r = Recv(RAILMON, ["--broker", "mqtt://127.0.0.1:%d" % broker.port, "--db", pg.url, "--client-id", cid,
                       "--repair-after", "0", "--count", str(records)])
    r.wait_subscribed()
    publish(broker.port, [(TOPIC, m) for m in msgs])
    rc, err = r.finish(120)
    check(rc == 0, "recv " + cid, err)


# ---- the reference: report/summary.c's rules, written again ----

def reference(recs, lo_us=None, hi_us=None, gap_us=0, only=None):
    out = {}
    for t, c, v, q in sorted(recs, key=lambda r: (r[0], r[1])):
        if (lo_us is not None and t < lo_us) or (hi_us is not None and t >= hi_us):
            continue
        if only and CHANNELS[c][0] not in only:
            continue
        s = out.setdefault(c, dict(count=0, valid=0, sum=0.0, min=None, max=None, gaps=0, mindt=None, maxdt=0,
                                   oor=0, inv=0, first=t, last=t))
        if s["count"]:
            dt = t - s["last"]
            limit = gap_us if gap_us else (5 * s["mindt"] if s["mindt"] is not None else None)
            if s["count"] > 1 and limit is not None and dt > limit:
                s["gaps"] += 1
            if dt > 0 and (s["mindt"] is None or dt < s["mindt"]):
                s["mindt"] = dt
            s["maxdt"] = max(s["maxdt"], dt)
        s["last"] = t
        s["count"] += 1
        s["oor"] += q == OOR
        if q == INVALID or not math.isfinite(v):
            s["inv"] += 1
            continue
        s["valid"] += 1
        s["sum"] += v
        s["min"] = v if s["min"] is None else min(s["min"], v)
        s["max"] = v if s["max"] is None else max(s["max"], v)
    return out


def summary(args, raw=False):
    r = subprocess.run([RAILMON, "summary"] + args + (["--raw"] if raw else []), capture_output=True, text=True,
                       timeout=300)
    return r.returncode, r.stdout, r.stderr


def check_json(out, ref, what):
    rows = [json.loads(line) for line in out.splitlines()]
    check([r["channel"] for r in rows] == sorted(ref), what + ": the channels", rows, sorted(ref))
    for r in rows:
        s = ref[r["channel"]]
        got = (r["count"], r["first_ns"], r["last_ns"], r["gaps"], r["out_of_range"], r["invalid"])
        want = (s["count"], (T0_US + s["first"]) * 1000, (T0_US + s["last"]) * 1000, s["gaps"], s["oor"], s["inv"])
        check(got == want, what + ": count, first, last, gaps, out of range, invalid of channel %d" % r["channel"],
              got, want)
        check(abs(r["longest_interval_s"] - (s["maxdt"] / 1e6 if s["count"] > 1 else 0)) < 1e-9,
              what + ": longest interval", r, s)
        if s["valid"]:
            check(float(r["min"]) == s["min"] and float(r["max"]) == s["max"] and
                  float(r["mean"]) == s["sum"] / s["valid"], what + ": min, max, mean", r, s)
        else:
            check(r["min"] is None and r["max"] is None and r["mean"] is None, what + ": no valid value", r)


def utc(us):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(us // 10**6)) + ".%06dZ" % (us % 10**6)


def seconds_said(err):
    m = re.search(r"--db: (\d+) seconds? from the rollup, (\d+) reads? of the rows where it could not say", err)
    check(m, "the rollup's seconds said", err)
    return int(m.group(1)), int(m.group(2))


def compare(pg, recs, what, lo=None, hi=None, extra=(), gap_us=0, only=None):
    """Rollup against raw (table and JSON, byte for byte), both against
    the reference.  Returns the seconds said (rollup, raw reads)."""
    args = ["--db", pg.url, "--vehicle", VEHICLE] + list(extra)
    if lo is not None:
        args += ["--from", utc(T0_US + lo)]
    if hi is not None:
        args += ["--to", utc(T0_US + hi)]
    said = None
    for fmt in ([], ["--json"]):
        rc1, out1, err1 = summary(args + fmt)
        rc2, out2, err2 = summary(args + fmt, raw=True)
        check(rc1 == 0 and rc2 == 0 and out1, what + ": both answer", err1, err2)
        check(out1 == out2, what + " " + " ".join(fmt) + ": the rollup's answer is the raw rows'", out1, out2)
        check("from the rollup" not in err2, what + ": --raw reads no rollup", err2)
        said = seconds_said(err1)
        if fmt:
            ref = reference(recs, lo, hi, gap_us, only)
            check_json(out1, {c: s for c, s in ref.items()}, what)
    print("%s: rollup == raw == reference (%d seconds from the rollup, %d raw reads): ok" % ((what,) + said))
    return said


def backfill(pg):
    """A version 8 database with the same rows, migrated: its backfilled
    summary rollup is the receiver's (where the receiver's knows its
    intervals: the interleaved second is exact only in the backfill)."""
    pg.psql("CREATE DATABASE old", db="postgres")
    names = pg.schema_at(SRC, 8, after="0009-summary-rollup.sql", db="old")
    pg.psql("CREATE TABLE samples_all PARTITION OF samples DEFAULT", db="old")
    for t in ("vehicles", "samples"):
        rows = pg.psql("COPY (SELECT * FROM %s) TO STDOUT" % t)
        path = os.path.join(pg.dir, t + ".tsv")
        with open(path, "w") as f:
            f.write(rows + "\n")
        os.chmod(path, 0o644)
        pg.psql("COPY %s FROM '%s'" % (t, path), db="old")
    url = pg.url.replace("/%s?" % pg.db, "/old?")
    r = subprocess.run([RAILMON, "db", "migrate", "--db", url], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout.strip() == "\n".join("applied " + n[:-4] for n in names[8:]),
          "db migrate applies 9 (and 10 to %d)" % len(names), r.stdout, r.stderr)
    q = ("SELECT channel, t, n_all, n_oor, n_inv, a_min, a_max, a_sum, t_first, t_last, dt_min, dt_max "
         "FROM rollup_summary_1s ORDER BY channel, t")
    new, old = pg.rows(q), pg.rows(q, db="old")
    check(len(new) == len(old) and len(new) > 700, "as many seconds", len(new), len(old))
    unknown = [r for r in new if r[11] == ""]
    check([r[0] for r in unknown] == ["4"], "one second of unknown intervals: Extra's interleaved one", unknown)
    for a, b in zip(new, old):
        if a[11] == "":
            check(a[:10] == b[:10] and b[10] == "100000" and b[11] == "100000",
                  "the interleaved second backfilled exactly", a, b)
        else:
            check(a == b, "the receiver's row is the backfill's", a, b)
    print("migration 9's backfill equals the receiver's rows (%d seconds): ok" % len(new))


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    pg = Postgres()
    broker = None
    try:
        broker = Broker()
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)
        recs = speed() + pressure() + door()
        log = Log()
        by_sec = {}
        for rec in recs:
            by_sec.setdefault(rec[0] // 10**6, []).append(rec)
        # run 1: up to second 199.5 and Extra's first samples; run 2: the
        # rest (a Batch a second, second 199 cut in two)
        cut = 199500000
        first = [r for r in by_sec[199] if r[0] < cut]
        msgs1 = [log.batch(by_sec[s], T0_US + s * 10**6) for s in range(199) if s in by_sec]
        msgs1 += [log.batch(first, T0_US + 199 * 10**6), log.batch(EXTRA_1, T0_US + 100 * 10**6)]
        n1 = sum(len(by_sec.get(s, [])) for s in range(199)) + len(first) + len(EXTRA_1)
        ingest(pg, broker, msgs1, n1, "sum-a")
        msgs2 = [log.batch([r for r in by_sec[199] if r[0] >= cut], T0_US + cut)]
        msgs2 += [log.batch(by_sec[s], T0_US + s * 10**6) for s in range(200, SECONDS) if s in by_sec]
        msgs2.append(log.batch(EXTRA_2, T0_US + 100 * 10**6))
        ingest(pg, broker, msgs2, len(recs) - n1 + len(EXTRA_1) + len(EXTRA_2), "sum-b")
        recs += EXTRA_1 + EXTRA_2
        check(pg.psql("SELECT count(*) FROM samples") == str(len(recs)), "every sample stored",
              pg.psql("SELECT count(*) FROM samples"), len(recs), pg.psql("SELECT channel, count(*) FROM samples GROUP BY 1"))
        good = sum(1 for _, _, v, q in recs if q == GOOD and math.isfinite(v))
        check(pg.psql("SELECT sum(n), count(*) FILTER (WHERE n = 0 OR vmin IS NULL) FROM rollup_1s") ==
              "%d|0" % good, "the dashboard's rollup_1s: good samples only, no empty second")
        check(pg.psql("SELECT sum(n) FROM rollup_1min") == str(good), "the dashboard's rollup_1min: good only")

        check(pg.psql("SELECT n_all, dt_min, dt_max FROM rollup_summary_1s WHERE channel = 2 AND t = "
                      "to_timestamp(%d)" % (T0_US // 10**6 + 199)) == "2|600000|600000",
              "second 199 of Pressure, one sample from each run: the interval between them kept")
        whole = compare(pg, recs, "the whole log")
        check(whole[0] >= 700 and whole[1] == 2, "whole: the seconds from the rollup; raw reads: Extra's "
              "interleaved second 100 (to second 120) and Speed's pause inside second 250 (to 300)", whole)
        cut = compare(pg, recs, "a range cutting seconds", lo=65550000, hi=250300000)
        check(cut[0] >= 400 and cut[1] == 1, "cut: the whole seconds between from the rollup, Extra's raw", cut)
        check(compare(pg, recs, "no whole second", lo=61200000, hi=61900000) == (0, 0),
              "no whole second: no rollup row taken")
        check(compare(pg, recs, "whole minutes 2-3", lo=120 * 10**6, hi=240 * 10**6)[1] == 0,
              "minutes 2-3: no raw read (the pauses are between seconds)")
        compare(pg, recs, "Speed, --gap 1s", extra=["-c", "Speed", "--gap", "1s"], gap_us=10**6, only=["Speed"])
        compare(pg, recs, "Pressure and Door from minute 1 on", lo=60 * 10**6,
                extra=["-c", "Pressure", "-c", "Door"], only=["Pressure", "Door"])
        rc, out, err = summary(["--db", pg.url, "--vehicle", "nobody"])
        check(rc == 1 and "no such vehicle" in err and not out, "an unknown vehicle said", err)
        rc, out, err = summary(["--db", pg.url, "--vehicle", VEHICLE, "-c", "Nope"])
        check(rc == 1 and "Nope" in err and not out, "an unknown channel said", err)
        rc, out, err = summary(["--vehicle", VEHICLE])
        check(rc == 2 and "--vehicle is for --db" in err, "--vehicle without --db refused", err)
        if SRC:
            backfill(pg)
    finally:
        stop_all(broker, pg)


if __name__ == "__main__":
    main()
