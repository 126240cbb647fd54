/* SPDX-License-Identifier: MIT */
/*
 * db-say.c - `railmon db`'s answers (db-say.h): the migrations applied, the
 * schema's version, the partitions pruned.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "basic/clock.h"
#include "ground/db.h"
#include "cli/db-say.h"

static int db_migrate(grd_db_t *db, bool init, FILE *out, FILE *err)
{
	int n = grd_db_migrate(db, init);

	if (n == -EEXIST) {
		fprintf(err, "railmon db: %s: already initialised (use `railmon db migrate` to update it)\n",
		        grd_db_error(db));
		return 1;
	}
	if (n == -EPROTO) {
		fprintf(err, "railmon db: %s, newer than this railmon's (%zu): use a newer railmon\n",
		        grd_db_error(db), grd_migrations_n);
		return 1;
	}
	if (n < 0) {
		fprintf(err, "railmon db: %s\n", grd_db_error(db));
		return 1;
	}
	if (n == 0)
		fprintf(out, "schema at version %zu already: nothing to do\n", grd_migrations_n);
	for (size_t i = grd_migrations_n - (size_t)n; i < grd_migrations_n; i++)
		fprintf(out, "applied %04d-%s\n", grd_migrations[i].version, grd_migrations[i].name);
	return 0;
}

static int db_status(grd_db_t *db, FILE *out, FILE *err)
{
	int v, r = grd_db_version(db, &v);

	if (r < 0) {
		fprintf(err, "railmon db: %s\n", grd_db_error(db));
		return 1;
	}
	fprintf(out, "schema version %d, this railmon's %zu: %s\n", v, grd_migrations_n,
	        v == 0 ? "empty, run `railmon db init`" : (size_t)v < grd_migrations_n ? "run `railmon db migrate`" :
	        (size_t)v > grd_migrations_n ? "newer than this railmon" : "current");
	return (size_t)v == grd_migrations_n ? 0 : 1;
}

static int db_prune(grd_db_t *db, uint64_t older_s, FILE *out, FILE *err)
{
	int64_t now = basic_realtime_ns(), cutoff = now - (int64_t)older_s * 1000000000;
	int future = 0, n = grd_db_prune(db, cutoff, now + GRD_DB_MAX_SKEW_NS, &future);

	if (n < 0) {
		fprintf(err, "railmon db: prune: %s\n", grd_db_error(db));
		return 1;
	}
	fprintf(out, "dropped %d day partitions older than %" PRIu64 " s", n - future, older_s);
	if (future)
		fprintf(out, " and %d of days after tomorrow (UTC: ahead of recv's --max-skew of 1 day)", future);
	fputc('\n', out);
	return 0;
}

/* A fresh PostgreSQL has neither railmon's role nor its database: the
   command that makes the missing one (docs/ground.md "PostgreSQL"
   has both), after libpq's own words. */
static void db_connect_hint(const char *msg, FILE *err)
{
	char name[64];
	const char *p;

	if ((p = strstr(msg, "role \"")) && strstr(p, "\" does not exist") &&
	    sscanf(p, "role \"%63[^\"]\"", name) == 1)
		fprintf(err, "railmon db: the role is made once, as PostgreSQL's superuser: "
		        "sudo -u postgres createuser %s\n", name);
	else if ((p = strstr(msg, "database \"")) && strstr(p, "\" does not exist") &&
	         sscanf(p, "database \"%63[^\"]\"", name) == 1)
		fprintf(err, "railmon db: the database is made once, as PostgreSQL's superuser: "
		        "sudo -u postgres createdb -O ROLE %s (ROLE: the user in --db)\n", name);
}

int cli_db_run(const char *url, enum cli_db_cmd cmd, uint64_t older_s, FILE *out, FILE *err)
{
	struct grd_db_cfg cfg = { .url = url };
	grd_db_t *db;
	int rc = grd_db_new(&cfg, &db);

	if (rc < 0) {
		fprintf(err, "railmon db: %s\n", rc == -ENOTSUP ? GRD_DB_NOT_BUILT : "out of memory");
		return 1;
	}
	if (grd_db_connect(db) < 0) {
		fprintf(err, "railmon db: %s\n", grd_db_error(db));
		db_connect_hint(grd_db_error(db), err);
		grd_db_free(db);
		return 1;
	}
	if (cmd == CLI_DB_INIT || cmd == CLI_DB_MIGRATE)
		rc = db_migrate(db, cmd == CLI_DB_INIT, out, err);
	else if (cmd == CLI_DB_STATUS)
		rc = db_status(db, out, err);
	else
		rc = db_prune(db, older_s, out, err);
	grd_db_free(db);
	return rc;
}
