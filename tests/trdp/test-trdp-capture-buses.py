#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`railmon replay` of one capture into a board with three [trdp] buses:
each takes what is addressed to it, as its live socket would get it (its
bind address first, then the groups it joins, then a bus bound to any
address for the other unicast addresses), and what none takes (a group no
bus joins) is counted once and said.  The capture is written here byte by
byte (test-trdp-capture-file.py's Ethernet, IPv4, UDP and TCP writers, the
telegrams by trdp_pub.py); the board's buses:

  doors     bind any, group 239.193.0.1, PD 17224, MD 17225
  hvac      bind 10.0.0.2 (unicast), PD 17224, MD 17225
  traction  bind any, group 239.193.0.2, PD 17224, no MD

    test-trdp-capture-buses.py RAILMON
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
PUB, HVAC, OTHER = "10.0.0.1", "10.0.0.2", "10.0.0.5"
G_DOORS, G_TRACTION, G_NOBODY = "239.193.0.1", "239.193.0.2", "239.193.0.9"

BOARD = """[board]
vehicle = split
[storage]
dir = log
[trdp doors]
group = 239.193.0.1
[trdp hvac]
bind = 10.0.0.2
[trdp traction]
group = 239.193.0.2
md_port = 0
"""


def pd(seq, com_id):
    data = trdp_pub.payload_for(com_id, seq, 16)
    return trdp_pub.pd_header(seq, com_id, len(data), etb=1, optrn=2) + trdp_pub.pad4(data)


def main():
    railmon = sys.argv[1]
    packets = []
    want = {"doors": [], "hvac": [], "traction": []}  # (dst, com_id, seq) each bus must record

    def add(frame):
        packets.append((len(packets) * 1000 + 17, frame))

    ident = 100
    for k in range(3):
        add(udp(PUB, 40000, G_DOORS, 17224, pd(k, 1001), ident + k))
        want["doors"].append((G_DOORS, 1001, k))
    for k in range(2):
        add(udp(PUB, 40000, G_TRACTION, 17224, pd(k, 1003), ident + 10 + k))
        want["traction"].append((G_TRACTION, 1003, k))
        add(udp(PUB, 40000, HVAC, 17224, pd(k, 1002), ident + 20 + k))
        want["hvac"].append((HVAC, 1002, k))
        # a group nobody joins: no bus's, counted once (by doors, the
        # first bus on port 17224), not replayed
        add(udp(PUB, 40000, G_NOBODY, 17224, pd(k, 1009), ident + 30 + k))
    # MD over UDP to a unicast address no bus is bound to: doors (any)
    wire, _ = md(5, 2001, 40)
    add(udp(PUB, 40002, OTHER, 17225, wire, ident + 40))
    want["doors"].append((OTHER, 2001, 5))
    # a datagram to port 17226: nobody's port, not TRDP, not counted
    add(udp(PUB, 40000, HVAC, 17226, pd(9, 1002), ident + 41))
    # MD over TCP to hvac's address: hvac's connection
    isn, isn2 = 1000, 5000
    add(tcp(PUB, 40010, HVAC, 17225, isn, 0, SYN, b"", 200))
    add(tcp(HVAC, 17225, PUB, 40010, isn2, isn + 1, SYN | ACK, b"", 201))
    m0, _ = md(0, 2002, 100)
    m1, _ = md(1, 2002, 60)
    add(tcp(PUB, 40010, HVAC, 17225, isn + 1, isn2 + 1, PSH | ACK, m0 + m1, 202))
    fin = isn + 1 + len(m0) + len(m1)
    add(tcp(PUB, 40010, HVAC, 17225, fin, isn2 + 1, FIN | ACK, b"", 203))
    add(tcp(HVAC, 17225, PUB, 40010, isn2 + 1, fin + 1, FIN | ACK, b"", 204))
    want["hvac"] += [(HVAC, 2002, 0), (HVAC, 2002, 1)]

    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "split.pcap")
        with open(cap, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for t_us, frame in packets:
                f.write(struct.pack("<IIII", T0 + t_us // 10**6, t_us % 10**6, len(frame), len(frame)) + frame)
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write(BOARD)
        out = os.path.join(tmp, "log")
        r = subprocess.run([railmon, "replay", cap, "--board", board, "--data", out, "--quiet"],
                           capture_output=True, text=True)
        print(r.stderr.strip())
        said = ("into 3 [trdp] buses by the address each telegram was sent to (bind, group): 'doors' 4, "
                "'hvac' 3, 'traction' 2 UDP datagrams and TCP connections; 2 on their ports addressed to none "
                "of them (the first to 239.193.0.9:17224), counted (stat: capture_unmatched) and not replayed")
        if r.returncode != 0 or said not in r.stderr:
            bad.append("replay exit %d, want 0 and the split said: %r" % (r.returncode, said))
        e = subprocess.run([railmon, "export", "--data", out, "--format", "jsonl"], capture_output=True,
                           text=True)
        got = {"doors": [], "hvac": [], "traction": []}
        for x in map(json.loads, e.stdout.splitlines()):
            if x["kind"] == "trdp":
                name = ("doors", "hvac", "traction")[x["bus"]] if x["bus"] < 3 else x["bus"]
                got.setdefault(name, []).append((x["dst"], x["com_id"], x["seq_counter"]))
        for name in want:
            if sorted(got.get(name, [])) != sorted(want[name]):
                bad.append("bus %s recorded %s, want %s" % (name, sorted(got.get(name, [])), sorted(want[name])))
        if set(got) != set(want):
            bad.append("records of buses %s" % sorted(got, key=str))
        s = subprocess.run([railmon, "stat", "--data", out, "--json"], capture_output=True, text=True)
        rows = {x["name"]: x for x in map(json.loads, (y for y in s.stdout.splitlines() if y.startswith("{")))}
        for name, unmatched in (("doors", 2), ("hvac", 0), ("traction", 0)):
            row = rows.get(name, {})
            if row.get("capture_unmatched") != unmatched or row.get("telegrams") != len(want[name]):
                bad.append("stat %s: capture_unmatched %s (want %d), telegrams %s (want %d)" % (
                    name, row.get("capture_unmatched"), unmatched, row.get("telegrams"), len(want[name])))
        # a board whose buses take none of it: refused, said
        with open(board, "w") as f:
            f.write(BOARD.replace("group = 239.193.0.1", "bind = 10.0.0.7").replace("10.0.0.2", "10.0.0.8")
                    .replace("group = 239.193.0.2", "bind = 10.0.0.9"))
        r = subprocess.run([railmon, "replay", cap, "--board", board, "--data", os.path.join(tmp, "none"), "--quiet"],
                           capture_output=True, text=True)
        if r.returncode != 1 or "none of its TRDP traffic is addressed to a bus of the board" not in r.stderr:
            bad.append("a board taking none of the capture: exit %d, %r" % (r.returncode, r.stderr[-400:]))
    for b in bad:
        print(b)
    if bad:
        return 1
    print("one capture into 3 TRDP buses: %s records each as addressed, 2 to no bus counted and said" %
          {k: len(v) for k, v in want.items()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
