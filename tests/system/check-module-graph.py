#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-module-graph.py SOURCE_ROOT - every `#include "module/..."` in a
module's sources is one DESIGN.md's module rules allow, so the module
graph stays one way (basic <- acquisition <- {trace, dbc} <- {bus, storage, record,
uplink} <- {conf <- pipeline, ground} <- report <- cli; bus reads traces and decodes
with dbc, record writes candump lines with trace, uplink may use record, conf uses
bus only, ground uses storage, record and uplink; web uses record, and dbc for serve --dbc;
plot uses basic only; trdp (TRDP's XML and data sets, pure as dbc is) uses basic only; report (the export engine and what reads a log for summary) uses
ground and conf, and of pipeline only the channel dictionary of a board (channels.h):
pipeline never includes report or cli).  Prints each include that is not allowed and exits 1.

Also issue 27's rule on file size: no file of code (.c, .h) in a module's
folder over ONE_JOB_LINES lines unless it is one job, said at its top:
its first HEADER_LINES lines say "One job" (any case) and why.  A file
that grew past it is split by concern, or says its one job; each one that
does neither is printed with its line count and the rule, and the check
exits 1.  (tests/basic/test-one-job-check.py checks this check.)
"""
import os
import re
import sys

# module -> what it may include: a module name (all of it) or one header
ALLOWED = {
    "basic": set(),
    "acquisition": {"basic"},
    "trace": {"basic", "acquisition/acq-item.h"},
    "trdp": {"basic", "acquisition/acq-item.h"},
    "dbc": {"basic", "acquisition/acq-item.h"},
    "bus": {"basic", "acquisition/acq-item.h", "acquisition/acq-latency.h", "acquisition/acq-pace.h",
            "acquisition/acq-bytes.h", "trace", "dbc", "trdp"},
    "storage": {"basic"},
    "record": {"basic", "acquisition/acq-item.h", "trace"},
    "uplink": {"basic", "acquisition/acq-item.h", "record", "sparkplug"},  # sparkplug: spb-pub.c, the publisher
    "sparkplug": {"basic", "acquisition/acq-item.h", "record"},  # Sparkplug B payloads, session, Batch -> DDATA (issue #33)
    "evidence": {"basic", "acquisition/acq-item.h", "storage", "record"},
    "ground": {"basic", "acquisition/acq-item.h", "storage", "record", "uplink"},
    "web": {"basic", "record", "dbc", "acquisition/acq-item.h"},
    "plot": {"basic"},
    "conf": {"basic", "bus"},
    "pipeline": {"basic", "acquisition", "trace", "dbc", "trdp", "bus", "storage", "record", "uplink", "sparkplug", "conf",
                 "evidence"},
    "report": {"basic", "acquisition/acq-item.h", "trace", "storage", "record", "ground", "conf", "pipeline/channels.h"},
    "cli": {"basic", "acquisition", "trace", "dbc", "trdp", "bus", "storage", "record", "uplink", "ground", "web",
            "conf", "pipeline", "evidence", "report", "plot"},
}
ONE_JOB_LINES = 600
HEADER_LINES = 20
ONE_JOB = re.compile(r'one job', re.I)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z]+)/([^"]+)"', re.M)


def long_files(root):
    """(path, lines) of each module's file of code over ONE_JOB_LINES
    lines whose header does not say its one job."""
    found = []
    for module in ALLOWED:
        for name in sorted(os.listdir(os.path.join(root, module))):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(root, module, name), encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
            n = len(lines) - 1 if lines[-1] == "" else len(lines)  # as wc -l counts
            if n > ONE_JOB_LINES and not ONE_JOB.search("\n".join(lines[:HEADER_LINES])):
                found.append(("%s/%s" % (module, name), n))
    return found


def main():
    root, bad, seen = sys.argv[1], [], 0
    for module, allowed in ALLOWED.items():
        for name in sorted(os.listdir(os.path.join(root, module))):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(root, module, name)) as f:
                for other, header in INCLUDE.findall(f.read()):
                    seen += 1
                    if other != module and other not in allowed and "%s/%s" % (other, header) not in allowed:
                        bad.append('%s/%s: #include "%s/%s"' % (module, name, other, header))
    for b in bad:
        print("not allowed by DESIGN.md's module rules: " + b)
    print("%d includes of other modules checked, %d not allowed" % (seen, len(bad)))
    long = long_files(root)
    for path, n in long:
        print("%s: %d lines, over %d, and its first %d lines do not say \"One job\": no file over ~600 lines "
              "unless it is one job, said at its top (issue 27): split it by concern, or say its one job and why "
              "in its header comment" % (path, n, ONE_JOB_LINES, HEADER_LINES))
    print("%d files over %d lines without \"One job\" in their first %d lines" % (len(long), ONE_JOB_LINES,
                                                                                  HEADER_LINES))
    return 1 if bad or long else 0


if __name__ == "__main__":
    sys.exit(main())
