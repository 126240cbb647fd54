#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# basic/gen-crc-table.py, the one generator of the slicing-by-8 tables:
# run with the arguments each committed header names, its output must be
# that header byte for byte (a table edited by hand, or a generator
# changed without regenerating, fails here); and each table, folded the
# way basic/crc-slice8.h folds it, must give the CRC of an independent
# implementation: zlib.crc32 for trdp/'s FCS, a bitwise CRC-32C written
# here from the polynomial for storage/'s.
import re
import subprocess
import sys
import zlib

src = sys.argv[1]
gen = src + "/basic/gen-crc-table.py"
headers = {"trdp/fcs-table.h": ("0xEDB88320", "trdp_fcs_table"),
           "storage/crc32c-table.h": ("0x82F63B78", "crc32c_table")}
fails = 0


def table(text):
    words = [int(w, 16) for w in re.findall(r"0x([0-9a-f]{8})u", text)]
    assert len(words) == 8 * 256, len(words)
    return [words[k * 256:(k + 1) * 256] for k in range(8)]


def slice8(t, data):
    # basic/crc-slice8.h's loop, with the pre and post inversion
    crc, p = 0xFFFFFFFF, 0
    while len(data) - p >= 8:
        a = int.from_bytes(data[p:p + 4], "little") ^ crc
        b = int.from_bytes(data[p + 4:p + 8], "little")
        crc = (t[7][a & 0xff] ^ t[6][(a >> 8) & 0xff] ^ t[5][(a >> 16) & 0xff] ^ t[4][a >> 24] ^
               t[3][b & 0xff] ^ t[2][(b >> 8) & 0xff] ^ t[1][(b >> 16) & 0xff] ^ t[0][b >> 24])
        p += 8
    for c in data[p:]:
        crc = (crc >> 8) ^ t[0][(crc ^ c) & 0xff]
    return crc ^ 0xFFFFFFFF


def crc32c_bitwise(data):
    crc = 0xFFFFFFFF
    for c in data:
        crc ^= c
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


for path, args in headers.items():
    with open(src + "/" + path) as f:
        committed = f.read()
    out = subprocess.run([sys.executable, gen, *args], check=True, capture_output=True, text=True).stdout
    if out != committed:
        print("%s: not what gen-crc-table.py %s %s makes" % (path, *args))
        fails += 1

ref = {"trdp/fcs-table.h": zlib.crc32, "storage/crc32c-table.h": crc32c_bitwise}
samples = [b"", b"1", b"123456789", bytes(range(256)), b"railmon" * 37]
for path, fn in ref.items():
    with open(src + "/" + path) as f:
        t = table(f.read())
    for s in samples:
        if slice8(t, s) != fn(s):
            print("%s: CRC of %d bytes %08x, the reference says %08x" % (path, len(s), slice8(t, s), fn(s)))
            fails += 1
# the check values of the two CRCs (Rocksoft catalogue)
assert zlib.crc32(b"123456789") == 0xCBF43926 and crc32c_bitwise(b"123456789") == 0xE3069283
# the generator refuses what is not a polynomial and a name
bad = subprocess.run([sys.executable, gen, "xyz", "t"], capture_output=True, text=True)
if bad.returncode == 0:
    print("gen-crc-table.py took 'xyz' as a polynomial")
    fails += 1
print("crc tables: %d headers as generated, %d samples against zlib and a bitwise CRC-32C, %d failures"
      % (len(headers), len(samples) * len(ref), fails))
sys.exit(1 if fails else 0)
