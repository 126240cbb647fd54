#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rconf.py - the signed configuration message of docs/remote-config.md,
written from that document alone (python3 struct, hashlib's BLAKE2b and
python3-cryptography's Ed25519; no code shared with evidence/remote-config.c).

  rconf.py seed OUT                  a message signed with the fuzz target's key
                                     (seed 32 bytes of 7): the seed corpus/rconf
  rconf.py check MSG PUBKEY VEHICLE  parse MSG, verify its signature with the
                                     railmon public key file, print its fields
                                     and each file's BLAKE2b-256; exit 1 if bad
"""
import hashlib
import struct
import sys

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

MAGIC = b"RMCONF01"


def encode(seed, version, vehicle, files):
    """files: (name, bytes) sent whole, or (name, None, hash32) by content hash"""
    out = MAGIC + struct.pack("<QB", version, len(vehicle)) + vehicle.encode() + bytes([len(files)])
    for f in files:
        name = f[0].encode()
        if f[1] is not None:
            out += bytes([0, len(name)]) + name + struct.pack("<I", len(f[1])) + f[1]
        else:
            out += bytes([1, len(name)]) + name + f[2]
    return out + Ed25519PrivateKey.from_private_bytes(seed).sign(out)


def parse(msg, pub):
    if msg[:8] != MAGIC:
        raise ValueError("no magic")
    body, sig = msg[:-64], msg[-64:]
    Ed25519PublicKey.from_public_bytes(pub).verify(sig, body)  # raises InvalidSignature
    version, vlen = struct.unpack_from("<QB", body, 8)
    at = 17
    vehicle = body[at:at + vlen].decode()
    at += vlen
    n = body[at]
    at += 1
    files = []
    for _ in range(n):
        kind, nl = body[at], body[at + 1]
        name = body[at + 2:at + 2 + nl].decode()
        at += 2 + nl
        if kind == 0:
            (ln,) = struct.unpack_from("<I", body, at)
            data = body[at + 4:at + 4 + ln]
            if len(data) != ln:
                raise ValueError("truncated")
            files.append((name, "content", hashlib.blake2b(data, digest_size=32).hexdigest(), ln))
            at += 4 + ln
        elif kind == 1:
            files.append((name, "hash", body[at:at + 32].hex(), 0))
            at += 32
        else:
            raise ValueError("kind %d" % kind)
    if at != len(body):
        raise ValueError("%d bytes left before the signature" % (len(body) - at))
    return version, vehicle, files


def main():
    if sys.argv[1] == "seed":
        board = b"[board]\nvehicle = train-7\n\n[can vehicle]\ninterface = vcan0\ndbc = vehicle.dbc\n"
        dbc = b'VERSION ""\nBU_: ECU\nBO_ 256 Speed: 8 ECU\n SG_ speed : 0|16@1+ (0.01,0) [0|300] "km/h" Vector__XXX\n'
        msg = encode(bytes([7]) * 32, 2, "train-7",
                     [("board.ini", board), ("vehicle.dbc", dbc),
                      ("doors.xml", None, hashlib.blake2b(b"<device/>", digest_size=32).digest())])
        open(sys.argv[2], "wb").write(msg)
        return 0
    msg = open(sys.argv[2], "rb").read()
    line = open(sys.argv[3]).read().split()
    if line[0] not in ("railmon-ed25519-public", "railmon-ed25519-secret"):
        print("not a railmon key file")
        return 1
    pub = bytes.fromhex(line[1])
    if line[0] == "railmon-ed25519-secret":
        pub = Ed25519PrivateKey.from_private_bytes(pub).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
    try:
        version, vehicle, files = parse(msg, pub)
    except Exception as e:  # noqa: BLE001 - any failure is "bad", said
        print("bad: %s %s" % (type(e).__name__, e))
        return 1
    if vehicle != sys.argv[4]:
        print("bad: vehicle %s" % vehicle)
        return 1
    print("version %d vehicle %s files %d" % (version, vehicle, len(files)))
    for name, kind, h, ln in files:
        print("file %s %s %s %d" % (name, kind, h, ln))
    return 0


if __name__ == "__main__":
    sys.exit(main())
