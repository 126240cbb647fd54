#!/bin/bash
# test-demo-board.sh RAILMON SRCDIR - `railmon demo --board FILE` with the
# sections of cli/demo.ini in another order: a Modbus bus first, the CAN
# trace second.  The demo names the trace it replays (the first CAN bus's
# file), not the bytes of the Modbus bus's configuration read as a CAN
# one's (the union member of bus 0 of the board).
set -euo pipefail
RAILMON=$1
SRC=$2
. "$(dirname "$0")/../lib/lib.sh"
lib_init demo-board
fail() { echo "FAIL: $*"; cat "$T/demo.err" 2>/dev/null || true; exit 1; }

# the demo board with [modbus traction] moved before [can vehicle], paths
# made absolute (the board is read from $T)
"$PY" - "$SRC/cli/demo.ini" "$SRC/cli" "$T/board.ini" <<'PY'
import sys
src, cli, out = sys.argv[1:4]
s = open(src).read().replace("demo/train.", cli + "/demo/train.").replace("demo/consist.", cli + "/demo/consist.")
i, j, k = s.index("[can vehicle]"), s.index("[modbus traction]"), s.index("[channel ")
open(out, "w").write(s[:i] + s[j:k] + s[i:j] + s[k:])
PY
grep -n '^\[' "$T/board.ini" | head -3
"$RAILMON" demo --board "$T/board.ini" --duration 1 --no-live --data "$T/log" > "$T/demo.out" 2> "$T/demo.err" ||
	fail "railmon demo exited non-zero"
line=$(grep -a '^railmon demo: simulated Modbus devices' "$T/demo.err") || fail "no line naming the sources"
echo "$line"
case "$line" in
*", CAN trace $SRC/cli/demo/train.log, log in $T/log") ;;
*) fail "the sources line does not name the board's CAN trace" ;;
esac
grep -q 'railmon demo: stopped after' "$T/demo.out" || fail "no closing line"
echo PASS
