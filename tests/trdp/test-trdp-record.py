#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Raw TRDP telegrams through railmon's record format, checked against
what did not come from railmon: the telegrams are built by trdp_pub.py
(from the specification), the Batch is decoded by python3-protobuf from
the public railmon.proto, and the export lines are compared field by field
with what was built.  Usage: test-trdp-record.py TOOL PB2_DIR"""
import ipaddress
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import trdp_pub as tp  # noqa: E402

RESULT = {"ok": 0, "short": 1, "bad-fcs": 2, "bad-version": 3, "bad-type": 4, "too-long": 5, "truncated": 6}


def build(rnd):
    """(kind, tcp, wire bytes, expected result name, fields or None)"""
    out = []
    for i in range(60):
        size = rnd.randrange(0, 300)
        data = bytes(rnd.getrandbits(8) for _ in range(size))
        f = dict(seq=rnd.getrandbits(32), com_id=rnd.getrandbits(32), etb=rnd.getrandbits(32),
                 optrn=rnd.getrandbits(32))
        case = i % 6
        if case in (0, 1):
            out.append(("pd", 0, tp.pd_header(dataset_len=size, **f) + tp.pad4(data, b"\x99"), "ok", f, None))
        elif case == 2:
            out.append(("pd", 0, tp.pd_header(dataset_len=size, bad_fcs=True, **f) + tp.pad4(data), "bad-fcs",
                        None, None))
        elif case == 3:
            out.append(("pd", 0, tp.pd_header(dataset_len=size + 8, **f) + data, "truncated", f, None))
        else:
            sid = bytes(rnd.getrandbits(8) for _ in range(16))
            wire = tp.md_header(dataset_len=size, session=sid, src_uri=b"a", dst_uri=b"b", **f) + tp.pad4(data)
            out.append(("md", case - 4, wire, "ok", f, sid))
    # the largest MD telegram: a header and 65,388 bytes of data set
    f = dict(seq=7, com_id=8, etb=9, optrn=10)
    sid = bytes(range(100, 116))
    big = bytes(rnd.getrandbits(8) for _ in range(65388))
    out.append(("md", 0, tp.md_header(dataset_len=len(big), session=sid, **f) + big, "ok", f, sid))
    out.append(("pd", 0, b"\x01\x02\x03", "short", None, None))
    out.append(("md", 0, tp.pd_header(1, 2, 0), "short", None, None))
    return out


def main():
    tool, pb2_dir = sys.argv[1], sys.argv[2]
    sys.path.insert(0, pb2_dir)
    import railmon_pb2
    rnd = random.Random(3117)
    cases = build(rnd)
    t0 = 1764900000123456789
    addrs = []
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "in.txt")
        with open(inp, "w") as f:
            for i, (kind, tcp, wire, _, _, _) in enumerate(cases):
                src = int(ipaddress.IPv4Address("192.0.2.%d" % (1 + i % 200)))
                dst = int(ipaddress.IPv4Address("239.193.0.1" if i % 2 else "192.0.2.254"))
                sport, dport = 40000 + i, 17224 if kind == "pd" else 17225
                addrs.append((src, dst, sport, dport))
                f.write("%d %d %s %d %d %d %d %d %s\n" % (t0 + i * 1000, 3, kind, tcp, src, dst, sport, dport,
                                                          wire.hex()))
        paths = [os.path.join(tmp, x) for x in ("batch.bin", "out.jsonl", "out.csv")]
        subprocess.run([tool, inp] + paths, check=True)
        batch = railmon_pb2.Batch()
        batch.ParseFromString(open(paths[0], "rb").read())
        jl = [json.loads(x) for x in open(paths[1])]
        csv = open(paths[2]).read().splitlines()
    tr = batch.trdp
    n = len(cases)
    assert len(tr.t_delta_ns) == n, (len(tr.t_delta_ns), n)
    t, off, sess, bad = batch.t0_ns, 0, 0, 0
    sids = b""
    trdp_lines = [x for x in jl if x["kind"] == "trdp"]
    assert [x["kind"] for x in jl[:3]] == ["can", "event", "text"], [x["kind"] for x in jl[:3]]
    assert len(trdp_lines) == n
    csv_trdp = [x for x in csv if ",trdp," in x]
    assert len(csv_trdp) == n

    def fail(i, what, got, want):
        nonlocal bad
        bad += 1
        print("telegram %d: %s: got %r, want %r" % (i, what, got, want))

    for i, (kind, tcp, wire, result, f, sid) in enumerate(cases):
        t += tr.t_delta_ns[i]
        src, dst, sport, dport = addrs[i]
        good = f is not None
        want = dict(bus=3, src_ip=src, dst_ip=dst, ports=sport << 16 | dport,
                    com_id=f["com_id"] if good else 0, seq=f["seq"] if good else 0,
                    etb_topo=f["etb"] if good else 0, op_trn_topo=f["optrn"] if good else 0,
                    msg_type=(tp.MSG["Pd"] if kind == "pd" else tp.MSG["Mn"]) if good else 0,
                    flags=(1 if kind == "md" else 0) | (2 if tcp else 0) | RESULT[result] << 8, len=len(wire))
        for k, v in want.items():
            if getattr(tr, k)[i] != v:
                fail(i, k, getattr(tr, k)[i], v)
        if t != t0 + i * 1000:
            fail(i, "time", t, t0 + i * 1000)
        if tr.data[off:off + len(wire)] != wire:
            fail(i, "bytes", tr.data[off:off + len(wire)].hex(), wire.hex())
        off += len(wire)
        if kind == "md":
            sids += sid if sid else bytes(16)
        line = trdp_lines[i]
        jwant = {"seq": 103 + i, "time_ns": t0 + i * 1000, "bus": 3, "data": wire.hex(),
                 "src": str(ipaddress.IPv4Address(src)), "dst": str(ipaddress.IPv4Address(dst)),
                 "src_port": sport, "dst_port": dport, "com_id": want["com_id"], "seq_counter": want["seq"],
                 "etb_topo": want["etb_topo"], "op_trn_topo": want["op_trn_topo"], "result": RESULT[result]}
        if kind == "md":
            jwant["session_id"] = (sid if sid else bytes(16)).hex()
        for k, v in jwant.items():
            if line.get(k) != v:
                fail(i, "jsonl " + k, line.get(k), v)
        flags = ("Pd" if kind == "pd" else "Mn") if good else "??"
        flags += "|TCP" if tcp else ""
        flags += "|" + result if result != "ok" else ""
        if line.get("flags") != flags:
            fail(i, "jsonl flags", line.get("flags"), flags)
        cols = csv_trdp[i].split(",")
        if cols[15] != flags or cols[16] != wire.hex():
            fail(i, "csv", cols[15:17], [flags, wire.hex()])
    if off != len(tr.data):
        fail(-1, "data length", len(tr.data), off)
    if tr.session_id != sids:
        fail(-1, "session ids", tr.session_id.hex(), sids.hex())
    # the TRDP bus's health entry the tool added: its last fields as the
    # ground decodes them (the socket options refused, 3 = both; received
    # through the packet ring, 2)
    hs = [(h.name, h.kind, h.bus, h.trdp_opts_refused, h.trdp_capture_unmatched, h.trdp_tcp_listen_errno,
           h.trdp_receive) for h in batch.health]
    if hs != [("ecn", "trdp", 3, 3, 64, 98, 2)]:
        fail(-1, "health", hs, [("ecn", "trdp", 3, 3, 64, 98, 2)])
    print("%d telegrams, %d wrong" % (n, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
