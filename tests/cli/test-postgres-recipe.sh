#!/bin/bash
# test-postgres-recipe.sh RAILMON SRC - docs/commands/export.md's PostgreSQL recipe (the
# fenced block after the postgres-recipe marker), run exactly as written
# by psql against a throwaway PostgreSQL 15 server (recipe of
# /work/shared/recipes: initdb, pg_ctl on a socket in a temp dir, stopped
# on every exit), on a log of the demo trace replayed with its DBC in
# ./railmon-data, `railmon` found in PATH.  The table must hold every
# record export writes, with names, labels and times.
set -euo pipefail
RAILMON=$(realpath "$1")
SRC=$(realpath "$2")
PGBIN=/usr/lib/postgresql/15/bin
DIR=$(mktemp -d /tmp/pgt.XXXXXX)
fail() { echo "FAIL: $*"; [ -f "$DIR/server.log" ] && tail -20 "$DIR/server.log"; exit 1; }
cleanup() {
	[ -f "$DIR/data/postmaster.pid" ] && runuser -u postgres -- $PGBIN/pg_ctl -D "$DIR/data" -m immediate -w stop \
		>/dev/null 2>&1
	rm -rf "$DIR"
}
trap cleanup EXIT
chown postgres:postgres "$DIR"
runuser -u postgres -- $PGBIN/initdb -D "$DIR/data" -A trust -U railmon -E UTF8 --no-locale --no-sync >/dev/null
runuser -u postgres -- $PGBIN/pg_ctl -D "$DIR/data" -l "$DIR/server.log" -w \
	-o "-c listen_addresses='' -k $DIR -c fsync=off" start >/dev/null || fail "postgres did not start"
psql -q -h "$DIR" -U railmon postgres -c 'CREATE DATABASE railmon_test' >/dev/null

mkdir "$DIR/work" "$DIR/bin"
ln -s "$RAILMON" "$DIR/bin/railmon"
cd "$DIR/work"
"$RAILMON" replay "$SRC/cli/demo/train.log" --dbc "$SRC/cli/demo/train.dbc" 2>/dev/null
awk '/postgres-recipe/ {m = 1; next} m && /^```sql/ {b = 1; next} b && /^```/ {exit} b {print}' \
	"$SRC/docs/commands/export.md" > recipe.sql
grep -q 'FROM PROGRAM' recipe.sql || fail "the README's recipe not found"
PATH=$DIR/bin:$PATH psql -X -v ON_ERROR_STOP=1 -h "$DIR" -U railmon railmon_test -f recipe.sql > recipe.out ||
	fail "the recipe failed: $(cat recipe.out)"
cat recipe.out | head -8

q() { psql -X -At -h "$DIR" -U railmon railmon_test -c "$1"; }
want=$("$RAILMON" export --data railmon-data 2>&1 >/dev/null | grep -o '[0-9]* records written' | cut -d' ' -f1)
[ "$(q 'SELECT count(*) FROM railmon')" = "$want" ] || fail "table holds $(q 'SELECT count(*) FROM railmon'), export $want"
speed=$("$RAILMON" export --data railmon-data -c Speed --format jsonl 2>/dev/null | wc -l)
[ "$(q "SELECT count(*) FROM railmon WHERE name = 'VehicleSpeed.Speed' AND unit = 'km/h'")" = "$speed" ] || fail "Speed samples"
[ "$(q "SELECT DISTINCT label FROM railmon WHERE name = 'DoorStatus.Car1Door1' AND value = 1")" = open ] || fail "labels"
[ "$(q "SELECT count(*) FROM railmon WHERE extract(epoch FROM time) * 1e9 - time_ns::float8 > 1000")" = 0 ] ||
	fail "time and time_ns disagree"
[ "$(q "SELECT count(*) FROM railmon WHERE kind = 'can' AND can_id = '120'")" -gt 0 ] || fail "CAN ids"
echo "postgres recipe: \\copy FROM PROGRAM as the README writes it: $want records, names, labels, times: ok"
