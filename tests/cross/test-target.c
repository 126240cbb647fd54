/* SPDX-License-Identifier: MIT */
/*
 * test-target.c - what a 32-bit or another 64-bit target could get wrong,
 * asked on the target itself (CI runs it natively and, in the cross
 * stages, on aarch64 and armhf under qemu-user):
 *   - time_t and off_t are 64-bit (armhf: _TIME_BITS=64 and
 *     _FILE_OFFSET_BITS=64 from meson.build), and the kernel calls that
 *     carry them work past 2038 (a file's mtime) and past 2 GiB (a sparse
 *     file's size and a pwrite there);
 *   - a time past 2038 goes through basic/clock.h and export's CSV writer
 *     (record/format.c) as the right calendar date;
 *   - 64-bit atomics are lock-free (no libatomic lock between the RX thread
 *     and the collector: acq-ring.h asserts the same at build time) and are
 *     never torn: a reader racing a writer of all-zero and all-one words
 *     sees only those two values, and two threads' fetch_add lose nothing.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "acquisition/acq-item.h"
#include "basic/clock.h"
#include "record/format.h"
#include "tlib.h"

_Static_assert(sizeof(time_t) == 8, "time_t must be 64-bit (_TIME_BITS=64 on 32-bit glibc)");
_Static_assert(sizeof(off_t) == 8, "off_t must be 64-bit (_FILE_OFFSET_BITS=64)");

/* 2040-01-01T00:00:00Z and 2106-02-07T06:28:16Z (past the unsigned 32-bit
   end too) */
#define T_2040 2208988800LL
#define T_2106 4294967296LL

static void test_time(const char *dir)
{
	char path[512], line[512];
	struct timespec ts[2];
	struct stat st;
	struct tm tm;
	time_t t = (time_t)T_2106;
	int fd;

	CHECK(gmtime_r(&t, &tm) && tm.tm_year == 206 && tm.tm_mon == 1 && tm.tm_mday == 7);
	CHECK(timegm(&tm) == (time_t)T_2106);
	ts[0] = ts[1] = basic_ns_to_ts(T_2040 * BASIC_NS_PER_SEC + 5);
	CHECK(ts[0].tv_sec == (time_t)T_2040 && ts[0].tv_nsec == 5);
	snprintf(path, sizeof(path), "%s/mtime", dir);
	fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK(futimens(fd, ts) == 0);
	CHECK(fstat(fd, &st) == 0);
	CHECK(st.st_mtim.tv_sec == (time_t)T_2040, "mtime %lld", (long long)st.st_mtim.tv_sec);
	close(fd);
	unlink(path);

	/* a sample of 2040 as export writes it */
	{
		struct acq_item it = { .t_ns = T_2040 * BASIC_NS_PER_SEC + 123456789, .seq = 7,
				       .kind = ACQ_ITEM_SAMPLE, .sample = { .channel = 1, .value = 1.5 } };
		FILE *f = fmemopen(line, sizeof(line), "w");

		CHECK(f && rec_format_item(f, REC_FORMAT_CSV, &it, NULL, NULL) == 0);
		fclose(f);
		CHECK(strstr(line, "2040-01-01T00:00:00.123456789Z,2208988800123456789,"), "%s", line);
	}
	printf("time_t %zu bytes: 2040 through futimens/fstat, basic_ns_to_ts and the CSV "
	       "writer; 2106 through gmtime_r/timegm: ok\n", sizeof(time_t));
}

static void test_large_file(const char *dir)
{
	const off_t at = (off_t)3 << 30; /* 3 GiB: past a signed 32-bit offset */
	char path[512], b = 0;
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/sparse", dir);
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK(pwrite(fd, "x", 1, at) == 1);
	CHECK(fstat(fd, &st) == 0 && st.st_size == at + 1);
	CHECK(lseek(fd, 0, SEEK_END) == at + 1);
	CHECK(pread(fd, &b, 1, at) == 1 && b == 'x');
	close(fd);
	unlink(path);
	printf("off_t %zu bytes: a sparse file written and read at 3 GiB: ok\n", sizeof(off_t));
}

#define TEAR_ROUNDS 2000000
#define TEAR_SEEN 10000         /* loads of each value the reader must make */
#define TEAR_MAX_ROUNDS 200000000

struct tear {
	_Atomic uint64_t word;
	atomic_bool stop;
	atomic_ulong seen_zero, seen_ones; /* written by the reader only */
	uint64_t torn;
};

static void *tear_reader(void *arg)
{
	struct tear *t = arg;

	while (!atomic_load_explicit(&t->stop, memory_order_acquire)) {
		uint64_t v = atomic_load_explicit(&t->word, memory_order_relaxed);

		if (v == 0)
			atomic_fetch_add_explicit(&t->seen_zero, 1, memory_order_relaxed);
		else if (v == UINT64_MAX)
			atomic_fetch_add_explicit(&t->seen_ones, 1, memory_order_relaxed);
		else
			t->torn++;
	}
	return NULL;
}

static _Atomic uint64_t counter;

static void *adder(void *arg)
{
	for (int i = 0; i < TEAR_ROUNDS / 4; i++)
		atomic_fetch_add_explicit(&counter, (uint64_t)1 << 32 | 1, memory_order_relaxed);
	return NULL;
}

static void test_atomics(void)
{
	struct tear t = { .word = 0 };
	pthread_t th[2];
	long stores;

	CHECK(ATOMIC_LLONG_LOCK_FREE == 2);
	CHECK(atomic_is_lock_free(&t.word));
	CHECK(pthread_create(&th[0], NULL, tear_reader, &t) == 0);
	/* store until the reader has raced enough loads of both values (the
	   stores alone may end before the reader thread is even scheduled) */
	for (stores = 0; stores < TEAR_MAX_ROUNDS; stores++) {
		if (!(stores & 1023) && atomic_load(&t.seen_ones) >= TEAR_SEEN &&
		    atomic_load(&t.seen_zero) >= TEAR_SEEN)
			break;
		atomic_store_explicit(&t.word, stores & 1 ? UINT64_MAX : 0, memory_order_relaxed);
	}
	atomic_store_explicit(&t.stop, true, memory_order_release);
	CHECK(pthread_join(th[0], NULL) == 0);
	CHECK(t.torn == 0, "%llu torn 64-bit loads", (unsigned long long)t.torn);
	CHECK(atomic_load(&t.seen_ones) >= TEAR_SEEN && atomic_load(&t.seen_zero) >= TEAR_SEEN,
	      "the reader never raced the writer");

	/* both halves of the word carry, so a lost or split add shows */
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&th[i], NULL, adder, NULL) == 0);
	for (int i = 0; i < 2; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	CHECK(atomic_load(&counter) == ((uint64_t)(TEAR_ROUNDS / 2) << 32 | TEAR_ROUNDS / 2));
	printf("64-bit atomics: lock-free; %ld stores raced by a reader: %lu all-zero, %lu "
	       "all-one, 0 torn loads; 2 x %d fetch_add exact: ok\n", stores,
	       atomic_load(&t.seen_zero), atomic_load(&t.seen_ones), TEAR_ROUNDS / 4);
}

int main(void)
{
	char dir[] = "/var/tmp/railmon-test-target.XXXXXX";

	CHECK(mkdtemp(dir));
	printf("target: %zu-bit pointers, time_t %zu, off_t %zu, acq_item %zu bytes\n",
	       sizeof(void *) * 8, sizeof(time_t), sizeof(off_t), sizeof(struct acq_item));
	test_time(dir);
	test_large_file(dir);
	rmdir(dir);
	test_atomics();
	printf("test-target: ok\n");
	return 0;
}
