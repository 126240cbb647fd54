#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-short-options.py RAILMON SRC - every short option means one thing
across all commands (issue 28).

The truth is the source: each command's getopt_long option table (cli/*.c,
`{ "long", ..., NULL, 'x' }`) and its optstring (which letters are accepted
short).  For every letter the long options it stands for are collected over
all commands; a letter standing for two long options is a conflict, and so
is one long option under two letters (as recv -T was, with -t elsewhere, for --duration).

Issue 28 resolved the ten conflicts there were; KNOWN and KNOWN_LONG are
empty and any conflict fails (a new command or option reusing a letter).
The one table of letters is cli/README.md's: every letter a command accepts
must be its row's long option there, with the command listed in the row
("every command" for -h), and every row must be used by some command.  It
also checks that every "-x, --long" line of each command's --help (what
help2man puts in the man page) names the long option the table gives that
letter.
"""
import re
import subprocess
import sys
from pathlib import Path

RAILMON, SRC = sys.argv[1], Path(sys.argv[2])

# letter: {long option: commands} - conflicts tolerated: none since issue 28
# (kept so a conflict, if one is ever accepted, is listed here, said and kept true)
KNOWN = {}

# long option: its letters - one long option under two letters: none
KNOWN_LONG = {}

# the table of short options, written once (cli/README.md): "| `-x` | `--long` | commands |"
ROW = re.compile(r"^\| `-(.)` \| `--([a-z0-9-]+)` \| ([^|]*) \|$", re.M)

ENTRY = re.compile(r'\{\s*"([a-z0-9-]+)",\s*\w+,\s*NULL,\s*\'(.)\'\s*\}')
OPTSTRING = re.compile(r'getopt_long\([^"]*"([^"]*)"')
SEE = re.compile(r'cli_see_help\("([a-z]+)"\)')


def tables():
    """{command: {letter: long}} of the short options each command accepts."""
    out = {}
    for f in sorted((SRC / "cli").glob("*.c")):
        text = f.read_text()
        # one chunk per option table: its entries, its getopt_long, its command
        for chunk in text.split("struct option")[1:]:
            # the command: its cli_see_help, or the file's only one (recv's
            # is in its option parser, above the table)
            see, optstr = SEE.search(chunk), OPTSTRING.search(chunk)
            cmds = set(SEE.findall(text))
            cmd = see.group(1) if see else cmds.pop() if len(cmds) == 1 else None
            assert cmd and optstr, f"{f.name}: an option table without getopt_long or cli_see_help"
            accepted = set(optstr.group(1).replace(":", ""))
            out[cmd] = {c: name for name, c in ENTRY.findall(chunk) if c in accepted}
    return out


def main():
    t = tables()
    commands = re.findall(r"^  ([a-z]+) ", subprocess.run([RAILMON, "--help"], capture_output=True, text=True,
                                                        check=True).stdout.split("Commands:")[1], re.M)
    assert sorted(t) == sorted(commands), f"option tables {sorted(t)} vs railmon --help {sorted(commands)}"
    meaning = {}
    for cmd, opts in t.items():
        for c, name in opts.items():
            meaning.setdefault(c, {}).setdefault(name, set()).add(cmd)
    conflicts = {c: m for c, m in meaning.items() if len(m) > 1}
    bad = []
    for c in sorted(set(conflicts) | set(KNOWN)):
        if conflicts.get(c) != KNOWN.get(c):
            bad.append(f"-{c}: now {conflicts.get(c)}, listed {KNOWN.get(c)}")
    letters = {}
    for opts in t.values():
        for c, name in opts.items():
            letters.setdefault(name, set()).add(c)
    for name, cs in sorted(letters.items()):
        if len(cs) > 1:
            print(f"conflict --{name}: " + ", ".join(f"-{c}" for c in sorted(cs)))
        if (len(cs) > 1 or name in KNOWN_LONG) and cs != KNOWN_LONG.get(name):
            bad.append(f"--{name}: now -{' -'.join(sorted(cs))}, listed {KNOWN_LONG.get(name)}")
    # --help (the man page) says what the table says
    for cmd, opts in t.items():
        text = subprocess.run([RAILMON, cmd, "--help"], capture_output=True, text=True).stdout
        for c, name in re.findall(r"^\s+-([A-Za-z0-9]), --([a-z0-9-]+)", text, re.M):
            if opts.get(c) != name:
                bad.append(f"{cmd} --help: -{c} is --{name}, the table says --{opts.get(c)}")
    # the documented table says the same
    doc = {c: (name, cmds.strip()) for c, name, cmds in ROW.findall((SRC / "cli" / "README.md").read_text())}
    assert doc, "cli/README.md has no table of short options"
    for cmd, opts in t.items():
        for c, name in opts.items():
            if c not in doc:
                bad.append(f"{cmd} -{c} (--{name}) is not in cli/README.md's table")
            elif doc[c][0] != name:
                bad.append(f"{cmd} -{c} is --{name}, cli/README.md's table says --{doc[c][0]}")
    for c, (name, cmds) in doc.items():
        users = sorted(cmd for cmd, opts in t.items() if opts.get(c) == name)
        want = sorted(t) if cmds == "every command" else sorted(x.strip() for x in cmds.split(","))
        if users != want:
            bad.append(f"cli/README.md: -{c} --{name} lists {want}, the commands accepting it are {users}")
    for line in sorted(f"-{c}: " + ", ".join(f"--{n} ({' '.join(sorted(cs))})" for n, cs in sorted(m.items()))
                       for c, m in conflicts.items()):
        print("conflict", line)
    if bad:
        print("FAIL:\n  " + "\n  ".join(bad))
        sys.exit(1)
    print(f"ok: {len(t)} commands, {sum(len(o) for o in t.values())} short options, "
          f"{len(conflicts)} letters in conflict, {len(doc)} letters in cli/README.md's table")


main()
