#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-j1939.py J1939-DUMP: J1939-21 transport sessions written here from
the standard (TP.CM RTS/CTS/EndOfMsgAck/BAM/Abort, TP.DT), well-formed and
malformed, as a candump log; the reassembler (through j1939-dump) must give
exactly the messages and faults each case expects, and the counters."""
import random
import subprocess
import sys
import tempfile

TP_CM, TP_DT = 0xEC, 0xEB


class Log:
    def __init__(self):
        self.lines, self.t = [], 1_000_000_000_000  # microseconds

    def frame(self, pf, da, sa, data, prio=7, dt_us=10_000):
        self.t += dt_us
        ident = prio << 26 | pf << 16 | da << 8 | sa
        self.lines.append("(%d.%06d) can0 %08X#%s" % (self.t // 1_000_000, self.t % 1_000_000, ident,
                                                      bytes(data).hex().upper()))
        return self.t

    def cm(self, sa, da, ctl, a, b, c, d, pgn, prio=7, dt_us=10_000):
        return self.frame(TP_CM, da, sa, [ctl, a, b, c, d, pgn & 0xFF, pgn >> 8 & 0xFF, pgn >> 16], prio, dt_us)

    def dt(self, sa, da, seq, payload, dt_us=10_000):
        chunk = list(payload[(seq - 1) * 7:seq * 7])
        return self.frame(TP_DT, da, sa, [seq] + chunk + [0xFF] * (7 - len(chunk)), 7, dt_us)


def packets(n):
    return (n + 6) // 7


def msg_line(t, pgn, sa, da, bam, payload, prio=7):
    return "msg %d %05x sa=%02x da=%02x prio=%d bam=%d len=%d %s" % (t, pgn, sa, da, prio, bam, len(payload),
                                                                    bytes(payload).hex())


def fault_line(t, kind, sa, da, pgn, reason=0, expected=0, got=0, total=0):
    return "fault %d %s sa=%02x da=%02x pgn=%05x reason=%d expected=%d got=%d/%d" % (
        t, kind, sa, da, pgn, reason, expected, got, total)


def bam(log, sa, pgn, payload, skip=(), order=None, prio=6):
    n = packets(len(payload))
    log.cm(sa, 0xFF, 32, len(payload) & 0xFF, len(payload) >> 8, n, 0xFF, pgn, prio)
    t = None
    for seq in order or range(1, n + 1):
        if seq not in skip:
            t = log.dt(sa, 0xFF, seq, payload, 50_000)
    return t


def rts(log, sa, da, pgn, payload, window=4):
    """A whole RTS/CTS connection; returns the time of its last TP.DT."""
    n = packets(len(payload))
    log.cm(sa, da, 16, len(payload) & 0xFF, len(payload) >> 8, n, window, pgn)
    seq, last = 1, None
    while seq <= n:
        k = min(window, n - seq + 1)
        log.cm(da, sa, 17, k, seq, 0xFF, 0xFF, pgn)
        for s in range(seq, seq + k):
            last = log.dt(sa, da, s, payload)
        seq += k
    log.cm(da, sa, 19, len(payload) & 0xFF, len(payload) >> 8, n, 0xFF, pgn)
    return last


def cases(rng):
    """[(name, log, [expected lines])]"""
    out = []

    def payload(n):
        return [rng.randrange(256) for _ in range(n)]

    log, p = Log(), payload(20)
    out.append(("bam", log, [msg_line(bam(log, 0x00, 0xFECA, p), 0xFECA, 0x00, 0xFF, 1, p, 6)]))

    log, p = Log(), payload(100)
    out.append(("rts-cts", log, [msg_line(rts(log, 0x01, 0x02, 0xEF00, p), 0xEF00, 0x01, 0x02, 0, p)]))

    log, p = Log(), payload(1785)
    out.append(("rts-cts-1785", log, [msg_line(rts(log, 0x03, 0x04, 0xFEE5, p, 16), 0xFEE5, 0x03, 0x04, 0, p)]))

    # two sources' BAMs, packet by packet
    log, a, b = Log(), payload(30), payload(23)
    log.cm(0x10, 0xFF, 32, 30, 0, 5, 0xFF, 0xFECA, 6)
    log.cm(0x11, 0xFF, 32, 23, 0, 4, 0xFF, 0xFECB, 6)
    want = []
    for seq in range(1, 6):
        t = log.dt(0x10, 0xFF, seq, a)
        if seq == 5:
            want.append(msg_line(t, 0xFECA, 0x10, 0xFF, 1, a, 6))
        if seq <= 4:
            t = log.dt(0x11, 0xFF, seq, b)
            if seq == 4:
                want.append(msg_line(t, 0xFECB, 0x11, 0xFF, 1, b, 6))
    out.append(("interleaved-sources", log, want))

    # one source to two nodes at once
    log, a, b = Log(), payload(15), payload(16)
    log.cm(0x20, 0x30, 16, 15, 0, 3, 3, 0xEF00)
    log.cm(0x20, 0x31, 16, 16, 0, 3, 3, 0xEF00)
    log.cm(0x30, 0x20, 17, 3, 1, 0xFF, 0xFF, 0xEF00)
    log.cm(0x31, 0x20, 17, 3, 1, 0xFF, 0xFF, 0xEF00)
    want = []
    for seq in range(1, 4):
        ta = log.dt(0x20, 0x30, seq, a)
        tb = log.dt(0x20, 0x31, seq, b)
    want = [msg_line(ta, 0xEF00, 0x20, 0x30, 0, a), msg_line(tb, 0xEF00, 0x20, 0x31, 0, b)]
    out.append(("interleaved-destinations", log, want))

    # the receiver asks for packets 2 and 3 again
    log, p = Log(), payload(28)
    log.cm(0x05, 0x06, 16, 28, 0, 4, 4, 0xEF00)
    log.cm(0x06, 0x05, 17, 3, 1, 0xFF, 0xFF, 0xEF00)
    for seq in (1, 2, 3):
        log.dt(0x05, 0x06, seq, p)
    log.cm(0x06, 0x05, 17, 3, 2, 0xFF, 0xFF, 0xEF00)
    for seq in (2, 3, 4):
        t = log.dt(0x05, 0x06, seq, p)
    out.append(("retransmit", log, [msg_line(t, 0xEF00, 0x05, 0x06, 0, p)]))

    log, p = Log(), payload(40)
    bam(log, 0x07, 0xFECA, p, skip=(3,))  # 4 arrives where 3 should
    out.append(("missing-packet", log, [fault_line(log.t - 50_000 * 2, "sequence", 0x07, 0xFF, 0xFECA, 4, 3, 2, 6)]))

    log, p = Log(), payload(21)
    bam(log, 0x08, 0xFECA, p, order=(2, 1, 3))
    out.append(("out-of-order", log, [fault_line(log.t - 100_000, "sequence", 0x08, 0xFF, 0xFECA, 2, 1, 0, 3)]))

    log, p = Log(), payload(21)
    bam(log, 0x09, 0xFECA, p, order=(1, 1, 2, 3))
    out.append(("duplicate", log, [fault_line(log.t - 100_000, "sequence", 0x09, 0xFF, 0xFECA, 1, 2, 1, 3)]))

    # the receiver aborts (reason 3: timeout on its side), the originator aborts
    log, p = Log(), payload(50)
    log.cm(0x0A, 0x0B, 16, 50, 0, 8, 4, 0xEF00)
    log.cm(0x0B, 0x0A, 17, 4, 1, 0xFF, 0xFF, 0xEF00)
    log.dt(0x0A, 0x0B, 1, p)
    t1 = log.cm(0x0B, 0x0A, 255, 3, 0xFF, 0xFF, 0xFF, 0xEF00)
    log.cm(0x0C, 0x0D, 16, 50, 0, 8, 4, 0xEF00)
    t2 = log.cm(0x0C, 0x0D, 255, 1, 0xFF, 0xFF, 0xFF, 0xEF00)
    log.dt(0x0A, 0x0B, 2, p)  # after the abort: stray
    out.append(("abort", log, [fault_line(t1, "abort", 0x0A, 0x0B, 0xEF00, 3, 2, 1, 8),
                               fault_line(t2, "abort", 0x0C, 0x0D, 0xEF00, 1, 1, 0, 8)]))

    # a BAM that stops after two packets: the next frame (1 s on) finds it timed out
    log, p = Log(), payload(30)
    log.cm(0x0E, 0xFF, 32, 30, 0, 5, 0xFF, 0xFECA, 6)
    log.dt(0x0E, 0xFF, 1, p)
    log.dt(0x0E, 0xFF, 2, p)
    t = log.frame(0xFE, 0xF1, 0x00, [0] * 8, 6, 1_000_000)
    out.append(("timeout", log, [fault_line(t, "timeout", 0x0E, 0xFF, 0xFECA, 0, 3, 2, 5)]))

    # an RTS whose CTS never comes: T3 1250 ms
    log = Log()
    log.cm(0x12, 0x13, 16, 30, 0, 5, 5, 0xEF00)
    log.frame(0xFE, 0xF1, 0x00, [0] * 8, 6, 1_200_000)  # within T2/T3
    t = log.frame(0xFE, 0xF1, 0x00, [0] * 8, 6, 100_000)
    out.append(("rts-no-cts", log, [fault_line(t, "timeout", 0x12, 0x13, 0xEF00, 0, 1, 0, 5)]))

    # a second BAM of the same source before the first ends replaces it
    log, a, b = Log(), payload(30), payload(10)
    log.cm(0x14, 0xFF, 32, 30, 0, 5, 0xFF, 0xFECA, 6)
    log.dt(0x14, 0xFF, 1, a)
    t1 = log.cm(0x14, 0xFF, 32, 10, 0, 2, 0xFF, 0xFECB, 6)
    log.dt(0x14, 0xFF, 1, b)
    t2 = log.dt(0x14, 0xFF, 2, b)
    out.append(("replaced", log, [fault_line(t1, "replaced", 0x14, 0xFF, 0xFECA, 32, 2, 1, 5),
                                  msg_line(t2, 0xFECB, 0x14, 0xFF, 1, b, 6)]))

    # announcements that make no sense: 8 bytes, wrong packet count, a BAM to one node, a short TP.CM
    log = Log()
    t1 = log.cm(0x15, 0xFF, 32, 8, 0, 2, 0xFF, 0xFECA)
    t2 = log.cm(0x15, 0xFF, 32, 30, 0, 4, 0xFF, 0xFECA)
    t3 = log.cm(0x15, 0x16, 32, 30, 0, 5, 0xFF, 0xFECA)
    t4 = log.frame(TP_CM, 0xFF, 0x15, [32, 30, 0, 5])
    t5 = log.cm(0x15, 0x16, 99, 0, 0, 0, 0, 0xFECA)
    log.dt(0x15, 0xFF, 1, [0] * 14)  # no session: stray
    out.append(("malformed", log, [fault_line(t1, "malformed", 0x15, 0xFF, 0xFECA, 32),
                                   fault_line(t2, "malformed", 0x15, 0xFF, 0xFECA, 32),
                                   fault_line(t3, "malformed", 0x15, 0x16, 0xFECA, 32),
                                   fault_line(t4, "malformed", 0x15, 0xFF, 0, 32),
                                   fault_line(t5, "malformed", 0x15, 0x16, 0xFECA, 99)]))

    # 33 sources announce at once: the 33rd finds no room; the others complete
    log, want = Log(), []
    ps = {sa: payload(9) for sa in range(0x40, 0x61)}
    for sa in ps:
        t = log.cm(sa, 0xFF, 32, 9, 0, 2, 0xFF, 0xFECA, 6, 1000)
        if sa == 0x60:
            want.append(fault_line(t, "no_room", sa, 0xFF, 0xFECA, 32))
    for seq in (1, 2):
        for sa in list(ps)[:32]:
            t = log.dt(sa, 0xFF, seq, ps[sa], 1000)
            if seq == 2:
                want.append(msg_line(t, 0xFECA, sa, 0xFF, 1, ps[sa], 6))
    out.append(("no-room", log, want))
    return out


def main():
    tool = sys.argv[1]
    rng = random.Random(13)
    bad = 0
    for name, log, want in cases(rng):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write("\n".join(log.lines) + "\n")
            f.flush()
            p = subprocess.run([tool, f.name], capture_output=True, text=True, timeout=30)
        lines = p.stdout.splitlines()
        got, stats = lines[:-1], lines[-1] if lines else ""
        ok = p.returncode == 0 and got == want
        print("%-26s %s  %s" % (name, "ok  " if ok else "FAIL", stats))
        if not ok:
            bad += 1
            print("  got:\n    " + "\n    ".join(got) + "\n  want:\n    " + "\n    ".join(want) + "\n" + p.stderr)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
