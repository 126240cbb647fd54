#!/usr/bin/python3
"""gen-load-trace.py SECONDS LOAD OUT [SEED]

Write a candump log of two 500 kbit/s CAN buses (can0: the vehicle bus of
cli/demo/train.dbc, can1: the traction bus of cli/vehicles/emu-traction.dbc,
sent as classic 8-byte frames so the load figure is simple) at LOAD (0..1)
bus load each, for SECONDS.  Frame times follow each bus's bit time, so
the trace is what a logger on a busy train bus would see.  Deterministic for
a given SEED.
"""
import random
import sys

BITRATE = 500_000
# Bits on the wire of a classic frame with 8 data bytes, stuff bits included
# (worst case about 20% stuffing on the arbitration and data fields).
BITS_STD = 111 + 19
BITS_EXT = 131 + 24

# (id, extended) of the messages each bus carries, round robin.
BUS_IDS = {
    "can0": [(0x100, False), (0x120, False), (0x200, False), (0x300, False), (0x310, False),
             (0x18FF0121, True)],
    "can1": [(0x08000101, True), (0x08000102, True), (0x110, False)],
}


def frames(bus, seconds, load, rng, t0):
    ids = BUS_IDS[bus]
    t = t0
    k = 0
    end = t0 + seconds
    while t < end:
        can_id, ext = ids[k % len(ids)]
        k += 1
        bits = BITS_EXT if ext else BITS_STD
        # Each frame occupies bits/bitrate of the bus; at LOAD the bus is
        # idle the rest of the time.
        t += bits / BITRATE / load
        data = bytes(rng.getrandbits(8) for _ in range(8))
        ident = f"{can_id:08X}" if ext else f"{can_id:03X}"
        yield t, f"({t:.6f}) {bus} {ident}#{data.hex().upper()}\n"


def main():
    seconds, load, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    t0 = 1764748800.0
    a = list(frames("can0", seconds, load, rng, t0))
    b = list(frames("can1", seconds, load, rng, t0 + 0.0000005))
    merged = sorted(a + b, key=lambda x: x[0])
    with open(out, "w") as f:
        f.writelines(line for _, line in merged)
    print(f"{len(merged)} frames, {len(merged) / seconds:.0f} frames/s over 2 buses at {load:.0%} load")


main()
