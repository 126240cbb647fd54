#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-export-formats.py RAILMON SRCDIR - every export format of one log
says the same records (issue 29: the writers were rewritten for speed;
their outputs must not change).

The log: 3 demo journeys (cli/demo/train.log, shifted by 60 s each)
replayed with the demo DBC; ~150,000 records, so every writer crosses its
output buffer's blocks many times.  Checked against what Python derives
on its own, not against railmon's other code paths only:
 - csv in time order is csv --order seq sorted by (time_ns, seq), line for
   line, and the time column is time_ns as RFC 3339 (datetime);
 - jsonl has the CSV's keys in its order and each value the CSV's field
   (strings equal, null empty, numbers with the same text);
 - influx: one line per CSV row, measurement, tags, value text, seq and
   time from that row;
 - candump: the CSV's CAN rows as "(sec.usec) canBUS ID#DATA";
 - --wide: every sample of the CSV in its row (time_ns) and column
   ("name [unit]"), with the same text.
"""
import csv
import datetime
import io
import json
import os
import subprocess
import sys
import tempfile

RAILMON, SRC = os.path.realpath(sys.argv[1]), os.path.realpath(sys.argv[2])


def fail(msg):
    sys.exit('FAIL: ' + msg)


def export(data, *opts):
    p = subprocess.run([RAILMON, 'export', '--data', data] + list(opts), capture_output=True)
    if p.returncode != 0:
        fail('export %s: %d %s' % (opts, p.returncode, p.stderr.decode()))
    return p.stdout.decode()


def utc(ns):
    s, frac = divmod(ns, 10**9)
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=s)
    return t.strftime('%Y-%m-%dT%H:%M:%S') + '.%09dZ' % frac


def main():
    with tempfile.TemporaryDirectory(prefix='railmon-test-formats.') as T:
        lines = open(os.path.join(SRC, 'cli/demo/train.log')).read().splitlines()
        with open(os.path.join(T, 'trace.log'), 'w') as f:
            for j in range(3):
                for ln in lines:
                    ts, rest = ln.split(') ', 1)
                    f.write('(%.6f) %s\n' % (float(ts[1:]) + 60 * j, rest))
        data = os.path.join(T, 'log')
        subprocess.run([RAILMON, 'replay', os.path.join(T, 'trace.log'), '--dbc',
                        os.path.join(SRC, 'cli/demo/train.dbc'), '--data', data],
                       check=True, capture_output=True)

        text = export(data)
        seq_text = export(data, '--order', 'seq')
        head, *body = text.splitlines(keepends=True)
        shead, *sbody = seq_text.splitlines(keepends=True)
        if head != shead:
            fail('headers differ')
        key = lambda ln: (int(ln.split(',')[4]), int(ln.split(',')[2]))  # noqa: E731 (no commas before col 9)
        if body != sorted(sbody, key=key):
            for a, b in zip(body, sorted(sbody, key=key)):
                if a != b:
                    fail('time order is not seq order sorted:\n%s%s' % (a, b))
            fail('time order: %d lines, seq order %d' % (len(body), len(sbody)))
        rows = list(csv.DictReader(io.StringIO(text)))
        cols = head.rstrip('\n').split(',')
        if len(rows) < 100000:
            fail('only %d records' % len(rows))
        for r in rows[::97]:
            if r['time'] != utc(int(r['time_ns'])):
                fail('time %s for %s' % (r['time'], r['time_ns']))

        # JSON lines: the same keys, values with the CSV's text
        js = export(data, '--format', 'jsonl').splitlines()
        if len(js) != len(rows):
            fail('jsonl: %d lines, csv %d rows' % (len(js), len(rows)))
        for ln, r in zip(js, rows):
            o = json.loads(ln)
            if list(o) != cols:
                fail('jsonl keys %s' % list(o))
            for c in cols:
                v = o[c]
                want = r[c]
                got = '' if v is None else v if isinstance(v, str) else None
                if got is None:  # a number: its text as written
                    start = ln.index('"%s":' % c) + len(c) + 3
                    end = ln.index(',', start) if ',' in ln[start:] else ln.index('}', start)
                    got = ln[start:end]
                if got != want:
                    fail('jsonl %s: %r, csv %r\n%s' % (c, got, want, ln))

        # influx: one point per row, in the same order
        ix = export(data, '--format', 'influx').splitlines()
        if len(ix) != len(rows):
            fail('influx: %d lines' % len(ix))
        meas = {'can': 'railmon_can', 'sample': 'railmon', 'event': 'railmon_event', 'text': 'railmon'}
        for ln, r in zip(ix, rows):
            rest, t = ln.rsplit(' ', 1)
            series, fields = rest.split(' ', 1)  # the demo's names and tags hold no space
            parts = series.split(',')
            want = [meas[r['kind']], 'vehicle=' + r['vehicle'], 'bus=' + (r['bus_name'] or r['bus'])]
            if r['kind'] == 'sample':
                want += ['channel=' + r['name'], 'unit=' + r['unit']] if r['unit'] else ['channel=' + r['name']]
                fw = 'value=%s,quality="%s"' % (r['value'], r['quality'])
                if r['label']:
                    fw += ',label="%s"' % r['label']
            elif r['kind'] == 'can':
                want += ['can_id=' + r['can_id']]
                fw = 'data="%s",flags="%s"' % (r['data'], r['flags'])
            else:
                want += ['event=' + r['event']]
                fw = 'arg=%si,detail=%si' % (r['arg'], r['detail'])
            fw += ',seq=%si' % r['seq']
            if parts != want or fields != fw or t != r['time_ns']:
                fail('influx line %r for row %s' % (ln, r))

        # candump: the CAN rows
        cd = export(data, '--format', 'candump').splitlines()
        cans = [r for r in rows if r['kind'] == 'can']
        if len(cd) != len(cans) or not cans:
            fail('candump: %d lines, %d CAN rows' % (len(cd), len(cans)))
        for ln, r in zip(cd, cans):
            ns = int(r['time_ns'])
            want = '(%d.%06d) can%s %s#%s' % (ns // 10**9, ns % 10**9 // 1000, r['bus'], r['can_id'], r['data'])
            if ln != want:
                fail('candump %r, want %r' % (ln, want))

        # --wide: each sample in its row and column
        wide = list(csv.reader(io.StringIO(export(data, '--wide'))))
        whead = wide[0]
        at = {int(w[1]): w for w in wide[1:]}
        nsamples = 0
        for r in rows:
            if r['kind'] != 'sample':
                continue
            col = whead.index(r['name'] + (' [%s]' % r['unit'] if r['unit'] else ''))
            w = at[int(r['time_ns'])]
            if w[0] != r['time'] or w[col] != r['value']:
                fail('--wide at %s %s: %r, csv %r' % (r['time_ns'], whead[col], w[col], r['value']))
            nsamples += 1
        print('every format: %d records (%d samples) as the CSV says them: ok' % (len(rows), nsamples))


if __name__ == '__main__':
    main()
