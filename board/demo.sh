#!/bin/bash
# demo.sh - Quick start: install what railmon needs (Debian 12, as root),
# build it, and run `railmon demo` (a simulated train on loopback).
# Arguments go to `railmon demo` (default: --duration 30).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
[ -f build/build.ninja ] || meson setup build --buildtype=release -Db_ndebug=false >/dev/null
ninja -C build >/dev/null
[ $# -gt 0 ] || set -- --duration 30
exec build/board/railmon demo "$@"
