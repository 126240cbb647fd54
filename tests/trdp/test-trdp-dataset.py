#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-trdp-dataset.py TRDP_DUMP SRCDIR [XML...] - trdp/dataset.c against
an independent encoder (trdp_dataset.py: struct.pack '>' from the
specification).  For each telegram of the XML files (tests/trdp/all-types.xml
without any given), random payloads with edge values (NaN and infinities,
INT64 and UINT64 limits, negative TIMEDATE64 microseconds) are decoded by
trdp-dump and every value must equal the encoder's: name, type, offset,
raw, sub-second part, scaled value, text.  Each payload is also decoded
  - with stale padding after its datasetLength (passed as LEN: ignored),
  - with the padding inside LEN (bytes after the data set: ignored, `used`),
  - cut short: the values before the cut, then -EBADMSG naming the ComId
    and the byte offset where the next value starts.
A UINT32 length above 65535 gives -ERANGE.  SEED=n repeats a run.
"""
import os
import random
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trdp_dataset  # noqa: E402
from trdp_dataset import EDGES, TYPES, same_number  # noqa: E402

EBADMSG, ERANGE = -74, -34
RUNS = int(os.environ.get("RUNS", "150"))  # payloads per telegram


def run_dump(dump, xml, lines):
    # a cross build's tool runs under meson's exe_wrapper (qemu-user)
    wrap = shlex.split(os.environ.get("MESON_EXE_WRAPPER", ""))
    out = subprocess.run(wrap + [dump, xml, "--decode"], input="".join(lines), capture_output=True, text=True,
                         check=True).stdout.splitlines()
    blocks, cur = [], None
    for line in out:
        w = line.split(" ", 7)
        if w[0] == "result":
            cur = {"rc": int(w[2]), "count": int(w[3]), "used": int(w[4]), "offset": int(w[5]),
                   "need": int(w[6]), "msg": w[7], "values": []}
        elif w[0] == "value":
            # names may hold spaces (the reference's "Mr UDP MC msg"): the
            # six fields after the name have none
            f = line.split(" ")
            cur["values"].append(["value", " ".join(f[1:-6])] + f[-6:])
        elif w[0] == "end":
            blocks.append(cur)
        else:
            raise AssertionError("trdp-dump: " + line)
    return blocks


def parse_raw(type_, text):
    if type_ in ("REAL32", "REAL64"):
        return float(text)
    return int(text)


def check_values(what, got, want):
    """got: trdp-dump's value lines, want: trdp_dataset.Value list."""
    assert len(got) == len(want), "%s: %d values, want %d\n got %s\n want %s" % (
        what, len(got), len(want), got[:len(want) + 1], want[:len(got) + 1])
    for g, w in zip(got, want):
        _, name, type_, offset, raw, sub, value, text = g
        ctx = "%s: %s\n  want %r" % (what, " ".join(g), w)
        assert name == w.name, ctx
        assert type_ == TYPES[w.type][0], ctx
        assert int(offset) == w.offset, ctx
        if w.text is not None:
            assert text == (w.text.encode("utf-8").hex() or "-"), ctx
            continue
        assert same_number(parse_raw(type_, raw), w.raw), ctx
        assert int(sub) == w.sub, ctx
        assert same_number(float(value), w.value), ctx


def main():
    dump, srcdir = sys.argv[1], sys.argv[2]
    xmls = sys.argv[3:] or [os.path.join(srcdir, "all-types.xml")]
    seed = int(os.environ.get("SEED", random.randrange(1 << 30)))
    print("SEED=%d" % seed)
    rng = random.Random(seed)
    total = cuts = 0
    types_seen, cfgs = set(), []
    for xml in xmls:
        cfg = trdp_dataset.Config(xml)
        cfgs.append(cfg)
        lines, checks = [], []
        for comid in sorted(cfg.telegrams):
            for i in range(RUNS):
                payload, want = cfg.encode(comid, rng)
                types_seen.update(v.type for v in want)
                pad = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
                lines.append("%d %s\n" % (comid, payload.hex() or "-"))
                checks.append(("full", comid, payload, want))
                lines.append("%d %s %d\n" % (comid, (payload + pad).hex(), len(payload)))
                checks.append(("padding after datasetLength", comid, payload, want))
                lines.append("%d %s\n" % (comid, (payload + pad).hex()))
                checks.append(("bytes after the data set", comid, payload + pad, want))
                if payload:
                    cut = rng.randrange(len(payload))
                    lines.append("%d %s\n" % (comid, payload[:cut].hex() or "-"))
                    checks.append(("cut at %d" % cut, comid, payload[:cut], want))
        blocks = run_dump(dump, xml, lines)
        assert len(blocks) == len(checks), "%d results for %d payloads" % (len(blocks), len(checks))
        for (what, comid, data, want), got in zip(checks, blocks):
            what = "%s ComId %d %s (payload %s)" % (xml, comid, what, data.hex())
            if what.find(" cut at ") < 0:
                assert got["rc"] == 0, "%s: %s" % (what, got["msg"])
                encoded = sum(v.size for v in want)
                assert got["used"] == encoded, "%s: used %d of %d" % (what, got["used"], encoded)
                check_values(what, got["values"], want)
                total += 1
                continue
            fit = []
            for v in want:
                if v.offset + v.size > len(data):
                    break
                fit.append(v)
            if len(fit) == len(want):
                assert got["rc"] == 0, "%s: %s" % (what, got["msg"])
            else:
                stop = want[len(fit)]
                assert got["rc"] == EBADMSG, "%s: rc %d, want -EBADMSG" % (what, got["rc"])
                assert got["offset"] == stop.offset and got["need"] == stop.size, \
                    "%s: stopped at %d needing %d, want %d needing %d (%s)" % (
                        what, got["offset"], got["need"], stop.offset, stop.size, got["msg"])
                want_msg = "ComId %d: the payload ends at byte offset %d" % (comid, stop.offset)
                assert got["msg"].startswith(want_msg), "%s: %r" % (what, got["msg"])
                cuts += 1
            check_values(what, got["values"], fit)
    # every base type decoded, and every edge value met (else the run
    # proved less than it says)
    if len(sys.argv) == 3:
        assert types_seen == set(TYPES), "types never decoded: %s" % (set(TYPES) - types_seen)
        seen = set().union(*(c.seen for c in cfgs))
        missing = [(TYPES[t][0], e) for t, es in EDGES.items() for e in es if (t, repr(e)) not in seen]
        assert not missing, "edge values never met: %s" % missing
        check_range(dump, xmls[0])
    print("%d payloads decoded equal to the Python encoder's, %d cut short refused at the right byte"
          % (total, cuts))
    return 0


def check_range(dump, xml):
    """ComId 107: a UINT32 length of 70000 is above the most items (65535)."""
    payload = (70000).to_bytes(4, "big") + bytes(70000)
    (got,) = run_dump(dump, xml, ["107 %s\n" % payload.hex()])
    assert got["rc"] == ERANGE and got["need"] == 70000 and got["offset"] == 4, got
    assert got["msg"].startswith("ComId 107: at byte offset 4, Var#107.items[] has 70000 items"), got["msg"]
    assert [v[1] for v in got["values"]] == ["Var#107.n"], got["values"]
    # 65535 items is the most, and is decoded
    payload = (65535).to_bytes(4, "big") + bytes(range(256)) * 256
    (got,) = run_dump(dump, xml, ["107 %s\n" % payload.hex()])
    assert got["rc"] == 0 and got["count"] == 65536 and got["used"] == 4 + 65535, got["msg"]
    assert got["values"][-1][1] == "Var#107.items[65534]" and got["values"][-1][4] == "254", got["values"][-1]


if __name__ == "__main__":
    sys.exit(main())
