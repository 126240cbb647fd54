/* SPDX-License-Identifier: MIT */
/*
 * live.c - /api/live, a Server-Sent Events stream: one connection to the
 * database of its own that LISTENs on railmon_batch; the receiver
 * NOTIFYs there inside each Batch's transaction (ground/ingest.c), so
 * PostgreSQL delivers the message at the commit.  Each becomes
 *     event: batch
 *     data: {"vehicle":"NAME"}
 * A comment line every second without news keeps proxies from closing the
 * stream and notices a client that went away; the first message is
 * "event: hello" once listening (a client knows it misses nothing after).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/name.h"
#include "web/web-private.h"

struct live {
	web_server_t *srv;
	PGconn *conn;
	char out[8192];
	size_t len, off;
};

/* false: left out (a name the ground cannot have names no page either:
   never sent as an empty vehicle, as a name over 600 bytes once was) */
static bool queue(struct live *l, const char *event, const char *vehicle)
{
	char q[600];

	if (!basic_vehicle_name_ok(vehicle) || basic_json_string_buf(vehicle, q, sizeof(q)) < 0)
		return false;
	/* a burst bigger than the buffer waits for the next call */
	if (l->len + strlen(q) + 64 < sizeof(l->out))
		l->len += (size_t)snprintf(l->out + l->len, sizeof(l->out) - l->len,
		                           "event: %s\ndata: {\"vehicle\":%s}\n\n", event, q);
	return true;
}

static void drain(struct live *l)
{
	PGnotify *n;
	unsigned k = 0, bad = 0;

	while ((n = PQnotifies(l->conn))) {
		if (queue(l, "batch", n->extra))
			k++;
		else
			bad++;
		PQfreemem(n);
	}
	if (k || bad) {
		pthread_mutex_lock(&l->srv->lock);
		l->srv->st.live_messages += k;
		l->srv->st.live_bad_names += bad;
		pthread_mutex_unlock(&l->srv->lock);
	}
}

static ssize_t live_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct live *l = cls;
	struct pollfd p;
	size_t n;

	while (l->off == l->len) {
		l->off = l->len = 0;
		if (atomic_load(&l->srv->stopping))
			return MHD_CONTENT_READER_END_OF_STREAM;
		p = (struct pollfd){ .fd = PQsocket(l->conn), .events = POLLIN };
		/* this thread is the connection's own (MHD_USE_THREAD_PER_CONNECTION):
		   blocking here for a second holds up no other client */
		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		if (!PQconsumeInput(l->conn))
			return MHD_CONTENT_READER_END_WITH_ERROR;
		drain(l);
		if (!l->len)
			l->len = (size_t)snprintf(l->out, sizeof(l->out), ": alive\n\n");
	}
	n = l->len - l->off < max ? l->len - l->off : max;
	memcpy(buf, l->out + l->off, n);
	l->off += n;
	return (ssize_t)n;
}

static void live_free(void *cls)
{
	struct live *l = cls;

	PQfinish(l->conn);
	pthread_mutex_lock(&l->srv->lock);
	l->srv->live_now--;
	pthread_mutex_unlock(&l->srv->lock);
	free(l);
}

static bool take_slot(web_server_t *srv)
{
	bool ok;

	pthread_mutex_lock(&srv->lock);
	ok = srv->live_now < WEB_LIVE_MAX;
	if (ok) {
		srv->live_now++;
		srv->st.live_clients++;
	} else {
		srv->st.live_refused++;
	}
	pthread_mutex_unlock(&srv->lock);
	return ok;
}

struct MHD_Response *web_live_response(web_server_t *srv, struct web_reply *r)
{
	struct MHD_Response *resp;
	struct live *l;
	PGresult *res;
	char err[256];

	if (!take_slot(srv)) {
		web_reply_error(r, 503, NULL, "too many live streams (%d)", WEB_LIVE_MAX);
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (l)
		l->srv = srv;
	if (l && !(l->conn = web_db_connect(srv, err, sizeof(err))))
		web_reply_error(r, 503, NULL, "database: %s", err);
	if (l && l->conn) {
		res = PQexec(l->conn, "LISTEN railmon_batch");
		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			web_reply_error(r, 503, NULL, "LISTEN: %s", PQerrorMessage(l->conn));
		PQclear(res);
	}
	if (!l || r->body) {
		if (!l)
			web_reply_error(r, 500, NULL, "out of memory");
		if (l)
			PQfinish(l->conn);
		free(l);
		pthread_mutex_lock(&srv->lock);
		srv->live_now--;
		pthread_mutex_unlock(&srv->lock);
		return NULL;
	}
	l->len = (size_t)snprintf(l->out, sizeof(l->out), "retry: 1000\nevent: hello\ndata: {}\n\n");
	resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, live_read, l, live_free);
	if (!resp)
		live_free(l);
	return resp;
}
