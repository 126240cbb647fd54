/* SPDX-License-Identifier: MIT */
/*
 * logfault.c - messages for what a stor_reader skipped.  Every message names
 * the file (or the hole between two files) and the seq range lost, so an
 * operator can tell a bit flip from a deleted segment and knows what is
 * missing from an export or a replay.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "report/logfault.h"

/* "records 15004..20060", "record 7", "records 15004.. (to the end of the log)",
   or "no record" for an empty range. */
static void range_text(char *buf, size_t len, uint64_t first, uint64_t end)
{
	if (!end)
		snprintf(buf, len, "records %" PRIu64 ".. (to the end of the log)", first);
	else if (end <= first)
		snprintf(buf, len, "no record");
	else if (end == first + 1)
		snprintf(buf, len, "record %" PRIu64, first);
	else
		snprintf(buf, len, "records %" PRIu64 "..%" PRIu64, first, end - 1);
}

/* What stood under a segment's name instead of a readable segment file. */
static void segment_reason(char *buf, size_t len, const struct stor_fault *f)
{
	switch (f->type) {
	case S_IFDIR: snprintf(buf, len, "a directory, not a segment file"); return;
	case S_IFLNK: snprintf(buf, len, "a symbolic link (never followed), not a segment file"); return;
	case S_IFIFO: snprintf(buf, len, "a FIFO, not a segment file"); return;
	case S_IFSOCK: snprintf(buf, len, "a socket, not a segment file"); return;
	case S_IFCHR:
	case S_IFBLK: snprintf(buf, len, "a device node, not a segment file"); return;
	default: break;
	}
	if (f->err == -ENODATA)
		snprintf(buf, len, "empty or shorter than a segment header");
	else if (f->err == -EBADMSG)
		snprintf(buf, len, "no valid segment header");
	else if (f->offset)
		snprintf(buf, len, "%s at offset %" PRIu64, strerror(-f->err), f->offset);
	else
		snprintf(buf, len, "%s", strerror(-f->err));
}

bool rpt_log_fault_print(FILE *out, const char *cmd, const char *dir, const stor_reader_t *r)
{
	char name[32], range[96], why[96];
	struct stor_fault f;
	bool lost;

	if (stor_reader_fault(r, &f) < 0) {
		fprintf(out, "railmon %s: %s: unreadable part of the log skipped\n", cmd, dir);
		return true;
	}
	snprintf(name, sizeof(name), "%020" PRIu64 ".seg", f.segment);
	range_text(range, sizeof(range), f.lost_first, f.lost_end);
	lost = f.lost_end == 0 || f.lost_end > f.lost_first;
	switch (f.kind) {
	case STOR_FAULT_FRAME:
		fprintf(out, "railmon %s: %s/%s: damaged frame at offset %" PRIu64 ": %s lost, resynchronised after it\n",
		        cmd, dir, name, f.offset, range);
		return true; /* bytes were skipped even when no seq was */
	case STOR_FAULT_HEADER_COPY:
		fprintf(out, "railmon %s: %s/%s: header copy at offset %" PRIu64 " damaged, read through the other: "
		        "no record lost\n", cmd, dir, name, f.offset);
		return false;
	case STOR_FAULT_UNSEALED:
		fprintf(out, "railmon %s: %s/%s: closed without a valid seal (offset %" PRIu64 "): its end is not proven; "
		        "%s missing before the next segment\n", cmd, dir, name, f.offset, range);
		return lost;
	case STOR_FAULT_MISNAMED:
		fprintf(out, "railmon %s: %s/%s: its header names another segment (renamed or copied in): skipped, "
		        "%s lost\n", cmd, dir, name, range);
		return true;
	case STOR_FAULT_REPEATED:
		range_text(why, sizeof(why), f.lost_first, f.repeat_end);
		range_text(range, sizeof(range), f.repeat_end, f.lost_end);
		fprintf(out, "railmon %s: %s/%s: the frame at offset %" PRIu64 " repeats %s, already read from "
		        "%020" PRIu64 ".seg (a segment copied or forged in): a seq is never read twice; the frame is "
		        "skipped%s%s\n", cmd, dir, name, f.offset, why, f.other_segment, f.repeat_end < f.lost_end ? ", and with it " : "",
		        f.repeat_end < f.lost_end ? range : "");
		return true;
	case STOR_FAULT_MISSING:
		fprintf(out, "railmon %s: %s: %s missing: no segment file holds them (deleted?) before %s\n", cmd, dir,
		        range, name);
		return true;
	default:
		segment_reason(why, sizeof(why), &f);
		fprintf(out, "railmon %s: %s/%s: %s: skipped, %s lost\n", cmd, dir, name, why, range);
		return true;
	}
}

void rpt_log_undecodable_print(FILE *out, const char *cmd, const char *dir, const struct stor_rec *rec, int err)
{
	char range[96];

	range_text(range, sizeof(range), rec->first_seq, rec->first_seq + rec->count);
	fprintf(out, "railmon %s: %s/%020" PRIu64 ".seg: Batch at offset %" PRIu64 " does not decode (%s): %s skipped\n",
	        cmd, dir, rec->segment, rec->offset, strerror(-err), range);
}

bool rpt_log_tail_print(FILE *out, const char *cmd, const char *dir, stor_reader_t *r)
{
	struct stor_tail t;
	int k = stor_reader_tail(r, &t);

	if (k < 0) {
		fprintf(out, "railmon %s: %s: the end of the newest segment cannot be read: %s\n", cmd, dir,
		        strerror(-k));
		return true;
	}
	if (k == 0 || !t.garbage)
		return false;
	fprintf(out, "railmon %s: %s/%020" PRIu64 ".seg: bytes other than zeros from offset %" PRIu64 ", where "
	        "the last good frame ends at %" PRIu64 " (file size %" PRIu64 "): damage or a write a power cut tore; "
	        "nothing after it was read (railmon verify says more)\n", cmd, dir, t.segment, t.garbage_offset,
	        t.offset, t.size);
	return true;
}
