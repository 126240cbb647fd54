#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-export.py RAILMON SRC - `railmon export` as an engineer with pandas
uses it, on the demo trace replayed into a log (real binary, real log):

- time order by default: a replayed Batch holds its CAN frames, then the
  samples decoded from them, so the log in seq order steps back in time;
  export's default output never does, holds the same records, and
  `--order seq` gives the log order (seq rising);
- `--wide`: pandas.read_csv gets one column per channel ("name [unit]")
  and one row per timestamp, each value the long format's;
- `--wide --raster 100ms --max-age 50ms`: rows every 100 ms, each value
  the channel's last one at or before the row's time, empty once it is
  older than 50 ms (never invented);
- `--from/--to` with an offset (+01:00), Z, Unix seconds and local time
  (TZ) select the same records;
- an unknown `--channel` is an error that names the nearest channels;
  bad option values are said;
- `channels --board` and `--data` list the same channels, with ranges,
  value tables and bus names; `summary` gives per channel the count,
  first/last, min/max/mean, out-of-range and invalid counts export's
  records give, and finds a 2 s hole cut out of a trace as one gap;
- offline, no board file: `replay TRACE --dbc FILE` (into ./railmon-data),
  refused into a directory holding a log unless --append (which doubles
  it); `decode --dbc FILE < trace` gives one line per frame like
  `cantools decode`, and with --format jsonl the replay's samples.
"""
import bisect
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pandas as pd

RAILMON, SRC = sys.argv[1:3]


def run(args, env=None, ok=True, cwd=None):
    r = subprocess.run([RAILMON] + args, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})), cwd=cwd)
    if ok and r.returncode != 0:
        raise AssertionError("railmon %s: rc %d\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r


def jsonl(args, **kw):
    return [json.loads(x) for x in run(args + ["--format", "jsonl"], **kw).stdout.splitlines()]


def test_order(data):
    seq_order = jsonl(["export", "--data", data, "--order", "seq"])
    time_order = jsonl(["export", "--data", data])
    t_seq = [r["time_ns"] for r in seq_order]
    back = sum(1 for a, b in zip(t_seq, t_seq[1:]) if b < a)
    assert back > 100, "the log in seq order should step back in time (%d steps)" % back
    assert [r["seq"] for r in seq_order] == sorted(r["seq"] for r in seq_order), "--order seq: log order"
    t = [(r["time_ns"], r["seq"]) for r in time_order]
    assert t == sorted(t), "default order: time (then seq)"
    key = lambda r: r["seq"]
    assert sorted(time_order, key=key) == sorted(seq_order, key=key), "the same records either way"
    # the dictionary's value tables and bus names fill label and bus_name
    doors = [r for r in time_order if r["name"] == "DoorStatus.Car1Door1"]
    table = {0: "closed", 1: "open", 2: "locked", 3: "fault"}  # train.dbc's VAL_ 512 Car1Door1
    assert doors and all(r["label"] == table[r["value"]] for r in doors), doors[:3]
    assert {r["bus_name"] for r in time_order if r["kind"] != "event" or r["bus"] == 0} == {"vehicle"}
    print("time order: %d records; the log in seq order steps back %d times, export's default never" %
          (len(time_order), back))
    return time_order


def test_wide(data, recs):
    chans = ["VehicleSpeed.Speed", "BrakePressure.BrakePipePressure", "BrakePressure.EmergencyBrake"]
    args = ["export", "--data", data, "--wide"] + sum((["-c", c] for c in chans), [])
    # round_trip: pandas' fast float parser is off by an ulp at times
    df = pd.read_csv(io.StringIO(run(args).stdout), float_precision="round_trip")
    assert list(df.columns) == ["time", "time_ns", "VehicleSpeed.Speed [km/h]", "BrakePressure.BrakePipePressure [bar]", "BrakePressure.EmergencyBrake"], \
        list(df.columns)
    samples = [r for r in recs if r["kind"] == "sample" and r["name"] in chans]
    assert len(df) == len({r["time_ns"] for r in samples}), (len(df), "rows = distinct timestamps")
    assert df["time_ns"].is_monotonic_increasing
    by_t = df.set_index("time_ns")
    col = {c: c + u for c, u in zip(chans, (" [km/h]", " [bar]", ""))}
    for r in samples:
        assert by_t.at[r["time_ns"], col[r["name"]]] == r["value"], r
    assert pd.to_datetime(df["time"]).dt.tz is not None, "time parses as UTC timestamps"
    print("--wide: pandas.read_csv: %d rows x %d columns, every value the long format's" % df.shape)
    print(df.head(4).to_string(index=False))
    return samples


def test_raster(data, recs):
    chans = {"VehicleSpeed.Speed": "VehicleSpeed.Speed [km/h]", "BrakePressure.BrakePipePressure": "BrakePressure.BrakePipePressure [bar]",
             "Odometer.Odometer": "Odometer.Odometer [km]"}
    args = ["export", "--data", data, "--wide", "--raster", "100ms", "--max-age", "50ms"] + \
        sum((["-c", c] for c in chans), [])
    df = pd.read_csv(io.StringIO(run(args).stdout), float_precision="round_trip")
    assert list(df.columns)[2:] == list(chans.values()), list(df.columns)
    steps = set(df["time_ns"].diff().dropna())
    assert all(s % 100_000_000 == 0 for s in steps) and 100_000_000 in steps, steps
    assert all(t % 100_000_000 == 0 for t in df["time_ns"]), "on the 100 ms grid"
    per = {}
    for r in recs:
        if r["kind"] == "sample" and r["name"] in chans:
            per.setdefault(r["name"], []).append((r["time_ns"], r["value"]))
    checked = empty = 0
    for name, points in per.items():
        times = [p[0] for p in points]
        for t, v in zip(df["time_ns"], df[chans[name]]):
            k = bisect.bisect_right(times, t)
            want = points[k - 1][1] if k and t - points[k - 1][0] <= 50_000_000 else None
            if want is None:
                assert pd.isna(v), (name, t, v, "held beyond --max-age")
                empty += 1
            else:
                assert v == want, (name, t, v, want)
            checked += 1
    assert empty > 0, "Odometer (every 100 ms) is older than 50 ms at some raster points"
    print("--raster 100ms --max-age 50ms: %d rows; %d cells hold the last value within 50 ms, %d are empty "
          "beyond it" % (len(df), checked - empty, empty))
    print(df.head(3).to_string(index=False))


def test_times(data):
    base = ["export", "--data", data, "--kind", "can", "--format", "jsonl"]
    want = run(base + ["--from", "2025-12-03T08:00:01Z", "--to", "2025-12-03T08:00:02Z"]).stdout
    assert want.count("\n") > 50, want[:200]
    for frm, to, env in (("2025-12-03T09:00:01+01:00", "2025-12-03T09:00:02+01:00", None),
                         ("2025-12-03T03:00:01-0500", "1764748802", None),
                         ("2025-12-03 09:00:01", "2025-12-03T09:00:02", {"TZ": "Europe/Berlin"}),
                         ("2025-12-03 08:00:01.000", "2025-12-03 08:00:02", {"TZ": "UTC"})):
        got = run(base + ["--from", frm, "--to", to], env=env).stdout
        assert got == want, (frm, to, env, got.count("\n"), want.count("\n"))
    r = run(base + ["--from", "2025-12-03T09:00:01+25:00"], ok=False)
    assert r.returncode == 2 and "cannot read time" in r.stderr, r.stderr
    print("--from/--to: offsets, Z, Unix seconds and local time (TZ) select the same %d frames" % want.count("\n"))


def test_unknown_channel(data):
    r = run(["export", "--data", data, "-c", "VehicleSpeed.Sped", "-c", "BrakePressure"], ok=False)
    assert r.returncode != 0 and r.stdout == "", (r.returncode, r.stdout[:200])
    assert "--channel 'VehicleSpeed.Sped': " in r.stderr and "nearest: VehicleSpeed.Speed" in r.stderr, r.stderr
    assert "--channel 'BrakePressure'" in r.stderr and "BrakePipePressure" in r.stderr, r.stderr
    said = r.stderr
    r = run(["export", "--data", data, "-c", "zzzzzzzzzzzz"], ok=False)
    assert r.returncode != 0 and "none near" in r.stderr, r.stderr
    for args, words in ((["--raster", "100ms"], "--raster needs --wide"),
                        (["--wide", "--format", "jsonl"], "--wide writes CSV"),
                        (["--wide", "--order", "seq"], "--wide needs time order"),
                        (["--wide", "--raster", "fast"], "expected a duration"),
                        (["--order", "random"], "expected time or seq")):
        r = run(["export", "--data", data] + args, ok=False)
        assert r.returncode == 2 and words in r.stderr, (args, r.stderr)
    print("unknown --channel: the nearest names said; bad option values said: ok")
    print(said, end="")


def test_offline(tmp):
    trace, dbc = os.path.join(SRC, "cli/demo/train.log"), os.path.join(SRC, "cli/demo/train.dbc")
    # replay with no board file: ./railmon-data by default, the vehicle id given
    run(["replay", trace, "--dbc", dbc, "--vehicle", "EMU-7"], cwd=tmp)
    data = os.path.join(tmp, "railmon-data")
    recs = jsonl(["export", "--data", data, "--kind", "can", "--kind", "sample"])
    frames = sum(1 for _ in open(trace))
    assert sum(r["kind"] == "can" for r in recs) == frames and all(r["vehicle"] == "EMU-7" for r in recs)
    speed = [r for r in recs if r["name"] == "VehicleSpeed.Speed"]
    assert speed and all(r["unit"] == "km/h" for r in speed)
    # again into the same directory: refused, said, nothing added
    r = run(["replay", trace, "--dbc", dbc, "--data", data], ok=False)
    assert r.returncode == 1 and "holds a log already" in r.stderr and "--append" in r.stderr, r.stderr
    assert len(jsonl(["export", "--data", data, "--kind", "can", "--kind", "sample"])) == len(recs)
    run(["replay", trace, "--dbc", dbc, "--data", data, "--append"])
    assert len(jsonl(["export", "--data", data, "--kind", "can", "--kind", "sample"])) == 2 * len(recs)
    for args, words in ((["--board", "x.ini"], "not both"), ([], "--board FILE or --dbc FILE is required")):
        r = run(["replay", trace, "--dbc", dbc] + args if args else ["replay", trace], ok=False)
        assert r.returncode == 2 and words in r.stderr, (args, r.stderr)
    print("replay --dbc: no board file, %d frames decoded; into a log: refused without --append, doubled with it"
          % frames)

    # decode: the same samples as the replay's log, from stdin, no board file
    with open(trace) as f:
        text = subprocess.run([RAILMON, "decode", "--dbc", dbc], stdin=f, capture_output=True, text=True,
                              timeout=60)
    lines = text.stdout.splitlines()
    assert text.returncode == 0 and len(lines) == frames, (text.returncode, len(lines), text.stderr)
    assert lines[0].startswith("(1764748800.002052) can0 120#11FC0642064435C2 :: BrakePressure(BrakePipePressure: "
                               "4.604 bar, "), lines[0]
    assert any("Car1Door1: 1 'open'" in x for x in lines), "value-table labels"
    with open(trace) as f:
        rows = subprocess.run([RAILMON, "decode", "--dbc", dbc, "--format", "jsonl"], stdin=f, capture_output=True,
                              text=True, timeout=60).stdout.splitlines()
    got = sorted((j["time_ns"], j["name"], j["value"]) for j in map(json.loads, rows) if j["kind"] == "sample")
    want = sorted((r["time_ns"], r["name"], r["value"]) for r in recs if r["kind"] == "sample")
    assert got == want, (len(got), len(want))
    bad = subprocess.run([RAILMON, "decode", "--dbc", dbc], input="(1.0) can0 123#11\nnot candump\n",
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 1 and "stdin:2: not a candump line: not candump" in bad.stderr, bad.stderr
    assert bad.stdout == "(1.0) can0 123#11\n", bad.stdout  # no message for 0x123: the line as it is
    only = subprocess.run([RAILMON, "decode", "--dbc", dbc, "--decoded-only"], input="(1.0) can0 123#11\n",
                          capture_output=True, text=True, timeout=30)
    assert only.returncode == 0 and only.stdout == "", only
    print("decode --dbc: %d lines like cantools decode; --format jsonl = the replay's %d samples; bad lines said" %
          (len(lines), len(got)))
    print("  " + lines[1])


def test_channels_summary(tmp, data, recs):
    board = os.path.join(SRC, "cli/demo.ini")
    fromb = [json.loads(x) for x in run(["channels", "--board", board, "--json"]).stdout.splitlines()]
    froml = [json.loads(x) for x in run(["channels", "--data", data, "--json"]).stdout.splitlines()]
    door = [c for c in fromb if c["name"] == "DoorStatus.Car1Door1"]
    assert door and door[0]["value_table"] == {"0": "closed", "1": "open", "2": "locked", "3": "fault"} and \
        door[0]["bus_name"] == "vehicle" and (door[0]["min"], door[0]["max"]) == (0, 3), door
    assert [c for c in fromb if c["name"] == "line_voltage"][0]["source"].startswith("modbus traction"), fromb
    # the log's dictionary says what the board said (the CAN bus: the replay's one bus)
    assert froml == [c for c in fromb if c["bus_name"] == "vehicle"], (froml[:2], fromb[:2])
    text = run(["channels", "--board", board]).stdout.splitlines()
    assert text[0].split()[:6] == ["id", "bus", "name", "unit", "range", "source"], text[0]
    print("channels: --board and --data agree (%d CAN channels), ranges and value tables listed" % len(froml))
    print("  " + [x for x in text if " VehicleSpeed.Direction " in x][0].rstrip())

    got = {j["name"]: j for j in map(json.loads, run(["summary", "--data", data, "--json"]).stdout.splitlines())}
    for name in ("VehicleSpeed.Speed", "BrakePressure.BrakePipePressure", "DoorStatus.Car1Door1"):
        s = [r for r in recs if r["kind"] == "sample" and r["name"] == name]
        vals = [r["value"] for r in s if r["value"] is not None]
        g = got[name]
        assert g["count"] == len(s) and g["first_ns"] == s[0]["time_ns"] and g["last_ns"] == s[-1]["time_ns"], g
        assert g["min"] == min(vals) and g["max"] == max(vals) and abs(g["mean"] - sum(vals) / len(vals)) < 1e-9, g
        assert g["gaps"] == 0 and g["invalid"] == sum(r["quality"] == "invalid" for r in s), g
        assert g["out_of_range"] == sum(r["quality"] == "out_of_range" for r in s), g
    # a trace with 2 s of VehicleSpeed (0x100, every 20 ms) cut out: one gap
    trace = os.path.join(SRC, "cli/demo/train.log")
    cut = os.path.join(tmp, "gap.log")
    with open(trace) as f, open(cut, "w") as o:
        o.writelines(x for x in f if not (" 100#" in x and 1764748820 <= float(x[1:x.index(")")]) < 1764748822))
    run(["replay", cut, "--dbc", os.path.join(SRC, "cli/demo/train.dbc"), "--data", os.path.join(tmp, "gap")])
    g = [json.loads(x) for x in run(["summary", "--data", os.path.join(tmp, "gap"), "-c", "VehicleSpeed.Speed", "--json"]).stdout
         .splitlines()]
    assert len(g) == 1 and g[0]["gaps"] == 1 and 2.0 <= g[0]["longest_interval_s"] <= 2.03, g
    r = run(["summary", "--data", os.path.join(tmp, "gap"), "-c", "VehicleSpeed.Speed", "--gap", "3s", "--json"])
    assert json.loads(r.stdout)["gaps"] == 0, r.stdout
    r = run(["summary", "--data", os.path.join(tmp, "gap"), "-c", "VehicleSpeed.Sped"], ok=False)
    assert r.returncode == 1 and "--channel 'VehicleSpeed.Sped'" in r.stderr and "nearest: VehicleSpeed.Speed" in r.stderr, r.stderr
    table = run(["summary", "--data", os.path.join(tmp, "gap"), "-c", "VehicleSpeed.Speed"]).stdout
    print("summary: count, first/last, min/max/mean, out-of-range and invalid = export's; a 2 s hole is 1 gap:")
    print(table, end="")


def test_damaged_tail(tmp, data):
    """Damage inside the newest segment, which was never sealed (a power cut,
    a live log): the reader cannot resynchronise there, so export, summary,
    stat and replay must say where they stopped and exit 1, never stop silently
    with exit 0 and part of the log."""
    bad = os.path.join(tmp, "damaged-tail")
    shutil.copytree(data, bad)
    segs = sorted(f for f in os.listdir(bad) if f.endswith(".seg"))
    seg = os.path.join(bad, segs[-1])
    size = os.path.getsize(seg)
    with open(seg, "r+b") as f:
        f.seek(size // 2)
        f.write(b"XXXXXXXX")
    want = "%s/%s: bytes other than zeros from offset " % (bad, segs[-1])
    for cmd in (["export", "--format", "csv"], ["summary"], ["stat"]):
        r = run(cmd + ["--data", bad], ok=False)
        assert r.returncode == 1, (cmd, r.returncode, r.stderr)
        assert want in r.stderr and "nothing after it was read" in r.stderr, (cmd, r.stderr)
    r = run(["replay", bad, "--board", os.path.join(SRC, "cli/demo.ini"), "--data", os.path.join(tmp, "re")],
            ok=False)
    assert r.returncode == 1 and want in r.stderr and "1 unreadable part" in r.stderr, (r.returncode, r.stderr)
    r = run(["export", "--format", "csv", "--data", bad], ok=False)
    n = int(r.stderr.split(" records written")[0].split()[-1])
    whole = int(run(["export", "--format", "csv", "--data", data]).stderr.split(" records written")[0].split()[-1])
    assert 0 < n < whole, (n, whole)
    # the intact log says nothing of the kind
    for cmd in (["export", "--format", "csv"], ["summary"]):
        assert "bytes other than zeros" not in run(cmd + ["--data", data]).stderr
    print("damage in the newest segment: export, summary, stat and replay say where they stopped, exit 1 "
          "(%d of %d records read)" % (n, whole))


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-export-")
    try:
        data = os.path.join(tmp, "log")
        run(["replay", os.path.join(SRC, "cli/demo/train.log"), "--board", os.path.join(SRC, "cli/demo.ini"),
             "--data", data])
        recs = test_order(data)
        test_wide(data, recs)
        test_raster(data, recs)
        test_times(data)
        test_unknown_channel(data)
        test_channels_summary(tmp, data, recs)
        test_offline(tmp)
        test_damaged_tail(tmp, data)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
