# SPDX-License-Identifier: MIT
"""Reference DBC decoder for the tests, written from the DBC semantics and
independent of dbc/dbc-load.c: it walks the signal bit by bit (Motorola by the
classic "sawtooth" walk from the MSB), where the C decoder precompiles
shifts and masks.

Semantics checked against the C decoder:
- a signal is present only if all its bits lie within the frame's length;
- a multiplexed signal is present only if its multiplexor is present and
  the multiplexor's raw value is in one of its ranges: raw, so a scaled
  multiplexor selects by the value on the wire, and a signed one by its
  bit pattern;
- which multiplexor and ranges, as cantools reads a DBC (its formats/dbc.py
  and Message._create_codec): a signal without indicator (or a bare "m") is
  always decoded, SG_MUL_VAL_ or not; when exactly one signal of the
  message is marked "M" or "mNM", every other marked signal hangs from it
  with N plus the ranges SG_MUL_VAL_ gives it under that multiplexor; with
  none or several, only SG_MUL_VAL_ says (a marked signal it does not name
  is always decoded; one it hangs from a signal not marked M is never
  decoded); signals in a multiplexor cycle are never decoded;
- phys = raw * scale + offset, raw being two's complement when signed, or
  the IEEE float/double bit pattern (SIG_VALTYPE_ 1/2);
- quality 2 when phys is NaN/inf, 1 when outside [min, max] unless both are
  0, else 0.

What a lenient load does with production files (dbc/dbc.h), from the text:
- a file that is not UTF-8 is CP1252 (bytes CP1252 leaves undefined are
  Latin-1); `//` starts a comment outside strings;
- VECTOR__INDEPENDENT_SIG_MSG (0xC0000000 or 0x40000000) is not on the bus;
- a message id above 0x7ff without bit 31 is a 29-bit id, one above 29
  bits without bit 31 is not on the bus; "+5" is 5;
- VAL_/SIG_VALTYPE_/SG_MUL_VAL_ naming what does not exist are ignored;
- a bare "m" is a plain signal, and so is "mN" in a message without "M"
  (unless SG_MUL_VAL_ names its multiplexor);
- a signal with a bit past the message's length is dropped, and so is every
  signal whose multiplexor was dropped;
- BA_ "SystemSignalLongSymbol"/"SystemMessageLongSymbol" rename.
"""
import math
import re
import struct


class Signal:
    def __init__(self, msg, name, mux, start, size, order, sign, scale, offset, mn, mx, unit):
        self.msg, self.name, self.start, self.size = msg, name, int(start), int(size)
        self.intel = order == "1"
        self.signed = sign == "-"
        self.scale, self.offset = float(scale), float(offset)
        self.min, self.max, self.unit = float(mn), float(mx), unit
        self.valtype = 0
        self.is_mux = mux is not None and mux.endswith("M")
        self.mux_val = int(mux[1:].rstrip("M")) if mux and mux.startswith("m") and mux != "m" else None
        self.marked = mux is not None and mux != "m"
        self.mul_val = None     # (multiplexor name, [(lo, hi)]) from SG_MUL_VAL_
        self.parent = None      # Signal
        self.ranges = []        # [(lo, hi)]
        self.labels = {}

    def bits(self):
        """Absolute bit numbers (byte * 8 + bit in byte), LSB of the value first."""
        if self.intel:
            return [self.start + i for i in range(self.size)]
        walk, pos = [], self.start  # from the MSB down
        for _ in range(self.size):
            walk.append(pos)
            pos = pos + 15 if pos % 8 == 0 else pos - 1
        return walk[::-1]


def msg_key(ident):
    """(id, ext) of a message id as written: bit 31 flags a 29-bit id, and
    so does a value above 0x7ff (no 11-bit frame can carry it)."""
    ident = int(ident)
    if ident in INDEPENDENT or (ident < 0x80000000 and ident >= 1 << 29):
        return None  # not a CAN id: not on the bus
    return ident & 0x1FFFFFFF, bool(ident & 0x80000000) or (ident & 0x1FFFFFFF) > 0x7FF


class Message:
    def __init__(self, ident, name, dlc):
        self.id, self.ext = msg_key(ident)
        self.name, self.dlc, self.signals = name, int(dlc), []


SIG_RE = re.compile(r'^\s*SG_\s+(\w+)\s*(M|m\d*M?)?\s*:\s*\+?(\d+)\|\+?(\d+)@([01])([+-])\s*'
                    r'\(([^,]+),([^)]+)\)\s*\[([^|]+)\|([^\]]+)\]\s*"([^"]*)"')
BO_RE = re.compile(r'^BO_\s+\+?(\d+)\s+(\w+)\s*:\s*\+?(\d+)')
INDEPENDENT = (0xC0000000, 0x40000000)


def read_text(path):
    data = open(path, "rb").read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in data)
    text = text.replace("\r\n", "\n")
    out, i, in_str = [], 0, False
    while i < len(text):  # drop // comments, never inside a string
        c = text[i]
        if in_str:
            if c == "\\":
                out.append(text[i:i + 2])
                i += 2
                continue
            in_str = c != '"'
        elif c == '"':
            in_str = True
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def load(path):
    text = read_text(path)
    msgs, cur = {}, None
    for line in text.split("\n"):
        m = BO_RE.match(line)
        if m:
            cur = None if msg_key(m.group(1)) is None else Message(*m.groups())
            if cur:
                msgs[(cur.id, cur.ext)] = cur
            continue
        m = SIG_RE.match(line)
        if m and cur is not None:
            cur.signals.append(Signal(cur, *m.groups()))
        elif not line.startswith(" SG_"):
            cur = None if not line.strip() == "" else cur

    class Nowhere:  # signals of VECTOR__INDEPENDENT_SIG_MSG: not on the bus
        labels = {}

    def sig(ident, name):
        if msg_key(ident) is None or msg_key(ident) not in msgs:
            return Nowhere()
        return next((s for s in msgs[msg_key(ident)].signals if s.name == name), Nowhere())

    for ident, name, vt in re.findall(r'SIG_VALTYPE_\s+\+?(\d+)\s+(\w+)\s*:?\s*(\d)\s*;', text):
        sig(ident, name).valtype = int(vt)
    for ident, name, body in re.findall(r'(?m)^VAL_\s+\+?(\d+)\s+(\w+)((?:\s+[-+]?\d+\s+"[^"]*")*)\s*;', text):
        for v, label in re.findall(r'([-+]?\d+)\s+"([^"]*)"', body):
            sig(ident, name).labels[int(v)] = label
    for ident, name, mux, body in re.findall(r'SG_MUL_VAL_\s+\+?(\d+)\s+(\w+)\s+(\w+)\s+([^;]*);', text):
        s = sig(ident, name)
        if not isinstance(s, Nowhere):
            s.mul_val = (mux, [(int(a), int(b)) for a, b in re.findall(r'(\d+)-(\d+)', body)])
    for msg in msgs.values():
        tops = [s for s in msg.signals if s.is_mux]
        top = tops[0] if len(tops) == 1 else None
        never = set()
        for s in msg.signals:
            if not s.marked or s is top:
                continue
            if top is not None:
                s.parent = top
                s.ranges = [] if s.is_mux else [(s.mux_val, s.mux_val)]
                if s.mul_val and s.mul_val[0] == top.name:
                    s.ranges += s.mul_val[1]
            elif s.mul_val:
                p = next((c for c in msg.signals if c.name == s.mul_val[0]), None)
                if p is None or not p.is_mux:
                    never.add(s.name)
                else:
                    s.parent, s.ranges = p, s.mul_val[1]
        for s in msg.signals:  # a chain that never reaches the top is a cycle
            p, n = s.parent, 0
            while p is not None and n <= len(msg.signals):
                p, n = p.parent, n + 1
            if p is not None:
                never.add(s.name)
        drop = never | {s.name for s in msg.signals if any(b // 8 >= msg.dlc for b in s.bits())}
        while True:
            more = {s.name for s in msg.signals if s.parent is not None and s.parent.name in drop} - drop
            if not more:
                break
            drop |= more
        msg.signals = [s for s in msg.signals if s.name not in drop]
    for ident, name, long in re.findall(r'BA_\s+"SystemSignalLongSymbol"\s+SG_\s+(\d+)\s+(\w+)\s+"([^"]*)"\s*;', text):
        sig(ident, name).name = long
    for ident, long in re.findall(r'BA_\s+"SystemMessageLongSymbol"\s+BO_\s+(\d+)\s+"([^"]*)"\s*;', text):
        if msg_key(ident) in msgs:
            msgs[msg_key(ident)].name = long
    return msgs


def raw_value(sig, data):
    raw = 0
    for k, b in enumerate(sig.bits()):
        raw |= ((data[b // 8] >> (b % 8)) & 1) << k
    return raw


def present(sig, data, raws):
    if any(b // 8 >= len(data) for b in sig.bits()):
        return False
    if sig.parent is None:
        return True
    if not present(sig.parent, data, raws):
        return False
    pr = raws.setdefault(sig.parent.name, raw_value(sig.parent, data))
    return any(lo <= pr <= hi for lo, hi in sig.ranges)


def physical(sig, raw):
    if sig.valtype == 1:
        v = struct.unpack("<f", raw.to_bytes(4, "little"))[0]
    elif sig.valtype == 2:
        v = struct.unpack("<d", raw.to_bytes(8, "little"))[0]
    elif sig.signed and raw >> (sig.size - 1):
        v = float(raw - (1 << sig.size))
    else:
        v = float(raw)
    return v * sig.scale + sig.offset


def decode(msgs, ident, ext, data):
    """[(signal, value, quality, label)] for one frame."""
    msg = msgs.get((ident, ext))
    out = []
    if msg is None:
        return out
    raws = {}
    for s in msg.signals:
        if not present(s, data, raws):
            continue
        raw = raw_value(s, data)
        v = physical(s, raw)
        if math.isnan(v) or math.isinf(v):
            q = 2
        elif not (s.min == 0 and s.max == 0) and (v < s.min or v > s.max):
            q = 1
        else:
            q = 0
        label = "-"
        if s.labels and math.isfinite(v):
            label = s.labels.get(int(round((v - s.offset) / s.scale)), "-")
        out.append((s, v, q, label))
    return out


def encode(sig, data, raw):
    """Write raw (already masked to sig.size bits) into data in place."""
    for k, b in enumerate(sig.bits()):
        data[b // 8] = (data[b // 8] & ~(1 << (b % 8))) | (((raw >> k) & 1) << (b % 8))
