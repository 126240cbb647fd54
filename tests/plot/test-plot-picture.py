#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-plot-picture.py PLOT_SYNTH BROWSER_JS NODE_MODULES - plot-synth's
picture read back by what railmon did not write: the PNG's pixels with
Pillow, the SVG with an XML parser, the HTML page in headless Chromium
(browser-plot.js).  The picture's layout constants are draw.c's: a panel
area from x=84 to width-24, panels from y=46 down to height-52."""
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from PIL import Image

SYNTH, BROWSER_JS, NODE_MODULES = sys.argv[1:4]
BLUE = (0x1f, 0x77, 0xb4)     # the first series' colour (PALETTE[0])
ORANGE = (0xff, 0x80, 0x0d)   # the second's (PALETTE[1], rounded)
RED_EVENT = (153, 25, 25)     # the events' dashed lines (alpha 0.7 over white)


def near(c, want, tol=None):
    """c is of want's hue: antialiased lines blend with white, so the hue
    is what tells the series apart, not the exact colour"""
    r, g, b = c[:3]
    if want == BLUE:
        return b > r + 60 and b > g + 20
    if want == ORANGE:
        return r > b + 100 and r > g + 40 and g > b + 40
    if want == RED_EVENT:
        return r > g + 50 and r > b + 50 and abs(g - b) < 30
    raise ValueError(want)


def check(cond, what):
    if not cond:
        print("FAIL: " + what)
        sys.exit(1)
    print("ok: " + what)


def synth(path, *extra):
    r = subprocess.run([SYNTH, path, *extra], capture_output=True, text=True)
    check(r.returncode == 0, f"plot-synth wrote {os.path.basename(path)} ({r.stderr.strip()})")


with tempfile.TemporaryDirectory() as tmp:
    png = os.path.join(tmp, "p.png")
    synth(png)
    im = Image.open(png).convert("RGB")
    W, H = im.size
    check((W, H) == (1200, 90 + 2 * 260), f"the default size for two panels ({W}x{H})")
    px = im.load()
    x0, x1, top, bottom = 84, W - 24, 46, H - 52
    ph = (bottom - top - 14) / 2
    p0 = (top, top + ph)          # speed, km/h
    p1 = (top + ph + 14, bottom)  # brake pipe, bar
    span = 599.9                  # the data's extent in s: t0 .. t0 + 5999 x 100 ms

    def xof(s):
        return x0 + s / span * (x1 - x0)

    # the spike: the highest blue pixel of the speed panel, right above
    # t0 + 300 s, in the top tenth of the panel (250 against a sine of 100)
    best = None
    for x in range(x0 + 200, x1):  # right of the legend
        for y in range(int(p0[0]) + 1, int(p0[1])):
            if near(px[x, y], BLUE):
                if best is None or y < best[1]:
                    best = (x, y)
                break
    check(best is not None, "the speed series is drawn")
    check(abs(best[0] - xof(300)) <= 3, f"the one-sample spike is the top of the line at x={best[0]} (t0+300 s at {xof(300):.1f})")
    check(best[1] < p0[0] + 0.1 * ph, f"the spike reaches the top tenth of its panel (y={best[1]}, panel {p0[0]:.0f}..{p0[1]:.0f})")
    # with the sine alone the line would stay below 100/(250*1.05+...) of the range:
    # its highest elsewhere is far lower
    other = min((y for x in range(int(xof(320)), int(xof(440))) for y in range(int(p0[0]) + 1, int(p0[1]))
                 if near(px[x, y], BLUE)), default=None)
    check(other is not None and other > best[1] + 0.3 * ph, f"the sine elsewhere peaks far below the spike (y={other})")

    # the gap: no sample from t0+450 s to t0+500 s, no line there
    gap_cols = range(int(xof(455)), int(xof(495)))
    blue_in_gap = sum(1 for x in gap_cols for y in range(int(p0[0]) + 40, int(p0[1])) if near(px[x, y], BLUE))
    check(blue_in_gap == 0, f"no line across the 50 s without samples ({blue_in_gap} blue pixels)")
    blue_before = sum(1 for x in range(int(xof(400)), int(xof(440))) for y in range(int(p0[0]) + 1, int(p0[1])) if near(px[x, y], BLUE))
    check(blue_before > 40, f"the line is there before the gap ({blue_before} pixels)")

    # the second series on its own panel, not on the first
    orange1 = sum(1 for x in range(x0 + 300, x1, 3) for y in range(int(p1[0]), int(p1[1])) if near(px[x, y], ORANGE))
    orange0 = sum(1 for x in range(x0 + 300, x1, 3) for y in range(int(p0[0]), int(p0[1])) if near(px[x, y], ORANGE))
    check(orange1 > 20 and orange0 == 0, f"the brake pressure is on the second panel ({orange1} pixels there, {orange0} on the first)")

    # the panels' frames: dark lines at the panel edges
    left_edge = sum(1 for y in range(int(p0[0]) + 2, int(p0[1]) - 2) if sum(px[x0, y]) < 3 * 110)
    check(left_edge > 0.9 * (ph - 4), f"the first panel's frame is drawn ({left_edge} px of its left edge)")

    # the events: dashed dark red lines through both panels at t0+60 s and t0+400 s
    for s in (60, 400):
        x = round(xof(s) - 0.5)
        hits = [sum(1 for y in range(int(a) + 2, int(b) - 2) if near(px[xx, y], RED_EVENT, 60))
                for a, b in (p0, p1) for xx in (x,)]
        hits2 = [sum(1 for y in range(int(a) + 2, int(b) - 2) for xx in (x - 1, x, x + 1) if near(px[xx, y], RED_EVENT, 60))
                 for a, b in (p0, p1)]
        check(min(hits2) > 30, f"the event at t0+{s} s crosses both panels ({hits2} red pixels)")

    # the time labels and the value labels: dark text under and left of the panels
    under = sum(1 for x in range(x0, x1) for y in range(bottom + 4, bottom + 20) if sum(px[x, y]) < 3 * 120)
    left = sum(1 for x in range(30, x0 - 4) for y in range(int(p0[0]), int(p0[1])) if sum(px[x, y]) < 3 * 120)
    check(under > 100, f"the time axis is labelled ({under} dark pixels under the panels)")
    check(left > 100, f"the value axis is labelled ({left} dark pixels left of the first panel)")
    units = sum(1 for x in range(8, 24) for y in range(int(p0[0]), int(p0[1])) if sum(px[x, y]) < 3 * 120)
    check(units > 20, f"the unit is written along the first panel's axis ({units} dark pixels)")

    # SVG: the same picture as vectors
    svg = os.path.join(tmp, "p.svg")
    synth(svg)
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    check(root.tag == ns + "svg" and root.get("width").startswith("1200"), "an SVG document of the picture's width")
    paths = root.findall(".//" + ns + "path")
    check(len(paths) > 20, f"the SVG draws lines ({len(paths)} paths)")
    series = [p for p in paths if "stroke-width:1.3" in p.get("style", "") and "stroke:rgb(12%,47%,71%)" in p.get("style", "")]
    check(len(series) == 1, "one path draws the speed series in the first series' colour")
    d = series[0].get("d").split()
    moves = d.count("M")
    ys = [float(d[i + 2]) for i, tok in enumerate(d) if tok in ("M", "L")]
    check(moves == 2, f"the speed line is broken once, at the 50 s without samples ({moves} pieces)")
    check(min(ys) < p0[0] + 0.1 * ph, f"the SVG line reaches the spike (highest y {min(ys):.1f})")

    # HTML: one page that opens by itself, in a real browser
    html = os.path.join(tmp, "p.html")
    synth(html)
    page = open(html, encoding="utf-8").read()
    check("</script> run" not in page, "the title cannot close the page's script element")
    check("http://" not in page.split("<script>")[0] and "src=" not in page, "the page loads nothing from elsewhere")
    env = dict(os.environ, NODE_PATH=NODE_MODULES)
    r = subprocess.run(["node", BROWSER_JS, "file://" + html], capture_output=True, text=True, env=env, timeout=150)
    print(r.stdout, end="")
    print(r.stderr, end="", file=sys.stderr)
    check(r.returncode == 0, "the HTML page in headless Chromium")
print("plot-picture: all checks passed")
