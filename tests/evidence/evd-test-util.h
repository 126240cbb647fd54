/* SPDX-License-Identifier: MIT */
/*
 * evd-test-util.h - shared by the evidence tests: a log written by the real
 * sink (pipeline/sink.c) with its hash chain and Seals, over several runs, and
 * the tampering an attacker with the card in hand can do (segment files
 * rewritten with their frame CRCs recomputed: the salt is in the header).
 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipeline/sink.h"
#include "evidence/evd.h"
#include "record/batch.h"
#include "record/seal.h"
#include "storage/stor-private.h"
#include "tlib.h"

#define ET_T0 1796000000000000000ll /* 2026-12 */
#define ET_MS 1000000ll

/* xorshift: every trial's positions come from its seed, printed on failure */
static inline uint32_t et_rand(uint32_t *s)
{
	uint32_t x = *s ? *s : 0x9e3779b9u;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

struct et_gen {
	const char *dir;
	const uint8_t *secret;    /* NULL: unsigned */
	uint32_t segment_bytes;
	unsigned sessions;        /* runs of the sink over the same log */
	unsigned items;           /* per session */
	bool crash_last;          /* the last run ends without its Seal (a power cut
	                             after the log's own sync): an unsealed tail */
	uint64_t retention_bytes; /* 0: keep everything */
	const struct stor_dev_ops *ops; /* NULL: posix */
	uint32_t seed;
	unsigned crash_session;   /* 1-based: this run also ends without its Seal */
	unsigned fresh_session;   /* 1-based: this run does not take up the log's
	                             chain (as a writer that found no Seal to
	                             continue): a new chain, and what the run before
	                             left unsealed lies between the two */
};

static inline void et_feed(pl_sink_t *s, unsigned n, int64_t *t, uint32_t *seed)
{
	for (unsigned i = 0; i < n; i++) {
		struct acq_item it = { .t_ns = (*t += ET_MS) };
		uint32_t r = et_rand(seed);

		if (r % 3 == 0) {
			it.kind = ACQ_ITEM_CAN;
			it.can.id = 0x100 + r % 64;
			it.can.len = (uint8_t)(r % 9);
			for (int k = 0; k < it.can.len; k++)
				it.can.data[k] = (uint8_t)(r >> (k % 4 * 8));
		} else {
			it.kind = ACQ_ITEM_SAMPLE;
			it.sample = (struct acq_sample){ .channel = r % 16, .value = (double)(r % 100000) / 7 };
		}
		CHECK(pl_sink_items(s, &it, 1) == 0);
		/* now and then a Seal in mid-segment, as the periodic one (a
		   refusal is the log's to count, as for any Batch) */
		if (et_rand(seed) % 97 == 0)
			(void)pl_sink_seal(s);
	}
}

/* One run of the sink over the log. 0, or the first -errno. */
static inline int et_session(const struct et_gen *g, bool crash, bool fresh, int64_t *t, uint32_t *seed)
{
	struct stor_log_cfg lc = { .dir = g->dir, .vehicle = "EVD-1", .segment_bytes = g->segment_bytes,
	                           .sync_window_ms = 3600 * 1000, .ops = g->ops,
	                           .retention_bytes = g->retention_bytes };
	struct rec_batch_meta meta = { .vehicle = "EVD-1", .config_hash = 7 };
	stor_log_t *log;
	pl_sink_t *s;
	int r;

	for (size_t i = 0; i < sizeof(meta.boot_id); i++)
		meta.boot_id[i] = (uint8_t)et_rand(seed);
	r = stor_log_open(&lc, &log);
	if (r < 0)
		return r;
	r = pl_sink_new(&(struct pl_sink_cfg){ .log = log, .meta = &meta, .batch_max = 8 + et_rand(seed) % 40,
	                                            .batch_ms = 30, .meta_interval_s = 3600, .deterministic = true,
	                                            .seal_secret = g->secret, .log_dir = fresh ? NULL : g->dir }, &s);
	if (r < 0) {
		stor_log_free(log);
		return r;
	}
	pl_sink_event(s, ACQ_EV_START, 1);
	et_feed(s, g->items, t, seed);
	if (crash)
		r = stor_log_sync(log); /* what the sink appended, durable; no Seal */
	else
		r = pl_sink_close(s);
	pl_sink_free(s);
	stor_log_free(log);
	return r;
}

static inline void et_generate(const struct et_gen *g)
{
	int64_t t = ET_T0;
	uint32_t seed = g->seed;

	for (unsigned k = 0; k < g->sessions; k++)
		CHECK(et_session(g, (g->crash_last && k + 1 == g->sessions) || g->crash_session == k + 1,
		                 g->fresh_session == k + 1, &t, &seed) == 0);
}

/* ------------------------------------------------------------ segments */

struct et_segs {
	char names[256][STOR_SEG_NAME_LEN];
	size_t n;
};

static inline int et_name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

static inline void et_list(const char *dir, struct et_segs *ret)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	CHECK(d);
	ret->n = 0;
	while ((e = readdir(d)))
		if (strlen(e->d_name) == 24 && !strcmp(e->d_name + 20, ".seg") && ret->n < 256)
			snprintf(ret->names[ret->n++], STOR_SEG_NAME_LEN, "%s", e->d_name);
	closedir(d);
	qsort(ret->names, ret->n, STOR_SEG_NAME_LEN, et_name_cmp);
}

static inline uint8_t *et_load(const char *dir, const char *name, size_t *ret_len)
{
	char path[4200];
	struct stat st;
	uint8_t *buf;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0 && fstat(fd, &st) == 0);
	buf = malloc((size_t)st.st_size + 1);
	CHECK(buf && read(fd, buf, (size_t)st.st_size) == st.st_size);
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

static inline void et_store(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_TRUNC);
	CHECK(fd >= 0 && write(fd, buf, len) == (ssize_t)len);
	close(fd);
}

/* A frame of a segment file. */
struct et_frame {
	size_t seg;          /* index in et_segs */
	uint64_t off;
	struct stor_frame f;
	bool seal;           /* an evidence Seal's Batch */
};

static inline bool et_is_seal(const uint8_t *payload, uint32_t len)
{
	struct rec_seal seal;
	rec_batch_t *b;
	bool yes;

	if (rec_batch_decode(payload, len, &b) < 0)
		return false;
	yes = rec_batch_seal(b, &seal) == 0;
	rec_batch_free(b);
	return yes;
}

/* Every record frame (not the storage's own SEAL and GAP frames) of the log. */
static inline size_t et_frames(const char *dir, const struct et_segs *segs, struct et_frame **ret)
{
	size_t n = 0, cap = 64;
	struct et_frame *v = malloc(cap * sizeof(*v));

	CHECK(v);
	for (size_t s = 0; s < segs->n; s++) {
		size_t len;
		uint8_t *buf = et_load(dir, segs->names[s], &len);
		uint64_t off = STOR_HDR_BYTES;
		struct stor_frame f;

		while (off + STOR_FRAME_HDR_BYTES <= len && stor_frame_peek(buf + off, &f) == 0 &&
		       off + stor_frame_size(f.len) <= len) {
			if (!f.flags) {
				if (n == cap)
					CHECK((v = realloc(v, (cap *= 2) * sizeof(*v))) != NULL);
				v[n++] = (struct et_frame){ .seg = s, .off = off, .f = f,
				                            .seal = et_is_seal(buf + off + STOR_FRAME_HDR_BYTES, f.len) };
			}
			off += stor_frame_size(f.len);
		}
		free(buf);
	}
	*ret = v;
	return n;
}

/* Replace one frame with nf/payload, its CRC computed with the segment's
   salt as the writer would: what an attacker who read the header can do. */
static inline void et_rewrite(const char *dir, const char *name, uint64_t off, const struct stor_frame *nf,
                              const void *payload)
{
	struct stor_seg_hdr h;
	struct stor_frame old;
	size_t len, nlen;
	uint8_t *buf = et_load(dir, name, &len), *out;
	uint64_t oldsz, newsz;

	CHECK(stor_seg_hdr_decode(buf, &h) >= 0 && stor_frame_peek(buf + off, &old) == 0);
	oldsz = stor_frame_size(old.len);
	newsz = stor_frame_size(nf->len);
	nlen = len - oldsz + newsz;
	out = malloc(nlen);
	CHECK(out);
	memcpy(out, buf, off);
	stor_frame_encode(h.salt, nf, payload, out + off);
	memcpy(out + off + newsz, buf + off + oldsz, len - off - oldsz);
	et_store(dir, name, out, nlen);
	free(out);
	free(buf);
}

/* The payload of frame fr (malloc'd). */
static inline uint8_t *et_payload(const char *dir, const struct et_segs *segs, const struct et_frame *fr)
{
	size_t len;
	uint8_t *buf = et_load(dir, segs->names[fr->seg], &len), *p = malloc(fr->f.len + 1);

	CHECK(p);
	memcpy(p, buf + fr->off + STOR_FRAME_HDR_BYTES, fr->f.len);
	free(buf);
	return p;
}

/* Re-encode a seal Batch with a changed Seal (same records, same meta). */
static inline size_t et_reseal(const uint8_t *payload, uint32_t len, const struct rec_seal *seal, uint8_t **ret)
{
	struct rec_batch_meta meta = { 0 };
	struct rec_batch_info info;
	struct acq_item it;
	rec_encoder_t *enc;
	rec_batch_t *b;
	const uint8_t *out;
	size_t olen;

	CHECK(rec_batch_decode(payload, len, &b) == 0 && rec_batch_info(b, &info) == 0);
	meta.vehicle = info.vehicle;
	meta.config_hash = info.config_hash;
	memcpy(meta.boot_id, info.boot_id, REC_BOOT_ID_LEN);
	memcpy(meta.log_id, info.log_id, REC_LOG_ID_LEN);
	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	CHECK(rec_batch_item(b, 0, &it) == 0 && rec_encoder_add(enc, &it) == 0);
	CHECK(rec_encoder_set_seal(enc, seal) == 0);
	CHECK(rec_encoder_finish(enc, info.first_seq, &out, &olen) == 1);
	*ret = malloc(olen);
	CHECK(*ret);
	memcpy(*ret, out, olen);
	rec_encoder_free(enc);
	rec_batch_free(b);
	return olen;
}
