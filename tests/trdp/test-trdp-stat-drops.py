#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`railmon stat`'s table shows a TRDP bus's socket drops (the kernel's
rx_dropped) in its drops column, as `stat --json` has them: railmon run
with a TRDP bus on loopback (no root needed) is stopped (SIGSTOP), more
PD telegrams are sent than its socket's 2 MiB receive buffer holds, and
it is continued.  Each telegram is then either received or dropped by the
kernel (waited for: telegrams + rx_dropped == sent); the table's drops
column must be the ring's drops plus rx_dropped, and its "telegrams" line
the same socket drops, from the daemon and from the log's health records
after the stop; and every telegram the bus counted is in the log or
counted dropped by the item ring (the packet ring's blocks are read a
call's item room at a time, without a poll between: none lost on the
way).

    test-trdp-stat-drops.py RAILMON [capture]

capture: the bus reads lo's packet ring (receive = capture; root) of
2 MiB (capture_buffer_kib = 2048: the 30,000 telegrams overrun 2 MiB but
not the 16 MiB default), its overrun instead, its kernel drops
(pcap_stats' ps_drop) the
bus's rx_dropped, counted and said the same way.

The telegrams line names what rx_dropped counts by how the bus received
("socket drops"; "packet ring drops" with receive = capture), and `stat
--json`'s "receive" says that mode ("socket", "capture"), from the daemon
and from the log's health records (Health.trdp_receive).
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trdp_pub  # noqa: E402
from importlib import import_module  # noqa: E402

stat = import_module("test-trdp-stat")
SENT = 30000  # loopback charges >= 768 bytes a datagram: 2 MiB (x2) hold < 6,000


def table_drops(railmon, log, name):
    """The bus row's drops column and the kernel drops of its telegrams line,
    named name ("socket drops", "packet ring drops"): None when not so named."""
    r = subprocess.run([railmon, "stat", "--data", log], capture_output=True, text=True)
    row = re.search(r"^ecn\s+trdp\s+\d+\s+[0-9.]+\s+(\d+)\s", r.stdout, re.M)
    sock = re.search(r"telegrams\s+\d+ telegrams \([0-9.]+/s\), \d+ bytes, (\d+) %s, \d+ byte ring drops"
                     % name, r.stdout)
    return (int(row.group(1)) if row else None, int(sock.group(1)) if sock else None, r.stdout + r.stderr)


def main():
    railmon = sys.argv[1]
    capture = sys.argv[2:] == ["capture"]
    mode, name = ("capture", "packet ring drops") if capture else ("socket", "socket drops")
    if capture and os.geteuid() != 0:
        print("capture: needs root (CAP_NET_RAW; CI runs as root)")
        return 77
    tmp = tempfile.mkdtemp(prefix="trdp-drops-")
    rm = None
    bad = []
    try:
        pd_port, md_port = stat.free_port_udp_tcp(), stat.free_port_udp_tcp()
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = t1\nhealth_interval_s = 1\n[storage]\ndir = log\n[trdp ecn]\n"
                    "bind = 127.0.0.1\npd_port = %d\nmd_port = %d\n%s" % (
                        pd_port, md_port, "interface = lo\nreceive = capture\ncapture_buffer_kib = 2048\n" if capture else ""))
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

        def ring():
            inodes = {x.split()[-1] for x in open("/proc/net/packet").read().splitlines()[1:]}
            held = set()
            for fd in os.listdir("/proc/%d/fd" % rm.pid):
                try:
                    held.add(os.readlink("/proc/%d/fd/%s" % (rm.pid, fd)))
                except OSError:
                    pass
            return bool({"socket:[%s]" % i for i in inodes} & held)
        if capture:
            stat.wait_for("railmon run to hold its packet socket", ring, 60)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rm.send_signal(signal.SIGSTOP)
        try:
            for k in range(SENT):
                s.sendto(trdp_pub.pd_header(k, 1000, 8) + bytes(8), dest)
        finally:
            rm.send_signal(signal.SIGCONT)

        last = [None]

        def settled():
            row = stat.stat_json(railmon, log)
            last[0] = row
            return row if row.get("telegrams", 0) + row.get("rx_dropped", 0) == SENT else None
        try:
            row = stat.wait_for("every telegram received or dropped", settled, 60)
        except AssertionError:
            raise SystemExit("of %d sent, not all received or dropped: %r" % (SENT, last[0]))
        if not row["rx_dropped"]:
            raise SystemExit("the kernel dropped nothing of %d telegrams: no test (%r)" % (SENT, row))
        want = row["drops"] + row["rx_dropped"]
        col, sock, text = table_drops(railmon, log, name)
        if (col, sock, row.get("receive")) != (want, row["rx_dropped"], mode):
            bad.append("daemon: table drops %r and %s %r, stat --json drops %d + rx_dropped %d, receive %r (want %r):"
                       "\n%s" % (col, name, sock, row["drops"], row["rx_dropped"], row.get("receive"), mode, text))
        rm.send_signal(signal.SIGTERM)
        out, _ = rm.communicate(timeout=30)
        code, rm = rm.returncode, None
        if code != 0:
            raise SystemExit("railmon run exited %d:\n%s" % (code, out[-3000:]))
        after = stat.stat_json(railmon, log)
        r = subprocess.run([railmon, "export", "--data", log, "--format", "jsonl"], capture_output=True, text=True)
        in_log = len(re.findall(r'"kind": *"trdp"', r.stdout))
        if in_log + after.get("drops", 0) != after.get("telegrams"):
            bad.append("log: %d telegrams in it and %r dropped by the item ring, the bus counted %r (%s)"
                       % (in_log, after.get("drops"), after.get("telegrams"), r.stderr[-500:]))
        col2, sock2, text = table_drops(railmon, log, name)
        if (after.get("rx_dropped"), col2, sock2, after.get("receive")) != (
                row["rx_dropped"], after.get("drops", 0) + row["rx_dropped"], row["rx_dropped"], mode):
            bad.append("log: rx_dropped %r, table drops %r, %s %r, receive %r, want %d and %r:\n%s"
                       % (after.get("rx_dropped"), col2, name, sock2, after.get("receive"), row["rx_dropped"], mode,
                          text))
    finally:
        if rm:
            rm.send_signal(signal.SIGCONT)
            rm.kill()
            rm.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    for b in bad:
        print(b)
    if bad:
        return 1
    print(("capture, " if capture else "") + "stat: %d telegrams sent to a stopped railmon, %d received, %d dropped by the kernel (%s): the table's drops "
          "column %d (ring %d + kernel), its telegrams line (\"%s\") and the log's health say them, receive %r"
          % (SENT, row["telegrams"], row["rx_dropped"], "ring" if capture else "socket", want, row["drops"], name,
             mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
