#!/bin/bash
# SPDX-License-Identifier: MIT
# vm-probe.sh - runs inside the VM for test-vm-harness.sh: reports what the
# harness promises (one "PROBE name=value" line each), echoes its
# arguments, writes to stderr and exits 3 so the host can check that
# output, arguments and exit status all come back.
up() { [ $(( $(cat /sys/class/net/$1/flags) & 1 )) = 1 ] && echo up || echo down; }
echo "PROBE kernel=$(uname -r)"
for dev in vcan0 vcan1; do
	echo "PROBE $dev=$(cat /sys/class/net/$dev/mtu 2>/dev/null || echo missing),$(up $dev)"
done
echo "PROBE lo=$(up lo)"
touch /railmon-probe 2>/dev/null && echo "PROBE root=rw" || echo "PROBE root=ro"
touch "$TMPDIR/probe" && echo "PROBE tmpdir=rw"
echo "PROBE cangen=$(command -v cangen >/dev/null && echo yes || echo no)"
echo "PROBE env=${RAILMON_PROBE:-unset}"
echo "PROBE uid=$(id -u)"
for a in "$@"; do echo "PROBE arg=<$a>"; done
echo "probe-stderr" >&2
exit 3
