/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "basic/crc-slice8.h"
#include "crc32c.h"
#include "crc32c-table.h"

uint32_t stor_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	/* Slicing-by-8 over crc32c-table.h (basic/gen-crc-table.py), the
	   loop shared with trdp/'s FCS. */
	return ~basic_crc32_slice8(crc32c_table, ~crc, buf, len);
}

#if defined(__x86_64__)
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
uint32_t stor_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	while (len--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

bool stor_crc32c_hw_available(void)
{
	return __builtin_cpu_supports("sse4.2");
}
#elif defined(__aarch64__)
#include <arm_acle.h>
#include <sys/auxv.h>
#include <asm/hwcap.h>

/* ARMv8's CRC32C instructions, optional in ARMv8.0 (every core boards use
   has them; mandatory from ARMv8.1).  The target attribute enables them
   for this function only, so the binary still runs on a core without
   them: the caller asks stor_crc32c_hw_available() first. */
__attribute__((target("arch=armv8-a+crc")))
uint32_t stor_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

	/* memcpy: unaligned 8-byte loads are allowed on AArch64 (and GCC makes
	   this one LDR), so no alignment prologue is needed */
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __crc32cd(c, v);
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		uint32_t v;

		memcpy(&v, p, 4);
		c = __crc32cw(c, v);
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		c = __crc32ch(c, v);
		p += 2;
		len -= 2;
	}
	if (len)
		c = __crc32cb(c, *p);
	return ~c;
}

bool stor_crc32c_hw_available(void)
{
	/* glibc answers AT_HWCAP from a copy it made at start-up: one load */
	return getauxval(AT_HWCAP) & HWCAP_CRC32;
}
#else
uint32_t stor_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return stor_crc32c_sw(crc, buf, len);
}

bool stor_crc32c_hw_available(void)
{
	return false;
}
#endif

uint32_t stor_crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* The check is one load of a libgcc-initialised word; cheaper than an
	   indirect call, and it keeps us free of mutable module state. */
	if (stor_crc32c_hw_available())
		return stor_crc32c_hw(crc, buf, len);
	return stor_crc32c_sw(crc, buf, len);
}
