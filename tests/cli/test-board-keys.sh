#!/bin/bash
# test-board-keys.sh RAILMON DOC - the key reference is current:
# docs/board-keys.md (DOC) is exactly what `railmon check --keys --markdown`
# prints from the tables that parse board files (conf/config-schema.c),
# and the plain `--keys` lists the same sections and keys.
set -u
RAILMON=$1
DOC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init board-keys
fail() { echo "FAIL: $*"; exit 1; }

"$RAILMON" check --keys --markdown > "$T/keys.md" || fail "railmon check --keys --markdown failed"
if ! diff -u "$DOC" "$T/keys.md"; then
	echo "FAIL: docs/board-keys.md is not current. Regenerate it with"
	echo "  build/cli/railmon check --keys --markdown > docs/board-keys.md"
	exit 1
fi
"$RAILMON" check --keys > "$T/keys.txt" || fail "railmon check --keys failed"
grep -o '^| `[a-z_0-9]*`' "$DOC" | tr -d '|` ' > "$T/md-keys"
grep -oE '^  [a-z_0-9]+:' "$T/keys.txt" | tr -d ': ' > "$T/txt-keys"
[ -s "$T/md-keys" ] || fail "no keys in $DOC"
diff -u "$T/md-keys" "$T/txt-keys" || fail "--keys and --keys --markdown list other keys"
[ "$(grep -c '^## \[' "$DOC")" = "$(grep -c '^\[' "$T/keys.txt")" ] || fail "other sections"
# --markdown alone is a usage error, not the reference
"$RAILMON" check --markdown > /dev/null 2> "$T/err" && fail "--markdown without --keys succeeded"
grep -q -- '--markdown goes with --keys' "$T/err" || fail "--markdown alone: $(cat "$T/err")"
echo "board-keys: $(wc -l < "$T/md-keys") keys in $(grep -c '^## \[' "$DOC") sections, $DOC is current"
