#!/bin/sh
# npm-ci.sh UI_DIR OUT_DIR STAMP - install the dashboard's npm packages
# (uPlot; puppeteer-core for the browser tests) exactly as
# UI_DIR/package-lock.json pins them, into OUT_DIR/node_modules, with
# `npm ci`.  Offline builds: fill npm's cache first (`npm ci` once with the
# network, or `npm cache add` of the lock file's tarballs) and set
# npm_config_offline=true; README.md "Dashboard" says more.
set -eu
ui=$1 out=$2 stamp=$3
mkdir -p "$out"
if ! cmp -s "$ui/package-lock.json" "$out/package-lock.json" || [ ! -d "$out/node_modules/uplot/dist" ]; then
	cp "$ui/package.json" "$ui/package-lock.json" "$out/"
	(cd "$out" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
touch "$stamp"
