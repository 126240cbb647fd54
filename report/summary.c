/* SPDX-License-Identifier: MIT */
/*
 * summary.c - what `railmon summary --data DIR` says (summary.h): per
 * channel, what a log holds:
 * sample count, first and last time, min/max/mean of the valid values,
 * gaps (intervals over --gap, by default over 5 times the channel's
 * shortest interval), the longest interval, and the out-of-range and
 * invalid counts.  Samples are taken in time order (record/order.h).
 *
 * One job over ~600 lines: the statistics per channel of one pass over a
 * log in time order.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/escape.h"
#include "basic/utc.h"
#include "ground/db.h"
#include "ground/rollup.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "record/order.h"
#include "report/answers.h"
#include "report/log-channels.h"
#include "report/export.h"
#include "report/logfault.h"
#include "report/say.h"
#include "report/summary.h"
#include "storage/stor.h"

#define SUMMARY_GAP_FACTOR 5

struct chan_stat {
	uint32_t id;
	bool used;
	uint64_t count, valid, out_of_range, invalid, gaps;
	int64_t first_ns, last_ns, min_dt_ns, max_dt_ns;
	double min, max, sum;
};

struct rpt_summary {
	struct chan_stat *tab;
	size_t cap, n;
	int64_t from_ns, to_ns, gap_ns;
	const char *only[RPT_SUMMARY_ONLY_MAX];
	char *resolved[RPT_SUMMARY_ONLY_MAX]; /* the dictionary's name for each */
	size_t nonly;
	rec_channels_t *names;
	rec_order_t *order;
	uint64_t damaged;
	FILE *err;
	int width;               /* rpt_summary_opts.width */
	uint64_t rollup_seconds, raw_reads; /* --db: seconds taken from the
	                                       rollup; raw reads instead */
};

/* The table's name and unit columns. */
struct sum_cols {
	int name, unit;
};

static struct chan_stat *stat_get(struct rpt_summary *s, uint32_t id)
{
	size_t i;

	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct chan_stat *t = calloc(cap, sizeof(*t));

		if (!t)
			return NULL;
		for (size_t k = 0; k < s->cap; k++) {
			if (!s->tab[k].used)
				continue;
			for (i = (s->tab[k].id * 2654435761u) & (cap - 1); t[i].used; i = (i + 1) & (cap - 1))
				;
			t[i] = s->tab[k];
		}
		free(s->tab);
		s->tab = t;
		s->cap = cap;
	}
	for (i = (id * 2654435761u) & (s->cap - 1); s->tab[i].used && s->tab[i].id != id; i = (i + 1) & (s->cap - 1))
		;
	if (!s->tab[i].used) {
		s->tab[i] = (struct chan_stat){ .id = id, .used = true, .min = INFINITY, .max = -INFINITY,
		                                .min_dt_ns = INT64_MAX };
		s->n++;
	}
	return &s->tab[i];
}

/* One sample, in time order. */
static int take(struct rpt_summary *s, const struct acq_item *it)
{
	struct chan_stat *c = stat_get(s, it->sample.channel);
	double v = it->sample.value;

	if (!c)
		return -ENOMEM;
	if (c->count) {
		int64_t dt = it->t_ns - c->last_ns;
		int64_t limit = s->gap_ns ? s->gap_ns : c->min_dt_ns < INT64_MAX / SUMMARY_GAP_FACTOR ?
		                c->min_dt_ns * SUMMARY_GAP_FACTOR : INT64_MAX;

		/* judged before this interval lowers the shortest one */
		c->gaps += dt > limit && c->count > 1;
		if (dt > 0 && dt < c->min_dt_ns)
			c->min_dt_ns = dt;
		if (dt > c->max_dt_ns)
			c->max_dt_ns = dt;
	} else {
		c->first_ns = it->t_ns;
	}
	c->last_ns = it->t_ns;
	c->count++;
	c->out_of_range += it->sample.quality == ACQ_Q_OUT_OF_RANGE;
	if (it->sample.quality == ACQ_Q_INVALID || !isfinite(v)) {
		c->invalid++;
		return 0;
	}
	c->valid++;
	c->sum += v;
	c->min = v < c->min ? v : c->min;
	c->max = v > c->max ? v : c->max;
	return 0;
}

/* The i-th --channel name: the dictionary's (resolved) or as given. */
static const char *only_at(const void *ctx, size_t i)
{
	const struct rpt_summary *s = ctx;

	return s->resolved[i] ? s->resolved[i] : s->only[i];
}

static bool wanted(const struct rpt_summary *s, const struct acq_item *it)
{
	const struct rec_channel *c;

	if (it->kind != ACQ_ITEM_SAMPLE || it->t_ns < s->from_ns || it->t_ns >= s->to_ns)
		return false;
	if (!s->nonly)
		return true;
	c = rec_channels_find(s->names, it->sample.channel);
	for (size_t i = 0; c && i < s->nonly; i++)
		if (!strcmp(c->name, only_at(s, i)))
			return true;
	return false;
}

/* A Batch of the log (src RPT_ANSWERS_LOG) or of its answers logs: the
   records the rule of report/answers.h reads from it. */
static int feed_batch(struct rpt_summary *s, const struct stor_rec *rec, const char *dir, const rpt_answers_t *ans,
                      int src)
{
	rec_batch_t *b;
	struct rec_batch_info info;
	struct acq_item it, due;
	int r = rec_batch_decode(rec->payload, rec->len, &b);

	if (r < 0) {
		rpt_log_undecodable_print(s->err, "summary", dir, rec, r);
		s->damaged++;
		return 0;
	}
	rec_batch_info(b, &info);
	rec_channels_learn(s->names, b);
	for (size_t i = 0; i < info.count && r >= 0; i++) {
		if (ans && !rpt_answers_take(ans, src, rec_batch_seq(b, i)))
			continue;
		rec_batch_item(b, i, &it);
		if (!wanted(s, &it))
			continue;
		if (rec_order_push(s->order, &it) == -ENOBUFS && rec_order_pop(s->order, &due) == 1) {
			r = take(s, &due);
			rec_order_push(s->order, &it);
		}
		while (r >= 0 && rec_order_next(s->order, &due) == 1)
			r = take(s, &due);
	}
	rec_batch_free(b);
	return r;
}

/* The answers Batches that start before seq (report/answers.h). */
static int feed_answers(struct rpt_summary *s, rpt_answers_t *ans, uint64_t seq)
{
	struct stor_rec rec;
	int src, r = 0;

	while (r >= 0 && rpt_answers_next(ans, seq, &rec, &src) == 1)
		if (!rpt_batch_outside(&rec, s->from_ns, s->to_ns))
			r = feed_batch(s, &rec, rpt_answers_dir(ans, src), ans, src);
	return r;
}

int rpt_summary_read(rpt_summary_t *s, const char *dir)
{
	rpt_answers_t *ans;
	stor_reader_t *rd;
	struct stor_rec rec;
	struct acq_item due;
	int r = stor_reader_open(dir, &rd);

	if (r < 0)
		return r;
	r = rpt_answers_open(dir, s->err, "summary", &ans);
	while (r >= 0 && (r = stor_reader_next(rd, &rec)) != 0) {
		if (r == -EBADMSG) {
			s->damaged += rpt_log_fault_print(s->err, "summary", dir, rd);
			r = 0;
			continue;
		}
		if (r > 0)
			r = feed_answers(s, ans, rec.first_seq + rec.count);
		/* a Batch whose span misses --from/--to: not decoded */
		if (r >= 0 && !rpt_batch_outside(&rec, s->from_ns, s->to_ns))
			r = feed_batch(s, &rec, dir, ans, RPT_ANSWERS_LOG);
	}
	if (r == 0)
		s->damaged += rpt_log_tail_print(s->err, "summary", dir, rd);
	if (r == 0)
		r = feed_answers(s, ans, UINT64_MAX);
	s->damaged += rpt_answers_damaged(ans);
	rpt_answers_free(ans);
	stor_reader_free(rd);
	while (r >= 0 && rec_order_pop(s->order, &due) == 1)
		r = take(s, &due);
	return r;
}

/* ---- the ground database (--db) ---- */

/* A raw read of the database: the samples of one window [from, to), to
   the nanosecond (the database's window is rounded outwards). */
struct db_window {
	struct rpt_summary *s;
	int64_t from_ns, to_ns;
};

static int db_item(void *ctx, const struct acq_item *it, const uint8_t *log_id, size_t len)
{
	struct db_window *w = ctx;

	(void)log_id;
	(void)len;
	if (it->t_ns < w->from_ns || it->t_ns >= w->to_ns || !wanted(w->s, it))
		return 0;
	return take(w->s, it);
}

static int db_raw(struct rpt_summary *s, grd_db_t *db, const char *vehicle, const uint32_t *ids, size_t nids,
                  int64_t from_ns, int64_t to_ns)
{
	struct db_window w = { s, from_ns, to_ns };
	struct grd_export_query q = { .vehicle = vehicle, .from_ns = from_ns, .to_ns = to_ns,
	                              .kinds = 1u << ACQ_ITEM_SAMPLE, .channels = ids, .nchannels = nids };

	if (from_ns >= to_ns)
		return 0;
	int r = grd_db_export(db, &q, db_item, &w);
	return r < 0 ? r : 0;
}

/* The limit take() judges an interval by, with the shortest one m. */
static int64_t gap_limit(const struct rpt_summary *s, int64_t m)
{
	return s->gap_ns ? s->gap_ns : m < INT64_MAX / SUMMARY_GAP_FACTOR ? m * SUMMARY_GAP_FACTOR : INT64_MAX;
}

/* A second of the rollup taken as take() would take its samples one by
   one; false (nothing taken) when it cannot say the same: its intervals
   are not known, or one inside it may be a gap (longer than the limit
   the shortest interval so far gives: take() judges each interval by the
   shortest one before it, never shorter than the one after the second,
   so a second whose longest interval is within that limit has none). */
static bool take_second(struct rpt_summary *s, struct chan_stat *c, const struct grd_summary_row *m)
{
	int64_t din = c->count ? m->t_first_ns - c->last_ns : 0;
	int64_t shortest = c->min_dt_ns;

	if (m->dt_max_ns < 0)
		return false;
	if (din > 0 && din < shortest)
		shortest = din;
	if (m->dt_min_ns < shortest)
		shortest = m->dt_min_ns;
	if (m->dt_max_ns > gap_limit(s, shortest))
		return false;
	if (c->count) {
		/* the interval into the second, as take() judges it */
		c->gaps += din > gap_limit(s, c->min_dt_ns) && c->count > 1;
		c->max_dt_ns = din > c->max_dt_ns ? din : c->max_dt_ns;
	} else {
		c->first_ns = m->t_first_ns;
	}
	c->min_dt_ns = shortest;
	c->max_dt_ns = m->dt_max_ns > c->max_dt_ns ? m->dt_max_ns : c->max_dt_ns;
	c->last_ns = m->t_last_ns;
	c->count += m->n_all;
	c->out_of_range += m->n_oor;
	c->invalid += m->n_inv;
	if (m->n_all > m->n_inv) {
		c->valid += m->n_all - m->n_inv;
		c->sum += m->a_sum;
		c->min = m->a_min < c->min ? m->a_min : c->min;
		c->max = m->a_max > c->max ? m->a_max : c->max;
	}
	return true;
}

#define SUMMARY_SECOND_NS INT64_C(1000000000)
#define SUMMARY_MINUTE_NS (60 * SUMMARY_SECOND_NS)
#define SUMMARY_PAGE 8192 /* rollup rows asked at once: bounded memory */

/* t rounded down (up) to a multiple of unit; the open ends stay open. */
static int64_t round_down(int64_t t, int64_t unit)
{
	if (t == INT64_MIN || t == INT64_MAX)
		return t;
	return (t / unit - (t % unit < 0)) * unit;
}

static int64_t round_up(int64_t t, int64_t unit)
{
	int64_t d = round_down(t, unit);

	return d == t ? t : d + unit;
}

/* One channel over [from, to): the raw rows of the partial seconds at the
   edges, the rollup's whole seconds between, in time order.  Where the
   rollup cannot answer as the raw rows would, the raw rows from there to
   the next minute: one read for a run of such seconds (an irregular
   channel), not one each. */
static int db_channel(struct rpt_summary *s, grd_db_t *db, const char *vehicle, uint32_t id,
                      struct grd_summary_row *page)
{
	int64_t lo = round_up(s->from_ns, SUMMARY_SECOND_NS), hi = round_down(s->to_ns, SUMMARY_SECOND_NS);
	int64_t at = lo, raw_to = INT64_MIN;
	int r, n = 0;

	if (lo >= hi) /* no whole second: all raw */
		return db_raw(s, db, vehicle, &id, 1, s->from_ns, s->to_ns);
	r = db_raw(s, db, vehicle, &id, 1, s->from_ns, lo);
	while (r == 0 && (n = grd_db_summary_rollups(db, vehicle, id, at, hi, page, SUMMARY_PAGE)) > 0) {
		for (int i = 0; r == 0 && i < n; i++) {
			struct chan_stat *c;

			if (page[i].t_ns < raw_to) /* read raw already */
				continue;
			if (!(c = stat_get(s, id)))
				return -ENOMEM;
			if (take_second(s, c, &page[i])) {
				s->rollup_seconds++;
				continue;
			}
			raw_to = round_down(page[i].t_ns, SUMMARY_MINUTE_NS) + SUMMARY_MINUTE_NS;
			raw_to = raw_to < hi ? raw_to : hi;
			s->raw_reads++;
			r = db_raw(s, db, vehicle, &id, 1, page[i].t_ns, raw_to);
		}
		at = page[n - 1].t_ns + SUMMARY_SECOND_NS;
	}
	if (r == 0 && n < 0)
		r = n;
	return r < 0 ? r : db_raw(s, db, vehicle, &id, 1, hi, s->to_ns);
}

/* The ids the summary is about: those of the --channel names in the
   dictionary, or every channel with a rollup row in the range (the
   partial seconds at its edges: those around them).  Count or -errno. */
static int db_channel_ids(struct rpt_summary *s, grd_db_t *db, const char *vehicle, uint32_t **ret)
{
	if (!s->nonly)
		return grd_db_summary_channels(db, vehicle, round_down(s->from_ns, SUMMARY_SECOND_NS),
		                               round_up(s->to_ns, SUMMARY_SECOND_NS), ret);
	return rec_channels_ids(s->names, only_at, s, s->nonly, ret);
}

int rpt_summary_read_db(rpt_summary_t *s, grd_db_t *db, const char *vehicle, bool raw)
{
	uint32_t *ids = NULL;
	struct grd_summary_row *page = NULL;
	/* raw and no --channel: every channel's rows, no list needed */
	int n = raw && !s->nonly ? 0 : db_channel_ids(s, db, vehicle, &ids), r = 0;

	if (n < 0)
		return n;
	if (raw) /* every sample row, as before the rollup (the benchmark's baseline) */
		r = n || !s->nonly ? db_raw(s, db, vehicle, ids, s->nonly ? (size_t)n : 0, s->from_ns, s->to_ns) : 0;
	else if (!(page = malloc(SUMMARY_PAGE * sizeof(*page))))
		r = -ENOMEM;
	for (int i = 0; !raw && r == 0 && i < n; i++)
		r = db_channel(s, db, vehicle, ids[i], page);
	free(page);
	free(ids);
	return r;
}

void rpt_summary_db_counts(const rpt_summary_t *s, uint64_t *ret_rollup, uint64_t *ret_raw)
{
	*ret_rollup = s->rollup_seconds;
	*ret_raw = s->raw_reads;
}

/* The database's words for r: its own message, else errno's. */
static const char *db_why(grd_db_t *db, int r)
{
	return *grd_db_error(db) ? grd_db_error(db) : strerror(-r);
}

int rpt_summary_run_db(rpt_summary_t *s, const char *url, const char *vehicle, bool raw, bool json, FILE *out)
{
	struct grd_db_cfg cfg = { .url = url };
	char where[128];
	grd_db_t *db;
	size_t n;
	int r = grd_db_new(&cfg, &db);

	if (r == -ENOTSUP)
		fprintf(s->err, "railmon summary: --db: %s\n", GRD_DB_NOT_BUILT);
	else if (r < 0)
		fprintf(s->err, "railmon summary: --db: %s\n", strerror(-r));
	if (r < 0)
		return 1;
	r = grd_db_check(db);
	if (r == 0 && (r = grd_db_vehicle_known(db, vehicle)) == 0) {
		fprintf(s->err, "railmon summary: --vehicle %s: the database has no such vehicle (it never sent a "
		        "Batch)\n", vehicle);
		grd_db_free(db);
		return 1;
	}
	if (r > 0)
		r = grd_db_channels(db, vehicle, s->names);
	snprintf(where, sizeof(where), "vehicle %s in the database", vehicle);
	if (r >= 0 && s->nonly && (r = rpt_channels_resolve(s->err, "summary", where, s->names, s->only, s->nonly,
	                                                     s->resolved)) > 0) {
		grd_db_free(db);
		return 1;
	}
	if (r >= 0)
		r = rpt_summary_read_db(s, db, vehicle, raw);
	n = rpt_summary_channels(s);
	if (r == -ENOMEM)
		fprintf(s->err, "railmon summary: out of memory\n");
	else if (r < 0)
		fprintf(s->err, "railmon summary: --db: %s\n", db_why(db, r));
	else if (!n)
		fprintf(s->err, "railmon summary: %s: no samples%s%s\n", where, s->nonly ? " of those channels" : "",
		        s->from_ns != INT64_MIN || s->to_ns != INT64_MAX ? " between --from and --to" : "");
	else
		r = rpt_summary_print(s, json, out);
	if (r >= 0 && n && !raw) /* what the rollup saved, and where it could not */
		fprintf(s->err, "railmon summary: --db: %" PRIu64 " second%s from the rollup, %" PRIu64
		        " read%s of the rows where it could not say\n", s->rollup_seconds, s->rollup_seconds == 1 ? "" : "s",
		        s->raw_reads, s->raw_reads == 1 ? "" : "s");
	grd_db_free(db);
	return r < 0 || !n ? 1 : 0;
}

static int stat_cmp(const void *a, const void *b)
{
	const struct chan_stat *x = *(const struct chan_stat *const *)a, *y = *(const struct chan_stat *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* decimals: the channel's resolution (rec_format_value()), -1 none */
static void num(double v, bool ok, int decimals, char *buf)
{
	if (!ok || rec_format_value(v, decimals, buf, REC_DOUBLE_MAX) < 0)
		strcpy(buf, "-");
}

static const char *row_name(const struct rec_channel *ch)
{
	return ch && *ch->name ? ch->name : "?";
}

static const char *row_unit(const struct rec_channel *ch)
{
	return ch && *ch->unit ? ch->unit : "-";
}

/* The name and unit columns: at least 28 and 6 wide as they always were,
   wider for the longest present, so a long name shifts no column. */
static struct sum_cols size_columns(const struct rpt_summary *s, const struct chan_stat *const *v, size_t k)
{
	struct sum_cols w = { 28, 6 };

	for (size_t i = 0; i < k; i++) {
		const struct rec_channel *ch = rec_channels_find(s->names, v[i]->id);
		int n = (int)strlen(row_name(ch)), u = (int)strlen(row_unit(ch));

		w.name = n > w.name ? (n < 255 ? n : 255) : w.name;
		w.unit = u > w.unit ? (u < 255 ? u : 255) : w.unit;
	}
	return w;
}

static void print_row(const struct rpt_summary *s, const struct chan_stat *c, const struct sum_cols *w, bool json,
                      FILE *out)
{
	const struct rec_channel *ch = rec_channels_find(s->names, c->id);
	char first[40], last[40], mn[REC_DOUBLE_MAX], mx[REC_DOUBLE_MAX], mean[REC_DOUBLE_MAX];
	double longest = c->count > 1 ? (double)c->max_dt_ns / 1e9 : 0;

	/* to the ms: what a summary says, not the records' own times */
	basic_utc_text(c->first_ns, 3, 0, first, sizeof(first));
	basic_utc_text(c->last_ns, 3, 0, last, sizeof(last));
	int dec = ch && ch->has_decimals ? (int)ch->decimals : -1;

	/* min and max are values of the channel: at its resolution; the mean
	   is not one, it keeps every digit */
	num(c->min, c->valid, dec, mn);
	num(c->max, c->valid, dec, mx);
	num(c->valid ? c->sum / (double)c->valid : 0, c->valid, -1, mean);
	if (!json) {
		/* the table: 7 digits are plenty to read; --json has them all */
		char line[1024]; /* the name and unit are at most 255 characters each */

		if (c->valid)
			snprintf(mean, sizeof(mean), "%.7g", c->sum / (double)c->valid);
		snprintf(line, sizeof(line), "%-8" PRIu32 " %-*s %-*s %9" PRIu64 "  %s  %s  %12s %12s %12s %5" PRIu64
		         " %9.3f %7" PRIu64 " %7" PRIu64, c->id, w->name, row_name(ch), w->unit, row_unit(ch), c->count,
		         first, last, mn, mx, mean, c->gaps, longest, c->out_of_range, c->invalid);
		rpt_line_fit(out, line, s->width);
		return;
	}
	fprintf(out, "{\"channel\":%" PRIu32 ",\"name\":", c->id);
	basic_json_string(out, ch ? ch->name : NULL);
	fputs(",\"unit\":", out);
	basic_json_string(out, ch ? ch->unit : NULL);
	fprintf(out, ",\"count\":%" PRIu64 ",\"first\":\"%s\",\"first_ns\":%" PRId64 ",\"last\":\"%s\",\"last_ns\":%" PRId64
	            ",\"min\":%s,\"max\":%s,\"mean\":%s,\"gaps\":%" PRIu64 ",\"longest_interval_s\":%.9g,"
	            "\"out_of_range\":%" PRIu64 ",\"invalid\":%" PRIu64 "}\n", c->count, first, c->first_ns, last, c->last_ns,
	            c->valid ? mn : "null", c->valid ? mx : "null", c->valid ? mean : "null", c->gaps, longest,
	            c->out_of_range, c->invalid);
}

int rpt_summary_print(const rpt_summary_t *s, bool json, FILE *out)
{
	char head[1024];
	struct sum_cols w;
	const struct chan_stat **v = calloc(s->n ? s->n : 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].used)
			v[k++] = &s->tab[i];
	qsort(v, k, sizeof(*v), stat_cmp);
	w = size_columns(s, v, k);
	if (!json) {
		snprintf(head, sizeof(head), "%-8s %-*s %-*s %9s  %-24s  %-24s  %12s %12s %12s %5s %9s %7s %7s", "id",
		         w.name, "name", w.unit, "unit", "samples", "first", "last", "min", "max", "mean", "gaps",
		         "longest", "out_rng", "invalid");
		rpt_line_fit(out, head, s->width);
	}
	for (size_t i = 0; i < k; i++)
		print_row(s, v[i], &w, json, out);
	free(v);
	return 0;
}

int rpt_summary_resolve(rpt_summary_t *s, const char *dir)
{
	int r = rpt_channels_learn_log(dir, s->names);

	if (r < 0)
		return r; /* no log: rpt_summary_read says so */
	return rpt_channels_resolve(s->err, "summary", dir, s->names, s->only, s->nonly, s->resolved);
}

int rpt_summary_new(const struct rpt_summary_opts *o, FILE *err, rpt_summary_t **ret_summary)
{
	rpt_summary_t *s;

	if (!o || !err || !ret_summary || o->nonly > RPT_SUMMARY_ONLY_MAX || (o->nonly && !o->only))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*s = (struct rpt_summary){ .from_ns = o->from_ns, .to_ns = o->to_ns, .gap_ns = o->gap_ns, .nonly = o->nonly,
	                           .err = err, .width = o->width };
	for (size_t i = 0; i < o->nonly; i++)
		s->only[i] = o->only[i];
	if (rec_channels_new(&s->names) < 0 || rec_order_new(REC_ORDER_MAX_ITEMS, REC_ORDER_WINDOW_NS, &s->order) < 0)
		return rpt_summary_free(s), -ENOMEM;
	*ret_summary = s;
	return 0;
}

rpt_summary_t *rpt_summary_free(rpt_summary_t *s)
{
	if (!s)
		return NULL;
	free(s->tab);
	for (size_t i = 0; i < s->nonly; i++)
		free(s->resolved[i]);
	rec_order_free(s->order);
	rec_channels_free(s->names);
	free(s);
	return NULL;
}

size_t rpt_summary_channels(const rpt_summary_t *s)
{
	return s->n;
}

uint64_t rpt_summary_damaged(const rpt_summary_t *s)
{
	return s->damaged;
}

int rpt_summary_run(rpt_summary_t *s, const char *dir, bool json, FILE *out)
{
	uint64_t damaged;
	size_t n;
	int r = s->nonly ? rpt_summary_resolve(s, dir) : 0;

	if (r == -ENOMEM)
		fprintf(s->err, "railmon summary: out of memory\n");
	if (r > 0 || r == -ENOMEM)
		return 1;
	r = rpt_summary_read(s, dir);
	n = rpt_summary_channels(s);
	if (r < 0)
		fprintf(s->err, "railmon summary: %s: %s\n", dir, strerror(-r));
	else if (!n)
		fprintf(s->err, "railmon summary: %s: no samples%s\n", dir, s->nonly ? " of those channels" : "");
	else
		r = rpt_summary_print(s, json, out);
	damaged = rpt_summary_damaged(s);
	if (damaged)
		fprintf(s->err, "railmon summary: %" PRIu64 " unreadable part%s of the log skipped (see above)\n", damaged,
		        damaged == 1 ? "" : "s");
	return r < 0 || !n || damaged ? 1 : 0;
}
