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
	char *buf;                /* one table's COPY rows of one Batch */
	size_t used, cap;
};

/* Keep what failed and libpq's message; count it. */
void grd_db_fail(grd_db_t *db, const char *what, const char *msg);
/* Run sql: 0, -EIO, or -ECONNREFUSED if the connection is lost. */
int grd_db_exec(grd_db_t *db, const char *what, const char *sql);
/* Forget what a new connection (or a prune) may have changed: the
   partitions known, the prepared statements. */
void grd_db_forget(grd_db_t *db);
/* One try at b's transaction: 0 with *ret_outcome, or -errno (retried). */
int grd_ingest(grd_db_t *db, const rec_batch_t *b, const void *payload, size_t len,
               enum grd_db_outcome *ret_outcome);
/* The prepared statements of this connection: 0 or -EIO. */
int grd_db_prepare(grd_db_t *db);
/* The vehicle's id, made the first time (cached): 0 or -EIO. */
int grd_db_vehicle_id(grd_db_t *db, const char *name, int *ret_id);
/* The 1 s and 1 min rollups of b's samples, in the open transaction: 0,
   -ENOMEM, -EIO. */
int grd_rollup(grd_db_t *db, int vid, const rec_batch_t *b, uint32_t count);
