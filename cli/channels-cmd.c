/* SPDX-License-Identifier: MIT */
/*
 * channels-cmd.c - `railmon channels --board FILE | --data DIR`: every
 * channel with its id, name, unit, bus, source, declared range and value
 * table (like `cantools dump`), from a board file (what `run` would
 * record) or from the dictionary a log carries (what was recorded); the
 * options and the board file here, the listing is report/log-channels.h's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conf/config.h"
#include "report/log-channels.h"

static const char channels_usage[] =
	"Usage: railmon channels --board FILE | --data DIR [--json]\n"
	"List every channel: id, bus, name, unit, range, source and value table.\n\n"
	"  -b, --board FILE   the channels a board file defines (its DBC files too)\n"
	"  -d, --data DIR     the channels a log's dictionary names\n"
	"      --json         one JSON object per channel instead of the table\n"
	"  -h, --help         this text\n"
	"\n"
	"Examples:\n"
	"  railmon channels --board /etc/railmon/board.ini\n"
	"  railmon channels -d railmon-data --json\n";

static int from_board(const char *path, bool json)
{
	struct conf_board *cfg;
	int r = cli_load_board("channels", path, &cfg);

	if (r)
		return r;
	r = rpt_channels_of_board(stdout, stderr, cfg, path, json, cli_term_width(stdout));
	conf_free(cfg);
	return r;
}

int cli_cmd_channels(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "board", required_argument, NULL, 'b' }, { "data", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 1 }, { "help", no_argument, NULL, 'h' }, { 0 }
	};
	const char *board = NULL, *data = NULL;
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 1: json = true; break;
		case 'h': fputs(channels_usage, stdout); return 0;
		default: return cli_see_help("channels");
		}
	}
	if (optind < argc)
		return cli_fail("channels", "unexpected argument '%s'", argv[optind]);
	if (!board == !data)
		return cli_fail("channels", "give --board FILE or --data DIR (one of them)");
	return board ? from_board(board, json) : rpt_channels_of_log(stdout, stderr, data, json, cli_term_width(stdout));
}
