#!/bin/bash
# test-sigterm.sh RAILMON SRCDIR [RUNS] - SIGTERM at random moments loses
# nothing: each of RUNS runs of `railmon run` on one log is stopped by
# SIGTERM after a random 50..1500 ms; every frame the daemon says it
# acquired is in the log, each run's frames are the trace's first frames in
# order, sequence numbers stay contiguous across all runs, and every run
# ends with its STOP event.
set -euo pipefail
RAILMON=$1
SRC=$2
RUNS=${3:-20}
. "$(dirname "$0")/../lib/lib.sh"
lib_init sigterm

cat > "$T/board.ini" <<EOF
[board]
vehicle = SIGTERM-TEST
batch_ms = 100
[storage]
sync_window_ms = 50
segment_size = 256K
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
speed = 20
EOF

"$PY" - "$RAILMON" "$T" "$RUNS" <<'PY'
import os, random, re, signal, socket, subprocess, sys, time
railmon, T, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(int.from_bytes(os.urandom(4), "little"))
acquired = []
# The random moment counts from READY=1 (sd_notify), not from exec: a signal
# before the process has even reached main() (20-60 ms under ASan) kills it
# by the default action, which no program can prevent.
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(f"{T}/notify.sock")
notify.settimeout(30)
for i in range(runs):
    p = subprocess.Popen([railmon, "run", "--board", f"{T}/board.ini", "--data", f"{T}/log"],
                         stderr=subprocess.PIPE, text=True, env=dict(os.environ, NOTIFY_SOCKET=f"{T}/notify.sock"))
    while b"READY=1" not in notify.recv(4096):
        pass
    time.sleep(rng.uniform(0.0, 1.45))
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 0, (p.returncode, err)
    m = re.findall(r"vehicle: (\d+) in", err)
    assert m, err
    acquired.append(int(m[-1]))
print(f"{runs} runs stopped by SIGTERM at random moments, frames acquired per run: {acquired}")
open(f"{T}/acquired", "w").write(" ".join(map(str, acquired)))
PY

"$RAILMON" export --data "$T/log" --format jsonl --order seq > "$T/all.jsonl" 2> "$T/export.err"
if grep -q damaged "$T/export.err"; then cat "$T/export.err"; echo "FAIL: damaged frames"; exit 1; fi
"$PY" - "$T/all.jsonl" "$T/acquired" "$SRC/cli/demo/train.log" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
acquired = list(map(int, open(sys.argv[2]).read().split()))
trace = [l.split()[2] for l in open(sys.argv[3]) if l.strip()]
seqs = [r["seq"] for r in recs]
assert seqs == list(range(1, len(recs) + 1)), "sequence numbers not contiguous"
# split the log into runs in seq order, after each STOP event: a run's
# last Batch ends with its STOP (inside a Batch the records are numbered by
# kind: frames, samples, then events), and the next run's frames come
# after it.  (Not by time: a paced trace's frames carry the time they were
# due, which can be before the START event of their run.)
runs, cur = [], {"frames": [], "stop": False, "start": False}
for r in recs:
    if r["kind"] == "event" and r["event"] == "START":
        cur["start"] = True
    elif r["kind"] == "event" and r["event"] == "STOP":
        cur["stop"] = True
        runs.append(cur)
        cur = {"frames": [], "stop": False, "start": False}
    elif r["kind"] == "can":
        cur["frames"].append(f'{r["can_id"]}#{r["data"]}')  # can_id as candump writes it
if cur["start"] or cur["frames"]:
    runs.append(cur)
assert all(run["start"] for run in runs), "a run without its START event"
assert len(runs) == len(acquired), (len(runs), len(acquired))
for k, (run, n) in enumerate(zip(runs, acquired)):
    assert run["stop"], f"run {k} has no STOP event"
    assert len(run["frames"]) == n, f"run {k}: acquired {n} frames, logged {len(run['frames'])}"
    assert run["frames"] == trace[:n], f"run {k}: logged frames are not the trace's first {n}"
print(f"log: {len(recs)} records, contiguous; every run logged exactly the {sum(acquired)} frames it acquired")
PY
echo PASS
