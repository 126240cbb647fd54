/* SPDX-License-Identifier: MIT */
/*
 * test-basic-clock.c - basic/clock.h's pair of clocks: of several
 * readings with known brackets the tightest is kept, wherever it lies
 * (first, middle, last), and its monotonic time is its bracket's middle;
 * then the real reader, whose result must lie between two monotonic reads
 * around it.  A pick that keeps the last reading (as the pair did before,
 * the root of the --corrected-time flake of test-run-times) or the first
 * fails here.
 */
#include <stdio.h>
#include <stdlib.h>

#include "basic/clock.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
	exit(1); } } while (0)

int main(void)
{
	/* realtime - monotonic is 1,000,000 in every reading; the preempted
	   ones read realtime late (their offset is off by the delay). */
	const struct basic_clock_reading mid[] = {
		{ 100, 1000000 + 100 + 900, 1000 },   /* bracket 900: preempted after mono_before */
		{ 2000, 1000000 + 2010, 2020 },       /* bracket 20: the tightest */
		{ 3000, 1000000 + 3000 + 450, 3500 }, /* bracket 500 */
	};
	const struct basic_clock_reading first[] = {
		{ 0, 1000000 + 5, 10 },
		{ 100, 1000000 + 100 + 700, 900 },
		{ 1000, 1000000 + 1000 + 300, 1400 },
	};
	const struct basic_clock_reading last[] = {
		{ 0, 1000000 + 600, 800 },
		{ 1000, 1000000 + 1000 + 300, 1400 },
		{ 2000, 1000000 + 2002, 2004 },
	};
	const struct basic_clock_reading tie[] = {
		{ 0, 1000000 + 5, 10 },
		{ 100, 1000000 + 105, 110 },
	};
	int64_t real, mono;

	basic_clock_pair_pick(mid, 3, &real, &mono);
	CHECK(real == 1000000 + 2010 && mono == 2010);
	basic_clock_pair_pick(first, 3, &real, &mono);
	CHECK(real == 1000000 + 5 && mono == 5);
	basic_clock_pair_pick(last, 3, &real, &mono);
	CHECK(real == 1000000 + 2002 && mono == 2002);
	basic_clock_pair_pick(tie, 2, &real, &mono);
	CHECK(real == 1000000 + 5 && mono == 5);
	basic_clock_pair_pick(mid, 1, &real, &mono);
	CHECK(real == 1000000 + 1000 && mono == 550);
	printf("the tightest of the readings kept (first, middle, last, the first of a tie): ok\n");

	for (int i = 0; i < 1000; i++) {
		int64_t before = basic_mono_ns(), after;

		basic_clock_pair(&real, &mono);
		after = basic_mono_ns();
		CHECK(before <= mono && mono <= after && real > 0);
	}
	printf("basic_clock_pair: its monotonic time between two reads around it, 1000 times: ok\n");
	return 0;
}
