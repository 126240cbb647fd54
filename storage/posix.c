/* SPDX-License-Identifier: MIT */
/* posix.c - the real stor_dev_ops: thin wrappers returning -errno. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "stor.h"

static int px_open(void *ctx, int dirfd, const char *name, int flags, mode_t mode)
{
	int fd = openat(dirfd, name, flags | O_CLOEXEC, mode);

	return fd < 0 ? -errno : fd;
}

static ssize_t px_pread(void *ctx, int fd, void *buf, size_t len, off_t off)
{
	ssize_t r = pread(fd, buf, len, off);

	return r < 0 ? -errno : r;
}

static ssize_t px_pwrite(void *ctx, int fd, const void *buf, size_t len, off_t off)
{
	ssize_t r = pwrite(fd, buf, len, off);

	return r < 0 ? -errno : r;
}

static int px_datasync(void *ctx, int fd)
{
	return fdatasync(fd) < 0 ? -errno : 0;
}

static int px_dirsync(void *ctx, int dirfd)
{
	return fsync(dirfd) < 0 ? -errno : 0;
}

static int px_truncate(void *ctx, int fd, off_t len)
{
	return ftruncate(fd, len) < 0 ? -errno : 0;
}

static int px_allocate(void *ctx, int fd, off_t off, off_t len)
{
	return fallocate(fd, 0, off, len) < 0 ? -errno : 0;
}

static int px_unlink(void *ctx, int dirfd, const char *name)
{
	return unlinkat(dirfd, name, 0) < 0 ? -errno : 0;
}

static int px_rename(void *ctx, int dirfd, const char *from, const char *to)
{
	return renameat(dirfd, from, dirfd, to) < 0 ? -errno : 0;
}

static int px_writeback(void *ctx, int fd, off_t off, off_t len)
{
	return sync_file_range(fd, off, len, SYNC_FILE_RANGE_WRITE) < 0 ? -errno : 0;
}

static int px_close(void *ctx, int fd)
{
	/* Linux releases the fd even when close() fails: never retry it. */
	return close(fd) < 0 ? -errno : 0;
}

static const struct stor_dev_ops posix_ops = {
	.open = px_open,
	.pread = px_pread,
	.pwrite = px_pwrite,
	.datasync = px_datasync,
	.dirsync = px_dirsync,
	.truncate = px_truncate,
	.allocate = px_allocate,
	.unlink = px_unlink,
	.rename = px_rename,
	.writeback = px_writeback,
	.close = px_close,
};

const struct stor_dev_ops *stor_dev_posix_ops(void)
{
	return &posix_ops;
}
