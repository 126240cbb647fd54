/* SPDX-License-Identifier: MIT */
/*
 * progress.c - how far a reader is through a log, in bytes of its segment
 * files: their sizes are listed once when reading starts, and a record's
 * (segment, offset) is turned into the bytes before it by walking that
 * list forward as the reader does (readers go in seq order), so the cost
 * per call is O(1) on average.  For the long commands' progress lines
 * (export, verify): the reader itself is untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stor-private.h"

static int seq_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int stor_progress_init(struct stor_progress *p, const char *dir, stor_progress_fn fn, void *ctx)
{
	uint64_t *seqs = NULL;
	size_t n = 0;
	int dirfd, r;

	if (!p || !dir)
		return -EINVAL;
	*p = (struct stor_progress){ .fn = fn, .ctx = ctx };
	if (!fn)
		return 0;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		p->fn = NULL;
		return -errno;
	}
	r = stor_seg_list(dirfd, &seqs, &n);
	if (r >= 0 && n && !(p->seg = calloc(n, sizeof(*p->seg))))
		r = -ENOMEM;
	if (r >= 0) {
		qsort(seqs, n, sizeof(*seqs), seq_cmp);
		for (size_t i = 0; i < n; i++) {
			char name[STOR_SEG_NAME_LEN];
			struct stat st;

			stor_seg_name(name, seqs[i]);
			p->seg[i].first_seq = seqs[i];
			/* a segment gone since (retention) counts as empty */
			p->seg[i].bytes = fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) ?
			                  (uint64_t)st.st_size : 0;
			p->total += p->seg[i].bytes;
		}
		p->n = n;
	}
	free(seqs);
	close(dirfd);
	if (r < 0) { /* no progress then: fn is never called */
		free(p->seg);
		*p = (struct stor_progress){ 0 };
		return r;
	}
	return 0;
}

void stor_progress_at(struct stor_progress *p, uint64_t segment, uint64_t offset)
{
	uint64_t done;

	if (!p || !p->fn)
		return;
	if (p->i > 0 && p->seg[p->i - 1].first_seq > segment) { /* went back (a seek): start over */
		p->i = 0;
		p->base = 0;
	}
	while (p->i < p->n && p->seg[p->i].first_seq < segment)
		p->base += p->seg[p->i++].bytes;
	done = p->base + offset;
	p->fn(p->ctx, done < p->total ? done : p->total, p->total);
}

void stor_progress_end(struct stor_progress *p)
{
	if (!p)
		return;
	if (p->fn)
		p->fn(p->ctx, p->total, p->total);
	free(p->seg);
	*p = (struct stor_progress){ 0 };
}
