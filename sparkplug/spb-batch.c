/* SPDX-License-Identifier: MIT */
/*
 * spb-batch.c - a device's DBIRTH from the channel list and its DDATA
 * from a stored Batch (spb-batch.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "record/names.h"
#include "sparkplug/spb-batch.h"
#include "sparkplug/spb-session.h"

uint64_t spb_channel_alias(uint32_t channel_id)
{
	return (uint64_t)SPB_ALIAS_CHANNELS + channel_id;
}

int spb_dbirth_add_channels(spb_payload_t *pl, const struct spb_channel *ch, size_t n, uint16_t bus,
                            uint64_t t_ms)
{
	int added = 0;

	if (!pl || (!ch && n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (ch[i].bus != bus)
			continue;
		struct spb_birth_metric m = { ch[i].name, spb_channel_alias(ch[i].id), t_ms, ch[i].unit,
		                              { spb_channel_datatype(&ch[i], 1, ch[i].id, ch[i].is_text), true, 0, NULL },
		                              ch[i].labels };
		int r = spb_payload_add_birth(pl, &m);
		if (r < 0)
			return r;
		added++;
	}
	return added;
}

uint32_t spb_channel_datatype(const struct spb_channel *ch, size_t n, uint32_t channel_id, bool is_text)
{
	for (size_t i = 0; ch && i < n; i++)
		if (ch[i].id == channel_id && ch[i].datatype != SPB_DT_UNKNOWN)
			return ch[i].datatype;
	return spb_datatype_of_channel(is_text, -1, NULL);
}

int spb_device_change(const struct acq_item *it)
{
	if (!it || it->kind != ACQ_ITEM_EVENT)
		return 0;
	switch (it->event.code) {
	case ACQ_EV_CAN_GONE: case ACQ_EV_MB_DISCONNECT: return -1;
	case ACQ_EV_CAN_BACK: case ACQ_EV_MB_CONNECT: return 1;
	default: return 0;
	}
}

/* The ms of a record's ns (before 1970: 0, which no stored record has). */
static uint64_t ms_of(int64_t t_ns)
{
	return t_ns > 0 ? (uint64_t)(t_ns / 1000000) : 0;
}

/* railmon's quality word (export's, record/names.h); NULL: good.  A
   value the schema does not name is not good either. */
static const char *quality_word(uint32_t q)
{
	const char *w = rec_quality_name(q);

	return q == ACQ_Q_GOOD ? NULL : w ? w : "unknown";
}

/* What a DDATA walk needs of the device: its bus, its channels'
   datatypes, and the values that did not fit them. */
struct ddata_ctx {
	uint16_t bus;
	const struct spb_channel *ch;
	size_t n;
	size_t hint;     /* where the last channel was found: a Batch's samples come in channel runs */
	uint64_t nulled;
};

/* A sample's datatype from ctx's channels: from the last one found on,
   then from the start, so a Batch in channel order costs a compare a
   sample. */
static uint32_t sample_datatype(struct ddata_ctx *c, uint32_t id)
{
	for (size_t k = 0; k < c->n; k++) {
		size_t i = (c->hint + k) % c->n;
		if (c->ch[i].id == id) {
			c->hint = i;
			return spb_channel_datatype(&c->ch[i], 1, id, false);
		}
	}
	return spb_datatype_of_channel(false, -1, NULL);
}

static int add_item(spb_payload_t *pl, const struct acq_item *it, struct ddata_ctx *c, bool historical)
{
	if (it->kind == ACQ_ITEM_TEXT) {
		struct spb_data_metric t = { spb_channel_alias(it->text.channel), ms_of(it->t_ns), historical,
		                             { SPB_DT_STRING, false, 0, "" }, quality_word(it->text.quality) };
		return spb_payload_add_data_text(pl, &t, it->text.text, it->text.len);
	}
	uint32_t dt = sample_datatype(c, it->sample.channel);
	const char *q = quality_word(it->sample.quality);
	/* never cast into the type: no value, and why */
	bool fits = spb_value_fits(dt, it->sample.value);
	struct spb_data_metric m = { spb_channel_alias(it->sample.channel), ms_of(it->t_ns), historical,
	                             { dt, !fits, fits ? it->sample.value : 0, NULL },
	                             fits ? q : q ? q : SPB_QUALITY_OUT_OF_TYPE };
	int r = spb_payload_add_data(pl, &m);
	if (r == 0 && !fits)
		c->nulled++;
	return r;
}

/* An event as the Events metric's text; its length (cut to fit). */
static size_t event_text(const struct acq_item *it, const char *const *bus_names, size_t nbus, char *buf,
                         size_t len)
{
	const char *name = rec_event_name(it->event.code);
	char code[16], bus[24];
	int n;

	snprintf(code, sizeof(code), "%" PRIu32, it->event.code);
	snprintf(bus, sizeof(bus), "bus %u", (unsigned)it->bus);
	n = snprintf(buf, len, "%s %s detail %" PRIu32 " arg %" PRId64, name ? name : code,
	             it->bus < nbus && bus_names && bus_names[it->bus] ? bus_names[it->bus] : bus, it->event.detail,
	             it->event.arg);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* Walk b's records, adding those add() takes (it returns 1 added, 0 not
   its kind, or -errno); the metrics added, or, on a record that does not
   decode (-EBADMSG) or add()'s error, pl cut back to where it was.  The
   one walk of the DDATA and NDATA builders below. */
typedef int (*add_fn)(spb_payload_t *pl, const struct acq_item *it, void *ctx, bool historical);

static int add_records(spb_payload_t *pl, const rec_batch_t *b, add_fn add, void *ctx, bool historical)
{
	struct rec_batch_info info;
	size_t before = spb_payload_count(pl);
	int added = 0, r;

	if (!pl || !b || rec_batch_info(b, &info) < 0)
		return -EINVAL;
	for (size_t i = 0; i < info.count; i++) {
		struct acq_item it;

		if (rec_batch_item(b, i, &it) < 0) {
			r = -EBADMSG;
			goto undo;
		}
		if ((r = add(pl, &it, ctx, historical)) < 0)
			goto undo;
		added += r;
	}
	return added;
undo:
	spb_payload_truncate(pl, before);
	return r;
}

struct event_names {
	const char *const *bus_names;
	size_t nbus;
};

static int add_event(spb_payload_t *pl, const struct acq_item *it, void *ctx, bool historical)
{
	const struct event_names *en = ctx;
	char text[SPB_TEXT_COPY_MAX + 1];
	int r;

	if (it->kind != ACQ_ITEM_EVENT)
		return 0;
	struct spb_data_metric m = { SPB_ALIAS_EVENTS, ms_of(it->t_ns), historical,
	                             { SPB_DT_STRING, false, 0, "" }, NULL };
	size_t n = event_text(it, en->bus_names, en->nbus, text, sizeof(text));
	r = spb_payload_add_data_text(pl, &m, text, n);
	return r < 0 ? r : 1;
}

int spb_ndata_add_events(spb_payload_t *pl, const rec_batch_t *b, const char *const *bus_names, size_t nbus,
                         bool historical)
{
	struct event_names en = { bus_names, nbus };

	return add_records(pl, b, add_event, &en, historical);
}

static int add_bus_item(spb_payload_t *pl, const struct acq_item *it, void *ctx, bool historical)
{
	struct ddata_ctx *c = ctx;
	int r;

	if ((it->kind != ACQ_ITEM_SAMPLE && it->kind != ACQ_ITEM_TEXT) || it->bus != c->bus)
		return 0;
	r = add_item(pl, it, c, historical);
	return r < 0 ? r : 1;
}

int spb_ddata_add_batch(spb_payload_t *pl, const rec_batch_t *b, const struct spb_channel *ch, size_t n,
                        uint16_t bus, bool historical, uint64_t *nulled)
{
	struct ddata_ctx c = { bus, ch, ch ? n : 0, 0, 0 };
	int r = add_records(pl, b, add_bus_item, &c, historical);

	if (r >= 0 && nulled)
		*nulled += c.nulled;
	return r;
}
