#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-pcap.py PCAP_DUMP WORKDIR - trace/pcap.c's read speed: a 100 MB
classic pcap of 100-byte UDP telegrams to 17224 (Ethernet, one in four
802.1Q-tagged), read by pcap-dump -c (every datagram decoded and handed
out, its first and last byte touched), beside two baselines in the same
run: `cat F > /dev/null` (the file's bytes alone) and `tcpdump -r F -w
/dev/null` (libpcap reading and writing each packet, no decoding).  Best
of 3 runs each, in CPU seconds (user + sys) and wall seconds; the ratios
are against tcpdump.  Prints a table; asserts only that every datagram
was read, never a time.
"""
import os
import resource
import struct
import subprocess
import sys
import time

DUMP, WORK = sys.argv[1], sys.argv[2]
SIZE = 100 * 1000 * 1000


def make(path):
    payload = bytes(range(100))
    frames = []
    for tag in (False, False, False, True):
        ipd = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 128, 1, 0, 64, 17, 0, bytes([192, 0, 2, 1]),
                          bytes([239, 193, 0, 1])) + struct.pack("!HHHH", 40000, 17224, 108, 0) + payload
        l2 = bytes(6) + bytes([2, 0, 0, 0, 0, 1]) + (struct.pack("!HH", 0x8100, 5) if tag else b"")
        frames.append(l2 + b"\x08\x00" + ipd)
    n = 0
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        size, chunk = 24, []
        while size < SIZE:
            fr = frames[n % 4]
            chunk.append(struct.pack("<IIII", 1700000000 + n // 1000000, n % 1000000, len(fr), len(fr)) + fr)
            size += 16 + len(fr)
            n += 1
            if len(chunk) == 10000:
                f.write(b"".join(chunk))
                chunk = []
        f.write(b"".join(chunk))
    return n


def run(cmd, **kw):
    best = None
    for _ in range(3):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
        wall, r1 = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if best is None or cpu < best[0]:
            best = (cpu, wall, out)
    return best


def main():
    os.makedirs(WORK, exist_ok=True)
    path = os.path.join(WORK, "bench-100mb.pcap")
    n = make(path)
    rows = [("cat > /dev/null", run(["sh", "-c", 'cat "$0" > /dev/null', path])),
            ("tcpdump -r F -w /dev/null", run(["tcpdump", "-r", path, "-w", "/dev/null"])),
            ("railmon trace/pcap.c (pcap-dump -c)", run([DUMP, "-c", path]))]
    got = rows[2][1][2].split()[0]
    if int(got) != n:
        sys.exit("FAIL: pcap-dump read %s datagrams of %d" % (got, n))
    base = rows[1][1][0]
    print("%d datagrams of 100 bytes, %.0f MB" % (n, os.path.getsize(path) / 1e6))
    print("%-38s %8s %8s %14s %10s" % ("reader", "cpu s", "wall s", "datagrams/s", "cpu/tcpdump"))
    for name, (cpu, wall, _) in rows:
        print("%-38s %8.3f %8.3f %14.0f %10.2f" % (name, cpu, wall, n / cpu if cpu else 0, cpu / base))
    os.unlink(path)


main()
