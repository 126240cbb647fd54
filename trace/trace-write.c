/* SPDX-License-Identifier: MIT */
/*
 * trace-write.c - Vector ASC and BLF writers (trace-write.h).  The layouts
 * are those asc.c and blf.c read (see there; BLF's numbers are spec.h's,
 * for both), and python-can's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "basic/byteorder.h"
#include "spec.h"
#include "trace-write.h"

#define BLF_HEADER_SIZE 144
#define BLF_CONTAINER 131072 /* uncompressed bytes per container, as Vector's tools */
#define BLF_OBJ_HEADER 32    /* base + version 1 header */

struct trace_writer {
	FILE *out;
	enum trace_write_format fmt;
	bool started;
	int64_t start_ns;     /* first frame, cut to the ms */
	int64_t last_ns;      /* BLF: the stop time */
	bool failed;
	/* BLF */
	uint8_t *buf;         /* objects of the container being filled */
	size_t fill;
	uint8_t *zbuf;
	uLong zcap;
	uint64_t objects, uncompressed;
};

int trace_write_format_parse(const char *name, enum trace_write_format *ret_fmt)
{
	if (!name || !ret_fmt)
		return -EINVAL;
	if (!strcmp(name, "asc"))
		*ret_fmt = TRACE_WRITE_ASC;
	else if (!strcmp(name, "blf"))
		*ret_fmt = TRACE_WRITE_BLF;
	else
		return -EINVAL;
	return 0;
}

int trace_writer_new(FILE *out, enum trace_write_format fmt, trace_writer_t **ret_w)
{
	trace_writer_t *w;

	if (!out || !ret_w || (fmt != TRACE_WRITE_ASC && fmt != TRACE_WRITE_BLF))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->out = out;
	w->fmt = fmt;
	if (fmt == TRACE_WRITE_BLF) {
		w->zcap = compressBound(BLF_CONTAINER);
		w->buf = malloc(BLF_CONTAINER);
		w->zbuf = malloc(w->zcap);
		if (!w->buf || !w->zbuf) {
			free(w->buf);
			free(w->zbuf);
			free(w);
			return -ENOMEM;
		}
	}
	*ret_w = w;
	return 0;
}

static bool local_tm(int64_t t_ns, struct tm *tm)
{
	time_t t = (time_t)(t_ns / 1000000000);

	return localtime_r(&t, tm) != NULL;
}

/* ---- ASC ---- */

/* "Thu Dec 03 03:30:00.250 pm 2026", as CANoe writes it (English names) */
static void asc_date(FILE *out, int64_t t_ns)
{
	static const char *const days[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const months[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
	                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct tm tm;

	if (!local_tm(t_ns, &tm))
		tm = (struct tm){ .tm_year = 70, .tm_mday = 1 };
	fprintf(out, "%s %s %02d %02d:%02d:%02d.%03d %s %d", days[tm.tm_wday % 7], months[tm.tm_mon % 12], tm.tm_mday,
	        tm.tm_hour % 12 ? tm.tm_hour % 12 : 12, tm.tm_min, tm.tm_sec, (int)(t_ns / 1000000 % 1000),
	        tm.tm_hour < 12 ? "am" : "pm", tm.tm_year + 1900);
}

static void asc_header(trace_writer_t *w)
{
	fputs("date ", w->out);
	asc_date(w->out, w->start_ns);
	fputs("\nbase hex  timestamps absolute\ninternal events logged\n// version 13.0.0\n"
	      "// written by railmon export\nBegin Triggerblock ", w->out);
	asc_date(w->out, w->start_ns);
	fputs("\n   0.000000 Start of measurement\n", w->out);
}

static void asc_frame(trace_writer_t *w, const struct acq_item *it, int64_t rel)
{
	const struct acq_can *c = &it->can;
	unsigned ch = it->bus + 1u;
	const char *dir = (c->flags & ACQ_CAN_TX) ? "Tx" : "Rx";
	char id[16];

	fprintf(w->out, "%4" PRId64 ".%06" PRId64 " ", rel / 1000000000, rel / 1000 % 1000000);
	if (c->flags & ACQ_CAN_ERR) {
		fprintf(w->out, "%u  ErrorFrame\n", ch);
		return;
	}
	snprintf(id, sizeof(id), "%X%s", c->id, (c->flags & ACQ_CAN_EXT) ? "x" : "");
	if (c->flags & ACQ_CAN_FD) {
		static const uint8_t dlc_of[65] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11,
			12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14,
			14, 14, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15 };
		unsigned flags = TRACE_BLF_FD64_EDL | ((c->flags & ACQ_CAN_BRS) ? TRACE_BLF_FD64_BRS : 0) |
		                 ((c->flags & ACQ_CAN_ESI) ? TRACE_BLF_FD64_ESI : 0);

		fprintf(w->out, "CANFD %3u %-4s %8s %32s %d %d %x %2u", ch, dir, id, "", !!(c->flags & ACQ_CAN_BRS),
		        !!(c->flags & ACQ_CAN_ESI), dlc_of[c->len], c->len);
		for (unsigned i = 0; i < c->len; i++)
			fprintf(w->out, " %02X", c->data[i]);
		fprintf(w->out, " %8d %4d %8X %8d %8d %8d %8d %8d\n", 0, 0, flags, 0, 0, 0, 0, 0);
		return;
	}
	fprintf(w->out, "%u  %-15s %-4s %s %x", ch, id, dir, (c->flags & ACQ_CAN_RTR) ? "r" : "d", c->len);
	for (unsigned i = 0; !(c->flags & ACQ_CAN_RTR) && i < c->len; i++)
		fprintf(w->out, " %02X", c->data[i]);
	fputc('\n', w->out);
}

/* ---- BLF ---- */

static void systemtime(uint8_t *p, int64_t t_ns)
{
	struct tm tm;

	if (t_ns <= 0 || !local_tm(t_ns, &tm))
		return; /* zeros: no time */
	basic_put_le16(p, (uint16_t)(tm.tm_year + 1900));
	basic_put_le16(p + 2, (uint16_t)(tm.tm_mon + 1));
	basic_put_le16(p + 4, (uint16_t)tm.tm_wday);
	basic_put_le16(p + 6, (uint16_t)tm.tm_mday);
	basic_put_le16(p + 8, (uint16_t)tm.tm_hour);
	basic_put_le16(p + 10, (uint16_t)tm.tm_min);
	basic_put_le16(p + 12, (uint16_t)tm.tm_sec);
	basic_put_le16(p + 14, (uint16_t)(t_ns / 1000000 % 1000));
}

static void blf_header(trace_writer_t *w, uint64_t file_size)
{
	uint8_t h[BLF_HEADER_SIZE] = { 'L', 'O', 'G', 'G' };
	static const uint8_t app[8] = { 5, 0, 0, 0, 2, 6, 8, 1 }; /* application, BL version: python-can's */

	basic_put_le32(h + 4, BLF_HEADER_SIZE);
	memcpy(h + 8, app, sizeof(app));
	basic_put_le64(h + 16, file_size);
	basic_put_le64(h + 24, w->uncompressed + BLF_HEADER_SIZE);
	basic_put_le32(h + 32, (uint32_t)w->objects);
	systemtime(h + 40, w->start_ns);
	if (file_size)
		systemtime(h + 56, w->last_ns);
	fwrite(h, 1, sizeof(h), w->out);
}

static int blf_flush(trace_writer_t *w)
{
	uint8_t h[32] = { 'L', 'O', 'B', 'J' }, pad[4] = { 0 };
	uLongf zlen = w->zcap;
	uint32_t size;

	if (w->fill == 0)
		return 0;
	if (compress2(w->zbuf, &zlen, w->buf, w->fill, Z_DEFAULT_COMPRESSION) != Z_OK)
		return -EIO;
	size = (uint32_t)(sizeof(h) + zlen);
	basic_put_le16(h + 4, 16);
	basic_put_le16(h + 6, 1);
	basic_put_le32(h + 8, size);
	basic_put_le32(h + 12, TRACE_BLF_LOG_CONTAINER);
	basic_put_le16(h + 16, 2); /* zlib */
	basic_put_le32(h + 24, (uint32_t)w->fill);
	fwrite(h, 1, sizeof(h), w->out);
	fwrite(w->zbuf, 1, zlen, w->out);
	fwrite(pad, 1, size % 4, w->out);
	w->uncompressed += sizeof(h) + w->fill;
	w->fill = 0;
	return ferror(w->out) ? -EIO : 0;
}

/* The object body of a frame into b; its type in *ret_type, its size returned. */
static size_t blf_body(const struct acq_can *c, unsigned ch, uint8_t *b, uint32_t *ret_type)
{
	uint32_t id = c->id | ((c->flags & ACQ_CAN_EXT) ? TRACE_BLF_ID_EXT : 0);
	uint8_t flags = (uint8_t)(((c->flags & ACQ_CAN_TX) ? TRACE_BLF_MSG_TX : 0) |
	                          ((c->flags & ACQ_CAN_RTR) ? TRACE_BLF_MSG_RTR : 0));

	if (c->flags & ACQ_CAN_ERR) {
		memset(b, 0, 32);
		basic_put_le16(b, (uint16_t)ch);
		*ret_type = TRACE_BLF_CAN_ERROR_EXT;
		return 32;
	}
	if (c->flags & ACQ_CAN_FD) {
		static const uint8_t dlc_of[65] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11,
			11, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14,
			14, 14, 14, 14, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15 };

		memset(b, 0, 84);
		basic_put_le16(b, (uint16_t)ch);
		b[2] = flags;
		b[3] = dlc_of[c->len];
		basic_put_le32(b + 4, id);
		b[13] = (uint8_t)(TRACE_BLF_FD_EDL | ((c->flags & ACQ_CAN_BRS) ? TRACE_BLF_FD_BRS : 0) |
		                  ((c->flags & ACQ_CAN_ESI) ? TRACE_BLF_FD_ESI : 0));
		b[14] = c->len;
		memcpy(b + 20, c->data, c->len);
		*ret_type = TRACE_BLF_CAN_FD_MESSAGE;
		return 84;
	}
	memset(b, 0, 16);
	basic_put_le16(b, (uint16_t)ch);
	b[2] = flags;
	b[3] = c->len;
	basic_put_le32(b + 4, id);
	if (!(c->flags & ACQ_CAN_RTR))
		memcpy(b + 8, c->data, c->len);
	*ret_type = TRACE_BLF_CAN_MESSAGE;
	return 16;
}

static int blf_frame(trace_writer_t *w, const struct acq_item *it, int64_t rel)
{
	uint8_t obj[BLF_OBJ_HEADER + 84] = { 'L', 'O', 'B', 'J' };
	uint32_t type;
	size_t body = blf_body(&it->can, it->bus + 1u, obj + BLF_OBJ_HEADER, &type);
	size_t size = BLF_OBJ_HEADER + body;
	int r;

	basic_put_le16(obj + 4, BLF_OBJ_HEADER);
	basic_put_le16(obj + 6, 1);
	basic_put_le32(obj + 8, (uint32_t)size);
	basic_put_le32(obj + 12, type);
	basic_put_le32(obj + 16, 2); /* stamps in ns */
	basic_put_le64(obj + 24, (uint64_t)rel);
	if (w->fill + size > BLF_CONTAINER && (r = blf_flush(w)) < 0)
		return r;
	memcpy(w->buf + w->fill, obj, size); /* bodies are multiples of 4: no padding */
	w->fill += size;
	w->objects++;
	w->last_ns = it->t_ns;
	return 0;
}

static bool frame_ok(const struct acq_can *c)
{
	if (c->len > ((c->flags & ACQ_CAN_FD) ? 64 : 8) || c->id > ((c->flags & ACQ_CAN_EXT) ? TRACE_CD_EFF_MASK : TRACE_CD_SFF_MASK))
		return false;
	if ((c->flags & ACQ_CAN_FD) && (c->flags & ACQ_CAN_RTR))
		return false;
	return !(c->flags & ACQ_CAN_FD) || c->len <= 8 || c->len == 12 || c->len == 16 || c->len == 20 ||
	       c->len == 24 || c->len == 32 || c->len == 48 || c->len == 64;
}

int trace_writer_frame(trace_writer_t *w, const struct acq_item *it)
{
	int64_t rel;

	if (!w || !it || it->kind != ACQ_ITEM_CAN || !frame_ok(&it->can))
		return -EINVAL;
	if (!w->started) {
		w->started = true;
		w->start_ns = it->t_ns - it->t_ns % 1000000;
		if (w->fmt == TRACE_WRITE_ASC)
			asc_header(w);
		else
			blf_header(w, 0); /* rewritten at close where the output seeks */
	}
	rel = it->t_ns > w->start_ns ? it->t_ns - w->start_ns : 0;
	if (w->fmt == TRACE_WRITE_ASC)
		asc_frame(w, it, rel);
	else if (blf_frame(w, it, rel) < 0)
		w->failed = true;
	return ferror(w->out) || w->failed ? -EIO : 0;
}

int trace_writer_close(trace_writer_t *w)
{
	int r = 0;

	if (!w)
		return 0;
	if (w->fmt == TRACE_WRITE_ASC) {
		if (!w->started)
			asc_header(w); /* no frame: an empty measurement at the epoch */
		fputs("End TriggerBlock\n", w->out);
	} else {
		if (!w->started)
			blf_header(w, 0);
		r = blf_flush(w);
		if (r == 0) {
			long size = ftell(w->out);

			/* sizes, count and stop time, where the output can go back */
			if (size > 0 && fseek(w->out, 0, SEEK_SET) == 0) {
				blf_header(w, (uint64_t)size);
				if (fseek(w->out, 0, SEEK_END) != 0)
					r = -EIO;
			}
		}
	}
	if (fflush(w->out) != 0 || ferror(w->out) || w->failed)
		r = -EIO;
	free(w->buf);
	free(w->zbuf);
	free(w);
	return r;
}
