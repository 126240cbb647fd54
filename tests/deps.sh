#!/bin/bash
# deps.sh - install everything railmon builds and tests with (Debian 12, root).
# Idempotent and quiet: skips apt entirely when every package is present.
set -euo pipefail

# What building railmon needs, and nothing else: `deps.sh --build`
# (board/demo.sh) installs only these.
BUILD=(
	gcc libc6-dev meson ninja-build pkg-config
	libmodbus-dev libsocketcan-dev libprotobuf-c-dev protobuf-c-compiler
	libinih-dev libmosquitto-dev zlib1g-dev
	libpq-dev # the ground station's PostgreSQL client (ground/db.c)
)
PKGS=(
	"${BUILD[@]}"
	# sanitizers and fuzzing
	clang libclang-rt-14-dev
	# real peers
	mosquitto mosquitto-clients socat can-utils
	tmux # a real terminal for `railmon watch` (tests/board/test-watch.sh)
	python3 python3-pymodbus python3-serial-asyncio python3-protobuf protobuf-compiler python3-paho-mqtt python3-can
	openssl
	python3-pandas # a consumer's load of `export --wide` (tests/board/test-export.py)
	influxdb # --format influx into a real InfluxDB 1.x (tests/uplink/test-influx.py)
	# a real PostgreSQL 15: the ground tests (tests/ground/pg.py) and the
	# README's \copy ... FROM PROGRAM recipe (tests/board/test-postgres-recipe.sh)
	postgresql postgresql-client
	# the CAN VM (Debian's own kernel under qemu)
	qemu-system-x86 busybox-static cpio kmod zstd xz-utils
	iproute2 # ip link inside the VM's chroot (tests/vm/test-can-socket.c)
	# realtime and storage baselines for the benchmarks
	rt-tests stress-ng sqlite3 libsqlite3-dev bc
	libck-dev # Concurrency Kit's ck_ring: bench-ring's baseline for the acq_item ring
)

[ "${1:-}" != --build ] || PKGS=("${BUILD[@]}")

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
