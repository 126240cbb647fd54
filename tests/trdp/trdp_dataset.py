#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""trdp_dataset.py - an independent TRDP data-set encoder for the tests,
written from the specification (IEC 61375-2-3's data set, the TCNopen
stack's XML format), not from railmon's C: the XML read with Python's
ElementTree, each element packed with struct '>' (big-endian, packed: no
padding between elements), and the values railmon must decode from it,
with their channel names, listed beside the bytes.

    cfg = Config(path)
    payload, expected = cfg.encode(comid, rng)
    expected: [Value(name, type, offset, size, raw, sub, value, text)]
"""
import math
import random
import struct
import xml.etree.ElementTree as ET

# type number: (name, struct format, size); the names of trdp-config.xsd
TYPES = {
    1: ("BOOL8", "B", 1), 2: ("CHAR8", "B", 1), 3: ("UTF16", "H", 2),
    4: ("INT8", "b", 1), 5: ("INT16", "h", 2), 6: ("INT32", "i", 4), 7: ("INT64", "q", 8),
    8: ("UINT8", "B", 1), 9: ("UINT16", "H", 2), 10: ("UINT32", "I", 4), 11: ("UINT64", "Q", 8),
    12: ("REAL32", "f", 4), 13: ("REAL64", "d", 8),
    14: ("TIMEDATE32", "I", 4), 15: ("TIMEDATE48", "IH", 6), 16: ("TIMEDATE64", "Ii", 8),
}
NAMES = {v[0]: k for k, v in TYPES.items()}
NAMES.update({"BITSET8": 1, "ANTIVALENT8": 1, "UTF8": 2})
INTS = {4: 8, 5: 16, 6: 32, 7: 64, 8: 8, 9: 16, 10: 32, 11: 64}
SIGNED = {4, 5, 6, 7}
LENGTH_TYPES = {4, 5, 6, 8, 9, 10}   # may give a variable array's length

# values every run must meet at least once (Config.seen says which it did)
EDGES = {
    7: [-2**63, 2**63 - 1], 11: [2**64 - 1, 0], 4: [-128, 127], 5: [-32768], 6: [-2**31],
    12: [math.nan, math.inf, -math.inf, -0.0], 13: [math.nan, math.inf, -math.inf, 5e-324],
    16: [("sub", -1), ("sub", -999999), ("sub", -2**31)], 15: [("sub", 65535)],
}


class Value:
    def __init__(self, name, type_, offset, size, raw, sub=0, value=0.0, text=None):
        self.name, self.type, self.offset, self.size = name, type_, offset, size
        self.raw, self.sub, self.value, self.text = raw, sub, value, text

    def __repr__(self):
        return "%s %s @%d raw=%r sub=%d value=%r text=%r" % (self.name, TYPES[self.type][0], self.offset,
                                                             self.raw, self.sub, self.value, self.text)


class Element:
    def __init__(self, e, index):
        self.xml_name = e.get("name")
        self.name = self.xml_name if self.xml_name else "element%d" % index
        self.type_text = e.get("type").strip()
        self.array_size = int(e.get("array-size", "1"))
        self.unit = e.get("unit", "")
        self.scale = float(e.get("scale", "1"))
        self.offset = float(e.get("offset", "0"))
        self.type = None        # base type number, or None for a nested set
        self.nested = None      # the nested set's id


class Config:
    def __init__(self, path):
        root = ET.parse(path).getroot()
        self.datasets = {}      # id -> (name, [Element])
        by_name = {}
        for ds in root.iter("data-set"):
            elements, names = [], {}
            for i, e in enumerate(ds.findall("element"), 1):
                el = Element(e, i)
                # a repeated name becomes name#2, name#3 (railmon's rule)
                if el.name in names:
                    k = 2
                    while "%s#%d" % (el.name, k) in names:
                        k += 1
                    el.name = "%s#%d" % (el.name, k)
                names[el.name] = True
                elements.append(el)
            self.datasets[int(ds.get("id"))] = (ds.get("name", ""), elements)
            by_name[ds.get("name", "")] = int(ds.get("id"))
        for _, elements in self.datasets.values():
            for el in elements:
                t = el.type_text
                if t in NAMES:
                    el.type = NAMES[t]
                elif t.isdigit() and 1 <= int(t) <= 16:
                    el.type = int(t)
                elif t.isdigit():
                    el.nested = int(t)
                else:
                    el.nested = by_name[t]
        self.telegrams = {}     # comid -> (name, dataset id)
        used = set()
        for bi in root.iter("bus-interface"):
            for t in bi.findall("telegram"):
                comid = int(t.get("com-id"))
                name = t.get("name") or "comid%d" % comid
                if comid in self.telegrams:
                    continue    # the same telegram on another interface
                if name in used:
                    name = "%s#%d" % (name, comid)
                used.add(name)
                if int(t.get("data-set-id", "0")):
                    self.telegrams[comid] = (name, int(t.get("data-set-id")))
        self.seen = set()

    # ---- values ----

    def pick(self, rng, type_):
        """A raw value of a base type: an edge value now and then."""
        edges = EDGES.get(type_, [])
        edge = rng.choice(edges) if edges and rng.random() < 0.3 else None
        if edge is not None and not isinstance(edge, tuple):
            self.seen.add((type_, repr(edge)))
            return edge
        if type_ in INTS:
            bits = INTS[type_]
            return rng.randrange(-2**(bits - 1), 2**(bits - 1)) if type_ in SIGNED else rng.randrange(0, 2**bits)
        if type_ == 1:
            return rng.choice([0, 1, 2, 255])
        if type_ == 12:
            return struct.unpack(">f", struct.pack(">f", rng.uniform(-1e6, 1e6)))[0]
        if type_ == 13:
            return rng.uniform(-1e12, 1e12)
        if type_ == 14:
            return rng.randrange(0, 2**32)
        if type_ == 15:
            sub = edge[1] if edge else rng.randrange(0, 65536)
            if edge:
                self.seen.add((type_, repr(edge)))
            return (rng.randrange(0, 2**32), sub)
        if type_ == 16:
            sub = edge[1] if edge else rng.randrange(-999999, 1000000)
            if edge:
                self.seen.add((type_, repr(edge)))
            return (rng.randrange(0, 2**32), sub)
        raise ValueError(type_)

    @staticmethod
    def number(type_, raw, el):
        """raw -> (packed bytes, Value fields raw, sub, value)."""
        name, fmt, _ = TYPES[type_]
        if type_ in (15, 16):
            sec, sub = raw
            data = struct.pack(">" + fmt, sec, sub)
            x = float(sec) + (sub / 65536.0 if type_ == 15 else sub / 1e6)
            return data, sec, sub, x * el.scale + el.offset
        data = struct.pack(">" + fmt, raw)
        if type_ in (12, 13):
            raw = struct.unpack(">" + fmt, data)[0]
        return data, raw, 0, float(raw) * el.scale + el.offset

    def text(self, rng, type_, n):
        """n items of CHAR8 (bytes) or UTF16 (code units) and their text."""
        if type_ == 2:
            # whole pieces only: one-byte, two-, three-byte UTF-8, and 0xff,
            # a byte that is no UTF-8 (U+FFFD); a NUL ends the text early
            pieces, size = [], 0
            while size < n:
                p = rng.choice([b"a", b"Z", b"0", b" ", b"\xc3\xa9", b"\xe2\x82\xac", b"\xff"])
                pieces.append(p if size + len(p) <= n else b"a")
                size += len(pieces[-1])
            if pieces and rng.random() < 0.4:
                k = rng.randrange(len(pieces))
                pieces[k] = b"\0" * len(pieces[k])
            data = b"".join(pieces)
            return data, data.split(b"\0")[0].decode("utf-8", "replace")
        units = [rng.choice([0x41, 0x7a, 0xe9, 0x20ac, 0xd83d, 0xde00]) for _ in range(n)]
        if n >= 2 and rng.random() < 0.5:
            units[0:2] = [0xd83d, 0xde00]                 # a pair: U+1F600
        if n > 3 and rng.random() < 0.5:
            units[rng.randrange(1, n)] = 0                # ends early: what follows is not text
        data = b"".join(struct.pack(">H", u) for u in units)
        cut = units.index(0) if 0 in units else n
        return data, data[:2 * cut].decode("utf-16-be", "replace")

    # ---- a data set ----

    def encode(self, comid, rng, var_max=5):
        tel_name, dsid = self.telegrams[comid]
        out, values = bytearray(), []
        self._ds(dsid, tel_name, None, rng, out, values, var_max)
        return bytes(out), values

    def _ds(self, dsid, base, dyn, rng, out, values, var_max):
        """base: the names so far; dyn (prefix, index): in a variable array
        of data sets, name = prefix[index] + base."""
        _, elements = self.datasets[dsid]
        length = None
        for i, el in enumerate(elements):
            nxt = elements[i + 1] if i + 1 < len(elements) else None
            name = base + "." + el.name
            if el.array_size == 0:
                n = length
            else:
                n = el.array_size
            length = None
            if el.type is None:
                if el.array_size == 0:
                    for k in range(n):
                        self._ds(el.nested, "", (name, k), rng, out, values, var_max)
                elif el.array_size == 1:
                    self._ds(el.nested, name, dyn, rng, out, values, var_max)
                else:
                    for k in range(n):
                        self._ds(el.nested, "%s[%d]" % (name, k), dyn, rng, out, values, var_max)
                continue
            full = (lambda nm: "%s[%d]%s" % (dyn[0], dyn[1], nm)) if dyn else (lambda nm: nm)
            if el.type in (2, 3):
                data, text = self.text(rng, el.type, n)
                values.append(Value(full(name), el.type, len(out), len(data), 0, text=text))
                out += data
                continue
            if nxt is not None and nxt.array_size == 0 and el.type in LENGTH_TYPES and el.array_size == 1:
                raw = rng.randrange(0, var_max + 1)       # this one is the next one's length
                length = raw
            else:
                raw = None
            for k in range(n):
                r = raw if raw is not None else self.pick(rng, el.type)
                data, rawv, sub, value = self.number(el.type, r, el)
                nm = name if el.array_size == 1 else "%s[%d]" % (name, k)
                values.append(Value(full(nm), el.type, len(out), len(data), rawv, sub, value))
                out += data


def same_number(a, b):
    if isinstance(a, float) or isinstance(b, float):
        a, b = float(a), float(b)
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    return a == b
