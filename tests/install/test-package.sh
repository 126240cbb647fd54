#!/bin/bash
# SPDX-License-Identifier: MIT
# test-package.sh SRC OUT [ARCH...] - the Debian package, as tests/run-all.sh's
# stage 'package' runs it (as root; it installs into this machine and takes
# it all out again on every exit path):
#   1. dpkg-buildpackage -b from a copy of SRC's files (git ls-files), in OUT;
#      lintian on it, failing on any error or warning (the justified ones are
#      debian/railmon.lintian-overrides);
#   2. apt-get install ./railmon_*.deb, then from the installed paths, in a
#      directory outside any tree: `railmon demo --duration 5` (its board,
#      trace and DBC from /usr/share/railmon), `railmon check` on every
#      installed example board; the man pages, the completion, the user
#      railmon and /var/lib/railmon 0750 from the postinst, the unit verified
#      by systemd-analyze with its Documentation= installed; the udev rule
#      (/lib/udev/rules.d/60-railmon.rules, as install/railmon.udev), the
#      unit and the group railmon-hw agree (check-udev.sh), and udev's own
#      rule engine (udevadm test) applies it to this machine's
#      /dev/cpu_dma_latency: group railmon-hw, 0660, and the user railmon
#      opens it for writing (its mode and owner are put back on every exit);
#   3. apt-get purge: every file of the package gone, the empty log
#      directory too; the user railmon and the groups railmon and railmon-hw
#      are deleted by this script if it made them (Debian keeps them), so
#      later stages see the machine
#      as before;
#   4. for each ARCH (arm64): dpkg-buildpackage -a ARCH -Pcross,nocheck,
#      pkg.railmon.noground, lintian, and the packaged binary run under
#      qemu-user (check on the example boards, the demo).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd) # the test cds away from the tree below
. "$HERE/../lib/lib.sh"
SRC=$1 OUT=$2
shift 2
ARCHES=("$@")
lib_init package
fail() { echo "FAIL: $*"; exit 1; }
# set -e stops at a failing command: say which
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND"' ERR
[ "$(id -u)" = 0 ] || fail "the package test installs a package: it must run as root"
dpkg -s railmon >/dev/null 2>&1 && fail "a railmon package is installed on this machine already: not touching it"

had_user=0; getent passwd railmon >/dev/null && had_user=1
had_group=0; getent group railmon >/dev/null && had_group=1
had_hwgroup=0; getent group railmon-hw >/dev/null && had_hwgroup=1
had_dir=0; [ -e /var/lib/railmon ] && had_dir=1
installed=0
qos_was=""
package_cleanup() {
	# udevadm test below changed the real device: as it was
	if [ -n "$qos_was" ]; then
		chown "${qos_was#* }" /dev/cpu_dma_latency || true
		chmod "${qos_was%% *}" /dev/cpu_dma_latency || true
	fi
	if [ $installed = 1 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq railmon >/dev/null 2>&1 || dpkg --purge railmon >/dev/null 2>&1 || true
	fi
	[ $had_user = 1 ] || userdel railmon 2>/dev/null || true
	[ $had_group = 1 ] || groupdel railmon 2>/dev/null || true
	[ $had_hwgroup = 1 ] || groupdel railmon-hw 2>/dev/null || true
	[ $had_dir = 1 ] || rmdir /var/lib/railmon 2>/dev/null || true
	lib_cleanup
}
trap package_cleanup EXIT

build() { # ARCH ('' native) DPKG-BUILDPACKAGE-ARGS...
	local arch=$1 dir t0=$SECONDS
	shift
	dir=$OUT/${arch:-native}
	rm -rf "$dir"
	mkdir -p "$dir/src"
	git -C "$SRC" ls-files -co --exclude-standard | tar -C "$SRC" -cf - -T - | tar -xf - -C "$dir/src"
	(cd "$dir/src" && dpkg-buildpackage -us -uc -b "$@") >"$dir/build.log" 2>&1 ||
		{ tail -40 "$dir/build.log"; fail "dpkg-buildpackage ${arch:+-a $arch} (log: $dir/build.log)"; }
	lintian --pedantic --fail-on error,warning "$dir"/railmon_*.changes >"$dir/lintian.log" 2>&1 ||
		{ cat "$dir/lintian.log"; fail "lintian ${arch:-native}"; }
	# the packages and logs stay in OUT, not the copy and its build tree
	rm -rf "$dir/src"
	echo "package ${arch:-native}: $(cd "$dir" && ls railmon_*.deb) built in $((SECONDS - t0)) s, lintian --pedantic: $(grep -c '^[EW]:' "$dir/lintian.log" || true) errors and warnings, $(grep -c '^[IP]:' "$dir/lintian.log" || true) info and pedantic tags"
}

build ""
deb=$(ls "$OUT"/native/railmon_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
[[ $depends == *libmodbus5* ]] || fail "no shlibs dependencies in $depends"

DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >"$T/apt.log" 2>&1 || { installed=1; cat "$T/apt.log"; fail "apt-get install $deb"; }
installed=1
dpkg -L railmon | sort >"$T/files"
[ "$(command -v railmon)" = /usr/bin/railmon ] || fail "railmon is $(command -v railmon), not /usr/bin/railmon"

mkdir "$T/work"
cd "$T/work"
railmon demo --duration 5 --data "$T/demo" >"$T/demo.out" 2>"$T/demo.err" || { cat "$T/demo.err"; fail "railmon demo"; }
grep -q "CAN trace /usr/share/railmon/demo/train.log" "$T/demo.err" || fail "demo not from /usr/share/railmon: $(cat "$T/demo.err")"
n=$(sed -n 's/.*: \([0-9]*\) records stored.*/\1/p' "$T/demo.out")
[ "${n:-0}" -gt 100 ] || fail "the installed demo stored ${n:-no} records"
railmon export --data "$T/demo" --format csv >"$T/export.csv" 2>"$T/export.err" || { cat "$T/export.err"; fail "railmon export of the demo's log"; }
[ "$(wc -l <"$T/export.csv")" -gt 100 ] || fail "export of the demo's log: $(wc -l <"$T/export.csv") lines"
boards=0
for b in /usr/share/railmon/vehicles/*.ini /usr/share/railmon/demo.ini; do
	railmon check --board "$b" --data "$T/check" >"$T/check.out" 2>&1 || { cat "$T/check.out"; fail "railmon check --board $b"; }
	boards=$((boards + 1))
done
[ $boards -ge 3 ] || fail "only $boards boards installed"

man -w railmon-run >/dev/null || fail "man railmon-run: no page"
MANWIDTH=100 man railmon-demo >"$T/man.txt" 2>&1 || fail "man railmon-demo: $(cat "$T/man.txt")"
grep -q -- '--duration' "$T/man.txt" || fail "man railmon-demo has no --duration"
bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader railmon; complete -p railmon' >/dev/null 2>&1 ||
	fail "bash-completion does not load the railmon completion"

uid=$(id -u railmon) || fail "postinst made no user railmon"
[[ " $(id -nG railmon) " == *" dialout "* ]] || fail "railmon is not in group dialout"
[ "$(stat -c '%a %U %G' /var/lib/railmon)" = "750 railmon railmon" ] ||
	fail "/var/lib/railmon is $(stat -c '%a %U %G' /var/lib/railmon)"
unit=$(grep '/railmon.service$' "$T/files")
systemd-analyze verify "$unit" >"$T/verify.log" 2>&1 || { cat "$T/verify.log"; fail "systemd-analyze verify $unit"; }
rules=$(grep '/60-railmon.rules$' "$T/files") || fail "the package has no udev rule 60-railmon.rules"
[ "$rules" = /lib/udev/rules.d/60-railmon.rules ] || fail "the udev rule is $rules, not in /lib/udev/rules.d"
cmp -s "$rules" "$SRC/install/railmon.udev" || fail "$rules differs from install/railmon.udev"
bash "$HERE/check-udev.sh" "$rules" "$unit" /etc/group >"$T/udev.out" || { cat "$T/udev.out"; exit 1; }
udev_line=$(cat "$T/udev.out")
udev_applied="no /dev/cpu_dma_latency on this machine: not applied"
if [ -c /dev/cpu_dma_latency ] && [ -e /sys/devices/virtual/misc/cpu_dma_latency ]; then
	qos_was=$(stat -c '%a %u:%g' /dev/cpu_dma_latency)
	udevadm test --action=add /sys/devices/virtual/misc/cpu_dma_latency >"$T/udevadm.log" 2>&1 ||
		{ cat "$T/udevadm.log"; fail "udevadm test on /dev/cpu_dma_latency"; }
	[ "$(stat -c '%a %G' /dev/cpu_dma_latency)" = "660 railmon-hw" ] ||
		{ grep -i 'railmon\|cpu_dma' "$T/udevadm.log"; fail "after udevadm test /dev/cpu_dma_latency is $(stat -c '%a %G' /dev/cpu_dma_latency), not 660 railmon-hw"; }
	setpriv --reuid=railmon --regid=railmon --init-groups sh -c 'exec 3>/dev/cpu_dma_latency' 2>"$T/open.err" ||
		fail "user railmon cannot open /dev/cpu_dma_latency for writing: $(cat "$T/open.err")"
	udev_applied="udevadm test: /dev/cpu_dma_latency (was $qos_was) 660 railmon-hw, opened for writing by user railmon"
fi
score=$(systemd-analyze security --offline=true "$unit" 2>/dev/null | sed -n 's/.*Overall exposure level for railmon.service: //p')
echo "installed: $(wc -l <"$T/files") paths; demo: $n records from /usr/share/railmon; check: $boards boards; user railmon uid $uid; unit verified, exposure $score"
echo "$udev_line"
echo "$udev_applied"

DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq railmon >"$T/purge.log" 2>&1 || { cat "$T/purge.log"; fail "apt-get purge railmon"; }
installed=0
left=()
while read -r f; do
	[ -e "$f" ] && [ ! -d "$f" ] && left+=("$f")
done <"$T/files"
[ ${#left[@]} = 0 ] || fail "left after purge: ${left[*]}"
[ $had_dir = 1 ] || [ ! -e /var/lib/railmon ] || fail "the empty /var/lib/railmon is left after purge"
[ ! -e /etc/systemd/system/multi-user.target.wants/railmon.service ] || fail "the unit's enable link is left after purge"
echo "purged: no file of the package left"

for arch in "${ARCHES[@]}"; do
	DEB_BUILD_OPTIONS="nocheck${DEB_BUILD_OPTIONS:+ $DEB_BUILD_OPTIONS}" build "$arch" -a "$arch" -Pcross,nocheck,pkg.railmon.noground
	deb=$(ls "$OUT/$arch"/railmon_*_"$arch".deb)
	[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "$deb: Architecture $(dpkg-deb -f "$deb" Architecture)"
	depends=$(dpkg-deb -f "$deb" Depends)
	[[ $depends == *libmodbus5* ]] || fail "$deb: no shlibs dependencies"
	rm -rf "$T/$arch" && dpkg-deb -x "$deb" "$T/$arch"
	qemu=qemu-$(dpkg-architecture -a "$arch" -qDEB_HOST_GNU_CPU 2>/dev/null)-static
	[ "$(ls "$T/$arch/usr/share/man/man1" | wc -l)" -ge 15 ] || fail "$deb: fewer than 15 man pages"
	for b in "$T/$arch"/usr/share/railmon/vehicles/*.ini; do
		"$qemu" "$T/$arch/usr/bin/railmon" check --board "$b" --data "$T/check" >"$T/check.out" 2>&1 ||
			{ cat "$T/check.out"; fail "$arch: railmon check --board $b"; }
	done
	RAILMON_PKGDATADIR=$T/$arch/usr/share/railmon "$qemu" "$T/$arch/usr/bin/railmon" demo --duration 3 --no-live \
		--data "$T/demo-$arch" >"$T/demo.out" 2>"$T/demo.err" || { cat "$T/demo.err"; fail "$arch: railmon demo"; }
	n=$(sed -n 's/.*: \([0-9]*\) records stored.*/\1/p' "$T/demo.out")
	[ "${n:-0}" -gt 100 ] || fail "$arch: the packaged demo stored ${n:-no} records"
	echo "package $arch: $(dpkg-deb -f "$deb" Depends | tr -d '\n'); under $qemu: check on the example boards, demo $n records"
done
