/* SPDX-License-Identifier: MIT */
/*
 * web.h - `railmon serve`: the fleet dashboard over the ground database
 * (docs/dashboard-api.md).  An HTTP server (libmicrohttpd, one thread per
 * connection) answers a JSON API built by PostgreSQL itself (json_agg)
 * from read-only transactions, with server-side downsampling (min/max per
 * pixel column from the raw samples or rollup_1s/rollup_1min), and serves
 * the dashboard's static assets compiled into railmon (web/ui, uPlot from
 * npm): nothing is loaded from elsewhere at run time.  /api/live is a
 * Server-Sent Events stream fed by LISTEN railmon_batch (the receiver
 * NOTIFYs in each Batch's transaction, so a message leaves at its commit).
 *
 * Every query has a budget: a statement timeout (the cfg's) and a row
 * limit per endpoint; bad input is a 4xx JSON error {"error": why,
 * "param": which}.  Nothing here prints; counters say what happened.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct web_cfg {
	const char *db_url;        /* libpq connection string or URI */
	const char *listen;        /* "HOST:PORT" ("[::1]:8080"); NULL: 127.0.0.1:8080; port 0: any */
	const char *token;         /* required from clients when set (Bearer, cookie or ?token=) */
	unsigned pool;             /* database connections at most; 0 = 4 */
	unsigned timeout_ms;       /* statement budget; 0 = 5000 */
	unsigned offline_after_s;  /* a vehicle is offline after this silence; 0 = 60 */
	unsigned stale_after_s;    /* a channel is stale after this age; 0 = 30 */
	const char *const *dbc;    /* "BUS=FILE": /api/frames decodes the frames of bus index BUS
	                              with the DBC FILE too (web/frames.c) */
	unsigned ndbc;             /* at most WEB_DBC_MAX */
	unsigned per_address;      /* connections from one client address at most; 0 = 16
	                              (behind a reverse proxy every client is its address:
	                              the proxy limits per client, see README) */
	unsigned header_timeout_s; /* a request's line and headers must have come within this
	                              (from the connection's start or the previous answer),
	                              however steadily they trickle in; 0 = 10 */
};
#define WEB_CONN_MAX 128           /* connections at once, all addresses */
#define WEB_TOKEN_MAX 255          /* characters in a token (a longer token file is refused) */
#define WEB_DBC_MAX 16

struct web_stats {
	uint64_t requests;         /* answered, all kinds */
	uint64_t bad_requests;     /* 4xx: bad parameters, unknown vehicle, no token */
	uint64_t unauthorised;     /* of which: no or wrong token */
	uint64_t db_errors;        /* 5xx: the database failed or the budget ran out */
	uint64_t live_clients;     /* SSE streams opened */
	uint64_t live_refused;     /* SSE streams refused (too many) */
	uint64_t live_messages;    /* SSE messages sent */
	uint64_t live_bad_names;   /* notifications left out: a vehicle name outside the rule */
	uint64_t slow_closed;      /* connections closed: no whole request within the header timeout */
	uint64_t busy;             /* 503: no database connection free within the request's budget */
	char last_error[256];      /* the last 5xx, in libpq's words */
};

typedef struct web_server web_server_t;

/* Is HOST (as in cfg->listen) a loopback address?  Resolves names.
   1 yes, 0 no, -EINVAL unparsable. */
int web_listen_is_loopback(const char *listen);

/* Listen and serve until web_server_free().  A non-loopback listen
   without cfg->token is -EPERM (a dashboard open to a network needs a
   token; TLS comes from a reverse proxy).  The database is connected at
   once to check it: -ECONNREFUSED with ret_error set when it cannot be
   reached.  cfg's strings are copied.  0, -EINVAL, -EPERM, -EADDRINUSE,
   -ECONNREFUSED, -ENOMEM.  ret_error (optional, >= 256 bytes) says why. */
int web_server_new(const struct web_cfg *cfg, char *ret_error, size_t error_len, web_server_t **ret_srv);

/* The port listened on (useful with port 0). */
unsigned web_server_port(const web_server_t *srv);

void web_server_stats(web_server_t *srv, struct web_stats *ret_stats);

/* Stop serving (waits for every connection's thread, at most ~1 s for
   an SSE stream) and free.  NULL is fine; returns NULL. */
web_server_t *web_server_free(web_server_t *srv);

/* The dashboard's files compiled in (web/ui and uPlot's dist). */
struct web_asset {
	const char *path;          /* "/index.html" */
	const char *type;          /* MIME type */
	const unsigned char *data;
	size_t len;
};
extern const struct web_asset web_assets[];
extern const unsigned web_assets_n;
