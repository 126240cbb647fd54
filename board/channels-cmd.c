/* SPDX-License-Identifier: MIT */
/*
 * channels-cmd.c - `railmon channels --board FILE | --data DIR`: every
 * channel with its id, name, unit, bus, source, declared range and value
 * table (like `cantools dump`), from a board file (what `run` would
 * record) or from the dictionary a log carries (what was recorded); the
 * listing is report/channels.h's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/channels.h"
#include "cli.h"
#include "conf/config.h"
#include "record/channels.h"
#include "report/channels.h"

static const char channels_usage[] =
	"Usage: railmon channels --board FILE | --data DIR [--json]\n"
	"List every channel: id, bus, name, unit, range, source and value table.\n\n"
	"  -b, --board FILE   the channels a board file defines (its DBC files too)\n"
	"  -d, --data DIR     the channels a log's dictionary names\n"
	"      --json         one JSON object per channel instead of the table\n"
	"  -h, --help         this text\n";

static int from_board(const char *path, bool json)
{
	struct conf_board *cfg;
	pl_channels_t *ch;
	const struct rec_channel **list;
	const struct rec_channel *dict;
	char err[CONF_ERR_MAX];
	size_t n;
	int r = cli_load_board("channels", path, &cfg);

	if (r)
		return r;
	if (pl_channels_new(cfg, &ch, err, sizeof(err)) < 0) {
		fprintf(stderr, "railmon channels: %s\n", err);
		conf_free(cfg);
		return 1;
	}
	n = pl_channels_list(ch, NULL);
	dict = pl_channels_dictionary(ch);
	list = calloc(n ? n : 1, sizeof(*list));
	if (list) {
		for (size_t i = 0; i < n; i++)
			list[i] = &dict[i];
		rpt_channels_print(stdout, list, n, json);
		fprintf(stderr, "railmon channels: %zu channels in %s\n", n, path);
	}
	free(list);
	pl_channels_free(ch);
	conf_free(cfg);
	return list ? 0 : cli_fail("channels", "out of memory");
}

static int from_log(const char *dir, bool json)
{
	rec_channels_t *map;
	const struct rec_channel **list;
	int n, r;

	if (rec_channels_new(&map) < 0)
		return cli_fail("channels", "out of memory");
	r = rpt_channels_learn_log(dir, map);
	if (r < 0) {
		rec_channels_free(map);
		fprintf(stderr, "railmon channels: %s: %s\n", dir, strerror(-r));
		return 1;
	}
	n = rec_channels_sorted(map, &list);
	if (n >= 0)
		rpt_channels_print(stdout, list, (size_t)n, json);
	if (n == 0)
		fprintf(stderr, "railmon channels: %s: no channel dictionary in the log\n", dir);
	else if (n > 0)
		fprintf(stderr, "railmon channels: %d channels in the dictionary of %s\n", n, dir);
	free(list);
	rec_channels_free(map);
	return n > 0 ? 0 : 1;
}

int board_cmd_channels(int argc, char **argv)
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
		default: fputs(channels_usage, stderr); return 2;
		}
	}
	if (optind < argc)
		return cli_fail("channels", "unexpected argument '%s'", argv[optind]);
	if (!board == !data)
		return cli_fail("channels", "give --board FILE or --data DIR (one of them)");
	return board ? from_board(board, json) : from_log(data, json);
}
