#!/bin/bash
# test-run.sh RAILMON SRCDIR - `railmon run` as a service would run it:
# sd_notify READY/WATCHDOG/RELOADING/STOPPING over a real datagram socket,
# the live stat socket, SIGHUP with a broken board file (refused, keeps
# recording), SIGHUP with a valid one (reloaded, sequence continues), and
# SIGTERM (drains, syncs, exits 0, nothing lost between the runs).
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init run
fail() { echo "FAIL: $*"; echo "--- railmon stderr:"; cat "$T/run.err" 2>/dev/null || true; exit 1; }
# wait_lines FILE PATTERN [COUNT]: poll (bounded, 20 s) until PATTERN occurs COUNT times
wait_lines() { wait_for 20 has_lines "$@" || fail "timed out waiting for '$2' x${3:-1} in $1"; }

cat > "$T/board.ini" <<EOF
[board]
vehicle = RUN-TEST
batch_ms = 200
health_interval_s = 1
[storage]
sync_window_ms = 50
[can vehicle]
driver = trace
file = $SRC/cli/demo/train.log
dbc = $SRC/cli/demo/train.dbc
speed = 4
loop = true
EOF

# A service manager's notify socket, as a real datagram listener.
"$PY" - "$T/notify.sock" "$T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as log:
    print("LISTENING", file=log)
    while True:
        msg = s.recv(4096).decode()
        for line in msg.split("\n"):
            print(line, file=log)
PY
pids+=($!)
wait_lines "$T/notify.log" LISTENING

NOTIFY_SOCKET=$T/notify.sock WATCHDOG_USEC=200000 "$RAILMON" run --board "$T/board.ini" --data "$T/log" \
	2> "$T/run.err" &
rpid=$!
pids+=($rpid)
wait_lines "$T/notify.log" 'READY=1'
wait_lines "$T/notify.log" 'WATCHDOG=1' 5
echo "notify: READY=1 and watchdog pings every 100 ms"

# live health over the stat socket (health_interval_s = 1)
stat_has_vehicle() { "$RAILMON" stat --data "$T/log" > "$T/stat.out" 2>&1 && grep -q '^vehicle ' "$T/stat.out"; }
wait_for 10 stat_has_vehicle || true
grep -qE '^vehicle +can +[0-9]+' "$T/stat.out" || { cat "$T/stat.out"; fail "railmon stat shows no vehicle bus"; }
grep -q '^daemon: [0-9]* records stored' "$T/stat.out" || fail "railmon stat shows no daemon line"
echo "stat: live table from the socket"

# SIGHUP with a broken board file: refused, still running
cp "$T/board.ini" "$T/good.ini"
printf '[board]\nvehicle = RUN-TEST\nbatch_ms = fast\n' > "$T/board.ini"
kill -HUP $rpid
wait_lines "$T/run.err" 'reload refused, keeping the running configuration: .*board.ini:3: batch_ms'
pings=$(grep -c 'WATCHDOG=1' "$T/notify.log")
wait_lines "$T/notify.log" 'WATCHDOG=1' $((pings + 3))
kill -0 $rpid || fail "railmon died after a bad reload"
echo "reload: broken board file refused with file:line, recording goes on"

# SIGHUP with a valid changed board file: reloaded
sed 's/batch_ms = 200/batch_ms = 100/' "$T/good.ini" > "$T/board.ini"
kill -HUP $rpid
wait_lines "$T/run.err" 'reloaded'
wait_lines "$T/notify.log" 'RELOADING=1'
wait_lines "$T/notify.log" 'READY=1' 2
echo "reload: valid board file applied (RELOADING=1, READY=1)"

kill -TERM $rpid
rc=0
wait $rpid || rc=$?
[ $rc -eq 0 ] || fail "railmon run exited $rc on SIGTERM"
wait_lines "$T/notify.log" 'STOPPING=1'

"$RAILMON" export --data "$T/log" --format jsonl > "$T/all.jsonl" 2>/dev/null
"$RAILMON" stat --data "$T/log" > "$T/stat-log.out" || fail "stat from the log"
grep -qE '^vehicle +can' "$T/stat-log.out" || fail "no health in the log"
"$PY" - "$T/all.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
seqs = [r["seq"] for r in recs]
assert sorted(seqs) == list(range(1, len(seqs) + 1)), "sequence not contiguous across the reload"
ev = [r["event"] for r in recs if r["kind"] == "event"]
assert ev.count("START") == 2 and ev.count("STOP") == 2 and ev.count("CONFIG_RELOAD") == 1, ev
frames = sum(1 for r in recs if r["kind"] == "can")
assert frames > 100, frames
print(f"log: {len(recs)} records, seq 1..{len(recs)} contiguous across the reload, events {ev}")
PY
echo PASS
