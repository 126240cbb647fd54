-- Version 10 (issue 31): the raw TRDP telegrams of Batch.trdp
-- (record/railmon.proto TrdpTelegrams), stored as CAN frames are: one row
-- per telegram, by the same binary COPY, in the transaction that commits
-- the Batch's other rows and its ledger row (exactly once, as every
-- record), partitioned by day like samples so `railmon db prune` drops
-- their days with the rest.  The decoded TRDP samples are samples
-- (named in channel_names as any channel); this table keeps what the train
-- sent, so a telegram can be decoded again on the ground.
--
-- Unsigned 32-bit header fields are bigint (integer would turn half of
-- them negative); the addresses are inet (IPv4, host order on the vehicle,
-- as the proto's fixed32).  msg_type is the header's two ASCII letters as a
-- number ('Pd' 0x5064), flags the proto's TrdpFlag bits | the header's
-- result << 8 (0 valid; a refused header is recorded raw all the same).

CREATE TABLE trdp_telegrams (
    vehicle_id  integer NOT NULL,
    t           timestamptz NOT NULL,  -- the kernel's receive time, to the us
    seq         bigint NOT NULL,       -- in its vehicle log (batches.log_id)
    bus         integer NOT NULL,      -- bus index in the board file
    src_ip      inet NOT NULL,
    src_port    integer NOT NULL,
    dst_ip      inet NOT NULL,         -- a multicast group, or the receiver's address
    dst_port    integer NOT NULL,
    com_id      bigint NOT NULL,
    seq_counter bigint NOT NULL,       -- the header's sequenceCounter
    etb_topo    bigint NOT NULL,       -- etbTopoCnt
    op_trn_topo bigint NOT NULL,       -- opTrnTopoCnt
    msg_type    integer NOT NULL,
    flags       integer NOT NULL,
    payload     bytea NOT NULL,        -- the whole telegram: header, data set, padding
    session_id  bytea                  -- 16 bytes for MD (flags & 1), NULL for PD
) PARTITION BY RANGE (t);
CREATE INDEX trdp_telegrams_t ON trdp_telegrams USING brin (t);
