# SPDX-License-Identifier: MIT
"""mqtt_peers.py - the ground tests' MQTT side: a real mosquitto (stopped
by the test, dies with it), `railmon recv` in the background with its
stderr collected, a QoS 1 publisher and a listener to gap repair's
requests (paho-mqtt)."""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt
from railmon_test import free_port, start_peer, stop_peer


_DIRS = []  # every receiver's working directory, removed by cleanup()


def cleanup():
    """Remove what the receivers left (call after stopping every peer)."""
    for d in _DIRS:
        shutil.rmtree(d, ignore_errors=True)


def sample_batch(pb2, vehicle, k, n, t0, log_id, config_hash=7, channels=50, scale=0.5):
    """The k-th Batch of a vehicle's log of n samples each: seqs 1 + k * n
    .. (k + 1) * n, one Batch a second from t0, the samples 1 us apart over
    `channels` channels, each value its seq times `scale` (the benchmarks'
    and test-ground-once's load); pb2 is the generated railmon_pb2."""
    first = 1 + k * n
    b = pb2.Batch(schema_version=1, first_seq=first, vehicle=vehicle, t0_ns=t0 + k * 10**9, log_id=log_id,
                  config_hash=config_hash)
    for i in range(n):
        b.samples.t_delta_ns.append(1000 if i else 0)
        b.samples.channel.append(i % channels)
        b.samples.value.append(float(first + i) * scale)
    return b.SerializeToString()


def big_batch(pb2, vehicle, log_id, first_seq, n, t0):
    """A Batch of n CAN FD frames of 64 bytes each, 1 us apart from t0: over
    1 MiB for n > ~16,000 (the size recv refuses to store as it is)."""
    b = pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0, log_id=log_id)
    for i in range(n):
        b.can.t_delta_ns.append(1000)
        b.can.bus.append(0)
        b.can.id.append(0x100 + i % 50)
        b.can.flags.append(2)
        b.can.len.append(64)
    b.can.data = bytes(range(64)) * n
    return b.SerializeToString()


def vehicle_batch(pb2, vehicle, first_seq, n, log_id, t0=None, step=1000, historical=False, channels=None,
                  unit="", config_hash=0x77):
    """A Batch of n samples on channel 1, seqs first_seq.., step ns apart
    from t0 (None: now), each value its seq; channels: (id, name) pairs put
    in its dictionary with unit (the door and load tests' vehicles, honest
    and hostile); pb2 is the generated railmon_pb2."""
    b = pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0 or time.time_ns(),
                  log_id=log_id, config_hash=config_hash, historical=historical)
    for i in range(n):
        b.samples.t_delta_ns.append(0 if i == 0 else step)
        b.samples.channel.append(1)
        b.samples.value.append(float(first_seq + i))
    for cid, name in channels or []:
        b.channels.add(id=cid, name=name, unit=unit, bus=0, source="test")
    return b.SerializeToString()


def vehicle_data(pb2, vehicle, first_seq, n, **kw):
    """vehicle_batch's Batch with its topic: a (topic, payload) for publish()."""
    return ("railmon/%s/data" % vehicle, vehicle_batch(pb2, vehicle, first_seq, n, **kw))


def stop_all(broker, pg, tmp=None):
    """The end of a ground script on every exit path: every peer killed,
    what the receivers left removed, the broker and PostgreSQL stopped,
    the scratch directory removed."""
    from railmon_test import stop_peers
    stop_peers(signal.SIGKILL)
    cleanup()
    if broker:
        broker.stop()
    pg.fini()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def ground_peers(tmp_prefix=None, broker=True):
    """A ground script's main() set up and torn down in one place: meson's
    timeout (SIGTERM) made an exit that runs the teardown, a PostgreSQL,
    a mosquitto (broker=False: none), a scratch directory (tmp_prefix: its
    name's prefix; None: none).  Yields (pg, broker, tmp); on every exit
    path stop_all() (peers killed, receivers' directories, broker,
    PostgreSQL and the scratch directory gone)."""
    from pg import Postgres
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    pg = Postgres()
    b = None
    tmp = tempfile.mkdtemp(prefix=tmp_prefix) if tmp_prefix else None
    try:
        if broker:
            b = Broker()
        yield pg, b, tmp
    finally:
        stop_all(b, pg, tmp)


def check(cond, what, *context):
    if not cond:
        for c in context:
            sys.stderr.write(str(c) + "\n")
        raise AssertionError(what)


class Broker:
    """mosquitto on a free loopback port, without persistence (a restart
    loses every session and queued message); its files in a directory of
    its own (under tmp if given).  extra: configuration lines in place of
    "allow_anonymous true" (passwords, an ACL, TLS: test-recv-cli.py)."""

    def __init__(self, port=None, tmp=None, extra=None):
        self.port = port or free_port()
        self.dir = tempfile.mkdtemp(prefix="broker-", dir=tmp)
        self.conf = os.path.join(self.dir, "mosquitto.conf")
        with open(self.conf, "w") as f:
            f.write("listener %d 127.0.0.1\nuser root\npersistence false\n"
                    "max_queued_messages 1000000\nmax_inflight_messages 0\nlog_dest stderr\n"
                    "log_type error\nlog_type warning\nlog_type notice\nlog_type information\n" % self.port)
            f.write(extra or "allow_anonymous true\n")
        self.start()

    def start(self):
        self.proc = start_peer(["mosquitto", "-c", self.conf], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        for line in self.proc.stderr:
            if " running" in line:
                break
            check(time.monotonic() < deadline and "Error" not in line, "mosquitto did not start", line)
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def kill(self):
        stop_peer(self.proc, signal.SIGKILL)

    def stop(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


class Recv:
    """railmon recv in the background; its stderr collected line by line.
    env: variables added to the environment, which never passes on a
    RAILMON_MQTT_PASSWORD of the caller's (recv would log in with it)."""

    def __init__(self, railmon, args, env=None):
        self.lines = []
        # refused Batches are kept in ./railmon-refused: not in the source tree
        self.cwd = tempfile.mkdtemp(prefix="recv-")
        _DIRS.append(self.cwd)
        self.subscribed = threading.Event()
        e = dict(os.environ)
        e.pop("RAILMON_MQTT_PASSWORD", None)
        e.update(env or {})
        self.proc = start_peer([railmon, "recv"] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, cwd=self.cwd, env=e)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            if "subscribed to" in line:
                self.subscribed.set()

    def wait_subscribed(self, timeout=20):
        check(self.subscribed.wait(timeout), "railmon recv did not subscribe", *self.lines)

    def finish(self, timeout=60):
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            stop_peer(self.proc, signal.SIGKILL)
            self.reader.join(5)
            check(False, "railmon recv did not exit by itself", *self.lines)
        self.reader.join(5)
        shutil.rmtree(self.cwd, ignore_errors=True)
        return rc, "".join(self.lines)

    def terminate(self):
        self.proc.send_signal(signal.SIGTERM)
        return self.finish(30)

    def kill(self):
        stop_peer(self.proc, signal.SIGKILL)
        shutil.rmtree(self.cwd, ignore_errors=True)


def publish(port, msgs, client_id=None, user=None, password=None, retain=False):
    """Publish (topic, payload) pairs with QoS 1, in order, each acknowledged
    (as user with password if given; retained if retain)."""
    c = mqtt.Client(client_id=client_id or "test-pub-%d" % os.getpid(), clean_session=True)
    if user:
        c.username_pw_set(user, password)
    c.connect("127.0.0.1", port, 20)
    c.loop_start()
    try:
        for topic, payload in msgs:
            c.publish(topic, payload, qos=1, retain=retain).wait_for_publish(20)
    finally:
        c.disconnect()
        c.loop_stop()


class Listener:
    """Subscribes to railmon/+/resend (gap repair's requests), or another
    topic, and keeps what arrives."""

    def __init__(self, port, topic="railmon/+/resend"):
        self.got = []
        self.event = threading.Event()
        self.c = mqtt.Client(client_id="listen-%d-%d" % (os.getpid(), id(self)), clean_session=True)
        self.c.on_message = self._on
        subscribed = threading.Event()
        self.c.on_subscribe = lambda *a: subscribed.set()
        self.c.connect("127.0.0.1", port, 20)
        self.c.loop_start()
        self.c.subscribe(topic, qos=1)
        check(subscribed.wait(20), "listener subscribed")

    def _on(self, client, userdata, m):
        self.got.append((m.topic, m.payload.decode(errors="replace")))
        self.event.set()

    def stop(self):
        self.c.loop_stop()
        self.c.disconnect()
