#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-man.py RAILMON MANDIR - the man pages match the help texts.

For `railmon --help` and every command it lists: DIR/railmon[-CMD].1
exists; every option of the help text (its option lines and Usage lines,
long and short) is in the page; every --option the page names is in the
help text (a page left over from an older binary fails); the page renders
with no warning from man (what lintian checks).  A page of no command
fails too.  Every mismatch is printed, then the test exits 1."""
import os
import re
import subprocess
import sys

COMMAND_LINE = re.compile(r"^  ([a-z][a-z0-9-]*) +\S")
LONG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
SHORT = re.compile(r"^\s+(-[A-Za-z0-9])[, ]")


def help_text(railmon, cmd):
    r = subprocess.run([railmon] + ([cmd] if cmd else []) + ["--help"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        sys.exit("railmon %s --help: exit %d, %r" % (cmd or "", r.returncode, r.stderr))
    return r.stdout


def help_options(text):
    """The options a help text declares: on its option lines and Usage lines."""
    opts = set()
    for line in text.splitlines():
        if re.match(r"^\s+-", line):
            m = SHORT.match(line)
            if m:
                opts.add(m.group(1))
            # the option column: up to the first run of spaces before the text
            opts.update(LONG.findall(re.split(r"\s{2,}", line.strip())[0]))
        elif line.startswith("Usage:") or re.match(r"^\s+railmon ", line):
            opts.update(LONG.findall(line))
    return opts


def man_plain(path):
    """The page as text: roff's \\- as -, font escapes gone."""
    with open(path) as f:
        roff = f.read()
    roff = roff.replace("\\-", "-")
    roff = re.sub(r"\\f[BIRP]|\\,|\\/|\\&", "", roff)
    return roff


def man_warnings(path):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    r = subprocess.run(["man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", path], capture_output=True,
                       text=True, env=env)
    return r.stderr.strip() if r.returncode == 0 else "man exit %d: %s" % (r.returncode, r.stderr.strip())


def main():
    railmon, mandir = sys.argv[1], sys.argv[2]
    top = help_text(railmon, None)
    cmds, inside = [], False
    for line in top.splitlines():
        if line.startswith("Commands:"):
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            m = COMMAND_LINE.match(line)
            if m:
                cmds.append(m.group(1))
    bad, checked = [], 0
    if len(cmds) < 10:
        bad.append("`railmon --help` lists %d commands: %s" % (len(cmds), cmds))
    pages = {"railmon.1": None}
    pages.update({"railmon-%s.1" % c: c for c in cmds})
    for page, cmd in pages.items():
        path = os.path.join(mandir, page)
        if not os.path.exists(path):
            bad.append("%s: missing (command %s)" % (path, cmd))
            continue
        text = help_text(railmon, cmd) if cmd else top
        plain = man_plain(path)
        want = help_options(text)
        if cmd and not want:
            bad.append("railmon %s --help: no options found (help text format changed?)" % cmd)
        man_opts = set(LONG.findall(plain))
        plain_words = set(re.findall(r"(?<![\w-])-[A-Za-z0-9](?![\w-])", plain)) | man_opts
        for o in sorted(want - plain_words):
            bad.append("%s: option %s of `railmon %s --help` is not in the page" % (page, o, cmd or ""))
        for o in sorted(man_opts - set(LONG.findall(text))):
            bad.append("%s: names %s, which `railmon %s --help` does not have" % (page, o, cmd or ""))
        w = man_warnings(path)
        if w:
            bad.append("%s: man warns: %s" % (page, w))
        checked += len(want)
    for f in sorted(os.listdir(mandir)):
        if f not in pages:
            bad.append("%s: a page of no command `railmon --help` lists" % f)
    for b in bad:
        print("FAIL", b)
    print("%d pages, %d options checked against the help texts, %d problems" % (len(pages), checked, len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
