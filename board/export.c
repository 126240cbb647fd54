/* SPDX-License-Identifier: MIT */
/*
 * export.c - `railmon export`: the log as CSV, JSON lines or candump.
 *
 * Reads the log with stor_reader, decodes each Batch, learns channel names
 * from the dictionaries Batches carry, filters by time, kind and channel,
 * and writes one line per record.  Whatever cannot be read (a damaged
 * frame, a segment that is not a readable segment file, a missing seq
 * range, a Batch that does not decode) is said on stderr with its file and
 * the records lost, and skipped; everything else is exported, and the exit
 * status is 1 if anything was skipped.
 * A ground vehicle directory holding several logs (one per log id) is
 * exported log after log.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "logfault.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "record/names.h"
#include "storage/stor.h"
#include "ground/db.h"

#define EXPORT_FILTER_MAX 64

struct export_ctx {
	FILE *out;
	enum rec_format format;
	int64_t from_ns, to_ns;
	unsigned kinds;          /* bit per acq_item_kind */
	const char *channels[EXPORT_FILTER_MAX];
	size_t nchannel_filters;
	rec_channels_t *chans;   /* what the dictionaries read so far name */
	const char *dir;
	uint64_t written, damaged; /* records written; faults that cost records */
};

static const char export_usage[] =
	"Usage: railmon export [OPTIONS]\n"
	"Print what the flash log recorded.\n\n"
	"  -d, --data DIR        log directory (default: railmon-data)\n"
	"  -f, --format FMT      csv (default), jsonl or candump\n"
	"  -o, --output FILE     write to FILE instead of stdout\n"
	"      --from TIME       only records at or after TIME\n"
	"      --to TIME         only records before TIME\n"
	"                        TIME: 2026-12-03T07:00:00Z, 2026-12-03 07:00:00 (UTC)\n"
	"                        or Unix seconds like 1764748800.5\n"
	"  -k, --kind KIND       can, sample or event (repeatable; default all)\n"
	"  -c, --channel NAME    only samples of channel NAME (repeatable)\n"
	"      --db URL          read the ground's PostgreSQL database instead of a log\n"
	"      --vehicle V       with --db: the vehicle (required)\n"
	"  -h, --help            this text\n";

/* "2026-12-03T07:00:00Z", "2026-12-03 07:00:00[.frac]", or epoch seconds. */
static int parse_time(const char *s, int64_t *ret)
{
	struct tm tm = { 0 };
	const char *end;
	char *e;
	double frac = 0;

	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (!end)
		end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm);
	if (end) {
		if (*end == '.') {
			frac = strtod(end, &e);
			end = e;
		}
		if (*end == 'Z')
			end++;
		if (*end)
			return -EINVAL;
		*ret = (int64_t)timegm(&tm) * 1000000000 + (int64_t)(frac * 1e9);
		return 0;
	}
	frac = strtod(s, &e);
	if (e == s || *e)
		return -EINVAL;
	*ret = (int64_t)(frac * 1e9);
	return 0;
}

/* name: the sample's channel name, NULL if unknown */
static bool wanted(const struct export_ctx *x, const struct acq_item *it, const char *name)
{
	if (!(x->kinds & (1u << it->kind)))
		return false;
	if (it->t_ns < x->from_ns || it->t_ns >= x->to_ns)
		return false;
	if (x->nchannel_filters && it->kind == ACQ_ITEM_SAMPLE) {
		for (size_t i = 0; i < x->nchannel_filters; i++)
			if (name && !strcmp(name, x->channels[i]))
				return true;
		return false;
	}
	return true;
}

static int write_item(struct export_ctx *x, const struct acq_item *it)
{
	struct rec_names nm = rec_channels_names(x->chans, it);

	if (!wanted(x, it, nm.channel))
		return 0;
	x->written++;
	return rec_format_item(x->out, x->format, it, &nm, NULL);
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
	for (size_t i = 0; i < info.count && r >= 0; i++) {
		rec_batch_item(b, i, &it);
		r = write_item(x, &it);
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
	if (x->from_ns > INT64_MIN)
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
		if (rec.t_first_ns >= x->to_ns)
			break;
		r = export_batch(x, &rec);
		if (r < 0) {
			fprintf(stderr, "railmon export: write: %s\n", strerror(-r));
			break;
		}
	}
	stor_reader_free(rd);
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

/* One log, or each log of a ground vehicle directory in turn. */
static int export_dir(struct export_ctx *x, const char *dir)
{
	struct found_log *logs;
	size_t n = find_logs(dir, &logs);
	int r = 0;

	if (!n) {
		free(logs);
		return export_log(x, dir);
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

/* grd_db_export()'s callback: the same filters and writer as a log's. */
static int db_item(void *ctx, const struct acq_item *it, const struct rec_names *nm)
{
	struct export_ctx *x = ctx;

	if (!wanted(x, it, nm->channel))
		return 0;
	x->written++;
	rec_format_item(x->out, x->format, it, nm, NULL);
	return ferror(x->out) ? -EIO : 0;
}

/* --db: the vehicle's records from the ground database (ground/export.c). */
static int export_db(struct export_ctx *x, const char *url, const char *vehicle)
{
	struct grd_db_cfg cfg = { .url = url };
	struct grd_export_query q = { vehicle, x->from_ns, x->to_ns, x->kinds };
	grd_db_t *db;
	int r;

	if (grd_db_new(&cfg, &db) < 0)
		return -ENOMEM;
	r = grd_db_check(db);
	if (r == 0)
		r = grd_db_export(db, &q, db_item, x);
	if (r < 0)
		fprintf(stderr, "railmon export: --db: %s\n", r == -EIO && !*grd_db_error(db) ? strerror(EIO) :
		        grd_db_error(db));
	grd_db_free(db);
	return r;
}

int board_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 }, { "kind", required_argument, NULL, 'k' },
		{ "channel", required_argument, NULL, 'c' }, { "help", no_argument, NULL, 'h' },
		{ "db", required_argument, NULL, 3 }, { "vehicle", required_argument, NULL, 4 }, { 0 }
	};
	struct export_ctx x = { .out = stdout, .from_ns = INT64_MIN, .to_ns = INT64_MAX };
	const char *dir = "railmon-data", *output = NULL, *db = NULL, *vehicle = NULL;
	enum acq_item_kind kind;
	int c, r;

	while ((c = getopt_long(argc, argv, "d:f:o:k:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 'o': output = optarg; break;
		case 'f':
			if (rec_format_parse(optarg, &x.format) < 0)
				return cli_fail("export", "--format: expected csv, jsonl or candump, not '%s'", optarg);
			break;
		case 1:
		case 2:
			if (parse_time(optarg, c == 1 ? &x.from_ns : &x.to_ns) < 0)
				return cli_fail("export", "--%s: cannot read time '%s'", c == 1 ? "from" : "to", optarg);
			break;
		case 'k':
			if (rec_kind_parse(optarg, &kind) < 0)
				return cli_fail("export", "--kind: expected can, sample or event, not '%s'", optarg);
			x.kinds |= 1u << kind;
			break;
		case 'c':
			if (x.nchannel_filters >= EXPORT_FILTER_MAX)
				return cli_fail("export", "--channel: at most %d", EXPORT_FILTER_MAX);
			x.channels[x.nchannel_filters++] = optarg;
			break;
		case 3: db = optarg; break;
		case 4: vehicle = optarg; break;
		case 'h': fputs(export_usage, stdout); return 0;
		default: fputs(export_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("export", "unexpected argument '%s'", argv[optind]);
	if (!db != !vehicle)
		return cli_fail("export", db ? "--db needs --vehicle V" : "--vehicle is for --db");
	if (!x.kinds)
		x.kinds = x.format == REC_FORMAT_CANDUMP ? 1u << ACQ_ITEM_CAN
		        : x.nchannel_filters ? 1u << ACQ_ITEM_SAMPLE : (1u << ACQ_ITEM_KIND_MAX) - 1;
	if (output && !(x.out = fopen(output, "we")))
		return cli_fail("export", "%s: %s", output, strerror(errno));
	if (rec_channels_new(&x.chans) < 0)
		return cli_fail("export", "out of memory");
	rec_format_header(x.out, x.format, false);
	r = db ? export_db(&x, db, vehicle) : export_dir(&x, dir);
	if (fflush(x.out) != 0 && r >= 0)
		r = -errno;
	if (output)
		fclose(x.out);
	rec_channels_free(x.chans);
	if (x.damaged)
		fprintf(stderr, "railmon export: %" PRIu64 " records written; %" PRIu64 " unreadable part%s of the log "
		        "skipped (see above)\n", x.written, x.damaged, x.damaged == 1 ? "" : "s");
	else
		fprintf(stderr, "railmon export: %" PRIu64 " records written\n", x.written);
	return r < 0 || x.damaged ? 1 : 0;
}
