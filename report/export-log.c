/* SPDX-License-Identifier: MIT */
/*
 * export-log.c - `railmon export`'s log source (export.h): reads the log
 * with stor_reader, decodes each Batch, learns channel names from the
 * dictionaries Batches carry and hands each record to export-write.c.
 * Whatever cannot be read (a damaged frame, a segment that is not a
 * readable segment file, a missing seq range, a Batch that does not
 * decode) is said on x->err with its file and the records lost, and
 * skipped; everything else is exported.  A ground vehicle directory
 * holding several logs (one per log id) is exported log after log; a
 * ground log's answers logs with it, their Batches' records merged with
 * its own in seq order (report/answers.h's rule).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/batch.h"
#include "record/channels.h"
#include "record/order.h"
#include "record/wide.h"
#include "report/answers.h"
#include "report/export.h"
#include "report/logfault.h"
#include "storage/stor.h"

/* The vehicle and log id of the Batch: records of another origin wait
   for the ones before to go out first. */
static int set_origin(struct rpt_export *x, const struct rec_batch_info *info)
{
	const char *v = info->vehicle ? info->vehicle : "";
	int r;

	if (x->vehicle && !strcmp(x->vehicle, v) && x->log_id_len == info->log_id_len &&
	    !memcmp(x->log_id, info->log_id ? info->log_id : x->log_id, info->log_id_len))
		return 0;
	r = rpt_export_drain(x);
	if (r < 0)
		return r;
	free(x->vehicle);
	x->vehicle = strdup(v);
	if (!x->vehicle)
		return -ENOMEM;
	x->log_id_len = info->log_id_len <= REC_LOG_ID_LEN ? info->log_id_len : 0;
	if (x->log_id_len)
		memcpy(x->log_id, info->log_id, x->log_id_len);
	return 0;
}

bool rpt_batch_outside(const struct stor_rec *rec, int64_t from_ns, int64_t to_ns)
{
	uint64_t v;

	if (!rec || (rec->t_last_ns >= from_ns && rec->t_first_ns < to_ns))
		return false;
	/* field 11: the channel dictionary (railmon.proto) */
	return rec_batch_field(rec->payload, rec->len, 11, &v) == 0;
}

/*
 * The Batches read together: the ground log's next Batch and the answers
 * Batches that start before its end (report/answers.h), their records
 * merged in seq order, so an answer naming channels (a reduced Batch over
 * the same seqs as the ground log's) does not put its records before the
 * others'.  More than EXPORT_PARTS at once (answers over a hole of the
 * ground log) go out in groups.
 */
#define EXPORT_PARTS 16

struct part {
	rec_batch_t *b;
	struct rec_batch_info info;
	int src;                 /* RPT_ANSWERS_LOG: the ground log */
	size_t i;                /* its next record */
};

struct parts {
	struct part p[EXPORT_PARTS];
	size_t n;
};

/* A Batch into the parts (one that does not decode: said, skipped). */
static int part_add(struct rpt_export *x, struct parts *ps, const struct stor_rec *rec, int src)
{
	struct part *p = &ps->p[ps->n];
	int r;

	x->batches_decoded++;
	r = rec_batch_decode(rec->payload, rec->len, &p->b);
	if (r < 0) {
		rpt_log_undecodable_print(x->err, rpt_export_cmd(x), x->dir, rec, r);
		x->damaged++;
		return 0;
	}
	rec_batch_info(p->b, &p->info);
	rec_channels_learn(x->chans, p->b);
	p->src = src;
	p->i = 0;
	ps->n++;
	return set_origin(x, &p->info);
}

static int part_write(struct rpt_export *x, struct part *p)
{
	struct acq_item it;

	rec_batch_item(p->b, p->i++, &it);
	if (x->timefix && rec_timefix_apply(x->timefix, &p->info, &it) == 0)
		x->uncorrected++;
	return rpt_export_write_item(x, &it);
}

static void parts_free(struct parts *ps)
{
	for (size_t k = 0; k < ps->n; k++)
		rec_batch_free(ps->p[k].b);
	ps->n = 0;
}

/* The parts' records the rule reads, in seq order; the parts freed. */
static int parts_flush(struct rpt_export *x, struct parts *ps, const rpt_answers_t *ans)
{
	int r = 0;

	if (ps->n == 1) { /* a ground log without answers there: as logged */
		struct part *p = &ps->p[0];

		while (p->i < p->info.count && r >= 0)
			if (!ans || rpt_answers_take(ans, p->src, rec_batch_seq(p->b, p->i)))
				r = part_write(x, p);
			else
				p->i++;
	}
	while (ps->n > 1 && r >= 0) {
		struct part *best = NULL;

		for (size_t k = 0; k < ps->n; k++) {
			struct part *p = &ps->p[k];

			while (p->i < p->info.count && ans && !rpt_answers_take(ans, p->src, rec_batch_seq(p->b, p->i)))
				p->i++;
			if (p->i < p->info.count &&
			    (!best || rec_batch_seq(p->b, p->i) < rec_batch_seq(best->b, best->i)))
				best = p;
		}
		if (!best)
			break;
		r = part_write(x, best);
	}
	parts_free(ps);
	return r;
}

/* Channel names come from the first dictionary in the log: read ahead to
   it, so samples before it (a log trimmed by retention) still get names.
   A large board's dictionary is spread over consecutive Batches: read
   them all. */
static void prescan_dictionary(struct rpt_export *x, const char *dir)
{
	stor_reader_t *r;
	struct stor_rec rec;
	int k, n = 0;
	bool seen = false;

	if (stor_reader_open(dir, &r) < 0)
		return;
	while (n++ < 10000 && (k = stor_reader_next(r, &rec)) != 0) {
		rec_batch_t *b;
		struct rec_batch_info info;
		if (k < 0 || rec_batch_decode(rec.payload, rec.len, &b) < 0)
			continue;
		rec_batch_info(b, &info);
		rec_channels_learn(x->chans, b);
		rec_batch_free(b);
		if (seen && !info.nchannels)
			break;
		seen = info.nchannels > 0;
	}
	stor_reader_free(r);
}

/* --corrected-time: every Batch's offset and sync state first, so each
   run's reference is its last trusted offset (record/timefix.h). */
static int learn_clock(struct rpt_export *x, const char *dir)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	rec_batch_t *b;
	uint64_t runs, steps;
	int k;

	x->timefix = rec_timefix_free(x->timefix);
	if (rec_timefix_new(&x->timefix) < 0 || stor_reader_open(dir, &rd) < 0)
		return -ENOMEM;
	while ((k = stor_reader_next(rd, &rec)) != 0)
		if (k > 0 && rec_batch_decode(rec.payload, rec.len, &b) == 0) {
			k = rec_timefix_learn(x->timefix, b);
			rec_batch_free(b);
			if (k < 0)
				break;
		}
	stor_reader_free(rd);
	if (k < 0 && k != -EBADMSG)
		return k;
	rec_timefix_counts(x->timefix, &runs, &steps);
	rpt_export_say(x, "%s: corrected time: %" PRIu64 " run%s, %" PRIu64 " clock step%s between "
	        "Batches\n", dir, runs, runs == 1 ? "" : "s", steps, steps == 1 ? "" : "s");
	return 0;
}

/* The answers Batches that start before seq into the parts, each where
   the vehicle's log has it (report/answers.h). */
static int export_answers(struct rpt_export *x, rpt_answers_t *ans, uint64_t seq, struct parts *ps)
{
	struct stor_rec rec;
	int src, r = 0;

	const char *dir = x->dir;

	while (r >= 0 && rpt_answers_next(ans, seq, &rec, &src) == 1)
		if (x->corrected || !rpt_batch_outside(&rec, x->from_ns, x->to_ns)) {
			if (ps->n == EXPORT_PARTS - 1 && (r = parts_flush(x, ps, ans)) < 0)
				break;
			x->dir = rpt_answers_dir(ans, src); /* what cannot be read is named by its file */
			r = part_add(x, ps, &rec, src);
			x->dir = dir;
		}
	return r;
}

static int export_log(struct rpt_export *x, const char *dir)
{
	rpt_answers_t *ans;
	stor_reader_t *rd;
	struct stor_rec rec;
	struct stor_progress pg;
	struct parts ps = { .n = 0 };
	int r;

	x->dir = dir; /* for the messages about what cannot be read */
	r = stor_reader_open(dir, &rd);
	if (r < 0) {
		rpt_export_say(x, "%s: %s\n", dir, strerror(-r));
		return r;
	}
	prescan_dictionary(x, dir);
	if (x->corrected && (r = learn_clock(x, dir)) < 0) {
		rpt_export_say(x, "%s: %s\n", dir, strerror(-r));
		stor_reader_free(rd);
		return r;
	}
	r = rpt_answers_open(dir, x->err, rpt_export_cmd(x), &ans);
	if (r < 0) {
		rpt_export_say(x, "%s: %s\n", dir, strerror(-r));
		stor_reader_free(rd);
		return r;
	}
	/* corrected times are not the stored ones the seek and skip go by */
	if (x->from_ns > INT64_MIN && !x->corrected)
		stor_reader_seek_time(rd, x->from_ns);
	if (x->to_ns < INT64_MAX && !x->corrected) /* segments sealed as all after --to: not read */
		stor_reader_limit_time(rd, x->to_ns);
	stor_progress_init(&pg, dir, x->progress, x->progress_ctx); /* failing: no progress, the export goes on */
	while ((r = stor_reader_next(rd, &rec)) != 0) {
		if (r == -EBADMSG) {
			/* Said with what it cost; the rest is still exported. */
			x->damaged += rpt_log_fault_print(x->err, rpt_export_cmd(x), dir, rd);
			continue;
		}
		if (r < 0) {
			rpt_export_say(x, "%s: %s\n", dir, strerror(-r));
			break;
		}
		/* not break: a log's time need not rise (a replay's START event
		   has the time of the replay, its records the trace's; a clock step) */
		stor_progress_at(&pg, rec.segment, rec.offset);
		r = export_answers(x, ans, rec.first_seq + rec.count, &ps);
		/* corrected times are not the stored spans: those Batches are read */
		if (r >= 0 && (x->corrected || !rpt_batch_outside(&rec, x->from_ns, x->to_ns)))
			r = part_add(x, &ps, &rec, RPT_ANSWERS_LOG);
		if (r >= 0)
			r = parts_flush(x, &ps, ans);
		if (r < 0) {
			rpt_export_say(x, "write: %s\n", strerror(-r));
			break;
		}
	}
	if (r == 0) /* the end: damage there is no frame fault (the reader cannot resynchronise) */
		x->damaged += rpt_log_tail_print(x->err, rpt_export_cmd(x), dir, rd);
	if (r == 0 && ((r = export_answers(x, ans, UINT64_MAX, &ps)) < 0 || (r = parts_flush(x, &ps, ans)) < 0))
		rpt_export_say(x, "write: %s\n", strerror(-r));
	parts_free(&ps); /* what a failed write left */
	x->damaged += rpt_answers_damaged(ans);
	ans = rpt_answers_free(ans);
	stor_progress_end(&pg);
	stor_reader_free(rd);
	if (r >= 0 && (r = rpt_export_drain(x)) < 0)
		rpt_export_say(x, "write: %s\n", strerror(-r));
	return r;
}

/* Time of the first readable record of a log, INT64_MAX if it has none. */
static int64_t first_record_ns(const char *dir)
{
	stor_reader_t *rd;
	struct stor_rec rec;
	int64_t t = INT64_MAX;
	int k;

	if (stor_reader_open(dir, &rd) < 0)
		return t;
	while ((k = stor_reader_next(rd, &rec)) == -EBADMSG)
		;
	if (k == 1)
		t = rec.t_first_ns;
	stor_reader_free(rd);
	return t;
}

struct found_log {
	char *dir;
	int64_t t_first;
};

static int found_cmp(const void *a, const void *b)
{
	const struct found_log *x = a, *y = b;

	return x->t_first < y->t_first ? -1 : x->t_first > y->t_first;
}

/*
 * A ground vehicle directory (`railmon recv --log DIR`, DIR/<vehicle>):
 * one log per log id in subdirectories, and the segments a receiver
 * before log ids wrote in it directly.  Every log with records, in the
 * order of their first records; none: dir itself.
 */
static size_t find_logs(const char *dir, struct found_log **ret)
{
	struct found_log *v = NULL, *n;
	size_t count = 0;
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		char *path;

		/* answers.<n>: a ground log's answers (report/answers.h), read with it */
		if (de->d_name[0] == '.' || !strncmp(de->d_name, "answers.", 8) ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN) ||
		    asprintf(&path, "%s/%s", dir, de->d_name) < 0)
			continue;
		n = realloc(v, (count + 2) * sizeof(*v));
		if (!n) {
			free(path);
			break;
		}
		v = n;
		v[count] = (struct found_log){ path, first_record_ns(path) };
		if (v[count].t_first == INT64_MAX)
			free(path);
		else
			count++;
	}
	if (d)
		closedir(d);
	if (count && (n = realloc(v, (count + 1) * sizeof(*v)))) {
		v = n;
		v[count].t_first = first_record_ns(dir);
		v[count].dir = v[count].t_first == INT64_MAX ? NULL : strdup(dir);
		count += v[count].dir != NULL;
		qsort(v, count, sizeof(*v), found_cmp);
	}
	*ret = v;
	return count;
}


int rpt_export_dir(struct rpt_export *x, const char *dir)
{
	struct found_log *logs;
	size_t n = find_logs(dir, &logs);
	int r = 0;

	for (size_t i = 0; i < n; i++)
		prescan_dictionary(x, logs[i].dir);
	if (!n)
		prescan_dictionary(x, dir);
	r = rpt_export_setup_output(x, dir);
	if (r || !n) {
		free(logs);
		return r ? r : export_log(x, dir);
	}
	for (size_t i = 0; i < n; i++) {
		int k;

		rpt_export_say(x, "log %zu of %zu: %s\n", i + 1, n, logs[i].dir);
		k = export_log(x, logs[i].dir);
		r = r < 0 ? r : k;
		free(logs[i].dir);
	}
	free(logs);
	return r;
}

void rpt_export_release(struct rpt_export *x)
{
	rec_wide_free(x->table);
	x->table = NULL;
	x->writer = rec_writer_free(x->writer);
	rec_order_free(x->order);
	x->order = NULL;
	rec_channels_free(x->chans);
	x->chans = NULL;
	for (size_t i = 0; i < x->nchannel_filters; i++) {
		free(x->resolved[i]);
		x->resolved[i] = NULL;
	}
	free(x->vehicle);
	x->vehicle = NULL;
	x->timefix = rec_timefix_free(x->timefix);
}
