#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-influx.py RAILMON PB2_DIR SRC - `--format influx` into a real InfluxDB
1.x (Debian's influxdb, started here with its own config on free ports in
a temp dir, stopped by pid):

- `railmon export --format influx` of the demo trace replayed with its
  DBC: InfluxDB takes every line (HTTP 204), and counts what export's JSON
  lines hold: samples per channel, value-table labels, CAN frames, events;
- `railmon recv --format influx` of Batches published to a real mosquitto
  (built with protoc's railmon_pb2): names that need escaping (a space, a
  comma, '=', a quote, a line break) come back from InfluxDB as sent, and
  a non-finite value is a point without a value field.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

RAILMON, PB2_DIR, SRC = sys.argv[1:4]
sys.path.insert(0, PB2_DIR)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import railmon_pb2  # noqa: E402
import paho.mqtt.client as mqtt  # noqa: E402
from railmon_test import free_port, start_peer, stop_peer, stop_peers, wait_for  # noqa: E402


class Influx:
    def __init__(self, tmp):
        self.port, rpc = free_port(), free_port()
        d = os.path.join(tmp, "influx")
        os.makedirs(d)
        conf = os.path.join(d, "influxdb.conf")
        with open(conf, "w") as f:
            f.write('reporting-disabled = true\nbind-address = "127.0.0.1:%d"\n'
                    '[meta]\n  dir = "%s/meta"\n[data]\n  dir = "%s/data"\n  wal-dir = "%s/wal"\n'
                    '  query-log-enabled = false\n[monitor]\n  store-enabled = false\n'
                    '[http]\n  bind-address = "127.0.0.1:%d"\n  log-enabled = false\n' % (rpc, d, d, d, self.port))
        self.log = open(os.path.join(d, "influxd.log"), "w")
        self.proc = start_peer(["influxd", "-config", conf], stdout=self.log, stderr=subprocess.STDOUT)
        wait_for("influxd answering /ping", self.ping, timeout=60)

    def ping(self):
        try:
            return urllib.request.urlopen("http://127.0.0.1:%d/ping" % self.port, timeout=2).status == 204
        except OSError:
            return False

    def query(self, q, db="railmon"):
        url = "http://127.0.0.1:%d/query?%s" % (self.port, urllib.parse.urlencode({"db": db, "q": q}))
        with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=30) as r:
            res = json.load(r)["results"][0]
        assert "error" not in res, (q, res)
        return res.get("series", [])

    def write(self, body):
        url = "http://127.0.0.1:%d/write?db=railmon&precision=ns" % self.port
        try:
            with urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=60) as r:
                return r.status, b""
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def count(self, q):
        s = self.query(q)
        return s[0]["values"][0][1] if s else 0

    def stop(self):
        stop_peer(self.proc)
        self.log.close()


def test_export(tmp, db):
    trace, dbc = os.path.join(SRC, "cli/demo/train.log"), os.path.join(SRC, "cli/demo/train.dbc")
    data = os.path.join(tmp, "log")
    subprocess.run([RAILMON, "replay", trace, "--dbc", dbc, "--data", data, "--vehicle", "EMU-7.a"], check=True,
                   capture_output=True, timeout=60)
    body = subprocess.run([RAILMON, "export", "--data", data, "--format", "influx"], check=True,
                          capture_output=True, timeout=60).stdout
    recs = [json.loads(x) for x in subprocess.run([RAILMON, "export", "--data", data, "--format", "jsonl"],
                                                   check=True, capture_output=True, timeout=60).stdout.splitlines()]
    status, err = db.write(body)
    assert status == 204, (status, err[:500])
    for name in ("VehicleSpeed.Speed", "DoorStatus.Car1Door1", "BrakePressure.BrakePipePressure"):
        want = sum(1 for r in recs if r["name"] == name)
        got = db.count("SELECT count(value) FROM railmon WHERE channel='%s'" % name)
        assert got == want, (name, got, want)
    opened = sum(1 for r in recs if r["name"] == "DoorStatus.Car1Door1" and r["label"] == "open")
    assert db.count("SELECT count(value) FROM railmon WHERE channel='DoorStatus.Car1Door1' AND label='open'") == opened > 0
    frames = sum(1 for r in recs if r["kind"] == "can")
    assert db.count("SELECT count(data) FROM railmon_can") == frames
    assert db.count("SELECT count(arg) FROM railmon_event WHERE event='START'") == 1
    tags = db.query('SHOW TAG VALUES FROM railmon WITH KEY = "vehicle"')[0]["values"]
    assert tags == [["vehicle", "EMU-7.a"]], tags
    print("export --format influx: %d lines taken by InfluxDB; per-channel counts, labels, %d frames, events "
          "as export's records" % (body.count(b"\n"), frames))
    print("  " + body.splitlines()[1].decode())


def test_recv(tmp, db):
    port = free_port()
    conf = os.path.join(tmp, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % port)
    broker = start_peer(["mosquitto", "-c", conf], stderr=subprocess.DEVNULL)
    out = os.path.join(tmp, "recv.influx")
    b = railmon_pb2.Batch(schema_version=1, first_seq=1, vehicle="tram7", t0_ns=1_700_000_000_000_000_000,
                          log_id=bytes(range(16)))
    b.channels.add(id=7, name='line "voltage", main=1\nx', unit="k V", bus=0, bus_name="traction bus",
                   value_table=["1499.3 nominal=ok"])
    for i, v in enumerate((1499.3, float("nan"), -0.5)):
        b.samples.t_delta_ns.append(1000 if i else 0)
        b.samples.channel.append(7)
        b.samples.value.append(v)
        b.samples.quality.append(2 if v != v else 0)
    # a text channel's value (Modbus type = string): the string field label
    b.channels.add(id=9, name="vehicle_number", unit="", bus=0, bus_name="traction bus")
    b.texts.t_delta_ns.append(5000)
    b.texts.channel.append(9)
    b.texts.text.append('EMU "40" 21\\')
    try:
        wait_for("mosquitto listening", lambda: subprocess.run(["mosquitto_sub", "-p", str(port), "-t", "x", "-C",
                                                                "1", "-W", "1"], capture_output=True).returncode
                 != 1 or True, timeout=10)
        r = start_peer([RAILMON, "recv", "--broker", "mqtt://127.0.0.1:%d" % port, "--format", "influx", "-o", out,
                        "--count", "4", "--client-id", "influx-test", "--duration", "60"],
                       stderr=subprocess.PIPE, text=True)
        seen = threading.Event()
        threading.Thread(target=lambda: [seen.set() for line in r.stderr if "subscribed to" in line],
                         daemon=True).start()
        assert seen.wait(30), "recv did not subscribe"
        c = mqtt.Client(client_id="influx-pub", clean_session=True)
        c.connect("127.0.0.1", port, 20)
        c.loop_start()
        c.publish("railmon/tram7/data", b.SerializeToString(), qos=1).wait_for_publish(20)
        c.disconnect()
        c.loop_stop()
        assert r.wait(60) == 0, "recv failed"
    finally:
        stop_peer(broker, signal.SIGKILL)
    with open(out, "rb") as f:
        body = f.read()
    status, err = db.write(body)
    assert status == 204, (status, err, body)
    s = db.query('SELECT "value", "quality", "label" FROM railmon WHERE vehicle=\'tram7\' AND '
                 '"channel" != \'vehicle_number\'')[0]
    assert s["tags"] if "tags" in s else True
    rows = [dict(zip(s["columns"], v)) for v in s["values"]]
    assert [(x["value"], x["quality"], x["label"]) for x in rows] == \
        [(1499.3, "good", "nominal=ok"), (None, "invalid", None), (-0.5, "good", None)], rows
    ch = db.query('SHOW TAG VALUES FROM railmon WITH KEY = "channel" WHERE vehicle=\'tram7\'')[0]["values"]
    assert ch == [["channel", 'line "voltage", main=1\\nx'], ["channel", "vehicle_number"]], ch
    t = db.query('SELECT "value", "quality", "label" FROM railmon WHERE "channel" = \'vehicle_number\'')[0]
    assert [v[1:] for v in t["values"]] == [[None, "good", 'EMU "40" 21\\']], t
    bus = db.query('SHOW TAG VALUES FROM railmon WITH KEY = "bus" WHERE vehicle=\'tram7\'')[0]["values"]
    assert bus == [["bus", "traction bus"]], bus
    print("recv --format influx: escaped names, labels, an invalid value and a text (the string field label) "
          "read back from InfluxDB as sent")
    print("  " + body.splitlines()[0].decode())


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-influx-")
    try:
        db = Influx(tmp)
        db.query("CREATE DATABASE railmon", db="")
        test_export(tmp, db)
        test_recv(tmp, db)
        db.stop()
    finally:
        stop_peers(signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
