#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The TRDP bus driver against trdp_pub.py, a publisher written from the
specification: every telegram it logged as sent must be received once, in
order, with every header field, its addresses and its bytes; bad FCS
refused (recorded raw, result 2, no fields) and counted; sequence gaps,
repeats and topology changes counted as the publisher made them.

  test-trdp-bus.py TRDP-LISTEN loopback   unicast PD and MD on 127.0.0.1,
                                          and MD over TCP (connections at
                                          once, split, bad FCS, cut, full)
  test-trdp-bus.py RAILMON netns          railmon run across two network
                                          namespaces (root): multicast and
                                          unicast, the interface down and
                                          up, removed and made again
  test-trdp-bus.py RAILMON netns-capture  the same with receive = capture
                                          (the packet ring): the same
                                          records, events and counters
"""
import errno
import json
import os
import socket
import subprocess
import sys
import shutil
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PUB = os.path.join(HERE, "trdp_pub.py")
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from railmon_test import free_port_udp_tcp, netns_export, netns_pair  # noqa: E402
RESULT_BAD_FCS = 2
RESULT_SHORT, RESULT_TRUNCATED = 1, 6
MD_HEADER = 116



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
    pd, md = free_port_udp_tcp(), free_port_udp_tcp()
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


def run_overflow(listen):
    """A receiver that falls behind (its output not read while 3,000
    telegrams of 1,000 bytes come at once): the socket overflows, and
    every telegram is either received or counted dropped (SO_RXQ_OVFL,
    and the socket's counter read at the idle wait after the last one)."""
    pd = free_port_udp_tcp()
    n = 3000
    lst = subprocess.Popen([listen, str(pd), "0", str(n), "1000"], stdout=subprocess.PIPE, text=True)
    assert lst.stdout.readline().strip() == "ready"
    subprocess.run([sys.executable, PUB, "pd", "--dest", "127.0.0.1", "--bind", "127.0.0.1", "--port", str(pd),
                    "--count", str(n), "--cycle-ms", "0", "--size", "1000"], check=True)
    out = lst.stdout.read().splitlines()
    assert lst.wait(timeout=60) == 0
    got = sum(1 for x in out if '"kind":"trdp"' in x)
    stats = json.loads(out[-1])["stats"]
    print("overflow: %d sent, %d received, %d counted dropped" % (n, got, stats["rx_dropped"]))
    if got + stats["rx_dropped"] != n or got != stats["telegrams"]:
        print("overflow: received and dropped do not add up to what was sent")
        return 1
    return 0


def tcp_expected(s):
    """The record a message the publisher sent over TCP must give."""
    want = {"data": s["payload"], "src": s["src"], "src_port": s["sport"], "dst": s["dst"],
            "dst_port": s["dport"]}
    if s["bad_fcs"]:
        # the header alone: no framing past it, the connection closed
        want.update(data=s["payload"][:2 * MD_HEADER], result=RESULT_BAD_FCS, com_id=0, flags="??|TCP|bad-fcs")
    elif s["cut"] and len(s["payload"]) < 2 * MD_HEADER:
        want.update(result=RESULT_SHORT, com_id=0, flags="??|TCP|short")
    else:
        want.update(com_id=s["com_id"], seq_counter=s["seq"], etb_topo=s["etb"], op_trn_topo=s["optrn"],
                    session_id=s["session"])
        want.update(result=RESULT_TRUNCATED, flags="Mn|TCP|truncated") if s["cut"] else \
            want.update(result=0, flags="Mn|TCP")
    return want


def compare_tcp(sent, got):
    """Per connection (the publisher's port), in the order sent; the
    record's kernel time not before the publisher began sending its last
    bytes (a time taken when the header came would be)."""
    bad = 0
    by_conn = {}
    for g in got:
        by_conn.setdefault(g.get("src_port"), []).append(g)
    for port in sorted({s["sport"] for s in sent}):
        mine = [s for s in sent if s["sport"] == port]
        recs = by_conn.pop(port, [])
        if len(recs) != len(mine):
            print("tcp connection %d: %d records, %d messages sent" % (port, len(recs), len(mine)))
            bad += 1
        for s, g in zip(mine, recs):
            diff = {k: (g.get(k), v) for k, v in tcp_expected(s).items() if g.get(k) != v}
            if g.get("time_ns", 0) < s["t_last_ns"]:
                diff["time_ns"] = (g.get("time_ns"), ">= %d" % s["t_last_ns"])
            if diff:
                bad += 1
                if bad < 10:
                    print("tcp connection %d message %d: %s" % (port, s["i"], diff))
    if by_conn:
        print("tcp records of connections nobody opened: %s" % sorted(by_conn))
        bad += 1
    return bad


def two_at_once(md):
    """Two connections open together, their messages interleaved: the
    first half of A's message, all of B's, the rest of A's - each
    connection framed on its own.  Returns the messages as trdp_pub logs
    them."""
    sys.path.insert(0, HERE)
    import trdp_pub
    conns = [socket.create_connection(("127.0.0.1", md), source_address=("127.0.0.1", 0)) for _ in range(2)]
    for c in conns:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sent = []
    for i in range(10):
        wires = []
        for k, c in enumerate(conns):
            com_id, size = 78 + k, 500 + k
            data = trdp_pub.payload_for(com_id, i, size)
            sid = bytes(15) + bytes([i])
            wire = trdp_pub.md_header(i, com_id, size, etb=1, optrn=2, session=sid) + trdp_pub.pad4(data)
            wires.append(wire)
            src = c.getsockname()
            sent.append(dict(i=i, src=src[0], sport=src[1], dst="127.0.0.1", dport=md, seq=i, com_id=com_id,
                             etb=1, optrn=2, session=sid.hex(), bad_fcs=False, cut=False,
                             t_last_ns=time.time_ns(), payload=wire.hex()))
        half = len(wires[0]) // 2
        conns[0].sendall(wires[0][:half])
        conns[1].sendall(wires[1])
        sent[-2]["t_last_ns"] = time.time_ns()
        conns[0].sendall(wires[0][half:])
    for c in conns:
        c.close()
    return sent


def run_tcp(listen):
    """MD over TCP into the driver's listening socket: several messages on
    one connection, two connections at once, messages sent byte by byte
    (TCP_NODELAY: segments of one byte), a bad FCS (the header recorded
    raw, the connection closed: the publisher waits for it), connections
    that end mid-header, mid-data-set and in the padding after it
    (recorded refused, counted cut)."""
    md = free_port_udp_tcp()
    runs = [  # (name, extra arguments); a ComId each: sequence counters start again
        ("one", ["--count", "10", "--size", "3000", "--com-id", "70"]),
        ("bytes", ["--count", "3", "--size", "37", "--split", "1", "--com-id", "71"]),
        ("badfcs", ["--count", "3", "--bad-fcs", "3", "--size", "64", "--com-id", "72"]),
        ("cuthead", ["--count", "2", "--cut", "50", "--size", "64", "--com-id", "73"]),
        ("cutdata", ["--count", "1", "--cut", "300", "--size", "500", "--com-id", "74"]),
        # only the padding after the data set missing: still cut
        ("cutpad", ["--count", "1", "--cut", str(MD_HEADER + 37), "--size", "37", "--com-id", "75"]),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        n_rec = 10 + 3 + 3 + 3 + 2 + 2 + 2 * 10
        lst = subprocess.Popen([listen, "0", str(md), str(n_rec), "5000"], stdout=subprocess.PIPE, text=True)
        assert lst.stdout.readline().strip() == "ready"
        out_lines = []
        reader = threading.Thread(target=lambda: out_lines.extend(lst.stdout))
        reader.start()
        for name, extra in runs:
            subprocess.run([sys.executable, PUB, "md", "--tcp", "--dest", "127.0.0.1", "--bind", "127.0.0.1",
                            "--port", str(md), "--cycle-ms", "1", "--log", os.path.join(tmp, name + ".jsonl")]
                           + extra, check=True)
        sent = [json.loads(x) for name, _ in runs for x in open(os.path.join(tmp, name + ".jsonl"))]
        sent += two_at_once(md)
        assert lst.wait(timeout=60) == 0, lst.returncode
        reader.join()
    lines = [json.loads(x) for x in out_lines]
    stats = lines[-1]["stats"]
    got = [x for x in lines if x.get("kind") == "trdp"]
    bad = compare_tcp(sent, got)
    nconn = len(runs) + 2
    ok = sum(1 for s in sent if not s["bad_fcs"] and not s["cut"])
    want = {"telegrams": len(sent), "ok": ok, "bad_fcs": 1, "bad_input": len(sent) - ok, "tcp_accepted": nconn,
            "tcp_refused": 0, "tcp_bad_header": 1, "tcp_cut": 3, "tcp_messages": ok, "rx_dropped": 0,
            "bytes_drops": 0, "rx_errors": 0, "gaps": 0, "repeats": 0, "back": 0}
    # every connection is closed by its peer, but the listener stops at its
    # last record, which may be before it saw the two last ones close (the
    # two at once); the others closed before those two opened
    if not nconn - 2 <= stats.get("tcp_closed", -1) <= nconn:
        print("counter tcp_closed: got %s, want %d to %d" % (stats.get("tcp_closed"), nconn - 2, nconn))
        bad += 1
    for k, v in want.items():
        if stats.get(k) != v:
            print("counter %s: got %s, want %s" % (k, stats.get(k), v))
            bad += 1
    print("tcp: %d connections, %d messages sent (%d valid), %d records; closed on bad header %d, cut %d; "
          "%d wrong" % (nconn, len(sent), ok, len(got), stats["tcp_bad_header"], stats["tcp_cut"], bad))
    return 1 if bad else 0


def run_tcp_full(listen):
    """Connections beyond the driver's 16: the 17th is closed at once and
    counted, the 16 taken still carry their messages."""
    md = free_port_udp_tcp()
    lst = subprocess.Popen([listen, "0", str(md), "16", "5000"], stdout=subprocess.PIPE, text=True)
    assert lst.stdout.readline().strip() == "ready"
    sys.path.insert(0, HERE)
    import trdp_pub
    conns = [socket.create_connection(("127.0.0.1", md)) for _ in range(17)]
    # the accept queue is in connect order: the 17th is the one refused
    closed = trdp_pub.wait_closed(conns[16])
    for i, c in enumerate(conns[:16]):
        data = trdp_pub.payload_for(90, i, 20)
        c.sendall(trdp_pub.md_header(i, 90, len(data)) + trdp_pub.pad4(data))
    out = lst.stdout.read().splitlines()
    for c in conns:
        c.close()
    assert lst.wait(timeout=60) == 0
    stats = json.loads(out[-1])["stats"]
    got = sorted(json.loads(x)["seq_counter"] for x in out if '"kind":"trdp"' in x)
    print("tcp full: 17 connections, the 17th closed by the driver: %s; accepted %d, refused %d, "
          "%d messages recorded" % (closed, stats["tcp_accepted"], stats["tcp_refused"], len(got)))
    if not closed or stats["tcp_accepted"] != 16 or stats["tcp_refused"] != 1 or got != list(range(16)):
        return 1
    return 0


def run_tcp_taken(listen):
    """The TCP port held by another listener (a TRDP stack on this host):
    the bus opens all the same, MD over UDP still comes, the listener's
    error is kept (-EADDRINUSE)."""
    md = free_port_udp_tcp()
    other = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    other.bind(("0.0.0.0", md))
    other.listen(1)
    lst = subprocess.Popen([listen, "0", str(md), "3", "5000"], stdout=subprocess.PIPE, text=True)
    assert lst.stdout.readline().strip() == "ready"
    subprocess.run([sys.executable, PUB, "md", "--dest", "127.0.0.1", "--bind", "127.0.0.1", "--port", str(md),
                    "--count", "3", "--cycle-ms", "1"], check=True)
    out = lst.stdout.read().splitlines()
    assert lst.wait(timeout=60) == 0
    other.close()
    stats = json.loads(out[-1])["stats"]
    got = sum(1 for x in out if '"kind":"trdp"' in x)
    print("tcp port taken: listener error %d, %d MD over UDP received of 3" % (stats["tcp_listen_error"], got))
    return 0 if stats["tcp_listen_error"] == -errno.EADDRINUSE and got == 3 else 1


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def wait_for(what, cond, timeout_s=20.0, why=None):
    """Until cond() is true (polled, not a fixed sleep), or fail naming
    what, and what why() says of the state it was left in."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.05)
    raise SystemExit("timed out waiting for " + what + (": " + why() if why else ""))


def run_netns(railmon, capture=False):
    """railmon run in namespace B logs what trdp_pub.py sends from A over a
    veth pair, to a multicast group it joined and to its own address;
    export gives back every telegram as sent; the interface going down and
    up, and removed and made again, is GONE and BACK each time, and the
    group is joined again after it.  capture: the bus receives through the
    interface's packet ring (receive = capture), and every check is the
    same: the telegrams as sent, in order, every field and byte (the
    socket mode's records), the events, stat's counters."""
    if os.geteuid() != 0:
        print("netns: needs root (CI runs as root)")
        return 77
    mode = "netns-capture" if capture else "netns"
    rm = None
    with netns_pair("rmtb") as net:
        a, b, vb = net.a, net.b, net.dev_b
        tmp = tempfile.mkdtemp(prefix="trdp-netns-")
        try:
            board = os.path.join(tmp, "trdp.ini")
            # capture: blocks of 500 ms, so the last telegrams before the
            # interface goes down and is removed are still in the block the
            # kernel fills, not handed over yet: they must be in the log
            # all the same (bus/trdp-capture.c bus_trdp_live_last)
            with open(board, "w") as f:
                f.write("[board]\nvehicle = netns\n[trdp ecn]\ninterface = %s\ngroup = 239.193.0.1\n%s" % (
                    vb, "receive = capture\ncapture_block_ms = 500\n" if capture else ""))
            log = os.path.join(tmp, "log")
            rm = subprocess.Popen(["ip", "netns", "exec", b, railmon, "run", "--board", board, "--data", log],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            # joined: the group is in the namespace's IGMP table (0100C1EF);
            # capture: the bus opens its ring before it joins, so the join
            # says the ring takes what is sent from now (bus/trdp.c)
            wait_for("railmon to join 239.193.0.1",
                     lambda: "0100C1EF" in sh("ip", "netns", "exec", b, "cat", "/proc/net/igmp").stdout)
            logs = [os.path.join(tmp, x) for x in ("pd.jsonl", "md.jsonl", "mdtcp.jsonl", "pd2.jsonl", "pd3.jsonl")]
            pub = ["ip", "netns", "exec", a, sys.executable, PUB]
            sh(*pub, "pd", "--dest", "239.193.0.1", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "200",
               "--cycle-ms", "10", "--size", "100", "--bad-fcs", "20", "--skip-seq", "50:2", "--repeat-seq", "70",
               "--topo", "120:3:4", "--log", logs[0])
            # which path received: capture mode has a packet socket, and its
            # PD socket (port 17224 = 4348) drops every datagram by its
            # filter (the drops column of /proc/net/udp); socket mode has
            # no packet socket and its socket dropped nothing
            packet = sh("ip", "netns", "exec", b, "cat", "/proc/net/packet").stdout.splitlines()[1:]
            udp = [x.split() for x in sh("ip", "netns", "exec", b, "cat", "/proc/net/udp").stdout.splitlines()[1:]]
            pd_drops = [int(x[-1]) for x in udp if x[1].endswith(":4348")]
            path_bad = (not packet or not pd_drops or pd_drops[0] < 200) if capture else \
                (packet or not pd_drops or pd_drops[0] != 0)
            print("%s: %d packet sockets, PD socket drops %s" % (mode, len(packet), pd_drops))
            sh(*pub, "md", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "5", "--cycle-ms", "10",
               "--size", "2000", "--com-id", "2001", "--etb", "3", "--optrn", "4", "--log", logs[1])
            # MD over TCP to railmon's listener, one message sent in pieces
            sh(*pub, "md", "--tcp", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "5", "--cycle-ms", "10",
               "--size", "3000", "--com-id", "2002", "--etb", "3", "--optrn", "4", "--split", "1000", "--log", logs[2])
            sh("ip", "-n", b, "link", "set", vb, "down")
            wait_for("a CAN_GONE event of the TRDP bus",
                     lambda: any(x.get("event") == "CAN_GONE" and x["bus"] == 0 for x in netns_export(railmon, b, log)))
            sh("ip", "-n", b, "link", "set", vb, "up")
            wait_for("a CAN_BACK event of the TRDP bus",
                     lambda: any(x.get("event") == "CAN_BACK" and x["bus"] == 0 for x in netns_export(railmon, b, log)))
            wait_for("railmon to join 239.193.0.1 again",
                     lambda: "0100C1EF" in sh("ip", "netns", "exec", b, "cat", "/proc/net/igmp").stdout)
            sh(*pub, "pd", "--dest", "239.193.0.1", "--bind", "192.0.2.1", "--count", "20", "--cycle-ms", "10",
               "--first-seq", "1000", "--etb", "3", "--optrn", "4", "--log", logs[3])
            # the interface removed (the veth pair deleted) and made again
            # with the same name: a second GONE and BACK, the group joined
            # again, and the telegrams after it received
            n_ev = lambda name: sum(1 for x in netns_export(railmon, b, log)
                                    if x.get("event") == name and x["bus"] == 0)
            sh("ip", "-n", b, "link", "del", vb)
            wait_for("a second CAN_GONE event (interface removed)", lambda: n_ev("CAN_GONE") == 2)
            sh("ip", "link", "add", net.dev_a, "netns", a, "type", "veth", "peer", "name", vb, "netns", b)
            for ns, dev, addr in ((a, net.dev_a, net.addr_a), (b, vb, net.addr_b)):
                sh("ip", "-n", ns, "addr", "add", addr + "/24", "dev", dev)
                sh("ip", "-n", ns, "link", "set", dev, "up")
                sh("ip", "-n", ns, "route", "add", "239.0.0.0/8", "dev", dev)
            wait_for("a second CAN_BACK event (interface made again)", lambda: n_ev("CAN_BACK") == 2)
            wait_for("railmon to join 239.193.0.1 on the new interface",
                     lambda: "0100C1EF" in sh("ip", "netns", "exec", b, "cat", "/proc/net/igmp").stdout)
            sh(*pub, "pd", "--dest", "239.193.0.1", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "20",
               "--cycle-ms", "10", "--first-seq", "2000", "--etb", "3", "--optrn", "4", "--log", logs[4])
            n_sent = sum(1 for f in logs for _ in open(f))
            def missing():
                got = {(x.get("src"), x.get("dst"), x.get("data")) for x in netns_export(railmon, b, log)
                       if x["kind"] == "trdp"}
                lost = [(os.path.basename(f), i) for f in logs for i, x in enumerate(map(json.loads, open(f)))
                        if (x["src"], x["dst"], x["payload"]) not in got]
                r = sh("ip", "netns", "exec", b, railmon, "stat", "--data", log, "--json", check=False)
                row = next((x for x in map(json.loads, (y for y in r.stdout.splitlines() if y.startswith("{")))
                            if x.get("kind") == "trdp"), {})
                return "%d of %d sent not in the log (file, index): %s; stat rx_dropped %s" % (
                    len(lost), n_sent, lost[:20], row.get("rx_dropped"))
            wait_for("every telegram in the log",
                     lambda: sum(1 for x in netns_export(railmon, b, log) if x["kind"] == "trdp") >= n_sent, why=missing)
            # stat's row of the bus: its sequence counters and topology as sent
            want_seq = dict(zip(("seq_gaps", "seq_repeats", "seq_back", "topology_changes"),
                                expected_counts([json.loads(x) for f in logs for x in open(f)])))

            def trdp_row():
                r = sh("ip", "netns", "exec", b, railmon, "stat", "--data", log, "--json", check=False)
                rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
                return next((x for x in rows if x.get("kind") == "trdp"), {})
            wait_for("stat's trdp row to say %s" % want_seq,
                     lambda: all(trdp_row().get(k) == v for k, v in want_seq.items()))
            row = trdp_row()
            # nothing lost at this rate; in capture mode the sockets' own
            # drops (every datagram, by their filter) are not the bus's
            drops_bad = row.get("rx_dropped") != 0
            print("stat: " + ", ".join("%s %s" % (k, row.get(k)) for k in
                                       ("items", "rx_dropped", "bad_input") + tuple(want_seq)))
            # telegrams sent just before railmon is stopped are in the
            # log (capture: the ring's open block read at stop)
            logs.append(os.path.join(tmp, "pd4.jsonl"))
            sh(*pub, "pd", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "5", "--cycle-ms", "10",
               "--first-seq", "3000", "--etb", "3", "--optrn", "4", "--log", logs[-1])
            rm.send_signal(2)
            out, _ = rm.communicate(timeout=30)
            code, rm = rm.returncode, None
            if code != 0:
                raise SystemExit("railmon run exited %d:\n%s" % (code, out[-3000:]))
            sent = [json.loads(x) for f in logs for x in open(f)]
            lines = netns_export(railmon, b, log)
            # a replay of the log records the same telegrams again
            log2 = os.path.join(tmp, "replayed")
            r = sh(railmon, "replay", log, "--board", board, "--data", log2, check=False)
            replayed = netns_export(railmon, b, log2)
        finally:
            if rm:
                rm.kill()
                rm.wait()
            shutil.rmtree(tmp, ignore_errors=True)
    bad = compare(sent, lines)
    keys = ("time_ns", "data", "flags", "src", "src_port", "dst", "dst_port", "com_id", "seq_counter", "etb_topo",
            "op_trn_topo", "result")
    again = [tuple(x.get(k) for k in keys) for x in replayed if x["kind"] == "trdp"]
    first = [tuple(x.get(k) for k in keys) for x in lines if x["kind"] == "trdp"]
    if drops_bad:
        print("stat's rx_dropped %s, want 0" % row.get("rx_dropped"))
        bad += 1
    if path_bad:
        print("not received the %s way (packet sockets, the PD socket's drops above)" % mode)
        bad += 1
    if r.returncode != 0 or again != first:
        print("replay: exit %d, %d telegrams, %d the same as the log's %d: %s" % (
            r.returncode, len(again), sum(1 for x, y in zip(again, first) if x == y), len(first), r.stderr[-500:]))
        bad += 1
    nbad = sum(1 for s in sent if s.get("bad_fcs"))
    events = [x for x in lines if x["kind"] == "event" and x["bus"] == 0]
    names = [e["event"] for e in events]
    topo = [e for e in events if e["event"] == "TRDP_TOPOLOGY"]
    if len(topo) != 1 or topo[0]["arg"] != (3 << 32 | 4):
        print("TRDP_TOPOLOGY events: %s (want one, arg %d)" % (topo, 3 << 32 | 4))
        bad += 1
    refused = sum(e["arg"] for e in events if e["event"] == "TRDP_BAD_HEADER")
    if not 0 < refused <= nbad:
        print("TRDP_BAD_HEADER events count %d refused (of %d)" % (refused, nbad))
        bad += 1
    for want in ("CAN_GONE", "CAN_BACK"):
        if names.count(want) != 2:
            print("%d %s events, want two (the interface went down once, was removed once)" % (
                names.count(want), want))
            bad += 1
    print(mode + ": %d telegrams sent (%d multicast, %d MD over TCP, %d bad FCS), %d recorded, %d replayed alike, "
          "events %s; %d wrong" % (len(sent), sum(1 for s in sent if s["dst"].startswith("239.")),
                                   sum(1 for s in sent if s.get("tcp")), nbad,
                        sum(1 for x in lines if x["kind"] == "trdp"),
                        sum(1 for x, y in zip(again, first) if x == y), sorted(set(names)), bad))
    return 1 if bad else 0


def main():
    tool, mode = sys.argv[1], sys.argv[2]
    if mode == "loopback":
        return run_loopback(tool) | run_overflow(tool) | run_tcp(tool) | run_tcp_full(tool) | run_tcp_taken(tool)
    if mode == "netns":
        return run_netns(tool)
    if mode == "netns-capture":
        return run_netns(tool, capture=True)
    raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    sys.exit(main())
