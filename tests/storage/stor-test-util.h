/* SPDX-License-Identifier: MIT */
/*
 * stor-test-util.h - shared by the storage tests: deterministic record
 * content, temp directories, and a verifier that reads a log back.
 */
#pragma once

#include <assert.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/stor.h"
#include "tlib.h"

static inline uint32_t tu_len(uint64_t seq)
{
	return 1 + (uint32_t)((seq * 37) % 200);
}

static inline void tu_fill(uint8_t *buf, uint64_t seq, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)((seq * 131 + i * 7) ^ (seq >> 8) ^ (i >> 3));
}

static inline int64_t tu_time(uint64_t seq)
{
	return 1700000000000000000LL + (int64_t)seq * 1000;
}

/* Append the record for next_seq (count 1, content from tu_fill). */
static inline int tu_append(stor_log_t *log)
{
	uint8_t buf[256];
	uint64_t seq = stor_log_next_seq(log);
	struct stor_rec rec = {
		.first_seq = seq, .count = 1, .t_first_ns = tu_time(seq),
		.t_last_ns = tu_time(seq), .payload = buf, .len = tu_len(seq),
	};

	tu_fill(buf, seq, rec.len);
	return stor_log_append(log, &rec);
}

static inline bool tu_rec_ok(const struct stor_rec *rec)
{
	uint8_t buf[256];

	if (rec->count != 1 || rec->len != tu_len(rec->first_seq) ||
	    rec->t_first_ns != tu_time(rec->first_seq))
		return false;
	tu_fill(buf, rec->first_seq, rec->len);
	return memcmp(buf, rec->payload, rec->len) == 0;
}

static int tu_rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static inline void tu_rm_rf(const char *dir)
{
	nftw(dir, tu_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A fresh directory under $STOR_TEST_DIR, else /var/tmp (a disk).  Tests
 * whose durability is modelled (the power-cut device) or irrelevant
 * (reading damaged copies) pass in_ram to use /dev/shm: no disk waits.
 */
static inline char *tu_tmpdir_in(const char *tag, bool in_ram)
{
	const char *base = getenv("STOR_TEST_DIR");
	char *p;

	if (!base)
		base = in_ram && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/var/tmp";
	if (asprintf(&p, "%s/railmon-%s-XXXXXX", base, tag) < 0 || !mkdtemp(p)) {
		fprintf(stderr, "cannot make a temp dir under %s: %s\n", base, strerror(errno));
		abort();
	}
	return p;
}

static inline char *tu_tmpdir(const char *tag)
{
	return tu_tmpdir_in(tag, false);
}

struct tu_verify {
	uint64_t first, next;    /* seq range seen: [first, next) */
	uint64_t records, damaged, gaps_after_confirmed;
};

/*
 * Read the whole log: every record must carry its exact content, seqs
 * increase, and all records in [from, confirmed) are present with no gap
 * and no damage report before them (from 0: from the oldest record kept,
 * when retention may have removed a prefix).  Returns 0, or -1 with a
 * message.
 */
static inline int tu_verify_log(const char *dir, uint64_t from, uint64_t confirmed,
				struct tu_verify *ret)
{
	struct tu_verify v = { .first = 0, .next = from };
	stor_reader_t *r;
	struct stor_rec rec;
	int n;

	if (stor_reader_open(dir, &r) < 0)
		return confirmed > from ? -1 : 0;
	while ((n = stor_reader_next(r, &rec)) != 0) {
		if (n == -EBADMSG) {
			uint64_t seg, off;

			stor_reader_error(r, &seg, &off);
			if ((v.records || from ? v.next : 1) < confirmed) {
				fprintf(stderr, "damage at seg %" PRIu64 " off %" PRIu64
					" before confirmed %" PRIu64 " (next %" PRIu64 ")\n",
					seg, off, confirmed, v.next);
				stor_reader_free(r);
				return -1;
			}
			v.damaged++;
			continue;
		}
		CHECK(n == 1);
		if (!v.records && !from)
			v.next = rec.first_seq;
		if (!tu_rec_ok(&rec) || rec.first_seq < v.next ||
		    (rec.first_seq != v.next && v.next < confirmed)) {
			fprintf(stderr, "bad record seq %" PRIu64 " (expected %" PRIu64
				", confirmed %" PRIu64 ", ok=%d) seg %" PRIu64 " off %" PRIu64 "\n",
				rec.first_seq, v.next, confirmed, tu_rec_ok(&rec), rec.segment,
				rec.offset);
			stor_reader_free(r);
			return -1;
		}
		if (rec.first_seq != v.next)
			v.gaps_after_confirmed++;
		if (!v.records)
			v.first = rec.first_seq;
		v.next = rec.first_seq + rec.count;
		v.records++;
	}
	stor_reader_free(r);
	if (!from && !v.records)
		v.next = 1;
	if (v.next < confirmed) {
		fprintf(stderr, "lost confirmed records: log ends at %" PRIu64 ", confirmed %"
			PRIu64 "\n", v.next, confirmed);
		return -1;
	}
	if (ret)
		*ret = v;
	return 0;
}
