/* SPDX-License-Identifier: MIT */
/* commands.c - demo and run: option parsing; the work is demo.c's and run.c's. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "demo-cmd.h"
#include "railmon-config.h"

/* ------------------------------------------------------------------ demo */

static const char demo_usage[] =
	"Usage: railmon demo [OPTIONS]\n"
	"A simulated train on this machine: a Modbus TCP traction converter, HVAC and\n"
	"door controller on loopback, and the vehicle CAN bus replayed from a candump\n"
	"trace, acquired, decoded, logged and shown live.\n\n"
	"  -t, --duration S   stop after S seconds (default: until Ctrl-C)\n"
	"  -d, --data DIR     log directory (default: a new directory under /tmp)\n"
	"  -b, --board FILE   demo board file (default: " RAILMON_PKGDATADIR "/demo.ini,\n"
	"                     or cli/demo.ini of the source tree for a build tree's\n"
	"                     binary; RAILMON_PKGDATADIR in the environment overrides)\n"
	"      --no-live      print the table only at the end\n"
	"  -h, --help         this text\n";

int board_cmd_demo(int argc, char **argv)
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
	board_install_signals();
	if (board_demo_run(&o, &board_stop_requested) < 0) {
		/* the directory made above, if nothing went into it (no demo board) */
		if (o.data_dir == tmpl)
			rmdir(tmpl);
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------- run */

static const char run_usage[] =
	"Usage: railmon run --board FILE [OPTIONS]\n"
	"Acquire every bus of the board file, log to flash, until SIGTERM or SIGINT.\n\n"
	"  -b, --board FILE   board file (required)\n"
	"  -d, --data DIR     log directory (overrides [storage] dir)\n"
	"  -t, --duration S   stop after S seconds\n"
	"  -h, --help         this text\n";

int board_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "duration", required_argument, NULL, 't' }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *board = NULL, *data = NULL;
	struct conf_board *cfg;
	double duration = 0;
	int c, r;

	/* At once, not when the daemon starts: a SIGTERM while the board and
	   its DBCs load is then a clean stop right after the start. */
	board_install_signals();
	while ((c = getopt_long(argc, argv, "b:d:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 't':
			if (!cli_parse_seconds(optarg, &duration))
				return cli_fail("run", "--duration: expected seconds, not '%s'", optarg);
			break;
		case 'h': fputs(run_usage, stdout); return 0;
		default: return cli_see_help("run");
		}
	}
	if (optind < argc)
		return cli_fail("run", "unexpected argument '%s'", argv[optind]);
	if ((r = cli_load_board("run", board, &cfg)) != 0)
		return r;
	r = board_run_daemon("run", cfg, &(struct pl_daemon_opts){ .data_dir = data, .lock_memory = true },
	                     duration, false);
	conf_free(cfg);
	return r;
}
