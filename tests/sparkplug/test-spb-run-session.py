#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-spb-run-session.py RAILMON NODE_MODULES SRC - the Sparkplug B
session rules and store-and-forward through `railmon run` itself (not the
demo publisher): the edge node reads the daemon's log with its own cursor.
mosquitto is the broker; the host is spb-host.js, a Sparkplug host
application in Node.js (npm mqtt, Eclipse Tahu's sparkplug-payload), the
primary host "scada": it publishes its STATE, sends the Rebirths, decodes
every message and checks the session rules itself (seq, NDEATH bdSeq =
NBIRTH's, a new connection's bdSeq + 1, every DATA alias declared,
nothing before its BIRTH or after its DEATH, historical in time order, no
NBIRTH while its STATE says offline, Rebirth answered within 1 s).  The board has the demo's CAN trace and DBC
as bus "vehicle" and a bus "recorder" (a DBC of its own whose range
makes 25 of its values out_of_range) whose trace is unreadable at the
start (a symlink to /proc/self/mem: every read fails, CAN_GONE) and
readable later (CAN_BACK), a bus "spare" that `devices =` leaves out,
a primary host "scada", credentials (the broker refuses anonymous
clients) and TLS with a device certificate (tests/uplink/gen-certs.sh;
the broker's listener for the edge node requires one).  In order:

  1. STATE offline: no birth.  STATE online: NBIRTH, DBIRTH per bus, then
     DDEATH recorder (gone); the trace made readable: DBIRTH recorder.
  2. Rebirth (the host's NCMD) three times: NBIRTH (same bdSeq) and
     DBIRTHs; the host's time from its NCMD to the NBIRTH is printed, the
     quickest asserted under 1 s (the host counts each later one; the
     cores are shared with CI: the scheduler's worst case is not the edge
     node's answer).
  3. STATE offline: NDEATH; online: NBIRTH with bdSeq + 1.
  4. A 60 s broker outage (frozen, DDATA sent into it, killed,
     restarted): NBIRTH bdSeq + 1, then the backlog is_historical, in time
     order, with no gap.
     While the backlog goes, the cursor file lags the broker's
     confirmation by less than 2048 records at every look.
  5. kill -9 of railmon run: the will (NDEATH, the last NBIRTH's bdSeq);
     railmon run again on the same log: NBIRTH bdSeq + 1, values again
     only from the cursor file on; a clean stop.

Then the host's verdict (no violation but late Rebirths) and its values
file against `railmon export` of the log: every sample received, none
twice except Batches the broker delivered but had not yet confirmed at the
kill -9 (at-least-once: the cursor moves on the broker's confirmation);
each value's quality (Quality/railmonQuality properties) export's.
About 100 s (the outage is 60 s of it)."""
import collections
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
from spb_host import SpbHost  # noqa: E402

RAILMON, NODE_MODULES, SRC = sys.argv[1:4]
OUTAGE_S = 60
NODE = "T-9"
failures = []
OFFLINE = "no DDATA while the primary host's STATE says offline (railmon stat)"
TWICE = "a value twice only as a resend after a lost connection (each)"
HIST = "after the outage's rebirth: backlog is_historical first"


RULES = collections.OrderedDict()  # the session rules: rule -> [checks, failed]


def check(cond, what, rule=None):
    if rule:
        r = RULES.setdefault(rule, [0, 0])
        r[0] += 1
        r[1] += not cond
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def msgs(lines):
    return [line.split(" ", 1) for line in lines if line.startswith("spBv1.0/")]


def count(lines, kind, device=None):
    return sum(1 for t, _ in msgs(lines) if t.split("/")[2] == kind and (device is None or t.endswith("/" + device)))


with tempfile.TemporaryDirectory(prefix="spb-run-session-") as tmp:
    port, tls_port = free_port(), free_port()
    # the edge node over TLS with a device certificate (the broker's second
    # listener requires one), the host on the plain listener
    certs = os.path.join(tmp, "certs")
    subprocess.run(["bash", os.path.join(SRC, "tests", "uplink", "gen-certs.sh"), certs], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    conf = os.path.join(tmp, "mosquitto.conf")
    with open(conf, "w") as fh:
        fh.write("allow_anonymous false\npassword_file %s\npersistence false\nlistener %d 127.0.0.1\n"
                 "listener %d 127.0.0.1\ncafile %s/ca.pem\ncertfile %s/server.pem\nkeyfile %s/server.key\n"
                 "require_certificate true\n" % (os.path.join(tmp, "passwd"), port, tls_port, certs, certs, certs))
    # [sparkplug]'s credentials: the broker refuses anonymous clients
    for user, pw in (("edge", "edge-pw"), ("scada", "scada-pw")):
        subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if user == "edge" else []) +
                       [os.path.join(tmp, "passwd"), user, pw], check=True, timeout=30)
    # mosquitto started as root reads it as the user it drops to
    os.chmod(tmp, 0o755)
    os.chmod(os.path.join(tmp, "passwd"), 0o644)
    mosquitto = "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else "mosquitto"
    demo = os.path.join(SRC, "cli", "demo")
    sock = "@railmon-spbsession-%d" % os.getpid()
    rec_trace = os.path.join(tmp, "recorder.log")
    os.symlink("/proc/self/mem", rec_trace)  # opens as a file, every read fails (EIO): the bus is gone
    real = os.path.join(tmp, "recorder-real.log")
    with open(real, "w") as fh:
        fh.writelines("(%d.000000) can0 456#%016X\n" % (1000 + k, k) for k in range(1, 51))
    # the recorder's DBC: frame 0x456's last byte (1..50 in the trace) as
    # Count, range 0..25: railmon marks 26..50 out_of_range (quality
    # through railmon run, checked at the host against export)
    rec_dbc = os.path.join(tmp, "recorder.dbc")
    with open(rec_dbc, "w") as fh:
        fh.write('VERSION ""\n\nNS_ :\n\nBS_:\n\nBU_: REC\n\n'
                 'BO_ 1110 Recorder: 8 REC\n SG_ Count : 56|8@1+ (1,0) [0|25] "" Vector__XXX\n')
    board = os.path.join(tmp, "b.ini")
    with open(board, "w") as fh:
        fh.write("[board]\nvehicle = %s\nrt_priority = 0\nbatch_ms = 200\nstat_socket = %s\n"
                 "[storage]\ndir = data\nsegment_size = 4M\n"
                 "[can vehicle]\ndriver = trace\nfile = %s/train.log\ndbc = %s/train.dbc\nspeed = 1\nloop = true\n"
                 "[can recorder]\ndriver = trace\nfile = %s\nspeed = 0\ndbc = %s\n"
                 "[can spare]\ndriver = trace\nfile = %s\nspeed = 0\n"  # not a device: devices =
                 "[sparkplug]\nbroker = mqtts://127.0.0.1:%d\ngroup_id = Fleet\nprimary_host = scada\n"
                 "devices = vehicle recorder\nusername = edge\npassword = edge-pw\n"
                 "ca_file = %s/ca.pem\ncert_file = %s/client.pem\nkey_file = %s/client.key\n"
                 % (NODE, sock, demo, demo, rec_trace, rec_dbc, real, tls_port, certs, certs, certs))
    procs = []

    def start_broker():
        b = subprocess.Popen([mosquitto, "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        procs.append(b)
        end = time.monotonic() + 30
        while True:  # the broker listening: connect until it accepts
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return b
            except OSError:
                if time.monotonic() > end or b.poll() is not None:
                    raise SystemExit("mosquitto did not start: %s" % b.stderr.read())
                time.sleep(0.05)

    def pub(topic, *args, creds=("-u", "scada", "-P", "scada-pw")):
        return subprocess.run(["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-t", topic] +
                              list(creds) + list(args), check=bool(creds), timeout=30, capture_output=True)

    def stat():
        """The daemon's line of `railmon stat --json` ({} while none answers)."""
        r = subprocess.run([RAILMON, "stat", "--socket", sock, "--json"], capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if '"name":"daemon"' in line:
                return json.loads(line)
        return {}

    def wait_stat(pred, what, timeout=120):
        end = time.monotonic() + timeout
        while True:
            s = stat()
            if s and pred(s):
                return s
            if time.monotonic() > end:
                raise SystemExit("timed out waiting for %s: %r" % (what, s))
            time.sleep(0.1)  # polling the daemon's counters, not a wait for a peer

    def run():
        err = open(os.path.join(tmp, "run%d.err" % len(procs)), "w")
        p = subprocess.Popen([RAILMON, "run", "--board", board], cwd=tmp, stdout=subprocess.DEVNULL, stderr=err)
        procs.append(p)
        return p, err.name

    try:
        broker = start_broker()
        check(pub("spBv1.0/x", "-m", "x", creds=()).returncode != 0, "the broker took an anonymous client")
        # the host: reconnects, subscribes and says its STATE again by
        # itself; 1. the primary host offline: the daemon runs, stores,
        # says nothing
        host = SpbHost(port, procs, NODE_MODULES, SRC, tmp, host_id="scada", creds=("scada", "scada-pw"),
                       state="offline", timeout=120)
        rm, err1 = run()
        # the log grows (Batches of 200 ms); the edge node holds its
        # births while STATE says offline (checked in the host's order below)
        s = wait_stat(lambda s: s["records"] >= 2000, "2000 records in the log")
        check(s["sparkplug"] == "offline" and s["spb_ddata"] == 0, "the edge node published for an offline host: %r"
              % {k: v for k, v in s.items() if k.startswith("sp")}, OFFLINE)
        host.state(True)
        host.wait(lambda ls: count(ls, "NBIRTH") >= 1 and count(ls, "DDEATH", "recorder") >= 1,
                  "the births and recorder's DDEATH after STATE online")
        check(count(host.lines, "NBIRTH") == 1, "one NBIRTH after STATE online")
        os.symlink(real, rec_trace + ".tmp")
        os.rename(rec_trace + ".tmp", rec_trace)  # the recorder's trace readable: CAN_BACK
        host.wait(lambda ls: count(ls, "DBIRTH", "recorder") >= 2, "recorder's DBIRTH when it is back")

        # 2. Rebirth: the host's time from its NCMD to the NBIRTH
        answered = "rebirth %s answered " % NODE
        for k in range(3):
            host.send("rebirth " + NODE)
            host.wait(lambda ls: sum(line.startswith(answered) for line in ls) > k,
                      "the NBIRTH answering Rebirth %d" % (k + 1))
        rebirth_ms = [int(line.split()[3]) for line in host.lines if line.startswith(answered)]
        host.wait(lambda ls: count(ls, "DBIRTH", "recorder") >= 5 and count(ls, "DBIRTH", "vehicle") >= 4,
                  "the DBIRTHs answering the Rebirths")

        # 3. the primary host goes offline and comes back
        host.state(False)
        host.wait(lambda ls: count(ls, "NDEATH") >= 1, "the NDEATH after STATE offline")
        host.state(True)
        host.wait(lambda ls: count(ls, "NBIRTH") >= 5, "the NBIRTH after STATE online again")

        # 4. the broker's outage: frozen (DDATA go into a socket nobody
        # reads), killed, restarted 60 s after the freeze
        host.wait(lambda ls: count(ls, "DDATA") >= count(ls, "DDATA", "recorder") + 60, "DDATA before the outage")
        d0 = stat()["spb_ddata"]
        broker.send_signal(signal.SIGSTOP)
        t_out = time.monotonic()
        wait_stat(lambda s: s["spb_ddata"] >= d0 + 5, "DDATA sent into the frozen broker")
        broker.kill()
        broker.wait()
        wait_stat(lambda s: s["sparkplug"] == "offline", "the edge node's lost connection")
        host_before = len(host.lines)
        # the outage's length is the scenario, not a wait for a peer
        time.sleep(max(0.0, t_out + OUTAGE_S - time.monotonic()))
        print("outage %.0f s" % (time.monotonic() - t_out))
        n_online = host.lines.count("state online")
        broker = start_broker()
        # the restarted broker (no persistence) lost the retained STATE:
        # the host says it again when it is back
        host.wait(lambda ls: ls.count("state online") > n_online, "the host's STATE online after the restart")
        host.wait(lambda ls: count(ls[host_before:], "NBIRTH") >= 1, "the NBIRTH after the outage")
        # the backlog sent and confirmed: the edge node is live again.  On
        # the way, the cursor file against what the broker confirmed: a
        # kill -9 sends again what is confirmed and not in the file, and
        # the backlog goes at the broker's speed (a second of it was once
        # the whole outage's, ~40,000 values again): the file lags by
        # less than CURSOR_EVERY_RECORDS (2048, uplink/spb-pub.c)
        lags = []

        def backlog_confirmed(s):
            with open(os.path.join(tmp, "data", "sparkplug-cursor"), "rb") as fh:
                on_disk = int(fh.read().split()[2])  # read after the stat: the file only moves on
            lags.append(s["next_seq"] - s["spb_unconfirmed"] - on_disk)
            return s["sparkplug"] == "connected" and s["spb_unconfirmed"] < 3000

        wait_stat(backlog_confirmed, "the backlog confirmed")
        print("the cursor file behind the broker's confirmation during the backlog: at most %d records (%d looks)"
              % (max(lags), len(lags)))
        check(max(lags) < 2048, "the cursor file %d records behind what the broker confirmed" % max(lags),
              "kill -9: the cursor file behind the confirmed by < 2048 records")

        # 5. kill -9: the broker's will; then railmon run again on the log
        n_death = count(host.lines, "NDEATH")
        s = stat()
        with open(os.path.join(tmp, "data", "sparkplug-cursor"), "rb") as fh:
            cursor = fh.read()
        cursor_kill = int(cursor.split()[2])  # the restart reads from here or later
        next_kill = s["next_seq"]
        with open(err1) as fh:
            said = [line for line in fh if "sparkplug" in line]
        # what a resend after the kill -9 comes from: the cursor on disk
        # (at most a second behind what the broker confirmed)
        print("before the kill -9: log next_seq %d, unconfirmed %d, cursor file %r; run's last sparkplug line %r"
              % (s["next_seq"], s["spb_unconfirmed"], cursor, said[-1].strip() if said else None))
        rm.kill()
        rm.wait()
        host.wait(lambda ls: count(ls, "NDEATH") > n_death, "the will (NDEATH) after kill -9")
        rm, err2 = run()
        n_birth = count(host.lines, "NBIRTH")
        host.wait(lambda ls: count(ls, "NBIRTH") > n_birth, "the NBIRTH of the restarted daemon")
        d1 = wait_stat(lambda s: s.get("sparkplug") == "connected", "the restarted publisher")["spb_ddata"]
        wait_stat(lambda s: s["spb_ddata"] >= d1 + 10, "DDATA of the restarted daemon")
        n_death = count(host.lines, "NDEATH")
        rm.send_signal(signal.SIGTERM)
        check(rm.wait(timeout=60) == 0, "railmon run's clean stop: exit %r" % rm.returncode)
        host.wait(lambda ls: count(ls, "NDEATH") > n_death, "the clean stop's NDEATH")
        with open(err2) as fh:
            said = [line for line in fh if "sparkplug to mqtts://" in line]
        print("run (restarted):", said[-1].strip() if said else None)
        with open(err2) as fh:
            print("".join(line for line in fh if "sparkplug" in line and "sparkplug to" not in line), end="")
        check(said and " 0 records not yet confirmed by the broker" in said[-1],
              "the clean stop left records unconfirmed: %r" % said[-1:])
        verdict = host.finish()
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)  # a frozen broker, if it failed there
                p.terminate()
                p.wait(timeout=30)

    view = host.view()  # every message as the host decoded it, names resolved by alias
    export = subprocess.run([RAILMON, "export", "-d", os.path.join(tmp, "data"), "-k", "sample", "-f", "jsonl",
                             "--order", "seq", "-q"], check=True, capture_output=True, text=True).stdout
    samples = [json.loads(line) for line in export.splitlines()]

# the session rules: the host's verdict, in the table below; no violation
# but a late Rebirth (the quickest of 3 within 1 s, below)
for rule, n in verdict["violations"].items():
    RULES["host: " + rule] = [verdict["checked"][rule], n]
    if rule != "rebirth-late":
        check(n == 0, "the host's rule %s: %d violations" % (rule, n))

# the host's view, session by session (a session: the node's NBIRTHs so far)
nbirth_bdseq, order = [], []
values = []  # (session, name, ms, value, historical, the message's number)
host_q = collections.defaultdict(set)  # (name, ms, value): the quality words the host saw (None: good)
bad_q_props = []  # a metric whose quality properties are not Quality Int32 0 + railmonQuality
for v in view:
    kind = v["kind"]
    if kind == "NBIRTH":
        nbirth_bdseq.append(int([m for m in v["metrics"] if m["name"] == "bdSeq"][0]["value"]))
    if kind not in ("DBIRTH", "DDATA", "DDEATH"):
        continue
    order.append((kind, v["device"]))
    if kind != "DDATA":
        continue
    for m in v["metrics"]:
        values.append((v["session"], m["name"], m["timestamp"], m["value"], m["historical"], v["n"]))
        props = m["properties"]
        q = props.get("railmonQuality", {}).get("value")
        if props and not (set(props) == {"Quality", "railmonQuality"} and props["Quality"]["type"] == "Int32"
                          and props["Quality"]["value"] == 0 and isinstance(q, str) and q):
            bad_q_props.append(props)
        host_q[values[-1][1:3] + (values[-1][3],)].add(q)

shown = set()
# the host's view of the train: its NBIRTH and DBIRTHs' metric lists as
# Tahu decoded them (the closing note's figure)
for v in view:
    if v["kind"] in ("NBIRTH", "DBIRTH") and not (v["kind"] == "DBIRTH" and v["device"] in shown):
        print("%s %s: %d metrics" % (v["kind"], "/".join(v["topic"].split("/")[3:]), len(v["metrics"])))
        for m in v["metrics"]:
            props = {k: p["value"] for k, p in m["properties"].items()}
            print("  %-6s %-8s %-40s %s" % (m["alias"], m["type"], m["name"], json.dumps(props) if props else ""))
        shown.add(v["device"] or "")
        if shown >= {"", "vehicle", "recorder"}:
            break
kinds = collections.Counter(v["kind"] for v in view)
print("host saw %r" % dict(kinds))
print("NBIRTH bdSeqs %r; NDEATHs checked by the host %d" % (nbirth_bdseq, verdict["checked"]["ndeath-bdseq"]))
print("Rebirth answered (host: NCMD to NBIRTH) in %s ms" % ", ".join("%d" % x for x in rebirth_ms))
# STATE online, 3 Rebirths (same bdSeq), STATE back, after the outage,
# after the kill -9: 7 births (their bdSeqs are the host's rule)
check(len(nbirth_bdseq) == 7, "NBIRTHs %r" % nbirth_bdseq, "NBIRTHs: STATE online, 3 Rebirths, STATE again, "
      "after the outage, after the kill -9")
check(verdict["checked"]["ndeath-bdseq"] >= 3, "NDEATHs (STATE offline, kill -9's will, clean stop): %d"
      % verdict["checked"]["ndeath-bdseq"], "NDEATHs: STATE offline, kill -9's will, clean stop")
check(len(rebirth_ms) == 3 and min(rebirth_ms) < 1000, "Rebirth answered within 1 s: %r ms" % rebirth_ms,
      "Rebirth answered within 1 s (the quickest of 3)")
# recorder: DBIRTH, DDEATH while its trace fails, DBIRTH when it is back
rec = [k for k, d in order if d == "recorder" and k in ("DBIRTH", "DDEATH")]
print("recorder's births and deaths, first 4: %r" % rec[:4])
check(not [d for _, d in order if d not in ("vehicle", "recorder")], "a device not in devices =: %r"
      % sorted({d for _, d in order}), "devices = the buses it names, no other")
check(rec[:3] == ["DBIRTH", "DDEATH", "DBIRTH"], "recorder's DBIRTH, DDEATH, DBIRTH: %r" % rec[:4],
      "DDEATH when a bus is gone, DBIRTH when it is back")

# values: every sample of the log, against export
def norm(v):
    """A value as compared: numbers to 9 digits (a Float metric is the
    channel's value in 32 bits; export prints the double)."""
    return float("%.9g" % v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


values = [(k, n, t, norm(v), h, i) for k, n, t, v, h, i in values]
want = collections.Counter((s["name"], s["time_ns"] // 1000000, norm(s["value"])) for s in samples)
have = collections.Counter((n, t, v) for _, n, t, v, _, _ in values)
missing = want - have
for x in want:
    check(have[x] >= want[x], "%r lost" % (x,), "every value of railmon export received (none lost)")
check(not missing, "%d values lost, first %r" % (sum(missing.values()), sorted(missing)[:3]))
extra = have - want
stray = [x for x in extra if x not in want]
check(not stray, "%d values not in the log, first %r" % (len(stray), stray[:3]), "no value that export has not")
# quality as a metric property (Sparkplug's Quality Int32 0 = Bad and
# railmon's word) through railmon run: each value's as export says it
want_q = collections.defaultdict(set)
for x in samples:
    want_q[(x["name"], x["time_ns"] // 1000000, x["value"])].add(None if x.get("quality", "good") == "good"
                                                                 else x["quality"])
host_q = {(n, t, norm(v)): q for (n, t, v), q in host_q.items()}
want_q = {(n, t, norm(v)): q for (n, t, v), q in want_q.items()}
q_counts = collections.Counter(q for qs in want_q.values() for q in qs)
print("quality: export's samples %r; the host's not good %d" % (dict(q_counts),
                                                                sum(1 for qs in host_q.values() if qs != {None})))
for k, qs in want_q.items():
    if k in host_q:
        check(host_q[k] == qs, "%r: quality at the host %r, export %r" % (k, host_q[k], qs),
              "quality: a value's Quality/railmonQuality properties as export's (each)")
check(not bad_q_props, "quality properties not Quality Int32 0 + railmonQuality: %r" % bad_q_props[:3])
oor = {k for k, qs in host_q.items() if k[0] == "Recorder.Count" and qs == {"out_of_range"}}
check(len(oor) == 25, "the recorder's Count 26..50 out_of_range at the host: %d %r" % (len(oor), sorted(oor)[:3]),
      "quality: a value's Quality/railmonQuality properties as export's (each)")

# twice: only what the broker delivered but had not confirmed when the
# connection ended, sent again after it (at-least-once); never within a
# session.  At the outage at most the one Batch in flight at the freeze:
# its DDATA delivered, the barrier after it not answered (before every
# turn had its barrier, 3 Batches); at the kill -9 what was delivered
# and not confirmed or not yet in the cursor file (1 s at most).
outage_s, kill_s = 6, 7
twice = sorted(x for x in extra if x in want)
copies = collections.defaultdict(list)
for v in values:
    if v[1:4] in extra:
        copies[v[1:4]].append(v)
first_ddata = {outage_s: set(), kill_s: set()}
firsts = collections.Counter(copies[x][0][0] for x in twice)
print("twice: the sessions of the first copies %r" % dict(firsts))
for x in twice:
    sess = [v[0] for v in copies[x]]
    check(len(sess) == 2 and sess[0] < sess[1] and sess[1] in (outage_s, kill_s),
          "%r twice, not a resend after the outage or the kill -9: sessions %r" % (x, sess), TWICE)
    if len(sess) == 2 and sess[1] in first_ddata:
        first_ddata[sess[1]].add(copies[x][0][5])
print("twice: after the outage %d values of %d DDATA, after the kill -9 %d values of %d DDATA"
      % (sum(1 for x in twice if copies[x][-1][0] == outage_s), len(first_ddata[outage_s]),
         sum(1 for x in twice if copies[x][-1][0] == kill_s), len(first_ddata[kill_s])))
# the kill -9's resend: only records at or after the cursor file read
# just before it (the file only moves on), so at most the unconfirmed
# at the kill plus the < 2048 records the file lags (checked above)
seq_of = {}
for x in samples:
    k = (x["name"], x["time_ns"] // 1000000, norm(x["value"]))
    seq_of[k] = min(seq_of.get(k, x["seq"]), x["seq"])
again_kill = [x for x in twice if copies[x][-1][0] == kill_s]
below = [x for x in again_kill if seq_of[x] < cursor_kill]
print("kill -9: %d values twice, of records %s; cursor file %d, log's next %d at the kill"
      % (len(again_kill), (min(seq_of[x] for x in again_kill), max(seq_of[x] for x in again_kill))
         if again_kill else "-", cursor_kill, next_kill))
check(not below, "%d values sent again after the kill -9 from below its cursor file (%d), first %r"
      % (len(below), cursor_kill, below[:3]), "kill -9: resent only from the cursor file on")
check(len(first_ddata[outage_s]) <= 1, "values of %d DDATA twice after the outage" % len(first_ddata[outage_s]),
      "outage: nothing twice beyond the one Batch in flight at the freeze")
after = [v for v in values if v[0] == outage_s]
before = [v for v in values if v[0] == outage_s - 1]
hist = [v for v in after if v[4]]
check(before and hist, "values before (%d) and historical after (%d) the outage" % (len(before), len(hist)), HIST)
check(after[:len(hist)] == hist, "the backlog after the outage's NBIRTH not first", HIST)
ts = [v[2] for v in hist]  # in time order: the host's rule
if before and hist:
    check(min(ts) <= max(v[2] for v in before) + 1000, "a gap at the outage: last before %d, first after %d"
          % (max(v[2] for v in before), min(ts)))
print("session rules (rule: passed/checked):")
for rule, (n, bad) in RULES.items():
    print("  %-75s %s %d/%d" % (rule, "FAIL" if bad else "pass", n - bad, n))
print("host: %d values, %d of export's %d samples; %d twice (resent after a lost connection); outage: %d values before, "
      "%d historical after (in time order)" % (len(values), sum((have & want).values()), len(samples), len(twice),
                                               len(before), len(hist)))
if failures:
    print("%d failures" % len(failures))
    sys.exit(1)
print("ok: railmon run's edge node keeps the session rules and loses nothing through STATE, Rebirth, a %d s outage "
      "and kill -9" % OUTAGE_S)
