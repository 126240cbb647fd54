/* SPDX-License-Identifier: MIT */
/*
 * verify-say.c - what `railmon verify` says (verify-say.h): each problem named by
 * segment file, offset and seq, and the verified, unverified and unsealed
 * ranges of the result.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "basic/utc.h"
#include "cli/verify-say.h"


static const char *problem_words[EVD_PROBLEM_KIND_MAX] = {
	[EVD_PROBLEM_STORAGE] = "damaged or missing log data",
	[EVD_PROBLEM_MALFORMED] = "a record that contradicts its frame or log",
	[EVD_PROBLEM_SIGNATURE] = "a Seal not signed by this key",
	[EVD_PROBLEM_CHAIN] = "the records of a Seal's range do not hash to its chain head "
	                      "(changed, removed, added or reordered)",
	[EVD_PROBLEM_SEAL_LINK] = "a Seal that does not follow the Seal before it (a Seal removed, "
	                          "replaced or moved)",
	[EVD_PROBLEM_NO_SEAL] = "no Seal in the log: nothing can be verified",
	[EVD_PROBLEM_HEAD] = "--whole: the log does not start at seq 1, or its first Seal's range begins before the "
	                     "log (its oldest segments deleted)",
	[EVD_PROBLEM_TAIL] = "bytes after the newest segment's last good frame that are no frame: damage, or "
	                     "a torn write of a power cut not yet recovered (nothing after it can be read)",
};

static const char *fault_words(const struct stor_fault *f)
{
	switch (f->kind) {
	case STOR_FAULT_FRAME: return "damaged frame (CRC or framing)";
	case STOR_FAULT_HEADER_COPY: return "damaged segment header copy";
	case STOR_FAULT_UNSEALED: return "segment closed without its storage seal";
	case STOR_FAULT_MISNAMED: return "segment whose header names another first seq (renamed, swapped)";
	case STOR_FAULT_MISSING: return "seq range that no segment holds (a deleted segment)";
	case STOR_FAULT_REPEATED: return "seqs already read from another segment, repeated (a segment copied or "
	                                 "forged in): never read twice";
	default: return "unreadable segment";
	}
}

static void problem_detail(const struct evd_problem *p, char *buf, size_t len)
{
	if (p->kind == EVD_PROBLEM_STORAGE && p->fault.kind == STOR_FAULT_REPEATED && p->fault.repeat_end > 1 &&
	    p->fault.repeat_end - 1 == p->fault.lost_first)
		snprintf(buf, len, "seq %" PRIu64 " repeated: already read from %020" PRIu64 ".seg (a segment copied or "
		         "forged in); this copy is skipped", p->fault.lost_first, p->fault.other_segment);
	else if (p->kind == EVD_PROBLEM_STORAGE && p->fault.kind == STOR_FAULT_REPEATED)
		snprintf(buf, len, "seqs %" PRIu64 "..%" PRIu64 " repeated: already read from %020" PRIu64 ".seg (a "
		         "segment copied or forged in); this copy is skipped", p->fault.lost_first,
		         p->fault.repeat_end - 1, p->fault.other_segment);
	else if (p->kind == EVD_PROBLEM_STORAGE)
		snprintf(buf, len, "%s", fault_words(&p->fault));
	else if (p->kind == EVD_PROBLEM_SIGNATURE)
		snprintf(buf, len, "%s: %s", problem_words[p->kind],
		         p->err == -ENOKEY ? "unsigned" : "the signature does not verify (another key, or altered)");
	else if (p->kind == EVD_PROBLEM_MALFORMED)
		snprintf(buf, len, "%s: %s", problem_words[p->kind],
		         p->err == -ERANGE ? "its Batch's seq range differs from its frame's" :
		         p->err == -EXDEV ? "a Batch of another log" :
		         p->err == -EEXIST ? "its seqs were already read" :
		         "does not decode as a valid Batch, or a Seal Batch that holds more than its one SEAL record");
	else if (p->kind == EVD_PROBLEM_CHAIN && p->err == -EBADE && p->answers)
		snprintf(buf, len, "this answer's Batch is not one the Seal of the ground log over its seqs lists: "
		         "changed");
	else if (p->kind == EVD_PROBLEM_CHAIN && p->err == -EBADE)
		snprintf(buf, len, "this Batch is not one its Seal lists: changed or added");
	else if (p->kind == EVD_PROBLEM_CHAIN && p->err == -ENOENT)
		snprintf(buf, len, "no record holds these seqs, but the Seal lists a Batch there: removed");
	else if (p->kind == EVD_PROBLEM_CHAIN && p->err == -ESTALE)
		snprintf(buf, len, "this Seal Batch was changed outside its signed Seal (the next Seal links to "
		         "other bytes)");
	else if (p->kind == EVD_PROBLEM_CHAIN && p->err == -EDOM)
		snprintf(buf, len, "the Seal's range starts inside a Batch");
	else
		snprintf(buf, len, "%s", problem_words[p->kind]);
}

void cli_verify_problem(void *ctx, const struct evd_problem *p)
{
	struct cli_verify_out *o = ctx;
	char what[320], range[64] = "", dir[PATH_MAX + 32];

	if (o->printed++ >= CLI_VERIFY_PRINT_MAX)
		return;
	cli_progress_clear(o->progress); /* the problem on a line of its own; the progress is drawn again after */
	problem_detail(p, what, sizeof(what));
	if (p->range_end > p->range_first)
		snprintf(range, sizeof(range), ", records %" PRIu64 "..%" PRIu64, p->range_first, p->range_end - 1);
	else if (p->range_end == 0 && p->range_first)
		snprintf(range, sizeof(range), ", records %" PRIu64 " to the end", p->range_first);
	if (p->answers)
		snprintf(dir, sizeof(dir), "%s/answers.%u", o->dir, p->answers);
	else
		snprintf(dir, sizeof(dir), "%s", o->dir);
	if (p->answers && p->kind == EVD_PROBLEM_STORAGE && !p->segment && !p->offset)
		fprintf(o->err, "railmon verify: %s: %s (an answers log)\n", dir, strerror(-p->err));
	else if (p->kind == EVD_PROBLEM_STORAGE && p->fault.kind == STOR_FAULT_MISSING)
		fprintf(o->err, "railmon verify: %s: before segment %020" PRIu64 ".seg: seq %" PRIu64 ": %s%s\n",
		        dir, p->segment, p->seq, what, range);
	else
		fprintf(o->err, "railmon verify: %s/%020" PRIu64 ".seg: offset %" PRIu64 ": seq %" PRIu64 ": %s%s\n",
		        dir, p->segment, p->offset, p->seq, what, range);
}

/* Why each kind of range is not verified (no problem found, problems). */
static const char *range_words(enum evd_range_kind k, bool problems)
{
	switch (k) {
	case EVD_RANGE_TAIL:
		return problems ? "unsealed tail: after the last Seal, not proven" :
		                  "unsealed tail: after the last Seal, not yet sealed";
	case EVD_RANGE_BETWEEN: return "unproven, between chains: after one chain's last Seal, before the next chain";
	case EVD_RANGE_HEAD: return "unproven, before the first Seal: the Seal that covered them is not in the log";
	case EVD_RANGE_NO_SEAL: return "unproven: the log has no Seal";
	case EVD_RANGE_DAMAGED: return "damaged: unreadable, missing, repeated or malformed";
	case EVD_RANGE_CHANGED: return "CHANGED: do not match their Seal";
	case EVD_RANGE_UNPROVEN: return "unproven: their Seal does not verify (signature or link)";
	case EVD_RANGE_NOT_STORED: return "not stored: no record holds these seqs, and the Seal's chain matches "
	                                  "without them (the writer's drops)";
	case EVD_RANGE_REDUCED: return "reduced: the uplink sent these seqs reduced (new content, no Seal covers "
	                               "it); the vehicle's log holds them whole";
	default: return "verified";
	}
}

/* A ground log's answers logs: what its Seals prove of them. */
static void cli_verify_answers(FILE *out, const struct evd_result *r)
{
	static const struct {
		enum evd_range_kind k;
		const char *words;
	} kinds[] = {
		{ EVD_RANGE_VERIFIED, "verified: whole Batches a Seal of this log lists (the vehicle's own bytes)" },
		{ EVD_RANGE_CHANGED, "CHANGED: whole Batches the Seal of this log over their seqs does not list" },
		{ EVD_RANGE_UNPROVEN, ("unproven: no Seal of this log that verified, with a digest list, over "
		                       "their seqs") },
		{ EVD_RANGE_REDUCED, ("reduced: a request naming channels (new content, no Seal covers it); the "
		                      "vehicle's log holds these seqs whole") },
		{ EVD_RANGE_DAMAGED, "damaged: unreadable or malformed" },
	};

	if (!r->answers_logs)
		return;
	fprintf(out, "answers logs: %" PRIu64 " (answers.<n>/: a request's answers over seqs this log holds "
	        "reduced), against this log's Seals:\n", r->answers_logs);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (r->answers_batches[kinds[i].k])
			fprintf(out, "  %" PRIu64 " Batches, %" PRIu64 " seqs: %s\n", r->answers_batches[kinds[i].k],
			        r->answers_seqs[kinds[i].k], kinds[i].words);
}

void cli_verify_result(FILE *out, const struct evd_result *r, const uint8_t *pk)
{
	char a[48], b[48], id[17];

	for (size_t i = 0; i < r->nranges; i++) {
		const struct evd_range *g = &r->ranges[i];

		if (g->kind == EVD_RANGE_VERIFIED)
			fprintf(out, "verified: seq %" PRIu64 "..%" PRIu64 "\n", g->first, g->end - 1);
		else
			fprintf(out, "%s: seq %" PRIu64 "..%" PRIu64 "\n", range_words(g->kind, r->problems != 0),
			        g->first, g->end - 1);
	}
	if (r->ranges_omitted)
		fprintf(out, "... %" PRIu64 " more ranges (the counts below hold them all)\n", r->ranges_omitted);
	if (r->seqs[EVD_RANGE_VERIFIED]) {
		fprintf(out, "verified: %" PRIu64 " seqs by %" PRIu64 " Seals, %s%s\n", r->seqs[EVD_RANGE_VERIFIED],
		        r->seals, pk ? "each signed by key " : "UNSIGNED: chain only, not authenticated",
		        pk ? evd_key_id(pk, id) : "");
		/* times from sealed content only: frame headers no Seal covers */
		if (r->verified_t_last)
			fprintf(out, "verified record times: %s .. %s (the first record of each verified Batch)\n",
			        basic_utc_text(r->verified_t_first, 3, 0, a, sizeof(a)), basic_utc_text(r->verified_t_last, 3, 0, b, sizeof(b)));
		if (r->seal_t_last)
			fprintf(out, "sealed: %s .. %s (the verified Seals' signed times)\n",
			        basic_utc_text(r->seal_t_first, 3, 0, a, sizeof(a)), basic_utc_text(r->seal_t_last, 3, 0, b, sizeof(b)));
	}
	else
		fprintf(out, "verified: nothing\n");
	if (pk && r->bad_signatures && !r->signed_seals)
		fprintf(out, "no Seal verifies with key %s: the log was signed by another key (or every Seal was "
		        "altered)\n", evd_key_id(pk, id));
	if (r->v1_seals)
		fprintf(out, "old format: %" PRIu64 " Seals of version 1 (before railmon's Seal v2): a chain restart "
		        "there is not linked to what came before, and a changed Batch is named by its whole Seal "
		        "range\n", r->v1_seals);
	cli_verify_answers(out, r);
	fprintf(out, "%" PRIu64 " records read, %" PRIu64 " problem%s\n", r->records, r->problems,
	            r->problems == 1 ? "" : "s");
}

int cli_verify_run(FILE *out, FILE *err, const char *dir, const char *key, const struct evd_verify_cfg *vcfg,
                   bool quiet)
{
	struct evd_verify_cfg c = *vcfg, *cfg = &c;
	struct cli_progress pg;
	struct cli_verify_out vo = { .err = err, .dir = dir, .progress = &pg };
	uint8_t pk[EVD_PUBLIC_LEN];
	struct evd_result res;
	int r;

	if (key) {
		r = evd_key_load_public(key, pk);
		if (r < 0) {
			fprintf(err, "railmon verify: %s: %s\n", key,
			        r == -EBADMSG ? "not a railmon public key (railmon keygen makes one)" : strerror(-r));
			return 1;
		}
		cfg->public_key = pk;
		/* It works (the file names its public half), but an
		   investigator should not hold what signs the log. */
		if (evd_key_is_secret(key) == 1)
			fprintf(err, "railmon verify: warning: %s is the vehicle's secret key; verifying needs only its "
			        "public half (railmon keygen's FILE.pub), and whoever holds the secret key can sign a "
			        "forged log: keep it on the vehicle\n", key);
	}
	cli_progress_init(&pg, err, "verify", CLI_PROGRESS_BYTES, quiet);
	cfg->progress = cli_progress_update;
	cfg->progress_ctx = &pg;
	r = evd_verify_dir(dir, cfg, cli_verify_problem, &vo, &res);
	cli_progress_clear(&pg);
	if (r < 0) {
		fprintf(err, "railmon verify: %s: %s\n", dir, strerror(-r));
		return 1;
	}
	if (vo.printed > CLI_VERIFY_PRINT_MAX)
		fprintf(err, "railmon verify: ... %" PRIu64 " more problems\n", vo.printed - CLI_VERIFY_PRINT_MAX);
	cli_verify_result(out, &res, cfg->public_key);
	return r ? 1 : 0;
}
