/* SPDX-License-Identifier: MIT */
/*
 * export.h - `railmon export`'s engine: its state and writer
 * (export-write.c), shared by its two sources, a log or a ground vehicle
 * directory of logs (export-log.c) and the ground database (export-db.c,
 * `export --db URL --vehicle V`), so both write the same formats: CSV and
 * JSON lines of one schema, candump, influx, --wide/--raster, and the
 * ASC/BLF traces of the CAN frames.  cli/export-cmd.c parses the options
 * into struct rpt_export; the checks of their combinations, the end of
 * the output and the totals are export-cli.c's.
 *
 * Records go to out; what cannot be read or written is said on err
 * ("railmon export: ..."), both the caller's streams.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "acquisition/acq-item.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "record/order.h"
#include "record/timefix.h"
#include "trace/trace-write.h"
#include "record/wide.h"

struct stor_rec;

#define RPT_EXPORT_FILTER_MAX 64

struct rpt_export {
	FILE *out;
	FILE *err;               /* what went wrong, "railmon export: ..." */
	enum rec_format format;
	int64_t from_ns, to_ns;
	unsigned kinds;          /* bit per acq_item_kind */
	const char *channels[RPT_EXPORT_FILTER_MAX]; /* as given */
	char *resolved[RPT_EXPORT_FILTER_MAX]; /* the dictionary's name for each */
	size_t nchannel_filters;
	bool trace;              /* --format asc|blf: the CAN frames as a trace */
	enum trace_write_format tfmt;
	trace_writer_t *tracew;
	uint64_t not_frames;     /* records a trace cannot hold (samples, events) */
	rec_channels_t *chans;   /* what the dictionaries read so far name */
	const char *dir;
	uint64_t written, damaged; /* records written; faults that cost records */
	uint64_t batches_decoded; /* of a log: --from/--to passes over the Batches
				     whose span misses the range (rpt_batch_outside) */
	rec_order_t *order;      /* time order (NULL: --order seq) */
	int64_t window_ns;
	bool wide;
	int64_t raster_ns, max_age_ns;
	rec_wide_t *table;       /* --wide: made once the first dictionary is read */
	rec_writer_t *writer;    /* csv, jsonl, candump, influx: out's buffer, made at the first record */
	char *vehicle;           /* the origin of the records in order */
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;
	bool corrected;          /* --corrected-time (docs/time.md): log sources only */
	rec_timefix_t *timefix;  /* the log's runs and their reference offsets */
	uint64_t uncorrected;    /* records without a monotonic base: as recorded */
	const char *cmd;         /* the command in messages; NULL: "export" */
	/* Instead of a writer (`railmon plot`): each record through the
	   filters goes to sink with its names (its -errno stops the export),
	   and sink_setup is called once the dictionaries are read and the
	   --channel names resolved (x->resolved), before any record. */
	int (*sink)(void *ctx, const struct acq_item *it, const struct rec_names *nm);
	int (*sink_setup)(void *ctx, struct rpt_export *x);
	void *sink_ctx;
	/* How far through a log (bytes of its segments, storage/stor.h
	   stor_progress): called per Batch read, NULL: not at all.  The
	   caller draws it (cli/progress.h). */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	uint64_t progress_n;     /* --db: records read (no total: a rate line) */
};

/* The command the messages name ("export", or x->cmd). */
const char *rpt_export_cmd(const struct rpt_export *x);

/* "railmon CMD: " and the message on x->err. */
__attribute__((format(printf, 2, 3)))
void rpt_export_say(const struct rpt_export *x, const char *fmt, ...);

/* One record through the filters (time, kind, --channel) and, in time
   order, to the output.  0 or -errno of the writer. */
int rpt_export_write_item(struct rpt_export *x, const struct acq_item *it);

/* Everything the order still holds out, and the writer's buffer to
   x->out.  0 or -errno. */
int rpt_export_drain(struct rpt_export *x);

/* Once x->chans holds the dictionaries: the --channel check, --wide's
   table or the format's header.  where names the source in messages.
   0, or the exit code. */
int rpt_export_setup_output(struct rpt_export *x, const char *where);

/* One log, or each log of a ground vehicle directory (`recv --log DIR`,
   DIR/<vehicle>/<log id>) in the order of their first records, with the
   dictionaries of all read ahead; then what the order holds.  Unreadable
   parts are said on err and counted in x->damaged.  The exit code (> 0),
   0, or -errno. */
int rpt_export_dir(struct rpt_export *x, const char *dir);

/* The vehicle's records from the ground database, named by its
   dictionary there.  0, the exit code, or -errno. */
int rpt_export_db(struct rpt_export *x, const char *url, const char *vehicle);

/* The combinations of options that cannot work, said on err; the default
   kinds of the format; the time order.  0 or the exit code (2). */
int rpt_export_check(struct rpt_export *x);

/* The end of the output after the engine returned r (0, the exit code or
   -errno): the trace closed (and the records it could not hold counted),
   --wide's last row, out flushed.  r, or the first -errno of these. */
int rpt_export_finish(struct rpt_export *x, int r);

/* The totals on err: late records, uncorrected times, rows, records
   written and unreadable parts skipped. */
void rpt_export_summary(const struct rpt_export *x);

/*
 * Can a stored Batch be passed over undecoded for [from_ns, to_ns)?  Its
 * frame's t_first_ns..t_last_ns is the least and greatest time of its
 * records (whatever their order in it), so a span that misses the range
 * proves no record in it is wanted.  But a Batch that carries a channel
 * dictionary is read all the same (names learned from it may be needed
 * for later records), and so is one whose fields cannot be walked (its
 * decode says what is wrong).  For export, plot and summary.
 */
bool rpt_batch_outside(const struct stor_rec *rec, int64_t from_ns, int64_t to_ns);


/* Frees what the export made (order, dictionaries, wide table, names);
   x's options and streams stay the caller's. */
void rpt_export_release(struct rpt_export *x);
