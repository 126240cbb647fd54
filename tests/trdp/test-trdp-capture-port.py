#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`railmon replay` of a capture whose TRDP traffic is on a board's own
ports (PD 20000, MD 20001 over UDP and TCP), none on 17224/17225: its
first look counts the traffic on the ports of the board's [trdp] buses
(it counted only the standard ports and refused the capture as holding
"no TRDP traffic"), and the bus records every telegram.  Without the board
(one bus on 17224/17225) the same capture is refused; a board whose two
buses share port 20000 counts each datagram once.  Its TCP connections
are counted as the listener counts them: one closed by FIN, one the
capture ends with open, taken and not closed.  A bus without message
data (md_port = 0) reads no MD from a capture, as live it opens no MD
socket nor listener: a capture with PD on 17224 and MD over UDP and TCP on
17225 gives its PD telegrams only (it read TCP 17225, trace/pcap.c's
default port for 0).  The captures are written here byte by byte
(test-trdp-capture-file.py's writers, trdp_pub.py's telegrams).

    test-trdp-capture-port.py RAILMON
"""
import importlib.util
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trdp_pub  # noqa: E402

_spec = importlib.util.spec_from_file_location("capfile", os.path.join(HERE, "test-trdp-capture-file.py"))
capfile = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(capfile)
udp, tcp, md = capfile.udp, capfile.tcp, capfile.md
SYN, ACK, PSH, FIN = capfile.SYN, capfile.ACK, capfile.PSH, capfile.FIN

T0 = 1764900000
PUB, DEV = "10.0.0.1", "10.0.0.2"
PD_PORT, MD_PORT = 20000, 20001
BOARD = "[board]\nvehicle = ports\n[storage]\ndir = log\n[trdp ecn]\npd_port = %d\nmd_port = %d\n" % (PD_PORT, MD_PORT)
# two buses sharing the PD port: the survey reads two sets of ports
BOARD2 = BOARD + "[trdp pd]\nbind = 10.0.0.9\npd_port = %d\nmd_port = 0\n" % PD_PORT


def pd(seq, com_id):
    data = trdp_pub.payload_for(com_id, seq, 16)
    return trdp_pub.pd_header(seq, com_id, len(data), etb=1, optrn=2) + trdp_pub.pad4(data)


def replay(railmon, cap, data, board=None):
    args = [railmon, "replay", cap, "--data", data, "--quiet"] + (["--board", board] if board else [])
    return subprocess.run(args, capture_output=True, text=True)


def write_pcap(path, packets):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for t_us, frame in packets:
            f.write(struct.pack("<IIII", T0 + t_us // 10**6, t_us % 10**6, len(frame), len(frame)) + frame)


def no_md(railmon, tmp, bad):
    """A board whose bus has no MD port: the standard ports' MD traffic,
    UDP and TCP, is none of its; its PD is."""
    packets, want = [], []

    def add(frame):
        packets.append((len(packets) * 1000 + 17, frame))

    for k in range(2):
        add(udp(PUB, 40000, DEV, 17224, pd(k, 1001), 300 + k))
        want.append((1001, k))
    wire, _ = md(7, 2001, 40)
    add(udp(PUB, 40002, DEV, 17225, wire, 310))
    isn, isn2 = 3000, 7000
    m0, _ = md(0, 2002, 100)
    add(tcp(PUB, 40010, DEV, 17225, isn, 0, SYN, b"", 320))
    add(tcp(DEV, 17225, PUB, 40010, isn2, isn + 1, SYN | ACK, b"", 321))
    add(tcp(PUB, 40010, DEV, 17225, isn + 1, isn2 + 1, PSH | ACK, m0, 322))
    fin = isn + 1 + len(m0)
    add(tcp(PUB, 40010, DEV, 17225, fin, isn2 + 1, FIN | ACK, b"", 323))
    add(tcp(DEV, 17225, PUB, 40010, isn2 + 1, fin + 1, FIN | ACK, b"", 324))
    cap = os.path.join(tmp, "nomd.pcap")
    write_pcap(cap, packets)
    board = os.path.join(tmp, "nomd.ini")
    with open(board, "w") as f:
        f.write("[board]\nvehicle = nomd\n[storage]\ndir = log\n[trdp ecn]\npd_port = 17224\nmd_port = 0\n")
    out = os.path.join(tmp, "nomd")
    r = replay(railmon, cap, out, board)
    said = "%d packets: 2 UDP datagrams and 0 TCP stream bytes on the TRDP ports" % len(packets)
    if r.returncode != 0 or said not in r.stderr:
        bad.append("md_port 0: replay exit %d, want 0 and %r in:\n%s" % (r.returncode, said, r.stderr))
    e = subprocess.run([railmon, "export", "--data", out, "--format", "jsonl"], capture_output=True, text=True)
    got = [(x["com_id"], x["seq_counter"]) for x in map(json.loads, e.stdout.splitlines()) if x["kind"] == "trdp"]
    if sorted(got) != sorted(want):
        bad.append("md_port 0: recorded %s, want the PD only %s" % (sorted(got), sorted(want)))
    return len(want)


def main():
    railmon = sys.argv[1]
    packets, want = [], []

    def add(frame):
        packets.append((len(packets) * 1000 + 17, frame))

    for k in range(3):
        add(udp(PUB, 40000, DEV, PD_PORT, pd(k, 1001), 100 + k))
        want.append((1001, k))
    wire, _ = md(5, 2001, 40)
    add(udp(PUB, 40002, DEV, MD_PORT, wire, 110))
    want.append((2001, 5))
    # a datagram to 17224 of another host's port plan would be counted by
    # the standard ports: none here, so the old survey saw nothing
    isn, isn2 = 1000, 5000
    add(tcp(PUB, 40010, DEV, MD_PORT, isn, 0, SYN, b"", 200))
    add(tcp(DEV, MD_PORT, PUB, 40010, isn2, isn + 1, SYN | ACK, b"", 201))
    m0, _ = md(0, 2002, 100)
    m1, _ = md(1, 2002, 60)
    add(tcp(PUB, 40010, DEV, MD_PORT, isn + 1, isn2 + 1, PSH | ACK, m0 + m1, 202))
    fin = isn + 1 + len(m0) + len(m1)
    add(tcp(PUB, 40010, DEV, MD_PORT, fin, isn2 + 1, FIN | ACK, b"", 203))
    add(tcp(DEV, MD_PORT, PUB, 40010, isn2 + 1, fin + 1, FIN | ACK, b"", 204))
    want += [(2002, 0), (2002, 1)]
    # a second connection the capture ends with open: taken, not closed
    # (live it would still be open)
    isn = 20000
    m2, _ = md(2, 2002, 24)
    add(tcp(PUB, 40011, DEV, MD_PORT, isn, 0, SYN, b"", 210))
    add(tcp(DEV, MD_PORT, PUB, 40011, isn2, isn + 1, SYN | ACK, b"", 211))
    add(tcp(PUB, 40011, DEV, MD_PORT, isn + 1, isn2 + 1, PSH | ACK, m2, 212))
    want.append((2002, 2))
    tcp_bytes = len(m0) + len(m1) + len(m2)
    said = "%d packets: 4 UDP datagrams and %d TCP stream bytes on the TRDP ports" % (len(packets), tcp_bytes)

    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "ports.pcap")
        write_pcap(cap, packets)
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write(BOARD)
        out = os.path.join(tmp, "log")
        r = replay(railmon, cap, out, board)
        print(r.stderr.strip())
        if r.returncode != 0 or said not in r.stderr:
            bad.append("replay with the board: exit %d, want 0 and %r in:\n%s" % (r.returncode, said, r.stderr))
        e = subprocess.run([railmon, "export", "--data", out, "--format", "jsonl"], capture_output=True, text=True)
        got = [(x["com_id"], x["seq_counter"]) for x in map(json.loads, e.stdout.splitlines()) if x["kind"] == "trdp"]
        if sorted(got) != sorted(want):
            bad.append("recorded %s, want %s" % (sorted(got), sorted(want)))
        st = subprocess.run([railmon, "stat", "--data", out, "--json"], capture_output=True, text=True)
        row = next((x for x in map(json.loads, (y for y in st.stdout.splitlines() if y.startswith("{")))
                    if x.get("kind") == "trdp"), {})
        conns = (row.get("tcp_accepted"), row.get("tcp_closed"), row.get("tcp_messages"))
        if conns != (2, 1, 3):
            bad.append("tcp_accepted, tcp_closed, tcp_messages %s, want (2, 1, 3): the open one not closed" % (conns,))
        # the default bus (17224/17225): nothing of it, refused
        r = replay(railmon, cap, os.path.join(tmp, "dflt"))
        if r.returncode != 1 or "holds no TRDP traffic on the ports of its [trdp] bus: nothing to replay" not in r.stderr:
            bad.append("replay without the board: exit %d, want 1 and no TRDP traffic said:\n%s"
                       % (r.returncode, r.stderr))
        # two buses, two sets of ports sharing 20000: each datagram once
        with open(board, "w") as f:
            f.write(BOARD2)
        r = replay(railmon, cap, os.path.join(tmp, "two"), board)
        if r.returncode != 0 or said not in r.stderr:
            bad.append("replay into two buses: exit %d, want 0 and %r in:\n%s" % (r.returncode, said, r.stderr))
        n_no_md = no_md(railmon, tmp, bad)
    for b in bad:
        print(b)
    if bad:
        return 1
    print("a capture on ports %d/%d: surveyed on the board's ports (4 datagrams, %d TCP bytes, once with two "
          "buses), %d telegrams recorded; refused on the standard ports; md_port 0: %d PD telegrams only"
          % (PD_PORT, MD_PORT, tcp_bytes, len(want), n_no_md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
