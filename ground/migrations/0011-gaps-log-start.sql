-- Version 11: the hole at the start of a log.  Every log starts at seq 1
-- (a vehicle's new log restarts at 1 under a new log id; ground/README.md,
-- "The per-log ledger"), so a log whose first committed Batch starts
-- later lacks seqs 1..first_seq - 1.  The view before this one had only
-- the holes between committed Batches (lag() is NULL for a log's first):
-- a log whose first Batch was lost on the way (a receiver killed before
-- its commit, a broker restarted without persistence) showed no gap, and
-- gap repair never asked for it.  Now that hole is a gap like the others:
-- asked for, and explained when the vehicle answers "gone" for it (its
-- start pruned on board) or `refused` holds it.  Same columns, same order.
-- The completeness view is unchanged: it counts the holes between a log's
-- received Batches (a log first met late, its start deleted on board,
-- would otherwise count up to 2^40 records missing).

CREATE OR REPLACE VIEW gaps AS
SELECT vehicle_id, log_id, prev_end AS from_seq, first_seq - 1 AS to_seq,
       first_seq - prev_end AS records, t_first AS t_after, received_at AS received_after,
       EXISTS (SELECT 1 FROM gone g WHERE g.vehicle_id = x.vehicle_id AND g.log_id = x.log_id
               AND g.first_seq <= x.prev_end AND g.last_seq >= x.first_seq - 1)
       OR (SELECT coalesce(sum(r.count), 0) FROM (SELECT DISTINCT r.first_seq, r.count FROM refused r
                                                  JOIN vehicles v ON v.name = r.vehicle
                                                  WHERE v.vehicle_id = x.vehicle_id AND r.log_id = x.log_id
                                                  AND r.first_seq >= x.prev_end
                                                  AND r.first_seq + r.count <= x.first_seq) r)
          = x.first_seq - x.prev_end AS explained
FROM (SELECT b.*, coalesce(lag(first_seq + count) OVER (PARTITION BY vehicle_id, log_id ORDER BY first_seq), 1)
             AS prev_end
      FROM batches b) x
WHERE first_seq > prev_end;
