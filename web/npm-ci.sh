#!/bin/sh
# npm-ci.sh UI_DIR OUT_DIR STAMP [PROBE] - install the dashboard's npm
# packages (uPlot; puppeteer-core for the browser tests), or another
# package.json's (tests/sparkplug: Tahu's sparkplug-payload), exactly as
# UI_DIR/package-lock.json pins them, into OUT_DIR/node_modules, with
# `npm ci`.  Offline builds: fill npm's cache first (`npm ci` once with the
# network, or `npm cache add` of the lock file's tarballs) and set
# npm_config_offline=true; README.md "Dashboard" says more.
set -eu
ui=$1 out=$2 stamp=$3
# PROBE: a path under node_modules that an install has (uPlot's by default)
probe=${4:-uplot/dist}
mkdir -p "$out"
if ! cmp -s "$ui/package-lock.json" "$out/package-lock.json" || [ ! -e "$out/node_modules/$probe" ]; then
	cp "$ui/package.json" "$ui/package-lock.json" "$out/"
	(cd "$out" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
touch "$stamp"
