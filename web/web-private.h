/* SPDX-License-Identifier: MIT */
/*
 * web-private.h - shared by web/'s files: the server's state, the
 * database pool, the replies the API builds and the SSE stream.
 */
#pragma once

#include <microhttpd.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/clock.h"

#include "web/web.h"

#define WEB_LIVE_MAX 32          /* SSE streams at once (each holds a connection to the database) */

/* One client connection, for the header deadline (server.c). */
struct web_conn {
	struct web_conn *prev, *next;
	int fd;
	bool busy;                   /* a request is being answered: its headers came */
	int64_t deadline_ns;         /* CLOCK_MONOTONIC: the next request's headers due */
};

struct web_server {
	struct web_cfg cfg;          /* the strings point into the copies below */
	char *db_url, *listen, *token;
	struct MHD_Daemon *mhd;
	int fd;
	unsigned port;
	pthread_mutex_t lock;        /* the pool, the stats, live_now */
	pthread_cond_t freed;
	PGconn **idle;               /* connections not in use */
	unsigned nidle, nopen;
	unsigned live_now;
	struct web_stats st;
	atomic_bool stopping;
	char *event_names;           /* a text[] literal: '{NAME0,NAME1,...}' by code */
	struct web_dbc *dbcs;        /* the ground DBC files by bus (frames.c), read-only once started */
	unsigned ndbc;
	char bound[64];              /* the address listened on, numeric */
	char host_ok[3][300];        /* the Host headers a token-less server accepts (DNS rebinding):
	                                the listen host as given, localhost, the bound address; with the port */
	struct web_conn *conns;      /* every open connection (lock) */
	pthread_t watchdog;          /* closes connections past their header deadline */
	bool watchdog_on;
	pthread_cond_t wake;         /* the watchdog's sleep, cut short by stopping */
	unsigned heavy_now;          /* pooled connections held by heavy requests */
};

/* What a handler answers: a status and a body it allocated (malloc). */
struct web_reply {
	unsigned status;
	char *body;
	size_t len;
	const char *type;
	int64_t deadline_ns;         /* the request's budget ends (basic_mono_ns()): pool wait included */
	bool heavy;                  /* may scan many rows: never the pool's last connection */
	unsigned retry_after_s;      /* a 503 for a busy pool: Retry-After */
};

/* A connection to the database for read-only work with the statement
   budget: pooled (web_pool_get/put) or of its own (SSE, the start's
   check).  NULL with err set when the database cannot be reached. */
PGconn *web_db_connect(const web_server_t *srv, char *err, size_t err_len);
/* web_pool_get waits for a free connection until deadline_ns
   (CLOCK_MONOTONIC, the request's budget): NULL with err "busy" and *busy set when none
   came free by then.  A heavy request may not take the pool's last
   connection, so cheap ones (the overview) never queue behind heavy ones. */
PGconn *web_pool_get(web_server_t *srv, bool heavy, int64_t deadline_ns, bool *busy, char *err, size_t err_len);
/* Back to the pool; a connection that failed (ok false) is closed. */
void web_pool_put(web_server_t *srv, PGconn *conn, bool heavy, bool ok);
void web_pool_close(web_server_t *srv);
/* The statement timeout of conn for what is left of the request's budget
   (until deadline_ns) after the wait for it (the session's default is the
   whole budget): 1 when set (web_pool_budget_reset() after the query), 0
   when the whole budget is left, -1 when it is spent. */
int web_pool_budget(const web_server_t *srv, PGconn *conn, int64_t deadline_ns);
void web_pool_budget_reset(PGconn *conn);

/* r = {"error": ..., "param": param} with status; always returns 0. */
int web_reply_error(struct web_reply *r, unsigned status, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));


/* The /api/ handlers: fill r (an error reply included); 0, or -ENOMEM. */
int web_api(web_server_t *srv, struct MHD_Connection *conn, const char *url, struct web_reply *r);

/* The /api/live stream, or NULL with r set (too many, no database). */
struct MHD_Response *web_live_response(web_server_t *srv, struct web_reply *r);

/* Load cfg->dbc ("BUS=FILE" each) into srv: 0, or -EINVAL with err
   naming the option and the file's line; -ENOMEM.  Closed by
   web_dbc_close() (also after a failure). */
int web_dbc_open(web_server_t *srv, const struct web_cfg *cfg, char *err, size_t err_len);
void web_dbc_close(web_server_t *srv);
/* The frames /api/frames answers with vals (its $1-$6: vehicle, from, to,
   id, bus, limit) on buses with a DBC, decoded: a JSON array of
   {"tus", "seq", "d": [{"name", "value", "unit", "quality", "label"}]} in
   *ret_json (to free).  0, -EBUSY (no connection within req's budget),
   -ECONNREFUSED, -EIO, -ENOMEM. */
int web_frames_decode(web_server_t *srv, const struct web_reply *req, const char *const *vals, char **ret_json);
/* Parse a time: epoch seconds ("1733232000.5") or ISO 8601 UTC
   ("2026-12-03T19:00:00Z", fraction optional).  0, or -EINVAL. */
int web_parse_time(const char *s, double *ret_t);
