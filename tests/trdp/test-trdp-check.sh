#!/bin/bash
# SPDX-License-Identifier: MIT
# railmon check prints a TRDP bus: interface, address, ports, groups, and
# the plan of its XML (telegrams, ComId, cycle, timeout, bytes, bytes/s);
# an XML in error fails check with its file:line:column and the board's line.
# Usage: test-trdp-check.sh RAILMON
set -euo pipefail
railmon=$1
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$here/all-types.xml" "$dir/consist.xml"
cat > "$dir/b.ini" <<'INI'
[board]
vehicle = t1
[storage]
dir = log
[trdp ecn]
interface = eth1
group = 239.193.0.1
group = 239.193.0.2
md_port = 0
xml = consist.xml
[trdp uni]
bind = 192.0.2.2
INI
out=$("$railmon" check "$dir/b.ini" 2>&1)
want1="  [trdp ecn] interface eth1, PD UDP 17224, MD UDP and TCP off 0, groups 239.193.0.1, 239.193.0.2"
want2="    XML $dir/consist.xml: 8 telegrams, 9 data sets (1 merged, 10 renamed)"
want3="  [trdp uni] interface (by route), bound to 192.0.2.2, PD UDP 17224, MD UDP and TCP 17225, groups none (unicast only)"
want4="    no XML: raw telegrams only"
# 40 header bytes + 64 padded to 64, 10 times a second; the timeout the
# XML's; ByNumber has none: 3 cycles; Nested's variable array: "+"
want5="    AllTypes                        100        100        300      64       1040       16"
want6="    ByNumber                        101         20    60 (3c)      76       5800       20"
want7="    Nested                          104          1          5      77+   120000+       35"
want8="    Arrays                          102          -          -     217          -       45"
for w in "$want1" "$want2" "$want3" "$want4" "$want5" "$want6" "$want7" "$want8"; do
	if ! grep -qxF -- "$w" <<<"$out"; then
		printf 'missing line:\n%s\nin:\n%s\n' "$w" "$out"
		exit 1
	fi
done
tail -1 <<<"$out" | grep -qx ok
# cycles and timeouts as exact milliseconds: a 1000 ms cycle is "1000"
# (a "%.3g" said "1e+03"), 12.345 ms is not rounded to "12.3"
sed -e 's/cycle="100000" timeout="300000"/cycle="1000000" timeout="2500500"/' \
    -e 's/cycle="20000"/cycle="12345"/' "$here/all-types.xml" > "$dir/consist.xml"
out=$("$railmon" check "$dir/b.ini" 2>&1)
want5="    AllTypes                        100       1000     2500.5      64        104       16"
want6="    ByNumber                        101     12.345 37.035 (3c)      76       9397       20"
for w in "$want5" "$want6"; do
	if ! grep -qxF -- "$w" <<<"$out"; then
		printf 'missing line:\n%s\nin:\n%s\n' "$w" "$out"
		exit 1
	fi
done
# an XML in error: check fails, naming the XML's line and column first
sed 's/name="i16" type="INT16"/name="i16" type="INT17"/' "$here/all-types.xml" > "$dir/consist.xml"
if out=$("$railmon" check "$dir/b.ini" 2>&1); then
	printf 'check passed a bad XML:\n%s\n' "$out"
	exit 1
fi
want="railmon check: $dir/consist.xml:39:7: element \"i16\": type \"INT17\" is no type and no data set (the xml of [trdp ecn], $dir/b.ini:10)"
if ! grep -qxF -- "$want" <<<"$out"; then
	printf 'missing line:\n%s\nin:\n%s\n' "$want" "$out"
	exit 1
fi
rm "$dir/consist.xml"
out=$("$railmon" check "$dir/b.ini" 2>&1) && exit 1
want="railmon check: $dir/b.ini:10: [trdp ecn]: xml $dir/consist.xml: No such file or directory"
grep -qxF -- "$want" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$want" "$out"; exit 1; }
# receive = capture: said, with the capability it needs; refused without
# an interface (there is no ring to read then)
cat > "$dir/c.ini" <<'INI'
[board]
vehicle = t1
[storage]
dir = log
[trdp ecn]
interface = eth1
receive = capture
INI
out=$("$railmon" check "$dir/c.ini" 2>&1)
want="    receive = capture: UDP read from eth1's packet ring (libpcap, as tcpdump), blocks handed over at least every 10 ms, the sockets only hold the ports and groups; needs CAP_NET_RAW (root, or the unit's capability); MD over TCP from its listener"
grep -qxF -- "$want" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$want" "$out"; exit 1; }
# capture_block_ms: the ring's block timeout, taken from the board
printf 'capture_block_ms = 100\n' >> "$dir/c.ini"
out=$("$railmon" check "$dir/c.ini" 2>&1)
want="${want/every 10 ms/every 100 ms}"
grep -qxF -- "$want" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$want" "$out"; exit 1; }
# capture_buffer_kib: the ring's size and the stall it covers at low rates
# ((KiB / 256) blocks x capture_block_ms), the default's then the board's;
# out of bounds refused with them
ring="    ring of 16384 KiB: 64 blocks of 256 KiB, a stall of the bus thread of 6400 ms covered at low rates (a block each 100 ms)"
grep -qxF -- "$ring" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$ring" "$out"; exit 1; }
printf 'capture_buffer_kib = 2048\n' >> "$dir/c.ini"
out=$("$railmon" check "$dir/c.ini" 2>&1)
ring="    ring of 2048 KiB: 8 blocks of 256 KiB, a stall of the bus thread of 800 ms covered at low rates (a block each 100 ms)"
grep -qxF -- "$ring" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$ring" "$out"; exit 1; }
for bad in 1023 1048577; do
	sed -i "s/^capture_buffer_kib = .*/capture_buffer_kib = $bad/" "$dir/c.ini"
	out=$("$railmon" check "$dir/c.ini" 2>&1) && { printf 'check passed capture_buffer_kib %s:\n%s\n' "$bad" "$out"; exit 1; }
	want_b="railmon check: $dir/c.ini:9: capture_buffer_kib: expected 1024 to 1048576: '$bad'"
	grep -qxF -- "$want_b" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$want_b" "$out"; exit 1; }
done
sed -i '/^capture_buffer_kib = /d' "$dir/c.ini"
sed -i '/^interface = eth1$/d' "$dir/c.ini"
out=$("$railmon" check "$dir/c.ini" 2>&1) && { printf 'check passed capture without interface:\n%s\n' "$out"; exit 1; }
want="railmon check: $dir/c.ini:5: [trdp ecn]: receive = capture needs 'interface =' (the interface whose packets are read)"
grep -qxF -- "$want" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$want" "$out"; exit 1; }
# run without CAP_NET_RAW (as nobody; needs root to drop to it) says what
# the mode needs instead of a bare "Operation not permitted"
perm="not run (not root)"
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	chmod 755 "$dir"
	rm_abs=$(realpath "$railmon")
	printf '[board]\nvehicle = t1\n[storage]\ndir = log\n[trdp ecn]\ninterface = lo\nbind = 127.0.0.1\nreceive = capture\n' > "$dir/p.ini"
	chmod 644 "$dir/p.ini"
	out=$(cd "$dir" && setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		"$rm_abs" run --board p.ini --data "$dir/plog" 2>&1) && { printf 'run passed without CAP_NET_RAW:\n%s\n' "$out"; exit 1; }
	want="railmon run: p.ini: bus 'ecn': receive = capture reads lo's packet ring, which needs CAP_NET_RAW (root, or the capability: cli/railmon.service says how)"
	grep -qxF -- "$want" <<<"$out" || { printf 'missing line:\n%s\nin:\n%s\n' "$want" "$out"; exit 1; }
	perm="run without CAP_NET_RAW says so"
fi
echo "check: both TRDP buses said, the XML's plan, its errors; receive = capture said with its ring, capture_buffer_kib bounds, refused without interface; $perm"
