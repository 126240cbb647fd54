#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-plot-cmd.py RAILMON DEMO_DIR - `railmon plot` on the demo trace
replayed with its DBC: the picture read back with Pillow against what
`export` says of the same channels, the time window, the HTML page, and
each way it refuses (exit code, one sentence, no file left behind)."""
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

from PIL import Image

RAILMON, DEMO = sys.argv[1:3]
BLUE_HUE = lambda c: c[2] > c[0] + 60 and c[2] > c[1] + 20
ORANGE_HUE = lambda c: c[0] > c[2] + 100 and c[0] > c[1] + 40 and c[1] > c[2] + 40


def run(*args, ok=(0,)):
    r = subprocess.run([RAILMON, *args], capture_output=True, text=True)
    if r.returncode not in ok:
        print(f"FAIL: railmon {' '.join(args)} exited {r.returncode}\n{r.stdout}{r.stderr}")
        sys.exit(1)
    return r


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


with tempfile.TemporaryDirectory() as tmp:
    data = os.path.join(tmp, "d")
    run("replay", os.path.join(DEMO, "train.log"), "--dbc", os.path.join(DEMO, "train.dbc"), "--data", data)
    rows = list(csv.DictReader(io.StringIO(run("export", "-d", data, "-c", "VehicleSpeed.Speed", "--order", "seq").stdout)))
    speeds = [float(r["value"]) for r in rows]
    times = [int(r["time_ns"]) for r in rows]
    check(len(speeds) > 1000, f"export gives the speed samples ({len(speeds)})")

    png = os.path.join(tmp, "a.png")
    r = run("plot", "-d", data, "-c", "Speed", "-c", "BrakePipePressure", "-o", png)
    check(f"VehicleSpeed.Speed {len(speeds)} samples" in r.stderr, "plot says how many samples of each channel it drew: " + r.stderr.strip())
    im = Image.open(png).convert("RGB")
    W, H = im.size
    check((W, H) == (1200, 90 + 2 * 260), f"two panels, one per unit ({W}x{H})")
    px = im.load()
    x0, x1, top, bottom = 84, W - 24, 46, H - 52
    ph = (bottom - top - 14) / 2
    # the speed's highest sample is the top of its line, at its time, in
    # the panel whose range is the samples' padded by 5 %
    vmin, vmax = min(speeds), max(speeds)
    pad = (vmax - vmin) * 0.05
    lo, hi = times[0], times[-1]
    i_max = speeds.index(vmax)
    want_y = top + ph - (vmax - (vmin - pad)) / ((vmax + pad) - (vmin - pad)) * ph
    top_blue = min((y for x in range(x0 + 200, x1) for y in range(top + 1, int(top + ph)) if BLUE_HUE(px[x, y])), default=None)
    check(top_blue is not None and abs(top_blue - want_y) <= 2, f"the speed line's top is at its highest sample, {vmax} km/h (y {top_blue}, want {want_y:.1f})")
    first_blue_x = min((x for x in range(x0 + 1, x1) for y in range(int(top + 40), int(top + ph) - 1) if BLUE_HUE(px[x, y])), default=None)
    check(first_blue_x is not None and first_blue_x <= x0 + 2, f"the line starts at the first sample, the axis' left edge (x {first_blue_x})")
    orange = sum(1 for x in range(x0 + 300, x1, 2) for y in range(int(top + ph + 14), bottom) if ORANGE_HUE(px[x, y]))
    check(orange > 50, f"the brake pipe pressure is drawn on the second panel ({orange} pixels)")

    # a window: only the samples inside, the axis is the window
    w_from, w_to = lo + 20 * 10**9, lo + 40 * 10**9
    png2 = os.path.join(tmp, "w.png")
    r = run("plot", "-d", data, "-c", "VehicleSpeed.Speed", "--from", str(w_from / 1e9), "--to", str(w_to / 1e9), "-o", png2, "--size", "800x300")
    n_in = sum(1 for t in times if w_from <= t < w_to)
    check(f"{n_in} samples" in r.stderr, f"--from/--to draws the {n_in} samples inside: " + r.stderr.strip())
    im2 = Image.open(png2).convert("RGB")
    check(im2.size == (800, 300), "--size sets the picture's size")

    # the HTML page: uPlot inside, the channel named, nothing fetched
    html = os.path.join(tmp, "a.html")
    run("plot", "-d", data, "-c", "Speed", "-o", html, "--local", "--title", "demo <b>run</b>")
    page = open(html, encoding="utf-8").read()
    check("uPlot" in page and '"name":"VehicleSpeed.Speed"' in page and '"utc":false' in page,
          "the HTML page holds uPlot, the channel and --local")
    check("<b>run</b>" not in page, "the title is data, never markup")

    # refusals: one sentence, the exit code, no file
    def refused(args, code, words, out=None):
        r = run("plot", *args, ok=(code,))
        lines = r.stderr.strip().splitlines()
        check(any(words in l for l in lines) and (out is None or not os.path.exists(out)),
              f"{' '.join(args)} -> exit {code}: {r.stderr.strip()}")
    refused(["-d", data, "-o", png], 2, "which channels?")
    refused(["-d", data, "-c", "Speed"], 2, "where to?")
    refused(["-d", data, "-c", "Speed", "-o", os.path.join(tmp, "x.jpg")], 2, "must end in .png, .svg or .html")
    refused(["-d", data, "-c", "Speed", "-o", os.path.join(tmp, "y.png"), "--size", "100x50"], 2, "--size")
    refused(["-d", data, "-c", "VehicleSped", "-o", os.path.join(tmp, "z.png")], 1, "nearest: VehicleSpeed.Speed",
            os.path.join(tmp, "z.png"))
    refused(["-d", data, "-c", "Speed", "--from", "2001-01-01T00:00:00Z", "--to", "2001-01-02T00:00:00Z",
             "-o", os.path.join(tmp, "e.png")], 1, "nothing to draw", os.path.join(tmp, "e.png"))
    refused(["-d", data, "-c", "Speed", "-o", os.path.join(tmp, "nodir", "a.png")], 1, "No such file or directory")

    # a damaged log: what can be read is drawn, the damage named, exit 1
    bad = os.path.join(tmp, "bad")
    shutil.copytree(data, bad)
    seg = sorted(f for f in os.listdir(bad) if f.endswith(".seg"))[0]
    with open(os.path.join(bad, seg), "r+b") as f:
        f.seek(os.path.getsize(os.path.join(bad, seg)) // 2)
        f.write(b"\xff" * 64)
    r = run("plot", "-d", bad, "-c", "Speed", "-o", os.path.join(tmp, "bad.png"), ok=(1,))
    check(seg in r.stderr and os.path.exists(os.path.join(tmp, "bad.png")),
          "a damaged log: the segment is named, the rest is drawn, exit 1")
print("plot-cmd: all checks passed")
