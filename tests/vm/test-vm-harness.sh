#!/bin/bash
# SPDX-License-Identifier: MIT
#
# test-vm-harness.sh VM_RUN - checks tests/vm/vm-run.sh itself (suite hw):
# refusals on the host without booting, a VM whose setup fails and one that
# times out (both must fail), then one boot running vm-probe.sh,
# whose stdout, stderr, arguments and exit status (3) must come back and
# whose report must show the VM set up as promised.
set -uo pipefail
VM_RUN=${1:?usage: test-vm-harness.sh path/to/vm-run.sh}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fails=0
check() { # description, command...
	local what=$1; shift
	if "$@"; then echo "ok $what"; else echo "FAIL $what"; fails=$((fails + 1)); fi
}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# Host-side refusals: no boot, non-zero exit.
bash "$VM_RUN" /nonexistent/cmd > /dev/null 2>&1
check "missing command is refused" [ $? -ne 0 ]
bash "$VM_RUN" --bogus true > /dev/null 2>&1
check "unknown option is refused" [ $? -ne 0 ]

# A VM whose setup fails (the results share cannot be bound where the
# command line says: vm-init.sh takes the last railmon.results=), and one
# that does not finish in time: both must fail, not pass.
RAILMON_VM_APPEND=railmon.results=/nonexistent/dir bash "$VM_RUN" --timeout 60 true \
	> /dev/null 2> "$out/setup.err"
rc=$?
check "failed VM setup fails (got $rc)" [ "$rc" -ne 0 ]
check "failed VM setup is named" grep -q "VM setup failed: bind results share" "$out/setup.err"
bash "$VM_RUN" --timeout 3 true > /dev/null 2>&1
rc=$?
check "timeout gives 124 (got $rc)" [ "$rc" = 124 ]

RAILMON_PROBE="x y" bash "$VM_RUN" --timeout 120 "$HERE/vm-probe.sh" "a b" "it's" '$HOME' \
	> "$out/stdout" 2> "$out/stderr"
rc=$?
check "exit status 3 propagated (got $rc)" [ "$rc" = 3 ]
has() { grep -qxF -- "$1" "$out/stdout" || { echo "  missing: $1"; return 1; }; }
check "vcan0 and vcan1 up with MTU 72" has "PROBE vcan0=72,up"
check "vcan1 up" has "PROBE vcan1=72,up"
check "lo up" has "PROBE lo=up"
check "host root read-only" has "PROBE root=ro"
check "TMPDIR writable" has "PROBE tmpdir=rw"
check "can-utils from the host" has "PROBE cangen=yes"
check "RAILMON_* environment passed" has "PROBE env=x y"
check "runs as root" has "PROBE uid=0"
check "arguments quoted exactly" has "PROBE arg=<a b>"
check "argument with quote" has "PROBE arg=<it's>"
check "argument with dollar" has 'PROBE arg=<$HOME>'
check "kernel is Debian's, not the host's" bash -c "! grep -qxF 'PROBE kernel=$(uname -r)' '$out/stdout'"
check "stderr propagated" grep -qx "probe-stderr" "$out/stderr"
if [ $fails -ne 0 ]; then
	echo "--- stdout"; cat "$out/stdout"; echo "--- stderr"; cat "$out/stderr"
	echo "--- setup-failure run, stderr"; cat "$out/setup.err"
	echo "FAIL: $fails checks"
	exit 1
fi
echo "PASS"
