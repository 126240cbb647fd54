#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench-export.py RAILMON SRCDIR [BASE_RAILMON] - export's speed (issue 29).

The log: N demo journeys (cli/demo/train.log, 60 s each, one after the
other: journey i shifted by i * 60 s) replayed with the demo DBC
(cli/demo/train.dbc) into one log; N = 20 (~1 M records) and N = 200 (10x,
~10 M records: the cost must grow linearly and the memory stay bounded).

For each format (csv in time order, csv --order seq, jsonl, --wide,
--wide --raster 100ms, influx, and csv of a --from/--to window of a 24th
of the log - an hour of a day - with its cost against the whole) one table row: seconds (best of 3 on the small log, one run on
the large one) of wall clock and of CPU (user + system: the machine may be
shared, and "on one core" is records per CPU second), M records/s, MB/s of
output, peak RSS (VmHWM of the export, polled), and ratios against the floor - `cat` of the same number
of output bytes from the page cache, in the same run - and, when an older
railmon is given (third argument or BASE_RAILMON; the issue's closing
note uses /tmp/cmp-base/build/cli/railmon), against that binary's time on
the same log, run side by side.  Output goes to /dev/null; its bytes are
counted once per format through a pipe.

Then `verify --unsigned` of the same log: MB/s of log (and against the
base); and csv of the journeys decoded with every DBC factor divided by 3
(no resolution: the shortest round-trip number path, basic/shortest.c).  Figures only: this asserts that every export exits 0 and (with a base)
writes the same number of bytes, never a time.  BENCH_EXPORT_SMALL=1 runs
the small log only.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

RAILMON = os.path.realpath(sys.argv[1])
SRC = os.path.realpath(sys.argv[2])
BASE = sys.argv[3] if len(sys.argv) > 3 else os.environ.get('BASE_RAILMON', '')
BASE = os.path.realpath(BASE) if BASE else ''
JOURNEY_S = 60
WINDOW = 'csv --from/--to (1/24)'

FORMATS = [  # label, export options
    ('csv (time order)', ['--format', 'csv']),
    ('csv --order seq', ['--format', 'csv', '--order', 'seq']),
    ('jsonl', ['--format', 'jsonl']),
    ('--wide', ['--wide']),
    ('--wide --raster 100ms', ['--wide', '--raster', '100ms']),
    ('influx', ['--format', 'influx']),
]


def make_trace(path, journeys):
    lines = open(os.path.join(SRC, 'cli/demo/train.log')).read().splitlines()
    parsed = []
    for ln in lines:
        ts, rest = ln.split(') ', 1)
        parsed.append((float(ts[1:]), rest))
    t0 = parsed[0][0]
    with open(path, 'w') as f:
        for j in range(journeys):
            off = j * JOURNEY_S
            f.write(''.join('(%.6f) %s\n' % (t + off, rest) for t, rest in parsed))
    return t0, t0 + journeys * JOURNEY_S


def hwm(pid):
    """VmHWM (KiB) of pid's own memory since its exec, 0 if gone"""
    try:
        with open('/proc/%d/status' % pid) as f:
            for ln in f:
                if ln.startswith('VmHWM:'):
                    return int(ln.split()[1])
    except OSError:
        pass
    return 0


def run(cmd):
    """wall seconds, peak RSS (KiB) of cmd, its stderr; run.cpu: its CPU
    seconds.  The peak is VmHWM read every 5 ms while it runs (it only
    grows; bounded memory is reached early): wait4's ru_maxrss would count
    this Python's RSS, which the child had before its exec."""
    with tempfile.TemporaryFile() as err, open(os.devnull, 'wb') as null:
        t0 = time.monotonic()
        pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[
            (os.POSIX_SPAWN_DUP2, null.fileno(), 1), (os.POSIX_SPAWN_DUP2, err.fileno(), 2)])
        peak = 0
        while True:
            peak = max(peak, hwm(pid))
            done, status, ru = os.wait4(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.005)
        wall = time.monotonic() - t0
        err.seek(0)
        text = err.read().decode()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit('FAIL: %s exited %d: %s' % (' '.join(cmd), code, text[-500:]))
    run.cpu = ru.ru_utime + ru.ru_stime
    return wall, peak, text


def out_bytes(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    n = 0
    while True:
        b = p.stdout.read(1 << 20)
        if not b:
            break
        n += len(b)
    if p.wait() != 0:
        sys.exit('FAIL: %s exited %d' % (' '.join(cmd), p.returncode))
    return n


def records(railmon, data, opts):
    _, _, err = run([railmon, 'export', '--data', data] + opts)
    for ln in err.splitlines():
        if 'records written' in ln:
            return int(ln.split(' records written')[0].split()[-1])
    sys.exit('FAIL: no "records written" in: ' + err)


def best(cmd, n):
    """the best wall seconds of n runs, the peak RSS, the best CPU seconds"""
    b = None
    for _ in range(n):
        w, rss, _ = run(cmd)
        b = (w, rss, run.cpu) if b is None else (min(b[0], w), max(b[1], rss), min(b[2], run.cpu))
    return b


def cat_time(chunk, nbytes, n):
    """cat of nbytes from the page cache (chunk repeated), best of n."""
    reps = max(1, round(nbytes / os.path.getsize(chunk)))
    return best(['cat'] + [chunk] * reps, n)[0]


def verify_row(data, logmb, tries):
    """`verify --unsigned` of the same log (issue 29: it stays at least at
    today's MB/s): MB/s of log read, against the base build"""
    # no -q: builds before it (the issue's own baseline) refuse it; the
    # report goes to /dev/null in both
    w, rss, cpu = best([RAILMON, 'verify', '--data', data, '--unsigned'], tries)
    line = '%-24s %7.3f %7.3f %7s %7s %7.0f %7.1f %7s' % ('verify (MB/s of log)', w, cpu, '', '', logmb / w,
                                                         rss / 1024, '')
    if BASE:
        bw, brss, bcpu = best([BASE, 'verify', '--data', data, '--unsigned'], tries)
        line += ' %7.3f %7.3f %7.1f %7.2fx %7.2fx' % (bw, bcpu, brss / 1024, bw / w, bcpu / cpu)
    print(line + '  (log %.0f MB/s cpu)' % (logmb / cpu), flush=True)


def thirds_dbc(path):
    """the demo DBC with every factor divided by 3: no 15 decimals write
    one, so every value goes the shortest round-trip way
    (rec_format_double), not the one at the signal's resolution"""
    text = open(os.path.join(SRC, 'cli/demo/train.dbc')).read()
    text = re.sub(r'^( SG_ .*?\()([^,()]+),', lambda m: '%s%r,' % (m.group(1), float(m.group(2)) / 3),
                  text, flags=re.M)
    with open(path, 'w') as f:
        f.write(text)


def shortest_row(T, trace, tries):
    """csv of the same journeys decoded with thirds_dbc(): the number path
    without a resolution, against the base build"""
    dbc, data = os.path.join(T, 'thirds.dbc'), os.path.join(T, 'thirds')
    thirds_dbc(dbc)
    run([RAILMON, 'replay', trace, '--dbc', dbc, '--data', data])
    cmd = [RAILMON, 'export', '--data', data, '--format', 'csv']
    nbytes = out_bytes(cmd)
    n = records(RAILMON, data, [])
    w, rss, cpu = best(cmd, tries)
    line = '%-24s %7.3f %7.3f %7.2f %7.2f %7.0f %7.1f %7s' % ('csv, values 1/3 factor', w, cpu, n / w / 1e6,
                                                             n / cpu / 1e6, nbytes / w / 1e6, rss / 1024, '')
    if BASE:
        bcmd = [BASE, 'export', '--data', data, '--format', 'csv']
        if out_bytes(bcmd) != nbytes:
            sys.exit('FAIL: csv of 1/3 factors: the base wrote another number of bytes')
        bw, brss, bcpu = best(bcmd, tries)
        line += ' %7.3f %7.3f %7.1f %7.2fx %7.2fx' % (bw, bcpu, brss / 1024, bw / w, bcpu / cpu)
    print(line, flush=True)
    shutil.rmtree(data)


def bench(T, journeys, tries):
    trace = os.path.join(T, 'trace%d.log' % journeys)
    data = os.path.join(T, 'log%d' % journeys)
    t0, t1 = make_trace(trace, journeys)
    run([RAILMON, 'replay', trace, '--dbc', os.path.join(SRC, 'cli/demo/train.dbc'), '--data', data])
    logmb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(data) for f in fs) / 1e6
    # a 24th of the log (an hour of a day), in its middle
    w0 = int(t0 + (t1 - t0) * 0.45)
    w1 = w0 + int((t1 - t0) / 24)
    fmts = FORMATS + [(WINDOW, ['--format', 'csv', '--from', str(w0), '--to', str(w1)])]
    nrec = records(RAILMON, data, ['--order', 'seq'])
    print('\n%d journeys: %d records in the log (%.1f MB), best of %d' % (journeys, nrec, logmb, tries))
    hdr = '%-24s %7s %7s %7s %7s %7s %7s %7s' % ('format', 'wall s', 'cpu s', 'Mrec/s', 'Mrec/s', 'MB/s',
                                                 'RSS MB', 'vs cat')
    if BASE:
        hdr += ' %7s %7s %7s %8s %8s' % ('base', 'base', 'base', 'speed-up', 'speed-up')
    print(hdr)
    hdr = '%-24s %7s %7s %7s %7s %7s %7s %7s' % ('', '', '', 'wall', 'cpu', 'wall', '', 'wall')
    if BASE:
        hdr += ' %7s %7s %7s %8s %8s' % ('wall s', 'cpu s', 'RSS MB', 'wall', 'cpu')
    print(hdr)
    chunk = os.path.join(T, 'chunk')
    rows = {}
    for label, opts in fmts:
        cmd = [RAILMON, 'export', '--data', data] + opts
        nbytes = out_bytes(cmd)
        n = records(RAILMON, data, opts) if '--from' in opts else nrec
        if not os.path.exists(chunk):
            # 64 MB of export output: what cat reads (repeated) for the floor
            with open(chunk, 'wb') as f:
                subprocess.run(cmd, stdout=f, stderr=subprocess.DEVNULL, check=True)
                f.truncate(min(f.tell(), 64 << 20))
        w, rss, cpu = best(cmd, tries)
        tc = cat_time(chunk, nbytes, tries)
        line = '%-24s %7.3f %7.3f %7.2f %7.2f %7.0f %7.1f %6.1fx' % (label, w, cpu, n / w / 1e6, n / cpu / 1e6,
                                                                  nbytes / w / 1e6, rss / 1024, w / tc)
        if BASE:
            bcmd = [BASE, 'export', '--data', data] + opts
            bbytes = out_bytes(bcmd)
            if bbytes != nbytes:
                sys.exit('FAIL: %s: %d bytes, the base wrote %d' % (label, nbytes, bbytes))
            bw, brss, bcpu = best(bcmd, tries)
            line += ' %7.3f %7.3f %7.1f %7.2fx %7.2fx' % (bw, bcpu, brss / 1024, bw / w, bcpu / cpu)
        rows[label] = (w, cpu)
        print(line, flush=True)
    t, q = rows['csv (time order)'], rows['csv --order seq']
    print('time order / seq order: %.2f wall, %.2f cpu' % (t[0] / q[0], t[1] / q[1]))
    h = rows[WINDOW]
    print('the 1/24 window / the whole csv (time order): %.3f wall, %.3f cpu (1/24 = 0.042)'
          % (h[0] / t[0], h[1] / t[1]))
    verify_row(data, logmb, tries)
    shortest_row(T, trace, tries)
    os.unlink(trace)
    shutil.rmtree(data)
    return rows


def main():
    if BASE and not os.access(BASE, os.X_OK):
        sys.exit('FAIL: base railmon %s is not executable' % BASE)
    print('bench-export: %s%s; cat floor = cat of the same bytes; RSS: peak of the export'
          % (RAILMON, (', base ' + BASE) if BASE else ''))
    T = tempfile.mkdtemp(prefix='railmon-bench-export.', dir='/var/tmp')
    try:
        small = bench(T, 20, 3)
        if os.environ.get('BENCH_EXPORT_SMALL') != '1':
            large = bench(T, 200, 1)
            print('\ngrowth, 10x the log (cpu seconds):%s' % ','.join(
                ' %s x%.1f' % (k, large[k][1] / small[k][1]) for k in small))
    finally:
        shutil.rmtree(T, ignore_errors=True)


if __name__ == '__main__':
    main()
