/* SPDX-License-Identifier: MIT */
/*
 * config-status.c - the vehicles' retained outcome of a remote board
 * configuration (railmon/<vehicle>/config/status, docs/remote-config.md)
 * into the database's vehicle_config_status (grd_db_config_status()), for
 * the dashboard's vehicle page.  The payload is the vehicle's word, so it
 * is read here by a parser of exactly the JSON the vehicle writes
 * (cli/run-cmd.c rconf_said: version, outcome, why) with limits, not by
 * the database: anything else is refused and counted.  A status the
 * database cannot take now is kept, the newest per vehicle, and written
 * again between messages (grd_idle), as status.c does for online/offline.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ground.h"
#include "basic/name.h"
#include "basic/hex.h"
#include "basic/utf8.h"

/* ---- the payload ---- */

struct jp {
	const char *s, *end;
};

static void skip_ws(struct jp *p)
{
	while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r'))
		p->s++;
}

static bool eat(struct jp *p, char c)
{
	skip_ws(p);
	if (p->s == p->end || *p->s != c)
		return false;
	p->s++;
	return true;
}

static int hex4(const char *s, const char *end, unsigned *ret)
{
	unsigned v = 0;

	if (end - s < 4)
		return -EBADMSG;
	for (int i = 0; i < 4; i++) {
		int d = basic_hex_digit(s[i]);

		if (d < 0)
			return -EBADMSG;
		v = v << 4 | (unsigned)d;
	}
	*ret = v;
	return 0;
}

/* Append code point cp as UTF-8 to out (room for n bytes at *o). */
static int put_cp(unsigned cp, char *out, size_t n, size_t *o)
{
	char b[4];
	size_t k;

	if (cp < 0x80) {
		b[0] = (char)cp, k = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3f)), k = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f)), k = 3;
	} else {
		b[0] = (char)(0xf0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (char)(0x80 | (cp >> 6 & 0x3f)), b[3] = (char)(0x80 | (cp & 0x3f)), k = 4;
	}
	if (*o + k > n)
		return -EMSGSIZE;
	memcpy(out + *o, b, k);
	*o += k;
	return 0;
}

/* A JSON string into out (NUL-terminated, at most n - 1 bytes): escapes
   decoded, a raw control byte, \u0000 (PostgreSQL's text has no NUL) and a
   lone surrogate refused.  The bytes were checked as UTF-8 before. */
static int string(struct jp *p, char *out, size_t n)
{
	size_t o = 0;

	if (!eat(p, '"'))
		return -EBADMSG;
	while (p->s < p->end && *p->s != '"') {
		unsigned char c = (unsigned char)*p->s++;
		unsigned cp, lo;

		if (c < 0x20)
			return -EBADMSG;
		if (c != '\\') {
			if (o + 1 >= n)
				return -EMSGSIZE;
			out[o++] = (char)c;
			continue;
		}
		if (p->s == p->end)
			return -EBADMSG;
		c = (unsigned char)*p->s++;
		switch (c) {
		case '"': case '\\': case '/': cp = c; break;
		case 'b': cp = '\b'; break;
		case 'f': cp = '\f'; break;
		case 'n': cp = '\n'; break;
		case 'r': cp = '\r'; break;
		case 't': cp = '\t'; break;
		case 'u':
			if (hex4(p->s, p->end, &cp) < 0)
				return -EBADMSG;
			p->s += 4;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return -EBADMSG;
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' || hex4(p->s + 2, p->end, &lo) < 0 ||
				    lo < 0xdc00 || lo > 0xdfff)
					return -EBADMSG;
				p->s += 6;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			}
			if (cp == 0)
				return -EBADMSG;
			break;
		default:
			return -EBADMSG;
		}
		if (put_cp(cp, out, n - 1, &o) < 0)
			return -EMSGSIZE;
	}
	if (p->s == p->end)
		return -EBADMSG;
	p->s++;
	out[o] = 0;
	return 0;
}

/* A whole number 0..INT64_MAX (PostgreSQL's bigint): digits only, no
   sign, fraction, exponent or leading zero. */
static int number(struct jp *p, uint64_t *ret)
{
	uint64_t v = 0;
	const char *start;

	skip_ws(p);
	start = p->s;
	while (p->s < p->end && *p->s >= '0' && *p->s <= '9') {
		unsigned d = (unsigned)(*p->s++ - '0');

		if (v > ((uint64_t)INT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (p->s == start || (*start == '0' && p->s - start > 1) ||
	    (p->s < p->end && (*p->s == '.' || *p->s == 'e' || *p->s == 'E')))
		return -EBADMSG;
	*ret = v;
	return 0;
}

int grd_config_status_parse(const void *payload, size_t len, struct grd_config_status_msg *ret)
{
	struct jp p = { payload, (const char *)payload + len };
	struct grd_config_status_msg m = { 0 };
	char key[16];
	unsigned seen = 0;
	int r;

	if (!payload || !ret)
		return -EINVAL;
	if (len > GRD_CONFIG_STATUS_MAX)
		return -EMSGSIZE;
	if (basic_utf8_valid(payload, len) != len)
		return -EILSEQ;
	if (!eat(&p, '{'))
		return -EBADMSG;
	do {
		unsigned bit;

		if ((r = string(&p, key, sizeof(key))) < 0 || !eat(&p, ':'))
			return -EBADMSG;
		bit = !strcmp(key, "version") ? 1 : !strcmp(key, "outcome") ? 2 : !strcmp(key, "why") ? 4 : 0;
		if (!bit || (seen & bit))
			return -EBADMSG; /* an unknown or repeated member */
		seen |= bit;
		if (bit == 1)
			r = number(&p, &m.version);
		else if (bit == 2)
			r = string(&p, m.outcome, sizeof(m.outcome));
		else
			r = string(&p, m.why, sizeof(m.why));
		if (r < 0)
			return r == -ERANGE ? r : -EBADMSG;
	} while (eat(&p, ','));
	if (!eat(&p, '}'))
		return -EBADMSG;
	skip_ws(&p);
	if (p.s != p.end || seen != 7)
		return -EBADMSG;
	if (strcmp(m.outcome, "applied") && strcmp(m.outcome, "refused") && strcmp(m.outcome, "rolled back"))
		return -EBADMSG;
	*ret = m;
	return 0;
}

/* ---- the database, and what it cannot take yet ---- */

/* Statuses of vehicles the database does not have yet (a vehicle says
   "applied" at its first connect, perhaps before its first Batch is
   committed) or that the database could not take now: the newest per
   vehicle, at most GRD_CONFIG_PENDING_MAX (a flood of names pushes the
   oldest out, counted in config_status_lost). */
#define GRD_CONFIG_PENDING_MAX 256

struct grd_config_pending {
	char vehicle[BASIC_VEHICLE_NAME_MAX + 1];
	bool unknown;             /* -ENOENT: tried again when the database has new vehicles */
	struct grd_config_status_msg m;
};

struct grd_config_status {
	struct grd_config_pending *p[GRD_CONFIG_PENDING_MAX];
	size_t n;
	uint64_t ids_seen;
};

static void drop(struct grd_config_status *s, size_t i)
{
	free(s->p[i]);
	memmove(s->p + i, s->p + i + 1, (s->n - i - 1) * sizeof(s->p[0]));
	s->n--;
}

static struct grd_config_pending *pending_find(struct grd_config_status *s, const char *vehicle)
{
	for (size_t i = 0; s && i < s->n; i++)
		if (!strcmp(s->p[i]->vehicle, vehicle))
			return s->p[i];
	return NULL;
}

/* Keep m for vehicle (replacing an older one of it). */
static void keep(struct grd *g, const char *vehicle, const struct grd_config_status_msg *m, bool unknown)
{
	struct grd_config_status *s = g->config_status;
	struct grd_config_pending *e;

	if (!s && !(s = g->config_status = calloc(1, sizeof(*s)))) {
		g->config_status_lost++;
		return;
	}
	if ((e = pending_find(s, vehicle))) {
		e->m = *m;
		return;
	}
	if (s->n == GRD_CONFIG_PENDING_MAX) {
		drop(s, 0);
		g->config_status_lost++;
	}
	if (!(e = malloc(sizeof(*e)))) {
		g->config_status_lost++;
		return;
	}
	strcpy(e->vehicle, vehicle);
	e->unknown = unknown;
	e->m = *m;
	s->p[s->n++] = e;
}

void grd_on_config_status(void *ctx, const char *topic, const void *payload, size_t len)
{
	struct grd *g = ctx;
	char vehicle[BASIC_VEHICLE_NAME_MAX + 1];
	struct grd_config_status_msg *m;
	struct grd_config_pending *e;
	int r;

	/* an empty payload is a retained message being cleared: nothing to record */
	if (!len)
		return;
	/* the vehicle is the topic's, never the payload's: the broker's ACL
	   lets a vehicle write only railmon/<its name>/... */
	if (!basic_topic_vehicle(topic, vehicle, sizeof(vehicle))) {
		g->config_status_bad++;
		return;
	}
	if (!(m = malloc(sizeof(*m)))) {
		g->config_status_lost++;
		return;
	}
	if (grd_config_status_parse(payload, len, m) < 0) {
		g->config_status_bad++;
		free(m);
		return;
	}
	g->config_status_seen++;
	/* one of this vehicle waits: this newer one takes its place, in order */
	if ((e = pending_find(g->config_status, vehicle))) {
		e->m = *m;
		free(m);
		return;
	}
	r = grd_db_config_status(g->db, vehicle, m);
	if (r < 0)
		keep(g, vehicle, m, r == -ENOENT);
	free(m);
}

void grd_config_status_retry(struct grd *g)
{
	struct grd_config_status *s = g->config_status;
	struct grd_db_stats st;
	bool new_ids;

	if (!s || !s->n)
		return;
	grd_db_stats(g->db, &st);
	new_ids = st.vehicle_ids != s->ids_seen;
	s->ids_seen = st.vehicle_ids;
	for (size_t i = 0; i < s->n;) {
		int r;

		if (s->p[i]->unknown && !new_ids) {
			i++;
			continue;
		}
		r = grd_db_config_status(g->db, s->p[i]->vehicle, &s->p[i]->m);
		if (r == 0) {
			drop(s, i);
		} else if (r == -ENOENT) {
			s->p[i++]->unknown = true;
		} else {
			break; /* the database is away: again at the next idle */
		}
	}
}

uint64_t grd_config_status_waiting(const struct grd *g)
{
	return g->config_status ? g->config_status->n : 0;
}

void grd_config_status_free(struct grd *g)
{
	struct grd_config_status *s = g->config_status;

	for (size_t i = 0; s && i < s->n; i++)
		free(s->p[i]);
	free(s);
	g->config_status = NULL;
}
