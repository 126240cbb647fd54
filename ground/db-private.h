/* SPDX-License-Identifier: MIT */
/*
 * db-private.h - what ground/db.c (connection, schema, retry) and
 * ground/ingest.c (one Batch's transaction) share.
 */
#pragma once

#include <pthread.h>
#include <libpq-fe.h>

#include "db.h"

#define GRD_DAYS_KNOWN 64       /* day partitions remembered as existing */
#define GRD_VEHICLE_NAME_MAX 64 /* longer vehicle ids are not cached (looked up each time) */

struct grd_vehicle_id {
	char name[GRD_VEHICLE_NAME_MAX];
	int id;
};

/* A Batch decoded and waiting for its group's transaction. */
struct grd_pending {
	rec_batch_t *b;
	void *payload;            /* as received: kept whole if it is a conflict or refused */
	size_t len;
	int vid;
	enum grd_db_outcome out;
};

/* A growing byte buffer (one table's COPY rows of a group). */
struct grd_buf {
	char *p;
	size_t used, cap;
};

struct grd_point;

struct grd_db {
	struct grd_db_cfg cfg;    /* url is ours */
	PGconn *conn;
	bool prepared;            /* this connection has the statements */
	char error[256];
	pthread_mutex_t lock;     /* st, for grd_db_stats() from another thread */
	struct grd_db_stats st;
	int64_t days[GRD_DAYS_KNOWN]; /* days (since 1970, UTC) whose partitions exist */
	size_t ndays, day_next;
	struct grd_vehicle_id *veh; /* vehicle ids met: bounded by the receiver's vehicle cap */
	size_t nveh, capveh;
	char *buf;                /* the rollups' COPY rows of one group */
	size_t used, cap;
	char sqlstate[6];         /* of the last failure, "" if none (connection, client side) */
	struct grd_pending *pend; /* the group: at most cfg.group_max Batches */
	size_t npend;
	int64_t pend_since_ns;    /* CLOCK_MONOTONIC of its first Batch */
	struct grd_buf copy[4];   /* samples, can_frames, events, texts: COPY BINARY rows of a group */
	struct grd_point *pts;    /* the group's samples for the rollups */
	size_t npts, cappts;
};

/* Keep what failed and libpq's message; count it (no SQLSTATE). */
void grd_db_fail(grd_db_t *db, const char *what, const char *msg);
/* The same for a failed result, keeping its SQLSTATE (res may be NULL). */
void grd_db_fail_res(grd_db_t *db, const char *what, const PGresult *res);
/* Did the last failure come from the data or the schema (SQLSTATE class
   22 data, 23 constraint, 42 syntax or permission, ...), so that trying
   the same again fails the same way?  False for a lost connection and the
   classes that pass (08 connection, 40 rollback, 53 resources, 55 object
   state, 57 operator, 58 system). */
bool grd_db_permanent(const grd_db_t *db);
/* Run sql: 0, -EIO, or -ECONNREFUSED if the connection is lost. */
int grd_db_exec(grd_db_t *db, const char *what, const char *sql);
/* Forget what a new connection (or a prune) may have changed: the
   partitions known, the prepared statements. */
void grd_db_forget(grd_db_t *db);
/* One try at the transaction of the group p[0..n): 0 with each p[i].out,
   or -errno (rolled back by the caller; grd_db_permanent() tells whether
   to retry). */
int grd_ingest(grd_db_t *db, struct grd_pending *p, size_t n);
/* One try at storing b's channel dictionary alone: 0 or -errno. */
int grd_ingest_dictionary(grd_db_t *db, const rec_batch_t *b);
/* Record p as refused by the database (table refused) with the SQLSTATE
   and message it failed with, in a transaction of its own: 0 or -errno. */
int grd_ingest_refuse(grd_db_t *db, const struct grd_pending *p, const char *sqlstate, const char *reason);
/* The prepared statements of this connection: 0 or -EIO. */
int grd_db_prepare(grd_db_t *db);
/* The vehicle's id, made the first time (cached): 0 or -EIO. */
int grd_db_vehicle_id(grd_db_t *db, const char *name, int *ret_id);
/* Gather the samples of b (vehicle vid) for the group's rollups: 0 or
   -ENOMEM. */
int grd_rollup_add(grd_db_t *db, int vid, const rec_batch_t *b, uint32_t count);
/* The 1 s and 1 min rollups of the samples gathered, in the open
   transaction, then forget them: 0, -ENOMEM, -EIO. */
int grd_rollup(grd_db_t *db);
/* Well-formed UTF-8 (what the database takes as text): ground/ingest.c. */
bool grd_utf8_ok(const char *s);
/* ch's value table as a PostgreSQL text[] literal in *ret_literal (to
   free), or NULL for none: only the entries "NUMBER LABEL" whose label is
   well-formed UTF-8 (the others are left out and counted in bad_names).
   0 or -ENOMEM (ground/health.c). */
struct rec_channel;
int grd_value_table(grd_db_t *db, const struct rec_channel *ch, char **ret_literal);
/* The Health entries of b (vehicle vid) into the health table, in the
   open transaction: 0 or -EIO (ground/health.c). */
int grd_health_store(grd_db_t *db, int vid, const rec_batch_t *b);
