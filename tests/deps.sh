#!/bin/bash
# deps.sh - install everything railmon builds and tests with (Debian 12, root).
# Idempotent and quiet: skips apt entirely when every package is present.
set -euo pipefail

PKGS=(
	# build
	gcc libc6-dev meson ninja-build pkg-config
	libmodbus-dev libsocketcan-dev libprotobuf-c-dev protobuf-c-compiler
	libinih-dev libmosquitto-dev
	libpq-dev # the ground station's PostgreSQL client (ground/db.c)
	# sanitizers and fuzzing
	clang libclang-rt-14-dev
	# real peers
	mosquitto mosquitto-clients socat can-utils
	python3 python3-pymodbus python3-serial-asyncio python3-protobuf protobuf-compiler python3-paho-mqtt python3-can
	openssl
	postgresql postgresql-client # a real PostgreSQL 15 for the ground tests (tests/ground/pg.py)
	# the CAN VM (Debian's own kernel under qemu)
	qemu-system-x86 busybox-static cpio kmod zstd xz-utils
	iproute2 # ip link inside the VM's chroot (tests/vm/test-can-socket.c)
	# realtime and storage baselines for the benchmarks
	rt-tests stress-ng sqlite3 libsqlite3-dev bc
)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
