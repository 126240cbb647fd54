#!/bin/bash
# test-cli-usage.sh RAILMON - what a usage error prints (issue 28):
#  * every command (the list of `railmon --help`), given an unknown option:
#    getopt's sentence and "see 'railmon CMD --help'", two lines, exit 2 -
#    not the command's whole usage after the sentence;
#  * a bad option value (export --format, summary --gap): its sentence and
#    the same pointer, two lines, exit 2;
#  * a mistyped command: "did you mean export?" (the nearest command), exit 2;
#    one near nothing: no guess; no command at all: the usage (exit 2);
#  * --help still prints the whole usage on stdout.
set -euo pipefail
RAILMON=$1
. "$(dirname "$0")/../lib/lib.sh"
lib_init cli-usage
fail() { echo "FAIL: $*"; echo "--- stderr"; cat "$T/err"; exit 1; }

# run ARGS...: rc and stderr ($T/err) of railmon ARGS
run() { rc=0; "$RAILMON" "$@" >"$T/out" 2>"$T/err" || rc=$?; }
# two_lines WHAT LAST: exit 2, exactly two lines, the second LAST
two_lines() {
	[ "$rc" = 2 ] || fail "$1: exit $rc, want 2"
	[ "$(wc -l <"$T/err")" = 2 ] || fail "$1: $(wc -l <"$T/err") lines on stderr, want 2"
	[ "$(tail -n 1 "$T/err")" = "$2" ] || fail "$1: last line '$(tail -n 1 "$T/err")', want '$2'"
}

cmds=$("$RAILMON" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF > 1 {print $1}')
[ "$(echo "$cmds" | wc -w)" -ge 16 ] || fail "railmon --help lists $(echo "$cmds" | wc -w) commands"
for c in $cmds; do
	run "$c" --no-such-option
	two_lines "$c --no-such-option" "see 'railmon $c --help'"
	grep -q -- "--no-such-option" "$T/err" || fail "$c: the sentence does not name the option"
	run "$c" --help
	grep -q "^Usage: railmon $c" "$T/out" || fail "$c --help: no usage on stdout"
done
echo "ok: $(echo "$cmds" | wc -w) commands: an unknown option is its sentence and the --help pointer"

run export --format xx
two_lines "export --format xx" "see 'railmon export --help'"
grep -q "^railmon export: --format: expected .*, not 'xx'$" "$T/err" || fail "export --format xx: no sentence"
run summary --gap xx
two_lines "summary --gap xx" "see 'railmon summary --help'"
grep -q "^railmon summary: --gap: " "$T/err" || fail "summary --gap xx: no sentence"
echo "ok: a bad option value is its sentence and the --help pointer"

for typo in exprot:export sumary:summary recieve:recv chanels:channels Export:export; do
	run "${typo%%:*}"
	two_lines "${typo%%:*}" "see 'railmon --help'"
	[ "$(head -n 1 "$T/err")" = "railmon: unknown command '${typo%%:*}'; did you mean ${typo##*:}?" ] ||
		fail "${typo%%:*}: '$(head -n 1 "$T/err")'"
done
run xyzzyq
two_lines xyzzyq "see 'railmon --help'"
[ "$(head -n 1 "$T/err")" = "railmon: unknown command 'xyzzyq'" ] || fail "xyzzyq: a guess: '$(head -n 1 "$T/err")'"
echo "ok: a mistyped command gets the nearest one"

run
[ "$rc" = 2 ] && grep -q "^Commands:" "$T/err" || fail "no command: exit $rc, or no usage"
echo "ok: no command: the usage"

# stat of a directory with neither a daemon's socket nor a log: exit 1 with
# one sentence naming it (it used to exit 1 without a word)
run stat --data "$T/no-such-dir"
[ "$rc" = 1 ] || fail "stat of a missing directory: exit $rc, want 1"
[ "$(wc -l <"$T/err")" = 1 ] && grep -q "$T/no-such-dir: no daemon running on it and no log to read" "$T/err" ||
	fail "stat of a missing directory: '$(cat "$T/err")'"
echo "ok: stat of a missing directory says so"
