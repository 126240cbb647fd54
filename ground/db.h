/* SPDX-License-Identifier: MIT */
/*
 * db.h - the ground station's PostgreSQL side (libpq): the schema and its
 * versioned migrations (ground/migrations/NNNN-name.sql, compiled in,
 * recorded in schema_migrations), the ingest of Batches and the retention
 * by day.  docs/ground-schema.md describes the tables.
 *
 * Exactly once: a Batch is committed keyed by (vehicle, log id,
 * first_seq) in the `batches` ledger.  The same key with
 * the same records (digest and count; record/digest.h with
 * REC_DIGEST_SEED) is a duplicate and changes nothing;
 * the same key or an overlapping range with other records is a conflict,
 * kept whole in `conflicts`, never in the data tables.
 *
 * Groups: grd_db_store_batch() keeps a Batch in memory and commits the group
 * of at most cfg.group_max Batches, or what came within cfg.group_ms, in
 * one transaction (one COPY BINARY per table, one rollup merge), each
 * Batch still keyed on its own: a duplicate or a conflict in a group is
 * found and kept as alone, and never stops the others.  libmosquitto 2.0
 * acknowledges a QoS 1 message before its callback runs, so a Batch in a
 * group is acknowledged before it is committed: a receiver killed then
 * loses at most the groups in memory, which gap repair (ground/repair.c)
 * asks the vehicles for again (docs/ground-schema.md, "Acknowledgement").
 * Committers: cfg.workers groups are committed at once, each by a thread
 * with a connection of its own, while the next group is decoded; when all
 * are busy, grd_db_store_batch() waits (nothing more is read).  At most
 * cfg.workers + 1 groups are in memory.
 *
 * Errors: a lost connection and the SQLSTATE classes that pass (08, 25,
 * 40, 53, 55, 57, 58) are retried with backoff, losing nothing; any other
 * (a constraint, a value the column cannot take, a permission) would fail
 * the same way for ever, so the group is tried Batch by Batch and each
 * Batch that still fails is recorded in the table refused with its
 * SQLSTATE and message (stats.batches[GRD_DB_REFUSED], stats.last_refused)
 * and the receiver goes on.
 *
 * One grd_db_t is one connection (and its committers' own), used from one
 * thread at a time; only grd_db_stats() may be called from another thread.  Nothing here prints.
 */
#pragma once

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/batch.h"

struct grd_migration {
	int version;
	const char *name;
	const char *sql;
};

/* The migrations compiled in, version 1..n in order (ground/migrations). */
extern const struct grd_migration grd_migrations[];
extern const size_t grd_migrations_n;

struct grd_db_cfg {
	const char *url;          /* libpq connection string or postgresql:// URI */
	const volatile sig_atomic_t *stop; /* optional: set -> grd_db_store_batch() gives up */
	unsigned backoff_max_ms;  /* retry delay cap through an outage; 0 = 5000 */
	unsigned group_max;       /* Batches per transaction; 0 = GRD_DB_GROUP_MAX */
	unsigned group_ms;        /* commit a group at the latest this long after its
	                             first Batch (grd_db_flush()); 0 = GRD_DB_GROUP_MS */
	unsigned workers;         /* groups committed at once, each on a connection and
	                             thread of its own; 0 = GRD_DB_WORKERS, at most 4 */
	/* The door (docs/ground-schema.md, "Limits at the door"): */
	int64_t max_age_ns;       /* records older than the receiver's clock by more are
	                             refused; 0 = GRD_DB_MAX_AGE_NS */
	int64_t max_skew_ns;      /* records newer than the receiver's clock, or farther
	                             from their Batch's base (t0) than this, are refused;
	                             0 = GRD_DB_MAX_SKEW_NS */
	unsigned max_channels;    /* a dictionary (config hash) holds at most this many
	                             channels; 0 = GRD_DB_MAX_CHANNELS */
	unsigned max_configs_day; /* new config hashes per vehicle and 24 h; 0 =
	                             GRD_DB_MAX_CONFIGS_DAY */
};

#define GRD_DB_GROUP_MAX 32
#define GRD_DB_GROUP_MS 100
#define GRD_DB_WORKERS 2
#define GRD_DB_MAX_AGE_NS (INT64_C(366) * 86400 * 1000000000)
#define GRD_DB_MAX_SKEW_NS (INT64_C(86400) * 1000000000)

/* The door's record-time window, one rule for the database (ingest.c)
   and the ground logs (logs.c): records from lo to hi lie more than skew
   from their Batch's base t0 (written so nothing overflows) ... */
static inline bool grd_times_far_base(int64_t lo, int64_t hi, int64_t t0, int64_t skew)
{
	return (t0 > INT64_MIN + skew && lo < t0 - skew) || (t0 < INT64_MAX - skew && hi > t0 + skew);
}

/* ... or inside: within age behind now, skew ahead of it, skew around t0. */
static inline bool grd_times_in_window(int64_t lo, int64_t hi, int64_t t0, int64_t now, int64_t age, int64_t skew)
{
	return lo >= now - age && hi <= now + skew && !grd_times_far_base(lo, hi, t0, skew);
}
#define GRD_DB_MAX_CHANNELS 20000
#define GRD_DB_MAX_CONFIGS_DAY 10
#define GRD_DB_SEQ_JUMP (INT64_C(1) << 40) /* as the ledger's GRD_LEDGER_MAX_JUMP */
#define GRD_DB_DOOR_PAYLOADS 100 /* refused at the door: payloads kept per vehicle and reason */

/* What the door refuses (table door_refusals, per vehicle and reason). */
enum grd_db_door {
	GRD_DOOR_TIME = 0,        /* record times outside the window */
	GRD_DOOR_SEQ_JUMP,        /* over 2^40 records from the log's committed Batches */
	GRD_DOOR_DICTIONARY,      /* a dictionary over the channel or rate limit */
	GRD_DOOR_GONE,            /* a "gone" answer for a range not asked for */
	GRD_DOOR_MAX
};

/* The door's reasons as the database keeps them (door_refusals.reason). */
const char *grd_db_door_name(enum grd_db_door why);

/* What grd_db_store_batch() found. */
enum grd_db_outcome {
	GRD_DB_COMMITTED = 0,     /* new: its records are in the data tables */
	GRD_DB_DUPLICATE,         /* committed before with the same records */
	GRD_DB_CONFLICT,          /* other records under these seqs: kept in conflicts */
	GRD_DB_REFUSED,           /* a permanent database error: kept in refused */
	GRD_DB_LIMIT,             /* refused at the door (enum grd_db_door): kept in refused */
	GRD_DB_OUTCOME_MAX,
	GRD_DB_QUEUED = GRD_DB_OUTCOME_MAX /* in the group, not committed yet */
};

struct grd_db_stats {
	uint64_t batches[GRD_DB_OUTCOME_MAX]; /* by outcome */
	uint64_t samples, can_frames, events, trdp_telegrams; /* rows committed */
	uint64_t bad_names;       /* dictionary entries not stored: a name, unit or source
	                             that is not UTF-8 (the Batch's records are stored);
	                             value-table entries and Health entries left out */
	uint64_t connects;        /* connections made (the first one included) */
	uint64_t failures;        /* attempts that failed (connect, query, commit) */
	uint64_t partitions;      /* day partitions created */
	uint64_t refused_lost;    /* refused Batches the table refused could not take either */
	uint64_t cancelled;       /* Batches dropped uncommitted: stop asked during an outage */
	uint64_t groups;          /* transactions committed */
	uint64_t vehicle_ids;     /* vehicle names looked up in (or added to) the database, the
	                             first of each per connection: a new vehicle is among them */
	uint64_t door[GRD_DOOR_MAX]; /* refused at the door, by reason */
	char last_door[480];      /* the last of those, in words */
	bool down;                /* the last attempt failed and nothing committed since */
	char error[256];          /* the last failure, in libpq's words */
	char last_refused[320];   /* the last Batch refused: vehicle, seqs, SQLSTATE, message */
};

typedef struct grd_db grd_db_t;

/* What a railmon built without libpq says (ground/without-libpq.c: every grd_db
   call is -ENOTSUP there). */
#define GRD_DB_NOT_BUILT "this railmon was built without PostgreSQL (libpq): the ground database " \
	"needs a build with libpq-dev (a vehicle's build needs none)"

/* Copy cfg (the url) and allocate; connects at first use.  0, -EINVAL,
   -ENOMEM. */
int grd_db_new(const struct grd_db_cfg *cfg, grd_db_t **ret_db);
grd_db_t *grd_db_free(grd_db_t *db);

/* Connect now (once): 0, or -ECONNREFUSED with grd_db_error() set. */
int grd_db_connect(grd_db_t *db);

/* The last error in libpq's or our words ("" if none); valid until the
   next call on db. */
const char *grd_db_error(const grd_db_t *db);

/*
 * The schema's version: 0 for an empty database (no schema_migrations).
 * -ECONNREFUSED, -EIO (grd_db_error()).
 */
int grd_db_version(grd_db_t *db, int *ret_version);

/*
 * Apply the migrations past the database's version, each in order and all
 * in one transaction (concurrent migrators wait on a lock).  init: refuse
 * (-EEXIST) a database that has a schema already.  Returns the number
 * applied, -EEXIST, -EPROTO (the database is newer than this railmon),
 * -ECONNREFUSED, -EIO (grd_db_error()).
 */
int grd_db_migrate(grd_db_t *db, bool init);

/*
 * Check the schema is the one this railmon writes: 0, -ENOENT (none: run
 * `railmon db init`), -ESTALE (older: `railmon db migrate`), -EPROTO
 * (newer than this railmon), -ECONNREFUSED, -EIO.
 */
int grd_db_check(grd_db_t *db);

/*
 * Take one Batch into the group, decoded already (the receiver decodes
 * each payload once; payload as received), and commit the group if it is
 * full or older than cfg.group_ms, retrying with backoff through
 * connection and server failures until it is committed, or cfg.stop is
 * set (-ECANCELED: stats.cancelled Batches dropped).  *ret_outcome:
 * GRD_DB_QUEUED (each Batch's outcome is counted in stats.batches when its
 * group commits).  *b is taken (set NULL: the group frees it once
 * committed) unless this fails before queueing it (-EINVAL, -ENOMEM, or
 * the committers' start: then *b is the caller's still).  payload is
 * copied (kept whole if the Batch is a conflict or refused).  Bounded
 * memory: at most (cfg.workers + 1) * cfg.group_max Batches and their rows.
 */
int grd_db_store_batch(grd_db_t *db, rec_batch_t **b, const void *payload, size_t len,
                       enum grd_db_outcome *ret_outcome);

/*
 * Store the channel dictionary of b (a record-less Batch such as the
 * retained railmon/<vehicle>/channels message) into configs now, in a
 * transaction of its own, retrying what passes: samples committed by id
 * before it are named by it (view channel_names).  0, -EPERM (a permanent
 * error: grd_db_error()), -ECANCELED, -EINVAL.
 */
int grd_db_dictionary(grd_db_t *db, const rec_batch_t *b);

/*
 * Commit the group if it is older than cfg.group_ms, or (force) whatever
 * it holds: call it at least every group_ms while idle, and with force
 * before the end.  0, or -ECANCELED as grd_db_store_batch() (with force and the
 * stop set: one try, no waiting).
 */
int grd_db_flush(grd_db_t *db, bool force);

/*
 * Drop the day partitions of samples, can_frames, events, texts and
 * trdp_telegrams that end at or before cutoff_ns (CLOCK_REALTIME), or
 * begin after the day of future_ns (the receiver's clock plus its
 * --max-skew: nothing the door lets in lands there), and the 1 s rollups
 * of those days (the 1 min rollups are kept).  Returns the number of
 * partitions dropped (of them *ret_future the future ones; ret_future may
 * be NULL), -ECONNREFUSED, -EIO.
 */
int grd_db_prune(grd_db_t *db, int64_t cutoff_ns, int64_t future_ns, int *ret_future);

/* A copy of the counters; any thread. */
void grd_db_stats(grd_db_t *db, struct grd_db_stats *ret_stats);

/* The vehicle's state from its retained status topic into vehicle_status
   (ground/health-table.c), for a vehicle the database has (from a Batch): 0,
   -ENOENT (no such vehicle: none is made), -ECONNREFUSED, -EIO
   (grd_db_error()). */
int grd_db_status(grd_db_t *db, const char *vehicle, bool online);

/* A vehicle's outcome of a remote board configuration (parsed by
   grd_config_status_parse()) into vehicle_config_status (ground/health-table.c),
   for a vehicle the database has: 0, -ENOENT (no such vehicle: none is
   made), -ECONNREFUSED, -EIO. */
/* A vehicle's outcome of a remote board configuration, as its retained
   railmon/<vehicle>/config/status says it (docs/remote-config.md). */
#define GRD_CONFIG_STATUS_MAX 4096 /* bytes of a payload taken */
struct grd_config_status_msg {
	uint64_t version;         /* 0 .. INT64_MAX (0: the message could not be read) */
	char outcome[12];         /* "applied", "refused" or "rolled back" */
	char why[GRD_CONFIG_STATUS_MAX]; /* UTF-8, no NUL, "" for none */
};

int grd_db_config_status(grd_db_t *db, const char *vehicle, const struct grd_config_status_msg *m);

/* ---- gap repair (ground/repair.c) ---- */

/* A hole in a log's ledger, known for at least the grace period. */
struct grd_hole {
	char vehicle[64];         /* it follows the rule (basic/name.h: at most 59 bytes) */
	char log_id[2 * REC_LOG_ID_LEN + 1]; /* hex, "" for none */
	uint64_t first, last;
};

/*
 * Up to max holes whose following Batch was committed over grace_s
 * seconds ago and that no "gone" answer explains, oldest first.  Returns
 * how many, -ECONNREFUSED, -EIO.
 */
int grd_db_holes(grd_db_t *db, unsigned grace_s, struct grd_hole *ret_holes, size_t max);

/* Record a vehicle's "gone" answer: [first, last] of log log_id is no
   longer stored on it.  Taken only inside a range gap repair asked that
   vehicle for (table resend_asked, by any receiver), and never makes a
   vehicle.  0, -EPERM (not asked: counted in stats.door and, for a known
   vehicle, door_refusals), -EINVAL (a name against the rule, a bad
   range), -ECONNREFUSED, -EIO. */
int grd_db_gone(grd_db_t *db, const char *vehicle, const uint8_t *log_id, size_t log_id_len, uint64_t first,
                uint64_t last);

/*
 * `railmon request` (issue 32): record, as gap repair records what it asks
 * (table resend_asked), the seq ranges of vehicle's logs a request for the
 * record times [from_ns, to_ns) may be answered "gone" for, so
 * grd_db_gone() takes that answer.  The ground knows seqs only from the
 * Batches it holds: per log, from the end of the last Batch before from_ns
 * (seq 1 if none) to the seq before the first Batch at or after to_ns (the
 * top of the seq space if none).  Every such range is recorded; up to max
 * of them into ret (vehicle, log id in hex, first, last).  Returns how many
 * are in ret (0: the database knows no log of that vehicle, or none could
 * hold the range),
 * -EINVAL, -ECONNREFUSED, -EIO.
 */
int grd_db_request_asked(grd_db_t *db, const char *vehicle, int64_t from_ns, int64_t to_ns,
                         struct grd_hole *ret, size_t max);

/* ---- export (ground/export.c) ---- */

struct grd_export_query {
	const char *vehicle;
	int64_t from_ns, to_ns;   /* [from, to); INT64_MIN / INT64_MAX: open */
	unsigned kinds;           /* bit per acq_item_kind */
	/* samples and texts of these channel ids only (export's --channel,
	   resolved: a day of one channel reads that channel's rows, not the
	   vehicle's); nchannels 0: every channel */
	const uint32_t *channels;
	size_t nchannels;
};

struct acq_item;
/* One record, in time order, with the log id of its Batch (log_id_len
   bytes; NULL and 0 if the ledger has none), valid during the call.  The
   record's names are the dictionary's (grd_db_channels()).  < 0 stops. */
typedef int (*grd_export_fn)(void *ctx, const struct acq_item *it, const uint8_t *log_id, size_t log_id_len);

/*
 * Every record of q->vehicle in the window (applied to the microsecond,
 * rounded outwards: filter exactly in fn), in time order (then seq), to
 * fn, streamed by one COPY.  Times are the database's, to the
 * microsecond.  Returns the number of records (saturated at INT32_MAX;
 * 0 for a vehicle the database does not know), fn's negative return,
 * -ECONNREFUSED, -EIO, -EPROTO (a COPY row not as asked), -ENOMEM.
 */
int grd_db_export(grd_db_t *db, const struct grd_export_query *q, grd_export_fn fn, void *ctx);

/* The vehicle's channel dictionary (its newest, view channel_names: each
   channel's name, unit, bus, source, value table, bus name and decimals)
   put into map, so export resolves --channel, makes --wide's columns and
   writes bus_name, label and the value's digits as from a log (rows
   stored before schema version 8 have no bus name and no decimals).
   Returns how many channels, -ENOMEM, -ECONNREFUSED, -EIO. */
struct rec_channels;
int grd_db_channels(grd_db_t *db, const char *vehicle, struct rec_channels *map);

/* Whether the database knows the vehicle (a row of vehicles: it sent a
   Batch once), so that export of an unknown name is said, not an empty
   answer.  1, 0, -ECONNREFUSED, -EIO. */
int grd_db_vehicle_known(grd_db_t *db, const char *vehicle);
