/* SPDX-License-Identifier: MIT */
/*
 * test-ground-repair-period.c - gap repair's schedule in recv
 * (ground/receiver.c, grd_receiver_repair_period()): the period is half
 * the grace in ns, not truncated to whole seconds; the largest grace the
 * command line allows (BASIC_SECONDS_MAX) gives a period that fits in
 * int64_t; what a library caller could give that would not (1e19, inf,
 * nan, negative) is refused by grd_receiver_new(), not converted.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "ground/receiver.h"
#include "basic/parse.h"
#include "tlib.h"

static void check_period(double after, unsigned grace, int64_t period_ns)
{
	unsigned g = 0;
	int64_t p = 0;

	CHECK(grd_receiver_repair_period(after, &g, &p) == 0, "after %g", after);
	CHECK(g == grace, "after %g: grace %u, want %u", after, g, grace);
	CHECK(p == period_ns, "after %g: period %lld ns, want %lld", after, (long long)p, (long long)period_ns);
}

static void test_periods(void)
{
	/* 3 s: every 1.5 s (the old cast made 1 s of it) */
	check_period(3, 3, 1500000000);
	check_period(2.5, 3, 1250000000);
	check_period(2, 2, 1000000000);     /* at most 2 s: every second */
	check_period(0.3, 1, 1000000000);   /* under a second: the query's 1 s */
	check_period(60, 60, 30000000000);  /* recv's default */
	check_period(61, 61, 30500000000);
	/* the command line's largest: 5e8 s, in ns 5e17, under INT64_MAX
	   (the old (int64_t)(after / 2) * 1e9 was fine here, but nothing
	   kept a larger value from reaching it) */
	check_period(BASIC_SECONDS_MAX, 1000000000u, 500000000000000000);
}

static void test_refused(void)
{
	static const double bad[] = { -1, 1e19, 4294967296.0, BASIC_SECONDS_MAX * 2, 0 };
	unsigned g;
	int64_t p;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(grd_receiver_repair_period(bad[i], &g, &p) == -EINVAL, "after %g", bad[i]);
	CHECK(grd_receiver_repair_period(NAN, &g, &p) == -EINVAL);
	CHECK(grd_receiver_repair_period(INFINITY, &g, &p) == -EINVAL);
	CHECK(grd_receiver_repair_period(1, NULL, &p) == -EINVAL);

	/* the receiver itself: such a repair_after refused at its creation,
	   0 (off) and a good one taken */
	static const double new_bad[] = { -1, 1e19, 4294967296.0, NAN, INFINITY };
	volatile sig_atomic_t stop = 0;
	grd_receiver_t *rc = NULL;

	for (size_t i = 0; i < sizeof(new_bad) / sizeof(new_bad[0]); i++) {
		struct grd_receiver_cfg cfg = { .stop = &stop, .repair_after = new_bad[i] };

		CHECK(grd_receiver_new(&cfg, &rc) == -EINVAL, "repair_after %g", new_bad[i]);
	}
	for (int i = 0; i < 2; i++) {
		struct grd_receiver_cfg cfg = { .stop = &stop, .repair_after = i ? 60 : 0 };

		rc = NULL;
		CHECK(grd_receiver_new(&cfg, &rc) == 0 && rc, "repair_after %g", cfg.repair_after);
		grd_receiver_free(rc);
	}
}

int main(void)
{
	test_periods();
	test_refused();
	return 0;
}
