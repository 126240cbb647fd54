-- Text channels (a Modbus `type = string` channel: a vehicle number, a
-- software version, a fault text), stored on change and now and then, as
-- the records of Batch.texts (record/railmon.proto): partitioned by day
-- like samples, so `railmon db prune` drops their days with the rest.

CREATE TABLE texts (
    vehicle_id integer NOT NULL,
    t          timestamptz NOT NULL,
    seq        bigint NOT NULL,       -- in its vehicle log (batches.log_id)
    channel    bigint NOT NULL,
    text       text NOT NULL,         -- printable ASCII, at most 64 characters
    quality    smallint NOT NULL
) PARTITION BY RANGE (t);
CREATE INDEX texts_t ON texts USING brin (t);
