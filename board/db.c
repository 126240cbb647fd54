/* SPDX-License-Identifier: MIT */
/*
 * db.c - `railmon db init|migrate|status|prune`: the ground database's
 * schema (ground/db.h applies the migrations) and its retention by day.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "basic/clock.h"
#include "basic/parse.h"
#include "ground/db.h"

static const char db_usage[] =
	"Usage: railmon db COMMAND [--db URL] [OPTIONS]\n"
	"The ground station's PostgreSQL database (docs/ground-schema.md).\n\n"
	"Commands:\n"
	"  init                 create the schema in an empty database\n"
	"  migrate              apply the migrations the database lacks (all in one transaction)\n"
	"  status               the schema's version against this railmon's\n"
	"  prune --older-than D drop the day partitions of samples, CAN frames and events\n"
	"                       older than D (\"90d\", \"12h\"); the Batch ledger is kept\n\n"
	"  -d, --db URL         libpq connection: postgresql://user@host/db or \"host=... dbname=...\"\n"
	"                       (default: the environment, RAILMON_DB)\n"
	"      --older-than D   for prune\n"
	"  -h, --help           this text\n";

struct db_opts {
	const char *cmd, *url;
	uint64_t older_s;
	bool older;
};

static int db_parse(int argc, char **argv, struct db_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' }, { "older-than", required_argument, NULL, 1 },
		{ "help", no_argument, NULL, 'h' }, { 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->url = optarg; break;
		case 1:
			if (basic_parse_duration(optarg, &o->older_s) < 0 || !o->older_s)
				return cli_fail("db", "--older-than: expected a duration like 90d or 12h, not '%s'", optarg);
			o->older = true;
			break;
		case 'h': fputs(db_usage, stdout); return 1;
		default: fputs(db_usage, stderr); return 2;
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

static int db_migrate(grd_db_t *db, bool init)
{
	int n = grd_db_migrate(db, init);

	if (n == -EEXIST) {
		fprintf(stderr, "railmon db: %s: already initialised (use `railmon db migrate` to update it)\n",
		        grd_db_error(db));
		return 1;
	}
	if (n == -EPROTO) {
		fprintf(stderr, "railmon db: %s, newer than this railmon's (%zu): use a newer railmon\n",
		        grd_db_error(db), grd_migrations_n);
		return 1;
	}
	if (n < 0) {
		fprintf(stderr, "railmon db: %s\n", grd_db_error(db));
		return 1;
	}
	if (n == 0)
		printf("schema at version %zu already: nothing to do\n", grd_migrations_n);
	for (size_t i = grd_migrations_n - (size_t)n; i < grd_migrations_n; i++)
		printf("applied %04d-%s\n", grd_migrations[i].version, grd_migrations[i].name);
	return 0;
}

static int db_status(grd_db_t *db)
{
	int v, r = grd_db_version(db, &v);

	if (r < 0) {
		fprintf(stderr, "railmon db: %s\n", grd_db_error(db));
		return 1;
	}
	printf("schema version %d, this railmon's %zu: %s\n", v, grd_migrations_n,
	       v == 0 ? "empty, run `railmon db init`" : (size_t)v < grd_migrations_n ? "run `railmon db migrate`" :
	       (size_t)v > grd_migrations_n ? "newer than this railmon" : "current");
	return (size_t)v == grd_migrations_n ? 0 : 1;
}

static int db_prune(grd_db_t *db, uint64_t older_s)
{
	int64_t cutoff = basic_realtime_ns() - (int64_t)older_s * 1000000000;
	int n = grd_db_prune(db, cutoff);

	if (n < 0) {
		fprintf(stderr, "railmon db: prune: %s\n", grd_db_error(db));
		return 1;
	}
	printf("dropped %d day partitions older than %" PRIu64 " s\n", n, older_s);
	return 0;
}

int board_cmd_db(int argc, char **argv)
{
	struct db_opts o = { 0 };
	struct grd_db_cfg cfg = { 0 };
	grd_db_t *db;
	int rc = db_parse(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : rc;
	cfg.url = o.url;
	rc = grd_db_new(&cfg, &db);
	if (rc < 0) {
		fprintf(stderr, "railmon db: %s\n", rc == -ENOTSUP ? GRD_DB_NOT_BUILT : "out of memory");
		return 1;
	}
	if (grd_db_connect(db) < 0) {
		fprintf(stderr, "railmon db: %s\n", grd_db_error(db));
		grd_db_free(db);
		return 1;
	}
	if (!strcmp(o.cmd, "init") || !strcmp(o.cmd, "migrate"))
		rc = db_migrate(db, !strcmp(o.cmd, "init"));
	else if (!strcmp(o.cmd, "status"))
		rc = db_status(db);
	else
		rc = db_prune(db, o.older_s);
	grd_db_free(db);
	return rc;
}
