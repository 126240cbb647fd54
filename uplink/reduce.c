/* SPDX-License-Identifier: MIT */
/*
 * reduce.c - the uplink's reduced stream (reduce.h): each stored Batch
 * decoded once, its records filtered by their channel's policy (state per
 * channel in a table sorted by id, made at creation), the kept ones
 * encoded by rec_encoder, and record/'s reduced fields appended
 * (rec_reduced_tail), so the ground knows the whole source range exists
 * on board.  Events, Health and TRDP telegrams always go; a Seal Batch
 * goes whole (its signature covers its own bytes).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"
#include "record/batch.h"
#include "record/seal.h"

struct chan_state {
	uint32_t id;
	struct upl_policy pol;
	bool has;            /* a sample of it was sent since the last reset */
	uint32_t quality;
	double value;
	int64_t t_ns;
};

struct upl_reducer {
	struct upl_reduce_cfg cfg;      /* chans and ranges point at our copies */
	struct chan_state *st;          /* sorted by id */
	size_t nst;
	struct upl_frame_range *ranges;
	struct upl_reduce_stats stats;
	/* the encoder of the last source meta, and its capacity */
	rec_encoder_t *enc;
	size_t enc_cap;
	char vehicle[64];
	uint64_t config_hash;
	uint8_t boot_id[REC_BOOT_ID_LEN], log_id[REC_LOG_ID_LEN];
	uint64_t *seqs;                 /* kept records' seqs, enc_cap of them */
	struct rec_channel *dict;       /* a carried dictionary, dict_cap entries */
	size_t dict_cap;
	uint8_t *out;                   /* encoded Batch + reduced tail */
	size_t out_cap;
};

static bool policy_ok(const struct upl_policy *p)
{
	if (p->flags & ~(unsigned)(UPL_POL_NONE | UPL_POL_CHANGE | UPL_POL_DEADBAND | UPL_POL_EVERY))
		return false;
	if ((p->flags & UPL_POL_NONE) && p->flags != UPL_POL_NONE)
		return false;
	if ((p->flags & UPL_POL_DEADBAND) && !(p->deadband > 0 && isfinite(p->deadband)))
		return false;
	return !(p->flags & UPL_POL_EVERY) || p->every_ns > 0;
}

bool upl_reduce_cfg_active(const struct upl_reduce_cfg *cfg)
{
	if (!cfg)
		return false;
	for (size_t i = 0; i < cfg->nchans; i++)
		if (cfg->chans[i].pol.flags)
			return true;
	for (size_t b = 0; b < UPL_REDUCE_BUSES; b++)
		if (cfg->bus_default[b].flags || cfg->frames[b] != UPL_FRAMES_ALL)
			return true;
	return false;
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = ((const struct chan_state *)a)->id, y = ((const struct chan_state *)b)->id;

	return x < y ? -1 : x > y;
}

int upl_reducer_new(const struct upl_reduce_cfg *cfg, upl_reducer_t **ret)
{
	upl_reducer_t *r;

	if (!cfg || !ret || (cfg->nchans && !cfg->chans) || (cfg->nranges && !cfg->ranges))
		return -EINVAL;
	for (size_t i = 0; i < cfg->nchans; i++)
		if (!policy_ok(&cfg->chans[i].pol))
			return -EINVAL;
	for (size_t b = 0; b < UPL_REDUCE_BUSES; b++)
		if (!policy_ok(&cfg->bus_default[b]) || (unsigned)cfg->frames[b] > UPL_FRAMES_IDS)
			return -EINVAL;
	for (size_t i = 0; i < cfg->nranges; i++)
		if (cfg->ranges[i].lo > cfg->ranges[i].hi)
			return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->cfg = *cfg;
	r->st = calloc(cfg->nchans ? cfg->nchans : 1, sizeof(*r->st));
	r->ranges = calloc(cfg->nranges ? cfg->nranges : 1, sizeof(*r->ranges));
	if (!r->st || !r->ranges) {
		upl_reducer_free(r);
		return -ENOMEM;
	}
	for (size_t i = 0; i < cfg->nchans; i++)
		r->st[i] = (struct chan_state){ .id = cfg->chans[i].id, .pol = cfg->chans[i].pol };
	r->nst = cfg->nchans;
	qsort(r->st, r->nst, sizeof(*r->st), by_id);
	for (size_t i = 1; i < r->nst; i++)
		if (r->st[i].id == r->st[i - 1].id) {
			upl_reducer_free(r);
			return -EINVAL;
		}
	if (cfg->nranges)
		memcpy(r->ranges, cfg->ranges, cfg->nranges * sizeof(*r->ranges));
	r->cfg.chans = NULL;
	r->cfg.ranges = r->ranges;
	*ret = r;
	return 0;
}

upl_reducer_t *upl_reducer_free(upl_reducer_t *r)
{
	if (!r)
		return NULL;
	rec_encoder_free(r->enc);
	free(r->st);
	free(r->ranges);
	free(r->seqs);
	free(r->dict);
	free(r->out);
	free(r);
	return NULL;
}

void upl_reducer_reset(upl_reducer_t *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nst; i++)
		r->st[i].has = false;
}

void upl_reducer_stats(const upl_reducer_t *r, struct upl_reduce_stats *ret)
{
	if (r && ret)
		*ret = r->stats;
}

static struct chan_state *state_find(upl_reducer_t *r, uint32_t id)
{
	size_t lo = 0, hi = r->nst;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->st[mid].id == id)
			return &r->st[mid];
		if (r->st[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool frame_kept(const upl_reducer_t *r, uint16_t bus, uint32_t id)
{
	if (bus >= UPL_REDUCE_BUSES || r->cfg.frames[bus] == UPL_FRAMES_ALL)
		return true;
	if (r->cfg.frames[bus] == UPL_FRAMES_NONE)
		return false;
	for (size_t i = 0; i < r->cfg.nranges; i++)
		if (r->ranges[i].bus == bus && id >= r->ranges[i].lo && id <= r->ranges[i].hi)
			return true;
	return false;
}

/* Does the policy pass this sample, against the last one sent? */
static bool sample_passes(const struct chan_state *s, double v, uint32_t q, int64_t t)
{
	unsigned f = s->pol.flags;

	if (f == UPL_POL_ALL)
		return true;
	if (f & UPL_POL_NONE)
		return false;
	/* the first since a reset, a new quality, a NaN appearing or going:
	   the ground's picture would be wrong without it */
	if (!s->has || q != s->quality || isnan(v) != isnan(s->value))
		return true;
	if ((f & UPL_POL_CHANGE) && !isnan(v) && v != s->value)
		return true;
	/* A step of exactly the deadband (a multiple of the signal's
	   resolution, the usual choice) must go: scaled values carry binary
	   noise (67.8 - 62.8 is 4.99999999999999 or 5.00000000000001 as it
	   falls), so "moved by X" allows a relative 1e-9 below X. */
	if ((f & UPL_POL_DEADBAND) && !isnan(v) && fabs(v - s->value) >= s->pol.deadband * (1 - 1e-9))
		return true;
	return (f & UPL_POL_EVERY) && t - s->t_ns >= s->pol.every_ns;
}

/* Whether record it goes, updating the channel's state when it does. */
static bool record_kept(upl_reducer_t *r, const struct acq_item *it)
{
	struct chan_state *s;
	uint16_t bus;

	switch (it->kind) {
	case ACQ_ITEM_CAN:
		return frame_kept(r, it->bus, it->can.id);
	case ACQ_ITEM_SAMPLE:
		s = state_find(r, it->sample.channel);
		bus = (uint16_t)(it->sample.channel >> 16);
		if (!s) /* not on the board's list: no state to judge by */
			return bus >= UPL_REDUCE_BUSES || !(r->cfg.bus_default[bus].flags & UPL_POL_NONE);
		if (!sample_passes(s, it->sample.value, it->sample.quality, it->t_ns))
			return false;
		*s = (struct chan_state){ s->id, s->pol, true, it->sample.quality, it->sample.value, it->t_ns };
		return true;
	case ACQ_ITEM_TEXT:
		/* stored on a change and now and then already: only none drops them */
		s = state_find(r, it->text.channel);
		bus = (uint16_t)(it->text.channel >> 16);
		if (s)
			return !(s->pol.flags & UPL_POL_NONE);
		return bus >= UPL_REDUCE_BUSES || !(r->cfg.bus_default[bus].flags & UPL_POL_NONE);
	default:
		return true; /* events, TRDP telegrams */
	}
}

/* The encoder for this source's vehicle, boot, log and config, with room
   for count records. */
static int encoder_for(upl_reducer_t *r, const struct rec_batch_info *info)
{
	struct rec_batch_meta meta = { .vehicle = info->vehicle, .config_hash = info->config_hash };
	size_t cap = info->count > 64 ? info->count : 64;
	uint64_t *seqs;

	if (info->boot_id_len == REC_BOOT_ID_LEN)
		memcpy(meta.boot_id, info->boot_id, REC_BOOT_ID_LEN);
	if (info->log_id_len == REC_LOG_ID_LEN)
		memcpy(meta.log_id, info->log_id, REC_LOG_ID_LEN);
	if (r->enc && r->enc_cap >= info->count && r->config_hash == meta.config_hash &&
	    !strcmp(r->vehicle, info->vehicle) && !memcmp(r->boot_id, meta.boot_id, REC_BOOT_ID_LEN) &&
	    !memcmp(r->log_id, meta.log_id, REC_LOG_ID_LEN))
		return 0;
	if (strlen(info->vehicle) >= sizeof(r->vehicle))
		return -EINVAL;
	r->enc = rec_encoder_free(r->enc);
	seqs = realloc(r->seqs, cap * sizeof(*seqs));
	if (!seqs)
		return -ENOMEM;
	r->seqs = seqs;
	if (rec_encoder_new(&meta, cap, &r->enc) < 0)
		return -ENOMEM;
	r->enc_cap = cap;
	strcpy(r->vehicle, info->vehicle);
	r->config_hash = meta.config_hash;
	memcpy(r->boot_id, meta.boot_id, REC_BOOT_ID_LEN);
	memcpy(r->log_id, meta.log_id, REC_LOG_ID_LEN);
	return 0;
}

/* The dictionary and Health entries the source carries go along. */
static int carry_extras(upl_reducer_t *r, const rec_batch_t *b, const struct rec_batch_info *info)
{
	for (size_t i = 0; i < info->nhealth; i++) {
		struct rec_health h;

		if (rec_batch_health(b, i, &h) < 0 || rec_encoder_add_health(r->enc, &h) < 0)
			return -ENOBUFS;
	}
	if (!info->nchannels)
		return 0;
	if (info->nchannels > r->dict_cap) {
		struct rec_channel *d = realloc(r->dict, info->nchannels * sizeof(*d));

		if (!d)
			return -ENOMEM;
		r->dict = d;
		r->dict_cap = info->nchannels;
	}
	for (size_t i = 0; i < info->nchannels; i++)
		if (rec_batch_channel(b, i, &r->dict[i]) < 0)
			return -EBADMSG;
	/* strings point into b, which outlives the finish */
	return rec_encoder_set_channels(r->enc, r->dict, info->nchannels) < 0 ? -ENOBUFS : 0;
}

/* Encoded records + the reduced tail into r->out. */
static int finish(upl_reducer_t *r, const struct rec_batch_info *info, size_t kept, const uint8_t **ret_buf,
                  size_t *ret_len)
{
	size_t need, len;
	const uint8_t *enc;
	int k;

	k = rec_encoder_finish(r->enc, info->first_seq, &enc, &len);
	if (k < 0 || (size_t)k != kept)
		return k < 0 ? k : -EIO;
	need = len + REC_REDUCED_TAIL_MAX(kept) + REC_REDUCED_T0_MAX;
	if (need > r->out_cap) {
		uint8_t *o = realloc(r->out, need);

		if (!o)
			return -ENOMEM;
		r->out = o;
		r->out_cap = need;
	}
	memcpy(r->out, enc, len);
	k = rec_reduced_tail(info->first_seq, info->end_seq, r->seqs, kept, r->out + len, need - len);
	if (k < 0)
		return k;
	len += (size_t)k;
	/* No record: the source's time goes along, or the ground could not
	   place the range on a day and its database would skip it (a hole
	   that gap repair fills with the whole Batches). */
	if (!kept && info->t0_ns) {
		k = rec_reduced_t0(info->t0_ns, r->out + len, need - len);
		if (k < 0)
			return k;
		len += (size_t)k;
	}
	*ret_buf = r->out;
	*ret_len = len;
	return 0;
}

/* The last sample of the Batch whose channel is not `none` (its state
   updated as sent); -ENOENT if there is none (then nothing goes: a
   `none` is never broken). */
static int last_sendable(upl_reducer_t *r, const rec_batch_t *b, uint32_t count, struct acq_item *ret)
{
	for (uint32_t i = count; i-- > 0;) {
		struct chan_state *s;

		if (rec_batch_item(b, i, ret) < 0)
			return -EBADMSG;
		if (ret->kind != ACQ_ITEM_SAMPLE || !(s = state_find(r, ret->sample.channel)) ||
		    (s->pol.flags & UPL_POL_NONE))
			continue;
		*s = (struct chan_state){ s->id, s->pol, true, ret->sample.quality, ret->sample.value, ret->t_ns };
		return 0;
	}
	return -ENOENT;
}

static int reduce(upl_reducer_t *r, const rec_batch_t *b, const struct rec_batch_info *info,
                  const uint8_t **ret_buf, size_t *ret_len)
{
	size_t kept = 0;
	int err;

	err = encoder_for(r, info);
	if (err < 0)
		return err;
	if (info->mono_t0_ns)
		rec_encoder_set_clock_offset(r->enc, info->t0_ns - info->mono_t0_ns);
	else
		rec_encoder_clear_clock_offset(r->enc);
	for (uint32_t i = 0; i < info->count; i++) {
		struct acq_item it;

		if (rec_batch_item(b, i, &it) < 0)
			return -EBADMSG;
		if (!record_kept(r, &it))
			continue;
		err = rec_encoder_add(r->enc, &it);
		if (err < 0)
			return err;
		r->seqs[kept++] = it.seq;
	}
	/* Nothing passed: the last sample not `none` goes anyway, so the
	   Batch has a time (t0) that places its range on the ground's day
	   (the database's ledger), and the ground's value of its channel is
	   only fresher for it.  Without one the Batch goes with no record:
	   the range and the source's t0 alone (finish). */
	if (!kept && info->count) {
		struct acq_item it;

		if (last_sendable(r, b, info->count, &it) == 0) {
			err = rec_encoder_add(r->enc, &it);
			if (err < 0)
				return err;
			r->seqs[kept++] = it.seq;
		}
	}
	err = carry_extras(r, b, info);
	if (err == 0)
		err = finish(r, info, kept, ret_buf, ret_len);
	if (err == 0) {
		r->stats.records_out += kept;
		r->stats.batches++;
	}
	return err;
}

int upl_reducer_batch(upl_reducer_t *r, const void *buf, size_t len, const uint8_t **ret_buf, size_t *ret_len)
{
	struct rec_batch_info info;
	struct rec_seal seal;
	rec_batch_t *b = NULL;
	int err;

	if (!r || !buf || !len || !ret_buf || !ret_len)
		return -EINVAL;
	err = rec_batch_decode(buf, len, &b);
	if (err == 0)
		err = rec_batch_info(b, &info);
	/* A Seal Batch goes whole: its signature covers it as stored. A
	   reduced one (never stored, but a source may be anything) too. */
	if (err == 0 && (info.reduced || !info.count || rec_batch_seal(b, &seal) != -ENOENT)) {
		r->stats.whole++;
		rec_batch_free(b);
		return 0;
	}
	if (err == 0) {
		r->stats.records_in += info.count;
		err = reduce(r, b, &info, ret_buf, ret_len);
	}
	rec_batch_free(b);
	if (err < 0) {
		/* sent whole, so the ground has it all; the state no longer says
		   what the ground holds last, so start again */
		if (r->enc)
			r->enc = rec_encoder_free(r->enc);
		upl_reducer_reset(r);
		r->stats.errors++;
		return 0;
	}
	r->stats.bytes_in += len;
	r->stats.bytes_out += *ret_len;
	return 1;
}
