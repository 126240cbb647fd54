/* SPDX-License-Identifier: MIT */
/*
 * status.c - the vehicles' retained status topic (railmon/<vehicle>/status:
 * the forwarder's "online" when it connects, its will "offline" when it
 * vanishes, uplink/forward.c) into the database's vehicle_status
 * (grd_db_status()).  A state the database could not take now is kept,
 * the newest per vehicle, and written again between messages (grd_idle),
 * so an outage does not leave a vehicle shown online after it left.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ground.h"
#include "basic/name.h"

#define GRD_STATUS_VEHICLE_MAX (BASIC_VEHICLE_NAME_MAX + 1)

struct grd_status_pending {
	char vehicle[GRD_STATUS_VEHICLE_MAX];
	bool online;
};

/* States of names the database has no vehicle for: a status message
   makes none, but a vehicle's forwarder says "online" before its first
   Batch, so the newest state of the last GRD_STATUS_UNKNOWN_MAX such
   names waits here and is written once a new vehicle appears in the
   database (a flood of names pushes the oldest out, counted). */
#define GRD_STATUS_UNKNOWN_MAX 256

struct grd_status {
	struct grd_status_pending p[GRD_STATUS_PENDING_MAX];
	size_t n;
	struct grd_status_pending unknown[GRD_STATUS_UNKNOWN_MAX];
	size_t nunknown, unknown_next;
	uint64_t ids_seen;        /* the database's vehicle_ids when they were last tried */
};

static struct grd_status *status_get(struct grd *g)
{
	if (!g->status)
		g->status = calloc(1, sizeof(*g->status));
	return g->status;
}

/* Remember an unknown name's newest state (evicting the oldest). */
static void remember(struct grd *g, const char *vehicle, bool online)
{
	struct grd_status *s = status_get(g);
	size_t i;

	if (!s) {
		g->status_unknown++;
		return;
	}
	for (i = 0; i < s->nunknown && strcmp(s->unknown[i].vehicle, vehicle); i++)
		;
	if (i == s->nunknown && s->nunknown < GRD_STATUS_UNKNOWN_MAX) {
		s->nunknown++;
	} else if (i == s->nunknown) {
		i = s->unknown_next;
		s->unknown_next = (s->unknown_next + 1) % GRD_STATUS_UNKNOWN_MAX;
		g->status_unknown++; /* its state is lost */
	}
	strcpy(s->unknown[i].vehicle, vehicle);
	s->unknown[i].online = online;
}

/* A newer state of the name was written: the remembered one is older. */
static void forget(struct grd *g, const char *vehicle)
{
	struct grd_status *s = g->status;

	for (size_t i = 0; s && i < s->nunknown; i++)
		if (!strcmp(s->unknown[i].vehicle, vehicle)) {
			s->unknown[i] = s->unknown[--s->nunknown];
			s->unknown_next = 0;
			return;
		}
}

/* The remembered states whose vehicle the database has now. */
static void unknown_retry(struct grd *g)
{
	struct grd_status *s = g->status;
	struct grd_db_stats st;

	if (!s || !s->nunknown)
		return;
	grd_db_stats(g->db, &st);
	if (st.vehicle_ids == s->ids_seen)
		return;
	s->ids_seen = st.vehicle_ids;
	for (size_t i = 0; i < s->nunknown;) {
		if (grd_db_status(g->db, s->unknown[i].vehicle, s->unknown[i].online) == 0) {
			s->unknown[i] = s->unknown[--s->nunknown];
			s->unknown_next = 0;
		} else {
			i++;
		}
	}
}

uint64_t grd_status_unknown(const struct grd *g)
{
	return g->status_unknown + (g->status ? g->status->nunknown : 0);
}

/* Keep the vehicle's newest state for later: false when the table is full
   (then it is lost, counted; the broker sends the retained state again at
   the next reconnect). */
static bool keep(struct grd *g, const char *vehicle, bool online)
{
	struct grd_status *s = status_get(g);
	size_t i;

	if (!s)
		return false;
	for (i = 0; i < s->n && strcmp(s->p[i].vehicle, vehicle); i++)
		;
	if (i == GRD_STATUS_PENDING_MAX)
		return false;
	s->n += i == s->n;
	strcpy(s->p[i].vehicle, vehicle);
	s->p[i].online = online;
	return true;
}

void grd_on_status(void *ctx, const char *topic, const void *payload, size_t len)
{
	struct grd *g = ctx;
	char vehicle[GRD_STATUS_VEHICLE_MAX];
	bool online;
	int r;

	/* railmon/<vehicle>/status, "online" or "offline"; an empty payload
	   is a retained message being cleared: nothing to record */
	if (!len)
		return;
	if (!basic_topic_vehicle(topic, vehicle, sizeof(vehicle)) ||
	    !((len == 6 && !memcmp(payload, "online", 6)) || (len == 7 && !memcmp(payload, "offline", 7)))) {
		g->status_bad++;
		return;
	}
	online = len == 6;
	g->status_seen++;
	/* one pending already: this one after it, in order */
	r = g->status && g->status->n ? -EAGAIN : grd_db_status(g->db, vehicle, online);
	if (r == 0)
		forget(g, vehicle);
	if (r == -ENOENT)
		remember(g, vehicle, online); /* no Batch of it yet: a status message makes no vehicle */
	else if (r < 0 && !keep(g, vehicle, online))
		g->status_lost++;
}

void grd_status_retry(struct grd *g)
{
	struct grd_status *s = g->status;
	size_t done = 0;

	int r;

	/* a vehicle unknown now is dropped from the queue (counted), not
	   retried for ever ahead of the others */
	while (s && done < s->n && ((r = grd_db_status(g->db, s->p[done].vehicle, s->p[done].online)) == 0 ||
	                            r == -ENOENT)) {
		if (r == -ENOENT)
			remember(g, s->p[done].vehicle, s->p[done].online);
		else
			forget(g, s->p[done].vehicle);
		done++;
	}
	if (done) {
		memmove(s->p, s->p + done, (s->n - done) * sizeof(s->p[0]));
		s->n -= done;
	}
	if (s && !s->n)
		unknown_retry(g);
}

void grd_status_free(struct grd *g)
{
	free(g->status);
	g->status = NULL;
}
