#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-peers.py SPB_SAMPLE NODE_MODULES PB2_DIR SRC - sparkplug/'s
payloads decoded by two decoders railmon did not write: Eclipse Tahu's
JavaScript library (npm sparkplug-payload, what Node-RED and Tahu hosts
use) and python3-protobuf with sparkplug_b.proto compiled by protoc.  Each
must read back the names, aliases, datatypes, units, values, timestamps,
seq (none in NDEATH) and flags that spb-sample.c encoded with the
session (EXPECT below); Tahu's NCMDs (tahu-encode-cmd.js) must be what
sparkplug/'s parser says they are; sparkplug/spb.h's
DataType numbers must be Tahu's; and every field of sparkplug_b.proto,
those the sample leaves out too (MetaData, DataSet, Template), must have
the number and wire type of Tahu's encoder (its generated protobufjs code,
as package-lock.json pins it)."""
import json
import os
import re
import subprocess
import sys
import tempfile

SAMPLE, NODE_MODULES, PB2_DIR, SRC = sys.argv[1:5]
sys.path.insert(0, PB2_DIR)
import sparkplug_b_pb2  # noqa: E402

T0 = 1733400000000
DT = {"Int8": 1, "Int16": 2, "Int32": 3, "Int64": 4, "UInt8": 5, "UInt16": 6, "UInt32": 7,
      "UInt64": 8, "Float": 9, "Double": 10, "Boolean": 11, "String": 12}
DT_NAME = {v: k for k, v in DT.items()}

# file: (timestamp, seq (None: none), [(name, alias, timestamp, datatype, value, unit, historical)])
EXPECT = {
    "ndeath.bin": (T0 - 1, None, [
        ("bdSeq", 0, T0 - 1, "UInt64", 7, None, False)]),
    "nbirth.bin": (T0, 0, [
        ("bdSeq", 0, T0, "UInt64", 7, None, False),
        ("Node Control/Rebirth", 1, T0, "Boolean", False, None, False),
        ("Events", 2 + 2**32, T0, "String", None, None, False)]),
    "dbirth.bin": (T0 + 10, 1, [
        ("EngineData.EngineSpeed", 10, T0 + 1, "Double", 1500.25, "rpm", False),
        ("Traction.Fault", 11, T0 + 2, "String", "none", None, False),
        ("Brake.Pressure", 12, T0 + 3, "Double", None, "bar", False),
        ("Door.Count", 13, T0 + 4, "Int16", -3, None, False),
        ("Odometer", 14, T0 + 5, "Int64", -5000000000, "m", False),
        ("Status.Byte", 15, T0 + 6, "UInt8", 200, None, False),
        ("Cab.Temperature", 16, T0 + 7, "Float", 21.5, "\u00b0C", False),
        ("Pantograph.Up", 17, T0 + 8, "Boolean", True, None, False)]),
    "ddata.bin": (T0 + 500, 2, [
        (None, 10, T0 + 100, "Double", 1501.5, None, False),
        (None, 11, T0 + 100, "String", "overheat \u2014 u1", None, False),
        (None, 12, T0 + 200, "Double", 2.5, None, True),
        (None, 13, T0 + 300, "Int16", -32768, None, False),
        (None, 14, T0 + 300, "Int64", 5000000000, None, False),
        (None, 15, T0 + 300, "UInt8", 255, None, False),
        (None, 16, T0 + 400, "Float", -0.25, None, False),
        (None, 17, T0 + 400, "Boolean", False, None, False)]),
}

# DATA metrics whose value is not good: properties Quality (Int32 0, Bad)
# and railmonQuality (railmon's word)
QUALITY = {("ddata.bin", 12): "out_of_range"}
# DBIRTH metrics with a value table: railmonValueTable, "VALUE LABEL" a line
LABELS = {("dbirth.bin", 15): "0 off\n200 on", ("dbirth.bin", 16): "-40 sensor fault"}
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def signed(v, bits):
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def pb2_value(m):
    """The value of a protobuf Metric by the specification's rules."""
    if m.is_null:
        return None
    t = DT_NAME.get(m.datatype)
    if t in ("Int8", "Int16", "Int32"):
        return signed(m.int_value, 32)
    if t in ("UInt8", "UInt16"):
        return m.int_value
    if t == "Int64":
        return signed(m.long_value, 64)
    if t == "UInt64":
        return m.long_value
    return {"Float": m.float_value if m.HasField("float_value") else "unset",
            "Double": m.double_value if m.HasField("double_value") else "unset",
            "Boolean": m.boolean_value if m.HasField("boolean_value") else "unset",
            "String": m.string_value if m.HasField("string_value") else "unset"}[t]


def check_pb2(f, data):
    ts, seq, metrics = EXPECT[f]
    p = sparkplug_b_pb2.Payload()
    p.ParseFromString(data)
    check(p.HasField("timestamp") and p.timestamp == ts, "%s pb2 timestamp %d" % (f, p.timestamp))
    check(p.HasField("seq") == (seq is not None) and (seq is None or p.seq == seq), "%s pb2 seq %d" % (f, p.seq))
    check(len(p.metrics) == len(metrics), "%s pb2 %d metrics" % (f, len(p.metrics)))
    for m, (name, alias, mts, dt, value, unit, hist) in zip(p.metrics, metrics):
        w = "%s pb2 alias %d" % (f, alias)
        check(m.HasField("name") == (name is not None) and (name is None or m.name == name),
              "%s: name %r" % (w, m.name))
        check(m.alias == alias and m.timestamp == mts, "%s: alias %d t %d" % (w, m.alias, m.timestamp))
        check(m.datatype == DT[dt], "%s: datatype %d" % (w, m.datatype))
        got = pb2_value(m)
        check(got == value and type(got) is type(value), "%s: value %r, want %r" % (w, got, value))
        check(m.is_historical == hist, "%s: is_historical %r" % (w, m.is_historical))
        props = dict(zip(m.properties.keys, m.properties.values))
        q = QUALITY.get((f, alias))
        if q is not None:
            check(list(props) == ["Quality", "railmonQuality"] and props["Quality"].type == DT["Int32"] and
                  props["Quality"].int_value == 0 and props["railmonQuality"].string_value == q,
                  "%s: quality properties %r" % (w, props))
        elif unit is None and (f, alias) not in LABELS:
            check(not m.HasField("properties"), "%s: properties %r" % (w, props))
        else:
            want = ["engUnit"] * (unit is not None) + ["railmonValueTable"] * ((f, alias) in LABELS)
            check(list(props) == want, "%s: property keys %r, want %r" % (w, list(props), want))
            v = props.get("engUnit")
            check(unit is None or (v is not None and v.type == DT["String"] and v.string_value == unit),
                  "%s: engUnit %r" % (w, v))
            v = props.get("railmonValueTable")
            check((f, alias) not in LABELS or (v is not None and v.type == DT["String"] and
                                               v.string_value == LABELS[(f, alias)]),
                  "%s: railmonValueTable %r" % (w, v))


def check_tahu(f, p):
    ts, seq, metrics = EXPECT[f]
    check(int(p["timestamp"]) == ts, "%s tahu timestamp %r" % (f, p["timestamp"]))
    check((p.get("seq") is None) if seq is None else int(p["seq"]) == seq, "%s tahu seq %r" % (f, p.get("seq")))
    check(len(p["metrics"]) == len(metrics), "%s tahu %d metrics" % (f, len(p["metrics"])))
    for m, (name, alias, mts, dt, value, unit, hist) in zip(p["metrics"], metrics):
        w = "%s tahu alias %d" % (f, alias)
        check(m.get("name") == name, "%s: name %r" % (w, m.get("name")))
        check(int(m["alias"]) == alias and int(m["timestamp"]) == mts, "%s: alias/t %r" % (w, m))
        check(m["type"] == dt, "%s: type %r" % (w, m["type"]))
        got = m["value"]
        if dt in ("Int64", "UInt64") and got is not None:
            got = int(got)  # a Long, printed as a decimal string
        check(got == value and type(got) is type(value), "%s: value %r, want %r" % (w, got, value))
        check(bool(m.get("isHistorical", False)) == hist, "%s: isHistorical %r" % (w, m.get("isHistorical")))
        q = QUALITY.get((f, alias))
        if q is not None:
            check(m.get("properties") == {"Quality": {"type": "Int32", "value": 0},
                                          "railmonQuality": {"type": "String", "value": q}},
                  "%s: quality properties %r" % (w, m.get("properties")))
        elif unit is None and (f, alias) not in LABELS:
            check("properties" not in m, "%s: properties %r" % (w, m.get("properties")))
        else:
            want = {}
            if unit is not None:
                want["engUnit"] = {"type": "String", "value": unit}
            if (f, alias) in LABELS:
                want["railmonValueTable"] = {"type": "String", "value": LABELS[(f, alias)]}
            check(m.get("properties") == want, "%s: properties %r, want %r" % (w, m.get("properties"), want))


def check_datatypes(tahu_dt):
    """spb.h's enum spb_datatype against Tahu's DataType, name by name."""
    with open(os.path.join(SRC, "sparkplug", "spb.h")) as fh:
        ours = {n.lower(): int(v) for n, v in re.findall(r"SPB_DT_([A-Z0-9]+) = (\d+)", fh.read())}
    check(len(ours) == 22, "spb.h: %d datatypes" % len(ours))
    theirs = {k.lower(): v for k, v in tahu_dt.items()}
    for name, v in sorted(ours.items()):
        check(theirs.get(name) == v, "DataType %s: ours %d, Tahu %r" % (name, v, theirs.get(name)))


def check_schema():
    """Each message's fields, number and wire type, against the field
    writes of Tahu's generated encoder: `X.encode = function encode(` opens
    message X; a line naming message.field, then `id N, wireType W`."""
    path = os.path.join(NODE_MODULES, "sparkplug-payload", "lib", "sparkplugPayloadProto.js")
    with open(path) as fh:
        js = fh.read()
    theirs, cur, field = {}, None, None
    for line in js.splitlines():
        m = re.search(r"(\w+)\.encode = function encode\(message, writer\)", line)
        if m:
            cur = theirs.setdefault(m.group(1), {})
            continue
        f = re.search(r"message\.(\w+)", line)
        if f:
            field = f.group(1)
        m = re.search(r"id (\d+), wireType (\d+)", line)
        if m and cur is not None:
            cur[field] = (int(m.group(1)), int(m.group(2)))
    fd = sparkplug_b_pb2.Payload.DESCRIPTOR.fields[0]
    wire = {fd.TYPE_DOUBLE: 1, fd.TYPE_FLOAT: 5, fd.TYPE_STRING: 2, fd.TYPE_BYTES: 2, fd.TYPE_MESSAGE: 2}
    ours = {}

    def walk(d):
        ours[d.name] = {re.sub(r"_(\w)", lambda c: c.group(1).upper(), f.name): (f.number, wire.get(f.type, 0))
                        for f in d.fields}
        for n in d.nested_types:
            walk(n)
    walk(sparkplug_b_pb2.Payload.DESCRIPTOR)
    check(len(ours) == 15 and sum(len(v) for v in ours.values()) == 72,
          "schema: %d messages, %d fields" % (len(ours), sum(len(v) for v in ours.values())))
    for msg in sorted(set(ours) | set(theirs)):
        check(ours.get(msg) == theirs.get(msg), "schema %s: ours %r, Tahu %r" % (msg, ours.get(msg), theirs.get(msg)))


with tempfile.TemporaryDirectory(prefix="spb-") as tmp:
    out = subprocess.run([SAMPLE, tmp], check=True, capture_output=True, text=True).stdout
    print(out, end="")
    files = sorted(EXPECT)
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    js = os.path.join(SRC, "tests", "sparkplug", "tahu-decode.js")
    tahu = json.loads(subprocess.run(["node", js] + [os.path.join(tmp, f) for f in files], check=True,
                                     capture_output=True, text=True, env=env, timeout=60).stdout)
    for f in files:
        with open(os.path.join(tmp, f), "rb") as fh:
            data = fh.read()
        check_pb2(f, data)
        check_tahu(f, tahu[os.path.join(tmp, f)])
    check_datatypes(tahu["DataType"])
    # Tahu's NCMDs read by sparkplug/'s parser: only Rebirth = true rebirths
    subprocess.run(["node", os.path.join(SRC, "tests", "sparkplug", "tahu-encode-cmd.js"), tmp], check=True,
                   env=env, timeout=60)
    want = {"ncmd-rebirth.bin": "rebirth=1 metrics=1 refused=0",
            "ncmd-rebirth-alias.bin": "rebirth=1 metrics=1 refused=0",
            "ncmd-false.bin": "rebirth=0 metrics=1 refused=1",
            "ncmd-other.bin": "rebirth=0 metrics=2 refused=2"}
    got = subprocess.run([SAMPLE, "--cmd"] + [os.path.join(tmp, f) for f in sorted(want)], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    print("\n".join(got))
    check(len(got) == len(want), "ncmd: %d lines" % len(got))
    for line, f in zip(got, sorted(want)):
        check(line == os.path.join(tmp, f) + " " + want[f], "ncmd %s: %r, want %r" % (f, line, want[f]))
check_schema()

if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: %d payloads, %d metrics, decoded by Tahu sparkplug-payload and python3-protobuf; 4 Tahu NCMDs parsed"
      % (len(EXPECT), sum(len(v[2]) for v in EXPECT.values())))
