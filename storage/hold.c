/* SPDX-License-Identifier: MIT */
/*
 * hold.c - event holds (stor.h "Holds"): the file beside the log that
 * names the time windows retention must keep.
 *
 * The file is the only state: the daemon (a trigger adds a hold, the
 * retention pass expires them) and `railmon hold release` in another
 * process both change it, each under flock() of the log directory, by
 * writing the whole file to a temporary name, fsync, rename over the old
 * one and fsync the directory.  A power cut leaves the old file or the new
 * one, never a mix; the closing CRC line proves which bytes are whole, so
 * a damaged file is reported (with its line), never read as "no holds".
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "stor-private.h"

#define HOLDS_MAGIC "railmon-holds 1\n"
#define HOLDS_TMP STOR_HOLDS_NAME ".tmp"
/* The longest hold line: "hold ", a 10-digit id, a 63-byte name, five
   20-character times with their blanks, the newline: 185 bytes. */
#define HOLDS_LINE_MAX 192
#define HOLDS_FILE_MAX (STOR_HOLDS_MAX * HOLDS_LINE_MAX + 64)

bool stor_hold_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || n > STOR_HOLD_TRIGGER_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.", name[i]))
			return false;
	return true;
}

/* One "hold" line into h; false if it is not one. */
static bool parse_hold(const char *line, struct stor_hold *h)
{
	char name[STOR_HOLD_TRIGGER_MAX + 2];
	int used = 0;

	*h = (struct stor_hold){ 0 };
	if (sscanf(line, "hold %" SCNu32 " %64s %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 "%n",
	           &h->id, name, &h->t_ns, &h->from_ns, &h->to_ns, &h->created_ns, &h->expiry_ns, &used) != 7 ||
	    line[used] != '\n' || !stor_hold_name_ok(name) || h->from_ns > h->to_ns || !h->id)
		return false;
	strcpy(h->trigger, name);
	return true;
}

/*
 * Parse a whole file image: the magic line, hold lines, "next ID" and
 * "crc XXXXXXXX" over every byte before that line.  0, or -EBADMSG with
 * the 1-based line of the first problem in *ret_line.
 */
static int parse(const char *buf, size_t len, struct stor_holds *ret, unsigned *ret_line)
{
	const char *p = buf, *end = buf + len;
	unsigned line = 1;
	uint32_t crc;

	memset(ret, 0, sizeof(*ret));
	if (len < strlen(HOLDS_MAGIC) || memcmp(buf, HOLDS_MAGIC, strlen(HOLDS_MAGIC)))
		goto bad;
	for (p += strlen(HOLDS_MAGIC), line++; p < end; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char tmp[HOLDS_LINE_MAX + 2];

		if (!nl || (size_t)(nl - p) >= sizeof(tmp) - 1)
			goto bad;
		memcpy(tmp, p, (size_t)(nl - p) + 1);
		tmp[nl - p + 1] = 0;
		if (!strncmp(tmp, "crc ", 4)) {
			int used = 0;

			if (sscanf(tmp, "crc %8" SCNx32 "%n", &crc, &used) != 1 || used != 12 || nl + 1 != end ||
			    stor_crc32c(0, buf, (size_t)(p - buf)) != crc || !ret->next_id)
				goto bad;
			return 0;
		}
		if (!strncmp(tmp, "next ", 5)) {
			if (sscanf(tmp, "next %" SCNu32, &ret->next_id) != 1 || !ret->next_id)
				goto bad;
		} else if (ret->n == STOR_HOLDS_MAX || !parse_hold(tmp, &ret->h[ret->n++])) {
			goto bad;
		}
		p = nl + 1;
	}
bad:
	*ret_line = line;
	return -EBADMSG;
}

int stor_holds_read(const char *dir, struct stor_holds *ret, unsigned *ret_line)
{
	char *buf;
	ssize_t len;
	int dirfd, fd, r = 0;

	if (!dir || !ret || !ret_line)
		return -EINVAL;
	*ret_line = 0;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	fd = openat(dirfd, STOR_HOLDS_NAME, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	close(dirfd);
	if (fd < 0) {
		/* No file: no hold was ever made. */
		if (errno != ENOENT)
			return -errno;
		memset(ret, 0, sizeof(*ret));
		ret->next_id = 1;
		return 0;
	}
	buf = malloc(HOLDS_FILE_MAX + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	len = read(fd, buf, HOLDS_FILE_MAX + 1);
	if (len < 0)
		r = -errno;
	else if (len > HOLDS_FILE_MAX)
		r = -EFBIG;
	else
		r = parse(buf, (size_t)len, ret, ret_line);
	free(buf);
	close(fd);
	return r;
}

/* The file image of h, with its CRC line.  Its length. */
static size_t format(const struct stor_holds *h, char *buf)
{
	size_t n = (size_t)sprintf(buf, "%s", HOLDS_MAGIC);

	for (size_t i = 0; i < h->n; i++)
		n += (size_t)sprintf(buf + n, "hold %" PRIu32 " %s %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64
		                     " %" PRId64 "\n", h->h[i].id, h->h[i].trigger, h->h[i].t_ns,
		                     h->h[i].from_ns, h->h[i].to_ns, h->h[i].created_ns, h->h[i].expiry_ns);
	n += (size_t)sprintf(buf + n, "next %" PRIu32 "\n", h->next_id);
	n += (size_t)sprintf(buf + n, "crc %08" PRIx32 "\n", stor_crc32c(0, buf, n));
	return n;
}

/* Write-temp, fsync, rename, fsync the directory: the old file or the new
   one survives a power cut, never a mix. */
static int write_file(int dirfd, const struct stor_holds *h)
{
	char *buf = malloc(HOLDS_FILE_MAX);
	size_t len, done = 0;
	int fd, r = 0;

	if (!buf)
		return -ENOMEM;
	len = format(h, buf);
	fd = openat(dirfd, HOLDS_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while (done < len && r == 0) {
		ssize_t w = write(fd, buf + done, len - done);

		if (w < 0 && errno != EINTR)
			r = -errno;
		else if (w > 0)
			done += (size_t)w;
	}
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	free(buf);
	if (r == 0 && renameat(dirfd, HOLDS_TMP, dirfd, STOR_HOLDS_NAME) < 0)
		r = -errno;
	if (r == 0 && fsync(dirfd) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(dirfd, HOLDS_TMP, 0);
	return r;
}

/*
 * Read, change with fn, write back, all under an exclusive flock() of the
 * directory so the daemon and `railmon hold release` never lose each
 * other's change.  fn returns < 0 (nothing written), 0 (nothing changed)
 * or 1 (write).  A damaged file is never rewritten: -EBADMSG, line kept.
 */
static int update(const char *dir, int (*fn)(struct stor_holds *h, void *arg), void *arg,
                  unsigned *ret_line)
{
	struct stor_holds *h = malloc(sizeof(*h));
	unsigned line = 0;
	int dirfd, r;

	if (!h)
		return -ENOMEM;
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		free(h);
		return -errno;
	}
	r = flock(dirfd, LOCK_EX) < 0 ? -errno : 0;
	if (r == 0)
		r = stor_holds_read(dir, h, &line);
	if (r == 0)
		r = fn(h, arg);
	if (r > 0)
		r = write_file(dirfd, h);
	close(dirfd); /* drops the lock */
	if (ret_line)
		*ret_line = line;
	free(h);
	return r;
}

static int add_fn(struct stor_holds *h, void *arg)
{
	struct stor_hold *nh = arg;

	if (h->n == STOR_HOLDS_MAX)
		return -ENOSPC;
	nh->id = h->next_id++;
	h->h[h->n++] = *nh;
	return 1;
}

int stor_hold_add(const char *dir, const struct stor_hold *hold, uint32_t *ret_id)
{
	struct stor_hold nh;
	int r;

	if (!dir || !hold || !stor_hold_name_ok(hold->trigger) || hold->from_ns > hold->to_ns)
		return -EINVAL;
	nh = *hold;
	r = update(dir, add_fn, &nh, NULL);
	if (r == 0 && ret_id)
		*ret_id = nh.id;
	return r;
}

static void remove_at(struct stor_holds *h, size_t i)
{
	memmove(&h->h[i], &h->h[i + 1], (h->n - i - 1) * sizeof(h->h[0]));
	h->n--;
}

static int release_fn(struct stor_holds *h, void *arg)
{
	uint32_t id = *(uint32_t *)arg;

	for (size_t i = 0; i < h->n; i++) {
		if (h->h[i].id == id) {
			remove_at(h, i);
			return 1;
		}
	}
	return -ENOENT;
}

int stor_hold_release(const char *dir, uint32_t id, unsigned *ret_line)
{
	if (!dir || !id)
		return -EINVAL;
	return update(dir, release_fn, &id, ret_line);
}

struct expire_arg {
	int64_t now_ns;
	size_t n;
};

static int expire_fn(struct stor_holds *h, void *arg)
{
	struct expire_arg *a = arg;

	for (size_t i = h->n; i-- > 0;) {
		if (h->h[i].expiry_ns && h->h[i].expiry_ns <= a->now_ns) {
			remove_at(h, i);
			a->n++;
		}
	}
	return a->n > 0;
}

int stor_holds_expire(const char *dir, int64_t now_ns, size_t *ret_n, unsigned *ret_line)
{
	struct expire_arg a = { now_ns, 0 };
	int r;

	if (!dir)
		return -EINVAL;
	r = update(dir, expire_fn, &a, ret_line);
	if (r == 0 && ret_n)
		*ret_n = a.n;
	return r;
}

/* What one segment on disk holds: its records [first, end) and their
   times. */
struct seg_span {
	uint64_t first, end;
	int64_t t_first, t_last;
	bool ok; /* opened, with a header */
};

/* The span from the segment's SEAL frame (first_seq = the end of the
   segment, the time span of its records): one read at its end. */
static bool span_from_seal(const struct stor_dev_ops *ops, int fd, uint64_t size, const struct stor_cursor *c,
                           struct seg_span *ret)
{
	struct stor_frame f;

	if (!stor_seg_read_seal(ops, fd, size, c, &f) || f.first_seq < ret->first)
		return false;
	ret->end = f.first_seq;
	ret->t_first = f.t_first_ns;
	ret->t_last = f.t_last_ns;
	return true;
}

/* Without a seal (the newest segment, being written; an abandoned one):
   its good frames walked. */
static void span_from_frames(struct stor_cursor *c, struct seg_span *ret)
{
	const uint8_t *payload;
	struct stor_frame f;
	uint64_t off;
	int r;

	while ((r = stor_cursor_next(c, &f, &payload, &off)) != 0 && r != -EIO) {
		if (r != 1 || (f.flags & STOR_FRAME_SEAL))
			continue;
		if (f.first_seq + f.count > ret->end)
			ret->end = f.first_seq + f.count;
		if (f.t_first_ns < ret->t_first)
			ret->t_first = f.t_first_ns;
		if (f.t_last_ns > ret->t_last)
			ret->t_last = f.t_last_ns;
	}
}

static struct seg_span seg_span(int dirfd, uint64_t first_seq)
{
	const struct stor_dev_ops *ops = stor_dev_posix_ops();
	struct seg_span sp = { first_seq, first_seq, INT64_MAX, INT64_MIN, false };
	char name[STOR_SEG_NAME_LEN];
	struct stor_cursor c;
	uint64_t size;
	uint32_t type;
	int fd;

	stor_seg_name(name, first_seq);
	fd = stor_seg_open(ops, dirfd, name, O_RDONLY, &size, &type);
	if (fd < 0)
		return sp;
	if (stor_cursor_init(&c, ops, fd, size) == 0) {
		sp.ok = true;
		if (!span_from_seal(ops, fd, size, &c, &sp))
			span_from_frames(&c, &sp);
		stor_cursor_done(&c);
	}
	ops->close(ops->ctx, fd);
	return sp;
}

/* A range after the others (segments come in seq order); adjacent to the
   last one (its end is last_end): one range. */
static void range_add(struct stor_seq_range *r, uint32_t *n, uint64_t last_end, uint64_t first, uint64_t end)
{
	if (*n && last_end == first) {
		if (*n <= STOR_HOLD_RANGES)
			r[*n - 1].end = end;
		return;
	}
	if (*n < STOR_HOLD_RANGES)
		r[*n] = (struct stor_seq_range){ first, end };
	(*n)++;
}

static void kept_add(struct stor_hold_extent *e, const struct seg_span *sp, uint64_t bytes)
{
	if (sp->end > sp->first) {
		range_add(e->range, &e->nranges, e->end_seq, sp->first, sp->end);
		if (!e->records)
			e->first_seq = sp->first;
		e->end_seq = sp->end;
		e->records += sp->end - sp->first;
	}
	e->segments++;
	e->bytes += bytes;
}

/* What of hold h's window lies between prev (NULL: before the oldest
   segment) and cur, where no segment is. */
static void gone_add(struct stor_hold_extent *e, const struct stor_hold *h, const struct seg_span *prev,
                     const struct seg_span *cur)
{
	if (!prev) {
		/* Older records existed and are gone; those of the window
		   among them, if any, with them. */
		if (cur->first > 1 && cur->t_first != INT64_MAX && cur->t_first > h->from_ns) {
			e->missing_before_ns = cur->t_first;
			e->missing_before_seq = cur->first;
		}
		return;
	}
	/* The deleted records lie between the end of the segment before
	   and the start of the one after, in time as in seqs. */
	if (cur->first > prev->end && prev->t_last <= h->to_ns && cur->t_first >= h->from_ns) {
		/* never adjacent: a segment on disk lies between two */
		range_add(e->gone, &e->ngone, 0, prev->end, cur->first);
		e->gone_records += cur->first - prev->end;
	}
}

int stor_hold_extents(const char *dir, const struct stor_holds *holds, struct stor_hold_extent *ret)
{
	const struct stor_dev_ops *ops = stor_dev_posix_ops();
	char name[STOR_SEG_NAME_LEN];
	struct seg_span prev = { 0 };
	int64_t start = INT64_MIN;
	uint64_t *seqs;
	size_t n;
	int dirfd, r;

	if (!dir || !holds || !ret)
		return -EINVAL;
	memset(ret, 0, holds->n * sizeof(*ret));
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return -errno;
	r = stor_seg_list(dirfd, &seqs, &n);
	for (size_t i = 0; r == 0 && i < n; i++) {
		/* The newest is being written: it reaches to now.  (The time
		   rule is retention's, log.c seg_held().) */
		int64_t last = i + 1 < n ? stor_seg_t_last(ops, dirfd, seqs[i]) : INT64_MAX;
		struct seg_span sp = seg_span(dirfd, seqs[i]);
		struct stat st;

		stor_seg_name(name, seqs[i]);
		if (!sp.ok || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		for (size_t k = 0; k < holds->n; k++) {
			if (stor_hold_covers(&holds->h[k], start, last))
				kept_add(&ret[k], &sp, (uint64_t)st.st_blocks * 512);
			if (sp.t_first != INT64_MAX)
				gone_add(&ret[k], &holds->h[k], prev.ok ? &prev : NULL, &sp);
		}
		start = last;
		if (sp.t_first != INT64_MAX)
			prev = sp;
	}
	if (r == 0)
		free(seqs);
	close(dirfd);
	return r;
}
