/* SPDX-License-Identifier: MIT */
/*
 * test-storage-progress.c - stor_progress (storage/progress.c): the bytes a
 * reader is through a log, from its segment files' sizes.  Segment files of
 * known sizes (their content does not matter: only the names and sizes are
 * read), beside a file and a directory that are no segments, must give:
 * the total of the segments only; done = the sizes of the segments before
 * the record's plus its offset (a segment skipped counts whole); capped at
 * the total; back to the start after a seek back; end: done == total once.
 * No callback: nothing listed, nothing called; no directory: -ENOENT and
 * no call.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/stor.h"
#include "tests/lib/tlib.h"

struct seen {
	uint64_t done, total;
	unsigned calls;
};

static void note(void *ctx, uint64_t done, uint64_t total)
{
	struct seen *s = ctx;

	s->done = done;
	s->total = total;
	s->calls++;
}

static void put(const char *dir, const char *name, size_t bytes)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	CHECK(fd >= 0 && ftruncate(fd, (off_t)bytes) == 0);
	close(fd);
}

int main(void)
{
	char dir[] = "/tmp/railmon-test-progress.XXXXXX", sub[600];
	struct stor_progress p;
	struct seen s = { 0 };

	CHECK(mkdtemp(dir));
	/* listed out of order on purpose: readdir's order is not seq order */
	put(dir, "00000000000000000120.seg", 300);
	put(dir, "00000000000000000001.seg", 100);
	put(dir, "00000000000000000050.seg", 200);
	put(dir, "holds", 7000);                     /* no segment */
	snprintf(sub, sizeof(sub), "%s/00000000000000000200.segx", dir);
	CHECK(mkdir(sub, 0755) == 0);                /* no segment name */

	CHECK(stor_progress_init(&p, dir, note, &s) == 0);
	CHECK(s.calls == 0);
	stor_progress_at(&p, 1, 40);
	CHECK(s.done == 40 && s.total == 600, "%" PRIu64 " of %" PRIu64, s.done, s.total);
	stor_progress_at(&p, 50, 10);
	CHECK(s.done == 110 && s.total == 600, "%" PRIu64, s.done);
	stor_progress_at(&p, 120, 0);       /* the same segment twice: base not added again */
	stor_progress_at(&p, 120, 20);
	CHECK(s.done == 320, "%" PRIu64, s.done);
	stor_progress_at(&p, 120, 5000);    /* past the listed size (written since): capped */
	CHECK(s.done == 600, "%" PRIu64, s.done);
	stor_progress_at(&p, 1, 8);         /* a seek back */
	CHECK(s.done == 8, "%" PRIu64, s.done);
	stor_progress_at(&p, 120, 1);       /* 50 skipped (a missing range): counted whole */
	CHECK(s.done == 301, "%" PRIu64, s.done);
	s.calls = 0;
	stor_progress_end(&p);
	CHECK(s.calls == 1 && s.done == 600 && s.total == 600);
	CHECK(p.seg == NULL && p.fn == NULL);
	stor_progress_at(&p, 1, 1);         /* after the end: nothing */
	CHECK(s.calls == 1);

	/* no callback: nothing read, nothing called */
	CHECK(stor_progress_init(&p, dir, NULL, &s) == 0 && p.seg == NULL);
	stor_progress_at(&p, 1, 1);
	stor_progress_end(&p);
	CHECK(s.calls == 1);

	/* no such directory: the error, and the callback never called */
	CHECK(stor_progress_init(&p, "/nonexistent-railmon", note, &s) == -ENOENT);
	stor_progress_at(&p, 1, 1);
	stor_progress_end(&p);
	CHECK(s.calls == 1);
	CHECK(stor_progress_init(NULL, dir, note, &s) == -EINVAL && stor_progress_init(&p, NULL, note, &s) == -EINVAL);

	rmdir(sub);
	for (const char *const *n = (const char *const[]){ "00000000000000000120.seg", "00000000000000000001.seg",
	                                                    "00000000000000000050.seg", "holds", NULL }; *n; n++) {
		snprintf(sub, sizeof(sub), "%s/%s", dir, *n);
		unlink(sub);
	}
	rmdir(dir);
	printf("ok: stor_progress over 3 segments, seek back, skip, cap, end, no callback, no directory\n");
	return 0;
}
