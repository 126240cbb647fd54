/* SPDX-License-Identifier: MIT */
/* progress.c - the long commands' progress line (progress.h). */
#include <unistd.h>

#include "basic/clock.h"
#include "cli/progress.h"

/* 4 redraws a second: readable, and no cost worth measuring */
#define PROGRESS_PERIOD_NS 250000000LL

void cli_progress_init(struct cli_progress *p, FILE *err, const char *cmd, enum cli_progress_unit unit,
                       bool quiet)
{
	*p = (struct cli_progress){ .err = err, .cmd = cmd, .unit = unit,
	                            .on = !quiet && err && isatty(fileno(err)), .t0_ns = basic_mono_ns() };
}

/* an amount in the line's unit: "12.3 MB" or "1200 frames" */
static void amount(char *buf, size_t len, const struct cli_progress *p, double v)
{
	if (p->unit == CLI_PROGRESS_BYTES)
		snprintf(buf, len, v >= 1e9 ? "%.2f GB" : "%.1f MB", v >= 1e9 ? v / 1e9 : v / 1e6);
	else
		snprintf(buf, len, "%.0f", v);
}

static const char *unit_name(const struct cli_progress *p)
{
	return p->unit == CLI_PROGRESS_BYTES ? "" : p->unit == CLI_PROGRESS_FRAMES ? " frames" : " records";
}

void cli_progress_update(void *ctx, uint64_t done, uint64_t total)
{
	struct cli_progress *p = ctx;

	if (p && total && done >= total) {
		/* a part done (one log of a ground directory): off the screen
		   before what is said next ("log 2 of 3") */
		cli_progress_clear(p);
		p->t0_ns = basic_mono_ns(); /* the next part's rate from its own start */
		return;
	}
	cli_progress_show(p, done, total);
}

void cli_progress_show(struct cli_progress *p, uint64_t done, uint64_t total)
{
	int64_t now;
	double s, rate;
	char d[32], t[32], r[32];

	if (!p || !p->on)
		return;
	now = basic_mono_ns();
	if (p->drawn && now - p->last_ns < PROGRESS_PERIOD_NS)
		return;
	p->last_ns = now;
	s = (double)(now - p->t0_ns) / 1e9;
	rate = s > 0 ? (double)done / s : 0;
	amount(d, sizeof(d), p, (double)done);
	amount(r, sizeof(r), p, rate);
	if (total) {
		double left = rate > 0 ? (double)(total - (done < total ? done : total)) / rate : 0;
		unsigned sec = left < 359999 ? (unsigned)(left + 0.5) : 359999;

		amount(t, sizeof(t), p, (double)total);
		fprintf(p->err, "\r%s: %s of %s%s (%.0f%%), %s%s/s, %u:%02u:%02u left\033[K", p->cmd, d, t,
		        unit_name(p), 100.0 * (double)done / (double)total, r,
		        p->unit == CLI_PROGRESS_BYTES ? "" : unit_name(p), sec / 3600, sec / 60 % 60, sec % 60);
	} else {
		fprintf(p->err, "\r%s: %s%s, %s%s/s\033[K", p->cmd, d, unit_name(p), r,
		        p->unit == CLI_PROGRESS_BYTES ? "" : unit_name(p));
	}
	fflush(p->err);
	p->drawn = true;
}

void cli_progress_clear(struct cli_progress *p)
{
	if (!p || !p->drawn)
		return;
	fputs("\r\033[K", p->err);
	fflush(p->err);
	p->drawn = false;
}
