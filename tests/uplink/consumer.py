#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""consumer.py - an independent railmon consumer: paho-mqtt + protoc-generated
railmon_pb2 (from record/railmon.proto), no railmon code at all.

  consumer.py subscribe --port P --count N --out FILE [--host H] [--topic T] [--timeout S]
      Subscribe (QoS 1), print "ready" once subscribed, decode every Batch,
      drop duplicate (vehicle, log_id, seq), write one JSON line per record
      (the same keys and values as `railmon recv --format jsonl` and
      `railmon export`: README "Output schema"),
      exit 0 after N distinct records, 1 on timeout.
  consumer.py compare A B
      Exit 0 if the two JSON-lines files hold the same records (by value).

railmon_pb2 must be importable (PYTHONPATH), e.g. generated with
  protoc --proto_path=record --python_out=OUTDIR record/railmon.proto
"""
import argparse
import json
import math
import sys
import threading
import time

NAMES = {}  # (vehicle, log_id) -> {channel: (name, unit, {value: label})}: the dictionaries seen
BUSES = {}  # (vehicle, log_id) -> {bus: name}


def iso(t_ns):
    """ISO 8601 UTC with nanoseconds, as railmon writes record times."""
    sec, ns = divmod(t_ns, 10**9)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".%09dZ" % ns


def value(v):
    """The shortest form that reads back (Python's repr, as railmon writes
    values); JSON has no NaN."""
    return v if math.isfinite(v) else None


FLAG_NAMES = ("EXT", "FD", "BRS", "ESI", "RTR", "ERR", "TX")
KEYS = ("vehicle", "log_id", "seq", "time", "time_ns", "kind", "bus", "bus_name", "channel", "name", "unit",
        "value", "quality", "label", "can_id", "flags", "data", "event", "arg", "detail")


def row(**kw):
    """A record with every key of railmon's one schema (None: not applicable)."""
    return {k: kw.get(k) for k in KEYS}


def records(batch):
    """Yield one dict per record of a railmon.v1.Batch, seq order, with the
    keys and values of `railmon export --format jsonl` and `railmon recv`
    (README "Output schema")."""
    import railmon_pb2
    origin = dict(vehicle=batch.vehicle, log_id=batch.log_id.hex())
    names = NAMES.setdefault((batch.vehicle, batch.log_id.hex()), {})
    buses = BUSES.setdefault((batch.vehicle, batch.log_id.hex()), {})
    for ch in batch.channels:
        table = {}
        for entry in ch.value_table:  # "VALUE LABEL"
            v, _, label = entry.partition(" ")
            table[float(v)] = label
        names[ch.id] = (ch.name, ch.unit, table)
        if ch.bus_name:
            buses[ch.bus] = ch.bus_name
    seq = batch.first_seq
    t = batch.t0_ns
    c = batch.can
    off = 0
    for i in range(len(c.t_delta_ns)):
        t += c.t_delta_ns[i]
        n, f = c.len[i], c.flags[i]
        yield row(seq=seq, time=iso(t), time_ns=t, kind="can", bus=c.bus[i] & 0xffff, bus_name=buses.get(c.bus[i]),
                  can_id="%0*X" % (8 if f & 1 else 3, c.id[i]),
                  flags="|".join(x for b, x in enumerate(FLAG_NAMES) if f & (1 << b)),
                  data=c.data[off:off + n].hex().upper(), **origin)
        off += n
        seq += 1
    s = batch.samples
    t = batch.t0_ns
    for i in range(len(s.t_delta_ns)):
        t += s.t_delta_ns[i]
        q = s.quality[i] if len(s.quality) else 0
        try:
            quality = railmon_pb2.Quality.Name(q)[len("QUALITY_"):].lower()
        except ValueError:
            quality = "unknown"
        name, unit, table = names.get(s.channel[i], (None, None, {}))
        bus = s.channel[i] >> 16 & 0xffff
        yield row(seq=seq, time=iso(t), time_ns=t, kind="sample", bus=bus, bus_name=buses.get(bus),
                  channel=s.channel[i], name=name, value=value(s.value[i]), unit=unit, quality=quality,
                  label=table.get(s.value[i]), **origin)
        seq += 1
    e = batch.events
    t = batch.t0_ns
    for i in range(len(e.t_delta_ns)):
        t += e.t_delta_ns[i]
        try:
            name = railmon_pb2.EventCode.Name(e.code[i])[len("EVENT_"):]
        except ValueError:
            name = str(e.code[i])
        yield row(seq=seq, time=iso(t), time_ns=t, kind="event", bus=e.source[i] & 0xffff,
                  bus_name=buses.get(e.source[i] & 0xffff), event=name,
                  arg=e.arg[i], detail=e.detail[i] if len(e.detail) else 0, **origin)
        seq += 1

def subscribe(a):
    import paho.mqtt.client as mqtt
    import railmon_pb2
    seen = set()
    done = threading.Event()
    out = open(a.out, "w")

    def on_connect(client, userdata, flags, rc):
        if rc == 0:
            client.subscribe(a.topic, qos=1)

    def on_subscribe(client, userdata, mid, granted):
        print("ready", flush=True)

    def on_message(client, userdata, msg):
        b = railmon_pb2.Batch()
        try:
            b.ParseFromString(msg.payload)
        except Exception:
            return
        for r in records(b):
            key = (r["vehicle"], r["log_id"], r["seq"])
            if key in seen:
                continue
            seen.add(key)
            out.write(json.dumps(r, separators=(",", ":")) + "\n")
        if len(seen) >= a.count:
            done.set()

    c = mqtt.Client(client_id="railmon-py-consumer", clean_session=True)
    c.on_connect = on_connect
    c.on_subscribe = on_subscribe
    c.on_message = on_message
    c.connect(a.host, a.port, keepalive=20)
    c.loop_start()
    ok = done.wait(a.timeout)
    c.loop_stop()
    out.close()
    print("received %d distinct records" % len(seen), file=sys.stderr)
    return 0 if ok else 1

def load(path):
    with open(path) as f:
        return sorted((json.loads(line) for line in f),
                      key=lambda r: (r["vehicle"], r["log_id"], r["seq"]))

def compare(a):
    x, y = load(a.a), load(a.b)
    if x == y:
        print("identical: %d records" % len(x))
        return 0
    print("differ: %d vs %d records" % (len(x), len(y)), file=sys.stderr)
    for r, s in zip(x, y):
        if r != s:
            print("first difference:\n  %s\n  %s" % (r, s), file=sys.stderr)
            break
    return 1

def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("subscribe")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--topic", default="railmon/+/data")
    s.add_argument("--count", type=int, required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--timeout", type=float, default=60)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    a = p.parse_args()
    return subscribe(a) if a.cmd == "subscribe" else compare(a)

if __name__ == "__main__":
    sys.exit(main())
