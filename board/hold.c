/* SPDX-License-Identifier: MIT */
/*
 * hold.c - `railmon hold list|release`: the event holds of a log (the
 * windows retention keeps around an incident, storage/hold.c).  Printing
 * only: the holds file and what each hold keeps are storage's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "cli.h"
#include "conf/config.h"
#include "pipeline/logdir.h"
#include "storage/stor.h"

static const char hold_usage[] =
	"Usage: railmon hold list [--board FILE | --data DIR]\n"
	"       railmon hold release ID [--board FILE | --data DIR]\n"
	"The event holds of a log: the windows [t - pre, t + post] a [trigger] section held\n"
	"around an incident, which retention never deletes until released or expired.\n"
	"list: id, trigger, when it fired, the held window, the records, segments and bytes\n"
	"it keeps now, when it expires.  release ID: end hold ID now (retention may then\n"
	"delete its data, oldest first, when the log needs the space).\n\n"
	"  -b, --board FILE   the board file (its [storage] dir)\n"
	"  -d, --data DIR     the log directory (default: the board's, else railmon-data)\n"
	"  -h, --help         this text\n";

/* "2026-12-03 19:09:14.250Z" (UTC) */
static const char *utc(int64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / BASIC_NS_PER_SEC);
	struct tm tm;

	if (!gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "%" PRId64, ns);
	else
		snprintf(buf + strlen(buf), len - strlen(buf), ".%03dZ", (int)(ns / BASIC_NS_PER_MS % 1000));
	return buf;
}

static const char *span(int64_t ns, char *buf, size_t len)
{
	int64_t s = ns / BASIC_NS_PER_SEC;

	if (s % 3600 == 0 && s)
		snprintf(buf, len, "%" PRId64 "h", s / 3600);
	else if (s % 60 == 0 && s)
		snprintf(buf, len, "%" PRId64 "m", s / 60);
	else
		snprintf(buf, len, "%" PRId64 "s", s);
	return buf;
}

static int damaged(const char *dir, unsigned line)
{
	fprintf(stderr, "railmon hold: %s/%s:%u: the holds file is damaged (its CRC does not match, or a line is "
	        "cut): the windows it holds cannot be trusted, and retention deletes nothing while it is so. "
	        "Keep a copy for the investigation, then repair or remove it\n", dir, STOR_HOLDS_NAME, line);
	return 1;
}

static void print_hold(const struct stor_hold *h, const struct stor_hold_extent *e, int64_t now)
{
	char t[40], pre[16], post[16], exp[48], recs[64], tmp[40];

	span(h->t_ns - h->from_ns, pre, sizeof(pre));
	span(h->to_ns - h->t_ns, post, sizeof(post));
	if (!h->expiry_ns)
		snprintf(exp, sizeof(exp), "at release");
	else
		snprintf(exp, sizeof(exp), "%s%s", utc(h->expiry_ns, tmp, sizeof(tmp)),
		         h->expiry_ns <= now ? " (ended)" : "");
	if (e->segments)
		snprintf(recs, sizeof(recs), "%" PRIu64 "-%" PRIu64, e->first_seq, e->end_seq - 1);
	else
		snprintf(recs, sizeof(recs), "none on disk");
	printf("%-5" PRIu32 " %-20s %-24s -%s +%-6s %-23s %8" PRIu32 " %12" PRIu64 "  %s\n", h->id, h->trigger,
	       utc(h->t_ns, t, sizeof(t)), pre, post, recs, e->segments, e->bytes, exp);
}

static int hold_list(const char *dir)
{
	struct stor_holds *h = malloc(sizeof(*h));
	struct stor_hold_extent *ext = NULL;
	unsigned line = 0;
	int r;

	if (!h)
		return cli_fail("hold", "out of memory");
	r = stor_holds_read(dir, h, &line);
	if (r == -EBADMSG) {
		free(h);
		return damaged(dir, line);
	}
	if (r == 0 && h->n)
		ext = calloc(h->n, sizeof(*ext));
	if (r == 0 && h->n)
		r = ext ? stor_hold_extents(dir, h, ext) : -ENOMEM;
	if (r < 0) {
		fprintf(stderr, "railmon hold: %s: %s\n", dir, strerror(-r));
		free(ext);
		free(h);
		return 1;
	}
	if (!h->n)
		printf("%s: no holds\n", dir);
	else
		printf("%-5s %-20s %-24s %-13s %-23s %8s %12s  %s\n", "id", "trigger", "fired (UTC)", "window",
		       "records", "segments", "bytes", "expires");
	for (size_t i = 0; i < h->n; i++)
		print_hold(&h->h[i], &ext[i], basic_realtime_ns());
	free(ext);
	free(h);
	return 0;
}

static int hold_release(const char *dir, const char *arg)
{
	unsigned line = 0;
	char *end;
	/* strtoull: an unsigned long is 32 bits on armhf */
	unsigned long long id = strtoull(arg, &end, 10);
	int r;

	if (*end || end == arg || !id || id > UINT32_MAX || arg[0] == '-')
		return cli_fail("hold", "release: '%s' is not a hold id (see `railmon hold list`)", arg);
	r = stor_hold_release(dir, (uint32_t)id, &line);
	if (r == -EBADMSG)
		return damaged(dir, line);
	if (r == -ENOENT) {
		fprintf(stderr, "railmon hold: %s: no hold %llu (released or expired already?)\n", dir, id);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "railmon hold: %s: %s\n", dir, strerror(-r));
		return 1;
	}
	printf("hold %llu released: retention may delete its data when the log needs the space\n", id);
	return 0;
}

int board_cmd_hold(int argc, char **argv)
{
	static const struct option opts[] = { { "board", required_argument, NULL, 'b' },
		                              { "data", required_argument, NULL, 'd' },
		                              { "help", no_argument, NULL, 'h' }, { 0 } };
	const char *board = NULL, *data = NULL, *verb;
	struct conf_board *cfg = NULL;
	char dir[4096];
	int c, r;

	while ((c = getopt_long(argc, argv, "b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 'h': fputs(hold_usage, stdout); return 0;
		default: fputs(hold_usage, stderr); return 2;
		}
	}
	if (optind >= argc)
		return cli_fail("hold", "list or release ID?");
	verb = argv[optind++];
	if (board && cli_load_board("hold", board, &cfg) != 0)
		return 1;
	snprintf(dir, sizeof(dir), "%s", pl_data_dir(cfg, data));
	conf_free(cfg);
	if (!strcmp(verb, "list") && optind == argc)
		r = hold_list(dir);
	else if (!strcmp(verb, "release") && optind + 1 == argc)
		r = hold_release(dir, argv[optind]);
	else
		r = cli_fail("hold", "usage: hold list | hold release ID");
	return r;
}
