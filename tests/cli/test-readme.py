#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-readme.py RAILMON SRC [--ground] - the README stays a newcomer's
page whose commands work as written (issue 28).

Static checks (both modes):
- README.md has at most 300 lines;
- its Commands table has one row per command of `railmon --help` (read from
  the binary, so a new command needs its row), each one line of at most 160
  characters linking to docs/commands/<command>.md, which must exist; no row
  for a command the binary does not have;
- every relative link of README.md and docs/**/*.md points to a file or
  folder that exists, and its #anchor (if any) to a heading of that page;
- .ci/run runs exactly the Quick start's test command.

Running (the README's ```sh blocks): a block whose lines start with "$ " is
run command by command, in order, in one scratch directory (with a symlink
cli -> SRC/cli, so cli/demo/... is where the README says) and `railmon` on
PATH being RAILMON. Each command must exit 0, and the lines shown after it
must appear in its output (stdout and stderr), in order; "..." in a shown
line matches anything (abridged or unstable parts). "CMD &" runs in the
background (the next command starts once its shown lines have appeared);
"wait" waits for the background commands, each must exit 0; one still
running at the end of its block (serve) is stopped with SIGTERM and must
exit 0. Heredocs (<<'EOF' ... EOF) belong to their command.
Every other ```sh block must be marked by a comment just before it:
  <!-- readme-test: not run here: WHY -->  (counted and named)
  <!-- readme-test: vehicle: WHY -->       (needs a vehicle: counted, named)
  <!-- readme-test: ground: ... -->        a "$ " block that needs mosquitto
and PostgreSQL: run only with --ground (the ground suite), against a real
mosquitto for localhost:1883 and a throwaway PostgreSQL 15 (PGHOST, PGUSER)
with its database railmon, 127.0.0.1:8080 replaced by a free port. These
two substitutions are the only changes to what the README says.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

RAILMON, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
GROUND = "--ground" in sys.argv[3:]
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from railmon_test import free_port, start_peer, stop_peer, wait_for  # noqa: E402

README = os.path.join(SRC, "README.md")
FAILS = []


def check(cond, what, *context):
    if cond:
        print("ok: " + what)
        return True
    print("FAIL: " + what)
    for c in context:
        print("  " + str(c).rstrip().replace("\n", "\n  "))
    FAILS.append(what)
    return False


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    fence = False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        m = re.match(r"^#{1,6} (.*)$", line)
        if m and not fence:
            s = slug(m.group(1))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else "%s-%d" % (s, n))
        for a in re.findall(r'<a (?:name|id)="([^"]+)"', line):
            out.add(a)
    return out


def links(path):
    """(line number, target) of every markdown link outside code."""
    fence = False
    for no, line in enumerate(open(path, encoding="utf-8"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        line = re.sub(r"`[^`]*`", "", line)  # code spans hold no links
        for t in re.findall(r"\]\(([^)\s]+)\)", line):
            yield no, t


def static_checks():
    text = open(README, encoding="utf-8").read()
    lines = text.split("\n")
    n = len(text.splitlines())
    check(n <= 300, "README.md has %d lines (at most 300)" % n)

    top = subprocess.run([RAILMON, "--help"], capture_output=True, text=True).stdout
    sec = top.split("Commands:", 1)[1].split("\n\n", 1)[0]
    commands = re.findall(r"^  ([a-z][a-z-]*)\s", sec, re.M)
    check(len(commands) >= 10, "railmon --help lists its commands", top)
    start = text.index("\n## Commands\n")
    body = text[start + 1:].split("\n## ", 1)[0]
    rows = [r for r in body.split("\n") if r.startswith("| [`")]
    in_table = {}
    for r in rows:
        m = re.match(r"^\| \[`([a-z-]+)`\]\(docs/commands/([a-z-]+)\.md\) \| (.+) \|$", r)
        check(m and m.group(1) == m.group(2), "Commands row links its page: " + r[:60], r)
        check(len(r) <= 160, "Commands row of %d characters (at most 160): %s" % (len(r), r[:40]))
        if m:
            in_table[m.group(1)] = r
    for c in commands:
        check(c in in_table, "`railmon %s` has a row in the README's Commands table" % c)
        check(os.path.isfile(os.path.join(SRC, "docs", "commands", c + ".md")),
              "`railmon %s` has its page docs/commands/%s.md" % (c, c))
    for c in in_table:
        check(c in commands, "the Commands row %s is a command of railmon --help" % c)
    for c in commands:
        page = os.path.join(SRC, "docs", "commands", c + ".md")
        if not os.path.isfile(page):
            continue
        helptext = subprocess.run([RAILMON, c, "--help"], capture_output=True, text=True).stdout
        sec = open(page, encoding="utf-8").read().split("\n## Options\n", 1)
        listed = set(re.findall(r"^- `(--[a-z][a-z0-9-]*)", sec[1].split("\n## ", 1)[0], re.M)) if len(sec) > 1 else set()
        described = set(re.findall(r"^\s+(?:-\S, )?(--[a-z][a-z0-9-]*)", helptext, re.M))
        check(described <= listed, "docs/commands/%s.md lists every option of `railmon %s --help` (%d)"
              % (c, c, len(described)), "missing: %s" % " ".join(sorted(described - listed)))
        stale = {o for o in listed if o != "--help" and not re.search(re.escape(o) + r"\b", helptext)}
        check(not stale, "docs/commands/%s.md lists no option `railmon %s --help` lacks" % (c, c),
              "not in --help: %s" % " ".join(sorted(stale)))

    pages = [README] + [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(SRC, "docs"))
                        for f in sorted(fs) if f.endswith(".md")]
    bad, count = [], 0
    for p in pages:
        for no, t in links(p):
            if re.match(r"^[a-z][a-z0-9+.-]*:", t):
                continue  # http:, mailto:
            count += 1
            f, _, a = t.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(p), f)) if f else p
            where = "%s:%d: %s" % (os.path.relpath(p, SRC), no, t)
            if not os.path.exists(dest):
                bad.append(where + " (no such file)")
            elif a and dest.endswith(".md") and a not in anchors(dest):
                bad.append(where + " (no such heading)")
    check(not bad, "%d relative links in README.md and docs/ point to what exists" % count, *bad)

    # command lines use long options: short letters may change, long names stay
    shorts = []
    for p in pages:
        fence = None
        for no, line in enumerate(open(p, encoding="utf-8"), 1):
            if line.startswith("```"):
                fence = line[3:].strip() if fence is None else None
                continue
            if fence != "sh":
                continue
            for seg in re.findall(r"(?:^|[|;&(]\s*|\$ )(?:\S*/)?railmon ([^|;&<>#]*)", line):
                for tok in seg.split():
                    if re.match(r"^-[A-Za-z0-9]$", tok):
                        shorts.append("%s:%d: %s" % (os.path.relpath(p, SRC), no, line.strip()))
    check(not shorts, "railmon command lines in README.md and docs/ use long options", *shorts)

    # docs/ground-schema.md says which schema version it describes (a
    # dashboard is built on it): the last migration's, NNNN of the newest
    # ground/migrations/NNNN-name.sql, one file per version from 1
    mig = sorted(f for f in os.listdir(os.path.join(SRC, "ground", "migrations")) if f.endswith(".sql"))
    nums = [int(f.split("-", 1)[0]) for f in mig]
    said = re.findall(r"This file describes version (\d+);",
                      open(os.path.join(SRC, "docs", "ground-schema.md"), encoding="utf-8").read())
    check(nums == list(range(1, len(mig) + 1)) and said == [str(len(mig))],
          "docs/ground-schema.md describes version %d, the last of ground/migrations/" % len(mig), said, mig[-1:])

    qs = text[text.index("\n## Quick start\n"):].split("\n## ", 2)[1]
    cmds = re.findall(r"^(bash tests/\S+)", qs, re.M)
    ci = open(os.path.join(SRC, ".ci", "run")).read()
    check(cmds and re.search(r"exec %s\s*$" % re.escape(cmds[-1]), ci, re.M),
          ".ci/run runs the Quick start's test command (%s)" % (cmds[-1] if cmds else None), ci)


def blocks():
    """The README's ```sh blocks: (kind, why, first line number, lines)."""
    lines = open(README, encoding="utf-8").read().split("\n")
    out, i, mark = [], 0, None
    while i < len(lines):
        m = re.match(r"^<!-- readme-test: ([a-z ]+?)(?::\s*(.*?))?\s*-->$", lines[i])
        if m:
            mark = (m.group(1), m.group(2) or "")
        elif lines[i].startswith("```"):
            info = lines[i][3:].strip()
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            if info == "sh":
                out.append((mark, i + 2, lines[i + 1:j]))
            mark = None
            i = j
        elif lines[i].strip():
            mark = None if not lines[i].startswith("<!--") else mark
        i += 1
    return out


def commands(body):
    """The "$ " commands of a block with the output lines shown after each."""
    cmds, i = [], 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            if cmds:
                cmds[-1][1].append(line)
            i += 1
            continue
        cmd = line[2:]
        while cmd.endswith("\\"):
            i += 1
            cmd += "\n" + body[i]
        m = re.search(r"<<-?'?(\w+)'?", cmd)
        if m:
            while True:
                i += 1
                cmd += "\n" + body[i]
                if body[i] == m.group(1):
                    break
        cmds.append([cmd, []])
        i += 1
    return cmds


def pattern(shown):
    parts = [re.escape(re.sub(r"\s+", " ", p.strip())).replace(r"\ ", r"\s+") for p in shown.split("...")]
    return re.compile(r"\s*" + r".*".join(parts) + r"\s*$")


def match(shown, got):
    """None if the shown lines appear in got in order, else the first that
    does not."""
    pos = 0
    for s in shown:
        if s.strip() in ("", "..."):
            continue
        p = pattern(s)
        while pos < len(got) and not p.match(got[pos]):
            pos += 1
        if pos == len(got):
            return s
        pos += 1
    return None


class Background:
    def __init__(self, cmd, env, cwd):
        self.cmd = cmd
        self.lines = []
        self.proc = start_peer(["bash", "-c", cmd], env=env, cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))


def run_block(body, env, cwd, subst, ran):
    bg = []
    for cmd, shown in commands(body):
        for old, new in subst:
            cmd = cmd.replace(old, new)
            shown = [s.replace(old, new) for s in shown]
        ran.append(cmd.split("\n")[0])
        if cmd.strip() == "wait":
            for b in bg:
                try:
                    rc = b.proc.wait(timeout=180)
                except subprocess.TimeoutExpired:
                    rc = stop_peer(b.proc, signal.SIGKILL)
                b.reader.join(10)
                check(rc == 0, "README: `%s` (in the background) exited %s" % (b.cmd, rc), "\n".join(b.lines))
            bg = [b for b in bg if b.proc.poll() is None]
            continue
        if cmd.rstrip().endswith("&"):
            b = Background(cmd.rstrip()[:-1], env, cwd)
            bg.append(b)
            if shown:
                try:
                    wait_for("`%s` says %s" % (b.cmd, shown),
                             lambda: match(shown, list(b.lines)) is None or b.proc.poll() is not None, timeout=60)
                except AssertionError:
                    pass
                check(match(shown, list(b.lines)) is None, "README: `%s` says what the README shows" % b.cmd,
                      "missing: %s" % match(shown, list(b.lines)), "\n".join(b.lines))
            continue
        t0 = time.monotonic()
        r = subprocess.run(["bash", "-c", cmd], env=env, cwd=cwd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=300)
        got = r.stdout.split("\n")
        check(r.returncode == 0, "README: `%s` exits 0 (%.1f s)" % (cmd.split("\n")[0], time.monotonic() - t0),
              "exit %d" % r.returncode, r.stdout[-3000:])
        miss = match(shown, got)
        check(miss is None, "README: `%s` prints what the README shows (%d lines shown)"
              % (cmd.split("\n")[0], len([s for s in shown if s.strip() not in ("", "...")])),
              "missing: %s" % miss, r.stdout[-3000:])
    for b in bg:
        if b.proc.poll() is None:
            rc = stop_peer(b.proc, signal.SIGTERM)
            check(rc == 0, "README: `%s`, still running at its block's end, stops at SIGTERM with exit 0 (%s)"
                  % (b.cmd, rc), "\n".join(b.lines))
        else:
            b.reader.join(10)
            check(b.proc.returncode == 0, "README: `%s` (in the background) exited %s" % (b.cmd, b.proc.returncode),
                  "\n".join(b.lines))


def main():
    static_checks()
    scratch = tempfile.mkdtemp(prefix="readme-")
    os.symlink(os.path.join(SRC, "cli"), os.path.join(scratch, "cli"))
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(RAILMON) + ":" + env.get("PATH", "/usr/bin:/bin")
    subst, peers = [], []
    if GROUND:
        sys.path.insert(0, os.path.join(HERE, "..", "ground"))
        from pg import Postgres
        from mqtt_peers import Broker
        pg = Postgres(db="railmon")
        broker = Broker()
        peers = [pg, broker]
        env["PGHOST"], env["PGUSER"] = pg.dir, "railmon"
        subst = [("localhost:1883", "localhost:%d" % broker.port), ("127.0.0.1:8080", "127.0.0.1:%d" % free_port())]
    ran, skipped = [], []
    try:
        for mark, first, body in blocks():
            runnable = any(line.startswith("$ ") for line in body)
            kind = mark[0] if mark else None
            if not runnable or kind in ("vehicle", "not run here"):
                check(kind in ("vehicle", "not run here"),
                      "README.md:%d: a sh block that is not run says why in a readme-test comment" % first,
                      "\n".join(body))
                cmds = [line.split("#")[0].strip() for line in body if line.strip() and not line.startswith("#")]
                skipped += ["%s (README.md:%d, %s: %s)" % (c, first, kind, mark[1] if mark else "") for c in cmds]
                continue
            if kind == "ground" and not GROUND:
                skipped += ["%s (README.md:%d, ground: run by the ground suite)" % (c, first)
                            for c, _ in commands(body)]
                continue
            check(kind in (None, "ground"), "README.md:%d: a known readme-test mark (%s)" % (first, kind))
            run_block(body, env, scratch, subst, ran)
    finally:
        for p in (broker.stop, pg.fini) if GROUND else ():
            p()
        shutil.rmtree(scratch, ignore_errors=True)
    print("\nREADME commands run (%d):" % len(ran))
    for c in ran:
        print("  $ " + c)
    print("README commands not run here (%d):" % len(skipped))
    for c in skipped:
        print("  " + c)
    check(len(ran) >= 10, "the README has commands to run (%d)" % len(ran))
    if FAILS:
        print("\n%d FAILED: %s" % (len(FAILS), "; ".join(FAILS)))
        sys.exit(1)
    print("\nreadme: all ok")


main()
