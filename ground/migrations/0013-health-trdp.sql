-- Version 13 (issue 31): a TRDP bus's main counters in the health table.
-- Health entries of kind "trdp" carry some thirty counters of their own
-- (record/railmon.proto Health, fields 30-65); until now the table kept
-- only the counters every part has, so the dashboard could not tell a TRDP
-- bus that receives from one whose headers are all refused, whose sequence
-- counters jump or whose socket options the kernel refused.  These five
-- are the ones that say so; the others stay in the Batches (the log).
-- 0 for every other kind of part, and for rows written before this
-- version (until the part's next entry replaces them).
ALTER TABLE health
    ADD COLUMN trdp_telegrams       bigint NOT NULL DEFAULT 0,  -- received, any header
    ADD COLUMN trdp_refused         bigint NOT NULL DEFAULT 0,  -- headers refused: short, FCS, version, type, too long, truncated
    ADD COLUMN trdp_seq_gaps        bigint NOT NULL DEFAULT 0,  -- telegrams missed by their sequence counters
    ADD COLUMN trdp_byte_ring_drops bigint NOT NULL DEFAULT 0,  -- dropped: no room in the telegrams' byte ring
    ADD COLUMN trdp_opts_refused    integer NOT NULL DEFAULT 0; -- BUS_TRDP_NO_* bits: socket options the kernel refused
