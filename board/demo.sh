#!/bin/bash
# demo.sh - Quick start: install what railmon needs (Debian 12, as root),
# build it, and run `railmon demo` (a simulated train on loopback).
# Arguments go to `railmon demo` (default: --duration 30).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
log=$(mktemp /tmp/railmon-build.XXXXXX)
# The same build as the test suite's (debugoptimized, -Werror).
if ! { [ -f build/build.ninja ] || meson setup build; } >"$log" 2>&1 || ! ninja -C build >>"$log" 2>&1; then
	grep -E "error|ERROR" -A5 "$log" | head -40
	echo "demo.sh: build failed; full log in $log"
	exit 1
fi
rm -f "$log"
[ $# -gt 0 ] || set -- --duration 30
exec build/board/railmon demo "$@"
