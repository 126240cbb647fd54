/* SPDX-License-Identifier: MIT */
/*
 * logs.c - what `railmon recv` keeps on the ground in files: a railmon
 * log per (vehicle, log id) with --log, so export, stat and replay work
 * there as on the train, and every Batch that is refused or that a ground
 * log cannot take, kept as a file, counted and handed to on_note (cli/
 * says it).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ground.h"
#include "basic/clock.h"
#include "basic/hex.h"
#include "basic/name.h"
#include "record/digest.h"

#define GRD_KEEP_MAX 10000  /* refused Batches written out per run */
/* Each file at most a whole Batch as railmon makes them (record/batch.h):
   of an oversize one, its first 1 MiB. */
#define GRD_KEEP_FILE_MAX REC_BATCH_MAX_BYTES

static const char *const grd_why_texts[GRD_NOTE_MAX] = {
	[GRD_CONFLICT] = "conflict: records received before, with other content",
	[GRD_SEQ_JUMP] = "implausible seq: more than 2^40 records away from the rest of its log",
	[GRD_TOO_MANY_VEHICLES] = "a new vehicle past --max-vehicles",
	[GRD_NO_MEMORY] = "out of memory",
	[GRD_BAD_VEHICLE] = ("vehicle name against the rule: 1-59 letters, digits, '-', '_' or '.', not '.' "
	                     "or '..'"),
	[GRD_LATE] = "late: behind the end of its ground log (its records are in the text output)",
	/* parenthesised: one string in two literals (clang's -Wstring-concatenation) */
	[GRD_DIFFERS] = ("conflict: its ground log holds other records for these seqs (these are in the "
	                    "text output)"),
	[GRD_TOO_BIG] = "over 1 MiB: more than a log frame holds",
	[GRD_BAD_NAME] = "vehicle id not usable as a directory name",
	[GRD_LOG_ERROR] = "the ground log failed",
	[GRD_CONTINUED] = "a gap of over 2^32 records (more than a log marks): continuing in a new ground log",
	[GRD_TIME] = ("record times outside the window (--max-age behind the receiver's clock, --max-skew ahead "
	              "of it or around the Batch's base)"),
	[GRD_ANSWER] = ("records its ground log lacks over a range it holds, the records both hold the same (a "
	                "request's answer): into an answers log"),
	[GRD_JUMP_DB] = ("implausible seq: more than 2^40 records away from what this receiver holds of its log "
	                 "(the database's ledger decides for itself)"),
};

static const char *const grd_why_files[GRD_NOTE_MAX] = {
	"conflict", "seq-jump", "vehicles", "nomem", "bad-vehicle", "late", "conflict-stored", "too-big", "bad-name",
	"log-error", "time", "seq-jump-db", "has-it", "continued", "answer",
};

const char *grd_why_text(enum grd_why why)
{
	return why < GRD_NOTE_MAX ? grd_why_texts[why] : "?";
}

const char *grd_why_name(enum grd_why why)
{
	return why < GRD_NOTE_MAX ? grd_why_files[why] : "?";
}

/* ---- refused Batches ---- */

/* Vehicle ids come from the network: keep file names tame. */
static void safe_name(char *out, size_t size, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < size && n < 64; s++)
		out[n++] = (isalnum((unsigned char)*s) || *s == '-' || *s == '_') ? *s : '_';
	if (!n)
		out[n++] = '_';
	out[n] = 0;
}

/* "" for a Batch without a log id. */
void grd_log_id_hex(const uint8_t *id, size_t len, char out[2 * REC_LOG_ID_LEN + 1])
{
	basic_hex_encode(id, len < REC_LOG_ID_LEN ? len : REC_LOG_ID_LEN, false, out);
}

/* Write the payload as received to the refused directory, or its first
   GRD_KEEP_FILE_MAX bytes (the name then ends in .cut.batch), within the
   run's byte budget; the name says vehicle, log, seq range and reason.
   Readable by owner and group only: it is a vehicle's data.  Returns the
   path (*ret_cut: bytes left out) or NULL. */
static const char *keep_batch(struct grd *g, enum grd_why why, const struct rec_batch_info *info,
                              const void *payload, size_t len, char *path, size_t size, size_t *ret_cut)
{
	uint64_t budget = g->keep_budget ? g->keep_budget : GRD_KEEP_BYTES_DEFAULT;
	size_t n = len < GRD_KEEP_FILE_MAX ? len : GRD_KEEP_FILE_MAX;
	char veh[80], id[2 * REC_LOG_ID_LEN + 1];
	int fd;

	*ret_cut = 0;
	if (g->kept >= GRD_KEEP_MAX || g->kept_bytes + n > budget) {
		g->keep_over++;
		return NULL;
	}
	if (mkdir(g->keep_dir, 0750) < 0 && errno != EEXIST)
		goto fail;
	safe_name(veh, sizeof(veh), info->vehicle);
	grd_log_id_hex(info->log_id, info->log_id_len, id);
	/* The count makes every name new: a second conflict on the same range
	   must not replace the first. */
	snprintf(path, size, "%s/%s.%s.%" PRIu64 "-%" PRIu64 ".%s.%" PRIu64 "%s.batch", g->keep_dir, veh,
	         id[0] ? id : "no-log-id", info->first_seq, info->first_seq + info->count - (info->count > 0),
	         grd_why_files[why], g->kept + g->keep_failed + 1, n < len ? ".cut" : "");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		goto fail;
	if (write(fd, payload, n) != (ssize_t)n || fsync(fd) < 0) {
		close(fd);
		goto fail;
	}
	close(fd);
	g->kept++;
	g->kept_bytes += n;
	*ret_cut = len - n;
	return path;
fail:
	g->keep_failed++;
	return NULL;
}

/* Count, keep and hand to on_note (cli/ says it, at a rate it chooses). */
void grd_refuse(struct grd *g, enum grd_why why, const struct rec_batch_info *info,
                          const void *payload, size_t len, int err)
{
	char path[PATH_MAX + 160];
	const char *kept = NULL;

	size_t cut = 0;

	g->refused[why]++;
	/* A flood of Batches from vehicles past the cap, or under names no
	   vehicle may have, would only use up the budget. */
	if (why != GRD_TOO_MANY_VEHICLES && why != GRD_BAD_VEHICLE)
		kept = keep_batch(g, why, info, payload, len, path, sizeof(path), &cut);
	if (g->on_note) {
		struct grd_note n = { why, info, kept, err, NULL, g->refused[why], g->db != NULL, cut, len };
		g->on_note(g->note_ctx, &n);
	}
}

/* ---- ground logs ---- */

/* The one rule (basic/name.h): a plain directory name, and one the log's
   header holds. */
static bool usable_vehicle(const char *v)
{
	return basic_vehicle_name_ok(v);
}

/* After a restart, go on in the newest continuation (ground_continue())
   of this log that starts at or before the Batch. */
static void ground_find_continued(struct grd *g, struct grd_log *gl, const struct rec_batch_info *info,
                                  const char *id)
{
	char vdir[PATH_MAX], prefix[2 * REC_LOG_ID_LEN + 8];
	uint64_t best = 0;
	struct dirent *de;
	DIR *d;

	snprintf(vdir, sizeof(vdir), "%s/%s", g->dir, info->vehicle);
	snprintf(prefix, sizeof(prefix), "%s%sfrom-", id, id[0] ? "." : "");
	d = opendir(vdir);
	while (d && (de = readdir(d))) {
		uint64_t from;
		char *end;

		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		from = strtoull(de->d_name + strlen(prefix), &end, 10);
		if (!*end && from <= info->first_seq && from > best)
			best = from;
	}
	if (d)
		closedir(d);
	if (best) {
		size_t n = strlen(vdir);
		int k = snprintf(vdir + n, sizeof(vdir) - n, "/%s%" PRIu64, prefix, best);

		if (k > 0 && (size_t)k < sizeof(vdir) - n)
			memcpy(gl->dir, vdir, sizeof(gl->dir));
	}
}

static struct grd_log *ground_log_new(struct grd *g, const struct rec_batch_info *info)
{
	struct grd_log *gl = calloc(1, sizeof(*gl));
	char id[2 * REC_LOG_ID_LEN + 1];

	if (!gl)
		return NULL;
	if (g->nlogs == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 64;
		struct grd_log **n = realloc(g->logs, cap * sizeof(*n));

		if (!n) {
			free(gl);
			return NULL;
		}
		g->logs = n;
		g->cap = cap;
	}
	gl->unusable = !usable_vehicle(info->vehicle);
	/* Batches without a log id (railmon before log ids) go where the
	   vehicle's log always was; each log id gets a directory below it. */
	grd_log_id_hex(info->log_id, info->log_id_len, id);
	if (g->dir)
		snprintf(gl->dir, sizeof(gl->dir), "%s/%s%s%s", g->dir, info->vehicle, id[0] ? "/" : "", id);
	if (g->dir && !gl->unusable)
		ground_find_continued(g, gl, info, id);
	g->logs[g->nlogs++] = gl;
	return gl;
}

/* Out of file descriptors: close the ground log idle the longest. */
static bool ground_close_idle(struct grd *g)
{
	struct grd_log *idle = NULL;

	for (size_t i = 0; i < g->nlogs; i++)
		if (g->logs[i]->log && (!idle || g->logs[i]->used_ns < idle->used_ns))
			idle = g->logs[i];
	if (idle) {
		idle->log = stor_log_free(idle->log);
		idle->answers = stor_log_free(idle->answers);
	}
	return idle != NULL;
}

/* Open a log (new: starting at the Batch), closing idle ground logs while
   file descriptors run out. */
static int log_open(struct grd *g, const char *dir, const struct rec_batch_info *info, stor_log_t **ret)
{
	/* Every Batch durable as it arrives: the ground has no sync window to
	   lose, and batches come seconds apart per vehicle.  A new ground log
	   starts at the first Batch it gets: a vehicle met at seq 5e9 needs no
	   gap marker for the records before (one marks at most 2^32). */
	struct stor_log_cfg lc = { .dir = dir, .vehicle = info->vehicle, .sync_window_ms = 0,
	                           .first_seq = info->first_seq };
	int r;

	do
		r = stor_log_open(&lc, ret);
	while ((r == -EMFILE || r == -ENFILE) && ground_close_idle(g));
	return r;
}

static int ground_open(struct grd *g, struct grd_log *gl, const struct rec_batch_info *info)
{
	char parent[PATH_MAX];

	snprintf(parent, sizeof(parent), "%s/%s", g->dir, info->vehicle);
	if (mkdir(parent, 0755) < 0 && errno != EEXIST)
		return -errno;
	return log_open(g, gl->dir, info, &gl->log);
}

/*
 * What the log in dir holds over a Batch's range [first_seq, end_seq),
 * its Batches there decoded (the one decode of the stored side: the Batch
 * received is decoded once, by the receiver): held gets a bit set for each
 * of b's records one of them holds.  GRD_DIFFERS: one holds another
 * record for a seq b holds (or cannot be decoded); GRD_LATE: none there
 * (a hole: the log only appends); else GRD_ANSWER: every record both hold
 * is the same.
 */
static enum grd_why held_in(const char *dir, const struct rec_batch_info *info, const rec_batch_t *b,
                            uint8_t *held)
{
	enum grd_why why = GRD_LATE;
	stor_reader_t *rd;
	struct stor_rec rec;
	int k;

	if (stor_reader_open(dir, &rd) < 0)
		return why;
	if (stor_reader_seek_seq(rd, info->first_seq) == 0) {
		while (why != GRD_DIFFERS && (k = stor_reader_next(rd, &rec)) != 0) {
			rec_batch_t *stored;

			if (k == -EBADMSG)
				continue;
			if (k < 0 || rec.first_seq >= info->end_seq)
				break;
			why = GRD_DIFFERS;
			if (rec_batch_decode(rec.payload, rec.len, &stored) == 0) {
				if (rec_batch_records_agree(stored, b, held) == 1)
					why = GRD_ANSWER;
				rec_batch_free(stored);
			}
		}
	}
	stor_reader_free(rd);
	return why;
}

/* The newest answers log's n of the ground log (after a restart: found). */
static unsigned answers_newest(struct grd_log *gl)
{
	char path[PATH_MAX + 32];

	if (!gl->answers_n)
		while (snprintf(path, sizeof(path), "%s/answers.%u", gl->dir, gl->answers_n + 1) > 0 &&
		       access(path, F_OK) == 0)
			gl->answers_n++;
	return gl->answers_n;
}

/*
 * A Batch behind the ground log's end (recv restarted and forgot what it
 * had received, a late Batch, a request's answer, whole or naming
 * channels): what the ground log and its answers logs hold of its records.
 * GRD_HAS_IT: all of them, the same (no news); GRD_ANSWER: some of them,
 * the same, and records they lack (for the answers log: the ground log
 * only appends); GRD_DIFFERS: another record for one of its seqs (a
 * conflict); GRD_LATE: the ground log has nothing there (a hole).  Or
 * -ENOMEM.
 */
static int ground_behind(struct grd_log *gl, const struct rec_batch_info *info, const rec_batch_t *b)
{
	uint8_t *held = calloc(info->count / 8 + 1, 1);
	char path[PATH_MAX + 32];
	enum grd_why why;
	uint32_t i;

	if (!held)
		return -ENOMEM;
	why = held_in(gl->dir, info, b, held);
	for (unsigned n = 1; why == GRD_ANSWER && n <= answers_newest(gl); n++) {
		snprintf(path, sizeof(path), "%s/answers.%u", gl->dir, n);
		if (held_in(path, info, b, held) == GRD_DIFFERS)
			why = GRD_DIFFERS;
	}
	for (i = 0; why == GRD_ANSWER && i < info->count && held[i / 8] & (1u << (i % 8)); i++)
		;
	if (why == GRD_ANSWER && i == info->count)
		why = GRD_HAS_IT;
	free(held);
	return why;
}

/* Time span of the records, which the log frame carries. */
static void batch_span(const rec_batch_t *b, uint32_t count, struct stor_rec *rec)
{
	rec->t_first_ns = INT64_MAX;
	rec->t_last_ns = INT64_MIN;
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		rec->t_first_ns = it.t_ns < rec->t_first_ns ? it.t_ns : rec->t_first_ns;
		rec->t_last_ns = it.t_ns > rec->t_last_ns ? it.t_ns : rec->t_last_ns;
	}
}

/* The Batch appended at or past the log's end, records that never came
   marked as a gap, so the log says so.  0, -ERANGE (a gap of over 2^32),
   GRD_TOO_BIG or -errno. */
static int log_put(stor_log_t *log, const struct rec_batch_info *info, const rec_batch_t *b, const void *payload,
                   size_t len)
{
	/* a reduced Batch's frame covers its whole source range: the seqs it
	   does not bring are on the vehicle, not a gap of the ground log */
	struct stor_rec rec = { .first_seq = info->first_seq, .count = (uint32_t)(info->end_seq - info->first_seq),
	                        .payload = payload, .len = (uint32_t)len };
	int r;

	if (len > (1u << 20))
		return GRD_TOO_BIG;
	r = stor_log_skip(log, info->first_seq);
	if (r == 0) {
		batch_span(b, info->count, &rec);
		/* a reduced Batch of no record: its source's time (reduce.c), not
		   an empty span */
		if (!info->count)
			rec.t_first_ns = rec.t_last_ns = info->t0_ns;
		r = stor_log_append(log, &rec);
	}
	stor_log_tick(log);
	return r;
}

/* Behind the end: the log appends in seq order only (a late Batch filling
   a hole, an answer). */
static int ground_store(struct grd_log *gl, const struct rec_batch_info *info, const rec_batch_t *b,
                        const void *payload, size_t len)
{
	if (info->first_seq < stor_log_next_seq(gl->log))
		return ground_behind(gl, info, b);
	return log_put(gl->log, info, b, payload, len);
}

/*
 * A Batch with records the ground log lacks over a range it holds
 * (ground_behind(): a request's answer, whole or naming channels).  The
 * ground log only appends, so they go to answers logs inside it,
 * dir/answers.<n> (n from 1; storage/'s log format; export and summary
 * read them with it, report/answers.c); one behind the newest answers
 * log's end starts the next.  Returns 0 (stored), GRD_TOO_BIG or -errno.
 */
static int answers_store(struct grd *g, struct grd_log *gl, const struct rec_batch_info *info,
                         const rec_batch_t *b, const void *payload, size_t len)
{
	char path[PATH_MAX + 32];
	int r = 0;

	snprintf(path, sizeof(path), "%s/answers.%u", gl->dir, answers_newest(gl));
	if (gl->answers_n && !gl->answers && (r = log_open(g, path, info, &gl->answers)) < 0)
		return r;
	if (gl->answers && info->first_seq >= stor_log_next_seq(gl->answers) &&
	    (r = log_put(gl->answers, info, b, payload, len)) != -ERANGE)
		return r;
	gl->answers = stor_log_free(gl->answers);
	snprintf(path, sizeof(path), "%s/answers.%u", gl->dir, gl->answers_n + 1);
	r = log_open(g, path, info, &gl->answers);
	if (r < 0)
		return r;
	gl->answers_n++;
	return log_put(gl->answers, info, b, payload, len);
}

/* A gap of over 2^32 records cannot be marked in a log (one gap marker
   counts at most that many): go on in a new ground log beside this one,
   which `export --data DIR/<vehicle>` reads after it. */
static int ground_continue(struct grd *g, struct grd_log *gl, const struct rec_batch_info *info)
{
	char id[2 * REC_LOG_ID_LEN + 1];

	gl->log = stor_log_free(gl->log);
	grd_log_id_hex(info->log_id, info->log_id_len, id);
	snprintf(gl->dir, sizeof(gl->dir), "%s/%s/%s%sfrom-%" PRIu64, g->dir, info->vehicle, id,
	         id[0] ? "." : "", info->first_seq);
	if (g->on_note) {
		struct grd_note n = { GRD_CONTINUED, info, NULL, 0, gl->dir, 1, g->db != NULL, 0, 0 };
		g->on_note(g->note_ctx, &n);
	}
	return ground_open(g, gl, info);
}

/* The state of the Batch's log (recv's per-log pointer), made the first
   time: NULL if out of memory. */
struct grd_log *grd_log_get(struct grd *g, const struct rec_batch_info *info, void **log_ctx)
{
	if (!*log_ctx)
		*log_ctx = ground_log_new(g, info);
	return *log_ctx;
}

/* The record times of a Batch for a ground log: within max_age_ns behind
   the receiver's clock, max_skew_ns ahead of it and max_skew_ns around
   the Batch's base (t0), the window the database's door keeps
   (ingest.c).  Only when asked for (--max-age or --max-skew): a ground
   log has no day partitions to protect, and a trace replayed on a
   vehicle keeps its own, old times. */
static bool ground_times_ok(const struct grd *g, const struct rec_batch_info *info, const rec_batch_t *b)
{
	int64_t now = basic_realtime_ns(), t0 = info->t0_ns;
	int64_t age = g->max_age_ns > 0 ? g->max_age_ns : GRD_DB_MAX_AGE_NS;
	int64_t skew = g->max_skew_ns > 0 ? g->max_skew_ns : GRD_DB_MAX_SKEW_NS;
	struct stor_rec rec;

	if (g->max_age_ns <= 0 && g->max_skew_ns <= 0)
		return true;
	if (!info->count)
		return true; /* nothing to place */
	batch_span(b, info->count, &rec);
	return grd_times_in_window(rec.t_first_ns, rec.t_last_ns, t0, now, age, skew);
}

/* A Batch with new records into its ground log, payload as received. */
int grd_append(struct grd *g, const struct rec_batch_info *info, const rec_batch_t *b, const void *payload,
               size_t len, void **log_ctx)
{
	struct grd_log *gl = grd_log_get(g, info, log_ctx);
	int r = 0;

	if (!gl) {
		grd_refuse(g, GRD_NO_MEMORY, info, payload, len, -ENOMEM);
		return -ENOMEM;
	}
	if (gl->unusable) {
		gl->not_stored++;
		grd_refuse(g, GRD_BAD_NAME, info, payload, len, 0);
		return -EINVAL;
	}
	if (!ground_times_ok(g, info, b)) {
		gl->not_stored++;
		grd_refuse(g, GRD_TIME, info, payload, len, 0);
		return -ERANGE;
	}
	gl->used_ns = basic_mono_ns();
	if (!gl->log)
		r = ground_open(g, gl, info);
	if (r == 0)
		r = ground_store(gl, info, b, payload, len);
	if (r == -ERANGE && (r = ground_continue(g, gl, info)) == 0)
		r = ground_store(gl, info, b, payload, len);
	if (r == GRD_ANSWER && (r = answers_store(g, gl, info, b, payload, len)) == 0)
		g->answered++;
	if (r == GRD_HAS_IT) {
		g->had++;
		return 0;
	}
	if (r != 0) {
		gl->not_stored++;
		grd_refuse(g, r > 0 ? (enum grd_why)r : GRD_LOG_ERROR, info, payload, len, r > 0 ? 0 : r);
		return r > 0 ? -EALREADY : r;
	}
	gl->stored++;
	g->appended++;
	return 0;
}

void grd_free(struct grd *g)
{
	g->db = grd_db_free(g->db);
	grd_status_free(g);
	grd_config_status_free(g);
	for (size_t i = 0; i < g->nlogs; i++) {
		stor_log_free(g->logs[i]->log); /* syncs */
		stor_log_free(g->logs[i]->answers);
		rec_channels_free(g->logs[i]->names);
		free(g->logs[i]);
	}
	free(g->logs);
}
