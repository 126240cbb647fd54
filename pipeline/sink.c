/* SPDX-License-Identifier: MIT */
/*
 * sink.c - decode -> encode -> append (sink.h): the collector's pass (each
 * record encoded, its frame decoded, the watch and the clock), the tick, and
 * set-up; the open Batch and the Seals are sink-batch.c's, what the log
 * reports sink-log.c's (sink-private.h).
 *
 * Runs on one thread at a time (the collector's), so the encoder, the DBC
 * tables and the log need no locks.  The counters cross threads through
 * relaxed atomics: each is a single word with a single writer.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acquisition/acq-bytes.h"
#include "basic/clock.h"
#include "basic/counter.h"
#include "pipeline/clockwatch.h"
#include "pipeline/faults.h"
#include "pipeline/watch.h"
#include "sink-private.h"
#include "evidence/evd.h"
#include "record/batch.h"
#include "record/seal.h"

/* Triggers and required channels see the item; a channel back in time
   (CHANNEL_FRESH) is stored right after it. */
static void watch_item(pl_sink_t *s, const struct acq_item *it)
{
	struct acq_item ev[2];
	size_t n;

	if (!s->cfg.watch)
		return;
	n = pl_watch_item(s->cfg.watch, it, ev, 2);
	for (size_t k = 0; k < n; k++)
		pl_sink_encode(s, &ev[k]);
}

static void decode_frame(pl_sink_t *s, const struct acq_item *it)
{
	/* never -ENOBUFS: the scratch holds the largest message's signals */
	int n = s->ch ? pl_channels_decode(s->ch, it, s->decoded, s->decoded_max) : 0;

	for (int k = 0; k < n; k++) {
		/* a TRDP timeout, stamped when it fell due, takes the whole path */
		pl_sink_encode_same_time(s, &s->decoded[k]);
		/* a decoder's events (TRDP_TIMEOUT) are said as the sources' are;
		   the kind checked here, not by a call per sample */
		if (s->decoded[k].kind == ACQ_ITEM_EVENT)
			pl_faults_note_item(s->cfg.faults, &s->decoded[k]);
		pl_channels_set_live(s->ch, &s->decoded[k]);
		watch_item(s, &s->decoded[k]);
	}
	if (n > 0)
		basic_counter_add(&s->decode_samples, (uint64_t)n);
}

/* Once per pass, before its records are classified: they were all read
   from the rings before this reading, so their stamps are of this offset
   or, within 2 s of a step, of the one before (pl_clockwatch_which). */
static void clock_pass(pl_sink_t *s)
{
	int64_t real, mono;

	if (!s->cw)
		return;
	pl_clock_read(&real, &mono);
	if (pl_clockwatch_check(s->cw, real, mono, &s->step_ns, &s->step_window_ns) == 1)
		s->step_pending = true;
}

/* The step as an event, after the pass's records, stamped now (the new
   clock); detail = the window it lies in, ms rounded up. */
static void clock_step_event(pl_sink_t *s)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };
	int64_t ms = (s->step_window_ns + BASIC_NS_PER_MS - 1) / BASIC_NS_PER_MS;

	s->step_pending = false;
	ev.event = (struct acq_event){ .code = ACQ_EV_CLOCK_STEP, .arg = s->step_ns,
	                               .detail = ms < 0 ? 0 : ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms };
	pl_sink_encode(s, &ev);
	pl_faults_note_item(s->cfg.faults, &ev); /* said on stderr, as faults are */
	basic_counter_add(&s->items, 1);
	atomic_store_explicit(&s->clock_last_step, s->step_ns, memory_order_relaxed);
	basic_counter_add(&s->clock_steps, 1);
}

int pl_sink_items(void *ctx, const struct acq_item *items, size_t n)
{
	pl_sink_t *s = ctx;

	clock_pass(s);
	for (size_t i = 0; i < n; i++) {
		const struct acq_item *it = &items[i];
		pl_sink_encode(s, it);
		/* a telegram is decoded before its bytes go back to the ring */
		if (it->kind == ACQ_ITEM_TRDP)
			decode_frame(s, it);
		/* encoded (its bytes copied into the Batch) or refused: either
		   way its bytes are free now, and those of items the ring
		   dropped before it */
		if (it->kind == ACQ_ITEM_TRDP && it->bus < s->cfg.nbytes && s->cfg.bytes[it->bus] && it->trdp.data)
			acq_bytes_release(s->cfg.bytes[it->bus], it->trdp.data + (it->trdp.len ? it->trdp.len : 1));
		if (it->kind == ACQ_ITEM_EVENT)
			pl_faults_note_item(s->cfg.faults, it);
		if (it->kind == ACQ_ITEM_CAN)
			decode_frame(s, it);
		else if ((it->kind == ACQ_ITEM_SAMPLE || it->kind == ACQ_ITEM_TEXT) && s->ch)
			pl_channels_set_live(s->ch, it);
		if (it->kind != ACQ_ITEM_CAN)
			watch_item(s, it);
	}
	basic_counter_add(&s->items, n);
	if (s->step_pending)
		clock_step_event(s);
	return 0;
}

void pl_sink_event(pl_sink_t *s, uint32_t code, int64_t arg)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	ev.event.code = code;
	ev.event.arg = arg;
	pl_sink_items(s, &ev, 1);
}

int pl_sink_add_health(pl_sink_t *s, const struct rec_health *h)
{
	return rec_encoder_add_health(s->enc, h);
}

/* The kernel's sync flag, once a second: a change is an event. */
static void clock_sync(pl_sink_t *s)
{
	struct pl_clock_sync st;
	int64_t now = basic_mono_ns();
	int ev;

	if (!s->cw || now < s->sync_next_ns)
		return;
	s->sync_next_ns = now + CLOCK_SYNC_PERIOD_NS;
	if (pl_clock_sync_read(&st) < 0)
		return;
	ev = pl_clockwatch_sync(s->cw, &st);
	if (ev > 0)
		pl_sink_log_event(s, (uint32_t)ev, (int64_t)(ev == ACQ_EV_CLOCK_UNSYNCED ? st.max_error_us : st.est_error_us),
		          st.status);
}

/* Holds for the triggers that fired, STALE events, the log's window state. */
static void watch_tick(pl_sink_t *s)
{
	struct acq_item ev[16];
	struct stor_stats st;
	size_t n;

	if (s->cfg.watch) {
		n = pl_watch_tick(s->cfg.watch, basic_realtime_ns(), ev, 16);
		for (size_t k = 0; k < n; k++) {
			pl_sink_encode(s, &ev[k]);
			/* a trigger whose hold could not be written: said too */
			if (ev[k].event.code == ACQ_EV_TRIGGER && ev[k].event.arg < 0)
				pl_faults_note(s->cfg.faults, ACQ_SOURCE_DAEMON, PL_FAULT_TRIGGER, 1, ev[k].event.arg,
				               ev[k].event.detail);
		}
	}
	if (stor_log_stats(s->log, &st) == 0) {
		atomic_store_explicit(&s->window_alarm, st.window_alarm, memory_order_relaxed);
		atomic_store_explicit(&s->window_need, st.window_need_bytes, memory_order_relaxed);
	}
}

/* TRDP telegrams silent past their timeout (not in a replay: its clock is
   the log's, and the records' times give the same events between
   telegrams).  The grace covers the collector's lag behind the kernel's
   receive stamps, so a telegram still in a ring is not called missing. */
#define TRDP_TICK_GRACE_NS (200 * BASIC_NS_PER_MS)

static void trdp_tick(pl_sink_t *s)
{
	size_t n;

	if (!s->ch || s->cfg.deterministic || !s->decoded_max)
		return;
	do {
		n = pl_channels_tick(s->ch, basic_realtime_ns(), TRDP_TICK_GRACE_NS, s->decoded, s->decoded_max);
		for (size_t k = 0; k < n; k++) {
			pl_sink_encode(s, &s->decoded[k]);
			pl_faults_note_item(s->cfg.faults, &s->decoded[k]);
			watch_item(s, &s->decoded[k]);
		}
	} while (n == s->decoded_max);
}

int pl_sink_tick(pl_sink_t *s)
{
	/* A quiet board has passes without records: the tick still reads the
	   clock, so a step is an event within a tick, not at the next record. */
	clock_pass(s);
	if (s->step_pending)
		clock_step_event(s);
	clock_sync(s);
	trdp_tick(s);
	watch_tick(s);
	pl_sink_log_take(s);
	pl_sink_hold_watch(s);
	pl_sink_log_report(s, false);
	if (!s->cfg.deterministic && rec_encoder_count(s->enc) &&
	    basic_mono_ns() - s->batch_open_ns >= (int64_t)s->cfg.batch_ms * BASIC_NS_PER_MS)
		pl_sink_batch_flush(s);
	pl_sink_seal_periodic(s);
	return stor_log_tick(s->log);
}

void pl_sink_report(pl_sink_t *s)
{
	pl_sink_log_take(s);
	pl_sink_log_report(s, true);
}

int pl_sink_close(pl_sink_t *s)
{
	int r;

	pl_sink_event(s, ACQ_EV_STOP,
	                 (int64_t)(atomic_load(&s->records) + rec_encoder_count(s->enc) + 1));
	pl_sink_batch_flush(s);
	r = stor_log_sync(s->log);
	/* The last Batch may have been refused too: one more try, so the
	   counter and the log's events agree whenever the disk allows. */
	pl_sink_report(s);
	/* The last Seal covers everything, the report too. */
	if (pl_sink_seal(s) == 0)
		stor_log_sync(s->log);
	return r;
}

/* ------------------------------------------------------------ set-up */

/* The chain is taken up from the log; the first Batch says whether it was,
   and whether this run signs (events SEAL_CHAIN_NEW, SEAL_UNSIGNED). */
static int sink_sealer(pl_sink_t *s, const struct rec_batch_meta *meta)
{
	/* With a second core the hashing runs beside the collector (the
	   chain costs the collector a copy per Batch, not the hash). */
	struct evd_sealer_cfg sc = { .vehicle = meta->vehicle, .config_hash = meta->config_hash,
	                             .secret = s->cfg.seal_secret,
	                             .dir = s->cfg.log_dir, .next_seq = stor_log_next_seq(s->log),
	                             .threaded = sysconf(_SC_NPROCESSORS_ONLN) > 1 };
	int r;

	if (s->cfg.no_evidence)
		return 0;
	memcpy(sc.log_id, meta->log_id, REC_LOG_ID_LEN);
	memcpy(sc.boot_id, meta->boot_id, REC_BOOT_ID_LEN);
	r = evd_sealer_new(&sc, &s->sealer);
	if (r < 0)
		return r;
	s->seal_next_ns = basic_mono_ns() + (int64_t)s->cfg.seal_interval_s * BASIC_NS_PER_SEC;
	if (!evd_sealer_continued(s->sealer))
		pl_sink_log_event(s, ACQ_EV_SEAL_CHAIN_NEW, (int64_t)evd_sealer_first(s->sealer), 0);
	if (!s->cfg.seal_secret)
		pl_sink_log_event(s, ACQ_EV_SEAL_UNSIGNED, 0, 0);
	return 0;
}

int pl_sink_new(const struct pl_sink_cfg *cfg, pl_sink_t **ret)
{
	struct rec_batch_meta meta;
	pl_sink_t *s;
	int r;

	if (!cfg || !ret || !cfg->log || !cfg->meta || !cfg->batch_max)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->log = cfg->log;
	s->ch = cfg->channels;
	s->ndict = pl_channels_list(s->ch, NULL);
	s->dict = pl_channels_dictionary(s->ch);
	/* Sized by the DBCs: a frame's samples all fit, so none is dropped
	   (a fixed 256 once lost the rest of a frame). */
	s->decoded_max = pl_channels_decode_max(s->ch);
	s->decoded = calloc(s->decoded_max ? s->decoded_max : 1, sizeof(*s->decoded));
	meta = *cfg->meta;
	/* Every Batch names its log, so the ground can tell a new log
	   (seq from 1 again) from records it already has. */
	_Static_assert(REC_LOG_ID_LEN == STOR_LOG_ID_BYTES, "one log id size");
	stor_log_id(s->log, meta.log_id);
	r = s->decoded ? rec_encoder_new(&meta, cfg->batch_max, &s->enc) : -ENOMEM;
	/* Sizes the encoder for the whole dictionary now, so the collector
	   never allocates for it; pl_sink_batch_flush() sets it for real. */
	if (r >= 0)
		r = rec_encoder_set_channels(s->enc, s->dict, s->ndict);
	if (r >= 0)
		r = rec_encoder_set_channels(s->enc, NULL, 0);
	if (r >= 0)
		r = rec_encoder_new(&meta, 16, &s->seal_enc);
	if (r >= 0 && !cfg->deterministic)
		r = pl_clockwatch_new(cfg->clock_step_ns > 0 ? cfg->clock_step_ns : PL_SINK_CLOCK_STEP_NS, &s->cw);
	/* The first reading now, so the first Batch (the sealer's events) has
	   its base. */
	clock_pass(s);
	if (r >= 0)
		r = sink_sealer(s, &meta);
	if (r < 0) {
		pl_sink_free(s);
		return r;
	}
	s->first_seq = stor_log_next_seq(s->log);
	atomic_store(&s->next_seq, s->first_seq);
	/* What recovery found at open is said at start and becomes an event. */
	pl_sink_log_take(s);
	*ret = s;
	return 0;
}

pl_sink_t *pl_sink_free(pl_sink_t *s)
{
	if (!s)
		return NULL;
	rec_encoder_free(s->enc);
	rec_encoder_free(s->seal_enc);
	evd_sealer_free(s->sealer);
	pl_clockwatch_free(s->cw);
	free(s->decoded);
	free(s);
	return NULL;
}

int pl_sink_stats(const pl_sink_t *s, struct pl_sink_stats *ret)
{
	pl_sink_t *m = (pl_sink_t *)s;

	if (!s || !ret)
		return -EINVAL;
	*ret = (struct pl_sink_stats){
		.items = atomic_load(&m->items),
		.records = atomic_load(&m->records),
		.batches = atomic_load(&m->batches),
		.decode_samples = atomic_load(&m->decode_samples),
		.log_dropped = atomic_load(&m->log_dropped),
		.log_unreported = atomic_load(&m->log_unreported),
		.log_error = atomic_load(&m->log_error),
		.log_damaged = atomic_load(&m->log_damaged),
		.seals = atomic_load(&m->seals),
		.seals_signed = s->cfg.seal_secret != NULL,
		.chain_continued = evd_sealer_continued(s->sealer),
		.window_alarm = atomic_load(&m->window_alarm),
		.window_need_bytes = atomic_load(&m->window_need),
		.first_seq = s->first_seq,
		.next_seq = atomic_load(&m->next_seq),
		.clock_steps = atomic_load(&m->clock_steps),
		.clock_last_step_ns = atomic_load(&m->clock_last_step),
	};
	return 0;
}
