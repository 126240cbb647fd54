# SPDX-License-Identifier: MIT
"""can_frames.py - what the python-can trace tests share (test-trace-interop.py,
test-trace-replay.py, test-blf-vector.py): random frames as python-can
Messages, and a board file of trace buses for `railmon replay`.
"""
import can

# FD lengths python-can's writers and readers all take as an FD data frame:
# its ASC reader reads a 0-byte CANFD line as a remote frame, so none is 0.
FD_LENS = [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64]


def random_message(rng, t, channels, classic_only=False):
    """A random frame at time t on a channel 0..channels-1 (python-can
    numbering): error 5%, remote 10%, FD (BRS and ESI at random) 30%, the
    rest classic; with classic_only always a classic data frame.  rx 80%."""
    kind = 1.0 if classic_only else rng.random()
    ext = rng.random() < 0.4
    ident = rng.randrange(1 << 29) if ext else rng.randrange(1 << 11)
    rx = rng.random() < 0.8
    ch = rng.randrange(channels)
    if kind < 0.05:
        return can.Message(timestamp=t, is_error_frame=True, is_extended_id=False, channel=ch)
    if kind < 0.15:
        return can.Message(timestamp=t, arbitration_id=ident, is_extended_id=ext, is_remote_frame=True,
                           dlc=rng.randrange(9), is_rx=rx, channel=ch)
    if kind < 0.45:
        n = rng.choice(FD_LENS)
        return can.Message(timestamp=t, arbitration_id=ident, is_extended_id=ext, is_fd=True,
                           bitrate_switch=rng.random() < 0.5, error_state_indicator=rng.random() < 0.3,
                           data=bytes(rng.randrange(256) for _ in range(n)), is_rx=rx, channel=ch)
    n = rng.randrange(9)
    return can.Message(timestamp=t, arbitration_id=ident, is_extended_id=ext,
                       data=bytes(rng.randrange(256) for _ in range(n)), is_rx=rx, channel=ch)


def trace_board(vehicle, buses, trace="none.log"):
    """A board file whose buses are FD trace buses reading trace (replay
    names its own file; run reads this one); buses: (name, extra lines)."""
    text = f"[board]\nvehicle = {vehicle}\nrt_priority = 0\n[storage]\ndir = railmon-data\nsegment_size = 1M\n"
    for name, extra in buses:
        text += f"[can {name}]\ndriver = trace\nfile = {trace}\nfd = true\n" + (extra + "\n" if extra else "")
    return text
