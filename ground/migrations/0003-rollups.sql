-- Rollups for dashboards (docs/ground-schema.md, "Rollups"): per vehicle,
-- channel and second / minute, the count, minimum, maximum and sum of the
-- samples of good quality with finite values, maintained in each Batch's
-- own transaction (so a duplicate Batch never counts twice).

CREATE TABLE rollup_1s (
    vehicle_id integer NOT NULL,
    channel    bigint NOT NULL,
    t          timestamptz NOT NULL,     -- the second's start (UTC)
    n          bigint NOT NULL,
    vmin       double precision NOT NULL,
    vmax       double precision NOT NULL,
    vsum       double precision NOT NULL,
    PRIMARY KEY (vehicle_id, channel, t)
);

CREATE TABLE rollup_1min (
    vehicle_id integer NOT NULL,
    channel    bigint NOT NULL,
    t          timestamptz NOT NULL,     -- the minute's start (UTC)
    n          bigint NOT NULL,
    vmin       double precision NOT NULL,
    vmax       double precision NOT NULL,
    vsum       double precision NOT NULL,
    PRIMARY KEY (vehicle_id, channel, t)
);

CREATE VIEW samples_1s AS
SELECT v.name AS vehicle, r.channel, n.name AS channel_name, n.unit, r.t, r.n AS count, r.vmin AS min,
       r.vmax AS max, r.vsum / r.n AS mean
FROM rollup_1s r JOIN vehicles v USING (vehicle_id)
LEFT JOIN channel_names n ON n.vehicle_id = r.vehicle_id AND n.channel = r.channel;

CREATE VIEW samples_1min AS
SELECT v.name AS vehicle, r.channel, n.name AS channel_name, n.unit, r.t, r.n AS count, r.vmin AS min,
       r.vmax AS max, r.vsum / r.n AS mean
FROM rollup_1min r JOIN vehicles v USING (vehicle_id)
LEFT JOIN channel_names n ON n.vehicle_id = r.vehicle_id AND n.channel = r.channel;
