#!/bin/bash
# SPDX-License-Identifier: MIT
# test-install.sh BUILD PREFIX SOURCE - `meson install` as a package installs
# it (DESTDIR), and the installed tree works with no source tree:
#   - the files: binary, unit, sysusers.d, tmpfiles.d, railmon.proto, demo
#     board + trace + DBC, example boards and DBCs, a man page per command
#     (the build's), bash completion;
#   - the unit runs this prefix's binary, and each page its Documentation=
#     names is installed;
#   - systemd-sysusers and systemd-tmpfiles (--root: the DESTDIR) create the
#     user railmon and /var/lib/railmon 0750 railmon:railmon from the entries;
#   - the udev rule, the unit and the groups agree (check-udev.sh);
#   - the installed railmon, run from a directory outside any tree:
#     `demo` finds its board in the installed data (RAILMON_PKGDATADIR
#     pointing into the DESTDIR) and stores records; without it, it looks in
#     PREFIX/share/railmon and nowhere near the source tree; `check` passes
#     on every installed example board.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
BUILD=$1 PREFIX=$2 SRC=$3
lib_init install
fail() { echo "FAIL: $*"; exit 1; }
root=$T/root
meson install -C "$BUILD" --no-rebuild --destdir "$root" --quiet >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; fail "meson install"; }
p=$root$PREFIX
share=$p/share/railmon

want=(bin/railmon share/railmon/demo.ini share/railmon/demo/train.log share/railmon/demo/train.dbc share/railmon/demo/consist.xml
      share/railmon/railmon.proto share/railmon/vehicles/emu-regional.ini share/railmon/vehicles/loco-tcp.ini
      share/railmon/vehicles/emu-traction.dbc share/railmon/vehicles/loco-engine.dbc
      lib/sysusers.d/railmon.conf lib/tmpfiles.d/railmon.conf share/bash-completion/completions/railmon
      lib/udev/rules.d/60-railmon.rules
      share/man/man1/railmon.1)
for f in "${want[@]}"; do [ -f "$p/$f" ] || fail "not installed: $PREFIX/$f"; done
unit=$(find "$root" -name railmon.service)
[ -n "$unit" ] || fail "railmon.service not installed"
cmp -s "$SRC/record/railmon.proto" "$share/railmon.proto" || fail "railmon.proto differs from record/'s"
# every page the build made, and only those
diff <(ls "$BUILD/man/man1") <(ls "$p/share/man/man1") || fail "installed man pages differ from the build's"
[ "$(ls "$p/share/man/man1" | wc -l)" -ge 15 ] || fail "fewer than 15 man pages"

grep -qx "ExecStart=$PREFIX/bin/railmon run --board .*" "$unit" || fail "ExecStart is not $PREFIX/bin/railmon: $(grep ExecStart "$unit")"
docs=$(sed -n 's/^Documentation=//p' "$unit")
[ -n "$docs" ] || fail "no Documentation= in the unit"
for d in $docs; do
	case $d in
	man:*) page=${d#man:}; f="$p/share/man/man${page//[^0-9]/}/${page%(*}.${page//[^0-9]/}"
	       [ -f "$f" ] || fail "Documentation=$d: $f not installed" ;;
	*) fail "Documentation=$d: not a man page this install has" ;;
	esac
done

# the entries, read by systemd's own tools into the DESTDIR
mkdir -p "$root/etc"
systemd-sysusers --root="$root" "$p/lib/sysusers.d/railmon.conf" >"$T/sysusers.log" 2>&1 ||
	{ cat "$T/sysusers.log"; fail "systemd-sysusers refused the entry"; }
uid=$(awk -F: '$1 == "railmon" { print $3 }' "$root/etc/passwd")
[ -n "$uid" ] || fail "no user railmon in $root/etc/passwd"
grep -q '^dialout:.*railmon' "$root/etc/group" || fail "railmon is not in group dialout"
bash "$(dirname "$0")/check-udev.sh" "$p/lib/udev/rules.d/60-railmon.rules" "$unit" "$root/etc/group" >"$T/udev.out" ||
	{ cat "$T/udev.out"; exit 1; }
systemd-tmpfiles --root="$root" --create "$p/lib/tmpfiles.d/railmon.conf" >"$T/tmpfiles.log" 2>&1 ||
	{ cat "$T/tmpfiles.log"; fail "systemd-tmpfiles refused the entry"; }
[ "$(stat -c '%a %u' "$root/var/lib/railmon")" = "750 $uid" ] ||
	fail "/var/lib/railmon is $(stat -c '%a %u' "$root/var/lib/railmon"), not 750 $uid"

# the installed binary, away from the source and build trees
mkdir "$T/work"
cd "$T/work"
RAILMON_PKGDATADIR=$share "$p/bin/railmon" demo --duration 3 --no-live --data "$T/demo" >"$T/demo.out" 2>"$T/demo.err" ||
	{ cat "$T/demo.err"; fail "installed railmon demo"; }
grep -q "CAN trace $share/demo/train.log" "$T/demo.err" || fail "demo did not use the installed data: $(cat "$T/demo.err")"
n=$(sed -n 's/.*: \([0-9]*\) records stored.*/\1/p' "$T/demo.out")
[ "${n:-0}" -gt 100 ] || fail "installed demo stored ${n:-no} records"
# no RAILMON_PKGDATADIR: the compiled-in PREFIX/share/railmon, never the source tree
"$p/bin/railmon" demo --duration 1 --no-live --data "$T/demo2" >"$T/demo2.out" 2>"$T/demo2.err" || true
grep -q "$PREFIX/share/railmon/demo" "$T/demo2.err" || fail "without RAILMON_PKGDATADIR: $(cat "$T/demo2.err")"
! grep -q "$SRC" "$T/demo2.err" || fail "the installed binary used the source tree: $(cat "$T/demo2.err")"
for b in "$share"/vehicles/*.ini "$share/demo.ini"; do
	"$p/bin/railmon" check --board "$b" --data "$T/check" >"$T/check.out" 2>&1 ||
		{ cat "$T/check.out"; fail "railmon check --board $b"; }
done
cat "$T/udev.out"
echo "installed ${#want[@]} files and $(ls "$p/share/man/man1" | wc -l) man pages; user railmon uid $uid; demo: $n records from the installed data; check passed on $(ls "$share"/vehicles/*.ini | wc -l) example boards and demo.ini"
