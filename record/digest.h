/* SPDX-License-Identifier: MIT */
/*
 * digest.h - "the same records?", once for every ledger: the ground's
 * in memory (ground/ledger.c: a re-send or a conflict, rec_batch_hash())
 * and the ground database's (ground/, kept in batches.digest,
 * rec_batch_digest()), and the ground log's check of a Batch behind its
 * end (ground/logs.c, rec_batch_same_records()).
 *
 * Records, not bytes: a backlog re-send carries Batch.historical too, and
 * the same records encode alike whatever else the Batch holds.  The
 * digest is FNV-1a over each record's fields in seq order (no padding
 * bytes); its value with REC_DIGEST_SEED is what the ground database
 * stores, so it never changes.  A receiver that must not let a sender aim
 * at a collision starts from a seed of its own (a random one).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "basic/hash.h"

#define REC_DIGEST_SEED BASIC_FNV1A_SEED /* FNV-1a's offset basis: the digest stored is plain FNV-1a */


/* h extended by one record's fields. */
uint64_t rec_item_digest(uint64_t h, const struct acq_item *it);

/* The first count records of b from seed. */
uint64_t rec_batch_digest(const rec_batch_t *b, uint32_t count, uint64_t seed);

/*
 * The same records as a keyed hash for a ledger kept in memory only (the
 * ground's, ground/ledger.c: a re-send or a conflict?), never stored: a
 * multiply-xorshift a 64-bit word at a time, about twice as fast as the
 * FNV-1a digest's byte loop, which is what the database stores and so
 * cannot change.  key: a seed no sender knows (a random one), so a sender
 * cannot aim at a collision it can compute; it is not a MAC.
 */
uint64_t rec_item_hash(uint64_t h, const struct acq_item *it);
uint64_t rec_batch_hash(const rec_batch_t *b, uint32_t count, uint64_t key);

/* Whether two decoded Batches hold the same records under the same seqs
   (every field compared, not a digest): 1 or 0, -EINVAL for NULL. */
int rec_batch_same_records(const rec_batch_t *a, const rec_batch_t *b);

/* Whether the records two decoded Batches both hold (the same seq; either
   may be reduced) are the same, field for field: 1 or 0, -EINVAL for
   NULL.  held (NULL, or a bit per record of b, set by the caller to 0)
   gets the bits of b's records that a holds set: a ground log's Batches
   over a range and one received again, a request's answer, reduced or
   whole (ground/logs.c: the same records, new ones, or a conflict). */
int rec_batch_records_agree(const rec_batch_t *a, const rec_batch_t *b, uint8_t *held);
