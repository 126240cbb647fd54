/* SPDX-License-Identifier: MIT */
/*
 * shortest.c - the fewest digits that read back as a double (shortest.h).
 *
 * Written from the definition rather than from Ryu's or Grisu's tables:
 * v = M * 2^E exactly, so v * 10^d = M * 5^d * 2^(E+d) is the fraction
 * N / Q of two integers (each fits in 128 bits for 1e-15 <= |v| < 1e22
 * or so, at 15 to 17 digits).
 * Rounding N / Q to the nearest integer, ties to even, gives exactly the
 * digits glibc's printf writes (it also rounds the exact binary value), and
 * whether those digits read back as v is a comparison of the error N/Q - m
 * with half the gap to v's neighbours, again in integers.  The least p of
 * 15..17 that reads back is what the trial-width printf loop found.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "shortest.h"

#ifdef __SIZEOF_INT128__

typedef unsigned __int128 u128;

static const uint64_t pow10_u64[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL,
	1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL,
	100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL,
	1000000000000000000ULL, 10000000000000000000ULL,
};

/* 5^k for k <= 54 (below 2^126): 10^d = 5^d * 2^d, the 2^d a shift */
#define P5(hi, lo) ((u128)(hi) << 64 | (lo))
static const u128 pow5_table[55] = {
	P5(0x0000000000000000ULL, 0x0000000000000001ULL), /* 5^0 */
	P5(0x0000000000000000ULL, 0x0000000000000005ULL), /* 5^1 */
	P5(0x0000000000000000ULL, 0x0000000000000019ULL), /* 5^2 */
	P5(0x0000000000000000ULL, 0x000000000000007dULL), /* 5^3 */
	P5(0x0000000000000000ULL, 0x0000000000000271ULL), /* 5^4 */
	P5(0x0000000000000000ULL, 0x0000000000000c35ULL), /* 5^5 */
	P5(0x0000000000000000ULL, 0x0000000000003d09ULL), /* 5^6 */
	P5(0x0000000000000000ULL, 0x000000000001312dULL), /* 5^7 */
	P5(0x0000000000000000ULL, 0x000000000005f5e1ULL), /* 5^8 */
	P5(0x0000000000000000ULL, 0x00000000001dcd65ULL), /* 5^9 */
	P5(0x0000000000000000ULL, 0x00000000009502f9ULL), /* 5^10 */
	P5(0x0000000000000000ULL, 0x0000000002e90eddULL), /* 5^11 */
	P5(0x0000000000000000ULL, 0x000000000e8d4a51ULL), /* 5^12 */
	P5(0x0000000000000000ULL, 0x0000000048c27395ULL), /* 5^13 */
	P5(0x0000000000000000ULL, 0x000000016bcc41e9ULL), /* 5^14 */
	P5(0x0000000000000000ULL, 0x000000071afd498dULL), /* 5^15 */
	P5(0x0000000000000000ULL, 0x0000002386f26fc1ULL), /* 5^16 */
	P5(0x0000000000000000ULL, 0x000000b1a2bc2ec5ULL), /* 5^17 */
	P5(0x0000000000000000ULL, 0x000003782dace9d9ULL), /* 5^18 */
	P5(0x0000000000000000ULL, 0x00001158e460913dULL), /* 5^19 */
	P5(0x0000000000000000ULL, 0x000056bc75e2d631ULL), /* 5^20 */
	P5(0x0000000000000000ULL, 0x0001b1ae4d6e2ef5ULL), /* 5^21 */
	P5(0x0000000000000000ULL, 0x000878678326eac9ULL), /* 5^22 */
	P5(0x0000000000000000ULL, 0x002a5a058fc295edULL), /* 5^23 */
	P5(0x0000000000000000ULL, 0x00d3c21bcecceda1ULL), /* 5^24 */
	P5(0x0000000000000000ULL, 0x0422ca8b0a00a425ULL), /* 5^25 */
	P5(0x0000000000000000ULL, 0x14adf4b7320334b9ULL), /* 5^26 */
	P5(0x0000000000000000ULL, 0x6765c793fa10079dULL), /* 5^27 */
	P5(0x0000000000000002ULL, 0x04fce5e3e2502611ULL), /* 5^28 */
	P5(0x000000000000000aULL, 0x18f07d736b90be55ULL), /* 5^29 */
	P5(0x0000000000000032ULL, 0x7cb2734119d3b7a9ULL), /* 5^30 */
	P5(0x00000000000000fcULL, 0x6f7c40458122964dULL), /* 5^31 */
	P5(0x00000000000004eeULL, 0x2d6d415b85acef81ULL), /* 5^32 */
	P5(0x00000000000018a6ULL, 0xe32246c99c60ad85ULL), /* 5^33 */
	P5(0x0000000000007b42ULL, 0x6fab61f00de36399ULL), /* 5^34 */
	P5(0x000000000002684cULL, 0x2e58e9b04570f1fdULL), /* 5^35 */
	P5(0x00000000000c097cULL, 0xe7bc90715b34b9f1ULL), /* 5^36 */
	P5(0x00000000003c2f70ULL, 0x86aed236c807a1b5ULL), /* 5^37 */
	P5(0x00000000012ced32ULL, 0xa16a1b11e8262889ULL), /* 5^38 */
	P5(0x0000000005e0a1fdULL, 0x2712875988becaadULL), /* 5^39 */
	P5(0x000000001d6329f1ULL, 0xc35ca4bfabb9f561ULL), /* 5^40 */
	P5(0x0000000092efd1b8ULL, 0xd0cf37be5aa1cae5ULL), /* 5^41 */
	P5(0x00000002deaf189cULL, 0x140c16b7c528f679ULL), /* 5^42 */
	P5(0x0000000e596b7b0cULL, 0x643c7196d9ccd05dULL), /* 5^43 */
	P5(0x00000047bf19673dULL, 0xf52e37f2410011d1ULL), /* 5^44 */
	P5(0x00000166bb7f0435ULL, 0xc9e717bb45005915ULL), /* 5^45 */
	P5(0x00000701a97b150cULL, 0xf18376a85901bd69ULL), /* 5^46 */
	P5(0x000023084f676940ULL, 0xb7915149bd08b30dULL), /* 5^47 */
	P5(0x0000af298d050e43ULL, 0x95d69670b12b7f41ULL), /* 5^48 */
	P5(0x00036bcfc1194751ULL, 0xed30f03375d97c45ULL), /* 5^49 */
	P5(0x00111b0ec57e6499ULL, 0xa1f4b1014d3f6d59ULL), /* 5^50 */
	P5(0x00558749db77f700ULL, 0x29c77506823d22bdULL), /* 5^51 */
	P5(0x01aba4714957d300ULL, 0xd0e549208b31adb1ULL), /* 5^52 */
	P5(0x085a36366eb71f04ULL, 0x147a6da2b7f86475ULL), /* 5^53 */
	P5(0x29c30f1029939b14ULL, 0x6664242d97d9f649ULL), /* 5^54 */
};

static u128 pow5(int k)
{
	return pow5_table[k];
}

static int bits(u128 x)
{
	uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;

	return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* Where the digits stand: m (p digits) * 10^-d is the decimal, x = p - 1 - d
   the exponent of its first digit. */
struct digits {
	uint64_t m;
	int d, x;
};

/*
 * M * 2^E to p significant digits, x the guess of floor(log10 v) (off by
 * one at most): 1 when the digits read back as v, 0 when not, -ERANGE when
 * a product leaves 128 bits.  lower_narrow: v is a power of two above the
 * smallest normal, so its lower neighbour is half as far as the upper one.
 */
static int round_to(uint64_t M, int E, bool lower_narrow, int p, int x, struct digits *ret)
{
	for (int tries = 0; tries < 3; tries++) {
		int d = p - 1 - x, B = E + d;
		u128 N = M, Q = 1, q, rem, U, err2, five;
		uint64_t m;

		/* v * 10^d = M * 5^d * 2^(E + d) = N / Q */
		if (d > 54 || d < -54)
			return -ERANGE;
		five = pow5(d < 0 ? -d : d);
		if (bits(five) + 53 > 124)
			return -ERANGE;
		if (d > 0)
			N *= five;
		else
			Q = five;
		if (B > 0) {
			if (bits(N) + B > 124)
				return -ERANGE;
			N <<= B;
		} else if (B < 0) {
			if (bits(Q) - B > 124)
				return -ERANGE;
			Q <<= -B;
		}
		if (d >= 0) { /* Q is a power of two: no division */
			q = N >> -B * (B < 0);
			rem = N - (q << -B * (B < 0));
		} else {
			q = N / Q;
			rem = N % Q;
		}
		/* x is right when v * 10^d's integer part has p digits (the
		   rounded one need not: 9.995 -> 10.0) */
		if (q >= pow10_u64[p]) {
			x++;
			continue;
		}
		if (q < pow10_u64[p - 1]) {
			x--;
			continue;
		}
		/* nearest, ties to even, as printf rounds the exact value */
		m = (uint64_t)q;
		if (2 * rem > Q || (2 * rem == Q && (m & 1)))
			m++;
		/* reads back iff |m - N/Q| <= half the gap to the neighbour on
		   its side (2^(E-1)) times 10^d: 2|m*Q - N| <= 2^E * 10^d * Q =
		   5^max(d,0) * 2^max(B,0) (4|...| below a narrow power of two);
		   on the bound the tie goes to the even mantissa */
		U = (d > 0 ? five : 1) << (B > 0 ? B : 0);
		err2 = 2 * (m == q ? rem : Q - rem);
		if (m == q && rem && lower_narrow)
			err2 *= 2;
		*ret = (struct digits){ m, d, x };
		if (m == pow10_u64[p]) /* rounded up to 10^p: its first digit one place higher */
			*ret = (struct digits){ m / 10, d - 1, x + 1 };
		return err2 < U || (err2 == U && !(M & 1));
	}
	return -ERANGE;
}

/* "e+15", "e-05": the sign and at least two digits, as printf */
static char *exponent(char *q, int x)
{
	unsigned u = (unsigned)(x < 0 ? -x : x);

	*q++ = 'e';
	*q++ = x < 0 ? '-' : '+';
	if (u >= 100)
		*q++ = (char)('0' + u / 100);
	*q++ = (char)('0' + u / 10 % 10);
	*q++ = (char)('0' + u % 10);
	return q;
}

/* %.pg's text of the digits: the exponent form below 1e-4 or from 10^p on,
   else the point form; trailing zeros (and a bare point) dropped. */
static int g_text(bool neg, struct digits g, int p, char *buf)
{
	char s[20], *q = buf;
	int n = 0, dec = g.d;
	uint64_t m = g.m;

	while (m % 10 == 0) {
		m /= 10;
		dec--;
	}
	for (uint64_t t = m; t; t /= 10)
		n++;
	for (int i = n; i-- > 0; m /= 10)
		s[i] = (char)('0' + m % 10);
	if (neg)
		*q++ = '-';
	if (g.x < -4 || g.x >= p) {
		*q++ = s[0];
		if (n > 1) {
			*q++ = '.';
			memcpy(q, s + 1, (size_t)n - 1);
			q += n - 1;
		}
		q = exponent(q, g.x);
	} else if (dec <= 0) { /* an integer: its zeros back */
		memcpy(q, s, (size_t)n);
		q += n;
		memset(q, '0', (size_t)-dec);
		q += -dec;
	} else if (n <= dec) { /* 0.000ddd */
		*q++ = '0';
		*q++ = '.';
		memset(q, '0', (size_t)(dec - n));
		q += dec - n;
		memcpy(q, s, (size_t)n);
		q += n;
	} else {
		memcpy(q, s, (size_t)(n - dec));
		q += n - dec;
		*q++ = '.';
		memcpy(q, s + n - dec, (size_t)dec);
		q += dec;
	}
	*q = 0;
	return (int)(q - buf);
}

int basic_shortest_g(double v, char buf[BASIC_SHORTEST_MAX])
{
	uint64_t u, M;
	int bexp, E, x;
	bool neg;

	memcpy(&u, &v, sizeof(u));
	neg = u >> 63;
	bexp = (int)(u >> 52 & 0x7ff);
	if (!(u << 1)) { /* %.15g of a zero */
		strcpy(buf, neg ? "-0" : "0");
		return neg ? 2 : 1;
	}
	if (bexp == 0 || bexp == 0x7ff) /* subnormal (fewer digits), inf, NaN */
		return -ERANGE;
	M = (u & ((1ULL << 52) - 1)) | 1ULL << 52;
	E = bexp - 1075;
	/* floor(log10 v) is floor(log10 2 * (E + 52)) or one more */
	x = (int)((E + 52) * 0.30102999566398120);
	if ((E + 52) * 0.30102999566398120 < x)
		x--;
	for (int p = 15; p <= 17; p++) {
		struct digits g;
		int r = round_to(M, E, M == 1ULL << 52 && bexp > 1, p, x, &g);

		if (r < 0)
			return r;
		if (r)
			return g_text(neg, g, p, buf);
		x = g.x;
	}
	return -ERANGE; /* 17 digits always read back: not reached */
}

#else /* no 128-bit integers (armhf): the caller's printf path */

int basic_shortest_g(double v, char buf[BASIC_SHORTEST_MAX])
{
	(void)v;
	(void)buf;
	return -ERANGE;
}

#endif
