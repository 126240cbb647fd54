/* SPDX-License-Identifier: MIT */
/*
 * test-ground-day.c - the day partitions' day of a time and its name
 * (ground/db-private.h: grd_day_of, grd_day_text), the one day formatter
 * of ingest.c (making partitions) and schema.c (pruning them).  The
 * expected days were computed with Python's datetime.date (days since
 * 1970-01-01), the independent reference.  Times before the epoch floor
 * (schema.c once truncated toward zero: -1 ns named 19700101's day).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ground/db-private.h"
#include "tlib.h"

#define DAY GRD_NS_PER_DAY

static void expect(int64_t t_ns, int64_t day, const char *name, const char *dashed)
{
	char a[16], b[16];

	CHECK(grd_day_of(t_ns) == day, "%" PRId64 " ns: day %" PRId64 ", want %" PRId64, t_ns, grd_day_of(t_ns), day);
	grd_day_text(grd_day_of(t_ns), "%Y%m%d", a);
	grd_day_text(grd_day_of(t_ns), "%Y-%m-%d", b);
	CHECK(!strcmp(a, name) && !strcmp(b, dashed), "%" PRId64 " ns: '%s' '%s', want '%s' '%s'", t_ns, a, b, name,
	      dashed);
}

int main(void)
{
	expect(0, 0, "19700101", "1970-01-01");
	expect(DAY - 1, 0, "19700101", "1970-01-01");             /* the day's last ns */
	expect(DAY, 1, "19700102", "1970-01-02");                 /* the next day's first */
	expect(-1, -1, "19691231", "1969-12-31");                 /* floored, not toward 0 */
	expect(-DAY, -1, "19691231", "1969-12-31");
	expect(-DAY - 1, -2, "19691230", "1969-12-30");
	expect(-3653 * DAY, -3653, "19600101", "1960-01-01");
	expect(19782 * DAY + DAY / 2, 19782, "20240229", "2024-02-29"); /* a leap day */
	expect(20792 * DAY - 1, 20791, "20261204", "2026-12-04");
	expect(20792 * DAY, 20792, "20261205", "2026-12-05");
	printf("ground-day: days of 10 times around the epoch, a day's edges and a leap day: ok\n");
	return 0;
}
