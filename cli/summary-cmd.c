/* SPDX-License-Identifier: MIT */
/*
 * summary-cmd.c - `railmon summary --data DIR`: the options; what it says per
 * channel is report/summary.h's.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "basic/timeparse.h"
#include "cli.h"
#include "report/summary.h"

static const char summary_usage[] =
	"Usage: railmon summary [--data DIR | --db URL --vehicle V] [OPTIONS]\n"
	"Per channel: samples, first/last time, min/max/mean, gaps, out-of-range and\n"
	"invalid samples.\n\n"
	"  -d, --data DIR      log directory (default: railmon-data)\n"
	"      --db URL        the ground's PostgreSQL database instead of a log: whole\n"
	"                      seconds from its summary rollup, the rest from its rows\n"
	"      --vehicle V     with --db: the vehicle (required)\n"
	"      --raw           with --db: every row, not the rollup (same answer, slower)\n"
	"      --from TIME     only samples at or after TIME (as export's)\n"
	"      --to TIME       only samples before TIME\n"
	"  -c, --channel NAME  only this channel (repeatable): Message.Signal, or the bare\n"
	"                      signal name where one message has it (as export's)\n"
	"      --gap DUR       an interval longer than DUR is a gap (default: longer than\n"
	"                      5 times the channel's shortest interval)\n"
	"      --json          one JSON object per channel\n"
	"  -h, --help          this text\n"
	"\n"
	"Examples:\n"
	"  railmon summary -d railmon-data -c Speed --gap 1s\n"
	"  railmon summary -d railmon-data --from 2026-12-03T08:00:00Z --to 2026-12-03T09:00:00Z --json\n"
	"  railmon summary --db postgresql:///railmon --vehicle emu-4711 -c Speed --from 2026-12-03T00:00:00Z\n";


/* The options: the summary's, and the --channel names it points to. */
struct summary_args {
	struct rpt_summary_opts o;
	const char *only[RPT_SUMMARY_ONLY_MAX];
	const char *db, *vehicle;
	bool raw;
};

static int summary_option(struct summary_args *s, int c, const char *arg)
{
	switch (c) {
	case 1:
	case 2:
		if (basic_parse_time(arg, c == 1 ? &s->o.from_ns : &s->o.to_ns) < 0)
			return cli_fail("summary", "--%s: cannot read time '%s'", c == 1 ? "from" : "to", arg);
		return 0;
	case 3:
		if (basic_parse_duration_ns(arg, &s->o.gap_ns) < 0)
			return cli_fail("summary", "--gap: expected a duration like 500ms or 2s, not '%s'", arg);
		return 0;
	case 5:
		s->db = arg;
		return 0;
	case 6:
		s->vehicle = arg;
		return 0;
	case 7:
		s->raw = true;
		return 0;
	case 'c':
		if (s->o.nonly >= RPT_SUMMARY_ONLY_MAX)
			return cli_fail("summary", "--channel: at most 64");
		s->only[s->o.nonly++] = arg;
		return 0;
	}
	return 2;
}

int cli_cmd_summary(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "data", required_argument, NULL, 'd' }, { "from", required_argument, NULL, 1 },
		{ "to", required_argument, NULL, 2 }, { "gap", required_argument, NULL, 3 },
		{ "channel", required_argument, NULL, 'c' }, { "json", no_argument, NULL, 4 },
		{ "db", required_argument, NULL, 5 }, { "vehicle", required_argument, NULL, 6 },
		{ "raw", no_argument, NULL, 7 }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct summary_args a = { .o = { .from_ns = INT64_MIN, .to_ns = INT64_MAX, .only = a.only } };
	rpt_summary_t *s;
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
		} else if (c == '?' || (r = summary_option(&a, c, optarg)) == 2) {
			return cli_see_help("summary");
		}
	}
	if (r)
		return r;
	if (optind < argc)
		return cli_fail("summary", "unexpected argument '%s'", argv[optind]);
	if (!a.db != !a.vehicle)
		return cli_fail("summary", a.db ? "--db needs --vehicle V" : "--vehicle is for --db");
	if (a.raw && !a.db)
		return cli_fail("summary", "--raw is for --db");
	a.o.width = cli_term_width(stdout); /* a terminal's: lines cut there; a file or pipe: never */
	if (rpt_summary_new(&a.o, stderr, &s) < 0)
		return cli_fail("summary", "out of memory");
	r = a.db ? rpt_summary_run_db(s, a.db, a.vehicle, a.raw, json, stdout) : rpt_summary_run(s, dir, json, stdout);
	rpt_summary_free(s);
	return r;
}
