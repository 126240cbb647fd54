#!/usr/bin/python3
"""gen-emu-trace.py SECONDS LOAD OUT [SEED] - a candump log of the regional
EMU's two CAN buses (cli/vehicles/emu-regional.ini) at LOAD (0..1) of their
bitrate, with signal values that behave like a train's, encoded here from
the DBC files' signal definitions (not by railmon):

  can0  the vehicle bus, 500 kbit/s classic CAN, cli/demo/train.dbc
  can1  the traction bus, CAN FD 500 kbit/s arbitration / 2 Mbit/s data,
        cli/vehicles/emu-traction.dbc (TCU1/TCU2 status as 64-byte FD
        frames with bit rate switch, VCU_Demand as a classic 8-byte frame)

Load: every message of a bus is sent at its DBC cycle time
(GenMsgCycleTime) divided by one factor per bus, chosen so that the bus is
busy LOAD of the time by frame timing (the bits of each frame on the wire,
stuff bits estimated, at the phase's bit rate).  Every frame is one the
DBC describes: the worst case for a reducer, which must look at each.

Signals: a journey of SECONDS - accelerate at 0.8 m/s^2 from 60 km/h,
cruise, brake at 0.9 m/s^2 for the last quarter - and from it
  * slow analog values with sensor noise of a few LSB: speed, pressures,
    voltages, currents, torque, power, temperatures (rising slowly);
  * counters: the alive counter (+1 a frame), the odometer and trip
    distance (from the speed);
  * states: direction, traction mode, brake demand step, converter states,
    door states (locked while moving), a multiplexor (CarIndex 0/1);
  * the phase currents: a 3-phase AC waveform at the motor's electrical
    frequency (changes at every frame, as such a signal does).
Deterministic for a given SEED.  Prints frames and frames/s per bus.
"""
import math
import random
import struct
import sys

T0 = 1764748800.0
NOMINAL = 500_000
DATA = 2_000_000


def classic_bits(dlc, ext):
    # SOF, id, RTR/IDE/r0 (ext: SRR, IDE, 18 more id bits, RTR, r1, r0), DLC,
    # data, CRC 15, CRC delimiter, ACK 2, EOF 7, IFS 3; stuff bits at most
    # one per 4 bits of SOF..CRC: about 20% of them, as gen-load-trace.py.
    stuffed = (39 if ext else 19) + 8 * dlc + 15
    return stuffed + stuffed // 5 + 13


def fd_time(dlc, ext):
    """Seconds on the wire of a CAN FD frame with bit rate switch: the
    arbitration phase and the frame's tail at NOMINAL, DLC..CRC at DATA."""
    arb = (1 + (32 if ext else 12) + 3) * 1.2        # SOF, id (+SRR/IDE), r1/IDE, FDF, res, BRS
    tail = 2 + 7 + 3                                 # ACK, EOF, IFS
    crc = 21 if dlc > 16 else 17
    data = 1 + 4 + 8 * dlc + 4 + crc                 # ESI, DLC, data, stuff count, CRC
    data += data // 4 + 1                            # fixed and dynamic stuff bits
    return (arb + tail) / NOMINAL + data / DATA


def put(buf, start, length, little, signed, raw):
    """Place raw (an int, two's complement when signed) at the DBC's start
    bit: Intel (@1) counts from the LSB up; Motorola (@0) from the MSB at
    start going down in the byte and on to the next byte's bit 7."""
    raw &= (1 << length) - 1
    if little:
        for i in range(length):
            b = start + i
            if raw >> i & 1:
                buf[b // 8] |= 1 << (b % 8)
    else:
        b = start
        for i in range(length - 1, -1, -1):
            if raw >> i & 1:
                buf[b // 8] |= 1 << (b % 8)
            b = b - 1 if b % 8 else b + 15


def scaled(value, factor, offset, lo, hi):
    v = min(max(value, lo), hi)
    return int(round((v - offset) / factor))


class Journey:
    """The train's state at time t (seconds from the start)."""

    def __init__(self, seconds, rng):
        self.s = seconds
        self.rng = rng
        # piecewise: accelerate 0..40%, cruise 40..75%, brake 75..100%
        self.v0 = 60 / 3.6

    def acc(self, t):
        f = t / self.s
        return 0.8 if f < 0.4 else (0.0 if f < 0.75 else -0.9)

    def speed(self, t):  # m/s, the integral of acc
        a1, a2 = 0.4 * self.s, 0.75 * self.s
        v = self.v0 + 0.8 * min(t, a1)
        if t > a2:
            v -= 0.9 * (t - a2)
        return max(v, 0.0)

    def distance(self, t):  # m, trapezoid of the speed (fine for counters)
        n = 50
        return sum(self.speed(t * (i + 0.5) / n) for i in range(n)) * t / n

    def noise(self, lsb, k=2.0):
        return self.rng.gauss(0.0, lsb * k)


def vehicle_frames(j, t, state, name):
    """The vehicle bus's message name at time t: (id, ext, data)."""
    v = j.speed(t)
    a = j.acc(t)
    braking = a < 0
    effort = 160.0 * a / 0.8 if a else 5.0            # kN: traction, brake, cruise drag
    if name == "VehicleSpeed":
        b = bytearray(8)
        put(b, 0, 16, True, False, scaled(v * 3.6 + j.noise(0.01), 0.01, 0, 0, 250))
        put(b, 16, 16, True, True, scaled(a + j.noise(0.001, 5), 0.001, 0, -5, 5))
        put(b, 32, 2, True, False, 1)                     # forward
        put(b, 34, 1, True, False, 1)
        state["alive"] = (state.get("alive", -1) + 1) % 16
        put(b, 56, 4, True, False, state["alive"])
        return (0x100, False, bytes(b))
    if name == "BrakePressure":
        b = bytearray(8)
        pipe = (3.6 if braking else 5.0) + j.noise(0.001, 3)
        cyl = (2.4 if braking else 0.0) + (j.noise(0.001, 3) if braking else 0.0)
        # the main reservoir drains slowly and the compressor tops it up
        res = 9.0 - 0.02 * (t % 60) + j.noise(0.01)
        put(b, 7, 16, False, False, scaled(pipe, 0.001, 0, 0, 10))
        put(b, 23, 16, False, False, scaled(cyl, 0.001, 0, 0, 6))
        put(b, 39, 16, False, False, scaled(cyl + j.noise(0.001, 3), 0.001, 0, 0, 6))
        put(b, 55, 12, False, False, scaled(res, 0.01, 0, 0, 12))
        put(b, 59, 1, False, False, 0)
        put(b, 58, 3, False, False, 4 if braking else 0)
        return (0x120, False, bytes(b))
    if name == "DoorStatus":
        b = bytearray(4)
        state["car"] = 1 - state.get("car", 1)
        put(b, 0, 8, True, False, state["car"])
        for d in range(4):
            put(b, 8 + 2 * d, 2, True, False, 2 if v > 0 else 0)   # locked while moving
        put(b, 16, 1, True, False, 0)
        put(b, 17, 1, True, False, 1)
        put(b, 24, 8, True, False, 0)
        return (0x200, False, bytes(b))
    if name == "TractionMotor1":
        b = bytearray(8)
        put(b, 0, 16, True, True, scaled(effort + j.noise(0.1, 3), 0.1, 0, -300, 300))
        put(b, 16, 8, True, False, scaled(70 + 0.2 * t + j.noise(1, 0.3), 1, -40, -40, 200))
        put(b, 24, 16, True, False, scaled(abs(effort) * 4 + 50 + j.noise(0.1, 5), 0.1, 0, 0, 2000))
        put(b, 40, 16, True, False, scaled(v * 3.6 * 40 + j.noise(1, 2), 1, 0, 0, 6000))
        put(b, 56, 2, True, False, 1 if a > 0 else (2 if braking else 0))
        return (0x18FF0121, True, bytes(b))
    if name == "Odometer":
        b = bytearray(8)
        m = j.distance(t)
        put(b, 7, 32, False, False, scaled(123456.789 + m / 1000, 0.001, 0, 0, 4294967.295))
        put(b, 39, 24, False, False, scaled(m, 1, 0, 0, 16777215))
        return (0x300, False, bytes(b))
    if name == "LineVoltage":
        b = bytearray(4)
        put(b, 7, 16, False, False, scaled(15000 + 200 * math.sin(t / 7) + j.noise(1, 10), 1, 0, 0, 30000))
        put(b, 23, 16, False, True, scaled(effort * 1.5 + j.noise(0.1, 5), 0.1, 0, -1000, 1000))
        return (0x310, False, bytes(b))
    raise KeyError(name)


def traction_frames(j, t, state, name):
    v = j.speed(t)
    a = j.acc(t)
    torque = 8000.0 * a / 0.8 if a else 300.0
    if name in ("TCU1_Status", "TCU2_Status"):
        k = 0 if name == "TCU1_Status" else 1
        can_id = 0x08000101 + k
        b = bytearray(64)
        put(b, 0, 4, True, False, 3)                          # running
        put(b, 8, 16, True, False, scaled(3000 + 20 * math.sin(t / 5) + j.noise(0.1, 20), 0.1, 0, 0, 4000))
        if k == 0:
            # the motor's electrical frequency: 4 pole pairs at its speed
            f = v * 3.6 * 40 / 60 * 4
            amp = abs(torque) / 8000 * 600 + 30
            for ph, start in enumerate((24, 40, 56)):
                i = amp * math.sin(2 * math.pi * f * t - ph * 2 * math.pi / 3)
                put(b, start, 16, True, True, scaled(i + j.noise(0.1, 5), 0.1, 0, -2000, 2000))
        put(b, 72, 32, True, True, scaled(torque + j.noise(1, 5), 1, 0, -20000, 20000))
        put(b, 104, 8, True, False, scaled(45 + 0.1 * t + j.noise(1, 0.3), 1, -40, -40, 150))
        put(b, 112, 8, True, False, scaled(55 + 0.15 * t + j.noise(1, 0.3), 1, -40, -40, 175))
        power = torque * v * 3.6 * 40 / 9549 + j.noise(0.01, 20)
        put(b, 128, 32, True, False, struct.unpack("<I", struct.pack("<f", power))[0])
        return (can_id, True, bytes(b))
    assert name == "VCU_Demand"
    b = bytearray(8)
    put(b, 0, 16, True, True, scaled(100 * a / 0.9 + j.noise(0.01, 3), 0.01, 0, -100, 100))
    put(b, 16, 16, True, False, scaled(160, 0.01, 0, 0, 200))
    return (0x110, False, bytes(b))


# name: cycle ms (the DBC's GenMsgCycleTime)
VEHICLE = {"VehicleSpeed": 20, "BrakePressure": 40, "DoorStatus": 100, "TractionMotor1": 50, "Odometer": 100,
           "LineVoltage": 100}
TRACTION = {"TCU1_Status": 10, "TCU2_Status": 10, "VCU_Demand": 20}
DLC = {"VehicleSpeed": 8, "BrakePressure": 8, "DoorStatus": 4, "TractionMotor1": 8, "Odometer": 8,
       "LineVoltage": 4, "TCU1_Status": 64, "TCU2_Status": 64, "VCU_Demand": 8}
EXT = {"TractionMotor1", "TCU1_Status", "TCU2_Status"}
FD = {"TCU1_Status", "TCU2_Status"}


def wire_time(name):
    return fd_time(DLC[name], name in EXT) if name in FD else classic_bits(DLC[name], name in EXT) / NOMINAL


def bus(iface, cycles, make, seconds, load, j):
    # the busy fraction at the DBC's cycle times; every cycle divided by
    # k makes it k times that
    busy = sum(wire_time(n) / (ms / 1000) for n, ms in cycles.items())
    k = load / busy
    period = {n: ms / 1000 / k for n, ms in cycles.items()}
    # each message's next time, staggered; the bus sends them in time order
    # (a frame waits while the bus is busy with another)
    nxt = {n: i * period[n] / len(cycles) for i, n in enumerate(cycles)}
    free = 0.0
    state = {}
    lines = []
    while True:
        n = min(nxt, key=nxt.get)
        t = max(nxt[n], free)
        if t >= seconds:
            break
        free = t + wire_time(n)
        nxt[n] += period[n]
        can_id, ext, data = make(j, t, state, n)
        ident = f"{can_id:08X}" if ext else f"{can_id:03X}"
        # FD with bit rate switch: flags nibble 1 (BRS)
        sep = "##1" if n in FD else "#"
        lines.append((T0 + t, f"({T0 + t:.6f}) {iface} {ident}{sep}{data.hex().upper()}\n"))
    return lines, k


def main():
    seconds, load, out = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    j = Journey(seconds, rng)
    a, ka = bus("can0", VEHICLE, vehicle_frames, seconds, load, j)
    b, kb = bus("can1", TRACTION, traction_frames, seconds, load, j)
    merged = sorted(a + b, key=lambda x: x[0])
    with open(out, "w") as f:
        f.writelines(line for _, line in merged)
    print(f"{len(merged)} frames in {seconds:g} s at {load:.0%} load: can0 {len(a) / seconds:.0f} frames/s "
          f"(DBC cycles / {ka:.1f}), can1 {len(b) / seconds:.0f} frames/s (DBC cycles / {kb:.1f})")


main()
