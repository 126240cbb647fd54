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
 * Uses the CRC32C instructions when the CPU has them (checked at run
 * time: SSE4.2 on x86-64, the ARMv8 CRC extension on aarch64), else
 * software slicing-by-8.  Pure, thread-safe, RT-safe.
 */
uint32_t stor_crc32c(uint32_t crc, const void *buf, size_t len);

/* The two implementations, exposed so the benchmark and tests compare them.
   stor_crc32c_hw() is the software one on other targets; on x86-64 and
   aarch64 it may be called only where stor_crc32c_hw_available(). */
uint32_t stor_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t stor_crc32c_hw(uint32_t crc, const void *buf, size_t len);
bool stor_crc32c_hw_available(void);
