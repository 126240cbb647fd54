/* SPDX-License-Identifier: MIT */
/* verify-cmd.c - `railmon verify`: a log against its Seals (docs/evidence.md);
   the options here, the check and what it says are cli/verify-say.h's. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "evidence/evd.h"
#include "cli/verify-say.h"

static const char verify_usage[] =
	"Usage: railmon verify --data DIR --pubkey FILE [--whole]\n"
	"       railmon verify --data DIR --unsigned [--whole]\n"
	"Check a log (a vehicle's, or a ground log of `recv --log`) against its Seals: every\n"
	"record in a sealed range is as the vehicle wrote it, none removed, added or\n"
	"reordered, and every Seal is signed by the key (docs/evidence.md).\n"
	"The log's seqs are printed as ranges in seq order: only 'verified: seq A..B' is proven;\n"
	"every other range says why not (unsealed tail, between chains, before the first Seal,\n"
	"damaged, CHANGED, unproven). Times come from sealed content only. Exit 0: no problem\n"
	"found. Exit 1: each problem names its segment file, offset and seq.\n\n"
	"  -d, --data DIR      the log directory\n"
	"      --pubkey FILE   the vehicle's public key (railmon keygen's FILE.pub)\n"
	"      --unsigned      a board without a key: check the chain only (not authenticated)\n"
	"      --whole         the log must start at seq 1 with a chain (nothing deleted by\n"
	"                      retention, nor up to a chain restart): otherwise a problem\n"
	"  -q, --quiet         no progress line (shown on a terminal)\n"
	"  -h, --help          this text\n"
	"\n"
	"Examples:\n"
	"  railmon verify --data /var/lib/railmon --pubkey vehicle.key.pub\n";

int cli_cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = { { "data", required_argument, NULL, 'd' },
		                              { "pubkey", required_argument, NULL, 1 },
		                              { "unsigned", no_argument, NULL, 'u' }, { "whole", no_argument, NULL, 'w' },
		                              { "quiet", no_argument, NULL, 'q' },
		                              { "help", no_argument, NULL, 'h' }, { 0 } };
	struct evd_verify_cfg cfg = { 0 };
	const char *dir = NULL, *key = NULL;
	bool unsig = false, quiet = false;
	int c;

	while ((c = getopt_long(argc, argv, "d:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dir = optarg; break;
		case 1: key = optarg; break;
		case 'u': unsig = true; break;
		case 'w': cfg.whole = true; break;
		case 'q': quiet = true; break;
		case 'h': fputs(verify_usage, stdout); return 0;
		default: return cli_see_help("verify");
		}
	}
	if (optind < argc)
		return cli_fail("verify", "unexpected argument '%s'", argv[optind]);
	if (!dir)
		return cli_fail("verify", "--data DIR is required");
	if (!key == !unsig)
		return cli_fail("verify", "give --pubkey FILE (a signed log) or --unsigned (a board without a key)");
	return cli_verify_run(stdout, stderr, dir, key, &cfg, quiet);
}
