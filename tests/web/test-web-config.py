#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-web-config.py RAILMON SRCDIR NODE_MODULES OUT_DIR - a vehicle's
remote board configuration outcome (issue 32) on the dashboard, by the
real chain: mosquitto with the README's ACL example and passwords, a real
PostgreSQL 15, `railmon run` (vehicle EV-7) taking pushes from `railmon
config push`, `railmon recv --db` and `railmon serve`:

1. pushed while the vehicle is offline (retained): the vehicle page's API
   says version 5 applied (the vehicle's status may come before its first
   Batch: the receiver holds it until the vehicle is in the database);
2. an old version: refused, the vehicle's reason; CONFIG_REFUSED among the
   overview's active events (it warns), CONFIG_RELOAD not (it informs);
3. a board whose bus cannot open: rolled back, the bus named;
   CONFIG_ROLLED_BACK active;
4. hostile: another vehicle (EV-8, logged in) publishing EV-7's status is
   dropped by the ACL; EV-7's own malformed payloads (over 4096 bytes,
   not UTF-8, not JSON, an unknown outcome, a NUL, an extra member) are
   refused and counted by recv; EV-8's own status makes no vehicle; a
   status whose why is HTML is stored as it is, and the vehicle page in
   headless Chromium shows it as text (no element made, no script run):
   "config version N: refused (why), at TIME"; EV-8's status, held by
   the receiver, is written once EV-8 runs and its first Batch makes the
   vehicle;
5. a receiver restarted gets the retained status again: `updated_at`
   moves, `at` (when first heard) does not.
"""
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

RAILMON, SRC, NODE_MODULES, OUT_DIR = sys.argv[1:5]
os.makedirs(OUT_DIR, exist_ok=True)  # run alone, web-config is the first to write there
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "ground"))
from railmon_test import start_peer, stop_peer, wait_for  # noqa: E402
from pg import Postgres  # noqa: E402
from mqtt_peers import Broker, Recv, check, publish, stop_all  # noqa: E402

PW = {"ground": "g-secret", "EV-7": "v7-secret", "EV-8": "v8-secret"}
# the malformed payloads EV-7 publishes on its own status topic
BAD = [
    b'{"version":9,"outcome":"refused","why":"' + b"x" * 5000 + b'"}',   # over 4096 bytes
    b'{"version":9,"outcome":"refused","why":"\xff\xfe"}',               # not UTF-8
    b"applied",                                                          # not JSON
    b'{"version":9,"outcome":"deleted","why":""}',                       # not an outcome
    b'{"version":9,"outcome":"refused","why":"a\\u0000b"}',              # a NUL
    b'{"version":9,"outcome":"applied","why":"","vehicle":"EV-8"}',     # an extra member
]
MARKER_WHY = '<img src=x onerror="window.pwned=1"> & "quoted" caf\u00e9 \U0001F600'


class Serve:
    def __init__(self, url):
        self.proc = start_peer([RAILMON, "serve", "--db", url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        line = self.proc.stdout.readline()
        check("port " in line, "railmon serve did not start", line)
        self.base = "http://127.0.0.1:%d" % int(line.split("port ")[1].split()[0])

    def get(self, path):
        try:
            with urllib.request.urlopen(self.base + path, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())


def files(tmp):
    """Keys, passwords, the vehicle's board and the boards to push."""
    for k in ("ground",):
        subprocess.run([RAILMON, "keygen", "--output", os.path.join(tmp, k + ".key")], check=True,
                       stdout=subprocess.DEVNULL)
    pwfile = os.path.join(tmp, "passwd")
    for i, (user, pw) in enumerate(PW.items()):
        subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [pwfile, user, pw], check=True)
        with open(os.path.join(tmp, user + ".pw"), "w") as f:
            f.write(pw + "\n")
        os.chmod(os.path.join(tmp, user + ".pw"), 0o600)
    return pwfile


def board(path, port, batch_ms, extra="", vehicle="EV-7"):
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    for f in ("train.dbc", "train.log"):
        shutil.copy(os.path.join(SRC, "cli", "demo", f), os.path.join(d, f))
    with open(path, "w") as f:
        f.write("[board]\nvehicle = %s\nbatch_ms = %d\n[storage]\nsegment_size = 64K\nsync_window_ms = 50\n"
                "[uplink]\nbroker = mqtt://127.0.0.1:%d\nusername = %s\npassword = %s\nconfig_pubkey = %s\n"
                "[can vehicle]\ndriver = trace\nfile = train.log\ndbc = train.dbc\nspeed = 1\n%s"
                % (vehicle, batch_ms, port, vehicle, PW[vehicle], os.path.join(os.path.dirname(d), "ground.key.pub"),
                   extra))


def push(tmp, port, brd, version):
    r = subprocess.run([RAILMON, "config", "push", "--vehicle", "EV-7", "--board", brd, "--key",
                        os.path.join(tmp, "ground.key"), "--version", str(version), "--broker",
                        "mqtt://127.0.0.1:%d" % port, "--username", "ground", "--password-file",
                        os.path.join(tmp, "ground.pw")], capture_output=True, text=True)
    check(r.returncode == 0, "config push version %d" % version, r.stderr)


def config_is(srv, version, outcome, vehicle="EV-7"):
    st, d = srv.get("/api/vehicle?vehicle=" + vehicle)
    return st == 200 and d["config"] is not None and d["config"]["version"] == version and \
        d["config"]["outcome"] == outcome and d


def wait_config(srv, version, outcome, run, timeout=90):
    try:
        wait_for("EV-7's config version %d %s on the API" % (version, outcome),
                 lambda: config_is(srv, version, outcome), timeout)
    except AssertionError:
        sys.stderr.write("vehicle:\n" + open(run).read()[-3000:] + "\nAPI: %s\n" % (srv.get("/api/vehicle?vehicle=EV-7"),))
        raise
    return config_is(srv, version, outcome)["config"]


def active_events(srv):
    st, d = srv.get("/api/vehicles?events_s=3600")
    check(st == 200, "/api/vehicles", d)
    v = [x for x in d["vehicles"] if x["vehicle"] == "EV-7"]
    return [e["name"] for e in (v[0]["events"] or [])] if v else []


def browser(srv, want_text, want_outcome):
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    r = subprocess.run(["node", os.path.join(HERE, "browser-config.js"), srv.base, "EV-7", want_text, want_outcome,
                        OUT_DIR], env=env, capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "the vehicle page in Chromium", r.stdout, r.stderr)
    sys.stdout.write(r.stdout)


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("killed (timeout?)"))
    tmp = tempfile.mkdtemp(prefix="web-config-")
    pg = Postgres()
    broker = None
    try:
        pwfile = files(tmp)
        broker = Broker(tmp=tmp, extra="allow_anonymous false\npassword_file %s\nacl_file %s\n"
                        % (pwfile, os.path.join(SRC, "uplink", "examples", "mosquitto-acl")))
        port = broker.port
        r = subprocess.run([RAILMON, "db", "init", "--db", pg.url], capture_output=True, text=True)
        check(r.returncode == 0, "db init", r.stderr)
        recv_args = ["--broker", "mqtt://127.0.0.1:%d" % port, "--db", pg.url, "--repair-after", "0",
                     "--username", "ground", "--password-file", os.path.join(tmp, "ground.pw"), "--format", "none"]
        recv = Recv(RAILMON, recv_args)
        recv.wait_subscribed()
        srv = Serve(pg.url)
        cfg = os.path.join(tmp, "cfg", "board.ini")
        board(cfg, port, 50)
        board(os.path.join(tmp, "p5", "board.ini"), port, 40)
        board(os.path.join(tmp, "p7", "board.ini"), port, 30,
              "[can extra]\ndriver = socketcan\ninterface = rmnone0\ndbc = train.dbc\n")

        # 1. offline push, applied at connect
        push(tmp, port, os.path.join(tmp, "p5", "board.ini"), 5)
        runlog = os.path.join(tmp, "run.log")
        run = start_peer([RAILMON, "run", "--board", cfg, "--data", os.path.join(tmp, "log")],
                         stderr=open(runlog, "w"), env=dict(os.environ, RAILMON_CONFIG_PROBATION_MS="300"))
        c5 = wait_config(srv, 5, "applied", runlog)
        check(c5["why"] == "" and c5["at"] <= c5["updated_at"], "version 5 applied, no why", c5)
        print("1. offline push: the vehicle page's API says config version 5 applied")

        # 2. an old version: refused, and the refusal warns on the overview
        push(tmp, port, os.path.join(tmp, "p5", "board.ini"), 4)
        c4 = wait_config(srv, 4, "refused", runlog)
        check(c4["why"] == "version 4 is not above the vehicle's current version 5 (an old or repeated message)",
              "the vehicle's reason, as it said it", c4)
        wait_for("CONFIG_REFUSED active on the overview", lambda: "CONFIG_REFUSED" in active_events(srv), 60)
        check("CONFIG_RELOAD" not in active_events(srv), "CONFIG_RELOAD only informs", active_events(srv))
        check(pg.psql("SELECT count(*) FROM events WHERE code = 60") != "0", "the applied board's CONFIG_RELOAD "
              "reached the ground (so leaving it out of the active events is a choice, not an absence)")
        print("2. old version 4: refused with the vehicle's reason; CONFIG_REFUSED active, CONFIG_RELOAD not")

        # 3. a bus that cannot open: rolled back
        push(tmp, port, os.path.join(tmp, "p7", "board.ini"), 7)
        c7 = wait_config(srv, 7, "rolled back", runlog)
        check(c7["why"].startswith("the new board did not start: %s: bus 'extra': " % cfg), "rollback's reason", c7)
        wait_for("CONFIG_ROLLED_BACK active on the overview", lambda: "CONFIG_ROLLED_BACK" in active_events(srv), 60)
        print("3. version 7 rolled back (%s); CONFIG_ROLLED_BACK active" % c7["why"])

        # 4. hostile: another vehicle forging EV-7's status (the ACL drops
        # it), EV-7's own malformed ones (refused), EV-8's own status (no
        # Batch of EV-8: no vehicle made), then a well-formed one with HTML
        publish(port, [("railmon/EV-7/config/status", b'{"version":99,"outcome":"applied","why":"forged"}')],
                client_id="ev8-forge", user="EV-8", password=PW["EV-8"], retain=True)
        publish(port, [("railmon/EV-8/config/status", b'{"version":3,"outcome":"applied","why":""}')],
                client_id="ev8-own", user="EV-8", password=PW["EV-8"], retain=True)
        publish(port, [("railmon/EV-7/config/status", b) for b in BAD], client_id="ev7-bad", user="EV-7",
                password=PW["EV-7"])
        marker = json.dumps({"version": 8, "outcome": "refused", "why": MARKER_WHY}).encode()
        publish(port, [("railmon/EV-7/config/status", marker)], client_id="ev7-marker", user="EV-7",
                password=PW["EV-7"], retain=True)
        c8 = wait_config(srv, 8, "refused", runlog)
        check(c8["why"] == MARKER_WHY, "the why stored and returned as the vehicle sent it", c8["why"])
        check(pg.psql("SELECT count(*) FROM vehicle_config_status WHERE version = 99") == "0",
              "the forged status (another vehicle) is not recorded")
        check(pg.psql("SELECT count(*) FROM vehicles WHERE name = 'EV-8'") == "0", "a status message makes no vehicle")
        at = datetime.datetime.fromtimestamp(int(c8["at"]), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
        browser(srv, "config version 8: refused (%s), at %s" % (MARKER_WHY, at), "refused")
        print("4. ACL: EV-8 cannot set EV-7's status; %d malformed payloads of EV-7 refused; the HTML why shown as "
              "text" % len(BAD))

        # 4b. EV-8's status came before any Batch of it (held by the
        # receiver, no vehicle made); EV-8 starts: its first Batch makes
        # the vehicle and the held status is written
        board(os.path.join(tmp, "ev8", "board.ini"), port, 50, vehicle="EV-8")
        run8 = start_peer([RAILMON, "run", "--board", os.path.join(tmp, "ev8", "board.ini"), "--data",
                           os.path.join(tmp, "log8")], stderr=open(os.path.join(tmp, "run8.log"), "w"))
        wait_for("EV-8's held status written once its first Batch made the vehicle",
                 lambda: config_is(srv, 3, "applied", "EV-8"), 60)
        stop_peer(run8)
        print("4b. EV-8's status, heard before its first Batch, written once the vehicle is in the database")

        # 5. a receiver restarted: the retained status again, at kept
        before = pg.rows("SELECT extract(epoch from at), extract(epoch from updated_at) FROM vehicle_config_status")[0]
        rc, err = recv.terminate()
        check(rc == 0, "recv exits 0", err)
        # the outcomes taken vary (the vehicle says its status again at
        # each connect); the refused ones do not
        check(re.search(r"config status topic: \d+ outcomes, %d malformed messages refused" % len(BAD), err),
              "recv says the %d malformed ones" % len(BAD), err)
        check("0 lost, 0 not recorded (no Batch of their vehicle yet" in err, "nothing left waiting", err)
        recv = Recv(RAILMON, recv_args)
        recv.wait_subscribed()
        wait_for("the retained status heard again", lambda: pg.rows(
            "SELECT extract(epoch from updated_at) FROM vehicle_config_status")[0][0] != before[1], 60)
        after = pg.rows("SELECT extract(epoch from at), version, outcome FROM vehicle_config_status")[0]
        check(after == [before[0], "8", "refused"], "at kept when the same outcome is heard again", before, after)
        print("5. recv restarted: the retained outcome heard again, updated_at moved, at kept")
        stop_peer(run)
        recv.terminate()
        srv_rc = stop_peer(srv.proc)
        check(srv_rc == 0, "serve exits 0")
    finally:
        stop_all(broker, pg, tmp)


if __name__ == "__main__":
    main()
