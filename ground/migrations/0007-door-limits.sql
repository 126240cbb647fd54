-- Version 7 (docs/ground-schema.md, "Limits at the door"; issue 26): what
-- the receiver refuses of a vehicle, counted per vehicle and reason for
-- the dashboard; the ranges gap repair asked for (a "gone" answer is
-- taken only for one of them); each vehicle's channel dictionaries by
-- config hash, so the names come from its newest only.

-- Refusals at the door, per vehicle and reason: 'time' (record times
-- outside the window), 'seq-jump' (over 2^40 records from the log's
-- committed Batches), 'dictionary' (over the size, channel or rate
-- limits), 'gone-unasked' (a "gone" answer for a range not asked for).
-- detail: the last one in words.
CREATE TABLE door_refusals (
    vehicle_id integer NOT NULL REFERENCES vehicles,
    reason     text NOT NULL,
    count      bigint NOT NULL DEFAULT 0,
    first_at   timestamptz NOT NULL DEFAULT now(),
    last_at    timestamptz NOT NULL DEFAULT now(),
    detail     text NOT NULL DEFAULT '',
    PRIMARY KEY (vehicle_id, reason)
);

-- The ranges gap repair asked each vehicle for (railmon/<vehicle>/resend),
-- by every receiver (the answers come on a shared subscription, perhaps to
-- another receiver); kept 30 days after the last ask.
CREATE TABLE resend_asked (
    vehicle_id integer NOT NULL REFERENCES vehicles,
    log_id     bytea NOT NULL,
    first_seq  bigint NOT NULL,
    last_seq   bigint NOT NULL,
    asked_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vehicle_id, log_id, first_seq, last_seq)
);

-- Each vehicle's dictionaries by config hash: first_seen bounds the rate
-- of new ones, updated_at (when a live Batch or the retained message last
-- carried it) picks the newest.
CREATE TABLE dictionaries (
    vehicle_id  integer NOT NULL REFERENCES vehicles,
    config_hash bigint NOT NULL,
    first_seen  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vehicle_id, config_hash)
);
CREATE INDEX dictionaries_newest ON dictionaries (vehicle_id, updated_at DESC);
INSERT INTO dictionaries (vehicle_id, config_hash, first_seen, updated_at)
SELECT vehicle_id, config_hash, min(updated_at), max(updated_at) FROM configs GROUP BY 1, 2;

-- The names of the vehicle's newest dictionary only: the other configs'
-- rows are kept (export of old data may want them) but never windowed
-- over; a filter on vehicle_id reaches both tables' keys.
CREATE OR REPLACE VIEW channel_names AS
SELECT c.vehicle_id, c.channel, c.name, c.unit, c.bus, c.source, c.value_table
FROM (SELECT DISTINCT ON (vehicle_id) vehicle_id, config_hash FROM dictionaries
      ORDER BY vehicle_id, updated_at DESC, config_hash) d
JOIN configs c ON c.vehicle_id = d.vehicle_id AND c.config_hash = d.config_hash;

-- The payload's size as received: a Batch refused at the door past the
-- first 100 per vehicle and reason is kept without its payload.
ALTER TABLE refused ADD COLUMN bytes integer;
