#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`railmon stat` and `watch` say a TRDP bus's counters: railmon run with a
TRDP bus on loopback (no root), fed by trdp_pub.py (PD with bad FCS, a
sequence counter skipped and repeated, a silence past the XML timeout, a
topology change; MD over TCP with a message cut) and by headers this test
writes with trdp_pub's functions (bad version, bad type, short, truncated,
a ComId the XML does not have, data sets shorter than their plan).  What
was sent gives every count; `stat --json` must say exactly those (waited
for, no fixed sleep), the table and `watch --once` the same numbers, and
after the stop `stat` reads the same from the log's health records.

    test-trdp-stat.py RAILMON
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import trdp_pub  # noqa: E402
from railmon_test import free_port_udp_tcp, wait_for  # noqa: E402

XML = """<?xml version="1.0" encoding="UTF-8"?>
<device host-name="stat-test">
  <bus-interface-list>
    <bus-interface network-id="1" name="lo">
      <telegram name="Door" com-id="1000" data-set-id="2000">
        <pd-parameter cycle="5000" timeout="1000000"/>
      </telegram>
      <telegram name="Wide" com-id="1001" data-set-id="2001"/>
    </bus-interface>
  </bus-interface-list>
  <data-set-list>
    <data-set name="six" id="2000">
      <element name="v" type="UINT32" array-size="6"/>
    </data-set>
    <data-set name="eight" id="2001">
      <element name="v" type="UINT32" array-size="8"/>
    </data-set>
  </data-set-list>
</device>
"""
ETB, OPTRN = 1, 2  # the topology after the change at PD telegram 50
PD_COUNT = 80



def stat_json(railmon, log):
    r = subprocess.run([railmon, "stat", "--data", log, "--json"], capture_output=True, text=True)
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return next((x for x in rows if x.get("kind") == "trdp"), {})


def seq_model(valid):
    """Gaps, repeats, back of the valid telegrams, followed per sender
    address, ComId and kind as the specification's counter is (the driver
    must agree: bus/trdp.c follow_seq)."""
    last, gaps, repeats, back = {}, 0, 0, 0
    for key, seq in valid:
        if key in last:
            skip = (seq - (last[key] + 1)) & 0xFFFFFFFF
            if skip == 0xFFFFFFFF:
                repeats += 1
            elif 0 < skip < 0x80000000:
                gaps += skip
            elif skip:
                back += 1
        last[key] = seq
    return gaps, repeats, back


def export(railmon, log):
    r = subprocess.run([railmon, "export", "--data", log, "--format", "jsonl"], capture_output=True, text=True)
    return [json.loads(x) for x in r.stdout.splitlines()] if r.returncode == 0 else []


def main():
    railmon = sys.argv[1]
    pub = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trdp_pub.py")
    tmp = tempfile.mkdtemp(prefix="trdp-stat-")
    rm = None
    bad = []
    try:
        with open(os.path.join(tmp, "consist.xml"), "w") as f:
            f.write(XML)
        pd_port, md_port = free_port_udp_tcp(), free_port_udp_tcp()
        board = os.path.join(tmp, "b.ini")
        with open(board, "w") as f:
            f.write("[board]\nvehicle = t1\nhealth_interval_s = 1\n[storage]\ndir = log\n[trdp ecn]\n"
                    "bind = 127.0.0.1\npd_port = %d\nmd_port = %d\nxml = consist.xml\n" % (pd_port, md_port))
        log = os.path.join(tmp, "log")
        rm = subprocess.Popen([railmon, "run", "--board", board, "--data", log],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        dest = ("127.0.0.1", pd_port)
        # every datagram sent: (bytes, why refused or None, ComId, seq)
        sent = []

        def send(wire, why, com_id, seq):
            s.sendto(wire, dest)
            sent.append((len(wire), why, com_id, seq))

        # railmon's PD socket bound (a datagram before would be lost, not
        # counted): ours cannot bind the port then (railmon's has
        # SO_REUSEADDR, ours not)
        def bound():
            t = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                t.bind(dest)
                return False
            except OSError:
                return True
            finally:
                t.close()
        wait_for("railmon run to bind the PD port", bound, 60)
        wide_seq = [0]

        # PD ComId 1000 from trdp_pub.py: every 10th FCS bad, the counter
        # skips 3 at 20 and repeats at 45, topology changes at 50, 1.5 s
        # of silence before 60 (past the XML's 1 s timeout)
        pd_log = os.path.join(tmp, "pd.jsonl")
        subprocess.run([sys.executable, pub, "pd", "--dest", "127.0.0.1", "--port", str(pd_port),
                        "--com-id", "1000", "--size", "24", "--cycle-ms", "5", "--count", str(PD_COUNT),
                        "--bad-fcs", "10", "--skip-seq", "20:3", "--repeat-seq", "45",
                        "--topo", "50:%d:%d" % (ETB, OPTRN), "--silence", "60:1500", "--log", pd_log],
                       check=True)
        with open(pd_log) as f:
            for x in map(json.loads, f):
                sent.append((len(x["payload"]) // 2, "fcs" if x["bad_fcs"] else None, 1000, x["seq"]))
        # headers written here, each refused for its one reason
        data = bytes(24)
        send(trdp_pub.pd_header(7, 1000, 24, version=0x0200) + data, "version", 1000, 7)
        send(trdp_pub.pd_header(8, 1000, 24, version=0x0000) + data, "version", 1000, 8)
        send(trdp_pub.pd_header(9, 1000, 24, msg_type=trdp_pub.MSG["Mn"]) + data, "type", 1000, 9)
        send(trdp_pub.pd_header(9, 1000, 24, msg_type=0x1234) + data, "type", 1000, 9)
        send(b"\x00\x01\x02\x03\x04", "short", None, None)
        send(trdp_pub.pd_header(10, 1000, 100) + data, "truncated", 1000, 10)
        send(trdp_pub.pd_header(11, 1000, 1500) + data, "too_long", 1000, 11)
        # valid: a ComId the XML does not have (5), data sets shorter than
        # their plan (ComId 1001 wants 32 bytes: 3 of 8)
        for k in range(5):
            send(trdp_pub.pd_header(k, 2000, 8, etb=ETB, optrn=OPTRN) + bytes(8), None, 2000, k)
        for k in range(3):
            send(trdp_pub.pd_header(wide_seq[0], 1001, 8, etb=ETB, optrn=OPTRN) + bytes(8), "short_payload",
                 1001, wide_seq[0])
            wide_seq[0] += 1
        # MD over TCP: 3 notifications (a ComId the XML does not have), then
        # 50 bytes of a 4th and the connection closed: cut, short
        md_log = os.path.join(tmp, "md.jsonl")
        subprocess.run([sys.executable, pub, "md", "--tcp", "--dest", "127.0.0.1", "--port", str(md_port),
                        "--com-id", "3000", "--count", "3", "--cycle-ms", "1", "--cut", "50",
                        "--etb", str(ETB), "--optrn", str(OPTRN), "--log", md_log], check=True)
        with open(md_log) as f:
            md = [json.loads(x) for x in f]

        # what that must count
        pd_bad = {}
        for _, why, _, _ in sent:
            if why and why != "short_payload":
                pd_bad[why] = pd_bad.get(why, 0) + 1
        valid = [(("pd", c), q) for _, why, c, q in sent if why in (None, "short_payload")]
        valid += [(("md", x["com_id"]), x["seq"]) for x in md if not x["cut"]]
        gaps, repeats, back = seq_model(valid)
        n_fcs = sum(1 for _, why, c, _ in sent if why == "fcs")
        want = {
            "telegrams": len(sent) + len(md),
            "bytes": sum(n for n, _, _, _ in sent) + sum(len(x["payload"]) // 2 for x in md),
            "bad_fcs": n_fcs, "bad_version": pd_bad.get("version", 0), "bad_type": pd_bad.get("type", 0),
            "bad_short": pd_bad.get("short", 0) + 1, "bad_truncated": pd_bad.get("truncated", 0),
            "bad_too_long": pd_bad.get("too_long", 0),
            "seq_gaps": gaps, "seq_repeats": repeats, "seq_back": back, "topology_changes": 1,
            "tcp_accepted": 1, "tcp_messages": 3, "tcp_cut": 1, "tcp_closed": 1, "tcp_bad_header": 0,
            "tcp_refused": 0, "tcp_listen_errno": 0,
            "decoded": PD_COUNT - n_fcs,
            "unknown_comid": 5 + 3, "short_payload": 3, "past_channels": 0,
            "rx_dropped": 0, "byte_ring_drops": 0, "untracked": 0,
            # the silence, and the silence after the last (the tick's)
            "timeouts": 2, "backs": 1,
        }
        # the model is not vacuous: each fault was sent
        assert gaps == 3 + n_fcs - 1 and repeats == 1 and n_fcs == PD_COUNT // 10, (gaps, repeats, n_fcs)

        def settled():
            row = stat_json(railmon, log)
            return row if all(row.get(k) == v for k, v in want.items()) else None
        try:
            row = wait_for("stat --json to say what was sent", settled, 30)
        except SystemExit:
            row = stat_json(railmon, log)
            for k, v in want.items():
                if row.get(k) != v:
                    bad.append("stat --json %s: %r, sent %r" % (k, row.get(k), v))
        # the table: the same numbers in words
        r = subprocess.run([railmon, "stat", "--data", log], capture_output=True, text=True)
        table = r.stdout
        for pat in [r"telegrams\s+%d telegrams \([0-9.]+/s\), %d bytes, 0 socket drops, 0 byte ring drops"
                    % (want["telegrams"], want["bytes"]),
                    r"bad header\s+%d: FCS %d, version %d, type %d, length %d \(over the maximum %d, over the "
                    r"bytes %d\), short %d" % (sum(pd_bad.values()) + 1, n_fcs, want["bad_version"],
                                               want["bad_type"], want["bad_too_long"] + want["bad_truncated"],
                                               want["bad_too_long"], want["bad_truncated"], want["bad_short"]),
                    r"sequence\s+gaps %d, repeats %d, back %d, untracked 0; timeouts 2, back after one 1; "
                    r"topology changes 1" % (gaps, repeats, back),
                    r"MD over TCP\s+1 connections \(0 refused, 1 closed\), 3 messages, 1 cut, 0 bad header",
                    r"decoded\s+%d telegrams, 8 of a ComId not in the XML, 3 short data sets, 0 array items "
                    r"past their channels" % want["decoded"]]:
            if not re.search(pat, table):
                bad.append("stat table lacks /%s/:\n%s" % (pat, table))
        # watch: the bus said with its telegrams' troubles
        r = subprocess.run([railmon, "watch", "--data", log, "--once"], capture_output=True, text=True)
        said = r"buses: .*ecn up, 0 reopens, [0-9.]+ telegrams/s, %d bad, %d gaps, %d repeats, 2 timeouts" % (
            sum(pd_bad.values()) + 1, gaps, repeats)
        if not re.search(said, r.stdout):
            bad.append("watch --once lacks /%s/:\n%s%s" % (said, r.stdout[-600:], r.stderr[-300:]))
        rm.send_signal(signal.SIGTERM)
        out, _ = rm.communicate(timeout=30)
        code, rm = rm.returncode, None
        if code != 0:
            raise SystemExit("railmon run exited %d:\n%s" % (code, out[-3000:]))
        # stopped: the log's events say the same timeouts and returns
        lines = export(railmon, log)
        n_tmo = sum(1 for x in lines if x["kind"] == "event" and x["event"] == "TRDP_TIMEOUT")
        n_back = sum(1 for x in lines if x["kind"] == "event" and x["event"] == "TRDP_BACK")
        if (n_tmo, n_back) != (row.get("timeouts"), row.get("backs")):
            bad.append("the log has %d TRDP_TIMEOUT and %d TRDP_BACK, stat says %r and %r"
                       % (n_tmo, n_back, row.get("timeouts"), row.get("backs")))
        # stopped: stat reads the health records of the log, the same
        after = stat_json(railmon, log)
        for k, v in want.items():
            if after.get(k) != v:
                bad.append("stat --json of the log %s: %r, sent %r" % (k, after.get(k), v))
    finally:
        if rm:
            rm.kill()
            rm.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    for b in bad:
        print(b)
    if bad:
        return 1
    print("stat: %d telegrams, %d bytes; refused %s; %d gaps, %d repeats, 2 timeouts, 1 back, 1 topology change; "
          "MD over TCP 3 messages and 1 cut; %d decoded, 8 unknown ComId, 3 short: stat --json, the table, watch "
          "and the log's health say what was sent" % (want["telegrams"], want["bytes"],
                                                     dict(pd_bad, short=want["bad_short"]), gaps, repeats,
                                                     want["decoded"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
