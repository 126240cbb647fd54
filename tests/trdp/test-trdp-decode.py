#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""railmon run decodes TRDP process data into channels: trdp_pub.py's
headers around payloads the independent encoder (trdp_dataset.py: struct
'>' from the specification) writes for every telegram of all-types.xml,
sent over loopback UDP (no root) to `railmon run`; export's samples and
texts, matched to their telegram by its receive time, must equal the
encoder's values (names, numbers after scale and offset, texts).  Then a
replay of the log decodes the same samples again.  PD supervision: a
silence of AllTypes past its XML timeout gives TRDP_TIMEOUT (waited for),
its return TRDP_BACK; every telegram's events must be those its receive
times give (timeout: the XML's, else 3 cycles), in the replay too.

    test-trdp-decode.py RAILMON SRCDIR [capture]

capture: the bus has receive = capture on lo (the packet ring, root): the
same values, events and replay, the telegrams read through the ring.
"""
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trdp_dataset  # noqa: E402
import trdp_pub  # noqa: E402
from trdp_dataset import same_number  # noqa: E402

ACQ_TEXT_MAX = 64  # acquisition/acq-item.h: a text item's bytes
DYN_CHANNELS = 16  # pipeline/channels.c: a variable array's items with a channel
PER_COMID = 4
VAR_ONLY = 103     # all-types.xml's Var: every array in it variable


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def export(railmon, log):
    r = subprocess.run([railmon, "export", "--data", log, "--format", "jsonl"], capture_output=True, text=True)
    return [json.loads(x) for x in r.stdout.splitlines()] if r.returncode == 0 else []


def wait_for(what, cond, timeout_s=30.0):
    """Until cond() is true (polled, not a fixed sleep), or fail naming what."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what)


def text_item(text):
    """The text as a text item keeps it (acquisition/acq-item.h: printable
    ASCII only): each other character one '?', at most ACQ_TEXT_MAX; and
    whether it is the text sent (quality good)."""
    kept = "".join(c if 0x20 <= ord(c) <= 0x7E else "?" for c in text)
    return kept[:ACQ_TEXT_MAX], kept == text and len(text) <= ACQ_TEXT_MAX


def close(a, b):
    """export writes a value with its channel's decimals (the scale's): the
    same number, or the same to 1e-9 of it."""
    return same_number(a, b) or abs(a - b) <= 1e-9 * max(1.0, abs(b))


def com_id_of(rec):
    return int(rec["data"][16:24], 16)


def by_telegram(lines):
    """{ComId: [{name: record}, ...]} in receive order: the samples and texts
    of each telegram, which carry its receive time."""
    values = {}
    for x in lines:
        if x["kind"] in ("sample", "text"):
            values.setdefault(x["time_ns"], {})[x["name"]] = x
    out = {}
    for x in sorted((x for x in lines if x["kind"] == "trdp"), key=lambda x: x["seq"]):
        out.setdefault(com_id_of(x), []).append(values.get(x["time_ns"], {}))
    return out


def compare(sent, got):
    """sent: {ComId: [want list]}; got: by_telegram(). Mismatches as text."""
    bad, n = [], 0
    for comid, wants in sent.items():
        tels = got.get(comid, [])
        if len(tels) != len(wants):
            bad.append("ComId %d: %d telegrams decoded, %d sent" % (comid, len(tels), len(wants)))
            continue
        for k, (want, have) in enumerate(zip(wants, tels)):
            names = {w.name for w in want}
            extra = set(have) - names
            if extra:
                bad.append("ComId %d #%d: channels not sent: %s" % (comid, k, sorted(extra)))
            for w in want:
                x = have.get(w.name)
                ctx = "ComId %d #%d %r" % (comid, k, w)
                n += 1
                if x is None:
                    bad.append(ctx + ": not decoded")
                elif w.text is not None:
                    text, whole = text_item(w.text)
                    if x["kind"] != "text" or x["label"] != text or x["quality"] != ("good" if whole else "invalid"):
                        bad.append(ctx + ": got %s %r %s" % (x["kind"], x["label"], x["quality"]))
                elif math.isnan(w.value):
                    # not a number: the sample is invalid
                    if x["value"] is not None or x["quality"] != "invalid":
                        bad.append(ctx + ": got %r %s" % (x["value"], x["quality"]))
                elif math.isinf(w.value):
                    # JSON has no infinity: export writes null, the sample is good
                    if x["kind"] != "sample" or x["value"] is not None or x["quality"] != "good":
                        bad.append(ctx + ": got %r %s" % (x["value"], x["quality"]))
                elif x["kind"] != "sample" or x["value"] is None or not close(float(x["value"]), w.value):
                    bad.append(ctx + ": got %r" % (x.get("value"),))
    return bad, n


def timeouts(xml):
    """{ComId: timeout ns} of the PD telegrams: the XML's, else 3 cycles."""
    out = {}
    for t in ET.parse(xml).getroot().iter("telegram"):
        pd = t.find("pd-parameter")
        comid = int(t.get("com-id"))
        if pd is None or comid in out:
            continue
        us = int(pd.get("timeout", "0")) or 3 * int(pd.get("cycle", "0"))
        if us:
            out[comid] = us * 1000
    return out


def supervision(lines, tmo):
    """The TRDP_TIMEOUT and TRDP_BACK events the telegrams' receive times
    give, and those a silence after the bus's last telegram may give (a
    live tick's only)."""
    times = {}
    # any telegram of the bus shows the silence of the others by its time
    last_any = max(x["time_ns"] for x in lines if x["kind"] == "trdp")
    for x in lines:
        if x["kind"] == "trdp" and com_id_of(x) in tmo:
            times.setdefault(com_id_of(x), []).append(x["time_ns"])
    want, tail = set(), set()
    for comid, ts in times.items():
        ts.sort()
        t = tmo[comid]
        for a, b in zip(ts, ts[1:]):
            if b - a > t:
                want.add((a + t, "TRDP_TIMEOUT", t // 1000000, comid))
                want.add((b, "TRDP_BACK", (b - a) // 1000000, comid))
        (want if last_any - ts[-1] > t else tail).add((ts[-1] + t, "TRDP_TIMEOUT", t // 1000000, comid))
    return want, tail


def event_list(lines):
    return sorted((x["time_ns"], x["event"], x["arg"], x["detail"]) for x in lines
                  if x["kind"] == "event" and x["event"] in ("TRDP_TIMEOUT", "TRDP_BACK"))


def events_of(lines):
    return set(event_list(lines))


def main():
    railmon, srcdir = sys.argv[1], sys.argv[2]
    capture = sys.argv[3:] == ["capture"]
    if capture and os.geteuid() != 0:
        print("capture: needs root (CAP_NET_RAW; CI runs as root)")
        return 77
    seed = int(os.environ.get("SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    tmp = tempfile.mkdtemp(prefix="trdp-decode-")
    rm = None
    try:
        xml = os.path.join(tmp, "consist.xml")
        shutil.copy(os.path.join(srcdir, "all-types.xml"), xml)
        cfg = trdp_dataset.Config(xml)
        port = free_port()
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = t1\n[storage]\ndir = log\n[trdp ecn]\nbind = 127.0.0.1\n"
                    "pd_port = %d\nmd_port = 0\nxml = consist.xml\n%s" % (
                        port, "interface = lo\nreceive = capture\n" if capture else ""))
        log = os.path.join(tmp, "log")
        rm = subprocess.Popen([railmon, "run", "--board", board, "--data", log],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        seq = [0]

        def send(comid, payload):
            s.sendto(trdp_pub.pd_header(seq[0], comid, len(payload)) + trdp_pub.pad4(payload, b"\xa5"),
                     ("127.0.0.1", port))
            seq[0] += 1

        # Ping (no data set) until one is logged: then the socket is bound
        def pinged():
            send(106, b"")
            return any(x["kind"] == "trdp" for x in export(railmon, log))
        wait_for("railmon run to log a telegram", pinged)
        if capture:
            # received through the ring: railmon holds a packet socket
            # (its inode among /proc/net/packet's)
            inodes = {x.split()[-1] for x in open("/proc/net/packet").read().splitlines()[1:]}
            fds = os.listdir("/proc/%d/fd" % rm.pid)
            held = {os.readlink("/proc/%d/fd/%s" % (rm.pid, fd)) for fd in fds}
            if not {"socket:[%s]" % i for i in inodes} & held:
                raise SystemExit("capture: railmon holds no packet socket")
        comids = sorted(cfg.telegrams)  # those with a data set
        sent = {}
        for k in range(PER_COMID):
            for comid in comids:
                # the last Var has arrays longer than their channels: the
                # items past them are decoded but not kept (counted)
                long_var = comid == VAR_ONLY and k == PER_COMID - 1
                payload, want = cfg.encode(comid, rng, var_max=DYN_CHANNELS + 6 if long_var else 5)
                if long_var:
                    want = [w for w in want if not re.search(r"\[(\d+)\]$", w.name)
                            or int(re.search(r"\[(\d+)\]$", w.name).group(1)) < DYN_CHANNELS]
                send(comid, payload)
                sent.setdefault(comid, []).append(want)
        total = sum(len(v) for v in sent.values())
        wait_for("the %d telegrams logged" % total,
                 lambda: sum(1 for x in export(railmon, log) if x["kind"] == "trdp" and com_id_of(x) != 106) >= total)
        # silence: AllTypes (timeout 300 ms) times out, then it is back
        wait_for("TRDP_TIMEOUT of ComId 100", lambda: any(
            x["kind"] == "event" and x["event"] == "TRDP_TIMEOUT" and x["detail"] == 100
            for x in export(railmon, log)))
        payload, want = cfg.encode(100, rng)
        send(100, payload)
        sent[100].append(want)
        total += 1
        wait_for("TRDP_BACK of ComId 100", lambda: any(
            x["kind"] == "event" and x["event"] == "TRDP_BACK" and x["detail"] == 100
            for x in export(railmon, log)))
        rm.send_signal(signal.SIGTERM)
        out, _ = rm.communicate(timeout=30)
        code, rm = rm.returncode, None
        if code != 0:
            raise SystemExit("railmon run exited %d:\n%s" % (code, out[-3000:]))
        # run says it in words
        said = r"railmon run: bus 'ecn' \(trdp UDP %d( on lo)?\): no telegram of ComId (100|101|104) within its " \
               r"timeout of (300|60|5) ms: its channels are stale" % port
        if not re.search(said, out):
            raise SystemExit("railmon run did not say %r:\n%s" % (said, out[-3000:]))
        lines = export(railmon, log)
        log2 = os.path.join(tmp, "replayed")
        r = subprocess.run([railmon, "replay", log, "--board", board, "--data", log2], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("replay exited %d:\n%s%s" % (r.returncode, r.stdout, r.stderr))
        replayed = export(railmon, log2)
    finally:
        if rm:
            rm.kill()
            rm.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    bad, n = compare(sent, by_telegram(lines))
    keys = ("time_ns", "kind", "name", "value", "quality", "label")
    live = [tuple(x.get(k) for k in keys) for x in lines if x["kind"] in ("sample", "text")]
    again = [tuple(x.get(k) for k in keys) for x in replayed if x["kind"] in ("sample", "text")]
    if sorted(live, key=repr) != sorted(again, key=repr):
        bad.append("replay: %d samples and texts, the live log %d, or different ones" % (len(again), len(live)))
    tmo = timeouts(os.path.join(srcdir, "all-types.xml"))
    want, tail = supervision(lines, tmo)
    got = events_of(lines)
    if not want <= got or got - want - tail:
        bad.append("live events: missing %s, not wanted %s" % (sorted(want - got), sorted(got - want - tail)))
    if not [e for e in want if e[1] == "TRDP_BACK" and e[3] == 100]:
        bad.append("no TRDP_BACK of ComId 100 in %s" % sorted(got))
    # each once: decoded again from the telegrams' times, not also copied
    if len(event_list(lines)) != len(got):
        bad.append("live events twice: %s" % event_list(lines))
    if event_list(replayed) != sorted(want):
        bad.append("replay events: %s, want %s" % (event_list(replayed), sorted(want)))
    for b in bad[:30]:
        print(b)
    if bad:
        print("SEED=%d: %d mismatches" % (seed, len(bad)))
        return 1
    print("SEED=%d: %d telegrams of %d ComIds, %d values decoded equal to the Python encoder's; "
          "replay decoded the same %d samples and texts; %d TRDP_TIMEOUT/BACK events as the receive times "
          "give, live and replayed" % (seed, total, len(sent), n, len(again), len(want)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
