#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""pcap-gen.py DIR [--seeds] - small captures written byte by byte from the formats'
specifications (pcap: the tcpdump.org file format, both magics; pcapng:
draft-ietf-opsawg-pcapng, SHB/IDB/EPB with if_tsresol), for test-pcap.c's
checks and the fuzzer's seeds (tests/fuzz/corpus/pcap).  Each file's
expected reader view is in the C test; the traffic:

  udp.pcap     Ethernet, us: a PD datagram untagged, one 802.1Q VLAN 5, one
               802.1ad 100 + 802.1Q 7, a 3000-byte datagram in 3 fragments
               sent last-first (the middle one twice: a repeat, not an overlap), a datagram to port 9999 (not ours), an ARP
  tcp.pcap     Ethernet, ns magic: SYN, SYN-ACK, 3 segments with the 2nd and
               3rd swapped and the 1st repeated, a reply, FIN both ways, the
               last ACK
  frag.pcap    raw IPv4 (LINKTYPE_RAW): overlapping fragments, a datagram
               never completed, one that completes after another's timeout
  overlap.pcap a SYN, "hello " and then "lo world\n" 3 bytes before its
               end (a retransmission reaching past what was had), then
               "hel" again (all old); the capture's end closes it
  conns.pcap   two connections interleaved, neither closed (SYN, SYN, a
               segment of each): the capture's end closes them
  sll.pcap     Linux cooked SLL with a VLAN tag; sll2.pcap: SLL2
  two.pcapng   two Ethernet interfaces, if_tsresol 9 (ns) and 6 (us)

With --seeds, DIR gets each file twice with fuzz-pcap's first byte before
it (0: the default bounds, 15: the smallest): tests/fuzz/corpus/pcap.
"""
import os
import struct
import sys

T0 = 1700000000  # 2023-11-14T22:13:20Z


def csum(h):
    s = sum(struct.unpack("!%dH" % (len(h) // 2), h))
    s = (s & 0xffff) + (s >> 16)
    return (~(s + (s >> 16))) & 0xffff


def ip(src, dst, proto, payload, ident=1, off8=0, mf=False):
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, (0x2000 if mf else 0) | off8, 64, proto, 0,
                    bytes(src), bytes(dst))
    return h[:10] + struct.pack("!H", csum(h)) + h[12:] + payload


def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def tcp(sport, dport, seq, ack, flags, data=b""):
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + data


A, B = (192, 0, 2, 1), (192, 0, 2, 2)
MA, MB = bytes.fromhex("020000000001"), bytes.fromhex("020000000002")


def eth(payload, tags=(), etype=0x0800):
    l2 = MB + MA
    for i, t in enumerate(tags):
        l2 += struct.pack("!HH", 0x88a8 if i < len(tags) - 1 else 0x8100, t)
    return l2 + struct.pack("!H", etype) + payload


def pcap(path, linktype, packets, nano=False):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b23c4d if nano else 0xa1b2c3d4, 2, 4, 0, 0, 65535, linktype))
        for t_ns, p in packets:
            sub = t_ns % 10**9 if nano else t_ns % 10**9 // 1000
            f.write(struct.pack("<IIII", t_ns // 10**9, sub, len(p), len(p)) + p)


def fragments(src, dst, dgram, ident, size):
    out = []
    for off in range(0, len(dgram), size):
        out.append(ip(src, dst, 17, dgram[off:off + size], ident, off // 8, off + size < len(dgram)))
    return out


def main(d):
    os.makedirs(d, exist_ok=True)
    t = T0 * 10**9
    big = bytes(range(256)) * 11 + bytes(184)  # 3000 bytes
    frags = fragments(A, B, udp(40000, 17224, big), 77, 1480)
    pkts = [eth(ip(A, B, 17, udp(40001, 17224, b"pd untagged"))),
            eth(ip(A, B, 17, udp(40002, 17224, b"pd vlan 5")), (5,)),
            eth(ip(A, B, 17, udp(40003, 17225, b"md qinq")), (100, 7)),
            eth(frags[2]), eth(frags[1]), eth(frags[1]), eth(frags[0]),
            eth(ip(A, B, 17, udp(40004, 9999, b"not ours"))),
            eth(bytes(28), etype=0x0806)]
    pcap(os.path.join(d, "udp.pcap"), 1, [(t + i * 1000, p) for i, p in enumerate(pkts)])

    c, s = 1000, 5000
    m1, m2, m3, rep = b"first message\n", b"second\n", b"third and last\n", b"reply\n"
    segs = [tcp(50000, 17225, c, 0, 0x02),
            tcp(17225, 50000, s, c + 1, 0x12),
            tcp(50000, 17225, c + 1, s + 1, 0x18, m1),
            tcp(50000, 17225, c + 1 + len(m1) + len(m2), s + 1, 0x18, m3),   # third before second
            tcp(50000, 17225, c + 1 + len(m1), s + 1, 0x18, m2),
            tcp(50000, 17225, c + 1, s + 1, 0x18, m1),                         # first again
            tcp(17225, 50000, s + 1, c + 1 + 36, 0x18, rep),
            tcp(50000, 17225, c + 1 + 36, s + 1 + len(rep), 0x11),
            tcp(17225, 50000, s + 1 + len(rep), c + 2 + 36, 0x11),
            tcp(50000, 17225, c + 2 + 36, s + 2 + len(rep), 0x10)]
    pcap(os.path.join(d, "tcp.pcap"), 1, [(t + i * 1001, eth(ip(A, B, 6, x) if x[2:4] == b"\x43\x49" else
                                                           ip(B, A, 6, x))) for i, x in enumerate(segs)],
         nano=True)

    ov = [tcp(50003, 17225, c, 0, 0x02),
          tcp(50003, 17225, c + 1, 0, 0x18, b"hello "),
          tcp(50003, 17225, c + 4, 0, 0x18, b"lo world\n"),
          tcp(50003, 17225, c + 1, 0, 0x18, b"hel")]
    pcap(os.path.join(d, "overlap.pcap"), 1, [(t + i, eth(ip(A, B, 6, x))) for i, x in enumerate(ov)])

    two = [ip(A, B, 6, tcp(50001, 17225, 100, 0, 0x02)), ip(A, B, 6, tcp(50002, 17225, 200, 0, 0x02)),
           ip(A, B, 6, tcp(50001, 17225, 101, 1, 0x18, b"one")), ip(A, B, 6, tcp(50002, 17225, 201, 1, 0x18, b"two"))]
    pcap(os.path.join(d, "conns.pcap"), 1, [(t + i, eth(x)) for i, x in enumerate(two)])

    d1 = udp(40010, 17224, bytes(120))
    pk = [ip(A, B, 17, d1[:64], 10, 0, True), ip(A, B, 17, d1[32:], 10, 4, False),   # overlap
          ip(A, B, 17, d1[:64], 11, 0, True),                                        # never completed
          ip(A, B, 17, d1[:64], 12, 0, True)]
    times = [t, t + 1, t + 2, t + 3]
    # 31 s later (past the 30 s timeout of 11 and 12): 12's end comes too late
    pk.append(ip(A, B, 17, d1[64:], 12, 8, False))
    times.append(t + 31 * 10**9 + 3)
    pcap(os.path.join(d, "frag.pcap"), 101, list(zip(times, pk)))

    # SLL: packet type, ARPHRD, address length, address (8), protocol
    sll = struct.pack("!HHH8sH", 0, 1, 6, MA + b"\0\0", 0x8100) + struct.pack("!HH", 5, 0x0800) + \
        ip(A, B, 17, udp(40020, 17224, b"over sll"))
    pcap(os.path.join(d, "sll.pcap"), 113, [(t, sll)], nano=True)
    # SLL2: protocol, reserved, ifindex, ARPHRD, packet type, address length, address (8)
    sll2 = struct.pack("!HHIHBB8s", 0x0800, 0, 3, 1, 0, 6, MA + b"\0\0") + ip(A, B, 17, udp(40021, 17225, b"over sll2"))
    pcap(os.path.join(d, "sll2.pcap"), 276, [(t + 5, sll2)], nano=True)

    with open(os.path.join(d, "two.pcapng"), "wb") as f:
        def block(typ, body):
            body += b"\0" * (-len(body) % 4)
            f.write(struct.pack("<II", typ, 12 + len(body)) + body + struct.pack("<I", 12 + len(body)))
        block(0x0a0d0d0a, struct.pack("<IHHq", 0x1a2b3c4d, 1, 0, -1))
        # IDB: linktype, reserved, snaplen, options: if_tsresol (9) = 9 / 6, opt_endofopt
        block(1, struct.pack("<HHI", 1, 0, 65535) + struct.pack("<HHB3x", 9, 1, 9) + struct.pack("<HH", 0, 0))
        block(1, struct.pack("<HHI", 1, 0, 65535) + struct.pack("<HHB3x", 9, 1, 6) + struct.pack("<HH", 0, 0))
        for iface, ts, data in ((0, t + 123456789, b"ng ns"), (1, (t + 234567000) // 1000, b"ng us")):
            p = eth(ip(A, B, 17, udp(40030 + iface, 17224, data)))
            body = struct.pack("<IIIII", iface, ts >> 32, ts & 0xffffffff, len(p), len(p)) + p
            block(6, body + b"\0" * (-len(body) % 4))


if len(sys.argv) > 2 and sys.argv[2] == "--seeds":
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        main(tmp)
        for name in sorted(os.listdir(tmp)):
            for bounds in (0, 15):
                with open(os.path.join(sys.argv[1], "%s-%d" % (name, bounds)), "wb") as f:
                    f.write(bytes([bounds]) + open(os.path.join(tmp, name), "rb").read())
else:
    main(sys.argv[1])
