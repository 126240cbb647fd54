#!/bin/bash
# demo.sh - Quick start: install what building railmon needs (Debian 12, as
# root; the test toolchain is tests/deps.sh's), build railmon alone in
# build-demo/ with its progress shown, and run `railmon demo` (a simulated
# train on loopback).  Arguments go to `railmon demo` (default: --duration 30).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh --build
log=$(mktemp /tmp/railmon-build.XXXXXX)
failed() {
	echo
	grep -E "error|ERROR" -A5 "$log" | head -40
	echo "demo.sh: build failed; full log in $log"
	exit 1
}
# Progress: ninja's "[12/80] Compiling ..." lines, in place on a terminal.
progress() {
	local line
	while IFS= read -r line; do
		case $line in
		\[*)
			if [ -t 1 ]; then printf '\r\033[K  %.70s' "$line"; else printf '  %s\n' "$line"; fi ;;
		esac
	done
	[ -t 1 ] && printf '\r\033[K' || true
}
echo "demo.sh: building railmon in build-demo/ (without the tests; full log in $log)"
# -Dtests=false: the tests' peers (pymodbus, mosquitto, sqlite...) are not
# needed to build railmon, and are not installed here.
if [ ! -f build-demo/build.ninja ]; then
	meson setup build-demo -Dtests=false >"$log" 2>&1 || failed
fi
# pipefail: a failing ninja fails the pipe
if ! ninja -j2 -C build-demo 2>&1 | tee -a "$log" | progress; then failed; fi
rm -f "$log"
echo "demo.sh: built build-demo/cli/railmon"
[ $# -gt 0 ] || set -- --duration 30
exec build-demo/cli/railmon demo "$@"
