/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stor-faultdev.h"

static const char *pattern_names[FDEV_PATTERNS] = {
	"drop-all+lose-new-entries", "keep-all", "keep-first-half+lose-new-entries",
	"keep-all-but-last", "random-subset+lose-new-entries", "keep-only-last",
	"random-subset+garbage", "every-other", "all-but-first+lose-new-entries",
	"random-subset+0xff",
};

const char *fdev_pattern_name(int pattern)
{
	return pattern >= 0 && pattern < FDEV_PATTERNS ? pattern_names[pattern] : "?";
}

static struct fdev_file *file_of_fd(struct fdev *d, int fd)
{
	if (fd < 0 || fd >= 1024 || !d->fd_file[fd])
		return NULL;
	return &d->files[d->fd_file[fd] - 1];
}

static struct fdev_file *file_by_name(struct fdev *d, const char *name, bool create)
{
	struct fdev_file *free_slot = NULL;

	for (int i = 0; i < FDEV_MAX_FILES; i++) {
		if (d->files[i].used && strcmp(d->files[i].name, name) == 0)
			return &d->files[i];
		if (!d->files[i].used && !free_slot)
			free_slot = &d->files[i];
	}
	if (!create || !free_slot)
		return NULL;
	*free_slot = (struct fdev_file){ .used = true };
	snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
	return free_slot;
}

/* Count the op; 0 to go on, else the injected error (or short for writes). */
static int fault(struct fdev *d, unsigned kind)
{
	if (d->dead)
		return -EIO;
	if (!(d->which & kind))
		return 0;
	d->ops_seen++;
	if (!d->fail_at || d->ops_seen < d->fail_at)
		return 0;
	if (d->ops_seen > d->fail_at && !d->persistent)
		return 0;
	switch (d->mode) {
	case FDEV_EIO:
		return -EIO;
	case FDEV_ENOSPC:
		return (kind & (FDEV_OP_WRITE | FDEV_OP_ALLOC | FDEV_OP_CREATE)) ? -ENOSPC : 0;
	case FDEV_SHORT:
		return kind == FDEV_OP_WRITE ? 1 : 0;
	case FDEV_CRASH:
		d->dead = true;
		return -EIO;
	default:
		return 0;
	}
}

static uint64_t fsize(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Save the pre-image of block idx once per sync interval. */
static void save_block(struct fdev *d, struct fdev_file *f, int fd, uint64_t idx)
{
	struct fdev_blk *b;
	ssize_t r;

	for (size_t i = 0; i < f->nblk; i++)
		if (f->blks[i].idx == idx)
			return;
	if (f->nblk == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 16;
		f->blks = realloc(f->blks, f->cap * sizeof(*f->blks));
		if (!f->blks)
			abort();
	}
	b = &f->blks[f->nblk++];
	*b = (struct fdev_blk){ .idx = idx, .order = d->order++ };
	r = pread(fd, b->old, 512, (off_t)(idx * 512));
	b->was_zero = true;
	for (ssize_t i = 0; i < (r > 0 ? r : 0); i++)
		if (b->old[i])
			b->was_zero = false;
}

static void save_range(struct fdev *d, int fd, uint64_t off, uint64_t len)
{
	struct fdev_file *f = file_of_fd(d, fd);

	if (!d->track || !f || !len)
		return;
	for (uint64_t i = off / 512; i <= (off + len - 1) / 512; i++)
		save_block(d, f, fd, i);
}

static int fd_open(void *ctx, int dirfd, const char *name, int flags, mode_t mode)
{
	struct fdev *d = ctx;
	struct fdev_file *f = file_by_name(d, name, false);
	bool existed = faccessat(dirfd, name, F_OK, 0) == 0;
	int r, fd;

	r = (flags & O_CREAT) ? fault(d, FDEV_OP_CREATE) : (d->dead ? -EIO : 0);
	if (r < 0)
		return r;
	if (!f) {
		f = file_by_name(d, name, true);
		if (!f)
			return -EMFILE;
		f->entry_durable = existed;
		f->durable_size = 0;
	}
	fd = openat(dirfd, name, (flags & ~O_TRUNC) | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	if (fd >= 1024) {
		close(fd);
		return -EMFILE;
	}
	d->fd_file[fd] = (int)(f - d->files) + 1;
	if (!existed)
		f->durable_size = 0;
	else if (f->nblk == 0)
		f->durable_size = fsize(fd);
	if ((flags & O_TRUNC) && existed) {
		save_range(d, fd, 0, fsize(fd));
		if (ftruncate(fd, 0) < 0) {
			close(fd);
			return -errno;
		}
	}
	return fd;
}

static ssize_t fd_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
	struct fdev *d = ctx;
	ssize_t r;

	if (d->dead)
		return -EIO;
	r = pread(fd, buf, len, off);
	return r < 0 ? -errno : r;
}

static ssize_t fd_pwrite(void *ctx, int fd, const void *buf, size_t len, off_t off)
{
	struct fdev *d = ctx;
	int r = fault(d, FDEV_OP_WRITE);
	ssize_t w;

	/* A full fs still takes writes into blocks the file already has. */
	if (r == -ENOSPC && (uint64_t)off + len <= fsize(fd))
		r = 0;
	if (r < 0)
		return r;
	if (r == 1 && len > 1)
		len /= 2;
	save_range(d, fd, (uint64_t)off, len);
	w = pwrite(fd, buf, len, off);
	return w < 0 ? -errno : w;
}

static int fd_datasync(void *ctx, int fd)
{
	struct fdev *d = ctx;
	struct fdev_file *f = file_of_fd(d, fd);
	int r = fault(d, FDEV_OP_SYNC);

	if (r < 0)
		return r;
	/* Durable now: the page cache is the model, no real fdatasync needed. */
	if (f) {
		f->nblk = 0;
		f->durable_size = fsize(fd);
	}
	return 0;
}

static int fd_dirsync(void *ctx, int dirfd)
{
	struct fdev *d = ctx;
	int r = fault(d, FDEV_OP_DIRSYNC);

	if (r < 0)
		return r;
	for (int i = 0; i < FDEV_MAX_FILES; i++) {
		if (d->files[i].used) {
			d->files[i].entry_durable = true;
			d->files[i].old_name[0] = 0;
		}
	}
	return 0;
}

static int fd_truncate(void *ctx, int fd, off_t len)
{
	struct fdev *d = ctx;
	uint64_t size = fsize(fd);
	int r = fault(d, FDEV_OP_TRUNC);

	if (r < 0)
		return r;
	if ((uint64_t)len < size)
		save_range(d, fd, (uint64_t)len, size - (uint64_t)len);
	return ftruncate(fd, len) < 0 ? -errno : 0;
}

static int fd_allocate(void *ctx, int fd, off_t off, off_t len)
{
	struct fdev *d = ctx;
	int r = fault(d, FDEV_OP_ALLOC);

	if (r < 0)
		return r;
	if (d->no_alloc)
		return -EOPNOTSUPP;
	return fallocate(fd, 0, off, len) < 0 ? -errno : 0;
}

static int fd_unlink(void *ctx, int dirfd, const char *name)
{
	struct fdev *d = ctx;
	struct fdev_file *f = file_by_name(d, name, false);
	int r = fault(d, FDEV_OP_UNLINK);

	if (r < 0)
		return r;
	if (unlinkat(dirfd, name, 0) < 0)
		return -errno;
	if (f) {
		free(f->blks);
		for (int i = 0; i < 1024; i++)
			if (d->fd_file[i] == (int)(f - d->files) + 1)
				d->fd_file[i] = 0;
		*f = (struct fdev_file){0};
	}
	return 0;
}

static int fd_rename(void *ctx, int dirfd, const char *from, const char *to)
{
	struct fdev *d = ctx;
	struct fdev_file *f = file_by_name(d, from, false), *t = file_by_name(d, to, false);
	bool existed = faccessat(dirfd, from, F_OK, 0) == 0;
	int r = fault(d, FDEV_OP_RENAME);

	if (r < 0)
		return r;
	if (renameat(dirfd, from, dirfd, to) < 0)
		return -errno;
	d->renames++;
	if (t && t != f) {
		/* The replaced file is gone for good: the model does not bring
		   a replaced file back. */
		free(t->blks);
		for (int i = 0; i < 1024; i++)
			if (d->fd_file[i] == (int)(t - d->files) + 1)
				d->fd_file[i] = 0;
		*t = (struct fdev_file){0};
	}
	if (!f) {
		f = file_by_name(d, to, true);
		if (!f)
			return -EMFILE;
		f->entry_durable = existed;
	}
	if (f->entry_durable && !f->old_name[0])
		snprintf(f->old_name, sizeof(f->old_name), "%s", f->name);
	snprintf(f->name, sizeof(f->name), "%s", to);
	f->entry_durable = false;
	return 0;
}

static int fd_close(void *ctx, int fd)
{
	struct fdev *d = ctx;

	if (fd >= 0 && fd < 1024)
		d->fd_file[fd] = 0;
	return close(fd) < 0 ? -errno : 0;
}

int fdev_init(struct fdev *d, const char *dir)
{
	memset(d, 0, sizeof(*d));
	d->ops = (struct stor_dev_ops){
		.open = fd_open, .pread = fd_pread, .pwrite = fd_pwrite,
		.datasync = fd_datasync, .dirsync = fd_dirsync, .truncate = fd_truncate,
		.allocate = fd_allocate, .unlink = fd_unlink, .rename = fd_rename,
		.close = fd_close, .ctx = d,
	};
	d->which = FDEV_OP_ALL;
	d->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return d->dirfd < 0 ? -errno : 0;
}

void fdev_done(struct fdev *d)
{
	for (int i = 0; i < FDEV_MAX_FILES; i++)
		free(d->files[i].blks);
	if (d->dirfd >= 0)
		close(d->dirfd);
	memset(d, 0, sizeof(*d));
	d->dirfd = -1;
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static bool keep_block(int pattern, size_t i, size_t n, uint32_t *seed)
{
	switch (pattern) {
	case 0: return false;
	case 1: return true;
	case 2: return i < n / 2;
	case 3: return i + 1 < n;
	case 5: return i + 1 == n;
	case 7: return i % 2 == 0;
	case 8: return i > 0;
	default: return rnd(seed) & 1;
	}
}

static int cmp_order(const void *a, const void *b)
{
	const struct fdev_blk *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

/* Roll one file back to what the cut leaves of it. */
static int cut_file(struct fdev *d, struct fdev_file *f, int pattern, uint32_t *seed)
{
	int fd = openat(d->dirfd, f->name, O_RDWR | O_CLOEXEC);
	uint64_t size = f->durable_size, cur;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	cur = fsize(fd);
	if (pattern == 1)
		size = cur;
	if (f->nblk) /* qsort(NULL, 0) is undefined (UBSan says so) */
		qsort(f->blks, f->nblk, sizeof(*f->blks), cmp_order);
	for (size_t i = 0; i < f->nblk; i++) {
		struct fdev_blk *b = &f->blks[i];
		uint8_t blk[512];

		if (keep_block(pattern, i, f->nblk, seed)) {
			uint64_t end = (b->idx + 1) * 512 < cur ? (b->idx + 1) * 512 : cur;

			if (end > size)
				size = end;
			continue;
		}
		/* Never-written space may come back as garbage; sectors that
		   held data come back old (512-byte writes are atomic). */
		memcpy(blk, b->old, 512);
		if (b->was_zero && (pattern == 6 || pattern == 9))
			for (int k = 0; k < 512; k++)
				blk[k] = pattern == 9 ? 0xff : (uint8_t)rnd(seed);
		if (pwrite(fd, blk, 512, (off_t)(b->idx * 512)) != 512) {
			close(fd);
			return -EIO;
		}
	}
	if (ftruncate(fd, (off_t)size) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	f->nblk = 0;
	f->durable_size = size;
	return 0;
}

int fdev_power_cut(struct fdev *d, int pattern, uint32_t seed)
{
	bool lose_entries = pattern == 0 || pattern == 2 || pattern == 4 || pattern == 8;

	seed = seed * 2654435761u + 1;
	for (int i = 0; i < FDEV_MAX_FILES; i++) {
		struct fdev_file *f = &d->files[i];
		int r;

		if (!f->used)
			continue;
		if (!f->entry_durable && lose_entries) {
			/* A rename not yet durable goes back; a create vanishes. */
			if (f->old_name[0] &&
			    renameat(d->dirfd, f->name, d->dirfd, f->old_name) == 0) {
				snprintf(f->name, sizeof(f->name), "%s", f->old_name);
				f->old_name[0] = 0;
			} else {
				unlinkat(d->dirfd, f->name, 0);
				continue;
			}
		}
		r = cut_file(d, f, pattern, &seed);
		if (r < 0)
			return r;
	}
	return 0;
}
