/* SPDX-License-Identifier: MIT */
/*
 * stor.h - the flash log: crash-safe, append-only, CRC-framed, segmented.
 *
 * storage/DESIGN.md specifies the on-disk format and the order of writes
 * and syncs.  The log stores opaque payloads (encoded Batches) with the
 * sequence range and time span they cover; it never parses them.
 *
 * Threading: a stor_log_t is used by one writer thread (the collector);
 * readers (export, uplink, replay) open their own stor_reader_t on the same
 * directory, also from a single thread each.  Nothing here is RT-safe:
 * it runs at normal priority.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/*
 * All file I/O goes through these, so tests can inject EIO, ENOSPC, short
 * writes and power loss.  stor_dev_posix_ops() gives the real ones.  Each
 * callback returns >= 0 on success (a byte count for read/write) or -errno.
 * Directory listing and stat are not in the table (they cannot lose data).
 *
 *   open      openat(dirfd, name, flags, mode); returns the fd.
 *   pread     may return fewer bytes than asked (0 at end of file).
 *   pwrite    may return fewer bytes than asked: the caller writes the rest;
 *             -ENOSPC only when the write needs new blocks.
 *   datasync  fdatasync: the data written so far and the size are durable.
 *             After a failure the caller never trusts the fd again.
 *   dirsync   fsync of the directory: creates and deletes are durable.
 *   truncate  ftruncate; not durable until the next datasync.
 *   allocate  fallocate(mode 0): reserve blocks, so later writes inside
 *             them cannot fail with ENOSPC; -EOPNOTSUPP is tolerated.
 *   unlink    unlinkat; durable after the next dirsync.
 *   rename    renameat within dirfd (replaces to); durable after dirsync.
 *             May be NULL: retired segments are then unlinked, not recycled.
 *   writeback start writing [off, off+len) out now, without waiting
 *             (sync_file_range WRITE): a hint so the next datasync has less
 *             to wait for; promises nothing.  May be NULL.
 *   close     releases the fd even when it fails (never retried).
 */
/* An injectable clock: now(ctx, CLOCK_REALTIME or CLOCK_MONOTONIC) in ns. */
struct stor_clock {
	int64_t (*now)(void *ctx, clockid_t clk);
	void *ctx;
};

struct stor_dev_ops {
	int (*open)(void *ctx, int dirfd, const char *name, int flags, mode_t mode);
	ssize_t (*pread)(void *ctx, int fd, void *buf, size_t len, off_t off);
	ssize_t (*pwrite)(void *ctx, int fd, const void *buf, size_t len, off_t off);
	int (*datasync)(void *ctx, int fd);
	int (*dirsync)(void *ctx, int dirfd);
	int (*truncate)(void *ctx, int fd, off_t len);
	int (*allocate)(void *ctx, int fd, off_t off, off_t len);
	int (*unlink)(void *ctx, int dirfd, const char *name);
	int (*rename)(void *ctx, int dirfd, const char *from, const char *to);
	int (*writeback)(void *ctx, int fd, off_t off, off_t len);
	int (*close)(void *ctx, int fd);
	void *ctx;
};

const struct stor_dev_ops *stor_dev_posix_ops(void);

#define STOR_LOG_ID_BYTES 16

struct stor_log_cfg {
	const char *dir;             /* created if missing */
	const char *vehicle;         /* stored in segment headers */
	uint64_t config_hash;
	uint8_t boot_id[16];
	uint64_t segment_bytes;      /* roll to a new segment past this; 0 = 16 MiB */
	uint32_t sync_window_ms;     /* fdatasync at most this long after an append; 0 = every append */
	uint64_t retention_bytes;    /* 0 = unlimited, else at least 2 segments: it
					counts the active segment's preallocation
					and the recycled spare */
	uint64_t retention_age_s;    /* 0 = unlimited */
	uint64_t forwarded_seq;      /* the uplink's persisted cursor at start: records
					below it count as forwarded for retention at open */
	uint64_t first_seq;          /* where a new log (no segment yet) starts numbering:
					a ground log joining a vehicle at seq 5e9 has no
					gap to mark before it; 0 = 1 */
	const struct stor_dev_ops *ops; /* NULL = posix */
	uint64_t retention_min_age_s; /* retention never deletes a segment with a
					record younger than this (the window a
					recorder guarantees: 49 CFR 229.135 asks 48 h);
					0 = no floor */
	const struct stor_clock *clock; /* NULL = the system clocks; else the
					   retention pass, segment times and the sync
					   window read these (tests run days of
					   data in seconds); must outlive the log */
	uint64_t keep_recent_s;      /* the budget and age never delete a segment
					with a record younger than this (the longest
					`pre` of a trigger: a hold made a moment later
					finds its window's start still there); unlike
					the floor it raises no alarm and yields to a
					full disk; 0 = none */
};

/* The header of one stored record (one Batch). */
struct stor_rec {
	uint64_t first_seq;  /* seq of the first record in the payload */
	uint32_t count;      /* records in the payload: covers [first_seq, first_seq+count) */
	int64_t t_first_ns;  /* time span the payload covers */
	int64_t t_last_ns;
	const void *payload; /* reader: valid until the next call on the reader */
	uint32_t len;
	uint64_t segment;    /* reader: first seq of the segment it came from */
	uint64_t offset;     /* reader: byte offset of the frame in that segment */
};

typedef struct stor_log stor_log_t;

/*
 * Open (and recover) the log in cfg->dir.  Strings in cfg are copied; the
 * ops table must outlive the log.  Recovery walks the last segment, cuts
 * a torn tail after the last good frame, seals it, and starts a new
 * segment.  Returns 0, or -EINVAL (bad cfg: NULL dir or vehicle, vehicle
 * over 59 bytes, segment_bytes below 1024, sync window over an hour,
 * retention_bytes below two segments) or -errno; a damaged log is not an
 * error (see stor_log_take_events()).  If the first segment cannot be
 * created (ENOSPC, EIO) the open still succeeds: appends retry and count
 * what they drop.  A segment that cannot be preallocated for lack of space
 * (after freeing forwarded segments) is written without preallocation:
 * what does not fit is then dropped whole and counted, never torn.
 * stor_space_check() tells beforehand whether the sizes can work at all.
 */
int stor_log_open(const struct stor_log_cfg *cfg, stor_log_t **ret_log);

/* Flush, sync and close; accepts NULL; returns NULL. */
stor_log_t *stor_log_free(stor_log_t *log);

/*
 * Append one record.  rec->first_seq must equal stor_log_next_seq(), count
 * >= 1, len <= 1 MiB, t_first_ns <= t_last_ns.  The payload is copied into
 * the write buffer; it becomes durable at the next sync (within
 * sync_window_ms, driven by stor_log_tick() or stor_log_sync()).
 * Returns 0, -EINVAL (nothing changes), or -ENOSPC / another -errno: the
 * record was dropped whole and counted (stor_log_take_events()).  Unless
 * -EINVAL, next_seq moves past the record either way, so the caller's
 * numbering goes on and the gap is marked in the log.
 */
int stor_log_append(stor_log_t *log, const struct stor_rec *rec);

/*
 * Would appending a record of len payload bytes now close the active
 * segment and start the next one?  The evidence Seal (pipeline/sink.c) goes
 * in first, so every closed segment ends with one.  false on NULL.
 */
bool stor_log_would_roll(const stor_log_t *log, uint32_t len);

/*
 * Move next_seq forward to seq, marking [next_seq, seq) as a gap in the log
 * (the records will never be appended: a ground log that joined a vehicle
 * late, or records the vehicle lost).  Returns 0, -EINVAL if seq is behind
 * next_seq, -ERANGE for a gap over UINT32_MAX records.
 */
int stor_log_skip(stor_log_t *log, uint64_t seq);

/* Write out and fdatasync everything appended so far.  Returns 0 or
   -errno (the records concerned are then counted as dropped or lost). */
int stor_log_sync(stor_log_t *log);

/* Sync if the window has elapsed; call it at least every sync_window_ms.
   Once a second it also runs the retention pass, whatever is configured:
   the holds file is re-read if it changed and expired holds end
   (holds_expired), within a second of the change or the expiry. */
int stor_log_tick(stor_log_t *log);

/*
 * The log's identity: 16 bytes chosen at random when the log was created,
 * kept in every segment header, so they survive restarts and retention and
 * change only with a new log (new card, wiped directory).  Batches carry
 * them, so the ground can tell a replaced log from a replayed one (seq
 * restarts at 1 in a new log).  A log written before log ids existed gets
 * one derived from its oldest segment (storage/DESIGN.md).  0 or -EINVAL.
 */
int stor_log_id(const stor_log_t *log, uint8_t ret_id[STOR_LOG_ID_BYTES]);

/* Next sequence number to append: 1 + the last recovered or appended record
   (1 for an empty log). */
uint64_t stor_log_next_seq(const stor_log_t *log);

/* Every record below this seq is durable (fdatasync'd), or was reported
   dropped or lost through stor_log_take_events(). */
uint64_t stor_log_confirmed_seq(const stor_log_t *log);

/* Tell retention which records were forwarded off-board (the uplink
   cursor: every record below seq), so it deletes those first.  Returns 0
   or -EINVAL. */
int stor_log_set_forwarded(stor_log_t *log, uint64_t seq);

struct stor_stats {
	uint64_t records;        /* appended this run */
	uint64_t bytes;
	uint64_t syncs;
	uint64_t dropped;        /* records refused or dropped (ENOSPC, no segment) */
	uint64_t lost_unsynced;  /* records lost with an abandoned segment (EIO) */
	uint64_t segments_abandoned;
	uint64_t segments;       /* segments on disk */
	uint64_t disk_bytes;
	uint64_t recovered_truncated_bytes; /* torn tail cut at open */
	uint64_t retention_deleted;         /* records removed by retention */
	uint64_t retention_unforwarded;     /* of those, never forwarded */
	uint64_t retention_past_held;       /* segments retention deleted while an
					       older, held one was kept */
	uint64_t held_segments;             /* segments a hold keeps now */
	uint64_t held_bytes;
	uint32_t holds;                     /* holds in force (last pass) */
	int64_t window_ns;                  /* age of the oldest record kept
					       (its segment's end), 0: none */
	uint64_t window_need_bytes;         /* bytes retention_min_age needs at the
					       rate of the segments on disk, 0:
					       not known yet (fewer than 3) */
	uint32_t window_alarm;              /* enum stor_window_alarm, last pass */
	int hold_error;                     /* -errno reading the holds file, 0 */
	unsigned hold_error_line;           /* its line for -EBADMSG */
	int last_error;          /* -errno of the last failure, 0 if none */
};

/* Counters of this run (and the recovery at open).  Returns 0 or -EINVAL. */
int stor_log_stats(const stor_log_t *log, struct stor_stats *ret_stats);

/*
 * Things the collector must turn into acq_item events.  Counts accumulate
 * from stor_log_open() (recovery) or the previous take.
 */
struct stor_events {
	uint64_t lost_unsynced;         /* appended, never confirmed: their segment
					   failed a write or fdatasync (EIO) and was
					   abandoned.  They may or may not be readable. */
	uint64_t lost_first_seq;        /* lowest seq counted in lost_unsynced (0 if none) */
	uint64_t dropped_nospace;       /* records refused or dropped whole on ENOSPC */
	uint64_t dropped_other;         /* records refused on other errors (no segment) */
	uint64_t retention_unforwarded; /* records deleted before being forwarded */
	uint64_t segments_abandoned;    /* segments closed after an I/O error */
	uint64_t recovered_damage;      /* damaged spots found in the last segment at open */
	uint64_t recovered_truncated_bytes;
	uint32_t window_alarm;          /* a pass raised enum stor_window_alarm
					   (the highest since the last take) */
	uint64_t window_need_bytes;     /* with it: bytes the window needs */
	uint64_t past_held;             /* segments deleted past a held one */
	uint64_t holds_expired;         /* holds whose period ended */
	int hold_error;                 /* the holds file became unreadable: -errno */
	unsigned hold_error_line;
	int last_error;                 /* -errno of the last failure, 0 if none */
};

/*
 * Whether retention can keep retention_min_age (stor_stats.window_alarm).
 * Retention never deletes a segment younger than the floor: when the
 * budget (or a full disk) would need one, it deletes nothing and raises
 * STOR_WINDOW_DUE; new records are then refused when the disk fills,
 * and counted.  STOR_WINDOW_PROJECTED comes first, while there is still
 * room: the bytes on disk over the time they span, times the floor, are
 * more than the budget.
 */
enum stor_window_alarm {
	STOR_WINDOW_OK = 0,
	STOR_WINDOW_PROJECTED = 1, /* at this rate the window will not fit */
	STOR_WINDOW_DUE = 2,       /* young data would have to go now: kept */
	STOR_WINDOW_MAX
};

/*
 * Take and reset the pending events.  Returns 1 if anything happened,
 * 0 if not, -EINVAL on NULL arguments.
 */
int stor_log_take_events(stor_log_t *log, struct stor_events *ret_events);

/* The filesystem a log lives on, against the sizes it is configured with. */
struct stor_space {
	uint64_t fs_bytes;   /* size of the filesystem holding the log directory */
	uint64_t free_bytes; /* free to an unprivileged writer now (f_bavail) */
	uint64_t log_bytes;  /* allocated to the log's own files now (segments,
				spare): what retention and a full disk can free */
};

/* Whether dir holds a log already: a file named *.seg in it (a misnamed
   segment too).  false when dir cannot be read. */
bool stor_dir_holds_log(const char *dir);

/*
 * statvfs of dir, or of its nearest existing parent when it does not exist
 * yet, and the space its log files take.  Returns 0 or -errno.
 */
int stor_space_query(const char *dir, struct stor_space *ret_space);

enum {
	/* Warnings from stor_space_check(): */
	STOR_SPACE_LOW_SEGMENT = 1 << 0,   /* free + the log's own < one segment:
					      the next one is written without
					      preallocation (what does not fit
					      is dropped and counted) */
	STOR_SPACE_LOW_RETENTION = 1 << 1, /* free + the log's own < retention:
					      the disk fills before retention
					      starts deleting */
};

/*
 * Check a log's sizes against its filesystem (segment_bytes 0 = the
 * default).  Refused (never workable, whatever else is on the disk):
 * -EFBIG when two segments do not fit in the filesystem (the one being
 * written, preallocated whole, and the one before it, which retention or a
 * full disk frees), -E2BIG when retention_bytes is larger than the
 * filesystem (the budget is never reached: the disk fills first, and then
 * only forwarded records are freed).  Else a mask of STOR_SPACE_LOW_*
 * warnings about the space free now (0: none), -EINVAL on NULL.
 */
int stor_space_check(const struct stor_space *space, uint64_t segment_bytes,
		     uint64_t retention_bytes);

typedef struct stor_reader stor_reader_t;

/*
 * Open a reader on a log directory (read-only, never writes; may run beside
 * a writer in another thread or process).  It starts before the oldest
 * record.  Returns 0, -EINVAL, or -errno (-ENOENT: no such directory).
 */
int stor_reader_open(const char *dir, stor_reader_t **ret_reader);

/* Close; accepts NULL; returns NULL. */
stor_reader_t *stor_reader_free(stor_reader_t *r);

/* Position at the first record containing seq or after it.  Returns 0,
   -EINVAL (NULL, seq 0) or -errno. */
int stor_reader_seek_seq(stor_reader_t *r, uint64_t seq);

/* Position at the first record whose t_last_ns >= t_ns: closed segments
   whose seal proves all their records older are skipped, the rest is
   scanned (times need not be monotonic).  Returns 0, -EINVAL or -errno. */
int stor_reader_seek_time(stor_reader_t *r, int64_t t_ns);

/* The last record (in seq order) whose t_first_ns is before t_ns, into
   *ret (its payload NULL): closed segments whose seal proves all their
   records at or after t_ns are passed from the newest back, the first one
   that is not is read whole (times need not be monotonic).  Leaves the
   reader to be positioned again (seek_seq, seek_time).  Returns 1, 0
   (none) or -errno. */
int stor_reader_last_before(stor_reader_t *r, int64_t t_ns, struct stor_rec *ret);

/* Records whose t_first_ns is at or after t_ns are not wanted (export
   --to): a closed segment whose seal proves all of them are is skipped
   with its header and seal read, none of its frames; the others are read
   whole (times need not rise).  INT64_MAX (the default): no limit.
   Returns 0 or -EINVAL. */
int stor_reader_limit_time(stor_reader_t *r, int64_t t_ns);

/*
 * Next record.  Returns 1 and fills *ret_rec, 0 at the end (for now: call
 * again later to follow a live log), or -EBADMSG when something was skipped:
 * a damaged frame, a segment that cannot be read (a directory, FIFO or
 * symbolic link in its place, no permission, no header, a read error), a
 * seq range no segment holds.  The reader has already moved past it: the
 * next call continues with the rest; stor_reader_fault() tells what and
 * which records, stor_reader_error() segment and offset.  Segment files are
 * opened O_NONBLOCK|O_NOFOLLOW and read only if they are regular files, so
 * nothing in the directory can block the reader.  Other -errno: a read
 * error in the newest segment (the live tail; call again later).
 */
int stor_reader_next(stor_reader_t *r, struct stor_rec *ret_rec);

/* The end of what a reader read, once stor_reader_next() returned 0. */
struct stor_tail {
	uint64_t segment;  /* the newest segment (its first seq) */
	uint64_t offset;   /* where its last good frame ends */
	uint64_t size;     /* its file size now */
	bool garbage;      /* damage after offset: bytes other than zeros, and a
	                      frame further on the reader could prove (this
	                      segment's salt, a later seq) that nothing chains
	                      on to: records it cannot reach */
	uint64_t garbage_offset; /* the first byte other than zero */
};

/*
 * Does the log end in an open segment (no storage seal: a live log, or one
 * a power cut stopped)?  1 and *ret_tail: what follows its last good frame:
 * nothing wrong (preallocated zeros, frames the writer added since next()
 * returned 0, a write being copied, a recycled file's frames of its earlier
 * life, a torn last write of a power cut hiding no frame), or garbage (see
 * above); 0: the newest segment was closed and sealed, or none was read;
 * -EINVAL; -errno of a read.  Reads the rest of that file through the
 * reader's ops, at its size now.
 */
int stor_reader_tail(stor_reader_t *r, struct stor_tail *ret_tail);

/* Where the last -EBADMSG was found: the segment (its first seq, i.e. its
   file name) and the byte offset in that file.  NULL pointers are skipped. */
void stor_reader_error(const stor_reader_t *r, uint64_t *ret_segment, uint64_t *ret_offset);

/*
 * As stor_reader_open(), reading through ops (NULL = posix; only open,
 * pread and close are used), so tests can inject read errors.  The ops
 * table must outlive the reader.
 */
int stor_reader_open_ops(const char *dir, const struct stor_dev_ops *ops,
			 stor_reader_t **ret_reader);

/* What a reader skipped when stor_reader_next() returned -EBADMSG. */
enum stor_fault_kind {
	STOR_FAULT_FRAME = 0,   /* damaged bytes inside a segment, resynchronised after */
	STOR_FAULT_HEADER_COPY, /* one header copy damaged, read through the other */
	STOR_FAULT_UNSEALED,    /* a closed segment without a good seal: its end is
				   not proven (damage or an abandoned segment) */
	STOR_FAULT_SEGMENT,     /* a segment that cannot be read at all (err, type):
				   not a regular file, unreadable, no valid header,
				   a read error: skipped whole from the offset */
	STOR_FAULT_MISNAMED,    /* a segment whose header names another first seq
				   (renamed or copied in): never read, skipped */
	STOR_FAULT_MISSING,     /* no segment holds a seq range between two others
				   (a deleted file): segment is the one after it */
	STOR_FAULT_REPEATED,    /* a frame whose seqs were already read (a segment
				   copied or forged in between two others): segment
				   and offset are the frame's, other_segment the one
				   the earlier copy came from, [lost_first,
				   repeat_end) the repeated seqs; the frame is
				   skipped whole, so no seq is returned twice */
	STOR_FAULT_KIND_MAX
};

struct stor_fault {
	enum stor_fault_kind kind;
	int err;             /* -errno of the cause: -EBADMSG bad bytes, -ENODATA
				shorter than a header, -EISDIR, -ELOOP (a symbolic
				link, never followed), -EACCES, -EIO, -EINVAL (not a
				regular file: see type) */
	uint32_t type;       /* st_mode & S_IFMT of what was found, 0 if unknown */
	uint64_t segment;    /* first seq named by the file */
	uint64_t offset;     /* byte offset in it */
	uint64_t lost_first; /* records [lost_first, lost_end) were skipped; */
	uint64_t lost_end;   /* equal: none; lost_end 0: from lost_first to the
				end of the log (the newest segment could not be
				read) */
	uint64_t other_segment; /* REPEATED: see above */
	uint64_t repeat_end;
};

/* The last fault (-EBADMSG) of stor_reader_next(), with the range of records
   it cost.  Ranges below a pending seek_seq() target are left out.  Returns 0,
   -EINVAL on NULL, -ENOENT if there was none. */
int stor_reader_fault(const stor_reader_t *r, struct stor_fault *ret_fault);

/*
 * Progress through a log for a long command's progress line (only cli/
 * prints it): fn(ctx, done, total) in bytes of the log's segment files,
 * as listed when init ran.  stor_progress_init() lists them (fn NULL:
 * nothing, every call below does nothing); 0 or -errno (then fn is never
 * called).  stor_progress_at() is called per record read (a Batch: not per
 * sample) with the stor_rec's segment and offset; O(1) on average, as the
 * reader goes forward.  stor_progress_end() says done == total once and
 * frees the list.  Not RT-safe (init allocates).
 */
typedef void (*stor_progress_fn)(void *ctx, uint64_t done, uint64_t total);

struct stor_progress {
	stor_progress_fn fn;
	void *ctx;
	struct stor_progress_seg {
		uint64_t first_seq, bytes;
	} *seg;
	size_t n, i;       /* segments; the first not wholly behind the reader */
	uint64_t base;     /* bytes of the segments before seg[i] */
	uint64_t total;
};

int stor_progress_init(struct stor_progress *p, const char *dir, stor_progress_fn fn, void *ctx);
void stor_progress_at(struct stor_progress *p, uint64_t segment, uint64_t offset);
void stor_progress_end(struct stor_progress *p);

/*
 * Holds: time windows around an incident that retention keeps, persisted
 * in the file STOR_HOLDS_NAME in the log directory (storage/DESIGN.md
 * "Holds").  A segment is held when its time span [the end of the segment
 * before it, its own end] meets a hold's [from_ns, to_ns]; retention deletes
 * the oldest unheld segments first and counts what it deleted past a held
 * one.  A hold ends with stor_hold_release() or at expiry_ns (the log's
 * retention pass removes it).  A damaged file is never taken for "no
 * holds": the log deletes nothing while it cannot read it.
 */
#define STOR_HOLDS_NAME "holds"
#define STOR_HOLDS_MAX 256
#define STOR_HOLD_TRIGGER_MAX 63

struct stor_hold {
	uint32_t id;          /* 1, 2, ...: never reused in one log directory */
	char trigger[STOR_HOLD_TRIGGER_MAX + 1]; /* [A-Za-z0-9_.-], what made it */
	int64_t t_ns;         /* when it fired (record time) */
	int64_t from_ns;      /* held window: t - pre */
	int64_t to_ns;        /* t + post */
	int64_t created_ns;   /* wall time it was made */
	int64_t expiry_ns;    /* wall time it ends by itself, 0 = until released */
};

struct stor_holds {
	size_t n;
	uint32_t next_id;
	struct stor_hold h[STOR_HOLDS_MAX];
};

/* A trigger name a hold may carry.  false on NULL. */
bool stor_hold_name_ok(const char *name);

/*
 * Read the holds file of dir (none: no holds).  0; -EBADMSG with the
 * 1-based line of the first bad one in *ret_line (a bad CRC: the crc
 * line); -EFBIG; -EINVAL; -errno.  Never changes anything.
 */
int stor_holds_read(const char *dir, struct stor_holds *ret, unsigned *ret_line);

/*
 * Add a hold (its id is chosen here: *ret_id), crash-safely (write a
 * temporary file, fsync, rename, fsync the directory), under flock() of
 * dir.  0; -EINVAL (bad name, from > to); -ENOSPC (STOR_HOLDS_MAX holds);
 * -EBADMSG (the file is damaged: nothing written); -errno.
 */
int stor_hold_add(const char *dir, const struct stor_hold *hold, uint32_t *ret_id);

/* Release hold id.  0, -ENOENT (no such hold), -EBADMSG (*ret_line, may be
   NULL), -EINVAL, -errno. */
int stor_hold_release(const char *dir, uint32_t id, unsigned *ret_line);

/* Remove the holds whose expiry_ns <= now_ns; their number in *ret_n (may
   be NULL).  0, -EBADMSG, -errno. */
int stor_holds_expire(const char *dir, int64_t now_ns, size_t *ret_n, unsigned *ret_line);

/* What a hold keeps of the log on disk now (stor_hold_extents()). */
#define STOR_HOLD_RANGES 4
struct stor_seq_range {
	uint64_t first, end; /* records [first, end) */
};
struct stor_hold_extent {
	uint64_t first_seq, end_seq; /* the first kept record and one past the
	                                last: 0 0 none (gaps in ranges) */
	uint64_t records;            /* records in the held segments on disk */
	uint32_t segments;
	uint64_t bytes;
	/* The exact seq ranges of the held segments on disk (adjacent ones
	   merged), the first STOR_HOLD_RANGES of nranges. */
	uint32_t nranges;
	struct stor_seq_range range[STOR_HOLD_RANGES];
	/* What of the window is gone: the seq ranges between two segments on
	   disk whose time (the end of the one before, the start of the one
	   after) meets the window, the first STOR_HOLD_RANGES of ngone,
	   gone_records in all; and, when the oldest record on disk is younger
	   than the window's start and older records existed (its seq > 1),
	   that record's time and seq (else 0 0): the window before it is not
	   on disk. */
	uint32_t ngone;
	struct stor_seq_range gone[STOR_HOLD_RANGES];
	uint64_t gone_records;
	int64_t missing_before_ns;
	uint64_t missing_before_seq;
};

/*
 * The segments of the log in dir that each hold of holds keeps, by the
 * rule retention uses, and what of each window is no longer on disk:
 * ret[i] for holds->h[i] (ret has holds->n entries).  A segment's range
 * comes from its own seal (first_seq of the SEAL frame; its frames walked
 * where it has none), never from the next segment on disk: retention may
 * have deleted the segments in between.  0, -EINVAL, -errno.
 */
int stor_hold_extents(const char *dir, const struct stor_holds *holds, struct stor_hold_extent *ret);
