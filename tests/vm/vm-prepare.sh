#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-prepare.sh - build (once) what tests/vm/vm-run.sh boots: Debian's own
# kernel plus a busybox initramfs that can load CAN and 9p modules.
#
# Usage: vm-prepare.sh [CACHE_DIR]
#   CACHE_DIR defaults to $RAILMON_VM_CACHE, else $MESON_BUILD_ROOT/vm,
#   else ./build/vm.
#
# Why Debian's kernel: the development and CI hosts run a kernel without
# CAN (socket(AF_CAN) fails), so SocketCAN is exercised under QEMU instead.
# The kernel package is the one linux-image-amd64 currently depends on; it
# is fetched with `apt-get download` (needs only Debian's apt sources) and
# unpacked with dpkg-deb.  A .deb already in CACHE_DIR is reused, so a
# cache dir seeded once works offline.
#
# Idempotent: the finished cache is marked by CACHE_DIR/ready, holding the
# kernel release and a hash of vm-init.sh and this script; when both match nothing is
# redone.  Concurrent callers (meson runs tests in parallel) serialise on
# CACHE_DIR/.lock.  Every failure exits non-zero with a "vm-prepare:" line.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${1:-${RAILMON_VM_CACHE:-${MESON_BUILD_ROOT:-$PWD/build}/vm}}
# Modules for vm-init.sh, by top-level name; dependencies are resolved below.
# slcan: a tty-attached controller with real CAN link data (kind "can"),
# which the tests use as a stand-in for a physical interface.  softdog: a
# /dev/watchdog for railmon's hardware-watchdog test (idle until opened).
# can-j1939: the kernel's J1939 stack, an independent transport protocol
# implementation for test-j1939-vm.sh.
CAN_MODULES=(can can-raw can-dev vcan slcan softdog can-j1939)
P9_MODULES=(virtio_pci 9pnet_virtio 9p)

die() { echo "vm-prepare: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg-deb depmod modprobe cpio gzip busybox; do
	command -v "$tool" >/dev/null || die "missing tool '$tool' (see tests/deps.sh)"
done
[ -x /bin/busybox ] || die "/bin/busybox missing (package busybox-static)"

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
exec 9>"$CACHE/.lock"
flock -w 600 9 || die "timed out waiting for $CACHE/.lock"

init_hash=$(cat "$HERE/vm-init.sh" "$HERE/vm-prepare.sh" | sha256sum | cut -c1-16)

# An already downloaded kernel .deb wins over asking apt: offline re-runs.
find_deb() { ls "$CACHE"/linux-image-[0-9]*-amd64_*.deb 2>/dev/null | sort -V | tail -1; }

fetch_kernel() {
	local pkg deb
	deb=$(find_deb)
	if [ -z "$deb" ]; then
		pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		      awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
		[ -n "$pkg" ] || die "cannot resolve the kernel linux-image-amd64 depends on (apt-get update?)"
		# apt warns that _apt cannot write here; that warning is harmless.
		(cd "$CACHE" && apt-get download -q "$pkg" 2>&1 | grep -v unsandboxed >&2 || true)
		deb=$(find_deb)
		[ -n "$deb" ] || die "apt-get download $pkg produced no .deb in $CACHE"
	fi
	echo "$deb"
}

unpack_kernel() { # $1 = .deb; sets KROOT and KV
	KROOT=$CACHE/kroot
	if [ ! -f "$KROOT/.unpacked" ] || [ "$(cat "$KROOT/.unpacked")" != "$(basename "$1")" ]; then
		rm -rf "$KROOT"
		dpkg-deb -x "$1" "$KROOT" || die "dpkg-deb -x $1 failed"
		basename "$1" > "$KROOT/.unpacked"
	fi
	KV=$(ls "$KROOT/lib/modules" | head -1)
	[ -n "$KV" ] && [ -f "$KROOT/boot/vmlinuz-$KV" ] || die "no kernel image in $1"
	# The .deb ships no modules.dep (its postinst runs depmod).
	[ -f "$KROOT/lib/modules/$KV/modules.dep" ] || depmod -b "$KROOT" "$KV" || die "depmod failed"
}

# Copy the modules $2.. need, in load order, decompressed, and write the
# order to etc/$1 for vm-init.sh.
add_modules() {
	local list=$IR/etc/$1 path base
	shift
	: > "$list"
	for m in "$@"; do
		modprobe -d "$KROOT" -S "$KV" --show-depends "$m" || die "module $m not in kernel $KV"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' > "$IR/.order"
	while read -r path; do
		base=$(basename "$path")
		case "$path" in
		*.ko.xz)  base=${base%.xz};  xz -dc "$path" > "$IR/lib/modules/$base" ;;
		*.ko.zst) base=${base%.zst}; zstd -qdc "$path" > "$IR/lib/modules/$base" ;;
		*.ko.gz)  base=${base%.gz};  gzip -dc "$path" > "$IR/lib/modules/$base" ;;
		*)        cp "$path" "$IR/lib/modules/$base" ;;
		esac || die "cannot copy module $path"
		echo "$base" >> "$list"
	done < "$IR/.order"
	rm -f "$IR/.order"
	[ -s "$list" ] || die "empty module list $1"
}

build_initramfs() {
	IR=$CACHE/initramfs
	rm -rf "$IR"
	mkdir -p "$IR"/{bin,dev,proc,sys,etc,lib/modules,hostroot,results}
	cp /bin/busybox "$IR/bin/busybox"
	# `busybox --list` names busybox itself: linking that would replace the
	# binary by a symlink to itself.
	for applet in $(/bin/busybox --list); do
		[ "$applet" = busybox ] || ln -s busybox "$IR/bin/$applet"
	done
	add_modules modules-can.list "${CAN_MODULES[@]}"
	add_modules modules-9p.list "${P9_MODULES[@]}"
	install -m 0755 "$HERE/vm-init.sh" "$IR/init"
	(cd "$IR" && find . | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) \
		> "$CACHE/initrd.gz.tmp" || die "cpio failed"
	mv "$CACHE/initrd.gz.tmp" "$CACHE/initrd.gz"
}

deb=$(fetch_kernel)
unpack_kernel "$deb"
stamp="$KV $init_hash"
if [ -f "$CACHE/ready" ] && [ "$(cat "$CACHE/ready")" = "$stamp" ] && [ -f "$CACHE/initrd.gz" ]; then
	exit 0
fi
rm -f "$CACHE/ready"
build_initramfs
ln -sf "kroot/boot/vmlinuz-$KV" "$CACHE/vmlinuz"
echo "$stamp" > "$CACHE/ready"
echo "vm-prepare: kernel $KV, initramfs $(du -k "$CACHE/initrd.gz" | cut -f1) KiB in $CACHE"
