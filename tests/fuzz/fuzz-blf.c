/* SPDX-License-Identifier: MIT */
/*
 * fuzz-blf: the BLF reader (trace/blf.c) on arbitrary files: it must end
 * (every call reads on or says the end), never read or write out of
 * bounds, and give only frames that are frames (lengths, ids, flags), and
 * count the objects it skips by type (each type once, each count > 0),
 * and read it again the same after trace_blf_reset.
 * Seeds: tests/trace/blf_vector.py's files (one per object class) and
 * record/'s writer's.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace/trace-fmt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct mem {
	const uint8_t *p;
	size_t n, pos;
};

/* short reads on purpose: the reader must not assume full ones */
static ssize_t mem_read(void *ctx, void *buf, size_t len)
{
	struct mem *m = ctx;
	size_t k = m->n - m->pos;

	if (k > len)
		k = len;
	if (k > 7 && (m->pos & 1))
		k = 7;
	memcpy(buf, m->p + m->pos, k);
	m->pos += k;
	return (ssize_t)k;
}

static void check_frame(const struct acq_can *c)
{
	assert(c->len <= ACQ_CAN_DATA_MAX);
	assert((c->flags & ACQ_CAN_FD) || c->len <= 8);
	assert(!(c->flags & ACQ_CAN_FD) || !(c->flags & ACQ_CAN_RTR));
	assert(c->id <= ((c->flags & ACQ_CAN_EXT) ? 0x1fffffffu : 0x7ffu));
}

static void check_skipped(const struct trace_blf *blf)
{
	struct trace_blf_skip sk, prev[TRACE_BLF_SKIP_TYPES + 1];
	size_t i;

	for (i = 0; trace_blf_skipped(blf, i, &sk) == 0; i++) {
		assert(i <= TRACE_BLF_SKIP_TYPES && sk.count > 0);
		assert(sk.other == (i == TRACE_BLF_SKIP_TYPES));
		for (size_t k = 0; k < i; k++)
			assert(sk.other || prev[k].type != sk.type);
		prev[i] = sk;
	}
	assert(trace_blf_skipped(blf, i, &sk) == -ENOENT);
}

/* One pass over the input: the frames it gave. */
static size_t read_pass(struct trace_blf *blf, const uint8_t *data, size_t size)
{
	struct mem m = { data, size, 0 };
	struct acq_item it;
	unsigned ch;
	size_t calls = 0, frames = 0;
	int r;

	do {
		r = trace_blf_next(blf, mem_read, &m, &it, &ch);
		if (r == TRACE_FRAME) {
			check_frame(&it.can);
			frames++;
		} else if (r == -EBADMSG) {
			assert(trace_blf_why(blf, NULL)[0] != 0);
		}
		/* each object is at least 16 bytes, each error reads on: bounded */
		assert(++calls <= size + 8);
	} while (r != 0);
	return frames;
}

/* A pass over the input, then a second after trace_blf_reset as a looping
   replay reads: the same frames, the same counts.  One reader for all
   inputs (2 MiB of buffers): the reset clears what the last input left. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct trace_blf *blf;
	struct trace_blf_skip first[TRACE_BLF_SKIP_TYPES + 1], sk;
	size_t frames, n = 0;

	if (!blf)
		assert(trace_blf_new(&blf) == 0);
	trace_blf_reset(blf);
	frames = read_pass(blf, data, size);
	check_skipped(blf);
	while (trace_blf_skipped(blf, n, &first[n]) == 0)
		n++;
	trace_blf_reset(blf);
	assert(read_pass(blf, data, size) == frames);
	for (size_t i = 0; i < n; i++)
		assert(trace_blf_skipped(blf, i, &sk) == 0 && sk.other == first[i].other && sk.type == first[i].type &&
		       sk.count == first[i].count);
	assert(trace_blf_skipped(blf, n, &sk) == -ENOENT);
	return 0;
}
