/* SPDX-License-Identifier: MIT */
/*
 * test-record.c - record/'s names and text formats, byte for byte: the
 * words for kinds, qualities and event codes against railmon.proto, and
 * the CSV, JSON-lines and candump lines `export` and `recv` write.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "record/batch.h"
#include "record/channels.h"
#include "record/format.h"
#include "trace/candump.h"
#include "record/names.h"
#include "record/order.h"
#include "record/wide.h"
#include "railmon.pb-c.h"
#include "tlib.h"


/* ---- names ---- */

static void test_kinds(void)
{
	enum acq_item_kind k;

	CHECK_STR(rec_kind_name(ACQ_ITEM_CAN), "can");
	CHECK_STR(rec_kind_name(ACQ_ITEM_SAMPLE), "sample");
	CHECK_STR(rec_kind_name(ACQ_ITEM_EVENT), "event");
	assert(rec_kind_name(ACQ_ITEM_KIND_MAX) == NULL && rec_kind_name(UINT32_MAX) == NULL);
	assert(rec_kind_parse("can", &k) == 0 && k == ACQ_ITEM_CAN);
	assert(rec_kind_parse("sample", &k) == 0 && k == ACQ_ITEM_SAMPLE);
	assert(rec_kind_parse("samples", &k) == 0 && k == ACQ_ITEM_SAMPLE);
	assert(rec_kind_parse("event", &k) == 0 && k == ACQ_ITEM_EVENT);
	assert(rec_kind_parse("Can", &k) == -EINVAL && rec_kind_parse("", &k) == -EINVAL);
	assert(rec_kind_parse(NULL, &k) == -EINVAL && rec_kind_parse("can", NULL) == -EINVAL);
	printf("kind names: ok\n");
}

/* The quality words are the schema's Quality names, lower case. */
static void test_qualities(void)
{
	const ProtobufCEnumDescriptor *d = &railmon__v1__quality__descriptor;

	assert(d->n_values == ACQ_Q_MAX);
	for (unsigned i = 0; i < d->n_values; i++) {
		char want[64];
		const char *name = d->values[i].name + strlen("QUALITY_");
		size_t n = 0;

		for (; name[n] && n + 1 < sizeof(want); n++)
			want[n] = (char)tolower((unsigned char)name[n]);
		want[n] = 0;
		CHECK_STR(rec_quality_name((uint32_t)d->values[i].value), want);
	}
	assert(rec_quality_name(ACQ_Q_MAX) == NULL && rec_quality_name(UINT32_MAX) == NULL);
	printf("quality names match railmon.proto: ok\n");
}

/* Every event code acquisition defines has its name in the schema. */
static void test_events(void)
{
	const ProtobufCEnumDescriptor *d = &railmon__v1__event_code__descriptor;
	unsigned named = 0;

	for (unsigned i = 0; i < d->n_values; i++) {
		CHECK_STR(rec_event_name((uint32_t)d->values[i].value), d->values[i].name + strlen("EVENT_"));
		named++;
	}
	for (uint32_t code = 0; code < ACQ_EV_CODE_MAX; code++)
		if (rec_event_name(code))
			named--;
	assert(named == 0);
	CHECK_STR(rec_event_name(ACQ_EV_CAN_BUS_OFF), "CAN_BUS_OFF");
	CHECK_STR(rec_event_name(ACQ_EV_MB_DISCARDED), "MB_DISCARDED");
	CHECK_STR(rec_event_name(ACQ_EV_CONFIG_RELOAD), "CONFIG_RELOAD");
	assert(rec_event_name(9999) == NULL && rec_event_name(UINT32_MAX) == NULL);
	assert(rec_event_name((uint32_t)INT32_MAX + 1) == NULL);
	printf("event names from railmon.proto: ok\n");
}

/* ---- channel names ---- */

static void check_chan(const rec_channels_t *m, uint32_t id, const char *name, const char *unit)
{
	const struct rec_channel *c = rec_channels_find(m, id);

	if (!c || c->id != id || strcmp(c->name, name) != 0 || strcmp(c->unit, unit) != 0) {
		fprintf(stderr, "channel %#x: got %s/%s, want %s/%s\n", id, c ? c->name : "(none)",
		        c ? c->unit : "", name, unit);
		abort();
	}
}

/* More ids than one bus has (65,536) and than export's old table held:
   every one found with its own name, later entries replacing earlier. */
static void test_channels_many(void)
{
	enum { NBUS = 3, PER_BUS = 65536 };
	rec_channels_t *m;
	char name[32], unit[16];

	assert(rec_channels_new(&m) == 0);
	assert(rec_channels_find(m, 0) == NULL && rec_channels_count(m) == 0);
	for (uint32_t b = 0; b < NBUS; b++)
		for (uint32_t n = 0; n < PER_BUS; n++) {
			snprintf(name, sizeof(name), "b%u_s%u", b, n);
			snprintf(unit, sizeof(unit), "u%u", n % 7);
			assert(rec_channels_set(m, b << 16 | n, name, unit) == 0);
		}
	assert(rec_channels_count(m) == NBUS * PER_BUS);
	for (uint32_t b = 0; b < NBUS; b++)
		for (uint32_t n = 0; n < PER_BUS; n++) {
			snprintf(name, sizeof(name), "b%u_s%u", b, n);
			snprintf(unit, sizeof(unit), "u%u", n % 7);
			check_chan(m, b << 16 | n, name, unit);
		}
	assert(rec_channels_find(m, NBUS << 16) == NULL && rec_channels_find(m, UINT32_MAX) == NULL);
	/* latest wins; NULL strings are empty ones */
	assert(rec_channels_set(m, 1 << 16 | 5, "renamed", NULL) == 0);
	assert(rec_channels_set(m, UINT32_MAX, NULL, "V") == 0);
	check_chan(m, 1 << 16 | 5, "renamed", "");
	check_chan(m, UINT32_MAX, "", "V");
	assert(rec_channels_count(m) == NBUS * PER_BUS + 1);
	assert(rec_channels_free(m) == NULL);
	printf("%d channel names on %d buses, all found: ok\n", NBUS * PER_BUS, NBUS);
}

/* The names a Batch's dictionary gives, as export and recv learn them. */
static void test_channels_learn(void)
{
	static const struct rec_channel dict[] = {
		{ .id = 0x10000, .name = "line_voltage", .unit = "V", .source = "modbus:1" },
		{ .id = 0x10001, .name = "speed", .unit = "km/h" },
		{ .id = 0x10000, .name = "line_voltage_2", .unit = "kV" }, /* twice: the later wins */
	};
	struct rec_batch_meta meta = { .vehicle = "tram7" };
	struct acq_item it = { .t_ns = 1, .kind = ACQ_ITEM_SAMPLE, .sample = { .channel = 0x10001 } };
	rec_encoder_t *enc;
	rec_batch_t *b;
	rec_channels_t *m;
	const uint8_t *buf;
	size_t len;

	assert(rec_encoder_new(&meta, 8, &enc) == 0);
	assert(rec_encoder_add(enc, &it) == 0);
	assert(rec_encoder_set_channels(enc, dict, 3) == 3);
	assert(rec_encoder_finish(enc, 1, &buf, &len) == 1);
	assert(rec_batch_decode(buf, len, &b) == 0);
	assert(rec_channels_new(&m) == 0);
	assert(rec_channels_learn(m, b) == 3 && rec_channels_count(m) == 2);
	check_chan(m, 0x10000, "line_voltage_2", "kV");
	check_chan(m, 0x10001, "speed", "km/h");
	/* what the writer is given for a record */
	{
		struct rec_names nm = rec_channels_names(m, &it);
		struct acq_item other = it;

		assert(!strcmp(nm.channel, "speed") && !strcmp(nm.unit, "km/h") && !nm.label);
		other.sample.channel = 0x10002;
		nm = rec_channels_names(m, &other);
		assert(!nm.channel && !nm.unit);
		other.kind = ACQ_ITEM_CAN;
		other.sample.channel = 0x10001; /* the same bytes, but not a sample */
		nm = rec_channels_names(m, &other);
		assert(!nm.channel && !nm.unit);
		nm = rec_channels_names(NULL, &it);
		assert(!nm.channel && !nm.unit);
		nm = rec_channels_names(m, NULL);
		assert(!nm.channel);
	}
	rec_batch_free(b);
	/* a Batch without a dictionary teaches nothing and forgets nothing */
	assert(rec_encoder_add(enc, &it) == 0);
	assert(rec_encoder_finish(enc, 2, &buf, &len) == 1);
	assert(rec_batch_decode(buf, len, &b) == 0);
	assert(rec_channels_learn(m, b) == 0 && rec_channels_count(m) == 2);
	check_chan(m, 0x10001, "speed", "km/h");
	/* bad arguments */
	assert(rec_channels_new(NULL) == -EINVAL);
	assert(rec_channels_set(NULL, 1, "a", "b") == -EINVAL);
	assert(rec_channels_learn(NULL, b) == -EINVAL && rec_channels_learn(m, NULL) == -EINVAL);
	assert(rec_channels_find(NULL, 1) == NULL && rec_channels_count(NULL) == 0);
	assert(rec_channels_free(NULL) == NULL);
	rec_batch_free(b);
	rec_channels_free(m);
	rec_encoder_free(enc);
	printf("channel names learned from a Batch's dictionary: ok\n");
}

/* ---- text formats ---- */

static struct acq_item can_item(void)
{
	struct acq_item it = { .t_ns = 1764748800123456789, .seq = 7, .kind = ACQ_ITEM_CAN, .bus = 1 };

	it.can.id = 0x123;
	it.can.len = 3;
	memcpy(it.can.data, "\x01\xab\xff", 3);
	return it;
}

static struct acq_item sample_item(double v, uint32_t quality)
{
	return (struct acq_item){ .t_ns = 1764748800000000000, .seq = 8, .kind = ACQ_ITEM_SAMPLE, .bus = 2,
	                          .sample = { .channel = 2u << 16 | 5, .quality = quality, .value = v } };
}

static struct acq_item event_item(uint32_t code)
{
	return (struct acq_item){ .t_ns = -1500000000, .seq = 9, .kind = ACQ_ITEM_EVENT, .bus = 0xffff,
	                          .event = { .code = code, .detail = 3, .arg = -5 } };
}

/* One record as fmt writes it, with origin's columns unless NULL; *ret
   the return value. */
static char *line_from(enum rec_format fmt, const struct acq_item *it, const struct rec_names *nm,
                       const struct rec_origin *origin, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert(f);
	*ret = rec_format_item(f, fmt, it, nm, origin);
	assert(fclose(f) == 0);
	return buf;
}

static char *line(enum rec_format fmt, const struct acq_item *it, const struct rec_names *nm, int *ret)
{
	return line_from(fmt, it, nm, NULL, ret);
}

static void expect_line(enum rec_format fmt, const struct acq_item *it, const struct rec_names *nm,
                        const char *want)
{
	int r;
	char *got = line(fmt, it, nm, &r);

	assert(r == 0);
	CHECK_STR(got, want);
	free(got);
}

#define HDR "vehicle,log_id,seq,time,time_ns,kind,bus,bus_name,channel,name,unit,value,quality,label,can_id,flags," \
            "data,event,arg,detail\n"

/* The line ends with tail. */
static void got_has(enum rec_format fmt, const struct acq_item *it, const char *tail)
{
	int r;
	char *got = line(fmt, it, NULL, &r);

	assert(r == 0 && strlen(got) >= strlen(tail));
	CHECK_STR(got + strlen(got) - strlen(tail), tail);
	free(got);
}

/* s through the stream escapers of basic/escape.c (not format.c's) */
static char *escaped_by_basic(const char *s, bool json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert(f);
	assert((json ? basic_json_string(f, s) : basic_csv_field(f, s)) == 0);
	assert(fclose(f) == 0);
	return buf;
}

/*
 * Names of 0 to 3000 bytes with every byte that needs escaping, at every
 * place of the output buffers (rec_format_item's 1 KiB, rec_writer's
 * 256 KiB blocks), in CSV, JSON lines and influx: each line is the line
 * with a short name whose name field is the one basic/escape.c's
 * escapers write, and the writer's stream is rec_format_item's lines
 * one after another.
 */
static void test_writer_blocks(void)
{
	static const char specials[] = ",\"\r\n\\= \x01\x1f\t{}";
	enum rec_format fmts[] = { REC_FORMAT_CSV, REC_FORMAT_JSONL, REC_FORMAT_INFLUX };
	uint64_t x = 0x2545f4914f6cdd1du;
	static const uint8_t id1[16] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 }, id2[16] = { 0xff, 2 };
	static char long_vehicle[200];
	struct rec_origin origins[4] = { { NULL, NULL, 0 }, { "V,\"1", id1, 16 }, { "V,\"1", id2, 16 },
	                                 { long_vehicle, id1, 8 } };
	const struct rec_origin *o;
	int64_t t = 0;

	memset(long_vehicle, 'v', sizeof(long_vehicle) - 1);

	for (size_t fi = 0; fi < 3; fi++) {
		char *whole = NULL, *lines = NULL;
		size_t wlen = 0, llen = 0;
		FILE *fw = open_memstream(&whole, &wlen), *fl = open_memstream(&lines, &llen);
		rec_writer_t *w;
		static char name[3001];

		assert(fw && fl && rec_writer_new(fw, fmts[fi], &w) == 0);
		for (int i = 0; i < 2000; i++) {
			struct acq_item it = sample_item(i * 0.05, ACQ_Q_GOOD);
			struct rec_names nm = { .channel = name, .unit = "V", .bus_name = "b", .has_decimals = true, .decimals = 2 };
			size_t n;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			n = (size_t)(x % (i % 10 ? 40 : 3001));
			for (size_t k = 0; k < n; k++)
				name[k] = (x >> (k % 50)) % 5 ? (char)('a' + k % 26) : specials[(x >> 3 ^ k) % (sizeof(specials) - 1)];
			name[n] = 0;
			/* seconds change (some before 1970), or the time stays in its second */
			t = i % 3 ? (int64_t)(x % 4000000000000u) - 1000000000000 : t - t % 1000000000 + (int64_t)(x % 1000000000);
			it.t_ns = t;
			it.seq = (uint64_t)i;
			/* origins: none, two log ids of one vehicle, a vehicle too long to keep */
			o = &origins[(i / 7) % 4];
			assert(rec_writer_item(w, &it, &nm, o) == 0);
			assert(rec_format_item(fl, fmts[fi], &it, &nm, o) == 0);
			if (fmts[fi] != REC_FORMAT_INFLUX) {
				/* the same line with the name "@@", its field replaced by the escaper's */
				bool json = fmts[fi] == REC_FORMAT_JSONL;
				char *line = NULL, *want = NULL, *got = NULL, *esc = escaped_by_basic(name, json), *at;
				size_t a = 0, b = 0, c = 0;
				FILE *f1 = open_memstream(&line, &a), *f2 = open_memstream(&got, &c);
				struct rec_names short_nm = nm;

				short_nm.channel = "@@";
				assert(rec_format_item(f1, fmts[fi], &it, &short_nm, o) == 0 && fclose(f1) == 0);
				assert(rec_format_item(f2, fmts[fi], &it, &nm, o) == 0 && fclose(f2) == 0);
				at = strstr(line, json ? "\"@@\"" : "@@");
				assert(at);
				FILE *f3 = open_memstream(&want, &b);
				fprintf(f3, "%.*s%s%s", (int)(at - line), line, esc, at + (json ? 4 : 2));
				assert(fclose(f3) == 0);
				CHECK_STR(got, want);
				free(line);
				free(want);
				free(got);
				free(esc);
			}
		}
		assert(rec_writer_flush(w) == 0);
		rec_writer_free(w);
		assert(fclose(fw) == 0 && fclose(fl) == 0);
		assert(wlen == llen && wlen > 300000 && !memcmp(whole, lines, wlen));
		free(whole);
		free(lines);
	}
	assert(rec_writer_new(NULL, REC_FORMAT_CSV, &(rec_writer_t *){ 0 }) == -EINVAL);
	assert(rec_writer_free(NULL) == NULL && rec_writer_flush(NULL) == 0);
	printf("writer: long names at every buffer place, escaped as basic/escape.c does: ok\n");
}

static void test_csv(void)
{
	struct acq_item can = can_item(), smp = sample_item(1499.3, ACQ_Q_GOOD), ev = event_item(ACQ_EV_CAN_GONE);
	struct rec_names nm = { .channel = "line, voltage", .unit = "V", .label = "High", .bus_name = "traction" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert(f && rec_format_header(f, REC_FORMAT_CSV) == 0 && fclose(f) == 0);
	CHECK_STR(buf, HDR);
	free(buf);
	expect_line(REC_FORMAT_CSV, &can, NULL,
	            ",,7,2025-12-03T08:00:00.123456789Z,1764748800123456789,can,1,,,,,,,,123,,01ABFF,,,\n");
	can.can.flags = ACQ_CAN_EXT | ACQ_CAN_FD | ACQ_CAN_BRS;
	can.can.id = 0x1abcdef;
	expect_line(REC_FORMAT_CSV, &can, NULL,
	            ",,7,2025-12-03T08:00:00.123456789Z,1764748800123456789,can,1,,,,,,,,01ABCDEF,EXT|FD|BRS,01ABFF,,,\n");
	expect_line(REC_FORMAT_CSV, &smp, &nm,
	            ",,8,2025-12-03T08:00:00.000000000Z,1764748800000000000,sample,2,traction,131077,\"line, voltage\",V,"
	            "1499.3,good,High,,,,,,\n");
	smp = sample_item(NAN, 7);
	expect_line(REC_FORMAT_CSV, &smp, NULL,
	            ",,8,2025-12-03T08:00:00.000000000Z,1764748800000000000,sample,2,,131077,,,,unknown,,,,,,,\n");
	/* before 1970: the time still reads right */
	expect_line(REC_FORMAT_CSV, &ev, NULL,
	            ",,9,1969-12-31T23:59:58.500000000Z,-1500000000,event,65535,,,,,,,,,,,CAN_GONE,-5,3\n");
	ev = event_item(9999);
	expect_line(REC_FORMAT_CSV, &ev, NULL,
	            ",,9,1969-12-31T23:59:58.500000000Z,-1500000000,event,65535,,,,,,,,,,,9999,-5,3\n");
	printf("csv: ok\n");
}

/* JSON lines: the CSV columns as keys, in the same order, null where CSV
   is empty. */
static void test_jsonl(void)
{
	struct acq_item can = can_item(), smp = sample_item(-0.1, ACQ_Q_OUT_OF_RANGE), ev = event_item(ACQ_EV_START);
	struct rec_names nm = { .channel = "say \"hi\"\n", .unit = "km/h", .label = "Open" };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert(f && rec_format_header(f, REC_FORMAT_JSONL) == 0 && fclose(f) == 0);
	CHECK_STR(buf, "");
	free(buf);
	can.can.flags = ACQ_CAN_RTR | ACQ_CAN_TX;
	expect_line(REC_FORMAT_JSONL, &can, NULL,
	            "{\"vehicle\":\"\",\"log_id\":\"\",\"seq\":7,\"time\":\"2025-12-03T08:00:00.123456789Z\","
	            "\"time_ns\":1764748800123456789,\"kind\":\"can\",\"bus\":1,\"bus_name\":null,\"channel\":null,"
	            "\"name\":null,\"unit\":null,\"value\":null,\"quality\":null,\"label\":null,\"can_id\":\"123\","
	            "\"flags\":\"RTR|TX\",\"data\":\"01ABFF\",\"event\":null,\"arg\":null,\"detail\":null}\n");
	expect_line(REC_FORMAT_JSONL, &smp, &nm,
	            "{\"vehicle\":\"\",\"log_id\":\"\",\"seq\":8,\"time\":\"2025-12-03T08:00:00.000000000Z\","
	            "\"time_ns\":1764748800000000000,\"kind\":\"sample\",\"bus\":2,\"bus_name\":null,\"channel\":131077,"
	            "\"name\":\"say \\\"hi\\\"\\u000a\",\"unit\":\"km/h\",\"value\":-0.1,\"quality\":\"out_of_range\","
	            "\"label\":\"Open\",\"can_id\":null,\"flags\":null,\"data\":null,\"event\":null,\"arg\":null,"
	            "\"detail\":null}\n");
	smp = sample_item(INFINITY, ACQ_Q_INVALID);
	expect_line(REC_FORMAT_JSONL, &smp, NULL,
	            "{\"vehicle\":\"\",\"log_id\":\"\",\"seq\":8,\"time\":\"2025-12-03T08:00:00.000000000Z\","
	            "\"time_ns\":1764748800000000000,\"kind\":\"sample\",\"bus\":2,\"bus_name\":null,\"channel\":131077,"
	            "\"name\":null,\"unit\":null,\"value\":null,\"quality\":\"invalid\",\"label\":null,\"can_id\":null,"
	            "\"flags\":null,\"data\":null,\"event\":null,\"arg\":null,\"detail\":null}\n");
	expect_line(REC_FORMAT_JSONL, &ev, NULL,
	            "{\"vehicle\":\"\",\"log_id\":\"\",\"seq\":9,\"time\":\"1969-12-31T23:59:58.500000000Z\","
	            "\"time_ns\":-1500000000,\"kind\":\"event\",\"bus\":65535,\"bus_name\":null,\"channel\":null,"
	            "\"name\":null,\"unit\":null,\"value\":null,\"quality\":null,\"label\":null,\"can_id\":null,"
	            "\"flags\":null,\"data\":null,\"event\":\"START\",\"arg\":-5,\"detail\":3}\n");
	ev = event_item(4000000000u);
	got_has(REC_FORMAT_JSONL, &ev, "\"event\":\"4000000000\",\"arg\":-5,\"detail\":3}\n");
	printf("jsonl: ok\n");
}

/* Values in the shortest form that reads back to the same double. */
static void test_doubles(void)
{
	static const struct { double v; const char *want; } cases[] = {
		{ 1499.3, "1499.3" }, { 14993 * 0.1, "1499.3000000000002" }, { 0.1 + 0.2, "0.30000000000000004" },
		{ -0.1, "-0.1" }, { 1e-300, "1e-300" }, { 123456789.123456789, "123456789.12345679" },
		{ 5e-324, "5e-324" }, { 2.5e-320, "2.5e-320" }, { 1.7976931348623157e308, "1.7976931348623157e+308" },
		{ 0, "0" }, { -0.0, "-0" }, { 42, "42" }, { 1e21, "1e+21" },
	};
	char buf[REC_DOUBLE_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert(rec_format_double(cases[i].v, buf, sizeof(buf)) == (int)strlen(cases[i].want));
		CHECK_STR(buf, cases[i].want);
		assert(strtod(buf, NULL) == cases[i].v);
	}
	/* every value of a sweep reads back, and no shorter form would */
	for (int i = 0; i < 100000; i++) {
		double v = (double)i * 0.001 - 37.5;
		char shorter[40];
		int n = rec_format_double(v, buf, sizeof(buf));

		assert(n > 0 && strtod(buf, NULL) == v);
		snprintf(shorter, sizeof(shorter), "%.14g", v);
		assert(strtod(shorter, NULL) != v || strlen(shorter) >= (size_t)n);
	}
	assert(rec_format_double(NAN, buf, sizeof(buf)) == -EINVAL);
	assert(rec_format_double(INFINITY, buf, sizeof(buf)) == -EINVAL);
	assert(rec_format_double(1, buf, REC_DOUBLE_MAX - 1) == -EINVAL);
	assert(rec_format_double(1, NULL, REC_DOUBLE_MAX) == -EINVAL);
	printf("values: shortest round trip: ok\n");
}

/* The resolution rule (format.h): decimals of scale and offset, values at
   them, at most 15 significant digits, no resolution: shortest form. */
static void test_resolution(void)
{
	static const struct { double scale, offset; int want; } dec[] = {
		{ 0.05, 0, 2 }, { 0.1, 0, 1 }, { 1, 0, 0 }, { 0.001, 0, 3 }, { 0.001, -40.5, 3 }, { 1, -40.5, 1 },
		{ 0.5, -0.125, 3 }, { 10, 0, 0 }, { 0.0625, 0, 4 }, { 1e-15, 0, 15 }, { 1e-16, 0, -1 },
		{ 1.0 / 3, 0, -1 }, { 0, 0, -1 }, { NAN, 0, -1 }, { 1, INFINITY, -1 },
	};
	static const struct { double v; int dec; const char *want; } val[] = {
		{ 1517 * 0.05, 2, "75.85" },                 /* shortest: 75.85000000000001 */
		{ 31491 * 0.001 - 40.5, 3, "-9.009" },
		{ 9 * 0.001 - 0.018, 3, "-0.009" },            /* shortest: -0.008999999999999998 */
		{ 4074 * 0.05, 2, "203.7" },                 /* shortest: 203.70000000000002 */
		{ 240 * 0.05, 2, "12" }, { -0.0, 2, "0" }, { -0.001, 2, "0" }, { 0.004, 2, "0" },
		{ 1e14 + 0.25, 3, "100000000000000" },       /* 15 significant digits */
		{ 123456.789, 15, "123456.789" }, { 2e15, 2, "2e+15" } /* past 15 digits: shortest form */,
		{ 1e300, 2, "1e+300" }, { 14993 * 0.1, -1, "1499.3000000000002" },
	};
	char buf[REC_DOUBLE_MAX];

	for (size_t i = 0; i < sizeof(dec) / sizeof(dec[0]); i++)
		if (rec_format_decimals(dec[i].scale, dec[i].offset) != dec[i].want) {
			fprintf(stderr, "decimals(%.17g, %.17g) = %d, want %d\n", dec[i].scale, dec[i].offset,
			        rec_format_decimals(dec[i].scale, dec[i].offset), dec[i].want);
			abort();
		}
	for (size_t i = 0; i < sizeof(val) / sizeof(val[0]); i++) {
		int n = rec_format_value(val[i].v, val[i].dec, buf, sizeof(buf));

		CHECK_STR(buf, val[i].want); /* says both on a difference */
		assert(n == (int)strlen(val[i].want));
	}
	/* every raw value of a 16-bit signal: the text is the decimal one,
	   and reads back to the raw value */
	for (int raw = 0; raw < 65536; raw++) {
		double v = raw * 0.001 - 40.5;
		char want[40];
		int n = rec_format_value(v, 3, buf, sizeof(buf));

		snprintf(want, sizeof(want), "%.3f", (raw - 40500) / 1000.0);
		assert(n > 0 && strtod(buf, NULL) == strtod(want, NULL));
		assert(lround((strtod(buf, NULL) + 40.5) / 0.001) == raw);
	}
	assert(rec_format_value(NAN, 2, buf, sizeof(buf)) == -EINVAL);
	assert(rec_format_value(1, 2, buf, REC_DOUBLE_MAX - 1) == -EINVAL);
	assert(rec_format_value(1, 2, NULL, REC_DOUBLE_MAX) == -EINVAL);
	printf("values: at the channel's resolution: ok\n");
}

/* rec_format_value() as it was written with printf before it wrote the
   digits by hand (issue 29): "%.*f", trailing zeros cut, "-0" as "0". */
static void value_by_printf(double v, int decimals, char *buf, size_t len)
{
	double a = fabs(v);
	int n;

	if (decimals > 15)
		decimals = 15;
	if (a >= 1e15) {
		rec_format_double(v, buf, len);
		return;
	}
	if (a >= pow(10, 15 - decimals)) {
		int intdigits = (int)floor(log10(a)) + 1;

		if (decimals > 15 - intdigits)
			decimals = 15 - intdigits;
	}
	n = snprintf(buf, len, "%.*f", decimals, v);
	if (decimals > 0) {
		while (buf[n - 1] == '0')
			n--;
		if (buf[n - 1] == '.')
			n--;
		buf[n] = 0;
	}
	if (n == 2 && buf[0] == '-' && buf[1] == '0')
		buf[n = 1] = 0, buf[0] = '0';
}

/* The digits by hand against printf's on values of every kind: raw *
   scale + offset of DBC-like signals, random doubles of every magnitude,
   and exact halves (x.5, x.125 at fewer decimals: ties, which glibc
   rounds to even on the exact binary value). */
static void test_value_digits(void)
{
	static const double scales[] = { 0.05, 0.1, 0.001, 0.01, 0.5, 0.25, 0.0625, 1, 10, 0.125, 0.2, 1e-6 };
	uint64_t x = 0x9e3779b97f4a7c15u;
	char got[REC_DOUBLE_MAX], want[REC_DOUBLE_MAX];
	long n = 0;

	for (long i = 0; i < 1000000; i++) {
		double v;
		int d;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		d = (int)(x % 17);
		switch ((x >> 8) % 4) {
		case 0: /* a signal: raw * scale + offset */
			v = (double)(int32_t)(x >> 32) / (1 << (x >> 20) % 16) * scales[(x >> 12) % 12] - (double)((x >> 40) % 100) / 2;
			break;
		case 1: { /* any finite double */
			uint64_t bits = x * 0x2545f4914f6cdd1du;

			memcpy(&v, &bits, sizeof(v));
			if (!isfinite(v))
				continue;
			break;
		}
		case 2: /* magnitudes around the 15-digit limits */
			v = ldexp((double)(x >> 11), (int)((x >> 3) % 120) - 100) * ((x & 4) ? -1 : 1);
			break;
		default: /* a tie at d decimals (exact in binary for small d) */
			v = ((double)((x >> 16) % 2000000) + 0.5) / pow(10, d % 4) * ((x & 8) ? -1 : 1);
			break;
		}
		rec_format_value(v, d, got, sizeof(got));
		value_by_printf(v, d, want, sizeof(want));
		if (strcmp(got, want)) {
			fprintf(stderr, "rec_format_value(%.17g, %d) = %s, printf: %s\n", v, d, got, want);
			abort();
		}
		n++;
	}
	printf("values: %ld digits by hand as printf writes them: ok\n", n);
}

/* InfluxDB line protocol: tags escaped, a label as a string field, no
   value field for a non-finite value. */
static void test_influx(void)
{
	struct acq_item can = can_item(), smp = sample_item(1499.3, ACQ_Q_GOOD), ev = event_item(ACQ_EV_START);
	struct rec_names nm = { .channel = "a b,c=d\ne", .unit = "km/h", .label = "say \"hi\"", .bus_name = "x y" };
	const struct rec_origin o = { "tram,7", NULL, 0 };
	char *got;
	int r;

	got = line_from(REC_FORMAT_INFLUX, &smp, &nm, &o, &r);
	assert(r == 0);
	CHECK_STR(got, "railmon,vehicle=tram\\,7,bus=x\\ y,channel=a\\ b\\,c\\=d\\ne,unit=km/h value=1499.3,"
	               "quality=\"good\",label=\"say \\\"hi\\\"\",seq=8i 1764748800000000000\n");
	free(got);
	smp = sample_item(NAN, ACQ_Q_INVALID);
	expect_line(REC_FORMAT_INFLUX, &smp, NULL,
	            "railmon,bus=2,channel=131077 quality=\"invalid\",seq=8i 1764748800000000000\n");
	can.can.flags = ACQ_CAN_FD;
	expect_line(REC_FORMAT_INFLUX, &can, NULL,
	            "railmon_can,bus=1,can_id=123 data=\"01ABFF\",flags=\"FD\",seq=7i 1764748800123456789\n");
	expect_line(REC_FORMAT_INFLUX, &ev, NULL,
	            "railmon_event,bus=65535,event=START arg=-5i,detail=3i,seq=9i -1500000000\n");
	printf("influx: ok\n");
}

static void test_candump(void)
{
	struct acq_item can = can_item(), smp = sample_item(1, 0);
	char buf[TRACE_CANDUMP_LINE_MAX];
	int r;
	char *got;

	expect_line(REC_FORMAT_CANDUMP, &can, NULL, "(1764748800.123456) can1 123#01ABFF\n");
	can.can.flags = ACQ_CAN_FD | ACQ_CAN_BRS;
	expect_line(REC_FORMAT_CANDUMP, &can, NULL, "(1764748800.123456) can1 123##501ABFF\n");
	/* what candump cannot say is refused, never written half */
	got = line(REC_FORMAT_CANDUMP, &smp, NULL, &r);
	assert(r == -EINVAL && !*got);
	free(got);
	can.can.flags = ACQ_CAN_FD | ACQ_CAN_RTR;
	got = line(REC_FORMAT_CANDUMP, &can, NULL, &r);
	assert(r == -EINVAL && !*got);
	free(got);
	can = can_item();
	assert(trace_candump_format(&can, "vcan0", buf, sizeof(buf)) == 37);
	CHECK_STR(buf, "(1764748800.123456) vcan0 123#01ABFF\n");
	assert(trace_candump_format(&can, "vcan0", buf, 37) == -ENOBUFS);
	printf("candump: ok\n");
}

/* The vehicle and log id columns, first in both formats. */
static void test_origin(void)
{
	static const uint8_t id[REC_LOG_ID_MAX] = { 0xa1, 0xb2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff };
	const struct rec_origin o = { "tram,7", id, sizeof(id) };
	const struct acq_item items[] = { can_item(), sample_item(2.5, 1), event_item(ACQ_EV_LOG_DROPPED) };
	const struct rec_names nm = { .channel = "speed", .unit = "km/h" };
	int r;

	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		char *plain = line(REC_FORMAT_CSV, &items[i], &nm, &r), *got, want[1024];

		snprintf(want, sizeof(want), "\"tram,7\",a1b200000000000000000000000000ff%s", plain + 1);
		got = line_from(REC_FORMAT_CSV, &items[i], &nm, &o, &r);
		assert(r == 0);
		CHECK_STR(got, want);
		free(got);
		free(plain);

		plain = line(REC_FORMAT_JSONL, &items[i], &nm, &r);
		assert(!strncmp(plain, "{\"vehicle\":\"\",\"log_id\":\"\",", 26));
		snprintf(want, sizeof(want), "{\"vehicle\":\"tram,7\",\"log_id\":\"a1b200000000000000000000000000ff\",%s",
		         plain + 26);
		got = line_from(REC_FORMAT_JSONL, &items[i], &nm, &o, &r);
		assert(r == 0);
		CHECK_STR(got, want);
		free(got);
		free(plain);
	}
	/* candump has no room for it: the same line */
	{
		char *plain = line(REC_FORMAT_CANDUMP, &items[0], NULL, &r);
		char *got = line_from(REC_FORMAT_CANDUMP, &items[0], NULL, &o, &r);

		CHECK_STR(got, plain);
		free(got);
		free(plain);
	}
	/* a log id longer than any, or missing its bytes */
	{
		struct rec_origin bad = o;

		bad.log_id_len = REC_LOG_ID_MAX + 1;
		assert(rec_format_item(stdout, REC_FORMAT_CSV, &items[0], NULL, &bad) == -EINVAL);
		bad.log_id_len = 4;
		bad.log_id = NULL;
		assert(rec_format_item(stdout, REC_FORMAT_JSONL, &items[0], NULL, &bad) == -EINVAL);
	}
	printf("origin columns: vehicle, log id first: ok\n");
}

/* The JSON keys are the CSV header's, in its order, for every kind. */
static void test_one_schema(void)
{
	const struct acq_item items[] = { can_item(), sample_item(2.5, 1), event_item(ACQ_EV_LOG_DROPPED) };
	int r;

	for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		char *got = line(REC_FORMAT_JSONL, &items[i], NULL, &r), *p = got;
		size_t col = 0;

		for (; rec_format_column(col); col++) {
			char key[32];

			snprintf(key, sizeof(key), "%s\"%s\":", col ? "," : "{", rec_format_column(col));
			p = strstr(p, key);
			assert(p);
		}
		assert(col == 20);
		free(got);
	}
	printf("one schema: JSON keys = CSV columns, in order: ok\n");
}

/* ---- time order, wide tables ---- */

static struct acq_item at(int64_t t_ns, uint64_t seq, uint32_t channel, double v)
{
	return (struct acq_item){ .t_ns = t_ns, .seq = seq, .kind = ACQ_ITEM_SAMPLE,
	                          .sample = { .channel = channel, .value = v } };
}

/* The order's reference: the oldest (t, seq) of what is held, found by
   looking at every one, with rec_order's window and bound. */
struct ref_order {
	struct acq_item held[300];
	size_t n, max;
	int64_t window, recent;
};

static bool ref_oldest(struct ref_order *r, bool due_only, struct acq_item *ret)
{
	size_t m = 0;

	if (!r->n)
		return false;
	for (size_t i = 1; i < r->n; i++)
		if (r->held[i].t_ns < r->held[m].t_ns || (r->held[i].t_ns == r->held[m].t_ns && r->held[i].seq < r->held[m].seq))
			m = i;
	if (due_only && r->n < r->max && r->held[m].t_ns >= r->recent - r->window)
		return false;
	*ret = r->held[m];
	r->held[m] = r->held[--r->n];
	return true;
}

/* Against the reference, as export drives it (push; full: the oldest out
   first; then what is due), on logs of 1 to 40 interleaved sorted runs
   (more than the order's queues: the rest goes to its heap), equal times,
   random disorder, and bounds that fill: every record comes out in the
   same order. */
static void test_order_runs(void)
{
	uint64_t x = 88172645463325252u;
	size_t total = 0;

	for (int round = 0; round < 160; round++) {
		struct ref_order ref = { .max = 1 + (size_t)round % 7 * 40, .window = 50 + round % 5 * 100, .recent = INT64_MIN };
		size_t runs = 1 + (size_t)round % 40;
		int64_t tail[40] = { 0 };
		uint64_t seq = 0;
		rec_order_t *o;
		struct acq_item it, a, b;

		assert(rec_order_new(ref.max, ref.window, &o) == 0);
		for (int i = 0; i < 3000; i++) {
			size_t k;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			k = (size_t)(x % runs);
			tail[k] += (int64_t)(x >> 20) % (round % 3 ? 20 : 2); /* 0: equal times */
			it = at(round % 4 == 3 ? (int64_t)((x >> 30) % 1000) : tail[k], ++seq, 1, (double)i);
			if (rec_order_push(o, &it) == -ENOBUFS) {
				assert(ref.n == ref.max);
				assert(rec_order_pop(o, &a) == 1 && ref_oldest(&ref, false, &b));
				assert(a.t_ns == b.t_ns && a.seq == b.seq && a.sample.value == b.sample.value);
				assert(rec_order_push(o, &it) == 0);
			}
			assert(ref.n < ref.max);
			ref.held[ref.n++] = it;
			ref.recent = it.t_ns;
			for (;;) {
				int got = rec_order_next(o, &a);

				assert(got == ref_oldest(&ref, true, &b));
				if (!got)
					break;
				assert(a.t_ns == b.t_ns && a.seq == b.seq && a.sample.value == b.sample.value);
				total++;
			}
			assert(rec_order_count(o) == ref.n);
		}
		while (rec_order_pop(o, &a) == 1) {
			assert(ref_oldest(&ref, false, &b) && a.t_ns == b.t_ns && a.seq == b.seq);
			total++;
		}
		assert(ref.n == 0);
		rec_order_free(o);
	}
	printf("time order: %zu records as the reference gives them (1 to 40 runs, bounds, ties): ok\n", total);
}

static void test_order(void)
{
	rec_order_t *o;
	struct acq_item it, out[64];
	size_t n = 0;
	/* a Batch's frames, then its samples: back in time by up to 30 */
	static const int64_t t[] = { 10, 20, 30, 10, 20, 30, 40, 50, 60, 45, 55, 65, 200, 50 };

	assert(rec_order_new(1000, 35, &o) == 0);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		it = at(t[i], i + 1, 1, 0);
		assert(rec_order_push(o, &it) == 0);
		while (rec_order_next(o, &out[n]) == 1)
			n++;
	}
	/* 200 arrived: everything up to 165 was due; then 50 is late (65 is
	   out already), and with it last, 200 is not due */
	assert(n == 12 && rec_order_count(o) == 2);
	while (rec_order_pop(o, &out[n]) == 1)
		n++;
	assert(n == 14);
	for (size_t i = 1; i < 12; i++)
		assert(out[i - 1].t_ns < out[i].t_ns || (out[i - 1].t_ns == out[i].t_ns && out[i - 1].seq < out[i].seq));
	assert(out[12].t_ns == 50 && out[13].t_ns == 200);
	assert(rec_order_late(o) == 1);
	rec_order_free(o);

	/* full: the oldest comes out (bounded memory), the late ones counted */
	assert(rec_order_new(4, INT64_MAX / 2, &o) == 0);
	n = 0;
	for (int i = 0; i < 10; i++) {
		it = at(100 - i, (uint64_t)i + 1, 1, 0);
		if (rec_order_push(o, &it) == -ENOBUFS) {
			assert(rec_order_next(o, &out[n++]) == 1);
			assert(rec_order_push(o, &it) == 0);
		}
	}
	assert(n == 6 && rec_order_count(o) == 4 && rec_order_late(o) == 6);
	assert(rec_order_new(0, 1, &o) == -EINVAL && rec_order_new(1, -1, &o) == -EINVAL);
	assert(rec_order_push(NULL, &it) == -EINVAL && rec_order_pop(NULL, &it) == 0);
	rec_order_free(o);
	assert(rec_order_free(NULL) == NULL);
	printf("time order: merged over the window, late ones counted, bounded: ok\n");
}

static char *wide_table(int64_t period, int64_t max_age, const struct acq_item *items, size_t n)
{
	static const struct rec_wide_column cols[] = { { 7, "speed", "km/h", false, 0 }, { 3, "door, left", "", false, 0 } };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	rec_wide_t *w;

	assert(f && rec_wide_new(f, cols, 2, period, max_age, &w) == 0);
	for (size_t i = 0; i < n; i++)
		assert(rec_wide_add(w, &items[i]) == 0);
	assert(rec_wide_finish(w) == 0);
	rec_wide_free(w);
	assert(fclose(f) == 0);
	return buf;
}

static void test_wide(void)
{
	const int64_t s = 1000000000;
	const struct acq_item items[] = {
		at(s, 1, 7, 10.5), at(s, 2, 3, 1), at(s, 3, 99, 5) /* not a column */, at(s + 150000000, 4, 7, 11),
		at(s + 420000000, 5, 3, NAN), at(s + 2 * s, 6, 7, 12),
	};
	char *got = wide_table(0, 1, items, sizeof(items) / sizeof(items[0]));

	CHECK_STR(got, "time,time_ns,speed [km/h],\"door, left\"\n"
	               "1970-01-01T00:00:01.000000000Z,1000000000,10.5,1\n"
	               "1970-01-01T00:00:01.150000000Z,1150000000,11,\n"
	               "1970-01-01T00:00:01.420000000Z,1420000000,,\n"
	               "1970-01-01T00:00:03.000000000Z,3000000000,12,\n");
	free(got);
	/* 100 ms raster, values held 250 ms (1.15 s's up to 1.4 s): the NaN
	   clears door; the gap from 1.5 s to 2.9 s, where nothing is held, has
	   no rows; nothing past the last sample */
	got = wide_table(100000000, 250000000, items, sizeof(items) / sizeof(items[0]));
	CHECK_STR(got, "time,time_ns,speed [km/h],\"door, left\"\n"
	               "1970-01-01T00:00:01.000000000Z,1000000000,10.5,1\n"
	               "1970-01-01T00:00:01.100000000Z,1100000000,10.5,1\n"
	               "1970-01-01T00:00:01.200000000Z,1200000000,11,1\n"
	               "1970-01-01T00:00:01.300000000Z,1300000000,11,\n"
	               "1970-01-01T00:00:01.400000000Z,1400000000,11,\n"
	               "1970-01-01T00:00:03.000000000Z,3000000000,12,\n");
	free(got);
	{
		const struct rec_wide_column dup[] = { { 1, "a", NULL, false, 0 }, { 1, "b", NULL, false, 0 } };
		rec_wide_t *w;

		assert(rec_wide_new(stdout, dup, 2, 0, 1, &w) == -EINVAL);
		assert(rec_wide_new(stdout, dup, 1, 0, 0, &w) == -EINVAL);
		assert(rec_wide_new(NULL, dup, 1, 0, 1, &w) == -EINVAL);
		assert(rec_wide_free(NULL) == NULL && rec_wide_add(NULL, &items[0]) == -EINVAL);
	}
	printf("wide table: per timestamp and raster (held up to max age, never beyond): ok\n");
}

static void test_bad_args(void)
{
	struct acq_item it = can_item();
	enum rec_format fmt;
	FILE *full = fopen("/dev/full", "w");

	assert(rec_format_parse("csv", &fmt) == 0 && fmt == REC_FORMAT_CSV);
	assert(rec_format_parse("jsonl", &fmt) == 0 && fmt == REC_FORMAT_JSONL);
	assert(rec_format_parse("json", &fmt) == 0 && fmt == REC_FORMAT_JSONL);
	assert(rec_format_parse("candump", &fmt) == 0 && fmt == REC_FORMAT_CANDUMP);
	assert(rec_format_parse("influx", &fmt) == 0 && fmt == REC_FORMAT_INFLUX);
	assert(rec_format_parse("none", &fmt) == -EINVAL && rec_format_parse("CSV", &fmt) == -EINVAL);
	assert(rec_format_parse(NULL, &fmt) == -EINVAL && rec_format_parse("csv", NULL) == -EINVAL);
	assert(rec_format_header(NULL, REC_FORMAT_CSV) == -EINVAL);
	assert(rec_format_header(stdout, REC_FORMAT_MAX) == -EINVAL);
	assert(rec_format_item(NULL, REC_FORMAT_CSV, &it, NULL, NULL) == -EINVAL);
	assert(rec_format_item(stdout, REC_FORMAT_MAX, &it, NULL, NULL) == -EINVAL);
	assert(rec_format_item(stdout, REC_FORMAT_CSV, NULL, NULL, NULL) == -EINVAL);
	it.kind = ACQ_ITEM_KIND_MAX;
	assert(rec_format_item(stdout, REC_FORMAT_JSONL, &it, NULL, NULL) == -EINVAL);
	it = can_item();
	it.can.len = ACQ_CAN_DATA_MAX + 1;
	assert(rec_format_item(stdout, REC_FORMAT_CSV, &it, NULL, NULL) == -EINVAL);
	/* a stream that fails says so */
	assert(full);
	setvbuf(full, NULL, _IONBF, 0);
	it = can_item();
	for (int f = 0; f < REC_FORMAT_MAX; f++) {
		assert(rec_format_item(full, (enum rec_format)f, &it, NULL, NULL) == -EIO);
		clearerr(full);
	}
	assert(rec_format_header(full, REC_FORMAT_CSV) == -EIO);
	fclose(full);
	printf("bad arguments, failing stream: ok\n");
}

/* Names on input: exact, a bare signal name where unique, refused with
   the candidates where not (rec_name_resolve, rec_channels_resolve). */
static const char *const resolve_names[] = {
	"BrakeStatus.AliveCounter", "line_voltage", "DoorStatus.AliveCounter", NULL, "VehicleSpeed.Speed",
	"Speed", "Odometer.Odometer", "Cab.Door.Left", "HVAC.AliveCounter",
};

static const char *resolve_at(const void *ctx, size_t i)
{
	return ((const char *const *)ctx)[i];
}

static void test_resolve(void)
{
	const size_t n = sizeof(resolve_names) / sizeof(resolve_names[0]);
	char why[256];
	size_t i = 99;
	rec_channels_t *m;
	uint32_t id;

	assert(rec_name_resolve(resolve_at, resolve_names, n, "line_voltage", &i, why, sizeof(why)) == 0 && i == 1);
	/* an exact name wins over the qualified one that ends in it */
	assert(rec_name_resolve(resolve_at, resolve_names, n, "Speed", &i, why, sizeof(why)) == 0 && i == 5);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "VehicleSpeed.Speed", &i, why, sizeof(why)) == 0 && i == 4);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "Odometer", &i, why, sizeof(why)) == 0 && i == 6);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "Left", &i, why, sizeof(why)) == 0 && i == 7);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "Door.Left", &i, why, sizeof(why)) == 0 && i == 7);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "DoorStatus.AliveCounter", &i, why, sizeof(why)) == 0 && i == 2);
	i = 99;
	assert(rec_name_resolve(resolve_at, resolve_names, n, "AliveCounter", &i, why, sizeof(why)) == -ENOTUNIQ && i == 99);
	CHECK_STR(why, "'AliveCounter' is ambiguous: BrakeStatus.AliveCounter, DoorStatus.AliveCounter, "
	               "HVAC.AliveCounter (give one of them)");
	/* no room for every candidate: "..." */
	assert(rec_name_resolve(resolve_at, resolve_names, n, "AliveCounter", &i, why, 80) == -ENOTUNIQ);
	CHECK_STR(why, "'AliveCounter' is ambiguous: BrakeStatus.AliveCounter ... (give one of them)");
	assert(rec_name_resolve(resolve_at, resolve_names, n, "AliveCounter", &i, NULL, 0) == -ENOTUNIQ);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "Counter", &i, why, sizeof(why)) == -ENOENT);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "aliveCounter", &i, why, sizeof(why)) == -ENOENT);
	assert(rec_name_resolve(resolve_at, resolve_names, n, ".AliveCounter", &i, why, sizeof(why)) == -ENOENT);
	assert(rec_name_resolve(NULL, resolve_names, n, "x", &i, why, sizeof(why)) == -EINVAL);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "", &i, why, sizeof(why)) == -EINVAL);
	assert(rec_name_resolve(resolve_at, resolve_names, n, NULL, &i, why, sizeof(why)) == -EINVAL);
	assert(rec_name_resolve(resolve_at, resolve_names, n, "x", NULL, why, sizeof(why)) == -EINVAL);

	assert(rec_channels_new(&m) == 0);
	assert(rec_channels_resolve(m, "Speed", &id, why, sizeof(why)) == -ENOENT);
	assert(rec_channels_set(m, 0x10000, "BrakeStatus.AliveCounter", "") == 0);
	assert(rec_channels_set(m, 0x10001, "VehicleSpeed.Speed", "km/h") == 0);
	assert(rec_channels_set(m, 0x10002, "DoorStatus.AliveCounter", "") == 0);
	assert(rec_channels_resolve(m, "Speed", &id, why, sizeof(why)) == 0 && id == 0x10001);
	assert(rec_channels_resolve(m, "AliveCounter", &id, why, sizeof(why)) == -ENOTUNIQ);
	CHECK_STR(why, "'AliveCounter' is ambiguous: BrakeStatus.AliveCounter, DoorStatus.AliveCounter (give one of them)");
	assert(rec_channels_resolve(m, "DoorStatus.AliveCounter", &id, why, sizeof(why)) == 0 && id == 0x10002);
	assert(rec_channels_resolve(NULL, "Speed", &id, why, sizeof(why)) == -EINVAL);
	assert(rec_channels_resolve(m, "Speed", NULL, why, sizeof(why)) == -EINVAL);
	rec_channels_free(m);
}

/* rec_channels_ids: every entry with one of the names (whole names, NULL
   skipped; two ids with one name both), in id order, whatever the order
   of the names or of the entries set; none found is an array of 0. */
static void test_channels_ids(void)
{
	static const char *const want[] = { "Door.Left", NULL, "VehicleSpeed.Speed", "Nowhere.Else", "Speed" };
	static const char *const none[] = { "Left", NULL };
	rec_channels_t *m;
	uint32_t *ids = NULL;

	assert(rec_channels_new(&m) == 0);
	assert(rec_channels_ids(m, resolve_at, want, 5, &ids) == 0 && ids);
	free(ids);
	assert(rec_channels_set(m, 0x20001, "Door.Left", "") == 0);
	assert(rec_channels_set(m, 0x10007, "VehicleSpeed.Speed", "km/h") == 0);
	assert(rec_channels_set(m, 0x10002, "Door.Right", "") == 0);
	assert(rec_channels_set(m, 0x00003, "Door.Left", "") == 0);
	assert(rec_channels_set(m, 0x30000, "Odometer.Odometer", "km") == 0);
	assert(rec_channels_ids(m, resolve_at, want, 5, &ids) == 3);
	assert(ids[0] == 0x00003 && ids[1] == 0x10007 && ids[2] == 0x20001);
	free(ids);
	/* a bare signal name is not resolved here: only whole names match */
	ids = NULL;
	assert(rec_channels_ids(m, resolve_at, none, 2, &ids) == 0 && ids);
	free(ids);
	ids = NULL;
	assert(rec_channels_ids(m, resolve_at, want, 0, &ids) == 0 && ids);
	free(ids);
	ids = NULL;
	assert(rec_channels_ids(NULL, resolve_at, want, 5, &ids) == -EINVAL && !ids);
	assert(rec_channels_ids(m, NULL, want, 5, &ids) == -EINVAL && !ids);
	assert(rec_channels_ids(m, resolve_at, want, 5, NULL) == -EINVAL);
	rec_channels_free(m);
	printf("channel ids of names: ok\n");
}

int main(void)
{
	test_resolve();
	test_channels_ids();
	test_kinds();
	test_qualities();
	test_events();
	test_channels_many();
	test_channels_learn();
	test_csv();
	test_jsonl();
	test_candump();
	test_influx();
	test_doubles();
	test_resolution();
	test_writer_blocks();
	test_value_digits();
	test_origin();
	test_one_schema();
	test_order();
	test_order_runs();
	test_wide();
	test_bad_args();
	return 0;
}
