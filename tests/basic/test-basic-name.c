/* SPDX-License-Identifier: MIT */
/* test-basic-name.c - the one vehicle name rule (basic/name.h) at its
   limits: 59 bytes in, 60 out; "." and ".." out, other dots in; every byte
   outside letters, digits, '-', '_' and '.' out; the topic level. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "basic/name.h"

static char *repeat(char *buf, char c, size_t n)
{
	memset(buf, c, n);
	buf[n] = 0;
	return buf;
}

int main(void)
{
	char buf[128], out[BASIC_VEHICLE_NAME_MAX + 1], topic[160];

	assert(BASIC_VEHICLE_NAME_MAX == 59);
	assert(basic_vehicle_name_ok(repeat(buf, 'v', 59)));
	assert(!basic_vehicle_name_ok(repeat(buf, 'v', 60)));
	assert(!basic_vehicle_name_ok(repeat(buf, 'v', 64)));
	assert(basic_vehicle_name_ok("a") && basic_vehicle_name_ok("EMU-4021_b.2") && basic_vehicle_name_ok("...") &&
	       basic_vehicle_name_ok(".a") && basic_vehicle_name_ok("a..b"));
	assert(!basic_vehicle_name_ok("") && !basic_vehicle_name_ok(NULL) && !basic_vehicle_name_ok(".") &&
	       !basic_vehicle_name_ok(".."));
	/* every byte outside the set, alone and inside a name */
	for (int c = 1; c < 256; c++) {
		bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		               c == '_' || c == '.';
		char name[4] = { 'a', (char)c, 'b', 0 };

		assert(basic_vehicle_name_ok(name) == allowed);
	}
	/* the _n form reads n bytes only */
	assert(basic_vehicle_name_ok_n("emu1/data", 4) && !basic_vehicle_name_ok_n("emu1/data", 5));
	assert(!basic_vehicle_name_ok_n(NULL, 3) && !basic_vehicle_name_ok_n("a", 0));
	/* the topic's second level */
	assert(basic_topic_vehicle("railmon/emu1/gone", out, sizeof(out)) && !strcmp(out, "emu1"));
	snprintf(topic, sizeof(topic), "railmon/%s/status", repeat(buf, 'v', 59));
	assert(basic_topic_vehicle(topic, out, sizeof(out)) && strlen(out) == 59);
	snprintf(topic, sizeof(topic), "railmon/%s/status", repeat(buf, 'v', 60));
	assert(!basic_topic_vehicle(topic, out, sizeof(out)) && !out[0]);
	assert(!basic_topic_vehicle("railmon/../gone", out, sizeof(out)) && !out[0]);
	assert(!basic_topic_vehicle("railmon//gone", out, sizeof(out)));
	assert(!basic_topic_vehicle("railmon/emu1", out, sizeof(out)));
	assert(!basic_topic_vehicle(NULL, out, sizeof(out)));
	/* an output too small for the name: refused, not cut */
	assert(!basic_topic_vehicle("railmon/emu12/x", out, 5) && !out[0]);
	puts("basic-name: ok");
	return 0;
}
