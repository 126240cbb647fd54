#!/bin/bash
# test-demo-setup.sh SRCDIR - what cli/demo.sh builds with: `meson setup
# -Dtests=false` configures railmon alone, needing only the packages of
# `tests/deps.sh --build` (no sqlite3, protoc, python peers): no test, no
# benchmark, the railmon executable; and deps.sh --build lists exactly the
# build group, a part of the whole list.
set -euo pipefail
SRC=$1
. "$(dirname "$0")/../lib/lib.sh"
lib_init demo-setup
fail() { echo "FAIL: $*"; cat "$T/setup.log" 2>/dev/null || true; exit 1; }

meson setup "$T/b" "$SRC" -Dtests=false > "$T/setup.log" 2>&1 || fail "meson setup -Dtests=false"
tests=$(meson introspect --tests "$T/b")
[ "$tests" = "[]" ] || fail "tests configured: ${tests:0:200}"
[ "$(meson introspect --benchmarks "$T/b")" = "[]" ] || fail "benchmarks configured"
deps=$(meson introspect --dependencies "$T/b")
for d in libmodbus libsocketcan libprotobuf-c inih libmosquitto; do
	grep -q "\"$d\"" <<<"$deps" || fail "no $d among the dependencies"
done
grep -qi sqlite <<<"$deps" && fail "sqlite3 is a dependency of the demo build"
meson introspect --targets "$T/b" | grep -q '"name": "railmon"' || fail "no railmon target"
grep -q 'deps.sh --build' "$SRC/cli/demo.sh" || fail "demo.sh does not install with --build"
grep -q -- '-Dtests=false' "$SRC/cli/demo.sh" || fail "demo.sh does not build without the tests"
# the build group, and only it, with --build (the script's own list, read by bash)
build=$(bash -c 'set -euo pipefail; source <(sed -n "/^BUILD=(/,/^)/p" "$1"); echo "${BUILD[*]}"' _ "$SRC/tests/deps.sh")
for p in meson ninja-build libmodbus-dev libmosquitto-dev protobuf-c-compiler; do
	grep -qw -- "$p" <<<"$build" || fail "$p not in deps.sh's build group"
done
for p in python3-pymodbus mosquitto sqlite3 qemu-system-x86 tmux; do
	grep -qw -- "$p" <<<"$build" && fail "$p in the build group"
done
echo "demo build: railmon alone, no tests, dependencies: the build group ($build)"
echo PASS
