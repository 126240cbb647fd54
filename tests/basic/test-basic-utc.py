#!/usr/bin/python3
"""test-basic-utc.py TEST_BINARY - basic_utc_format against Python's datetime.

Python's datetime is the independent reference: for ten thousand times
(random over the whole int64 range, random within a day of the epoch on
either side, and each second boundary +-1 ns near it), the C formatter's
text at every precision, and as a timestamptz, must be what datetime
says for floor(t / 1 s) plus the floor of the fraction.
"""
import datetime
import random
import subprocess
import sys

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def ref(t, digits, sep, zone):
    sec, frac = divmod(t, 10**9)   # Python's divmod floors
    d = EPOCH + datetime.timedelta(seconds=sec)
    out = d.strftime('%Y-%m-%d') + sep + d.strftime('%H:%M:%S')
    if digits:
        out += '.' + str(frac // 10**(9 - digits)).zfill(digits)
    return out + zone


def main():
    binary = sys.argv[1]
    rnd = random.Random(27)
    times = [rnd.randint(-2**63, 2**63 - 1) for _ in range(4000)]
    times += [rnd.randint(-86400 * 10**9, 86400 * 10**9) for _ in range(4000)]
    for s in range(-1000, 1000):
        times += [s * 10**9 - 1, s * 10**9, s * 10**9 + 1]
    times += [-2**63, 2**63 - 1, 0, -1]
    data = ''.join(f'{t}\n' for t in times)
    bad = 0
    for digits in (0, 3, 6, 9):
        for flags, sep, zone in ((0, 'T', 'Z'), (3, ' ', '+00')):
            got = subprocess.run([binary, 'print', str(digits), str(flags)], input=data, text=True,
                                 capture_output=True, check=True).stdout.splitlines()
            assert len(got) == len(times), f'{len(got)} lines for {len(times)} times'
            for t, g in zip(times, got):
                want = ref(t, digits, sep, zone)
                if g != want:
                    bad += 1
                    if bad <= 10:
                        print(f'{t} ({digits} digits, flags {flags}): {g!r}, datetime says {want!r}')
    if bad:
        print(f'FAIL: {bad} texts differ from datetime')
        return 1
    print(f'basic-utc against datetime: {len(times)} times x 4 precisions x 2 forms: all the same')
    return 0


if __name__ == '__main__':
    sys.exit(main())
