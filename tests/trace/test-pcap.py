#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-pcap.py PCAP_DUMP WORKDIR RAILMON

trace/pcap.c on captures made here, in a pair of network namespaces (root):
a sender in A sends UDP to port 17224 unicast, to a multicast group,
datagrams larger than the MTU (fragmented), frames tagged 802.1Q VLAN 5
and 802.1ad 100 + 802.1Q 7 (written whole to vA with AF_PACKET: the
kernel here has no 8021q, so no VLAN subinterface), and opens a TCP
connection to port 17225 with several messages each way; B receives and
answers.  Captured in B by tcpdump (classic pcap, microsecond; `-i any` as
Linux cooked SLL2 and, with -y, SLL; --nano for nanoseconds) and dumpcap
(pcapng with nanosecond if_tsresol, vB and lo: two interfaces in one file).
Linux's `-i any` shows no VLAN tag (it is in the skb, not the frame) and
no Q-in-Q frame; tshark reads the same there.  For each capture
pcap-dump's lines must equal:
  - tshark's view of the same file (its own IP reassembly, its own TCP
    follow), datagram by datagram, time to the ns, VLAN id included;
  - what the sender logged it sent (payloads in order, per destination);
and damaged captures give counted errors naming the packet: overlapping
fragments and a never-completed datagram (sent raw by the sender), a
snap length that cuts packets, a TCP segment taken out of the file (a
gap), segments swapped and repeated (no gap: put back in order), a file
cut in the middle of a packet.  `railmon replay` tells a capture from a
CAN trace (a capture goes to a TRDP bus: --dbc is refused).
"""
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import netns_names, netns_pair  # noqa: E402

DUMP = sys.argv[1]
WORK = sys.argv[2]
RAILMON = sys.argv[3]
NSA, NSB = netns_names("rmp")
A, B = "192.0.2.1", "192.0.2.2"
VA, VB = "198.51.100.1", "198.51.100.2"
GROUP = "239.193.0.1"
PY = "/usr/bin/python3"


def fail(msg):
    sys.exit("FAIL: " + msg)


def sh(*args, ns=None, check=True, **kw):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, **kw)


RECEIVER = r"""
import socket, struct, sys, threading
n_udp = int(sys.argv[1])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
u.bind(("0.0.0.0", 17224))
u.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
             socket.inet_aton("%s") + socket.inet_aton("%s"))
t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("%s", 17225)); t.listen(1)
print("ready", flush=True)
c, _ = t.accept()
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"over lo", ("127.0.0.1", 17224))
got = b""
while True:
    b = c.recv(65536)
    if not b:
        break
    got += b
    # each message is answered: its length and the word back
    while b"\n" in got:
        line, got = got.split(b"\n", 1)
        c.sendall(b"ack %%d %%s\n" %% (len(line), line[:8]))
c.close()
for i in range(n_udp):
    u.recv(65536)
print("done", flush=True)
""" % (GROUP, B, B)

SENDER = r"""
import json, os, socket, struct, sys
log = []
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("%s"))
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
# This machine's kernel may have no 8021q (no VLAN subinterfaces): tagged
# frames are written whole to vA (AF_PACKET), fragmented here as the
# kernel would, so the capture holds them as a VLAN's traffic on the wire.
pk = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
pk.bind(("vA", 0))
mac_a = bytes.fromhex(open("/sys/class/net/vA/address").read().strip().replace(":", ""))
mac_b = bytes.fromhex(sys.argv[1].replace(":", ""))
def csum(h):
    s = sum(struct.unpack("!10H", h))
    s = (s & 0xffff) + (s >> 16); s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff
vid = [0x1000]
def vlan(dst, port, data, tags):
    sport = 30000 + len(log)
    dgram = struct.pack("!HHHH", sport, port, 8 + len(data), 0) + data
    vid[0] += 1
    l2 = mac_b + mac_a
    for i, t in enumerate(tags):
        l2 += struct.pack("!HH", 0x88a8 if i < len(tags) - 1 else 0x8100, t)
    l2 += b"\x08\x00"
    for off in range(0, len(dgram), 1480):
        piece = dgram[off:off + 1480]
        mf = 0x2000 if off + 1480 < len(dgram) else 0
        h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(piece), vid[0], mf | off // 8, 64, 17, 0,
                        socket.inet_aton("%s"), socket.inet_aton(dst))
        h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
        pk.send(l2 + h + piece)
    log.append({"dst": dst, "dport": port, "sport": sport, "data": data.hex()})
def send(dst, port, data):
    s.sendto(data, (dst, port))
    log.append({"dst": dst, "dport": port, "sport": s.getsockname()[1], "data": data.hex()})
for i in range(20):
    send("%s", 17224, bytes([i]) * (40 + i))             # unicast PD
    send("%s", 17224, os.urandom(100))                  # multicast PD
    vlan("%s", 17224, b"vlan%%03d" %% i + os.urandom(i), [5])  # 802.1Q VLAN 5
    vlan("%s", 17225, b"qinq%%03d" %% i, [100, 7])               # 802.1ad 100, then 802.1Q 7
send("%s", 17224, os.urandom(3000))                     # 3 fragments
send("%s", 17224, os.urandom(9000))                     # 7 fragments, multicast
vlan("%s", 17225, os.urandom(5000), [5])                # MD port, over VLAN 5: 4 fragments
s.sendto(b"not ours", ("%s", 9999))                     # another port: counted, passed over
# raw: overlapping fragments (id 0x4242) and a datagram never completed (0x4343)
r = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
def ip(ident, off8, mf, payload):
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident, (0x2000 if mf else 0) | off8,
                       64, 17, 0, socket.inet_aton("%s"), socket.inet_aton("%s")) + payload
udp = struct.pack("!HHHH", 40000, 17224, 8 + 120, 0) + bytes(120)
r.sendto(ip(0x4242, 0, True, udp[:64]), ("%s", 0))
r.sendto(ip(0x4242, 4, False, udp[32:]), ("%s", 0))   # starts at 32: inside the first
r.sendto(ip(0x4343, 0, True, udp[:64]), ("%s", 0))
# TCP: messages one way, answers the other
t = socket.create_connection(("%s", 17225))
tx = b""
for i in range(12):
    m = b"message %%02d " %% i + os.urandom(50 + 300 * i).hex().encode() + b"\n"
    t.sendall(m); tx += m
t.shutdown(socket.SHUT_WR)
rx = b""
while True:
    b = t.recv(65536)
    if not b:
        break
    rx += b
t.close()
json.dump({"udp": log, "tcp_tx": tx.hex(), "tcp_rx": rx.hex(), "tcp_sport": t.getsockname()[1] if False else 0},
          sys.stdout)
""" % (A, VA, B, GROUP, VB, VB, B, GROUP, VB, B, A, B, B, B, B, B)


def start_capture(args, ready_word):
    """A capture in B, returned once it says it listens (its stderr)."""
    p = subprocess.Popen(["ip", "netns", "exec", NSB] + args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         text=True)
    while True:
        line = p.stderr.readline()
        if not line:
            fail("capture %s ended before it listened" % args)
        if ready_word in line:
            return p


def ng_interfaces(path):
    """The interfaces a pcapng's packet blocks came on so far (its blocks walked)."""
    b, seen, off = open(path, "rb").read(), set(), 0
    while off + 12 <= len(b):
        typ, ln = struct.unpack_from("<II", b, off)
        if ln < 12 or off + ln > len(b):
            break
        if typ == 6:
            seen.add(struct.unpack_from("<I", b, off + 8)[0])
        off += ln
    return seen


def wait_capturing(files, word):
    """Probes (UDP to port 9, which the reader passes over) until every
    capture holds one from each interface it captures on.  At the start: a
    capture says it listens a little before it does; at the end: dumpcap
    writes a ring block once it is full or a second old, and what it has
    not written at SIGINT is lost, but a probe in the file means all
    before it on that interface is there too."""
    deadline = time.monotonic() + 60
    probe = "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'%s', ('%s', 9))"
    wa, wl = (word + "-vB").encode(), (word + "-lo").encode()
    while time.monotonic() < deadline:
        sh(PY, "-c", probe % (wa.decode(), B), ns=NSA)
        sh(PY, "-c", probe % (wl.decode(), "127.0.0.1"), ns=NSB)
        ready = True
        for args in files.values():
            b = open(args[-1], "rb").read() if os.path.exists(args[-1]) else b""
            ready &= wa in b and (wl in b or "vB" in args)
        if ready:
            return
        time.sleep(0.1)  # between probes, not a wait for an outcome
    fail("the captures did not see the probes in 60 s")


def stop_capture(p):
    p.send_signal(signal.SIGINT)  # its last block written, as the recipe says
    said = p.stderr.read()
    if p.wait(timeout=60) != 0:
        fail("capture ended with %d" % p.returncode)
    drops = sum(int(x) for x in re.findall(r"(\d+) packets? dropped by kernel", said) +
                re.findall(r"received/dropped on interface '[^']*': \d+/(\d+)", said))
    if os.environ.get("PCAP_TEST_DEBUG"):
        print("capture said: %r" % said[-400:])
    if drops:
        # each capture has a 64 MiB ring; dropping is the machine's load, not the reader's
        fail("a capture dropped %d packets, its view is not the sender's: %s" % (drops, said[-300:]))


def epoch_ns(s):
    sec, _, frac = s.partition(".")
    return int(sec) * 10**9 + int((frac + "000000000")[:9])


def dump(path, *extra):
    r = subprocess.run([DUMP, path] + list(extra), capture_output=True, text=True)
    stats = dict(kv.split("=") for kv in re.search(r"^stats (.*)$", r.stderr, re.M).group(1).split())
    note = re.search(r"^note (.*)$", r.stderr, re.M)
    err = re.search(r"^error (.*)$", r.stderr, re.M)
    rows = [l.split() for l in r.stdout.splitlines()]
    return r.returncode, rows, stats, note.group(1) if note else "", err.group(1) if err else ""


def ours_udp(rows):
    """pcap-dump's UDP rows as (time ns, src, sport, dst, dport, vlan, payload hex)."""
    out = []
    for r in rows:
        if r[0] != "udp":
            continue
        src, sport = r[2].split(":")
        dst, dport = r[3].split(":")
        out.append((int(r[1]), src, int(sport), dst, int(dport), int(r[4]), r[6] if int(r[5]) else ""))
    return out


def tshark_frames(path, flt):
    r = subprocess.run(["tshark", "-r", path, "-Y", flt, "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True, check=True)
    return [int(x) for x in r.stdout.split()]


def tshark_udp(path):
    r = subprocess.run(["tshark", "-r", path, "-o", "ip.defragment:TRUE",
                        "-Y", "(udp.dstport == 17224 || udp.dstport == 17225) && !(ip.id == 0x4242)",
                        "-T", "fields", "-e", "frame.time_epoch", "-e", "ip.src", "-e", "udp.srcport",
                        "-e", "ip.dst", "-e", "udp.dstport", "-e", "vlan.id", "-e", "udp.payload"],
                       capture_output=True, text=True, check=True)
    out = []
    for line in r.stdout.splitlines():
        f = line.split("\t")
        vlan = int(f[5].split(",")[-1]) if f[5] else -1  # the innermost tag, as pcap.h says
        out.append((epoch_ns(f[0]), f[1], int(f[2]), f[3], int(f[4]), vlan, f[6].replace(":", "")))
    return out


def ours_tcp(rows):
    """{conn: {(src, dst): bytes}} and the close reasons."""
    streams, ends = {}, {}
    for r in rows:
        if r[0] == "tcp-data":
            streams.setdefault(r[2], {}).setdefault((r[3], r[4]), bytearray()).extend(bytes.fromhex(r[7]))
        elif r[0] == "tcp-close":
            ends[r[2]] = r[7]
    return streams, ends


def tshark_tcp(path):
    """tshark's own reassembly: `-z follow,tcp,raw` of each stream on 17225."""
    r = subprocess.run(["tshark", "-r", path, "-Y", "tcp.port == 17225 && tcp.flags.syn == 1 && "
                        "tcp.flags.ack == 0", "-T", "fields", "-e", "tcp.stream"],
                       capture_output=True, text=True, check=True)
    out = []
    for sid in r.stdout.split():
        f = subprocess.run(["tshark", "-r", path, "-q", "-z", "follow,tcp,raw," + sid],
                           capture_output=True, text=True, check=True).stdout
        nodes = re.findall(r"^Node [01]: (\S+)$", f, re.M)
        d = {(nodes[0], nodes[1]): bytearray(), (nodes[1], nodes[0]): bytearray()}
        for line in f.splitlines():
            if re.fullmatch(r"\t?[0-9a-f]+", line):
                key = (nodes[1], nodes[0]) if line.startswith("\t") else (nodes[0], nodes[1])
                d[key].extend(bytes.fromhex(line.strip()))
        out.append(d)
    return out


def check_capture(path, sent, what):
    rc, rows, st, note, err = dump(path)
    if rc != 0:
        fail("%s: pcap-dump exit %d: %s" % (what, rc, err))
    mine, theirs = ours_udp(rows), tshark_udp(path)
    if mine != theirs:
        for i, (a, b) in enumerate(zip(mine, theirs)):
            if a != b:
                fail("%s: datagram %d: pcap-dump %s, tshark %s" % (what, i, a, b))
        fail("%s: %d datagrams, tshark %d" % (what, len(mine), len(theirs)))
    # the sender's log: every datagram, in order per (dst, dport)
    for key in {(u["dst"], u["dport"]) for u in sent["udp"]}:
        if key == (VB, 17225) and "any" in what:
            continue  # Linux's 'any' socket shows no Q-in-Q frame (tcpdump -r nor tshark either)
        want = [u["data"] for u in sent["udp"] if (u["dst"], u["dport"]) == key]
        got = [m[6] for m in mine if (m[3], m[4]) == key]
        if key[0] == VB and len(got) == 2 * len(want):
            got = got[::2]  # the 'any' capture: each on vB (tagged) and vB.5
        if got != want and got[::2] != want:
            fail("%s: to %s:%d: %d datagrams as sent of %d" % (what, key[0], key[1], len(got), len(want)))
    opens = [r for r in rows if r[0] == "tcp-open"]
    if len(opens) != 1 or opens[0][7] != "syn":
        fail("%s: connections begun: %s, one by its SYN made" % (what, opens))
    streams, ends = ours_tcp(rows)
    if len(streams) != 1:
        fail("%s: %d TCP connections, 1 made" % (what, len(streams)))
    conn, s = next(iter(streams.items()))
    tx = [v for (src, dst), v in s.items() if dst.endswith(":17225")]
    rx = [v for (src, dst), v in s.items() if src.endswith(":17225")]
    if tx != [bytearray.fromhex(sent["tcp_tx"])] or rx != [bytearray.fromhex(sent["tcp_rx"])]:
        fail("%s: TCP stream bytes differ from what was sent (%s)" % (what, [len(x) for x in tx + rx]))
    ts = tshark_tcp(path)
    if len(ts) != 1 or ts[0] != s:
        fail("%s: TCP streams differ from tshark's follow" % what)
    if ends.get(conn) != "fin":
        fail("%s: connection end %s, FIN both ways expected" % (what, ends.get(conn)))
    if int(st["frag_overlap"]) != 1 or int(st["frag_incomplete"]) != 1:
        fail("%s: overlap %s incomplete %s, 1 and 1 sent" % (what, st["frag_overlap"], st["frag_incomplete"]))
    # tshark's frames of a wrong IPv4 header ('any' sees a Q-in-Q frame's
    # inner tag where IPv4 should be) and of the overlapping fragment
    bogus = tshark_frames(path, "ip && ip.version != 4")
    overlap = tshark_frames(path, "ip.id == 0x4242 && ip.frag_offset == 4")
    if int(st["bad_ip"]) != len(bogus) or len(overlap) != 1:
        fail("%s: %s wrong IPv4 headers, tshark %d" % (what, st["bad_ip"], len(bogus)))
    first = min(bogus + overlap)
    if not note.startswith("%s: packet %d " % (path, first)) or \
            (first == overlap[0] and not re.search(r"IPv4 datagram id 16962 .*overlapping", note)):
        fail("%s: the first damage (packet %d) not named: %r" % (what, first, note))
    if int(st["tcp_gaps"]) or int(st["lost_events"]) or int(st["cut"]):
        fail("%s: counted damage in a whole capture: %s" % (what, st))
    if int(st["other_proto"]) < 1:
        fail("%s: the datagram to port 9999 not counted" % what)
    print("ok %s: %s, %d datagrams, %d TCP bytes, as tshark and the sender" %
          (what, st["link"], len(mine), int(st["tcp_bytes"])))
    return rows, st


def records(path):
    """A classic pcap's header and records (for the damaged copies)."""
    b = open(path, "rb").read()
    out, off = [], 24
    while off + 16 <= len(b):
        caplen = struct.unpack_from("<I", b, off + 8)[0]
        out.append(b[off:off + 16 + caplen])
        off += 16 + caplen
    return b[:24], out


def damaged(path, rows):
    hdr, recs = records(path)
    # the TCP data packets (by pcap-dump's own numbering): one taken out is a gap
    data_pkts = [int(r[-1][1:]) for r in rows if r[0] == "tcp-data" and r[4].endswith(":17225")]
    victim = data_pkts[len(data_pkts) // 2]
    after = data_pkts[len(data_pkts) // 2 + 1]  # the same direction's next: where the gap shows
    # the raw fragments taken out too, so that the gap is the first damage
    gone = {victim} | set(tshark_frames(path, "ip.id == 0x4242 || ip.id == 0x4343"))
    gap_file = os.path.join(WORK, "gap.pcap")
    with open(gap_file, "wb") as f:
        f.write(hdr + b"".join(r for i, r in enumerate(recs) if i + 1 not in gone))
    rc, grows, st, note, _ = dump(gap_file)
    lost = [int(r[6]) for r in rows if r[0] == "tcp-data" and r[-1] == "#%d" % victim][0]
    # where the lost bytes were in the client's stream
    k = sum(int(r[6]) for r in rows if r[0] == "tcp-data" and r[4].endswith(":17225") and int(r[-1][1:]) < victim)
    gaps = [r for r in grows if r[0] == "tcp-gap"]
    # a segment may yet come again (a retransmission), so the hole is
    # waited on until the connection ends (the window is 64 KiB here)
    at = int([r for r in grows if r[0] == "tcp-close"][0][-1][1:])
    tx = bytes.fromhex("".join(r[7] for r in rows if r[0] == "tcp-data" and r[4].endswith(":17225")))
    gtx = bytes.fromhex("".join(r[7] for r in grows if r[0] == "tcp-data" and r[4].endswith(":17225")))
    if gtx != tx[:k] + tx[k + lost:]:
        fail("gap: the stream around the hole is not the rest of what was sent")
    if rc != 0 or int(st["tcp_gaps"]) != 1 or len(gaps) != 1 or int(gaps[0][6]) != lost or gaps[0][-1] != "#%d" % at:
        fail("gap: rc %d, %s gaps, rows %s, %d bytes lost, packet %d" % (rc, st["tcp_gaps"], gaps, lost, at))
    if not re.search(r"gap\.pcap: packet %d at byte \d+: %d bytes of TCP connection 1 never seen" % (at, lost), note):
        fail("gap: not named: %r (packet %d)" % (note, at))
    print("ok gap: %s" % note)

    # swapped and repeated segments: the same stream, no gap
    swap = list(recs)
    swap[victim - 1], swap[victim] = swap[victim], swap[victim - 1]
    swap.insert(victim + 1, recs[victim - 1])
    swap_file = os.path.join(WORK, "swap.pcap")
    with open(swap_file, "wb") as f:
        f.write(hdr + b"".join(swap))
    rc, srows, st, note, _ = dump(swap_file)
    if ours_tcp(srows)[0] != ours_tcp(rows)[0] or int(st["tcp_gaps"]) or int(st["tcp_retrans"]) == 0:
        fail("swap: stream changed or gaps %s retrans %s" % (st["tcp_gaps"], st["tcp_retrans"]))
    print("ok out of order and repeated: same stream, %s bytes seen again" % st["tcp_retrans"])

    # the file cut in the middle of its last-but-one packet
    cut_file = os.path.join(WORK, "cut.pcap")
    whole = hdr + b"".join(recs)
    at = len(whole) - len(recs[-1]) - len(recs[-2]) // 2
    with open(cut_file, "wb") as f:
        f.write(whole[:at])
    rc, crows, st, note, err = dump(cut_file)
    if rc != 2 or int(st["packets"]) != len(recs) - 2 or \
            not re.search(r"cut\.pcap: damaged after packet %d \(at byte \d+\): truncated" % (len(recs) - 2), err):
        fail("cut file: rc %d, %s packets of %d, %r" % (rc, st["packets"], len(recs) - 2, err))
    print("ok cut file: %s" % err)


def main():
    os.makedirs(WORK, exist_ok=True)
    for f in os.listdir(WORK):
        os.unlink(os.path.join(WORK, f))
    with netns_pair("rmp") as net:
        mac_b = sh("cat", "/sys/class/net/%s/address" % net.dev_b, ns=NSB, capture_output=True,
                   text=True).stdout.strip()
        files = {
            "tcpdump pcap (us)": ["tcpdump", "--immediate-mode", "-U", "-B", "65536", "-i", "vB", "-w", WORK + "/eth.pcap"],
            "tcpdump pcap (ns)": ["tcpdump", "--immediate-mode", "-U", "-B", "65536", "--nano", "-i", "vB", "-w", WORK + "/eth-ns.pcap"],
            "tcpdump any (SLL2)": ["tcpdump", "--immediate-mode", "-U", "-B", "65536", "--nano", "-i", "any", "-w", WORK + "/any.pcap"],
            "tcpdump any (SLL)": ["tcpdump", "--immediate-mode", "-U", "-B", "65536", "-y", "LINUX_SLL", "-i", "any", "-w", WORK + "/sll.pcap"],
            "tcpdump snaplen 300": ["tcpdump", "--immediate-mode", "-U", "-B", "65536", "-s", "300", "-i", "vB", "-w", WORK + "/snap.pcap"],
            "dumpcap pcapng (2 interfaces)": ["dumpcap", "-i", "vB", "-i", "lo", "-w", WORK + "/eth.pcapng"],
        }
        caps = {}
        for what, args in files.items():
            caps[what] = start_capture(args, "listening on" if args[0] == "tcpdump" else "Capturing on")
        wait_capturing(files, "start")
        n_udp = 20 * 2 + 2 + 1  # what reaches B's socket on 17224 (not the VLAN or raw ones, not 17225)
        rx = subprocess.Popen(["ip", "netns", "exec", NSB, PY, "-c", RECEIVER, str(n_udp)],
                              stdout=subprocess.PIPE, text=True)
        if rx.stdout.readline().strip() != "ready":
            fail("receiver did not start")
        tx = sh(PY, "-c", SENDER, mac_b, ns=NSA, capture_output=True, text=True)
        sent = json.loads(tx.stdout)
        # B has everything once its receiver did: the captures saw it before it
        if rx.stdout.readline().strip() != "done" or rx.wait(timeout=60) != 0:
            fail("receiver did not get everything")
        wait_capturing(files, "end")
        for p in caps.values():
            stop_capture(p)

    for what, args in files.items():
        if "snaplen" in what:
            continue
        rows, _ = check_capture(args[-1], sent, what)
        if what == "tcpdump pcap (us)":
            eth_rows = rows
    # ns and us captures of the same packets: the same to the microsecond,
    # and the ns one has digits below it (else it was not read in ns)
    ns_t = [int(r[1]) for r in dump(WORK + "/eth-ns.pcap")[1] if r[0] == "udp"]
    if not any(t % 1000 for t in ns_t):
        fail("--nano capture read without its nanoseconds")
    # snap length 300: every longer packet counted as cut, the first named
    rc, rows, st, note, _ = dump(WORK + "/snap.pcap")
    r = subprocess.run(["tshark", "-r", WORK + "/snap.pcap", "-Y", "ip && frame.cap_len < frame.len && "
                        "!(ip.id == 0x4242)", "-T", "fields", "-e", "frame.number"],
                       capture_output=True, text=True, check=True)
    cut_frames = [int(x) for x in r.stdout.split()]
    if rc != 0 or int(st["cut"]) != len(cut_frames) or not cut_frames or \
            not note.startswith(WORK + "/snap.pcap: packet %d at byte" % cut_frames[0]):
        fail("snaplen: cut %s, tshark %d, note %r" % (st["cut"], len(cut_frames), note))
    print("ok snaplen: %s cut, as tshark; %s" % (st["cut"], note))
    damaged(WORK + "/eth.pcap", eth_rows)
    for f, name in (("eth.pcap", "pcap"), ("eth.pcapng", "pcapng")):
        r = subprocess.run([RAILMON, "replay", WORK + "/" + f, "--dbc", os.devnull, "--data", WORK + "/data"],
                           capture_output=True, text=True)
        # a capture is a TRDP bus's (tests/trdp/test-trdp-capture.py): a CAN
        # bus's --dbc refused, before the capture is surveyed on the ports
        # of the board's [trdp] buses (tests/trdp/test-trdp-capture-port.py)
        if r.returncode != 2 or "%s: a packet capture holds TRDP telegrams: no --dbc" % f not in r.stderr:
            fail("replay of %s: exit %d, %r" % (f, r.returncode, r.stderr))
    print("ok replay: %s" % r.stderr.strip())
    print("PASS")


main()
