#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-channels-retained.py RAILMON PB2_DIR SRC - the channel dictionary as a
retained message: `railmon run` (the demo trace and DBC, paced, a
dictionary in the Batches only once an hour) forwards to a real
mosquitto and publishes railmon/<vehicle>/channels retained; a `railmon
recv` started afterwards, with a new session (it never sees the Batch
that carried the dictionary), names every sample at once; the retained
message is a record-less Batch with the run's config hash and every
channel with its range, value table and bus name.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

RAILMON, PB2_DIR, SRC = sys.argv[1:4]
sys.path.insert(0, PB2_DIR)
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import railmon_pb2  # noqa: E402
from railmon_test import free_port, start_peer, stop_peer, stop_peers, wait_for  # noqa: E402


def socket_open(port):
    s = socket.socket()
    try:
        return s.connect_ex(("127.0.0.1", port)) == 0
    finally:
        s.close()


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-retained-")
    try:
        port = free_port()
        conf = os.path.join(tmp, "mosquitto.conf")
        with open(conf, "w") as f:
            f.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % port)
        start_peer(["mosquitto", "-c", conf], stderr=subprocess.DEVNULL)
        wait_for("mosquitto listening", lambda: socket_open(port), timeout=10)
        board = os.path.join(tmp, "board.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = RET-1\nrt_priority = 0\nbatch_ms = 200\nmeta_interval_s = 3600\n"
                    "[storage]\ndir = %s/log\n[uplink]\nbroker = mqtt://127.0.0.1:%d\n"
                    "[can vehicle]\ndriver = trace\nfile = %s/cli/demo/train.log\ndbc = %s/cli/demo/train.dbc\n"
                    "speed = 1\n" % (tmp, port, SRC, SRC))
        run = start_peer([RAILMON, "run", "--board", board, "--duration", "30"], stderr=subprocess.PIPE, text=True)
        # the retained dictionary, as any MQTT client gets it
        raw = subprocess.run(["mosquitto_sub", "-p", str(port), "-t", "railmon/RET-1/channels", "-C", "1", "-N",
                              "-W", "20"], capture_output=True, timeout=30).stdout
        d = railmon_pb2.Batch()
        d.ParseFromString(raw)
        assert d.vehicle == "RET-1" and d.config_hash != 0 and len(d.channels) == 32, (d.vehicle, len(d.channels))
        assert not d.can.id and not d.samples.channel and not d.events.code, "no records in it"
        door = [c for c in d.channels if c.name == "DoorStatus.Car1Door1"][0]
        assert list(door.value_table) == ["0 closed", "1 open", "2 locked", "3 fault"] and \
            list(door.range) == [0, 3] and door.bus_name == "vehicle", door
        time.sleep(2)  # the Batch with the dictionary went out long ago
        out = os.path.join(tmp, "recv.jsonl")
        r = subprocess.run([RAILMON, "recv", "--broker", "mqtt://127.0.0.1:%d" % port, "--client-id",
                            "late-%d" % os.getpid(), "--format", "jsonl", "-o", out, "--count", "300",
                            "--duration", "30"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        recs = [json.loads(x) for x in open(out)]
        samples = [x for x in recs if x["kind"] == "sample"]
        assert recs[0]["seq"] > 1 and len(samples) > 50, (recs[0]["seq"], len(samples))
        assert all(x["name"] and x["bus_name"] == "vehicle" for x in samples), \
            [x for x in samples if not x["name"]][:2]
        labels = [x["label"] for x in samples if x["name"] == "DoorStatus.Car1Door1"]
        assert not labels or all(labels), labels
        print("retained railmon/RET-1/channels: %d channels, config hash %016x; a recv started %d records late "
              "names all %d samples at once" % (len(d.channels), d.config_hash, recs[0]["seq"] - 1, len(samples)))
        run.send_signal(signal.SIGTERM)
        assert run.wait(30) == 0, run.stderr.read()
    finally:
        stop_peers(signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
