/* SPDX-License-Identifier: MIT */
/* check-cmd.c - `railmon check`: validate a board file and print the acquisition
   plan; the options and the board's key here, the plan cli/check-plan.h's. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "conf/config.h"
#include "conf/config-schema.h"
#include "pipeline/evidence.h"
#include "cli/check-plan.h"

static const char check_usage[] =
	"Usage: railmon check --board FILE [--data DIR]\n"
	"       railmon check --keys [--markdown]\n"
	"Validate a board file and the DBC files it names; print the acquisition plan.\n"
	"The log's segment_size and retention_size are checked against the filesystem\n"
	"holding the log directory (--data DIR, else [storage] dir), as `run` does.\n"
	"--keys prints every board-file key instead (docs/board-keys.md is --markdown).\n"
	"\n"
	"Examples:\n"
	"  railmon check --board /etc/railmon/board.ini\n"
	"  railmon check --keys --markdown > board-keys.md\n";

/* The board's key: its public half, or why it cannot be used. */
static void check_key(const struct conf_board *cfg, struct cli_check_key *key, char *err, size_t errlen)
{
	uint8_t secret[EVD_SECRET_LEN];

	key->r = pl_evidence_key(cfg, secret, err, errlen);
	key->err = err;
	if (key->r > 0)
		evd_key_public_of(secret, key->public_key);
	explicit_bzero(secret, sizeof(secret));
}

int cli_cmd_check(int argc, char **argv)
{
	static const struct option opts[] = { { "board", required_argument, NULL, 'b' },
		                              { "data", required_argument, NULL, 'd' },
		                              { "keys", no_argument, NULL, 'k' }, { "markdown", no_argument, NULL, 'm' },
		                              { "help", no_argument, NULL, 'h' }, { 0 } };
	const char *board = NULL, *data = NULL;
	bool keys = false, markdown = false;
	struct cli_check_key key;
	struct conf_board *cfg;
	char err[CONF_ERR_MAX];
	int c, r;

	while ((c = getopt_long(argc, argv, "b:d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b': board = optarg; break;
		case 'd': data = optarg; break;
		case 'k': keys = true; break;
		case 'm': markdown = true; break;
		case 'h': fputs(check_usage, stdout); return 0;
		default: return cli_see_help("check");
		}
	}
	if (markdown && !keys)
		return cli_fail("check", "--markdown goes with --keys");
	if (keys)
		return conf_print_keys(stdout, markdown) < 0;
	if (!board && optind < argc)
		board = argv[optind++];
	if ((r = cli_load_board("check", board, &cfg)) != 0)
		return r;
	check_key(cfg, &key, err, sizeof(err));
	r = cli_check_board(stdout, stderr, cfg, data, &key);
	conf_free(cfg);
	return r;
}
