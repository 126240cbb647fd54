/* SPDX-License-Identifier: MIT */
/*
 * export-cmd.c - `railmon export`: the log as CSV, JSON lines, candump or
 * InfluxDB line protocol, or its CAN frames as a Vector ASC or BLF trace
 * (trace/trace-write.h).
 *
 * The options; the engine is report/export.h (the log or a ground vehicle
 * directory of logs, export-log.c; the ground database, export-db.c; the
 * filters, order and writers, export-write.c; the option combinations,
 * the end of the output and the totals, export-cli.c).  Whatever
 * cannot be read is said on stderr with its file and the records lost, and
 * skipped; everything else is exported, and the exit status is 1 if
 * anything was skipped.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "basic/timeparse.h"
#include "cli.h"
#include "record/channels.h"
#include "record/format.h"
#include "record/names.h"
#include "record/order.h"
#include "trace/trace-write.h"
#include "record/wide.h"
#include "report/export.h"
#include "cli/progress.h"

static const char export_usage[] =
	"Usage: railmon export [OPTIONS]\n"
	"Print what the flash log recorded.\n\n"
	"  -d, --data DIR        log directory (default: railmon-data)\n"
	"  -f, --format FMT      csv (default), jsonl, candump or influx (line protocol);\n"
	"                        CSV and JSON lines have one schema (record/README.md \"Output schema\");\n"
	"                        or a Vector trace of the CAN frames: asc or blf\n"
	"                        (channel = bus + 1; blf is binary: give -o FILE)\n"
	"  -o, --output FILE     write to FILE instead of stdout\n"
	"      --from TIME       only records at or after TIME\n"
	"      --to TIME         only records before TIME\n"
	"                        TIME: 2026-12-03T07:00:00Z, 2026-12-03T08:00:00+01:00,\n"
	"                        2026-12-03 08:00:00 (local time, TZ) or Unix seconds\n"
	"  -k, --kind KIND       can, sample, event or text (repeatable; default all)\n"
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
	"  -q, --quiet           no progress line (shown on a terminal), no totals when\n"
	"                        all went well\n"
	"  -h, --help            this text\n"
	"\n"
	"Examples:\n"
	"  railmon export -d railmon-data -o all.csv\n"
	"  railmon export -d railmon-data -c Speed -c BrakePipePressure --wide --raster 100ms -o speed.csv\n"
	"  railmon export -d railmon-data -f blf -o can.blf\n";


static int parse_option(struct rpt_export *x, int c, const char *arg)
{
	enum acq_item_kind kind;
	int64_t *t = c == 1 ? &x->from_ns : &x->to_ns;

	switch (c) {
	case 'f':
		x->trace = trace_write_format_parse(arg, &x->tfmt) == 0;
		if (!x->trace && rec_format_parse(arg, &x->format) < 0)
			return cli_fail("export", "--format: expected csv, jsonl, candump, influx, asc or blf, not '%s'",
			                arg);
		return 0;
	case 1:
	case 2:
		if (basic_parse_time(arg, t) < 0)
			return cli_fail("export", "--%s: cannot read time '%s' (2026-12-03T07:00:00Z, "
			                "2026-12-03T08:00:00+01:00, local 2026-12-03 08:00:00, or Unix seconds)",
			                c == 1 ? "from" : "to", arg);
		return 0;
	case 'k':
		if (rec_kind_parse(arg, &kind) < 0)
			return cli_fail("export", "--kind: expected can, sample, event or text, not '%s'", arg);
		x->kinds |= 1u << kind;
		return 0;
	case 'c':
		if (x->nchannel_filters >= RPT_EXPORT_FILTER_MAX)
			return cli_fail("export", "--channel: at most %d", RPT_EXPORT_FILTER_MAX);
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
		if (basic_parse_duration_ns(arg, c == 5 ? &x->raster_ns : c == 6 ? &x->max_age_ns : &x->window_ns) < 0)
			return cli_fail("export", "--%s: expected a duration like 100ms, 2s or 1min, not '%s'",
			                c == 5 ? "raster" : c == 6 ? "max-age" : "window", arg);
		return 0;
	}
	return 2;
}

int cli_cmd_export(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' }, { "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 }, { "kind", required_argument, NULL, 'k' },
		{ "channel", required_argument, NULL, 'c' }, { "order", required_argument, NULL, 3 },
		{ "wide", no_argument, NULL, 4 }, { "raster", required_argument, NULL, 5 },
		{ "max-age", required_argument, NULL, 6 }, { "window", required_argument, NULL, 7 },
		{ "db", required_argument, NULL, 8 }, { "vehicle", required_argument, NULL, 9 },
		{ "corrected-time", no_argument, NULL, 10 }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct rpt_export x = { .out = stdout, .err = stderr, .from_ns = INT64_MIN, .to_ns = INT64_MAX,
	                        .window_ns = REC_ORDER_WINDOW_NS, .max_age_ns = 5000000000LL };
	const char *dir = "railmon-data", *output = NULL, *db = NULL, *vehicle = NULL;
	struct cli_progress pg;
	bool quiet = false;
	int c, r = 0;

	while (r == 0 && (c = getopt_long(argc, argv, "d:f:o:k:c:qh", opts, NULL)) != -1) {
		if (c == 'd') {
			dir = optarg;
		} else if (c == 8 || c == 9) {
			*(c == 8 ? &db : &vehicle) = optarg;
		} else if (c == 'o') {
			output = optarg;
		} else if (c == 10) {
			x.corrected = true;
		} else if (c == 'q') {
			quiet = true;
		} else if (c == 'h') {
			fputs(export_usage, stdout);
			return 0;
		} else if (c == '?' || (r = parse_option(&x, c, optarg)) == 2) {
			return cli_see_help("export");
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
	if ((r = rpt_export_check(&x)) != 0 || rec_channels_new(&x.chans) < 0) {
		rec_order_free(x.order);
		return r ? r : cli_fail("export", "out of memory");
	}
	if (output && !(x.out = fopen(output, "we")))
		r = cli_fail("export", "%s: %s", output, strerror(errno));
	else if (x.trace && x.tfmt == TRACE_WRITE_BLF && !output && isatty(STDOUT_FILENO))
		r = cli_fail("export", "--format blf is binary: give -o FILE or redirect the output");
	else if (x.trace && trace_writer_new(x.out, x.tfmt, &x.tracew) < 0)
		r = cli_fail("export", "out of memory");
	else {
		/* a log: bytes of its segments; the database: records, no total */
		cli_progress_init(&pg, stderr, "export", db ? CLI_PROGRESS_RECORDS : CLI_PROGRESS_BYTES, quiet);
		x.progress = cli_progress_update;
		x.progress_ctx = &pg;
		r = db ? rpt_export_db(&x, db, vehicle) : rpt_export_dir(&x, dir);
		cli_progress_clear(&pg);
	}
	r = rpt_export_finish(&x, r);
	if (output && x.out)
		fclose(x.out);
	/* --quiet: the totals only of a run that failed or skipped damage */
	if (r < 0 || (r == 0 && (!quiet || x.damaged)))
		rpt_export_summary(&x);
	rpt_export_release(&x);
	return r > 0 ? r : r < 0 || x.damaged ? 1 : 0;
}
