-- Version 6 (docs/ground-schema.md, "Health", "Status", "Value tables"):
-- what the dashboard (railmon serve) shows of each vehicle's recorder
-- besides its data.

-- The newest Health entry of each part of each vehicle (a bus, the
-- collector, the log, the uplink, the clock: Health.name), replaced in the
-- transaction that commits the Batch carrying it unless a newer one is
-- there (a historical Batch brings old health): one row per part, so the
-- table stays the size of the fleet.  t is the Batch's time base
-- (Batch.t0_ns), when the vehicle wrote the entry.
CREATE TABLE health (
    vehicle_id         integer NOT NULL REFERENCES vehicles,
    name               text NOT NULL,
    kind               text NOT NULL,
    bus                integer NOT NULL,        -- 65535 for daemon parts
    t                  timestamptz NOT NULL,
    received_at        timestamptz NOT NULL DEFAULT now(),
    items              bigint NOT NULL,
    drops              bigint NOT NULL,
    errors             bigint NOT NULL,
    overruns           bigint NOT NULL,
    rx_dropped         bigint NOT NULL,
    bad_input          bigint NOT NULL,
    backlog            bigint NOT NULL,
    latency_p99_us     bigint NOT NULL,
    latency_max_us     double precision NOT NULL,
    transaction_p99_us bigint NOT NULL,
    ring_fill_pct      integer NOT NULL,
    rate_hz            double precision NOT NULL,
    state              text NOT NULL,           -- bus device "up", "gone", "reopening"; uplink "connected"
    reopens            bigint NOT NULL,
    window_alarm       integer NOT NULL,        -- log: 0 kept, 1 projected, 2 due
    clock_unsynced     boolean NOT NULL,
    PRIMARY KEY (vehicle_id, name)
);

-- Online or offline from the vehicle's retained status topic
-- (railmon/<vehicle>/status: the forwarder's "online" when it connects, its
-- will "offline" when it vanishes), as the receivers saw it; since: when
-- the state last changed.  A vehicle without a row has never been heard on
-- it (the dashboard falls back to its last Batch).
CREATE TABLE vehicle_status (
    vehicle_id integer PRIMARY KEY REFERENCES vehicles,
    state      text NOT NULL CHECK (state IN ('online', 'offline')),
    since      timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- A channel's value table (DBC VAL_) as the dictionary carries it
-- (Channel.value_table): "VALUE LABEL" per entry, VALUE the physical value
-- in the shortest form that reads back.  NULL: none.
ALTER TABLE configs ADD COLUMN value_table text[];

-- New columns go at the end: the views over channel_names stay as they are.
CREATE OR REPLACE VIEW channel_names AS
SELECT vehicle_id, channel, name, unit, bus, source, value_table FROM (
    SELECT c.*, row_number() OVER (PARTITION BY vehicle_id, channel ORDER BY updated_at DESC) AS rn
    FROM configs c) x
WHERE rn = 1;

-- The label of value v in value table vt, or NULL (entries whose VALUE is
-- not a number are skipped; the receiver stores only numbers there).
CREATE FUNCTION value_label(vt text[], v double precision) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT substr(e, strpos(e, ' ') + 1) FROM unnest(vt) e
    WHERE CASE WHEN split_part(e, ' ', 1) ~ '^[-+]?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$'
               THEN split_part(e, ' ', 1)::double precision = v END
    LIMIT 1
$$;
