#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""gen-man.py --out DIR --version V [--pkgdatadir P --sysconfdir S] -- RAILMON...

Writes DIR/railmon.1 and DIR/railmon-COMMAND.1 for every command that
`railmon --help` lists, with help2man (Debian's help2man) from the help
texts of the binary just built: the man pages cannot fall behind the
options.  RAILMON... is the command that runs the binary: in a cross build
meson's exe_wrapper (qemu-user) and the binary.

help2man names every page after the program ("RAILMON"); the title and the
NAME line are set here to railmon-COMMAND, which is what `man railmon-run`
and the whatis database look for.  A page that is not written, or a help
text help2man cannot read, is an error: no man page is ever left out
silently.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

COMMAND_LINE = re.compile(r"^  ([a-z][a-z0-9-]*) +(\S.*)$")


def commands(railmon):
    """(name, one-line help) of every command `railmon --help` lists."""
    out = subprocess.run(railmon + ["--help"], check=True, capture_output=True, text=True).stdout
    found, inside = [], False
    for line in out.splitlines():
        if line.startswith("Commands:"):
            inside = True
        elif inside and not line.strip():
            break
        elif inside:
            m = COMMAND_LINE.match(line)
            if not m:
                sys.exit("gen-man: cannot read the command line %r of `railmon --help`" % line)
            found.append((m.group(1), m.group(2)))
    if not found:
        sys.exit("gen-man: `railmon --help` lists no commands")
    return found


def help2man(program, name, version, include, out):
    """One page, through help2man; program is a shell command line."""
    subprocess.run(["help2man", "--no-info", "--section=1", "--version-string=" + version,
                    "--name=" + name, "--include=" + include, "--output=" + out, program], check=True)


def retitle(path, page, whatis):
    """The page's .TH title and NAME line as page (railmon-run)."""
    with open(path) as f:
        text = f.read()
    text, n = re.subn(r'^\.TH RAILMON "1"', '.TH %s "1"' % page.upper(), text, count=1, flags=re.M)
    if n != 1:
        sys.exit("gen-man: %s: no .TH line from help2man" % path)
    text, n = re.subn(r"^\.SH NAME\n.*$", ".SH NAME\n%s \\\\- %s" % (page.replace("-", "\\-"), whatis), text,
                      count=1, flags=re.M)
    if n != 1:
        sys.exit("gen-man: %s: no NAME section from help2man" % path)
    with open(path, "w") as f:
        f.write(text)


def include_main(cmds, args):
    see = ",\n".join(".BR railmon\\-%s (1)" % c for c, _ in cmds)
    return f"""[FILES]
.TP
.I {args.sysconfdir}/railmon/board.ini
the board file of railmon.service (\\fBrailmon run\\fR); examples in
.I {args.pkgdatadir}/vehicles/
.TP
.I /var/lib/railmon
the log directory of railmon.service, readable by group railmon
.TP
.I {args.pkgdatadir}/demo.ini
the board of \\fBrailmon demo\\fR, with its CAN trace and DBC in
.I {args.pkgdatadir}/demo/
.TP
.I {args.pkgdatadir}/railmon.proto
the public format of everything railmon stores or sends
[ENVIRONMENT]
.TP
.B RAILMON_PKGDATADIR
where \\fBrailmon demo\\fR looks for demo.ini instead of {args.pkgdatadir}
[SEE ALSO]
{see},
.BR systemd.service (5)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--pkgdatadir", default="/usr/share/railmon")
    ap.add_argument("--sysconfdir", default="/etc")
    ap.add_argument("railmon", nargs="+")
    args = ap.parse_args()
    railmon = args.railmon
    program = " ".join(shlex.quote(w) for w in railmon)
    os.makedirs(args.out, exist_ok=True)
    cmds = commands(railmon)
    with tempfile.TemporaryDirectory() as tmp:
        inc = os.path.join(tmp, "main.h2m")
        with open(inc, "w") as f:
            f.write(include_main(cmds, args))
        out = os.path.join(args.out, "railmon.1")
        help2man(program, "train-monitoring data acquisition: CAN and Modbus into a crash-safe log",
                 args.version, inc, out)
        retitle(out, "railmon", "train\\-monitoring data acquisition: CAN and Modbus into a crash\\-safe log")
        for name, whatis in cmds:
            inc = os.path.join(tmp, name + ".h2m")
            with open(inc, "w") as f:
                f.write("[SEE ALSO]\n.BR railmon (1)\n")
            out = os.path.join(args.out, "railmon-%s.1" % name)
            help2man(program + " " + name, whatis, args.version, inc, out)
            retitle(out, "railmon-" + name, whatis.replace("-", "\\-"))
    # the pages of commands that are gone must not stay behind in DIR
    keep = {"railmon.1"} | {"railmon-%s.1" % c for c, _ in cmds}
    for f in os.listdir(args.out):
        if f not in keep:
            os.unlink(os.path.join(args.out, f))


if __name__ == "__main__":
    main()
