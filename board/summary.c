/* SPDX-License-Identifier: MIT */
/*
 * summary.c - `railmon summary --data DIR`: per channel, what a log holds:
 * sample count, first and last time, min/max/mean of the valid values,
 * gaps (intervals over --gap, by default over 5 times the channel's
 * shortest interval), the longest interval, and the out-of-range and
 * invalid counts.  Samples are taken in time order (record/order.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "cli-args.h"
#include "logfault.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "record/order.h"
#include "storage/stor.h"
#include "basic/escape.h"

#define SUMMARY_GAP_FACTOR 5

static const char summary_usage[] =
	"Usage: railmon summary [--data DIR] [OPTIONS]\n"
	"Per channel: samples, first/last time, min/max/mean, gaps, out-of-range and\n"
	"invalid samples.\n\n"
	"  -d, --data DIR      log directory (default: railmon-data)\n"
	"      --from TIME     only samples at or after TIME (as export's)\n"
	"      --to TIME       only samples before TIME\n"
	"  -c, --channel NAME  only this channel (repeatable)\n"
	"      --gap DUR       an interval longer than DUR is a gap (default: longer than\n"
	"                      5 times the channel's shortest interval)\n"
	"      --json          one JSON object per channel\n"
	"  -h, --help          this text\n";

struct chan_stat {
	uint32_t id;
	bool used;
	uint64_t count, valid, out_of_range, invalid, gaps;
	int64_t first_ns, last_ns, min_dt_ns, max_dt_ns;
	double min, max, sum;
};

struct summary {
	struct chan_stat *tab;
	size_t cap, n;
	int64_t from_ns, to_ns, gap_ns;
	const char *only[64];
	size_t nonly;
	rec_channels_t *names;
	rec_order_t *order;
	uint64_t damaged;
};

static struct chan_stat *stat_get(struct summary *s, uint32_t id)
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
static int take(struct summary *s, const struct acq_item *it)
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

static bool wanted(const struct summary *s, const struct acq_item *it)
{
	const struct rec_channel *c;

	if (it->kind != ACQ_ITEM_SAMPLE || it->t_ns < s->from_ns || it->t_ns >= s->to_ns)
		return false;
	if (!s->nonly)
		return true;
	c = rec_channels_find(s->names, it->sample.channel);
	for (size_t i = 0; c && i < s->nonly; i++)
		if (!strcmp(c->name, s->only[i]))
			return true;
	return false;
}

static int feed_batch(struct summary *s, const struct stor_rec *rec, const char *dir)
{
	rec_batch_t *b;
	struct rec_batch_info info;
	struct acq_item it, due;
	int r = rec_batch_decode(rec->payload, rec->len, &b);

	if (r < 0) {
		board_log_undecodable_print("summary", dir, rec, r);
		s->damaged++;
		return 0;
	}
	rec_batch_info(b, &info);
	rec_channels_learn(s->names, b);
	for (size_t i = 0; i < info.count && r >= 0; i++) {
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

static int read_log(struct summary *s, const char *dir)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	struct acq_item due;
	int r = stor_reader_open(dir, &rd);

	if (r < 0)
		return r;
	while (r >= 0 && (r = stor_reader_next(rd, &rec)) != 0) {
		if (r == -EBADMSG) {
			s->damaged += board_log_fault_print("summary", dir, rd);
			r = 0;
			continue;
		}
		if (r > 0)
			r = feed_batch(s, &rec, dir);
	}
	stor_reader_free(rd);
	while (r >= 0 && rec_order_pop(s->order, &due) == 1)
		r = take(s, &due);
	return r;
}

static int stat_cmp(const void *a, const void *b)
{
	const struct chan_stat *x = *(const struct chan_stat *const *)a, *y = *(const struct chan_stat *const *)b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* "2026-12-03T07:00:00.123Z" (ms: a summary, not the records) */
static const char *short_time(int64_t t_ns, char *buf, size_t len)
{
	time_t sec = (time_t)(t_ns / 1000000000 - (t_ns % 1000000000 < 0));
	int64_t ms = ((t_ns % 1000000000 + 1000000000) % 1000000000) / 1000000;
	struct tm tm;
	size_t n;

	if (!gmtime_r(&sec, &tm) || !(n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm)))
		snprintf(buf, len, "%" PRId64, t_ns);
	else
		snprintf(buf + n, len - n, ".%03" PRId64 "Z", ms);
	return buf;
}

static void num(double v, bool ok, char *buf)
{
	if (!ok || rec_format_double(v, buf, REC_DOUBLE_MAX) < 0)
		strcpy(buf, "-");
}

static void print_row(const struct summary *s, const struct chan_stat *c, bool json)
{
	const struct rec_channel *ch = rec_channels_find(s->names, c->id);
	char first[40], last[40], mn[REC_DOUBLE_MAX], mx[REC_DOUBLE_MAX], mean[REC_DOUBLE_MAX];
	double longest = c->count > 1 ? (double)c->max_dt_ns / 1e9 : 0;

	short_time(c->first_ns, first, sizeof(first));
	short_time(c->last_ns, last, sizeof(last));
	num(c->min, c->valid, mn);
	num(c->max, c->valid, mx);
	num(c->valid ? c->sum / (double)c->valid : 0, c->valid, mean);
	if (!json) {
		/* the table: 7 digits are plenty to read; --json has them all */
		if (c->valid)
			snprintf(mean, sizeof(mean), "%.7g", c->sum / (double)c->valid);
		printf("%-8" PRIu32 " %-28s %-6s %9" PRIu64 "  %s  %s  %12s %12s %12s %5" PRIu64 " %9.3f %7" PRIu64
		       " %7" PRIu64 "\n", c->id, ch && *ch->name ? ch->name : "?", ch && *ch->unit ? ch->unit : "-",
		       c->count, first, last, mn, mx, mean, c->gaps, longest, c->out_of_range, c->invalid);
		return;
	}
	printf("{\"channel\":%" PRIu32 ",\"name\":", c->id);
	basic_json_string(stdout, ch ? ch->name : NULL);
	fputs(",\"unit\":", stdout);
	basic_json_string(stdout, ch ? ch->unit : NULL);
	printf(",\"count\":%" PRIu64 ",\"first\":\"%s\",\"first_ns\":%" PRId64 ",\"last\":\"%s\",\"last_ns\":%" PRId64
	       ",\"min\":%s,\"max\":%s,\"mean\":%s,\"gaps\":%" PRIu64 ",\"longest_interval_s\":%.9g,"
	       "\"out_of_range\":%" PRIu64 ",\"invalid\":%" PRIu64 "}\n", c->count, first, c->first_ns, last, c->last_ns,
	       c->valid ? mn : "null", c->valid ? mx : "null", c->valid ? mean : "null", c->gaps, longest,
	       c->out_of_range, c->invalid);
}

static int print_summary(const struct summary *s, bool json)
{
	const struct chan_stat **v = calloc(s->n ? s->n : 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].used)
			v[k++] = &s->tab[i];
	qsort(v, k, sizeof(*v), stat_cmp);
	if (!json)
		printf("%-8s %-28s %-6s %9s  %-24s  %-24s  %12s %12s %12s %5s %9s %7s %7s\n", "id", "name", "unit", "samples",
		       "first", "last", "min", "max", "mean", "gaps", "longest", "out_rng", "invalid");
	for (size_t i = 0; i < k; i++)
		print_row(s, v[i], json);
	free(v);
	return 0;
}

/* Every --channel name is one the log's dictionaries give, or the nearest
   ones are said.  Returns how many are not. */
static int unknown_channels(const struct summary *s, const char *dir)
{
	const struct rec_channel **list;
	const char **names;
	char near[512];
	int n = rec_channels_sorted(s->names, &list), bad = 0;

	if (n < 0 || !(names = calloc(n ? (size_t)n : 1, sizeof(*names)))) {
		free(n < 0 ? NULL : list);
		return 0; /* no memory to check: the table says what there is */
	}
	for (int i = 0; i < n; i++)
		names[i] = list[i]->name;
	for (size_t k = 0; k < s->nonly; k++) {
		int i = 0;

		while (i < n && strcmp(names[i], s->only[k]))
			i++;
		if (i < n)
			continue;
		cli_nearest_names(s->only[k], names, (size_t)n, near, sizeof(near));
		fprintf(stderr, "railmon summary: --channel '%s': %s has no such channel; nearest: %s\n", s->only[k], dir,
		        *near ? near : "none near (`railmon channels --data DIR` lists them)");
		bad++;
	}
	free(names);
	free(list);
	return bad;
}

static int summary_option(struct summary *s, int c, const char *arg)
{
	switch (c) {
	case 1:
	case 2:
		if (cli_parse_time(arg, c == 1 ? &s->from_ns : &s->to_ns) < 0)
			return cli_fail("summary", "--%s: cannot read time '%s'", c == 1 ? "from" : "to", arg);
		return 0;
	case 3:
		if (cli_parse_duration(arg, &s->gap_ns) < 0)
			return cli_fail("summary", "--gap: expected a duration like 500ms or 2s, not '%s'", arg);
		return 0;
	case 'c':
		if (s->nonly >= sizeof(s->only) / sizeof(s->only[0]))
			return cli_fail("summary", "--channel: at most 64");
		s->only[s->nonly++] = arg;
		return 0;
	}
	return 2;
}

int board_cmd_summary(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 }, { "gap", required_argument, NULL, 3 },
		{ "channel", required_argument, NULL, 'c' }, { "json", no_argument, NULL, 4 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct summary s = { .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	const char *dir = "railmon-data";
	bool json = false;
	int c, r = 0;

	while (r == 0 && (c = getopt_long(argc, argv, "d:c:h", opts, NULL)) != -1) {
		if (c == 'd') {
			dir = optarg;
		} else if (c == 4) {
			json = true;
		} else if (c == 'h') {
			fputs(summary_usage, stdout);
			return 0;
		} else if (c == '?' || (r = summary_option(&s, c, optarg)) == 2) {
			fputs(summary_usage, stderr);
			return 2;
		}
	}
	if (r)
		return r;
	if (optind < argc)
		return cli_fail("summary", "unexpected argument '%s'", argv[optind]);
	if (rec_channels_new(&s.names) < 0 || rec_order_new(REC_ORDER_MAX_ITEMS, REC_ORDER_WINDOW_NS, &s.order) < 0) {
		rec_channels_free(s.names);
		return cli_fail("summary", "out of memory");
	}
	r = read_log(&s, dir);
	if (r < 0)
		fprintf(stderr, "railmon summary: %s: %s\n", dir, strerror(-r));
	else if (s.nonly && unknown_channels(&s, dir))
		r = -ENOENT;
	else if (!s.n)
		fprintf(stderr, "railmon summary: %s: no samples%s\n", dir, s.nonly ? " of those channels" : "");
	else
		r = print_summary(&s, json);
	if (s.damaged)
		fprintf(stderr, "railmon summary: %" PRIu64 " unreadable part%s of the log skipped (see above)\n", s.damaged,
		        s.damaged == 1 ? "" : "s");
	free(s.tab);
	rec_order_free(s.order);
	rec_channels_free(s.names);
	return r < 0 || !s.n || s.damaged ? 1 : 0;
}
