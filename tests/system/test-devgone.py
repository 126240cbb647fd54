#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-devgone.py RAILMON PYMODBUS_SERVER SLCAN_PEER

`railmon run` with three buses whose devices go away and come back:
  vehicle   slcan adapter on a socat pty (link= paths); the socat is
            stopped (unplug) and started again at the same paths, with an
            adapter that sends new frames after the replug;
  recorder  a candump trace behind a symlink to /proc/self/mem, whose
            reads fail with EIO; the link is then pointed at a real trace;
  hvac      Modbus RTU on a socat pty with pymodbus; the socat is stopped
            and started again.
Checks, while the devices are gone: a plain-words line on stderr per bus,
`railmon stat` showing them gone/reopening, and every RX thread (named
rx-<bus>) using at most MAX_CPU_PCT of a CPU (the unfixed loop spun at
100%); a SIGHUP then restarts the pipeline with the adapter still away
(the bus starts gone instead of failing the reload).  After they are back: a "back" line, stat "up" with 1 reopen and the blind
time (so does `railmon watch`; `stat --json` has the realtime lines), and
in `railmon export` every frame sent before the unplug and after the
replug, each exactly once, with CAN_GONE / CAN_BACK and MB_DISCONNECT /
MB_CONNECT events naming the bus.  Every peer is stopped on every exit.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from railmon_test import PEERS, start_peer, stop_peer, thread_cpu, wait_for  # noqa: E402

MAX_CPU_PCT = 3.0
RAILMON, PYMODBUS, SLCAN_PEER = sys.argv[1:4]
PY = "/usr/bin/python3"


def socat(a, b):
    """A pty pair whose links a and b exist once it returns."""
    p = start_peer(["socat", "-d", "-d", f"pty,raw,echo=0,link={a}", f"pty,raw,echo=0,link={b}"],
              stderr=subprocess.DEVNULL)
    wait_for(f"socat links {a} {b}", lambda: os.path.exists(a) and os.path.exists(b))
    return p


def adapter(pty, first, count):
    p = start_peer([PY, SLCAN_PEER, "--serial", pty, str(first), str(count)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "OPEN"
    return p


def modbus_server(pty):
    p = start_peer([PY, PYMODBUS, "--rtu", pty], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "READY"
    return p


def stat(sock):
    out = subprocess.run([RAILMON, "stat", "--socket", sock, "--json"], capture_output=True, text=True)
    return {j["name"]: j for j in map(json.loads, out.stdout.splitlines()) if "kind" in j} if out.returncode == 0 else {}


def stderr_lines(path, pattern):
    with open(path) as f:
        return [l for l in f if re.search(pattern, l)]


def numbers(recs, bus, can_id):
    return sorted(int(r["data"], 16) for r in recs if r["kind"] == "can" and r["bus"] == bus and int(r["can_id"], 16) == can_id)


def run(T):
    sock = f"@railmon-devgone-{os.getpid()}"
    trace, real = f"{T}/trace.log", f"{T}/real.log"
    os.symlink("/proc/self/mem", trace)  # opens as a file, every read fails (EIO)
    with open(real, "w") as f:
        f.writelines(f"({1000 + k}.000000) can0 456#{k:016X}\n" for k in range(1, 51))
    with open(f"{T}/board.ini", "w") as f:
        f.write(f"""[board]
vehicle = DEVGONE-TEST
batch_ms = 100
health_interval_s = 1
stat_socket = {sock}
[can vehicle]
driver = slcan
device = {T}/adapter
serial_baud = 115200
bitrate = 500000
[can recorder]
driver = trace
file = {trace}
speed = 0
[modbus hvac]
transport = rtu
device = {T}/mb-a
baud = 115200
response_timeout_ms = 100
period_ms = 50
[channel hvac_temp]
bus = hvac
unit_id = 1
table = holding
address = 0
type = u16
""")
    s1, m1 = socat(f"{T}/adapter", f"{T}/peer"), socat(f"{T}/mb-a", f"{T}/mb-b")
    mb = modbus_server(f"{T}/mb-b")
    ad = adapter(f"{T}/peer", 1, 100)
    err = f"{T}/run.err"
    rm = start_peer([RAILMON, "run", "--board", f"{T}/board.ini", "--data", f"{T}/log"], stderr=open(err, "w"))
    assert ad.stdout.readline().strip() == "SENT 100"
    wait_for("the 100 frames before the unplug", lambda: stat(sock).get("vehicle", {}).get("items", 0) >= 100)

    # unplug both serial devices
    stop_peer(s1)
    stop_peer(m1)
    stop_peer(ad)
    mb.stdin.close()
    stop_peer(mb)
    time.sleep(1.0)
    cpu = thread_cpu(rm.pid, 3, ["rx-vehicle", "rx-recorder", "rx-hvac"])
    for name, pct in cpu.items():
        assert pct is not None, f"no thread {name} in railmon"
        print(f"{name}: {pct:.1f}% of a CPU over 3 s while its device is gone (limit {MAX_CPU_PCT:g}%)")
        assert pct <= MAX_CPU_PCT, f"{name} used more than {MAX_CPU_PCT:g}% CPU while its device was gone"
    for bus in ("vehicle", "recorder", "hvac"):
        wait_for(f"the gone line for {bus}", lambda: stderr_lines(err, rf"bus '{bus}' \(.*\) is gone: "), 5)
    st = stat(sock)
    print("stat while gone:", {b: (st[b]["state"], st[b]["reopens"]) for b in ("vehicle", "recorder", "hvac")})
    assert st["vehicle"]["state"] in ("gone", "reopening") and st["hvac"]["state"] == "gone", st
    assert st["vehicle"]["reopens"] == 0 and st["hvac"]["reopens"] == 0, st
    # SIGHUP while the adapter is unplugged: the restarted pipeline opens
    # the vehicle bus as gone (it used to fail, and railmon exited)
    rm.send_signal(signal.SIGHUP)
    wait_for("the reload", lambda: stderr_lines(err, r"reloaded .*board.ini"), 10)
    wait_for("the new daemon's gone line", lambda: stderr_lines(err, r"bus 'vehicle' \(.*\) is gone: No such file"), 10)
    assert rm.poll() is None, "railmon exited on a reload while a device was gone"

    # replug at the same paths; the trace becomes readable
    s2, m2 = socat(f"{T}/adapter", f"{T}/peer"), socat(f"{T}/mb-a", f"{T}/mb-b")
    mb = modbus_server(f"{T}/mb-b")
    ad = adapter(f"{T}/peer", 101, 100)
    os.symlink(real, f"{T}/trace.tmp")
    os.rename(f"{T}/trace.tmp", trace)
    assert ad.stdout.readline().strip() == "SENT 100"
    for bus in ("vehicle", "recorder", "hvac"):
        wait_for(f"the back line for {bus}", lambda: stderr_lines(err, rf"bus '{bus}' \(.*\) is back after "), 15)
    # counters restart with the reloaded pipeline: 100 frames since then
    wait_for("the frames after the replug", lambda: stat(sock).get("vehicle", {}).get("items", 0) >= 100)
    wait_for("the trace's frames", lambda: stat(sock).get("recorder", {}).get("items", 0) >= 50)
    st = wait_for("hvac up in stat", lambda: (lambda s: s if s.get("hvac", {}).get("state") == "up" else None)(stat(sock)))
    print("stat when back:", {b: (st[b]["state"], st[b]["reopens"]) for b in ("vehicle", "recorder", "hvac")})
    assert st["vehicle"]["state"] == "up" and st["vehicle"]["reopens"] == 1, st
    assert st["hvac"]["reopens"] == 1 and st["recorder"]["reopens"] >= 1, st
    # the serial devices' returns were watched: how long each bus went
    # unheard after it (checked against the BACK/CONNECT events below)
    blind = {b: st[b].get("blind_ms") for b in ("vehicle", "hvac")}
    print("stat's blind time after the return, ms:", blind)
    assert all(isinstance(v, int) for v in blind.values()), st
    table = subprocess.run([RAILMON, "stat", "--socket", sock], capture_output=True, text=True, check=True).stdout
    assert "blind ms" in table.splitlines()[0], table
    assert re.search(rf"^vehicle .* up +1 +{blind['vehicle']}$", table, re.M), table
    # watch says the same per bus: in its title (first, so a long socket
    # path does not cut it off) and, with --once, whole after the table
    watch = subprocess.run([RAILMON, "watch", "--socket", sock, "--once"], capture_output=True, text=True,
                           check=True).stdout
    said = re.search(r"^buses: (.*)$", watch, re.M)
    assert said, watch
    buses = dict(b.split(" ", 1) for b in said.group(1).split("; "))
    print("watch's buses:", buses)
    assert buses["vehicle"] == f"up, 1 reopen, blind {blind['vehicle']} ms", buses
    assert buses["hvac"] == f"up, 1 reopen, blind {blind['hvac']} ms", buses
    assert watch.startswith(f"railmon watch vehicle up, 1 reopen, blind {blind['vehicle']} ms"), watch
    # stat --json: the realtime lines the table ends with, as a "realtime"
    # line (the daemon's pid, its warnings counted)
    js = subprocess.run([RAILMON, "stat", "--socket", sock, "--json"], capture_output=True, text=True,
                        check=True).stdout
    rt = [j for j in map(json.loads, js.splitlines()) if j.get("name") == "realtime"]
    lines = table.splitlines()
    tail = lines[next(i for i, l in enumerate(lines) if l.startswith("daemon: ")) + 1:]
    print("stat --json realtime:", rt)
    assert len(rt) == 1 and rt[0]["pid"] == rm.pid and rt[0]["lines"] == tail, (rt, tail)
    assert tail[0].startswith("realtime: daemon ") and rt[0]["warnings"] == sum(l.startswith("WARNING") for l in tail)
    rm.send_signal(signal.SIGTERM)
    assert rm.wait(30) == 0, "railmon run failed"
    for line in stderr_lines(err, r"bus '.*' \(.*\) is (gone|back)|still gone"):
        print("stderr:", line, end="")

    out = subprocess.run([RAILMON, "export", "--data", f"{T}/log", "--format", "jsonl"], capture_output=True,
                         text=True, check=True)
    recs = [json.loads(l) for l in out.stdout.splitlines()]
    assert numbers(recs, 0, 0x123) == list(range(1, 201)), "vehicle: not every frame sent before and after the replug"
    assert numbers(recs, 1, 0x456) == list(range(1, 51)), "recorder: not every line of the trace, once"
    ev = [(r["bus"], r["event"], r["arg"]) for r in sorted(recs, key=lambda r: r["time_ns"]) if r["kind"] == "event"]
    vehicle = [e for e in ev if e[0] == 0]
    # unplugged (EPIPE / EIO); after the reload, absent (ENOENT); back
    assert [e[1] for e in vehicle] == ["CAN_GONE", "CAN_GONE", "CAN_BACK"], vehicle
    assert vehicle[0][2] in (-32, -5) and vehicle[1][2] == -2 and vehicle[2][2] >= 1, vehicle
    recorder = [e for e in ev if e[0] == 1]
    assert recorder and recorder[0][1:] == ("CAN_GONE", -5) and recorder[-1][1] == "CAN_BACK", recorder
    hvac = [e[1] for e in ev if e[0] == 2 and e[1] in ("MB_DISCONNECT", "MB_CONNECT")]
    assert hvac == ["MB_CONNECT", "MB_DISCONNECT", "MB_DISCONNECT", "MB_CONNECT"], hvac  # one per daemon
    # BACK and CONNECT carry the blind time stat showed (detail)
    back = [r for r in recs if r["kind"] == "event" and r["event"] in ("CAN_BACK", "MB_CONNECT")]
    assert [r["detail"] for r in back if r["bus"] == 0] == [blind["vehicle"]], back
    assert [r["detail"] for r in back if r["bus"] == 2][-1] == blind["hvac"], back
    assert [e[1] for e in ev if e[0] == 65535].count("CONFIG_RELOAD") == 1
    samples = [r for r in recs if r["kind"] == "sample" and r["name"] == "hvac_temp"]
    assert samples and all(r["value"] == 1000 for r in samples)
    print(f"log: vehicle frames 1..200 each once, recorder 1..50 each once, {len(samples)} hvac values; "
          f"events {[e[:2] for e in ev if e[0] != 65535]}")


def main():
    T = tempfile.mkdtemp(prefix="railmon-devgone.")
    try:
        run(T)
    finally:
        for p in reversed(PEERS):
            stop_peer(p, signal.SIGKILL if p.args[0] == RAILMON else signal.SIGTERM)
        subprocess.run(["rm", "-rf", T])
    print("PASS")


if __name__ == "__main__":
    main()
