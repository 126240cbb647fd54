/* SPDX-License-Identifier: MIT */
/* test-batch.c - Batch encode/decode round trips, validation, bad input. */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/batch.h"

static uint64_t rng = 88172645463325252ull;

static uint64_t xr(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void random_item(struct acq_item *it, int64_t t)
{
	memset(it, 0, sizeof(*it));
	it->t_ns = t;
	it->kind = (uint16_t)(xr() % 4);
	switch (it->kind) {
	case ACQ_ITEM_CAN:
		it->bus = (uint16_t)(xr() % 4);
		it->can.flags = (uint8_t)(xr() & 0x7f);
		it->can.id = (uint32_t)(xr() & ((it->can.flags & ACQ_CAN_EXT) ? 0x1fffffff : 0x7ff));
		it->can.len = (uint8_t)(xr() % (ACQ_CAN_DATA_MAX + 1));
		for (int i = 0; i < it->can.len; i++)
			it->can.data[i] = (uint8_t)xr();
		break;
	case ACQ_ITEM_SAMPLE:
		it->bus = (uint16_t)(xr() % 4);
		it->sample.channel = (uint32_t)it->bus << 16 | (uint32_t)(xr() % 100);
		it->sample.value = (double)(int64_t)xr() / 1e9;
		it->sample.quality = (xr() % 10) ? ACQ_Q_GOOD : ACQ_Q_OUT_OF_RANGE;
		break;
	case ACQ_ITEM_TEXT:
		it->bus = (uint16_t)(xr() % 4);
		it->text.channel = (uint32_t)it->bus << 16 | (uint32_t)(xr() % 100);
		it->text.len = (uint8_t)(xr() % (ACQ_TEXT_MAX + 1));
		for (int i = 0; i < it->text.len; i++)
			it->text.text[i] = (char)(0x20 + xr() % 95);
		it->text.quality = (xr() % 10) ? ACQ_Q_GOOD : ACQ_Q_INVALID;
		break;
	default:
		it->bus = (xr() & 1) ? ACQ_SOURCE_DAEMON : 2;
		it->event.code = ACQ_EV_MB_EXCEPTION;
		it->event.arg = (int64_t)xr();
		it->event.detail = (uint32_t)xr();
	}
}

static bool item_eq(const struct acq_item *a, const struct acq_item *b)
{
	if (a->kind != b->kind || a->t_ns != b->t_ns || a->bus != b->bus)
		return false;
	switch (a->kind) {
	case ACQ_ITEM_CAN:
		return a->can.id == b->can.id && a->can.flags == b->can.flags &&
		       a->can.len == b->can.len && !memcmp(a->can.data, b->can.data, a->can.len);
	case ACQ_ITEM_SAMPLE:
		return a->sample.channel == b->sample.channel && a->sample.value == b->sample.value &&
		       a->sample.quality == b->sample.quality;
	case ACQ_ITEM_TEXT:
		return a->text.channel == b->text.channel && a->text.quality == b->text.quality &&
		       a->text.len == b->text.len && !memcmp(a->text.text, b->text.text, a->text.len);
	default:
		return a->event.code == b->event.code && a->event.arg == b->event.arg &&
		       a->event.detail == b->event.detail;
	}
}

/* Encoded order is can, samples, events, texts: sort a copy that way (stable). */
static void order_like_batch(const struct acq_item *in, size_t n, struct acq_item *out)
{
	size_t k = 0;

	for (uint16_t kind = 0; kind < ACQ_ITEM_KIND_MAX; kind++)
		for (size_t i = 0; i < n; i++)
			if (in[i].kind == kind)
				out[k++] = in[i];
	assert(k == n);
}

static void test_roundtrip(void)
{
	enum { N = 3000 };
	struct rec_batch_meta meta = { .vehicle = "EMU-4021", .config_hash = 0x1234567890abcdefull };
	struct acq_item *in = calloc(N, sizeof(*in)), *want = calloc(N, sizeof(*in));
	static const char *const vt[] = { "0 stopped", "1 moving", "-2.5 error" };
	struct rec_channel chans[2] = {
		{ .id = 1, .name = "line_voltage", .unit = "V", .bus = 1, .source = "modbus", .bus_name = "traction",
		  .has_decimals = true, .decimals = 0 }, /* a present 0 (scale 1), not "not known" */
		{ .id = 2, .name = "speed", .unit = "km/h", .bus = 0, .source = "can:SPEED", .has_range = true,
		  .min = -10, .max = 250.5, .value_table = vt, .nvalue_table = 3, .bus_name = "vehicle" } };
	rec_encoder_t *enc;
	rec_batch_t *b;
	struct rec_batch_info info;
	const uint8_t *buf;
	size_t len;
	int64_t t = 1700000000123456789ll, t_first, t_last;

	memset(meta.boot_id, 0xab, sizeof(meta.boot_id));
	memset(meta.log_id, 0x1d, sizeof(meta.log_id));
	meta.log_id[15] = 0x42;
	assert(rec_encoder_new(&meta, N, &enc) == 0);
	for (size_t i = 0; i < N; i++) {
		/* times mostly increase but may step back (clock steps) */
		t += (int64_t)(xr() % 2000000) - 100000;
		random_item(&in[i], t);
		assert(rec_encoder_add(enc, &in[i]) == 0);
	}
	assert(rec_encoder_count(enc) == N);
	struct acq_item extra = in[0];
	assert(rec_encoder_add(enc, &extra) == -ENOBUFS);
	rec_encoder_span(enc, &t_first, &t_last);
	assert(t_first <= t_last);
	assert(rec_encoder_set_channels(enc, chans, 2) == 2);
	assert(rec_encoder_finish(enc, 1000, &buf, &len) == N);
	assert(rec_encoder_count(enc) == 0);
	printf("batch of %d records: %zu bytes (%.1f B/record)\n", N, len, (double)len / N);

	assert(rec_batch_decode(buf, len, &b) == 0);
	assert(rec_batch_info(b, &info) == 0);
	assert(info.first_seq == 1000 && info.count == N && info.schema_version == 1);
	assert(!strcmp(info.vehicle, "EMU-4021") && info.config_hash == meta.config_hash);
	assert(info.boot_id_len == 16 && info.boot_id[5] == 0xab && info.nchannels == 2);
	assert(info.log_id_len == REC_LOG_ID_LEN && info.log_id[0] == 0x1d && info.log_id[15] == 0x42);
	struct rec_channel c;
	assert(rec_batch_channel(b, 1, &c) == 0 && !strcmp(c.name, "speed") && !strcmp(c.unit, "km/h"));
	/* range, value table and bus name travel in the dictionary */
	assert(c.has_range && c.min == -10 && c.max == 250.5 && !strcmp(c.bus_name, "vehicle"));
	assert(c.nvalue_table == 3 && !strcmp(c.value_table[0], "0 stopped") && !strcmp(c.value_table[2], "-2.5 error"));
	assert(!c.has_decimals); /* none given: not known (a log before the field) */
	assert(rec_batch_channel(b, 0, &c) == 0 && !c.has_range && c.nvalue_table == 0 &&
	       !strcmp(c.bus_name, "traction"));
	assert(c.has_decimals && c.decimals == 0);
	assert(rec_batch_channel(b, 2, &c) == -EINVAL);
	order_like_batch(in, N, want);
	for (size_t i = 0; i < N; i++) {
		struct acq_item got;
		assert(rec_batch_item(b, i, &got) == 0);
		assert(got.seq == 1000 + i);
		assert(item_eq(&got, &want[i]));
	}
	assert(rec_batch_item(b, N, &extra) == -EINVAL);
	rec_batch_free(b);

	/* The uplink flags backlog as historical by appending field 7 = true
	   to the stored bytes: protobuf merges it, the records stay the same. */
	{
		uint8_t *h = malloc(len + 2);
		struct acq_item got;
		assert(h);
		memcpy(h, buf, len);
		h[len] = 7 << 3;
		h[len + 1] = 1;
		assert(rec_batch_decode(h, len + 2, &b) == 0);
		assert(rec_batch_info(b, &info) == 0 && info.historical && info.count == N && info.first_seq == 1000);
		assert(rec_batch_item(b, N - 1, &got) == 0 && item_eq(&got, &want[N - 1]));
		rec_batch_free(b);
		free(h);
	}

	/* A log id of any other length than 16 bytes is malformed (appended
	   field 13, 3 bytes: the last value of a bytes field wins). */
	{
		uint8_t *h = malloc(len + 5);
		assert(h);
		memcpy(h, buf, len);
		memcpy(h + len, "\x6a\x03" "abc", 5);
		assert(rec_batch_decode(h, len + 5, &b) == -EBADMSG);
		h[len + 1] = 0; /* empty: a sender without log ids */
		assert(rec_batch_decode(h, len + 2, &b) == 0);
		assert(rec_batch_info(b, &info) == 0 && info.log_id_len == 0 && info.count == N);
		rec_batch_free(b);
		free(h);
	}

	/* An empty batch encodes and decodes to zero records. */
	assert(rec_encoder_finish(enc, 5, &buf, &len) == 0);
	assert(rec_batch_decode(buf, len, &b) == 0);
	assert(rec_batch_info(b, &info) == 0 && info.count == 0);
	rec_batch_free(b);
	rec_encoder_free(enc);
	free(in);
	free(want);
}

/* Texts: what the encoder refuses (a byte that is not printable ASCII, a
   length over ACQ_TEXT_MAX), a Batch's 1,024 texts at most, and a decoded
   text longer than ACQ_TEXT_MAX or with columns of unequal length refused. */
static void test_texts(void)
{
	struct rec_batch_meta meta = { .vehicle = "EMU-4021" };
	struct acq_item it = { .kind = ACQ_ITEM_TEXT, .t_ns = 1700000000000000000ll, .bus = 1 };
	/* schema 1, first_seq 1, then field 16 (Texts): t_delta_ns [0], channel [1], text */
	uint8_t raw[8 + 6 + 2 + 65] = { 0x08, 0x01, 0x10, 0x01, 0x82, 0x01, 0, 0x0a, 0x01, 0x00, 0x12, 0x01, 0x01, 0x1a };
	rec_encoder_t *enc;
	rec_batch_t *b;
	const uint8_t *buf;
	size_t len, i;

	assert(rec_encoder_new(&meta, 4096, &enc) == 0);
	it.text.channel = 1 << 16 | 5;
	it.text.len = 3;
	memcpy(it.text.text, "a\nb", 3);
	assert(rec_encoder_add(enc, &it) == -EINVAL);
	memcpy(it.text.text, "a\xff" "b", 3);
	assert(rec_encoder_add(enc, &it) == -EINVAL);
	it.text.len = ACQ_TEXT_MAX + 1;
	assert(rec_encoder_add(enc, &it) == -EINVAL);
	assert(rec_encoder_count(enc) == 0);
	it.text.len = 3;
	memcpy(it.text.text, "V21", 3);
	for (i = 0; rec_encoder_add(enc, &it) == 0; i++)
		it.t_ns++;
	assert(i == 1024 && rec_encoder_count(enc) == 1024);
	assert(rec_encoder_finish(enc, 1, &buf, &len) == 1024);
	assert(rec_batch_decode(buf, len, &b) == 0);
	assert(rec_batch_item(b, 1023, &it) == 0 && it.kind == ACQ_ITEM_TEXT && it.seq == 1024 && it.bus == 1 &&
	       it.text.len == 3 && !memcmp(it.text.text, "V21", 3) && it.t_ns == 1700000000000000000ll + 1023);
	rec_batch_free(b);
	rec_encoder_free(enc);
	/* 64 characters decode, 65 are malformed */
	for (unsigned n = 64; n <= 65; n++) {
		raw[6] = (uint8_t)(6 + 2 + n);
		raw[14] = (uint8_t)n;
		memset(raw + 15, 'A', n);
		if (n == 64) {
			assert(rec_batch_decode(raw, 15 + n, &b) == 0);
			assert(rec_batch_item(b, 0, &it) == 0 && it.kind == ACQ_ITEM_TEXT && it.text.len == 64 &&
			       it.text.channel == 1 && it.text.quality == ACQ_Q_GOOD);
			rec_batch_free(b);
		} else {
			assert(rec_batch_decode(raw, 15 + n, &b) == -EBADMSG);
		}
	}
	/* no channel column (an unknown field 15 in its 3 bytes): 1 text, 0 channels */
	raw[6] = (uint8_t)(6 + 2 + 64), raw[14] = 64;
	memcpy(raw + 10, "\x78\x81\x00", 3);
	assert(rec_batch_decode(raw, 15 + 64, &b) == -EBADMSG);
	printf("texts: refused bytes and lengths, 1,024 per Batch, decoded up to 64 characters: ok\n");
}

static void test_malformed(void)
{
	struct rec_batch_meta meta = { .vehicle = "v" };
	rec_encoder_t *enc;
	const uint8_t *buf;
	size_t len;
	uint8_t copy[65536];
	rec_batch_t *b;
	unsigned rejected = 0, accepted = 0;

	assert(rec_encoder_new(&meta, 64, &enc) == 0);
	for (int i = 0; i < 64; i++) {
		struct acq_item it;
		random_item(&it, 1000 + i);
		assert(rec_encoder_add(enc, &it) == 0);
	}
	assert(rec_encoder_finish(enc, 1, &buf, &len) == 64);
	assert(len < sizeof(copy));
	/* An all-zero log id is no log id: the field is left out. */
	assert(rec_batch_decode(buf, len, &b) == 0);
	{
		struct rec_batch_info info;
		assert(rec_batch_info(b, &info) == 0 && info.log_id_len == 0);
	}
	rec_batch_free(b);
	/* Every truncation must decode cleanly or be rejected, never crash;
	   item access on what decodes must stay in bounds (ASan checks). */
	for (size_t cut = 0; cut < len; cut++) {
		int r = rec_batch_decode(buf, cut, &b);
		if (r == 0) {
			struct rec_batch_info info;
			struct acq_item it;
			assert(rec_batch_info(b, &info) == 0);
			for (size_t i = 0; i < info.count; i++)
				assert(rec_batch_item(b, i, &it) == 0);
			rec_batch_free(b);
			accepted++;
		} else {
			assert(r == -EBADMSG);
			rejected++;
		}
	}
	/* Random byte corruption. */
	for (int round = 0; round < 20000; round++) {
		memcpy(copy, buf, len);
		for (int k = 0; k < 1 + (int)(xr() % 4); k++)
			copy[xr() % len] = (uint8_t)xr();
		if (rec_batch_decode(copy, len, &b) == 0) {
			struct rec_batch_info info;
			struct acq_item it;
			assert(rec_batch_info(b, &info) == 0);
			for (size_t i = 0; i < info.count; i++)
				assert(rec_batch_item(b, i, &it) == 0);
			rec_batch_free(b);
		}
	}
	printf("truncations: %u rejected, %u decodable prefixes\n", rejected, accepted);
	assert(rejected > 0);
	rec_encoder_free(enc);
}

static void test_bad_args(void)
{
	struct rec_batch_meta meta = { .vehicle = "v" };
	rec_encoder_t *enc;
	rec_batch_t *b;
	struct acq_item it = { .kind = 7 };
	const uint8_t *buf;
	size_t len;

	assert(rec_encoder_new(NULL, 10, &enc) == -EINVAL);
	assert(rec_encoder_new(&meta, 0, &enc) == -EINVAL);
	assert(rec_encoder_new(&meta, 10, NULL) == -EINVAL);
	assert(rec_encoder_new(&meta, 10, &enc) == 0);
	assert(rec_encoder_add(enc, &it) == -EINVAL);
	it.kind = ACQ_ITEM_CAN;
	it.can.len = 65;
	assert(rec_encoder_add(enc, &it) == -EINVAL);
	assert(rec_encoder_add(NULL, &it) == -EINVAL);
	assert(rec_encoder_set_channels(enc, NULL, 3) == -EINVAL);
	assert(rec_encoder_finish(enc, 1, NULL, &len) == -EINVAL);
	assert(rec_encoder_finish(NULL, 1, &buf, &len) == -EINVAL);
	assert(rec_encoder_free(enc) == NULL);
	assert(rec_encoder_free(NULL) == NULL);
	assert(rec_batch_decode(NULL, 5, &b) == -EINVAL);
	assert(rec_batch_decode("x", 1, NULL) == -EINVAL);
	assert(rec_batch_free(NULL) == NULL);
	assert(rec_batch_info(NULL, NULL) == -EINVAL);
	assert(rec_batch_item(NULL, 0, &it) == -EINVAL);
}

/*
 * A large board's dictionary on the collector's stack: 10,000 channels with
 * names as long as generated DBCs have them, set and encoded on a thread
 * with the collector's 256 KiB stack (acquisition/thread.c).  The
 * dictionary is over REC_BATCH_MAX_BYTES, so it goes out in slices: every
 * Batch stays within the log's 1 MiB, and the slices together name every
 * channel once.
 */
enum { BIG_CHANNELS = 10000 };

struct big_dict {
	struct rec_channel *ch;
	char (*name)[96], (*source)[96];
	size_t batches, named, records;
	size_t largest;
};

static void *big_dict_main(void *p)
{
	struct big_dict *t = p;
	struct rec_batch_meta meta = { .vehicle = "EMU-4021" };
	rec_encoder_t *enc;
	size_t pos = 0;

	assert(rec_encoder_new(&meta, 4096, &enc) == 0);
	while (pos < BIG_CHANNELS) {
		const uint8_t *buf;
		size_t len;
		rec_batch_t *b;
		struct rec_batch_info info;
		int k;

		/* a Batch full of records, as at the collector's flush */
		for (size_t i = 0; i < 4096; i++) {
			struct acq_item it = { .kind = ACQ_ITEM_SAMPLE, .t_ns = (int64_t)(t->records + i) * 1000 };
			it.sample.channel = (uint32_t)(i % BIG_CHANNELS);
			it.sample.value = (double)i;
			assert(rec_encoder_add(enc, &it) == 0);
		}
		k = rec_encoder_set_channels(enc, t->ch + pos, BIG_CHANNELS - pos);
		assert(k > 0 && (size_t)k <= BIG_CHANNELS - pos);
		assert(rec_encoder_finish(enc, 1 + t->records, &buf, &len) == 4096);
		assert(len <= REC_BATCH_MAX_BYTES);
		if (len > t->largest)
			t->largest = len;
		assert(rec_batch_decode(buf, len, &b) == 0 && rec_batch_info(b, &info) == 0);
		assert(info.nchannels == (size_t)k && info.count == 4096);
		for (size_t i = 0; i < info.nchannels; i++) {
			struct rec_channel c;
			assert(rec_batch_channel(b, i, &c) == 0);
			assert(c.id == t->ch[pos + i].id && !strcmp(c.name, t->name[pos + i]));
			assert(!strcmp(c.source, t->source[pos + i]));
			t->named++;
		}
		rec_batch_free(b);
		pos += (size_t)k;
		t->records += 4096;
		t->batches++;
	}
	rec_encoder_free(enc);
	return NULL;
}

static void test_large_dictionary(void)
{
	struct big_dict t = { 0 };
	pthread_attr_t attr;
	pthread_t tid;

	t.ch = calloc(BIG_CHANNELS, sizeof(*t.ch));
	t.name = calloc(BIG_CHANNELS, sizeof(*t.name));
	t.source = calloc(BIG_CHANNELS, sizeof(*t.source));
	assert(t.ch && t.name && t.source);
	for (size_t i = 0; i < BIG_CHANNELS; i++) {
		snprintf(t.name[i], sizeof(t.name[i]), "TractionConverter%04zu_Inverter%zu_PhaseCurrentStatus", i / 8,
		         i % 8);
		snprintf(t.source[i], sizeof(t.source[i]), "can traction TractionConverterStatusMessage%04zu", i / 8);
		t.ch[i] = (struct rec_channel){ .id = (uint32_t)(1u << 16 | i), .name = t.name[i], .unit = "A", .bus = 1,
		                                .source = t.source[i] };
	}
	assert(pthread_attr_init(&attr) == 0);
	assert(pthread_attr_setstacksize(&attr, 256 * 1024) == 0);
	assert(pthread_create(&tid, &attr, big_dict_main, &t) == 0);
	assert(pthread_join(tid, NULL) == 0);
	pthread_attr_destroy(&attr);
	printf("%d channels: dictionary in %zu Batches of at most %zu bytes, every channel named once\n",
	       BIG_CHANNELS, t.batches, t.largest);
	assert(t.named == BIG_CHANNELS && t.batches >= 2);
	/* set on an empty Batch, the dictionary still leaves room for the
	   first record, which always goes in */
	{
		struct rec_batch_meta meta = { .vehicle = "EMU-4021" };
		struct acq_item it = { .kind = ACQ_ITEM_CAN, .t_ns = INT64_MIN / 2 };
		const uint8_t *buf;
		size_t len;
		rec_encoder_t *enc;
		int k;

		it.can.len = ACQ_CAN_DATA_MAX;
		it.can.flags = ACQ_CAN_FD | ACQ_CAN_EXT;
		it.can.id = 0x1fffffff;
		assert(rec_encoder_new(&meta, 4096, &enc) == 0);
		k = rec_encoder_set_channels(enc, t.ch, BIG_CHANNELS);
		assert(k > 0 && k < BIG_CHANNELS);
		assert(rec_encoder_add(enc, &it) == 0);
		assert(rec_encoder_finish(enc, 1, &buf, &len) == 1 && len <= REC_BATCH_MAX_BYTES);
		rec_encoder_free(enc);
	}
	free(t.ch);
	free(t.name);
	free(t.source);
}

/*
 * batch_max goes up to 1,048,576 records, but the log refuses a Batch over
 * 1 MiB with every record in it: the encoder says full before that.
 */
static void test_size_cap(void)
{
	struct rec_batch_meta meta = { .vehicle = "v" };
	struct rec_health h = { .name = "vehicle", .kind = "can", .items = UINT64_MAX };
	struct rec_channel ch = { .id = 7, .name = "speed", .unit = "km/h", .source = "can vehicle SPEED" };
	rec_encoder_t *enc;
	rec_batch_t *b;
	struct rec_batch_info info;
	const uint8_t *buf;
	size_t len, n = 0;
	int r;

	assert(rec_encoder_new(&meta, 1u << 20, &enc) == 0);
	do {
		/* the largest record there is: a 64-byte CAN FD frame */
		struct acq_item it = { .kind = ACQ_ITEM_CAN, .t_ns = -(int64_t)n * 1000000007 };
		it.can.id = 0x1fffffff;
		it.can.flags = 0x7f;
		it.can.len = ACQ_CAN_DATA_MAX;
		memset(it.can.data, 0xa5, sizeof(it.can.data));
		r = rec_encoder_add(enc, &it);
		n += r == 0;
	} while (r == 0);
	assert(r == -ENOBUFS && n > 1000);
	/* the quarter kept for them: a dictionary entry and health still go in */
	assert(rec_encoder_set_channels(enc, &ch, 1) == 1);
	for (int i = 0; i < REC_HEALTH_MAX; i++)
		assert(rec_encoder_add_health(enc, &h) == 0);
	assert(rec_encoder_finish(enc, 1, &buf, &len) == (int)n);
	assert(len <= REC_BATCH_MAX_BYTES);
	assert(rec_batch_decode(buf, len, &b) == 0 && rec_batch_info(b, &info) == 0);
	assert(info.count == n && info.nchannels == 1 && info.nhealth == REC_HEALTH_MAX);
	rec_batch_free(b);
	printf("1 MiB cap: %zu CAN FD frames of 64 bytes in a %zu-byte Batch\n", n, len);
	/* an entry that no Batch could hold is an error, not a silent loss */
	{
		char *huge = malloc(REC_BATCH_MAX_BYTES + 1);
		struct rec_channel big = { .id = 1, .name = huge, .unit = "", .source = "" };
		assert(huge);
		memset(huge, 'x', REC_BATCH_MAX_BYTES);
		huge[REC_BATCH_MAX_BYTES] = 0;
		assert(rec_encoder_set_channels(enc, &big, 1) == -EMSGSIZE);
		assert(rec_encoder_finish(enc, 1, &buf, &len) == 0);
		free(huge);
	}
	rec_encoder_free(enc);
}

/* A Modbus bus's health keeps its wakeup and transaction histograms apart
   through encode and decode (Health fields 6-14 and 27-29). */
static void test_health_roundtrip(void)
{
	struct rec_batch_meta meta = { .vehicle = "V" };
	struct rec_health h = { .name = "m", .kind = "modbus", .bus = 1, .latency_count = 5,
	                        .latency_p99_us = 40, .latency_max_ns = 41000,
	                        .transaction_p99_us = 3100, .transaction_max_ns = 3150000 }, out;
	rec_encoder_t *enc;
	rec_batch_t *b;
	const uint8_t *buf;
	size_t len;

	h.latency_us_buckets[6] = 5;
	h.transaction_us_buckets[12] = 7;
	h.transaction_us_buckets[23] = 1;
	assert(rec_encoder_new(&meta, 16, &enc) == 0);
	assert(rec_encoder_add_health(enc, &h) == 0);
	assert(rec_encoder_finish(enc, 1, &buf, &len) == 0);
	assert(rec_batch_decode(buf, len, &b) == 0);
	assert(rec_batch_health(b, 0, &out) == 0);
	assert(out.latency_us_buckets[6] == 5 && out.latency_p99_us == 40 && out.latency_count == 5);
	assert(!memcmp(out.transaction_us_buckets, h.transaction_us_buckets, sizeof(h.transaction_us_buckets)));
	assert(out.transaction_p99_us == 3100 && out.transaction_max_ns == 3150000);
	rec_batch_free(b);
	rec_encoder_free(enc);
	puts("health: wakeup and transaction histograms round-trip apart");
}

/* A reduced Batch (railmon.proto 18-20): the encoder's bytes + rec_reduced_tail
   decode with each record's own seq and the source range; what breaks the
   rules is -EBADMSG.  Catches: seqs taken as first_seq + i, end_seq left at
   first_seq + count, a tail that drops the first delta 0, a decoder that
   accepts seq_delta without reduced or a seq past source_end_seq. */
static void test_reduced(void)
{
	struct rec_batch_meta meta = { .vehicle = "V1" };
	const uint64_t seqs[] = { 100, 103, 104, 120 }; /* of [100, 130) */
	uint8_t buf[4096], tail[256];
	const uint8_t *out;
	struct rec_batch_info info;
	rec_encoder_t *enc;
	rec_batch_t *b;
	size_t len;
	int k;

	assert(rec_encoder_new(&meta, 16, &enc) == 0);
	for (int i = 0; i < 4; i++) {
		struct acq_item it = { .kind = i == 3 ? ACQ_ITEM_EVENT : ACQ_ITEM_SAMPLE, .t_ns = 1000 + i, .bus = 0 };

		if (i == 3)
			it.event.code = 1;
		else
			it.sample = (struct acq_sample){ .channel = (uint32_t)i, .value = i * 1.5 };
		assert(rec_encoder_add(enc, &it) == 0);
	}
	assert(rec_encoder_finish(enc, 100, &out, &len) == 4);
	memcpy(buf, out, len);
	k = rec_reduced_tail(100, 130, seqs, 4, tail, sizeof(tail));
	assert(k > 0 && (size_t)k <= REC_REDUCED_TAIL_MAX(4));
	memcpy(buf + len, tail, (size_t)k);
	assert(rec_batch_decode(buf, len + (size_t)k, &b) == 0);
	assert(rec_batch_info(b, &info) == 0 && info.reduced && info.first_seq == 100 && info.count == 4 &&
	       info.end_seq == 130);
	for (size_t i = 0; i < 4; i++) {
		struct acq_item it;

		assert(rec_batch_item(b, i, &it) == 0 && it.seq == seqs[i] && rec_batch_seq(b, i) == seqs[i]);
	}
	rec_batch_free(b);
	/* the plain Batch says its end too */
	assert(rec_batch_decode(buf, len, &b) == 0 && rec_batch_info(b, &info) == 0 && !info.reduced &&
	       info.end_seq == 104);
	rec_batch_free(b);
	/* bad tails are refused when written */
	assert(rec_reduced_tail(100, 130, (const uint64_t[]){ 100, 100 }, 2, tail, sizeof(tail)) == -EINVAL);
	assert(rec_reduced_tail(100, 130, (const uint64_t[]){ 130 }, 1, tail, sizeof(tail)) == -EINVAL);
	assert(rec_reduced_tail(100, 130, (const uint64_t[]){ 99 }, 1, tail, sizeof(tail)) == -EINVAL);
	assert(rec_reduced_tail(100, 100, NULL, 0, tail, sizeof(tail)) == -EINVAL);
	assert(rec_reduced_tail(100, 130, seqs, 4, tail, 4) == -ENOBUFS);
	/* and when read: 3 deltas for 4 records; a seq past the end (source end
	   121 <= 120 is refused below by the writer itself); source_end_seq or seq_delta without reduced */
	k = rec_reduced_tail(100, 130, seqs, 3, tail, sizeof(tail));
	memcpy(buf + len, tail, (size_t)k);
	assert(rec_batch_decode(buf, len + (size_t)k, &b) == -EBADMSG);
	k = rec_reduced_tail(100, 121, seqs, 4, tail, sizeof(tail));
	memcpy(buf + len, tail, (size_t)k);
	assert(rec_batch_decode(buf, len + (size_t)k, &b) == 0);
	rec_batch_free(b);
	tail[k - 1] = 0x7f; /* the last delta 16 -> 127: seq 231, past 121 */
	memcpy(buf + len, tail, (size_t)k);
	assert(rec_batch_decode(buf, len + (size_t)k, &b) == -EBADMSG);
	k = rec_reduced_tail(100, 130, seqs, 4, tail, sizeof(tail));
	memcpy(buf + len, tail + 2, (size_t)k - 2); /* without "reduced = 1" */
	assert(rec_batch_decode(buf, len + (size_t)k - 2, &b) == -EBADMSG);
	/* a reduced Batch with no record: the range alone */
	assert(rec_encoder_finish(enc, 7, &out, &len) == 0);
	memcpy(buf, out, len);
	k = rec_reduced_tail(7, 9, NULL, 0, tail, sizeof(tail));
	memcpy(buf + len, tail, (size_t)k);
	assert(rec_batch_decode(buf, len + (size_t)k, &b) == 0 && rec_batch_info(b, &info) == 0 && info.reduced &&
	       info.count == 0 && info.first_seq == 7 && info.end_seq == 9);
	rec_batch_free(b);
	rec_encoder_free(enc);
}

/* finish_to packs the bytes finish would, into the caller's buffer; a
   buffer too small is refused with the records kept. */
static void test_finish_to(void)
{
	enum { N = 500 };
	struct rec_batch_meta meta = { .vehicle = "EMU-4021", .config_hash = 42 };
	rec_encoder_t *e1, *e2;
	const uint8_t *want;
	uint8_t *dst;
	size_t wlen, len = 0, max;
	int64_t t = 1700000000000000000ll;

	memset(meta.boot_id, 0x11, sizeof(meta.boot_id));
	assert(rec_encoder_new(&meta, N, &e1) == 0 && rec_encoder_new(&meta, N, &e2) == 0);
	for (int round = 0; round < 3; round++) {
		for (size_t i = 0; i < N; i++) {
			struct acq_item it;

			t += (int64_t)(xr() % 1000000);
			random_item(&it, t);
			assert(rec_encoder_add(e1, &it) == 0 && rec_encoder_add(e2, &it) == 0);
		}
		max = rec_encoder_wire_max(e2);
		dst = malloc(max);
		assert(dst);
		assert(rec_encoder_finish(e1, 1 + (uint64_t)round * N, &want, &wlen) == N);
		assert(wlen <= max);
		/* one byte short: refused, nothing reset */
		assert(rec_encoder_finish_to(e2, 1 + (uint64_t)round * N, dst, wlen - 1, &len) == -ENOBUFS);
		assert(rec_encoder_count(e2) == N);
		assert(rec_encoder_finish_to(e2, 1 + (uint64_t)round * N, dst, max, &len) == N);
		assert(len == wlen && !memcmp(dst, want, wlen));
		assert(rec_encoder_count(e2) == 0);
		free(dst);
	}
	assert(rec_encoder_finish_to(NULL, 1, (uint8_t[1]){ 0 }, 1, &len) == -EINVAL);
	assert(rec_encoder_finish_to(e2, 1, NULL, 1, &len) == -EINVAL);
	rec_encoder_free(e1);
	rec_encoder_free(e2);
	puts("finish_to: the bytes finish gives, in the caller's buffer; one byte short: -ENOBUFS, records kept");
}

/* One record of each kind with every field at its widest varint (time
   deltas of +-2^62, ids and channels of 2^32 - 1, a 64-byte CAN FD and
   text, a TRDP telegram with every column at its maximum), alone or
   repeated, under a long vehicle name, a log id and a monotonic start:
   finish_to into a room of exactly rec_encoder_wire_max() bytes packs
   within it (the encoder then skips its sizing pass; a bound too small
   writes past it: the canary) and decodes to the same records. */
static void widest_item(struct acq_item *it, unsigned kind, int64_t t, const uint8_t *tr_data)
{
	memset(it, 0, sizeof(*it));
	it->t_ns = t;
	it->kind = (uint16_t)kind;
	it->bus = 0xfffe;
	switch (kind) {
	case ACQ_ITEM_CAN:
		it->can = (struct acq_can){ .id = 0x1fffffff, .flags = ACQ_CAN_EXT | ACQ_CAN_FD, .len = ACQ_CAN_DATA_MAX };
		memset(it->can.data, 0xff, ACQ_CAN_DATA_MAX);
		break;
	case ACQ_ITEM_SAMPLE:
		it->sample = (struct acq_sample){ .channel = UINT32_MAX, .quality = UINT32_MAX, .value = -1e300 };
		break;
	case ACQ_ITEM_EVENT:
		it->event = (struct acq_event){ .code = UINT32_MAX, .detail = UINT32_MAX, .arg = INT64_MIN };
		break;
	case ACQ_ITEM_TEXT:
		it->text = (struct acq_text){ .channel = UINT32_MAX, .quality = 0xff, .len = ACQ_TEXT_MAX };
		memset(it->text.text, 'x', ACQ_TEXT_MAX);
		break;
	default:
		it->trdp = (struct acq_trdp){ .src_ip = UINT32_MAX, .dst_ip = UINT32_MAX, .src_port = 0xffff,
		                               .dst_port = 0xffff, .com_id = UINT32_MAX, .seq = UINT32_MAX,
		                               .etb_topo = UINT32_MAX, .op_trn_topo = UINT32_MAX, .msg_type = 0xffff,
		                               .flags = 0xffff, .len = 300, .data = tr_data };
		memset(it->trdp.session_id, 0xff, sizeof(it->trdp.session_id));
	}
}

static void test_wire_bound(void)
{
	enum { N = 200, CANARY = 64 };
	char vehicle[300];
	struct rec_batch_meta meta = { .vehicle = vehicle, .config_hash = UINT64_MAX };
	uint8_t tr_data[300];
	struct acq_item in[ACQ_ITEM_KIND_MAX * N];

	memset(vehicle, 'V', sizeof(vehicle) - 1);
	vehicle[sizeof(vehicle) - 1] = '\0';
	memset(meta.boot_id, 0xff, sizeof(meta.boot_id));
	memset(meta.log_id, 0xff, sizeof(meta.log_id));
	memset(tr_data, 0xee, sizeof(tr_data));
	for (size_t per = 1; per <= N; per += N - 1) {
		rec_encoder_t *e;
		rec_batch_t *b;
		uint8_t *dst;
		size_t n = 0, max, len = 0;

		assert(rec_encoder_new(&meta, ACQ_ITEM_KIND_MAX * N, &e) == 0);
		rec_encoder_set_clock_offset(e, INT64_MIN / 2);
		for (size_t i = 0; i < per; i++)
			for (unsigned k = 0; k < ACQ_ITEM_KIND_MAX; k++, n++) {
				/* alternating +-2^61: every delta +-2^62, 10 bytes */
				widest_item(&in[n], k, (n & 1) ? -(INT64_C(1) << 61) : (INT64_C(1) << 61), tr_data);
				assert(rec_encoder_add(e, &in[n]) == 0);
			}
		max = rec_encoder_wire_max(e);
		dst = malloc(max + CANARY);
		assert(dst);
		memset(dst + max, 0xa5, CANARY);
		assert(rec_encoder_finish_to(e, UINT64_MAX - n - 1, dst, max, &len) == (int)n);
		assert(len <= max);
		for (size_t i = 0; i < CANARY; i++)
			assert(dst[max + i] == 0xa5);
		assert(rec_batch_decode(dst, len, &b) == 0);
		for (size_t i = 0; i < n; i++) {
			struct acq_item got;

			assert(rec_batch_item(b, i, &got) == 0 && got.kind < ACQ_ITEM_KIND_MAX);
		}
		printf("widest records, %zu of each kind: %zu bytes packed within a bound of %zu\n", per, len, max);
		rec_batch_free(b);
		free(dst);
		rec_encoder_free(e);
	}
}

int main(void)
{
	test_reduced();
	test_roundtrip();
	test_texts();
	test_malformed();
	test_bad_args();
	test_large_dictionary();
	test_size_cap();
	test_health_roundtrip();
	test_finish_to();
	test_wire_bound();
	puts("test-batch: ok");
	return 0;
}
