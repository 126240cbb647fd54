/* SPDX-License-Identifier: MIT */
/*
 * test-clockwatch.c - the clock-step detector and the sync-state events
 * (pipeline/clockwatch.h) on an injected clock, and the real readers.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/timex.h>

#include "acquisition/acq-item.h"
#include "basic/clock.h"
#include "pipeline/clockwatch.h"
#include "tlib.h"

#define MS 1000000ll
#define HOUR (3600000ll * MS)
#define OFF0 1796000000000000000ll

/* A pass every 5 ms; the offset slews by 0.5 ms/s (the kernel's most),
   which is never a step; then +1 h, then -1 h + 30 ms, then -9 ms
   (under the 10 ms threshold). */
static void test_steps(void)
{
	pl_clockwatch_t *cw;
	int64_t mono = 1000 * MS, off = OFF0, step = 0, window = 0;

	CHECK(pl_clockwatch_new(10 * MS, &cw) == 0);
	CHECK(pl_clockwatch_check(cw, off + mono, mono, &step, &window) == 0, "the first reading sets the offset");
	for (int i = 0; i < 2000; i++) {
		mono += 5 * MS;
		off += 2500; /* 0.5 ms/s over 5 ms */
		CHECK(pl_clockwatch_check(cw, off + mono, mono, &step, &window) == 0, "slew is no step (pass %d)", i);
	}
	CHECK(pl_clockwatch_steps(cw) == 0);
	mono += 7 * MS;
	off += HOUR;
	CHECK(pl_clockwatch_check(cw, off + mono, mono, &step, &window) == 1);
	CHECK(step == HOUR && window == 7 * MS, "step %lld window %lld", (long long)step, (long long)window);
	mono += 5 * MS;
	off += -HOUR + 30 * MS;
	CHECK(pl_clockwatch_check(cw, off + mono, mono, &step, &window) == 1);
	CHECK(step == -HOUR + 30 * MS && window == 5 * MS);
	mono += 5 * MS;
	off -= 9 * MS;
	CHECK(pl_clockwatch_check(cw, off + mono, mono, &step, &window) == 0, "9 ms is under the threshold");
	CHECK(pl_clockwatch_steps(cw) == 2);
	CHECK(pl_clockwatch_check(NULL, 0, 0, &step, &window) == -EINVAL);
	CHECK(pl_clockwatch_check(cw, INT64_MIN, 1, &step, &window) == -EINVAL);
	pl_clockwatch_free(cw);
	CHECK(pl_clockwatch_new(0, &cw) == -EINVAL);
	CHECK(pl_clockwatch_new(MS, NULL) == -EINVAL);
	CHECK(pl_clockwatch_free(NULL) == NULL);
}

/* Records read after a step but stamped before it keep the old offset
   for 2 s; after that, the new one. Both directions. */
static void test_which(int64_t dir)
{
	pl_clockwatch_t *cw;
	int64_t mono = 50000 * MS, step, window, off;
	uint64_t e0, e;

	CHECK(pl_clockwatch_new(10 * MS, &cw) == 0);
	CHECK(pl_clockwatch_which(cw, 123, &off) == 0 && off == 0, "epoch 0 before the first reading");
	pl_clockwatch_check(cw, OFF0 + mono, mono, &step, &window);
	e0 = pl_clockwatch_which(cw, OFF0 + mono - 3 * MS, &off);
	CHECK(e0 > 0 && off == OFF0);
	/* stamped 3 ms before the step, read 2 ms after it */
	int64_t t_old = OFF0 + mono + 1 * MS;
	mono += 5 * MS;
	CHECK(pl_clockwatch_check(cw, OFF0 + dir + mono, mono, &step, &window) == 1);
	e = pl_clockwatch_which(cw, t_old, &off);
	CHECK(e == e0 && off == OFF0, "stamped before the step: old offset (dir %lld)", (long long)dir);
	/* stamped 1 ms after it */
	e = pl_clockwatch_which(cw, OFF0 + dir + mono - 1 * MS, &off);
	CHECK(e == e0 + 1 && off == OFF0 + dir, "stamped after it: new offset");
	/* 3 s later an old-looking stamp is not taken for the old clock */
	mono += 3000 * MS;
	CHECK(pl_clockwatch_check(cw, OFF0 + dir + mono, mono, &step, &window) == 0);
	e = pl_clockwatch_which(cw, t_old, &off);
	CHECK(e == e0 + 1 && off == OFF0 + dir, "after the settle time: the new offset only");
	pl_clockwatch_free(cw);
}

static void test_sync(void)
{
	pl_clockwatch_t *cw;
	struct pl_clock_sync un = { .unsynced = true, .max_error_us = 16000000, .status = STA_UNSYNC };
	struct pl_clock_sync ok = { .unsynced = false, .est_error_us = 120, .status = STA_PLL };

	CHECK(pl_clockwatch_new(10 * MS, &cw) == 0);
	CHECK(pl_clockwatch_sync(cw, &ok) == 0, "a run that starts synchronised says nothing");
	CHECK(pl_clockwatch_sync(cw, &ok) == 0);
	CHECK(pl_clockwatch_sync(cw, &un) == ACQ_EV_CLOCK_UNSYNCED);
	CHECK(pl_clockwatch_sync(cw, &un) == 0);
	CHECK(pl_clockwatch_sync(cw, &ok) == ACQ_EV_CLOCK_SYNCED);
	CHECK(pl_clockwatch_sync(NULL, &ok) == -EINVAL);
	CHECK(pl_clockwatch_sync(cw, NULL) == -EINVAL);
	pl_clockwatch_free(cw);
	CHECK(pl_clockwatch_new(10 * MS, &cw) == 0);
	CHECK(pl_clockwatch_sync(cw, &un) == ACQ_EV_CLOCK_UNSYNCED, "a run that starts unsynchronised says so");
	pl_clockwatch_free(cw);
}

/* The real readers: adjtimex answers and agrees with itself; the clock
   pair's offset holds still between two readings (no step here). */
static void test_real(void)
{
	struct pl_clock_sync st;
	struct timex tx = { .modes = 0 };
	int64_t r1, m1, r2, m2;
	int state;

	CHECK(pl_clock_sync_read(&st) == 0);
	state = adjtimex(&tx);
	CHECK(st.unsynced == (state == TIME_ERROR || (tx.status & STA_UNSYNC) != 0));
	CHECK(st.status == (uint32_t)tx.status);
	CHECK(pl_clock_sync_read(NULL) == -EINVAL);
	pl_clock_read(&r1, &m1);
	tlib_sleep_ms(20);
	pl_clock_read(&r2, &m2);
	CHECK(m2 - m1 >= 20 * MS);
	CHECK(llabs((r2 - m2) - (r1 - m1)) < 5 * MS, "offset moved %lld ns", (long long)((r2 - m2) - (r1 - m1)));
}

int main(void)
{
	test_steps();
	test_which(HOUR);
	test_which(-HOUR);
	test_which(50 * MS);
	test_sync();
	test_real();
	return 0;
}
