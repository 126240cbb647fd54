# SPDX-License-Identifier: MIT
"""blf_vector.py - Vector BLF files written byte by byte with struct.pack,
one per object class Vector's tools write, for test-blf-vector.py.

Written from the object layouts as the public readers define them
(vector_blf's headers, python-can's reader), not with any BLF writer:
  file header   "LOGG", u32 size 144, ..., at 40 the start time as a
                SYSTEMTIME (u16 year, month, weekday, day, hour, minute,
                second, ms), at 56 the last object's time
  object        "LOBJ", u16 header size, u16 header version, u32 object
                size, u32 type, then version 1: u32 flags, u16 client
                index, u16 object version, u64 stamp (32 bytes); version 2:
                u32 flags, u8 stamp status, u8 reserved, u16 object version,
                u64 stamp, u64 original stamp (40 bytes).  Flags 1: stamp
                in 10 us, 2: in ns.
  container     type 10, header version 1 of 16 bytes, then u16 method (0
                stored, 2 zlib), 6 pad, u32 uncompressed size, 4 pad, data;
                objects padded to 4 bytes after
Each builder returns (bytes, frames, bad, skipped): frames as railmon must
give them, (t_ns, id, flags, len, hex, channel); bad the first damage
said after the file's name ("" for none); skipped the skip count said.
"""
import struct
import zlib

EXT, FD, BRS, ESI, RTR, ERR, TX = 1, 2, 4, 8, 16, 32, 64
ERR_ID = 0x80
ID_EXT = 0x80000000
# 2026-12-04 10:30:15.250 as local time; the tests run with TZ=UTC
START = (2026, 12, 5, 4, 10, 30, 15, 250)
T0 = 1796380215250000000


def file_header(objects=0):
    h = struct.pack("<4sL", b"LOGG", 144)
    h += struct.pack("<BBBBBBBB", 5, 1, 0, 0, 4, 2, 0, 0)  # application and binlog versions
    h += struct.pack("<QQLL", 0, 0, objects, objects)       # sizes and counts: readers ignore them
    h += struct.pack("<8H", *START) + struct.pack("<8H", *START)
    return h.ljust(144, b"\0")


def obj(otype, stamp, body, tflags=2, hver=1):
    """One object: header version 1 (32 bytes) or 2 (40 bytes), unpadded."""
    if hver == 1:
        rest = struct.pack("<LHHQ", tflags, 0, 0, stamp)
    else:
        rest = struct.pack("<LBBHQQ", tflags, 1, 0, 0, stamp, 0)
    hsize = 16 + len(rest)
    return struct.pack("<4sHHLL", b"LOBJ", hsize, hver, hsize + len(body), otype) + rest + body


def pad4(b):
    """BLF pads an object by its size % 4 bytes (not to a multiple of 4):
    what python-can and vector_blf read and write."""
    return b + b"\0" * (len(b) % 4)


def container(data, method=2):
    payload = zlib.compress(data) if method == 2 else data
    body = struct.pack("<H6xL4x", method, len(data)) + payload
    return pad4(struct.pack("<4sHHLL", b"LOBJ", 16, 1, 16 + len(body), 10) + body)


def objects_padded(objs):
    """The object stream inside containers: each object padded to 4."""
    return b"".join(pad4(o) for o in objs)


def can_msg(ch, flags, dlc, ident, data, msg2=False):
    body = struct.pack("<HBBL", ch, flags, dlc, ident) + data.ljust(8, b"\0")
    if msg2:
        body += struct.pack("<LBBH", 111, 47, 0, 0)  # frame length, bit count, reserved
    return body


def can_fd(ch, flags, dlc, ident, fdflags, valid, data):
    return (struct.pack("<HBBLLBBB5x", ch, flags, dlc, ident, 0, 0, fdflags, valid) + data.ljust(64, b"\0") +
            b"\0" * 4)


def can_fd64(ch, dlc, valid, ident, flags, direction, data, ext_off=0, ext=b""):
    return (struct.pack("<BBBBLLLLLLLHBBL", ch, dlc, valid, 0, ident, 0, flags, 0, 0, 0, 0, 0, direction,
                        ext_off, 0) + data + ext)


def fd64_flags(edl=True, brs=False, esi=False, rtr=False):
    return (0x1000 if edl else 0) | (0x2000 if brs else 0) | (0x4000 if esi else 0) | (0x10 if rtr else 0)


def seq(n, start=0):
    return bytes((start + i) & 0xff for i in range(n))


def one_container(objs, method=2):
    return file_header(len(objs)) + container(objects_padded(objs), method)


# ---- the classes ----

def can_message():
    """CAN_MESSAGE (1): Rx/Tx, standard/extended, remote, DLC above 8,
    stamps in ns and in 10 us; an id above 0x7ff without the extended bit
    (vector_blf's test_CanMessage.blf: 0x44444444) taken as extended."""
    objs = [obj(1, 1000, can_msg(1, 0x00, 2, 0x123, b"\x10\x11")),
            obj(1, 200, can_msg(2, 0x01, 8, ID_EXT | 0x1abcdef, seq(8, 0x20)), tflags=1),  # 2 ms, Tx
            obj(1, 3000000, can_msg(1, 0x80, 4, 0x7ff, b"")),                             # remote
            obj(1, 4000000, can_msg(3, 0x81, 8, ID_EXT | 0x100, b"")),                     # remote Tx
            obj(1, 5000000, can_msg(1, 0x00, 12, 0x321, seq(8, 0x40))),                    # DLC 12: 8 bytes
            obj(1, 6000000, can_msg(5, 0x00, 2, 0x44444444, b"\x44\x45"))]
    frames = [(T0 + 1000, 0x123, 0, 2, "1011", 1),
              (T0 + 2000000, 0x1abcdef, EXT | TX, 8, seq(8, 0x20).hex(), 2),
              (T0 + 3000000, 0x7ff, RTR, 4, "", 1),
              (T0 + 4000000, 0x100, EXT | RTR | TX, 8, "", 3),
              (T0 + 5000000, 0x321, 0, 8, seq(8, 0x40).hex(), 1),
              (T0 + 6000000, 0x04444444, EXT, 2, "4445", 5)]
    return one_container(objs), frames, "", ""


def can_message2():
    """CAN_MESSAGE2 (86): the CAN_MESSAGE fields then frame length, bit
    count and reserved; an id above 0x7ff without the extended bit (as
    vector_blf's sample files hold) is taken as extended."""
    objs = [obj(86, 1000, can_msg(1, 0x00, 8, 0x6a9, seq(8, 1), msg2=True)),
            obj(86, 2000, can_msg(2, 0x01, 3, ID_EXT | 0x18fef100, b"\xaa\xbb\xcc", msg2=True)),
            obj(86, 3000, can_msg(1, 0x80, 2, 0x55, b"", msg2=True)),
            obj(86, 4000, can_msg(4, 0x00, 1, 0x44444444, b"\x5a", msg2=True))]
    frames = [(T0 + 1000, 0x6a9, 0, 8, seq(8, 1).hex(), 1),
              (T0 + 2000, 0x18fef100, EXT | TX, 3, "aabbcc", 2),
              (T0 + 3000, 0x55, RTR, 2, "", 1),
              (T0 + 4000, 0x04444444, EXT, 1, "5a", 4)]
    return one_container(objs), frames, "", ""


def can_fd_message():
    """CAN_FD_MESSAGE (100): EDL, BRS, ESI, 64 data bytes, Tx; the remote
    bit of an FD frame (none exists) ignored; a classic frame takes its
    valid bytes; a classic remote frame its DLC."""
    objs = [obj(100, 1000, can_fd(1, 0x00, 15, 0x101, 0x1 | 0x2, 64, seq(64))),
            obj(100, 2000, can_fd(2, 0x01, 9, ID_EXT | 0x1234567, 0x1 | 0x4, 12, seq(12, 0x80))),
            obj(100, 3000, can_fd(1, 0x80, 10, 0x102, 0x1 | 0x2 | 0x4, 16, seq(16, 0x30))),  # RTR bit + EDL
            obj(100, 4000, can_fd(3, 0x01, 3, 0x103, 0, 3, b"\x01\x02\x03")),                # classic, Tx
            obj(100, 5000, can_fd(1, 0x80, 5, 0x104, 0, 0, b""))]                            # classic remote
    frames = [(T0 + 1000, 0x101, FD | BRS, 64, seq(64).hex(), 1),
              (T0 + 2000, 0x1234567, EXT | FD | ESI | TX, 12, seq(12, 0x80).hex(), 2),
              (T0 + 3000, 0x102, FD | BRS | ESI, 16, seq(16, 0x30).hex(), 1),
              (T0 + 4000, 0x103, TX, 3, "010203", 3),
              (T0 + 5000, 0x104, RTR, 5, "", 1)]
    return one_container(objs), frames, "", ""


def can_fd_message_64():
    """CAN_FD_MESSAGE_64 (101): 64 bytes with BRS and ESI, Tx by direction;
    64 valid bytes of which the object holds 48 (python-can issue 1905:
    the rest read as 0, as CANoe does); data that ends at the ext data
    offset with the ext frame data after it; a classic and a classic
    remote frame; the remote flag of an FD frame ignored."""
    ext = struct.pack("<LLL", 0x11111111, 0x22222222, 0)  # btrExtArb, btrExtData, reserved
    objs = [obj(101, 1000, can_fd64(1, 15, 64, 0x1a0, fd64_flags(brs=True, esi=True), 1, seq(64, 0x40))),
            obj(101, 2000, can_fd64(7, 15, 64, 0x6a9, fd64_flags(brs=True), 0, b"\xff" * 48)),
            obj(101, 3000, can_fd64(2, 13, 32, ID_EXT | 0x1fffffff, fd64_flags(), 0, seq(32), 32 + 40 + 32, ext)),
            obj(101, 4000, can_fd64(1, 6, 6, 0x7ff, fd64_flags(edl=False), 1, seq(6, 0xa0))),
            obj(101, 5000, can_fd64(1, 7, 0, 0x10, fd64_flags(edl=False, rtr=True), 0, b"")),
            obj(101, 6000, can_fd64(3, 8, 8, 0x11, fd64_flags(rtr=True), 0, seq(8, 0x90)))]
    frames = [(T0 + 1000, 0x1a0, FD | BRS | ESI | TX, 64, seq(64, 0x40).hex(), 1),
              (T0 + 2000, 0x6a9, FD | BRS, 64, ("ff" * 48) + ("00" * 16), 7),
              (T0 + 3000, 0x1fffffff, EXT | FD, 32, seq(32).hex(), 2),
              (T0 + 4000, 0x7ff, TX, 6, seq(6, 0xa0).hex(), 1),
              (T0 + 5000, 0x10, RTR, 7, "", 1),
              (T0 + 6000, 0x11, FD, 8, seq(8, 0x90).hex(), 3)]
    return one_container(objs), frames, "", ""


def header_v2():
    """Object header version 2 (40 bytes, an original stamp after the
    stamp) on CAN_MESSAGE2, CAN_FD_MESSAGE and CAN_FD_MESSAGE_64, whose ext
    data offset counts from the object's start, header included: 64 valid
    bytes, 48 held before the ext data, the rest read as 0."""
    ext = struct.pack("<LLL", 0xeeeeeeee, 0xeeeeeeee, 0)
    objs = [obj(86, 7000, can_msg(1, 0x00, 2, 0x200, b"\x22\x33", msg2=True), hver=2),
            obj(100, 8000, can_fd(2, 0x00, 9, 0x201, 0x1, 12, seq(12)), hver=2),
            obj(101, 900, can_fd64(1, 15, 64, 0x202, fd64_flags(brs=True), 1, seq(48), 40 + 40 + 48, ext),
                tflags=1, hver=2)]
    frames = [(T0 + 7000, 0x200, 0, 2, "2233", 1),
              (T0 + 8000, 0x201, FD, 12, seq(12).hex(), 2),
              (T0 + 9000000, 0x202, FD | BRS | TX, 64, seq(48).hex() + "00" * 16, 1)]
    return one_container(objs), frames, "", ""


def spanning():
    """Objects that span two LOG_CONTAINERs: a 64-byte CAN_FD_MESSAGE_64
    cut inside its data, and a CAN_MESSAGE cut inside its object header
    (the second container zlib, the third stored)."""
    objs = [obj(1, 1000, can_msg(1, 0, 1, 0x1, b"\x01")),
            obj(101, 2000, can_fd64(1, 15, 64, 0x2, fd64_flags(), 0, seq(64, 0x80))),
            obj(1, 3000, can_msg(1, 0, 1, 0x3, b"\x03")),
            obj(1, 4000, can_msg(1, 0, 1, 0x4, b"\x04"))]
    stream = objects_padded(objs)
    cut1 = 48 + 32 + 40 + 20           # inside the FD object's data
    cut2 = 48 + 136 + 48 + 10          # inside the last object's header
    data = (file_header(len(objs)) + container(stream[:cut1]) + container(stream[cut1:cut2]) +
            container(stream[cut2:], 0))
    frames = [(T0 + 1000, 0x1, 0, 1, "01", 1),
              (T0 + 2000, 0x2, FD, 64, seq(64, 0x80).hex(), 1),
              (T0 + 3000, 0x3, 0, 1, "03", 1),
              (T0 + 4000, 0x4, 0, 1, "04", 1)]
    return data, frames, "", ""


def uncompressed():
    """Stored (method 0) containers only; the first ends with a text object
    (65) of 37 bytes without its pad byte, so the container is padded."""
    objs1 = [obj(1, 1000, can_msg(1, 0, 3, 0x7e8, b"\x02\x10\x03")), obj(65, 1500, b"hello")]
    objs2 = [obj(100, 2000, can_fd(1, 0, 1, 0x7e0, 0, 1, b"\x99")),
             obj(86, 3000, can_msg(2, 0, 0, 0x7df, b"", msg2=True))]
    data = (file_header(4) + container(objects_padded(objs1)[:-1], 0) + container(objects_padded(objs2), 0))
    frames = [(T0 + 1000, 0x7e8, 0, 3, "021003", 1),
              (T0 + 2000, 0x7e0, 0, 1, "99", 1),
              (T0 + 3000, 0x7df, 0, 0, "", 2)]
    return data, frames, "", "1 of type 65 (text)"


def errors():
    """CAN_ERROR (2: u16 channel, u16 length), CAN_ERROR_EXT (73),
    CAN_FD_ERROR_64 (104: u8 channel): error frames on their channels."""
    err_ext = struct.pack("<HHLBBBxLLH2x", 2, 0, 0x5, 0xa2, 7, 8, 0, 0x123, 0x1) + seq(8)
    fd_err = (struct.pack("<BBBBHHHBBLLLLLLLHH", 3, 15, 64, 0xa2, 0, 0, 0, 0, 0, 0x1a0, 0, 0, 0, 0, 0, 0, 0, 0) +
              seq(64))
    objs = [obj(2, 1000, struct.pack("<HHL", 1, 0, 0)),
            obj(73, 2000, err_ext),
            obj(104, 3000, fd_err)]
    frames = [(T0 + 1000, ERR_ID, ERR, 0, "", 1),
              (T0 + 2000, ERR_ID, ERR, 0, "", 2),
              (T0 + 3000, ERR_ID, ERR, 0, "", 3)]
    return one_container(objs), frames, "", ""


def unknown_types():
    """Objects that are no CAN frame: global markers (96), an object type
    no reader knows (160, with a stamp beyond any time; 0xffffffff, a type
    like any other), a restore point (115), header version 3 on a marker:
    skipped and counted by type, not damage; the CAN frames around them
    read."""
    objs = [obj(96, 1000, b"\0" * 40),
            obj(1, 2000, can_msg(1, 0, 1, 0x1, b"\x01")),
            obj(160, 0xffffffffffffffff, b"\x55" * 13),
            obj(96, 3000, b"\0" * 40, hver=3),
            obj(1, 4000, can_msg(2, 0, 1, 0x2, b"\x02")),
            obj(115, 0, b"\xcc" * 24),
            obj(0xffffffff, 5000, b"")]
    frames = [(T0 + 2000, 0x1, 0, 1, "01", 1),
              (T0 + 4000, 0x2, 0, 1, "02", 2)]
    return (one_container(objs), frames, "",
            "2 of type 96 (global marker), 1 of type 160, 1 of type 115 (restore point), 1 of type 4294967295")


def zero_fill():
    """Zeros after a container's last object (vector_blf's converter
    writes 27 after a global marker): fill, not damage; the next
    container's objects read."""
    first = objects_padded([obj(1, 1000, can_msg(1, 0, 1, 0x1, b"\x01")), obj(96, 1500, b"\0" * 40)]) + b"\0" * 27
    data = (file_header(3) + container(first) +
            container(objects_padded([obj(1, 2000, can_msg(1, 0, 1, 0x2, b"\x02"))])))
    frames = [(T0 + 1000, 0x1, 0, 1, "01", 1), (T0 + 2000, 0x2, 0, 1, "02", 1)]
    return data, frames, "", "1 of type 96 (global marker)"


def cut_containers():
    """A file cut while it was written (power lost): the last container
    ends early, once stored (inside its second object), once zlib (after
    a full flush that follows its second object): the objects whole in
    what came are read, the cut is said once at the container's offset."""
    objs = [obj(1, 1000 * i, can_msg(1, 0, 1, i, bytes([i]))) for i in range(1, 5)]
    stream = objects_padded(objs)
    stored = file_header(4) + container(stream[:48], 0) + container(stream[48:], 0)
    stored = stored[:len(stored) - 48 - 20]        # of 3 objects, 1 and 28 bytes of the next came
    z = zlib.compressobj()
    packed = z.compress(stream[48:144]) + z.flush(zlib.Z_FULL_FLUSH)
    body = struct.pack("<H6xL4x", 2, len(stream) - 48) + packed + z.compress(stream[144:]) + z.flush()
    zcut = (file_header(4) + container(stream[:48], 0) +
            struct.pack("<4sHHLL", b"LOBJ", 16, 1, 16 + len(body), 10) + body)[:144 + 80 + 32 + len(packed) + 2]
    frames = [(T0 + 1000 * i, i, 0, 1, "%02x" % i, 1) for i in range(1, 5)]
    return stored, zcut, frames


def cut_stored():
    stored, _, frames = cut_containers()
    return stored, frames[:2], "offset 224: file ends inside a container", ""


def cut_zlib():
    _, zcut, frames = cut_containers()
    return zcut, frames[:3], "offset 224: file ends inside a container", ""


CLASSES = [can_message, can_message2, can_fd_message, can_fd_message_64, header_v2, spanning, uncompressed,
           errors, unknown_types, zero_fill, cut_stored, cut_zlib]
