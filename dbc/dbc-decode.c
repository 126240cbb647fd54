/* SPDX-License-Identifier: MIT */
/*
 * dbc-decode.c - a loaded DBC read: its messages and signals (the info
 * calls, the value tables), and CAN frames (or a J1939 PGN's reassembled
 * payload) decoded into samples through the ops dbc-load.c compiled.
 * Nothing here allocates: decode runs on the collector for every frame.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dbc-private.h"
#include "j1939.h"

unsigned dbc_signal_count(const dbc_t *dbc)
{
	return dbc ? dbc->nsigs : 0;
}

unsigned dbc_decode_max(const dbc_t *dbc)
{
	return dbc ? dbc->decode_max : 0;
}

unsigned dbc_message_count(const dbc_t *dbc)
{
	return dbc ? dbc->nmsgs : 0;
}

int dbc_message_info(const dbc_t *dbc, unsigned index, struct dbc_message_info *ret_info)
{
	const struct dbc_msg *m;

	if (!dbc || !ret_info || index >= dbc->nmsgs)
		return -EINVAL;
	m = &dbc->msgs[index];
	*ret_info = (struct dbc_message_info){ .name = m->name, .id = m->id, .ext = m->ext, .dlc = m->dlc,
	                                            .cycle_ms = m->cycle_ms, .nsignals = m->nsig };
	return 0;
}

int dbc_signal_info(const dbc_t *dbc, unsigned index, struct dbc_signal_info *ret_info)
{
	const struct dbc_sig *s;
	const struct dbc_msg *m;

	if (!dbc || !ret_info || index >= dbc->nsigs)
		return -EINVAL;
	s = &dbc->sigs[index];
	m = &dbc->msgs[s->msg];
	*ret_info = (struct dbc_signal_info){
		.message = m->name, .msg_id = m->id, .ext = m->ext, .name = s->name, .unit = s->unit,
		.min = s->min, .max = s->max, .scale = s->scale, .offset = s->offset,
		.is_float = s->valtype != DBC_INT, .index = index,
		.line = s->line,
	};
	return 0;
}

int dbc_signal_find(const dbc_t *dbc, uint32_t msg_id, int ext, const char *name,
                        unsigned *ret_index)
{
	if (!dbc || !name || !ret_index)
		return -EINVAL;
	for (unsigned i = 0; i < dbc->nsigs; i++) {
		const struct dbc_msg *m = &dbc->msgs[dbc->sigs[i].msg];

		if (m->id == msg_id && m->ext == !!ext && strcmp(dbc->sigs[i].name, name) == 0) {
			*ret_index = i;
			return 0;
		}
	}
	return -ENOENT;
}

int dbc_value_label(const dbc_t *dbc, unsigned index, double value, const char **ret_label)
{
	const struct dbc_sig *s;
	double raw;
	int64_t key;
	unsigned lo = 0, hi;

	if (!dbc || !ret_label || index >= dbc->nsigs || !isfinite(value))
		return -EINVAL;
	s = &dbc->sigs[index];
	raw = round((value - s->offset) / s->scale);
	if (!(raw >= -9.2e18 && raw <= 9.2e18))
		return -ENOENT;
	key = (int64_t)raw;
	hi = s->nlabels;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (s->labels[mid].value == key) {
			*ret_label = s->labels[mid].label;
			return 0;
		}
		if (s->labels[mid].value < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -ENOENT;
}

int dbc_value_entry(const dbc_t *dbc, unsigned index, unsigned i, double *ret_value,
                        const char **ret_label)
{
	const struct dbc_sig *s;

	if (!dbc || !ret_value || !ret_label || index >= dbc->nsigs)
		return -EINVAL;
	s = &dbc->sigs[index];
	if (i >= s->nlabels)
		return -ENOENT;
	*ret_value = (double)s->labels[i].value * s->scale + s->offset;
	*ret_label = s->labels[i].label;
	return 0;
}

static const struct dbc_msg *lookup(const struct dbc *dbc, const struct acq_can *can)
{
	unsigned lo = 0, hi = dbc->next;

	if (!(can->flags & ACQ_CAN_EXT))
		return can->id < 2048 && dbc->std_index[can->id] ? &dbc->msgs[dbc->std_index[can->id] - 1] : NULL;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;

		if (dbc->ext_index[mid].id == can->id)
			return &dbc->msgs[dbc->ext_index[mid].msg];
		if (dbc->ext_index[mid].id < can->id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static uint64_t extract_slow(const struct dbc_op *op, const uint8_t *d)
{
	unsigned n = op->nbytes < 8 ? op->nbytes : 8;
	uint64_t v = 0;

	if (op->kind == DBC_OP_LE_SLOW) {
		for (unsigned i = 0; i < n; i++)
			v |= (uint64_t)d[op->first + i] << (8 * i);
		v >>= op->shift;
		if (op->nbytes > 8) /* 9 bytes: shift >= 1 */
			v |= (uint64_t)d[op->first + 8] << (64 - op->shift);
		return v & op->mask;
	}
	for (unsigned i = 0; i < n; i++)
		v = v << 8 | d[op->first + i];
	if (op->nbytes > 8)
		v = v << (8 - op->shift) | d[op->first + 8] >> op->shift;
	else
		v >>= op->shift;
	return v & op->mask;
}

/* IEEE float/double signals and 64-bit unsigned ones (rare). */
static double physical_slow(const struct dbc_op *op, uint64_t raw)
{
	double v;

	if (op->valtype == DBC_FLOAT) {
		uint32_t u = (uint32_t)raw;
		float f;

		memcpy(&f, &u, sizeof(f));
		v = f;
	} else if (op->valtype == DBC_DOUBLE) {
		memcpy(&v, &raw, sizeof(v));
	} else {
		v = (double)raw;
	}
	return v * op->scale + op->offset;
}

/*
 * Sign extension by moving the sign bit to bit 63 and back (sext =
 * 64 - size); unsigned signals below 64 bits have sext = 0 and fit int64
 * as they are.  int64 -> double is one instruction, uint64 -> double is
 * not.
 */
static inline double physical_int(const struct dbc_op *op, uint64_t raw)
{
	return (double)((int64_t)(raw << op->sext) >> op->sext) * op->scale + op->offset;
}

static bool mux_match(const struct dbc_op *op, uint64_t v)
{
	for (unsigned i = 0; i < op->nranges; i++)
		if (v >= op->ranges[i].lo && v <= op->ranges[i].hi)
			return true;
	return false;
}

_Static_assert(ACQ_Q_GOOD == 0 && ACQ_Q_OUT_OF_RANGE == 1, "quality computed as a comparison");

/*
 * What every sample of one frame shares, in locals: the project builds
 * with -fno-strict-aliasing, so without restrict a store into out[] could
 * alias the frame and the ops and everything would be reloaded for each
 * signal.
 */
struct frame_ctx {
	int64_t t_ns;
	uint32_t channel_base;
	uint16_t bus;
	unsigned len;
	uint64_t w[2];          /* first 8 bytes: w[DBC_OP_LE], w[DBC_OP_BE] */
	const uint8_t *data;
};

/* The samples written, or -ENOBUFS when out[] cannot take them all. */
static int decode_ops(const struct dbc_op *restrict ops, unsigned nops, const struct frame_ctx *restrict fc,
                      struct acq_item *restrict out, size_t max)
{
	uint64_t mux[DBC_MUX_SLOTS];
	unsigned active = 0;
	size_t n = 0;

	for (unsigned i = 0; i < nops; i++) {
		const struct dbc_op *op = &ops[i];
		struct acq_item *o;
		uint32_t q;
		uint64_t raw;
		double v;

		if (op->need_len > fc->len)
			continue;
		if (op->parent_slot >= 0 &&
		    (!(active & (1u << op->parent_slot)) || !mux_match(op, mux[op->parent_slot])))
			continue;
		/* A short buffer is an error, not a shorter frame: signals
		   dropped here would be lost without a trace. */
		if (n == max)
			return -ENOBUFS;
		raw = op->kind <= DBC_OP_BE ? (fc->w[op->kind] >> op->shift) & op->mask : extract_slow(op, fc->data);
		if (op->mux_slot >= 0) {
			/* the raw value selects, never the physical one (DBC
			   convention; a scaled multiplexor shows the difference) */
			mux[op->mux_slot] = raw;
			active |= 1u << op->mux_slot;
		}
		/* min/max are -inf/+inf when the signal declares no range */
		if (!op->slow_value) {
			v = physical_int(op, raw);
			q = (uint32_t)((v < op->min) | (v > op->max));
		} else {
			v = physical_slow(op, raw);
			q = !isfinite(v) ? ACQ_Q_INVALID : (uint32_t)((v < op->min) | (v > op->max));
		}
		/* only the sample's fields: zeroing the whole union would cost
		   more than the decode itself */
		o = &out[n++];
		o->t_ns = fc->t_ns;
		o->seq = 0;
		o->kind = ACQ_ITEM_SAMPLE;
		o->bus = fc->bus;
		o->reserved = 0;
		o->sample.channel = fc->channel_base + op->index;
		o->sample.quality = q;
		o->sample.value = v;
	}
	return (int)n;
}

int dbc_decode(const dbc_t *dbc, const struct acq_item *frame, uint32_t channel_base,
                   struct acq_item *out, size_t max)
{
	const struct dbc_msg *m;
	struct frame_ctx fc;

	if (!dbc || !frame || (!out && max) || frame->kind != ACQ_ITEM_CAN || frame->can.len > ACQ_CAN_DATA_MAX)
		return -EINVAL;
	if (frame->can.flags & (ACQ_CAN_RTR | ACQ_CAN_ERR))
		return 0;
	m = lookup(dbc, &frame->can);
	if (!m)
		return 0;
	fc = (struct frame_ctx){ .t_ns = frame->t_ns, .channel_base = channel_base, .bus = frame->bus,
	                         .len = frame->can.len, .data = frame->can.data };
	/*
	 * data[] always has 64 bytes; bytes past len only ever land in bits
	 * the masks drop, since signals not inside len are skipped.
	 */
	memcpy(&fc.w[0], frame->can.data, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	fc.w[0] = __builtin_bswap64(fc.w[0]);
#endif
	fc.w[1] = __builtin_bswap64(fc.w[0]);
	return decode_ops(m->ops, m->nsig, &fc, out, max);
}

int dbc_decode_pgn(const dbc_t *dbc, uint32_t pgn, const uint8_t *data, size_t len, int64_t t_ns,
                       uint16_t bus, uint32_t channel_base, struct acq_item *out, size_t max)
{
	const struct dbc_msg *m = NULL;
	unsigned lo = 0, hi;
	struct frame_ctx fc;

	if (!dbc || (!data && len) || (!out && max) || len > DBC_J1939_TP_MAX)
		return -EINVAL;
	hi = dbc->npgn;
	while (lo < hi && !m) {
		unsigned mid = lo + (hi - lo) / 2;

		if (dbc->pgn_index[mid].id == pgn)
			m = &dbc->msgs[dbc->pgn_index[mid].msg];
		else if (dbc->pgn_index[mid].id < pgn)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!m)
		return 0;
	fc = (struct frame_ctx){ .t_ns = t_ns, .channel_base = channel_base, .bus = bus, .len = (unsigned)len,
	                         .data = data };
	memcpy(&fc.w[0], data, len < 8 ? len : 8); /* bytes past len only reach masked-off bits */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	fc.w[0] = __builtin_bswap64(fc.w[0]);
#endif
	fc.w[1] = __builtin_bswap64(fc.w[0]);
	return decode_ops(m->ops, m->nsig, &fc, out, max);
}
