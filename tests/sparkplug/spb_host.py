# SPDX-License-Identifier: MIT
"""spb_host.py - the real peers the Sparkplug tests share (spb-live,
spb-outage, spb-run, spb-run-session, spb-host): mosquitto as the broker
on a free loopback port, the host: spb-host.js (SpbHost), the Sparkplug
host application in Node.js on npm mqtt and Eclipse Tahu's
sparkplug-payload that checks the session rules itself, and mosquitto_sub
printing every message as "topic hex" (start_host; spb-run's railmon
Batches).  Their lines are read by a thread and waited for by content.  One copy, so the tests start and read their peers
the same way."""
import json
import os
import signal
import socket
import subprocess
import threading
import time

MOSQUITTO = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"
failures = []


def check(cond, what):
    """Count a failure and go on: a test reports them all at its end."""
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lines:
    """A process's stdout lines, read by a thread, waited for by content
    (for timeout seconds unless a wait says otherwise)."""

    def __init__(self, proc, timeout=60):
        self.proc, self.lines, self.cv, self.timeout = proc, [], threading.Condition(), timeout
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()

    def wait(self, pred, what, timeout=None):
        end = time.monotonic() + (timeout or self.timeout)
        with self.cv:
            while not pred(self.lines):
                left = end - time.monotonic()
                if left <= 0:
                    raise SystemExit("timed out waiting for %s; lines: %r" % (what, self.lines[-10:]))
                self.cv.wait(left)
            return list(self.lines)


def msgs(lines):
    """The host's Sparkplug messages: [topic, payload in hex]."""
    return [line.split(" ", 1) for line in lines if line.startswith("spBv1.0/")]


def count(lines, kind):
    return sum(1 for t, _ in msgs(lines) if t.split("/")[2] == kind)


class Broker:
    """mosquitto on a free loopback port of its own (config in tmp); start()
    again after a kill comes back on the same port."""

    def __init__(self, tmp, procs):
        self.port, self.procs, self.proc = free_port(), procs, None
        self.conf = os.path.join(tmp, "mosquitto.conf")
        with open(self.conf, "w") as fh:
            fh.write("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n" % self.port)

    def start(self):
        b = subprocess.Popen([MOSQUITTO, "-c", self.conf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.procs.append(b)
        self.proc = b
        end = time.monotonic() + 30
        while True:  # the broker listening: connect until it accepts
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return b
            except OSError:
                if time.monotonic() > end or b.poll() is not None:
                    raise SystemExit("mosquitto did not start: %s" % b.stderr.read())
                time.sleep(0.05)  # polling a port, bounded by end


def start_host(port, procs, topics=("spBv1.0/#",), timeout=60):
    """The host, subscribed (its SUBACK seen): its lines.  mosquitto_sub
    reconnects and subscribes again by itself after a broker restart.
    Line-buffered: a pipe would hold the lines back."""
    cmd = ["stdbuf", "-oL", "mosquitto_sub", "-d", "-h", "127.0.0.1", "-p", str(port), "-v", "-F", "%t %x"]
    for t in topics:
        cmd += ["-t", t]
    sub = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    procs.append(sub)
    host = Lines(sub, timeout)
    host.wait(lambda ls: any("SUBACK" in line for line in ls), "the host's SUBACK")
    return host


def stop(procs):
    """Stop what a test started, last first (a frozen broker thawed first)."""
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.terminate()
            p.wait(timeout=30)


class SpbHost(Lines):
    """spb-host.js: subscribed to spBv1.0/<group>/# (its "subscribed" line
    seen), with host_id the primary host (its STATE online, or offline
    with state="offline", acknowledged: its "state ..." line seen).  Its
    lines: every message as "<topic> seq=.. bdSeq=.. metrics=..", so
    count() and msgs() read them as mosquitto_sub's.  send() gives it a
    command (state online|offline, rebirth <node>); finish() ends it and
    returns its verdict; view() its values file, a dict a message."""

    def __init__(self, port, procs, node_modules, src, tmp, group="Fleet", host_id=None, creds=None,
                 state="online", timeout=60, extra=()):
        self.values = os.path.join(tmp, "spb-host-values.jsonl")
        cmd = ["node", os.path.join(src, "tests", "sparkplug", "spb-host.js"), "--broker",
               "mqtt://127.0.0.1:%d" % port, "--group", group, "--values", self.values, "--state", state]
        if host_id:
            cmd += ["--host-id", host_id]
        if creds:
            cmd += ["--username", creds[0], "--password", creds[1]]
        p = subprocess.Popen(cmd + list(extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, NODE_PATH=node_modules))
        procs.append(p)
        super().__init__(p, timeout)
        self.wait(lambda ls: "subscribed" in ls, "the host's SUBACK")
        if host_id:
            self.wait(lambda ls: "state " + state in ls, "the host's STATE %s" % state)

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def state(self, online):
        """The host's STATE, waited for until the broker sent it back."""
        n = sum(1 for line in self.lines if line.startswith("spBv1.0/STATE/"))
        self.send("state " + ("online" if online else "offline"))
        self.wait(lambda ls: sum(1 for line in ls if line.startswith("spBv1.0/STATE/")) > n and
                  ls[[i for i, line in enumerate(ls) if line.startswith("spBv1.0/STATE/")][-1]]
                  .endswith("online=%s" % ("true" if online else "false")), "the host's STATE back from the broker")

    def finish(self):
        """Quit the host (its STATE offline, disconnected): its verdict,
        {"violations": {rule: n}, "checked": {rule: n}, "violations_total": n}."""
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        self.wait(lambda ls: any(line.startswith("verdict ") for line in ls), "the host's verdict")
        for line in self.lines:
            if line.startswith("rule ") or line.startswith("VIOLATION "):
                print("host:", line)
        return json.loads([line for line in self.lines if line.startswith("verdict ")][-1][len("verdict "):])

    def view(self):
        with open(self.values) as fh:
            return [json.loads(line) for line in fh]
