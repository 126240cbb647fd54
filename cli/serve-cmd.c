/* SPDX-License-Identifier: MIT */
/*
 * serve-cmd.c - `railmon serve`: options and wiring only; the dashboard is
 * web/ (web/web.h, docs/dashboard-api.md).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli.h"
#include "web/web.h"

static const char serve_usage[] =
	"Usage: railmon serve --db URL [--listen HOST:PORT] [--token-file FILE] [OPTIONS]\n"
	"The fleet dashboard in the browser over the ground database (read-only).\n\n"
	"      --db URL           libpq connection (default: RAILMON_DB)\n"
	"  -l, --listen HOST:PORT where to listen (default 127.0.0.1:8080; port 0: any free port);\n"
	"                         anything but loopback needs --token-file, and TLS from a reverse proxy\n"
	"      --token-file FILE  clients must give this file's first line (Authorization: Bearer,\n"
	"                         or open /?token=... once); the file must not be readable by others\n"
	"      --pool N           database connections at most (default 4)\n"
	"      --budget S         each query's time budget in seconds (default 5)\n"
	"      --offline-after S  a vehicle is offline after S s without a Batch (default 60)\n"
	"      --stale-after S    a channel is stale after S s without a sample (default 30)\n"
	"      --dbc BUS=FILE     the CAN frame view also decodes bus index BUS's frames with this DBC\n"
	"                         (repeatable, one file per bus)\n"
	"      --per-address N    connections from one client address at most (default 16, at most 128;\n"
	"                         behind a reverse proxy every client has its address: see docs/dashboard.md)\n"
	"      --header-timeout S a request's line and headers must come within S s (default 10)\n"
	"  -h, --help             this text\n"
	"\n"
	"Examples:\n"
	"  railmon serve --db postgresql:///railmon\n"
	"  railmon serve --db postgresql:///railmon --listen 0.0.0.0:8080 --token-file /etc/railmon/token\n";

struct serve_opts {
	struct web_cfg cfg;
	const char *dbc[WEB_DBC_MAX];
	const char *token_file;
	char token[WEB_TOKEN_MAX + 1];
};

static int read_token(const char *path, char *buf, size_t len)
{
	struct stat st;
	FILE *f = fopen(path, "r");

	if (!f)
		return cli_fail("serve", "--token-file %s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && (st.st_mode & 077)) {
		fclose(f);
		return cli_fail("serve", "--token-file %s: readable by others (mode %03o): chmod 600 it", path,
		                (unsigned)(st.st_mode & 0777));
	}
	/* the whole first line: a longer one is refused, not cut (a token cut
	   silently would differ from the one the clients were given) */
	size_t n = 0;
	int ch;

	while (n < len - 1 && (ch = fgetc(f)) != EOF && ch != '\n')
		buf[n++] = (char)ch;
	ch = n == len - 1 ? fgetc(f) : EOF;
	fclose(f);
	buf[n] = '\0';
	if (ch != EOF && ch != '\n' && ch != '\r')
		return cli_fail("serve", "--token-file %s: the token on its first line is longer than %zu characters", path,
		                len - 1);
	buf[strcspn(buf, "\r")] = '\0';
	if (strlen(buf) < 16)
		return cli_fail("serve", "--token-file %s: the token on its first line must be at least 16 characters", path);
	if (strspn(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~") != strlen(buf))
		return cli_fail("serve", "--token-file %s: the token may hold letters, digits and -_.~ only", path);
	return 0;
}

static int uint_opt(const char *name, const char *v, double scale, unsigned *ret)
{
	double d;

	if (!cli_parse_seconds(v, &d) || d * scale < 1 || d * scale > 1e7)
		return cli_fail("serve", "--%s: expected a positive number of seconds, not '%s'", name, v);
	*ret = (unsigned)(d * scale);
	return 0;
}

static int serve_parse(int argc, char **argv, struct serve_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 8 }, { "listen", required_argument, NULL, 'l' },
		{ "token-file", required_argument, NULL, 9 }, { "pool", required_argument, NULL, 1 },
		{ "budget", required_argument, NULL, 2 }, { "offline-after", required_argument, NULL, 3 },
		{ "stale-after", required_argument, NULL, 4 }, { "dbc", required_argument, NULL, 5 },
		{ "per-address", required_argument, NULL, 6 }, { "header-timeout", required_argument, NULL, 7 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c, r = 0;

	while (r == 0 && (c = getopt_long(argc, argv, "l:h", opts, NULL)) != -1) {
		switch (c) {
		case 8: o->cfg.db_url = optarg; break;
		case 'l': o->cfg.listen = optarg; break;
		case 9: o->token_file = optarg; break;
		case 1:
			o->cfg.pool = (unsigned)atoi(optarg);
			if (o->cfg.pool < 1 || o->cfg.pool > 64)
				r = cli_fail("serve", "--pool: 1 to 64, not '%s'", optarg);
			break;
		case 2: r = uint_opt("budget", optarg, 1000, &o->cfg.timeout_ms); break;
		case 3: r = uint_opt("offline-after", optarg, 1, &o->cfg.offline_after_s); break;
		case 4: r = uint_opt("stale-after", optarg, 1, &o->cfg.stale_after_s); break;
		case 5:
			if (o->cfg.ndbc == WEB_DBC_MAX)
				r = cli_fail("serve", "--dbc: at most %d files", WEB_DBC_MAX);
			else
				o->dbc[o->cfg.ndbc++] = optarg;
			break;
		case 6:
			o->cfg.per_address = (unsigned)atoi(optarg);
			if (o->cfg.per_address < 1 || o->cfg.per_address > WEB_CONN_MAX)
				r = cli_fail("serve", "--per-address: 1 to %d, not '%s'", WEB_CONN_MAX, optarg);
			break;
		case 7:
			r = uint_opt("header-timeout", optarg, 1, &o->cfg.header_timeout_s);
			if (!r && o->cfg.header_timeout_s > 3600)
				r = cli_fail("serve", "--header-timeout: at most 3600 s, not '%s'", optarg);
			break;
		case 'h': fputs(serve_usage, stdout); return 1;
		default: return cli_see_help("serve");
		}
	}
	if (r)
		return r;
	if (optind < argc)
		return cli_fail("serve", "unexpected argument '%s'", argv[optind]);
	if (!o->cfg.db_url)
		o->cfg.db_url = getenv("RAILMON_DB");
	if (!o->cfg.db_url || !*o->cfg.db_url)
		return cli_fail("serve", "--db URL is required (or RAILMON_DB)");
	if (o->token_file && (r = read_token(o->token_file, o->token, sizeof(o->token))))
		return r;
	o->cfg.token = o->token_file ? o->token : NULL;
	o->cfg.dbc = o->dbc;
	return 0;
}

static void say_stats(web_server_t *srv)
{
	struct web_stats st;

	web_server_stats(srv, &st);
	fprintf(stderr, "railmon serve: %" PRIu64 " requests, %" PRIu64 " refused (4xx, %" PRIu64 " without the token), "
	        "%" PRIu64 " failed (5xx, %" PRIu64 " busy), %" PRIu64 " live streams (%" PRIu64 " refused), %" PRIu64
	        " live messages (%" PRIu64 " left out: a vehicle name outside the rule), %" PRIu64
	        " connections closed without a whole request within the header timeout\n",
	        st.requests, st.bad_requests, st.unauthorised, st.db_errors, st.busy, st.live_clients, st.live_refused,
	        st.live_messages, st.live_bad_names, st.slow_closed);
	if (st.db_errors)
		fprintf(stderr, "railmon serve: last failure: %s", st.last_error);
}

int cli_cmd_serve(int argc, char **argv)
{
	struct serve_opts o = { 0 };
	web_server_t *srv;
	char err[512];
	int r = serve_parse(argc, argv, &o);

	if (r)
		return r == 1 ? 0 : r;
	cli_install_signals();
	r = web_server_new(&o.cfg, err, sizeof(err), &srv);
	if (r < 0) {
		fprintf(stderr, "railmon serve: %s\n", err);
		return r == -EPERM || r == -EINVAL ? 2 : 1;
	}
	printf("railmon serve: listening on %s, port %u (read-only, %s)\n", o.cfg.listen ? o.cfg.listen : "127.0.0.1:8080",
	       web_server_port(srv), o.cfg.token ? "token required" : "no token: loopback only");
	fflush(stdout);
	while (!cli_stop_requested)
		nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
	say_stats(srv);
	srv = web_server_free(srv);
	return 0;
}
