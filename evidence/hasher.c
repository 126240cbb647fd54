/* SPDX-License-Identifier: MIT */
/*
 * hasher.c - the hasher thread (evd-private.h).
 *
 * Hashing every byte of the log (BLAKE2b, ~1.2 ns a byte) cost the
 * collector thread a quarter of its throughput at replay speed; here it
 * runs on another core.  The collector packs each Batch straight into a
 * byte ring (evd_hasher_reserve/commit: the sink's encoder writes there, so
 * the bytes are not copied again), or copies it in (evd_hasher_push: a
 * memcpy, ~10x cheaper than the hash), and goes on; a Seal waits until
 * the ring is drained, at most the ring's few MiB of hashing.  One mutex
 * guards the indices; copies and hashing run outside it, on regions the
 * indices give to one side only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "basic/thread.h"
#include "evd-private.h"

#define HASHER_JOBS 256

/* glibc's default thread stack is 8 MiB, and the daemon's mlockall makes
   all of it resident.  Measured (railmon run without mlockall, pages
   touched): 12 KiB while hashing a log's Batches. */
#define HASHER_STACK_BYTES (256 * 1024)

struct job {
	size_t off, len;
	bool starts_range;
};

struct evd_hasher {
	evd_hash_fn fn;
	void *ctx;
	uint8_t *buf;
	size_t cap;
	size_t head, tail;   /* bytes: the producer writes at head, the worker reads from tail */
	size_t resv_off, resv_len; /* the producer's reservation (its thread's only) */
	struct job jobs[HASHER_JOBS];
	size_t jhead, njobs; /* jobs[(jhead - njobs) mod N] is the oldest */
	bool stop;
	pthread_mutex_t mu;
	pthread_cond_t work, room, idle;
	pthread_t thread;
};

static void *hasher_main(void *arg)
{
	struct evd_hasher *h = arg;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		struct job j;

		while (!h->njobs && !h->stop)
			pthread_cond_wait(&h->work, &h->mu);
		if (!h->njobs)
			break;
		j = h->jobs[(h->jhead + HASHER_JOBS - h->njobs) % HASHER_JOBS];
		pthread_mutex_unlock(&h->mu);
		h->fn(h->ctx, h->buf + j.off, j.len, j.starts_range);
		pthread_mutex_lock(&h->mu);
		h->njobs--;
		h->tail = j.off + j.len;
		if (!h->njobs)
			h->head = h->tail = 0; /* empty: start again at the front */
		pthread_cond_signal(&h->room);
		if (!h->njobs)
			pthread_cond_broadcast(&h->idle);
	}
	pthread_mutex_unlock(&h->mu);
	return NULL;
}

/* What evd_hasher_new set up, undone (the thread is not running: never
   started, or joined). */
static void hasher_destroy(struct evd_hasher *h)
{
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->work);
	pthread_cond_destroy(&h->room);
	pthread_cond_destroy(&h->idle);
	free(h->buf);
	free(h);
}

int evd_hasher_new(size_t cap, evd_hash_fn fn, void *ctx, struct evd_hasher **ret)
{
	struct evd_hasher *h;
	int r;

	if (!fn || !ret || cap < 2 * (1u << 20))
		return -EINVAL;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->buf = malloc(cap);
	if (!h->buf) {
		free(h);
		return -ENOMEM;
	}
	h->cap = cap;
	h->fn = fn;
	h->ctx = ctx;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->work, NULL);
	pthread_cond_init(&h->room, NULL);
	pthread_cond_init(&h->idle, NULL);
	r = basic_thread_create(&h->thread, "hasher", HASHER_STACK_BYTES, hasher_main, h);
	if (r < 0) {
		hasher_destroy(h);
		return r;
	}
	*ret = h;
	return 0;
}

/* Where len bytes fit now (the worker owns [tail, head) while jobs are
   queued; the producer writes after head, or wraps to the front), or
   false. */
static bool hasher_room(const struct evd_hasher *h, size_t len, size_t *ret_off)
{
	if (h->njobs == HASHER_JOBS)
		return false;
	if (h->head >= h->tail) {
		if (h->cap - h->head >= len) {
			*ret_off = h->head;
			return true;
		}
		/* wrap: the front up to the oldest job still in use */
		if (h->tail > len) {
			*ret_off = 0;
			return true;
		}
		return false;
	}
	if (h->tail - h->head > len) {
		*ret_off = h->head;
		return true;
	}
	return false;
}

void *evd_hasher_reserve(struct evd_hasher *h, size_t len)
{
	size_t off = 0;

	pthread_mutex_lock(&h->mu);
	while (!hasher_room(h, len, &off))
		pthread_cond_wait(&h->room, &h->mu);
	pthread_mutex_unlock(&h->mu);
	/* [off, off + len) is the producer's until the job is queued: the
	   worker only moves tail up to head, which only commit moves */
	h->resv_off = off;
	h->resv_len = len;
	return h->buf + off;
}

void evd_hasher_commit(struct evd_hasher *h, size_t len, bool starts_range)
{
	if (len > h->resv_len)
		len = h->resv_len; /* never past what was reserved */
	pthread_mutex_lock(&h->mu);
	h->jobs[h->jhead] = (struct job){ .off = h->resv_off, .len = len, .starts_range = starts_range };
	h->jhead = (h->jhead + 1) % HASHER_JOBS;
	h->njobs++;
	h->head = h->resv_off + len;
	pthread_cond_signal(&h->work);
	pthread_mutex_unlock(&h->mu);
	h->resv_len = 0;
}

void evd_hasher_push(struct evd_hasher *h, const void *payload, size_t len, bool starts_range)
{
	memcpy(evd_hasher_reserve(h, len), payload, len);
	evd_hasher_commit(h, len, starts_range);
}

void evd_hasher_drain(struct evd_hasher *h)
{
	pthread_mutex_lock(&h->mu);
	while (h->njobs)
		pthread_cond_wait(&h->idle, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

struct evd_hasher *evd_hasher_free(struct evd_hasher *h)
{
	if (!h)
		return NULL;
	pthread_mutex_lock(&h->mu);
	h->stop = true;
	pthread_cond_signal(&h->work);
	pthread_mutex_unlock(&h->mu);
	pthread_join(h->thread, NULL);
	hasher_destroy(h);
	return NULL;
}
