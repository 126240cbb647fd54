/* SPDX-License-Identifier: MIT */
/*
 * test-crc32c.c - the CRC-32C instructions (SSE4.2 on x86-64, ARMv8 CRC on
 * aarch64: storage/crc32c.c) against the table on every length from 0 to
 * 1 KiB at every alignment 0-15, and continued across a split at every
 * length of that range: a bug in the 8/4/2/1-byte tails or in an unaligned
 * load shows at some length and offset.  Run natively and on aarch64 under
 * qemu-user (suite cross).
 *
 * usage: test-crc32c [require-hw]
 *   require-hw: fail if this CPU has no CRC32C instructions (CI's x86-64
 *   and qemu-aarch64 have them; without the argument the table alone is
 *   checked and that is said)
 */
#include <stdio.h>
#include <string.h>

#include "storage/crc32c.h"
#include "tlib.h"

#define MAX_LEN 1024
#define MAX_OFF 16

int main(int argc, char **argv)
{
	static uint8_t buf[MAX_LEN + MAX_OFF];
	bool hw = stor_crc32c_hw_available();
	unsigned long checked = 0;

	if (argc > 1 && !strcmp(argv[1], "require-hw"))
		CHECK(hw, "this CPU has no CRC32C instructions (or railmon does not find them)");
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	/* the check value of the CRC catalogue, on every path */
	CHECK(stor_crc32c_sw(0, "123456789", 9) == 0xe3069283u);
	CHECK(stor_crc32c(0, "123456789", 9) == 0xe3069283u);
	if (hw)
		CHECK(stor_crc32c_hw(0, "123456789", 9) == 0xe3069283u);
	for (size_t off = 0; off < MAX_OFF; off++) {
		for (size_t len = 0; len <= MAX_LEN; len++) {
			const uint8_t *p = buf + off;
			uint32_t sw = stor_crc32c_sw(0, p, len);
			size_t cut = len * off / MAX_OFF; /* a split that moves with off */

			CHECK(stor_crc32c(0, p, len) == sw, "len %zu off %zu", len, off);
			if (hw) {
				CHECK(stor_crc32c_hw(0, p, len) == sw, "len %zu off %zu", len, off);
				CHECK(stor_crc32c_hw(stor_crc32c_hw(0, p, cut), p + cut, len - cut) == sw,
				      "len %zu off %zu cut %zu", len, off, cut);
			}
			CHECK(stor_crc32c_sw(stor_crc32c_sw(0, p, cut), p + cut, len - cut) == sw);
			checked++;
		}
	}
	printf("crc32c: %s against the table on %lu (length, alignment) pairs, "
	       "lengths 0-%d, alignments 0-%d, whole and split: ok\n",
	       hw ? "the CPU's instructions" : "no CRC32C instructions here: the table alone",
	       checked, MAX_LEN, MAX_OFF - 1);
	return 0;
}
