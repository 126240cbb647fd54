#!/bin/bash
# SPDX-License-Identifier: MIT
# test-cross-log.sh - the on-disk log and the Batch codec are the same on
# every target: each target's railmon writes a log (replay of the demo
# trace through the demo board's DBC), and every target's railmon exports
# every log (CSV, JSON lines, candump) byte-identically to what the writer
# itself exports.  Also: the decoded CAN frames and samples agree across
# writers (the same doubles from the same DBC on x86-64, aarch64, armhf).
# Run by tests/run-all.sh after the cross builds (stage cross-log).
#
# usage: test-cross-log.sh SRC TARGET=COMMAND...
#   COMMAND runs that target's railmon, e.g. native=build/cli/railmon
#   aarch64="qemu-aarch64-static build-aarch64/cli/railmon"
set -uo pipefail
SRC=$1; shift
. "$SRC/tests/lib/lib.sh"
lib_init cross-log

fail() { echo "FAIL: $*"; exit 1; }

names=(); declare -A cmd
for a in "$@"; do
	names+=("${a%%=*}"); cmd[${a%%=*}]=${a#*=}
done
[ ${#names[@]} -ge 2 ] || fail "need at least two targets"

# every target writes its own log
for w in "${names[@]}"; do
	# shellcheck disable=SC2086 # COMMAND is a wrapper and a path
	${cmd[$w]} replay "$SRC/cli/demo/train.log" --board "$SRC/cli/demo.ini" \
		-d "$T/log-$w" >"$T/replay-$w.out" 2>&1 || { cat "$T/replay-$w.out"; fail "$w: replay"; }
	# the same number of records on every target (the trace's 8100 frames,
	# their samples, the run's events and Seals)
	n=$(grep -oE '[0-9]+ records stored' "$T/replay-$w.out" | cut -d' ' -f1)
	[ "${n:-0}" -gt 50000 ] && [ "$n" = "${nref:=$n}" ] || { cat "$T/replay-$w.out"; fail "$w: $n records, not $nref"; }
done

# every target reads every log, in every format, as its writer does
for w in "${names[@]}"; do
	# the writer first: its own export is the reference
	for r in "$w" "${names[@]}"; do
		[ "$r" = "$w" ] && [ -e "$T/$w.$w.csv" ] && continue
		for f in csv jsonl candump; do
			# shellcheck disable=SC2086
			${cmd[$r]} export -d "$T/log-$w" -f "$f" -o "$T/$w.$r.$f" 2>"$T/err" ||
				{ cat "$T/err"; fail "$r cannot export $w's log as $f"; }
			if [ "$r" != "$w" ]; then
				cmp "$T/$w.$w.$f" "$T/$w.$r.$f" ||
					fail "$r reads $w's log differently ($f): $(diff "$T/$w.$w.$f" "$T/$w.$r.$f" | head -4)"
			fi
		done
	done
	echo "log written on $w: read identically on ${names[*]} ($(wc -l <"$T/$w.$w.csv") CSV lines," \
		"$(wc -c <"$T/$w.$w.jsonl") bytes of JSON lines)"
done

# the same trace decodes to the same frames and samples on every target
# (the START event differs: it carries the wall clock and the pid)
first=${names[0]}
# shellcheck disable=SC2086
# (and the log id: each log has a random one; the CSV's second column)
${cmd[$first]} export -d "$T/log-$first" -k can -k sample 2>/dev/null | cut -d, -f1,3- > "$T/$first.data"
for w in "${names[@]:1}"; do
	# shellcheck disable=SC2086
	${cmd[$first]} export -d "$T/log-$w" -k can -k sample 2>/dev/null | cut -d, -f1,3- > "$T/$w.data"
	cmp "$T/$first.data" "$T/$w.data" ||
		fail "$w decodes the trace differently from $first: $(diff "$T/$first.data" "$T/$w.data" | head -4)"
done
echo "decoded frames and samples: identical from ${names[*]} ($(wc -l <"$T/$first.data") lines)"
echo "cross-log: ok"
