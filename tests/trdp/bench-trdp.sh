#!/bin/bash
# bench-trdp.sh RAILMON FLOOD [SECONDS] [RATE] [DATA_BYTES] - issue 31's
# performance goal, measured side by side in one run: one TRDP bus thread
# keeps up with RATE (default 20,000) PD telegrams/s of a DATA_BYTES
# (default 100) data set with no drop, at no more than 2x the CPU per
# packet of `tcpdump -w` capturing the same traffic.
#
# Two network namespaces joined by a veth pair (root, as the trdp-netns
# test): trdp-flood (tests/trdp/trdp-flood.c, paced by the clock, one
# sendto() a telegram, valid headers, its own sequence counter) sends from
# one to 192.0.2.2:17224 in the other for SECONDS (default 10), where at
# the same time
#   railmon run   a board with one [trdp] bus (raw telegrams: no xml, so
#                 what is compared is receiving and recording, as tcpdump
#                 does), its log in /dev/shm
#   tcpdump -w    -i the veth end, `udp port 17224`, its file in /dev/shm
# both started before the traffic, listening (ss shows the socket; tcpdump
# says "listening on").  CPU: utime + stime from /proc/PID/stat of each
# process (all its threads) and of railmon's bus thread (rx-bench) alone,
# read before the traffic and once each process's CPU has stopped rising
# after it.  Received: the telegrams railmon's log holds (export) and
# tcpdump's "packets captured"; dropped: tcpdump's "dropped by kernel",
# railmon's the telegrams sent and not in its log.
# RAILMON_BENCH_PERF=1: also perf record railmon during the traffic and
# print its top symbols.  Exit 0 with the table; 1 when something failed
# to run (not when a goal is missed: the table says it).
set -euo pipefail
RAILMON=$1 FLOOD=$2 SECS=${3:-10} RATE=${4:-20000} DATA=${5:-100}
[ "$(id -u)" = 0 ] || { echo "bench-trdp: needs root (network namespaces)"; exit 77; }
command -v tcpdump > /dev/null || { echo "bench-trdp: no tcpdump"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d /dev/shm/railmon-bench-trdp.XXXXXX)
TX=rmbtx$$ RX=rmbrx$$
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
	ip netns del "$TX" 2> /dev/null || true
	ip netns del "$RX" 2> /dev/null || true
	rm -rf "$T"
}
trap cleanup EXIT
TCK=$(getconf CLK_TCK)

ip netns add "$TX"
ip netns add "$RX"
ip link add vt$$ netns "$TX" type veth peer name vr$$ netns "$RX"
ip -n "$TX" addr add 192.0.2.1/24 dev vt$$
ip -n "$RX" addr add 192.0.2.2/24 dev vr$$
ip -n "$TX" link set vt$$ up
ip -n "$RX" link set vr$$ up
ip -n "$TX" link set lo up
ip -n "$RX" link set lo up

cat > "$T/bench.ini" <<INI
[board]
vehicle = BENCH
rt_priority = 0
[storage]
dir = $T/log
segment_size = 16M
retention_size = 0
[trdp bench]
bind = 192.0.2.2
pd_port = 17224
md_port = 0
INI

# CPU ticks (utime + stime) of /proc/$1/stat (or a task's stat file)
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "$1" 2> /dev/null || echo 0; }

ip netns exec "$RX" "$RAILMON" run --board "$T/bench.ini" > "$T/run.out" 2> "$T/run.err" &
rpid=$!
pids+=("$rpid")
ip netns exec "$RX" tcpdump -i vr$$ -w "$T/cap.pcap" udp port 17224 2> "$T/tcpdump.err" &
tpid=$!
pids+=("$tpid")
# both listening (waited for, polled)
for _ in $(seq 1 300); do
	if ip netns exec "$RX" ss -Huln 'sport = :17224' | grep -q . && grep -q "listening on" "$T/tcpdump.err"; then
		break
	fi
	kill -0 "$rpid" 2> /dev/null || { cat "$T/run.err"; fail "railmon run exited"; }
	kill -0 "$tpid" 2> /dev/null || { cat "$T/tcpdump.err"; fail "tcpdump exited"; }
	sleep 0.1
done
grep -q "listening on" "$T/tcpdump.err" || fail "tcpdump not listening: $(cat "$T/tcpdump.err")"
rxtask=
for t in /proc/$rpid/task/*; do [ "$(cat "$t/comm")" = rx-bench ] && rxtask=$t/stat; done
[ -n "$rxtask" ] || fail "no rx-bench thread in railmon run"

r0=$(ticks /proc/$rpid/stat) x0=$(ticks "$rxtask") d0=$(ticks /proc/$tpid/stat)
if [ "${RAILMON_BENCH_PERF:-0}" = 1 ] && command -v perf > /dev/null; then
	perf record -q -F 999 -g -p "$rpid" -o "$T/perf.data" -- sleep "$SECS" > /dev/null 2>&1 &
	pids+=($!)
fi
ip netns exec "$TX" "$FLOOD" 192.0.2.2 17224 "$RATE" "$SECS" "$DATA" > "$T/flood.out" ||
	fail "trdp-flood: $(cat "$T/flood.out")"
sent=$(sed -nE 's/^sent ([0-9]+) .*/\1/p' "$T/flood.out")
# after the traffic: until neither process's CPU rises any more (the last
# telegrams received, encoded and written), polled
prev=
for _ in $(seq 1 100); do
	sleep 0.2
	cur="$(ticks /proc/$rpid/stat) $(ticks /proc/$tpid/stat)"
	[ "$cur" = "$prev" ] && break
	prev=$cur
done
r1=$(ticks /proc/$rpid/stat) x1=$(ticks "$rxtask") d1=$(ticks /proc/$tpid/stat)
# the kernel's own count in the receiving namespace: datagrams delivered to
# a socket, and dropped for a full receive buffer
udp=$(ip netns exec "$RX" nstat -az UdpInDatagrams UdpRcvbufErrors 2> /dev/null | awk '/^Udp/ { printf "%s %s  ", $1, $2 }')
wait_gone() { for _ in $(seq 1 300); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.1; done; return 1; }
kill -INT "$tpid"
wait_gone "$tpid" || fail "tcpdump did not stop"
kill -INT "$rpid"
wait_gone "$rpid" || fail "railmon run did not stop"
wait "$rpid" || { cat "$T/run.err"; fail "railmon run exited non-zero"; }
captured=$(sed -nE 's/^([0-9]+) packets? captured.*/\1/p' "$T/tcpdump.err")
kdrop=$(sed -nE 's/^([0-9]+) packets? dropped by kernel.*/\1/p' "$T/tcpdump.err")
got=$("$RAILMON" export --data "$T/log" --format jsonl 2> /dev/null | grep -c '"kind": *"trdp"' || true)
# the bus's own counters (its last Health entry): telegrams, ring drops,
# kernel drops (SO_RXQ_OVFL: the socket's buffer full), sequence gaps
"$RAILMON" stat --data "$T/log" --json 2> /dev/null | /usr/bin/python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if j.get("name") == "bench":
        print("railmon stat, bus bench: %d telegrams, %d ring drops, %d kernel drops (socket buffer), %d sequence gaps"
              % (j["items"], j["drops"], j["rx_dropped"], j.get("seq_gaps", -1)))'
echo "railmon's log holds $got telegrams"
echo "kernel (receiving namespace): $udp"

/usr/bin/python3 - "$sent" "$got" "$captured" "$kdrop" "$r0" "$r1" "$x0" "$x1" "$d0" "$d1" "$TCK" "$RATE" "$DATA" "$SECS" <<'PY'
import sys
sent, got, cap, kdrop, r0, r1, x0, x1, d0, d1, tck = (int(x) for x in sys.argv[1:12])
rate, data, secs = sys.argv[12:15]
rows = [("railmon run (whole process)", got, sent - got, (r1 - r0) / tck),
        ("  its bus thread rx-bench", got, sent - got, (x1 - x0) / tck),
        ("tcpdump -w", cap, kdrop, (d1 - d0) / tck)]
print(f"bench-trdp: {sent} PD telegrams of {data} data bytes sent at {rate}/s for {secs} s over a veth pair")
print(f"{'receiver':30} {'received':>9} {'dropped':>8} {'CPU s':>7} {'us/packet':>10} {'vs tcpdump':>10}")
base = rows[2][3] / max(cap, 1) * 1e6
for name, n, drop, cpu in rows:
    per = cpu / max(n, 1) * 1e6
    print(f"{name:30} {n:9d} {drop:8d} {cpu:7.2f} {per:10.2f} {per / base if base else float('inf'):9.2f}x")
ok = got == sent and (rows[0][3] / max(got, 1)) <= 2 * (rows[2][3] / max(cap, 1))
print("goal (no drop, railmon <= 2x tcpdump per packet): " + ("met" if ok else "NOT met"))
PY
if [ -s "$T/perf.data" ]; then
	echo "perf: railmon run's top symbols during the traffic (self, all threads)"
	perf report -i "$T/perf.data" --no-children --sort comm,dso,sym -g none --stdio 2> /dev/null | grep -E '^ +[0-9]' | head -30
fi
