/* SPDX-License-Identifier: MIT */
/*
 * hold-list.c - the event holds of a log as `railmon hold list` shows them
 * (hold-list.h).  The holds file and what each hold keeps are storage's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "basic/utc.h"
#include "cli/hold-list.h"
#include "report/say.h"
#include "storage/stor.h"

static const char *span(int64_t ns, char *buf, size_t len)
{
	int64_t s = ns / BASIC_NS_PER_SEC;

	if (s % 3600 == 0 && s)
		snprintf(buf, len, "%" PRId64 "h", s / 3600);
	else if (s % 60 == 0 && s)
		snprintf(buf, len, "%" PRId64 "m", s / 60);
	else
		snprintf(buf, len, "%" PRId64 "s", s);
	return buf;
}

int cli_hold_damaged(FILE *err, const char *dir, unsigned line)
{
	fprintf(err, "railmon hold: %s/%s:%u: the holds file is damaged (its CRC does not match, or a line is "
	        "cut): the windows it holds cannot be trusted, and retention deletes nothing while it is so. "
	        "Keep a copy for the investigation, then repair or remove it\n", dir, STOR_HOLDS_NAME, line);
	return 1;
}

/* "40954-60867" or "1-99,140-199" (the first STOR_HOLD_RANGES, then
   "+N more"): the seqs really on disk, never a span across a hole. */
static void ranges(const struct stor_seq_range *r, uint32_t n, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t i = 0; i < n && i < STOR_HOLD_RANGES && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64 "-%" PRIu64, i ? "," : "", r[i].first,
		                         r[i].end - 1);
	if (n > STOR_HOLD_RANGES && used < len)
		snprintf(buf + used, len - used, ",+%" PRIu32 " more", n - STOR_HOLD_RANGES);
}

/* What of the window is not on disk, on lines of its own under the hold. */
static void print_gone(FILE *out, const struct stor_hold_extent *e)
{
	char list[160], t[40];

	if (e->ngone) {
		ranges(e->gone, e->ngone, list, sizeof(list));
		fprintf(out, "      gone: seqs %s (%" PRIu64 " records deleted between the segments kept; the window's "
		        "records among them are lost)\n", list, e->gone_records);
	}
	if (e->missing_before_seq)
		fprintf(out, "      gone: the window before %s (the oldest record on disk is seq %" PRIu64 "; older ones "
		        "were deleted)\n", basic_utc_text(e->missing_before_ns, 3, BASIC_UTC_SPACE, t, sizeof(t)), e->missing_before_seq);
}

static void print_hold(FILE *out, const struct stor_hold *h, const struct stor_hold_extent *e, int64_t now)
{
	char t[40], pre[16], post[16], exp[48], recs[160], tmp[40];

	span(h->t_ns - h->from_ns, pre, sizeof(pre));
	span(h->to_ns - h->t_ns, post, sizeof(post));
	if (!h->expiry_ns)
		snprintf(exp, sizeof(exp), "at release");
	else
		snprintf(exp, sizeof(exp), "%s%s", basic_utc_text(h->expiry_ns, 3, BASIC_UTC_SPACE, tmp, sizeof(tmp)),
		         h->expiry_ns <= now ? " (ended)" : "");
	if (e->nranges)
		ranges(e->range, e->nranges, recs, sizeof(recs));
	else
		snprintf(recs, sizeof(recs), "none on disk");
	fprintf(out, "%-5" PRIu32 " %-20s %-24s -%s +%-6s %-23s %8" PRIu32 " %12" PRIu64 "  %s\n", h->id, h->trigger,
	        basic_utc_text(h->t_ns, 3, BASIC_UTC_SPACE, t, sizeof(t)), pre, post, recs, e->segments, e->bytes, exp);
	print_gone(out, e);
}

int cli_hold_list(const char *dir, FILE *out, FILE *err)
{
	struct stor_holds *h = malloc(sizeof(*h));
	struct stor_hold_extent *ext = NULL;
	unsigned line = 0;
	int r;

	if (!h)
		return rpt_fail(err, "hold", "out of memory");
	r = stor_holds_read(dir, h, &line);
	if (r == -EBADMSG) {
		free(h);
		return cli_hold_damaged(err, dir, line);
	}
	if (r == 0 && h->n)
		ext = calloc(h->n, sizeof(*ext));
	if (r == 0 && h->n)
		r = ext ? stor_hold_extents(dir, h, ext) : -ENOMEM;
	if (r < 0) {
		fprintf(err, "railmon hold: %s: %s\n", dir, strerror(-r));
		free(ext);
		free(h);
		return 1;
	}
	if (!h->n)
		fprintf(out, "%s: no holds\n", dir);
	else
		fprintf(out, "%-5s %-20s %-24s %-13s %-23s %8s %12s  %s\n", "id", "trigger", "fired (UTC)", "window",
		        "records", "segments", "bytes", "expires");
	for (size_t i = 0; i < h->n; i++)
		print_hold(out, &h->h[i], &ext[i], basic_realtime_ns());
	free(ext);
	free(h);
	return 0;
}
