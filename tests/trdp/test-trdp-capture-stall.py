#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A TRDP bus with receive = capture rides out a stall of railmon at a low
rate: the packet ring (capture_buffer_kib) must cover it.  At low rates the
kernel retires a ring block at each capture_block_ms however few packets
it holds, so a ring of K KiB (K / 256 blocks) covers a stall of
(K / 256) x capture_block_ms.  railmon run reads lo's ring with
capture_block_ms = 100; PD telegrams go to it at about 100/s; railmon is
stopped (SIGSTOP) for 2 s of that publishing (about 20 blocks' worth, each
with a few telegrams), continued, and a few more are sent.  Then stat is
waited for (bounded) until telegrams + rx_dropped == sent: each telegram
received or counted dropped by the kernel.

  default:                the key's default, 16384 KiB (64 blocks: 6.4 s
                          at 100 ms): no drop, every telegram in the log
  capture_buffer_kib 2048 8 blocks (800 ms at 100 ms, tcpdump's 2 MiB
                          and the ring before the key): the stall did
                          overrun it, rx_dropped > 0, and every telegram
                          not dropped is in the log (drops counted, never
                          silent)

Nothing here is a timing assertion: the 2 s only sets how many ring blocks
the stall spans (20 against 8 and 64); every check is a count.

    test-trdp-capture-stall.py RAILMON   (root: CAP_NET_RAW)
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trdp_pub  # noqa: E402
from importlib import import_module  # noqa: E402

stat = import_module("test-trdp-stat")
BLOCK_MS = 100
RATE = 100       # telegrams/s, about: a block holds ~10
BEFORE = 50      # sent and seen by the bus before the stop
STALL_S = 2.0    # 20 blocks: more than 8 (2 MiB), fewer than 64 (16 MiB)
AFTER = 50       # sent after the stop, so the bus has read on


def holds_ring(pid):
    """railmon holds a packet socket (its ring is open)."""
    inodes = {x.split()[-1] for x in open("/proc/net/packet").read().splitlines()[1:]}
    held = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            held.add(os.readlink("/proc/%d/fd/%s" % (pid, fd)))
        except OSError:
            pass
    return bool({"socket:[%s]" % i for i in inodes} & held)


def run_case(railmon, kib):
    """One railmon run, stopped for STALL_S while telegrams come; returns
    (sent, stat row after settling, sequence numbers in the log, error)."""
    tmp = tempfile.mkdtemp(prefix="trdp-stall-")
    rm = None
    try:
        pd_port, md_port = stat.free_port_udp_tcp(), stat.free_port_udp_tcp()
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = t1\nhealth_interval_s = 1\n[storage]\ndir = log\n[trdp ecn]\n"
                    "bind = 127.0.0.1\npd_port = %d\nmd_port = %d\ninterface = lo\nreceive = capture\n"
                    "capture_block_ms = %d\n%s" % (pd_port, md_port, BLOCK_MS,
                                                   "capture_buffer_kib = %d\n" % kib if kib else ""))
        log = os.path.join(tmp, "log")
        rm = subprocess.Popen([railmon, "run", "--board", board, "--data", log],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        dest = ("127.0.0.1", pd_port)

        def bound():
            t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                t.bind(dest)
                return False
            except OSError:
                return True
            finally:
                t.close()
        stat.wait_for("railmon run to bind the PD port", bound, 60)
        stat.wait_for("railmon run to hold its packet socket", lambda: holds_ring(rm.pid), 60)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sent = [0]

        def send():
            s.sendto(trdp_pub.pd_header(sent[0], 1000, 8) + bytes(8), dest)
            sent[0] += 1

        def paced(until):
            """send at about RATE/s while until() says go on"""
            t0, k = time.monotonic(), 0
            while until(time.monotonic() - t0):
                send()
                k += 1
                time.sleep(max(0.0, t0 + k / RATE - time.monotonic()))
        paced(lambda t: sent[0] < BEFORE)
        # the bus has taken those in (their blocks retired and read): the
        # ring is empty when the stall starts
        stat.wait_for("the bus to count the first %d telegrams" % BEFORE,
                      lambda: stat.stat_json(railmon, log).get("telegrams", 0) >= BEFORE, 60)
        stalled_from = sent[0]
        rm.send_signal(signal.SIGSTOP)
        try:
            paced(lambda t: t < STALL_S)
        finally:
            rm.send_signal(signal.SIGCONT)
        in_stall = sent[0] - stalled_from
        n = sent[0]
        paced(lambda t: sent[0] < n + AFTER)
        last = [None]

        def settled():
            row = stat.stat_json(railmon, log)
            last[0] = row
            return row if row.get("telegrams", 0) + row.get("rx_dropped", 0) == sent[0] else None
        try:
            row = stat.wait_for("every telegram received or dropped", settled, 120)
        except AssertionError:
            return sent[0], last[0], None, in_stall, "of %d sent, not all received or dropped: %r" % (sent[0], last[0])
        rm.send_signal(signal.SIGTERM)
        out, _ = rm.communicate(timeout=60)
        code, rm = rm.returncode, None
        if code != 0:
            return sent[0], row, None, in_stall, "railmon run exited %d:\n%s" % (code, out[-3000:])
        r = subprocess.run([railmon, "export", "--data", log, "--format", "jsonl"], capture_output=True, text=True)
        seqs = [int(x) for x in re.findall(r'"kind": *"trdp".*?"seq_counter": *(\d+)', r.stdout)]
        return sent[0], row, seqs, in_stall, None
    finally:
        if rm:
            rm.send_signal(signal.SIGCONT)
            rm.kill()
            rm.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    railmon = sys.argv[1]
    if os.geteuid() != 0:
        print("capture stall: needs root (CAP_NET_RAW; CI runs as root)")
        return 77
    bad = []
    said = []
    for kib in (None, 2048):
        name = "default ring" if kib is None else "capture_buffer_kib = %d" % kib
        sent, row, seqs, in_stall, err = run_case(railmon, kib)
        if err:
            bad.append("%s: %s" % (name, err))
            continue
        drops, got = row["rx_dropped"], row["telegrams"]
        said.append("%s: %d sent (%d during the %.0f s stop), %d received, %d rx_dropped, %d in the log"
                    % (name, sent, in_stall, STALL_S, got, drops, len(seqs)))
        if kib is None:
            # the ring covers the stall: nothing dropped, every telegram
            # in the log, once, in order
            if drops or seqs != list(range(sent)):
                bad.append("%s: rx_dropped %d, log holds %d of %d telegrams (first missing %r)"
                           % (name, drops, len(seqs), sent,
                              next((k for k in range(sent) if k not in set(seqs)), None)))
        else:
            # the stall overran the small ring: drops, and each counted
            if not drops:
                bad.append("%s: no drop, the stall did not exceed the ring: no test" % name)
            if len(seqs) != got or len(set(seqs)) != got or got + drops != sent:
                bad.append("%s: log holds %d (%d distinct), bus received %d, rx_dropped %d, sent %d"
                           % (name, len(seqs), len(set(seqs)), got, drops, sent))
    for x in said + bad:
        print(x)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
