#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""MD over TCP whose stream ends mid-telegram or in its padding: the live
bus (railmon run on loopback, no root, fed by trdp_pub.py --tcp --cut) and
a replay of a capture of the same bytes (written here byte by byte with
test-trdp-capture-file.py's writers: one TCP connection per case, the same
addresses, ports and segments) must give the same records (every field but
the receive time) and the same counts (stat --json).  The cases, each two
whole messages and then the first N bytes of a third:

  mid-header       24-byte data set, 50 bytes of 140: short
  mid-data-set     24-byte data set, 130 of 140: truncated
  in the padding   22-byte data set (padded to 24), 139 of 140: truncated
                   (the framing says 140: the reference stack drops it too)
  before padding   22-byte data set, 138 of 140: truncated

and a fifth connection whose third message has a bad header FCS: live
records its 116 header bytes refused and closes; the capture (the whole
message captured) must record the same 116 bytes and pass over the rest.
The replay counts the connections as the listener does (tcp_accepted,
tcp_closed: 5; live 6 with the probe that saw it listen).

    test-trdp-tcp-end.py RAILMON
"""
import importlib.util
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from railmon_test import wait_for  # noqa: E402

_spec = importlib.util.spec_from_file_location("capfile", os.path.join(HERE, "test-trdp-capture-file.py"))
capfile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(capfile)
SYN, ACK, PSH, FIN = capfile.SYN, capfile.ACK, capfile.PSH, capfile.FIN

CASES = [("mid-header", 3001, 24, 50), ("mid-data-set", 3002, 24, 130), ("in the padding", 3003, 22, 139),
         ("before padding", 3004, 22, 138)]
RESULT = {"short": 1, "truncated": 6}
WANT_RESULT = [RESULT["short"], RESULT["truncated"], RESULT["truncated"], RESULT["truncated"]]
COUNTS = ("telegrams", "bytes", "bad_short", "bad_truncated", "bad_fcs", "tcp_cut", "tcp_messages", "tcp_bad_header",
          "seq_gaps",
          "seq_repeats", "seq_back", "topology_changes", "bad_input", "unknown_comid")


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port



def stat_row(railmon, log):
    r = subprocess.run([railmon, "stat", "--data", log, "--json"], capture_output=True, text=True)
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return next((x for x in rows if x.get("kind") == "trdp"), {})


def records(railmon, log):
    r = subprocess.run([railmon, "export", "--data", log, "--format", "jsonl"], capture_output=True, text=True,
                       check=True)
    skip = ("time_ns", "time", "seq", "log_id", "vehicle")
    return sorted(json.dumps({k: v for k, v in x.items() if k not in skip}, sort_keys=True)
                  for x in map(json.loads, r.stdout.splitlines()) if x["kind"] == "trdp")


def main():
    railmon = sys.argv[1]
    pub = os.path.join(HERE, "trdp_pub.py")
    tmp = tempfile.mkdtemp(prefix="trdp-tcp-end-")
    rm = None
    bad = []
    try:
        md_port = free_port()
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = t1\nhealth_interval_s = 1\n[storage]\ndir = log\n[trdp ecn]\n"
                    "bind = 127.0.0.1\npd_port = 0\nmd_port = %d\n" % md_port)
        log = os.path.join(tmp, "log")
        rm = subprocess.Popen([railmon, "run", "--board", board, "--data", log],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def listening():
            try:
                socket.create_connection(("127.0.0.1", md_port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for("railmon run to listen on the MD port", listening, 60)
        sent = []
        for name, com_id, size, cut in CASES:
            md_log = os.path.join(tmp, "md-%d.jsonl" % com_id)
            subprocess.run([sys.executable, pub, "md", "--tcp", "--dest", "127.0.0.1", "--port", str(md_port),
                            "--com-id", str(com_id), "--size", str(size), "--count", "2", "--cycle-ms", "1",
                            "--cut", str(cut), "--log", md_log], check=True)
            with open(md_log) as f:
                sent.append([json.loads(x) for x in f])
        md_log = os.path.join(tmp, "md-bad.jsonl")
        subprocess.run([sys.executable, pub, "md", "--tcp", "--dest", "127.0.0.1", "--port", str(md_port),
                        "--com-id", "3005", "--size", "24", "--count", "3", "--cycle-ms", "1", "--bad-fcs", "3",
                        "--log", md_log], check=True)
        with open(md_log) as f:
            sent_bad = [json.loads(x) for x in f]
        # the probe connection above (no bytes) counts nothing but itself
        n = sum(len(s) for s in sent) + len(sent_bad)
        wait_for("the live bus to count the %d telegrams and %d cuts" % (n, len(CASES)),
                 lambda: (lambda r: r.get("telegrams") == n and r.get("tcp_cut") == len(CASES))(
                     stat_row(railmon, log)), 60)
        rm.send_signal(signal.SIGTERM)
        out, _ = rm.communicate(timeout=30)
        code, rm = rm.returncode, None
        if code != 0:
            raise SystemExit("railmon run exited %d:\n%s" % (code, out[-3000:]))
        live, live_row = records(railmon, log), stat_row(railmon, log)

        # the same bytes as a capture: a connection per case, a segment
        # per message as sent, the cut one last, then FIN both ways.  On
        # the standard MD port (replay's survey looks there: a capture on
        # another port is refused before the board is read), replayed with
        # the board on it; the records' port mapped back to compare
        cap_port = 17225
        packets, ident = [], 1
        for k, msgs in enumerate(sent + [sent_bad]):
            src, sport, dst = msgs[0]["src"], msgs[0]["sport"], msgs[0]["dst"]
            isn, isn2 = 1000 + k * 100000, 9000 + k * 100000
            frames = [capfile.tcp(src, sport, dst, cap_port, isn, 0, SYN, b"", ident),
                      capfile.tcp(dst, cap_port, src, sport, isn2, isn + 1, SYN | ACK, b"", ident + 1)]
            at = isn + 1
            for m in msgs:
                wire = bytes.fromhex(m["payload"])
                frames.append(capfile.tcp(src, sport, dst, cap_port, at, isn2 + 1, PSH | ACK, wire, ident + 2))
                at += len(wire)
                ident += 1
            frames.append(capfile.tcp(src, sport, dst, cap_port, at, isn2 + 1, FIN | ACK, b"", ident + 3))
            frames.append(capfile.tcp(dst, cap_port, src, sport, isn2 + 1, at + 1, FIN | ACK, b"", ident + 4))
            ident += 5
            packets += frames
        cap = os.path.join(tmp, "ends.pcap")
        t0 = 1764900000
        with open(cap, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for i, frame in enumerate(packets):
                f.write(struct.pack("<IIII", t0, i * 1000, len(frame), len(frame)) + frame)
        out_log = os.path.join(tmp, "replayed")
        with open(board) as f:
            text = f.read().replace("md_port = %d" % md_port, "md_port = %d" % cap_port)
        with open(board, "w") as f:
            f.write(text)
        r = subprocess.run([railmon, "replay", cap, "--board", board, "--data", out_log, "--quiet"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("replay exited %d:\n%s" % (r.returncode, r.stderr[-2000:]))
        replayed = [x.replace('"dst_port": %d' % cap_port, '"dst_port": %d' % md_port)
                    for x in records(railmon, out_log)]
        replay_row = stat_row(railmon, out_log)
    finally:
        if rm:
            rm.kill()
            rm.wait()
        shutil.rmtree(tmp, ignore_errors=True)

    # each case's cut telegram: recorded with its bytes and its reason
    for (name, com_id, size, cut), msgs, want in zip(CASES, sent, WANT_RESULT):
        tail = msgs[-1]["payload"]
        got = [json.loads(x) for x in live if json.loads(x)["data"] == tail]
        if len(tail) // 2 != cut or [g.get("result") for g in got] != [want]:
            bad.append("%s: live recorded %s for the %d cut bytes, want result %d" % (
                name, [g.get("result") for g in got], len(tail) // 2, want))
    if live != replayed:
        for x in sorted(set(live) ^ set(replayed))[:10]:
            bad.append("%s only: %s" % ("live" if x in live else "replay", x[:300]))
    bad_head = sent_bad[-1]["payload"][:2 * 116]
    got = [json.loads(x) for x in live if json.loads(x)["data"] == bad_head]
    if not sent_bad[-1]["bad_fcs"] or [g.get("result") for g in got] != [2]:
        bad.append("bad FCS over TCP: live recorded %s for its header, want result 2" % [g.get("result") for g in got])
    want_counts = {"telegrams": sum(len(s) for s in sent) + len(sent_bad), "bad_short": 1, "bad_truncated": 3,
                   "bad_fcs": 1, "tcp_cut": len(CASES), "tcp_messages": 2 * len(CASES) + 2, "tcp_bad_header": 1}
    for k in COUNTS:
        if live_row.get(k) != replay_row.get(k) or (k in want_counts and live_row.get(k) != want_counts[k]):
            bad.append("stat %s: live %r, replay %r, sent %r" % (k, live_row.get(k), replay_row.get(k),
                                                                 want_counts.get(k)))
    # connections: the capture counts each as the listener does, taken and
    # closed; live also took and closed the probe that saw it listen
    conns = len(CASES) + 1
    for k in ("tcp_accepted", "tcp_closed"):
        if replay_row.get(k) != conns or live_row.get(k) != conns + 1:
            bad.append("stat %s: live %r (want %d: the cases and the probe), replay %r (want %d)" % (
                k, live_row.get(k), conns + 1, replay_row.get(k), conns))
    for b in bad:
        print(b)
    if bad:
        return 1
    print("MD over TCP ending mid-header, mid-data-set, in the padding and before it, and a bad header: live and the "
          "capture's replay give the same %d records and counts %s" % (len(live), {k: live_row.get(k) for k in COUNTS}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
