#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-modbus-text.py RAILMON PB2_DIR SRC - Modbus `type = string` from the
register to every output: a pymodbus server (tests/bus/modbus-peers) holds a
vehicle number and a software version as ASCII registers (written by a
pymodbus client, as a PLC stores them); `railmon run` polls them beside a
counter register, forwards to a real mosquitto, and the vehicle number
changes half way. Checked:
  * the log holds each text once per value (stored on change, not at every
    poll), the counter a sample at every poll;
  * export CSV and JSON lines: kind `text`, the text in `label`, value empty;
    InfluxDB line protocol: the text as the string field `label`; `--wide`:
    the text in the channel's cell;
  * the forwarded Batches decoded with python3-protobuf from the public
    railmon.proto: Batch.texts (field 16) holds the texts, and every Batch's
    records (frames, samples, events, texts) cover its seq range exactly;
  * `railmon watch` shows the latest text in the label column;
  * `railmon recv` writes the text records as export does.
"""
import csv
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

RAILMON, PB2_DIR, SRC = sys.argv[1:4]
sys.path.insert(0, PB2_DIR)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import railmon_pb2  # noqa: E402
import paho.mqtt.client as mqtt  # noqa: E402
from pymodbus.client import ModbusTcpClient  # noqa: E402
from railmon_test import free_port, start_peer, stop_peer, stop_peers, wait_for  # noqa: E402

PY_SERVER = os.path.join(SRC, "tests", "bus", "modbus-peers", "pymodbus-server.py")


def socket_open(port):
    s = socket.socket()
    try:
        return s.connect_ex(("127.0.0.1", port)) == 0
    finally:
        s.close()


def write_text(port, addr, text, nregs):
    """text into unit 3's holding registers, two characters a register,
    high byte first, NUL-padded to nregs registers"""
    b = text.encode("ascii").ljust(2 * nregs, b"\0")
    regs = [b[i] << 8 | b[i + 1] for i in range(0, len(b), 2)]
    c = ModbusTcpClient("127.0.0.1", port=port)
    assert c.connect(), "pymodbus client: cannot connect"
    try:
        r = c.write_registers(addr, regs, slave=3)
        assert not r.isError(), r
    finally:
        c.close()


def export(data, *args):
    r = subprocess.run([RAILMON, "export", "--data", data] + list(args), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-mbtext-")
    payloads = []
    sub = None
    try:
        server = start_peer(["/usr/bin/python3", PY_SERVER, "--tcp", "0"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
        line = server.stdout.readline()
        assert line.startswith("READY "), line
        mb_port = int(line.split()[1])
        write_text(mb_port, 1900, "EMU-4021", 4)
        write_text(mb_port, 1910, "V2.1  ", 6)

        port = free_port()
        conf = os.path.join(tmp, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % port)
        start_peer(["mosquitto", "-c", conf], stderr=subprocess.DEVNULL)
        wait_for("mosquitto listening", lambda: socket_open(port), timeout=10)
        # every forwarded Batch, as any MQTT consumer gets it
        subscribed = threading.Event()
        sub = mqtt.Client(client_id="text-sub-%d" % os.getpid(), clean_session=True)
        sub.on_connect = lambda c, u, f, rc: c.subscribe("railmon/TXT-1/data", qos=1)
        sub.on_subscribe = lambda c, u, mid, q: subscribed.set()
        sub.on_message = lambda c, u, m: payloads.append(m.payload)
        sub.connect("127.0.0.1", port, 20)
        sub.loop_start()
        assert subscribed.wait(10), "test subscriber did not subscribe"
        recv_out = os.path.join(tmp, "recv.csv")
        recv = start_peer([RAILMON, "recv", "--broker", "mqtt://127.0.0.1:%d" % port, "--client-id",
                           "text-%d" % os.getpid(), "--format", "csv", "-o", recv_out, "--window", "500ms"],
                          stderr=subprocess.PIPE, text=True)
        wait_for("recv subscribed", lambda: "subscribed to" in recv.stderr.readline(), timeout=20)

        board = os.path.join(tmp, "board.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = TXT-1\nrt_priority = 0\nbatch_ms = 200\n"
                    "[storage]\ndir = %s/log\n[uplink]\nbroker = mqtt://127.0.0.1:%d\n"
                    "[modbus plc]\ntransport = tcp\nhost = 127.0.0.1\nport = %d\nperiod_ms = 100\n"
                    "[channel vehicle_number]\nbus = plc\nunit_id = 3\naddress = 1900\ntype = string\ncount = 4\n"
                    "[channel sw_version]\nbus = plc\nunit_id = 3\naddress = 1910\ntype = string\ncount = 6\n"
                    "[channel counter]\nbus = plc\nunit_id = 3\naddress = 1940\n" % (tmp, port, mb_port))
        chk = subprocess.run([RAILMON, "check", "--board", board], capture_output=True, text=True, timeout=30)
        assert chk.returncode == 0, chk.stdout + chk.stderr
        run = start_peer([RAILMON, "run", "--board", board], stderr=subprocess.PIPE, text=True)
        data = os.path.join(tmp, "log")
        time.sleep(1.5)
        write_text(mb_port, 1900, "EMU-4022", 4)
        time.sleep(1.5)
        # the live table: the text in the label column, the value column empty
        w = subprocess.run([RAILMON, "watch", "--data", data, "--once", "--no-color"], capture_output=True,
                           text=True, timeout=30)
        assert w.returncode == 0, w.stderr
        vn = [x for x in w.stdout.splitlines() if "vehicle_number" in x]
        assert len(vn) == 1 and "EMU-4022" in vn[0] and vn[0].split()[1] == "EMU-4022", w.stdout
        assert any("sw_version" in x and "V2.1" in x for x in w.stdout.splitlines()), w.stdout
        print("watch: " + vn[0].strip())
        run.send_signal(signal.SIGTERM)
        assert run.wait(30) == 0, run.stderr.read()

        rows = [json.loads(x) for x in export(data, "--format", "jsonl").splitlines()]
        texts = [r for r in rows if r["kind"] == "text"]
        polls = [r for r in rows if r["kind"] == "sample" and r["name"] == "counter"]
        got = [(r["name"], r["label"]) for r in texts]
        assert got == [("vehicle_number", "EMU-4021"), ("sw_version", "V2.1"), ("vehicle_number", "EMU-4022")] or \
            got == [("sw_version", "V2.1"), ("vehicle_number", "EMU-4021"), ("vehicle_number", "EMU-4022")], got
        assert len(polls) >= 20, "counter: %d samples" % len(polls)
        assert all(r["value"] is None and r["quality"] == "good" and not r["unit"] and r["channel"] is not None
                   for r in texts), texts
        print("run: %d polls of the counter, texts stored once per value: %s" % (len(polls), got))

        c = list(csv.DictReader(io.StringIO(export(data, "--format", "csv", "--kind", "text"))))
        assert [(r["kind"], r["name"], r["value"], r["label"]) for r in c] == \
            [("text", n, "", t) for n, t in got], c
        influx = [x for x in export(data, "--format", "influx").splitlines() if "channel=vehicle_number" in x]
        assert len(influx) == 2 and 'label="EMU-4021"' in influx[0] and 'label="EMU-4022"' in influx[1] and \
            influx[0].startswith("railmon,vehicle=TXT-1,bus=plc,channel=vehicle_number ") and \
            "value=" not in influx[0], influx
        wide = list(csv.reader(io.StringIO(export(data, "--wide", "--channel", "vehicle_number", "--channel",
                                                  "counter", "--raster", "100ms"))))
        assert wide[0] == ["time", "time_ns", "vehicle_number", "counter"], wide[0]
        cells = [r[2] for r in wide[1:]]
        assert "EMU-4021" in cells and "EMU-4022" in cells and cells.index("EMU-4022") > cells.index("EMU-4021"), \
            cells
        print("export: CSV/JSON lines label, influx %s, --wide cells %s .. %s" % (influx[0].split(" ")[1],
                                                                                cells[0], cells[-1]))

        wait_for("the subscriber has every Batch", lambda: sum(
            1 for p in payloads if railmon_pb2.Batch.FromString(p).first_seq) >= 1, timeout=10)
        time.sleep(1)
        seq_end, pb_texts = None, []
        for p in payloads:
            b = railmon_pb2.Batch.FromString(p)
            n = len(b.can.id) + len(b.samples.channel) + len(b.events.code) + len(b.texts.channel)
            if not n:
                continue
            assert seq_end is None or b.first_seq == seq_end, (b.first_seq, seq_end)
            seq_end = b.first_seq + n
            assert len(b.texts.t_delta_ns) == len(b.texts.text) == len(b.texts.channel)
            pb_texts += list(b.texts.text)
        assert pb_texts == [t for _, t in got], pb_texts
        assert seq_end - 1 == rows[-1]["seq"] or seq_end - 1 == max(r["seq"] for r in rows), (seq_end, len(rows))
        print("python3-protobuf: %d Batches, Batch.texts %s, seq ranges contiguous to %d" %
              (len(payloads), pb_texts, seq_end - 1))

        time.sleep(1)
        recv.send_signal(signal.SIGTERM)
        recv.wait(30)
        with open(recv_out) as f:
            rc = list(csv.DictReader(f))
        assert [(r["name"], r["label"]) for r in rc if r["kind"] == "text"] == got, rc[:5]
        ex = list(csv.DictReader(io.StringIO(export(data, "--format", "csv"))))
        assert rc == ex, "recv's CSV is export's (%d vs %d rows)" % (len(rc), len(ex))
        print("recv: %d rows, export's, texts %s" % (len(rc), [r["label"] for r in rc if r["kind"] == "text"]))
        print("PASS")
    finally:
        if sub:
            sub.loop_stop()
        stop_peers()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
