#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""footprint.py - binary size and resident memory of `railmon run` with
cli/vehicles/emu-regional.ini (two CAN buses with their DBCs, a Modbus
RTU link, 11 channels, the uplink, 8192-slot rings, 1 s Batches) on each
target, for README's Targets table.  A report, not a test: it asserts only
that railmon ran.

The board is the vehicle's own, with what this machine lacks replaced:
the two SocketCAN buses read the demo trace (looping, real time; a trace
bus keeps a ring and an RX thread like SocketCAN does), the RS-485 tty is
a socat pty with nobody answering, the broker is a loopback port nobody
listens on, and the log, the stat socket and the watchdog are dropped or
moved to a temp dir.

Under qemu-user the process is the emulator and the guest together.  The
script reports the process's VmRSS and VmHWM, and an estimate of the
guest's own share from /proc/PID/smaps: mappings of the guest's files
(railmon, the target's libraries) plus anonymous mappings that are not
executable (heap, stacks, rings), leaving out the emulator's binary, its
heap and its translated-code cache (the rwx mapping).

usage: footprint.py SRC SECONDS TARGET=COMMAND...
"""
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def board(src, tmp, pty):
    text = open(os.path.join(src, 'cli/vehicles/emu-regional.ini')).read()
    vdir = os.path.join(src, 'cli/vehicles')
    out, section = [], None
    sock = socket.socket()
    sock.bind(('127.0.0.1', 0))
    port = sock.getsockname()[1]
    sock.close()
    for line in text.splitlines():
        key = line.split('=')[0].strip()
        m = re.match(r'\[(\w+)(?: (\w+))?\]', line)
        if m:
            section = m.group(1)
        if key in ('hw_watchdog', 'hw_watchdog_timeout_s', 'ca_file', 'cert_file', 'key_file'):
            continue
        if section == 'can' and key in ('interface', 'bitrate', 'dbitrate', 'listen_only'):
            continue
        if key == 'rt_priority':
            line = 'rt_priority = 0'
        elif key == 'stat_socket':
            line = 'stat_socket = ' + os.path.join(tmp, 'railmon.sock')
        elif key == 'dir' and section == 'storage':
            line = 'dir = ' + os.path.join(tmp, 'data')
        elif key == 'retention_size':
            line = 'retention_size = 256M'
        elif key == 'broker':
            line = 'broker = mqtt://127.0.0.1:%d' % port
        elif key == 'driver' and section == 'can':
            line = 'driver = trace\nfile = %s\nloop = true' % os.path.join(src, 'cli/demo/train.log')
        elif key == 'dbc':
            line = 'dbc = ' + os.path.normpath(os.path.join(vdir, line.split('=')[1].split(';')[0].strip()))
        elif key == 'device':
            line = 'device = ' + pty
        out.append(line)
    path = os.path.join(tmp, 'board.ini')
    open(path, 'w').write('\n'.join(out) + '\n')
    return path


def status(pid):
    d = {}
    for line in open('/proc/%d/status' % pid):
        k, v = line.split(':', 1)
        if k in ('VmRSS', 'VmHWM'):
            d[k] = int(v.split()[0])
    return d


def guest_kb(pid, emulator):
    rss, name, perms = 0, None, ''
    total = 0
    for line in open('/proc/%d/smaps' % pid):
        m = re.match(r'^[0-9a-f]+-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(.*)$', line)
        if m:
            perms, name = m.group(1), m.group(2)
            continue
        if line.startswith('Rss:'):
            rss = int(line.split()[1])
            if name in (emulator, '[heap]', '[vvar]', '[vdso]', '[vsyscall]') or 'x' in perms and 'w' in perms:
                continue
            if name and name.startswith('/') and name == emulator:
                continue
            total += rss
    return total


def measure(src, seconds, name, cmd):
    tmp = tempfile.mkdtemp(prefix='railmon-footprint.')
    socat = subprocess.Popen(['socat', 'pty,link=%s/tty,raw,echo=0' % tmp, 'pty,link=%s/peer,raw,echo=0' % tmp],
                             stderr=subprocess.DEVNULL)
    proc = None
    try:
        for _ in range(100):
            if os.path.exists(tmp + '/tty'):
                break
            time.sleep(0.05)
        b = board(src, tmp, tmp + '/tty')
        argv = shlex.split(cmd)
        proc = subprocess.Popen(argv + ['run', '--board', b], stdout=subprocess.DEVNULL,
                                stderr=open(tmp + '/stderr', 'w'))
        time.sleep(seconds)
        if proc.poll() is not None:
            sys.exit('%s: railmon run ended: %s' % (name, open(tmp + '/stderr').read()))
        st = status(proc.pid)
        emulator = os.path.realpath(shutil_which(argv[0])) if len(argv) > 1 else None
        guest = guest_kb(proc.pid, emulator) if emulator else None
        binary = argv[-1]
        tool = {'qemu-aarch64-static': 'aarch64-linux-gnu-size',
                'qemu-arm-static': 'arm-linux-gnueabihf-size'}.get(os.path.basename(argv[0]), 'size')
        text, data, bss = subprocess.run([tool, binary], capture_output=True,
                                         text=True).stdout.splitlines()[1].split()[:3]
        return st, guest, (int(text), int(data), int(bss))
    finally:
        if proc and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        socat.terminate()
        socat.wait()
        subprocess.run(['rm', '-rf', tmp])


def shutil_which(p):
    return shutil.which(p)


def main():
    src, seconds = sys.argv[1], float(sys.argv[2])
    print('| target | text | data | bss | VmRSS | VmHWM | guest share (smaps) |')
    print('|---|---|---|---|---|---|---|')
    for arg in sys.argv[3:]:
        name, cmd = arg.split('=', 1)
        st, guest, size = measure(src, seconds, name, cmd)
        print('| %s | %d KiB | %d KiB | %d KiB | %d KiB | %d KiB | %s |' % (
            name, size[0] // 1024, size[1] // 1024, size[2] // 1024, st['VmRSS'], st['VmHWM'],
            '%d KiB' % guest if guest is not None else '(native: = VmRSS)'))


if __name__ == '__main__':
    main()
