#!/bin/bash
# SPDX-License-Identifier: MIT
# railmon check prints a TRDP bus: interface, address, ports, groups, XML.
# Usage: test-trdp-check.sh RAILMON
set -euo pipefail
railmon=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
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
want2="    raw telegrams recorded; XML $dir/consist.xml (stored: its data sets are not decoded yet)"
want3="  [trdp uni] interface (by route), bound to 192.0.2.2, PD UDP 17224, MD UDP and TCP 17225, groups none (unicast only)"
want4="    raw telegrams recorded (no XML: nothing decoded)"
for w in "$want1" "$want2" "$want3" "$want4"; do
	if ! grep -qxF -- "$w" <<<"$out"; then
		printf 'missing line:\n%s\nin:\n%s\n' "$w" "$out"
		exit 1
	fi
done
tail -1 <<<"$out" | grep -qx ok
echo "check: both TRDP buses said"
