/* SPDX-License-Identifier: MIT */
/*
 * db-cmd.c - `railmon db init|migrate|status|prune`: the ground database's
 * schema (ground/db.h applies the migrations) and its retention by day.
 * This file: the options; the answers are cli/db-say.c.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "basic/parse.h"
#include "cli/db-say.h"

static const char db_usage[] =
	"Usage: railmon db COMMAND [--db URL] [OPTIONS]\n"
	"The ground station's PostgreSQL database (docs/ground-schema.md).\n\n"
	"Commands:\n"
	"  init                 create the schema in an empty database\n"
	"  migrate              apply the migrations the database lacks (all in one transaction)\n"
	"  status               the schema's version against this railmon's\n"
	"  prune --older-than D drop the day partitions of samples, CAN frames and events\n"
	"                       older than D (\"90d\", \"12h\"); the Batch ledger is kept\n\n"
	"      --db URL         libpq connection: postgresql://user@host/db or \"host=... dbname=...\"\n"
	"                       (default: the environment, RAILMON_DB)\n"
	"      --older-than D   for prune\n"
	"  -h, --help           this text\n"
	"\n"
	"Examples:\n"
	"  railmon db init --db postgresql://railmon@dbhost/railmon\n"
	"  railmon db prune --older-than 90d --db postgresql://railmon@dbhost/railmon\n";

struct db_opts {
	const char *cmd, *url;
	uint64_t older_s;
	bool older;
};

static int db_parse(int argc, char **argv, struct db_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 2 }, { "older-than", required_argument, NULL, 1 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 2: o->url = optarg; break;
		case 1:
			if (basic_parse_duration(optarg, &o->older_s) < 0 || !o->older_s)
				return cli_fail("db", "--older-than: expected a duration like 90d or 12h, not '%s'", optarg);
			o->older = true;
			break;
		case 'h': fputs(db_usage, stdout); return 1;
		default: return cli_see_help("db");
		}
	}
	if (optind >= argc)
		return cli_fail("db", "a command is required: init, migrate, status or prune");
	o->cmd = argv[optind++];
	if (optind < argc && !o->url)
		o->url = argv[optind++];
	if (optind < argc)
		return cli_fail("db", "unexpected argument '%s'", argv[optind]);
	if (!o->url)
		o->url = getenv("RAILMON_DB");
	if (!o->url || !*o->url)
		return cli_fail("db", "--db URL is required (or RAILMON_DB)");
	if (strcmp(o->cmd, "init") && strcmp(o->cmd, "migrate") && strcmp(o->cmd, "status") && strcmp(o->cmd, "prune"))
		return cli_fail("db", "unknown command '%s': init, migrate, status or prune", o->cmd);
	if (!strcmp(o->cmd, "prune") != o->older)
		return cli_fail("db", o->older ? "--older-than is for prune" : "prune needs --older-than D (e.g. 90d)");
	return 0;
}

int cli_cmd_db(int argc, char **argv)
{
	struct db_opts o = { 0 };
	int rc = db_parse(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : rc;
	return cli_db_run(o.url, !strcmp(o.cmd, "init") ? CLI_DB_INIT : !strcmp(o.cmd, "migrate") ? CLI_DB_MIGRATE :
	                  !strcmp(o.cmd, "status") ? CLI_DB_STATUS : CLI_DB_PRUNE, o.older_s, stdout, stderr);
}
