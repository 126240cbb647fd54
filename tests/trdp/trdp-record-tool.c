/* SPDX-License-Identifier: MIT */
/*
 * trdp-record-tool IN BATCH JSONL CSV - raw TRDP telegrams through the
 * record format, for tests/trdp/test-trdp-record.py: reads telegrams
 * ("t_ns bus pd|md tcp src_ip dst_ip src_port dst_port HEX" per line, as
 * the Python side built them), makes each a record as the bus driver does
 * (trdp_telegram_fill), encodes them into one Batch after a CAN frame, an
 * event and a text (so their numbering after the texts shows), writes the
 * Batch's bytes to BATCH for python3-protobuf, decodes it again, and
 * writes the records as export does: JSON lines through rec_order (which
 * must keep its own copy of each telegram: the Batch is freed before a
 * record comes out; ASan says if not) and CSV straight from the Batch.
 * The Batch also carries a TRDP bus's health entry with its last fields
 * (opts_refused 3, capture_unmatched 64, tcp_listen_errno 98, receive 2), read back
 * here and by python3-protobuf: what the ground's receiver decodes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hex.h"
#include "record/batch.h"
#include "record/digest.h"
#include "record/format.h"
#include "record/order.h"
#include "tlib.h"
#include "trdp/header.h"

#define MAX_TELEGRAMS 4096

static uint8_t *bytes[MAX_TELEGRAMS];
static struct acq_item items[MAX_TELEGRAMS + 3];

static size_t read_telegrams(const char *path)
{
	static char line[300000];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	CHECK(f, "%s", path);
	while (fgets(line, sizeof(line), f)) {
		long long t;
		unsigned bus, tcp, src, dst, sport, dport;
		char kind[3];
		int off = 0;
		CHECK(sscanf(line, "%lld %u %2s %u %u %u %u %u %n", &t, &bus, kind, &tcp, &src, &dst, &sport, &dport,
		             &off) == 8);
		char *hex = line + off;
		size_t hn = strcspn(hex, "\n");
		CHECK(n < MAX_TELEGRAMS);
		bytes[n] = malloc(hn / 2 + 1);
		ssize_t len = basic_hex_decode(hex, hn, bytes[n], hn / 2 + 1);
		CHECK(len >= 0);
		struct acq_item *it = &items[n];
		memset(it, 0, sizeof(*it));
		it->kind = ACQ_ITEM_TRDP;
		it->t_ns = t;
		it->bus = (uint16_t)bus;
		it->trdp.flags = tcp ? ACQ_TRDP_TCP : 0;
		CHECK(trdp_telegram_fill(strcmp(kind, "md") ? TRDP_KIND_PD : TRDP_KIND_MD, bytes[n], (size_t)len,
		                         &it->trdp) >= 0);
		it->trdp.src_ip = src;
		it->trdp.dst_ip = dst;
		it->trdp.src_port = (uint16_t)sport;
		it->trdp.dst_port = (uint16_t)dport;
		n++;
	}
	fclose(f);
	return n;
}

static void add_others(rec_encoder_t *enc, int64_t t)
{
	struct acq_item can = { .t_ns = t, .kind = ACQ_ITEM_CAN, .bus = 0 };
	can.can.id = 0x123;
	can.can.len = 2;
	can.can.data[0] = 0xab;
	struct acq_item ev = { .t_ns = t, .kind = ACQ_ITEM_EVENT, .bus = 1 };
	ev.event.code = ACQ_EV_CAN_GONE;
	struct acq_item tx = { .t_ns = t, .kind = ACQ_ITEM_TEXT, .bus = 2 };
	tx.text.channel = 2u << 16;
	tx.text.len = 2;
	memcpy(tx.text.text, "ok", 2);
	CHECK(rec_encoder_add(enc, &tx) == 0);
	CHECK(rec_encoder_add(enc, &can) == 0);
	CHECK(rec_encoder_add(enc, &ev) == 0);
}

/* The ledgers' digests and comparison see a telegram's bytes: one byte
   of the last telegram changed makes another Batch. */
static void check_digests(const rec_batch_t *b, const uint8_t *buf, size_t len, const uint8_t *tg, size_t tg_len)
{
	struct rec_batch_info info;
	CHECK(rec_batch_info(b, &info) == 0);
	uint8_t *copy = malloc(len);
	memcpy(copy, buf, len);
	rec_batch_t *same = NULL, *other = NULL;
	CHECK(rec_batch_decode(copy, len, &same) == 0);
	CHECK(rec_batch_same_records(b, same) == 1);
	CHECK(rec_batch_hash(b, info.count, 7) == rec_batch_hash(same, info.count, 7));
	CHECK(rec_batch_digest(b, info.count, 7) == rec_batch_digest(same, info.count, 7));
	if (tg && tg_len > 40) {
		uint8_t *at = memmem(copy, len, tg, tg_len);
		CHECK(at);
		at[tg_len - 1] ^= 0x01;
		CHECK(rec_batch_decode(copy, len, &other) == 0);
		CHECK(rec_batch_same_records(b, other) == 0);
		CHECK(rec_batch_hash(b, info.count, 7) != rec_batch_hash(other, info.count, 7));
		CHECK(rec_batch_digest(b, info.count, 7) != rec_batch_digest(other, info.count, 7));
	}
	rec_batch_free(same);
	rec_batch_free(other);
	free(copy);
}

int main(int argc, char **argv)
{
	CHECK(argc == 5, "usage: trdp-record-tool IN BATCH JSONL CSV");
	size_t n = read_telegrams(argv[1]);
	struct rec_batch_meta meta = { .vehicle = "trdp-test" };
	rec_encoder_t *enc = NULL;
	CHECK(rec_encoder_new(&meta, MAX_TELEGRAMS + 3, &enc) == 0);
	add_others(enc, n ? items[0].t_ns : 0);
	for (size_t i = 0; i < n; i++)
		CHECK(rec_encoder_add(enc, &items[i]) == 0, "telegram %zu", i);
	/* what the encoder must refuse: bytes it cannot have */
	struct acq_item bad = items[0];
	bad.trdp.len = ACQ_TRDP_LEN_MAX + 1;
	CHECK(n == 0 || rec_encoder_add(enc, &bad) == -EINVAL);
	bad.trdp.len = 4;
	bad.trdp.data = NULL;
	CHECK(n == 0 || rec_encoder_add(enc, &bad) == -EINVAL);
	struct rec_health hin = { .name = "ecn", .kind = "trdp", .bus = 3, .blind_ms = UINT32_MAX,
		                  .trdp_opts_refused = 3, .trdp_capture_unmatched = 64, .trdp_tcp_listen_errno = 98,
		                  .trdp_receive = 2 };
	CHECK(rec_encoder_add_health(enc, &hin) == 0);
	const uint8_t *buf;
	size_t len;
	CHECK(rec_encoder_finish(enc, 100, &buf, &len) == (int)n + 3);
	FILE *f = fopen(argv[2], "wb");
	CHECK(f && fwrite(buf, 1, len, f) == len && fclose(f) == 0);

	rec_batch_t *b = NULL;
	CHECK(rec_batch_decode(buf, len, &b) == 0);
	check_digests(b, buf, len, n ? bytes[n - 1] : NULL, n ? items[n - 1].trdp.len : 0);
	struct rec_health hout;
	CHECK(rec_batch_health(b, 0, &hout) == 0);
	CHECK(!strcmp(hout.name, "ecn") && !strcmp(hout.kind, "trdp") && hout.bus == 3);
	CHECK(hout.trdp_opts_refused == 3 && hout.trdp_capture_unmatched == 64 && hout.trdp_tcp_listen_errno == 98 &&
	      hout.trdp_receive == 2,
	      "health back: opts_refused %" PRIu32 ", capture_unmatched %" PRIu64 ", tcp_listen_errno %" PRIu32
	      ", receive %" PRIu32, hout.trdp_opts_refused, hout.trdp_capture_unmatched, hout.trdp_tcp_listen_errno,
	      hout.trdp_receive);
	rec_encoder_free(enc);
	for (size_t i = 0; i < n; i++)
		free(bytes[i]);
	struct rec_batch_info info;
	CHECK(rec_batch_info(b, &info) == 0 && info.count == n + 3);
	FILE *csv = fopen(argv[4], "w");
	rec_order_t *order = NULL;
	CHECK(csv && rec_order_new(1u << 16, 0, &order) == 0);
	struct rec_origin origin = { .vehicle = "trdp-test" };
	for (size_t i = 0; i < info.count; i++) {
		struct acq_item it;
		CHECK(rec_batch_item(b, i, &it) == 0);
		CHECK(rec_format_item(csv, REC_FORMAT_CSV, &it, NULL, &origin) == 0);
		CHECK(rec_order_push(order, &it) == 0);
	}
	CHECK(fclose(csv) == 0);
	/* an order freed while it holds telegrams frees their copies (ASan's
	   leak check says if not) */
	rec_order_t *held = NULL;
	CHECK(rec_order_new(16, 0, &held) == 0);
	for (size_t i = 3; i < info.count && i < 8; i++) {
		struct acq_item it;
		CHECK(rec_batch_item(b, i, &it) == 0 && rec_order_push(held, &it) == 0);
	}
	rec_order_free(held);
	/* every record out after its Batch is gone */
	rec_batch_free(b);
	FILE *jl = fopen(argv[3], "w");
	rec_writer_t *w = NULL;
	CHECK(jl && rec_writer_new(jl, REC_FORMAT_JSONL, &w) == 0);
	struct acq_item it;
	while (rec_order_pop(order, &it) == 1)
		CHECK(rec_writer_item(w, &it, NULL, &origin) == 0);
	CHECK(rec_writer_flush(w) == 0);
	rec_writer_free(w);
	rec_order_free(order);
	CHECK(fclose(jl) == 0);
	return 0;
}
