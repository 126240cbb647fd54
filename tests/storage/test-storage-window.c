/* SPDX-License-Identifier: MIT */
/*
 * test-storage-window.c - the retention window in time and event holds
 * (stor.h "Holds", storage/DESIGN.md "Holds and the window"), 50 hours of
 * data in a few seconds through the log's injectable clock:
 *   - retention_min_age = 48h: every ten simulated minutes, every record
 *     younger than 48 hours is still readable, with no gap;
 *   - a hold keeps its window while retention deletes younger unheld
 *     segments around it (counted as past_held), survives a restart of the
 *     log, ends at its expiry or with stor_hold_release();
 *   - the rate raised beyond what the budget holds: the projected alarm
 *     first, then "due" (young data would have to go: it is kept);
 *   - a damaged holds file: the open fails, the line is named, nothing is
 *     deleted.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "stor-test-util.h"

#define SEC ((int64_t)1000000000)
#define HOUR (3600 * SEC)
#define T0 ((int64_t)1800000000000000000) /* sim start, wall time */
#define PAYLOAD 200
#define SEG 4096

struct sim {
	int64_t now; /* wall ns; the monotonic clock is now - T0 */
};

static int64_t sim_now(void *ctx, clockid_t clk)
{
	struct sim *s = ctx;

	return clk == CLOCK_REALTIME ? s->now : s->now - T0 + SEC;
}

static struct sim sim = { T0 };
static const struct stor_clock sim_clock = { sim_now, &sim };

/* Records in a segment: its header (512), the closing seal frame (40),
   frames of 40 + PAYLOAD bytes, 8-aligned. */
#define SEG_RECS ((SEG - 512 - 40) / ((40 + PAYLOAD + 7) & ~7))

static struct stor_log_cfg cfg_for(const char *dir, uint64_t budget)
{
	return (struct stor_log_cfg){
		.dir = dir, .vehicle = "WIN-1", .segment_bytes = SEG, .sync_window_ms = 10000,
		.retention_bytes = budget, .retention_min_age_s = 48 * 3600, .clock = &sim_clock,
	};
}

static void append_at(stor_log_t *log, int64_t t)
{
	uint8_t buf[PAYLOAD];
	struct stor_rec rec = { .first_seq = stor_log_next_seq(log), .count = 1, .t_first_ns = t,
	                        .t_last_ns = t, .payload = buf, .len = PAYLOAD };

	memset(buf, (int)(rec.first_seq & 0xff), sizeof(buf));
	CHECK(stor_log_append(log, &rec) == 0, "seq %" PRIu64, rec.first_seq);
}

/* The records on disk: the oldest time, whether any in [from, to] is
   there, and no hole (a missing range) at or after keep_from. */
struct scan {
	int64_t oldest, newest;
	uint64_t records;
	bool in_range;
};

static struct scan scan_log(const char *dir, int64_t keep_from, int64_t step, int64_t from, int64_t to)
{
	bool after_fault = false;
	struct scan sc = { INT64_MAX, INT64_MIN, 0, false };
	stor_reader_t *r;
	struct stor_rec rec;
	int64_t prev_t = INT64_MIN;
	uint64_t prev_end = 0;
	int n;

	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		if (n == -EBADMSG) {
			struct stor_fault f;

			CHECK(stor_reader_fault(r, &f) == 0);
			/* retention deleted past a hold: a hole only before the window */
			CHECK(f.kind == STOR_FAULT_MISSING && prev_t < keep_from,
			      "fault kind %d after %" PRId64 " s", (int)f.kind, (prev_t - T0) / SEC);
			after_fault = true;
			continue;
		}
		CHECK(n == 1);
		/* the hole's records came before this one, step apart: all of
		   them older than the window */
		if (after_fault)
			CHECK(rec.t_first_ns - step < keep_from, "records deleted inside the window, before %" PRId64
			      " s", (rec.t_first_ns - T0) / SEC);
		else if (rec.t_first_ns >= keep_from && prev_end)
			CHECK(rec.first_seq == prev_end, "hole before seq %" PRIu64 " inside the window",
			      rec.first_seq);
		if (rec.t_first_ns < sc.oldest)
			sc.oldest = rec.t_first_ns;
		sc.newest = rec.t_last_ns;
		sc.in_range |= rec.t_first_ns >= from && rec.t_first_ns <= to;
		prev_end = rec.first_seq + rec.count;
		prev_t = rec.t_last_ns;
		after_fault = false;
		sc.records++;
	}
	stor_reader_free(r);
	return sc;
}

static struct stor_hold hold_at(const char *name, int64_t t, int64_t pre, int64_t post, int64_t expiry)
{
	struct stor_hold h = { .t_ns = t, .from_ns = t - pre, .to_ns = t + post, .created_ns = sim.now,
	                       .expiry_ns = expiry };

	snprintf(h.trigger, sizeof(h.trigger), "%s", name);
	return h;
}

/* Run from sim.now to until, one record every step; check the window
   every ten minutes.  Returns the highest alarm seen, and in *ret_first_due
   / *ret_first_proj the times they were first raised. */
static uint32_t run(stor_log_t **log, const char *dir, int64_t until, int64_t step, int64_t start,
                    int64_t *ret_first_proj, int64_t *ret_first_due)
{
	uint32_t top = 0;

	while (sim.now < until) {
		struct stor_events ev;

		sim.now += step;
		append_at(*log, sim.now);
		CHECK(stor_log_tick(*log) >= 0);
		CHECK(stor_log_take_events(*log, &ev) >= 0);
		if (ev.window_alarm == STOR_WINDOW_PROJECTED && !*ret_first_proj)
			*ret_first_proj = sim.now;
		if (ev.window_alarm == STOR_WINDOW_DUE && !*ret_first_due)
			*ret_first_due = sim.now;
		if (ev.window_alarm && getenv("WIN_DEBUG"))
			printf("alarm %u at %.2f h need %" PRIu64 "\n", ev.window_alarm, (double)(sim.now - T0) / HOUR, ev.window_need_bytes);
		if (ev.window_alarm > top)
			top = ev.window_alarm;
		if ((sim.now - T0) % (600 * SEC) == 0) {
			int64_t keep = sim.now - 48 * HOUR > start ? sim.now - 48 * HOUR : start + step;
			struct scan sc;

			CHECK(stor_log_sync(*log) == 0);
			sc = scan_log(dir, keep, step, 0, 0);
			/* every record younger than 48 h is there */
			CHECK(sc.oldest <= keep, "at %" PRId64 " s the oldest kept is %" PRId64 " s",
			      (sim.now - T0) / SEC, (sc.oldest - T0) / SEC);
			CHECK(sc.newest == sim.now);
		}
	}
	return top;
}

/* What a closed (sealed, trimmed) segment takes on disk: measured on a
   day of records in a log of its own. */
static uint64_t closed_segment_bytes(void)
{
	char *dir = tu_tmpdir_in("wincal", true);
	struct stor_log_cfg cfg = cfg_for(dir, 0);
	struct stor_stats st;
	stor_log_t *log;
	uint64_t per;

	CHECK(stor_log_open(&cfg, &log) == 0);
	for (int i = 0; i < 24 * 60; i++) {
		sim.now += 60 * SEC;
		append_at(log, sim.now);
	}
	CHECK(stor_log_sync(log) == 0 && stor_log_stats(log, &st) == 0 && st.segments > 10);
	per = (st.disk_bytes - SEG) / (st.segments - 1);
	stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
	sim.now = T0;
	return per;
}

static void window_and_holds(void)
{
	/* A budget for 48 hours at one record a minute (a segment holds
	   SEG_RECS of them), the active segment, the spare, the held ones and
	   one more: the window fits, just. */
	uint64_t budget = ((48 * 60 + SEG_RECS - 1) / SEG_RECS + 6) * closed_segment_bytes() + SEG;
	char *dir = tu_tmpdir_in("window", true);
	struct stor_log_cfg cfg = cfg_for(dir, budget);
	int64_t proj = 0, due = 0, start = sim.now;
	struct stor_hold h1 = hold_at("EmergencyBrake", T0 + 30 * 60 * SEC, 10 * 60 * SEC, 10 * 60 * SEC, 0);
	struct stor_hold h2 = hold_at("Overspeed", T0 + 65 * 60 * SEC, 3 * 60 * SEC, 3 * 60 * SEC, T0 + 40 * HOUR);
	struct stor_hold h3 = hold_at("BusOff", T0 + 6 * HOUR, 5 * 60 * SEC, 5 * 60 * SEC, 0);
	struct stor_holds holds;
	struct stor_hold_extent ext[3];
	struct stor_stats st;
	struct scan sc;
	stor_log_t *log;
	uint32_t id1, id2, id3;
	uint64_t held;
	unsigned line;

	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_hold_add(dir, &h1, &id1) == 0 && id1 == 1);
	CHECK(stor_hold_add(dir, &h2, &id2) == 0 && id2 == 2);
	CHECK(stor_hold_add(dir, &h3, &id3) == 0 && id3 == 3);
	/* 25 hours, a restart, 25 more: 50 hours at one record a minute */
	CHECK(run(&log, dir, T0 + 25 * HOUR, 60 * SEC, start, &proj, &due) == 0);
	log = stor_log_free(log);
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(run(&log, dir, T0 + 50 * HOUR, 60 * SEC, start, &proj, &due) == 0, "alarm at the normal rate");
	CHECK(!proj && !due);
	CHECK(stor_log_stats(log, &st) == 0);
	printf("disk %" PRIu64 " in %" PRIu64 " segments, budget %" PRIu64 "\n", st.disk_bytes, st.segments, budget);
	printf("50 h: window %.2f h kept, %" PRIu64 " segments held (%" PRIu64 " bytes), %" PRIu64
	       " deleted past a hold, %" PRIu64 " records deleted\n", (double)st.window_ns / HOUR,
	       st.held_segments, st.held_bytes, st.retention_past_held, st.retention_deleted);
	/* the holds in force kept their windows, the rest of hours 0-1 went */
	sc = scan_log(dir, sim.now - 48 * HOUR, 60 * SEC, h1.from_ns, h1.to_ns);
	CHECK(sc.in_range, "hold 1's window was deleted");
	CHECK(scan_log(dir, sim.now - 48 * HOUR, 60 * SEC, h3.from_ns, h3.to_ns).in_range);
	CHECK(!scan_log(dir, sim.now - 48 * HOUR, 60 * SEC, T0 + 50 * 60 * SEC, T0 + 55 * 60 * SEC).in_range,
	      "unheld data just after hold 1 was kept");
	/* hold 2 expired at 40 h: gone from the file and its data deleted */
	CHECK(stor_holds_read(dir, &holds, &line) == 0 && holds.n == 2);
	CHECK(holds.h[0].id == id1 && holds.h[1].id == id3);
	CHECK(!scan_log(dir, sim.now - 48 * HOUR, 60 * SEC, h2.from_ns + 60 * SEC, h2.to_ns - 60 * SEC).in_range);
	CHECK(st.retention_past_held > 0 && st.held_segments >= 2 && st.holds == 2);
	CHECK(st.window_ns >= 48 * HOUR);
	CHECK(stor_hold_extents(dir, &holds, ext) == 0);
	CHECK(ext[0].segments >= 1 && ext[0].bytes > 0 && ext[0].first_seq <= 30 && ext[0].end_seq >= 40,
	      "extent %" PRIu64 "-%" PRIu64, ext[0].first_seq, ext[0].end_seq);

	/* Release hold 3: it keeps nothing from the next pass on (its data is
	   44 hours old: the floor still keeps it). */
	held = st.held_segments;
	CHECK(stor_hold_release(dir, id3, &line) == 0);
	CHECK(stor_hold_release(dir, id3, &line) == -ENOENT);
	CHECK(run(&log, dir, sim.now + 10 * 60 * SEC, 60 * SEC, start, &proj, &due) == 0);
	CHECK(stor_log_stats(log, &st) == 0 && st.holds == 1 && st.held_segments == ext[0].segments &&
	      st.held_segments < held);
	CHECK(scan_log(dir, sim.now - 48 * HOUR, 60 * SEC, h1.from_ns, h1.to_ns).in_range);

	/* Four times the rate: the projection warns first, then young data
	   would be due; none younger than 48 h is ever deleted (run checks). */
	CHECK(run(&log, dir, sim.now + 3 * HOUR, 15 * SEC, start, &proj, &due) == STOR_WINDOW_DUE);
	CHECK(proj && due && proj < due, "projected at %" PRId64 " s, due at %" PRId64 " s",
	      proj ? (proj - T0) / SEC : -1, due ? (due - T0) / SEC : -1);
	CHECK(stor_log_stats(log, &st) == 0 && st.window_alarm == STOR_WINDOW_DUE);
	printf("rate x4 at 50.2 h: projected alarm after %.0f min, due after %.0f min; need %" PRIu64
	       " bytes against a budget of %" PRIu64 "\n", (double)(proj - (T0 + 50 * HOUR + 10 * 60 * SEC)) / (60 * SEC),
	       (double)(due - (T0 + 50 * HOUR + 10 * 60 * SEC)) / (60 * SEC), st.window_need_bytes, budget);
	CHECK(st.window_need_bytes > budget);
	stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
}

/* A damaged holds file: never "no holds". */
static void damaged_file(void)
{
	char *dir = tu_tmpdir_in("holdbad", true), path[512];
	struct stor_log_cfg cfg = cfg_for(dir, 0);
	struct stor_hold h = hold_at("Horn", T0, SEC, SEC, 0);
	struct stor_holds holds;
	stor_log_t *log;
	uint32_t id;
	unsigned line = 0;
	int fd;

	sim.now = T0;
	CHECK(stor_hold_add(dir, &h, &id) == 0);
	CHECK(stor_hold_add(dir, &h, &id) == 0 && id == 2);
	CHECK(stor_hold_release(dir, 1, &line) == 0);
	CHECK(stor_hold_add(dir, &h, &id) == 0 && id == 3, "ids are never reused");
	snprintf(path, sizeof(path), "%s/%s", dir, STOR_HOLDS_NAME);
	fd = open(path, O_WRONLY);
	CHECK(fd >= 0);
	/* line 2 ("hold 2 Horn ..."): a digit of its time changed */
	CHECK(pwrite(fd, "9", 1, 30) == 1);
	close(fd);
	CHECK(stor_holds_read(dir, &holds, &line) == -EBADMSG);
	CHECK(line == 5, "the crc line proves the change: line %u", line);
	CHECK(stor_log_open(&cfg, &log) == -EBADMSG);
	CHECK(stor_hold_add(dir, &h, &id) == -EBADMSG, "a damaged file is never rewritten");
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0 && write(fd, "railmon-holds 1\nhold x\n", 23) == 23);
	close(fd);
	CHECK(stor_holds_read(dir, &holds, &line) == -EBADMSG && line == 2);
	/* bad arguments */
	CHECK(stor_hold_add(NULL, &h, &id) == -EINVAL);
	snprintf(h.trigger, sizeof(h.trigger), "bad name");
	CHECK(stor_hold_add(dir, &h, &id) == -EINVAL);
	CHECK(stor_hold_release(dir, 0, NULL) == -EINVAL);
	CHECK(stor_holds_read(NULL, &holds, &line) == -EINVAL);
	CHECK(stor_hold_extents(dir, NULL, NULL) == -EINVAL);
	tu_rm_rf(dir);
	free(dir);
}

/* A full file: STOR_HOLDS_MAX holds with the longest names and times. */
static void full_file(void)
{
	char *dir = tu_tmpdir_in("holdfull", true);
	struct stor_hold h = { .t_ns = INT64_MAX, .from_ns = INT64_MIN, .to_ns = INT64_MAX,
	                       .created_ns = INT64_MIN, .expiry_ns = INT64_MIN };
	struct stor_holds *holds = malloc(sizeof(*holds));
	uint32_t id;
	unsigned line;

	CHECK(holds);
	memset(h.trigger, 'x', STOR_HOLD_TRIGGER_MAX);
	for (uint32_t i = 0; i < STOR_HOLDS_MAX; i++)
		CHECK(stor_hold_add(dir, &h, &id) == 0 && id == i + 1);
	CHECK(stor_hold_add(dir, &h, &id) == -ENOSPC);
	CHECK(stor_holds_read(dir, holds, &line) == 0 && holds->n == STOR_HOLDS_MAX);
	CHECK(holds->h[STOR_HOLDS_MAX - 1].from_ns == INT64_MIN && holds->h[0].to_ns == INT64_MAX);
	free(holds);
	tu_rm_rf(dir);
	free(dir);
}

/*
 * A hold made while the log runs, on a log with no retention age, no floor
 * and no budget (issue 24): the once-a-second pass of stor_log_tick()
 * reads it within a second and ends it within a second of its expiry,
 * though no segment rolls.  (It used to run only with an age or a floor
 * set, or once the log already knew a hold: HOLD_ENDED never came.)
 */
static void expiry_without_roll(void)
{
	char *dir = tu_tmpdir_in("holdexp", true);
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "WIN-1", .segment_bytes = 1 << 20,
	                            .sync_window_ms = 10, .clock = &sim_clock };
	struct stor_hold h;
	struct stor_stats st;
	struct stor_events ev;
	stor_log_t *log;
	int64_t expiry, seen = 0, ended = 0;
	uint32_t id;

	sim.now = T0;
	CHECK(stor_log_open(&cfg, &log) == 0);
	append_at(log, sim.now);
	h = hold_at("Horn", sim.now, 5 * SEC, 5 * SEC, sim.now + 3 * SEC);
	expiry = h.expiry_ns;
	CHECK(stor_hold_add(dir, &h, &id) == 0);
	/* 100 ms steps for 10 s: a record and a tick each */
	for (int i = 0; i < 100 && !ended; i++) {
		sim.now += SEC / 10;
		append_at(log, sim.now);
		CHECK(stor_log_tick(log) >= 0);
		CHECK(stor_log_stats(log, &st) == 0);
		if (st.holds == 1 && !seen)
			seen = sim.now;
		CHECK(stor_log_take_events(log, &ev) >= 0);
		if (ev.holds_expired) {
			CHECK(ev.holds_expired == 1);
			ended = sim.now;
		}
	}
	CHECK(stor_log_stats(log, &st) == 0 && st.segments == 1, "no roll: %" PRIu64 " segments", st.segments);
	CHECK(seen && seen - T0 <= 1100 * SEC / 1000, "the new hold read after %.1f s", seen ? (double)(seen - T0) / SEC : -1.0);
	CHECK(ended && ended >= expiry && ended - expiry <= 1100 * SEC / 1000,
	      "HOLD_ENDED %.1f s after the expiry", ended ? (double)(ended - expiry) / SEC : -1.0);
	printf("a hold made while running: read after %.1f s, ended %.1f s after its expiry (no roll)\n",
	       (double)(seen - T0) / SEC, (double)(ended - expiry) / SEC);
	stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
	sim.now = T0;
}

/* The seqs on disk: present[s] for s < max. */
static void present_seqs(const char *dir, bool *present, uint64_t max)
{
	stor_reader_t *r;
	struct stor_rec rec;
	int n;

	memset(present, 0, max * sizeof(*present));
	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0)
		for (uint64_t s = rec.first_seq; n == 1 && s < rec.first_seq + rec.count && s < max; s++)
			present[s] = true;
	stor_reader_free(r);
}

/*
 * What `hold list` says a hold keeps is what is on disk (issue 24): a hold
 * keeps one segment while the budget deletes the unheld ones after it, so
 * the next segment on disk starts far beyond its end.  Its range ends
 * where its own records end (every seq in it readable, the one after it
 * not on disk), not at the next segment.  A hold made after its window was
 * deleted says which seqs are gone.
 */
static void extent_exact(void)
{
	enum { MAXSEQ = 400 };
	char *dir = tu_tmpdir_in("holdext", true);
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "WIN-1", .segment_bytes = SEG, .sync_window_ms = 10000,
	                            .retention_bytes = 8 * SEG, .clock = &sim_clock };
	struct stor_hold h = hold_at("Overspeed", T0 + 20 * 60 * SEC, 30 * SEC, 30 * SEC, 0);
	struct stor_holds holds;
	struct stor_hold_extent ext[2];
	static bool present[MAXSEQ];
	struct stor_stats st;
	stor_log_t *log;
	uint64_t a, b, next;
	uint32_t id;
	unsigned line;

	sim.now = T0;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_hold_add(dir, &h, &id) == 0);
	for (int i = 0; i < 300; i++) {
		sim.now += 60 * SEC;
		append_at(log, sim.now);
		CHECK(stor_log_tick(log) >= 0);
	}
	CHECK(stor_log_sync(log) == 0 && stor_log_stats(log, &st) == 0 && st.retention_past_held > 0);
	present_seqs(dir, present, MAXSEQ);
	/* the held run of records: the one at 20 min (seq 20) and its segment */
	CHECK(present[20]);
	for (a = 20; a > 1 && present[a - 1]; a--)
		;
	for (b = 20; b < MAXSEQ && present[b]; b++)
		;
	for (next = b; next < MAXSEQ && !present[next]; next++)
		;
	CHECK(next < MAXSEQ && next > b + SEG_RECS, "no deleted segments after the held one");
	CHECK(stor_holds_read(dir, &holds, &line) == 0 && holds.n == 1);
	CHECK(stor_hold_extents(dir, &holds, ext) == 0);
	printf("held %" PRIu64 "-%" PRIu64 " on disk, next segment at %" PRIu64 "; hold list says %" PRIu64 "-%" PRIu64
	       "\n", a, b - 1, next, ext[0].first_seq, ext[0].end_seq - 1);
	CHECK(ext[0].first_seq == a && ext[0].end_seq == b, "the extent %" PRIu64 "-%" PRIu64 " is not what is on "
	      "disk, %" PRIu64 "-%" PRIu64, ext[0].first_seq, ext[0].end_seq - 1, a, b - 1);
#ifndef OLD_API
	CHECK(ext[0].nranges == 1 && ext[0].range[0].first == a && ext[0].range[0].end == b);
	CHECK(ext[0].records == b - a && ext[0].segments == 1);
	CHECK(ext[0].ngone == 0 && !ext[0].missing_before_seq, "nothing of the window is gone");
	/* a hold over deleted records (a trigger that fired after retention
	   took them): kept is what is on disk, gone names the hole */
	h = hold_at("Late", T0 + (int64_t)(b + 3) * 60 * SEC, 30 * SEC, 30 * SEC, 0);
	CHECK(stor_hold_add(dir, &h, &id) == 0);
	CHECK(stor_holds_read(dir, &holds, &line) == 0 && holds.n == 2);
	CHECK(stor_hold_extents(dir, &holds, ext) == 0);
	CHECK(ext[1].ngone == 1 && ext[1].gone[0].first == b && ext[1].gone[0].end == next &&
	      ext[1].gone_records == next - b, "gone %u: %" PRIu64 "-%" PRIu64, ext[1].ngone, ext[1].gone[0].first,
	      ext[1].gone[0].end);
	for (uint32_t k = 0; k < ext[1].nranges; k++)
		for (uint64_t s = ext[1].range[k].first; s < ext[1].range[k].end; s++)
			CHECK(present[s], "seq %" PRIu64 " listed as kept is not on disk", s);
	printf("a hold over deleted records: gone %" PRIu64 "-%" PRIu64 "\n", ext[1].gone[0].first,
	       ext[1].gone[0].end - 1);
#endif
	stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
	sim.now = T0;
}

/*
 * Holds that fill the budget and a trigger that fires later (issue 24):
 * with keep_recent_s (the longest pre of the board's triggers) the newest
 * closed segments stay, so the pre window of a hold made now is whole on
 * disk.  Without it every segment went at the roll after it closed: the
 * start of the window was lost.
 */
static void pre_kept_at_budget(void)
{
	enum { MAXSEQ = 400 };
	char *dir = tu_tmpdir_in("holdpre", true);
	struct stor_log_cfg cfg = { .dir = dir, .vehicle = "WIN-1", .segment_bytes = SEG, .sync_window_ms = 10000,
	                            .retention_bytes = 8 * SEG, .clock = &sim_clock };
	/* the first 100 minutes held: about seven segments, most of the budget */
	struct stor_hold old = hold_at("EmergencyBrake", T0 + 50 * 60 * SEC, 50 * 60 * SEC, 50 * 60 * SEC, 0), late;
	static bool present[MAXSEQ];
	struct stor_stats st;
	stor_log_t *log;
	uint64_t lost = 0, first_lost = 0;
	uint32_t id;

#ifndef OLD_API
	cfg.keep_recent_s = 30 * 60;
#endif
	sim.now = T0;
	CHECK(stor_log_open(&cfg, &log) == 0);
	CHECK(stor_hold_add(dir, &old, &id) == 0);
	for (int i = 0; i < 300; i++) {
		sim.now += 60 * SEC;
		append_at(log, sim.now);
		CHECK(stor_log_tick(log) >= 0);
	}
	/* a trigger fires now with pre = 30 min: its hold is made */
	late = hold_at("Overspeed", sim.now, 30 * 60 * SEC, 60 * SEC, 0);
	CHECK(stor_hold_add(dir, &late, &id) == 0);
	CHECK(stor_log_sync(log) == 0 && stor_log_stats(log, &st) == 0);
	CHECK(st.retention_past_held > 0, "the budget did not make retention delete past the held segments");
	present_seqs(dir, present, MAXSEQ);
	/* seq s was written at T0 + s minutes */
	for (uint64_t s = 300 - 30; s <= 300; s++) {
		if (!present[s]) {
			lost++;
			if (!first_lost)
				first_lost = s;
		}
	}
	printf("holds fill the budget (%" PRIu64 " of %u bytes on disk, %" PRIu64 " segments held): a 30 min pre "
	       "window made at 300 min has %" PRIu64 " of its 31 records missing\n", st.disk_bytes, 8 * SEG,
	       st.held_segments, lost);
	CHECK(!lost, "the pre window lost %" PRIu64 " records, the first at %" PRIu64 " min", lost, first_lost);
	CHECK(present[100] && !present[150], "held and unheld data");
	/* the budget is exceeded by at most the recent window and a segment */
	CHECK(st.disk_bytes <= 8 * SEG + (30 / SEG_RECS + 2) * SEG, "disk %" PRIu64, st.disk_bytes);
	stor_log_free(log);
	tu_rm_rf(dir);
	free(dir);
	sim.now = T0;
}

int main(void)
{
	full_file();
	expiry_without_roll();
	extent_exact();
	pre_kept_at_budget();
	window_and_holds();
	damaged_file();
	printf("ok\n");
	return 0;
}
