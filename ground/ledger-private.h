/* SPDX-License-Identifier: MIT */
/*
 * ledger-private.h - a log's state in the ledger (struct stream) and the
 * functions of ledger-stream.c on it, for ledger.c (private to ground/).
 * The caller holds the ledger's lock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "record/batch.h"

struct range {
	uint64_t lo, hi; /* [lo, hi) */
};

/* One accepted Batch, by the records it holds (not its bytes: a backlog
   re-send carries two more bytes, Batch.historical). */
struct digest {
	uint64_t first_seq;
	uint64_t hash;
	uint32_t count;
};

/* One (vehicle, log id). */
struct stream {
	const char *vehicle;       /* the vehicle's name */
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;
	struct range *ranges;      /* sorted, disjoint, not touching */
	size_t nranges, cap;
	uint64_t floor;            /* 0, or where the remembered ranges begin */
	uint64_t lowest, end;      /* span of the records counted; end 0: none yet */
	uint64_t held_end;         /* end 0: where the last first Batch far from seq 1
	                              ended (seq_jump(): the next one there confirms it) */
	uint64_t records, duplicates, unverified, old, conflicts, seq_jumps;
	uint64_t on_board;         /* seqs of reduced ranges not sent: kept on board */
	uint64_t reduced;          /* reduced Batches with something new */
	struct range *ob;          /* sorted, disjoint: seqs on board (in a reduced
	                              Batch's range, not sent); a whole Batch over
	                              them later brings them (a request) */
	size_t nob, ob_cap;
	struct digest *dig;        /* ring sorted by first_seq, non-overlapping */
	size_t dig_head, ndig, dig_cap; /* dig_cap a power of two */
	void *log_ctx;
	struct stream *next;       /* the vehicle's logs, newest first */
};

/* ledger-stream.c: the sorted ranges of seqs seen */

/* seq is in a range seen. */
bool grd_ledger_range_covered(const struct stream *s, uint64_t seq);
/* Add [lo, hi), merging with every range it overlaps or touches; past
   GRD_LEDGER_MAX_RANGES the oldest is forgotten (the floor moves up, the
   digests below it go).  The caller has already counted which records
   were new.  0 or -ENOMEM. */
int grd_ledger_range_insert(struct stream *s, uint64_t lo, uint64_t hi);
/* The seqs of the counted span neither received nor on board. */
uint64_t grd_ledger_stream_missing(const struct stream *s);
/* Seqs of [lo, hi) no range covers yet. */
uint64_t grd_ledger_range_uncovered(const struct stream *s, uint64_t lo, uint64_t hi);

/* ledger-stream.c: the seqs on board (a reduced Batch's, not sent) */

/* Take seq out of the set: true if it was on board, or -ENOMEM. */
int grd_ledger_ob_take(struct stream *s, uint64_t seq);
/* Every seq of [lo, hi) no range covers yet goes on board; 0 or -ENOMEM. */
int grd_ledger_ob_add_uncovered(struct stream *s, uint64_t lo, uint64_t hi);
/* Past GRD_LEDGER_MAX_ONBOARD ranges, the oldest forgotten. */
void grd_ledger_ob_bound(struct stream *s);

/* ledger-stream.c: the digests of the last Batches */

enum seen { SEEN_UNKNOWN, SEEN_SAME, SEEN_OTHER };

/* A Batch whose records were (partly) seen before against the Batches
   remembered in its range. */
enum seen grd_ledger_digest_check(const struct stream *s, uint64_t first, uint32_t count, uint64_t hash);
/* Remember a Batch; past GRD_LEDGER_MAX_DIGESTS the lowest goes.  0 or -ENOMEM. */
int grd_ledger_digest_add(struct stream *s, uint64_t first, uint32_t count, uint64_t hash);
