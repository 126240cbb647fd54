/* SPDX-License-Identifier: MIT */
/* nearest.c - the names nearest to one that is not there (nearest.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "basic/nearest.h"

/* Levenshtein distance, case folded, two rows; long names capped. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[2][65];

	if (la > 64 || lb > 64)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = row[i & 1], *prev = row[(i - 1) & 1];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;

			cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	}
	return row[la & 1][lb];
}

void basic_nearest_names(const char *want, const char *const *names, size_t n, char *buf, size_t len)
{
	enum { BEST = 5 };
	const char *best[BEST];
	size_t dist[BEST], nbest = 0, used = 0, limit = strlen(want) / 2 + 1;

	if (!len)
		return;
	buf[0] = 0;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(want, names[i]), k;

		if (strcasestr(names[i], want) || strcasestr(want, names[i]))
			d = d < limit ? d : limit; /* a part of it: as near as the limit */
		if (d > limit)
			continue;
		/* insertion into the BEST nearest, nearest first */
		for (k = nbest; k > 0 && dist[k - 1] > d; k--)
			if (k < BEST) {
				best[k] = best[k - 1];
				dist[k] = dist[k - 1];
			}
		if (k < BEST) {
			best[k] = names[i];
			dist[k] = d;
			nbest += nbest < BEST;
		}
	}
	for (size_t k = 0; k < nbest && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", k ? ", " : "", best[k]);
}
