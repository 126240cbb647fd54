/* SPDX-License-Identifier: MIT */
/*
 * test-export-range.c - export --from/--to against the full scan (issue
 * 29): on a log of many small segments whose Batches hold records out of
 * time order, overlap each other, carry a far-future record now and then
 * (as a replay's wall-time events do) and step back in time halfway, 300
 * random ranges (ranges inside one Batch, across the clock step, empty
 * ones, the far-future one) must write exactly the lines of the full
 * export whose time_ns is in [from, to), in the same order (seq order;
 * in time order the same lines), while decoding no Batch whose span
 * misses the range unless it carries a channel dictionary; and summary's
 * words for every third range as on the same records logged with a
 * dictionary in every Batch (none can be passed over there).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/batch.h"
#include "record/order.h"
#include "report/export.h"
#include "report/summary.h"
#include "storage/stor.h"
#include "tlib.h"

#define S(n) ((int64_t)(n) * 1000000000LL)
#define T0 S(1764748800)
#define NBATCH 500
#define PER 40
#define STEP_AT 300            /* from this Batch on, times step back 100 s */
#define FAR (T0 + S(1000000))  /* the far-future record of every 50th Batch */

struct span {
	int64_t t0, t1;
	bool dict;
};

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int64_t rand_in(int64_t lo, int64_t hi) /* [lo, hi) */
{
	return lo + (int64_t)(next_rand() % (uint64_t)(hi - lo));
}

/* Every record time written, for ranges placed at and between them. */
static int64_t times[NBATCH * (PER + 1)];
static size_t ntimes;

/* every_dict: each Batch carries the dictionary (so none is ever passed
   over: the full scan, for summary); the records are the same */
static void write_log(const char *dir, struct span *spans, bool every_dict)
{
	static const struct rec_channel chans[] = {
		{ .id = 1, .name = "A.Speed", .unit = "km/h", .source = "test" },
		{ .id = 2, .name = "B.Temp", .unit = "degC", .source = "test" },
		{ .id = 3, .name = "B.Load", .unit = "%", .source = "test" },
	};
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "V1", .segment_bytes = 8192 };
	struct rec_batch_meta meta = { .vehicle = "V1" };
	rec_encoder_t *enc;
	stor_log_t *log;
	const uint8_t *buf;
	size_t len;

	rng = 0x9e3779b97f4a7c15ULL;
	ntimes = 0;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(rec_encoder_new(&meta, PER + 1, &enc) == 0);
	for (int b = 0; b < NBATCH; b++) {
		/* channel 3 first named halfway: a dictionary Batch in the middle */
		bool dict = b == 0 || b == 250;
		int64_t base = T0 + S(b < STEP_AT ? b : b - 100), lo = INT64_MAX, hi = INT64_MIN;
		int n = PER + (b % 50 == 0);

		if (dict || every_dict)
			CHECK(rec_encoder_set_channels(enc, chans, b >= 250 ? 3 : 2) == (b >= 250 ? 3 : 2));
		for (int i = 0; i < n; i++) {
			/* two buses' records interleaved, each Batch 1.5 s wide:
			   not in time order, overlapping the next Batch */
			int64_t t = i == PER ? FAR : base + rand_in(0, S(3) / 2);
			uint32_t ch = b >= 250 && i % 3 == 2 ? 3 : 1 + (uint32_t)(i & 1);
			struct acq_item it = { .t_ns = t, .kind = ACQ_ITEM_SAMPLE,
			                       .sample = { ch, ACQ_Q_GOOD, (double)rand_in(-100000, 100000) / 100 } };

			CHECK(rec_encoder_add(enc, &it) == 0);
			lo = t < lo ? t : lo;
			hi = t > hi ? t : hi;
			times[ntimes++] = t;
		}
		CHECK(rec_encoder_finish(enc, stor_log_next_seq(log), &buf, &len) == n);
		{
			struct stor_rec rec = { .first_seq = stor_log_next_seq(log), .count = (uint32_t)n,
			                        .t_first_ns = lo, .t_last_ns = hi, .payload = buf, .len = (uint32_t)len };

			CHECK(stor_log_append(log, &rec) == 0);
		}
		spans[b] = (struct span){ lo, hi, dict };
	}
	CHECK(stor_log_sync(log) == 0);
	stor_log_free(log);
	rec_encoder_free(enc);
}

/* The export engine as `railmon export --format csv [--order seq]` sets it
   up, into memory.  *ret_decoded: the Batches it decoded. */
static char *export_range(const char *dir, int64_t from, int64_t to, bool seq, uint64_t *ret_decoded)
{
	struct rpt_export x = { .from_ns = from, .to_ns = to, .format = REC_FORMAT_CSV,
	                        .window_ns = seq ? -1 : REC_ORDER_WINDOW_NS };
	struct tlib_mem out, err;
	char *text;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	x.out = out.f;
	x.err = err.f;
	CHECK(rpt_export_check(&x) == 0);
	CHECK(rec_channels_new(&x.chans) == 0);
	CHECK(rpt_export_finish(&x, rpt_export_dir(&x, dir)) == 0);
	CHECK_STR(tlib_mem_text(&err), "");
	text = strdup(tlib_mem_text(&out));
	CHECK(text);
	*ret_decoded = x.batches_decoded;
	rpt_export_release(&x);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
	return text;
}

/* summary's table and JSON of [from, to), and what it said on err */
static char *summary_range(const char *dir, int64_t from, int64_t to)
{
	struct rpt_summary_opts o = { .from_ns = from, .to_ns = to };
	struct tlib_mem out, err;
	rpt_summary_t *s;
	char *text;

	tlib_mem_open(&out);
	tlib_mem_open(&err);
	CHECK(rpt_summary_new(&o, err.f, &s) == 0);
	CHECK(rpt_summary_run(s, dir, false, out.f) >= 0);
	rpt_summary_free(s);
	CHECK(rpt_summary_new(&o, err.f, &s) == 0);
	CHECK(rpt_summary_run(s, dir, true, out.f) >= 0);
	rpt_summary_free(s);
	/* both streams ("no samples" of an empty range, on err), the log's
	   directory name cut out (the two logs' names differ) */
	CHECK(asprintf(&text, "%s--\n%s", tlib_mem_text(&out), tlib_mem_text(&err)) > 0);
	for (char *p; (p = strstr(text, dir));)
		memmove(p, p + strlen(dir), strlen(p + strlen(dir)) + 1);
	tlib_mem_close(&out);
	tlib_mem_close(&err);
	return text;
}

/* The full export's lines whose time_ns (the fifth column) is in [from,
   to), the header first: what a range must write. */
static char *filter(const char *full, int64_t from, int64_t to, size_t *ret_lines)
{
	char *out = malloc(strlen(full) + 1), *q = out;
	const char *p = full;
	bool header = true;

	CHECK(out);
	*ret_lines = 0;
	while (*p) {
		const char *end = strchr(p, '\n'), *c = p;
		size_t n;

		CHECK(end);
		n = (size_t)(end - p) + 1;
		for (int k = 0; k < 4; k++)
			c = strchr(c, ',') + 1;
		if (header || (strtoll(c, NULL, 10) >= from && strtoll(c, NULL, 10) < to)) {
			memcpy(q, p, n);
			q += n;
			*ret_lines += !header;
		}
		header = false;
		p = end + 1;
	}
	*q = 0;
	return out;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The same lines, whatever their order. */
static bool same_lines(char *a, char *b)
{
	size_t na = 0, nb = 0;
	char **la = calloc(strlen(a) + 1, sizeof(char *)), **lb = calloc(strlen(b) + 1, sizeof(char *));
	bool same;

	CHECK(la && lb);
	for (char *s = strtok(a, "\n"); s; s = strtok(NULL, "\n"))
		la[na++] = s;
	for (char *s = strtok(b, "\n"); s; s = strtok(NULL, "\n"))
		lb[nb++] = s;
	qsort(la, na, sizeof(*la), line_cmp);
	qsort(lb, nb, sizeof(*lb), line_cmp);
	same = na == nb;
	for (size_t i = 0; same && i < na; i++)
		same = !strcmp(la[i], lb[i]);
	free(la);
	free(lb);
	return same;
}

/* A range of the kind k (of 6) over the log's times. */
static void pick(int k, int64_t *from, int64_t *to)
{
	int64_t t = times[next_rand() % ntimes];

	switch (k) {
	case 0: /* anywhere, before the first record to past the last */
		*from = rand_in(T0 - S(5), T0 + S(410));
		*to = *from + rand_in(1, S(120));
		break;
	case 1: /* inside one Batch: around one record, a few ms */
		*from = t - rand_in(0, S(1) / 50);
		*to = t + rand_in(1, S(1) / 50);
		break;
	case 2: /* a nanosecond after a record: empty but for a record there */
		*from = t + 1;
		*to = t + 2;
		break;
	case 3: /* across the clock step: times written both before and after it */
		*from = T0 + rand_in(S(150), S(250));
		*to = *from + rand_in(S(1), S(100));
		break;
	case 4: /* the far-future records alone */
		*from = FAR - rand_in(0, S(5));
		*to = FAR + 1;
		break;
	default: /* everything */
		*from = INT64_MIN;
		*to = INT64_MAX;
		break;
	}
}

int main(void)
{
	static struct span spans[NBATCH];
	char dir[] = "/tmp/test-export-range.XXXXXX", all[] = "/tmp/test-export-range.XXXXXX";
	uint64_t decoded, empty = 0, inside = 0;
	char *full_seq, *full_time;

	CHECK(mkdtemp(dir) && mkdtemp(all));
	write_log(all, spans, true);
	write_log(dir, spans, false);
	full_seq = export_range(dir, INT64_MIN, INT64_MAX, true, &decoded);
	CHECK(decoded == NBATCH, "%" PRIu64, decoded);
	full_time = export_range(dir, INT64_MIN, INT64_MAX, false, &decoded);
	for (int i = 0; i < 300; i++) {
		int64_t from, to;
		size_t lines, meet = 0;
		char *want, *got, *want_t, *got_t;

		pick(i % 6, &from, &to);
		want = filter(full_seq, from, to, &lines);
		got = export_range(dir, from, to, true, &decoded);
		CHECK(!strcmp(want, got), "[%" PRId64 ", %" PRId64 "): %zu lines wanted, %zu bytes written",
		      from, to, lines, strlen(got));
		/* decoded: at most the Batches whose span meets the range, and
		   the dictionary Batches (read for their names) */
		for (int b = 0; b < NBATCH; b++)
			meet += spans[b].dict || (spans[b].t1 >= from && spans[b].t0 < to);
		CHECK(decoded <= meet, "[%" PRId64 ", %" PRId64 "): %" PRIu64 " Batches decoded, %zu can hold it",
		      from, to, decoded, meet);
		empty += lines == 0;
		inside += i % 6 == 1 && lines > 0;
		want_t = filter(full_time, from, to, &lines);
		got_t = export_range(dir, from, to, false, &decoded);
		CHECK(same_lines(want_t, got_t), "time order [%" PRId64 ", %" PRId64 ")", from, to);
		if (i % 3 == 0) { /* summary: as on the log where no Batch can be passed over */
			char *a = summary_range(dir, from, to), *b = summary_range(all, from, to);

			CHECK(!strcmp(a, b), "summary [%" PRId64 ", %" PRId64 "):\n%s\nfull scan:\n%s", from, to, a, b);
			free(a);
			free(b);
		}
		free(want);
		free(got);
		free(want_t);
		free(got_t);
	}
	/* the kinds of range said above did occur */
	CHECK(empty >= 30 && inside >= 30, "%" PRIu64 " empty, %" PRIu64 " inside a Batch", empty, inside);
	printf("300 ranges: byte-identical to the full scan (%" PRIu64 " empty, %" PRIu64 " inside a Batch)\n",
	       empty, inside);
	free(full_seq);
	free(full_time);
	CHECK(tlib_run((char *const[]){ "rm", "-rf", dir, all, NULL }, 30) == 0);
	return 0;
}
