#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-ground-repair-acl.py FLEET_VEHICLES ACL_FILE - gap repair's two
safeguards on a real mosquitto with the README's ACL example
(uplink/examples/mosquitto-acl) and real forwarders (fleet-vehicles):

- ACL: only the ground may ask a vehicle to re-send.  A vehicle (veh01)
  publishing a resend request on veh00's topic, or a "gone" answer for
  veh00, is dropped by the broker: veh00 re-sends nothing and the ground
  hears no "gone"; the same request from the ground is served (so the
  request was well-formed and only the identity made the difference).
- Rate limit: a client flooding a vehicle with resend requests (2,000
  ranges covering the whole log, in 0.5 s) makes it re-send at most
  resend_per_s (50) Batches a second, queue at most UPL_RESEND_MAX (64)
  ranges and refuse (count) the rest.

Every broker and vehicle started here is stopped on every exit path.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

FLEET, ACL = sys.argv[1:3]
sys.dont_write_bytecode = True
import ground_paths  # noqa: E402
ground_paths.paths()
import paho.mqtt.client as mqtt  # noqa: E402
from railmon_test import free_port, start_peer, stop_peers, wait_for  # noqa: E402
from mqtt_peers import check  # noqa: E402

LOG = "1d" * 15 + "01"
USERS = {"ground": "g-pw", "veh00": "v-pw", "veh01": "v-pw"}
BATCHES, RATE = 20, 50


def broker(tmp):
    pw = os.path.join(tmp, "passwd")
    for i, (u, p) in enumerate(USERS.items()):
        subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [pw, u, p], check=True)
    port = free_port()
    conf = os.path.join(tmp, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write("listener %d 127.0.0.1\nuser root\npersistence false\nallow_anonymous false\n"
                "password_file %s\nacl_file %s\nlog_dest stderr\nlog_type all\n" % (port, pw, ACL))
    p = start_peer(["mosquitto", "-c", conf], stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stderr:
        lines.append(line)
        if " running" in line:
            break
        check("Error" not in line, "mosquitto did not start", line)
    threading.Thread(target=lambda: [lines.append(x) for x in p.stderr], daemon=True).start()
    return port, lines


class Client:
    """A paho client as user; counts what it receives per topic."""

    def __init__(self, port, user, subs=()):
        self.got = {}
        self.lock = threading.Lock()
        self.c = mqtt.Client(client_id="t-%s-%d" % (user, os.getpid()), clean_session=True)
        self.c.username_pw_set(user, USERS[user])
        self.c.on_message = self.on_message
        sub = threading.Event()
        self.c.on_subscribe = lambda *a: sub.set()
        self.c.connect("127.0.0.1", port, 20)
        self.c.loop_start()
        for s in subs:
            sub.clear()
            self.c.subscribe(s, 1)
            check(sub.wait(10), "subscribed " + s)

    def on_message(self, c, u, m):
        with self.lock:
            self.got[m.topic] = self.got.get(m.topic, 0) + 1

    def count(self, topic):
        with self.lock:
            return self.got.get(topic, 0)

    def pub(self, topic, payload):
        self.c.publish(topic, payload, qos=1).wait_for_publish(20)

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    tmp = tempfile.mkdtemp(prefix="ground-acl-")
    clients = []
    try:
        port, blog = broker(tmp)
        ground = Client(port, "ground", ["railmon/+/data", "railmon/+/gone"])
        clients.append(ground)
        env = dict(os.environ, FLEET_PASSWORD="v-pw")
        fleet = start_peer([FLEET, str(port), "2", str(BATCHES + 1), "10", "1", tmp], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, env=env)
        check(fleet.stdout.readline().strip() == "appended", "fleet appended")
        wait_for("every Batch live", lambda: ground.count("railmon/veh00/data") == BATCHES and
                 ground.count("railmon/veh01/data") == BATCHES, 30)

        # ACL: veh01 asks veh00 to re-send, and says "gone" for veh00
        evil = Client(port, "veh01")
        clients.append(evil)
        evil.pub("railmon/veh00/resend", "%s 1 50\n" % LOG)
        evil.pub("railmon/veh00/gone", "%s 1 50\n" % LOG)
        wait_for("the broker denied both", lambda: sum("Denied PUBLISH" in x and "veh01" in x for x in blog) >= 2,
                 10)
        # the broker drops a denied message at once; give the vehicle time it
        # would need to serve a request (5 Batches at 50/s: 0.1 s) many times over
        time.sleep(1)
        check(ground.count("railmon/veh00/data") == BATCHES, "veh00 re-sent nothing for veh01",
              ground.count("railmon/veh00/data"))
        check(ground.count("railmon/veh00/gone") == 0, "no forged gone reached the ground")
        # the same request from the ground is served: seq 1..50 = 5 Batches
        ground.pub("railmon/veh00/resend", "%s 1 50\n" % LOG)
        wait_for("the ground's request served", lambda: ground.count("railmon/veh00/data") == BATCHES + 5, 10)
        print("ACL example: only the ground's resend requests are served, a vehicle cannot ask for another "
              "or answer for it: ok")

        # rate limit: 2,000 ranges of half the log each, as fast as they go;
        # each one different and none inside another (the forwarder takes
        # a range inside one already queued as the same request again and
        # does not queue it: 2,000 copies of one range would be one)
        half = BATCHES * 10 // 2
        base = ground.count("railmon/veh01/data")
        t0 = time.monotonic()
        for m in range(20):
            ground.pub("railmon/veh01/resend",
                       "".join("%s %d %d\n" % (LOG, i, i + half) for i in range(1 + m * 100, 101 + m * 100)))
        samples = []
        while time.monotonic() - t0 < 4:
            time.sleep(0.25)
            samples.append((time.monotonic() - t0, ground.count("railmon/veh01/data") - base))
        # at most RATE a second since the first request (+1 for the first
        # one, sent at once), at every moment observed
        over = [(t, n) for t, n in samples if n > RATE * t + 1]
        check(not over, "re-sent at most %d Batches a second" % RATE, over)
        check(samples[-1][1] >= RATE, "the flood was served at all", samples)
        fleet.stdin.close()
        out = fleet.stdout.read()
        fleet.wait(30)
        line = [x for x in out.splitlines() if x.startswith("veh01 resend:")]
        check(line, "fleet's resend counters", out)
        req, refused = int(line[0].split()[2]), int(line[0].split()[8])
        check(req <= 64 + (samples[-1][1] // BATCHES + 1) * 64 and refused >= 2000 - req and refused > 1000,
              "the queue bounded: at most 64 ranges queued, the rest refused and counted", line)
        print("resend rate limit: %d ranges asked, %d queued, %d refused; %d Batches re-sent in %.1f s "
              "(limit %d/s): ok" % (2000, req, refused, samples[-1][1], samples[-1][0], RATE))
    finally:
        for c in clients:
            c.close()
        stop_peers(signal.SIGKILL)
        shutil.rmtree(tmp, ignore_errors=True)


main()
