/* SPDX-License-Identifier: MIT */
/*
 * sink-batch.c - the sink's open Batch: records into it (one clock offset
 * per Batch), the dictionary riding along, the Batch into the log, and the
 * Seals, which a segment's last Batch makes first (sink-private.h).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "basic/counter.h"
#include "sink-private.h"
#include "record/seal.h"

/* The dictionary rides along now and then, so a consumer that starts
   mid-stream (or a log trimmed by retention) learns the channel names
   within meta_interval_s.  A large board's does not fit in one Batch:
   each Batch takes the next slice. */
static void batch_dictionary(pl_sink_t *s)
{
	int n;

	if (basic_mono_ns() < s->meta_next_ns)
		return;
	n = rec_encoder_set_channels(s->enc, s->dict + s->meta_pos, s->ndict - s->meta_pos);
	if (n > 0)
		s->meta_pos += (size_t)n;
	if (n < 0 || s->meta_pos >= s->ndict) {
		s->meta_pos = 0;
		s->meta_next_ns = basic_mono_ns() + (int64_t)s->cfg.meta_interval_s * BASIC_NS_PER_SEC;
	}
}

/* Close the open Batch and append it to the log.  0 (or nothing to do),
   or the append's -errno: the records were refused, and the log counts
   them (log_take). */
int pl_sink_batch_flush(pl_sink_t *s)
{
	struct stor_rec rec = { 0 };
	const uint8_t *buf;
	uint8_t *room;
	size_t len, max;
	int n, r;

	if (!rec_encoder_count(s->enc))
		return 0;
	batch_dictionary(s);
	/* A Batch that starts the next segment: the Seal closes this one
	   first, so every closed segment ends sealed. */
	if (evd_sealer_pending(s->sealer) &&
	    stor_log_would_roll(s->log, (uint32_t)rec_encoder_wire_max(s->enc) + SEAL_ROOM))
		pl_sink_seal(s);
	rec_encoder_span(s->enc, &rec.t_first_ns, &rec.t_last_ns);
	rec.first_seq = stor_log_next_seq(s->log);
	/* Packed straight into the hasher's ring: the log copies it into its
	   write buffer, and the hasher reads it where it is (a Batch copied
	   into the ring was ~half the collector's memmove in a replay) */
	max = rec_encoder_wire_max(s->enc);
	room = evd_sealer_reserve(s->sealer, max);
	n = room ? rec_encoder_finish_to(s->enc, rec.first_seq, room, max, &len) : -ENOBUFS;
	if (n >= 0)
		buf = room;
	else
		room = NULL; /* not reserved, or too small: the encoder's buffer */
	if (!room)
		n = rec_encoder_finish(s->enc, rec.first_seq, &buf, &len);
	if (n <= 0)
		return 0;
	rec.count = (uint32_t)n;
	rec.payload = buf;
	rec.len = (uint32_t)len;
	/* A refused Batch is counted by the log itself (with the records it
	   drops later, at a sync): pl_sink_log_take() turns that into the sink's
	   counter and, once the log takes records again, one event. */
	r = stor_log_append(s->log, &rec);
	if (r == 0) {
		if (room)
			evd_sealer_add_reserved(s->sealer, rec.first_seq, rec.count, len);
		else
			evd_sealer_add(s->sealer, rec.first_seq, rec.count, buf, len);
		basic_counter_add(&s->records, (uint64_t)n);
		basic_counter_add(&s->batches, 1);
	} else {
		s->refused_appends += (uint64_t)n;
	}
	atomic_store_explicit(&s->next_seq, stor_log_next_seq(s->log), memory_order_relaxed);
	return r;
}

void pl_sink_batch_opened(pl_sink_t *s, int64_t t_ns)
{
	s->batch_open_ns = basic_mono_ns();
	s->batch_data_t0 = t_ns;
}

/* A Batch holds records stamped with one offset (its mono_t0_ns): a
   record of another epoch closes it.  Slewing between two steps is not an
   epoch: the offset read at the Batch's first record stands for it. */
void pl_sink_clock_class(pl_sink_t *s, const struct acq_item *it)
{
	int64_t off;
	uint64_t epoch;
	size_t n;

	if (!s->cw)
		return;
	epoch = pl_clockwatch_which(s->cw, it->t_ns, &off);
	n = rec_encoder_count(s->enc);
	if (n && epoch != s->batch_epoch) {
		pl_sink_batch_flush(s);
		n = rec_encoder_count(s->enc);
	}
	if (!n) {
		s->batch_epoch = epoch;
		if (epoch)
			rec_encoder_set_clock_offset(s->enc, off);
		else
			rec_encoder_clear_clock_offset(s->enc);
	}
}

void pl_sink_encode(pl_sink_t *s, const struct acq_item *it)
{
	size_t n;

	/* every record passes here (10 M/s in a replay): the count is asked
	   once, and again only after a flush */
	if (s->cw)
		pl_sink_clock_class(s, it);
	s->classed_t = it->t_ns;
	n = rec_encoder_count(s->enc);
	/* A replay closes Batches by the records' own time, not the wall
	   clock, so the same input always gives the same Batches and numbers. */
	if (s->cfg.deterministic && n &&
	    llabs(it->t_ns - s->batch_data_t0) >= (int64_t)s->cfg.batch_ms * BASIC_NS_PER_MS) {
		pl_sink_batch_flush(s);
		n = rec_encoder_count(s->enc);
	}
	if (!n)
		pl_sink_batch_opened(s, it->t_ns);
	if (rec_encoder_add(s->enc, it) == -ENOBUFS) {
		pl_sink_batch_flush(s);
		s->batch_open_ns = basic_mono_ns();
		rec_encoder_add(s->enc, it);
	}
}

/* Its clock epoch and its place in the Batch's time window are those of
   the record before it, which pl_sink_encode classified (a frame's
   samples: a third of the records of a DBC replay, a fifth of the
   collector's time went to asking again): only the encoder's room can
   close the Batch, and a full one takes the whole path. */
void pl_sink_encode_same_time(pl_sink_t *s, const struct acq_item *it)
{
	if (it->t_ns != s->classed_t || !rec_encoder_count(s->enc) || rec_encoder_add(s->enc, it) == -ENOBUFS)
		pl_sink_encode(s, it);
}

/*
 * The Seal goes as a Batch of its own (one record, the SEAL event) right
 * after the records it covers; the open data Batch stays open (its
 * records are not in the log yet, so the next Seal covers them).
 */
int pl_sink_seal(pl_sink_t *s)
{
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .bus = ACQ_SOURCE_DAEMON };
	struct stor_rec rec = { 0 };
	struct rec_seal seal;
	const uint8_t *buf;
	size_t len;
	int64_t mono = 0;
	int n, r;

	if (!evd_sealer_pending(s->sealer))
		return 0;
	ev.t_ns = basic_realtime_ns();
	rec.first_seq = stor_log_next_seq(s->log);
	/* the Seal signs its own Batch's fields: the offset that Batch is
	   written with is chosen first */
	if (s->cw) {
		int64_t off;
		pl_clockwatch_which(s->cw, ev.t_ns, &off);
		rec_encoder_set_clock_offset(s->seal_enc, off);
		mono = rec_mono_t0(ev.t_ns, off);
	}
	r = evd_sealer_seal(s->sealer, rec.first_seq, ev.t_ns, mono, &seal);
	if (r < 0)
		return r;
	ev.event = (struct acq_event){ .code = ACQ_EV_SEAL, .arg = (int64_t)(seal.end_seq - seal.first_seq),
	                               .detail = seal.is_signed };
	rec_encoder_add(s->seal_enc, &ev);
	rec_encoder_set_seal(s->seal_enc, &seal);
	n = rec_encoder_finish(s->seal_enc, rec.first_seq, &buf, &len);
	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	rec.count = (uint32_t)n;
	rec.t_first_ns = rec.t_last_ns = ev.t_ns;
	rec.payload = buf;
	rec.len = (uint32_t)len;
	r = stor_log_append(s->log, &rec);
	if (r == 0) {
		evd_sealer_add(s->sealer, rec.first_seq, rec.count, buf, len);
		basic_counter_add(&s->records, (uint64_t)n);
		basic_counter_add(&s->batches, 1);
		basic_counter_add(&s->seals, 1);
	} else {
		s->refused_appends += (uint64_t)n;
	}
	atomic_store_explicit(&s->next_seq, stor_log_next_seq(s->log), memory_order_relaxed);
	return r;
}

/* Every seal_interval_s (wall time: a replay seals at segment ends and
   close only, so its numbering depends on the input alone). */
void pl_sink_seal_periodic(pl_sink_t *s)
{
	int64_t now;

	if (s->cfg.deterministic || !s->cfg.seal_interval_s)
		return;
	now = basic_mono_ns();
	if (now < s->seal_next_ns)
		return;
	s->seal_next_ns = now + (int64_t)s->cfg.seal_interval_s * BASIC_NS_PER_SEC;
	/* what the open Batch holds is covered too */
	pl_sink_batch_flush(s);
	pl_sink_seal(s);
}
