/* SPDX-License-Identifier: MIT */
/*
 * evd-private.h - inside evidence/: the hasher thread the sealer hands
 * Batches to, so hashing them runs beside the collector, not on it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evd_hasher;
struct evd_lists;
struct evd_problem;
struct evd_result;
struct rec_seal;

/* The bytes of a Batch the evidence covers: len without the trailing
   Batch.historical fields a re-send appends (evd.h). */
size_t evd_evidence_len(const void *payload, size_t len);

/* What the hasher does with each Batch, on its own thread, in order. */
typedef void (*evd_hash_fn)(void *ctx, const void *payload, size_t len, bool starts_range);

/* A hasher with cap bytes of room for Batches in flight (Batches are at
   most 1 MiB: cap must be larger).  0, -EINVAL, -ENOMEM, -errno of
   pthread_create. */
int evd_hasher_new(size_t cap, evd_hash_fn fn, void *ctx, struct evd_hasher **ret_hasher);

/* Copy a Batch in for fn; waits while the room is full.  No allocation. */
void evd_hasher_push(struct evd_hasher *h, const void *payload, size_t len, bool starts_range);

/* The same in two steps, so the producer can write the Batch in place:
   reserve waits for len bytes of room (len < cap / 2) and returns where
   they are; commit queues the first len (at most the reserved) of them
   for fn.  A reservation not committed is dropped by the next reserve.
   One producer thread; nothing else pushes between the two. */
void *evd_hasher_reserve(struct evd_hasher *h, size_t len);
void evd_hasher_commit(struct evd_hasher *h, size_t len, bool starts_range);

/* Wait until fn has seen every Batch pushed; what fn wrote is then
   visible to the caller. */
void evd_hasher_drain(struct evd_hasher *h);

/* Drain, stop the thread, free; accepts NULL; returns NULL. */
struct evd_hasher *evd_hasher_free(struct evd_hasher *h);

/* ---- a ground log's answers logs against its Seals (verify-answers.c) */

/* The digest lists of the Seals that verified (signature, and the list
   folds from the Seal's chain_start to its chain_head), kept as the
   verifier meets them, in seq order. */
struct evd_lists *evd_lists_new(void);
struct evd_lists *evd_lists_free(struct evd_lists *l);
/* Seal s, its list digests[0..n): 0 or -ENOMEM. */
int evd_lists_add(struct evd_lists *l, const struct rec_seal *s, const uint8_t (*digests)[32], size_t n);

/* The answers logs of the log dir (dir/answers.<n>, n from 1 while one
   exists): how many. */
unsigned evd_answers_count(const char *dir);

/*
 * Each answers log's Batches against the lists: counted into res
 * (answers_*), each problem (a CHANGED Batch, damage, a malformed Batch)
 * to fn and counted (res->problems, res->first).  0, -ENOMEM.
 */
int evd_answers_verify(const struct evd_lists *l, const char *dir, unsigned n,
                       void (*fn)(void *, const struct evd_problem *), void *ctx, struct evd_result *res);
