/* SPDX-License-Identifier: MIT */
/*
 * seal.h - the Seal of railmon.proto as plain data: what a seal Batch
 * carries (rec_encoder_set_seal, rec_batch_seal), and the canonical bytes
 * its signature covers.  No cryptography here: evidence/ hashes and signs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"

/* 2: a new chain is the one whose chain_start is the genesis of its
   first_seq (evd_chain_genesis), and its prev_seal links it to the last
   Seal before it (zero only when the writer found none); batch_digests
   lists the digest of every Batch of the range.  1: a new chain had
   prev_seal zero, and there was no digest list.  Both are read. */
#define REC_SEAL_VERSION 2
#define REC_SEAL_VERSION_MIN 1
#define REC_SEAL_HASH_LEN 32
#define REC_SEAL_SIG_LEN 64
/* vehicle at most 63 bytes (the board file's limit), so the canonical
   bytes have a fixed upper size */
#define REC_SEAL_VEHICLE_MAX 63
#define REC_SEAL_SIGNED_MAX (8 + 4 + 1 + REC_SEAL_VEHICLE_MAX + REC_LOG_ID_LEN + REC_BOOT_ID_LEN + \
                             3 * 8 + 3 * REC_SEAL_HASH_LEN + 4 + 3 * 8)

/* v2: the fields of the Seal's own Batch that neither the Seal nor its
   one SEAL record carry.  They are signed with the Seal, so the last
   Seal of a chain (no later Seal links to its Batch's bytes) covers its
   whole Batch by its signature alone.  The writer gives them before
   signing (the values its encoder writes); rec_batch_seal reads them from
   the Batch.  Batch.historical is not among them: it is the transport
   flag a re-send appends, outside the evidence (evidence/evd.h). */
struct rec_seal_batch {
	uint32_t schema_version;
	int64_t t0_ns;                         /* the SEAL record's base: t_ns */
	uint64_t config_hash;
	int64_t mono_t0_ns;                    /* 0: not known */
};

struct rec_seal {
	uint32_t version;                      /* REC_SEAL_VERSION_MIN..REC_SEAL_VERSION;
	                                          0 is taken as REC_SEAL_VERSION */
	char vehicle[REC_SEAL_VEHICLE_MAX + 1];
	uint8_t log_id[REC_LOG_ID_LEN];
	uint8_t boot_id[REC_BOOT_ID_LEN];
	uint64_t first_seq;                    /* covers [first_seq, end_seq) */
	uint64_t end_seq;                      /* the seal Batch's own seq */
	int64_t t_ns;
	uint8_t chain_start[REC_SEAL_HASH_LEN];
	uint8_t chain_head[REC_SEAL_HASH_LEN];
	uint8_t prev_seal[REC_SEAL_HASH_LEN];  /* all zero: a new chain */
	uint8_t signature[REC_SEAL_SIG_LEN];
	bool is_signed;
	/* v2: d(i) of each Batch of [first_seq, end_seq) in seq order,
	   ndigests * REC_SEAL_HASH_LEN bytes; 0: not listed.  Not signed: the
	   list folded from chain_start must give chain_head (which is), so it
	   proves itself, and a mismatch names the Batch that changed.  Points
	   into memory the writer or the decoded Batch owns. */
	const uint8_t *digests;
	uint32_t ndigests;
	struct rec_seal_batch batch;           /* v2, signed; not in the Seal message */
};

/*
 * The bytes the signature covers: "RMSEAL1\0", version (4, LE), the
 * vehicle's length (1) and bytes, log id, boot id, first_seq, end_seq,
 * t_ns (8 each, LE), chain_start, chain_head, prev_seal; version 2 and
 * later then the Seal Batch's own fields (struct rec_seal_batch):
 * schema_version (4, LE), t0_ns, config_hash, mono_t0_ns (8 each, LE).
 * The signer and every verifier build them here.  Fixed by this
 * function, not by protobuf's encoding, so any reader can rebuild them.
 * buf holds REC_SEAL_SIGNED_MAX bytes.  Returns the length, or -EINVAL.
 */
int rec_seal_signed_bytes(const struct rec_seal *seal, uint8_t buf[REC_SEAL_SIGNED_MAX]);

/*
 * The next Batch carries this Seal (copied); it should hold exactly one
 * record, the ACQ_EV_SEAL event.  NULL clears it.  0 or -EINVAL.
 */
int rec_encoder_set_seal(rec_encoder_t *enc, const struct rec_seal *seal);

/*
 * The Seal a decoded Batch carries.  0, -ENOENT (none: a data Batch),
 * -EBADMSG (a Seal with wrong field sizes, an unknown version or an empty
 * range), -EINVAL.
 */
int rec_batch_seal(const rec_batch_t *b, struct rec_seal *ret_seal);

/* What a Batch's mono_t0_ns is for a base t0_ns written with the clock
   offset (realtime - monotonic) offset_ns: what rec_encoder_finish writes
   (and so what a Seal signs for its own Batch). */
int64_t rec_mono_t0(int64_t t0_ns, int64_t offset_ns);
