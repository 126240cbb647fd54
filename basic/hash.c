/* SPDX-License-Identifier: MIT */
/* hash.c - FNV-1a 64 (Fowler, Noll, Vo: the prime 2^40 + 2^8 + 0xb3). */
#include <string.h>

#include "hash.h"

#define BASIC_FNV1A_PRIME UINT64_C(0x100000001b3)

uint64_t basic_fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * BASIC_FNV1A_PRIME;
	return h;
}

uint64_t basic_fnv1a_str(const char *s)
{
	return basic_fnv1a(BASIC_FNV1A_SEED, s, s ? strlen(s) : 0);
}
