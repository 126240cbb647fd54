/* SPDX-License-Identifier: MIT */
/*
 * recv-text.c - recv's records as text (ground.h, grd_text_*): each vehicle
 * log's new records in time order across its Batches, merged over a window
 * as export merges a log (record/order.h), or in arrival order (--order
 * seq), through export's writer (record/format.h),
 * named by the Batches' dictionaries and, for a log whose Batches carry
 * none yet, by its vehicle's retained dictionary
 * (railmon/<vehicle>/channels) of the same config hash, with the vehicle
 * and log each record came from.  All on recv's thread (upl_recv
 * callbacks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/clock.h"
#include "ground.h"
#include "record/order.h"

/* One vehicle log's records held to go out in time order: a Batch holds
   its CAN frames, then samples, then events, and the next Batch's CAN
   frames can be older than this one's events, so the order spans Batches.
   Each log has its own merge: a vehicle sending its backlog an hour behind
   another's live data is in order within itself, not late against it. */
struct text_log {
	rec_order_t *order;       /* NULL until the log's first record (and in seq order) */
	struct grd_log *gl;       /* its names */
	char *vehicle;
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;
	int64_t pushed_ns;        /* monotonic: when it last took a record */
};

struct grd_text {
	int64_t window_ns;        /* < 0: arrival order, nothing held */
	struct text_log *logs;    /* grd_log.text_idx - 1 indexes it */
	size_t nlogs;
	size_t held;              /* records held over all logs */
	struct grd_dict *dicts;  /* the retained dictionaries, one per vehicle */
	size_t ndicts;
	uint64_t gen;             /* dictionaries taken so far */
};

/* A vehicle's retained dictionary (railmon/<vehicle>/channels), for the
   Batches of its config hash. */
struct grd_dict {
	char *vehicle;
	uint64_t config_hash;
	uint64_t gen;             /* > 0 */
	rec_channels_t *map;
};

#define GRD_DICTS_MAX 10000 /* vehicles whose dictionaries are kept */

/* recv's on_channels: keep the latest dictionary of the vehicle. */
void grd_text_channels(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b)
{
	struct grd_text *t = ((struct grd *)ctx)->text;
	struct grd_dict *d = NULL, *v;
	rec_channels_t *map;

	for (size_t i = 0; i < t->ndicts && !d; i++)
		if (!strcmp(t->dicts[i].vehicle, info->vehicle))
			d = &t->dicts[i];
	if (rec_channels_new(&map) < 0 || rec_channels_learn(map, b) < 0) {
		rec_channels_free(map);
		return; /* no memory: names wait for a Batch's dictionary */
	}
	if (!d && t->ndicts < GRD_DICTS_MAX && (v = realloc(t->dicts, (t->ndicts + 1) * sizeof(*v)))) {
		t->dicts = v;
		d = &t->dicts[t->ndicts];
		*d = (struct grd_dict){ .vehicle = strdup(info->vehicle) };
		t->ndicts += d->vehicle != NULL;
		d = d->vehicle ? d : NULL;
	}
	if (!d) {
		rec_channels_free(map);
		return;
	}
	rec_channels_free(d->map);
	d->map = map;
	d->config_hash = info->config_hash;
	d->gen = ++t->gen;
}

/* Before a Batch's own dictionary: the vehicle's retained one, if it is
   for the Batch's config hash and the log has not taken it yet. */
static void names_from_dict(struct grd_text *t, struct grd_log *gl, const struct rec_batch_info *info)
{
	const struct rec_channel **list;
	int n;

	for (size_t i = 0; i < t->ndicts; i++) {
		struct grd_dict *d = &t->dicts[i];

		if (strcmp(d->vehicle, info->vehicle) || d->config_hash != info->config_hash || gl->names_gen == d->gen)
			continue;
		n = rec_channels_sorted(d->map, &list);
		for (int k = 0; k < n; k++)
			rec_channels_put(gl->names, list[k]);
		free(list);
		gl->names_gen = d->gen;
		return;
	}
}

/* One record out, as export writes it, with the vehicle and log it came from. */
static int text_write(struct grd *g, const struct text_log *tl, const struct acq_item *it)
{
	struct rec_origin origin = { tl->vehicle, tl->log_id, tl->log_id_len };
	struct rec_names nm = rec_channels_names(tl->gl->names, it);
	int r = rec_format_item(g->out, g->fmt, it, &nm, &origin);

	if (r == -EIO)
		clearerr(g->out); /* counted (sink_errors); the next records may go out */
	return r;
}

/* Write what one log holds, oldest first. */
static int log_drain(struct grd *g, struct text_log *tl)
{
	struct acq_item it;
	int r = 0, k;

	while (tl->order && rec_order_pop(tl->order, &it) == 1) {
		g->text->held--;
		k = text_write(g, tl, &it);
		r = r < 0 ? r : k;
	}
	return r;
}

/* Write what is held, every log's oldest first. */
int grd_text_drain(struct grd *g)
{
	int r = 0, k;

	for (size_t i = 0; g->text && i < g->text->nlogs; i++) {
		k = log_drain(g, &g->text->logs[i]);
		r = r < 0 ? r : k;
	}
	return r;
}

/* recv's on_tick: a log quiet for a window has nothing coming that could
   go before what it holds (its records come in seq order, at most a
   window out of time order), so it goes out now rather than at the end. */
void grd_text_tick(void *ctx)
{
	struct grd *g = ctx;
	int64_t now = basic_mono_ns();

	bool wrote = false;

	for (size_t i = 0; g->text && g->text->held && i < g->text->nlogs; i++) {
		struct text_log *tl = &g->text->logs[i];

		if (tl->order && rec_order_count(tl->order) && now - tl->pushed_ns > g->text->window_ns) {
			log_drain(g, tl);
			wrote = true;
		}
	}
	/* A live consumer reading a pipe sees them now, not a buffer later. */
	if (wrote)
		fflush(g->out);
}

uint64_t grd_text_late(const struct grd *g)
{
	uint64_t late = 0;

	for (size_t i = 0; g->text && i < g->text->nlogs; i++)
		late += g->text->logs[i].order ? rec_order_late(g->text->logs[i].order) : 0;
	return late;
}

/* The text state of a ground log, made at its first record. */
static struct text_log *text_log_get(struct grd *g, struct grd_log *gl, const struct rec_batch_info *info)
{
	struct grd_text *t = g->text;
	struct text_log *tl, *v;

	if (gl->text_idx)
		return &t->logs[gl->text_idx - 1];
	v = realloc(t->logs, (t->nlogs + 1) * sizeof(*v));
	if (!v)
		return NULL;
	t->logs = v;
	tl = &t->logs[t->nlogs];
	*tl = (struct text_log){ .gl = gl, .vehicle = strdup(info->vehicle ? info->vehicle : "") };
	if (!tl->vehicle || (t->window_ns >= 0 && rec_order_new(REC_ORDER_MAX_ITEMS, t->window_ns, &tl->order) < 0)) {
		free(tl->vehicle);
		return NULL;
	}
	tl->log_id_len = info->log_id_len <= REC_LOG_ID_LEN ? info->log_id_len : 0;
	if (tl->log_id_len)
		memcpy(tl->log_id, info->log_id, tl->log_id_len);
	gl->text_idx = ++t->nlogs;
	return tl;
}

void grd_text_free(struct grd *g)
{
	if (g->text) {
		for (size_t i = 0; i < g->text->ndicts; i++) {
			free(g->text->dicts[i].vehicle);
			rec_channels_free(g->text->dicts[i].map);
		}
		for (size_t i = 0; i < g->text->nlogs; i++) {
			rec_order_free(g->text->logs[i].order);
			free(g->text->logs[i].vehicle);
		}
		free(g->text->dicts);
		free(g->text->logs);
		free(g->text);
		g->text = NULL;
	}
}

/* Hold one record in its log's merge and write what is due.  At the bound
   over all logs (REC_ORDER_MAX_ITEMS) every log's held records go out:
   memory stays bounded, and records that then arrive older are late. */
static int log_push(struct grd *g, struct text_log *tl, const struct acq_item *it)
{
	struct grd_text *t = g->text;
	struct acq_item due;
	int r = 0, k;

	if (t->held >= REC_ORDER_MAX_ITEMS)
		r = grd_text_drain(g);
	if (rec_order_push(tl->order, it) < 0)
		return -ENOMEM;
	t->held++;
	tl->pushed_ns = basic_mono_ns();
	while (rec_order_next(tl->order, &due) == 1) {
		t->held--;
		k = text_write(g, tl, &due);
		r = r < 0 ? r : k;
	}
	return r;
}

/* recv's on_record: the records of a Batch, named by its log's
   dictionaries, with the vehicle and log they came from: export's writer,
   in time order over the log's Batches (or as they come). */
int grd_text_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                       const struct acq_item *it, bool first, void **log_ctx)
{
	struct grd *g = ctx;
	struct grd_log *gl = grd_log_get(g, info, log_ctx);
	struct text_log *tl;

	if (!gl || (!gl->names && rec_channels_new(&gl->names) < 0) || !(tl = text_log_get(g, gl, info)))
		return -ENOMEM;
	if (first) {
		/* A name that could not be kept (no memory) is printed empty. */
		names_from_dict(g->text, gl, info);
		rec_channels_learn(gl->names, b);
	}
	if (g->fmt == REC_FORMAT_CANDUMP && it->kind != ACQ_ITEM_CAN)
		return 0;
	return tl->order ? log_push(g, tl, it) : text_write(g, tl, it);
}

int grd_text_new(struct grd *g, int64_t window_ns)
{
	g->text = calloc(1, sizeof(*g->text));
	if (!g->text)
		return -ENOMEM;
	g->text->window_ns = window_ns;
	return 0;
}
