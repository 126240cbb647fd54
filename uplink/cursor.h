/* SPDX-License-Identifier: MIT */
/* cursor.h - the forwarder's cursor file (cursor.c); forward.h includes it. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/*
 * The cursor file: one line "railmon-cursor 1 <seq>\n".  load: 0 and *ret_seq
 * (1 if the file does not exist); if it is damaged, the codes of
 * upl_forward_stats.cursor_damage (never blocks: a FIFO is -ESPIPE).
 * store: writes path.tmp, fsyncs it, renames it over path and fsyncs the
 * directory, so a power cut leaves either the old or the new value.
 * store_nosync: the same without the fsyncs (basic_file_replace_nosync):
 * it survives a kill -9, not always a power cut, so a store must follow
 * it now and then.  0 or -errno.
 */
int upl_cursor_load(const char *path, uint64_t *ret_seq);
int upl_cursor_store(const char *path, uint64_t seq);
int upl_cursor_store_nosync(const char *path, uint64_t seq);
