/* SPDX-License-Identifier: MIT */
/*
 * plot.c - `railmon plot`: channels of a log (or of the ground database)
 * drawn over time into a PNG, an SVG or one zoomable HTML page.
 *
 * The records come through export's engine (report/export.h: the same
 * sources, time window and channel names as `export`) into a sink that
 * hands samples and events to plot/ (plot.h: bounded memory whatever
 * the log's length, so a day of data draws in the memory of a minute).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/timeparse.h"
#include "cli.h"
#include "ground/db.h"
#include "ground/rollup.h"
#include "plot/plot.h"
#include "record/channels.h"
#include "record/names.h"
#include "report/export.h"

static const char plot_usage[] =
	"Usage: railmon plot -c CHANNEL [-c CHANNEL ...] -o FILE [OPTIONS]\n"
	"Draw channels of the log over time: a PNG or SVG picture, or one HTML page\n"
	"(zoomable, all charts together; it opens offline).  Channels of one unit share\n"
	"a panel; events (START, STOP, faults, triggers; not the Seals) are dashed\n"
	"lines.  Each pixel column shows the first, last, lowest and highest sample it\n"
	"holds, so a one-sample spike shows on a day of data; a line breaks where\n"
	"samples stop for more than 20 of their usual spacings.  Samples of quality\n"
	"invalid are left out (and counted); out-of-range ones are drawn.\n"
	"\n"
	"  -d, --data DIR      log directory (default: railmon-data), or a vehicle's\n"
	"                      directory of a ground log (recv --log)\n"
	"      --db URL        read the ground's PostgreSQL database instead of a log\n"
	"      --vehicle V     with --db: the vehicle (required)\n"
	"  -c, --channel NAME  a channel (repeatable, at most 32): Message.Signal, or the\n"
	"                      bare signal name where only one message has it\n"
	"  -o, --output FILE   the picture: FILE.png, FILE.svg or FILE.html\n"
	"      --from TIME     only samples at or after TIME\n"
	"      --to TIME       only samples before TIME\n"
	"                      TIME: 2026-12-03T07:00:00Z, 2026-12-03T08:00:00+01:00,\n"
	"                      2026-12-03 08:00:00 (local time, TZ) or Unix seconds\n"
	"      --local         the time axis in local time (TZ) instead of UTC\n"
	"      --size WxH      the picture's size in pixels (default 1200 wide, 260 high\n"
	"                      a panel)\n"
	"      --title TEXT    a title above the picture (default: the source)\n"
	"      --no-events     no event lines\n"
	"      --raw           with --db: every sample row, not the per-second rollup\n"
	"                      (by default a picture of about 10 hours or more, buckets\n"
	"                      of 17 s, reads the rollup and the rows of only the\n"
	"                      seconds that can hold a drawn point: the same picture)\n"
	"  -h, --help          this text\n"
	"\n"
	"Examples:\n"
	"  railmon plot -d railmon-data -c VehicleSpeed.Speed -c BrakePipePressure -o run.png\n"
	"  railmon plot -c Speed --from 2026-12-03T08:00:00Z --to 2026-12-03T08:10:00Z -o speed.html\n"
	"  railmon plot --db postgresql:///railmon --vehicle emu-4711 -c Speed -o day.svg\n";

struct plot_run {
	plot_t *p;
	const char *resolved[RPT_EXPORT_FILTER_MAX];
	int series[RPT_EXPORT_FILTER_MAX];
	size_t n;
	bool events;
	uint64_t invalid, events_seen;
	/* --db: the samples from the rollup where the picture allows */
	const char *url, *vehicle;
	bool raw;                 /* --raw */
	int64_t from_ns, to_ns;
	uint32_t ids[RPT_EXPORT_FILTER_MAX]; /* each series' channel id */
	bool rolled;              /* the samples came through the rollup */
	uint64_t seconds, seconds_read, seconds_bad;
};

/* The narrowest grid bucket (plot.h) the rollup is read for: 2^34 ns,
   17 s, a picture of about 10 hours or more.  Up to 5 seconds of a
   bucket are read whole (its first, last, lowest, highest and the one
   across its edge; about 4 in the ground-plot test's day), so at 17
   seconds a bucket about a quarter of the rows is read; at 8.6 s it
   would be half, and the rollup's rows and the raw query's scan of the
   span cost besides: the raw rows, then. */
#define PLOT_DB_ROLLUP_WIDTH_NS (INT64_C(1) << 34)
#define PLOT_SECOND_NS INT64_C(1000000000)
#define PLOT_ROLLUP_PAGE 8192

/* The Seals' events mark bookkeeping every few seconds, not the train. */
static bool event_worth_a_line(uint32_t code)
{
	return code != ACQ_EV_SEAL && code != ACQ_EV_SEAL_CHAIN_NEW && code != ACQ_EV_SEAL_UNSIGNED;
}

/* A sample of the i-th series, from the export or read raw by the rollup
   path: the same rules either way. */
static int plot_sample(struct plot_run *pr, size_t i, int64_t t_ns, double v, uint32_t quality)
{
	if (quality == ACQ_Q_INVALID) {
		pr->invalid++;
		return 0;
	}
	return plot_add_point(pr->p, pr->series[i], t_ns, v);
}

static int plot_sink(void *ctx, const struct acq_item *it, const struct rec_names *nm)
{
	struct plot_run *pr = ctx;

	if (it->kind == ACQ_ITEM_EVENT) {
		if (!pr->events || !event_worth_a_line(it->event.code))
			return 0;
		pr->events_seen++;
		return plot_add_event(pr->p, it->t_ns, rec_event_name(it->event.code));
	}
	if (it->kind != ACQ_ITEM_SAMPLE || !nm->channel)
		return 0;
	for (size_t i = 0; i < pr->n; i++)
		if (!strcmp(nm->channel, pr->resolved[i]))
			return plot_sample(pr, i, it->t_ns, it->sample.value, it->sample.quality);
	return 0;
}

/* ---- --db: the samples through the rollup (plot.h, plan.c) ---- */

static int64_t sec_floor(int64_t t)
{
	if (t == INT64_MIN)
		return t;
	return (t / PLOT_SECOND_NS - (t % PLOT_SECOND_NS < 0)) * PLOT_SECOND_NS;
}

/* The earliest or latest valid sample of a second inside the window. */
struct edge {
	const struct plot_run *pr;
	bool last, found;
	int64_t t;
};

static int edge_row(void *ctx, const struct grd_sample *s)
{
	struct edge *e = ctx;

	if (s->t_ns < e->pr->from_ns || s->t_ns >= e->pr->to_ns || s->quality == ACQ_Q_INVALID || !isfinite(s->value))
		return 0;
	if (!e->found || (e->last ? s->t_ns > e->t : s->t_ns < e->t))
		e->t = s->t_ns;
	e->found = true;
	return 0;
}

/* The first (last) valid sample of channel id in the window, to the
   nanosecond: the rollup's first (last) second with one, read raw (the
   window may cut it: then the next one).  1, 0 (none), -errno. */
static int edge_of(struct plot_run *pr, grd_db_t *db, uint32_t id, bool last, int64_t *ret_t)
{
	int64_t lo = sec_floor(pr->from_ns), hi = pr->to_ns, sec;
	int r;

	while ((r = grd_db_rollup_valid_second(db, pr->vehicle, id, lo, hi, last, &sec)) == 1) {
		struct edge e = { .pr = pr, .last = last };
		bool whole = true;

		if ((r = grd_db_samples_of(db, pr->vehicle, id, &sec, &whole, 1, edge_row, &e)) < 0)
			return r;
		if (e.found) {
			*ret_t = e.t;
			return 1;
		}
		if (last)
			hi = sec;
		else
			lo = sec + PLOT_SECOND_NS;
	}
	return r;
}

/* Each series' one channel id (the dictionary can give one name several
   ids over time: the raw path then, the rollup is per id). */
static bool series_ids(struct plot_run *pr, const struct rpt_export *x)
{
	const struct rec_channel **list;
	int n = rec_channels_sorted(x->chans, &list);
	bool ok = n >= 0;

	for (size_t i = 0; ok && i < pr->n; i++) {
		int k = 0;
		for (int j = 0; j < n; j++)
			if (!strcmp(list[j]->name, pr->resolved[i]) && k++ == 0)
				pr->ids[i] = list[j]->id;
		ok = k == 1;
	}
	if (n >= 0)
		free(list);
	return ok;
}

struct feed {
	struct plot_run *pr;
	size_t i;
};

static int feed_row(void *ctx, const struct grd_sample *s)
{
	struct feed *f = ctx;

	if (s->t_ns < f->pr->from_ns || s->t_ns >= f->pr->to_ns)
		return 0;
	return plot_sample(f->pr, f->i, s->t_ns, s->value, (uint32_t)s->quality);
}

/* The seconds whose choice is final, read raw into the picture. */
static int feed_due(struct plot_run *pr, grd_db_t *db, size_t i, plot_plan_t *pl)
{
	const struct plot_read *due;
	size_t n = plot_plan_due(pl, &due);
	struct feed f = { pr, i };
	int64_t secs[GRD_SAMPLE_SECONDS_MAX];
	bool whole[GRD_SAMPLE_SECONDS_MAX];
	int r = 0;

	for (size_t k = 0; k < n && r >= 0; k += GRD_SAMPLE_SECONDS_MAX) {
		size_t m = n - k < GRD_SAMPLE_SECONDS_MAX ? n - k : GRD_SAMPLE_SECONDS_MAX;
		for (size_t j = 0; j < m; j++) {
			secs[j] = due[k + j].t_ns;
			whole[j] = due[k + j].whole;
		}
		r = grd_db_samples_of(db, pr->vehicle, pr->ids[i], secs, whole, m, feed_row, &f);
	}
	return r < 0 ? r : 0;
}

/* Series i on the grid: the rollup's seconds of its window through the
   plan, the chosen ones read raw in time order, the others counted. */
static int series_through_rollup(struct plot_run *pr, grd_db_t *db, size_t i, int64_t origin, int64_t width)
{
	struct grd_summary_row *page = malloc(PLOT_ROLLUP_PAGE * sizeof(*page));
	plot_plan_t *pl = NULL;
	int64_t at = sec_floor(pr->from_ns);
	struct plot_plan_counts c;
	int r = page ? plot_plan_new(&pl, origin, width, pr->from_ns, pr->to_ns) : -ENOMEM;

	while (r >= 0 && (r = grd_db_summary_rollups(db, pr->vehicle, pr->ids[i], at, pr->to_ns, page,
	                                              PLOT_ROLLUP_PAGE)) > 0) {
		int n = r;
		for (int k = 0; k < n && r >= 0; k++) {
			struct plot_second sec = { page[k].t_ns, page[k].n_all, page[k].n_inv, page[k].a_min,
			                           page[k].a_max };
			r = plot_plan_take(pl, &sec);
		}
		at = page[n - 1].t_ns + PLOT_SECOND_NS;
		if (r >= 0)
			r = feed_due(pr, db, i, pl);
	}
	if (r >= 0)
		r = plot_plan_end(pl);
	if (r >= 0)
		r = feed_due(pr, db, i, pl);
	if (r >= 0) {
		plot_plan_counts(pl, &c);
		r = plot_add_unseen(pr->p, pr->series[i], c.unseen);
		pr->seconds += c.seconds;
		pr->seconds_read += c.whole;
		pr->seconds_bad += c.bad;
	}
	plot_plan_free(pl);
	free(page);
	return r;
}

/* The samples through the rollup when the picture allows (its buckets
   at least PLOT_DB_ROLLUP_WIDTH_NS wide, a channel id per series): 1,
   0 (the raw rows then), or -errno (db's error says why). */
static int samples_through_rollup(struct plot_run *pr, grd_db_t *db)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN, t, origin, width;
	int r;

	for (size_t i = 0; i < pr->n; i++) {
		if ((r = edge_of(pr, db, pr->ids[i], false, &t)) < 0)
			return r;
		lo = r && t < lo ? t : lo;
		if ((r = edge_of(pr, db, pr->ids[i], true, &t)) < 0)
			return r;
		hi = r && t > hi ? t : hi;
	}
	if (lo > hi || plot_grid_for(lo, hi, &origin, &width) < 0 || width < PLOT_DB_ROLLUP_WIDTH_NS)
		return 0;
	for (size_t i = 0; i < pr->n; i++)
		if ((r = series_through_rollup(pr, db, i, origin, width)) < 0)
			return r;
	return 1;
}

/* --db without --raw, once the series are made: the samples drawn from
   the rollup (the export then reads the events only), or left to the
   export's raw rows.  0 or the exit code. */
static int plot_db_rollup(struct plot_run *pr, struct rpt_export *x)
{
	struct grd_db_cfg cfg = { .url = pr->url };
	grd_db_t *db;
	int r;

	if (!series_ids(pr, x))
		return 0;
	if ((r = grd_db_new(&cfg, &db)) < 0)
		return cli_fail("plot", "--db: %s", strerror(-r));
	/* one snapshot: a Batch committed meanwhile cannot make the rollup
	   and the rows read after it disagree */
	r = grd_db_snapshot(db);
	if (r == 0)
		r = samples_through_rollup(pr, db);
	if (r < 0)
		fprintf(stderr, "railmon plot: --db: %s\n", *grd_db_error(db) ? grd_db_error(db) : strerror(-r));
	else if (r > 0)
		x->kinds &= ~(1u << ACQ_ITEM_SAMPLE);
	pr->rolled = r > 0;
	grd_db_free(db);
	return r < 0 ? 1 : 0;
}

/* Once the dictionaries are read: a series per --channel, in the order
   given, with the unit the dictionary says. */
static int plot_setup(void *ctx, struct rpt_export *x)
{
	struct plot_run *pr = ctx;
	const struct rec_channel **list;
	int n = rec_channels_sorted(x->chans, &list);

	if (n < 0)
		return cli_fail("plot", "out of memory");
	for (size_t i = 0; i < x->nchannel_filters; i++) {
		const char *unit = "";
		bool dup = false;

		for (size_t j = 0; j < pr->n; j++)
			dup = dup || !strcmp(pr->resolved[j], x->resolved[i]);
		if (dup)
			continue;
		for (int k = 0; k < n; k++)
			if (!strcmp(list[k]->name, x->resolved[i]) && list[k]->unit)
				unit = list[k]->unit;
		int s = plot_add_series(pr->p, x->resolved[i], unit);
		if (s < 0) {
			free(list);
			return cli_fail("plot", "%s", strerror(-s));
		}
		pr->resolved[pr->n] = x->resolved[i];
		pr->series[pr->n++] = s;
	}
	free(list);
	return pr->url && !pr->raw ? plot_db_rollup(pr, x) : 0;
}

static int parse_size(const char *arg, struct plot_opts *o)
{
	char *end;
	long w = strtol(arg, &end, 10), h;

	if (end == arg || (*end != 'x' && *end != 'X'))
		return -EINVAL;
	arg = end + 1;
	h = strtol(arg, &end, 10);
	if (end == arg || *end || w < 200 || w > 20000 || h < 120 || h > 20000)
		return -EINVAL;
	o->width = (int)w;
	o->height = (int)h;
	return 0;
}

/* What was drawn, on stderr: the picture, the samples per channel, what
   was left out. */
static void plot_say(const struct plot_run *pr, const char *output)
{
	struct plot_stats st;

	plot_stats(pr->p, &st);
	fprintf(stderr, "railmon plot: %s: ", output);
	for (size_t i = 0; i < pr->n; i++)
		fprintf(stderr, "%s%s %" PRIu64 " samples", i ? ", " : "", pr->resolved[i],
		        plot_series_points(pr->p, pr->series[i]));
	size_t ev = plot_events_in_view(pr->p);
	fprintf(stderr, "; %zu event%s marked", ev, ev == 1 ? "" : "s");
	if (st.events > ev)
		fprintf(stderr, " (%" PRIu64 " more outside the samples' time)", st.events - ev);
	fputc('\n', stderr);
	if (pr->invalid)
		fprintf(stderr, "railmon plot: %" PRIu64 " samples of quality invalid left out\n", pr->invalid);
	if (st.not_a_number)
		fprintf(stderr, "railmon plot: %" PRIu64 " samples that are not a number left out\n", st.not_a_number);
	if (st.out_of_reach)
		fprintf(stderr, "railmon plot: %" PRIu64 " samples more than 146 years from the rest left out\n",
		        st.out_of_reach);
	if (pr->rolled) /* what the rollup saved: the rows of the other seconds */
		fprintf(stderr, "railmon plot: --db: %" PRIu64 " second%s from the rollup, the rows of %" PRIu64
		        " read (and the invalid or NaN ones of %" PRIu64 " more)\n", pr->seconds,
		        pr->seconds == 1 ? "" : "s", pr->seconds_read, pr->seconds_bad);
	if (st.events_dropped)
		fprintf(stderr, "railmon plot: %" PRIu64 " events over the %d drawn left out\n", st.events_dropped,
		        PLOT_EVENTS_MAX);
}

int cli_cmd_plot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "channel", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' }, { "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 }, { "db", required_argument, NULL, 3 },
		{ "vehicle", required_argument, NULL, 4 }, { "local", no_argument, NULL, 5 },
		{ "size", required_argument, NULL, 6 }, { "title", required_argument, NULL, 7 },
		{ "no-events", no_argument, NULL, 8 }, { "raw", no_argument, NULL, 9 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct rpt_export x = { .out = stdout, .err = stderr, .from_ns = INT64_MIN, .to_ns = INT64_MAX,
	                        .window_ns = -1, .cmd = "plot" };
	struct plot_opts po = { .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	struct plot_run pr = { .events = true };
	const char *dir = "railmon-data", *output = NULL, *db = NULL, *vehicle = NULL, *title = NULL;
	enum plot_format fmt;
	int c, r;

	while ((c = getopt_long(argc, argv, "d:c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'o': output = optarg; break;
		case 3: db = optarg; break;
		case 4: vehicle = optarg; break;
		case 5: po.local_time = true; break;
		case 7: title = optarg; break;
		case 8: pr.events = false; break;
		case 9: pr.raw = true; break;
		case 'c':
			if (x.nchannel_filters >= PLOT_SERIES_MAX)
				return cli_fail("plot", "--channel: at most %d in one picture", PLOT_SERIES_MAX);
			x.channels[x.nchannel_filters++] = optarg;
			break;
		case 1:
		case 2:
			if (basic_parse_time(optarg, c == 1 ? &x.from_ns : &x.to_ns) < 0)
				return cli_fail("plot", "--%s: cannot read time '%s' (2026-12-03T07:00:00Z, "
				                "2026-12-03T08:00:00+01:00, local 2026-12-03 08:00:00, or Unix seconds)",
				                c == 1 ? "from" : "to", optarg);
			break;
		case 6:
			if (parse_size(optarg, &po) < 0)
				return cli_fail("plot", "--size: expected WIDTHxHEIGHT in pixels, 200x120 to "
				                "20000x20000, not '%s'", optarg);
			break;
		case 'h':
			fputs(plot_usage, stdout);
			return 0;
		default:
			return cli_see_help("plot");
		}
	}
	if (optind < argc)
		return cli_fail("plot", "unexpected argument '%s'", argv[optind]);
	if (!x.nchannel_filters)
		return cli_fail("plot", "which channels? give -c NAME (railmon channels -d DIR lists them)");
	if (!output)
		return cli_fail("plot", "where to? give -o FILE.png, FILE.svg or FILE.html");
	if (plot_format_of(output, &fmt) < 0)
		return cli_fail("plot", "-o %s: the name must end in .png, .svg or .html (it says the format)", output);
	if (!db != !vehicle)
		return cli_fail("plot", db ? "--db needs --vehicle V" : "--vehicle is for --db");
	if (pr.raw && !db)
		return cli_fail("plot", "--raw is for --db");
	if (x.from_ns >= x.to_ns)
		return cli_fail("plot", "--from is not before --to: no time is between them");
	pr.url = db;
	pr.vehicle = vehicle;
	pr.from_ns = x.from_ns;
	pr.to_ns = x.to_ns;
	po.from_ns = x.from_ns;
	po.to_ns = x.to_ns;
	po.title = title ? title : db ? vehicle : dir;
	if ((r = plot_create(&pr.p, &po)) < 0)
		return cli_fail("plot", "%s", strerror(-r));
	x.kinds = 1u << ACQ_ITEM_SAMPLE | (pr.events ? 1u << ACQ_ITEM_EVENT : 0);
	x.sink = plot_sink;
	x.sink_setup = plot_setup;
	x.sink_ctx = &pr;
	if (rec_channels_new(&x.chans) < 0) {
		plot_free(pr.p);
		return cli_fail("plot", "out of memory");
	}
	r = db ? rpt_export_db(&x, db, vehicle) : rpt_export_dir(&x, dir);
	if (r == 0) {
		int w = plot_write(pr.p, output, fmt);

		if (w == -ENODATA) {
			fprintf(stderr, "railmon plot: %s: no sample of ", db ? vehicle : dir);
			for (size_t i = 0; i < pr.n; i++)
				fprintf(stderr, "%s%s", i ? (i + 1 == pr.n ? " or " : ", ") : "", pr.resolved[i]);
			fprintf(stderr, " %s: nothing to draw, %s not written\n",
			        x.from_ns != INT64_MIN || x.to_ns != INT64_MAX ? "between --from and --to" : "in the log",
			        output);
			r = 1;
		} else if (w == -ENOTSUP) {
			fprintf(stderr, "railmon plot: %s: this railmon was built without %s\n", output,
			        fmt == PLOT_HTML ? "uPlot (npm at build time)" : "cairo (libcairo2-dev)");
			r = 1;
		} else if (w < 0) {
			fprintf(stderr, "railmon plot: %s: %s\n", output, strerror(-w));
			r = 1;
		} else {
			plot_say(&pr, output);
		}
	}
	rpt_export_release(&x);
	plot_free(pr.p);
	return r > 0 ? r : r < 0 || x.damaged ? 1 : 0;
}
