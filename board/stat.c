/* SPDX-License-Identifier: MIT */
/*
 * stat.c - `railmon stat`: health of a running daemon (over its unix
 * socket) or of a recorded log (the Health entries its Batches carry).
 *
 * The socket speaks JSON lines: one line per health entry, then a "daemon"
 * line with the record counters, then the server closes.  Any tool can read
 * it (`socat - UNIX-CONNECT:PATH`); `railmon stat` formats it as a table.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stddef.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "daemon.h"
#include "logfault.h"
#include "statserver.h"
#include "storage/stor.h"
#include "record/batch.h"
#include "basic/escape.h"
#include "basic/clock.h"

/* ---------------------------------------------------------------- client */

static const char stat_usage[] =
	"Usage: railmon stat [--socket PATH | --data DIR] [--json]\n"
	"Health of a running railmon (its stat socket, default DIR/railmon.sock) or,\n"
	"with --data and no daemon, of a recorded log (the latest Health entries).\n\n"
	"  -s, --socket PATH  the daemon's stat socket (@NAME: abstract namespace)\n"
	"  -d, --data DIR     the log directory (socket DIR/railmon.sock, else the log)\n"
	"  -j, --json         print JSON lines instead of a table\n"
	"  -h, --help         this text\n";

static void table_header(void)
{
	printf("%-14s %-9s %12s %9s %7s %7s %8s %6s %9s %7s %7s %8s %9s  %-9s %7s\n", "name", "kind", "items", "rate/s",
	       "drops", "errors", "overruns", "ring%", "backlog", "p50us", "p99us", "p99.9us", "max us", "state",
	       "reopens");
}

/* backlog: the log's records not yet synced, the uplink's not yet
   acknowledged by the broker; "-" for the rest. */
static void table_row(const struct rec_health *h)
{
	bool has_backlog = !strcmp(h->kind, "log") || !strcmp(h->kind, "uplink");

	/* The clock (docs/time.md): steps this run, and the kernel's word on
	   CLOCK_REALTIME in a line of its own (the columns are a bus's). */
	if (!strcmp(h->kind, "clock")) {
		printf("%-14s %-9s %" PRIu64 " step%s this run; %s, max error %" PRIu64 " us, estimated %" PRIu64
		       " us, status 0x%04x\n", h->name, h->kind, h->items, h->items == 1 ? "" : "s",
		       h->state[0] ? h->state : "unknown", h->clock_max_error_us, h->clock_est_error_us, h->clock_status);
		return;
	}
	printf("%-14s %-9s %12" PRIu64 " %9.1f %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %6u", h->name, h->kind, h->items,
	       h->rate_hz, h->drops, h->errors, h->overruns, h->ring_fill_pct);
	if (has_backlog)
		printf(" %9" PRIu64, h->backlog);
	else
		printf(" %9s", "-");
	if (h->latency_count)
		printf(" %7u %7u %8u %9.0f", h->latency_p50_us, h->latency_p99_us, h->latency_p999_us,
		       (double)h->latency_max_ns / 1e3);
	else
		printf(" %7s %7s %8s %9s", "-", "-", "-", "-");
	/* Buses: whether the device is there, and how often it came back;
	   the uplink: connected or offline. */
	if (h->state[0] && strcmp(h->kind, "uplink"))
		printf("  %-9s %7" PRIu64 "\n", h->state, h->reopens);
	else if (h->state[0])
		printf("  %-9s %7s\n", h->state, "-");
	else
		printf("  %-9s %7s\n", "-", "-");
}

/* Minimal reader for our own JSON lines: numeric and string fields by key. */
static bool json_u64(const char *line, const char *key, uint64_t *ret)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	if (!(p = strstr(line, pat)))
		return false;
	*ret = strtoull(p + strlen(pat), NULL, 10);
	return true;
}

static void json_str(const char *line, const char *key, char *out, size_t len)
{
	char pat[64];
	const char *p, *e;

	out[0] = 0;
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	if (!(p = strstr(line, pat)))
		return;
	p += strlen(pat);
	e = strchr(p, '"');
	if (e)
		snprintf(out, len, "%.*s", (int)(e - p), p);
}

static void row_from_json(const char *line)
{
	struct rec_health h = { 0 };
	uint64_t v;
	char rate[32];
	const char *p = strstr(line, "\"rate_hz\":");

	json_str(line, "name", h.name, sizeof(h.name));
	json_str(line, "kind", h.kind, sizeof(h.kind));
	json_str(line, "state", h.state, sizeof(h.state));
	json_u64(line, "reopens", &h.reopens);
	json_u64(line, "items", &h.items);
	json_u64(line, "drops", &h.drops);
	json_u64(line, "errors", &h.errors);
	json_u64(line, "overruns", &h.overruns);
	json_u64(line, "backlog", &h.backlog);
	json_u64(line, "latency_count", &h.latency_count);
	json_u64(line, "latency_max_ns", &h.latency_max_ns);
	json_u64(line, "clock_max_error_us", &h.clock_max_error_us);
	json_u64(line, "clock_est_error_us", &h.clock_est_error_us);
	if (json_u64(line, "clock_status", &v))
		h.clock_status = (uint32_t)v;
	if (json_u64(line, "ring_fill_pct", &v))
		h.ring_fill_pct = (uint32_t)v;
	if (json_u64(line, "latency_p50_us", &v))
		h.latency_p50_us = (uint32_t)v;
	if (json_u64(line, "latency_p99_us", &v))
		h.latency_p99_us = (uint32_t)v;
	if (json_u64(line, "latency_p999_us", &v))
		h.latency_p999_us = (uint32_t)v;
	if (p) {
		snprintf(rate, sizeof(rate), "%s", p + 10);
		h.rate_hz = strtod(rate, NULL);
	}
	table_row(&h);
}

static int stat_socket(const char *path, bool json)
{
	struct sockaddr_un sa;
	socklen_t salen;
	char line[1024];
	FILE *f;
	int fd;
	unsigned rows = 0;

	if (!*path || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	salen = board_stat_addr(path, &sa);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, salen) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	shutdown(fd, SHUT_WR); /* no request: the health, at once */
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	if (!json)
		table_header();
	while (fgets(line, sizeof(line), f)) {
		uint64_t records = 0, next = 0, drops = 0, refused = 0, unsent = 0;
		char up[32];
		rows++;
		if (json)
			fputs(line, stdout);
		else if (strstr(line, "\"name\":\"daemon\"")) {
			json_u64(line, "records", &records);
			json_u64(line, "next_seq", &next);
			json_u64(line, "ring_drops", &drops);
			json_u64(line, "log_dropped", &refused);
			if (rows == 1)
				printf("(no health entries yet: the daemon makes them every health_interval_s)\n");
			printf("daemon: %" PRIu64 " records stored this run, next seq %" PRIu64 ", %" PRIu64 " ring drops, %"
			       PRIu64 " refused by the log", records, next, drops, refused);
			json_str(line, "uplink", up, sizeof(up));
			json_u64(line, "unsent", &unsent);
			if (up[0])
				printf("; uplink %s, %" PRIu64 " record%s not yet acknowledged", up, unsent, unsent == 1 ? "" : "s");
			putchar('\n');
		} else {
			row_from_json(line);
		}
	}
	fclose(f);
	return 0;
}

/* The latest Health entries in a recorded log, one per name.  Returns 0,
   1 if parts of the log could not be read (said on stderr), or -errno. */
static int stat_log(const char *dir, bool json)
{
	struct rec_health last[64];
	size_t nlast = 0;
	stor_reader_t *rd;
	struct stor_rec rec;
	uint64_t skipped = 0;
	int r;

	r = stor_reader_open(dir, &rd);
	if (r < 0)
		return r;
	while ((r = stor_reader_next(rd, &rec)) != 0) {
		rec_batch_t *b;
		struct rec_batch_info info;
		if (r == -EBADMSG) {
			/* The health shown may be older than the log's end:
			   say what was skipped, then show what could be read. */
			skipped += board_log_fault_print("stat", dir, rd);
			continue;
		}
		if (r < 0)
			break;
		r = rec_batch_decode(rec.payload, rec.len, &b);
		if (r < 0) {
			board_log_undecodable_print("stat", dir, &rec, r);
			skipped++;
			continue;
		}
		rec_batch_info(b, &info);
		for (size_t i = 0; i < info.nhealth; i++) {
			struct rec_health h;
			size_t k = 0;
			rec_batch_health(b, i, &h);
			while (k < nlast && strcmp(last[k].name, h.name))
				k++;
			if (k == nlast && nlast < 64)
				nlast++;
			if (k < nlast)
				last[k] = h;
		}
		rec_batch_free(b);
	}
	stor_reader_free(rd);
	if (r < 0)
		fprintf(stderr, "railmon stat: %s: %s\n", dir, strerror(-r));
	if (!nlast) {
		fprintf(stderr, "railmon stat: %s: no health records in the log\n", dir);
		return -ENOENT;
	}
	if (!json)
		table_header();
	for (size_t i = 0; i < nlast; i++) {
		if (json)
			board_stat_health_json(stdout, &last[i]);
		else
			table_row(&last[i]);
	}
	if (skipped)
		fprintf(stderr, "railmon stat: %s: %" PRIu64 " unreadable part%s of the log skipped (see above): the health "
		        "shown is the latest that could be read\n", dir, skipped, skipped == 1 ? "" : "s");
	return r < 0 || skipped ? 1 : 0;
}

int board_cmd_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "data", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *sock = NULL, *dir = NULL;
	char path[512];
	bool json = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "s:d:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's': sock = optarg; break;
		case 'd': dir = optarg; break;
		case 'j': json = true; break;
		case 'h': fputs(stat_usage, stdout); return 0;
		default: fputs(stat_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("stat", "unexpected argument '%s'", argv[optind]);
	if (!sock && !dir)
		dir = "railmon-data";
	if (!sock) {
		snprintf(path, sizeof(path), "%s/railmon.sock", dir);
		sock = path;
	}
	r = stat_socket(sock, json);
	if (r >= 0)
		return 0;
	if (!dir || (r != -ENOENT && r != -ECONNREFUSED)) {
		fprintf(stderr, "railmon stat: %s: %s\n", sock, strerror(-r));
		return 1;
	}
	/* No daemon on that log: show what the log itself recorded. */
	r = stat_log(dir, json);
	if (r < 0 && r != -ENOENT)
		fprintf(stderr, "railmon stat: %s: %s\n", dir, strerror(-r));
	return r != 0 ? 1 : 0;
}
