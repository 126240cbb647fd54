/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-range.c - gap repair's range line (uplink/range.h), the one
 * parser and formatter the ground's requests and the vehicle's "gone"
 * answers share: well-formed lines both ways, and every malformed line
 * refused (what sscanf("%32s %llu %llu") let through included: a sign, a
 * wrapped negative seq, blanks before or between).
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tlib.h"
#include "uplink/range.h"

#define ID "00112233445566778899aabbccddeeff"

static int parse(const char *line, struct upl_range *r)
{
	return upl_range_parse(line, strlen(line), r);
}

int main(void)
{
	static const uint8_t id[REC_LOG_ID_LEN] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
		                                    0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };
	static const char *const bad[] = {
		"",
		ID,
		ID " 1",
		ID " 1 ",
		ID " 0 5",                          /* seq 0 is no seq */
		ID " 7 6",                          /* last before first */
		ID " 1 -1",                         /* sscanf took it as 2^64 - 1 */
		ID " +1 2",
		ID " -5 7",
		ID "  1 2",                         /* two blanks */
		ID " 1  2",
		ID "\t1 2",
		" " ID " 1 2",                      /* a blank before */
		ID " 1 2 ",                         /* one after */
		ID " 1 2\r",
		ID " 1 2 3",
		ID " 1x 2",
		ID " 1 2x",
		ID " 1 18446744073709551616",       /* UINT64_MAX + 1 */
		ID " 99999999999999999999999 1",
		"00112233445566778899aabbccddeef 1 2",   /* 31 digits */
		"00112233445566778899aabbccddeeff0 1 2", /* 33 */
		"0x112233445566778899aabbccddeeff 1 2",
		"00112233445566778899aabbccddeefg 1 2",  /* not a hex digit */
		"+0112233445566778899aabbccddeeff 1 2",
		" 0112233445566778899aabbccddeeff 1 2",
	};
	struct upl_range r, keep;
	char line[UPL_RANGE_LINE_MAX], small[40];

	CHECK(parse(ID " 1 2", &r) == 0 && !memcmp(r.log_id, id, sizeof(id)) && r.first == 1 && r.last == 2);
	CHECK(parse("00112233445566778899AABBCCDDEEFF 5 5", &r) == 0 && !memcmp(r.log_id, id, sizeof(id)) &&
	      r.first == 5 && r.last == 5, "upper-case digits, a range of one");
	CHECK(parse(ID " 1 18446744073709551615", &r) == 0 && r.last == UINT64_MAX);
	CHECK(parse(ID " 007 010", &r) == 0 && r.first == 7 && r.last == 10, "leading zeros are digits");
	/* n bounds the line: the '\n' after it (a message of several) is not read */
	CHECK(upl_range_parse(ID " 1 2\n" ID " 3 4", 36, &r) == 0 && r.last == 2);
	CHECK(upl_range_parse(ID " 1 23", 36, &r) == 0 && r.last == 2, "the bytes past n are not part of it");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		keep = r;
		CHECK(parse(bad[i], &r) == -EINVAL, "'%s' was taken", bad[i]);
		CHECK(!memcmp(&r, &keep, sizeof(r)), "'%s': *ret written on failure", bad[i]);
	}
	CHECK(upl_range_parse(NULL, 40, &r) == -EINVAL && upl_range_parse(ID " 1 2", 36, NULL) == -EINVAL);

	/* the formatter: lower-case hex, '\n', and back to the same range */
	memcpy(r.log_id, id, sizeof(id));
	r.first = 1;
	r.last = UINT64_MAX;
	CHECK(upl_range_format(&r, line, sizeof(line)) == 56 && !strcmp(line, ID " 1 18446744073709551615\n"), "%s",
	      line);
	r.first = UINT64_MAX;
	CHECK(upl_range_format(&r, line, sizeof(line)) == 2 * REC_LOG_ID_LEN + 43 &&
	      (int)strlen(line) == UPL_RANGE_LINE_MAX - 1, "the longest line fits UPL_RANGE_LINE_MAX");
	for (uint64_t a = 1; a < UINT64_MAX / 3; a = a * 7 + 3) {
		struct upl_range in = { .first = a, .last = a + a / 2 }, back;
		int n;

		memcpy(in.log_id, id, sizeof(id));
		in.log_id[(size_t)(a % REC_LOG_ID_LEN)] ^= (uint8_t)a;
		n = upl_range_format(&in, line, sizeof(line));
		CHECK(n > 0 && line[n - 1] == '\n' && upl_range_parse(line, (size_t)n - 1, &back) == 0 &&
		      !memcmp(&in, &back, sizeof(in)), "%s", line);
	}
	r.first = 0;
	CHECK(upl_range_format(&r, line, sizeof(line)) == -EINVAL, "seq 0");
	r.first = 9, r.last = 8;
	CHECK(upl_range_format(&r, line, sizeof(line)) == -EINVAL, "last before first");
	r.first = 1, r.last = 2;
	CHECK(upl_range_format(&r, small, 37) == -ENOSPC && upl_range_format(&r, small, 38) == 37, "%s", small);
	CHECK(upl_range_format(NULL, line, sizeof(line)) == -EINVAL && upl_range_format(&r, NULL, 80) == -EINVAL);
	printf("uplink-range: %zu malformed lines refused, round trips, limits: ok\n", sizeof(bad) / sizeof(bad[0]));
	return 0;
}
