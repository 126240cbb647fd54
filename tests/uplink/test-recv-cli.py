#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-recv-cli.py RAILMON PB2_DIR ACL_FILE GEN_CERTS - `railmon recv` as a ground
operator runs it, against real mosquitto brokers, with Batches built by an
independent encoder (protoc-generated railmon_pb2) and published with
paho-mqtt:

- a closed port, an unknown host, a wrong password, a broker certificate
  from another CA: the reason is said (once in a short run), and --duration
  is honoured while it cannot connect;
- option mistakes are said in words, not "Invalid argument";
- --password-file, RAILMON_MQTT_PASSWORD, and --password's warning (and it is
  blanked in /proc/<pid>/cmdline);
- a vehicle's new log (seq from 1 again, new log id) is stored in its own
  ground log; `export --data DIR/<vehicle>` gives every log in order; a
  re-send is a silent duplicate; a conflicting Batch is refused, said and
  kept byte for byte; after recv restarts, its ground logs still tell a
  re-send from a conflict;
- a vehicle met at seq 5e9 gets a ground log from there, and a gap over
  2^32 records continues in another one;
- a Batch over 1 MiB is said, kept and not claimed as stored;
- 300 vehicles all get ground logs; past --max-vehicles they are refused,
  counted and said;
- the README's mosquitto ACL example (ACL_FILE): a vehicle cannot publish
  for another one;
- recv and export write one schema: the same Batches (every kind of
  record, names that need escaping, non-finite values, unknown codes, a
  re-sent backlog Batch) give, byte for byte, export's output of the
  ground log, in CSV, JSON lines and candump, in time order;
  `stat --json` of that log escapes a health entry's name.

Every broker and receiver started here is killed on every exit path (and
dies with this script: PR_SET_PDEATHSIG).
"""
import functools
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import time

RAILMON, PB2_DIR, ACL_FILE, GEN_CERTS = sys.argv[1:5]
sys.path.insert(0, PB2_DIR)
import railmon_pb2  # noqa: E402

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
# the ground tests' mosquitto and publisher (as tests/web's test does)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ground"))
from railmon_test import die_with_us, free_port, start_peer, stop_peers  # noqa: E402
import mqtt_peers  # noqa: E402
from mqtt_peers import Broker, big_batch, check, publish  # noqa: E402

T0 = 1_700_000_000_000_000_000
ID_A = bytes.fromhex("a1" * 15 + "01")
ID_B = bytes.fromhex("b2" * 15 + "02")
# README "Output schema": the CSV header and the JSON keys, in order
SCHEMA = ["vehicle", "log_id", "seq", "time", "time_ns", "kind", "bus", "bus_name", "channel", "name", "unit",
          "value", "quality", "label", "can_id", "flags", "data", "event", "arg", "detail"]


# recv of this build, as mqtt_peers.Recv(RAILMON, args, env=None)
Recv = functools.partial(mqtt_peers.Recv, RAILMON)


def run_recv(args, timeout=30):
    r = subprocess.run([RAILMON, "recv"] + args, capture_output=True, text=True, timeout=timeout,
                       preexec_fn=die_with_us)
    return r.returncode, r.stderr


def batch(vehicle, log_id, first_seq, n, t0=T0, salt=0):
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0, log_id=log_id)
    for i in range(n):
        b.samples.t_delta_ns.append(1000000 if i else 0)
        b.samples.channel.append(7)
        b.samples.value.append(float(first_seq + i + salt))
    return b.SerializeToString()


def export(data):
    """The ground log as it holds it: seq order (these Batches all start at T0)."""
    r = subprocess.run([RAILMON, "export", "--data", data, "--format", "jsonl", "--order", "seq"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0, "export failed", r.stderr)
    return [json.loads(x) for x in r.stdout.splitlines()], r.stderr


def test_cannot_connect():
    port = free_port()  # nobody listens
    rc, err = run_recv(["--broker", "mqtt://127.0.0.1:%d" % port, "--duration", "2", "--format", "none"])
    lines = [x for x in err.splitlines() if "cannot connect to" in x]
    check(rc == 1, "rc %d" % rc, err)
    check(len(lines) == 1 and "Connection refused" in lines[0], "reason said once", err)
    check("never connected to 127.0.0.1:%d: Connection refused" % port in err, "final word", err)
    rc, err = run_recv(["--broker", "mqtt://no-such-host.invalid", "--duration", "1", "--format", "none"])
    check(rc == 1 and err.count("cannot resolve the broker's host name 'no-such-host.invalid'") == 1,
          "unknown host said once", err)
    print("closed port, unknown host: reason said, --duration honoured: ok")


def test_tls(tmp):
    certs = os.path.join(tmp, "certs")
    subprocess.run(["bash", GEN_CERTS, certs], check=True, stdout=subprocess.DEVNULL)
    b = Broker(tmp=tmp, extra="allow_anonymous true\ncafile %s/ca.pem\ncertfile %s/server.pem\n"
               "keyfile %s/server.key\n" % (certs, certs, certs))
    try:
        rc, err = run_recv(["--broker", "mqtts://127.0.0.1:%d" % b.port, "--ca", certs + "/wrongca.pem",
                            "--duration", "2", "--format", "none"])
        lines = [x for x in err.splitlines() if "TLS with 127.0.0.1" in x]
        check(rc == 1 and len(lines) == 1 and "certificate verify failed" in lines[0], "TLS failure said", err)
        r = Recv(["--broker", "mqtts://127.0.0.1:%d" % b.port, "--ca", certs + "/ca.pem", "--format", "none"])
        r.wait_subscribed()
        rc, err = r.terminate()
        check(rc == 0 and "TLS with" not in err, "the right CA connects", err)
    finally:
        b.stop()
    print("TLS: a broker certificate from another CA said in OpenSSL's words: ok")


def test_option_words(tmp):
    ca = os.path.join(tmp, "ca.pem")
    with open(ca, "w") as f:
        f.write("not parsed before connecting\n")
    empty = os.path.join(tmp, "empty-password")
    open(empty, "w").close()
    cases = [
        (["--broker", "mqtts://127.0.0.1"], "mqtts:// needs --ca FILE"),
        (["--broker", "mqtt://127.0.0.1", "--insecure"], "--insecure skips the broker's host name check"),
        (["--broker", "mqtts://127.0.0.1", "--ca", ca, "--key", ca], "--key needs --cert"),
        (["--broker", "mqtts://127.0.0.1", "--ca", ca, "--cert", ca], "--cert needs --key"),
        (["--broker", "mqtt://127.0.0.1", "--ca", ca], "use an mqtts:// broker"),
        (["--broker", "mqtts://127.0.0.1", "--ca", tmp + "/nope.pem"], "--ca %s/nope.pem: No such file" % tmp),
        (["--broker", "mqtt://127.0.0.1", "--password", "pw"], "--password) needs --username"),
        (["--broker", "mqtt://127.0.0.1", "-u", "g", "--password-file", empty], "empty first line"),
        (["--broker", "mqtt://127.0.0.1", "--duration", "soon"], "--duration: expected seconds"),
        (["--broker", "mqtt://127.0.0.1", "--max-vehicles", "0"], "--max-vehicles: expected a number"),
    ]
    for args, want in cases:
        rc, err = run_recv(args)
        check(rc == 2 and want in err and "Invalid argument" not in err, "%s: %r" % (args, want), err)
    print("option mistakes said in words: ok")


def test_password(tmp):
    pwfile = os.path.join(tmp, "passwd")
    subprocess.run(["mosquitto_passwd", "-c", "-b", pwfile, "ground", "s3cret-pw"], check=True)
    b = Broker(tmp=tmp, extra="allow_anonymous false\npassword_file %s\n" % pwfile)
    try:
        url = "mqtt://127.0.0.1:%d" % b.port
        good = os.path.join(tmp, "pw-good")
        with open(good, "w") as f:
            f.write("s3cret-pw\n")
        r = Recv(["--broker", url, "-u", "ground", "--password-file", good, "--format", "none"])
        r.wait_subscribed()
        rc, err = r.terminate()
        check(rc == 0 and "WARNING" not in err, "--password-file", err)

        r = Recv(["--broker", url, "-u", "ground", "--format", "none"], env={"RAILMON_MQTT_PASSWORD": "s3cret-pw"})
        r.wait_subscribed()
        rc, err = r.terminate()
        check(rc == 0, "RAILMON_MQTT_PASSWORD", err)

        r = Recv(["--broker", url, "-u", "ground", "--password", "s3cret-pw", "--format", "none"])
        r.wait_subscribed()
        with open("/proc/%d/cmdline" % r.proc.pid, "rb") as f:
            cmdline = f.read()
        rc, err = r.terminate()
        check(b"s3cret-pw" not in cmdline and b"xxxxxxxxx" in cmdline, "password blanked in cmdline", cmdline)
        check("WARNING: --password is visible to other users" in err, "--password warns", err)

        bad = os.path.join(tmp, "pw-bad")
        with open(bad, "w") as f:
            f.write("wrong\n")
        rc, err = run_recv(["--broker", url, "-u", "ground", "--password-file", bad, "--duration", "2",
                            "--format", "none"])
        lines = [x for x in err.splitlines() if "cannot connect to" in x]
        check(rc == 1 and len(lines) == 1 and "not authorised" in lines[0], "refusal said", err)
    finally:
        b.stop()
    print("--password-file, RAILMON_MQTT_PASSWORD, --password warned and blanked, refusal said: ok")


def test_logs_and_conflicts(tmp, b):
    data = os.path.join(tmp, "ground")
    out = os.path.join(tmp, "records.jsonl")
    a1, a2 = batch("tram7", ID_A, 1, 50), batch("tram7", ID_A, 51, 50, T0 + 10**9)
    b1 = batch("tram7", ID_B, 1, 30, T0 + 100 * 10**9)        # new card: seq from 1 again
    forged = batch("tram7", ID_A, 1, 50, salt=1000)           # A's range, other records
    legacy = batch("tram7", b"", 1, 20, T0 - 100 * 10**9)     # railmon before log ids
    last = batch("tram7", ID_A, 101, 10, T0 + 2 * 10**9)
    new_records = 50 + 50 + 30 + 20 + 10
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-logs", "--log", data,
              "-o", out, "--count", str(new_records)])
    r.wait_subscribed()
    topic = "railmon/tram7/data"
    publish(b.port, [(topic, m) for m in (a1, a2, b1, a1, a2 + b"\x38\x01", forged, legacy, last)])
    rc, err = r.finish()
    check(rc == 0, "rc %d" % rc, err)
    check(re.search(r"tram7 log a1a1a1a1: seq 1\.\.50 refused: conflict: .*; kept in ", err), "conflict said", err)
    check("1 Batches refused: 1 conflicts (50 records)" in err, "conflict in the summary", err)
    check("100 duplicates skipped" in err and "0 missing" in err, "re-sends silent duplicates", err)
    kept = os.listdir(os.path.join(data, "refused"))
    check(len(kept) == 1 and ".conflict." in kept[0], "one conflict kept", kept)
    with open(os.path.join(data, "refused", kept[0]), "rb") as f:
        check(f.read() == forged, "kept byte for byte")
    with open(out) as f:
        lines = f.read().splitlines()
    check(len(lines) == new_records, "%d records written" % len(lines))
    check(sum('"log_id":"%s"' % ID_B.hex() in x for x in lines) == 30, "log id in the JSON lines")
    check(os.path.isdir(os.path.join(data, "tram7", ID_A.hex())) and
          os.path.isdir(os.path.join(data, "tram7", ID_B.hex())), "a ground log per log id", os.listdir(data))
    recs, err = export(os.path.join(data, "tram7"))
    seqs = [x["seq"] for x in recs]
    check(seqs == list(range(1, 21)) + list(range(1, 111)) + list(range(1, 31)),
          "export gives every log, oldest first", seqs[:5], err)
    check(all(x["value"] == x["seq"] for x in recs), "the real records, not the forged ones")
    check("log 3 of 3" in err, "export says which log", err)
    print("new log stored apart, export in order, re-sends silent, conflict said and kept: ok")


def test_restart(tmp, b):
    """A restarted receiver forgets what it received; its ground log does
    not: a re-send of what it holds is no news, other records over what it
    holds are a conflict, kept."""
    data = os.path.join(tmp, "ground-restart")
    args = ["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-restart", "--log", data,
            "--format", "none"]
    a1, a2 = batch("tram3", ID_A, 1, 10), batch("tram3", ID_A, 11, 10)
    forged, a3 = batch("tram3", ID_A, 11, 10, salt=500), batch("tram3", ID_A, 21, 5)
    r = Recv(args + ["--count", "20"])
    r.wait_subscribed()
    publish(b.port, [("railmon/tram3/data", a1), ("railmon/tram3/data", a2)])
    rc, err = r.finish()
    check(rc == 0 and "ground logs: 2 Batches stored\n" in err, "first run", err)
    r = Recv(args + ["--count", "25"])
    r.wait_subscribed()
    publish(b.port, [("railmon/tram3/data", a1 + b"\x38\x01"), ("railmon/tram3/data", forged),
                     ("railmon/tram3/data", a3)])
    rc, err = r.finish()
    check(rc == 0 and "ground logs: 1 Batches stored, 1 received again that they held already; not stored: "
          "1 conflict-stored;" in err, "re-send known, conflict found in the ground log", err)
    check(re.search(r"tram3 log a1a1a1a1: seq 11\.\.20 not in the ground log: conflict: its ground log holds "
                    r"other records", err), "conflict said", err)
    kept = [f for f in os.listdir(os.path.join(data, "refused")) if ".conflict-stored." in f]
    check(len(kept) == 1, "kept", kept)
    recs, _ = export(os.path.join(data, "tram3"))
    check([x["seq"] for x in recs] == list(range(1, 26)) and all(x["value"] == x["seq"] for x in recs),
          "the ground log holds the first records, once")
    print("after a restart: a re-send is no news, other records are a conflict: ok")


def test_late_join(tmp, b):
    """A vehicle met at seq 5e9 (the ground joined late, or its log is new
    to the ground after an upgrade): its ground log starts there, no gap
    of 5e9 records to mark (a gap marker holds at most 2^32).  A gap over
    2^32 later on continues in a new ground log beside it."""
    data = os.path.join(tmp, "ground-late")
    first = 5_000_000_001
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-late", "--log", data,
              "--format", "none", "--count", "15"])
    r.wait_subscribed()
    far = first + 25 + (1 << 33)  # a gap no log frame can mark (over 2^32 records)
    publish(b.port, [("railmon/tram5/data", batch("tram5", ID_A, first, 10)),
                     ("railmon/tram5/data", batch("tram5", ID_A, first + 20, 5))])
    rc, err = r.finish()
    check(rc == 0 and "ground logs: 2 Batches stored\n" in err, "both stored", err)
    # Restarted, the receiver meets the vehicle again far ahead.
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-late", "--log", data,
              "--format", "none", "--count", "5"])
    r.wait_subscribed()
    publish(b.port, [("railmon/tram5/data", batch("tram5", ID_A, far, 5, T0 + 10**9))])
    rc, err = r.finish()
    check(rc == 0 and "continuing in %s/tram5/%s.from-%d" % (data, ID_A.hex(), far) in err, "said", err)
    # Restarted again, it goes on in that continuation.
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-late", "--log", data,
              "--format", "none", "--count", "5"])
    r.wait_subscribed()
    publish(b.port, [("railmon/tram5/data", batch("tram5", ID_A, far + 5, 5, T0 + 2 * 10**9))])
    rc, err = r.finish()
    check(rc == 0 and "continuing" not in err and "ground logs: 1 Batches stored\n" in err, "went on", err)
    check(sorted(os.listdir(os.path.join(data, "tram5"))) == [ID_A.hex(), "%s.from-%d" % (ID_A.hex(), far)],
          "two ground logs", os.listdir(os.path.join(data, "tram5")))
    recs, _ = export(os.path.join(data, "tram5"))
    check([x["seq"] for x in recs] == list(range(first, first + 10)) + list(range(first + 20, first + 25)) +
          list(range(far, far + 10)), "the ground log from seq 5e9, then beyond the big gap",
          [x["seq"] for x in recs][:3])
    print("a vehicle met at seq 5e9, and a gap over 2^32: all stored: ok")


def test_too_big(tmp, b):
    data = os.path.join(tmp, "ground-big")
    big = big_batch(railmon_pb2, "tram9", ID_A, 1, 20000, T0)
    check(len(big) > 1 << 20, "the Batch is over 1 MiB")
    last = batch("tram9", ID_A, 20001, 5)
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-big", "--log", data,
              "--format", "none", "--count", "20005"])
    r.wait_subscribed()
    publish(b.port, [("railmon/tram9/data", big), ("railmon/tram9/data", last)])
    rc, err = r.finish()
    check(rc == 0, "rc %d" % rc, err)
    check(re.search(r"tram9 log a1a1a1a1: seq 1\.\.20000 not in the ground log: over 1 MiB.*kept in ", err), "said", err)
    check(re.search(r"ground logs: 1 Batches stored; not stored: 1 too-big;", err), "summary", err)
    recs, _ = export(os.path.join(data, "tram9"))
    check([x["seq"] for x in recs] == list(range(20001, 20006)), "the ground log holds only what it took")
    print("Batch over 1 MiB: said, kept, not claimed as stored: ok")


def test_many_vehicles(tmp, b):
    msgs = [("railmon/v%03d/data" % i, batch("v%03d" % i, ID_A, 1, 1)) for i in range(300)]
    marker = ("railmon/v000/data", batch("v000", ID_A, 2, 1))
    data = os.path.join(tmp, "ground-many")
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-many", "--log", data,
              "--format", "none", "--count", "301"])
    r.wait_subscribed()
    publish(b.port, msgs + [marker])
    rc, err = r.finish()
    check(rc == 0 and "300 vehicles" in err and "ground logs: 301 Batches stored\n" in err, "300 vehicles", err)
    stored = [v for v in os.listdir(data) if os.path.isdir(os.path.join(data, v, ID_A.hex()))]
    check(len(stored) == 300, "%d ground logs" % len(stored))

    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-capped",
              "--max-vehicles", "250", "--format", "none", "--count", "251"])
    r.wait_subscribed()
    publish(b.port, msgs + [marker])
    rc, err = r.finish()
    check(rc == 0 and "250 vehicles" in err, "250 kept", err)
    check("50 from vehicles past --max-vehicles" in err, "refusals in the summary", err)
    check(err.count("refused: a new vehicle past --max-vehicles") == 20, "the first 20 said one by one", err)
    print("300 vehicles all logged; past --max-vehicles refused, counted, said: ok")


def mixed_batches(vehicle, log_id):
    """Three Batches of every kind of record, the first with a channel
    dictionary whose names need escaping; the third sent again as backlog
    (historical).  Returns [(payload, first_seq, count, historical)]."""
    out, seq = [], 1
    for k in range(3):
        b = railmon_pb2.Batch(schema_version=1, first_seq=seq, vehicle=vehicle, t0_ns=T0 + k * 10**9,
                              log_id=log_id)
        if k == 0:
            for cid, name, unit in ((7, 'line "voltage", main', "V"), (8, "speed\nkm/h", "km/h"),
                                    (1 << 16 | 3, "door", "")):
                b.channels.add(id=cid, name=name, unit=unit, bus=cid >> 16, source="test")
            # the dictionary's range, value table and bus name (fields 6-8)
            b.channels[0].range.extend([0, 2000])
            b.channels[0].value_table.extend(["1499.3 nominal, \"ok\"", "0 off"])
            b.channels[2].bus_name = "doors"
        if k == 2:
            b.health.add(name='hvac "rear"\n', kind="modbus", bus=1, items=5)
        frames = ((0x123, 0, b"\x01\xab\xff"), (0x1abcdef, 1, b""), (0x7ff, 2 | 4, bytes(range(12))),
                  (0x100, 16, b"\0\0"), (0x4, 32 | 1, b"\0" * 8), (0x55, 64, b"\x55"))
        for i, (ident, flags, data) in enumerate(frames):
            b.can.t_delta_ns.append(i * 1000)
            b.can.bus.append(i % 2)
            b.can.id.append(ident)
            b.can.flags.append(flags)
            b.can.len.append(len(data))
            b.can.data += data
        samples = ((7, 1499.3, 0), (8, -0.1, 1), (9, float("nan"), 2), (7, float("inf"), 7),
                   (1 << 16 | 3, 1e-300, 0), (8, 123456789.123456789, 0))
        for i, (ch, v, q) in enumerate(samples):
            b.samples.t_delta_ns.append(500 if i else -500)
            b.samples.channel.append(ch)
            b.samples.value.append(v)
            b.samples.quality.append(q)
        for i, (code, arg) in enumerate(((1, 4242), (18, -19), (999, 5))):
            b.events.t_delta_ns.append(i)
            b.events.source.append(65535 if i == 0 else 1)
            b.events.code.append(code)
            b.events.arg.append(arg)
            b.events.detail.append(i)
        n = len(frames) + len(samples) + 3
        out.append((b.SerializeToString(), seq, n, False))
        seq += n
    # the last one again, as the forwarder re-sends backlog: a duplicate,
    # written by neither
    out.append((out[-1][0] + b"\x38\x01", out[-1][1], out[-1][2], True))
    return out


def csv_field(v):
    return '"%s"' % v.replace('"', '""') if any(c in v for c in ',"\r\n') else v


def text_lines(text, csv):
    """The records of export's output, each with its line end: a CSV
    field in quotes may hold a line break."""
    out, start, quoted = [], 0, False
    for i, c in enumerate(text):
        if c == '"' and csv:
            quoted = not quoted
        elif c == "\n" and not quoted:
            out.append(text[start:i + 1])
            start = i + 1
    check(start == len(text), "output ends with a line end")
    return out


def test_same_as_export(tmp, b):
    vehicle = 'tram-7.car_2'  # the name rule (basic/name.h): no quotes, commas or blanks
    batches = mixed_batches(vehicle, ID_A)
    nrec = sum(n for _, _, n, hist in batches if not hist)
    for fmt in ("jsonl", "csv", "candump"):
        data, out = os.path.join(tmp, "same-" + fmt), os.path.join(tmp, "same." + fmt)
        r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-same-" + fmt, "--log", data,
                  "-o", out, "--format", fmt, "--count", str(nrec)])
        r.wait_subscribed()
        publish(b.port, [("railmon/%s/data" % vehicle, m) for m, _, _, _ in batches])
        rc, err = r.finish()
        check(rc == 0 and "1 Batches not stored" not in err, "recv rc %d" % rc, err)
        exp = subprocess.run([RAILMON, "export", "--data", os.path.join(data, vehicle), "--format", fmt],
                             capture_output=True, timeout=60)
        check(exp.returncode == 0, "export failed", exp.stderr)
        with open(out, "rb") as f:
            got = f.read()
        lines = text_lines(exp.stdout.decode(), fmt == "csv")
        check(len(lines) == nrec + (fmt == "csv") or fmt == "candump", "export gives every record", lines[:3])
        check(got == exp.stdout, "recv --format %s is export's output byte for byte" % fmt,
              got.decode()[:600], exp.stdout.decode()[:600])
        if fmt == "jsonl":
            rows = [json.loads(x) for x in lines]
            check(all(list(r) == SCHEMA for r in rows), "every JSON line has the schema's keys in order", rows[0])
            check([r["time_ns"] for r in rows] == sorted(r["time_ns"] for r in rows), "records in time order")
            check(all(r["vehicle"] == vehicle and r["log_id"] == ID_A.hex() for r in rows), "origin in each")
            check({r["value"] for r in rows if r["channel"] == 7} == {1499.3, None} and
                  {r["value"] for r in rows if r["channel"] == 8} == {-0.1, 123456789.12345679},
                  "values in the shortest form that reads back", rows)
            check({(r["can_id"], r["flags"]) for r in rows if r["kind"] == "can"} >=
                  {("123", ""), ("01ABCDEF", "EXT"), ("7FF", "FD|BRS"), ("055", "TX")}, "CAN ids and flags", rows)
            check({r["event"] for r in rows if r["kind"] == "event"} == {"START", "CAN_GONE", "999"}, "events")
            check({r["label"] for r in rows if r["channel"] == 7} == {'nominal, "ok"', None}, "value-table label",
                  [r for r in rows if r["channel"] == 7])
            check({r["bus_name"] for r in rows if r["bus"] == 1} == {"doors"} and
                  {r["bus_name"] for r in rows if r["bus"] == 0} == {None}, "bus names from the dictionary")
        if fmt == "csv":
            check(lines[0] == ",".join(SCHEMA) + "\n", "the CSV header is the schema", lines[0])
        side = "\n".join("  export: %s  recv:   %s" % (a, b) for a, b in
                         zip(lines[1:3] if fmt == "csv" else lines[:2], text_lines(got.decode(), fmt == "csv")[1:3]
                             if fmt == "csv" else text_lines(got.decode(), False)[:2]))
        print("recv --format %s: %d lines, byte for byte export's:\n%s" % (fmt, len(lines), side), end="")
        print()
    st = subprocess.run([RAILMON, "stat", "--data", os.path.join(tmp, "same-jsonl", vehicle, ID_A.hex()), "--json"],
                        capture_output=True, text=True, timeout=30)
    rows = [json.loads(x) for x in st.stdout.splitlines()]
    check(st.returncode == 0 and [h["name"] for h in rows] == ['hvac "rear"\n'], "stat --json escapes names",
          st.stdout, st.stderr)
    print("recv and export: one formatter; stat --json escapes names: ok")


def overlapping_batches(vehicle, log_id, t0, n=4):
    """n Batches of 5 CAN frames, 5 samples and 2 events each, as the
    collector makes them: in a Batch, each kind is in time order, and the
    next Batch's frames start before this one's samples and events end
    (by 300 ms), so seq order steps back in time across Batches."""
    out, seq = [], 1
    for k in range(n):
        b = railmon_pb2.Batch(schema_version=1, first_seq=seq, vehicle=vehicle, t0_ns=t0 + k * 500 * 10**6,
                              log_id=log_id)
        for i in range(5):
            b.can.t_delta_ns.append(100 * 10**6 if i else 0)
            b.can.bus.append(0)
            b.can.id.append(0x100 + i)
            b.can.flags.append(0)
            b.can.len.append(1)
            b.can.data += bytes([k])
        for i in range(5):
            b.samples.t_delta_ns.append(200 * 10**6 if i == 0 else 150 * 10**6)
            b.samples.channel.append(7)
            b.samples.value.append(float(seq + 5 + i))
        for i in range(2):
            b.events.t_delta_ns.append(700 * 10**6 if i == 0 else 1)
            b.events.source.append(0)
            b.events.code.append(25)
            b.events.arg.append(k)
            b.events.detail.append(i)
        out.append(b.SerializeToString())
        seq += 12
    return out, seq - 1


def recv_records(b, tmp, name, msgs, nrec, extra):
    out = os.path.join(tmp, name + ".jsonl")
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-" + name, "-o", out,
              "--count", str(nrec)] + extra)
    r.wait_subscribed()
    publish(b.port, msgs)
    rc, err = r.finish()
    check(rc == 0, "recv rc %d" % rc, err)
    with open(out) as f:
        return [json.loads(x) for x in f], err


def test_order_across_batches(tmp, b):
    """recv puts each vehicle log's records in time order across Batches
    (over --window), two vehicles' Batches interleaved, one an hour behind
    (a backlog) without being late against the other; --order seq keeps
    arrival order; a window too short for the overlap says what came late."""
    va, na = overlapping_batches("order-a", ID_A, T0)
    vb, nb = overlapping_batches("order-b", ID_B, T0 - 3600 * 10**9)
    msgs = [m for pair in zip(va, vb) for m in (("railmon/order-a/data", pair[0]), ("railmon/order-b/data", pair[1]))]
    rows, err = recv_records(b, tmp, "order-time", msgs, na + nb, ["--format", "jsonl"])
    check(len(rows) == na + nb, "every record written", len(rows))
    for v, n in (("order-a", na), ("order-b", nb)):
        mine = [r for r in rows if r["vehicle"] == v]
        check(sorted(r["seq"] for r in mine) == list(range(1, n + 1)), "every record of %s once" % v)
        t = [r["time_ns"] for r in mine]
        check(t == sorted(t), "%s in time order across its Batches" % v, t)
    check("came out late" not in err, "nothing late with the default window", err)
    seq_rows, _ = recv_records(b, tmp, "order-seq", msgs, na + nb, ["--format", "jsonl", "--order", "seq"])
    mine = [r for r in seq_rows if r["vehicle"] == "order-a"]
    check([r["seq"] for r in mine] == list(range(1, na + 1)), "--order seq: arrival (seq) order")
    back = sum(1 for x, y in zip(mine, mine[1:]) if y["time_ns"] < x["time_ns"])
    check(back > 0, "--order seq keeps the steps back in time", [r["time_ns"] for r in mine])
    # a window shorter than the Batches' overlap: records late, counted and said
    short, err = recv_records(b, tmp, "order-short", msgs, na + nb, ["--format", "jsonl", "--window", "10ms"])
    m = re.search(r"(\d+) records were more than the window \(--window 0.01s\) out of time order", err)
    check(m and int(m.group(1)) > 0, "--window 10ms: the late records counted and said", err)
    check(sorted((r["vehicle"], r["seq"]) for r in short) == sorted((r["vehicle"], r["seq"]) for r in rows),
          "late records are written all the same")
    print("recv: each log in time order across %d interleaved Batches (one vehicle an hour behind), --order seq "
          "steps back %d times, --window 10ms: %s late records said: ok" % (len(msgs), back, m.group(1)))


def test_order_quiet_log(tmp, b):
    """A log's held records go out once it has been quiet for the window,
    while recv runs (not only at its end)."""
    msgs, n = overlapping_batches("order-quiet", ID_A, T0, n=2)
    out = os.path.join(tmp, "quiet.jsonl")
    r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "--client-id", "ground-quiet", "-o", out,
              "--window", "1s", "--duration", "60"])
    try:
        r.wait_subscribed()
        publish(b.port, [("railmon/order-quiet/data", m) for m in msgs])
        t = time.monotonic()
        got = 0
        while time.monotonic() - t < 30 and got < n:
            with open(out) as f:
                got = sum(1 for _ in f)
            time.sleep(0.1)
        waited = time.monotonic() - t
        check(got == n, "the quiet log's records written while recv runs (%d of %d)" % (got, n))
        check(r.proc.poll() is None, "recv still running")
    finally:
        rc, err = r.terminate()
    check(rc == 0, "recv rc %d" % rc, err)
    print("recv: a log quiet for --window 1s written while recv runs, after %.1f s: ok" % waited)


def test_acl(tmp):
    pwfile = os.path.join(tmp, "acl-passwd")
    for i, (user, pw) in enumerate((("ground", "g-pw"), ("tram7", "t7-pw"))):
        subprocess.run(["mosquitto_passwd", "-b"] + (["-c"] if i == 0 else []) + [pwfile, user, pw], check=True)
    b = Broker(tmp=tmp, extra="allow_anonymous false\npassword_file %s\nacl_file %s\n" % (pwfile, ACL_FILE))
    try:
        out = os.path.join(tmp, "acl.jsonl")
        r = Recv(["--broker", "mqtt://127.0.0.1:%d" % b.port, "-u", "ground", "--client-id", "ground-acl", "-o", out,
                  "--count", "15"], env={"RAILMON_MQTT_PASSWORD": "g-pw"})
        # the vehicle's retained dictionary names channel 7 for the ground
        d = railmon_pb2.Batch(schema_version=1, first_seq=1, vehicle="tram7", t0_ns=T0, log_id=ID_A)
        d.channels.add(id=7, name="line_voltage", unit="V", bus=0, source="test")
        publish(b.port, [("railmon/tram7/channels", d.SerializeToString())], user="tram7", password="t7-pw",
                retain=True)
        r.wait_subscribed()
        publish(b.port, [("railmon/tram7/data", batch("tram7", ID_A, 1, 10)),
                         ("railmon/tram8/data", batch("tram8", ID_A, 1, 10)),   # not its topic: dropped
                         ("railmon/tram7/data", batch("tram7", ID_A, 11, 5))], user="tram7",
                password="t7-pw")
        rc, err = r.finish()
        with open(out) as f:
            lines = f.read().splitlines()
        check(rc == 0 and "1 vehicles" in err, "only tram7 arrived", err)
        check(len(lines) == 15 and all('"vehicle":"tram7"' in x for x in lines), "tram7's records only")
        check(all('line_voltage' in x for x in lines), "the dictionary passed the ACL: channel 7 named", lines[:2])
    finally:
        b.stop()
    print("ACL example: a vehicle cannot publish for another: ok")


def recv_on_pty(args, nrec, port, msgs):
    """recv with stderr on a pseudo-terminal (no \\n -> \\r\\n): once it
    says it subscribed, msgs are published; (exit code, stderr bytes)."""
    m, s = pty.openpty()
    attrs = termios.tcgetattr(s)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(s, termios.TCSANOW, attrs)
    # --duration: a bound, should the records never come (then the checks say so)
    proc = start_peer([RAILMON, "recv"] + args + ["--count", str(nrec), "--duration", "30"], stdout=subprocess.DEVNULL,
                      stderr=s)
    os.close(s)
    got, published = b"", False
    while True:
        try:
            b = os.read(m, 65536)
        except OSError:  # EIO: recv exited, the pty's last holder
            break
        if not b:
            break
        got += b
        if not published and b"subscribed to" in got:
            publish(port, msgs)
            published = True
    os.close(m)
    return proc.wait(30), got


def test_progress(tmp, b):
    """Under a terminal recv draws "recv: N of COUNT records (P%), R
    records/s, T left", cleared before its summary; --quiet draws nothing."""
    msgs = [("railmon/tram9/data", batch("tram9", ID_A, 1 + 40 * i, 40, T0 + i * 10**9)) for i in range(5)]
    base = ["--broker", "mqtt://127.0.0.1:%d" % b.port, "--format", "none"]
    rc, err = recv_on_pty(base + ["--client-id", "ground-progress"], 200, b.port, msgs)
    bar = list(re.finditer(rb"\rrecv: (\d+) of 200 records \((\d+)%\), \d+ records/s, \d+:\d\d:\d\d left\x1b\[K", err))
    check(rc == 0 and bar, "a progress line under a terminal", err.decode(errors="replace"))
    after = err[bar[-1].end():]
    check(after.startswith(b"\r\x1b[K") and b"railmon recv: " in after, "the line cleared before the summary",
          err.decode(errors="replace"))
    check(err.find(b"subscribed to") < bar[0].start(), "no progress before the subscription", err)
    msgs = [("railmon/tram8/data", batch("tram8", ID_A, 1 + 40 * i, 40, T0 + i * 10**9)) for i in range(5)]
    rc, err = recv_on_pty(base + ["--client-id", "ground-progress-q", "-q"], 200, b.port, msgs)
    check(rc == 0 and b"\r" not in err and b"\x1b" not in err, "--quiet: no progress bytes", err)
    rc, err = run_recv(base + ["--client-id", "ground-progress-p", "--duration", "0.5"])
    check("\r" not in err and "\x1b" not in err, "no progress without a terminal", err)
    print(f"progress under a pty ({len(bar)} draws, cleared), none with --quiet or without a terminal: ok")


def main():
    tmp = tempfile.mkdtemp(prefix="railmon-recv-cli-")
    b = None
    try:
        test_cannot_connect()
        test_tls(tmp)
        test_option_words(tmp)
        test_password(tmp)
        b = Broker(tmp=tmp)
        test_logs_and_conflicts(tmp, b)
        test_restart(tmp, b)
        test_late_join(tmp, b)
        test_too_big(tmp, b)
        test_many_vehicles(tmp, b)
        test_same_as_export(tmp, b)
        test_order_across_batches(tmp, b)
        test_order_quiet_log(tmp, b)
        test_progress(tmp, b)
        test_acl(tmp)
    finally:
        stop_peers(signal.SIGKILL)
        mqtt_peers.cleanup()  # the receivers' working directories
        if not os.environ.get("RAILMON_KEEP_TMP"):
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
