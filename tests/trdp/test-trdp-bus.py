#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The TRDP bus driver against trdp_pub.py, a publisher written from the
specification: every telegram it logged as sent must be received once, in
order, with every header field, its addresses and its bytes; bad FCS
refused (recorded raw, result 2, no fields) and counted; sequence gaps,
repeats and topology changes counted as the publisher made them.

  test-trdp-bus.py TRDP-LISTEN loopback   unicast PD and MD on 127.0.0.1
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PUB = os.path.join(HERE, "trdp_pub.py")
RESULT_BAD_FCS = 2


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def expected_counts(sent):
    """What the receiver's sequence tracking must count: over the valid
    telegrams of each (sender, ComId, kind), as the publisher sent them."""
    last, gaps, repeats, back, topo, prev_topo = {}, 0, 0, 0, 0, None
    for s in sent:
        if s.get("bad_fcs"):
            continue
        key = (s["src"], s["com_id"], s["kind"])
        if key in last:
            skip = (s["seq"] - (last[key] + 1)) & 0xFFFFFFFF
            if skip == 0xFFFFFFFF:
                repeats += 1
            elif 0 < skip < 0x80000000:
                gaps += skip
            elif skip:
                back += 1
        last[key] = s["seq"]
        t = (s["etb"], s["optrn"])
        if prev_topo is not None and t != prev_topo:
            topo += 1
        prev_topo = t
    return gaps, repeats, back, topo


def compare(sent, lines, src_override=None):
    """Telegram records in the order sent; returns the number of mismatches."""
    got = [x for x in lines if x.get("kind") == "trdp"]
    bad = 0
    if len(got) != len(sent):
        print("received %d telegrams, sent %d" % (len(got), len(sent)))
        bad += 1
    for i, (s, g) in enumerate(zip(sent, got)):
        want = {"data": s["payload"], "dst": s["dst"], "dst_port": s["dport"],
                "src": src_override or s["src"]}
        if s.get("bad_fcs"):
            want.update(result=RESULT_BAD_FCS, com_id=0, seq_counter=0, etb_topo=0, op_trn_topo=0)
        else:
            want.update(result=0, com_id=s["com_id"], seq_counter=s["seq"], etb_topo=s["etb"],
                        op_trn_topo=s["optrn"])
            want["flags"] = s["msg_type"] + ("|TCP" if s.get("tcp") else "")
        if s["kind"] == "md" and not s.get("bad_fcs"):
            want["session_id"] = s["session"]
        diff = {k: (g.get(k), v) for k, v in want.items() if g.get(k) != v}
        if diff:
            bad += 1
            if bad < 10:
                print("telegram %d: %s" % (i, diff))
    return bad


def run_loopback(listen):
    pd, md = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        logs = [os.path.join(tmp, "pd.jsonl"), os.path.join(tmp, "md.jsonl")]
        n_pd, n_md = 400, 20
        lst = subprocess.Popen([listen, str(pd), str(md), str(n_pd + n_md), "5000"], stdout=subprocess.PIPE,
                               text=True)
        assert lst.stdout.readline().strip() == "ready"
        # read as it comes: a listener blocked on a full pipe would let
        # the socket overflow
        out_lines = []
        reader = threading.Thread(target=lambda: out_lines.extend(lst.stdout))
        reader.start()
        subprocess.run([sys.executable, PUB, "pd", "--dest", "127.0.0.1", "--bind", "127.0.0.1", "--port", str(pd), "--count", str(n_pd),
                        "--cycle-ms", "0.2", "--size", "100", "--bad-fcs", "25", "--skip-seq", "100:3",
                        "--repeat-seq", "210", "--topo", "300:5:6", "--first-seq", "4294967000",
                        "--log", logs[0]], check=True)
        subprocess.run([sys.executable, PUB, "md", "--dest", "127.0.0.1", "--bind", "127.0.0.1", "--port", str(md), "--count", str(n_md),
                        "--cycle-ms", "1", "--size", "3000", "--com-id", "77", "--etb", "5", "--optrn", "6",
                        "--log", logs[1]], check=True)
        assert lst.wait(timeout=60) == 0, lst.returncode
        reader.join()
        sent = [json.loads(x) for f in logs for x in open(f)]
    lines = [json.loads(x) for x in out_lines]
    stats = lines[-1]["stats"]
    bad = compare(sent, lines)
    gaps, repeats, back, topo = expected_counts(sent)
    nbad = sum(1 for s in sent if s.get("bad_fcs"))
    want = {"telegrams": len(sent), "ok": len(sent) - nbad, "bad_fcs": nbad, "gaps": gaps, "repeats": repeats,
            "back": back, "topology": topo, "bad_input": nbad, "bytes_drops": 0, "rx_dropped": 0}
    for k, v in want.items():
        if stats.get(k) != v:
            print("counter %s: got %s, want %s" % (k, stats.get(k), v))
            bad += 1
    events = [x for x in lines if x.get("kind") == "event"]
    ntopo = sum(1 for e in events if e["event"] == "TRDP_TOPOLOGY")
    nbadev = sum(e["arg"] for e in events if e["event"] == "TRDP_BAD_HEADER")
    if ntopo != topo or not 0 < nbadev <= nbad:
        print("events: %d TRDP_TOPOLOGY (want %d), TRDP_BAD_HEADER for %d (of %d)" % (ntopo, topo, nbadev, nbad))
        bad += 1
    print("loopback: %d telegrams sent (%d bad FCS), %d received; gaps %d, repeats %d, back %d, topology %d; "
          "%d wrong" % (len(sent), nbad, stats["telegrams"], stats["gaps"], stats["repeats"], stats["back"],
                        stats["topology"], bad))
    return 1 if bad else 0


def main():
    listen, mode = sys.argv[1], sys.argv[2]
    if mode == "loopback":
        return run_loopback(listen)
    raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    sys.exit(main())
