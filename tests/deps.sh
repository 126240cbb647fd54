#!/bin/bash
# deps.sh - install everything railmon builds and tests with (Debian 12, root).
# Idempotent and quiet: skips apt entirely when every package is present.
set -euo pipefail

# What building railmon needs, and nothing else: `deps.sh --build`
# (cli/demo.sh) installs only these.
BUILD=(
	gcc libc6-dev meson ninja-build pkg-config
	libmodbus-dev libsocketcan-dev libprotobuf-c-dev protobuf-c-compiler
	libinih-dev libmosquitto-dev zlib1g-dev
	libsodium-dev # evidence: BLAKE2b hash chain, Ed25519 Seals (evidence/)
	libexpat1-dev # the TRDP device XML configuration (trdp/xml.c), a train's Ethernet
	libpq-dev # the ground station's PostgreSQL client (ground/db.c)
	libmicrohttpd-dev # railmon serve's HTTP server (web/server.c)
	libcairo2-dev # railmon plot's PNG and SVG (plot/draw.c)
	libpcap-dev # packet captures, pcap and pcapng, of TRDP traffic (trace/pcap.c)
	nodejs # npm ci of the dashboard's uPlot at build time (web/npm-ci.sh)
)
# Debian's nodejs comes without npm (a package of its own); NodeSource's
# nodejs carries it, and Debian's npm would not install beside that one.
command -v npm >/dev/null 2>&1 || BUILD+=(npm)
PKGS=(
	"${BUILD[@]}"
	# sanitizers and fuzzing
	clang libclang-rt-14-dev
	# real peers
	mosquitto mosquitto-clients socat can-utils
	tmux # a real terminal for `railmon watch` (tests/cli/test-watch.sh)
	python3 python3-pymodbus python3-serial-asyncio python3-protobuf python3-cryptography protobuf-compiler python3-paho-mqtt python3-can
	openssl
	python3-pil # the plot tests read the pictures back (tests/plot)
	# captures made in the pcap test and read by independent readers (tests/trace/test-pcap.py)
	tcpdump wireshark-common tshark
	python3-pandas # a consumer's load of `export --wide` (tests/cli/test-export.py)
	chromium # the dashboard in a real headless browser (tests/web, driven by puppeteer-core from npm)
	nginx-light # the dashboard behind the README's reverse proxy (tests/web/test-web-proxy.py)
	influxdb # --format influx into a real InfluxDB 1.x (tests/uplink/test-influx.py)
	# a real PostgreSQL 15: the ground tests (tests/ground/pg.py) and the
	# README's \copy ... FROM PROGRAM recipe (tests/cli/test-postgres-recipe.sh)
	postgresql postgresql-client
	# the CAN VM (Debian's own kernel under qemu)
	qemu-system-x86 busybox-static cpio kmod zstd xz-utils
	iproute2 # ip link inside the VM's chroot (tests/vm/test-can-socket.c)
	# realtime and storage baselines for the benchmarks
	rt-tests stress-ng sqlite3 libsqlite3-dev bc
	libck-dev # Concurrency Kit's ck_ring: bench-ring's baseline for the acq_item ring
	linux-perf # bench-live's profile inside the VM (RAILMON_BENCH_PERF=1): perf_6.1 for its Debian 6.1 kernel
)

# ARM cross builds, tested under qemu-user (tests/run-all.sh stages aarch64,
# armhf, cross-log; cross/*.ini): Debian's cross compilers, qemu-user-static
# as meson's exe_wrapper, and railmon's libraries for both targets from
# Debian's multiarch archive (pkgconf:<arch> gives <triplet>-pkg-config;
# sqlite3 for the storage benchmark, which the cross builds build too).
# They co-install with the amd64 -dev packages.  Multi-Arch: same packages
# must have one version on every architecture, so the first install may
# upgrade amd64 ones to the same snapshot (libssl3, libssl-dev, openssl),
# never remove them.
CROSS_ARCHES=(arm64 armhf)
PKGS+=(crossbuild-essential-arm64 crossbuild-essential-armhf qemu-user-static)
for a in "${CROSS_ARCHES[@]}"; do
	PKGS+=("libmodbus-dev:$a" "libsocketcan-dev:$a" "libprotobuf-c-dev:$a" "libinih-dev:$a"
	       "libmosquitto-dev:$a" "libsqlite3-dev:$a" "pkgconf:$a"
	       "zlib1g-dev:$a" "libsodium-dev:$a" "libpcap-dev:$a"
	       "libexpat1-dev:$a") # trdp/xml.c reads the TRDP device XML on the vehicle too
done
# the armhf stage runs with UBSan: its runtime where the target's loader looks
# (crossbuild-essential puts one only under /usr/arm-linux-gnueabihf)
PKGS+=(libubsan1:armhf)
# The package and what `meson install` installs (tests/install/, run-all.sh's
# stage 'package'): help2man makes the man pages from the help texts, man-db
# renders them for the check, bash-completion runs the completion under
# test; debhelper (dh with its meson build system), fakeroot and lintian
# build and check the .deb; dpkg-dev is dpkg-buildpackage.
# udev's udevadm applies the package's rule to /dev/cpu_dma_latency (a fresh
# Debian 12 has no udev; installing it may bring systemd to the same point
# release).
PKGS+=(help2man man-db bash-completion debhelper fakeroot lintian dpkg-dev udev)
if [ "${1:-}" = --build ]; then
	PKGS=("${BUILD[@]}") # the demo builds for this machine only
else
	for a in "${CROSS_ARCHES[@]}"; do
		dpkg --print-foreign-architectures | grep -qx "$a" || dpkg --add-architecture "$a"
	done
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# A mirror caught mid-sync fails one index ("File has unexpected size")
	# and apt-get update exits 100 though every package still resolves:
	# try three times, then go on and let apt-get install name what it lacks.
	for try in 1 2 3; do
		apt-get update -qq && break
		[ "$try" = 3 ] && echo "deps: apt-get update failed 3 times; installing from the indexes it has" >&2
		sleep 20
	done
	# This machine's packages first: without them nothing builds.  Then each
	# foreign architecture on its own: a mirror whose armhf index lags its
	# amd64 one ("held broken packages": Multi-Arch: same versions differ)
	# then costs only the stages of that target, which fail naming it,
	# not the whole run.
	# A foreign architecture's index that apt refused for its size: take the
	# one the mirror serves.  It is not the one the signed Release lists
	# (that is why apt refused it), so it is used only when the install
	# without it failed, only for the cross builds' libraries, and said;
	# apt still checks each .deb against the index's hashes.  Without it,
	# the security updates' Multi-Arch: same versions (libssl3, libmodbus5)
	# exist on amd64 only and the target's -dev packages cannot install.
	served_index() { # arch
		local a=$1 uri file got=1
		while read -r uri file; do
			uri=${uri/binary-$native_arch/binary-$a}
			file=${file%.lz4}; file=${file%.gz}; file=${file%.xz}
			file=${file/_binary-${native_arch}_/_binary-${a}_}
			compgen -G "$file*" >/dev/null && continue
			/usr/lib/apt/apt-helper download-file "$uri.xz" "$file.xz" >/dev/null 2>&1 &&
				xz -df "$file.xz" || { rm -f "$file.xz"; continue; }
			echo "deps: $uri.xz taken as the mirror serves it (its size is not the signed Release's)" >&2
			got=0
		done < <(apt-get indextargets --format '$(URI) $(FILENAME)' 'Created-By: Packages' "Architecture: $native_arch")
		return $got
	}
	native_arch=$(dpkg --print-architecture)
	native=() foreign=()
	for p in "${missing[@]}"; do
		case $p in *:*) foreign+=("$p") ;; *) native+=("$p") ;; esac
	done
	[ ${#native[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${native[@]}" >/dev/null
	for a in "${CROSS_ARCHES[@]}"; do
		arch=()
		for p in "${foreign[@]}"; do [ "${p##*:}" = "$a" ] && arch+=("$p"); done
		[ ${#arch[@]} -eq 0 ] && continue
		apt-get install -y -qq --no-install-recommends "${arch[@]}" >/dev/null ||
		{ served_index "$a" && apt-get install -y -qq --no-install-recommends "${arch[@]}" >/dev/null; } ||
			echo "deps: the $a packages could not be installed (${arch[*]}): that target's stage will fail" >&2
	done
fi
