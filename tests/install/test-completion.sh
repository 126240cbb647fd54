#!/bin/bash
# SPDX-License-Identifier: MIT
# test-completion.sh RAILMON COMPLETION - the bash completion against the
# binary's help texts, through bash-completion's own _init_completion:
# every command `railmon --help` lists; for every command, `--` offers every
# long option of its help text and nothing else; option arguments by their
# placeholder (--board: *.ini and directories, --dbc: *.dbc, --data:
# directories, --format: the formats); db's subcommands.
set -euo pipefail
. "$(dirname "$0")/../lib/lib.sh"
RAILMON=$(realpath "$1") COMPLETION=$(realpath "$2")
lib_init completion
fail() { echo "FAIL: $*"; exit 1; }
[ -f /usr/share/bash-completion/bash_completion ] || fail "bash-completion is not installed (tests/deps.sh)"
. /usr/share/bash-completion/bash_completion
. "$COMPLETION"
complete -p railmon >/dev/null || fail "the completion does not register railmon"
comp() { # WORDS...: the completions of the last word
	COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE="${COMP_WORDS[*]}"; COMP_POINT=${#COMP_LINE}; COMPREPLY=()
	_railmon
	printf '%s\n' "${COMPREPLY[@]}" | sort
}
same() { # WHAT EXPECTED ACTUAL
	[ "$2" = "$3" ] || fail "$1: expected [$(echo $2)], got [$(echo $3)]"
}
cmds=$("$RAILMON" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p' | sort)
[ "$(echo "$cmds" | wc -l)" -ge 10 ] || fail "railmon --help lists too few commands: $cmds"
same "railmon <TAB>" "$(printf '%s\n' $cmds --help --version | sort)" "$(comp "$RAILMON" "")"
nopts=0
for c in $cmds; do
	want=$("$RAILMON" "$c" --help | grep -E '^ +-|^Usage:|^ +railmon ' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
	same "railmon $c --<TAB>" "$want" "$(comp "$RAILMON" "$c" --)"
	nopts=$((nopts + $(echo "$want" | wc -l)))
done
cd "$T"
mkdir boards && touch boards/emu.ini boards/bus.dbc boards/notes.txt && mkdir boards/sub
same "check --board" "$(printf '%s\n' boards/emu.ini boards/sub)" "$(comp "$RAILMON" check --board boards/)"
same "run -b" "$(printf '%s\n' boards/emu.ini boards/sub)" "$(comp "$RAILMON" run -b boards/)"
same "replay --dbc" "$(printf '%s\n' boards/bus.dbc boards/sub)" "$(comp "$RAILMON" replay x.log --dbc boards/)"
same "export --data" "boards/sub" "$(comp "$RAILMON" export --data boards/)"
same "export --format" "$(printf '%s\n' asc blf candump csv influx jsonl)" "$(comp "$RAILMON" export --format "")"
same "recv -f" "$(printf '%s\n' candump csv influx jsonl none)" "$(comp "$RAILMON" recv -f "")"
same "decode --format" "$(printf '%s\n' csv jsonl text)" "$(comp "$RAILMON" decode --format "")"
same "export --order" "$(printf '%s\n' seq time)" "$(comp "$RAILMON" export --order "")"
same "export --kind" "$(printf '%s\n' can event sample text)" "$(comp "$RAILMON" export --kind "")"
same "watch --sort" "$(printf '%s\n' age id name source)" "$(comp "$RAILMON" watch --sort "")"
same "db" "$(printf '%s\n' init migrate prune status)" "$(comp "$RAILMON" db "")"
same "replay --speed (a number)" "" "$(comp "$RAILMON" replay --speed "")"
echo "$(echo "$cmds" | wc -l) commands, $nopts options and 12 argument kinds complete as the help texts say"
