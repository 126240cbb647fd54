/* SPDX-License-Identifier: MIT */
/*
 * stat-cmd.c - `railmon stat`: health of a running daemon (over its unix
 * socket) or of a recorded log (the Health entries its Batches carry).
 *
 * The socket speaks JSON lines: one line per health entry, then a "daemon"
 * line with the record counters, then the server closes.  Any tool can read
 * it (`socat - UNIX-CONNECT:PATH`); `railmon stat` formats it as a table
 * (cli/stat-table.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/escape.h"
#include "cli.h"
#include "cli/stat-rt.h"
#include "cli/stat-table.h"
#include "pipeline/statserver.h"

static const char stat_usage[] =
	"Usage: railmon stat [--socket PATH | --data DIR] [--json]\n"
	"Health of a running railmon (its stat socket, default DIR/railmon.sock) or,\n"
	"with --data and no daemon, of a recorded log (the latest Health entries).\n\n"
	"      --socket PATH  the daemon's stat socket (@NAME: abstract namespace)\n"
	"  -d, --data DIR     the log directory (socket DIR/railmon.sock, else the log)\n"
	"  -j, --json         print JSON lines instead of a table\n"
	"  -h, --help         this text\n"
	"\n"
	"Examples:\n"
	"  railmon stat --data /var/lib/railmon\n"
	"  railmon stat -d railmon-data --json\n";

/*
 * --json: the realtime lines the table ends with, as one more JSON line
 * (name "realtime": pid, warnings, and the lines as the table prints
 * them), so a script sees what the tail depends on without parsing text.
 */
static void stat_realtime_json(FILE *out, pid_t pid, const struct cli_stat_daemon *d)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int warnings;
	bool first = true;

	if (!m)
		return;
	warnings = cli_stat_realtime(m, pid, d, "/", "");
	if (fclose(m) != 0 || !text) {
		free(text);
		return;
	}
	fprintf(out, "{\"name\":\"realtime\",\"pid\":%d,\"warnings\":%d,\"lines\":[", (int)pid,
	        warnings < 0 ? 0 : warnings);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), first = false) {
		if (!first)
			fputc(',', out);
		basic_json_string(out, line);
	}
	fputs("]}\n", out);
	free(text);
}

static int stat_socket(const char *path, bool json)
{
	struct cli_stat_daemon d;
	struct ucred peer = { 0 };
	socklen_t plen = sizeof(peer);
	FILE *f;
	/* no request: the health, at once */
	int r = pl_stat_open(path, NULL, &f);

	if (r < 0)
		return r;
	/* The daemon's pid, from the kernel (a socket says whose it is):
	   its threads' scheduling is read back from it. */
	if (getsockopt(fileno(f), SOL_SOCKET, SO_PEERCRED, &peer, &plen) < 0)
		peer.pid = 0;
	cli_stat_lines_daemon(f, json, stdout, &d);
	fclose(f);
	if (!json && d.seen && peer.pid > 0)
		(void)cli_stat_realtime(stdout, peer.pid, &d, "/", "");
	else if (d.seen && peer.pid > 0)
		stat_realtime_json(stdout, peer.pid, &d);
	return 0;
}

int cli_cmd_stat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 1 }, { "data", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *sock = NULL, *dir = NULL;
	char path[512];
	bool json = false;
	int c, r;

	while ((c = getopt_long(argc, argv, "d:jh", opts, NULL)) != -1) {
		switch (c) {
		case 1: sock = optarg; break;
		case 'd': dir = optarg; break;
		case 'j': json = true; break;
		case 'h': fputs(stat_usage, stdout); return 0;
		default: return cli_see_help("stat");
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
	r = cli_stat_log(dir, json, stdout, stderr);
	if (r < 0 && r != -ENOENT)
		fprintf(stderr, "railmon stat: %s: %s\n", dir, strerror(-r));
	return r != 0 ? 1 : 0;
}
