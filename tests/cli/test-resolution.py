#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-resolution.py RAILMON - values print at their channel's resolution
(record/README.md "Output schema"), the rule record/format.h states.

A DBC written here: Speed factor 0.05, Temp factor 0.001 offset -40.5,
Count factor 1, Ratio factor 1/3 (no decimal resolution); a candump trace
of 2,000 frames of known raw values.  Replayed into a log, then every
output is read as text and each printed Speed/Temp/Count value must be
exactly raw * factor + offset in decimal (Python's Decimal, not a double),
with no more decimals than the resolution, and re-applying the formula to
the printed value gives the frame's raw value back.  Ratio keeps the
shortest round-trip form (float(text) == the double).  Outputs: export
csv, jsonl, influx, --wide, --wide --raster; decode text, csv, jsonl;
summary --json and its table.  The shortest round-trip form (the old
rule) prints 16-17 digits for some of these values: the test says how
many, so a return to it fails here.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from decimal import Decimal

RAILMON = sys.argv[1]
N = 2000
SIGS = {  # name: (start bit, factor text, offset text, decimals)
    "Speed": (0, "0.05", "0", 2),
    "Temp": (16, "0.001", "-40.5", 3),
    "Count": (32, "1", "0", 0),
}
DBC = """VERSION ""

NS_ :

BS_:

BU_: ECU

BO_ 256 Motor: 8 ECU
 SG_ Speed : 0|16@1+ (0.05,0) [0|3276.75] "km/h" ECU
 SG_ Temp : 16|16@1+ (0.001,-40.5) [-40.5|25.035] "degC" ECU
 SG_ Count : 32|16@1+ (1,0) [0|65535] "" ECU
 SG_ Ratio : 48|16@1+ (0.3333333333333333,0) [0|21845] "" ECU
"""


def raws(i):
    return {"Speed": (i * 37 + 1517) % 65536, "Temp": (i * 7919) % 65536, "Count": i, "Ratio": (i * 31) % 65536}


def expected(name, raw):
    _, f, o, _ = SIGS[name]
    return Decimal(raw) * Decimal(f) + Decimal(o)


def run(args, stdin=None):
    r = subprocess.run([RAILMON] + args, capture_output=True, text=True, timeout=120, stdin=stdin)
    if r.returncode != 0:
        raise AssertionError("railmon %s: rc %d\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r.stdout


def check_value(where, name, text, raw=None):
    """text is name's printed value (of raw, when known)."""
    short = name.split(".")[-1]
    if short == "Ratio":
        r = round(float(text) / 0.3333333333333333)
        assert float(text) == r * 0.3333333333333333, (where, text)  # shortest round trip: the double itself
        return
    _, f, o, dec = SIGS[short]
    d = Decimal(text)
    assert -d.as_tuple().exponent <= dec, "%s: %s %s has more decimals than %d" % (where, name, text, dec)
    # the python check: the printed value and the formula give the raw value back
    back = (float(text) - float(o)) / float(f)
    assert abs(back - round(back)) < 1e-6, (where, name, text, back)
    assert raw is None or round(back) == raw, (where, name, text, raw)
    assert d == expected(short, round(back)), (where, name, text)


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-resolution-")
    dbc, trace, data = (os.path.join(tmp, x) for x in ("res.dbc", "res.log", "data"))
    open(dbc, "w").write(DBC)
    seq = []
    with open(trace, "w") as f:
        for i in range(N):
            r = raws(i)
            payload = b"".join(r[s].to_bytes(2, "little") for s in ("Speed", "Temp", "Count", "Ratio"))
            f.write("(%d.%06d) can0 100#%s\n" % (1767225600 + i // 100, (i % 100) * 10000, payload.hex().upper()))
            seq.append(r)
    # the old rule's damage on these values: repr() is the shortest round trip
    longs = sum(len(repr(r["Speed"] * 0.05)) > 12 or len(repr(r["Temp"] * 0.001 - 40.5)) > 12 for r in seq)
    assert longs > 100, "the values chosen should show the shortest form's 16-17 digits (%d)" % longs
    print("%d of %d frames have a value whose shortest round trip has 16-17 digits" % (longs, N))

    run(["replay", trace, "--dbc", dbc, "--data", data])
    want = {s: [r[s] for r in seq] for s in ("Speed", "Temp", "Count", "Ratio")}

    def per_channel(where, pairs):
        got = {}
        for name, text in pairs:
            got.setdefault(name.split(".")[-1], []).append(text)
        for s, raw in want.items():
            assert len(got.get(s, [])) == N, (where, s, len(got.get(s, [])))
            for t, rw in zip(got[s], raw):
                check_value(where, s, t, rw)
        return sum(len(v) for v in got.values())

    # export csv, jsonl, influx
    rows = list(csv.DictReader(io.StringIO(run(["export", "--data", data, "--kind", "sample"]))))
    n = per_channel("export csv", [(r["name"], r["value"]) for r in rows])
    lines = run(["export", "--data", data, "--kind", "sample", "--format", "jsonl"]).splitlines()
    per_channel("export jsonl", [(j["name"], j["value"]) for j in (json.loads(x, parse_float=str, parse_int=str) for x in lines)])
    pairs = []
    for x in run(["export", "--data", data, "--kind", "sample", "--format", "influx"]).splitlines():
        m = re.search(r",channel=([^, ]+).* value=([^,]+),", x)
        assert m, x
        pairs.append((m.group(1), m.group(2)))
    per_channel("export influx", pairs)
    print("export csv, jsonl, influx: %d values each, all at their resolution" % n)

    # --wide and --raster
    chans = sum((["-c", "Motor." + s] for s in ("Speed", "Temp", "Count", "Ratio")), [])
    wide = list(csv.reader(io.StringIO(run(["export", "--data", data, "--wide"] + chans))))
    cols = [c.split(" [")[0] for c in wide[0]]
    per_channel("--wide", [(cols[k], r[k]) for r in wide[1:] for k in range(2, len(cols))])
    raster = list(csv.reader(io.StringIO(run(["export", "--data", data, "--wide", "--raster", "25ms"] + chans))))
    cells = [(cols[k], r[k]) for r in raster[1:] for k in range(2, len(cols)) if r[k] != ""]
    assert len(cells) > N, len(cells)
    for name, t in cells:
        check_value("--raster", name, t)
    print("--wide: %d rows; --raster 25ms: %d cells, all at their resolution" % (len(wide) - 1, len(cells)))

    # decode: text, csv, jsonl
    with open(trace) as f:
        text = run(["decode", "--dbc", dbc], stdin=f).splitlines()
    pairs = [(m.group(1), m.group(2)) for x in text for m in re.finditer(r"(\w+): ([-0-9.e+]+)", x.split("::")[1])]
    per_channel("decode text", pairs)
    with open(trace) as f:
        rows = [r for r in csv.DictReader(io.StringIO(run(["decode", "--dbc", dbc, "--format", "csv"], stdin=f)))
                if r["kind"] == "sample"]
    per_channel("decode csv", [(r["name"], r["value"]) for r in rows])
    with open(trace) as f:
        js = [json.loads(x, parse_float=str, parse_int=str)
              for x in run(["decode", "--dbc", dbc, "--format", "jsonl"], stdin=f).splitlines()]
    per_channel("decode jsonl", [(j["name"], j["value"]) for j in js if j["kind"] == "sample"])
    print("decode text, csv, jsonl: every value at its resolution")

    # summary: min and max are values of the channel
    summ = {j["name"]: j for j in (json.loads(x, parse_float=str, parse_int=str)
                                   for x in run(["summary", "--data", data, "--json"]).splitlines())}
    table = run(["summary", "--data", data])
    for s in ("Speed", "Temp", "Count"):
        g = summ["Motor." + s]
        check_value("summary --json", s, g["min"], min(want[s]))
        check_value("summary --json", s, g["max"], max(want[s]))
        row = [x for x in table.splitlines() if " Motor.%s " % s in x]
        assert row and g["min"] in row[0].split() and g["max"] in row[0].split(), (row, g)
        print("summary Motor.%s: min %s max %s" % (s, g["min"], g["max"]))


main()
