/* SPDX-License-Identifier: MIT */
/*
 * test-bytes - acquisition/acq-bytes.h: the byte ring beside an item
 * ring.  A producer thread writes records of random length (1 to 3000
 * bytes, a pattern from their number) through reserve/pack/commit as the
 * TRDP driver does, and pushes a record of where each is into an item
 * ring; the consumer checks every record's bytes and releases up to its
 * end, sometimes several at once (the items a full ring dropped).  Over
 * many laps of a small buffer: a byte read that the producer overwrote,
 * a release that frees too much or too little, shows as a wrong byte or
 * a stall.  Then the single-thread rules: no room is NULL and a drop,
 * a reservation that would cross the end starts at the beginning.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition/acq-bytes.h"
#include "acquisition/acq-ring.h"
#include "tlib.h"

#define RECORDS 200000
#define SIZE (64 * 1024)

struct rec {
	uint64_t n;
	const uint8_t *p;
	size_t len;
};
ACQ_RING_DEFINE(rec, struct rec)

struct ctx {
	struct acq_bytes bytes;
	struct acq_ring ring;
	uint64_t produced;
};

static uint8_t pattern(uint64_t n, size_t i)
{
	return (uint8_t)(n * 131 + i * 7);
}

static size_t length(uint64_t n)
{
	return 1 + (size_t)((n * 2654435761u) % 3000);
}

static void *producer(void *arg)
{
	struct ctx *c = arg;
	uint64_t n = 0;

	while (n < RECORDS) {
		/* a burst: reserve the largest, then pack each down, as the
		   driver does with recvmmsg */
		uint64_t pos = acq_bytes_pos(&c->bytes);
		uint8_t *slot[4];
		size_t k = 0;
		while (k < 4 && (slot[k] = acq_bytes_reserve(&c->bytes, 3000)))
			k++;
		acq_bytes_unreserve(&c->bytes, pos);
		struct rec r[4];
		size_t m = 0;
		for (; m < k && n < RECORDS; m++, n++) {
			size_t len = length(n);
			uint8_t *dst = acq_bytes_reserve(&c->bytes, len);
			CHECK(dst);
			for (size_t i = 0; i < len; i++)
				dst[i] = pattern(n, i);
			r[m] = (struct rec){ n, dst, len };
		}
		acq_bytes_commit(&c->bytes);
		for (size_t j = 0; j < m; j++)
			while (!acq_ring_rec_push(&c->ring, &r[j]))
				; /* the consumer catches up; this test drops nothing */
	}
	return NULL;
}

static void test_threads(void)
{
	static uint8_t buf[SIZE];
	static struct rec slots[64];
	struct ctx *c = aligned_alloc(_Alignof(struct ctx), sizeof(struct ctx));
	CHECK(c && acq_bytes_init(&c->bytes, buf, sizeof(buf)) == 0);
	CHECK(acq_ring_init(&c->ring, slots, 64, sizeof(struct rec)) == 0);
	pthread_t t;
	CHECK(pthread_create(&t, NULL, producer, c) == 0);
	uint64_t want = 0;
	struct rec held[8];
	size_t nheld = 0;
	while (want < RECORDS) {
		struct rec r;
		if (!acq_ring_rec_pop(&c->ring, &r))
			continue;
		CHECK(r.n == want, "record %llu, want %llu", (unsigned long long)r.n, (unsigned long long)want);
		for (size_t i = 0; i < r.len; i++)
			CHECK(r.p[i] == pattern(r.n, i), "record %llu byte %zu", (unsigned long long)r.n, i);
		want++;
		/* release now and then several at once, by the last one's end */
		held[nheld++] = r;
		if (nheld == 4 || r.n % 3 == 0 || want == RECORDS) {
			acq_bytes_release(&c->bytes, held[nheld - 1].p + held[nheld - 1].len);
			nheld = 0;
		}
	}
	CHECK(pthread_join(t, NULL) == 0);
	CHECK(acq_bytes_drops(&c->bytes) == 0);
	printf("bytes: %d records through a %d-byte ring\n", RECORDS, SIZE);
	free(c);
}

static void test_rules(void)
{
	static uint8_t buf[1000];
	struct acq_bytes *b = aligned_alloc(_Alignof(struct acq_bytes), sizeof(struct acq_bytes));
	CHECK(acq_bytes_init(NULL, buf, 1000) < 0 && acq_bytes_init(b, buf, 10) < 0);
	CHECK(acq_bytes_init(b, buf, sizeof(buf)) == 0);
	uint8_t *p = acq_bytes_reserve(b, 600);
	CHECK(p == buf);
	/* 400 left before the end, but 600 more do not fit at all yet */
	CHECK(acq_bytes_reserve(b, 600) == NULL);
	acq_bytes_drop(b, 1);
	CHECK(acq_bytes_drops(b) == 1);
	acq_bytes_commit(b);
	acq_bytes_release(b, p + 600);
	/* crosses the end: starts at the beginning, the 400 skipped */
	uint8_t *q = acq_bytes_reserve(b, 500);
	CHECK(q == buf, "at %td", q - buf);
	CHECK(acq_bytes_pos(b) == 1500);
	/* released up to q's end: the skipped bytes with it */
	acq_bytes_commit(b);
	acq_bytes_release(b, q + 500);
	CHECK(atomic_load(&b->released) == 1500);
	CHECK(acq_bytes_reserve(b, 1000) == NULL); /* 500 to the end, then 0..500 */
	CHECK(acq_bytes_reserve(b, 500) == buf + 500);
	CHECK(acq_bytes_reserve(b, 1001) == NULL);
	free(b);
}

int main(void)
{
	test_rules();
	test_threads();
	return 0;
}
