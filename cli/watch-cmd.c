/* SPDX-License-Identifier: MIT */
/*
 * watch-cmd.c - `railmon watch`: the live values of a running daemon's
 * channels, from its stat socket (a "channels" request: one JSON line per
 * channel, statserver.c), drawn by the table the demo draws
 * (cli/live-table.h); the rows, title and frames are cli/watch-screen.h's,
 * and so is the terminal's set-up (shared with monitor); the options, the
 * socket and the poll are here.
 *
 * On a terminal the screen is redrawn in place every --interval, with keys
 * (q quit, s sort, / filter, arrows or j/k scroll); with --once, or when
 * stdout is not a terminal, the table is printed once, without escapes.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "cli.h"
#include "pipeline/statserver.h"
#include "cli/watch-screen.h"

static const char watch_usage[] =
	"Usage: railmon watch [--socket PATH | --data DIR] [OPTIONS]\n"
	"The live values of a running railmon's channels (value, unit, label, age,\n"
	"source), through its stat socket (default DIR/railmon.sock).\n\n"
	"      --socket PATH     the daemon's stat socket (@NAME: abstract namespace)\n"
	"  -d, --data DIR        the daemon's log directory (its socket DIR/railmon.sock)\n"
	"      --sort KEY        id (board order, default), name, age (freshest first), source\n"
	"      --filter TEXT     only channels whose name, source or unit holds TEXT\n"
	"      --interval S      redraw every S seconds (default 0.5)\n"
	"  -S, --stale S         mark values older than S seconds as stale (default 5)\n"
	"  -1, --once            print the table once and exit (also when stdout is not a terminal)\n"
	"      --no-color        no colours (also with NO_COLOR set)\n"
	"  -h, --help            this text\n\n"
	"Marks: '*' changed within the last second (bold), '~' stale (dim); '>' a text cut\n"
	"to fit its column (a name loses its start: '>' leads).\n"
	"Keys: q quit, s next sort, / filter (Enter: apply, Esc: clear), j/k or arrows scroll, space a page.\n"
	"\n"
	"Examples:\n"
	"  railmon watch --data /var/lib/railmon --filter Brake\n"
	"  railmon watch -d railmon-data --once\n";

struct watch {
	struct cli_watch rw;        /* the rows, the title, the table (cli/watch-screen.h) */
	double interval_s;
	bool once;
	struct cli_term term;       /* raw mode, the alternate screen (cli/watch-screen.h) */
};

/* ---------------------------------------------------------------- fetch */

/* Ask the daemon for every channel's latest value. */
static int watch_fetch(struct watch *w)
{
	FILE *f;
	int r = pl_stat_open(w->rw.sock, "channels\n", &f);

	if (r < 0)
		return r;
	r = cli_watch_read(&w->rw, f);
	fclose(f);
	if (r < 0)
		return r;
	/* and the buses' state (no request: the health lines stat reads) */
	if (pl_stat_open(w->rw.sock, NULL, &f) < 0) {
		w->rw.buses[0] = 0; /* gone in between: the next fetch says so */
		return 0;
	}
	cli_watch_read_buses(&w->rw, f);
	fclose(f);
	return 0;
}

static int watch_loop(struct watch *w)
{
	int64_t next = 0;

	w->rw.drawn = basic_mono_ns();
	cli_term_raw(&w->term);
	/* SIGHUP is the terminal hanging up here, not a reload */
	while (!cli_stop_requested && !cli_reload_requested && !ferror(stdout)) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int64_t now = basic_mono_ns();
		if (now >= next) {
			int r = watch_fetch(w);
			cli_term_size(&w->rw.view);
			if (cli_watch_frame(&w->rw, r, now, stdout) < 0)
				break;
			next = now + (int64_t)(w->interval_s * 1e9);
		}
		if (poll(&pfd, w->term.raw ? 1 : 0, (int)((next - now) / 1000000 + 1)) > 0 &&
		    ((pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) ||
		     !cli_term_keys(&w->term, &w->rw.keys, &w->rw.view, w->rw.nrows)))
			break;
		if (w->term.raw && pfd.revents)
			next = 0; /* a key: draw at once */
	}
	cli_term_restore(&w->term);
	return 0;
}

static int watch_opts(struct watch *w, int argc, char **argv, const char **ret_dir)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 2 }, { "data", required_argument, NULL, 'd' },
		{ "sort", required_argument, NULL, 3 }, { "filter", required_argument, NULL, 4 },
		{ "interval", required_argument, NULL, 5 }, { "stale", required_argument, NULL, 'S' },
		{ "once", no_argument, NULL, '1' }, { "no-color", no_argument, NULL, 6 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:S:1h", opts, NULL)) != -1) {
		switch (c) {
		case 2: w->rw.sock = optarg; break;
		case 'd': *ret_dir = optarg; break;
		case 3:
			if (cli_live_sort_parse(optarg, &w->rw.view.sort) < 0)
				return cli_fail("watch", "--sort: expected id, name, age or source, not '%s'", optarg);
			break;
		case 4: snprintf(w->rw.view.filter, sizeof(w->rw.view.filter), "%s", optarg); break;
		case 5:
			if (!cli_parse_seconds(optarg, &w->interval_s) || w->interval_s < 0.05)
				return cli_fail("watch", "--interval: expected seconds >= 0.05, not '%s'", optarg);
			break;
		case 'S':
			if (!cli_parse_seconds(optarg, &w->rw.view.stale_s) || w->rw.view.stale_s <= 0)
				return cli_fail("watch", "--stale: expected seconds > 0, not '%s'", optarg);
			break;
		case '1': w->once = true; break;
		case 6: w->rw.view.color = false; break;
		case 'h': fputs(watch_usage, stdout); return 1;
		default: return cli_see_help("watch");
		}
	}
	if (optind < argc)
		return cli_fail("watch", "unexpected argument '%s'", argv[optind]);
	if (w->rw.sock && *ret_dir)
		return cli_fail("watch", "--socket and --data: give one");
	return 0;
}

int cli_cmd_watch(int argc, char **argv)
{
	struct watch w = { .interval_s = 0.5, .rw.view = { .stale_s = 5, .color = true, .clear = true } };
	const char *dir = NULL;
	char path[512];
	int r;

	r = watch_opts(&w, argc, argv, &dir);
	if (r)
		return r == 1 ? 0 : r;
	if (!w.rw.sock) {
		snprintf(path, sizeof(path), "%s/railmon.sock", dir ? dir : "railmon-data");
		w.rw.sock = path;
	}
	if (getenv("NO_COLOR") || !isatty(STDOUT_FILENO))
		w.rw.view.color = false;
	if (!isatty(STDOUT_FILENO))
		w.once = true;
	r = watch_fetch(&w);
	if (r < 0) {
		fprintf(stderr, "railmon watch: %s: %s%s\n", w.rw.sock, strerror(-r),
		        r == -ENOENT || r == -ECONNREFUSED ? " (is `railmon run` running on this log? --socket, --data)" : "");
		cli_watch_release(&w.rw);
		return 1;
	}
	if (w.once) {
		w.rw.view.clear = false;
		w.rw.view.height = 0;
		cli_term_size(&w.rw.view);
		cli_watch_once(&w.rw, stdout);
	} else {
		cli_install_signals();
		w.rw.view.keys = "q quit, s sort, / filter, j/k scroll";
		r = watch_loop(&w);
	}
	cli_watch_release(&w.rw);
	return r < 0 ? 1 : 0;
}
