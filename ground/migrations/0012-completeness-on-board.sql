-- Version 12 (issue 32): a reduced Batch's unsent seqs are "on board", not
-- received.  A reduced Batch (the vehicle's `uplink =` policies) accounts
-- for its whole source range [first_seq, source_end_seq) but brings only
-- some of its records; the rest are in the vehicle's log.  Until now
-- ledger_days counted the whole range as records, so completeness called
-- records received that never reached the ground.  Now records are what
-- arrived and on_board the range's seqs that did not (ground/ingest.c,
-- sum_day): missing is unchanged (the span less both), and complete is
-- still the fraction not missing (an on-board record can be fetched, it is
-- not lost).  batches.count stays the whole range (the ledger's key).
-- Rows written before this version keep the reduced ranges in records
-- (ledger_days did not split them): on_board 0 there.

ALTER TABLE ledger_days ADD COLUMN on_board bigint NOT NULL DEFAULT 0;

-- Same columns, same order, on_board last (readers by position keep
-- working).
CREATE OR REPLACE VIEW completeness AS
SELECT v.name AS vehicle, d.day, sum(d.batches)::bigint AS batches, sum(d.records)::bigint AS records,
       sum(d.missing) AS missing,
       sum(d.records + d.on_board)::double precision
           / nullif(sum(d.records + d.on_board) + sum(d.missing), 0) AS complete,
       sum(d.on_board)::bigint AS on_board
FROM (SELECT vehicle_id, day, batches, records, on_board,
             CAST(greatest(max_end - min_first - records - on_board, 0)
                  + greatest(coalesce(min_first - lag(max_end) OVER (PARTITION BY vehicle_id, log_id
                                                                     ORDER BY min_first), 0), 0) AS numeric) AS missing
      FROM ledger_days) d
JOIN vehicles v USING (vehicle_id)
GROUP BY v.name, d.day;
