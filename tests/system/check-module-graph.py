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
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z]+)/([^"]+)"', re.M)


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
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
