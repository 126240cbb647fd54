/* SPDX-License-Identifier: MIT */
/* watch-screen.c - the screen of `railmon watch` (watch-screen.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "cli/stat-table.h"
#include "cli/watch-screen.h"
#include "record/batch.h"

#define WATCH_ROWS_MAX (1u << 20) /* channels a daemon can have: 16 buses x 65,536 */

static int rows_grow(struct cli_watch *w)
{
	size_t cap = w->cap ? 2 * w->cap : 256;
	struct cli_live_row *n;

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
static void watch_clock(struct cli_watch *w, const struct pl_stat_clock *c)
{
	w->clock[0] = 0;
	if (c->unsynced)
		snprintf(w->clock, sizeof(w->clock), "  clock unsynced (max error %.0f ms)",
		         (double)c->max_error_us / 1e3);
}

int cli_watch_read(struct cli_watch *w, FILE *f)
{
	struct pl_stat_clock clock;
	char line[1024];
	int r = 0;

	w->nrows = 0;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		if (w->nrows == w->cap)
			r = rows_grow(w);
		if (cli_live_clock_parse(line, &clock) == 0)
			watch_clock(w, &clock);
		else if (r == 0 && cli_live_row_parse(line, &w->rows[w->nrows]) == 0)
			w->nrows++;
	}
	return r;
}

/* A bus in stat's sense: a device state, not the uplink's or the clock's. */
static bool health_is_bus(const struct rec_health *h)
{
	return h->state[0] && strcmp(h->kind, "uplink") && strcmp(h->kind, "clock");
}

unsigned cli_watch_read_buses(struct cli_watch *w, FILE *f)
{
	char line[4096], item[320], blind[32], trdp[160];
	struct rec_health h;
	unsigned n = 0;
	size_t at;

	w->buses[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "\"name\":\"daemon\""))
			continue;
		cli_stat_health_parse(line, &h);
		/* a bus that never went away is said by its channels' ages; a
		   TRDP bus also by its telegrams: what a channel's age cannot
		   say (refused headers, sequence gaps, timeouts) */
		if (!health_is_bus(&h) || (!strcmp(h.state, "up") && !h.reopens && strcmp(h.kind, "trdp")))
			continue;
		blind[0] = trdp[0] = 0;
		if (h.reopens && h.blind_ms != UINT32_MAX)
			snprintf(blind, sizeof(blind), ", blind %" PRIu32 " ms", h.blind_ms);
		if (!strcmp(h.kind, "trdp"))
			snprintf(trdp, sizeof(trdp), ", %.1f telegrams/s, %" PRIu64 " bad, %" PRIu64 " gaps, %" PRIu64
			         " repeats, %" PRIu64 " timeouts", h.trdp_telegrams_hz,
			         h.trdp_bad_short + h.trdp_bad_fcs + h.trdp_bad_version + h.trdp_bad_type +
			                 h.trdp_bad_too_long + h.trdp_bad_truncated,
			         h.trdp_seq_gaps, h.trdp_seq_repeats, h.trdp_timeouts);
		snprintf(item, sizeof(item), "%s %s, %" PRIu64 " reopen%s%s%s", h.name, h.state, h.reopens,
		         h.reopens == 1 ? "" : "s", blind, trdp);
		at = strlen(w->buses);
		snprintf(w->buses + at, sizeof(w->buses) - at, "%s%s", at ? "; " : "", item);
		n++;
	}
	return n;
}

void cli_watch_title(struct cli_watch *w, int err)
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
		/* the buses first: a long socket path must not cut them off */
		snprintf(w->title, sizeof(w->title), "railmon watch %s%s%s  %s%s", w->buses,
		         w->buses[0] ? "  " : "", w->sock, now, w->clock);
	w->view.title = w->title;
}

/* The table remembers what it drew per channel; a reload of the daemon may
   bring more channels: a bigger table then (the marks start again). */
static int table_fit(cli_livetable_t **t, size_t *max, size_t n)
{
	if (*t && n <= *max)
		return 0;
	*t = cli_livetable_free(*t);
	*max = n > 64 ? 2 * n : 128;
	return cli_livetable_new(*max, t);
}

int cli_watch_frame(struct cli_watch *w, int err, int64_t now_ns, FILE *out)
{
	if (err == 0 && table_fit(&w->table, &w->max, w->nrows) < 0)
		return -ENOMEM;
	if (err < 0) /* the daemon is away: its last values keep ageing */
		for (size_t i = 0; i < w->nrows; i++)
			w->rows[i].age_ns += w->rows[i].age_ns >= 0 ? now_ns - w->drawn : 0;
	cli_watch_title(w, err < 0 ? err : 0);
	cli_livetable_draw(w->table, w->rows, w->nrows, &w->view, now_ns, out);
	w->drawn = now_ns;
	return 0;
}

void cli_watch_once(struct cli_watch *w, FILE *out)
{
	cli_livetable_t *t = NULL;
	int r = cli_livetable_new(w->nrows ? w->nrows : 1, &t);

	w->view.height = 0; /* every channel */
	cli_watch_title(w, 0);
	if (r == 0)
		cli_livetable_draw(t, w->rows, w->nrows, &w->view, basic_mono_ns(), out);
	cli_livetable_free(t);
	/* the title is cut to 80 columns here: the buses whole */
	if (w->buses[0])
		fprintf(out, "buses: %s\n", w->buses);
}

void cli_watch_release(struct cli_watch *w)
{
	w->table = cli_livetable_free(w->table);
	free(w->rows);
	w->rows = NULL;
	w->nrows = w->cap = 0;
}

/* ------------------------------------------------------------- terminal */

void cli_term_size(struct cli_live_view *view)
{
	struct winsize ws;

	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
		view->width = ws.ws_col;
		view->height = ws.ws_row;
	}
}

void cli_term_raw(struct cli_term *term)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &term->saved) < 0)
		return;
	t = term->saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
		term->raw = true;
	/* the alternate screen, cursor hidden: the shell's screen comes back */
	fputs("\033[?1049h\033[?25l", stdout);
}

void cli_term_restore(struct cli_term *term)
{
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	if (term->raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &term->saved);
}

bool cli_term_keys(struct cli_term *term, struct cli_live_keys *keys, struct cli_live_view *view, size_t nrows)
{
	unsigned char buf[32];
	ssize_t n = term->raw ? read(STDIN_FILENO, buf, sizeof(buf)) : 0;

	/* the terminal is gone (EOF, EIO after a hangup): nobody to draw for */
	if (term->raw && (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)))
		return false;
	return cli_live_keys_feed(keys, view, buf, n > 0 ? (size_t)n : 0, nrows);
}
