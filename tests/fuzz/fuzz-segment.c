/* SPDX-License-Identifier: MIT */
/*
 * fuzz-segment.c - libFuzzer target for the segment reader: the input is a
 * segment file image, read through an in-memory stor_dev_ops.  If the
 * first byte is odd, the header copies' CRCs are fixed up first, so the
 * fuzzer also reaches the frame walking and resynchronisation with any
 * header field values.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"
#include "stor-private.h"

struct mem {
	const uint8_t *data;
	size_t size;
};

static ssize_t mem_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
	struct mem *m = ctx;

	if (off < 0)
		return -EINVAL;
	if ((size_t)off >= m->size)
		return 0;
	if (len > m->size - (size_t)off)
		len = m->size - (size_t)off;
	memcpy(buf, m->data + off, len);
	return (ssize_t)len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stor_dev_ops ops = { .pread = mem_pread };
	struct stor_cursor c;
	struct stor_frame f;
	const uint8_t *p;
	uint64_t off, next = 0;
	uint8_t *img;
	int r, guard = 0;
	struct mem m;
	volatile unsigned sink = 0;

	if (size < 1)
		return 0;
	img = malloc(size - 1 ? size - 1 : 1);
	if (!img)
		return 0;
	memcpy(img, data + 1, size - 1);
	if ((data[0] & 1) && size - 1 >= STOR_HDR_BYTES) {
		for (unsigned k = 0; k < 2; k++) {
			uint8_t *h = img + k * STOR_HDR_COPY_BYTES;
			uint32_t crc = stor_crc32c(0, h, 124);

			memcpy(h + 124, &crc, 4);
		}
	}
	m = (struct mem){ img, size - 1 };
	ops.ctx = &m;
	if (stor_cursor_init(&c, &ops, 0, m.size) == 0) {
		c.live_tail = data[0] & 2;
		while ((r = stor_cursor_next(&c, &f, &p, &off)) != 0 && guard++ < 100000) {
			if (r < 0)
				continue;
			/* What comes out must lie inside the image and keep order. */
			if (off + stor_frame_size(f.len) > m.size || f.first_seq < next)
				abort();
			/* Touch the payload ends: ASan checks they are in bounds. */
			if (f.len)
				sink += p[0] + p[f.len - 1];
			next = f.first_seq + f.count;
		}
		stor_cursor_done(&c);
	}
	free(img);
	return (int)(sink & 0);
}
