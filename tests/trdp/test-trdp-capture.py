#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A capture of the traffic a live TRDP bus logged, replayed, gives the
same records (issue 31's closing note).

railmon run in namespace B logs what trdp_pub.py sends from A over a veth
pair (PD to a multicast group and to B's address, with bad FCS, skipped
and repeated sequence counters and a topology change; MD notifications
over UDP), while tcpdump (classic pcap, microsecond and --nano) and dumpcap
(pcapng) capture the same interface in B.  Each capture is then replayed
(`railmon replay CAPTURE --board BOARD`, and one without --board), and
`railmon export --format jsonl` of every replayed log must give the live
log's TRDP records record by record: every field and the payload equal,
the time equal to the capture's resolution (the live time is the kernel's
receive time of the UDP socket, the capture's is the packet socket's
stamp of the same skb: the same instant, truncated to microseconds by a
microsecond capture).  The topology and bad-header events and stat's
sequence counters of the replays are the live bus's; stat's receive says
"replay" of each replay, "socket" (or "capture") of the live bus.

MD over TCP goes to the live bus's listener (railmon run in B takes the
connection): the live log's TCP records are the publisher's messages, and
the replay frames the same records out of the captured stream (the time:
the capture's stamp of the segment that carried the message's last byte,
the live one the kernel's receive time of the read that ended it).

  test-trdp-capture.py RAILMON [capture]    (root: network namespaces)

capture: the live bus has receive = capture (it reads the packet ring, as
the capture tools beside it do, bus/trdp-capture.c), and must hold a
packet socket: the same checks, a live capture and the replays of the
captures made beside it through one decoding path.
"""
import importlib.util
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PUB = os.path.join(HERE, "trdp_pub.py")
_spec = importlib.util.spec_from_file_location("trdp_bus_test", os.path.join(HERE, "test-trdp-bus.py"))
bus_test = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bus_test)
sh, wait_for, expected_counts, compare = bus_test.sh, bus_test.wait_for, bus_test.expected_counts, bus_test.compare
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from railmon_test import netns_pair  # noqa: E402

# Fields of an exported record that are the log's, not the telegram's.
NOT_TELEGRAM = {"time_ns", "time", "seq", "record", "log_id"}


def export(railmon, log, running=False):
    """The log's records; of a log being written (running), what export
    reads so far (its tail may be torn: exit 1)."""
    r = sh(railmon, "export", "--data", log, "--format", "jsonl", check=False)
    if running:
        return [json.loads(x) for x in r.stdout.splitlines()] if r.returncode in (0, 1) else []
    if r.returncode != 0:
        raise SystemExit("export %s: exit %d: %s" % (log, r.returncode, r.stderr[-500:]))
    return [json.loads(x) for x in r.stdout.splitlines()]


def start_capture(ns, argv, ready_word):
    """A capture tool in ns, once it said it listens (its stderr)."""
    p = subprocess.Popen(["ip", "netns", "exec", ns] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    line = p.stderr.readline()
    if ready_word not in line:
        p.kill()
        raise SystemExit("%s did not start: %s" % (argv[0], line + p.stderr.read()))
    # the rest of its stderr drained, so it never blocks on it
    threading.Thread(target=p.stderr.read, daemon=True).start()
    return p


def stop(p):
    p.send_signal(signal.SIGINT)  # tcpdump and dumpcap write what they hold and close the file
    p.wait(timeout=30)


def pcapng_resolution_ns(path):
    """The first interface's time resolution of a pcapng file in ns, read
    from its Interface Description Block (if_tsresol, option 9; default
    microseconds), written from the pcapng specification."""
    data = open(path, "rb").read()
    order = "<" if struct.unpack_from("<I", data, 8)[0] == 0x1A2B3C4D else ">"
    at = 0
    while at + 12 <= len(data):
        btype, blen = struct.unpack_from(order + "II", data, at)
        if btype == 1:
            opt = at + 16
            while opt + 4 <= at + blen - 4:
                code, olen = struct.unpack_from(order + "HH", data, opt)
                if code == 0:
                    break
                if code == 9:
                    v = data[opt + 4]
                    return 10 ** (9 - v) if v < 128 and v <= 9 else 1
                opt += 4 + (olen + 3) // 4 * 4
            return 1000
        at += blen
    raise SystemExit("%s: no interface description block" % path)


def compare_records(name, live, replayed, resolution_ns, sent=None):
    """Live and replayed TRDP records one by one; returns the mismatches.
    sent (MD over TCP, the publisher's log in the records' order): the time
    is not one stamp of one skb - the live one is the TCP socket's receive
    time of the segment that ended the message, taken after the packet
    socket's stamp of it (1-3 us later on a veth) - so the replayed time
    must lie between the sender's start of sending the message's last bytes
    and the live time.  Returns (records wrong, records, fields compared,
    fields that differ); a record's fields are its telegram's keys of
    either side, and its time."""
    a = [x for x in live if x["kind"] == "trdp"]
    b = [x for x in replayed if x["kind"] == "trdp"]
    bad = fields = differ = 0
    if len(a) != len(b):
        print("%s: %d records replayed, %d live" % (name, len(b), len(a)))
        bad += 1
    exact = 0
    for i, (x, y) in enumerate(zip(a, b)):
        keys = (set(x) | set(y)) - NOT_TELEGRAM
        diff = {k: (x.get(k), y.get(k)) for k in keys if x.get(k) != y.get(k)}
        if sent is not None:
            lo = sent[i]["t_last_ns"] - sent[i]["t_last_ns"] % resolution_ns if i < len(sent) else 0
            if not lo <= y["time_ns"] <= x["time_ns"]:
                diff["time_ns"] = (x["time_ns"], y["time_ns"], ">= %d" % lo)
        # the capture's stamp is the live one truncated to its resolution
        elif y["time_ns"] != x["time_ns"] - x["time_ns"] % resolution_ns:
            diff["time_ns"] = (x["time_ns"], y["time_ns"])
        exact += y["time_ns"] == x["time_ns"]
        fields += len(keys) + 1
        differ += len(diff)
        if diff:
            bad += 1
            if bad < 6:
                print("%s: record %d: %s" % (name, i, diff))
    print("%s: %d records, %d alike (%d to the nanosecond), %d wrong; %d fields compared, %d differ"
          % (name, len(b), len(b) - bad, exact, bad, fields, differ))
    return bad, len(b), fields, differ


def is_tcp(x):
    return x["kind"] == "trdp" and "TCP" in x.get("flags", "")


def events(lines, code):
    return [(x["arg"], x.get("detail")) for x in lines if x["kind"] == "event" and x["event"] == code]


def stat_row(railmon, log):
    r = sh(railmon, "stat", "--data", log, "--json", check=False)
    rows = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    return next((x for x in rows if x.get("kind") == "trdp"), {})


def main():
    railmon = sys.argv[1]
    capture = sys.argv[2:] == ["capture"]
    if os.geteuid() != 0:
        print("needs root (network namespaces; CI runs as root)")
        return 77
    for tool in ("tcpdump", "dumpcap"):
        if not shutil.which(tool):
            print("%s missing (tests/deps.sh installs it)" % tool)
            return 77
    with netns_pair("rmtc") as net:
        a, b, vb = net.a, net.b, net.dev_b
        tmp = tempfile.mkdtemp(prefix="trdp-capture-")
        os.chmod(tmp, 0o755)  # dumpcap may drop to its own user for the file
        procs = []
        try:
            board = os.path.join(tmp, "trdp.ini")
            with open(board, "w") as f:
                f.write("[board]\nvehicle = capture\n[trdp ecn]\ninterface = %s\ngroup = 239.193.0.1\n%s" % (
                    vb, "receive = capture\n" if capture else ""))
            caps = {"pcap": os.path.join(tmp, "micro.pcap"), "pcap-nano": os.path.join(tmp, "nano.pcap"),
                    "pcapng": os.path.join(tmp, "dumpcap.pcapng")}
            procs.append(start_capture(b, ["tcpdump", "-i", vb, "-U", "-w", caps["pcap"]], "listening on"))
            procs.append(start_capture(b, ["tcpdump", "-i", vb, "-U", "--nano", "-w", caps["pcap-nano"]],
                                       "listening on"))
            procs.append(start_capture(b, ["dumpcap", "-i", vb, "-q", "-w", caps["pcapng"]], "Capturing on"))
            log = os.path.join(tmp, "live")
            rm = subprocess.Popen(["ip", "netns", "exec", b, railmon, "run", "--board", board, "--data", log],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            procs.append(rm)
            wait_for("railmon to join 239.193.0.1",
                     lambda: "0100C1EF" in sh("ip", "netns", "exec", b, "cat", "/proc/net/igmp").stdout)
            # MD over TCP: railmon's own listener takes the connection (port
            # 17225 = 0x4349, state 0A LISTEN in /proc/net/tcp)
            wait_for("railmon to listen on TCP 17225",
                     lambda: any(x.split()[1].endswith(":4349") and x.split()[3] == "0A"
                                 for x in sh("ip", "netns", "exec", b, "cat", "/proc/net/tcp").stdout.splitlines()[1:]))
            # which way the live bus receives: a packet socket of its own
            # in capture mode, none in socket mode (/proc/net/packet of
            # its namespace against its descriptors)
            inodes = {x.split()[-1] for x in
                      sh("ip", "netns", "exec", b, "cat", "/proc/net/packet").stdout.splitlines()[1:]}
            held = set()
            for fd in os.listdir("/proc/%d/fd" % rm.pid):
                try:
                    held.add(os.readlink("/proc/%d/fd/%s" % (rm.pid, fd)))
                except OSError:
                    pass
            if bool({"socket:[%s]" % i for i in inodes} & held) != capture:
                raise SystemExit("the live bus holds %s packet socket" % ("no" if capture else "a"))
            logs = [os.path.join(tmp, x) for x in ("pd.jsonl", "md.jsonl", "tcp.jsonl")]
            pub = ["ip", "netns", "exec", a, sys.executable, PUB]
            sh(*pub, "pd", "--dest", "239.193.0.1", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "150",
               "--cycle-ms", "5", "--size", "100", "--bad-fcs", "20", "--skip-seq", "50:2", "--repeat-seq", "70",
               "--topo", "120:3:4", "--log", logs[0])
            sh(*pub, "md", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "5", "--cycle-ms", "5",
               "--size", "2000", "--com-id", "2001", "--etb", "3", "--optrn", "4", "--log", logs[1])
            sh(*pub, "md", "--tcp", "--dest", "192.0.2.2", "--bind", "192.0.2.1", "--count", "6", "--cycle-ms", "1",
               "--size", "3000", "--com-id", "2002", "--etb", "3", "--optrn", "4", "--log", logs[2])
            sent = [json.loads(x) for f in logs[:2] for x in open(f)]
            sent_tcp = [json.loads(x) for x in open(logs[2])]
            wait_for("every telegram (UDP and TCP) in the live log",
                     lambda: sum(1 for x in export(railmon, log, True) if x["kind"] == "trdp")
                     >= len(sent) + len(sent_tcp))
            rm.send_signal(signal.SIGINT)
            out, _ = rm.communicate(timeout=30)
            if rm.returncode != 0:
                raise SystemExit("railmon run exited %d:\n%s" % (rm.returncode, out[-3000:]))
            # the captures run behind at load: stopped once each file holds
            # the last bytes sent (the TCP stream's), so all before them
            tail = bytes.fromhex(sent_tcp[-1]["payload"])[-32:]
            for name, path in caps.items():
                wait_for("%s to hold the last message" % name,
                         lambda: os.path.exists(path) and tail in open(path, "rb").read(), 60)
            for p in procs[:3]:
                stop(p)
            live_all = export(railmon, log)
            live = [x for x in live_all if not is_tcp(x)]
            live_tcp = [x for x in live_all if is_tcp(x)]
            bad = compare(sent, live)  # the live log is what was sent
            n_bad = compare(sent_tcp, live_tcp)
            if n_bad:
                print("live: MD over TCP: %d wrong" % n_bad)
            bad += n_bad
            gaps, repeats, back, topo = expected_counts(sent)
            live_row = stat_row(railmon, log)
            resolution = {"pcap": 1000, "pcap-nano": 1, "pcapng": None}
            total = n_fields = n_differ = 0
            for name, path in caps.items():
                out = os.path.join(tmp, "replay-" + name)
                r = sh(railmon, "replay", path, "--board", board, "--data", out, "--quiet", check=False)
                print("%s: replay exit %d: %s" % (name, r.returncode, r.stderr.strip().splitlines()[:1]))
                if r.returncode != 0:
                    print(r.stderr[-1000:])
                    bad += 1
                    continue
                replayed = export(railmon, out)
                res = resolution[name]
                if res is None:
                    # dumpcap's pcapng: its interface's if_tsresol decides
                    # what can be equal
                    res = pcapng_resolution_ns(path)
                udp = [x for x in replayed if not is_tcp(x)]
                tcp = [x for x in replayed if is_tcp(x)]
                n_bad, n, nf, nd = compare_records("%s (resolution %d ns)" % (name, res), live, udp, res)
                bad += n_bad
                total += n
                n_fields += nf
                n_differ += nd
                # MD over TCP: the messages as sent, framed from the stream,
                # and the live bus's records of them
                n_bad = compare(sent_tcp, tcp)
                if n_bad:
                    print("%s: MD over TCP: %d wrong" % (name, n_bad))
                bad += n_bad
                n_bad, n, nf, nd = compare_records("%s MD over TCP (resolution %d ns)" % (name, res), live_tcp, tcp,
                                                   res, sent_tcp)
                bad += n_bad
                total += n
                n_fields += nf
                n_differ += nd
                for code in ("TRDP_TOPOLOGY", "TRDP_BAD_HEADER"):
                    if events(live, code) != events(replayed, code):
                        print("%s: %s events %s, live %s" % (name, code, events(replayed, code), events(live, code)))
                        bad += 1
                row = stat_row(railmon, out)
                want = {"seq_gaps": gaps, "seq_repeats": repeats, "seq_back": back, "topology_changes": topo}
                for k, v in want.items():
                    if row.get(k) != v or live_row.get(k) != v:
                        print("%s: stat %s: replay %s, live %s, sent %s" % (name, k, row.get(k), live_row.get(k), v))
                        bad += 1
                # how each received, which names what its rx_dropped counts
                # (the table's telegrams line): the health records say it
                modes = (row.get("receive"), live_row.get("receive"))
                if modes != ("replay", "capture" if capture else "socket"):
                    print("%s: stat receive: replay %r, live %r" % (name, modes[0], modes[1]))
                    bad += 1
            # without --board: the default TRDP bus records the same telegrams
            out = os.path.join(tmp, "replay-default")
            r = sh(railmon, "replay", caps["pcapng"], "--data", out, "--vehicle", "capture", "--quiet", check=False)
            if r.returncode != 0:
                print("replay without --board: exit %d: %s" % (r.returncode, r.stderr[-500:]))
                bad += 1
            else:
                replayed = export(railmon, out)
                res = pcapng_resolution_ns(caps["pcapng"])
                bad += compare_records("pcapng without --board", live, [x for x in replayed if not is_tcp(x)], res)[0]
                bad += compare_records("pcapng without --board, MD over TCP", live_tcp,
                                       [x for x in replayed if is_tcp(x)], res, sent_tcp)[0]
            nbad = sum(1 for s in sent if s.get("bad_fcs"))
            n_live = sum(1 for x in live_all if x["kind"] == "trdp")
            print("capture: %d telegrams sent over UDP (%d bad FCS) and %d over TCP, %d live records, %d replayed "
                  "records compared over 3 captures (%d fields, %d differ); %d wrong"
                  % (len(sent), nbad, len(sent_tcp), n_live, total, n_fields, n_differ, bad))
            return 1 if bad else 0
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
