#!/bin/bash
# SPDX-License-Identifier: MIT
# check-udev.sh RULES UNIT GROUP_FILE - the udev rule, the unit and the
# users agree (sourced by test-install.sh on the DESTDIR and by
# test-package.sh on the installed package; prints one line, exits 1 on a
# disagreement):
#   - the rule gives /dev/cpu_dma_latency (misc), the legacy /dev/watchdog
#     (misc) and every /dev/watchdogN (class watchdog) to one group, mode
#     0660, and does nothing else;
#   - that group is not railmon (the log readers' group) and is one the
#     unit runs with (Group= or SupplementaryGroups=);
#   - GROUP_FILE (/etc/group) has it, with the user railmon in it;
#   - the unit's DeviceAllow= lets each of those devices through.
set -euo pipefail
RULES=$1 UNIT=$2 GROUPS_FILE=$3
cfail() { echo "FAIL: $RULES: $*"; exit 1; }
[ -f "$RULES" ] || cfail "not installed"
declare -A seen
group=""
while IFS= read -r line; do
	[[ $line =~ ^[[:space:]]*(#|$) ]] && continue
	[[ $line =~ SUBSYSTEM==\"([a-z]+)\",\ KERNEL==\"([^\"]+)\",\ GROUP=\"([^\"]+)\",\ MODE=\"([0-7]+)\"$ ]] ||
		cfail "a line that is not SUBSYSTEM==, KERNEL==, GROUP=, MODE=: $line"
	sub=${BASH_REMATCH[1]} kern=${BASH_REMATCH[2]} g=${BASH_REMATCH[3]} mode=${BASH_REMATCH[4]}
	[ "$mode" = 0660 ] || cfail "$kern: MODE=$mode, not 0660"
	[ -z "$group" ] || [ "$group" = "$g" ] || cfail "two groups: $group and $g"
	group=$g
	seen[$sub/$kern]=1
done <"$RULES"
for d in misc/cpu_dma_latency misc/watchdog 'watchdog/watchdog[0-9]*'; do
	[ -n "${seen[$d]:-}" ] || cfail "no line for $d"
done
[ "$group" != railmon ] || cfail "the devices go to group railmon, which investigators join to read the log"
unit_groups=" $(sed -n 's/^\(Group\|SupplementaryGroups\)=//p' "$UNIT" | tr '\n' ' ') "
[[ $unit_groups == *" $group "* ]] || cfail "group $group is not one $UNIT runs with (Group/SupplementaryGroups:$unit_groups)"
members=$(awk -F: -v g="$group" '$1 == g { print $4 }' "$GROUPS_FILE")
grep -q "^$group:" "$GROUPS_FILE" || cfail "no group $group in $GROUPS_FILE"
[[ ",$members," == *",railmon,"* ]] || cfail "user railmon is not in group $group ($GROUPS_FILE: '$members')"
for dev in /dev/cpu_dma_latency /dev/watchdog; do
	grep -qx "DeviceAllow=$dev rw" "$UNIT" || cfail "$UNIT has no DeviceAllow=$dev rw"
done
echo "udev rule: /dev/cpu_dma_latency, /dev/watchdog and /dev/watchdogN to group $group 0660; the unit runs with $group and allows the devices; railmon is a member"
