/* SPDX-License-Identifier: MIT */
/*
 * hold-cmd.c - `railmon hold list|release`: the event holds of a log (the
 * windows retention keeps around an incident, storage/hold.c).  Options
 * and release's words only: the list is cli/hold-list.c's, the holds file
 * and what each hold keeps are storage's.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "conf/config.h"
#include "pipeline/logdir.h"
#include "cli/hold-list.h"
#include "storage/stor.h"

static const char hold_usage[] =
	"Usage: railmon hold list [--board FILE | --data DIR]\n"
	"       railmon hold release ID [--board FILE | --data DIR]\n"
	"The event holds of a log: the windows [t - pre, t + post] a [trigger] section held\n"
	"around an incident, which retention never deletes until released or expired.\n"
	"list: id, trigger, when it fired, the held window, the records (exact seq ranges\n"
	"on disk), segments and bytes it keeps now, when it expires, and 'gone:' lines for\n"
	"what of the window is no longer on disk.  release ID: end hold ID now (retention may then\n"
	"delete its data, oldest first, when the log needs the space).\n\n"
	"  -b, --board FILE   the board file (its [storage] dir)\n"
	"  -d, --data DIR     the log directory (default: the board's, else railmon-data)\n"
	"  -h, --help         this text\n"
	"\n"
	"Examples:\n"
	"  railmon hold list --board /etc/railmon/board.ini\n"
	"  railmon hold release 3 --data /var/lib/railmon\n";

static int hold_release(const char *dir, const char *arg)
{
	unsigned line = 0;
	char *end;
	/* strtoull: an unsigned long is 32 bits on armhf */
	unsigned long long id = strtoull(arg, &end, 10);
	int r;

	if (*end || end == arg || !id || id > UINT32_MAX || arg[0] == '-')
		return cli_fail("hold", "release: '%s' is not a hold id (see `railmon hold list`)", arg);
	r = stor_hold_release(dir, (uint32_t)id, &line);
	if (r == -EBADMSG)
		return cli_hold_damaged(stderr, dir, line);
	if (r == -ENOENT) {
		fprintf(stderr, "railmon hold: %s: no hold %llu (released or expired already?)\n", dir, id);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "railmon hold: %s: %s\n", dir, strerror(-r));
		return 1;
	}
	printf("hold %llu released: retention may delete its data when the log needs the space\n", id);
	return 0;
}

int cli_cmd_hold(int argc, char **argv)
{
	static const struct option opts[] = { { "board", required_argument, NULL, 'b' },
		                              { "data", required_argument, NULL, 'd' },
		                              { "help", no_argument, NULL, 'h' }, { 0 } };
	const char *board = NULL, *data = NULL, *verb;
	struct conf_board *cfg = NULL;
	char dir[4096];
	int c, r;

	while ((c = getopt_long(argc, argv, "b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 'h': fputs(hold_usage, stdout); return 0;
		default: return cli_see_help("hold");
		}
	}
	if (optind >= argc)
		return cli_fail("hold", "list or release ID?");
	verb = argv[optind++];
	if (board && cli_load_board("hold", board, &cfg) != 0)
		return 1;
	snprintf(dir, sizeof(dir), "%s", pl_data_dir(cfg, data));
	conf_free(cfg);
	if (!strcmp(verb, "list") && optind == argc)
		r = cli_hold_list(dir, stdout, stderr);
	else if (!strcmp(verb, "release") && optind + 1 == argc)
		r = hold_release(dir, argv[optind]);
	else
		r = cli_fail("hold", "usage: hold list | hold release ID");
	return r;
}
