#!/usr/bin/python3
"""test-one-job-check.py CHECK_SCRIPT - issue 27's file-size rule in
check-module-graph.py, on trees written here (every module's folder,
empty but for the files of the case), so each edge of the rule is seen:

- a .c of 601 lines that does not say "One job" fails, and the output
  names it with its line count; a .h the same (headers count too);
- 600 lines pass (the limit is "over 600");
- "One job" on line 20 passes, on line 21 fails (the header is the first
  20 lines, not the whole file: a "one job" deep in the code says nothing
  at the top);
- "ONE JOB" passes (any case), "one-job" does not;
- a file that is not code (.md) of any length is not looked at.
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

CHECK = sys.argv[1]
spec = importlib.util.spec_from_file_location("check_module_graph", CHECK)
graph = importlib.util.module_from_spec(spec)
spec.loader.exec_module(graph)


def text(lines, say_at=None, words="One job: the reason"):
    """lines lines of C, with words in a comment on line say_at (1-based)."""
    out = []
    for i in range(1, lines + 1):
        out.append("/* %s */" % words if i == say_at else "int x%d;" % i)
    return "\n".join(out) + "\n"


def run(files):
    with tempfile.TemporaryDirectory(prefix='railmon-onejob-') as d:
        for module in graph.ALLOWED:
            os.mkdir(os.path.join(d, module))
        for path, body in files.items():
            with open(os.path.join(d, path), 'w', encoding='utf-8') as f:
                f.write(body)
        p = subprocess.run(['/usr/bin/python3', CHECK, d], capture_output=True, text=True)
        return p.returncode, p.stdout


def expect(name, files, rc, says=()):
    got, out = run(files)
    if got != rc or any(s not in out for s in says):
        print("FAIL %s: exit %d (want %d), output:\n%s" % (name, got, rc, out))
        return 1
    print("ok %s" % name)
    return 0


def main():
    bad = 0
    bad += expect("601 lines, nothing said", {"cli/big.c": text(601)}, 1,
                  ["cli/big.c: 601 lines", "1 files over 600 lines"])
    bad += expect("601-line header", {"ground/big.h": text(601)}, 1, ["ground/big.h: 601 lines"])
    bad += expect("600 lines", {"cli/big.c": text(600)}, 0, ["0 files over 600 lines"])
    bad += expect("said on line 20", {"cli/big.c": text(900, 20)}, 0)
    bad += expect("said on line 21", {"cli/big.c": text(900, 21)}, 1, ["cli/big.c: 900 lines"])
    bad += expect("said in capitals", {"cli/big.c": text(900, 2, "ONE JOB, because")}, 0)
    bad += expect("one-job is not one job", {"cli/big.c": text(900, 2, "one-job")}, 1)
    bad += expect("not code", {"cli/big.md": text(2000)}, 0)
    bad += expect("two files, one said", {"cli/a.c": text(700, 3), "bus/b.c": text(700)}, 1,
                  ["bus/b.c: 700 lines", "1 files over 600 lines"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
