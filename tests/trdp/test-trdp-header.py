#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""trdp/header.c against headers built by an independent writer
(trdp_pub.py: struct and zlib.crc32 from the specification): random valid
PD and MD headers read back field by field, then mutations, each with the
one reason it must be refused for, and the MD framing in a TCP stream.
Usage: test-trdp-header.py TRDP-HEADER-DUMP"""
import os
import random
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trdp_pub as tp  # noqa: E402

EAGAIN, EBADMSG = 11, 74
PD_TYPES = ["Pd", "Pp", "Pr", "Pe"]
MD_TYPES = ["Mn", "Mr", "Mp", "Mq", "Mc", "Me"]


def pd_case(rnd, **over):
    f = dict(seq=rnd.getrandbits(32), com_id=rnd.getrandbits(32), etb=rnd.getrandbits(32),
             optrn=rnd.getrandbits(32), reserved=rnd.getrandbits(32),
             reply_com_id=rnd.getrandbits(32), reply_ip=rnd.getrandbits(32),
             msg_type=tp.MSG[rnd.choice(PD_TYPES)], version=0x0100 | rnd.getrandbits(8))
    f.update(over)
    size = f.pop("size", rnd.randrange(0, 200))
    f.setdefault("dataset_len", size)
    data = bytes(rnd.getrandbits(8) for _ in range(size))
    head = tp.pd_header(**f)
    return head, tp.pad4(data, b"\x5a"), f


def md_case(rnd, **over):
    f = dict(seq=rnd.getrandbits(32), com_id=rnd.getrandbits(32), etb=rnd.getrandbits(32),
             optrn=rnd.getrandbits(32), reply_status=rnd.randrange(-2**31, 2**31),
             session=bytes(rnd.getrandbits(8) for _ in range(16)),
             reply_timeout=rnd.getrandbits(32),
             src_uri=bytes(rnd.randrange(32, 127) for _ in range(rnd.randrange(0, 33))),
             dst_uri=bytes(rnd.randrange(32, 127) for _ in range(rnd.randrange(0, 33))),
             msg_type=tp.MSG[rnd.choice(MD_TYPES)], version=0x0100 | rnd.getrandbits(8))
    f.update(over)
    size = f.pop("size", rnd.randrange(0, 300))
    f.setdefault("dataset_len", size)
    data = bytes(rnd.getrandbits(8) for _ in range(size))
    head = tp.md_header(**f)
    return head, tp.pad4(data), f


def type_name(t):
    return chr(t >> 8) + chr(t & 0xFF)


def want_fields(kind, head, f):
    w = {"seq": f["seq"], "version": f["version"], "type": type_name(f["msg_type"]),
         "com_id": f["com_id"], "etb": f["etb"], "optrn": f["optrn"],
         "dataset_len": f["dataset_len"], "fcs": struct.unpack("<I", head[-4:])[0]}
    if kind == "pd":
        w.update(reserved=f["reserved"], reply_com_id=f["reply_com_id"], reply_ip=f["reply_ip"])
    else:
        w.update(reply_status=f["reply_status"], reply_timeout=f["reply_timeout"],
                 session=f["session"].hex(), src_uri=f["src_uri"].ljust(32, b"\0").hex(),
                 dst_uri=f["dst_uri"].ljust(32, b"\0").hex())
    return {k: str(v) for k, v in w.items()}


def main():
    rnd = random.Random(31)
    cases = []  # (input line, expected dict (subset), label)

    def add(kind, wire, result, label, fields=None):
        want = {"result": result}
        if fields:
            want.update(fields)
        cases.append(("%s %s" % (kind, wire.hex()), want, label))

    for i in range(300):
        head, data, f = pd_case(rnd)
        add("pd", head + data, "ok", "valid pd %d" % i, want_fields("pd", head, f))
        head, data, f = md_case(rnd)
        add("md", head + data, "ok", "valid md %d" % i, want_fields("md", head, f))
    # every byte of the header covered by the FCS, and the FCS itself
    head, data, _ = pd_case(rnd, size=8)
    for i in range(40):
        m = bytearray(head)
        m[i] ^= 1 << rnd.randrange(8)
        add("pd", bytes(m) + data, "bad-fcs", "pd byte %d flipped" % i)
    head, data, _ = md_case(rnd, size=8)
    for i in range(116):
        m = bytearray(head)
        m[i] ^= 1 << rnd.randrange(8)
        add("md", bytes(m) + data, "bad-fcs", "md byte %d flipped" % i)
    # the FCS is checked before anything else
    head, data, _ = pd_case(rnd, version=0x0200, bad_fcs=True)
    add("pd", head + data, "bad-fcs", "bad fcs and version")
    # version: the major byte only
    for v, r in [(0x0100, "ok"), (0x01FF, "ok"), (0x0000, "bad-version"), (0x0200, "bad-version"),
                 (0x0101, "ok"), (0xFF00, "bad-version")]:
        head, data, f = pd_case(rnd, version=v)
        add("pd", head + data, r, "pd version %04x" % v, want_fields("pd", head, f))
        head, data, f = md_case(rnd, version=v)
        add("md", head + data, r, "md version %04x" % v, want_fields("md", head, f))
    # type: each kind's own types only
    for t in PD_TYPES:
        head, data, f = pd_case(rnd, msg_type=tp.MSG[t])
        add("pd", head + data, "ok", "pd type " + t, want_fields("pd", head, f))
        head, data, f = md_case(rnd, msg_type=tp.MSG[t])
        add("md", head + data, "bad-type", "md with type " + t)
    for t in MD_TYPES:
        head, data, f = md_case(rnd, msg_type=tp.MSG[t])
        add("md", head + data, "ok", "md type " + t, want_fields("md", head, f))
        head, data, f = pd_case(rnd, msg_type=tp.MSG[t])
        add("pd", head + data, "bad-type", "pd with type " + t)
    for raw in [0, 0x5000, 0x5063, 0x4D6D, 0x6450]:
        head, data, f = pd_case(rnd, msg_type=raw)
        add("pd", head + data, "bad-type", "pd type %04x" % raw)
    # lengths: the maximum, over it, over the bytes received, padding
    head, data, _ = pd_case(rnd, size=1432)
    add("pd", head + data, "ok", "pd 1432")
    head = tp.pd_header(1, 2, 1433)
    add("pd", head + bytes(1436), "too-long", "pd 1433")
    head = tp.pd_header(1, 2, 0xFFFFFFFF)
    add("pd", head, "too-long", "pd 2^32-1")
    head = tp.md_header(1, 2, 65389)
    add("md", head + bytes(65392), "too-long", "md 65389")
    head = tp.md_header(1, 2, 65388)
    add("md", head + bytes(65388), "ok", "md 65388")
    head = tp.pd_header(1, 2, 100)
    add("pd", head + bytes(99), "truncated", "pd 100 in 99")
    add("pd", head + bytes(100), "ok", "pd 100 in 100")
    add("pd", head + bytes(104), "ok", "pd 100 with padding")
    head = tp.pd_header(1, 2, 0)
    add("pd", head, "ok", "pd header only")
    add("pd", head[:39], "short", "pd 39 bytes")
    add("pd", b"", "short", "pd empty")
    head = tp.md_header(1, 2, 5)
    add("md", head + b"abcd", "truncated", "md 5 in 4")
    add("md", head[:115], "short", "md 115 bytes")
    add("md", tp.pd_header(1, 2, 76) + bytes(76), "bad-fcs", "pd read as md")
    # MD framing in a TCP stream
    frames = []
    for dl in [0, 1, 2, 3, 4, 5, 1000, 65388]:
        head = tp.md_header(7, 8, dl)
        frames.append(("frame %s" % (head + bytes(3)).hex(), {"r": "0", "len": str(116 + dl + (-dl) % 4)},
                       "frame dataset %d" % dl))
    head = tp.md_header(7, 8, 10)
    frames.append(("frame %s" % head[:115].hex(), {"r": str(-EAGAIN)}, "frame 115 bytes"))
    frames.append(("frame %s" % tp.md_header(7, 8, 10, bad_fcs=True).hex(),
                   {"r": str(-EBADMSG), "result": "bad-fcs"}, "frame bad fcs"))
    frames.append(("frame %s" % tp.md_header(7, 8, 65389).hex(),
                   {"r": str(-EBADMSG), "result": "too-long"}, "frame too long"))
    frames.append(("frame %s" % tp.md_header(7, 8, 4, msg_type=tp.MSG["Pd"]).hex(),
                   {"r": str(-EBADMSG), "result": "bad-type"}, "frame pd type"))
    cases += frames

    inp = "".join(c[0] + "\n" for c in cases)
    out = subprocess.run([sys.argv[1]], input=inp, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert len(lines) == len(cases), "%d lines for %d cases" % (len(lines), len(cases))
    bad = 0
    for (_, want, label), line in zip(cases, lines):
        got = dict(kv.split("=", 1) for kv in line.split())
        diff = {k: (got.get(k), v) for k, v in want.items() if got.get(k) != v}
        if diff:
            bad += 1
            print("%s: %s" % (label, diff))
    print("%d cases, %d wrong" % (len(cases), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
