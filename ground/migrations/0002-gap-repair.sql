-- Gap repair (docs/ground-schema.md, "Gap repair"): ranges a vehicle
-- answered "gone" for (its log's retention deleted them before they
-- reached the ground), and the gaps view says which holes are explained
-- that way and since when each hole is known.

CREATE TABLE gone (
    vehicle_id  integer NOT NULL REFERENCES vehicles,
    log_id      bytea NOT NULL,
    first_seq   bigint NOT NULL,
    last_seq    bigint NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vehicle_id, log_id, first_seq, last_seq)
);

-- New columns at the end (CREATE OR REPLACE VIEW keeps the old ones):
-- received_after, when the Batch after the hole was committed; explained,
-- whether the vehicle said every record of the hole is gone.
CREATE OR REPLACE VIEW gaps AS
SELECT vehicle_id, log_id, prev_end AS from_seq, first_seq - 1 AS to_seq,
       first_seq - prev_end AS records, t_first AS t_after, received_at AS received_after,
       EXISTS (SELECT 1 FROM gone g WHERE g.vehicle_id = x.vehicle_id AND g.log_id = x.log_id
               AND g.first_seq <= x.prev_end AND g.last_seq >= x.first_seq - 1) AS explained
FROM (SELECT b.*, lag(first_seq + count) OVER (PARTITION BY vehicle_id, log_id ORDER BY first_seq) AS prev_end
      FROM batches b) x
WHERE first_seq > prev_end;
