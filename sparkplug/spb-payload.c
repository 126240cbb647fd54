/* SPDX-License-Identifier: MIT */
/*
 * spb-payload.c - Sparkplug B BIRTH and DATA payloads with protoc-c, in
 * room fixed at creation (spb.h).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sparkplug/spb.h"
#include "sparkplug_b.pb-c.h"

typedef Org__Eclipse__Tahu__Protobuf__Payload Payload;
typedef Org__Eclipse__Tahu__Protobuf__Payload__Metric Metric;
typedef Org__Eclipse__Tahu__Protobuf__Payload__PropertySet PropertySet;
typedef Org__Eclipse__Tahu__Protobuf__Payload__PropertyValue PropertyValue;

/* One metric's messages, so a unit property costs no allocation either. */
struct spb_slot {
	Metric metric;
	PropertySet props;
	PropertyValue pv[2];      /* engUnit and railmonValueTable; or Quality and railmonQuality */
	char *keys[2];
	PropertyValue *vals[2];
	char text[SPB_TEXT_COPY_MAX + 1]; /* spb_payload_add_data_text()'s copy */
};

struct spb_payload {
	Payload msg;
	size_t cap;
	struct spb_slot *slots;
	Metric **metrics; /* msg.metrics: &slots[i].metric */
};

enum spb_datatype spb_datatype_of_channel(bool is_text, int decimals, const double *range)
{
	if (is_text)
		return SPB_DT_STRING;
	if (decimals != 0)
		return SPB_DT_DOUBLE;
	if (range && range[0] == 0 && range[1] == 1)
		return SPB_DT_BOOLEAN;
	if (range && range[0] >= INT32_MIN && range[1] <= INT32_MAX)
		return SPB_DT_INT32;
	return SPB_DT_INT64;
}

int spb_payload_new(size_t max_metrics, spb_payload_t **ret_pl)
{
	if (!ret_pl || max_metrics == 0 || max_metrics > SPB_METRICS_MAX)
		return -EINVAL;
	spb_payload_t *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	pl->slots = calloc(max_metrics, sizeof(*pl->slots));
	pl->metrics = calloc(max_metrics, sizeof(*pl->metrics));
	if (!pl->slots || !pl->metrics)
		return spb_payload_free(pl), -ENOMEM;
	pl->cap = max_metrics;
	spb_payload_reset(pl, 0, 0);
	*ret_pl = pl;
	return 0;
}

spb_payload_t *spb_payload_free(spb_payload_t *pl)
{
	if (pl) {
		free(pl->slots);
		free(pl->metrics);
		free(pl);
	}
	return NULL;
}

void spb_payload_reset(spb_payload_t *pl, uint64_t t_ms, uint8_t seq)
{
	org__eclipse__tahu__protobuf__payload__init(&pl->msg);
	pl->msg.has_timestamp = 1;
	pl->msg.timestamp = t_ms;
	pl->msg.has_seq = 1;
	pl->msg.seq = seq;
	pl->msg.metrics = pl->metrics;
	pl->msg.n_metrics = 0;
}

void spb_payload_drop_seq(spb_payload_t *pl)
{
	if (pl) {
		pl->msg.has_seq = 0;
		pl->msg.seq = 0;
	}
}

/* An integral double within [lo, hi]; NaN fails every comparison. */
static bool integral_in(double v, double lo, double hi)
{
	return v >= lo && v <= hi && v == trunc(v);
}

/* Integers: the specification's two's complement in the unsigned field
   (int_value for up to 32 bits, long_value for 64). */
static int set_int(Metric *m, const struct spb_value *v)
{
	double x = v->num;

	switch (v->datatype) {
	case SPB_DT_INT8:
		if (!integral_in(x, INT8_MIN, INT8_MAX))
			return -ERANGE;
		break;
	case SPB_DT_INT16:
		if (!integral_in(x, INT16_MIN, INT16_MAX))
			return -ERANGE;
		break;
	case SPB_DT_INT32:
		if (!integral_in(x, INT32_MIN, INT32_MAX))
			return -ERANGE;
		break;
	case SPB_DT_UINT8:
		if (!integral_in(x, 0, UINT8_MAX))
			return -ERANGE;
		break;
	case SPB_DT_UINT16:
		if (!integral_in(x, 0, UINT16_MAX))
			return -ERANGE;
		break;
	case SPB_DT_INT64:
		/* 2^63 itself is a double; INT64_MAX is not (rounds up) */
		if (!integral_in(x, -9223372036854775808.0, 9223372036854774784.0))
			return -ERANGE;
		m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_LONG_VALUE;
		m->long_value = (uint64_t)(int64_t)x;
		return 0;
	default: /* UINT64, DATETIME */
		if (!integral_in(x, 0, 18446744073709549568.0))
			return -ERANGE;
		m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_LONG_VALUE;
		m->long_value = (uint64_t)x;
		return 0;
	}
	m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_INT_VALUE;
	m->int_value = (uint32_t)(int32_t)x;
	return 0;
}

bool spb_value_fits(uint32_t datatype, double v)
{
	Metric m;

	switch (datatype) {
	case SPB_DT_FLOAT: case SPB_DT_DOUBLE:
		return true;
	case SPB_DT_BOOLEAN:
		return v == 0 || v == 1;
	case SPB_DT_INT8: case SPB_DT_INT16: case SPB_DT_INT32: case SPB_DT_INT64:
	case SPB_DT_UINT8: case SPB_DT_UINT16: case SPB_DT_UINT64: case SPB_DT_DATETIME:
		return set_int(&m, &(struct spb_value){ datatype, false, v, NULL }) == 0;
	default:
		return false;
	}
}

static int set_value(Metric *m, const struct spb_value *v)
{
	m->has_datatype = 1;
	m->datatype = v->datatype;
	switch (v->datatype) {
	case SPB_DT_INT8: case SPB_DT_INT16: case SPB_DT_INT32: case SPB_DT_INT64:
	case SPB_DT_UINT8: case SPB_DT_UINT16: case SPB_DT_UINT64: case SPB_DT_DATETIME:
	case SPB_DT_FLOAT: case SPB_DT_DOUBLE: case SPB_DT_BOOLEAN:
		break;
	case SPB_DT_STRING: case SPB_DT_TEXT: case SPB_DT_UUID:
		if (!v->is_null && !v->text)
			return -EINVAL;
		break;
	default:
		/* UInt32: the specification's table and Tahu's decoders
		   disagree on int_value or long_value; no channel needs it
		   yet.  DataSet, Bytes, File, Template: not railmon's. */
		return -EINVAL;
	}
	if (v->is_null) {
		m->has_is_null = 1;
		m->is_null = 1;
		return 0;
	}
	switch (v->datatype) {
	case SPB_DT_FLOAT:
		m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_FLOAT_VALUE;
		m->float_value = (float)v->num;
		return 0;
	case SPB_DT_DOUBLE:
		m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_DOUBLE_VALUE;
		m->double_value = v->num;
		return 0;
	case SPB_DT_BOOLEAN:
		/* NaN or 2 is no true */
		if (v->num != 0 && v->num != 1)
			return -ERANGE;
		m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_BOOLEAN_VALUE;
		m->boolean_value = v->num != 0;
		return 0;
	case SPB_DT_STRING: case SPB_DT_TEXT: case SPB_DT_UUID:
		m->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_STRING_VALUE;
		m->string_value = (char *)v->text; /* borrowed, never written */
		return 0;
	default:
		return set_int(m, v);
	}
}

/* The next free slot with what BIRTH and DATA metrics share: value,
   datatype, alias, timestamp.  Not counted until the caller commits it,
   so a refused metric leaves no trace.  Returns 0, -ENOSPC or
   set_value()'s error. */
static int slot_start(spb_payload_t *pl, const struct spb_value *v, uint64_t alias, uint64_t t_ms,
		      struct spb_slot **ret_s)
{
	if (pl->msg.n_metrics >= pl->cap)
		return -ENOSPC;
	struct spb_slot *s = &pl->slots[pl->msg.n_metrics];
	org__eclipse__tahu__protobuf__payload__metric__init(&s->metric);
	int r = set_value(&s->metric, v);
	if (r < 0)
		return r;
	s->metric.has_alias = 1;
	s->metric.alias = alias;
	s->metric.has_timestamp = 1;
	s->metric.timestamp = t_ms;
	*ret_s = s;
	return 0;
}

static void slot_commit(spb_payload_t *pl, struct spb_slot *s)
{
	pl->metrics[pl->msg.n_metrics++] = &s->metric;
}

/* Property i of the slot's set (set up by i == 0): a String, or an
   Int32 when text is NULL. */
static void slot_prop(struct spb_slot *s, size_t i, const char *key, const char *text, int32_t num)
{
	PropertyValue *v = &s->pv[i];

	if (i == 0)
		org__eclipse__tahu__protobuf__payload__property_set__init(&s->props);
	org__eclipse__tahu__protobuf__payload__property_value__init(v);
	v->has_type = 1;
	if (text) {
		v->type = SPB_DT_STRING;
		v->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__PROPERTY_VALUE__VALUE_STRING_VALUE;
		v->string_value = (char *)text;
	} else {
		v->type = SPB_DT_INT32;
		v->value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__PROPERTY_VALUE__VALUE_INT_VALUE;
		v->int_value = (uint32_t)num;
	}
	s->keys[i] = (char *)key;
	s->vals[i] = v;
	s->props.n_keys = s->props.n_values = i + 1;
	s->props.keys = s->keys;
	s->props.values = s->vals;
	s->metric.properties = &s->props;
}

int spb_payload_add_birth(spb_payload_t *pl, const struct spb_birth_metric *m)
{
	if (!pl || !m || !m->name || !m->name[0])
		return -EINVAL;
	struct spb_slot *s;
	int r = slot_start(pl, &m->value, m->alias, m->t_ms, &s);
	if (r < 0)
		return r;
	s->metric.name = (char *)m->name;
	size_t np = 0;
	if (m->unit && m->unit[0])
		slot_prop(s, np++, SPB_PROP_UNIT, m->unit, 0);
	if (m->labels && m->labels[0])
		slot_prop(s, np, SPB_PROP_VALUE_TABLE, m->labels, 0);
	slot_commit(pl, s);
	return 0;
}

int spb_payload_add_data(spb_payload_t *pl, const struct spb_data_metric *m)
{
	if (!pl || !m)
		return -EINVAL;
	struct spb_slot *s;
	int r = slot_start(pl, &m->value, m->alias, m->t_ms, &s);
	if (r < 0)
		return r;
	if (m->is_historical) {
		s->metric.has_is_historical = 1;
		s->metric.is_historical = 1;
	}
	if (m->quality && m->quality[0]) {
		slot_prop(s, 0, SPB_PROP_QUALITY, NULL, SPB_QUALITY_BAD);
		slot_prop(s, 1, SPB_PROP_RAILMON_QUALITY, m->quality, 0);
	}
	slot_commit(pl, s);
	return 0;
}

int spb_payload_add_data_text(spb_payload_t *pl, const struct spb_data_metric *dm, const char *text, size_t len)
{
	struct spb_data_metric m;
	int r;

	if (!pl || !dm || (!text && len))
		return -EINVAL;
	m = *dm;
	m.value = (struct spb_value){ SPB_DT_STRING, false, 0, "" };
	if (len > SPB_TEXT_COPY_MAX)
		return -E2BIG;
	if ((r = spb_payload_add_data(pl, &m)) < 0)
		return r;
	/* the slot just committed: its own copy, NUL-terminated */
	struct spb_slot *s = &pl->slots[pl->msg.n_metrics - 1];
	memcpy(s->text, text, len);
	s->text[len] = '\0';
	s->metric.string_value = s->text;
	return 0;
}

void spb_payload_truncate(spb_payload_t *pl, size_t n)
{
	if (pl && n < pl->msg.n_metrics)
		pl->msg.n_metrics = n;
}

size_t spb_payload_count(const spb_payload_t *pl)
{
	return pl ? pl->msg.n_metrics : 0;
}

size_t spb_payload_size(const spb_payload_t *pl)
{
	return org__eclipse__tahu__protobuf__payload__get_packed_size(&pl->msg);
}

int spb_payload_encode(const spb_payload_t *pl, uint8_t *buf, size_t cap)
{
	if (!pl || !buf)
		return -EINVAL;
	size_t n = spb_payload_size(pl);
	if (n > cap || n > INT32_MAX)
		return -EMSGSIZE;
	return (int)org__eclipse__tahu__protobuf__payload__pack(&pl->msg, buf);
}
