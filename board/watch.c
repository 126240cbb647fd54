/* SPDX-License-Identifier: MIT */
/*
 * watch.c - `railmon watch`: the live values of a running daemon's
 * channels, from its stat socket (a "channels" request: one JSON line per
 * channel, statserver.c), drawn by the table the demo draws
 * (report/livetable.h).
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
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "cli.h"
#include "report/livetable.h"
#include "report/statserver.h"

#define WATCH_ROWS_MAX (1u << 20) /* channels a daemon can have: 16 buses x 65,536 */

static const char watch_usage[] =
	"Usage: railmon watch [--socket PATH | --data DIR] [OPTIONS]\n"
	"The live values of a running railmon's channels (value, unit, label, age,\n"
	"source), through its stat socket (default DIR/railmon.sock).\n\n"
	"  -s, --socket PATH     the daemon's stat socket (@NAME: abstract namespace)\n"
	"  -d, --data DIR        the daemon's log directory (its socket DIR/railmon.sock)\n"
	"  -o, --sort KEY        id (board order, default), name, age (freshest first), source\n"
	"  -f, --filter TEXT     only channels whose name, source or unit holds TEXT\n"
	"  -i, --interval S      redraw every S seconds (default 0.5)\n"
	"  -S, --stale S         mark values older than S seconds as stale (default 5)\n"
	"  -1, --once            print the table once and exit (also when stdout is not a terminal)\n"
	"  -n, --no-color        no colours (also with NO_COLOR set)\n"
	"  -h, --help            this text\n\n"
	"Marks: '*' changed within the last second (bold), '~' stale (dim).\n"
	"Keys: q quit, s next sort, / filter (Enter: apply, Esc: clear), j/k or arrows scroll, space a page.\n";

struct watch {
	const char *sock;
	struct rpt_live_view view;
	double interval_s;
	bool once;
	struct rpt_live_row *rows;
	size_t nrows, cap;
	char title[256];
	char clock[64];           /* the daemon's clock, when not synchronised */
	struct rpt_live_keys keys;  /* q, s, /, scrolling; a filter being typed */
	struct termios saved;
	bool raw;
};

/* ---------------------------------------------------------------- fetch */

static int rows_grow(struct watch *w)
{
	size_t cap = w->cap ? 2 * w->cap : 256;
	struct rpt_live_row *n;

	if (cap > WATCH_ROWS_MAX)
		return -E2BIG;
	n = realloc(w->rows, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	w->rows = n;
	w->cap = cap;
	return 0;
}

/* The daemon's clock: an unsynchronised one is said in the title, since
   every time and age on the screen is on it (docs/time.md). */
static void watch_clock(struct watch *w, const struct rpt_live_clock *c)
{
	w->clock[0] = 0;
	if (c->unsynced)
		snprintf(w->clock, sizeof(w->clock), "  clock unsynced (max error %.0f ms)",
		         (double)c->max_error_us / 1e3);
}

/* Ask the daemon for every channel's latest value. */
static int watch_fetch(struct watch *w)
{
	struct rpt_live_clock clock;
	char line[1024];
	FILE *f;
	int r = rpt_stat_open(w->sock, "channels\n", &f);

	if (r < 0)
		return r;
	w->nrows = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		if (w->nrows == w->cap)
			r = rows_grow(w);
		if (rpt_live_clock_parse(line, &clock) == 0)
			watch_clock(w, &clock);
		else if (r == 0 && rpt_live_row_parse(line, &w->rows[w->nrows]) == 0)
			w->nrows++;
	}
	fclose(f);
	return r;
}

/* ------------------------------------------------------------- terminal */

static void term_size(struct watch *w)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		w->view.width = ws.ws_col;
		w->view.height = ws.ws_row;
	}
}

static void term_raw(struct watch *w)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &w->saved) < 0)
		return;
	t = w->saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
		w->raw = true;
	/* the alternate screen, cursor hidden: the shell's screen comes back */
	fputs("\033[?1049h\033[?25l", stdout);
}

static void term_restore(struct watch *w)
{
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (w->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &w->saved);
}

/* Keys waiting on stdin; false when the user quits. */
static bool keys(struct watch *w)
{
	unsigned char buf[32];
	ssize_t n = w->raw ? read(STDIN_FILENO, buf, sizeof(buf)) : 0;

	/* the terminal is gone (EOF, EIO after a hangup): nobody to draw for */
	if (w->raw && (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)))
		return false;
	return rpt_live_keys_feed(&w->keys, &w->view, buf, n > 0 ? (size_t)n : 0, w->nrows);
}

/* ----------------------------------------------------------------- draw */

static void watch_title(struct watch *w, int err)
{
	char now[40];
	time_t sec = (time_t)(basic_realtime_ns() / 1000000000);
	struct tm tm;

	strftime(now, sizeof(now), "%Y-%m-%d %H:%M:%S", localtime_r(&sec, &tm));
	if (err)
		snprintf(w->title, sizeof(w->title), "railmon watch %s  %s: %s (retrying)", w->sock, now, strerror(-err));
	else if (w->keys.editing)
		snprintf(w->title, sizeof(w->title), "railmon watch %s  filter: %s_", w->sock, w->keys.edit);
	else
		snprintf(w->title, sizeof(w->title), "railmon watch %s  %s%s", w->sock, now, w->clock);
	w->view.title = w->title;
}

/* The table remembers what it drew per channel; a reload of the daemon may
   bring more channels: a bigger table then (the marks start again). */
static int table_fit(rpt_livetable_t **t, size_t *max, size_t n)
{
	if (*t && n <= *max)
		return 0;
	*t = rpt_livetable_free(*t);
	*max = n > 64 ? 2 * n : 128;
	return rpt_livetable_new(*max, t);
}

static int watch_loop(struct watch *w)
{
	rpt_livetable_t *t = NULL;
	size_t max = 0;
	int64_t next = 0, drawn = basic_mono_ns();

	term_raw(w);
	/* SIGHUP is the terminal hanging up here, not a reload */
	while (!board_stop_requested && !board_reload_requested && !ferror(stdout)) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		int64_t now = basic_mono_ns();
		if (now >= next) {
			int r = watch_fetch(w);
			if (r == 0 && table_fit(&t, &max, w->nrows) < 0)
				break;
			if (r < 0) /* the daemon is away: its last values keep ageing */
				for (size_t i = 0; i < w->nrows; i++)
					w->rows[i].age_ns += w->rows[i].age_ns >= 0 ? now - drawn : 0;
			term_size(w);
			watch_title(w, r < 0 ? r : 0);
			rpt_livetable_draw(t, w->rows, w->nrows, &w->view, now, stdout);
			drawn = now;
			next = now + (int64_t)(w->interval_s * 1e9);
		}
		if (poll(&pfd, w->raw ? 1 : 0, (int)((next - now) / 1000000 + 1)) > 0 &&
		    ((pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) || !keys(w)))
			break;
		if (w->raw && pfd.revents)
			next = 0; /* a key: draw at once */
	}
	term_restore(w);
	rpt_livetable_free(t);
	return 0;
}

static int watch_opts(struct watch *w, int argc, char **argv, const char **ret_dir)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "data", required_argument, NULL, 'd' },
		{ "sort", required_argument, NULL, 'o' }, { "filter", required_argument, NULL, 'f' },
		{ "interval", required_argument, NULL, 'i' }, { "stale", required_argument, NULL, 'S' },
		{ "once", no_argument, NULL, '1' }, { "no-color", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "s:d:o:f:i:S:1nh", opts, NULL)) != -1) {
		switch (c) {
		case 's': w->sock = optarg; break;
		case 'd': *ret_dir = optarg; break;
		case 'o':
			if (rpt_live_sort_parse(optarg, &w->view.sort) < 0)
				return cli_fail("watch", "--sort: expected id, name, age or source, not '%s'", optarg);
			break;
		case 'f': snprintf(w->view.filter, sizeof(w->view.filter), "%s", optarg); break;
		case 'i':
			if (!cli_parse_seconds(optarg, &w->interval_s) || w->interval_s < 0.05)
				return cli_fail("watch", "--interval: expected seconds >= 0.05, not '%s'", optarg);
			break;
		case 'S':
			if (!cli_parse_seconds(optarg, &w->view.stale_s) || w->view.stale_s <= 0)
				return cli_fail("watch", "--stale: expected seconds > 0, not '%s'", optarg);
			break;
		case '1': w->once = true; break;
		case 'n': w->view.color = false; break;
		case 'h': fputs(watch_usage, stdout); return 1;
		default: fputs(watch_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("watch", "unexpected argument '%s'", argv[optind]);
	if (w->sock && *ret_dir)
		return cli_fail("watch", "--socket and --data: give one");
	return 0;
}

int board_cmd_watch(int argc, char **argv)
{
	struct watch w = { .interval_s = 0.5, .view = { .stale_s = 5, .color = true, .clear = true } };
	const char *dir = NULL;
	char path[512];
	rpt_livetable_t *t = NULL;
	int r;

	r = watch_opts(&w, argc, argv, &dir);
	if (r)
		return r == 1 ? 0 : r;
	if (!w.sock) {
		snprintf(path, sizeof(path), "%s/railmon.sock", dir ? dir : "railmon-data");
		w.sock = path;
	}
	if (getenv("NO_COLOR") || !isatty(STDOUT_FILENO))
		w.view.color = false;
	if (!isatty(STDOUT_FILENO))
		w.once = true;
	r = watch_fetch(&w);
	if (r < 0) {
		fprintf(stderr, "railmon watch: %s: %s%s\n", w.sock, strerror(-r),
		        r == -ENOENT || r == -ECONNREFUSED ? " (is `railmon run` running on this log? --socket, --data)" : "");
		free(w.rows);
		return 1;
	}
	if (w.once) {
		r = rpt_livetable_new(w.nrows ? w.nrows : 1, &t);
		w.view.clear = false;
		w.view.height = 0;
		term_size(&w);
		w.view.height = 0; /* every channel */
		watch_title(&w, 0);
		if (r == 0)
			rpt_livetable_draw(t, w.rows, w.nrows, &w.view, basic_mono_ns(), stdout);
	} else {
		board_install_signals();
		w.view.keys = "q quit, s sort, / filter, j/k scroll";
		r = watch_loop(&w);
	}
	rpt_livetable_free(t);
	free(w.rows);
	return r < 0 ? 1 : 0;
}
