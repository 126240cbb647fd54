#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""attack-evidence.py RAILMON GEN [--report] - issue 24's tamper cases, as an
attacker with the card works: from the format's description alone
(storage/DESIGN.md: segment header, frames, CRC-32C over the salt;
record/railmon.proto and record/seal.h: Batch, Seal, the signed bytes;
README "Evidence": BLAKE2b-256 chain, Ed25519), sharing no code with railmon.
The logs are written by the real sink (GEN, gen-evidence-log); everything
after that is bytes on disk: frames rewritten with their CRC recomputed,
files copied and renamed, Seals re-signed with the vehicle's key (a key
holder's forgery the chain must still show) or another one.

Each case checks verify's exit status and what it names (file, offset,
seqs), and that no seq it did not prove is inside a "verified" range.  With
--report the cases are only run and printed (case, exit, first line): how
the before/after table of issue 24 was made against the old build.
"""
import hashlib
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

RAILMON, GEN = sys.argv[1], sys.argv[2]
REPORT = "--report" in sys.argv[3:]
FAILS = []
ROWS = []

# ------------------------------------------------------------- CRC-32C
# Castagnoli, reflected polynomial 0x82F63B78, as storage/DESIGN.md names it.
CRC_T = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    CRC_T.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = CRC_T[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ------------------------------------------------------------- segments
FRAME_HDR = 40
F_DATA, F_SEAL, F_GAP = 0, 1, 2


class Seg:
    """A segment file: its header bytes and its frames, rewritable."""

    def __init__(self, path):
        self.path = path
        b = open(path, "rb").read()
        magic, ver, hdr_bytes, first, salt = struct.unpack_from("<8sIIQQ", b, 0)
        assert magic == b"RMLOGSEG", path
        self.hdr = bytearray(b[:hdr_bytes])
        self.first, self.salt, self.size = first, salt, len(b)
        self.frames = []
        off = hdr_bytes
        while off + FRAME_HDR <= len(b):
            ln, crc, fs, cnt, flags, t0, t1 = struct.unpack_from("<IIQIIqq", b, off)
            pad = (ln + 7) & ~7
            if off + FRAME_HDR + pad > len(b) or not (fs or ln or cnt):
                break
            if crc32c(struct.pack("<Q", salt) + b[off:off + 4] + b[off + 8:off + FRAME_HDR + pad]) != crc:
                break
            self.frames.append(dict(off=off, first=fs, count=cnt, flags=flags, t0=t0, t1=t1,
                                    payload=bytes(b[off + FRAME_HDR:off + FRAME_HDR + ln])))
            off += FRAME_HDR + pad
            if flags == F_SEAL:
                break
        self.end_off = off

    def frame_bytes(self, f):
        p = f["payload"]
        pad = (len(p) + 7) & ~7
        body = struct.pack("<QIIqq", f["first"], f["count"], f["flags"], f["t0"], f["t1"]) + p + \
            bytes(pad - len(p))
        ln = struct.pack("<I", len(p))
        crc = crc32c(struct.pack("<Q", self.salt) + ln + body)
        return ln + struct.pack("<I", crc) + body

    def set_first(self, first):
        """The header names another first seq: both copies, CRCs recomputed."""
        self.first = first
        for copy in (0, 128):
            struct.pack_into("<Q", self.hdr, copy + 16, first)
            struct.pack_into("<I", self.hdr, copy + 124, crc32c(bytes(self.hdr[copy:copy + 124])))

    def write(self, path=None):
        out = bytearray(self.hdr)
        for f in self.frames:
            f["off"] = len(out)
            out += self.frame_bytes(f)
        if len(out) < self.size and not any(f["flags"] == F_SEAL for f in self.frames):
            out += bytes(self.size - len(out))  # an open segment's zeroed room
        open(path or self.path, "wb").write(out)


def seg_names(d):
    return sorted(n for n in os.listdir(d) if re.fullmatch(r"\d{20}\.seg", n))


def load(d):
    return [Seg(os.path.join(d, n)) for n in seg_names(d)]


# ------------------------------------------------------------- protobuf
def varint(b, i):
    v = s = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, i


def enc_varint(v):
    out = bytearray()
    while True:
        if v < 0x80:
            out.append(v)
            return bytes(out)
        out.append((v & 0x7F) | 0x80)
        v >>= 7


def fields(b):
    """[(number, wire type, value)]: value an int (varint, fixed) or bytes."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = struct.unpack_from("<Q", b, i)[0], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = bytes(b[i:i + n]), i + n
        elif wt == 5:
            v, i = struct.unpack_from("<I", b, i)[0], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def encode(fl):
    out = bytearray()
    for num, wt, v in fl:
        out += enc_varint(num << 3 | wt)
        if wt == 0:
            out += enc_varint(v)
        elif wt == 1:
            out += struct.pack("<Q", v)
        elif wt == 2:
            out += enc_varint(len(v)) + v
        else:
            out += struct.pack("<I", v)
    return bytes(out)


def get(fl, num, default=None):
    for n, _, v in fl:
        if n == num:
            return v
    return default


def put(fl, num, wt, v):
    out, done = [], False
    for n, w, x in fl:
        if n == num:
            if not done:
                out.append((num, wt, v))
            done = True
        else:
            out.append((n, w, x))
    if not done:
        out.append((num, wt, v))
        out.sort(key=lambda t: t[0])
    return out


def zz(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def unzz(v):
    return (v >> 1) ^ -(v & 1)


# ------------------------------------------------------------- evidence
def b2(data):
    return hashlib.blake2b(data, digest_size=32).digest()


def digest(payload):
    while payload.endswith(b"\x38\x01"):  # Batch.historical = true, appended by a re-send
        payload = payload[:-2]
    return b2(payload)


def genesis(log_id, first):
    return b2(b"railmon.chain.v1" + log_id + struct.pack("<Q", first))


def fold(h, ds):
    for d in ds:
        h = b2(h + d)
    return h


def signed_bytes(s, batch):
    """record/seal.h: the Seal's fields, then (version 2) its own Batch's
    schema_version (4), t0_ns, config_hash, mono_t0_ns (8 each, LE)."""
    veh = get(s, 2, b"")
    out = (b"RMSEAL1\0" + struct.pack("<I", get(s, 1, 0)) + bytes([len(veh)]) + veh + get(s, 3) + get(s, 4) +
           struct.pack("<QQq", get(s, 5, 0), get(s, 6, 0), unzz(get(s, 7, 0))) + get(s, 8) + get(s, 9) +
           get(s, 10))
    if get(s, 1, 0) >= 2:
        out += struct.pack("<IqQq", get(batch, 1, 0), unzz(get(batch, 6, 0)), get(batch, 4, 0),
                           unzz(get(batch, 15, 0)))
    return out


def sign(s, key, batch):
    return put(s, 11, 2, key.sign(signed_bytes(s, batch)))


def key_of(path):
    line = open(path).read().split()
    return Ed25519PrivateKey.from_private_bytes(bytes.fromhex(line[1]))


class Rec:
    """A frame of the log with its Batch fields (and Seal, if any)."""

    def __init__(self, seg, idx):
        self.seg, self.idx = seg, idx
        self.f = seg.frames[idx]
        self.batch = fields(self.f["payload"])
        sb = get(self.batch, 14)
        self.seal = fields(sb) if sb is not None else None

    @property
    def first(self):
        return self.f["first"]

    def set_batch(self, fl):
        self.batch = fl
        self.f["payload"] = encode(fl)

    def set_seal(self, s):
        """The Seal, and its SEAL event's arg (records covered) to match."""
        self.seal = s
        ev = fields(get(self.batch, 10))
        ev = put(ev, 4, 2, enc_varint(zz(get(s, 6, 0) - get(s, 5, 0))))
        self.set_batch(put(put(self.batch, 10, 2, encode(ev)), 14, 2, encode(s)))


def records(segs):
    return [Rec(s, i) for s in segs for i, f in enumerate(s.frames) if f["flags"] == F_DATA]


# ------------------------------------------------------------- running
def run(*args):
    p = subprocess.run([RAILMON] + list(args), capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def verify(d, pub, whole=False):
    return run("verify", "--data", d, "--pubkey", pub, *(["--whole"] if whole else []))


def ranges(out):
    """{kind word: [(a, b)]} of verify's range lines."""
    rs = {}
    for m in re.finditer(r"^(.*?): seq (\d+)\.\.(\d+)$", out, re.M):
        rs.setdefault(m.group(1), []).append((int(m.group(2)), int(m.group(3))))
    return rs


def verified_has(out, seq):
    return any(a <= seq <= b for a, b in ranges(out).get("verified", []))


def check(case, cond, what, res):
    if not cond:
        FAILS.append("%s: %s\n  exit %d\n  stdout: %s\n  stderr: %s" % (case, what, res[0], res[1].strip()[:1500],
                                                                         res[2].strip()[:1500]))


def row(case, res):
    first = (res[2].strip().splitlines() or res[1].strip().splitlines() or [""])[0]
    ROWS.append((case, res[0], first))


# ------------------------------------------------------------- the cases
def fresh_copy(src, base, name):
    d = os.path.join(base, name)
    shutil.copytree(src, d)
    return d


def seals_of(recs):
    return [r for r in recs if r.seal is not None]


def change_t0(r, delta=1000):
    """The Batch's t0_ns moved: every record time in it changes."""
    r.set_batch(put(r.batch, 6, 0, zz(unzz(get(r.batch, 6, 0)) + delta)))


def packed(b, signed):
    out, i = [], 0
    while i < len(b):
        v, i = varint(b, i)
        out.append(v)
    return out


def add_can(batch, can_id, data):
    """One more CAN frame in the Batch's columns (CanFrames, field 8: packed
    t_delta_ns (sint64), bus, id, flags, len, then the data bytes)."""
    cf = fields(get(batch, 8, b""))
    cols = {n: packed(get(cf, n, b""), n == 1) for n in range(1, 6)}
    for n, v in ((1, zz(0)), (2, 0), (3, can_id), (4, 0), (5, len(data))):
        cols[n].append(v)
    cf = [(n, 2, b"".join(enc_varint(v) for v in cols[n])) for n in range(1, 6)]
    cf.append((6, 2, get(fields(get(batch, 8, b"")), 6, b"") + data))
    return put(batch, 8, 2, encode(cf))


def data_recs(recs):
    return [r for r in recs if r.seal is None]


def main():
    base = tempfile.mkdtemp(prefix="evd-attack-")
    key = os.path.join(base, "v.key")
    other = os.path.join(base, "o.key")
    for k in (key, other):
        subprocess.run([RAILMON, "keygen", "--out", k], check=True, capture_output=True)
    pub = key + ".pub"
    vkey, okey = key_of(key), key_of(other)
    clean = {}
    for shape in ("plain", "restart"):
        d = os.path.join(base, "clean-" + shape)
        subprocess.run([GEN, d, key, shape, "24"], check=True, capture_output=True)
        clean[shape] = d
        res = verify(d, pub, whole=True)
        row("clean log (%s), --whole" % shape, res)
        check("clean " + shape, res[0] == 0 and "problem" not in res[2], "a clean log fails", res)

    # -- 1. a segment forged in between two segments, repeating seqs: the
    #       last data Batch before the segment's closing Seal again, ending
    #       where the next segment starts (no seq missing gives it away)
    for how in ("forged", "verbatim"):
        case = "overlapping segment (%s copy of a Batch)" % how
        d = fresh_copy(clean["plain"], base, "overlap-" + how)
        segs = load(d)
        for a in segs[1:-1]:  # a segment that ends in a data Batch, then its Seal
            data = [i for i, x in enumerate(a.frames) if x["flags"] == F_DATA]
            bi, si = data[-2], data[-1]
            if Rec(a, si).seal is not None and Rec(a, bi).seal is None:
                break
        assert Rec(a, si).seal is not None and Rec(a, bi).seal is None
        f = dict(a.frames[bi])
        end = a.frames[-1]["first"]  # the segment's SEAL frame: where the next one starts
        forged = Seg(a.path)
        forged.set_first(f["first"])
        if how == "forged":
            # the Batch with one more CAN frame: it covers the Seal's seq too
            r = Rec(a, bi)
            f["payload"] = encode(add_can(r.batch, 0x100, bytes.fromhex("DEADBEEF00000001")))
            f["count"] += 1
            forged.frames = [f]
        else:
            # verbatim, and the Seal's seq as a GAP (readers skip GAPs)
            forged.frames = [f, dict(off=0, first=f["first"] + f["count"], count=end - f["first"] - f["count"],
                                     flags=F_GAP, t0=f["t0"], t1=f["t1"], payload=b"")]
        forged.frames.append(dict(off=0, first=end, count=0, flags=F_SEAL, t0=f["t0"], t1=f["t1"], payload=b""))
        name = os.path.join(d, "%020d.seg" % f["first"])
        assert os.path.basename(name) not in os.listdir(d) and name > a.path
        forged.write(name)
        rep = (f["first"], f["first"] + f["count"] - 1)
        res = verify(d, pub, whole=True)
        row(case, res)
        both = os.path.basename(a.path) in res[2] and os.path.basename(name) in res[2]
        check(case, res[0] == 1 and both and
              (("seqs %d..%d repeated" % rep) if rep[1] > rep[0] else "seq %d repeated" % rep[0]) in res[2],
              "verify must fail naming both files and seqs %d..%d" % rep, res)
        ex = run("export", "--data", d, "--order", "seq", "--format", "csv")
        seqs = [line.split(",")[2] for line in ex[1].splitlines()[1:]]
        check(case + " (export)", ex[0] == 1 and len(seqs) == len(set(seqs)) and
              os.path.basename(name) in ex[2] and os.path.basename(a.path) in ex[2] and
              (("repeats records %d..%d" % rep) if rep[1] > rep[0] else "repeats record %d" % rep[0]) in ex[2],
              "export prints a seq twice or does not name both", ex)
        st = run("stat", "--data", d)
        check(case + " (stat)", st[0] == 1 and os.path.basename(name) in st[2] and os.path.basename(a.path) in st[2],
              "stat does not name both files", st)
        # replay sends every CAN frame once: as many as the clean log's
        board = os.path.join(base, "replay.ini")
        open(board, "w").write("[board]\nvehicle = X\n[can vehicle]\ndriver = trace\nfile = /dev/null\n")
        out = os.path.join(base, "replayed-" + how)
        rp = run("replay", d, "--board", board, "--data", out)
        n_rp = len(run("export", "--data", out, "--kind", "can", "--format", "csv")[1].splitlines())
        n_clean = len(run("export", "--data", clean["plain"], "--kind", "can", "--format", "csv")[1].splitlines())
        check(case + " (replay)", rp[0] == 1 and os.path.basename(name) in rp[2] and os.path.basename(a.path) in rp[2]
              and n_rp == n_clean, "replay does not name both files or sends a frame twice (%d, clean %d)" %
              (n_rp, n_clean), rp)

    # -- 2. the same frame twice inside one segment
    case = "a Batch repeated inside one segment"
    d = fresh_copy(clean["plain"], base, "repeat-one")
    segs = load(d)
    s = segs[1]
    i = [k for k, x in enumerate(s.frames) if x["flags"] == F_DATA][1]
    s.frames.insert(i + 1, dict(s.frames[i]))
    s.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and os.path.basename(s.path) in res[2], "not detected in its segment", res)

    # -- 3. the last Seal: altered, replaced by a CAN frame, a second record
    recs = records(load(clean["plain"]))
    last = seals_of(recs)[-1]
    lastseq = last.first
    case = "last Seal altered (its time, not re-signed)"
    d = fresh_copy(clean["plain"], base, "last-altered")
    r = seals_of(records(load(d)))[-1]
    r.set_seal(put(r.seal, 7, 0, zz(unzz(get(r.seal, 7)) + 10 ** 9)))
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and ("seq %d:" % lastseq) in res[2] and not verified_has(res[1], lastseq),
          "the altered last Seal passes or is verified", res)

    case = "last Seal replaced by a CAN frame 100#DEADBEEF00000001"
    d = fresh_copy(clean["plain"], base, "last-can")
    r = seals_of(records(load(d)))[-1]
    t = unzz(get(r.batch, 6, 0))
    can = encode([(1, 2, enc_varint(zz(0))), (2, 2, enc_varint(0)), (3, 2, enc_varint(0x100)),
                  (4, 2, enc_varint(0)), (5, 2, enc_varint(8)), (6, 2, bytes.fromhex("DEADBEEF00000001"))])
    fl = [x for x in r.batch if x[0] not in (10, 14)]
    r.set_batch(sorted(fl + [(8, 2, can), (6, 0, zz(t))], key=lambda x: x[0]))
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    prev_end = get(seals_of(recs)[-2].seal, 6)
    check(case, not verified_has(res[1], lastseq) and not verified_has(res[1], lastseq - 1) and
          verified_has(res[1], prev_end), "the replaced Seal's seq or range is inside verified", res)

    case = "last Seal Batch with a second record"
    d = fresh_copy(clean["plain"], base, "last-two")
    segs = load(d)
    r = seals_of(records(segs))[-1]
    r.set_batch(sorted(r.batch + [(8, 2, can)], key=lambda x: x[0]))
    r.f["count"] = 2
    for x in r.seg.frames[r.idx + 1:]:
        x["first"] += 1  # the segment's own SEAL frame: its end moved
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and ("seq %d:" % lastseq) in res[2] and not verified_has(res[1], lastseq),
          "a Seal Batch with two records passes", res)

    # -- 4. a middle Seal Batch altered outside its signed Seal
    case = "middle Seal Batch altered outside its Seal (config hash)"
    d = fresh_copy(clean["plain"], base, "mid-seal")
    r = seals_of(records(load(d)))[len(seals_of(recs)) // 2]
    r.set_batch(put(r.batch, 4, 1, get(r.batch, 4, 0) ^ 0xFF))
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and re.search(r"%s: offset %d: seq %d: this Seal Batch was changed" %
                                          (os.path.basename(r.seg.path), r.f["off"], r.first), res[2]) and
          not verified_has(res[1], r.first), "not named at itself", res)

    # -- 4b. the last Seal's Batch altered outside its Seal message: no
    #        later Seal links to it, so its own signature must cover its
    #        Batch's fields (config_hash: fixed64 field 4; mono_t0_ns:
    #        sint64 field 15)
    for what, num, wt, alter in (("config hash", 4, 1, lambda v: (v or 0) ^ 0xFF),
                                 ("mono_t0_ns", 15, 0, lambda v: zz(unzz(v or 0) + 1000))):
        case = "last Seal Batch altered outside its Seal (%s)" % what
        d = fresh_copy(clean["plain"], base, "last-seal-" + str(num))
        r = seals_of(records(load(d)))[-1]
        # (gen-evidence-log's sink is deterministic: no clock offset, so
        # its Seal Batches carry no mono_t0_ns; the attacker adds one)
        r.set_batch(put(r.batch, num, wt, alter(get(r.batch, num))))
        r.seg.write()
        res = verify(d, pub)
        row(case, res)
        check(case, res[0] == 1 and re.search(r"%s: offset %d: seq %d: a Seal not signed by this key" %
                                              (os.path.basename(r.seg.path), r.f["off"], r.first), res[2]) and
              not verified_has(res[1], r.first), "the last Seal Batch altered passes or is verified", res)

    # -- 4c. the last Seal Batch's other bytes: the SEAL event's source
    #        (Events field 2, packed) and an unknown field appended (a
    #        reader must ignore it; the chain's digest would not)
    for what in ("event source", "unknown field"):
        case = "last Seal Batch altered outside its Seal (%s)" % what
        d = fresh_copy(clean["plain"], base, "last-seal-" + what.replace(" ", "-"))
        r = seals_of(records(load(d)))[-1]
        if what == "event source":
            ev = put(fields(get(r.batch, 10)), 2, 2, enc_varint(7))
            r.set_batch(put(r.batch, 10, 2, encode(ev)))
        else:
            r.set_batch(r.batch + [(99, 0, 1)])
        r.seg.write()
        res = verify(d, pub)
        row(case, res)
        check(case, res[0] == 1 and ("%s: offset %d: seq %d:" % (os.path.basename(r.seg.path), r.f["off"], r.first))
              in res[2] and not verified_has(res[1], r.first), "the last Seal Batch altered passes or is verified", res)

    # -- 5. a data Batch changed: the Batch named, its seqs only
    case = "data Batch changed (t0, CRC recomputed)"
    d = fresh_copy(clean["plain"], base, "batch")
    rs = records(load(d))
    sl = seals_of(rs)
    mid = get(sl[len(sl) // 2].seal, 5)
    r = [x for x in data_recs(rs) if x.first > mid and x.f["count"] > 1][2]
    change_t0(r)
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    span = (r.first, r.first + r.f["count"] - 1)
    check(case, res[0] == 1 and ("%s: offset %d: seq %d: this Batch is not one its Seal lists" %
                                 (os.path.basename(r.seg.path), r.f["off"], r.first)) in res[2] and
          ("records %d..%d" % span) in res[2] and span in ranges(res[1]).get("CHANGED: do not match their Seal", []) and
          verified_has(res[1], span[0] - 1) and verified_has(res[1], span[1] + 1),
          "the changed Batch %d..%d is not named alone" % span, res)

    # -- 6. a data Batch removed: its frame made a GAP (what the writer writes for its drops)
    case = "data Batch turned into a GAP frame"
    d = fresh_copy(clean["plain"], base, "gap")
    r = [x for x in data_recs(records(load(d))) if x.first > mid][3]
    r.f["flags"], r.f["payload"] = F_GAP, b""
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and "removed" in res[2] and "writer's drops" not in res[1] and
          not verified_has(res[1], r.first), "a forged GAP is taken for the writer's drop", res)

    # -- 7. a damaged frame: never inside a verified range
    case = "flipped byte in a data frame (CRC fails)"
    d = fresh_copy(clean["plain"], base, "flip")
    r = [x for x in data_recs(records(load(d))) if x.first > mid][4]
    b = bytearray(open(r.seg.path, "rb").read())
    b[r.f["off"] + FRAME_HDR + 3] ^= 0x40
    open(r.seg.path, "wb").write(b)
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and not verified_has(res[1], r.first) and
          any(a <= r.first <= bb for a, bb in ranges(res[1]).get("damaged: unreadable, missing, repeated or malformed", [])),
          "the damaged seq is inside verified", res)

    # -- 8. frame header times forged: verify's times come from sealed content
    case = "frame header times forged (2031)"
    d = fresh_copy(clean["plain"], base, "times")
    base_res = verify(clean["plain"], pub)
    for s in load(d):
        for x in s.frames:
            x["t0"] = x["t1"] = 1950000000 * 10 ** 9
        s.write()
    res = verify(d, pub)
    row(case, res)
    times = lambda out: [l for l in out.splitlines() if "times" in l or l.startswith("sealed")]
    check(case, "2031" not in res[1] and times(res[1]) == times(base_res[1]) and times(res[1]),
          "printed times follow the frame headers", res)

    # -- 9. a middle Seal re-signed with the vehicle's key, its range moved
    #       past its first Batch (chain head recomputed over the rest)
    case = "Seal range skips a Batch (re-signed, vehicle key)"
    d = fresh_copy(clean["plain"], base, "skip")
    rs = records(load(d))
    sl = seals_of(rs)
    r = sl[len(sl) // 2]
    first, end = get(r.seal, 5), get(r.seal, 6)
    inr = [x for x in rs if first <= x.first < end]
    s = put(r.seal, 5, 0, first + inr[0].f["count"])
    s = put(s, 9, 2, fold(get(s, 8), [digest(x.f["payload"]) for x in inr[1:]]))
    s = put(s, 12, 2, b"".join(digest(x.f["payload"]) for x in inr[1:]))
    r.set_seal(sign(s, vkey, r.batch))
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and ("seq %d:" % r.first) in res[2] and "does not follow" in res[2] and
          not verified_has(res[1], inr[0].first), "a range that skips a Batch passes", res)

    # -- 10. the first Seal's range starts inside a Batch (a new chain there)
    case = "first Seal's range starts inside a Batch (re-signed)"
    d = fresh_copy(clean["plain"], base, "straddle")
    rs = records(load(d))
    r = seals_of(rs)[0]
    first, end = get(r.seal, 5), get(r.seal, 6)
    inr = [x for x in rs if first <= x.first < end]
    assert inr[0].f["count"] > 1
    log_id = get(r.seal, 3)
    s = put(r.seal, 5, 0, first + 1)
    s = put(s, 8, 2, genesis(log_id, first + 1))
    s = put(s, 9, 2, fold(get(s, 8), [digest(x.f["payload"]) for x in inr[1:]]))
    s = put(s, 12, 2, b"".join(digest(x.f["payload"]) for x in inr[1:]))
    r.set_seal(sign(s, vkey, r.batch))
    r.seg.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and "range starts inside a Batch" in res[2] and not verified_has(res[1], first),
          "a range starting inside a Batch passes", res)

    # -- 11. between two chains: a record changed there is never "verified"
    out = verify(clean["restart"], pub)[1]
    between = ranges(out).get("unproven, between chains: after one chain's last Seal, before the next chain", [])
    case = "record changed between two chains"
    d = fresh_copy(clean["restart"], base, "between")
    res = (1, out, "")
    if between:
        a, b_ = between[0]
        r = [x for x in data_recs(records(load(d))) if a <= x.first <= b_][0]
        change_t0(r)
        r.seg.write()
        res = verify(d, pub)
        row(case, res)
        check(case, res[0] == 0 and not verified_has(res[1], r.first) and (a, b_) in ranges(res[1]).get(
            "unproven, between chains: after one chain's last Seal, before the next chain", []),
            "the changed record is verified, or the range moved", res)
    else:
        check(case, False, "the restart log has no records between chains", res)

    # -- 11b. the new chain's first Seal linked to a Seal that is not the
    #        one before it (re-signed with the vehicle's key)
    case = "restart Seal linked elsewhere (re-signed, vehicle key)"
    d = fresh_copy(clean["restart"], base, "relink")
    rs = records(load(d))
    fresh = [x for x in seals_of(rs)[1:] if get(x.seal, 8) == genesis(get(x.seal, 3), get(x.seal, 5))]
    check(case, fresh, "no chain restart in the restart log", (0, "", ""))
    if fresh:
        r = fresh[0]
        r.set_seal(sign(put(r.seal, 10, 2, b2(b"another Seal")), vkey, r.batch))
        r.seg.write()
        res = verify(d, pub)
        row(case, res)
        check(case, res[0] == 1 and ("seq %d:" % r.first) in res[2] and "does not follow" in res[2],
              "a restart linked to another Seal passes", res)

    # -- 12. --whole: everything before the chain restart deleted
    case = "--whole, segments before a chain restart deleted"
    d = fresh_copy(clean["restart"], base, "whole")
    rs = records(load(d))
    sl = seals_of(rs)
    restarts = [get(x.seal, 5) for x in sl[1:] if get(x.seal, 8) == genesis(get(x.seal, 3), get(x.seal, 5))]
    check(case, restarts, "no chain restart in the restart log", (0, "", ""))
    if restarts:
        cut = min(n for n in (s.first for s in load(d)) if n >= restarts[0])
        for s in load(d):
            if s.first < cut:
                os.unlink(s.path)
        res = verify(d, pub, whole=True)
        row(case, res)
        check(case, res[0] == 1 and "--whole" in res[2], "--whole passes without the log's start", res)
        res2 = verify(d, pub)
        check(case + " (without --whole)", res2[0] == 0 and not verified_has(res2[1], cut - 1), "", res2)

    # -- 13. every Seal re-signed with another key: a wrong key, said so
    case = "every Seal re-signed with another key"
    d = fresh_copy(clean["plain"], base, "otherkey")
    segs = load(d)
    for r in seals_of(records(segs)):
        r.set_seal(sign(r.seal, okey, r.batch))
    for s in segs:
        s.write()
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and "no Seal verifies with key" in res[1] and "retention" not in res[1] and
          "before the first Seal" not in res[1] and "verified: nothing" in res[1], "the wrong key is not said", res)

    # -- 14. no Seal at all: the first segment cut before its first Seal
    case = "no Seal at all (log cut before the first Seal)"
    d = fresh_copy(clean["plain"], base, "noseal")
    segs = load(d)
    s0 = segs[0]
    k = [i for i, x in enumerate(s0.frames) if x["flags"] == F_DATA and Rec(s0, i).seal is not None][0]
    s0.frames = s0.frames[:k]
    s0.write()
    for s in segs[1:]:
        os.unlink(s.path)
    res = verify(d, pub)
    row(case, res)
    check(case, res[0] == 1 and os.path.basename(s0.path) in res[2] and "00000000000000000000.seg" not in res[2] and
          "not tampering" not in res[1] and "not yet sealed" not in res[1], "no-Seal message", res)

    # -- 15. a log of railmon before Seal v2 (version 1 Seals), written by
    #        79186e9's sink (gen-evidence-log "small": 2 runs, 120 items, 2 KiB
    #        segments, seed 7): readable, verifiable, and said to be old
    case = "old-format log (Seal v1), --whole"
    old = os.path.join(os.path.dirname(os.path.abspath(__file__)), "v1-seal-log")
    res = verify(old, old + ".pub", whole=True)
    row(case, res)
    ex = run("export", "--data", old, "--order", "seq", "--format", "csv")
    seqs = [line.split(",")[2] for line in ex[1].splitlines()[1:]]
    check(case, res[0] == 0 and "verified: seq 1..273\n" in res[1] and "old format: 28 Seals of version 1" in res[1] and
          ex[0] == 0 and len(seqs) == len(set(seqs)) and int(seqs[-1]) == 273, "an old log is not read as before",
          (res[0] | ex[0], res[1] + ex[2], res[2]))

    shutil.rmtree(base)
    if REPORT:
        for c, rc, first in ROWS:
            print("| %s | %d | %s |" % (c, rc, first[:200]))
        return 0
    for c, rc, first in ROWS:
        print("%-58s exit %d  %s" % (c, rc, first[:160]))
    if FAILS:
        print("\n".join(["FAIL: " + f for f in FAILS]))
        return 1
    print("attack: %d cases, each said as expected" % len(ROWS))
    return 0


sys.exit(main())
