/* SPDX-License-Identifier: MIT */
/*
 * demo.c - `railmon demo`: a simulated train on this machine, end to end.
 *
 * A libmodbus TCP server on a free loopback port plays the traction
 * converter, HVAC and door controller (bus/sim-train.h); the vehicle CAN
 * bus is the candump trace shipped in board/demo/.  Both are acquired by the real daemon
 * (realtime threads, rings, collector, DBC, Batches, flash log) and shown
 * as a live table.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "demo.h"
#include "report/livetable.h"
#include "report/statserver.h"
#include "basic/clock.h"
#include "bus/sim-train.h"
#include "railmon-config.h"

/* -------------------------------------------------------------- display */

/* The daemon's channels as the live table's rows (the same table as
   `railmon watch` draws from a daemon's socket). */
static size_t demo_rows(struct pl_daemon *d, struct rpt_live_row *rows, size_t max)
{
	const struct pl_channel *ch;
	size_t n = pl_daemon_channels(d, &ch);
	int64_t now = basic_realtime_ns();

	n = n < max ? n : max;
	for (size_t i = 0; i < n; i++) {
		struct pl_live lv = { 0 };
		const char *label;
		struct rpt_live_row *r = &rows[i];
		pl_daemon_live(d, i, &lv);
		memset(r, 0, sizeof(*r));
		r->id = ch[i].id;
		snprintf(r->name, sizeof(r->name), "%s", ch[i].name);
		snprintf(r->unit, sizeof(r->unit), "%s", ch[i].unit);
		snprintf(r->source, sizeof(r->source), "%s", ch[i].source);
		r->age_ns = lv.t_ns ? now - lv.t_ns : -1;
		r->value = lv.value;
		r->quality = lv.quality;
		r->text = lv.is_text;
		label = !lv.t_ns ? NULL : lv.is_text ? lv.text : pl_daemon_value_label(d, i, lv.value);
		if (label)
			snprintf(r->label, sizeof(r->label), "%s", label);
	}
	return n;
}

struct demo_view {
	rpt_livetable_t *table;
	struct rpt_live_row *rows;
	size_t max;
	struct rpt_live_view view;
};

static void demo_table(struct pl_daemon *d, struct demo_view *dv, FILE *out, bool live, double elapsed)
{
	struct pl_daemon_stats st;
	struct winsize ws;
	char title[256];
	size_t n = demo_rows(d, dv->rows, dv->max);

	pl_daemon_stats(d, &st);
	snprintf(title, sizeof(title), "railmon demo  t=%.1fs  records stored %llu (seq %llu..%llu)  ring drops %llu",
	         elapsed, (unsigned long long)st.records, (unsigned long long)st.first_seq,
	         (unsigned long long)(st.next_seq ? st.next_seq - 1 : 0), (unsigned long long)st.ring_drops);
	dv->view.title = title;
	dv->view.clear = live && dv->view.color;
	dv->view.height = 0;
	dv->view.width = 0;
	if (dv->view.clear && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col) {
		dv->view.width = ws.ws_col;
		dv->view.height = ws.ws_row;
	}
	rpt_livetable_draw(dv->table, dv->rows, n, &dv->view, basic_mono_ns(), out);
	if (!dv->view.clear)
		fputc('\n', out);
}

static int demo_view_new(struct pl_daemon *d, bool ansi, struct demo_view *dv)
{
	const struct pl_channel *ch;

	dv->max = pl_daemon_channels(d, &ch);
	dv->max = dv->max ? dv->max : 1;
	dv->rows = calloc(dv->max, sizeof(*dv->rows));
	if (!dv->rows)
		return -ENOMEM;
	dv->view = (struct rpt_live_view){ .stale_s = 5, .color = ansi && !getenv("NO_COLOR") };
	return rpt_livetable_new(dv->max, &dv->table);
}

static void demo_view_free(struct demo_view *dv)
{
	dv->table = rpt_livetable_free(dv->table);
	free(dv->rows);
	dv->rows = NULL;
}

/* ------------------------------------------------------- the demo board */

/* Whether this binary is one of the build tree it was built in (the Quick
   start's build-demo/, the tests'): then its data is that source tree's. */
static bool demo_in_build_tree(void)
{
	char exe[PATH_MAX], build[PATH_MAX];
	size_t n;

	if (!realpath("/proc/self/exe", exe) || !realpath(RAILMON_BUILD_DIR, build))
		return false;
	n = strlen(build);
	return !strncmp(exe, build, n) && exe[n] == '/';
}

int board_demo_board_path(char *buf, size_t len, const char **ret_why)
{
	const char *env = getenv("RAILMON_PKGDATADIR"), *why;
	int n;

	/* An installed binary never looks for a source tree (the machine that
	   built the package may still have one, at a path that means nothing
	   here); a build tree's binary never for installed data (an older
	   install would hide the board being worked on). */
	if (env && env[0]) {
		n = snprintf(buf, len, "%s/demo.ini", env);
		why = "RAILMON_PKGDATADIR";
	} else if (demo_in_build_tree()) {
		n = snprintf(buf, len, "%s/board/demo.ini", RAILMON_SOURCE_DIR);
		why = "the source tree of this build";
	} else {
		n = snprintf(buf, len, "%s/demo.ini", RAILMON_PKGDATADIR);
		why = "the installed data";
	}
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	*ret_why = why;
	return 0;
}

/* ----------------------------------------------------------------- run */

static int demo_config(const struct demo_opts *o, uint16_t port, struct conf_board **ret_cfg)
{
	char err[CONF_ERR_MAX];
	struct conf_board *cfg;
	int r;

	r = conf_load(o->board, &cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		return r;
	}
	/* The simulated devices live on the port we just got. */
	for (size_t b = 0; b < cfg->nbuses; b++)
		if (cfg->buses[b].kind == BUS_KIND_MODBUS && !cfg->buses[b].mb.rtu &&
		    !strcmp(cfg->buses[b].mb.host, "127.0.0.1"))
			cfg->buses[b].mb.port = port;
	*ret_cfg = cfg;
	return 0;
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
static void demo_hint(const char *dir)
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
	printf("log: %s\ntry: %s export --data %s --format csv | head\n     %s stat --data %s\n", abs, qexe, qdir, qexe,
	       qdir);
}

static void demo_summary(struct pl_daemon *d, const struct conf_board *cfg, double elapsed)
{
	struct pl_daemon_stats st;
	uint64_t per_kind[BUS_KIND_MAX] = { 0 };

	pl_daemon_stats(d, &st);
	for (size_t b = 0; b < cfg->nbuses; b++)
		per_kind[cfg->buses[b].kind] += st.bus_rx[b];
	printf("railmon demo: stopped after %.1f s: %llu records stored (seq %llu..%llu) in %llu batches, "
	       "%llu CAN frames and %llu Modbus samples acquired, %llu ring drops, %llu records refused by the log\n",
	       elapsed, (unsigned long long)st.records, (unsigned long long)st.first_seq,
	       (unsigned long long)(st.next_seq - 1), (unsigned long long)st.batches,
	       (unsigned long long)per_kind[BUS_KIND_CAN], (unsigned long long)per_kind[BUS_KIND_MODBUS],
	       (unsigned long long)st.ring_drops, (unsigned long long)st.log_dropped);
	demo_hint(pl_daemon_data_dir(d));
}

/* The daemon's stat socket, as `run` serves it: `railmon watch --data DIR`
   and `railmon stat --data DIR` work on a running demo too. */
static struct rpt_stat_server *demo_stat(struct pl_daemon *d)
{
	struct rpt_stat_server *srv = NULL;
	char sock[BUS_PATH_MAX + 16];
	int r;

	snprintf(sock, sizeof(sock), "%s/railmon.sock", pl_daemon_data_dir(d));
	r = rpt_stat_server_start(d, sock, &srv);
	if (r < 0)
		fprintf(stderr, "railmon demo: warning: no stat socket %s: %s\n", sock, strerror(-r));
	else
		fprintf(stderr, "railmon demo: watch it from another terminal: railmon watch --data %s\n",
		        pl_daemon_data_dir(d));
	return srv;
}

static int demo_start(const struct demo_opts *o, uint16_t port, struct conf_board **cfg,
                      struct pl_daemon **d)
{
	struct pl_daemon_opts dopts = { .data_dir = o->data_dir };
	char err[CONF_ERR_MAX], warn[256];
	int r = demo_config(o, port, cfg);

	if (r < 0)
		return r;
	r = pl_daemon_new(*cfg, &dopts, d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		return r;
	}
	fprintf(stderr, "railmon demo: simulated Modbus devices on 127.0.0.1:%u, CAN trace %s, log in %s\n",
	        port, (*cfg)->buses[0].can.device, pl_daemon_data_dir(*d));
	r = pl_daemon_start(*d, warn, sizeof(warn));
	if (r < 0) {
		fprintf(stderr, "railmon demo: cannot start: %s\n", strerror(-r));
		return r;
	}
	if (warn[0])
		fprintf(stderr, "railmon demo: warning: %s\n", warn);
	return 0;
}

/* The demo board the options name, else the one board_demo_board_path()
   finds; one that is not there is said with where it was looked for. */
static int demo_board(const struct demo_opts *o, char *buf, size_t len)
{
	const char *why;
	int r;

	if (o->board) {
		snprintf(buf, len, "%s", o->board);
		return 0;
	}
	r = board_demo_board_path(buf, len, &why);
	if (r < 0) {
		fprintf(stderr, "railmon demo: the demo board's path is too long (RAILMON_PKGDATADIR)\n");
		return r;
	}
	if (access(buf, R_OK) < 0) {
		r = -errno;
		fprintf(stderr, "railmon demo: no demo board %s (%s): %s; give one with --board FILE\n", buf, why,
		        strerror(-r));
		return r;
	}
	return 0;
}

int board_demo_run(const struct demo_opts *opts, volatile sig_atomic_t *stop)
{
	struct demo_opts with_board = *opts, *o = &with_board;
	char board[PATH_MAX];
	struct bus_sim_train *srv = NULL;
	struct conf_board *cfg = NULL;
	struct pl_daemon *d = NULL;
	struct rpt_stat_server *stat = NULL;
	struct demo_view dv = { 0 };
	int64_t t0, next_draw = 0;
	uint16_t port;
	int r;

	r = demo_board(opts, board, sizeof(board));
	if (r < 0)
		return r;
	o->board = board;
	r = bus_sim_train_start(&srv, &port);
	if (r < 0) {
		fprintf(stderr, "railmon demo: cannot start the simulated Modbus devices: %s\n", strerror(-r));
		return r;
	}
	r = demo_start(o, port, &cfg, &d);
	if (r >= 0)
		r = demo_view_new(d, o->ansi, &dv);
	if (r < 0)
		goto out;
	stat = demo_stat(d);
	t0 = basic_mono_ns();
	/* a terminal that went away (the live table's writes fail) ends it too */
	while (!*stop && !ferror(stdout) && (o->duration_s <= 0 || basic_mono_ns() - t0 < (int64_t)(o->duration_s * 1e9))) {
		if (o->live && basic_mono_ns() >= next_draw) {
			demo_table(d, &dv, stdout, true, (double)(basic_mono_ns() - t0) / 1e9);
			next_draw = basic_mono_ns() + 500000000;
		}
		usleep(50000);
	}
	stat = rpt_stat_server_free(stat);
	pl_daemon_stop(d);
	if (o->ansi && o->live)
		fputs("\n\n", stdout); /* below the live table */
	dv.view.color = false;
	demo_table(d, &dv, stdout, false, (double)(basic_mono_ns() - t0) / 1e9);
	demo_summary(d, cfg, (double)(basic_mono_ns() - t0) / 1e9);
	r = 0;
out:
	demo_view_free(&dv);
	pl_daemon_free(d);
	conf_free(cfg);
	bus_sim_train_free(srv);
	return r;
}
