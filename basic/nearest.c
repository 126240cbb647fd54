/* SPDX-License-Identifier: MIT */
/* nearest.c - the names nearest to one that is not there (nearest.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "basic/nearest.h"

enum { NEAR_LEN_MAX = 255 };

/*
 * Optimal-string-alignment distance (Levenshtein plus the swap of two
 * neighbours: "Sepeed" is one typo, not two) of a[0..la) and b[0..lb),
 * case folded.  Bounded: anything farther than max returns max + 1, as
 * soon as a whole row is past max - so a dictionary of 10,000 names
 * costs a few columns per name, not the whole table.
 */
static size_t osa_bounded(const char *a, size_t la, const char *b, size_t lb, size_t max)
{
	size_t rows[3][NEAR_LEN_MAX + 1];

	if (la > NEAR_LEN_MAX || lb > NEAR_LEN_MAX || (la > lb ? la - lb : lb - la) > max)
		return max + 1;
	for (size_t j = 0; j <= lb; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i + 1) % 3], low;
		int ca = tolower((unsigned char)a[i - 1]);

		cur[0] = low = i;
		for (size_t j = 1; j <= lb; j++) {
			int cb = tolower((unsigned char)b[j - 1]);
			size_t sub = prev[j - 1] + (ca != cb), del = prev[j] + 1, ins = cur[j - 1] + 1;
			size_t d = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);

			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			cur[j] = d;
			low = d < low ? d : low;
		}
		if (low > max) /* every later row is at least this far */
			return max + 1;
	}
	return rows[la % 3][lb] <= max ? rows[la % 3][lb] : max + 1;
}

/* want's distance to name: to the whole name, or to its signal part
   (after the last '.') or its message part (before it), so that "Sped",
   "VehicleSped" and "VehicleSpeed.Sped" all find VehicleSpeed.Speed. */
static size_t name_distance(const char *want, const char *name, size_t max)
{
	size_t lw = strlen(want), ln = strlen(name), d = osa_bounded(want, lw, name, ln, max);
	const char *dot = strrchr(name, '.');

	if (dot && d > 0) {
		size_t ds = osa_bounded(want, lw, dot + 1, strlen(dot + 1), max);
		size_t dm = osa_bounded(want, lw, name, (size_t)(dot - name), max);

		d = ds < d ? ds : d;
		d = dm < d ? dm : d;
	}
	return d;
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
		/* once BEST are found, only nearer ones matter: a tighter bound */
		size_t max = nbest == BEST && dist[BEST - 1] > 0 ? dist[BEST - 1] - 1 : limit, k;
		size_t d = name_distance(want, names[i], max);

		if (d > limit && (strcasestr(names[i], want) || strcasestr(want, names[i])))
			d = limit; /* a part of it: as near as the limit */
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
