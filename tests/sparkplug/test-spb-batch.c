/* SPDX-License-Identifier: MIT */
/*
 * test-spb-batch.c - a device's DBIRTH from the channel list and its DDATA
 * from a Batch encoded by record/ and decoded back: only the device's
 * samples and texts, in order, with their aliases, values and times;
 * frames and events left out; a full payload keeps nothing half; read
 * back with protoc-c.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sparkplug/spb-batch.h"
#include "sparkplug/spb-session.h"
#include "sparkplug_b.pb-c.h"
#include "tlib.h"

typedef Org__Eclipse__Tahu__Protobuf__Payload Payload;

#define T0 1733400000000000000ll /* ns */

static Payload *unpack(spb_payload_t *pl)
{
	static uint8_t buf[4096];
	int n = spb_payload_encode(pl, buf, sizeof(buf));
	CHECK(n > 0);
	Payload *p = org__eclipse__tahu__protobuf__payload__unpack(NULL, (size_t)n, buf);
	CHECK(p);
	return p;
}

static struct acq_item sample(int64_t t, uint16_t bus, uint32_t ch, double v)
{
	return (struct acq_item){ .t_ns = t, .kind = ACQ_ITEM_SAMPLE, .bus = bus, .sample = { ch, ACQ_Q_GOOD, v } };
}

static rec_batch_t *batch(void)
{
	struct rec_batch_meta meta = { .vehicle = "T-1", .config_hash = 1 };
	struct acq_item text = { .t_ns = T0 + 2000000, .kind = ACQ_ITEM_TEXT, .bus = 0,
	                         .text = { .channel = 1, .quality = ACQ_Q_GOOD, .len = 9 } };
	struct acq_item can = { .t_ns = T0 + 3000000, .kind = ACQ_ITEM_CAN, .bus = 0, .can = { .id = 0x100, .len = 1 } };
	struct acq_item ev = { .t_ns = T0 + 4000000, .kind = ACQ_ITEM_EVENT, .bus = 0 };
	const uint8_t *buf;
	rec_encoder_t *enc;
	rec_batch_t *b;
	size_t len;

	memcpy(text.text.text, "door open", 9);
	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	struct acq_item bad = sample(T0 + 5000000, 0, 0, 2.5);
	bad.sample.quality = ACQ_Q_INVALID;
	text.text.quality = ACQ_Q_OUT_OF_RANGE; /* not what a text gets, but carried as any */
	struct acq_item items[] = { sample(T0 + 1000000, 0, 0, 1.5), text, sample(T0 + 1500000, 1, 0x10000, -2),
	                            can, ev, bad };
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		CHECK(rec_encoder_add(enc, &items[i]) == 0, "item %zu", i);
	CHECK(rec_encoder_finish(enc, 100, &buf, &len) == 6);
	CHECK(rec_batch_decode(buf, len, &b) == 0);
	rec_encoder_free(enc);
	return b;
}

static void test_ddata(void)
{
	rec_batch_t *b = batch();
	spb_payload_t *pl;
	Payload *p;

	CHECK(spb_payload_new(8, &pl) == 0);
	spb_payload_reset(pl, 7, 3);
	CHECK(spb_ddata_add_batch(pl, b, NULL, 0, 0, false, NULL) == 3);
	p = unpack(pl);
	CHECK(p->n_metrics == 3 && p->seq == 3);
	CHECK(p->metrics[0]->alias == 2 && p->metrics[0]->timestamp == 1733400000001 && !p->metrics[0]->name &&
	      p->metrics[0]->datatype == SPB_DT_DOUBLE && p->metrics[0]->double_value == 1.5 &&
	      !p->metrics[0]->has_is_historical);
	/* the Batch's order: samples before texts (record/batch.h) */
	CHECK(p->metrics[1]->alias == 2 && p->metrics[1]->timestamp == 1733400000005 &&
	      p->metrics[1]->double_value == 2.5);
	/* not good: Quality Bad (0) and railmon's word; good: no property */
	CHECK(!p->metrics[0]->properties);
	CHECK(p->metrics[1]->properties && p->metrics[1]->properties->n_keys == 2 &&
	      !strcmp(p->metrics[1]->properties->keys[0], "Quality") &&
	      p->metrics[1]->properties->values[0]->type == SPB_DT_INT32 &&
	      p->metrics[1]->properties->values[0]->int_value == 0 &&
	      !strcmp(p->metrics[1]->properties->keys[1], "railmonQuality") &&
	      !strcmp(p->metrics[1]->properties->values[1]->string_value, "invalid"));
	CHECK(p->metrics[2]->properties && p->metrics[2]->properties->n_keys == 2 &&
	      !strcmp(p->metrics[2]->properties->values[1]->string_value, "out_of_range"));
	CHECK(p->metrics[2]->alias == 3 && p->metrics[2]->timestamp == 1733400000002 &&
	      p->metrics[2]->datatype == SPB_DT_STRING && !strcmp(p->metrics[2]->string_value, "door open"));
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);

	/* the other device, historical */
	spb_payload_reset(pl, 7, 4);
	CHECK(spb_ddata_add_batch(pl, b, NULL, 0, 1, true, NULL) == 1);
	p = unpack(pl);
	CHECK(p->n_metrics == 1 && p->metrics[0]->alias == 2u + 0x10000u && p->metrics[0]->double_value == -2 &&
	      p->metrics[0]->has_is_historical && p->metrics[0]->is_historical);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	/* a bus with nothing in the Batch */
	spb_payload_reset(pl, 7, 5);
	CHECK(spb_ddata_add_batch(pl, b, NULL, 0, 2, false, NULL) == 0 && spb_payload_count(pl) == 0);
	spb_payload_free(pl);

	/* full: what was there stays, nothing of the Batch half */
	CHECK(spb_payload_new(3, &pl) == 0);
	spb_payload_reset(pl, 7, 6);
	CHECK(spb_ddata_add_batch(pl, b, NULL, 0, 1, false, NULL) == 1);
	CHECK(spb_ddata_add_batch(pl, b, NULL, 0, 0, false, NULL) == -ENOSPC);
	CHECK(spb_payload_count(pl) == 1);
	p = unpack(pl);
	CHECK(p->n_metrics == 1 && p->metrics[0]->alias == 2u + 0x10000u);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	CHECK(spb_ddata_add_batch(NULL, b, NULL, 0, 0, false, NULL) == -EINVAL && spb_ddata_add_batch(pl, NULL, NULL, 0, 0, false, NULL) == -EINVAL);
	spb_payload_free(pl);
	rec_batch_free(b);
}

static void test_dbirth(void)
{
	static const struct spb_channel ch[] = {
		{ 0, 0, "Engine.Speed", "rpm", false, "0 stopped\n1 turning", SPB_DT_UNKNOWN },
		{ 1, 0, "Door.Text", NULL, true, "1 open", SPB_DT_UNKNOWN },
		{ 0x10000, 1, "Brake.Pressure", "bar", false, NULL, SPB_DT_INT32 },
	};
	spb_payload_t *pl;
	Payload *p;

	CHECK(spb_payload_new(4, &pl) == 0);
	spb_payload_reset(pl, 9, 1);
	CHECK(spb_dbirth_add_channels(pl, ch, 3, 0, 9) == 2);
	p = unpack(pl);
	CHECK(p->n_metrics == 2);
	CHECK(!strcmp(p->metrics[0]->name, "Engine.Speed") && p->metrics[0]->alias == 2 &&
	      p->metrics[0]->datatype == SPB_DT_DOUBLE && p->metrics[0]->is_null && p->metrics[0]->properties &&
	      p->metrics[0]->properties->n_keys == 2 && !strcmp(p->metrics[0]->properties->keys[0], "engUnit") &&
	      !strcmp(p->metrics[0]->properties->keys[1], "railmonValueTable") &&
	      !strcmp(p->metrics[0]->properties->values[1]->string_value, "0 stopped\n1 turning"));
	/* labels without a unit: the one property */
	CHECK(!strcmp(p->metrics[1]->name, "Door.Text") && p->metrics[1]->alias == 3 &&
	      p->metrics[1]->datatype == SPB_DT_STRING && p->metrics[1]->properties &&
	      p->metrics[1]->properties->n_keys == 1 &&
	      !strcmp(p->metrics[1]->properties->keys[0], "railmonValueTable") &&
	      !strcmp(p->metrics[1]->properties->values[0]->string_value, "1 open"));
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	spb_payload_reset(pl, 9, 2);
	CHECK(spb_dbirth_add_channels(pl, ch, 3, 1, 9) == 1);
	p = unpack(pl);
	CHECK(p->n_metrics == 1 && p->metrics[0]->alias == spb_channel_alias(0x10000) &&
	      p->metrics[0]->datatype == SPB_DT_INT32);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	CHECK(spb_dbirth_add_channels(NULL, ch, 3, 1, 9) == -EINVAL && spb_dbirth_add_channels(pl, NULL, 1, 1, 9) == -EINVAL);
	spb_payload_free(pl);
}

/* DDATA in the channels' datatypes (what their DBIRTH declared); a value
   the type cannot hold goes is_null with its quality, counted, never
   cast (NaN is no true, 2.5 no 2). */
static void test_ddata_types(void)
{
	static const struct spb_channel ch[] = {
		{ 0x20000, 2, "Door.Flag", NULL, false, NULL, SPB_DT_BOOLEAN },
		{ 0x20001, 2, "Door.State", NULL, false, "0 closed\n1 open\n2 locked", SPB_DT_INT32 },
		{ 0x20002, 2, "Train.Odometer", "m", false, NULL, SPB_DT_INT64 },
		{ 0x20003, 2, "Train.Speed", "km/h", false, NULL, SPB_DT_DOUBLE },
	};
	struct rec_batch_meta meta = { .vehicle = "T-1", .config_hash = 1 };
	struct acq_item items[] = {
		sample(T0 + 1000000, 2, 0x20000, 1),          /* true */
		sample(T0 + 1000000, 2, 0x20001, 2),          /* locked */
		sample(T0 + 1000000, 2, 0x20002, 5e12),       /* past Int32 */
		sample(T0 + 1000000, 2, 0x20003, 88.5),
		sample(T0 + 2000000, 2, 0x20000, NAN),        /* invalid below */
		sample(T0 + 2000000, 2, 0x20001, 2.5),        /* good, a fraction */
		sample(T0 + 2000000, 2, 0x20000, 2),          /* out_of_range below */
		sample(T0 + 2000000, 2, 0x20003, NAN),        /* Double: NaN as today */
		sample(T0 + 2000000, 2, 0x20001, 3e9),        /* good, past Int32 */
		sample(T0 + 2000000, 2, 0x20005, 7),          /* no channel: Double */
	};
	items[4].sample.quality = ACQ_Q_INVALID;
	items[6].sample.quality = ACQ_Q_OUT_OF_RANGE;
	items[7].sample.quality = ACQ_Q_INVALID;
	const size_t n = sizeof(items) / sizeof(items[0]);
	const uint8_t *buf;
	rec_encoder_t *enc;
	rec_batch_t *b;
	size_t len;
	spb_payload_t *pl;
	Payload *p;
	uint64_t nulled = 0;

	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	for (size_t i = 0; i < n; i++)
		CHECK(rec_encoder_add(enc, &items[i]) == 0, "item %zu", i);
	CHECK(rec_encoder_finish(enc, 100, &buf, &len) == (int)n);
	CHECK(rec_batch_decode(buf, len, &b) == 0);
	rec_encoder_free(enc);

	CHECK(spb_payload_new(16, &pl) == 0);
	spb_payload_reset(pl, 7, 3);
	CHECK(spb_ddata_add_batch(pl, b, ch, 4, 2, false, &nulled) == (int)n);
	CHECK(nulled == 4, "nulled %llu", (unsigned long long)nulled);
	p = unpack(pl);
	CHECK(p->n_metrics == n);
	Org__Eclipse__Tahu__Protobuf__Payload__Metric **m = p->metrics;
	/* each in its declared type and field */
	CHECK(m[0]->datatype == SPB_DT_BOOLEAN && m[0]->value_case ==
	      ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_BOOLEAN_VALUE && m[0]->boolean_value);
	CHECK(m[1]->datatype == SPB_DT_INT32 && m[1]->value_case ==
	      ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_INT_VALUE && m[1]->int_value == 2);
	CHECK(m[2]->datatype == SPB_DT_INT64 && m[2]->value_case ==
	      ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_LONG_VALUE && m[2]->long_value == 5000000000000ull);
	CHECK(m[3]->datatype == SPB_DT_DOUBLE && m[3]->double_value == 88.5 && !m[3]->properties);
	/* not of the type: null, the declared type, Quality Bad and why */
	static const char *const why[] = { [4] = "invalid", [5] = "out_of_type", [6] = "out_of_range",
	                                   [8] = "out_of_type" };
	for (size_t i = 4; i <= 8; i++) {
		if (i == 7)
			continue;
		CHECK(m[i]->datatype == ch[m[i]->alias - 2 - 0x20000].datatype && m[i]->has_is_null &&
		      m[i]->is_null && m[i]->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE__NOT_SET,
		      "metric %zu", i);
		CHECK(m[i]->properties && m[i]->properties->n_keys == 2 &&
		      m[i]->properties->values[0]->int_value == SPB_QUALITY_BAD &&
		      !strcmp(m[i]->properties->values[1]->string_value, why[i]), "metric %zu", i);
	}
	/* a Double holds NaN: sent as it is, with its quality */
	CHECK(m[7]->datatype == SPB_DT_DOUBLE && !m[7]->is_null && isnan(m[7]->double_value) &&
	      !strcmp(m[7]->properties->values[1]->string_value, "invalid"));
	CHECK(m[9]->datatype == SPB_DT_DOUBLE && m[9]->double_value == 7);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);

	/* full: nothing counted for a Batch not sent */
	spb_payload_free(pl);
	CHECK(spb_payload_new(3, &pl) == 0);
	spb_payload_reset(pl, 7, 4);
	nulled = 0;
	CHECK(spb_ddata_add_batch(pl, b, ch, 4, 2, false, &nulled) == -ENOSPC && nulled == 0);
	spb_payload_free(pl);
	rec_batch_free(b);
}

/* The copied text: the caller's buffer may change after the add. */
static void test_text_copy(void)
{
	spb_payload_t *pl;
	char t[SPB_TEXT_COPY_MAX + 1];
	Payload *p;

	CHECK(spb_payload_new(2, &pl) == 0);
	memset(t, 'x', sizeof(t));
	const struct spb_data_metric m = { .alias = 5, .t_ms = 1 };
	CHECK(spb_payload_add_data_text(pl, &m, t, SPB_TEXT_COPY_MAX + 1) == -E2BIG);
	CHECK(spb_payload_add_data_text(pl, &m, t, SPB_TEXT_COPY_MAX) == 0);
	memset(t, 'y', sizeof(t));
	p = unpack(pl);
	CHECK(p->n_metrics == 1 && strlen(p->metrics[0]->string_value) == SPB_TEXT_COPY_MAX &&
	      p->metrics[0]->string_value[0] == 'x');
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	CHECK(spb_payload_add_data_text(pl, &m, NULL, 1) == -EINVAL);
	CHECK(spb_payload_add_data_text(pl, NULL, t, 1) == -EINVAL);
	spb_payload_free(pl);
}

/* Which events make a device gone or back. */
static void test_device_change(void)
{
	struct acq_item it = { .kind = ACQ_ITEM_EVENT };
	static const struct { uint32_t code; int want; } ev[] = {
		{ ACQ_EV_CAN_GONE, -1 }, { ACQ_EV_MB_DISCONNECT, -1 }, { ACQ_EV_CAN_BACK, 1 }, { ACQ_EV_MB_CONNECT, 1 },
		{ ACQ_EV_CAN_BUS_OFF, 0 }, { ACQ_EV_MB_TIMEOUT, 0 }, { ACQ_EV_START, 0 },
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		it.event.code = ev[i].code;
		CHECK(spb_device_change(&it) == ev[i].want, "code %u", ev[i].code);
	}
	it = sample(1, 0, 0, ACQ_EV_CAN_GONE); /* a sample, whatever its value */
	CHECK(spb_device_change(&it) == 0 && spb_device_change(NULL) == 0);
}

/* The node's Events metric: one per event record, in order, named as
   export names them, the bus by its device name, a long text cut; other
   records are not events; a full payload keeps nothing half. */
static void test_events(void)
{
	struct rec_batch_meta meta = { .vehicle = "T-1", .config_hash = 1 };
	const char *names[] = { "can0", "mb-with-a-very-long-device-name-to-cut-here-0123456789abcdef" };
	struct acq_item items[] = {
		{ .t_ns = T0 + 1000000, .kind = ACQ_ITEM_EVENT, .bus = 0,
		  .event = { ACQ_EV_CAN_BUS_OFF, 3, -7 } },
		sample(T0 + 2000000, 0, 0, 1.5),
		{ .t_ns = T0 + 3000000, .kind = ACQ_ITEM_EVENT, .bus = 1, .event = { ACQ_EV_MB_DISCONNECT, 0, 0 } },
		{ .t_ns = T0 + 4000000, .kind = ACQ_ITEM_EVENT, .bus = 5, .event = { 9999, 1, 2 } },
	};
	const char *want[] = { "CAN_BUS_OFF can0 detail 3 arg -7",
	                       /* cut at SPB_TEXT_COPY_MAX (64) bytes */
	                       "MB_DISCONNECT mb-with-a-very-long-device-name-to-cut-here-012345",
	                       "9999 bus 5 detail 1 arg 2" };
	const uint8_t *buf;
	rec_encoder_t *enc;
	rec_batch_t *b;
	spb_payload_t *pl;
	Payload *p;
	size_t len;

	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
		CHECK(rec_encoder_add(enc, &items[i]) == 0, "item %zu", i);
	CHECK(rec_encoder_finish(enc, 100, &buf, &len) == 4);
	CHECK(rec_batch_decode(buf, len, &b) == 0);
	rec_encoder_free(enc);
	CHECK(spb_payload_new(4, &pl) == 0);
	spb_payload_reset(pl, 7, 3);
	CHECK(spb_ndata_add_events(pl, b, names, 2, true) == 3);
	p = unpack(pl);
	CHECK(p->n_metrics == 3);
	for (size_t i = 0; i < 3; i++) {
		Org__Eclipse__Tahu__Protobuf__Payload__Metric *m = p->metrics[i];
		static const uint64_t ms[] = { 1, 3, 4 };
		CHECK(m->has_alias && m->alias == SPB_ALIAS_EVENTS && !m->name && m->datatype == SPB_DT_STRING,
		      "event %zu", i);
		CHECK(m->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_STRING_VALUE &&
		      !strcmp(m->string_value, want[i]), "event %zu: %s", i, m->string_value);
		CHECK(m->timestamp == (uint64_t)(T0 / 1000000) + ms[i] && m->has_is_historical && m->is_historical);
	}
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	/* no room for the third: none of the Batch's kept */
	spb_payload_reset(pl, 7, 4);
	CHECK(spb_ndata_add_events(pl, b, names, 2, false) == 3);
	CHECK(spb_ndata_add_events(pl, b, names, 2, false) == -ENOSPC && spb_payload_count(pl) == 3);
	CHECK(spb_ndata_add_events(NULL, b, names, 2, false) == -EINVAL &&
	      spb_ndata_add_events(pl, NULL, names, 2, false) == -EINVAL);
	spb_payload_free(pl);
	rec_batch_free(b);
}

int main(void)
{
	test_ddata();
	test_ddata_types();
	test_dbirth();
	test_text_copy();
	test_device_change();
	test_events();
	puts("spb-batch: ok");
	return 0;
}
