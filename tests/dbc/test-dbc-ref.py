#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-dbc-ref.py DBC-DUMP DBC [N [all]]: decode N random frames with the C
decoder (dbc-dump) and with the independent Python reference (dbc_ref.py),
and require identical sample sets, values within 1e-9 relative, same
quality and same value-table label.  With "all", the frames must also
have produced every quality (good, out of range, invalid)."""
import math
import os
import random
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dbc_ref  # noqa: E402

FD_LENS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64]


def random_frame(rng, msgs):
    if rng.random() < 0.05:  # unknown ids decode to nothing
        ext = rng.random() < 0.5
        ident = rng.randrange(1 << 29) if ext else rng.randrange(1 << 11)
        if (ident, ext) in msgs:
            return random_frame(rng, msgs)
        return ident, ext, bytes(rng.randrange(256) for _ in range(8))
    msg = rng.choice(list(msgs.values()))
    if rng.random() < 0.85:
        length = msg.dlc
    else:
        length = rng.choice([n for n in FD_LENS if n <= msg.dlc])
    data = bytearray(rng.randrange(256) for _ in range(length))
    # steer multiplexors to the values that select something, and edges
    for s in msg.signals:
        if s.is_mux and rng.random() < 0.8 and all(b // 8 < length for b in s.bits()):
            wanted = [v for t in msg.signals if t.parent is s for lo, hi in t.ranges
                      for v in (lo, hi, rng.randint(lo, hi), hi + 1)]
            if wanted:
                dbc_ref.encode(s, data, rng.choice(wanted) & ((1 << s.size) - 1))
    return msg.id, msg.ext, bytes(data)


def candump_line(t, ident, ext, data):
    idtxt = "%08X" % ident if ext else "%03X" % ident
    if len(data) > 8:
        return "(%d.%06d) can0 %s##1%s\n" % (t // 1000000, t % 1000000, idtxt, data.hex().upper())
    return "(%d.%06d) can0 %s#%s\n" % (t // 1000000, t % 1000000, idtxt, data.hex().upper())


def close(a, b):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def compare(tool, dbc, n, seed, strict=False):
    """Decode n random frames with dbc-dump and the reference; returns
    (samples compared, mismatches, qualities seen, labelled samples)."""
    rng = random.Random(seed)
    msgs = dbc_ref.load(dbc)
    frames = [random_frame(rng, msgs) for _ in range(n)]
    expected = {}
    nsig = 0
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        for i, (ident, ext, data) in enumerate(frames):
            f.write(candump_line(1000000 + i * 1000, ident, ext, data))
            for s, v, q, label in dbc_ref.decode(msgs, ident, ext, data):
                expected[(i + 1, "%s.%s" % (s.msg.name, s.name))] = (v, q, label)
                nsig += 1
        path = f.name
    try:
        # a cross build's tool runs under meson's exe_wrapper (qemu-user)
        wrap = shlex.split(os.environ.get('MESON_EXE_WRAPPER', ''))
        out = subprocess.run(wrap + [tool] + (["-s"] if strict else []) + [dbc, path],
                             capture_output=True, text=True, timeout=60)
    finally:
        os.unlink(path)
    if out.returncode != 0:
        sys.exit("dbc-dump failed: %s" % out.stderr)
    got = {}
    for line in out.stdout.splitlines():
        lineno, name, value, q, label = line.split(" ", 4)
        key = (int(lineno), name)
        if key in got:
            sys.exit("duplicate sample %s" % (key,))
        got[key] = (float(value), int(q), label)
    bad = 0
    for key in sorted(set(expected) | set(got)):
        e, g = expected.get(key), got.get(key)
        if e is None or g is None or not close(e[0], g[0]) or e[1] != g[1] or e[2] != g[2]:
            bad += 1
            if bad <= 20:
                print("MISMATCH %s frame %d %s: python %s, C %s" % (dbc, key[0], key[1], e, g))
    quals = {q for _, q, _ in expected.values()}
    labels = sum(1 for _, _, lab in expected.values() if lab != "-")
    return nsig, bad, quals, labels


def main():
    tool, dbc = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
    nsig, bad, quals, labels = compare(tool, dbc, n, int(os.environ.get("SEED", "3")))
    # every feature was exercised: mux on and off, labels, each quality
    print("%d frames, %d samples compared, %d mismatches; qualities %s, %d labelled"
          % (n, nsig, bad, sorted(quals), labels))
    want_quals = {0, 1, 2} if sys.argv[4:] == ["all"] else {0, 1}
    if bad or nsig < n or quals != want_quals or labels == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
