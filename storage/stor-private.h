/* SPDX-License-Identifier: MIT */
/*
 * stor-private.h - on-disk format and the segment cursor shared by the
 * writer (log.c) and the reader (reader.c).  storage/DESIGN.md is the
 * specification; this header is its code form.  Internal to storage/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stor.h"

#define STOR_SEG_MAGIC        "RMLOGSEG"
#define STOR_SEG_VERSION      2u    /* written; version 1 (no log id) is still read */
#define STOR_SEG_VERSION_V1   1u
#define STOR_HDR_COPY_BYTES   128u  /* one block of the segment header */
#define STOR_HDR_BYTES        512u  /* v2: two header copies, two log id blocks; frames start here */
#define STOR_HDR_V1_BYTES     256u  /* v1: two header copies; frames start here */
#define STOR_SEG_ID_MAGIC     "RMLOGID\0"
#define STOR_VEHICLE_MAX      59u   /* vehicle id bytes stored, without NUL */
#define STOR_FRAME_HDR_BYTES  40u
#define STOR_FRAME_ALIGN      8u
#define STOR_FRAME_SEAL       0x1u  /* flags: last frame of a closed segment */
#define STOR_FRAME_GAP        0x2u  /* flags: records dropped (ENOSPC), no payload */
#define STOR_MAX_PAYLOAD      (1u << 20)
#define STOR_SEG_NAME_LEN     25    /* "%020llu.seg" and NUL */
#define STOR_MIN_SEGMENT      1024u
#define STOR_DEFAULT_SEGMENT  (16u << 20)
#define STOR_SPARE_NAME       "recycle.spare" /* a retired segment kept for reuse */

/* One decoded segment header. */
struct stor_seg_hdr {
	uint64_t first_seq;
	uint64_t salt;         /* random per file generation: keys every frame CRC */
	uint64_t config_hash;
	uint8_t boot_id[16];
	int64_t created_ns;
	char vehicle[STOR_VEHICLE_MAX + 1];
	uint32_t version;      /* decoded: 1 or 2 */
	uint32_t hdr_bytes;    /* decoded: where frames start (256 or 512) */
	bool has_log_id;       /* decoded: a v2 header with a good log id block */
	uint8_t log_id[STOR_LOG_ID_BYTES];
};

/* One decoded frame header. */
struct stor_frame {
	uint32_t len;       /* payload bytes */
	uint32_t flags;
	uint64_t first_seq;
	uint32_t count;
	int64_t t_first_ns;
	int64_t t_last_ns;
};

static inline uint64_t stor_frame_size(uint32_t len)
{
	return ((uint64_t)STOR_FRAME_HDR_BYTES + len + STOR_FRAME_ALIGN - 1) &
	       ~(uint64_t)(STOR_FRAME_ALIGN - 1);
}

/* segment.c: names, headers, frames. */
void stor_seg_name(char buf[STOR_SEG_NAME_LEN], uint64_t first_seq);
int stor_seg_parse_name(const char *name, uint64_t *ret_first_seq);
/* Always the current version (2), with h->log_id. */
void stor_seg_hdr_encode(const struct stor_seg_hdr *h, uint8_t out[STOR_HDR_BYTES]);
/*
 * Decode a version 1 or 2 header from the first min(file size, 512) bytes
 * of a segment (the rest of in zeroed).  0 (all good), 1 or 2 (that header
 * copy damaged, the other used), 3 or 4 (that log id block damaged; with
 * both damaged has_log_id is false), or -EBADMSG (no good header copy).
 */
int stor_seg_hdr_decode(const uint8_t in[STOR_HDR_BYTES], struct stor_seg_hdr *ret_hdr);
/* Read and decode the header of an open segment file: as
   stor_seg_hdr_decode(), -EBADMSG if the file ends inside it, or the -errno
   of the read. */
int stor_seg_hdr_read(const struct stor_dev_ops *ops, int fd, struct stor_seg_hdr *ret_hdr);
/* Writes stor_frame_size(f->len) bytes to out (header, payload, zero pad). */
void stor_frame_encode(uint64_t salt, const struct stor_frame *f, const void *payload,
		       uint8_t *out);
/* Header fields only, no CRC check: -EBADMSG if implausible. */
int stor_frame_peek(const uint8_t *in, struct stor_frame *ret_f);
/* Full check of a frame whose stor_frame_size() bytes are at in. */
bool stor_frame_crc_ok(uint64_t salt, const uint8_t *in, const struct stor_frame *f);
/* Sorted list of segment first seqs in an open directory. */
int stor_seg_list(int dirfd, uint64_t **ret_seqs, size_t *ret_n);
/*
 * Open a segment file (flags: O_RDONLY or O_RDWR) without following a
 * symbolic link and without blocking (a FIFO in its place would block an
 * open for reading forever), and make sure it is a regular file.  Returns
 * the fd with its size in *ret_size, or -errno: -ELOOP a symbolic link,
 * -EISDIR a directory, -EINVAL another kind of file.  *ret_type gets
 * st_mode & S_IFMT of what was found whenever it is known (also on
 * -ELOOP, -EISDIR, -EINVAL), else 0.
 */
int stor_seg_open(const struct stor_dev_ops *ops, int dirfd, const char *name, int flags,
		  uint64_t *ret_size, uint32_t *ret_type);

/* The time of the last record of a closed segment, from its seal frame;
   without one (abandoned, or the active segment) the file's mtime;
   INT64_MIN if it cannot be opened. */
int64_t stor_seg_t_last(const struct stor_dev_ops *ops, int dirfd, uint64_t first_seq);

/* Is a segment whose records span [start_ns, last_ns] held by h at all?
   (The start is the end of the segment before it: INT64_MIN for the
   oldest, which keeps it whenever its end is inside or after from_ns.) */
static inline bool stor_hold_covers(const struct stor_hold *h, int64_t start_ns, int64_t last_ns)
{
	return last_ns >= h->from_ns && start_ns <= h->to_ns;
}

/*
 * A cursor walks the frames of one segment file through the ops table.
 * It checks every frame (CRC keyed by the segment salt, sequence chain)
 * and after damage resynchronises at the next frame it can prove.
 */
struct stor_cursor {
	const struct stor_dev_ops *ops;
	int fd;
	uint64_t file_size;
	struct stor_seg_hdr hdr;
	int hdr_copy_damaged;  /* 0, or which 128-byte header block (1-4) failed its CRC */
	uint8_t *win;          /* read window over the file */
	size_t win_cap;
	uint64_t win_off;
	size_t win_len;
	uint64_t off;          /* offset of the next frame to read */
	uint64_t expect_seq;   /* first_seq the next frame must carry */
	uint64_t data_end;     /* end of the last good frame */
	bool sealed;           /* met the seal frame */
	bool live_tail;        /* the writer may be writing here: no frame yet, not damage */
	struct stor_frame seal;
	uint64_t bad_off;      /* where the last damage started */
	int64_t t_min, t_max;  /* span of the good frames seen */
};

/* Reads the header; fd stays owned by the caller.  -EBADMSG: no header. */
int stor_cursor_init(struct stor_cursor *c, const struct stor_dev_ops *ops, int fd,
		     uint64_t file_size);
void stor_cursor_done(struct stor_cursor *c);
/*
 * 1: a good frame (payload points into the window, valid until the next
 * call).  0: no more frames (c->sealed tells whether the segment was closed
 * cleanly).  -EBADMSG: damage at c->bad_off; c->off is already at the next
 * provable frame (or at the end).  Other -errno: I/O error.
 */
int stor_cursor_next(struct stor_cursor *c, struct stor_frame *ret_f, const uint8_t **ret_payload,
		     uint64_t *ret_off);

/*
 * What lies at and after c->off now, read afresh at file_size (for a live
 * segment the writer may have written there since the cursor stopped):
 * 2: a good frame chains at c->off (the segment grew); 1: none does, but a
 * frame further on is provable (CRC with this salt, a later seq): records
 * the cursor cannot reach; 0: neither; -errno on I/O error.  The cursor's
 * position is not moved.
 */
int stor_cursor_ahead(struct stor_cursor *c);

/* The SEAL frame at the end of an open segment fd of size bytes, whose
   header c has read (stor_cursor_init): true with it in *ret_seal, false
   if the segment has no good one (being written, abandoned, damaged). */
bool stor_seg_read_seal(const struct stor_dev_ops *ops, int fd, uint64_t size, const struct stor_cursor *c,
                        struct stor_frame *ret_seal);
