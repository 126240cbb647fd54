# SPDX-License-Identifier: MIT
"""fleet.py - the dashboard tests' fleet: Batches (protoc's railmon_pb2, an
encoder independent of railmon's) for a few vehicles, published over a
real mosquitto to a real `railmon recv --db`:

- emu1: `speed` (channel 1, bus 0) at 10 Hz over the last 40 minutes with
  one single-sample spike (1000 among values under 100), `line_voltage`
  (channel 2) that stopped 10 minutes ago (stale), CAN frames on bus 1
  (0x123 with its decoded signal Motor.Torque, channel 1<<16|1, stamped
  as the frame; 0x456 without), one CAN_BUS_OFF event 5 minutes ago;
- emu2: three Batches with a hole of 100 records between the first two,
  then a reduced one (90 of its 100 seqs on board);
- emu3: one Batch, published first (offline once --offline-after passed).

Health (record/railmon.proto Health): emu1's last Batch carries EMU1_HEALTH
(a CAN bus with errors and a Modbus bus with drops, the log, the uplink's
backlog), then a health-only Batch two hours old (historical) carries
OLD_HEALTH, which must not replace it; emu2's carries an unsynchronised
clock.  emu4 (test-web.py) is a real `railmon run`.
"""
import math
import time

import railmon_pb2

LOG = bytes.fromhex("c0" * 15 + "01")
NOW = time.time_ns()
SPIKE_S = NOW - 17 * 60 * 10**9 - 333 * 10**6    # the spike's time (ns)
EVENT_S = NOW - 5 * 60 * 10**9
TORQUE = (1 << 16) | 1


def dictionary(b, entries):
    for cid, name, unit, bus, source in entries:
        b.channels.add(id=cid, name=name, unit=unit, bus=bus, source=source)


EMU1_HEALTH = [
    dict(name="vehicle", kind="can", bus=1, items=5000, errors=3, rx_dropped=1, latency_p99_us=180, state="up",
         rate_hz=5.0),
    dict(name="traction", kind="modbus", bus=0, items=24000, drops=2, latency_p99_us=950, state="up", rate_hz=10.0),
    dict(name="log", kind="log", bus=65535, items=29000, backlog=12),
    dict(name="uplink", kind="uplink", bus=65535, items=28000, backlog=40, state="connected"),
]
OLD_HEALTH = [dict(name="log", kind="log", bus=65535, items=1, errors=99, backlog=7)]
EMU2_HEALTH = [dict(name="clock", kind="clock", bus=65535, clock_unsynced=True)]


def health(b, entries):
    for h in entries:
        b.health.add(**h)


def put(col, rows, t0, fields):
    """rows (t_ns, values...) into a packed column, time-ordered, with t_delta_ns
    from the previous record of the column (the first from t0)."""
    last = t0
    for row in sorted(rows, key=lambda r: r[0]):
        col.t_delta_ns.append(row[0] - last)
        last = row[0]
        for name, v in zip(fields, row[1:]):
            getattr(col, name).append(v)


def speed_value(t_ns):
    return 50 + 40 * math.sin(t_ns / 1e9 / 60)


def emu1_batches():
    """One Batch per minute of data: 600 speed samples (10 Hz), 6 voltage
    samples (until 10 minutes ago), 6 frames (3 x 0x123 + signal, 3 x 0x456)."""
    out, seq = [], 1
    start = NOW - 40 * 60 * 10**9
    for m in range(40):
        t0 = start + m * 60 * 10**9
        b = railmon_pb2.Batch(schema_version=1, first_seq=seq, vehicle="emu1", t0_ns=t0, log_id=LOG, config_hash=1)
        if m == 0:
            dictionary(b, [(1, "speed", "km/h", 0, "modbus traction u1 input 3"),
                           (2, "line_voltage", "V", 0, "modbus traction u1 input 4"),
                           (TORQUE, "Motor.Torque", "Nm", 1, "can vehicle Motor")])
        samples, frames, data = [], [], b""
        for i in range(600):
            t = t0 + i * 10**8
            if t + 10**8 > SPIKE_S >= t:
                t = SPIKE_S
            samples.append((t, 1, 1000.0 if t == SPIKE_S else speed_value(t)))
            if i % 100 == 0 and t0 < NOW - 10 * 60 * 10**9:
                samples.append((t + 1000, 2, 1500.0 + m))
        for k in range(6):
            tf = t0 + k * 10 * 10**9 + 5 * 10**6
            cid = 0x123 if k % 2 == 0 else 0x456
            frames.append((tf, 1, cid, 0, 2))
            data += bytes([m, k])
            if cid == 0x123:
                samples.append((tf, TORQUE, float(m * 10 + k)))
        put(b.samples, samples, t0, ("channel", "value"))
        put(b.can, frames, t0, ("bus", "id", "flags", "len"))
        b.can.data = data
        n = len(samples) + len(frames)
        if t0 <= EVENT_S < t0 + 60 * 10**9:
            put(b.events, [(EVENT_S, 1, 10, 0, 0)], t0, ("source", "code", "arg", "detail"))
            n += 1
        if m == 39:
            health(b, EMU1_HEALTH)
        out.append(("railmon/emu1/data", b.SerializeToString()))
        seq += n
    # health alone, from the backlog, two hours old: older than the above
    old = railmon_pb2.Batch(schema_version=1, first_seq=seq, vehicle="emu1", t0_ns=NOW - 7200 * 10**9, log_id=LOG,
                            config_hash=1, historical=True)
    health(old, OLD_HEALTH)
    out.append(("railmon/emu1/data", old.SerializeToString()))
    return out, seq


def simple(vehicle, first_seq, n, t0, value=1.0):
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0, log_id=LOG, config_hash=2)
    dictionary(b, [(1, "brake_pressure", "bar", 0, "modbus brake u2 input 1")])
    put(b.samples, [(t0 + i * 10**7, 1, value + i) for i in range(n)], t0, ("channel", "value"))
    return ("railmon/%s/data" % vehicle, b.SerializeToString())


def reduced(vehicle, first_seq, source_end_seq, seqs, t0):
    """A reduced Batch (record/railmon.proto fields 18-20): of the log's
    [first_seq, source_end_seq) only the records at seqs were sent, the
    rest is on board."""
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle=vehicle, t0_ns=t0, log_id=LOG, config_hash=2,
                          reduced=True, source_end_seq=source_end_seq)
    put(b.samples, [(t0 + (s - first_seq) * 10**7, 1, float(s)) for s in seqs], t0, ("channel", "value"))
    last = first_seq
    for s in seqs:
        b.seq_delta.append(s - last)
        last = s
    return ("railmon/%s/data" % vehicle, b.SerializeToString())


EMU2_REDUCED = list(range(401, 501, 10))   # 10 of seqs 401-500 sent, 90 on board


def emu2_batches():
    """seqs 1-100, (101-200 missing), 201-300, 301-400, then 401-500
    reduced (EMU2_REDUCED sent, 90 on board)."""
    t = NOW - 30 * 10**9
    last = railmon_pb2.Batch()
    last.ParseFromString(simple("emu2", 301, 100, t + 3 * 10**9)[1])
    health(last, EMU2_HEALTH)
    return [simple("emu2", 1, 100, t), simple("emu2", 201, 100, t + 2 * 10**9),
            ("railmon/emu2/data", last.SerializeToString()), reduced("emu2", 401, 501, EMU2_REDUCED, t + 4 * 10**9)]


def emu3_batches():
    return [simple("emu3", 1, 10, NOW - 60 * 10**9)]


def live_batch(first_seq, value):
    """One more Batch for emu1, now: speed = value."""
    b = railmon_pb2.Batch(schema_version=1, first_seq=first_seq, vehicle="emu1", t0_ns=time.time_ns(), log_id=LOG,
                          config_hash=1)
    b.samples.t_delta_ns.append(0)
    b.samples.channel.append(1)
    b.samples.value.append(value)
    return ("railmon/emu1/data", b.SerializeToString())
