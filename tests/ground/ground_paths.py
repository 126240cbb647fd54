# SPDX-License-Identifier: MIT
"""ground_paths.py - the import paths every ground script (tests/ground/)
sets before importing its helpers, written once: tests/lib (railmon_test)
and, when the script is given it, the directory of protoc's generated
railmon_pb2.  Each script turns bytecode off before importing this, so
nothing is written into the source tree."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def paths(pb2_dir=None):
    """tests/lib on the import path, and pb2_dir (tests/uplink's build
    directory): then railmon_pb2 is returned, else None."""
    sys.path.insert(0, os.path.join(HERE, "..", "lib"))
    if not pb2_dir:
        return None
    sys.path.insert(0, pb2_dir)
    import railmon_pb2
    return railmon_pb2
