/* SPDX-License-Identifier: MIT */
/*
 * mb-rtu-slaves.c - several Modbus RTU slaves sharing one serial line, that
 * answer late: the test peer for a master that must never credit a late
 * reply to the wrong request.
 *
 *   mb-rtu-slaves --rtu DEVICE [--seed S] [--timeout-ms R] --slave SPEC...
 *     SPEC = ID:POLICY[:FAULT,...]
 *     POLICY  what the slave does with a request that comes while it is
 *             still working on an earlier one (its reply not yet sent):
 *               queue  keeps it and answers it after the earlier one, with
 *                      its own processing time (in order; late answers
 *                      pile up when the master does not wait)
 *               deaf   ignores it, as a slave whose receiver is off while
 *                      it is busy
 *     FAULT   KIND=PCT@MIN-MAX: PCT percent (fractions allowed) of the
 *             requests it takes get KIND after MIN..MAX ms; KIND#N[@MS]:
 *             its N-th request (counting all it received) gets KIND after
 *             MS ms.  Kinds:
 *               late   the correct reply
 *               cut    the first 3 bytes at once, the rest after the delay
 *                      (a reply cut by the master's byte timeout)
 *               crc    the reply with its CRC broken
 *               drop   no reply at all (the request was lost)
 *             every other request is answered at once; max=N: reads of more
 *             than N items get exception 2 (illegal data address), as from
 *             a device that only takes whole values; only=FC: requests of
 *             other function codes go unanswered, as by a device that does
 *             not implement them and says nothing.
 *
 * Requests are framed here (8 bytes: unit, function, address, count, CRC),
 * not by libmodbus, so one process can be every slave of the line; requests
 * to other unit ids are ignored as on a real line.  Values as mb-values.h
 * says: every register encodes its unit and address.
 *
 * Prints "READY" once it serves; stops when its stdin reaches EOF, printing
 * per slave: "SLAVE id requests N answered N late N ignored N queued N cut N
 * crc N dropped N" (late: answered more than R ms after the request came,
 * queued ones included), "FC code n" for every function code and "COUNT c
 * n" for every number of items asked that it received.
 * Test program: may print.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "mb-values.h"

enum kind { K_LATE, K_CUT, K_CRC, K_DROP, K_MAX };
static const char *const kind_names[K_MAX] = { "late", "cut", "crc", "drop" };

#define SLAVES_MAX 16
#define TIERS_MAX 8
#define REPLIES_MAX 1024
#define REQ_LEN 8

struct tier {
	enum kind kind;
	unsigned per_100k;  /* requests out of 100,000 */
	unsigned nth;       /* or just the nth request (1-based) */
	unsigned min_ms, max_ms;
};

struct slave {
	unsigned id;
	bool deaf;
	struct tier tiers[TIERS_MAX];
	unsigned ntiers;
	unsigned max_count; /* 0: any */
	unsigned only_fc;   /* 0: any */
	int64_t free_at;    /* when its last accepted request is fully answered */
	uint64_t requests, answered, late, ignored, queued, cut, crc, dropped;
};

struct reply {
	int64_t due, due_rest;  /* rest: cut replies send the tail later */
	uint64_t seq;           /* ties go in the order the requests came */
	size_t len, sent;
	uint8_t buf[300];
};

struct line {
	int fd;
	uint64_t rng;
	int64_t late_ns;
	struct slave slaves[SLAVES_MAX];
	unsigned nslaves;
	struct reply replies[REPLIES_MAX];
	unsigned nreplies;
	uint64_t seq;
	uint8_t in[512];
	size_t nin;
	uint64_t fc_count[256];
	uint64_t count_count[2001];
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t rnd(struct line *l)
{
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return l->rng;
}

static void write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* the master went away; its problem */
		b += w;
		n -= (size_t)w;
	}
}

static struct slave *slave_find(struct line *l, unsigned id)
{
	for (unsigned i = 0; i < l->nslaves; i++)
		if (l->slaves[i].id == id)
			return &l->slaves[i];
	return NULL;
}

/* The fault this request gets, or NULL for an answer at once. */
static const struct tier *tier_draw(struct line *l, const struct slave *s)
{
	unsigned x = (unsigned)(rnd(l) % 100000);

	for (unsigned i = 0; i < s->ntiers; i++)
		if (s->tiers[i].nth == s->requests)
			return &s->tiers[i];
	for (unsigned i = 0; i < s->ntiers; i++) {
		if (x < s->tiers[i].per_100k)
			return &s->tiers[i];
		x -= s->tiers[i].per_100k;
	}
	return NULL;
}

static int64_t tier_delay(struct line *l, const struct tier *t)
{
	unsigned span = t->max_ms - t->min_ms;

	return ((int64_t)t->min_ms * 1000 + (int64_t)(rnd(l) % (span * 1000u + 1))) * 1000;
}

static struct reply *reply_new(struct line *l)
{
	if (l->nreplies == REPLIES_MAX) {
		fprintf(stderr, "mb-rtu-slaves: more than %d replies pending\n", REPLIES_MAX);
		exit(1);
	}
	return &l->replies[l->nreplies++];
}

/* One request from the master, arrived at t. */
static void request(struct line *l, const uint8_t *req, int64_t t)
{
	struct slave *s = slave_find(l, req[0]);
	unsigned fc = req[1], addr = (unsigned)(req[2] << 8 | req[3]), count = (unsigned)(req[4] << 8 | req[5]);
	const struct tier *tier;
	struct reply *r;
	int64_t start, delay = 0;
	uint16_t crc;

	l->fc_count[fc]++;
	l->count_count[count <= 2000 ? count : 0]++;
	if (!s)
		return;
	s->requests++;
	if (s->deaf && t < s->free_at) {
		s->ignored++;
		return;
	}
	if (fc < 1 || fc > 4 || count == 0 || count > (fc <= 2 ? 2000u : 125u))
		return; /* the driver never asks this; the test sees it in the FC lines */
	if (s->only_fc && fc != s->only_fc) {
		s->dropped++;
		return;
	}
	tier = tier_draw(l, s);
	if (tier && tier->kind == K_DROP) {
		s->dropped++;
		return;
	}
	if (tier)
		delay = tier_delay(l, tier);
	start = t > s->free_at ? t : s->free_at;
	s->queued += start > t;
	r = reply_new(l);
	r->buf[0] = (uint8_t)s->id;
	if (s->max_count && count > s->max_count) {
		r->buf[1] = (uint8_t)(fc | 0x80);
		r->buf[2] = 2;
		r->len = 3;
	} else {
		r->len = 1 + mb_build_read(s->id, fc, addr, count, r->buf + 1);
	}
	crc = mb_crc16(r->buf, r->len);
	if (tier && tier->kind == K_CRC)
		crc ^= 0x5a5a;
	r->buf[r->len++] = (uint8_t)crc;
	r->buf[r->len++] = (uint8_t)(crc >> 8);
	r->sent = 0;
	r->seq = l->seq++;
	r->due = r->due_rest = start + delay;
	if (tier && tier->kind == K_CUT)
		r->due = start;
	s->free_at = start + delay;
	s->answered++;
	s->late += start + delay - t > l->late_ns;
	s->cut += tier && tier->kind == K_CUT;
	s->crc += tier && tier->kind == K_CRC;
}

/* Frame requests out of the bytes received; a bad CRC slides by one byte. */
static void frame_requests(struct line *l, int64_t t)
{
	size_t off = 0;

	while (l->nin - off >= REQ_LEN) {
		const uint8_t *q = l->in + off;
		uint16_t crc = mb_crc16(q, REQ_LEN - 2);

		if (q[6] == (uint8_t)crc && q[7] == (uint8_t)(crc >> 8)) {
			request(l, q, t);
			off += REQ_LEN;
		} else {
			off++;
		}
	}
	memmove(l->in, l->in + off, l->nin - off);
	l->nin -= off;
}

static int64_t reply_next(const struct reply *r)
{
	return r->sent ? r->due_rest : r->due;
}

/* Send every reply (part) that is due, earliest first, so that a slave's
   replies leave in order; returns the next due time or -1. */
static int64_t send_due(struct line *l)
{
	for (;;) {
		struct reply *r = NULL;

		for (unsigned i = 0; i < l->nreplies; i++)
			if (!r || reply_next(&l->replies[i]) < reply_next(r) ||
			    (reply_next(&l->replies[i]) == reply_next(r) && l->replies[i].seq < r->seq))
				r = &l->replies[i];
		if (!r)
			return -1;
		if (reply_next(r) > now_ns())
			return reply_next(r);
		if (!r->sent) {
			r->sent = r->due_rest > r->due ? 3 : r->len;
			write_all(l->fd, r->buf, r->sent);
		} else {
			write_all(l->fd, r->buf + r->sent, r->len - r->sent);
			r->sent = r->len;
		}
		if (r->sent == r->len)
			*r = l->replies[--l->nreplies];
	}
}

static void serve(struct line *l)
{
	for (;;) {
		struct pollfd pfd[2] = { { .fd = 0, .events = POLLIN }, { .fd = l->fd, .events = POLLIN } };
		int64_t next = send_due(l), wait_ns = next < 0 ? -1 : next - now_ns();
		struct timespec ts = { .tv_sec = wait_ns / 1000000000LL, .tv_nsec = wait_ns % 1000000000LL };
		ssize_t n;

		if (next >= 0 && wait_ns <= 0)
			continue;
		if (ppoll(pfd, 2, next < 0 ? NULL : &ts, NULL) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pfd[0].revents)
			return; /* stdin closed: the test is done with us */
		if (!(pfd[1].revents & POLLIN))
			continue;
		n = read(l->fd, l->in + l->nin, sizeof(l->in) - l->nin);
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			return;
		}
		l->nin += (size_t)n;
		frame_requests(l, now_ns());
		if (l->nin == sizeof(l->in))
			l->nin = 0; /* only garbage fills it */
	}
}

static int parse_tiers(struct slave *s, char *list)
{
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		char name[16];
		double pct;
		unsigned lo, hi;
		int k;

		unsigned nth = 0;

		lo = hi = 0;
		if (sscanf(tok, "max=%u", &s->max_count) == 1 || sscanf(tok, "only=%u", &s->only_fc) == 1)
			continue;
		if (s->ntiers == TIERS_MAX)
			return -1;
		if (strchr(tok, '#')) {
			if (sscanf(tok, "%15[a-z]#%u@%u", name, &nth, &lo) < 2 || !nth)
				return -1;
			hi = lo, pct = 0;
		} else if (sscanf(tok, "%15[a-z]=%lf@%u-%u", name, &pct, &lo, &hi) != 4 || pct < 0 || pct > 100 ||
		           hi < lo) {
			return -1;
		}
		for (k = 0; k < K_MAX && strcmp(name, kind_names[k]); k++)
			;
		if (k == K_MAX)
			return -1;
		s->tiers[s->ntiers++] = (struct tier){ .kind = (enum kind)k, .per_100k = (unsigned)(pct * 1000 + 0.5),
		                                       .nth = nth, .min_ms = lo, .max_ms = hi };
	}
	return 0;
}

static int parse_slave(struct line *l, char *spec)
{
	char *policy = strchr(spec, ':'), *tiers;
	struct slave *s;

	if (!policy || l->nslaves == SLAVES_MAX)
		return -1;
	*policy++ = 0;
	tiers = strchr(policy, ':');
	if (tiers)
		*tiers++ = 0;
	s = &l->slaves[l->nslaves++];
	memset(s, 0, sizeof(*s));
	s->id = (unsigned)atoi(spec);
	if (!s->id || s->id > 247 || (strcmp(policy, "queue") && strcmp(policy, "deaf")))
		return -1;
	s->deaf = !strcmp(policy, "deaf");
	return tiers ? parse_tiers(s, tiers) : 0;
}

static int open_line(const char *dev)
{
	struct termios tio;
	int fd = open(dev, O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (tcgetattr(fd, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(fd, TCSANOW, &tio);
	}
	return fd;
}

int main(int argc, char **argv)
{
	static struct line l = { .rng = 1, .late_ns = 20000000 };
	const char *dev = NULL;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rtu"))
			dev = argv[i + 1];
		else if (!strcmp(argv[i], "--seed"))
			l.rng = strtoull(argv[i + 1], NULL, 0) | 1;
		else if (!strcmp(argv[i], "--timeout-ms"))
			l.late_ns = strtoll(argv[i + 1], NULL, 0) * 1000000;
		else if (strcmp(argv[i], "--slave") || parse_slave(&l, argv[i + 1]) < 0)
			dev = NULL, i = argc; /* usage */
	}
	if (!dev || !l.nslaves || argc % 2 == 0) {
		fprintf(stderr, "usage: %s --rtu DEVICE [--seed S] [--timeout-ms R] "
		        "--slave ID:queue|deaf[:KIND=PCT@MIN-MAX|KIND#N[@MS]|max=N|only=FC,...]...\n", argv[0]);
		return 2;
	}
	l.fd = open_line(dev);
	if (l.fd < 0) {
		fprintf(stderr, "mb-rtu-slaves: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	printf("READY\n");
	fflush(stdout);
	serve(&l);
	for (unsigned i = 0; i < l.nslaves; i++) {
		const struct slave *s = &l.slaves[i];

		printf("SLAVE %u requests %llu answered %llu late %llu ignored %llu queued %llu cut %llu crc %llu "
		       "dropped %llu\n",
		       s->id, (unsigned long long)s->requests, (unsigned long long)s->answered,
		       (unsigned long long)s->late, (unsigned long long)s->ignored, (unsigned long long)s->queued,
		       (unsigned long long)s->cut, (unsigned long long)s->crc, (unsigned long long)s->dropped);
	}
	for (int fc = 0; fc < 256; fc++)
		if (l.fc_count[fc])
			printf("FC %d %llu\n", fc, (unsigned long long)l.fc_count[fc]);
	for (int c = 0; c <= 2000; c++)
		if (l.count_count[c])
			printf("COUNT %d %llu\n", c, (unsigned long long)l.count_count[c]);
	fflush(stdout);
	close(l.fd);
	return 0;
}
