#!/bin/bash
# test-quickstart.sh SRCDIR - README "Quick start"'s first command, run as a
# new user runs it: `bash cli/demo.sh --duration 5 --no-live` in a fresh
# `git clone` of SRCDIR (its committed HEAD: nothing of this build tree, no
# build-demo/ left from before). demo.sh installs what building needs (a
# no-op where it is all there: tests/deps.sh --build), builds build-demo/
# and runs the demo. Checked: the summary line's figures (records > 0, as
# many as its seq range, 0 ring drops, 0 refused by the log); the log it
# names verifies (its seal chain) and exports every record it said it
# stored; and the closing "try:" commands work exactly as printed.
# Suite 'quickstart': the clone builds railmon from scratch (27 s in all
# here, on 2 shared cores).
set -euo pipefail
SRC=$1
. "$(dirname "$0")/../lib/lib.sh"
lib_init quickstart
demo_log=
trap '[ -z "$demo_log" ] || rm -rf "$demo_log"; lib_cleanup' EXIT
fail() { echo "FAIL: $*"; tail -n 40 "$T/demo.out" 2>/dev/null || true; exit 1; }

git -C "$SRC" rev-parse --git-dir > /dev/null 2>&1 || fail "$SRC is not a git checkout: nothing to clone"
git clone -q "$SRC" "$T/railmon" || fail "git clone $SRC"
echo "clone: $(git -C "$T/railmon" log --oneline -1)"
[ ! -e "$T/railmon/build-demo" ] || fail "the clone already has a build-demo/"

start=$SECONDS
cd "$T/railmon"
start_peer timeout 1200 bash cli/demo.sh --duration 5 --no-live > "$T/demo.out" 2>&1
rc=0
wait "$LIB_PID" || rc=$?
cd "$T"
echo "demo.sh: exit $rc after $((SECONDS - start)) s (build and a 5 s demo)"
[ "$rc" -eq 0 ] || fail "bash cli/demo.sh --duration 5 --no-live exited $rc"
grep -q '^demo.sh: built build-demo/cli/railmon' "$T/demo.out" || fail "demo.sh did not say it built railmon"

demo_log=$(sed -n 's/^log: //p' "$T/demo.out")
[ -n "$demo_log" ] && [ -d "$demo_log" ] || fail "no log directory named on a 'log:' line"
summary=$(grep '^railmon demo: stopped after' "$T/demo.out") || fail "no summary line"
echo "summary: $summary"
re='stopped after ([0-9.]+) s: ([0-9]+) records stored \(seq ([0-9]+)\.\.([0-9]+)\) in ([0-9]+) batches, ([0-9]+) CAN frames, ([0-9]+) Modbus samples and ([0-9]+) TRDP telegrams acquired, ([0-9]+) ring drops, ([0-9]+) records refused by the log'
[[ $summary =~ $re ]] || fail "summary line not in the expected words: $summary"
records=${BASH_REMATCH[2]} first=${BASH_REMATCH[3]} last=${BASH_REMATCH[4]}
frames=${BASH_REMATCH[6]} samples=${BASH_REMATCH[7]} telegrams=${BASH_REMATCH[8]} drops=${BASH_REMATCH[9]} refused=${BASH_REMATCH[10]}
[ "$records" -gt 0 ] || fail "no records stored"
[ "$first" -eq 1 ] && [ $((last - first + 1)) -eq "$records" ] || fail "seq $first..$last is not $records records"
[ "$frames" -gt 0 ] && [ "$samples" -gt 0 ] && [ "$telegrams" -gt 0 ] ||
	fail "CAN frames $frames, Modbus samples $samples, TRDP telegrams $telegrams: all should be > 0"
[ "$drops" -eq 0 ] || fail "$drops ring drops"
[ "$refused" -eq 0 ] || fail "$refused records refused by the log"

RAILMON="$T/railmon/build-demo/cli/railmon"
"$RAILMON" verify --data "$demo_log" --unsigned > "$T/verify.out" 2>&1 || { cat "$T/verify.out"; fail "verify of the demo's log"; }
echo "verify: $(tail -n 1 "$T/verify.out")"
"$RAILMON" export --data "$demo_log" --format csv > "$T/all.csv" 2> "$T/export.err" || { cat "$T/export.err"; fail "export"; }
got=$(($(wc -l < "$T/all.csv") - 1))
[ "$got" -eq "$records" ] || fail "export wrote $got records, the demo said $records"
grep -q "^railmon export: $records records written" "$T/export.err" || fail "export: $(cat "$T/export.err")"
echo "export: $got records, as the summary said"

# the closing hint's commands, exactly as printed (the first line after
# "try: ", then its continuation lines)
sed -n '/^try: /,/^[^ t]/{s/^try: //;s/^     //;/^[^ ]*railmon /p}' "$T/demo.out" > "$T/hint.sh"
[ "$(wc -l < "$T/hint.sh")" -ge 2 ] || fail "no try: commands printed"
while IFS= read -r cmd; do
	bash -c "set -o pipefail; $cmd" > "$T/hint.out" 2> "$T/hint.err" ||
		[ $? -eq 141 ] || { cat "$T/hint.err"; fail "the hint's command failed: $cmd"; } # 141: head closed the pipe
	[ -s "$T/hint.out" ] || fail "the hint's command printed nothing: $cmd"
	echo "hint: $cmd: $(wc -l < "$T/hint.out") lines"
done < "$T/hint.sh"
echo PASS
