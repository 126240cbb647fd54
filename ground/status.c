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

struct grd_status {
	struct grd_status_pending p[GRD_STATUS_PENDING_MAX];
	size_t n;
};

/* Keep the vehicle's newest state for later: false when the table is full
   (then it is lost, counted; the broker sends the retained state again at
   the next reconnect). */
static bool keep(struct grd *g, const char *vehicle, bool online)
{
	struct grd_status *s = g->status;
	size_t i;

	if (!s && !(s = g->status = calloc(1, sizeof(*s))))
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
	if (r == -ENOENT)
		g->status_unknown++; /* no Batch of it yet: a status message makes no vehicle */
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
		g->status_unknown += r == -ENOENT;
		done++;
	}
	if (done) {
		memmove(s->p, s->p + done, (s->n - done) * sizeof(s->p[0]));
		s->n -= done;
	}
}

void grd_status_free(struct grd *g)
{
	free(g->status);
	g->status = NULL;
}
