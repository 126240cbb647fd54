/* SPDX-License-Identifier: MIT */
/*
 * demo-cmd.c - `railmon demo`: a simulated train on this machine, end to end.
 *
 * A libmodbus TCP server on a free loopback port plays the traction
 * converter, HVAC and door controller (bus/sim-train.h); the vehicle CAN
 * bus is the candump trace shipped in cli/demo/; the consist network's
 * TRDP process data (doors, HVAC, traction: cli/demo/consist.xml) comes
 * from a publisher on loopback (demo-trdp.h).  All are acquired by the real daemon
 * (realtime threads, rings, collector, DBC, Batches, flash log) and shown
 * as a live table.  Its options are parsed at the end of this file
 * (cli_cmd_demo).
 */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "conf/config.h"
#include "conf/demo.h"
#include "pipeline/daemon.h"
#include "cli.h"
#include "demo-cmd.h"
#include "railmon-config.h"
#include "cli/demo-say.h"
#include "pipeline/statserver.h"
#include "basic/clock.h"
#include "bus/sim-train.h"
#include "cli/demo-trdp.h"

/* The daemon's counters as cli/run-say.h takes them. */
static struct cli_run_counts demo_counts(const struct pl_daemon *d, struct pl_daemon_stats *st)
{
	pl_daemon_stats(d, st);
	return (struct cli_run_counts){ .records = st->records, .batches = st->batches, .first_seq = st->first_seq,
	                                .next_seq = st->next_seq, .ring_drops = st->ring_drops,
	                                .log_dropped = st->log_dropped, .bus_rx = st->bus_rx,
	                                .bus_errors = st->bus_errors };
}

/* The daemon's channels as the live table's rows (the same table as
   `railmon watch` draws from a daemon's socket), drawn on out. */
static void demo_table(struct pl_daemon *d, struct cli_demo_view *dv, FILE *out, bool live, double elapsed)
{
	const struct pl_channel *ch;
	struct pl_daemon_stats st;
	struct cli_run_counts c;
	size_t n = pl_daemon_channels(d, &ch);
	int64_t now = basic_realtime_ns();

	n = n < dv->max ? n : dv->max;
	for (size_t i = 0; i < n; i++) {
		struct pl_live lv = { 0 };
		const char *label;

		pl_daemon_live(d, i, &lv);
		label = !lv.t_ns ? NULL : lv.is_text ? lv.text : pl_daemon_value_label(d, i, lv.value);
		cli_demo_row(&ch[i], &lv, label, now, &dv->rows[i]);
	}
	c = demo_counts(d, &st);
	cli_demo_table(dv, n, &c, elapsed, live, out);
}

/* The daemon's stat socket, as `run` serves it: `railmon watch --data DIR`
   and `railmon stat --data DIR` work on a running demo too. */
static struct pl_stat_server *demo_stat(struct pl_daemon *d)
{
	struct pl_stat_server *srv = NULL;
	char sock[BUS_PATH_MAX + 16];
	int r;

	snprintf(sock, sizeof(sock), "%s/railmon.sock", pl_daemon_data_dir(d));
	r = pl_stat_server_start(d, sock, &srv);
	if (r < 0)
		fprintf(stderr, "railmon demo: warning: no stat socket %s: %s\n", sock, strerror(-r));
	else
		fprintf(stderr, "railmon demo: watch it from another terminal: railmon watch --data %s\n",
		        pl_daemon_data_dir(d));
	return srv;
}

/* The CAN trace the demo replays: its board's first CAN bus read from a
   trace, wherever that section stands (a --board may list a Modbus or
   TRDP bus first, whose configuration is another member of the union);
   NULL for none. */
static const char *demo_trace(const struct conf_board *cfg)
{
	for (size_t b = 0; b < cfg->nbuses; b++)
		if (cfg->buses[b].kind == BUS_KIND_CAN && cfg->buses[b].can.driver == BUS_CAN_TRACE)
			return cfg->buses[b].can.device;
	return NULL;
}

static int demo_start(const struct demo_opts *o, uint16_t port, const struct bus_sim_train *srv,
                      struct conf_board **cfg, struct pl_daemon **d, struct cli_demo_trdp **pub)
{
	struct pl_daemon_opts dopts = { .data_dir = o->data_dir };
	char err[CONF_ERR_MAX], warn[256];
	size_t sent, channels;
	uint16_t trdp_port;
	int r = conf_demo_load(o->board, port, cfg, err, sizeof(err));

	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		return r;
	}
	r = cli_demo_trdp_ports(*cfg, &trdp_port);
	if (r < 0) {
		fprintf(stderr, "railmon demo: no free UDP port on 127.0.0.1 for the TRDP consist: %s\n", strerror(-r));
		return r;
	}
	r = pl_daemon_new(*cfg, &dopts, d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		return r;
	}
	if (pl_daemon_uplink_dictionary(*d, &sent, &channels) == 0)
		cli_uplink_dictionary(stderr, sent, channels);
	fprintf(stderr, "railmon demo: simulated Modbus devices on 127.0.0.1:%u, %s%s, log in %s\n", port,
	        demo_trace(*cfg) ? "CAN trace " : "no CAN trace", demo_trace(*cfg) ? demo_trace(*cfg) : "",
	        pl_daemon_data_dir(*d));
	r = pl_daemon_start(*d, warn, sizeof(warn));
	if (r < 0) {
		fprintf(stderr, "railmon demo: cannot start: %s\n", strerror(-r));
		return r;
	}
	if (warn[0])
		fprintf(stderr, "railmon demo: warning: %s\n", warn);
	/* after the start: the daemon's socket is bound, nothing sent is lost */
	if (trdp_port) {
		r = cli_demo_trdp_start(srv, trdp_port, pub);
		if (r < 0) {
			fprintf(stderr, "railmon demo: cannot start the simulated TRDP consist: %s\n", strerror(-r));
			return r;
		}
		fprintf(stderr, "railmon demo: simulated TRDP consist (doors, HVAC, traction) publishing to "
		        "127.0.0.1:%u\n", trdp_port);
	}
	return 0;
}

int cli_demo_run(const struct demo_opts *opts, volatile sig_atomic_t *stop)
{
	struct demo_opts with_board = *opts, *o = &with_board;
	char board[PATH_MAX], err[PATH_MAX + 160];
	struct bus_sim_train *srv = NULL;
	struct cli_demo_trdp *pub = NULL;
	struct conf_board *cfg = NULL;
	struct pl_daemon *d = NULL;
	struct pl_stat_server *stat = NULL;
	struct cli_demo_view dv = { 0 };
	const struct pl_channel *ch;
	struct pl_daemon_stats st;
	struct cli_run_counts c;
	int64_t t0, next_draw = 0;
	uint16_t port;
	int r;

	r = conf_demo_board(opts->board, board, sizeof(board), err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		return r;
	}
	o->board = board;
	r = bus_sim_train_start(&srv, &port);
	if (r < 0) {
		fprintf(stderr, "railmon demo: cannot start the simulated Modbus devices: %s\n", strerror(-r));
		return r;
	}
	r = demo_start(o, port, srv, &cfg, &d, &pub);
	if (r >= 0)
		r = cli_demo_view_new(pl_daemon_channels(d, &ch), o->ansi, &dv);
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
	stat = pl_stat_server_free(stat);
	pub = cli_demo_trdp_free(pub);
	pl_daemon_stop(d);
	if (o->ansi && o->live)
		fputs("\n\n", stdout); /* below the live table */
	dv.view.color = false;
	demo_table(d, &dv, stdout, false, (double)(basic_mono_ns() - t0) / 1e9);
	c = demo_counts(d, &st);
	cli_demo_summary(stdout, cfg, &c, (double)(basic_mono_ns() - t0) / 1e9, pl_daemon_data_dir(d));
	r = 0;
out:
	cli_demo_trdp_free(pub);
	cli_demo_view_free(&dv);
	pl_daemon_free(d);
	conf_free(cfg);
	bus_sim_train_free(srv);
	return r;
}

/* ------------------------------------------------------- the options */

static const char demo_usage[] =
	"Usage: railmon demo [OPTIONS]\n"
	"A simulated train on this machine: a Modbus TCP traction converter, HVAC and\n"
	"door controller on loopback, the vehicle CAN bus replayed from a candump\n"
	"trace, and the consist's TRDP process data (doors, HVAC, traction) published\n"
	"on loopback, acquired, decoded, logged and shown live.\n\n"
	"  -t, --duration S   stop after S seconds (default: until Ctrl-C)\n"
	"  -d, --data DIR     log directory (default: a new directory under /tmp)\n"
	"  -b, --board FILE   demo board file (default: " RAILMON_PKGDATADIR "/demo.ini,\n"
	"                     or cli/demo.ini of the source tree for a build tree's\n"
	"                     binary; RAILMON_PKGDATADIR in the environment overrides)\n"
	"      --no-live      print the table only at the end\n"
	"  -h, --help         this text\n"
	"\n"
	"Examples:\n"
	"  railmon demo --duration 30\n"
	"  railmon demo --data demo-data --no-live   (then: railmon export -d demo-data)\n";

int cli_cmd_demo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "duration", required_argument, NULL, 't' }, { "data", required_argument, NULL, 'd' },
		{ "board", required_argument, NULL, 'b' }, { "no-live", no_argument, NULL, 1 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	struct demo_opts o = { .live = true };
	char tmpl[] = "/tmp/railmon-demo.XXXXXX";
	int c;

	while ((c = getopt_long(argc, argv, "t:d:b:h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (!cli_parse_seconds(optarg, &o.duration_s))
				return cli_fail("demo", "--duration: expected seconds, not '%s'", optarg);
			break;
		case 'd': o.data_dir = optarg; break;
		case 'b': o.board = optarg; break;
		case 1: o.live = false; break;
		case 'h': fputs(demo_usage, stdout); return 0;
		default: return cli_see_help("demo");
		}
	}
	if (optind < argc)
		return cli_fail("demo", "unexpected argument '%s'", argv[optind]);
	if (!o.data_dir) {
		if (!mkdtemp(tmpl))
			return cli_fail("demo", "mkdtemp: %s", strerror(errno));
		o.data_dir = tmpl;
	}
	o.ansi = o.live && isatty(STDOUT_FILENO);
	cli_install_signals();
	if (cli_demo_run(&o, &cli_stop_requested) < 0) {
		/* the directory made above, if nothing went into it (no demo board) */
		if (o.data_dir == tmpl)
			rmdir(tmpl);
		return 1;
	}
	return 0;
}
