/* SPDX-License-Identifier: MIT */
/*
 * test-basic-shortest.c - basic_shortest_g() against the trial-width
 * printf it replaces in export's number path (record/format.c before
 * issue 29: the first %.{15,16,17}g that strtod reads back as v), byte for
 * byte: edge cases (zeros, powers of ten and two and their neighbours,
 * 1e22, 9007199254740993, DBL_MAX, DBL_MIN, subnormals, NaN, inf), values
 * as signals carry them (k / 10^j, raw * scale + offset), and random bit
 * patterns over every exponent.  Where it says -ERANGE (the printf path
 * then writes), only that is checked; of the signal-like values it must
 * compute at least 99 %, so a function that always declines fails.
 *
 *   test-basic-shortest [N]   N random values of each kind (default 1 M)
 *   test-basic-shortest --bench  ns per value: this against the printf loop
 */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/shortest.h"
#include "tlib.h"

/* The oracle: record/format.c's rec_format_double() before this (its loop). */
static int trial_width(double v, char *buf, size_t len)
{
	int n = -1;

	for (int prec = v != 0 && fabs(v) < DBL_MIN ? 1 : 15; prec <= 17; prec++) {
		n = snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return n;
}

static uint64_t computed, declined;

static void check(double v)
{
	char got[BASIC_SHORTEST_MAX], want[64];
	int n = basic_shortest_g(v, got);

	if (n == -ERANGE) {
		declined++;
		return;
	}
	CHECK(trial_width(v, want, sizeof(want)) == n && !strcmp(got, want), "%a: %s, printf %s", v, got, want);
	computed++;
}

static uint64_t rng = 0x2545f4914f6cdd1dULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double bits_double(uint64_t u)
{
	double v;

	memcpy(&v, &u, sizeof(v));
	return v;
}

static void edge_cases(void)
{
	static const double fixed[] = {
		0.0, 1e22, 1e23, 1e21, 1e-22, 1e-21, 9007199254740993.0, 9007199254740992.0, 9007199254740991.0,
		0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e15, 1e16, 1e17, 1e14, 999999999999999.9, 9999999999999998.0,
		0.0001, 0.00001, 0.000123456789012345, 123456789012345.6, 5e-5, 1.5e-5, 75.9, 12.0, 100,
		4.35, 2.675, 1.005, 0.15, 1e-4, 9.5e-5, 0.00009999999999999999, DBL_EPSILON, 1 + DBL_EPSILON,
		DBL_MAX, DBL_MIN, 0x1p-1074, 0x1p-1060, 0x1.8p-1030, 4.9406564584124654e-324, 2.2250738585072009e-308,
	};
	char buf[BASIC_SHORTEST_MAX];

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		check(fixed[i]);
		check(-fixed[i]);
		check(nextafter(fixed[i], 0));
		check(nextafter(fixed[i], INFINITY));
	}
	CHECK(basic_shortest_g(-0.0, buf) == 2 && !strcmp(buf, "-0"));
	CHECK(basic_shortest_g(0.0, buf) == 1 && !strcmp(buf, "0"));
	/* not finite, subnormal: declined (the printf path says what) */
	CHECK(basic_shortest_g(NAN, buf) == -ERANGE && basic_shortest_g(INFINITY, buf) == -ERANGE &&
	      basic_shortest_g(-INFINITY, buf) == -ERANGE && basic_shortest_g(0x1p-1074, buf) == -ERANGE);
#ifdef __SIZEOF_INT128__
	CHECK(basic_shortest_g(1e22, buf) > 0 && !strcmp(buf, "1e+22"), "%s", buf);
	CHECK(basic_shortest_g(9007199254740993.0, buf) > 0 && !strcmp(buf, "9007199254740992"), "%s", buf);
	CHECK(basic_shortest_g(0.1, buf) > 0 && !strcmp(buf, "0.1"), "%s", buf);
	CHECK(basic_shortest_g(1.0 / 3, buf) > 0 && !strcmp(buf, "0.3333333333333333"), "%s", buf);
	CHECK(basic_shortest_g(1e15, buf) > 0 && !strcmp(buf, "1e+15"), "%s", buf);
	CHECK(basic_shortest_g(-1.5e-5, buf) > 0 && !strcmp(buf, "-1.5e-05"), "%s", buf);
#endif
	/* every power of ten and of two in range, and their neighbours */
	for (int e = -30; e <= 30; e++) {
		double p = pow(10, e);

		check(p);
		check(nextafter(p, 0));
		check(nextafter(p, INFINITY));
	}
	for (int e = -1022; e <= 1023; e++) {
		double p = ldexp(1, e);

		check(p);
		check(nextafter(p, 0));
		check(nextafter(p, INFINITY));
	}
}

int main(int argc, char **argv)
{
	uint64_t n = 1000000, signal_done;

	if (argc > 1 && !strcmp(argv[1], "--bench")) {
		enum { K = 2000000 };
		double *v = malloc(K * sizeof(double)), sink = 0;
		char buf[64];
		struct timespec a, b, c;

		CHECK(v);
		for (int i = 0; i < K; i++) /* a signal's values: raw * 0.1 or * 1/3 */
			v[i] = (double)(int64_t)(next_rand() % 200000) * (i & 1 ? 0.1 : 1.0 / 3) - 5000;
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (int i = 0; i < K; i++)
			sink += basic_shortest_g(v[i], buf);
		clock_gettime(CLOCK_MONOTONIC, &b);
		for (int i = 0; i < K; i++)
			sink += trial_width(v[i], buf, sizeof(buf));
		clock_gettime(CLOCK_MONOTONIC, &c);
		double t1 = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
		       t2 = (double)(c.tv_sec - b.tv_sec) + (double)(c.tv_nsec - b.tv_nsec) / 1e9;
		printf("shortest: %.1f ns/value, trial-width printf: %.1f ns/value, %.1fx (%d values; %g)\n",
		       t1 / K * 1e9, t2 / K * 1e9, t2 / t1, K, sink);
		free(v);
		return 0;
	}
	if (argc > 1)
		n = strtoull(argv[1], NULL, 10);
	edge_cases();
	/* signal-like: k / 10^j, raw * scale + offset, uniform over decades */
	computed = declined = 0;
	for (uint64_t i = 0; i < n; i++) {
		int64_t k = (int64_t)(next_rand() % 2000000001) - 1000000000;
		int j = (int)(next_rand() % 12);
		double scales[] = { 0.1, 0.01, 0.05, 0.125, 1.0 / 3, 0.0039215686274509803, 1e-3, 2.5 };

		check((double)k / pow(10, j));
		check((double)(k % 65536) * scales[i % 8] + (double)(int)(i % 7 - 3) * 40);
		check(ldexp((double)(next_rand() >> 11), -52) * pow(10, (int)(next_rand() % 30) - 12)); /* 1e-12 .. 1e18 */
	}
	signal_done = computed;
#ifdef __SIZEOF_INT128__
	CHECK(declined * 100 < computed, "%" PRIu64 " declined, %" PRIu64 " computed", declined, computed);
#endif
	/* random bits: every exponent, sign, NaN and inf among them */
	for (uint64_t i = 0; i < n; i++)
		check(bits_double(next_rand()));
	printf("%" PRIu64 " values byte-identical to the trial-width printf (%" PRIu64 " signal-like), "
	       "%" PRIu64 " declined (out of range: the printf path)\n", computed, signal_done, declined);
	return 0;
}
