#!/usr/bin/python3
"""test-graph-check.py CHECK_SCRIPT - the file-circle check (check-file-graph.py)
on folders written here, so each rule is seen to hold both ways:

- a call circle (a.c calls b.c, b.c calls a.c) fails, and so does an
  include circle of code (a.c includes b.h and calls nothing of b, b.c
  calls a.c): including a header is using its code;
- a circle of headers (x.h includes y.h, y.h includes x.h) fails;
- a private header that includes its module's public one, included by
  that module's code (bus.c, bus-private.h, bus.h) passes: headers hold no
  code;
- a public header declaring functions of two files (format.h of format.c
  and candump.c), included by both, with format.c calling candump.c,
  passes; the same with candump.c also calling format.c fails.
"""
import os
import subprocess
import sys
import tempfile

CHECK = sys.argv[1]


def run(files):
    with tempfile.TemporaryDirectory(prefix='railmon-graph-') as d:
        for name, text in files.items():
            with open(os.path.join(d, name), 'w', encoding='utf-8') as f:
                f.write(text)
        p = subprocess.run(['/usr/bin/python3', CHECK, d], capture_output=True, text=True)
        return p.returncode, p.stdout


def fn(name, body=''):
    return f'int {name}(void)\n{{\n\treturn {body or "0"};\n}}\n'


CASES = [
    ('call circle', 1, {
        'a.h': 'int a_f(void);\n', 'b.h': 'int b_f(void);\n',
        'a.c': '#include "a.h"\n#include "b.h"\n' + fn('a_f', 'b_f()'),
        'b.c': '#include "b.h"\n#include "a.h"\n' + fn('b_f', 'a_f()')}),
    ('include circle of code', 1, {
        'a.h': 'int a_f(void);\n', 'b.h': 'struct b_t { int x; };\nint b_f(void);\n',
        'a.c': '#include "a.h"\n#include "b.h"\n' + fn('a_f', 'sizeof(struct b_t) > 0'),
        'b.c': '#include "b.h"\n#include "a.h"\n' + fn('b_f', 'a_f()')}),
    ('circle of headers', 1, {
        'x.h': '#include "y.h"\n', 'y.h': '#include "x.h"\n'}),
    ('a call named only in a comment or a string', 0, {
        'a.h': 'int a_f(void);\n', 'b.h': 'int b_f(void);\n',
        'a.c': '#include "a.h"\n#include "b.h"\n/* b_f() */\n' + fn('a_f', 'b_f()'),
        'b.c': '#include "b.h"\n' + fn('b_f', '(int)sizeof("a_f()")')}),
    ('private header over the public one', 0, {
        'bus.h': 'typedef struct bus_dev bus_dev_t;\nint bus_open(void);\n',
        'bus-private.h': '#include "bus.h"\nstruct bus_ops { int (*open)(bus_dev_t *); };\n',
        'bus.c': '#include "bus.h"\n#include "bus-private.h"\n' + fn('bus_open'),
        'can.c': '#include "bus-private.h"\n' + fn('can_open', 'bus_open()')}),
    ('one header for two files, one way', 0, {
        'format.h': 'int rec_format(void);\nint rec_candump(void);\n',
        'format.c': '#include "format.h"\n' + fn('rec_format', 'rec_candump()'),
        'candump.c': '#include "format.h"\n' + fn('rec_candump')}),
    ('one header for two files, both ways', 1, {
        'format.h': 'int rec_format(void);\nint rec_candump(void);\n',
        'format.c': '#include "format.h"\n' + fn('rec_format', 'rec_candump()'),
        'candump.c': '#include "format.h"\n' + fn('rec_candump', 'rec_format()')}),
]


def main():
    bad = 0
    for what, want, files in CASES:
        rc, out = run(files)
        if rc != want:
            bad += 1
            print(f'{what}: exit {rc}, want {want}\n{out}')
    if bad:
        print(f'FAIL: {bad} of {len(CASES)} folders judged wrong')
        return 1
    print(f'graph check: {len(CASES)} folders, each judged right')
    return 0


if __name__ == '__main__':
    sys.exit(main())
