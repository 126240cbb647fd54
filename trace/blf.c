/* SPDX-License-Identifier: MIT */
/*
 * blf.c - Vector BLF (binary logging format) to frames (trace-fmt.h).
 * One job, the reader (containers, objects, damage), so one file; the
 * writer is trace-write.c's, the numbers spec.h's.
 *
 * No official specification exists; the layout is the one of Toby
 * Lorenz's vector_blf library, which python-can's reader and writer follow
 * too.  Little-endian throughout:
 *   file header   "LOGG", u32 header size (144), ..., at 40 the start time
 *                 as a SYSTEMTIME (u16 year, month, weekday, day, hour,
 *                 minute, second, ms; local time)
 *   object        "LOBJ", u16 header size, u16 header version, u32 object
 *                 size, u32 type; version 1 and 2 both have u32 flags at
 *                 16 (1: stamps in 10 us, 2: in ns) and the u64 stamp at
 *                 24, counted from the file's start time
 *   container     (type 10) object whose body is u16 method (0 stored,
 *                 2 zlib), 6 pad, u32 uncompressed size, 4 pad, data; the
 *                 concatenated data of the containers is a stream of
 *                 objects, which may span two containers; objects are
 *                 padded (a file's containers by size % 4 bytes, objects
 *                 inside by up to 7), so the next "LOBJ" is looked for
 *                 within 8 bytes
 * Frames: CAN_MESSAGE (1) and CAN_MESSAGE2 (86), CAN_FD_MESSAGE (100),
 * CAN_FD_MESSAGE_64 (101), CAN_ERROR (2), CAN_ERROR_EXT (73) and
 * CAN_FD_ERROR_64 (104) as error frames.  Other objects (markers,
 * statistics, other buses, types no one knows) are skipped before their
 * header is looked at, and counted by type (trace_blf_skipped).
 *
 * Damage is said (trace_blf_why) and read past: a container whose zlib data
 * is bad is skipped and the objects resume at the next "LOBJ"; a file
 * that ends inside a container or an object, or whose next object has no
 * signature, ends there.  Buffers and the inflate state are allocated in
 * trace_blf_new; reading never allocates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "basic/byteorder.h"
#include "spec.h"
#include "trace-fmt.h"

#define BLF_FILE_HEADER_MIN 72
#define BLF_FILE_HEADER_MAX 4096
#define BLF_OBJ_BASE 16
#define BLF_CHUNK (64 * 1024)
#define BLF_UBUF (2 * TRACE_BLF_CONTAINER_MAX) /* a spanning object's head + a container */

enum { NEED_MORE = 2 }; /* beside TRACE_SKIP/FRAME: next container please */

struct trace_blf {
	z_stream zs;
	uint8_t *cbuf;          /* compressed bytes of the container being read */
	uint8_t *ubuf;          /* object stream: [upos, ufill) not yet parsed */
	size_t upos, ufill;
	uint64_t off;           /* file offset of the next byte fn gives */
	uint64_t cont_off;      /* file offset of the container being parsed */
	int64_t start_ns;
	bool header_done;
	bool eof;               /* nothing more comes from the file */
	bool resync;            /* after damage: look for the next "LOBJ" anywhere */
	bool cut;               /* the file ended inside a container: what came of
	                           it is kept and read, the cut said once */
	char why[96];
	uint64_t why_off;
	struct trace_blf_skip skip[TRACE_BLF_SKIP_TYPES]; /* this pass's */
	size_t nskip;
	uint64_t skip_other;    /* skipped objects of types beyond skip[] */
};

int trace_blf_new(struct trace_blf **ret_blf)
{
	struct trace_blf *b;

	if (!ret_blf)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->cbuf = malloc(BLF_CHUNK);
	b->ubuf = malloc(BLF_UBUF);
	if (!b->cbuf || !b->ubuf || inflateInit(&b->zs) != Z_OK) {
		free(b->cbuf);
		free(b->ubuf);
		free(b);
		return -ENOMEM;
	}
	*ret_blf = b;
	return 0;
}

void trace_blf_free(struct trace_blf *blf)
{
	if (!blf)
		return;
	inflateEnd(&blf->zs);
	free(blf->cbuf);
	free(blf->ubuf);
	free(blf);
}

void trace_blf_reset(struct trace_blf *blf)
{
	blf->upos = blf->ufill = 0;
	blf->off = blf->cont_off = 0;
	blf->header_done = blf->eof = blf->resync = blf->cut = false;
	blf->start_ns = 0;
	blf->nskip = 0;
	blf->skip_other = 0;
}

const char *trace_blf_type_name(uint32_t type)
{
	/* the types Vector's tools write beside CAN frames most (vector_blf's
	   ObjectType list); the others are said by number */
	static const struct {
		uint32_t type;
		const char *name;
	} names[] = {
		{ 3, "CAN overload frame" }, { 4, "CAN driver statistics" }, { 5, "application trigger" },
		{ 6, "environment variable" }, { 11, "LIN message" }, { 31, "CAN driver error" },
		{ 44, "CAN driver sync" }, { 57, "LIN message" }, { 65, "text" }, { 71, "Ethernet frame" },
		{ 72, "system variable" }, { 74, "CAN driver error" }, { 96, "global marker" },
		{ 115, "restore point" }, { 120, "Ethernet frame" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].type == type)
			return names[i].name;
	return NULL;
}

int trace_blf_skipped(const struct trace_blf *blf, size_t i, struct trace_blf_skip *ret_skip)
{
	if (!blf || !ret_skip)
		return -EINVAL;
	if (i < blf->nskip) {
		*ret_skip = blf->skip[i];
		return 0;
	}
	if (i == blf->nskip && blf->skip_other) {
		*ret_skip = (struct trace_blf_skip){ .other = true, .count = blf->skip_other };
		return 0;
	}
	return -ENOENT;
}

const char *trace_blf_why(const struct trace_blf *blf, uint64_t *ret_off)
{
	if (ret_off)
		*ret_off = blf->why_off;
	return blf->why;
}

static int bad(struct trace_blf *b, uint64_t off, const char *why)
{
	snprintf(b->why, sizeof(b->why), "%s", why);
	b->why_off = off;
	return -EBADMSG;
}

/* Up to len bytes (fewer only at the end of the file), or -errno. */
static ssize_t read_full(struct trace_blf *b, trace_blf_read_fn fn, void *ctx, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = fn(ctx, (uint8_t *)buf + got, len - got);

		if (n < 0)
			return n;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	b->off += got;
	return (ssize_t)got;
}

/* Read and drop len bytes; -EBADMSG if the file ends first. */
static int skip(struct trace_blf *b, trace_blf_read_fn fn, void *ctx, uint64_t len, uint64_t at, const char *what)
{
	while (len > 0) {
		size_t n = len > BLF_CHUNK ? BLF_CHUNK : (size_t)len;
		ssize_t got = read_full(b, fn, ctx, b->cbuf, n);

		if (got < 0)
			return (int)got;
		if ((size_t)got < n) {
			b->eof = true;
			return bad(b, at, what);
		}
		len -= n;
	}
	return 0;
}

static int read_header(struct trace_blf *b, trace_blf_read_fn fn, void *ctx)
{
	uint8_t h[BLF_FILE_HEADER_MIN];
	ssize_t n = read_full(b, fn, ctx, h, sizeof(h));
	uint32_t size;

	if (n < 0)
		return (int)n;
	b->header_done = true;
	if ((size_t)n < sizeof(h) || memcmp(h, "LOGG", 4) != 0) {
		b->eof = true;
		return bad(b, 0, (size_t)n < sizeof(h) ? "truncated file header" : "no LOGG signature");
	}
	size = basic_get_le32(h + 4);
	if (size < BLF_FILE_HEADER_MIN || size > BLF_FILE_HEADER_MAX) {
		b->eof = true;
		return bad(b, 4, "file header size out of range");
	}
	if (basic_get_le16(h + 40) >= 1970) /* SYSTEMTIME of the start; 0: not said */
		b->start_ns = trace_local_ns(basic_get_le16(h + 40), basic_get_le16(h + 42), basic_get_le16(h + 46), basic_get_le16(h + 48),
		                                 basic_get_le16(h + 50), basic_get_le16(h + 52), basic_get_le16(h + 54) % 1000);
	return skip(b, fn, ctx, size - BLF_FILE_HEADER_MIN, 0, "truncated file header");
}

/* Inflate clen bytes of the file into ubuf + ufill, exactly usize out. */
static int inflate_container(struct trace_blf *b, trace_blf_read_fn fn, void *ctx, uint64_t clen, size_t usize)
{
	int zr = Z_OK;

	inflateReset(&b->zs);
	b->zs.next_out = b->ubuf + b->ufill;
	b->zs.avail_out = (uInt)usize;
	while (clen > 0) {
		size_t n = clen > BLF_CHUNK ? BLF_CHUNK : (size_t)clen;
		ssize_t got = read_full(b, fn, ctx, b->cbuf, n);

		if (got < 0)
			return (int)got;
		if ((size_t)got < n) {
			/* a file cut while it was written (power lost): the objects
			   whole in what came are read, as python-can does */
			if (zr == Z_OK && got > 0) {
				b->zs.next_in = b->cbuf;
				b->zs.avail_in = (uInt)got;
				zr = inflate(&b->zs, Z_NO_FLUSH);
			}
			if (zr == Z_OK || zr == Z_BUF_ERROR || zr == Z_STREAM_END)
				b->ufill += usize - b->zs.avail_out;
			b->eof = b->cut = true;
			return bad(b, b->cont_off, "file ends inside a container");
		}
		clen -= n;
		if (zr != Z_OK)
			continue; /* past the damage: read the rest to stay in step */
		b->zs.next_in = b->cbuf;
		b->zs.avail_in = (uInt)n;
		zr = inflate(&b->zs, Z_NO_FLUSH);
		if (zr == Z_BUF_ERROR && b->zs.avail_out == 0)
			zr = Z_DATA_ERROR; /* more data than the size it declares */
	}
	if (zr != Z_STREAM_END || b->zs.avail_out != 0)
		return bad(b, b->cont_off, "bad zlib data in container");
	b->ufill += usize;
	return 0;
}

/* The body of the container whose 16-byte header is hdr, at cont_off. */
static int read_container(struct trace_blf *b, trace_blf_read_fn fn, void *ctx, uint64_t payload)
{
	uint8_t ch[16];
	ssize_t n;
	uint32_t method, usize;

	if (payload < sizeof(ch)) {
		int r = skip(b, fn, ctx, payload, b->cont_off, "file ends inside a container");

		return r < 0 ? r : bad(b, b->cont_off, "container too small");
	}
	n = read_full(b, fn, ctx, ch, sizeof(ch));
	if (n < 0)
		return (int)n;
	if ((size_t)n < sizeof(ch)) {
		b->eof = true;
		return bad(b, b->cont_off, "file ends inside a container");
	}
	payload -= sizeof(ch);
	method = basic_get_le16(ch);
	usize = basic_get_le32(ch + 8);
	if (usize > TRACE_BLF_CONTAINER_MAX || (method == 0 && payload != usize) || (method != 0 && method != 2)) {
		int r = skip(b, fn, ctx, payload, b->cont_off, "file ends inside a container");

		return r < 0 ? r : bad(b, b->cont_off, usize > TRACE_BLF_CONTAINER_MAX ? "container larger than 1 MiB" :
		                                       method == 0 ? "stored container size mismatch" :
		                                                     "unknown compression method");
	}
	if (method == 2)
		return inflate_container(b, fn, ctx, payload, usize);
	n = read_full(b, fn, ctx, b->ubuf + b->ufill, usize);
	if (n < 0)
		return (int)n;
	if ((size_t)n < usize) {
		b->ufill += (size_t)n; /* read what came, as of a cut zlib container */
		b->eof = b->cut = true;
		return bad(b, b->cont_off, "file ends inside a container");
	}
	b->ufill += usize;
	return 0;
}

/* The next object of the file into ubuf: 1 loaded, 0 at the end. */
static int load_next(struct trace_blf *b, trace_blf_read_fn fn, void *ctx)
{
	uint8_t h[BLF_OBJ_BASE];
	uint32_t size, type;
	ssize_t n;
	int r;

	memmove(b->ubuf, b->ubuf + b->upos, b->ufill - b->upos);
	b->ufill -= b->upos;
	b->upos = 0;
	b->cont_off = b->off;
	n = read_full(b, fn, ctx, h, sizeof(h));
	if (n <= 0)
		return (int)n;
	if ((size_t)n < sizeof(h) || memcmp(h, "LOBJ", 4) != 0) {
		b->eof = true;
		return bad(b, b->cont_off, (size_t)n < sizeof(h) ? "file ends inside an object header" :
		                                                   "no LOBJ signature: the file ends here");
	}
	size = basic_get_le32(h + 8);
	type = basic_get_le32(h + 12);
	if (size < BLF_OBJ_BASE) {
		b->eof = true;
		return bad(b, b->cont_off, "object size smaller than its header");
	}
	if (type == TRACE_BLF_LOG_CONTAINER) {
		r = read_container(b, fn, ctx, size - BLF_OBJ_BASE);
	} else if (size > TRACE_BLF_CONTAINER_MAX) {
		r = skip(b, fn, ctx, size - BLF_OBJ_BASE, b->cont_off, "file ends inside an object");
		r = r < 0 ? r : bad(b, b->cont_off, "object larger than 1 MiB");
	} else {
		/* an object outside any container: parse it like one inside */
		memcpy(b->ubuf + b->ufill, h, sizeof(h));
		n = read_full(b, fn, ctx, b->ubuf + b->ufill + sizeof(h), size - BLF_OBJ_BASE);
		if (n < 0)
			return (int)n;
		if ((size_t)n < size - BLF_OBJ_BASE) {
			b->eof = true;
			return bad(b, b->cont_off, "file ends inside an object");
		}
		b->ufill += size;
		r = 0;
	}
	if ((r == 0 || (r == -EBADMSG && !b->eof)) && size % 4) {
		/* after a skipped container too; padding the last object lacks is no loss */
		n = read_full(b, fn, ctx, h, size % 4);
		if (n < 0)
			r = (int)n;
	}
	if (r == -EBADMSG && !b->cut) {
		b->resync = true;
		b->upos = b->ufill; /* what spanned into the damage is lost with it */
	}
	return r < 0 ? r : 1;
}

/* Find the next "LOBJ": within 8 bytes (padding), anywhere after damage. */
static int find_object(struct trace_blf *b)
{
	for (;;) {
		size_t avail = b->ufill - b->upos, zeros = 0;
		const uint8_t *p = b->ubuf + b->upos;
		size_t lim = b->resync ? avail : (avail < 12 ? avail : 12);

		for (size_t i = 0; i + 4 <= lim; i++)
			if (memcmp(p + i, "LOBJ", 4) == 0) {
				b->upos += i;
				return 0;
			}
		if (b->resync || avail < 12) {
			if (avail > 3)
				b->upos = b->ufill - 3; /* a signature may span into the next container */
			return NEED_MORE;
		}
		/* zeros where an object should start: fill after a container's
		   last object (vector_blf's converter writes 27 bytes of it), not
		   damage; look again after them */
		while (zeros < avail && p[zeros] == 0)
			zeros++;
		if (zeros < lim)
			break;
		b->upos += zeros;
		if (zeros == avail)
			return NEED_MORE;
	}
	b->resync = true;
	b->upos += 4;
	return bad(b, b->cont_off, "no object where one should start in container");
}

/* id with the BLF extended bit to acq_can.  An id above 0x7ff without the
   bit (vector_blf's and python-can's sample files hold such) needs 29 bits:
   no standard frame can carry it, so it is taken as extended, which the
   rest of railmon (export, DBC, candump) can hold; python-can gives it as
   a standard id above 0x7ff. */
static void set_id(struct acq_can *can, uint32_t raw)
{
	can->id = raw & 0x1fffffffu;
	if ((raw & TRACE_BLF_ID_EXT) || can->id > 0x7ff)
		can->flags |= ACQ_CAN_EXT;
}

/* The length of an FD object's frame (a remote frame's from its DLC); the
   caller copies the data. */
static int fd_finish(struct trace_blf *b, struct acq_can *can, unsigned dlc, unsigned valid, bool fd)
{
	if (can->flags & ACQ_CAN_RTR) {
		can->len = (uint8_t)(dlc > 8 ? 8 : dlc);
		return TRACE_FRAME;
	}
	if (fd ? !trace_fd_len_ok(valid) : valid > 8)
		return bad(b, b->cont_off, fd ? "CAN FD object: data length no DLC gives" :
		                                 "classic frame in a CAN FD object with more than 8 data bytes");
	can->len = (uint8_t)valid;
	return TRACE_FRAME;
}

/* CAN_MESSAGE, CAN_MESSAGE2: u16 channel, u8 flags, u8 dlc, u32 id, 8 data
   (CAN_MESSAGE2 then frame length, bit count, reserved) */
static int decode_msg(struct trace_blf *b, const uint8_t *p, size_t len, struct acq_can *can, unsigned *ret_chan)
{
	if (len < 16)
		return bad(b, b->cont_off, "CAN message object shorter than its fields");
	*ret_chan = basic_get_le16(p);
	can->flags |= (p[2] & TRACE_BLF_MSG_TX ? ACQ_CAN_TX : 0) | (p[2] & TRACE_BLF_MSG_RTR ? ACQ_CAN_RTR : 0);
	set_id(can, basic_get_le32(p + 4));
	/* a DLC above 8 (9..15 say 8 bytes in classic CAN) cannot fail: the
	   hot path of most files, kept short */
	can->len = (uint8_t)(p[3] > 8 ? 8 : p[3]);
	if (!(can->flags & ACQ_CAN_RTR))
		memcpy(can->data, p + 8, can->len);
	return TRACE_FRAME;
}

/* CAN_FD_MESSAGE: u16 channel, u8 flags, u8 dlc, u32 id, u32 frame length,
   u8 bit count, u8 FD flags, u8 valid bytes, 5 pad, 64 data, 4 reserved.
   The data length is the valid bytes, for a classic frame too (what
   python-can and vector_blf read); the DLC only a remote frame's length. */
static int decode_fd(struct trace_blf *b, const uint8_t *p, size_t len, struct acq_can *can, unsigned *ret_chan)
{
	bool fd;
	unsigned valid;

	if (len < 20)
		return bad(b, b->cont_off, "CAN FD message object shorter than its fields");
	fd = p[13] & TRACE_BLF_FD_EDL;
	valid = p[14];
	if (valid > 64 || len < 20 + valid)
		return bad(b, b->cont_off, "CAN FD message object: more valid bytes than it holds");
	*ret_chan = basic_get_le16(p);
	can->flags |= p[2] & TRACE_BLF_MSG_TX ? ACQ_CAN_TX : 0;
	/* the remote bit is only CAN's: an FD frame has none (Vector's docs) */
	if (fd)
		can->flags |= ACQ_CAN_FD | (p[13] & TRACE_BLF_FD_BRS ? ACQ_CAN_BRS : 0) | (p[13] & TRACE_BLF_FD_ESI ? ACQ_CAN_ESI : 0);
	else if (p[2] & TRACE_BLF_MSG_RTR)
		can->flags |= ACQ_CAN_RTR;
	set_id(can, basic_get_le32(p + 4));
	if (fd_finish(b, can, p[3], valid, fd) < 0)
		return -EBADMSG;
	if (!(can->flags & ACQ_CAN_RTR))
		memcpy(can->data, p + 20, can->len);
	return TRACE_FRAME;
}

/* CAN_FD_MESSAGE_64: u8 channel, u8 dlc, u8 valid bytes, u8 tx count,
   u32 id, u32 frame length, u32 flags, 4 x u32 timing, u16 bit count,
   u8 direction, u8 ext data offset, u32 crc, data.  Vector's tools write
   objects whose valid bytes run past the data they hold (python-can issue
   1905: 64 valid, 48 held): the data ends at the ext data offset (from the
   object's start) or the object's end, and CANoe and binlog.dll read the
   bytes missing as 0. */
static int decode_fd64(struct trace_blf *b, const uint8_t *o, size_t hsize, size_t size, struct acq_can *can,
                       unsigned *ret_chan)
{
	const uint8_t *p = o + hsize;
	size_t end, held;
	uint32_t flags;
	bool fd;
	unsigned valid;

	if (size - hsize < 40)
		return bad(b, b->cont_off, "CAN FD 64 object shorter than its fields");
	flags = basic_get_le32(p + 12);
	fd = flags & TRACE_BLF_FD64_EDL;
	valid = p[2];
	if (valid > 64)
		return bad(b, b->cont_off, "CAN FD 64 object: more than 64 valid bytes");
	end = p[35] ? p[35] : size;
	held = end > hsize + 40 ? end - hsize - 40 : 0;
	if (held > size - hsize - 40)
		held = size - hsize - 40;
	if (held > valid)
		held = valid;
	*ret_chan = p[0];
	can->flags |= p[34] ? ACQ_CAN_TX : 0;
	if (fd)
		can->flags |= ACQ_CAN_FD | (flags & TRACE_BLF_FD64_BRS ? ACQ_CAN_BRS : 0) |
		              (flags & TRACE_BLF_FD64_ESI ? ACQ_CAN_ESI : 0);
	else if (flags & TRACE_BLF_FD64_RTR)
		can->flags |= ACQ_CAN_RTR;
	set_id(can, basic_get_le32(p + 4));
	memcpy(can->data, p + 40, held);
	memset(can->data + held, 0, valid - held);
	return fd_finish(b, can, p[1], valid, fd);
}

/* Count an object that is no CAN frame by its type. */
static void count_skip(struct trace_blf *b, uint32_t type)
{
	size_t i;

	for (i = 0; i < b->nskip; i++)
		if (b->skip[i].type == type)
			break;
	if (i == b->nskip) {
		if (b->nskip == TRACE_BLF_SKIP_TYPES) {
			b->skip_other++;
			return;
		}
		b->skip[b->nskip++] = (struct trace_blf_skip){ .type = type };
	}
	b->skip[i].count++;
}

static bool is_can_type(uint32_t type)
{
	switch (type) {
	case TRACE_BLF_CAN_MESSAGE:
	case TRACE_BLF_CAN_ERROR:
	case TRACE_BLF_CAN_ERROR_EXT:
	case TRACE_BLF_CAN_MESSAGE2:
	case TRACE_BLF_CAN_FD_MESSAGE:
	case TRACE_BLF_CAN_FD_MESSAGE_64:
	case TRACE_BLF_CAN_FD_ERROR_64:
		return true;
	default:
		return false;
	}
}

/* the object's stamp as Unix ns; false if out of range */
static bool object_time(const struct trace_blf *b, const uint8_t *o, int64_t *ret_ns)
{
	uint64_t ts = basic_get_le64(o + 24);

	/* at most half of int64's ns after a start in 1970-2116: no overflow */
	if (basic_get_le32(o + 16) == TRACE_BLF_TIME_TEN_MICS) {
		if (ts > (uint64_t)INT64_MAX / 2 / 10000)
			return false;
		ts *= 10000;
	} else if (ts > (uint64_t)INT64_MAX / 2) {
		return false;
	}
	*ret_ns = b->start_ns + (int64_t)ts;
	return true;
}

/* CAN_ERROR (u16 channel), CAN_ERROR_EXT (u16 channel), CAN_FD_ERROR_64
   (u8 channel): an error frame; the objects' error codes are Vector's, not
   SocketCAN's CAN_ERR_* classes, so it is said as a bus error. */
static int decode_error(struct trace_blf *b, uint32_t type, const uint8_t *p, size_t len, struct acq_can *can,
                        unsigned *ret_chan)
{
	if (len < 2)
		return bad(b, b->cont_off, "CAN error object shorter than its channel");
	*ret_chan = type == TRACE_BLF_CAN_FD_ERROR_64 ? p[0] : basic_get_le16(p);
	can->flags = ACQ_CAN_ERR;
	can->id = TRACE_ERR_ID;
	return TRACE_FRAME;
}

/* One whole object at o: a frame, SKIP for other objects, -EBADMSG. */
static int decode_object(struct trace_blf *b, const uint8_t *o, struct acq_item *ret_item, unsigned *ret_chan)
{
	uint16_t hsize = basic_get_le16(o + 4), hver = basic_get_le16(o + 6);
	uint32_t size = basic_get_le32(o + 8), type = basic_get_le32(o + 12);
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	int r;

	if (!is_can_type(type)) {
		/* markers, statistics, other buses: said by type, not damage */
		count_skip(b, type);
		return TRACE_SKIP;
	}
	/* version 1: flags, client index, object version, stamp; version 2:
	   flags, stamp status, reserved, object version, stamp, original stamp;
	   both have the flags at 16 and the stamp at 24 */
	if (hver != 1 && hver != 2)
		return bad(b, b->cont_off, "CAN object with an object header version other than 1 or 2");
	if (hsize < 32 || hsize > size)
		return bad(b, b->cont_off, "CAN object header size out of range");
	if (!object_time(b, o, &it.t_ns))
		return bad(b, b->cont_off, "CAN object time stamp out of range");
	switch (type) {
	case TRACE_BLF_CAN_MESSAGE:
	case TRACE_BLF_CAN_MESSAGE2:
		r = decode_msg(b, o + hsize, size - hsize, &it.can, ret_chan);
		break;
	case TRACE_BLF_CAN_FD_MESSAGE:
		r = decode_fd(b, o + hsize, size - hsize, &it.can, ret_chan);
		break;
	case TRACE_BLF_CAN_FD_MESSAGE_64:
		r = decode_fd64(b, o, hsize, size, &it.can, ret_chan);
		break;
	default:
		r = decode_error(b, type, o + hsize, size - hsize, &it.can, ret_chan);
		break;
	}
	if (r == TRACE_FRAME)
		*ret_item = it;
	return r;
}

/* The next object in ubuf: FRAME, SKIP, NEED_MORE or -EBADMSG. */
static int next_object(struct trace_blf *b, struct acq_item *ret_item, unsigned *ret_chan)
{
	const uint8_t *o;
	uint32_t size;
	int r = find_object(b);

	if (r != 0)
		return r;
	if (b->ufill - b->upos < BLF_OBJ_BASE)
		return NEED_MORE;
	o = b->ubuf + b->upos;
	size = basic_get_le32(o + 8);
	if (size < BLF_OBJ_BASE || size > TRACE_BLF_CONTAINER_MAX) {
		b->resync = true;
		b->upos += 4;
		return bad(b, b->cont_off, "object size out of range in container");
	}
	if (b->ufill - b->upos < size)
		return NEED_MORE; /* it goes on in the next container */
	b->resync = false;
	b->upos += size;
	return decode_object(b, o, ret_item, ret_chan);
}

int trace_blf_next(struct trace_blf *blf, trace_blf_read_fn fn, void *ctx, struct acq_item *ret_item,
                 unsigned *ret_chan)
{
	struct trace_blf *b = blf;
	int r;

	if (!b || !fn || !ret_item || !ret_chan)
		return -EINVAL;
	if (!b->header_done && (r = read_header(b, fn, ctx)) < 0)
		return r;
	for (;;) {
		r = next_object(b, ret_item, ret_chan);
		if (r == TRACE_FRAME || r < 0)
			return r;
		if (r == TRACE_SKIP)
			continue;
		if (b->eof) {
			bool left = false;

			for (size_t i = b->upos; i < b->ufill && !left; i++)
				left = b->ubuf[i] != 0;
			b->upos = b->ufill;
			return left && !b->resync && !b->cut ? bad(b, b->off, "file ends inside an object") : 0;
		}
		r = load_next(b, fn, ctx);
		if (r == 0)
			b->eof = true;
		else if (r < 0)
			return r;
	}
}
