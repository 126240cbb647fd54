#!/bin/bash
# bench-trdp.sh RAILMON FLOOD SINK [SECONDS] [RATE] [DATA_BYTES] - issue 31's
# performance goal, measured side by side: one TRDP bus thread keeps up
# with RATE (default 20,000) PD telegrams/s of a DATA_BYTES (default 100)
# data set with no drop, at no more than 2x the CPU per packet of
# `tcpdump -w` capturing the same traffic at the same time.
#
# Two network namespaces joined by a veth pair (root, as the trdp-netns
# test): trdp-flood (tests/trdp/trdp-flood.c, paced by the clock, one
# sendto() a telegram, valid headers, its own sequence counter) sends from
# one to 192.0.2.2:17224 in the other for SECONDS (default 10).  Two passes
# of the same traffic; in each, started before it and listening (ss shows
# the socket, tcpdump says "listening on"), tcpdump -w on the veth end
# (`udp port 17224`, its file in /dev/shm) and one receiver:
#   pass 1: railmon run, a board with one [trdp] bus (raw telegrams: no
#           xml, so what is compared is receiving and recording, as tcpdump
#           does), its log in /dev/shm
#   pass 2: the same with receive = capture: the bus reads the veth end's
#           packet ring (libpcap live, as tcpdump; bus/trdp-capture.c),
#           its block timeout the key's default, or one pass for each
#           RAILMON_BENCH_CAPTURE_BLOCKS="1 10 100" (capture_block_ms)
#   pass 3: trdp-sink (tests/trdp/trdp-sink.c), the floor of a UDP socket
#           reader: bus/trdp.c's socket options and receive pattern, each
#           datagram appended to a file, nothing else (a unicast datagram
#           goes to one socket only, hence a pass of its own)
# The bus names the veth end (interface =) in both railmon passes.
# CPU: utime + stime from /proc/PID/stat of each process (all threads) and
# of railmon's bus thread (rx-bench) alone, read before the traffic and once
# the processes' CPU stopped rising after it.  Received: the telegrams
# railmon's log holds (export), trdp-sink's count, tcpdump's "packets
# captured"; dropped: tcpdump's "dropped by kernel", the others' the
# telegrams sent and not received; railmon's own counters (stat --json)
# and the kernel's UDP counters of the namespace are printed too.
# RAILMON_BENCH_RT=N: the board's rt_priority, default 70 as the example
# boards (cli/vehicles/); 0 (the key's default) leaves the bus thread to
# the scheduler, and on a loaded machine it may then wait longer than its
# socket buffer lasts (the drops are counted: stat's rx_dropped, seq gaps).
# RAILMON_BENCH_PERF=1: also perf record railmon during the traffic and
# print its top symbols, of the process and of the bus thread alone.
# RAILMON_BEFORE=path/to/an/older/railmon: a pass
# of that build first (pass 0, its own tcpdump beside it, its own log),
# and the ratio of the two railmon passes per packet, so a change is
# measured against its before in the same run, at the same load;
# RAILMON_BEFORE_RECEIVE=capture: that pass reads the packet ring, at the
# first of RAILMON_BENCH_CAPTURE_BLOCKS, and is set against the capture
# pass of that timeout (else against the socket pass).  Exit 0 with the table; 1 when something failed
# to run (not when a goal is missed: the table says so).
set -euo pipefail
RAILMON=$1 FLOOD=$2 SINK=$3 SECS=${4:-10} RATE=${5:-20000} DATA=${6:-100}
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
# the bus names its interface (the capture pass reads its ring), and a bus
# whose interface is not yet running (operstate UP: the kernel's link
# watch says so up to a second after `link set up`) is gone at its first
# idle wait: both ends running before any pass
for _ in $(seq 1 100); do
	ip -n "$RX" -o link show vr$$ | grep -q "state UP" && ip -n "$TX" -o link show vt$$ | grep -q "state UP" && break
	sleep 0.05
done
ip -n "$RX" -o link show vr$$ | grep -q "state UP" || fail "vr$$ not running"

# board NAME [RECEIVE [BLOCK_MS]]: a board file whose log is $T/log-NAME
# (one per railmon pass); RECEIVE the bus's receive key (socket, capture),
# BLOCK_MS its capture_block_ms (else the key's default)
board() {
	cat > "$T/bench-$1.ini" <<INI
[board]
vehicle = BENCH
rt_priority = ${RAILMON_BENCH_RT:-70}
[storage]
dir = $T/log-$1
segment_size = 16M
retention_size = 0
[trdp bench]
bind = 192.0.2.2
interface = vr$$
receive = ${2:-socket}
pd_port = 17224
md_port = 0
${3:+capture_block_ms = $3}
INI
}

# CPU ticks (utime + stime) of /proc/$1/stat (or a task's stat file)
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "$1" 2> /dev/null || echo 0; }
wait_gone() { for _ in $(seq 1 300); do kill -0 "$1" 2> /dev/null || return 0; sleep 0.1; done; return 1; }

# pass NAME [RAILMON [RECEIVE [BLOCK_MS]]]: the receiver NAME (railmon,
# capture, capture-Nms, before: a railmon binary, its bus's receive key
# and capture_block_ms; sink) and tcpdump on the same traffic; sets sent,
# rcv_*, dump_* (ticks and counts)
pass() {
	local who=$1 bin=${2:-} recv=${3:-socket} block=${4:-} rpid tpid rxtask="" prev cur npacket
	rm -f "$T/cap.pcap" "$T/sink.out"
	if [ -n "$bin" ]; then
		board "$who" "$recv" "$block"
		ip netns exec "$RX" "$bin" run --board "$T/bench-$who.ini" > "$T/run.out" 2> "$T/run.err" &
	else
		ip netns exec "$RX" "$SINK" 192.0.2.2 17224 "$T/sink.bin" > "$T/sink.out" 2>&1 &
	fi
	rpid=$!
	pids+=("$rpid")
	ip netns exec "$RX" tcpdump -i vr$$ -w "$T/cap.pcap" udp port 17224 2> "$T/tcpdump.err" &
	tpid=$!
	pids+=("$tpid")
	for _ in $(seq 1 300); do
		# railmon's bus thread names itself once it runs
		if [ -n "$bin" ] && [ -z "$rxtask" ]; then
			for t in /proc/$rpid/task/*; do [ "$(cat "$t/comm" 2> /dev/null)" = rx-bench ] && rxtask=$t/stat; done
		fi
		# packet sockets: tcpdump's, and the capture pass's ring
		npacket=$(ip netns exec "$RX" cat /proc/net/packet | tail -n +2 | wc -l)
		if ip netns exec "$RX" ss -Huln 'sport = :17224' | grep -q . && grep -q "listening on" "$T/tcpdump.err" &&
			{ [ -z "$bin" ] || [ -n "$rxtask" ]; } && { [ "$recv" != capture ] || [ "$npacket" -ge 2 ]; }; then
			break
		fi
		kill -0 "$rpid" 2> /dev/null || { cat "$T/run.err" "$T/sink.out" 2> /dev/null; fail "$who exited"; }
		kill -0 "$tpid" 2> /dev/null || { cat "$T/tcpdump.err"; fail "tcpdump exited"; }
		sleep 0.1
	done
	grep -q "listening on" "$T/tcpdump.err" || fail "tcpdump not listening: $(cat "$T/tcpdump.err")"
	[ -z "$bin" ] || [ -n "$rxtask" ] || fail "no rx-bench thread in $who's railmon run"
	local r0 x0=0 d0 r1 x1=0 d1
	r0=$(ticks /proc/$rpid/stat) d0=$(ticks /proc/$tpid/stat)
	[ -z "$rxtask" ] || x0=$(ticks "$rxtask")
	if [ -n "$bin" ] && [ "${RAILMON_BENCH_PERF:-0}" = 1 ] && command -v perf > /dev/null; then
		perf record -q -F 999 -g -p "$rpid" -o "$T/perf-$who.data" -- sleep "$SECS" > /dev/null 2>&1 &
		pids+=($!)
	fi
	ip netns exec "$TX" "$FLOOD" 192.0.2.2 17224 "$RATE" "$SECS" "$DATA" > "$T/flood.out" ||
		fail "trdp-flood: $(cat "$T/flood.out")"
	sent=$(sed -nE 's/^sent ([0-9]+) .*/\1/p' "$T/flood.out")
	# after the traffic: until neither process's CPU rises any more (the
	# last telegrams received, encoded and written), polled
	prev=
	for _ in $(seq 1 100); do
		sleep 0.2
		cur="$(ticks /proc/$rpid/stat) $(ticks /proc/$tpid/stat)"
		[ "$cur" = "$prev" ] && break
		prev=$cur
	done
	r1=$(ticks /proc/$rpid/stat) d1=$(ticks /proc/$tpid/stat)
	[ -z "$rxtask" ] || x1=$(ticks "$rxtask")
	udp=$(ip netns exec "$RX" nstat -az UdpInDatagrams UdpRcvbufErrors 2> /dev/null |
		awk '/^Udp/ { printf "%s %s  ", $1, $2 }')
	kill -INT "$tpid"
	wait_gone "$tpid" || fail "tcpdump did not stop"
	kill -INT "$rpid"
	wait_gone "$rpid" || fail "$who did not stop"
	wait "$rpid" || { cat "$T/run.err" "$T/sink.out" 2> /dev/null; fail "$who exited non-zero"; }
	dump_n=$(sed -nE 's/^([0-9]+) packets? captured.*/\1/p' "$T/tcpdump.err")
	dump_drop=$(sed -nE 's/^([0-9]+) packets? dropped by kernel.*/\1/p' "$T/tcpdump.err")
	dump_cpu=$((d1 - d0)) rcv_cpu=$((r1 - r0)) rcv_thread=$((x1 - x0))
	if [ -n "$bin" ]; then
		rcv_n=$("$bin" export --data "$T/log-$who" --format jsonl 2> /dev/null | grep -c '"kind": *"trdp"' || true)
		# the bus's own counters (its last Health entry)
		"$bin" stat --data "$T/log-$who" --json 2> /dev/null | WHO=$who /usr/bin/python3 -c '
import json, os, sys
for line in sys.stdin:
    j = json.loads(line)
    if j.get("name") == "bench":
        print("%s, railmon stat, bus bench: %d telegrams, %d ring drops, %d kernel drops (socket buffer), "
              "%d sequence gaps" % (os.environ["WHO"], j["items"], j["drops"], j["rx_dropped"], j.get("seq_gaps", -1)))'
		echo "$who, railmon's log holds $rcv_n telegrams; the namespace's kernel UDP counters so far: $udp"
	else
		rcv_n=$(sed -nE 's/^received ([0-9]+),.*/\1/p' "$T/sink.out")
		echo "pass 3, trdp-sink: $(tail -1 "$T/sink.out"); the namespace's kernel UDP counters so far: $udp"
	fi
}

rows=
if [ -n "${RAILMON_BEFORE:-}" ]; then
	if [ "${RAILMON_BEFORE_RECEIVE:-socket}" = capture ]; then
		b=(${RAILMON_BENCH_CAPTURE_BLOCKS:-})
		pass before "$RAILMON_BEFORE" capture "${b[0]:-}"
		after=capture${b[0]:+-${b[0]}ms}
	else
		pass before "$RAILMON_BEFORE"
		after=railmon
	fi
	rows="before $sent $rcv_n $rcv_cpu $rcv_thread $dump_n $dump_drop $dump_cpu"
fi
pass railmon "$RAILMON"
rows="$rows railmon $sent $rcv_n $rcv_cpu $rcv_thread $dump_n $dump_drop $dump_cpu"
if [ -z "${RAILMON_BENCH_CAPTURE_BLOCKS:-}" ]; then
	pass capture "$RAILMON" capture
	rows="$rows capture $sent $rcv_n $rcv_cpu $rcv_thread $dump_n $dump_drop $dump_cpu"
else
	for b in $RAILMON_BENCH_CAPTURE_BLOCKS; do
		pass "capture-${b}ms" "$RAILMON" capture "$b"
		rows="$rows capture-${b}ms $sent $rcv_n $rcv_cpu $rcv_thread $dump_n $dump_drop $dump_cpu"
	done
fi
pass sink
rows="$rows sink $sent $rcv_n $rcv_cpu 0 $dump_n $dump_drop $dump_cpu"

/usr/bin/python3 - "$TCK" "$RATE" "$DATA" "$SECS" "${after:-railmon}" $rows <<'PY'
import sys
tck = int(sys.argv[1])
rate, data, secs, after = sys.argv[2:6]
a = sys.argv[6:]
keys = ("who", "sent", "n", "cpu", "thread", "dn", "ddrop", "dcpu")
ps = [dict(zip(keys, a[i:i + 8])) for i in range(0, len(a), 8)]
for p in ps:
    for k in p:
        if k != "who":
            p[k] = int(p[k] or 0)
print(f"bench-trdp: {' + '.join(str(p['sent']) for p in ps)} PD telegrams of {data} data bytes, {rate}/s "
      f"for {secs} s over a veth pair, {len(ps)} passes")
print(f"{'pass receiver':36} {'received':>9} {'dropped':>8} {'CPU s':>6} {'us/packet':>9} {'vs tcpdump':>10}")
def row(name, n, drop, ticks, base):
    cpu = ticks / tck
    per = cpu / max(n, 1) * 1e6
    ratio = f"{per / base:9.2f}x" if base else "      inf"
    print(f"{name:36} {n:9d} {drop:8d} {cpu:6.2f} {per:9.2f} {ratio}")
    return per
num = {"before": 0, "railmon": 1, "sink": 3}
per, rel, caps = {}, {}, []
for p in ps:
    i = num.get(p["who"], 2)
    base = p["dcpu"] / tck / max(p["dn"], 1) * 1e6
    row(f"{i} tcpdump -w", p["dn"], p["ddrop"], p["dcpu"], base)
    if p["who"] != "sink":
        label = {"before": "RAILMON_BEFORE run", "railmon": "railmon run"}.get(
            p["who"], "railmon run " + p["who"].replace("-", " block "))
        per[p["who"]] = row(f"{i} {label} (whole process)", p["n"], p["sent"] - p["n"], p["cpu"], base)
        per[p["who"] + "-thread"] = row(f"{i}   its bus thread rx-bench", p["n"], p["sent"] - p["n"], p["thread"], base)
        rel[p["who"]] = (per[p["who"]] / base if base else float("inf"),
                         per[p["who"] + "-thread"] / base if base else float("inf"))
        if p["who"] == "railmon":
            p1, rm_base = p, base
        if p["who"].startswith("capture"):
            caps.append((p, base))
    else:
        per["sink"] = row("3 trdp-sink (a bare socket reader)", p["n"], p["sent"] - p["n"], p["cpu"], base)
sk, rm = per["sink"], per["railmon"]
print(f"railmon run / trdp-sink per packet: {rm / sk if sk else float('inf'):.2f}x")
for p, _ in caps:
    w = p["who"]
    print(f"{w} / socket per packet: whole process {per[w] / rm if rm else float('inf'):.2f}x, "
          f"bus thread {per[w + '-thread'] / per['railmon-thread'] if per['railmon-thread'] else float('inf'):.2f}x")
if "before" in per:
    def r(x, y):
        return f"{x / y:.2f}x" if y else "inf"
    print(f"{after} run / RAILMON_BEFORE run per packet: whole process {r(per[after], per['before'])}, "
          f"bus thread {r(per[after + '-thread'], per['before-thread'])}; "
          f"each against its own tcpdump: {rel['before'][0]:.2f}x -> {rel[after][0]:.2f}x "
          f"(bus thread {rel['before'][1]:.2f}x -> {rel[after][1]:.2f}x)")
for name, p, r, b in [("socket", p1, rm, rm_base)] + [(p["who"], p, per[p["who"]], b) for p, b in caps]:
    ok = p["n"] == p["sent"] and r <= 2 * b
    okt = p["n"] == p["sent"] and per[p["who"] + "-thread"] <= 2 * b
    print(f"goal (no drop, <= 2x tcpdump per packet), receive = {name}: whole process "
          + ("met" if ok else "NOT met") + ", bus thread " + ("met" if okt else "NOT met"))
PY
for f in "$T"/perf-*.data; do
	[ -s "$f" ] || continue
	who=${f#"$T"/perf-} who=${who%.data}
	echo "perf: $who's railmon run, top symbols during the traffic (self, all threads)"
	# awk reads it all (head would close the pipe: SIGPIPE, and pipefail)
	perf report -i "$T/perf-$who.data" --no-children --sort comm,dso,sym -g none --stdio 2> /dev/null |
		awk '/^ +[0-9]/ && n++ < 30'
	echo "perf: $who's railmon run, the bus thread rx-bench alone (self, its share of its own samples)"
	perf report -i "$T/perf-$who.data" --comms rx-bench --no-children --sort dso,sym -g none --stdio 2> /dev/null |
		awk '/^ +[0-9]/ && n++ < 25'
done
