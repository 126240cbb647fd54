#!/bin/sh
# SPDX-License-Identifier: MIT
#
# vm-init.sh - PID 1 of the CAN test VM (packed into the initramfs by
# vm-prepare.sh, booted by vm-run.sh).
#
# Sets up what the SocketCAN tests need, runs one command in a chroot of the
# host's root filesystem (shared read-only over 9p, so host-built binaries,
# their libraries and can-utils run unchanged) and powers off.  The host's
# results directory is shared read-write over 9p: the command's stdout,
# stderr and exit status are written there for vm-run.sh.
#
# Kernel command line: railmon.results=<absolute host path of the results
# dir>.  The share is mounted at that same path inside the chroot, so paths
# are identical on both sides; <results>/cmd.sh is what runs.
#
# Any setup failure is reported on the console and in <results>/setup-error
# (when the share is up) and stops the VM without an rc file, which vm-run.sh
# turns into a failure.
export PATH=/bin
R=/hostroot

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

RES=
for w in $(cat /proc/cmdline); do
	case $w in railmon.results=*) RES=${w#railmon.results=} ;; esac
done

RES_UP=0
fail() {
	echo "VM-SETUP: FAIL: $*"
	[ $RES_UP = 1 ] && echo "$*" > /results/setup-error && sync
	poweroff -f
	exit 1 # not reached: poweroff -f does not return
}

load() { # $1 = module list written by vm-prepare.sh, in dependency order
	while read -r m; do
		insmod "/lib/modules/$m" || fail "insmod $m"
	done < "$1"
}

[ -n "$RES" ] || fail "no railmon.results= on the kernel command line"
O=trans=virtio,version=9p2000.L,msize=524288
load /etc/modules-9p.list
mount -t 9p -o $O results /results || fail "mount 9p share 'results'"
RES_UP=1

load /etc/modules-can.list
ip link set lo up || fail "lo up"
# vcan defaults to MTU 72 already; set it anyway so classic-only kernels
# would fail here rather than in a test.
for dev in vcan0 vcan1; do
	ip link add dev $dev type vcan || fail "ip link add $dev type vcan"
	ip link set $dev mtu 72 || fail "$dev mtu 72 (CAN FD)"
	ip link set $dev up || fail "$dev up"
done

mount -t 9p -o $O,ro hostroot $R || fail "mount 9p share 'hostroot'"
mount -t proc proc $R/proc || fail "mount $R/proc"
mount -t sysfs sysfs $R/sys || fail "mount $R/sys"
mount -t devtmpfs devtmpfs $R/dev || fail "mount $R/dev"
mkdir -p $R/dev/shm $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm || fail "mount $R/dev/shm"
mount -t devpts devpts $R/dev/pts || fail "mount $R/dev/pts"
# what udev would add: /dev/fd (bash's <(...), tests/lib/lib.sh's sleep) and
# the standard streams
ln -sfn /proc/self/fd $R/dev/fd
for i in 0 1 2; do ln -sfn /proc/self/fd/$i $R/dev/$(echo stdin stdout stderr | cut -d' ' -f$((i + 1))); done
mount -o bind /results "$R$RES" || fail "bind results share to $RES"
[ -f /results/cmd.sh ] || fail "no cmd.sh in the results share"

chroot $R /bin/bash "$RES/cmd.sh" > /results/stdout 2> /results/stderr
echo $? > /results/rc.tmp && mv /results/rc.tmp /results/rc
sync
umount "$R$RES" 2>/dev/null
umount /results
poweroff -f
