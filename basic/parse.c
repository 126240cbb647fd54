/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

/* strto*() skip leading blanks and read "-1" as a huge unsigned value;
   a value must start with its first digit (or the sign, where allowed). */
static bool starts_number(const char *s, bool sign_ok)
{
	if (!*s || isspace((unsigned char)*s))
		return false;
	return sign_ok || *s != '-';
}

int basic_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	unsigned long long x;
	char *end;

	if (!s || !ret || !starts_number(s, false))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (end == s || *end)
		return -EINVAL;
	if (errno || x < min || x > max)
		return -ERANGE;
	*ret = x;
	return 0;
}

int basic_parse_i64(const char *s, int64_t min, int64_t max, int64_t *ret)
{
	long long x;
	char *end;

	if (!s || !ret || !starts_number(s, true))
		return -EINVAL;
	errno = 0;
	x = strtoll(s, &end, 0);
	if (end == s || *end)
		return -EINVAL;
	if (errno || x < min || x > max)
		return -ERANGE;
	*ret = x;
	return 0;
}

int basic_parse_double(const char *s, double *ret)
{
	char *end;
	double x;

	if (!s || !ret || !starts_number(s, true))
		return -EINVAL;
	errno = 0;
	x = strtod(s, &end);
	if (end == s || *end)
		return -EINVAL;
	if (errno || !isfinite(x))
		return -ERANGE;
	*ret = x;
	return 0;
}

int basic_parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };

	if (!s || !ret)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]) || !strcasecmp(s, no[i])) {
			*ret = !strcasecmp(s, yes[i]);
			return 0;
		}
	}
	return -EINVAL;
}

/* Decimal digits, then a unit from units[] (its multiplier in mul[]) and
   what may follow the unit (tail: a set of optional characters, in order). */
static int parse_scaled(const char *s, const char *units, const uint64_t *mul, bool nocase,
                        const char *const *tail, uint64_t *ret)
{
	unsigned long long x;
	uint64_t m = 1;
	char *end;

	if (!s || !ret || !starts_number(s, false))
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (end == s)
		return -EINVAL;
	if (*end) {
		int c = nocase ? toupper((unsigned char)*end) : (unsigned char)*end;
		size_t u = 0;
		while (units[u] && units[u] != c)
			u++;
		if (!units[u])
			return -EINVAL;
		m = mul[u];
		end++;
		for (; tail && *tail; tail++)
			if (*end && strchr(*tail, *end))
				end++;
		if (*end)
			return -EINVAL;
	}
	if (errno || x > UINT64_MAX / m)
		return -ERANGE;
	*ret = x * m;
	return 0;
}

int basic_parse_size(const char *s, uint64_t *ret_bytes)
{
	static const uint64_t mul[] = { 1ull << 10, 1ull << 20, 1ull << 30, 1ull << 40 };
	static const char *const tail[] = { "iI", "bB", NULL }; /* "KiB", "kb" */

	return parse_scaled(s, "KMGT", mul, true, tail, ret_bytes);
}

int basic_parse_duration(const char *s, uint64_t *ret_seconds)
{
	static const uint64_t mul[] = { 1, 60, 3600, 86400 };

	return parse_scaled(s, "smhd", mul, false, NULL, ret_seconds);
}

int basic_parse_seconds(const char *s, double *ret_seconds)
{
	double v;
	int r;

	if (!ret_seconds)
		return -EINVAL;
	/* a negative time (even "-0") is out of range, not another syntax */
	if (s && *s == '-')
		return -ERANGE;
	r = basic_parse_double(s, &v);
	if (r < 0)
		return r;
	if (v > BASIC_SECONDS_MAX)
		return -ERANGE;
	*ret_seconds = v;
	return 0;
}

char *basic_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	if (!buf || !len)
		return buf;
	while (u < 3 && bytes >= 1024ull << (10 * (u + 1)))
		u++;
	if (u < 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
	else if (bytes % (1ull << (10 * (u + 1))) == 0)
		snprintf(buf, len, "%llu%c", (unsigned long long)(bytes >> (10 * (u + 1))), units[u]);
	else
		snprintf(buf, len, "%.1f%c", (double)bytes / (double)(1ull << (10 * (u + 1))), units[u]);
	return buf;
}

char *basic_format_duration(uint64_t seconds, char *buf, size_t len)
{
	static const struct { uint64_t s; char unit; } units[] = { { 86400, 'd' }, { 3600, 'h' }, { 60, 'm' } };
	size_t u = 0;

	if (!buf || !len)
		return buf;
	if (!seconds) {
		snprintf(buf, len, "0");
		return buf;
	}
	while (u < sizeof(units) / sizeof(units[0]) && seconds % units[u].s)
		u++;
	if (u < sizeof(units) / sizeof(units[0]))
		snprintf(buf, len, "%llu%c", (unsigned long long)(seconds / units[u].s), units[u].unit);
	else
		snprintf(buf, len, "%llus", (unsigned long long)seconds);
	return buf;
}

int basic_parse_mqtt_url(const char *url, char *host, size_t host_len, uint16_t *ret_port, bool *ret_tls)
{
	const char *h = url, *colon;
	bool tls = false;
	int64_t port = 0;
	size_t n;

	if (!strncmp(h, "mqtts://", 8)) {
		tls = true;
		h += 8;
	} else if (!strncmp(h, "mqtt://", 7)) {
		h += 7;
	} else if (strstr(h, "://")) {
		return -EPROTONOSUPPORT;
	}
	colon = strrchr(h, ':');
	if (colon) {
		const char *p = colon + 1;

		while (*p == ' ' || *p == '\t')
			p++; /* "host: 1883", as the board file has always taken it */
		if (basic_parse_i64(p, 1, 65535, &port) < 0)
			return -ERANGE;
	}
	n = colon ? (size_t)(colon - h) : strlen(h);
	if (!n || n >= host_len)
		return -EINVAL;
	memcpy(host, h, n);
	host[n] = 0;
	*ret_port = (uint16_t)port;
	*ret_tls = tls;
	return 0;
}
