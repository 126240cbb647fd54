/* SPDX-License-Identifier: MIT */
/*
 * test-ground-answers.c - a request's answers in `recv --log`'s ground
 * logs (issue 32): ground/logs.c's grd_append() with Batches made here
 * (samples whose value and time are their seq), and export's reader of a
 * ground log with its answers logs (report/answers.c).  No broker: the
 * receiver's callback called as the ledger calls it.
 *
 * 1. recv's side: a whole Batch over a range the ground log holds reduced
 *    goes to <log>/answers.1, one behind its end to answers.2; one whose
 *    records are not the reduced ones' is a conflict; an answer naming
 *    channels (reduced) with records the log lacks goes there too; after
 *    a restart (a new struct grd) the same answers are duplicates (held
 *    already), a part of one too, a whole Batch again over a whole one
 *    too, other content for a whole Batch's seqs, for an answers log's
 *    or for a reduced answer's a conflict; a reduced answer with one new
 *    record and a whole one over it start answers.3 and answers.4.
 * 2. The reader's rule, on what 1 left: every seq 1..50 exactly once.
 * 3. The rule where the logs disagree (written here with storage/, not
 *    through recv, which refuses that): each seq from the first that holds
 *    it of the answers' whole Batches (answers.1 before answers.2), their
 *    reduced ones, the ground log; records of a reduced answer and of the
 *    ground log's Batch over the same seqs merged in seq order; in time
 *    order too.
 * Catches: an answer refused (nothing in answers.*), one appended into
 * the ground log, one bringing nothing stored again, a seq read twice or
 * from the wrong log, the order lost.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ground/ground.h"
#include "record/batch.h"
#include "report/export.h"
#include "report/summary.h"
#include "storage/stor.h"
#include "tlib.h"

#define NSEQ 64

static char T[] = "/tmp/railmon-ground-answers-XXXXXX";
static const uint8_t LOG_ID[REC_LOG_ID_LEN] = { 0xab, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 };

struct batch {
	uint8_t buf[8192];
	size_t len;
	rec_batch_t *b;
	struct rec_batch_info info;
};

/* Samples for seqs [first, first + n) (keep: only those, as a reduced
   Batch of that range), value seq + off[seq] (0 unless given), time seq ms. */
static void make(struct batch *out, uint64_t first, unsigned n, const uint64_t *keep, size_t nkeep,
                 const double *off)
{
	struct rec_batch_meta meta = { .vehicle = "V" };
	rec_encoder_t *enc;
	const uint8_t *p;
	size_t k = 0;

	memcpy(meta.log_id, LOG_ID, sizeof(LOG_ID));
	CHECK(rec_encoder_new(&meta, 256, &enc) == 0);
	for (uint64_t s = first; s < first + n; s++) {
		struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = (int64_t)s * 1000000 };

		if (keep && (k == nkeep || keep[k] != s))
			continue;
		k += keep != NULL;
		it.sample = (struct acq_sample){ .channel = 1, .value = (double)s + (off ? off[s] : 0) };
		CHECK(rec_encoder_add(enc, &it) == 0);
	}
	CHECK(rec_encoder_finish(enc, first, &p, &out->len) >= 0);
	memcpy(out->buf, p, out->len);
	rec_encoder_free(enc);
	if (keep) {
		int t = rec_reduced_tail(first, first + n, keep, nkeep, out->buf + out->len, sizeof(out->buf) - out->len);

		CHECK(t > 0);
		out->len += (size_t)t;
	}
	CHECK(rec_batch_decode(out->buf, out->len, &out->b) == 0);
	CHECK(rec_batch_info(out->b, &out->info) == 0);
}

/* The Batch to grd_append, as the ledger's on_batch hands it. */
static int feed(struct grd *g, void **ctx, uint64_t first, unsigned n, const uint64_t *keep, size_t nkeep,
                const double *off)
{
	struct batch b;
	int r;

	make(&b, first, n, keep, nkeep, off);
	r = grd_append(g, &b.info, b.b, b.buf, b.len, ctx);
	rec_batch_free(b.b);
	return r;
}

static bool exists(const char *fmt, const char *a)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), fmt, T, a);
	return stat(path, &st) == 0;
}

static const char *LOG = "%s/ground/V/ab0102030405060708090a0b0c0d0e0f%s";

/* ---- export through the engine, each record to a list ---- */

struct got {
	uint64_t seq[NSEQ * 2];
	double value[NSEQ * 2];
	int64_t t[NSEQ * 2];
	size_t n;
};

static int take(void *ctx, const struct acq_item *it, const struct rec_names *nm)
{
	struct got *g = ctx;

	(void)nm;
	CHECK(g->n < NSEQ * 2);
	g->seq[g->n] = it->seq;
	g->value[g->n] = it->sample.value;
	g->t[g->n++] = it->t_ns;
	return 0;
}

static uint64_t export(const char *dir, bool seq_order, struct got *g)
{
	struct rpt_export x = { .out = stdout, .err = stderr, .from_ns = INT64_MIN, .to_ns = INT64_MAX,
	                        .window_ns = seq_order ? -1 : REC_ORDER_WINDOW_NS, .sink = take, .sink_ctx = g };
	uint64_t damaged;

	memset(g, 0, sizeof(*g));
	CHECK(rpt_export_check(&x) == 0);
	CHECK(rec_channels_new(&x.chans) == 0);
	CHECK(rpt_export_dir(&x, dir) == 0);
	CHECK(rpt_export_finish(&x, 0) == 0);
	damaged = x.damaged;
	rpt_export_release(&x);
	return damaged;
}

/* Each seq lo..hi once. */
static void once(const struct got *g, uint64_t lo, uint64_t hi)
{
	unsigned seen[NSEQ] = { 0 };

	for (size_t i = 0; i < g->n; i++) {
		CHECK(g->seq[i] >= lo && g->seq[i] <= hi, "seq %llu", (unsigned long long)g->seq[i]);
		seen[g->seq[i]]++;
	}
	for (uint64_t s = lo; s <= hi; s++)
		CHECK(seen[s] == 1, "seq %llu read %u times", (unsigned long long)s, seen[s]);
}

static void recv_side(void)
{
	char dir[PATH_MAX], keep[PATH_MAX];
	static const uint64_t k1[] = { 1, 5, 10 }, k2[] = { 11, 20 }, k4[] = { 31 }, k5[] = { 41 };
	/* answers naming channels: reduced over [41,51) */
	static const uint64_t ch1[] = { 41, 43, 47 }, ch2[] = { 43 }, ch3[] = { 41, 44 };
	double bad20[NSEQ] = { 0 }, bad3[NSEQ] = { 0 }, bad25[NSEQ] = { 0 }, bad43[NSEQ] = { 0 };
	struct grd g = { 0 };
	struct got got;
	void *ctx = NULL;

	bad20[20] = 0.5;
	bad3[3] = 0.5;
	bad25[25] = 0.5;
	bad43[43] = 0.5;
	snprintf(dir, sizeof(dir), "%s/ground", T);
	snprintf(keep, sizeof(keep), "%s/ground/refused", T);
	CHECK(mkdir(dir, 0755) == 0); /* recv makes it at its start */
	g.dir = dir;
	g.keep_dir = keep;
	/* the reduced stream: [1,11) [11,21) reduced, [21,31) whole, [31,41) [41,51) reduced */
	CHECK(feed(&g, &ctx, 1, 10, k1, 3, NULL) == 0);
	CHECK(feed(&g, &ctx, 11, 10, k2, 2, NULL) == 0);
	CHECK(feed(&g, &ctx, 21, 10, NULL, 0, NULL) == 0);
	CHECK(feed(&g, &ctx, 31, 10, k4, 1, NULL) == 0);
	CHECK(feed(&g, &ctx, 41, 10, k5, 1, NULL) == 0);
	CHECK(g.appended == 5 && !g.answered);
	/* answers: [31,41) opens answers.1; [1,11) is behind its end: answers.2 */
	CHECK(feed(&g, &ctx, 31, 10, NULL, 0, NULL) == 0);
	CHECK(exists(LOG, "/answers.1") && !exists(LOG, "/answers.2"));
	CHECK(feed(&g, &ctx, 1, 10, NULL, 0, NULL) == 0);
	CHECK(exists(LOG, "/answers.2"));
	/* record 20 not what the reduced Batch holds: a conflict */
	CHECK(feed(&g, &ctx, 11, 10, NULL, 0, bad20) == -EALREADY);
	CHECK(g.refused[GRD_DIFFERS] == 1);
	CHECK(feed(&g, &ctx, 11, 10, NULL, 0, NULL) == 0);
	/* an answer naming channels: reduced, 41 the same as the stream's, 43
	   and 47 new: on in answers.2 */
	CHECK(feed(&g, &ctx, 41, 10, ch1, 3, NULL) == 0);
	CHECK(g.appended == 9 && g.answered == 4 && !g.had, "appended %llu answered %llu",
	      (unsigned long long)g.appended, (unsigned long long)g.answered);
	CHECK(!exists(LOG, "/answers.3"));
	grd_free(&g);
	printf("answers: [31,41) into answers.1, [1,11) and [11,21) whole and [41,51) naming channels into "
	       "answers.2, one of other records refused\n");

	/* recv restarted: its memory gone, the files tell */
	memset(&g, 0, sizeof(g));
	g.dir = dir;
	g.keep_dir = keep;
	ctx = NULL;
	CHECK(feed(&g, &ctx, 1, 10, NULL, 0, NULL) == 0);  /* an answer again */
	CHECK(feed(&g, &ctx, 21, 10, NULL, 0, NULL) == 0); /* a whole Batch again, not reduced */
	CHECK(feed(&g, &ctx, 31, 10, NULL, 0, NULL) == 0);
	CHECK(g.had == 3 && !g.appended, "had %llu appended %llu", (unsigned long long)g.had,
	      (unsigned long long)g.appended);
	CHECK(feed(&g, &ctx, 21, 10, NULL, 0, bad25) == -EALREADY); /* other content for a whole Batch */
	CHECK(feed(&g, &ctx, 1, 10, NULL, 0, bad3) == -EALREADY);   /* other than answers.2 holds */
	CHECK(g.refused[GRD_DIFFERS] == 2 && !g.appended);
	/* naming channels: the same again, and a part of it, held already;
	   another record for 43 a conflict */
	CHECK(feed(&g, &ctx, 41, 10, ch1, 3, NULL) == 0);
	CHECK(feed(&g, &ctx, 41, 10, ch2, 1, NULL) == 0);
	CHECK(feed(&g, &ctx, 41, 10, ch2, 1, bad43) == -EALREADY);
	CHECK(g.had == 5 && g.refused[GRD_DIFFERS] == 3 && !g.appended, "had %llu", (unsigned long long)g.had);
	CHECK(!exists(LOG, "/answers.3"));
	/* 44 new (41 held): behind answers.2's end, answers.3; then the whole
	   Batch, over all of them, answers.4 */
	CHECK(feed(&g, &ctx, 41, 10, ch3, 2, NULL) == 0);
	CHECK(exists(LOG, "/answers.3") && !exists(LOG, "/answers.4"));
	CHECK(feed(&g, &ctx, 41, 10, NULL, 0, NULL) == 0);
	CHECK(exists(LOG, "/answers.4"));
	CHECK(g.appended == 2 && g.answered == 2);
	grd_free(&g);
	printf("after a restart: 5 held already (4 answers, 1 whole Batch), 3 conflicts refused; answers naming "
	       "channels and a whole one after them into answers.3 and answers.4\n");

	snprintf(dir, sizeof(dir), "%s/ground/V", T);
	CHECK(export(dir, true, &got) == 0);
	once(&got, 1, 50);
	for (size_t i = 0; i < got.n; i++)
		CHECK(got.value[i] == (double)got.seq[i] && (i == 0 || got.seq[i] > got.seq[i - 1]));
	printf("export of the ground vehicle directory: seqs 1..50 once each, in seq order\n");
}

/* A Batch into a log written here. */
static void put(stor_log_t *log, uint64_t first, unsigned n, const uint64_t *keep, size_t nkeep, const double *off)
{
	struct batch b;
	struct stor_rec rec = { .first_seq = first, .count = n, .t_first_ns = (int64_t)first * 1000000,
	                        .t_last_ns = (int64_t)(first + n - 1) * 1000000 };

	make(&b, first, n, keep, nkeep, off);
	rec.payload = b.buf;
	rec.len = (uint32_t)b.len;
	CHECK(stor_log_skip(log, first) == 0);
	CHECK(stor_log_append(log, &rec) == 0);
	rec_batch_free(b.b);
}

static stor_log_t *open_log(const char *sub, uint64_t first)
{
	char dir[PATH_MAX];
	struct stor_log_cfg c = { .dir = dir, .vehicle = "V", .first_seq = first };
	stor_log_t *log;

	snprintf(dir, sizeof(dir), "%s/rule%s", T, sub);
	CHECK(stor_log_open(&c, &log) == 0);
	return log;
}

static void rule(void)
{
	static const uint64_t k1[] = { 2, 4 }, k2[] = { 12, 15, 19 }, k3[] = { 22 }, k6[] = { 7 }, k7[] = { 15, 17 };
	double plus1000[NSEQ], plus2000[NSEQ], plus3000[NSEQ];
	char dir[PATH_MAX];
	stor_log_t *log;
	struct got got;

	for (int i = 0; i < NSEQ; i++) {
		plus1000[i] = 1000;
		plus2000[i] = 2000;
		plus3000[i] = 3000;
	}
	/* the ground log: reduced [1,11) and [11,21) with other values than
	   any answer, so it shows which record was read */
	log = open_log("", 1);
	put(log, 1, 10, k1, 2, plus1000);
	put(log, 11, 10, k2, 3, plus1000);
	stor_log_free(log);
	/* answers.1 [1,6) whole, [6,11) and [11,21) reduced; answers.2 [4,11)
	   whole (4 and 5 in both, 7 reduced in answers.1) and [21,26) reduced */
	log = open_log("/answers.1", 1);
	put(log, 1, 5, NULL, 0, NULL);
	put(log, 6, 5, k6, 1, plus3000);
	put(log, 11, 10, k7, 2, plus3000);
	stor_log_free(log);
	log = open_log("/answers.2", 4);
	put(log, 4, 7, NULL, 0, plus2000);
	put(log, 21, 5, k3, 1, NULL);
	stor_log_free(log);

	snprintf(dir, sizeof(dir), "%s/rule", T);
	CHECK(export(dir, true, &got) == 0);
	CHECK(got.n == 15, "%zu records: 1..10, 12, 15, 17, 19 and 22, each once", got.n);
	for (size_t i = 0; i < got.n; i++) {
		uint64_t s = got.seq[i];
		double want = s <= 5 || s == 22 ? (double)s : s <= 10 ? (double)s + 2000 :
		              s == 12 || s == 19 ? (double)s + 1000 : (double)s + 3000;

		CHECK(s <= 10 || s == 12 || s == 15 || s == 17 || s == 19 || s == 22, "seq %llu", (unsigned long long)s);
		CHECK(got.value[i] == want, "seq %llu: %g, not %g", (unsigned long long)s, got.value[i], want);
		CHECK(i == 0 || s > got.seq[i - 1]);
	}
	printf("the rule: 1..5 from answers.1, 6..10 from answers.2 (whole: 7 not from answers.1's reduced "
	       "Batch), 15 and 17 from answers.1's reduced Batch, not the ground log's, 12 and 19 from the ground "
	       "log's, in seq order with them, 22 from answers.2's\n");
	CHECK(export(dir, false, &got) == 0);
	CHECK(got.n == 15);
	for (size_t i = 1; i < got.n; i++)
		CHECK(got.t[i] > got.t[i - 1], "time order at %zu", i);
	printf("time order: the same 15 records, their times rising\n");
}

/* Field col (from 0) of a CSV line. */
static const char *field(const char *line, int col, char *out, size_t size)
{
	size_t n = 0;

	for (; col > 0 && *line && *line != '\n'; line++)
		col -= *line == ',';
	while (*line && *line != ',' && *line != '\n' && n + 1 < size)
		out[n++] = *line++;
	out[n] = 0;
	return out;
}

/* export-answers: what the commands write of the same logs: export's CSV
   over --from/--to (answers' Batches outside passed over, the rest
   by the rule), and summary's statistics (each seq once: 11 samples,
   their least and greatest the answers' values). */
static void commands(void)
{
	struct rpt_summary_opts so = { .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	struct rpt_export x = { .err = stderr, .from_ns = 3000000, .to_ns = 8000000, .window_ns = -1 };
	struct tlib_mem m;
	rpt_summary_t *sum;
	char dir[PATH_MAX], line[512], f[64];
	const char *text, *p;
	int seq_col = -1, value_col = -1, n = 0;

	snprintf(dir, sizeof(dir), "%s/rule", T);
	tlib_mem_open(&m);
	x.out = m.f;
	CHECK(rpt_export_check(&x) == 0);
	CHECK(rec_channels_new(&x.chans) == 0);
	CHECK(rpt_export_dir(&x, dir) == 0);
	CHECK(rpt_export_finish(&x, 0) == 0);
	rpt_export_release(&x);
	text = tlib_mem_text(&m);
	for (p = text; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
		if (seq_col < 0) {
			for (int c = 0; c < 32 && field(line, c, f, sizeof(f))[0]; c++) {
				seq_col = !strcmp(f, "seq") ? c : seq_col;
				value_col = !strcmp(f, "value") ? c : value_col;
			}
			CHECK(seq_col >= 0 && value_col >= 0, "CSV header: %s", line);
			continue;
		}
		{
			long long s = atoll(field(line, seq_col, f, sizeof(f)));
			double v = atof(field(line, value_col, f, sizeof(f)));

			CHECK(s == 3 + n && v == (s <= 5 ? (double)s : (double)s + 2000), "line %d: %s", n, line);
			n++;
		}
	}
	CHECK(n == 5, "%d CSV rows for [3 ms, 8 ms): seqs 3..7\n%s", n, text);
	tlib_mem_close(&m);
	printf("export --from 3ms --to 8ms --order seq, CSV: seqs 3..7 once, 3..5 of answers.1, 6..7 of answers.2\n");

	tlib_mem_open(&m);
	CHECK(rpt_summary_new(&so, stderr, &sum) == 0);
	CHECK(rpt_summary_read(sum, dir) == 0);
	CHECK(rpt_summary_channels(sum) == 1);
	CHECK(rpt_summary_print(sum, true, m.f) == 0);
	text = tlib_mem_text(&m);
	CHECK(strstr(text, "\"count\":15,") && strstr(text, "\"min\":1,") && strstr(text, "\"max\":3017"),
	      "summary: %s", text);
	rpt_summary_free(sum);
	tlib_mem_close(&m);
	printf("summary: 15 samples, min 1, max 3017 (the answers' values where they hold a seq)\n");
}

int main(int argc, char **argv)
{
	char cmd[PATH_MAX + 16];

	CHECK(mkdtemp(T));
	if (argc > 1 && !strcmp(argv[1], "commands")) {
		rule();
		commands();
	} else {
		recv_side();
		rule();
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", T);
	CHECK(system(cmd) == 0);
	return tlib_failures() ? 1 : 0;
}
