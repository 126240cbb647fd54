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
 * The same without the two fsyncs: path.tmp written and renamed over
 * path, for a file rewritten too often to wait for the disk each time
 * (the uplink cursors: an fsync per 2048 records cut a loopback backlog
 * to a quarter).  It survives a crash of the process (kill -9, OOM): the
 * page cache is the kernel's, and the rename is atomic, so a reader finds
 * the whole old or the whole new content.  A power cut may undo it:
 *  - ext4 as mounted by default (auto_da_alloc, data=ordered): a rename
 *    over an existing file starts the writeback of the new file's
 *    delayed blocks, and the journal commit holding the rename waits for
 *    them, so the path holds the old or the new content;
 *  - with noauto_da_alloc, data=writeback or XFS the rename can reach the
 *    disk before the data: the path is then empty or holds zeros.
 * So the reader must take an empty, short or zeroed file as damage, and
 * the caller must still call basic_file_replace now and then: its fsyncs
 * make everything renamed before it durable too (ext4's journal commits
 * in order), which bounds what a power cut can take back.
 */
int basic_file_replace_nosync(const char *path, const void *data, size_t len);

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
