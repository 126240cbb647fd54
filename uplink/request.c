/* SPDX-License-Identifier: MIT */
/*
 * request.c - the ground's request line and the vehicle's pending-request
 * file (request.h).
 *
 * The file is small (at most 64 pending and 256 served ids) and is
 * replaced whole on every change, as the cursor is: a power cut leaves the
 * old list or the new one, never half a line that would lose a request.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "range.h"
#include "request.h"
#include "basic/name.h"
#include "basic/replace.h"

#define FILE_HEADER "railmon-requests 1\n"
#define PENDING "pending "
#define DONE "done "
/* The largest file the limits allow, and some: a larger one is damaged. */
#define FILE_MAX (sizeof(FILE_HEADER) + UPL_REQUESTS_PENDING_MAX * (sizeof(PENDING) + UPL_REQUEST_LINE_MAX) + \
                  UPL_REQUESTS_DONE_MAX * (sizeof(DONE) + UPL_REQUEST_ID_MAX + 1))

struct upl_requests {
	char *path;
	struct upl_request pending[UPL_REQUESTS_PENDING_MAX];
	size_t n_pending;
	char done[UPL_REQUESTS_DONE_MAX][UPL_REQUEST_ID_MAX + 1];
	size_t n_done;   /* oldest first */
};

/* The id rule is the vehicle name's (basic/name.h: letters, digits, '.',
   '_', '-', not "." or ".."), shorter. */
static bool id_ok(const char *s, size_t n)
{
	return n <= UPL_REQUEST_ID_MAX && basic_vehicle_name_ok_n(s, n);
}

/* A channel name: printable ASCII without blanks (it is the line's
   separator), as the vehicle's dictionary names channels. */
bool upl_request_channel_ok(const char *s, size_t n)
{
	if (!n || n > UPL_REQUEST_CHANNEL_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '!' || s[i] > '~')
			return false;
	return true;
}

/* The channel names after the times: each after one blank, none twice. */
static int parse_channels(const char *p, const char *end, struct upl_request *r)
{
	while (p < end) {
		const char *name = ++p, *blank;
		size_t n;

		if (*(name - 1) != ' ' || r->nchannels == UPL_REQUEST_CHANNELS_MAX)
			return -EINVAL;
		blank = memchr(name, ' ', (size_t)(end - name));
		n = (size_t)((blank ? blank : end) - name);
		if (!upl_request_channel_ok(name, n))
			return -EINVAL;
		memcpy(r->channels[r->nchannels], name, n);
		r->channels[r->nchannels][n] = '\0';
		for (unsigned i = 0; i < r->nchannels; i++)
			if (!strcmp(r->channels[i], r->channels[r->nchannels]))
				return -EINVAL;
		r->nchannels++;
		p = name + n;
	}
	return 0;
}

int upl_request_parse(const char *line, size_t n, struct upl_request *ret)
{
	const char *p = line, *end = line + n, *blank;
	struct upl_request r = { .id = "" };
	uint64_t from, to;

	if (!line || !ret || !(blank = memchr(line, ' ', n)) || !id_ok(line, (size_t)(blank - line)))
		return -EINVAL;
	memcpy(r.id, line, (size_t)(blank - line));
	r.id[blank - line] = '\0';
	p = blank + 1;
	if (upl_decimal_parse(&p, end, &from) < 0 || p == end || *p++ != ' ' ||
	    upl_decimal_parse(&p, end, &to) < 0 || parse_channels(p, end, &r) < 0)
		return -EINVAL;
	if (to > INT64_MAX || from >= to)
		return -EINVAL;
	r.from_ns = (int64_t)from;
	r.to_ns = (int64_t)to;
	*ret = r;
	return 0;
}

int upl_request_format(const struct upl_request *r, char *buf, size_t len)
{
	char line[UPL_REQUEST_LINE_MAX];
	int n;

	if (!r || !buf || strnlen(r->id, sizeof(r->id)) > UPL_REQUEST_ID_MAX || !id_ok(r->id, strlen(r->id)) ||
	    r->from_ns < 0 || r->from_ns >= r->to_ns || r->nchannels > UPL_REQUEST_CHANNELS_MAX)
		return -EINVAL;
	n = snprintf(line, sizeof(line), "%s %" PRId64 " %" PRId64, r->id, r->from_ns, r->to_ns);
	for (unsigned i = 0; i < r->nchannels; i++) {
		size_t k = strnlen(r->channels[i], sizeof(r->channels[i]));

		if (!upl_request_channel_ok(r->channels[i], k))
			return -EINVAL;
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(r->channels[i], r->channels[j]))
				return -EINVAL;
		n += snprintf(line + n, sizeof(line) - (size_t)n, " %s", r->channels[i]);
	}
	n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	memcpy(buf, line, (size_t)n + 1);
	return n;
}

/* The whole list as the file's text into buf (FILE_MAX bytes). */
static size_t render(const upl_requests_t *q, char *buf)
{
	size_t off = 0;

	off += (size_t)sprintf(buf, "%s", FILE_HEADER);
	/* every pending request was checked by upl_request_format() when
	   taken (or parsed from the file), so it formats */
	for (size_t i = 0; i < q->n_pending; i++) {
		off += (size_t)sprintf(buf + off, PENDING);
		off += (size_t)upl_request_format(&q->pending[i], buf + off, UPL_REQUEST_LINE_MAX);
	}
	for (size_t i = 0; i < q->n_done; i++)
		off += (size_t)sprintf(buf + off, DONE "%s\n", q->done[i]);
	return off;
}

static int store(const upl_requests_t *q)
{
	char *buf = malloc(FILE_MAX);
	int r;

	if (!buf)
		return -ENOMEM;
	r = basic_file_replace(q->path, buf, render(q, buf));
	free(buf);
	return r;
}

static bool known(const upl_requests_t *q, const char *id)
{
	for (size_t i = 0; i < q->n_pending; i++)
		if (!strcmp(q->pending[i].id, id))
			return true;
	for (size_t i = 0; i < q->n_done; i++)
		if (!strcmp(q->done[i], id))
			return true;
	return false;
}

static void remember_done(upl_requests_t *q, const char *id)
{
	if (q->n_done == UPL_REQUESTS_DONE_MAX) {
		memmove(q->done[0], q->done[1], (UPL_REQUESTS_DONE_MAX - 1) * sizeof(q->done[0]));
		q->n_done--;
	}
	snprintf(q->done[q->n_done++], sizeof(q->done[0]), "%s", id);
}

/* One line of the file (without '\n') into q: 0 or -EBADMSG. */
static int load_line(upl_requests_t *q, const char *s, size_t n)
{
	struct upl_request r;

	if (n > strlen(PENDING) && !memcmp(s, PENDING, strlen(PENDING))) {
		if (upl_request_parse(s + strlen(PENDING), n - strlen(PENDING), &r) < 0 ||
		    q->n_pending == UPL_REQUESTS_PENDING_MAX || known(q, r.id))
			return -EBADMSG;
		q->pending[q->n_pending++] = r;
		return 0;
	}
	if (n > strlen(DONE) && !memcmp(s, DONE, strlen(DONE))) {
		s += strlen(DONE);
		n -= strlen(DONE);
		if (!id_ok(s, n) || q->n_done == UPL_REQUESTS_DONE_MAX)
			return -EBADMSG;
		memcpy(q->done[q->n_done], s, n);
		q->done[q->n_done++][n] = '\0';
		return 0;
	}
	return -EBADMSG;
}

/* The file's text (len bytes) into q; the first bad line in *bad. */
static int load(upl_requests_t *q, const char *buf, size_t len, unsigned *bad)
{
	const char *p = buf, *end = buf + len, *nl;
	unsigned line = 1;

	if (len < strlen(FILE_HEADER) || memcmp(buf, FILE_HEADER, strlen(FILE_HEADER))) {
		*bad = 1;
		return -EBADMSG;
	}
	for (p += strlen(FILE_HEADER); p < end; p = nl + 1) {
		line++;
		/* every line ends in '\n': a last line without one was torn */
		if (!(nl = memchr(p, '\n', (size_t)(end - p))) || load_line(q, p, (size_t)(nl - p)) < 0) {
			*bad = line;
			return -EBADMSG;
		}
	}
	return 0;
}

/* The file at path into q (none: nothing pending).  A FIFO or a directory
   in its place is refused, not waited on. */
static int read_file(upl_requests_t *q, const char *path, unsigned *bad)
{
	struct stat st;
	char *buf = NULL;
	ssize_t n = 0;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISREG(st.st_mode))
		r = S_ISDIR(st.st_mode) ? -EISDIR : -ESPIPE;
	else if ((uint64_t)st.st_size > FILE_MAX)
		r = -EFBIG;
	else if (!(buf = malloc((size_t)st.st_size + 1)))
		r = -ENOMEM;
	else if ((n = read(fd, buf, (size_t)st.st_size + 1)) < 0)
		r = -errno;
	close(fd);
	if (r == 0)
		r = (size_t)n > FILE_MAX ? -EFBIG : load(q, buf, (size_t)n, bad);
	free(buf);
	return r;
}

int upl_requests_open(const char *path, upl_requests_t **ret, unsigned *ret_bad_line)
{
	upl_requests_t *q;
	unsigned bad = 0;
	int r;

	if (!path || !*path || !ret)
		return -EINVAL;
	if (ret_bad_line)
		*ret_bad_line = 0;
	q = calloc(1, sizeof(*q));
	if (!q || !(q->path = strdup(path))) {
		free(q);
		return -ENOMEM;
	}
	r = read_file(q, path, &bad);
	if (r < 0) {
		if (ret_bad_line)
			*ret_bad_line = bad;
		upl_requests_free(q);
		return r;
	}
	*ret = q;
	return 0;
}

void upl_requests_free(upl_requests_t *q)
{
	if (!q)
		return;
	free(q->path);
	free(q);
}

int upl_requests_add(upl_requests_t *q, const struct upl_request *r)
{
	char line[UPL_REQUEST_LINE_MAX];
	int err;

	if (!q || upl_request_format(r, line, sizeof(line)) < 0)
		return -EINVAL;
	if (known(q, r->id))
		return 0;
	if (q->n_pending == UPL_REQUESTS_PENDING_MAX)
		return -ENOSPC;
	q->pending[q->n_pending++] = *r;
	if ((err = store(q)) < 0) {
		q->n_pending--;
		return err;
	}
	return 1;
}

size_t upl_requests_pending(const upl_requests_t *q)
{
	return q ? q->n_pending : 0;
}

int upl_requests_oldest(const upl_requests_t *q, struct upl_request *ret)
{
	if (!q || !ret)
		return -EINVAL;
	if (!q->n_pending)
		return -ENOENT;
	*ret = q->pending[0];
	return 0;
}

int upl_requests_done(upl_requests_t *q)
{
	struct upl_request first;
	char forgotten[UPL_REQUEST_ID_MAX + 1] = "";
	bool full;
	int err;

	if (!q)
		return -EINVAL;
	if (!q->n_pending)
		return -ENOENT;
	first = q->pending[0];
	full = q->n_done == UPL_REQUESTS_DONE_MAX;
	if (full)
		memcpy(forgotten, q->done[0], sizeof(forgotten));
	memmove(q->pending, q->pending + 1, (q->n_pending - 1) * sizeof(q->pending[0]));
	q->n_pending--;
	remember_done(q, first.id);
	if ((err = store(q)) < 0) {
		/* undo: it stays pending (and the id it pushed out stays served) */
		q->n_done--;
		if (full) {
			memmove(q->done[1], q->done[0], (UPL_REQUESTS_DONE_MAX - 1) * sizeof(q->done[0]));
			memcpy(q->done[0], forgotten, sizeof(forgotten));
			q->n_done++;
		}
		memmove(q->pending + 1, q->pending, q->n_pending * sizeof(q->pending[0]));
		q->pending[0] = first;
		q->n_pending++;
		return err;
	}
	return 0;
}
