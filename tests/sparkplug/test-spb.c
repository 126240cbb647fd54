/* SPDX-License-Identifier: MIT */
/*
 * test-spb.c - sparkplug/'s payload builder: bad arguments, the integer
 * ranges, bounded room, and what protoc-c decodes back (the wire form of
 * each datatype).  test-spb-peers.py decodes with Tahu and python.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sparkplug/spb.h"
#include "sparkplug_b.pb-c.h"
#include "tlib.h"

typedef Org__Eclipse__Tahu__Protobuf__Payload Payload;
typedef Org__Eclipse__Tahu__Protobuf__Payload__Metric Metric;

static struct spb_value num(uint32_t dt, double v)
{
	return (struct spb_value){ .datatype = dt, .num = v };
}

static int add_data(spb_payload_t *pl, struct spb_value v)
{
	struct spb_data_metric m = { .alias = 1, .t_ms = 2, .value = v };
	return spb_payload_add_data(pl, &m);
}

static void test_bad_args(void)
{
	spb_payload_t *pl = NULL;

	CHECK(spb_payload_new(0, &pl) == -EINVAL);
	CHECK(spb_payload_new(SPB_METRICS_MAX + 1, &pl) == -EINVAL);
	CHECK(spb_payload_new(4, NULL) == -EINVAL);
	CHECK(pl == NULL, "ret_pl written on failure");
	CHECK(spb_payload_new(4, &pl) == 0);
	CHECK(spb_payload_free(NULL) == NULL);

	struct spb_birth_metric b = { .name = NULL, .alias = 1, .value = num(SPB_DT_DOUBLE, 1) };
	CHECK(spb_payload_add_birth(pl, &b) == -EINVAL, "no name");
	b.name = "";
	CHECK(spb_payload_add_birth(pl, &b) == -EINVAL, "empty name");
	b.name = "a";
	CHECK(spb_payload_add_birth(NULL, &b) == -EINVAL);
	CHECK(spb_payload_add_birth(pl, NULL) == -EINVAL);
	CHECK(spb_payload_add_data(pl, NULL) == -EINVAL);
	/* datatypes railmon does not encode (yet), and unknown ones */
	static const uint32_t refused[] = { SPB_DT_UNKNOWN, SPB_DT_UINT32, SPB_DT_DATASET, SPB_DT_BYTES,
					    SPB_DT_FILE, SPB_DT_TEMPLATE, SPB_DT_PROPERTYSET, SPB_DT_MAX, 99 };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		CHECK(add_data(pl, num(refused[i], 1)) == -EINVAL, "datatype %u", refused[i]);
	CHECK(add_data(pl, (struct spb_value){ .datatype = SPB_DT_STRING }) == -EINVAL, "string, no text");
	CHECK(spb_payload_count(pl) == 0, "a refused metric was counted");
	CHECK(spb_payload_encode(NULL, (uint8_t[4]){ 0 }, 4) == -EINVAL);
	CHECK(spb_payload_encode(pl, NULL, 4) == -EINVAL);
	spb_payload_free(pl);
}

/* The next integer past a bound: lo - 1, or where a double has no such
   integer (64-bit bounds), the next double, itself an integer there.  A
   fraction would be refused as a fraction, whatever the bound. */
static double below(double lo)
{
	return lo - 1 != lo ? lo - 1 : nextafter(lo, -INFINITY);
}

static double above(double hi)
{
	return hi + 1 != hi ? hi + 1 : nextafter(hi, INFINITY);
}

static void test_ranges(void)
{
	spb_payload_t *pl = NULL;
	CHECK(spb_payload_new(64, &pl) == 0);
	static const struct { uint32_t dt; double lo, hi; } r[] = {
		{ SPB_DT_INT8, -128, 127 },
		{ SPB_DT_INT16, -32768, 32767 },
		{ SPB_DT_INT32, -2147483648.0, 2147483647.0 },
		{ SPB_DT_UINT8, 0, 255 },
		{ SPB_DT_UINT16, 0, 65535 },
		{ SPB_DT_INT64, -9223372036854775808.0, 9223372036854774784.0 },
		{ SPB_DT_UINT64, 0, 18446744073709549568.0 },
		{ SPB_DT_DATETIME, 0, 18446744073709549568.0 },
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		spb_payload_reset(pl, 0, 0);
		CHECK(add_data(pl, num(r[i].dt, r[i].lo)) == 0, "dt %u lo", r[i].dt);
		CHECK(add_data(pl, num(r[i].dt, r[i].hi)) == 0, "dt %u hi", r[i].dt);
		CHECK(add_data(pl, num(r[i].dt, below(r[i].lo))) == -ERANGE, "dt %u below", r[i].dt);
		CHECK(add_data(pl, num(r[i].dt, above(r[i].hi))) == -ERANGE, "dt %u above", r[i].dt);
		CHECK(add_data(pl, num(r[i].dt, 0.5)) == -ERANGE, "dt %u fraction", r[i].dt);
		CHECK(add_data(pl, num(r[i].dt, NAN)) == -ERANGE, "dt %u NaN", r[i].dt);
		CHECK(spb_payload_count(pl) == 2, "dt %u: %zu metrics", r[i].dt, spb_payload_count(pl));
	}
	/* Float, Double carry NaN and infinities as they are */
	CHECK(add_data(pl, num(SPB_DT_DOUBLE, NAN)) == 0);
	CHECK(add_data(pl, num(SPB_DT_FLOAT, INFINITY)) == 0);
	spb_payload_free(pl);
}

static void test_room(void)
{
	spb_payload_t *pl = NULL;
	CHECK(spb_payload_new(2, &pl) == 0);
	spb_payload_reset(pl, 5, 255);
	CHECK(add_data(pl, num(SPB_DT_DOUBLE, 1)) == 0);
	CHECK(add_data(pl, num(SPB_DT_DOUBLE, 2)) == 0);
	CHECK(add_data(pl, num(SPB_DT_DOUBLE, 3)) == -ENOSPC);
	CHECK(spb_payload_count(pl) == 2);

	uint8_t buf[256];
	size_t n = spb_payload_size(pl);
	CHECK(n > 0 && n < sizeof(buf));
	memset(buf, 0xa5, sizeof(buf));
	CHECK(spb_payload_encode(pl, buf, n - 1) == -EMSGSIZE);
	CHECK(buf[0] == 0xa5, "buffer written on -EMSGSIZE");
	CHECK(spb_payload_encode(pl, buf, n) == (int)n);
	CHECK(buf[n] == 0xa5, "wrote past the size it said");
	/* reset empties it; the room is the same */
	spb_payload_reset(pl, 6, 0);
	CHECK(spb_payload_count(pl) == 0);
	CHECK(add_data(pl, num(SPB_DT_DOUBLE, 1)) == 0);
	spb_payload_free(pl);
}

/* A channel's datatype from the dictionary: decimals and range. */
static void test_datatype_of_channel(void)
{
	static const double flag[2] = { 0, 1 }, door[2] = { 0, 3 }, neg[2] = { -40, 215 },
			    wide[2] = { 0, 4294967295.0 }, low[2] = { -3e9, 0 };

	CHECK(spb_datatype_of_channel(false, 0, flag) == SPB_DT_BOOLEAN);
	CHECK(spb_datatype_of_channel(false, 0, door) == SPB_DT_INT32);
	CHECK(spb_datatype_of_channel(false, 0, neg) == SPB_DT_INT32);
	CHECK(spb_datatype_of_channel(false, 0, wide) == SPB_DT_INT64);
	CHECK(spb_datatype_of_channel(false, 0, low) == SPB_DT_INT64);
	CHECK(spb_datatype_of_channel(false, 0, NULL) == SPB_DT_INT64);
	/* a fraction possible, or nothing known: Double, whatever the range */
	CHECK(spb_datatype_of_channel(false, 1, flag) == SPB_DT_DOUBLE);
	CHECK(spb_datatype_of_channel(false, 2, door) == SPB_DT_DOUBLE);
	CHECK(spb_datatype_of_channel(false, -1, flag) == SPB_DT_DOUBLE);
	CHECK(spb_datatype_of_channel(true, 0, flag) == SPB_DT_STRING);

	CHECK(spb_value_fits(SPB_DT_BOOLEAN, 0) && spb_value_fits(SPB_DT_BOOLEAN, 1));
	CHECK(!spb_value_fits(SPB_DT_BOOLEAN, 2) && !spb_value_fits(SPB_DT_BOOLEAN, NAN) &&
	      !spb_value_fits(SPB_DT_BOOLEAN, 0.5));
	CHECK(spb_value_fits(SPB_DT_INT32, -7) && spb_value_fits(SPB_DT_INT32, 2147483647.0));
	CHECK(!spb_value_fits(SPB_DT_INT32, 2147483648.0) && !spb_value_fits(SPB_DT_INT32, 1.5) &&
	      !spb_value_fits(SPB_DT_INT32, NAN));
	CHECK(spb_value_fits(SPB_DT_INT64, 5e12) && !spb_value_fits(SPB_DT_INT64, NAN) &&
	      !spb_value_fits(SPB_DT_INT64, 1e19));
	CHECK(spb_value_fits(SPB_DT_DOUBLE, NAN) && spb_value_fits(SPB_DT_DOUBLE, 0.25));
	CHECK(!spb_value_fits(SPB_DT_STRING, 0));

	/* a Boolean never says true for NaN or 2 */
	spb_payload_t *pl = NULL;
	CHECK(spb_payload_new(2, &pl) == 0);
	spb_payload_reset(pl, 1, 0);
	struct spb_data_metric d = { 9, 42, false, { SPB_DT_BOOLEAN, false, NAN, NULL }, NULL };
	CHECK(spb_payload_add_data(pl, &d) == -ERANGE);
	d.value.num = 2;
	CHECK(spb_payload_add_data(pl, &d) == -ERANGE && spb_payload_count(pl) == 0);
	spb_payload_free(pl);
}

/* What protoc-c reads back: each datatype in its field of the oneof. */
static void test_wire(void)
{
	spb_payload_t *pl = NULL;
	uint8_t buf[1024];
	CHECK(spb_payload_new(8, &pl) == 0);
	CHECK(spb_datatype_of_channel(false, -1, NULL) == SPB_DT_DOUBLE);
	CHECK(spb_datatype_of_channel(true, -1, NULL) == SPB_DT_STRING);

	spb_payload_reset(pl, 1733400000123ull, 200);
	struct spb_birth_metric b = { "Bus.Speed", 7, 1733400000100ull, "km/h",
				      { spb_datatype_of_channel(false, 1, NULL), false, 88.5, NULL }, NULL };
	CHECK(spb_payload_add_birth(pl, &b) == 0);
	struct spb_birth_metric t = { "Bus.Text", 8, 1733400000101ull, "",
				      { spb_datatype_of_channel(true, 0, NULL), true, 0, NULL }, NULL };
	CHECK(spb_payload_add_birth(pl, &t) == 0);
	struct spb_data_metric d = { 9, 42, true, { SPB_DT_INT8, false, -3, NULL }, NULL };
	CHECK(spb_payload_add_data(pl, &d) == 0);
	struct spb_data_metric l = { 10, 43, false, { SPB_DT_INT64, false, -5000000000.0, NULL }, NULL };
	CHECK(spb_payload_add_data(pl, &l) == 0);
	int n = spb_payload_encode(pl, buf, sizeof(buf));
	CHECK(n > 0);

	Payload *p = org__eclipse__tahu__protobuf__payload__unpack(NULL, (size_t)n, buf);
	CHECK(p != NULL);
	CHECK(p->has_timestamp && p->timestamp == 1733400000123ull);
	CHECK(p->has_seq && p->seq == 200);
	CHECK(p->n_metrics == 4);
	Metric *m = p->metrics[0];
	CHECK_STR(m->name, "Bus.Speed");
	CHECK(m->has_alias && m->alias == 7 && m->has_timestamp && m->timestamp == 1733400000100ull);
	CHECK(m->has_datatype && m->datatype == SPB_DT_DOUBLE);
	CHECK(m->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_DOUBLE_VALUE && m->double_value == 88.5);
	CHECK(!m->has_is_null && !m->has_is_historical);
	CHECK(m->properties && m->properties->n_keys == 1 && m->properties->n_values == 1);
	CHECK_STR(m->properties->keys[0], "engUnit"); /* the key hosts read as the unit */
	CHECK(m->properties->values[0]->has_type && m->properties->values[0]->type == SPB_DT_STRING);
	CHECK_STR(m->properties->values[0]->string_value, "km/h");

	m = p->metrics[1]; /* a text channel never received: null, no unit */
	CHECK_STR(m->name, "Bus.Text");
	CHECK(m->datatype == SPB_DT_STRING && m->has_is_null && m->is_null);
	CHECK(m->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE__NOT_SET);
	CHECK(m->properties == NULL, "an empty unit became a property");

	m = p->metrics[2]; /* DATA: alias only, two's complement in int_value */
	CHECK(m->name == NULL, "DATA carries a name");
	CHECK(m->alias == 9 && m->timestamp == 42 && m->datatype == SPB_DT_INT8);
	CHECK(m->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_INT_VALUE);
	CHECK(m->int_value == 0xfffffffdu, "int_value %#x", m->int_value);
	CHECK(m->has_is_historical && m->is_historical);

	m = p->metrics[3];
	CHECK(m->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_LONG_VALUE);
	CHECK(m->long_value == (uint64_t)-5000000000ll);
	CHECK(!m->has_is_historical, "is_historical sent when false");
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	spb_payload_free(pl);
}

int main(void)
{
	test_bad_args();
	test_ranges();
	test_room();
	test_datatype_of_channel();
	test_wire();
	return tlib_failures() ? 1 : 0;
}
