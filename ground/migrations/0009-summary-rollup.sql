-- Version 9 (issue 29): what `railmon summary --db` needs per second, so a
-- day of one channel at 100 Hz is 86,400 rows instead of 8.64 M
-- (docs/ground-schema.md, "Summary rollup").  Its own table, not columns of
-- rollup_1s: the dashboard's rollups count good samples only and a row
-- there means a good sample; summary counts every sample (invalid and
-- out-of-range ones too).  Per second, not per minute: the receiver's
-- workers commit groups whose Batches interleave within a minute (so the
-- intervals of a minute could not be merged exactly), while the pieces of
-- a second come from consecutive Batches of the log.  Maintained in the
-- transaction that commits the Batches, from the same per-second staging
-- rows as rollup_1s (ground/rollup.c); `db prune` deletes it with the raw
-- days, so it always answers what the raw rows would.
--
-- Per vehicle, channel and second, over every sample:
--   n_all, n_oor, n_inv  samples; of quality out-of-range; invalid (quality
--                        invalid or a value that is not finite)
--   a_min, a_max, a_sum  over the others (summary's valid values; NULL, NULL,
--                        0 when none)
--   t_first, t_last      the first and last sample's time
--   dt_min, dt_max       the shortest positive and the longest interval
--                        between two samples inside the second, in us
--                        (dt_min NULL: none positive).  dt_max NULL: not
--                        known (two groups' samples interleave in the
--                        second): summary reads the raw rows there.

CREATE TABLE rollup_summary_1s (
    vehicle_id integer NOT NULL,
    channel    bigint NOT NULL,
    t          timestamptz NOT NULL,     -- the second's start (UTC)
    n_all      bigint NOT NULL,
    n_oor      bigint NOT NULL,
    n_inv      bigint NOT NULL,
    a_min      double precision,
    a_max      double precision,
    a_sum      double precision NOT NULL,
    t_first    timestamptz NOT NULL,
    t_last     timestamptz NOT NULL,
    dt_min     bigint,
    dt_max     bigint,
    PRIMARY KEY (vehicle_id, channel, t)
);

-- The samples already stored, second by second, with the intervals inside
-- each second (lag over the second's samples in time order).
INSERT INTO rollup_summary_1s
SELECT vehicle_id, channel, sec, count(*),
       count(*) FILTER (WHERE quality = 1),
       count(*) FILTER (WHERE NOT ok),
       min(value) FILTER (WHERE ok), max(value) FILTER (WHERE ok),
       coalesce(sum(value) FILTER (WHERE ok), 0),
       min(t), max(t),
       min(d) FILTER (WHERE d > 0), coalesce(max(d), 0)
FROM (SELECT vehicle_id, channel, t, value, quality, sec,
             quality <> 2 AND value <> 'NaN' AND value <> 'Infinity' AND value <> '-Infinity' AS ok,
             (extract(epoch FROM t - lag(t) OVER (PARTITION BY vehicle_id, channel, sec ORDER BY t, seq))
              * 1000000)::bigint AS d
      FROM (SELECT *, date_bin('1 second', t, timestamptz 'epoch') AS sec FROM samples) s) w
GROUP BY vehicle_id, channel, sec;
