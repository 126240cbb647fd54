/* SPDX-License-Identifier: MIT */
/* range.c - gap repair's "<log id> <first> <last>" line. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "range.h"
#include "basic/hex.h"

int upl_decimal_parse(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s == end || *s < '0' || *s > '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*p = s;
	*ret = v;
	return 0;
}

int upl_range_parse(const char *line, size_t n, struct upl_range *ret)
{
	const char *p = line, *end = line + n;
	struct upl_range r;

	if (!line || !ret || n < 2 * REC_LOG_ID_LEN + 4)
		return -EINVAL;
	if (basic_hex_decode(p, 2 * REC_LOG_ID_LEN, r.log_id, sizeof(r.log_id)) != REC_LOG_ID_LEN)
		return -EINVAL;
	p += 2 * REC_LOG_ID_LEN;
	if (*p++ != ' ' || upl_decimal_parse(&p, end, &r.first) < 0 || p == end || *p++ != ' ' ||
	    upl_decimal_parse(&p, end, &r.last) < 0 || p != end)
		return -EINVAL;
	if (!r.first || r.last < r.first)
		return -EINVAL;
	*ret = r;
	return 0;
}

int upl_range_format(const struct upl_range *r, char *buf, size_t len)
{
	char id[2 * REC_LOG_ID_LEN + 1], line[UPL_RANGE_LINE_MAX];
	int n;

	if (!r || !buf || !r->first || r->last < r->first)
		return -EINVAL;
	basic_hex_encode(r->log_id, REC_LOG_ID_LEN, false, id);
	n = snprintf(line, sizeof(line), "%s %" PRIu64 " %" PRIu64 "\n", id, r->first, r->last);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	memcpy(buf, line, (size_t)n + 1);
	return n;
}
