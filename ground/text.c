/* SPDX-License-Identifier: MIT */
/*
 * text.c - recv's records as text (ground.h, grd_text_*): each Batch's
 * new records in time order through export's writer (record/format.h),
 * named by the Batches' dictionaries and, for a log whose Batches carry
 * none yet, by its vehicle's retained dictionary
 * (railmon/<vehicle>/channels) of the same config hash, with the vehicle
 * and log each record came from.  All on recv's thread (upl_recv
 * callbacks).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ground.h"
#include "record/order.h"

/* The records of the Batch being written, held to go out in time order
   (a Batch holds its CAN frames, then samples, then events), with the
   log and origin they go out with. */
struct grd_text {
	rec_order_t *order;
	struct grd_log *gl;
	char *vehicle;
	uint8_t log_id[REC_LOG_ID_LEN];
	size_t log_id_len;
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

/* One held record out, as export writes it. */
static int text_write(struct grd *g, const struct acq_item *it)
{
	struct grd_text *t = g->text;
	struct rec_origin origin = { t->vehicle, t->log_id, t->log_id_len };
	struct rec_names nm = rec_channels_names(t->gl->names, it);
	int r = rec_format_item(g->out, g->fmt, it, &nm, &origin);

	if (r == -EIO)
		clearerr(g->out); /* counted (sink_errors); the next records may go out */
	return r;
}

/* Write what is held, oldest first. */
int grd_text_drain(struct grd *g)
{
	struct acq_item it;
	int r = 0, k;

	while (rec_order_pop(g->text->order, &it) == 1) {
		k = text_write(g, &it);
		r = r < 0 ? r : k;
	}
	return r;
}

/* A new Batch's origin, once what the last one left is out. */
static int text_start(struct grd *g, struct grd_log *gl, const struct rec_batch_info *info)
{
	struct grd_text *t = g->text;
	int r = grd_text_drain(g);

	free(t->vehicle);
	t->vehicle = strdup(info->vehicle ? info->vehicle : "");
	t->gl = gl;
	t->log_id_len = info->log_id_len <= REC_LOG_ID_LEN ? info->log_id_len : 0;
	if (t->log_id_len)
		memcpy(t->log_id, info->log_id, t->log_id_len);
	return t->vehicle ? r : -ENOMEM;
}

void grd_text_free(struct grd *g)
{
	if (g->text) {
		for (size_t i = 0; i < g->text->ndicts; i++) {
			free(g->text->dicts[i].vehicle);
			rec_channels_free(g->text->dicts[i].map);
		}
		free(g->text->dicts);
		rec_order_free(g->text->order);
		free(g->text->vehicle);
		free(g->text);
		g->text = NULL;
	}
}

/* recv's on_record: the records of a Batch, named by its log's
   dictionaries, with the vehicle and log they came from: export's writer,
   in time order within the Batch. */
int grd_text_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                       const struct acq_item *it, bool first, void **log_ctx)
{
	struct grd *g = ctx;
	struct grd_log *gl = grd_log_get(g, info, log_ctx);
	struct acq_item due;
	int r = 0;

	if (!gl || (!gl->names && rec_channels_new(&gl->names) < 0))
		return -ENOMEM;
	if (first) {
		/* A name that could not be kept (no memory) is printed empty. */
		names_from_dict(g->text, gl, info);
		rec_channels_learn(gl->names, b);
		r = text_start(g, gl, info);
	}
	if (g->fmt == REC_FORMAT_CANDUMP && it->kind != ACQ_ITEM_CAN)
		return r;
	if (rec_order_push(g->text->order, it) == -ENOBUFS && rec_order_pop(g->text->order, &due) == 1) {
		/* a Batch larger than the order holds: the oldest goes out now */
		r = text_write(g, &due);
		rec_order_push(g->text->order, it);
	}
	/* the Batch's last record: all of it can go */
	if (it->seq == info->first_seq + info->count - 1)
		r = r < 0 ? r : grd_text_drain(g);
	return r;
}

int grd_text_new(struct grd *g)
{
	g->text = calloc(1, sizeof(*g->text));
	if (!g->text || rec_order_new(REC_ORDER_MAX_ITEMS, 0, &g->text->order) < 0) {
		grd_text_free(g);
		return -ENOMEM;
	}
	return 0;
}
