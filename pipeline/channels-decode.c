/* SPDX-License-Identifier: MIT */
/*
 * channels-decode.c - an item decoded into the samples, texts and events
 * of its channels (channels.h pl_channels_decode, pl_channels_tick), on
 * the collector thread, with no allocation: a CAN frame by its bus's DBC,
 * J1939 (transport sessions, DM1) on a j1939 bus, a TRDP telegram by its
 * XML's data set, and PD supervision (a telegram timed out, back).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "channels-private.h"
#include "basic/utf8.h"
#include "conf/config-schema.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "dbc/j1939.h"
#include "trdp/dataset.h"
#include "trdp/header.h"
#include "trdp/xml.h"

/* ------------------------------------------------------------ decoding */

/* ------------------------------------------------------------ J1939 */

static void j1939_event(struct acq_item *o, const struct acq_item *frame, uint32_t code, int64_t arg, uint32_t detail)
{
	*o = (struct acq_item){ .kind = ACQ_ITEM_EVENT, .t_ns = frame->t_ns, .bus = frame->bus };
	o->event.code = code;
	o->event.arg = arg;
	o->event.detail = detail;
}

static void j1939_fault_event(struct acq_item *o, const struct acq_item *frame, const struct dbc_j1939_fault *f)
{
	j1939_event(o, frame, ACQ_EV_J1939_TP_FAULT,
	            (int64_t)f->kind | (int64_t)f->reason << 8 | (int64_t)f->expected << 16 | (int64_t)(f->got & 0xff) << 24 |
	            (int64_t)(f->total & 0xff) << 32 | (int64_t)f->da << 40, f->pgn | (uint32_t)f->sa << 24);
}

/* A J1939 message (a frame's or a reassembled one): its signals by PGN, and a DM1's changes. */
static int j1939_payload(pl_channels_t *ch, const struct acq_item *frame, uint32_t pgn, uint8_t sa,
                         const uint8_t *data, size_t len, struct acq_item *out, size_t max)
{
	struct dbc_j1939_dtc dtc[DBC_J1939_DTC_EVENTS];
	const dbc_t *dbc = ch->dbc[frame->bus];
	int n = 0, k;

	if (dbc && (n = dbc_decode_pgn(dbc, pgn, data, len, frame->t_ns, frame->bus, (uint32_t)frame->bus << 16,
	                                   out, max)) < 0)
		return n;
	if (pgn != DBC_J1939_PGN_DM1)
		return n;
	k = dbc_j1939_dm1(ch->j1939[frame->bus], sa, data, len, dtc,
	                  max - (size_t)n < DBC_J1939_DTC_EVENTS ? max - (size_t)n : DBC_J1939_DTC_EVENTS);
	for (int i = 0; i < k; i++)
		j1939_event(&out[n++], frame, dtc[i].active ? ACQ_EV_J1939_DTC_ACTIVE : ACQ_EV_J1939_DTC_CLEARED,
		            (int64_t)dtc[i].spn | (int64_t)dtc[i].fmi << 19 | (int64_t)dtc[i].oc << 24 |
		            (int64_t)dtc[i].lamps << 32, dtc[i].sa);
	return n;
}

/* A frame of a j1939 = true bus: sessions first (timeouts, then this frame), then its payload. */
static int decode_j1939(pl_channels_t *ch, const struct acq_item *it, struct acq_item *out, size_t max)
{
	dbc_j1939_t *j = ch->j1939[it->bus];
	struct dbc_j1939_fault f;
	struct dbc_j1939_msg m;
	struct dbc_j1939_id id;
	size_t n = 0;
	int r;

	while (n < max && dbc_j1939_expire(j, it->t_ns, &f) == 1)
		j1939_fault_event(&out[n++], it, &f);
	r = dbc_j1939_feed(j, it, &m, &f);
	if (r == 2 && n < max)
		j1939_fault_event(&out[n++], it, &f);
	if (r == 1)
		r = j1939_payload(ch, it, m.id.pgn, m.id.sa, m.data, m.len, out + n, max - n);
	else if ((id = dbc_j1939_id_parse(it->can.id)).pgn != DBC_J1939_PGN_TP_CM && id.pgn != DBC_J1939_PGN_TP_DT)
		r = j1939_payload(ch, it, id.pgn, id.sa, it->can.data, it->can.len, out + n, max - n);
	else
		r = 0;
	return r < 0 ? r : (int)n + r;
}

/* ------------------------------------------------------------ TRDP */

/*
 * A decoded text (UTF-8) as a text item: a text item holds printable ASCII
 * only (acq-item.h; the Batch refuses anything else), so each character
 * that is not becomes one '?', and the first ACQ_TEXT_MAX characters are
 * kept.  Either makes the quality INVALID: the text is not the one sent.
 */
static void trdp_text_item(struct acq_text *t, const char *s, size_t len)
{
	size_t i = 0, n = 0;
	bool exact = true;

	while (i < len) {
		unsigned char c = (unsigned char)s[i];
		size_t step = basic_utf8_seq(s + i, len - i); /* one character, one '?' */

		if (!step) /* not UTF-8 (trdp/dataset.c makes every text UTF-8): a byte each */
			step = 1;
		if (n == ACQ_TEXT_MAX) {
			exact = false;
			break;
		}
		if (c >= 0x20 && c <= 0x7e) {
			t->text[n++] = (char)c;
		} else {
			t->text[n++] = '?';
			exact = false;
		}
		i += step;
	}
	t->len = (uint8_t)n;
	t->quality = exact ? ACQ_Q_GOOD : ACQ_Q_INVALID;
}

static void trdp_event(struct acq_item *o, int64_t t_ns, uint16_t bus, uint32_t code, int64_t arg, uint32_t comid)
{
	*o = (struct acq_item){ .kind = ACQ_ITEM_EVENT, .t_ns = t_ns, .bus = bus };
	o->event = (struct acq_event){ .code = code, .arg = arg, .detail = comid };
}

/* TRDP_TIMEOUT for each telegram of bus b silent for more than its
   timeout + grace at now (up to max); stamped when it timed out. */
static size_t trdp_expire(pl_channels_t *ch, size_t b, int64_t now_ns, int64_t grace_ns, struct acq_item *out,
                          size_t max)
{
	struct trdp_bus *tb = ch->trdp[b];
	size_t n = 0;

	for (size_t i = 0; tb && i < tb->cfg->n_telegrams && n < max; i++) {
		struct trdp_tel_map *m = &tb->map[i];
		if (m->state != TEL_LIVE || !m->timeout_ns || now_ns - m->last_ns <= m->timeout_ns + grace_ns)
			continue;
		m->state = TEL_TIMED_OUT;
		tb->counts.timeouts++;
		trdp_event(&out[n++], m->last_ns + m->timeout_ns, (uint16_t)b, ACQ_EV_TRDP_TIMEOUT,
		           m->timeout_ns / 1000000, tb->cfg->telegrams[i].comid);
	}
	return n;
}

size_t pl_channels_tick(pl_channels_t *ch, int64_t now_ns, int64_t grace_ns, struct acq_item *out, size_t max)
{
	size_t n = 0;

	for (size_t b = 0; ch && b < ch->cfg->nbuses && n < max; b++)
		n += trdp_expire(ch, b, now_ns, grace_ns, out + n, max - n);
	return n;
}

/*
 * A valid telegram of a bus with an XML: its data set (datasetLength bytes
 * after the header, never the padding after them) decoded with its
 * telegram's plan into samples and texts at the telegram's receive time.
 * Items of a variable array past its channels, and telegrams whose data
 * set is short, are counted, not decoded.
 */
static int decode_trdp(pl_channels_t *ch, const struct acq_item *it, struct acq_item *out, size_t max)
{
	struct trdp_bus *tb = ch->trdp[it->bus];
	const struct trdp_telegram *t;
	const struct trdp_tel_map *m;
	struct trdp_decode_result res;
	struct trdp_tel_map *tm;
	struct trdp_header h;
	size_t hsize, n = 0;
	int kind, r;

	if (!tb || !it->trdp.data || (it->trdp.flags >> ACQ_TRDP_RESULT_SHIFT) != TRDP_HDR_OK)
		return 0;
	kind = it->trdp.flags & ACQ_TRDP_MD ? TRDP_KIND_MD : TRDP_KIND_PD;
	if (trdp_header_parse((enum trdp_kind)kind, it->trdp.data, it->trdp.len, &h) != TRDP_HDR_OK)
		return 0;
	/* the timeouts this telegram's time shows, as a tick would have */
	n = trdp_expire(ch, it->bus, it->t_ns, 0, out, max);
	if (!(t = trdp_config_find(tb->cfg, h.com_id))) {
		tb->counts.unknown++;
		return (int)n;
	}
	tm = &tb->map[t - tb->cfg->telegrams];
	if (kind == TRDP_KIND_PD) {
		if (tm->state == TEL_TIMED_OUT && n < max) {
			tb->counts.backs++;
			trdp_event(&out[n++], it->t_ns, it->bus, ACQ_EV_TRDP_BACK, (it->t_ns - tm->last_ns) / 1000000,
			           t->comid);
		}
		tm->state = TEL_LIVE;
		tm->last_ns = it->t_ns;
	}
	if (!t->plan)
		return (int)n;
	m = tm;
	hsize = kind == TRDP_KIND_MD ? TRDP_MD_HEADER_SIZE : TRDP_PD_HEADER_SIZE;
	r = trdp_plan_decode(t->plan, it->trdp.data + hsize, h.dataset_len, ch->tvalues, ch->ntvalues, ch->ttext,
	                     ch->nttext, &res);
	if (r < 0) {
		/* never part of a data set: a short one says nothing for sure */
		tb->counts.bad++;
		return (int)n;
	}
	tb->counts.decoded++;
	for (size_t k = 0; k < res.count && n < max; k++) {
		const struct trdp_value *v = &ch->tvalues[k];
		uint32_t id;

		if (v->index >= m->nslots[v->leaf]) {
			tb->counts.past_channels++;
			continue;
		}
		id = (uint32_t)it->bus << 16 | (m->first[v->leaf] + v->index);
		if (v->type == TRDP_TYPE_CHAR8 || v->type == TRDP_TYPE_UTF16) {
			out[n] = (struct acq_item){ .kind = ACQ_ITEM_TEXT, .t_ns = it->t_ns, .bus = it->bus };
			out[n].text.channel = id;
			trdp_text_item(&out[n].text, ch->ttext + v->text_off, v->text_len);
		} else {
			out[n] = (struct acq_item){ .kind = ACQ_ITEM_SAMPLE, .t_ns = it->t_ns, .bus = it->bus };
			out[n].sample.channel = id;
			out[n].sample.quality = v->value == v->value ? ACQ_Q_GOOD : ACQ_Q_INVALID;
			out[n].sample.value = v->value;
		}
		n++;
	}
	return (int)n;
}

int pl_channels_trdp_counts(const pl_channels_t *ch, size_t b, struct pl_trdp_counts *ret)
{
	if (!ch || b >= CONF_BUSES_MAX || !ch->trdp[b] || !ret)
		return -EINVAL;
	*ret = ch->trdp[b]->counts;
	return 0;
}

int pl_channels_decode(pl_channels_t *ch, const struct acq_item *it, struct acq_item *out, size_t max)
{
	if (it->bus >= ch->cfg->nbuses)
		return 0;
	if (it->kind == ACQ_ITEM_TRDP)
		return decode_trdp(ch, it, out, max);
	if (it->kind != ACQ_ITEM_CAN || (it->can.flags & (ACQ_CAN_ERR | ACQ_CAN_RTR)))
		return 0;
	if (ch->j1939[it->bus] && (it->can.flags & ACQ_CAN_EXT))
		return decode_j1939(ch, it, out, max);
	if (!ch->dbc[it->bus])
		return 0;
	return dbc_decode(ch->dbc[it->bus], it, (uint32_t)it->bus << 16, out, max);
}

size_t pl_channels_decode_max(const pl_channels_t *ch)
{
	return ch ? ch->decode_max : 0;
}

const dbc_t *pl_channels_dbc(const pl_channels_t *ch, size_t b)
{
	return ch && b < CONF_BUSES_MAX ? ch->dbc[b] : NULL;
}
