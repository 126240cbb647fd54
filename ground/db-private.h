/* SPDX-License-Identifier: MIT */
/*
 * db-private.h - what the files of the database side share: conn.c (the
 * connection, statements, pipeline), schema.c, commit.c (groups, retries,
 * committers), ingest.c (a group's transaction), copy.c, dictionary.c,
 * health-table.c, rollup.c, export.c and repair.c.
 */
#pragma once

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libpq-fe.h>

#include "db.h"
#include "acquisition/acq-item.h"
#include "basic/byteorder.h"

#define GRD_DAYS_KNOWN 64       /* day partitions remembered as existing */
#define GRD_VEHICLE_NAME_MAX 64
#define GRD_DB_WORKERS_MAX 4     /* committers at most (cfg.workers) */ /* longer vehicle ids are not cached (looked up each time) */

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
	uint64_t digest;          /* of its records (record/digest.h, REC_DIGEST_SEED) */
	int64_t lo, hi;           /* its first and last record times (ns) */
	int door;                 /* 1 + enum grd_db_door when refused at the door, 0 */
	char why[400];            /* that refusal in words */
	/* A whole Batch over a reduced Batch's ledger row (out
	   GRD_DB_COMMITTED): the row's t_first in s (the day of its on_board)
	   and the seqs of its range stored already, sorted (malloc'd; only
	   the others are stored, counted in added). */
	bool upgrade;
	int64_t up_t_first_s;
	uint64_t *have;
	size_t nhave;
	uint64_t added;
};

/* The tables a record goes to, one per acq_item kind, in the order of
   grd_copy_tables[] (schema.c): a group's rows are sent table by table
   (copy.c), and they are the day tables (ingest.c, prune). */
enum {
	GRD_COPY_SAMPLES,
	GRD_COPY_CAN,
	GRD_COPY_EVENTS,
	GRD_COPY_TEXTS,
	GRD_COPY_TRDP,
	GRD_COPY_TABLES
};
extern const char *const grd_copy_tables[GRD_COPY_TABLES];

/* A growing byte buffer (one table's COPY rows of a group). */
struct grd_buf {
	char *p;
	size_t used, cap;
};

struct grd_point;

/* floor(a / b) for b > 0 */
static inline int64_t grd_floordiv(int64_t a, int64_t b)
{
	return a / b - (a % b < 0);
}

#define GRD_NS_PER_DAY (INT64_C(86400) * 1000000000)

/* The UTC day of t_ns: days since the epoch, floored (before the epoch
   too), as the day partitions are cut. */
static inline int64_t grd_day_of(int64_t t_ns)
{
	return grd_floordiv(t_ns, GRD_NS_PER_DAY);
}

/* Day number day as text, fmt "%Y%m%d" (a partition's name, <table>_p...)
   or "%Y-%m-%d" (its bounds), into out: the one formatter of a day for
   ingest.c (making partitions) and schema.c (pruning them). */
static inline void grd_day_text(int64_t day, const char *fmt, char out[16])
{
	time_t tt = (time_t)(day * 86400);
	struct tm tm;

	if (!gmtime_r(&tt, &tm) || !strftime(out, 16, fmt, &tm))
		out[0] = 0;
}

/* Room for n more bytes in b: 0 or -ENOMEM. */
static inline int grd_buf_room(struct grd_buf *b, size_t n)
{
	if (b->used + n <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 65536;
	while (cap < b->used + n)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

/* PostgreSQL's binary COPY (network order), into room made beforehand. */
static inline void grd_put16(struct grd_buf *b, uint16_t v)
{
	basic_put_be16(b->p + b->used, v);
	b->used += 2;
}

static inline void grd_put32(struct grd_buf *b, uint32_t v)
{
	basic_put_be32(b->p + b->used, v);
	b->used += 4;
}

static inline void grd_put64(struct grd_buf *b, uint64_t v)
{
	basic_put_be64(b->p + b->used, v);
	b->used += 8;
}

/* A field with its length: int4, int8, int2, float8. */
static inline void grd_f32(struct grd_buf *b, int32_t v)
{
	grd_put32(b, 4);
	grd_put32(b, (uint32_t)v);
}

static inline void grd_f64(struct grd_buf *b, int64_t v)
{
	grd_put32(b, 8);
	grd_put64(b, (uint64_t)v);
}

static inline void grd_f16(struct grd_buf *b, int16_t v)
{
	grd_put32(b, 2);
	grd_put16(b, (uint16_t)v);
}

static inline void grd_fdouble(struct grd_buf *b, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, 8);
	grd_f64(b, (int64_t)bits);
}

/* The header of a binary COPY's rows. */
static inline void grd_copy_head(struct grd_buf *b)
{
	memcpy(b->p, "PGCOPY\n\377\r\n", 11);
	b->used = 11;
	grd_put32(b, 0); /* flags */
	grd_put32(b, 0); /* header extension */
}

#define GRD_PG_EPOCH_US (INT64_C(946684800) * 1000000) /* 2000-01-01 in Unix µs */

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
	struct grd_buf roll;      /* the rollups' COPY BINARY rows of one group */
	char sqlstate[6];         /* of the last failure, "" if none (connection, client side) */
	struct grd_pending *pend; /* the group: at most cfg.group_max Batches */
	size_t npend;
	int64_t pend_since_ns;    /* CLOCK_MONOTONIC of its first Batch */
	struct grd_buf copy[GRD_COPY_TABLES]; /* COPY BINARY rows of a group, by table (grd_copy_tables) */
	PGresult **keep;          /* the ledger statements' answers: cfg.group_max + 1 */
	size_t nq;                /* statements in the open pipeline */
	bool pipe_failed;         /* one of them failed (kept in error, sqlstate) */
	/* grd_db_store_batch()'s committers, started at its first Batch: each a
	   grd_db of its own (connection, group, buffers) on a thread of its
	   own, so that one group is committed while the next is decoded and
	   the database works on two groups at once (on two cores).  The
	   parent fills work[fill]'s group and hands it over when it is due. */
	struct grd_db *work[GRD_DB_WORKERS_MAX];
	size_t nwork, fill;
	pthread_mutex_t wlock;    /* the parent's: busy, quit of every worker */
	pthread_cond_t wcond;     /* a worker has a group to commit, or is done */
	/* a worker's own: */
	struct grd_db *parent;
	pthread_t thread;
	bool busy, quit, once;    /* committing its group (once: one try) */
	int last;                 /* what that commit gave */
	uint64_t err_stamp, refused_stamp; /* when error, last_refused were set */
	uint64_t stamp;           /* the parent's: the clock of those */
	uint64_t door_stamp;      /* when last_door was set */
	struct grd_point *pts;    /* the group's samples for the rollups */
	size_t npts, cappts;
};

/* Count a refusal at the door (stats.door, last_door); any thread of db. */
void grd_db_door_count(grd_db_t *db, enum grd_db_door why, const char *words);
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
/* A statement has failed with res (may be NULL): keep it (grd_db_fail_res)
   and say what to return, -EIO, or -ECONNREFUSED if the connection is
   lost (then the caller reconnects).  res is the caller's to clear. */
int grd_db_failed(grd_db_t *db, const char *what, const PGresult *res);
/* The rows of a query's result res: their number, or, if it did not give
   rows, grd_db_failed()'s code with res cleared (so the caller returns it
   as it is). */
int grd_db_rows(grd_db_t *db, const char *what, PGresult *res);
/* Run sql: 0, -EIO, or -ECONNREFUSED if the connection is lost. */
int grd_db_exec(grd_db_t *db, const char *what, const char *sql);
/* Forget what a new connection (or a prune) may have changed: the
   partitions known, the prepared statements. */
void grd_db_forget(grd_db_t *db);
/* Run a prepared statement; params are text except those with a length
   (binary).  Its result, or NULL (failed: kept by grd_db_fail_res()). */
PGresult *grd_db_run(grd_db_t *db, const char *name, int n, const char *const *v, const int *lens,
                     ExecStatusType want);
/* libpq's pipeline (conn.c): enter it; a prepared statement or one
   without parameters into it (counted in db->nq); send it and read every
   answer, the rows of statement q into keep[q] (keep may be NULL; the
   caller clears them).  0, -EIO, -ECONNREFUSED (the connection is lost). */
int grd_pipe_enter(grd_db_t *db);
int grd_qsend(grd_db_t *db, const char *name, int n, const char *const *v, const int *lens);
int grd_qsend_sql(grd_db_t *db, const char *what, const char *sql);
int grd_pipe_run(grd_db_t *db, const char *what, PGresult **keep);

/* A Batch's key as the statements' text parameters (conn.c). */
struct grd_batch_key {
	char vid[16], first[24], end[24], count[16], digest[24], hash[24];
	const char *log_id;
	int log_id_len;
};
void grd_batch_key_make(const struct rec_batch_info *info, int vid, uint64_t digest, struct grd_batch_key *k);

/* The seqs stored already of a vehicle's records in a seq range and time
   range (conn.c; parameters: vehicle id, time from, time to, seq from,
   seq end), for PQexecParams. */
extern const char grd_db_stored_sql[];

/* A new Batch's records into db->copy's buffers (rows counted in n[], by
   table: grd_copy_tables) and its samples into the rollups, in one pass;
   then each buffer by its COPY (copy.c).  Records whose seq is in skip
   (sorted, nskip; NULL: none) are stored already and left out.  The
   rows added (>= 0: a Batch of at most REC_BATCH_MAX_BYTES holds far
   fewer than INT_MAX records), -ENOMEM. */
int grd_copy_rows(grd_db_t *db, int vid, const rec_batch_t *b, uint64_t first_seq, uint32_t count,
                  const uint64_t *skip, size_t nskip, uint64_t n[GRD_COPY_TABLES]);
int grd_copy_table(grd_db_t *db, const char *table, struct grd_buf *b);

/* The Batch's channel dictionary into the open pipeline (dictionary.c):
   the door's verdict first (its answer the *ret_q-th of the pipeline),
   then the entries, which obey it.  0 or -errno. */
int grd_send_dictionary(grd_db_t *db, const struct grd_batch_key *k, const rec_batch_t *b, size_t n,
                        bool historical, size_t *ret_q);
/* grd_pipe_run(), then the door's verdicts on the n dictionaries sent
   (answers qs[i], of vehicles[i]) counted and said. */
int grd_pipe_run_verdicts(grd_db_t *db, const char *what, const size_t *qs, const char *const *vehicles,
                          size_t n);

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
/* Room for n more samples in the group's rollups: 0 or -ENOMEM. */
int grd_rollup_reserve(grd_db_t *db, size_t n);
/* Gather one record of vehicle vid for the group's rollups (every sample:
   the dashboard's rollups take the good ones, summary's all), into room
   reserved. */
void grd_rollup_item(grd_db_t *db, int vid, const struct acq_item *it);
/* The 1 s aggregates of the samples gathered, copied into the temporary
   table rollup_group in the open transaction; then forgotten.  0 (nothing
   gathered: *ret_merge false), -ENOMEM, -EIO. */
int grd_rollup_copy(grd_db_t *db, bool *ret_merge);
/* The statements (no parameters) that merge rollup_group into rollup_1s,
   rollup_1min and rollup_summary_1s, in key order. */
#define GRD_ROLLUP_MERGES 3
extern const char *const grd_rollup_merge[GRD_ROLLUP_MERGES];
/* ch's value table as a PostgreSQL text[] literal in *ret_literal (to
   free), or NULL for none: only the entries "NUMBER LABEL" whose label is
   well-formed UTF-8 (the others are left out and counted in bad_names).
   0 or -ENOMEM (ground/dictionary.c). */
struct rec_channel;
int grd_value_table(grd_db_t *db, const struct rec_channel *ch, char **ret_literal);
/* The Health entries of b (vehicle vid) into the health table, into the
   open pipeline of the group's last round trip (its answers read with
   the others): 0 or -EIO (ground/health-table.c). */
int grd_health_store(grd_db_t *db, int vid, const rec_batch_t *b);
