#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`railmon replay` of a capture written here byte by byte (classic pcap,
Ethernet, IPv4, UDP and TCP from their RFCs; the telegrams by trdp_pub.py
from IEC 61375-2-3), so every way a telegram can lie in a capture is
there, not only those a kernel happens to make:

- MD over TCP: a message cut over three segments (recorded once, when
  its last byte came, at that packet's time), two messages and a half in
  one segment, then a message with a bad header FCS: its header recorded
  raw and refused, and the rest of that direction passed over; a connection with
  bytes never captured (a gap: damage, exit 1): the message cut by it
  refused, the rest passed over;
- an MD reply over UDP from port 17225 to the requester's ephemeral port;
- PD to 17224, one with a bad FCS (refused, counted), one over an 802.1Q
  VLAN; a datagram to another port (not TRDP: not recorded).

  test-trdp-capture-file.py RAILMON
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import trdp_pub  # noqa: E402

CLIENT, SERVER, GROUP = "10.0.0.1", "10.0.0.2", "239.193.0.1"
T0 = 1764900000  # capture seconds
RESULT_SHORT, RESULT_BAD_FCS = 1, 2


def ip4(a):
    return bytes(int(x) for x in a.split("."))


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src, dst, proto, payload, ident):
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, 0x4000, 64, proto, 0, ip4(src), ip4(dst))
    head = head[:10] + struct.pack("!H", csum(head)) + head[12:]
    return head + payload


def ether(ip, vlan=None):
    macs = bytes.fromhex("020000000002") + bytes.fromhex("020000000001")
    if vlan is not None:
        return macs + struct.pack("!HH", 0x8100, vlan) + b"\x08\x00" + ip
    return macs + b"\x08\x00" + ip


def udp(src, sport, dst, dport, data, ident, vlan=None):
    return ether(ipv4(src, dst, 17, struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data, ident), vlan)


def tcp(src, sport, dst, dport, seq, ack, flags, data, ident):
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + data
    return ether(ipv4(src, dst, 6, seg, ident))


SYN, ACK, PSH, FIN = 0x02, 0x10, 0x08, 0x01


def md(seq, com_id, size, msg_type="Mn", bad_fcs=False):
    data = trdp_pub.payload_for(com_id, seq, size)
    sid = bytes(range(15)) + bytes([seq & 0xFF])
    head = trdp_pub.md_header(seq, com_id, len(data), msg_type=trdp_pub.MSG[msg_type], etb=1, optrn=2,
                              session=sid, src_uri=b"pub", dst_uri=b"railmon", bad_fcs=bad_fcs)
    return head + trdp_pub.pad4(data), sid


def main():
    railmon = sys.argv[1]
    packets, want = [], []  # (time_us, frame); the records expected in order

    def add(frame):
        packets.append((len(packets) * 1000 + 17, frame))
        return T0 * 10**9 + packets[-1][0] * 1000

    def expect(t_ns, wire, kind, src, sport, dst, dport, com_id=0, seq=0, msg="", tcp_=False, bad=False, sid=None,
               result=RESULT_BAD_FCS):
        r = {"time_ns": t_ns, "data": wire.hex(), "src": src, "src_port": sport, "dst": dst, "dst_port": dport,
             "com_id": 0 if bad else com_id, "seq_counter": 0 if bad else seq, "etb_topo": 0 if bad else 1,
             "op_trn_topo": 0 if bad else 2, "result": result if bad else 0}
        if not bad:
            r["flags"] = msg + ("|TCP" if tcp_ else "")
        if kind == "md" and not bad:
            r["session_id"] = sid.hex()
        want.append(r)

    # PD: good, bad FCS, over a VLAN, and one to a port that is not TRDP's
    for i, (bad, vlan) in enumerate(((False, None), (True, None), (False, 7))):
        data = trdp_pub.payload_for(1000, i, 24)
        wire = trdp_pub.pd_header(i, 1000, len(data), etb=1, optrn=2, bad_fcs=bad) + trdp_pub.pad4(data)
        t = add(udp(CLIENT, 40000, GROUP, 17224, wire, 100 + i, vlan))
        expect(t, wire, "pd", CLIENT, 40000, GROUP, 17224, 1000, i, "Pd", bad=bad)
    add(udp(CLIENT, 40000, SERVER, 17226, wire, 110))
    # MD over TCP, client to server
    isn, isn2 = 1000, 5000
    add(tcp(CLIENT, 40002, SERVER, 17225, isn, 0, SYN, b"", 200))
    add(tcp(SERVER, 17225, CLIENT, 40002, isn2, isn + 1, SYN | ACK, b"", 201))
    m = [md(k, 2002, 300 + 40 * k) for k in range(4)]
    bad_m, _ = md(9, 2002, 64, bad_fcs=True)
    stream = m[0][0] + m[1][0] + m[2][0] + m[3][0] + bad_m
    cuts = [60, 200, len(m[0][0]),                                  # m0 over three segments
            len(m[0][0]) + len(m[1][0]) + len(m[2][0]) + 100,        # m1, m2 and part of m3
            len(m[0][0]) + len(m[1][0]) + len(m[2][0]) + len(m[3][0]),  # the rest of m3
            len(stream)]                                             # the bad one
    at, ident, times = 0, 300, []
    for c in cuts:
        times.append(add(tcp(CLIENT, 40002, SERVER, 17225, isn + 1 + at, isn2 + 1, PSH | ACK, stream[at:c], ident)))
        at, ident = c, ident + 1
    for k, t in ((0, times[2]), (1, times[3]), (2, times[3]), (3, times[4])):
        expect(t, m[k][0], "md", CLIENT, 40002, SERVER, 17225, 2002, k, "Mn", tcp_=True, sid=m[k][1])
    # its header only, as the live listener reads no further
    expect(times[5], bad_m[:116], "md", CLIENT, 40002, SERVER, 17225, tcp_=True, bad=True)
    # after the bad header: passed over until the end
    more, _ = md(10, 2002, 32)
    add(tcp(CLIENT, 40002, SERVER, 17225, isn + 1 + len(stream), isn2 + 1, PSH | ACK, more, ident))
    fin_seq = isn + 1 + len(stream) + len(more)
    add(tcp(CLIENT, 40002, SERVER, 17225, fin_seq, isn2 + 1, FIN | ACK, b"", ident + 1))
    add(tcp(SERVER, 17225, CLIENT, 40002, isn2 + 1, fin_seq + 1, FIN | ACK, b"", 202))
    # a second connection whose segment was never captured: the message
    # before the gap recorded, a message cut by it refused (truncated),
    # what follows it passed over (its framing is lost), the gap dropped
    g0, gsid = md(20, 2004, 64)
    g1, _ = md(21, 2004, 400)
    gisn = 9000
    add(tcp(CLIENT, 40006, SERVER, 17225, gisn, 0, SYN, b"", 500))
    add(tcp(SERVER, 17225, CLIENT, 40006, gisn2 := 7000, gisn + 1, SYN | ACK, b"", 501))
    tg = add(tcp(CLIENT, 40006, SERVER, 17225, gisn + 1, gisn2 + 1, PSH | ACK, g0 + g1[:100], 502))
    expect(tg, g0, "md", CLIENT, 40006, SERVER, 17225, 2004, 20, "Mn", tcp_=True, sid=gsid)
    expect(tg, g1[:100], "md", CLIENT, 40006, SERVER, 17225, tcp_=True, bad=True, result=RESULT_SHORT)
    # g1[100:200] never captured
    add(tcp(CLIENT, 40006, SERVER, 17225, gisn + 1 + len(g0) + 200, gisn2 + 1, PSH | ACK, g1[200:], 503))
    fin = gisn + 1 + len(g0) + len(g1)
    add(tcp(CLIENT, 40006, SERVER, 17225, fin, gisn2 + 1, FIN | ACK, b"", 504))
    add(tcp(SERVER, 17225, CLIENT, 40006, gisn2 + 1, fin + 1, FIN | ACK, b"", 505))
    # an MD reply over UDP: from 17225 to the requester's ephemeral port
    reply, sid = md(3, 2003, 40, msg_type="Mp")
    t = add(udp(SERVER, 17225, CLIENT, 40004, reply, 400))
    expect(t, reply, "md", SERVER, 17225, CLIENT, 40004, 2003, 3, "Mp", sid=sid)

    with tempfile.TemporaryDirectory() as tmp:
        cap = os.path.join(tmp, "written.pcap")
        with open(cap, "wb") as f:
            f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
            for t_us, frame in packets:
                f.write(struct.pack("<IIII", T0 + t_us // 10**6, t_us % 10**6, len(frame), len(frame)) + frame)
        out = os.path.join(tmp, "log")
        r = subprocess.run([railmon, "replay", cap, "--data", out, "--quiet"], capture_output=True, text=True)
        print(r.stderr.strip())
        # the gap is damage: said, the rest replayed, exit 1
        if r.returncode != 1 or "100 bytes of TCP connection 2 never seen" not in r.stderr:
            print("replay exit %d, want 1 and the gap named" % r.returncode)
            return 1
        e = subprocess.run([railmon, "export", "--data", out, "--format", "jsonl"], capture_output=True,
                           text=True, check=True)
        got = [json.loads(x) for x in e.stdout.splitlines()]
        rows = subprocess.run([railmon, "stat", "--data", out, "--json"], capture_output=True, text=True)
        # paced (--speed): the same telegrams, stamped at delivery (wall
        # clock, as a live bus) instead of with the capture's times
        paced = os.path.join(tmp, "paced")
        t_from = time.time_ns()
        r = subprocess.run([railmon, "replay", cap, "--data", paced, "--speed", "1000", "--quiet"],
                           capture_output=True, text=True)
        t_to = time.time_ns()
        e = subprocess.run([railmon, "export", "--data", paced, "--format", "jsonl"], capture_output=True,
                           text=True, check=True)
        paced_recs = [json.loads(x) for x in e.stdout.splitlines() if '"kind":"trdp"' in x]
    recs = [x for x in got if x["kind"] == "trdp"]
    bad = 0
    if len(recs) != len(want):
        print("%d records, want %d" % (len(recs), len(want)))
        bad += 1
    for i, (g, w) in enumerate(zip(recs, want)):
        diff = {k: (g.get(k), v) for k, v in w.items() if g.get(k) != v}
        if diff:
            bad += 1
            print("record %d: %s" % (i, {k: (str(a)[:80], str(b)[:80]) for k, (a, b) in diff.items()}))
    row = next((json.loads(x) for x in rows.stdout.splitlines() if '"kind":"trdp"' in x.replace(" ", "")), {})
    if row.get("bad_input") != 3 or row.get("rx_dropped") != 1:
        print("stat's trdp row: bad_input %s, want 3 (two bad FCS, one cut by the gap), rx_dropped %s, want 1 "
              "(the gap)" % (row.get("bad_input"), row.get("rx_dropped")))
        bad += 1
    # the same telegrams; their order in time may differ: the bytes cut by
    # the gap carry the time of their last packet unpaced, their delivery
    # time (at the capture's end, where the gap is known) paced
    def fields(rs):
        return sorted(json.dumps({k: v for k, v in x.items() if k not in ("time_ns", "time", "seq", "log_id")},
                                 sort_keys=True) for x in rs)
    if r.returncode != 1 or fields(paced_recs) != fields(recs) or \
            not all(t_from <= x["time_ns"] <= t_to for x in paced_recs):
        print("--speed 1000: exit %d, %d records, times %s..%s, the replay ran %d..%d" % (
            r.returncode, len(paced_recs), paced_recs[0]["time_ns"] if paced_recs else None,
            paced_recs[-1]["time_ns"] if paced_recs else None, t_from, t_to))
        bad += 1
    print("capture written by hand: %d packets, %d records as expected of %d; %d wrong" % (
        len(packets), len(recs) - bad if len(recs) >= bad else 0, len(want), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
