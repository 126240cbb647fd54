#!/bin/bash
# run-all.sh - the whole test suite, as CI runs it (Debian 12, as root).
#
# Installs its dependencies, then builds and runs:
#   1. the normal build (-Werror): every suite, including 'hw' (SocketCAN in
#      a QEMU VM booting Debian's kernel) and the peers each test starts for
#      itself (mosquitto, pymodbus and libmodbus servers, socat ptys);
#   2. an AddressSanitizer + UBSan build: every suite but 'hw';
#   3. a ThreadSanitizer build: the ring and thread code, and the tests
#      that run the daemon's threads (suite tsan);
#   4. a clang libFuzzer build: each fuzz target for a bounded run;
#   5. cross builds for aarch64 and armhf (cross/*.ini), running the tests
#      of suite 'cross' under qemu-user (the armhf build with UBSan, which
#      traps misaligned accesses as well as qemu's LDRD/LDM checks do);
#   6. cross-log: a log written on each target is exported byte-identically
#      on every other one (tests/cross/test-cross-log.sh).
#   7. package: the Debian package (debian/) built with dpkg-buildpackage,
#      lintian-clean, installed with apt-get, `railmon demo` and `railmon
#      check` run from the installed paths, purged (the machine as before
#      for what follows); then built for arm64 and run under qemu-user
#      (tests/install/test-package.sh).
# Each stage prints its wall-clock time.
# Ends with "N passed, N failed" counted from meson's test logs (a skipped
# test counts as failed: a check that did not run proved nothing).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=${RAILMON_TEST_OUT:-$ROOT/build-test}
JOBS=${JOBS:-2}
bash tests/deps.sh || { echo "deps.sh failed"; echo "0 passed, 1 failed"; exit 1; }
mkdir -p "$OUT"
status=0
logs=()

run() { # name, meson setup args..., --, meson test args...
	local name=$1; shift
	local setup=() test=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do setup+=("$1"); shift; done
	shift
	test=("$@")
	local dir="$OUT/$name" t0=$SECONDS
	echo "=== $name: setup"
	rm -rf "$dir"
	if ! meson setup "$dir" "${setup[@]}" >"$OUT/$name-setup.log" 2>&1; then
		tail -30 "$OUT/$name-setup.log"; echo "=== $name: SETUP FAILED"; status=1
		echo '{"name": "'"$name"'-build", "result": "FAIL"}' > "$OUT/$name-fail.json"; logs+=("$OUT/$name-fail.json")
		return
	fi
	echo "=== $name: build"
	if ! ninja -C "$dir" -j "$JOBS" >"$OUT/$name-build.log" 2>&1; then
		grep -E "error|Error" -A5 "$OUT/$name-build.log" | head -60; echo "=== $name: BUILD FAILED"; status=1
		echo '{"name": "'"$name"'-build", "result": "FAIL"}' > "$OUT/$name-fail.json"; logs+=("$OUT/$name-fail.json")
		return
	fi
	echo "=== $name: test ${test[*]}"
	meson test -C "$dir" --print-errorlogs --num-processes "$JOBS" "${test[@]}" 2>&1 | grep -vE '^(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):' || true
	logs+=("$dir/meson-logs/testlog.json")
	echo "=== $name: $((SECONDS - t0)) s"
}

run normal --werror -- --no-suite fuzz
# no 'memory': resident memory under ASan is its shadow's, not railmon's; no 'quickstart': it builds
# its clone without sanitizers (demo.sh), the normal stage runs it; no 'ground-load': the dashboard's
# p95 under ASan is the sanitizer's.
# UBSan must stop at its first finding here too, or the test would pass.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	run asan --werror -Db_sanitize=address,undefined -Db_lundef=false -- --no-suite hw --no-suite fuzz --no-suite workload \
	--no-suite memory --no-suite quickstart --no-suite ground-load
run tsan --werror -Db_sanitize=thread -- --suite acquisition --suite tsan
CC=clang run fuzz --werror -Dfuzzing=true -- --suite fuzz
# qemu-user runs the tests 2-5x slower than native: longer timeouts.  UBSan
# must stop at its first finding, or the test would pass.
run aarch64 --werror --cross-file cross/aarch64.ini -- --suite cross --timeout-multiplier 3
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	run armhf --werror --cross-file cross/armhf.ini -Db_sanitize=undefined -Db_lundef=false \
	-- --suite cross --timeout-multiplier 3

# A log written on each target, read on every other one.
cross_log() {
	local t0=$SECONDS result=FAIL
	echo "=== cross-log"
	if [ -x "$OUT/normal/cli/railmon" ] && [ -x "$OUT/aarch64/cli/railmon" ] &&
	   [ -x "$OUT/armhf/cli/railmon" ] &&
	   UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 bash tests/cross/test-cross-log.sh "$ROOT" \
		"x86-64=$OUT/normal/cli/railmon" \
		"aarch64=qemu-aarch64-static $OUT/aarch64/cli/railmon" \
		"armhf=qemu-arm-static $OUT/armhf/cli/railmon"; then
		result=OK
	else
		status=1
	fi
	echo '{"name": "cross-log", "result": "'"$result"'"}' > "$OUT/cross-log.json"
	logs+=("$OUT/cross-log.json")
	echo "=== cross-log: $((SECONDS - t0)) s"
}
cross_log

# The Debian package, native and arm64 (last: it installs into this machine,
# and takes it out again on every exit path).
package() {
	local t0=$SECONDS result=FAIL
	echo "=== package"
	if bash tests/install/test-package.sh "$ROOT" "$OUT/package" arm64; then
		result=OK
	else
		status=1
	fi
	echo '{"name": "package", "result": "'"$result"'"}' > "$OUT/package.json"
	logs+=("$OUT/package.json")
	echo "=== package: $((SECONDS - t0)) s"
}
package

/usr/bin/python3 - "${logs[@]}" <<'PY'
import json, sys
passed = failed = 0
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print(f"missing test log {path}"); failed += 1; continue
    build = path.split('/')[-3] if path.endswith('testlog.json') else path
    for line in lines:
        if not line.strip():
            continue
        t = json.loads(line)
        ok = t.get("result") in ("OK", "EXPECTEDFAIL")
        if ok:
            passed += 1
        else:
            failed += 1
            print(f"FAILED: {build}: {t.get('name')} ({t.get('result')})")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
rc=$?
[ $status -eq 0 ] || rc=1
exit $rc
