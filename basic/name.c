/* SPDX-License-Identifier: MIT */
/*
 * name.c - the vehicle name rule (name.h).
 */
#include <string.h>

#include "name.h"

bool basic_vehicle_name_ok_n(const char *s, size_t n)
{
	if (!s || n == 0 || n > BASIC_VEHICLE_NAME_MAX)
		return false;
	/* "." and "..": no directory could be the vehicle's on the ground */
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

bool basic_vehicle_name_ok(const char *s)
{
	/* strnlen: a name past the limit is refused without reading it all */
	return s && basic_vehicle_name_ok_n(s, strnlen(s, BASIC_VEHICLE_NAME_MAX + 1));
}

bool basic_topic_vehicle(const char *topic, char *out, size_t size)
{
	const char *a = topic ? strchr(topic, '/') : NULL, *b = a ? strchr(a + 1, '/') : NULL;
	size_t n = b ? (size_t)(b - a - 1) : 0;

	if (size)
		out[0] = 0;
	if (!b || n >= size || !basic_vehicle_name_ok_n(a + 1, n))
		return false;
	memcpy(out, a + 1, n);
	out[n] = 0;
	return true;
}
