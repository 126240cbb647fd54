# SPDX-License-Identifier: MIT
"""plot_day.py - a day of one channel in a PostgreSQL 15 (pg.py) for
`railmon plot --db` (issue 29): test-ground-plot.py and
bench-plot-db.py.

Loaded by SQL at schema version 8, then `railmon db migrate` to 9, whose
backfill builds rollup_summary_1s from the rows (test-ground-summary.py
checks the backfill gives what the receiver maintains):
- Vehicle.Speed at HZ: integer values of a slow wave with noise (many
  equal lowest and highest values in a bucket: ties), a NaN a minute, 1%
  invalid (one in invalid_every), 0.4% out-of-range, a 3 s pause every
  hour between seconds and a 0.6 s one inside a second;
- Vehicle.Pressure at 1 Hz, half a second into each second.
"""
import subprocess

from mqtt_peers import check

DAY = "2026-12-01"
T0 = DAY + " 00:00:00+00"


def load(pg, railmon, src, hz, invalid_every=100):
    """The day into pg (one Speed sample in invalid_every invalid);
    returns the number of sample rows."""
    pg.schema_at(src, 8, after="0009-summary-rollup.sql")
    q = lambda sql: pg.psql(sql, timeout=3600)  # noqa: E731
    q("INSERT INTO vehicles (vehicle_id, name) VALUES (1, 'day')")
    q("INSERT INTO dictionaries (vehicle_id, config_hash) VALUES (1, 7)")
    q("INSERT INTO configs (vehicle_id, config_hash, channel, name, unit, bus, source, decimals) VALUES "
      "(1, 7, 1, 'Vehicle.Speed', 'km/h', 0, 'can vehicle Vehicle', 2), "
      "(1, 7, 2, 'Vehicle.Pressure', 'bar', 0, 'can vehicle Vehicle', NULL)")
    q("CREATE TABLE samples_d PARTITION OF samples FOR VALUES FROM ('%s') TO ('%s'::timestamptz + "
      "interval '1 day')" % (T0, T0))
    step = 10**6 // hz
    n = 86400 * hz
    q("INSERT INTO samples (vehicle_id, t, seq, channel, value, quality) SELECT 1, timestamptz '%s' + "
      "(i * %d + (i %% 3) * 7) * interval '1 microsecond', i + 1, 1, "
      "CASE WHEN i %% (60 * %d) = 17 THEN 'NaN'::float8 "
      "ELSE round(40 * sin(i / (300.0 * %d)) + (i * 7919 %% 5)) END, "
      "CASE WHEN i %% %d = 3 THEN 2 WHEN i %% 250 = 7 THEN 1 ELSE 0 END FROM generate_series(0::bigint, %d) i "
      "WHERE NOT ((i * %d) %% 3600000000 BETWEEN 1800000000 AND 1802999999 "
      "OR (i * %d) %% 3600000000 BETWEEN 2700200000 AND 2700799999)"
      % (T0, step, hz, hz, invalid_every, n - 1, step, step))
    q("INSERT INTO samples (vehicle_id, t, seq, channel, value, quality) SELECT 1, timestamptz '%s' + "
      "k * interval '1 second' + interval '500 milliseconds', %d + k, 2, (k %% 40) * 0.5, 0 "
      "FROM generate_series(0, 86399) k" % (T0, n + 1))
    q("VACUUM ANALYZE samples")
    r = subprocess.run([railmon, "db", "migrate", "--db", pg.url], capture_output=True, text=True, timeout=3600)
    check(r.returncode == 0 and "0009-summary-rollup" in r.stdout, "db migrate to 9", r.stdout, r.stderr)
    q("VACUUM ANALYZE rollup_summary_1s")
    return int(pg.psql("SELECT count(*) FROM samples"))
