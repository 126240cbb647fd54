/* SPDX-License-Identifier: MIT */
/*
 * demo-say.c - `railmon demo`'s table and summary (demo-say.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "basic/clock.h"
#include "cli.h"
#include "cli/demo-say.h"

/* The daemon's channels as the live table's rows (the same table as
   `railmon watch` draws from a daemon's socket). */
void cli_demo_row(const struct pl_channel *ch, const struct pl_live *lv, const char *label, int64_t now,
                  struct cli_live_row *ret_row)
{
	struct cli_live_row *r = ret_row;

	memset(r, 0, sizeof(*r));
	r->id = ch->id;
	snprintf(r->name, sizeof(r->name), "%s", ch->name);
	snprintf(r->unit, sizeof(r->unit), "%s", ch->unit);
	snprintf(r->source, sizeof(r->source), "%s", ch->source);
	r->age_ns = lv->t_ns ? now - lv->t_ns : -1;
	r->value = lv->value;
	r->quality = lv->quality;
	r->text = lv->is_text;
	if (label)
		snprintf(r->label, sizeof(r->label), "%s", label);
}

void cli_demo_table(struct cli_demo_view *dv, size_t n, const struct cli_run_counts *c, double elapsed,
                    bool live, FILE *out)
{
	struct winsize ws;
	char title[256];

	snprintf(title, sizeof(title), "railmon demo  t=%.1fs  records stored %llu (seq %llu..%llu)  ring drops %llu",
	         elapsed, (unsigned long long)c->records, (unsigned long long)c->first_seq,
	         (unsigned long long)(c->next_seq ? c->next_seq - 1 : 0), (unsigned long long)c->ring_drops);
	dv->view.title = title;
	dv->view.clear = live && dv->view.color;
	dv->view.height = 0;
	/* the terminal's width also for the closing table (not live): 0, the
	   fixed 80 columns, when out is no terminal */
	dv->view.width = cli_term_width(out);
	if (dv->view.clear && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		dv->view.height = ws.ws_row;
	cli_livetable_draw(dv->table, dv->rows, n, &dv->view, basic_mono_ns(), out);
	if (!dv->view.clear)
		fputc('\n', out);
}

int cli_demo_view_new(size_t nchannels, bool ansi, struct cli_demo_view *dv)
{
	dv->max = nchannels ? nchannels : 1;
	dv->rows = calloc(dv->max, sizeof(*dv->rows));
	if (!dv->rows)
		return -ENOMEM;
	dv->view = (struct cli_live_view){ .stale_s = 5, .color = ansi && !getenv("NO_COLOR") };
	return cli_livetable_new(dv->max, &dv->table);
}

void cli_demo_view_free(struct cli_demo_view *dv)
{
	dv->table = cli_livetable_free(dv->table);
	free(dv->rows);
	dv->rows = NULL;
}

/* A word as the shell reads it back: as it is, or in single quotes. */
static void shell_word(const char *s, char *buf, size_t len)
{
	size_t k = 0;

	if (s[0] && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == strlen(s)) {
		snprintf(buf, len, "%s", s);
		return;
	}
	buf[k++] = '\'';
	for (; *s && k + 6 < len; s++) {
		if (*s == '\'') {
			memcpy(buf + k, "'\\''", 4);
			k += 4;
		} else {
			buf[k++] = *s;
		}
	}
	buf[k++] = '\'';
	buf[k] = 0;
}

/* The closing hint, a command that works as printed from any directory:
   this very binary and the log, by absolute paths. */
static void demo_hint(FILE *out, const char *dir)
{
	char exe[PATH_MAX], abs[PATH_MAX], qexe[2 * PATH_MAX], qdir[2 * PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		snprintf(exe, sizeof(exe), "railmon");
	else
		exe[n] = 0;
	if (!realpath(dir, abs))
		snprintf(abs, sizeof(abs), "%s", dir);
	shell_word(exe, qexe, sizeof(qexe));
	shell_word(abs, qdir, sizeof(qdir));
	fprintf(out, "log: %s\ntry: %s export --data %s --format csv | head\n     %s stat --data %s\n", abs, qexe, qdir,
	        qexe, qdir);
}

void cli_demo_summary(FILE *out, const struct conf_board *cfg, const struct cli_run_counts *c, double elapsed,
                      const char *data_dir)
{
	uint64_t per_kind[BUS_KIND_MAX] = { 0 };

	for (size_t b = 0; b < cfg->nbuses; b++)
		per_kind[cfg->buses[b].kind] += c->bus_rx[b];
	fprintf(out, "railmon demo: stopped after %.1f s: %llu records stored (seq %llu..%llu) in %llu batches, "
	        "%llu CAN frames, %llu Modbus samples and %llu TRDP telegrams acquired, %llu ring drops, %llu records "
	        "refused by the log\n",
	        elapsed, (unsigned long long)c->records, (unsigned long long)c->first_seq,
	        (unsigned long long)(c->next_seq - 1), (unsigned long long)c->batches,
	        (unsigned long long)per_kind[BUS_KIND_CAN], (unsigned long long)per_kind[BUS_KIND_MODBUS],
	        (unsigned long long)per_kind[BUS_KIND_TRDP],
	        (unsigned long long)c->ring_drops, (unsigned long long)c->log_dropped);
	demo_hint(out, data_dir);
}
