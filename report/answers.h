/* SPDX-License-Identifier: MIT */
/*
 * answers.h - a ground log's answers logs read beside it, under one rule
 * for export, plot and summary.  `recv --log` keeps a request's answers
 * (Batches of the vehicle's log over ranges the ground log holds reduced:
 * whole ones, or reduced to the channels a request names) in answers logs
 * inside the ground log, <log>/answers.<n>/ (ground/logs.c), since a log
 * only appends; it takes one only when every record it shares with them
 * is the same.  Read together, each seq is read once, from the first
 * that holds it in this order: the answers logs' whole Batches (by n),
 * their reduced Batches (by n), the ground log.  So a whole Batch's record
 * wins over a reduced one's, and the reduced ones add up: a channel's
 * records from an answer, the others' from the ground log.  The answers'
 * Batches come in seq order, each before the ground log's Batch that
 * reaches past it, so a time order's window sees them where the vehicle's
 * log has them.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct stor_rec;

typedef struct rpt_answers rpt_answers_t;

/* The origin of a Batch read: the ground log itself, or an answers log. */
#define RPT_ANSWERS_LOG (-1)

/* The answers logs of the ground log dir, their Batches' seqs read ahead.
   *ret NULL when dir has none: nothing to do.
   What cannot be read is said on err ("railmon CMD: ...") and counted:
   rpt_answers_damaged().  0 or -ENOMEM. */
int rpt_answers_open(const char *dir, FILE *err, const char *cmd, rpt_answers_t **ret);

rpt_answers_t *rpt_answers_free(rpt_answers_t *a);

/*
 * The next answers Batch in seq order that starts before seq (the end of
 * the ground log's next Batch; UINT64_MAX: all that are left): 1 with rec
 * (valid until the next call) and *src its origin for rpt_answers_take(),
 * 0 when none.
 */
int rpt_answers_next(rpt_answers_t *a, uint64_t seq, struct stor_rec *rec, int *src);

/* The directory of the answers log src (for what is said of its Batches). */
const char *rpt_answers_dir(const rpt_answers_t *a, int src);

/* Whether the record seq of a Batch from src is read (the rule above);
   with a NULL a, always. */
bool rpt_answers_take(const rpt_answers_t *a, int src, uint64_t seq);

/* Of what was read ahead: what could not be. */
uint64_t rpt_answers_damaged(const rpt_answers_t *a);
