#!/usr/bin/python3
"""check-file-graph.py DIR - no circle between the files of one folder.

Run on every folder of C (tests/system/meson.build).
The graph is of files.  A file of code (x.c) depends on
- each header it includes (#include "y.h"), and on that header's code
  (y.c): including a header is using what it declares;
- each file whose function its code names (a call, or the function
  handed over as a callback).
A header depends only on the headers it includes: it holds types and
declarations, no code, so a private header that includes its module's
public one (bus-private.h, bus.h) is no circle with the file that
includes both.  A header that declares functions of several files (a
module's public header, format.h; acq-private.h) is partly each one's own
header: a file that includes the header declaring its own functions does
not depend on the header's code by that include (it needs its own
declarations); what its code uses of other files still counts.
This graph must have no circle: every file can then be read, tested and
replaced from the bottom up (daemon.c needs sink.c, sink.c does not need
daemon.c).  Read from the sources, no build needed: comments and strings
are blanked, function definitions are found at the start of a line (the
house style), static ones are private to their file.

The two signal flags are data, not functions: main.c owns them (no globals
elsewhere) and cli.c's handler sets them; reading a flag is not a call.

Prints the circles it finds and exits 1, or prints a summary and exits 0.
"""
import os
import re
import sys

DEF = re.compile(r'^(?!static\b)(?:[A-Za-z_]\w*[ \t*]+)+\**([a-z_]\w*)\(([^;{}]*?)\)\s*\n\{', re.M)
IDENT = re.compile(r'\b[a-z_]\w*\b')
INCLUDE = re.compile(r'^#include "([^"/]+)"', re.M)


def blank(text):
    """Comments and string/char literals out, lines kept."""
    def keep_lines(m):
        return re.sub(r'[^\n]', ' ', m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', keep_lines, text, flags=re.S)


def unit(name):
    return name.rsplit('.', 1)[0]


def load(board):
    names = sorted(f for f in os.listdir(board) if f.endswith(('.c', '.h')))
    raw = {f: open(os.path.join(board, f), encoding='utf-8').read() for f in names}
    return names, raw, {f: blank(t) for f, t in raw.items()}


def edges_of(names, raw, code):
    edges = {f: {} for f in names}
    defs = {}
    for f in names:
        if f.endswith('.c'):
            for m in DEF.finditer(code[f]):
                defs.setdefault(m.group(1), f)
    # the files whose functions each header declares
    declares = {h: {defs[n] for n in IDENT.findall(code[h]) if n in defs}
                for h in names if h.endswith('.h')}
    for f in names:
        for m in INCLUDE.finditer(raw[f]):
            h = m.group(1)
            if h not in raw or h == f:
                continue
            edges[f].setdefault(h, f'{f} includes {h}')
            impl = unit(h) + '.c'
            if f.endswith('.c') and impl in raw and impl != f and f not in declares[h]:
                edges[f].setdefault(impl, f'{f} includes {h}, the header of {impl}')
    for f in names:
        if not f.endswith('.c'):
            continue
        for name in set(IDENT.findall(code[f])):
            owner = defs.get(name)
            if owner and owner != f:
                edges[f].setdefault(owner, f'{f} uses {name}() of {owner}')
    return edges, defs


def components(edges):
    """Strongly connected components of more than one unit (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def shortest_circle(edges, comp, start):
    """The shortest way from start back to itself inside comp (BFS)."""
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges[v]):
            if w not in comp:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return [start]


def main():
    board = sys.argv[1]
    folder = os.path.basename(os.path.normpath(board)) + '/'
    names, raw, code = load(board)
    edges, defs = edges_of(names, raw, code)
    bad = components(edges)
    for comp in bad:
        print('depend on each other: ' + ', '.join(comp))
        for start in comp:
            cyc = shortest_circle(edges, set(comp), start)
            print('  circle: ' + ' -> '.join(cyc))
            for a, b in zip(cyc, cyc[1:]):
                print(f'    {a} -> {b}: {edges[a][b]}')
    nedges = sum(len(v) for v in edges.values())
    if bad:
        print(f'FAIL: circles between the files of {board}')
        return 1
    print(f'{folder}: {len(edges)} files, {len(defs)} public functions, {nedges} dependencies, no circle')
    return 0


if __name__ == '__main__':
    sys.exit(main())
