#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A TRDP publisher written from IEC 61375-2-3 (as the TCNopen stack lays
the headers out), independent of railmon's C parser: python3 struct and
zlib.crc32 only.  Used two ways:

- as a module: pd_header(), md_header(), telegram() build bytes for the
  header tests (tests/trdp/test-trdp-header.py);
- as a command: `trdp_pub.py pd ...` sends process data at a cycle to
  unicast and/or multicast destinations, `trdp_pub.py md ...` sends MD
  notifications (Mn) over UDP or TCP.  Every telegram sent is logged as a
  JSON line (--log), with every header field and the payload in hex, so a
  test compares what railmon recorded with what was sent.

Faults on request: --bad-fcs N (every Nth telegram's FCS inverted),
--skip-seq AT:N (sequence counter jumps by N at telegram AT), --repeat-seq
AT (telegram AT repeats the previous counter), --silence AT:MS (a pause
before telegram AT), --topo AT:ETB:OPTRN (topology counters change at AT).
MD over TCP also: --split N (each message sent N bytes at a time, with
TCP_NODELAY, so it arrives in that many segments), --cut N (then the first
N bytes of one more message, and close), and a bad FCS is the last message
sent: the receiver must close the connection, which the publisher waits
for (exit 1 if it does not within 30 s).
"""
import argparse
import json
import socket
import struct
import sys
import time
import zlib

PD_HEADER = struct.Struct(">IHHIIIIIII")      # 36 bytes before the FCS
MD_HEADER = struct.Struct(">IHHIIIIi16sI32s32s")  # 112 bytes before the FCS
PROTO_VERSION = 0x0100
PD_PORT, MD_PORT = 17224, 17225
MSG = {"Pd": 0x5064, "Pp": 0x5070, "Pr": 0x5072, "Pe": 0x5065,
       "Mn": 0x4D6E, "Mr": 0x4D72, "Mp": 0x4D70, "Mq": 0x4D71, "Mc": 0x4D63, "Me": 0x4D65}


def fcs(data):
    """The header FCS: CRC-32 (zlib's), stored little-endian."""
    return struct.pack("<I", zlib.crc32(data) & 0xFFFFFFFF)


def pd_header(seq, com_id, dataset_len, msg_type=MSG["Pd"], etb=0, optrn=0,
              version=PROTO_VERSION, reserved=0, reply_com_id=0, reply_ip=0, bad_fcs=False):
    head = PD_HEADER.pack(seq, version, msg_type, com_id, etb, optrn, dataset_len,
                          reserved, reply_com_id, reply_ip)
    f = fcs(head)
    if bad_fcs:
        f = bytes(b ^ 0xFF for b in f)
    return head + f


def md_header(seq, com_id, dataset_len, msg_type=MSG["Mn"], etb=0, optrn=0,
              version=PROTO_VERSION, reply_status=0, session=bytes(16), reply_timeout=0,
              src_uri=b"", dst_uri=b"", bad_fcs=False):
    head = MD_HEADER.pack(seq, version, msg_type, com_id, etb, optrn, dataset_len,
                          reply_status, session, reply_timeout, src_uri, dst_uri)
    f = fcs(head)
    if bad_fcs:
        f = bytes(b ^ 0xFF for b in f)
    return head + f


def pad4(data, stale=b"\0"):
    """The data set padded to a multiple of 4, as senders do; `stale` fills
    the padding (senders may leave any bytes there)."""
    n = (-len(data)) % 4
    return data + (stale * 4)[:n]


def payload_for(com_id, seq, size):
    """A data set that changes with the counter, so a test sees each one."""
    body = struct.pack(">II", com_id, seq)
    return (body * (size // len(body) + 1))[:size]


def log_line(out, **fields):
    if out:
        out.write(json.dumps(fields, sort_keys=True) + "\n")
        out.flush()


def udp_socket(bind, ttl=4):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if bind:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(bind))
        s.bind((bind, 0))
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
    return s


def parse_at(spec, n):
    parts = [int(x) for x in spec.split(":")]
    if len(parts) != n:
        raise SystemExit("trdp_pub: %r: want %d numbers separated by ':'" % (spec, n))
    return parts


def run_pd(a, out):
    s = udp_socket(a.bind)
    dests = [(d, a.port) for d in a.dest]
    skip = {at: n for at, n in (parse_at(x, 2) for x in a.skip_seq)}
    repeat = set(a.repeat_seq)
    silence = {at: ms for at, ms in (parse_at(x, 2) for x in a.silence)}
    topo = {at: (e, o) for at, e, o in (parse_at(x, 3) for x in a.topo)}
    etb, optrn = a.etb, a.optrn
    seq = a.first_seq
    src = s.getsockname()
    t_next = time.monotonic()
    for i in range(a.count):
        if i in silence:
            t_next += silence[i] / 1000.0
        if i in topo:
            etb, optrn = topo[i]
        if i in skip:
            seq += skip[i]
        if i in repeat and i > 0:
            seq -= 1
        bad = a.bad_fcs > 0 and (i + 1) % a.bad_fcs == 0
        data = payload_for(a.com_id, seq, a.size)
        head = pd_header(seq, a.com_id, len(data), etb=etb, optrn=optrn, bad_fcs=bad)
        wire = head + pad4(data, b"\xa5")
        delay = t_next - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        for d in dests:
            s.sendto(wire, d)
            log_line(out, i=i, kind="pd", src=src[0], dst=d[0], dport=d[1], seq=seq,
                     version=PROTO_VERSION, msg_type="Pd", com_id=a.com_id, etb=etb,
                     optrn=optrn, dataset_len=len(data), bad_fcs=bad, payload=wire.hex())
        seq = (seq + 1) & 0xFFFFFFFF
        t_next += a.cycle_ms / 1000.0


def send_split(s, wire, n):
    """wire in pieces of n bytes, each its own segment (TCP_NODELAY), with
    a pause after each so the receiver reads them apart."""
    t = time.time_ns()
    for k in range(0, len(wire), n):
        t = time.time_ns()
        s.sendall(wire[k:k + n])
        time.sleep(0.0002)
    return t


def wait_closed(s, timeout_s=30.0):
    """True once the peer closed the connection (EOF or reset)."""
    s.settimeout(timeout_s)
    try:
        return s.recv(1) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def run_md(a, out):
    session = bytes(range(16))
    if a.tcp:
        s = socket.create_connection((a.dest[0], a.port),
                                     source_address=(a.bind, 0) if a.bind else None)
        if a.split:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    else:
        s = udp_socket(a.bind)
    src = s.getsockname()
    closed_ok = True
    for i in range(a.count + (1 if a.cut else 0)):
        data = payload_for(a.com_id, i, a.size)
        sid = session[:15] + bytes([i & 0xFF])
        bad = a.bad_fcs > 0 and (i + 1) % a.bad_fcs == 0
        head = md_header(a.first_seq + i, a.com_id, len(data), etb=a.etb, optrn=a.optrn,
                         session=sid, src_uri=b"pub", dst_uri=b"railmon", bad_fcs=bad)
        wire = head + pad4(data)
        cut = a.tcp and i == a.count
        if cut:
            wire = wire[:a.cut]
        # the time the last bytes began to go: a receive time cannot be before
        t_last = time.time_ns()
        if a.tcp and a.split:
            t_last = send_split(s, wire, a.split)
        elif a.tcp:
            s.sendall(wire)
        else:
            for d in a.dest:
                s.sendto(wire, (d, a.port))
        log_line(out, i=i, kind="md", tcp=a.tcp, src=src[0], sport=src[1], dst=a.dest[0],
                 dport=a.port, seq=a.first_seq + i, version=PROTO_VERSION, msg_type="Mn",
                 com_id=a.com_id, etb=a.etb, optrn=a.optrn, dataset_len=len(data),
                 session=sid.hex(), bad_fcs=bad, cut=cut, t_last_ns=t_last, payload=wire.hex())
        if a.tcp and bad:
            # no framing after a bad header: the receiver closes
            closed_ok = wait_closed(s)
            break
        time.sleep(a.cycle_ms / 1000.0)
    s.close()
    if not closed_ok:
        raise SystemExit("trdp_pub: the receiver did not close the connection after a bad FCS")


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["pd", "md"])
    p.add_argument("--dest", action="append", required=True, help="IPv4 address (repeat)")
    p.add_argument("--bind", help="local address; also the multicast interface")
    p.add_argument("--port", type=int)
    p.add_argument("--com-id", type=int, default=1000)
    p.add_argument("--size", type=int, default=24, help="dataset bytes")
    p.add_argument("--cycle-ms", type=float, default=10.0)
    p.add_argument("--count", type=int, default=100)
    p.add_argument("--first-seq", type=int, default=0)
    p.add_argument("--etb", type=int, default=0)
    p.add_argument("--optrn", type=int, default=0)
    p.add_argument("--bad-fcs", type=int, default=0, help="every Nth telegram's FCS wrong")
    p.add_argument("--skip-seq", action="append", default=[], help="AT:N")
    p.add_argument("--repeat-seq", action="append", type=int, default=[], help="AT")
    p.add_argument("--silence", action="append", default=[], help="AT:MS")
    p.add_argument("--topo", action="append", default=[], help="AT:ETB:OPTRN")
    p.add_argument("--tcp", action="store_true", help="md: over TCP")
    p.add_argument("--split", type=int, default=0, help="md --tcp: send N bytes at a time")
    p.add_argument("--cut", type=int, default=0, help="md --tcp: then N bytes of one more message, and close")
    p.add_argument("--log", help="JSON lines of what was sent ('-' stdout)")
    a = p.parse_args(argv)
    if a.port is None:
        a.port = PD_PORT if a.what == "pd" else MD_PORT
    out = sys.stdout if a.log == "-" else (open(a.log, "w") if a.log else None)
    (run_pd if a.what == "pd" else run_md)(a, out)
    if out and out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
