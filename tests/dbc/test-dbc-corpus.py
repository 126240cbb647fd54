#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-dbc-corpus.py DBC-DUMP DIR [N]: every DBC of DIR (tests/dbc/corpus,
one file per case of a production file railmon loads leniently) is

- loaded with exactly the warnings of NAME.warnings beside it (none when
  there is no such file), text and file:line checked;
- refused by a strict load (dbc-dump -s) with one of them as the error
  (the first it finds), unless every warning is only the CP1252 note (strict converts too);
- decoded on N random frames (default 2000) by dbc-dump and by the
  independent reference (dbc_ref.py): 0 mismatches, and some samples.

Across the corpus every quality and some value labels must be seen."""
import importlib.util
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("dbc_ref_test", os.path.join(HERE, "test-dbc-ref.py"))
ref_test = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref_test)


def warnings_of(tool, name, strict):
    out = subprocess.run([tool] + (["-s"] if strict else []) + [name, os.devnull],
                         capture_output=True, text=True, timeout=60)
    return out.returncode, out.stderr.splitlines()


def check_file(tool, name, n, seed):
    """Returns (samples, mismatches, qualities, labels, warnings); exits on a warning mismatch."""
    wfile = name[:-4] + ".warnings"
    want = open(wfile, encoding="utf-8").read().splitlines() if os.path.exists(wfile) else []
    rc, got = warnings_of(tool, name, False)
    if rc != 0 or got != want:
        sys.exit("%s: lenient load: exit %d, warnings\n  %s\nwant\n  %s" % (name, rc, "\n  ".join(got),
                                                                           "\n  ".join(want)))
    errors = [w[len("warning: "):].rsplit("; ", 1)[0] for w in want if not w.endswith("read as CP1252")]
    rc, got = warnings_of(tool, name, True)
    # strict stops at the first it finds: the parser's come before the checks after it
    if errors and (rc != 1 or len(got) != 1 or got[0] not in errors):
        sys.exit("%s: strict load: exit %d, %s; want one of the errors %s" % (name, rc, got, errors))
    if not errors and (rc != 0 or got):
        sys.exit("%s: strict load: exit %d, %s; want a clean load" % (name, rc, got))
    nsig, bad, quals, labels = ref_test.compare(tool, name, n, seed)
    return nsig, bad, quals, labels, len(want)


def main():
    tool, corpus = os.path.abspath(sys.argv[1]), sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    os.chdir(corpus)  # warnings name the file as given
    names = sorted(f for f in os.listdir(".") if f.endswith(".dbc"))
    total_bad = total_sig = total_labels = total_warn = 0
    quals = set()
    for i, name in enumerate(names):
        nsig, bad, q, labels, nwarn = check_file(tool, name, n, 100 + i)
        print("%-36s %6d samples, %d mismatches, %d warnings" % (name, nsig, bad, nwarn))
        if nsig == 0:
            sys.exit("%s: nothing decoded" % name)
        total_bad += bad
        total_sig += nsig
        total_labels += labels
        total_warn += nwarn
        quals |= q
    print("%d files, %d samples compared, %d mismatches, %d warnings checked; qualities %s, %d labelled"
          % (len(names), total_sig, total_bad, total_warn, sorted(quals), total_labels))
    if len(names) < 30 or total_bad or quals != {0, 1, 2} or total_labels == 0:
        sys.exit(1)


if __name__ == "__main__":
    main()
