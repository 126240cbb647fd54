/* SPDX-License-Identifier: MIT */
/*
 * replace.h - a small state file replaced whole, so that a power cut
 * leaves either its old or its new content, never a torn one, and read
 * back without trusting what is in its place: one copy for the tree (the
 * uplink's cursor and pending requests, the Sparkplug bdSeq).
 */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/*
 * Writes len bytes of data to path.tmp, fsyncs it, renames it over path
 * and fsyncs the directory (so the rename itself is durable).  Returns 0
 * or -errno (-EINVAL for a NULL or empty path, -ENAMETOOLONG); on failure
 * path is untouched and path.tmp removed.  Not RT-safe (it waits for the
 * disk).
 */
int basic_file_replace(const char *path, const void *data, size_t len);

/*
 * fsyncs the directory holding path, so a rename into it is durable (the
 * last step of basic_file_replace, for callers that rename files of their
 * own).  0 or -errno (-ENAMETOOLONG).
 */
int basic_dir_sync(const char *path);

/*
 * Reads such a file: at most len - 1 bytes into buf, NUL-terminated.
 * Returns the bytes read, or -errno: -ENOENT (none), -EISDIR, -ESPIPE
 * (not a regular file: opened non-blocking, so a FIFO in its place cannot
 * hang a start), the read's.  -EINVAL for NULL or len 0.
 */
ssize_t basic_file_read_state(const char *path, char *buf, size_t len);
