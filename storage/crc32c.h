/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h - CRC-32C (Castagnoli), the frame checksum of the flash log.
 * Internal to storage/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Continue a CRC-32C over buf.  Start with crc = 0; the pre/post inversion
 * is done inside, so crc32c(crc32c(0, a), b) == crc32c(0, a || b).
 * Uses the SSE4.2 crc32 instruction when the CPU has it (checked at run
 * time), else software slicing-by-8.  Pure, thread-safe, RT-safe.
 */
uint32_t stor_crc32c(uint32_t crc, const void *buf, size_t len);

/* The two implementations, exposed so the benchmark and tests compare them. */
uint32_t stor_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t stor_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool stor_crc32c_hw_available(void);
