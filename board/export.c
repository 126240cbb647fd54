/* SPDX-License-Identifier: MIT */
/*
 * export.c - `railmon export`: the log as CSV, JSON lines, candump or
 * InfluxDB line protocol, or its CAN frames as a Vector ASC or BLF trace
 * (record/trace-write.h).
 *
 * Reads the log with stor_reader, decodes each Batch, learns channel names
 * from the dictionaries Batches carry, filters by time, kind and channel,
 * and writes one line per record.  Whatever cannot be read (a damaged
 * frame, a segment that is not a readable segment file, a missing seq
 * range, a Batch that does not decode) is said on stderr with its file and
 * the records lost, and skipped; everything else is exported, and the exit
 * status is 1 if anything was skipped.
 * A ground vehicle directory holding several logs (one per log id) is
 * exported log after log.  The ground database is a source too
 * (export --db, export-db.c); the writer both use is export-write.c.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli-args.h"
#include "logfault.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "record/names.h"
#include "record/order.h"
#include "record/trace-write.h"
#include "record/wide.h"
#include "storage/stor.h"

#include "export-db.h"
#include "export-write.h"

static const char export_usage[] =
	"Usage: railmon export [OPTIONS]\n"
	"Print what the flash log recorded.\n\n"
	"  -d, --data DIR        log directory (default: railmon-data)\n"
	"  -f, --format FMT      csv (default), jsonl, candump or influx (line protocol);\n"
	"                        CSV and JSON lines have one schema (README \"Output schema\");\n"
	"                        or a Vector trace of the CAN frames: asc or blf\n"
	"                        (channel = bus + 1; blf is binary: give -o FILE)\n"
	"  -o, --output FILE     write to FILE instead of stdout\n"
	"      --from TIME       only records at or after TIME\n"
	"      --to TIME         only records before TIME\n"
	"                        TIME: 2026-12-03T07:00:00Z, 2026-12-03T08:00:00+01:00,\n"
	"                        2026-12-03 08:00:00 (local time, TZ) or Unix seconds\n"
	"  -k, --kind KIND       can, sample or event (repeatable; default all)\n"
	"  -c, --channel NAME    only samples of channel NAME (repeatable): Message.Signal,\n"
	"                        or the bare signal name where only one message has it;\n"
	"                        an unknown name is an error that lists the nearest ones\n"
	"      --order ORDER     time (default: merged over --window, bounded memory)\n"
	"                        or seq (as logged)\n"
	"      --window DUR      how far out of time order records may be (default 5s)\n"
	"      --wide            CSV with one column per channel (\"name [unit]\"), one\n"
	"                        row per timestamp (the --channel ones, default all)\n"
	"      --raster DUR      with --wide: one row per DUR (100ms, 1s), each channel's\n"
	"                        last value held for at most --max-age\n"
	"      --max-age DUR     --raster: a value older than this is empty (default 5s)\n"
	"      --corrected-time  times on a clock that never steps: each record's monotonic\n"
	"                        time plus its run's last trusted offset (docs/time.md)\n"
	"      --db URL          read the ground's PostgreSQL database instead of a log\n"
	"      --vehicle V       with --db: the vehicle (required)\n"
	"  -h, --help            this text\n";


/* The vehicle and log id of the Batch: records of another origin wait
   for the ones before to go out first. */
static int set_origin(struct export_ctx *x, const struct rec_batch_info *info)
{
	const char *v = info->vehicle ? info->vehicle : "";
	int r;

	if (x->vehicle && !strcmp(x->vehicle, v) && x->log_id_len == info->log_id_len &&
	    !memcmp(x->log_id, info->log_id ? info->log_id : x->log_id, info->log_id_len))
		return 0;
	r = export_drain(x);
	if (r < 0)
		return r;
	free(x->vehicle);
	x->vehicle = strdup(v);
	if (!x->vehicle)
		return -ENOMEM;
	x->log_id_len = info->log_id_len <= REC_LOG_ID_LEN ? info->log_id_len : 0;
	if (x->log_id_len)
		memcpy(x->log_id, info->log_id, x->log_id_len);
	return 0;
}

static int export_batch(struct export_ctx *x, const struct stor_rec *rec)
{
	rec_batch_t *b;
	struct rec_batch_info info;
	struct acq_item it;
	int r;

	r = rec_batch_decode(rec->payload, rec->len, &b);
	if (r < 0) {
		board_log_undecodable_print("export", x->dir, rec, r);
		x->damaged++;
		return 0;
	}
	rec_batch_info(b, &info);
	rec_channels_learn(x->chans, b);
	r = set_origin(x, &info);
	for (size_t i = 0; i < info.count && r >= 0; i++) {
		rec_batch_item(b, i, &it);
		if (x->timefix && rec_timefix_apply(x->timefix, &info, &it) == 0)
			x->uncorrected++;
		r = export_write_item(x, &it);
	}
	rec_batch_free(b);
	return r;
}

/* Channel names come from the first dictionary in the log: read ahead to
   it, so samples before it (a log trimmed by retention) still get names.
   A large board's dictionary is spread over consecutive Batches: read
   them all. */
static void prescan_dictionary(struct export_ctx *x, const char *dir)
{
	stor_reader_t *r;
	struct stor_rec rec;
	int k, n = 0;
	bool seen = false;

	if (stor_reader_open(dir, &r) < 0)
		return;
	while (n++ < 10000 && (k = stor_reader_next(r, &rec)) != 0) {
		rec_batch_t *b;
		struct rec_batch_info info;
		if (k < 0 || rec_batch_decode(rec.payload, rec.len, &b) < 0)
			continue;
		rec_batch_info(b, &info);
		rec_channels_learn(x->chans, b);
		rec_batch_free(b);
		if (seen && !info.nchannels)
			break;
		seen = info.nchannels > 0;
	}
	stor_reader_free(r);
}

/* --corrected-time: every Batch's offset and sync state first, so each
   run's reference is its last trusted offset (record/timefix.h). */
static int learn_clock(struct export_ctx *x, const char *dir)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	rec_batch_t *b;
	uint64_t runs, steps;
	int k;

	x->timefix = rec_timefix_free(x->timefix);
	if (rec_timefix_new(&x->timefix) < 0 || stor_reader_open(dir, &rd) < 0)
		return -ENOMEM;
	while ((k = stor_reader_next(rd, &rec)) != 0)
		if (k > 0 && rec_batch_decode(rec.payload, rec.len, &b) == 0) {
			k = rec_timefix_learn(x->timefix, b);
			rec_batch_free(b);
			if (k < 0)
				break;
		}
	stor_reader_free(rd);
	if (k < 0 && k != -EBADMSG)
		return k;
	rec_timefix_counts(x->timefix, &runs, &steps);
	fprintf(stderr, "railmon export: %s: corrected time: %" PRIu64 " run%s, %" PRIu64 " clock step%s between "
	        "Batches\n", dir, runs, runs == 1 ? "" : "s", steps, steps == 1 ? "" : "s");
	return 0;
}

static int export_log(struct export_ctx *x, const char *dir)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	int r;

	x->dir = dir; /* for the messages about what cannot be read */
	r = stor_reader_open(dir, &rd);
	if (r < 0) {
		fprintf(stderr, "railmon export: %s: %s\n", dir, strerror(-r));
		return r;
	}
	prescan_dictionary(x, dir);
	if (x->corrected && (r = learn_clock(x, dir)) < 0) {
		fprintf(stderr, "railmon export: %s: %s\n", dir, strerror(-r));
		stor_reader_free(rd);
		return r;
	}
	/* corrected times are not the stored ones the seek and skip go by */
	if (x->from_ns > INT64_MIN && !x->corrected)
		stor_reader_seek_time(rd, x->from_ns);
	while ((r = stor_reader_next(rd, &rec)) != 0) {
		if (r == -EBADMSG) {
			/* Said with what it cost; the rest is still exported. */
			x->damaged += board_log_fault_print("export", dir, rd);
			continue;
		}
		if (r < 0) {
			fprintf(stderr, "railmon export: %s: %s\n", dir, strerror(-r));
			break;
		}
		/* not break: a log's time need not rise (a replay's START event
		   has the time of the replay, its records the trace's; a clock step) */
		if (rec.t_first_ns >= x->to_ns && !x->corrected)
			continue;
		r = export_batch(x, &rec);
		if (r < 0) {
			fprintf(stderr, "railmon export: write: %s\n", strerror(-r));
			break;
		}
	}
	stor_reader_free(rd);
	if (r >= 0 && (r = export_drain(x)) < 0)
		fprintf(stderr, "railmon export: write: %s\n", strerror(-r));
	return r;
}

/* Time of the first readable record of a log, INT64_MAX if it has none. */
static int64_t first_record_ns(const char *dir)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	int64_t t = INT64_MAX;
	int k;

	if (stor_reader_open(dir, &rd) < 0)
		return t;
	while ((k = stor_reader_next(rd, &rec)) == -EBADMSG)
		;
	if (k == 1)
		t = rec.t_first_ns;
	stor_reader_free(rd);
	return t;
}

struct found_log {
	char *dir;
	int64_t t_first;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found_log *x = a, *y = b;

	return x->t_first < y->t_first ? -1 : x->t_first > y->t_first;
}

/*
 * A ground vehicle directory (`railmon recv --log DIR`, DIR/<vehicle>):
 * one log per log id in subdirectories, and the segments a receiver
 * before log ids wrote in it directly.  Every log with records, in the
 * order of their first records; none: dir itself.
 */
static size_t find_logs(const char *dir, struct found_log **ret)
{
	struct found_log *v = NULL, *n;
	size_t count = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char *path;

		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) ||
		    asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			continue;
		n = realloc(v, (count + 2) * sizeof(*v));
		if (!n) {
			free(path);
			break;
		}
		v = n;
		v[count] = (struct found_log){ path, first_record_ns(path) };
		if (v[count].t_first == INT64_MAX)
			free(path);
		else
			count++;
	}
	if (d)
		closedir(d);
	if (count && (n = realloc(v, (count + 1) * sizeof(*v)))) {
		v = n;
		v[count].t_first = first_record_ns(dir);
		v[count].dir = v[count].t_first == INT64_MAX ? NULL : strdup(dir);
		count += v[count].dir != NULL;
		qsort(v, count, sizeof(*v), found_cmp);
	}
	*ret = v;
	return count;
}


/* One log, or each log of a ground vehicle directory in turn; the
   dictionaries of all read ahead first.  The exit code, or -errno. */
static int export_dir(struct export_ctx *x, const char *dir)
{
	struct found_log *logs;
	size_t n = find_logs(dir, &logs);
	int r = 0;

	for (size_t i = 0; i < n; i++)
		prescan_dictionary(x, logs[i].dir);
	if (!n)
		prescan_dictionary(x, dir);
	r = export_setup_output(x, dir);
	if (r || !n) {
		free(logs);
		return r ? r : export_log(x, dir);
	}
	for (size_t i = 0; i < n; i++) {
		int k;

		fprintf(stderr, "railmon export: log %zu of %zu: %s\n", i + 1, n, logs[i].dir);
		k = export_log(x, logs[i].dir);
		r = r < 0 ? r : k;
		free(logs[i].dir);
	}
	free(logs);
	return r;
}

static int parse_option(struct export_ctx *x, int c, const char *arg)
{
	enum acq_item_kind kind;
	int64_t *t = c == 1 ? &x->from_ns : &x->to_ns;

	switch (c) {
	case 'f':
		x->trace = rec_trace_format_parse(arg, &x->tfmt) == 0;
		if (!x->trace && rec_format_parse(arg, &x->format) < 0)
			return cli_fail("export", "--format: expected csv, jsonl, candump, influx, asc or blf, not '%s'",
			                arg);
		return 0;
	case 1:
	case 2:
		if (cli_parse_time(arg, t) < 0)
			return cli_fail("export", "--%s: cannot read time '%s' (2026-12-03T07:00:00Z, "
			                "2026-12-03T08:00:00+01:00, local 2026-12-03 08:00:00, or Unix seconds)",
			                c == 1 ? "from" : "to", arg);
		return 0;
	case 'k':
		if (rec_kind_parse(arg, &kind) < 0)
			return cli_fail("export", "--kind: expected can, sample or event, not '%s'", arg);
		x->kinds |= 1u << kind;
		return 0;
	case 'c':
		if (x->nchannel_filters >= EXPORT_FILTER_MAX)
			return cli_fail("export", "--channel: at most %d", EXPORT_FILTER_MAX);
		x->channels[x->nchannel_filters++] = arg;
		return 0;
	case 3:
		if (strcmp(arg, "time") && strcmp(arg, "seq"))
			return cli_fail("export", "--order: expected time or seq, not '%s'", arg);
		x->window_ns = strcmp(arg, "seq") ? x->window_ns : -1;
		return 0;
	case 4: x->wide = true; return 0;
	case 5:
	case 6:
	case 7:
		if (cli_parse_duration(arg, c == 5 ? &x->raster_ns : c == 6 ? &x->max_age_ns : &x->window_ns) < 0)
			return cli_fail("export", "--%s: expected a duration like 100ms, 2s or 1min, not '%s'",
			                c == 5 ? "raster" : c == 6 ? "max-age" : "window", arg);
		return 0;
	}
	return 2;
}

/* The combinations that cannot work, said; 0 or the exit code. */
static int check_options(struct export_ctx *x)
{
	if (x->raster_ns && !x->wide)
		return cli_fail("export", "--raster needs --wide");
	if (x->wide && x->trace)
		return cli_fail("export", "--wide writes CSV: no --format asc or blf");
	if (x->wide && x->format != REC_FORMAT_CSV)
		return cli_fail("export", "--wide writes CSV: no --format %s", x->format == REC_FORMAT_JSONL ? "jsonl" :
		                x->format == REC_FORMAT_INFLUX ? "influx" : "candump");
	if (x->wide && x->window_ns < 0)
		return cli_fail("export", "--wide needs time order: no --order seq");
	if (!x->kinds)
		x->kinds = x->format == REC_FORMAT_CANDUMP || x->trace ? 1u << ACQ_ITEM_CAN
		         : x->nchannel_filters || x->wide ? 1u << ACQ_ITEM_SAMPLE : (1u << ACQ_ITEM_KIND_MAX) - 1;
	if (x->window_ns >= 0 && rec_order_new(REC_ORDER_MAX_ITEMS, x->window_ns, &x->order) < 0)
		return cli_fail("export", "out of memory");
	return 0;
}

static void export_summary(const struct export_ctx *x)
{
	uint64_t late = rec_order_late(x->order);

	if (late)
		fprintf(stderr, "railmon export: %" PRIu64 " records were more than the window (--window %.3gs) "
		        "out of time order and came out late\n", late, (double)x->window_ns / 1e9);
	if (x->uncorrected)
		fprintf(stderr, "railmon export: %" PRIu64 " records without a monotonic base (a replay, railmon before "
		        "it) left as recorded\n", x->uncorrected);
	if (x->table)
		fprintf(stderr, "railmon export: %" PRIu64 " rows of %s\n", rec_wide_rows(x->table),
		        x->raster_ns ? "raster points" : "timestamps");
	if (x->damaged)
		fprintf(stderr, "railmon export: %" PRIu64 " records written; %" PRIu64 " unreadable part%s of the log "
		        "skipped (see above)\n", x->written, x->damaged, x->damaged == 1 ? "" : "s");
	else
		fprintf(stderr, "railmon export: %" PRIu64 " records written\n", x->written);
}

int board_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 }, { "kind", required_argument, NULL, 'k' },
		{ "channel", required_argument, NULL, 'c' }, { "order", required_argument, NULL, 3 },
		{ "wide", no_argument, NULL, 4 }, { "raster", required_argument, NULL, 5 },
		{ "max-age", required_argument, NULL, 6 }, { "window", required_argument, NULL, 7 },
		{ "db", required_argument, NULL, 8 }, { "vehicle", required_argument, NULL, 9 },
		{ "corrected-time", no_argument, NULL, 10 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct export_ctx x = { .out = stdout, .from_ns = INT64_MIN, .to_ns = INT64_MAX,
	                        .window_ns = REC_ORDER_WINDOW_NS, .max_age_ns = 5000000000LL };
	const char *dir = "railmon-data", *output = NULL, *db = NULL, *vehicle = NULL;
	int c, r = 0;

	while (r == 0 && (c = getopt_long(argc, argv, "d:f:o:k:c:h", opts, NULL)) != -1) {
		if (c == 'd') {
			dir = optarg;
		} else if (c == 8 || c == 9) {
			*(c == 8 ? &db : &vehicle) = optarg;
		} else if (c == 'o') {
			output = optarg;
		} else if (c == 10) {
			x.corrected = true;
		} else if (c == 'h') {
			fputs(export_usage, stdout);
			return 0;
		} else if (c == '?' || (r = parse_option(&x, c, optarg)) == 2) {
			fputs(export_usage, stderr);
			return 2;
		}
	}
	if (r)
		return r;
	if (optind < argc)
		return cli_fail("export", "unexpected argument '%s'", argv[optind]);
	if (!db != !vehicle)
		return cli_fail("export", db ? "--db needs --vehicle V" : "--vehicle is for --db");
	if (db && x.corrected)
		return cli_fail("export", "--corrected-time reads a log's monotonic bases: not with --db");
	if ((r = check_options(&x)) != 0 || rec_channels_new(&x.chans) < 0) {
		rec_order_free(x.order);
		return r ? r : cli_fail("export", "out of memory");
	}
	if (output && !(x.out = fopen(output, "we")))
		r = cli_fail("export", "%s: %s", output, strerror(errno));
	else if (x.trace && x.tfmt == REC_TRACE_BLF && !output && isatty(STDOUT_FILENO))
		r = cli_fail("export", "--format blf is binary: give -o FILE or redirect the output");
	else if (x.trace && rec_tracew_new(x.out, x.tfmt, &x.tracew) < 0)
		r = cli_fail("export", "out of memory");
	else
		r = db ? export_db(&x, db, vehicle) : export_dir(&x, dir);
	if (x.tracew) {
		int k = rec_tracew_close(x.tracew);

		if (k < 0)
			fprintf(stderr, "railmon export: write: %s\n", strerror(-k));
		r = r != 0 ? r : k;
		if (x.not_frames)
			fprintf(stderr, "railmon export: %" PRIu64 " records that are no CAN frame left out of the trace\n",
			        x.not_frames);
	}
	if (x.table && rec_wide_finish(x.table) < 0 && r >= 0)
		r = -EIO;
	if (x.out && fflush(x.out) != 0 && r >= 0)
		r = -errno;
	if (output && x.out)
		fclose(x.out);
	if (r <= 0)
		export_summary(&x);
	rec_wide_free(x.table);
	rec_timefix_free(x.timefix);
	rec_order_free(x.order);
	rec_channels_free(x.chans);
	for (size_t i = 0; i < x.nchannel_filters; i++)
		free(x.resolved[i]);
	free(x.vehicle);
	return r > 0 ? r : r < 0 || x.damaged ? 1 : 0;
}
