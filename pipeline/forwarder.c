/* SPDX-License-Identifier: MIT */
/* forwarder.c - the uplink forwarder over a running railmon's log (forwarder.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/clock.h"
#include "channels.h"
#include "forwarder.h"
#include "record/batch.h"
#include "storage/stor.h"
#include "uplink/request.h"

/* The forwarder's view of the log (uplink/ cannot see storage/). */
static int fwd_seek(void *ctx, uint64_t seq)
{
	return stor_reader_seek_seq(ctx, seq);
}

static int fwd_seek_time(void *ctx, int64_t t_ns)
{
	return stor_reader_seek_time(ctx, t_ns);
}

static int fwd_last_before(void *ctx, int64_t t_ns, uint64_t *ret_first_seq, uint32_t *ret_count)
{
	struct stor_rec r;
	int k = stor_reader_last_before(ctx, t_ns, &r);

	if (k == 1) {
		*ret_first_seq = r.first_seq;
		*ret_count = r.count;
	}
	return k;
}

static int fwd_next(void *ctx, struct upl_rec *ret)
{
	struct stor_rec r;
	int k = stor_reader_next(ctx, &r);

	if (k == 1)
		*ret = (struct upl_rec){ r.first_seq, r.count, r.t_last_ns, r.payload, r.len, r.t_first_ns };
	return k;
}

struct upl_source pl_log_source(stor_reader_t *reader)
{
	return (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
	                            .last_before = fwd_last_before, .ctx = reader };
}

static struct upl_policy policy_of(const struct conf_uplink_policy *p)
{
	/* the bits are the same (conf/ and uplink/ do not see each other) */
	return (struct upl_policy){ p->flags, p->deadband, (int64_t)p->every_ms * 1000000 };
}

bool pl_uplink_reduces(const struct conf_board *cfg)
{
	for (size_t i = 0; i < cfg->npolicies; i++)
		if (cfg->policies[i].pol.flags)
			return true;
	for (size_t b = 0; b < cfg->nbuses; b++)
		if (cfg->bus_uplink[b].flags || cfg->bus_frames[b].none || cfg->bus_frames[b].nranges)
			return true;
	return false;
}

static int reduce_frames(const struct conf_board *cfg, struct upl_reduce_cfg *rc)
{
	struct upl_frame_range *r;
	size_t n = 0;

	for (size_t b = 0; b < cfg->nbuses && b < UPL_REDUCE_BUSES; b++)
		n += cfg->bus_frames[b].nranges;
	r = calloc(n ? n : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	n = 0;
	for (size_t b = 0; b < cfg->nbuses && b < UPL_REDUCE_BUSES; b++) {
		const struct conf_uplink_frames *f = &cfg->bus_frames[b];

		rc->bus_default[b] = policy_of(&cfg->bus_uplink[b]);
		rc->frames[b] = f->none ? UPL_FRAMES_NONE : f->nranges ? UPL_FRAMES_IDS : UPL_FRAMES_ALL;
		for (size_t i = 0; i < f->nranges; i++)
			r[n++] = (struct upl_frame_range){ (uint16_t)b, f->ranges[i].lo, f->ranges[i].hi };
	}
	rc->ranges = r;
	rc->nranges = n;
	return 0;
}

int pl_uplink_reduce(const struct conf_board *cfg, const struct pl_channels *ch, struct upl_reduce_cfg *ret,
                     char *err, size_t errlen)
{
	const struct pl_channel *list = NULL;
	struct upl_reduce_chan *chans;
	size_t n = ch ? pl_channels_list(ch, &list) : 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (!pl_uplink_reduces(cfg))
		return 0;
	chans = calloc(n ? n : 1, sizeof(*chans));
	if (!chans || reduce_frames(cfg, ret) < 0) {
		free(chans);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		chans[i] = (struct upl_reduce_chan){ list[i].id, list[i].bus < UPL_REDUCE_BUSES
		                                     ? ret->bus_default[list[i].bus] : (struct upl_policy){ 0 } };
	ret->chans = chans;
	ret->nchans = n;
	for (size_t k = 0; k < cfg->npolicies; k++) {
		const struct conf_channel_policy *p = &cfg->policies[k];
		char why[256] = "";
		size_t i = 0;

		r = ch ? pl_channels_find(ch, p->channel, &i, why, sizeof(why)) : -ENOENT;
		if (r < 0) {
			snprintf(err, errlen, "%s:%d: uplink: %s channel '%s'%s%s", cfg->path, p->line,
			         r == -ENOTUNIQ ? "more than one" : "no", p->channel, why[0] ? ": " : "", why);
			pl_uplink_reduce_free(ret);
			return r == -ENOTUNIQ ? r : -ENOENT;
		}
		chans[i].pol = policy_of(&p->pol);
	}
	return 1;
}

void pl_uplink_reduce_free(struct upl_reduce_cfg *rc)
{
	free((void *)rc->chans);
	free((void *)rc->ranges);
	memset(rc, 0, sizeof(*rc));
}

/* Forwarder thread (normal priority) -> event ring: a single producer. */
static void fwd_event(void *ctx, enum upl_fwd_event ev, int err)
{
	struct acq_ring *events = ctx;
	struct acq_item it = { .kind = ACQ_ITEM_EVENT, .t_ns = basic_realtime_ns(), .bus = ACQ_SOURCE_DAEMON };

	it.event.code = ev == UPL_FWD_CONNECTED ? ACQ_EV_UPLINK_CONNECT : ACQ_EV_UPLINK_FAULT;
	it.event.arg = err;
	it.event.detail = (uint32_t)ev;
	acq_ring_item_push(events, &it); /* full: counted, reported as an overrun */
}

/* The readers: the backlog's from the cursor, and with live_ahead a
   second one that follows the head of the log, so live records overtake a
   backlog that is still draining after a tunnel. */
static int open_readers(struct pl_forwarder *f, const char *dir, bool live, struct upl_forward_cfg *fc, char *err,
                        size_t errlen)
{
	int r = stor_reader_open(dir, &f->reader);

	if (r >= 0 && live)
		r = stor_reader_open(dir, &f->live_reader);
	/* A third for the ground's gap repair (railmon/<vehicle>/resend). */
	if (r >= 0)
		r = stor_reader_open(dir, &f->resend_reader);
	/* A fourth for held windows, sent ahead of the backlog. */
	if (r >= 0)
		r = stor_reader_open(dir, &f->hold_reader);
	if (r < 0) {
		snprintf(err, errlen, "%s: uplink cannot read the log: %s", dir, strerror(-r));
		return r;
	}
	fc->source = (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
	                                  .ctx = f->reader };
	if (live)
		fc->live_source = (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
		                                       .ctx = f->live_reader };
	/* seek_time and last_before too: full-rate requests map their time
	   range to seqs */
	fc->resend_source = (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
	                                         .last_before = fwd_last_before, .ctx = f->resend_reader };
	fc->hold_source = (struct upl_source){ .seek = fwd_seek, .next = fwd_next, .seek_time = fwd_seek_time,
	                                       .ctx = f->hold_reader };
	return 0;
}

/* The dictionary as one record-less Batch (vehicle, config hash, log id):
   the retained channels message.  As much of it as one Batch holds (about
   10,000 channels in 1 MiB); more is said.  NULL on failure (then no
   retained message: names wait for a Batch's dictionary). */
static rec_encoder_t *dictionary_batch(struct pl_forwarder *f, const struct conf_board *cfg, stor_log_t *log,
                                       const struct pl_channels *ch, const uint8_t **ret_buf, size_t *ret_len)
{
	struct rec_batch_meta meta = { .vehicle = cfg->vehicle, .config_hash = cfg->hash };
	size_t n = pl_channels_list(ch, NULL);
	rec_encoder_t *enc;
	int k;

	if (!ch || !n)
		return NULL;
	stor_log_id(log, meta.log_id);
	if (rec_encoder_new(&meta, 1, &enc) < 0)
		return NULL;
	k = rec_encoder_set_channels(enc, pl_channels_dictionary(ch), n);
	if (k <= 0 || rec_encoder_finish(enc, 0, ret_buf, ret_len) < 0)
		return rec_encoder_free(enc);
	f->dict_sent = (size_t)k; /* fewer than n: said by cli/ */
	f->dict_channels = n;
	return enc;
}

int pl_forwarder_open(struct pl_forwarder *f, const struct conf_board *cfg, const char *dir, stor_log_t *log,
                         const struct pl_channels *ch, struct acq_ring *events,
                         void (*on_config)(void *ctx, const void *payload, size_t len), void *config_ctx,
                         char *err, size_t errlen)
{
	const struct conf_uplink *u = &cfg->uplink;
	struct upl_forward_cfg fc = { 0 };
	struct upl_reduce_cfg red;
	rec_encoder_t *dict;
	int r;

	memset(f, 0, sizeof(*f));
	if (!u->enabled)
		return 0;
	r = pl_uplink_reduce(cfg, ch, &red, err, errlen);
	if (r < 0)
		return r;
	fc.reduce = r ? &red : NULL;
	r = open_readers(f, dir, u->live_ahead, &fc, err, errlen);
	if (r < 0) {
		pl_uplink_reduce_free(&red);
		return r;
	}
	snprintf(f->client, sizeof(f->client), "railmon-%s", cfg->vehicle);
	snprintf(f->cursor, sizeof(f->cursor), "%s/uplink.cursor", dir);
	fc.host = u->host;
	fc.port = u->port;
	fc.client_id = f->client;
	fc.vehicle = cfg->vehicle;
	fc.cursor_path = f->cursor;
	snprintf(f->requests, sizeof(f->requests), "%s/uplink.requests", dir);
	fc.requests_path = f->requests;
	fc.log_next_seq = stor_log_next_seq(log);
	fc.publish_events = true;
	fc.use_tls = u->tls;
	fc.tls = (struct upl_tls_cfg){ u->ca_file[0] ? u->ca_file : NULL, u->cert_file[0] ? u->cert_file : NULL,
	                               u->key_file[0] ? u->key_file : NULL, u->tls_insecure };
	fc.username = u->username[0] ? u->username : NULL;
	fc.password = u->password[0] ? u->password : NULL;
	fc.inflight = u->inflight;
	fc.keepalive_s = u->keepalive_s;
	fc.rate_bytes_s = u->rate_bytes_s;
	fc.cursor_interval_ms = 1000;
	fc.on_event = fwd_event;
	fc.event_ctx = events;
	fc.on_config = on_config;
	fc.config_ctx = config_ctx;
	/* the forwarder copies it */
	dict = dictionary_batch(f, cfg, log, ch, (const uint8_t **)&fc.channels_msg, &fc.channels_len);
	r = upl_forwarder_new(&fc, &f->fwd);
	pl_uplink_reduce_free(&red); /* the forwarder copied it */
	rec_encoder_free(dict);
	if (r < 0) {
		upl_requests_t *q = NULL;
		unsigned line = 0;

		/* the requests file's own fault, named with its line */
		if (upl_requests_open(f->requests, &q, &line) < 0 && line)
			snprintf(err, errlen, "%s: line %u: damaged (move it away to drop the ground's pending full-rate "
			         "requests)", f->requests, line);
		else
			snprintf(err, errlen, "%s: [uplink]: %s", cfg->path, strerror(-r));
		upl_requests_free(q);
	}
	return r;
}

void pl_forwarder_close(struct pl_forwarder *f)
{
	f->fwd = upl_forwarder_free(f->fwd);
	f->reader = stor_reader_free(f->reader);
	f->live_reader = stor_reader_free(f->live_reader);
	f->resend_reader = stor_reader_free(f->resend_reader);
	f->hold_reader = stor_reader_free(f->hold_reader);
}
