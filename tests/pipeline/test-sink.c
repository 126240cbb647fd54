/* SPDX-License-Identifier: MIT */
/*
 * test-sink.c - pipeline/sink.c, the heart of the pipeline (decode, encode,
 * append), on the storage fault device (tests/storage/stor-faultdev.c): a clean
 * run, a full disk (ENOSPC) and its recovery, an I/O error at a sync, and
 * a power cut at every write and sync of a run.  Read back, the log must
 * say what the sink counted: its records are the log's, every seq is
 * stored or counted dropped, the LOG_DROPPED events add up to the drops,
 * and after a cut every confirmed record is there and numbering goes on.
 */
#include "pipeline/faults.h"
#include "pipeline/sink.h"
#include "stor-faultdev.h"
#include "stor-test-util.h"
#include "record/batch.h"

#define T0 1800000000000000000ll
#define MS 1000000ll

struct rig {
	char *dir;
	struct fdev dev;
	stor_log_t *log;
	pl_sink_t *sink;
	struct pl_faults faults; /* what run would say on stderr (faults.h) */
	uint64_t fed;              /* samples handed to the sink */
};

/* What a log holds, read back and decoded. */
struct content {
	uint64_t records, batches, samples, starts, stops, stop_arg;
	uint64_t dropped_sum, dropped_events, faults, first_seq, next_seq, gaps;
	uint64_t contig;           /* records 1..contig-1 are all there */
	int fault_arg, dropped_errno;
	uint64_t damaged;          /* spots the reader reported */
	bool undecodable;
};

static void rig_open_log(struct rig *g, uint32_t segment_bytes)
{
	struct stor_log_cfg cfg = { .dir = g->dir, .vehicle = "SINK", .segment_bytes = segment_bytes,
		                    .sync_window_ms = 3600 * 1000, .ops = &g->dev.ops };
	struct rec_batch_meta meta = { .vehicle = "SINK", .config_hash = 42 };

	CHECK(stor_log_open(&cfg, &g->log) == 0);
	/* Batches of 16 records; by record time (1 ms apart: never by time). */
	CHECK(pl_sink_new(&(struct pl_sink_cfg){ .log = g->log, .meta = &meta, .batch_max = 16,
	                                              .batch_ms = 1000, .meta_interval_s = 3600,
	                                              .deterministic = true, .faults = &g->faults }, &g->sink) == 0);
}

/* no_alloc: writes append past the end (else they land in preallocated
   blocks); track: keep what a power cut can undo, from the open on. */
static void rig_open(struct rig *g, const char *tag, uint32_t segment_bytes, bool no_alloc, bool track)
{
	memset(g, 0, sizeof(*g));
	g->dir = tu_tmpdir_in(tag, true);
	CHECK(fdev_init(&g->dev, g->dir) == 0);
	g->dev.no_alloc = no_alloc;
	g->dev.track = track;
	rig_open_log(g, segment_bytes);
}

static void rig_close(struct rig *g)
{
	g->sink = pl_sink_free(g->sink);
	g->log = stor_log_free(g->log);
	fdev_done(&g->dev);
}

static void rig_done(struct rig *g)
{
	tu_rm_rf(g->dir);
	free(g->dir);
}

static void feed(struct rig *g, unsigned n)
{
	for (unsigned i = 0; i < n; i++, g->fed++) {
		struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = T0 + (int64_t)g->fed * MS };

		it.sample = (struct acq_sample){ .channel = 7, .value = (double)g->fed };
		CHECK(pl_sink_items(g->sink, &it, 1) == 0);
	}
}

static void note_item(struct content *c, const struct acq_item *it)
{
	if (it->kind == ACQ_ITEM_SAMPLE) {
		c->samples++;
		return;
	}
	CHECK(it->kind == ACQ_ITEM_EVENT);
	switch (it->event.code) {
	case ACQ_EV_START: c->starts++; break;
	case ACQ_EV_STOP: c->stops++; c->stop_arg = (uint64_t)it->event.arg; break;
	case ACQ_EV_LOG_DROPPED:
		c->dropped_events++;
		c->dropped_sum += (uint64_t)it->event.arg;
		c->dropped_errno = (int)it->event.detail;
		break;
	case ACQ_EV_LOG_FAULT: c->faults++; c->fault_arg = (int)it->event.arg; break;
	default: break;
	}
}

static void note_batch(struct content *c, const struct stor_rec *rec)
{
	struct rec_batch_info info;
	struct acq_item it;
	rec_batch_t *b;

	if (rec_batch_decode(rec->payload, rec->len, &b) < 0) {
		c->undecodable = true;
		return;
	}
	CHECK(rec_batch_info(b, &info) == 0 && info.first_seq == rec->first_seq && info.count == rec->count);
	CHECK(info.count <= 16 + 3); /* 16 records, and the log's events of a report */
	if (!c->batches)
		c->first_seq = rec->first_seq;
	else if (rec->first_seq != c->next_seq)
		c->gaps++;
	if (rec->first_seq == c->contig)
		c->contig = rec->first_seq + rec->count;
	c->next_seq = rec->first_seq + rec->count;
	c->records += rec->count;
	c->batches++;
	for (size_t i = 0; i < info.count; i++) {
		CHECK(rec_batch_item(b, i, &it) == 0 && it.seq == rec->first_seq + i);
		note_item(c, &it);
	}
	rec_batch_free(b);
}

static struct content read_back(const char *dir)
{
	struct content c = { .contig = 1 };
	stor_reader_t *r;
	struct stor_rec rec;
	int n;

	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		if (n == -EBADMSG) {
			c.damaged++;
			continue;
		}
		CHECK(n == 1);
		note_batch(&c, &rec);
	}
	stor_reader_free(r);
	return c;
}

/* A clean run: every record in the log, numbered without a gap, the STOP
   event counting them all. */
static void test_clean(void)
{
	struct rig g;
	struct pl_sink_stats st;
	struct content c;

	rig_open(&g, "sink-clean", 64 << 10, false, false);
	pl_sink_event(g.sink, ACQ_EV_START, 1234);
	feed(&g, 100);
	CHECK(pl_sink_tick(g.sink) == 0);
	CHECK(pl_sink_close(g.sink) == 0);
	CHECK(pl_sink_stats(g.sink, &st) == 0);
	CHECK(st.items == 102 && st.records == 102 && st.first_seq == 1 && st.next_seq == 103);
	CHECK(st.log_dropped == 0 && st.log_unreported == 0 && st.log_error == 0);
	rig_close(&g);
	c = read_back(g.dir);
	CHECK(c.records == 102 && c.samples == 100 && c.starts == 1 && c.stops == 1 && c.stop_arg == 102);
	CHECK(c.first_seq == 1 && c.next_seq == 103 && !c.gaps && !c.damaged && !c.undecodable);
	/* By record time: START and STOP (stamped now) each in a Batch of
	   their own, the samples (stamped in 2027) in 7 of at most 16. */
	CHECK(c.batches == 9 && c.dropped_events == 0 && c.faults == 0);
	rig_done(&g);
	puts("sink: clean run: 102 records in 9 Batches of at most 16, seq 1..102");
}

/*
 * The disk fills: the log refuses Batches, the sink counts every record
 * exactly and says nothing on disk while it cannot (an event would be
 * refused with its Batch); once the disk takes records again one
 * LOG_DROPPED event carries the whole count, its own refused tries
 * included.  Every seq is stored or counted dropped.
 */
static void test_enospc(void)
{
	struct rig g;
	struct pl_sink_stats st;
	struct content c;

	rig_open(&g, "sink-nospc", 4096, true, false);
	feed(&g, 64);
	CHECK(stor_log_sync(g.log) == 0);
	g.dev.mode = FDEV_ENOSPC;
	g.dev.which = FDEV_OP_WRITE | FDEV_OP_ALLOC | FDEV_OP_CREATE;
	g.dev.persistent = true;
	g.dev.ops_seen = 0;
	g.dev.fail_at = 1;
	feed(&g, 200);
	pl_sink_report(g.sink); /* still full: refused, counted, kept */
	CHECK(pl_sink_stats(g.sink, &st) == 0);
	CHECK(st.log_dropped > 100 && st.log_unreported == st.log_dropped && st.log_error == -ENOSPC);
	CHECK(st.records + st.log_dropped == st.next_seq - st.first_seq);
	g.dev.fail_at = 0; /* room again */
	feed(&g, 32);
	pl_sink_report(g.sink);
	CHECK(pl_sink_stats(g.sink, &st) == 0 && st.log_unreported == 0);
	CHECK(pl_sink_close(g.sink) == 0);
	CHECK(pl_sink_stats(g.sink, &st) == 0 && st.log_unreported == 0);
	rig_close(&g);
	c = read_back(g.dir);
	printf("sink: full disk: %" PRIu64 " records refused and counted, %" PRIu64 " stored; "
	       "%" PRIu64 " LOG_DROPPED event(s) adding up to %" PRIu64 "\n",
	       st.log_dropped, st.records, c.dropped_events, c.dropped_sum);
	CHECK(!c.undecodable && c.records == st.records);
	CHECK(c.dropped_sum == st.log_dropped && c.dropped_errno == ENOSPC);
	CHECK(c.records + st.log_dropped == st.next_seq - st.first_seq);
	CHECK(c.samples + st.log_dropped >= g.fed && c.samples < g.fed);
	CHECK(c.stops == 1);
	rig_done(&g);
}

/*
 * fdatasync fails: the segment is abandoned, the records in it were never
 * durable and are counted lost (taken off the stored count), a LOG_FAULT
 * (-EIO) and a LOG_DROPPED event say so in the next segment.
 */
static void test_eio_sync(void)
{
	struct rig g;
	struct pl_sink_stats st;
	struct content c;

	rig_open(&g, "sink-eio", 1 << 20, false, false);
	feed(&g, 40);
	CHECK(stor_log_sync(g.log) == 0);
	feed(&g, 40);
	g.dev.mode = FDEV_EIO;
	g.dev.which = FDEV_OP_SYNC;
	g.dev.persistent = false;
	g.dev.ops_seen = 0;
	g.dev.fail_at = 1;
	CHECK(pl_sink_close(g.sink) == -EIO);
	CHECK(pl_sink_stats(g.sink, &st) == 0);
	CHECK(st.log_dropped >= 40 && st.log_unreported == 0 && st.log_error == -EIO);
	CHECK(st.records + st.log_dropped == st.next_seq - st.first_seq);
	/* and run says it on stderr: the log's I/O fault, noted for faults.c */
	CHECK(atomic_load(&g.faults.slot[PL_FAULT_SOURCES - 1][PL_FAULT_LOG].count) >= 1);
	CHECK(atomic_load(&g.faults.slot[PL_FAULT_SOURCES - 1][PL_FAULT_LOG].arg) == -EIO);
	CHECK(atomic_load(&g.faults.slot[PL_FAULT_SOURCES - 1][PL_FAULT_LOG].detail) >= 1,
	      "the abandoned segment");
	rig_close(&g);
	c = read_back(g.dir);
	printf("sink: failed sync: %" PRIu64 " records lost and counted, LOG_FAULT %d, LOG_DROPPED %" PRIu64 "\n",
	       st.log_dropped, c.fault_arg, c.dropped_sum);
	CHECK(!c.undecodable && c.faults == 1 && c.fault_arg == -EIO);
	CHECK(c.dropped_sum == st.log_dropped && c.dropped_errno == EIO);
	/* The abandoned segment may still read back (its writes went through,
	   only their sync failed): never fewer records than the sink counts. */
	CHECK(c.records >= st.records);
	rig_done(&g);
}

/* The records below this seq are durable: the log's confirmed seq, as
   long as it reported nothing dropped or lost (confirmed also passes
   records it reported lost, and the sink takes those reports itself). */
static void durable(struct rig *g, int r, uint64_t *confirmed)
{
	struct stor_stats st;

	CHECK(stor_log_stats(g->log, &st) == 0);
	if (r == 0 && !st.dropped && !st.lost_unsynced)
		*confirmed = stor_log_confirmed_seq(g->log);
}

/* A run of the sink: six chunks of samples, each synced, and the close;
   it stops at the cut. */
static uint64_t cut_workload(struct rig *g)
{
	uint64_t confirmed = 1;

	pl_sink_event(g->sink, ACQ_EV_START, 1);
	for (int i = 0; i < 6 && !g->dev.dead; i++) {
		feed(g, 24);
		durable(g, stor_log_sync(g->log), &confirmed);
	}
	if (!g->dev.dead)
		durable(g, pl_sink_close(g->sink), &confirmed);
	return confirmed;
}

/* After a cut: recovery keeps every confirmed record, says what it found
   as a LOG_FAULT event, and the next run numbers on from the log's end. */
static void cut_verify(struct rig *g, uint64_t confirmed, long at, int pattern)
{
	struct pl_sink_stats st;
	struct content c;
	uint64_t next;

	CHECK(fdev_init(&g->dev, g->dir) == 0);
	rig_open_log(g, 2048);
	CHECK(pl_sink_stats(g->sink, &st) == 0);
	next = st.next_seq;
	if (next < confirmed) {
		fprintf(stderr, "FAIL: cut at op %ld, pattern %s: log ends at %" PRIu64 ", confirmed %" PRIu64 "\n",
		        at, fdev_pattern_name(pattern), next, confirmed);
		abort();
	}
	feed(g, 5);
	CHECK(pl_sink_close(g->sink) == 0);
	rig_close(g);
	c = read_back(g->dir);
	if (c.contig < confirmed || c.undecodable) {
		fprintf(stderr, "FAIL: cut at op %ld, pattern %s: records 1..%" PRIu64 " whole, confirmed %" PRIu64 "\n",
		        at, fdev_pattern_name(pattern), c.contig - 1, confirmed - 1);
		abort();
	}
	/* 5 samples and STOP in one Batch from the log's end on; damage found
	   at the open is one LOG_FAULT event after them. */
	CHECK(c.faults == (st.log_damaged ? 1u : 0u) && (!c.faults || c.fault_arg == -EBADMSG));
	CHECK(c.next_seq == next + 6 + c.faults && c.stops >= 1);
}

/* A power cut at every write and sync of a run, with two of the fault
   device's patterns of what survives. */
static void test_power_cut(void)
{
	struct rig g;
	long total, runs = 0;

	rig_open(&g, "sink-cut", 2048, false, false);
	g.dev.ops_seen = 0; /* the run's own writes and syncs, after the open */
	cut_workload(&g);
	total = g.dev.ops_seen;
	rig_close(&g);
	rig_done(&g);
	for (long at = 1; at <= total; at++) {
		for (int p = 0; p < FDEV_PATTERNS; p += FDEV_PATTERNS - 1) {
			uint64_t confirmed;

			rig_open(&g, "sink-cut", 2048, false, true);
			g.dev.mode = FDEV_CRASH;
			g.dev.ops_seen = 0;
			g.dev.fail_at = at;
			confirmed = cut_workload(&g);
			CHECK(g.dev.dead);
			CHECK(fdev_power_cut(&g.dev, p, (uint32_t)(at * 16 + p)) == 0);
			g.sink = pl_sink_free(g.sink);
			g.log = stor_log_free(g.log);
			fdev_done(&g.dev);
			cut_verify(&g, confirmed, at, p);
			rig_done(&g);
			runs++;
		}
	}
	printf("sink: power cut at each of %ld writes and syncs x 2 patterns: %ld runs, every confirmed record "
	       "kept, numbering goes on\n", total, runs);
}

static void test_bad_args(void)
{
	struct rec_batch_meta meta = { .vehicle = "X" };
	struct pl_sink_stats st;
	pl_sink_t *s;

	CHECK(pl_sink_new(NULL, &s) == -EINVAL);
	CHECK(pl_sink_new(&(struct pl_sink_cfg){ .meta = &meta, .batch_max = 16 }, &s) == -EINVAL); /* no log */
	CHECK(pl_sink_stats(NULL, &st) == -EINVAL);
	CHECK(pl_sink_free(NULL) == NULL);
}

int main(void)
{
	test_bad_args();
	test_clean();
	test_enospc();
	test_eio_sync();
	test_power_cut();
	puts("test-sink: ok");
	return 0;
}
