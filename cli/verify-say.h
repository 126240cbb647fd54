/* SPDX-License-Identifier: MIT */
/*
 * verify-say.h - what `railmon verify` says about a log checked against its
 * Seals (evidence/evd.h's evd_verify_dir): the problems on a stream, the
 * first CLI_VERIFY_PRINT_MAX one by one, and the result.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli/progress.h"
#include "evidence/evd.h"

#define CLI_VERIFY_PRINT_MAX 20 /* problems printed one by one; the rest counted */

struct cli_verify_out {
	FILE *err;               /* where the problems are said */
	const char *dir;         /* the log, as the messages name it */
	uint64_t printed;        /* problems met (said up to the max) */
	struct cli_progress *progress; /* cleared before a problem is said; NULL: none */
};

/* evd_verify_dir()'s problem callback, ctx a struct cli_verify_out:
   "railmon verify: DIR/SEGMENT.seg: offset N: seq S: what, records A..B". */
void cli_verify_problem(void *ctx, const struct evd_problem *p);

/* The result on out: the verified seq and time range (signed by key ID,
   pk; NULL pk: unsigned), the unverified head, unsealed records, dropped
   seqs, the unsealed tail, and the counts. */
void cli_verify_result(FILE *out, const struct evd_result *r, const uint8_t *pk);

/* `railmon verify`: the log in dir against its Seals with cfg (whole),
   signed by the public key in the file key (NULL: --unsigned, the chain
   only); the problems on err, the result on out; a progress line on err
   when it is a terminal, unless quiet.  The exit code: 0 verified, 1 a
   problem, a key or a log that cannot be read. */
int cli_verify_run(FILE *out, FILE *err, const char *dir, const char *key, const struct evd_verify_cfg *cfg,
                   bool quiet);
