/* SPDX-License-Identifier: MIT */
/*
 * server.c - railmon serve's HTTP side (libmicrohttpd, a thread per
 * connection, so an SSE stream may block on the database's socket): the
 * listening socket (loopback unless a token is set), the token check,
 * the static assets, the dispatch to the API and the counters.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "record/names.h"
#include "web/web-private.h"

/* Loaded only from here: the page may run no script, style or image from
   elsewhere (depots are often offline, and nothing should leak out). */
#define WEB_CSP "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"

static int split_listen(const char *listen, char *host, size_t host_len, char *port, size_t port_len)
{
	const char *colon;
	size_t n;

	if (listen[0] == '[') {
		const char *end = strchr(listen, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = (size_t)(end - listen - 1);
		colon = end + 1;
		listen++;
	} else {
		colon = strrchr(listen, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - listen);
	}
	if (n >= host_len || strlen(colon + 1) >= port_len || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return -EINVAL;
	memcpy(host, listen, n);
	host[n] = '\0';
	strcpy(port, colon + 1);
	return atoi(port) <= 65535 ? 0 : -EINVAL;
}

static int resolve(const char *listen, struct addrinfo **ret)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	char host[256], port[8];

	if (split_listen(listen, host, sizeof(host), port, sizeof(port)) < 0)
		return -EINVAL;
	return getaddrinfo(host[0] ? host : NULL, port, &hints, ret) ? -EINVAL : 0;
}

static bool addr_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr, &in6addr_loopback, sizeof(struct in6_addr));
	return false;
}

int web_listen_is_loopback(const char *listen)
{
	struct addrinfo *ai, *p;
	int r = 1;

	if (!listen || resolve(listen, &ai) < 0)
		return -EINVAL;
	/* every address the name gives must be loopback ("" is all of them) */
	for (p = ai; p; p = p->ai_next)
		if (!addr_is_loopback(p->ai_addr))
			r = 0;
	freeaddrinfo(ai);
	return r;
}

static int open_listener(web_server_t *srv)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct addrinfo *ai;
	int fd, one = 1, r = 0;

	if (resolve(srv->cfg.listen, &ai) < 0)
		return -EINVAL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		r = -errno;
	else if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	         bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
	         getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		r = -errno;
	freeaddrinfo(ai);
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	srv->fd = fd;
	/* the address bound, numeric: a Host a token-less server answers */
	if (getnameinfo((struct sockaddr *)&ss, sl, srv->bound, sizeof(srv->bound), NULL, 0, NI_NUMERICHOST))
		srv->bound[0] = '\0';
	srv->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                          : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

/* Constant time: the comparison does not tell how much of a guess was right. */
static bool same_secret(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la; i++)
		d |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
	return d == 0;
}

static bool cookie_token(struct MHD_Connection *c, const char *token)
{
	const char *v = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "railmon_token");

	return v && same_secret(v, token);
}

/* 1 authorised by a header or cookie, 2 by ?token= (set the cookie), 0 not. */
static int authorised(const web_server_t *srv, struct MHD_Connection *c)
{
	const char *h, *q;

	if (!srv->token)
		return 1;
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (h && !strncmp(h, "Bearer ", 7) && same_secret(h + 7, srv->token))
		return 1;
	if (cookie_token(c, srv->token))
		return 1;
	q = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	return q && same_secret(q, srv->token) ? 2 : 0;
}

static const struct web_asset *find_asset(const char *url)
{
	if (!strcmp(url, "/"))
		url = "/index.html";
	for (unsigned i = 0; i < web_assets_n; i++)
		if (!strcmp(web_assets[i].path, url))
			return &web_assets[i];
	return NULL;
}

static void count(web_server_t *srv, const struct web_reply *r)
{
	pthread_mutex_lock(&srv->lock);
	srv->st.requests++;
	if (r->status >= 400 && r->status < 500)
		srv->st.bad_requests++;
	if (r->status == MHD_HTTP_UNAUTHORIZED)
		srv->st.unauthorised++;
	if (r->status >= 500) {
		srv->st.db_errors++;
		if (r->body)
			snprintf(srv->st.last_error, sizeof(srv->st.last_error), "%.*s", (int)r->len, r->body);
	}
	pthread_mutex_unlock(&srv->lock);
}

/* Did the client reach us over TLS (a reverse proxy's X-Forwarded-Proto
   or Forwarded: proto=https)?  Then the token's cookie is Secure: a
   browser never sends it over plain HTTP.  A client lying here only
   loses its own cookie. */
static bool over_tls(struct MHD_Connection *c)
{
	const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-Proto");
	const char *f = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Forwarded");

	return (x && !strcasecmp(x, "https")) || (f && strcasestr(f, "proto=https"));
}

static enum MHD_Result send_reply(web_server_t *srv, struct MHD_Connection *c, struct web_reply *r, int auth)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char cookie[600], retry[16];

	count(srv, r);
	if (!r->body) {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
		r->status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	} else {
		resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
		r->body = NULL;
	}
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type ? r->type : "application/json");
	MHD_add_response_header(resp, "Content-Security-Policy", WEB_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (auth == 2) {
		snprintf(cookie, sizeof(cookie), "railmon_token=%s; Path=/; HttpOnly; SameSite=Strict%s", srv->token,
		         over_tls(c) ? "; Secure" : "");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_SET_COOKIE, cookie);
	}
	if (r->retry_after_s) {
		snprintf(retry, sizeof(retry), "%u", r->retry_after_s);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry);
	}
	ret = MHD_queue_response(c, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result send_live(web_server_t *srv, struct MHD_Connection *c, int auth)
{
	struct web_reply r = { 0 };
	struct MHD_Response *resp = web_live_response(srv, &r);
	enum MHD_Result ret;

	if (!resp)
		return send_reply(srv, c, &r, auth);
	count(srv, &(struct web_reply){ .status = 200 });
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	/* nginx would otherwise hold the stream back in its buffer */
	MHD_add_response_header(resp, "X-Accel-Buffering", "no");
	ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- the header deadline ----
   libmicrohttpd's timeout is an idle one: a client sending a header line
   every few seconds kept its connection for ever (issue 26: 128 such
   connections held every slot).  Each connection gets a deadline for its
   request's line and headers, from its start or its previous answer; the
   watchdog shuts down (never closes: the fd is libmicrohttpd's) the socket
   of one past it, and libmicrohttpd then ends the connection as closed by
   the client.  The list is under srv->lock and an entry leaves it at
   MHD_CONNECTION_NOTIFY_CLOSED, before libmicrohttpd closes the fd, so
   the fd shut down is always still this connection's. */
static struct web_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return i ? i->socket_context : NULL;
}

/* Its headers came: the request is being answered (the budget bounds it). */
static void conn_busy(web_server_t *srv, struct MHD_Connection *c)
{
	struct web_conn *wc = conn_of(c);

	pthread_mutex_lock(&srv->lock);
	if (wc)
		wc->busy = true;
	pthread_mutex_unlock(&srv->lock);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req, enum MHD_RequestTerminationCode toe)
{
	web_server_t *srv = cls;
	struct web_conn *wc = conn_of(c);

	(void)req, (void)toe;
	pthread_mutex_lock(&srv->lock);
	if (wc) {
		/* kept alive: the next request's headers are due in time too */
		wc->busy = false;
		wc->deadline_ns = basic_mono_ns() + (int64_t)srv->cfg.header_timeout_s * BASIC_NS_PER_SEC;
	}
	pthread_mutex_unlock(&srv->lock);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **ctx, enum MHD_ConnectionNotificationCode toe)
{
	web_server_t *srv = cls;
	struct web_conn *wc = *ctx;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *i = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		wc = calloc(1, sizeof(*wc));
		if (!wc || !i) {
			/* not watched: it still has the idle timeout */
			free(wc);
			return;
		}
		wc->fd = i->connect_fd;
		wc->deadline_ns = basic_mono_ns() + (int64_t)srv->cfg.header_timeout_s * BASIC_NS_PER_SEC;
		pthread_mutex_lock(&srv->lock);
		wc->next = srv->conns;
		if (srv->conns)
			srv->conns->prev = wc;
		srv->conns = wc;
		pthread_mutex_unlock(&srv->lock);
		*ctx = wc;
		return;
	}
	if (!wc)
		return;
	pthread_mutex_lock(&srv->lock);
	if (wc->prev)
		wc->prev->next = wc->next;
	else
		srv->conns = wc->next;
	if (wc->next)
		wc->next->prev = wc->prev;
	pthread_mutex_unlock(&srv->lock);
	free(wc);
	*ctx = NULL;
}

static void *watchdog(void *arg)
{
	web_server_t *srv = arg;

	pthread_mutex_lock(&srv->lock);
	while (!atomic_load(&srv->stopping)) {
		int64_t now = basic_mono_ns();
		struct timespec until = basic_ns_to_ts(now + BASIC_NS_PER_SEC / 2);

		for (struct web_conn *wc = srv->conns; wc; wc = wc->next)
			if (!wc->busy && wc->fd >= 0 && now > wc->deadline_ns) {
				shutdown(wc->fd, SHUT_RDWR);
				/* once: libmicrohttpd closes it soon */
				wc->fd = -1;
				srv->st.slow_closed++;
			}
		pthread_cond_timedwait(&srv->wake, &srv->lock, &until);
	}
	pthread_mutex_unlock(&srv->lock);
	return NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_len, void **req)
{
	web_server_t *srv = cls;
	struct web_reply r = { .status = 200, .type = "application/json",
	                       .deadline_ns = basic_mono_ns() + (int64_t)srv->cfg.timeout_ms * BASIC_NS_PER_MS };
	const struct web_asset *a;
	const char *host;
	int auth;

	conn_busy(srv, c);
	/* Without a token, only a page this server's own address or
	   localhost names may ask (DNS rebinding: a hostile site's name made
	   to resolve to 127.0.0.1 sends its own name as Host). */
	host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	if (!srv->token && (!host || (strcasecmp(host, srv->host_ok[0]) && strcasecmp(host, srv->host_ok[1]) &&
	                              strcasecmp(host, srv->host_ok[2])))) {
		web_reply_error(&r, MHD_HTTP_MISDIRECTED_REQUEST, "Host", "Host '%.100s': this server answers %s, %s or %s only",
		                host ? host : "", srv->host_ok[0], srv->host_ok[2], srv->host_ok[1]);
		return send_reply(srv, c, &r, 0);
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		web_reply_error(&r, MHD_HTTP_METHOD_NOT_ALLOWED, NULL, "%s: the dashboard is read-only (GET only)", method);
		return send_reply(srv, c, &r, 0);
	}
	auth = authorised(srv, c);
	if (!auth) {
		web_reply_error(&r, MHD_HTTP_UNAUTHORIZED, "token",
		                "a token is required: Authorization: Bearer TOKEN, or open /?token=TOKEN once");
		return send_reply(srv, c, &r, 0);
	}
	if (!strcmp(url, "/api/live"))
		return send_live(srv, c, auth);
	if (!strncmp(url, "/api/", 5)) {
		if (web_api(srv, c, url, &r) < 0)
			web_reply_error(&r, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, "out of memory");
		return send_reply(srv, c, &r, auth);
	}
	a = find_asset(url);
	if (!a) {
		web_reply_error(&r, MHD_HTTP_NOT_FOUND, NULL, "no such page: %.200s", url);
		return send_reply(srv, c, &r, auth);
	}
	r.body = malloc(a->len ? a->len : 1);
	if (r.body) {
		memcpy(r.body, a->data, a->len);
		r.len = a->len;
	}
	r.type = a->type;
	return send_reply(srv, c, &r, auth);
}

static int event_names(web_server_t *srv)
{
	size_t len = 3, o = 0;
	unsigned n = 0;

	/* codes are small (with holes between groups); the array is indexed
	   by code + 1 in SQL, NULL where the schema names no code */
	for (unsigned i = 0; i < 4096; i++)
		if (rec_event_name(i))
			n = i + 1;
	for (unsigned i = 0; i < n; i++)
		len += (rec_event_name(i) ? strlen(rec_event_name(i)) : 4) + 1;
	srv->event_names = malloc(len);
	if (!srv->event_names)
		return -ENOMEM;
	srv->event_names[o++] = '{';
	for (unsigned i = 0; i < n; i++)
		o += (size_t)sprintf(srv->event_names + o, "%s%s", i ? "," : "", rec_event_name(i) ? rec_event_name(i) : "NULL");
	strcpy(srv->event_names + o, "}");
	return 0;
}

static int copy_cfg(web_server_t *srv, const struct web_cfg *cfg)
{
	srv->cfg = *cfg;
	srv->db_url = strdup(cfg->db_url);
	srv->listen = strdup(cfg->listen ? cfg->listen : "127.0.0.1:8080");
	srv->token = cfg->token && *cfg->token ? strdup(cfg->token) : NULL;
	if (!srv->db_url || !srv->listen || (cfg->token && *cfg->token && !srv->token))
		return -ENOMEM;
	srv->cfg.dbc = NULL; /* loaded by web_dbc_open() */
	srv->cfg.db_url = srv->db_url;
	srv->cfg.listen = srv->listen;
	srv->cfg.token = srv->token;
	srv->cfg.pool = cfg->pool ? cfg->pool : 4;
	srv->cfg.timeout_ms = cfg->timeout_ms ? cfg->timeout_ms : 5000;
	srv->cfg.offline_after_s = cfg->offline_after_s ? cfg->offline_after_s : 60;
	srv->cfg.stale_after_s = cfg->stale_after_s ? cfg->stale_after_s : 30;
	srv->cfg.per_address = cfg->per_address ? cfg->per_address : 16;
	srv->cfg.header_timeout_s = cfg->header_timeout_s ? cfg->header_timeout_s : 10;
	if (srv->cfg.per_address > WEB_CONN_MAX)
		srv->cfg.per_address = WEB_CONN_MAX;
	srv->idle = calloc(srv->cfg.pool, sizeof(*srv->idle));
	return srv->idle ? event_names(srv) : -ENOMEM;
}

/* The Host headers a token-less server answers: its listen address and
   localhost, each with the port. */
static void host_names(web_server_t *srv)
{
	char host[256], port[8];

	if (split_listen(srv->listen, host, sizeof(host), port, sizeof(port)) < 0)
		host[0] = '\0';
	snprintf(srv->host_ok[0], sizeof(srv->host_ok[0]), strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, srv->port);
	snprintf(srv->host_ok[1], sizeof(srv->host_ok[1]), "localhost:%u", srv->port);
	snprintf(srv->host_ok[2], sizeof(srv->host_ok[2]), strchr(srv->bound, ':') ? "[%s]:%u" : "%s:%u", srv->bound,
	         srv->port);
}

static int start(web_server_t *srv, char *err, size_t err_len)
{
	int loop = web_listen_is_loopback(srv->cfg.listen), r;
	PGconn *c;

	if (loop < 0)
		return snprintf(err, err_len, "--listen %s: expected HOST:PORT (e.g. 127.0.0.1:8080)", srv->listen), -EINVAL;
	if (!loop && !srv->token)
		return snprintf(err, err_len, "--listen %s is not a loopback address: a token is required "
		                "(--token-file), and TLS from a reverse proxy", srv->listen), -EPERM;
	c = web_db_connect(srv, err, err_len);
	if (!c)
		return -ECONNREFUSED;
	web_pool_put(srv, c, false, true);
	srv->nopen = 1;
	r = open_listener(srv);
	if (r < 0)
		return snprintf(err, err_len, "--listen %s: %s", srv->listen, strerror(-r)), r;
	host_names(srv);
	if (pthread_create(&srv->watchdog, NULL, watchdog, srv))
		return snprintf(err, err_len, "no thread for the header timeout"), -ENOMEM;
	srv->watchdog_on = true;
	/* one address may hold per_address of the WEB_CONN_MAX connections
	   (a slow client cannot take every slot); a connection idle for the
	   header timeout (and 30 s at most) is closed by libmicrohttpd, one
	   that trickles its headers by the watchdog */
	srv->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL,
	                            on_request, srv, MHD_OPTION_LISTEN_SOCKET, srv->fd,
	                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)WEB_CONN_MAX,
	                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, srv->cfg.per_address,
	                            MHD_OPTION_CONNECTION_TIMEOUT, 30u,
	                            MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
	if (!srv->mhd)
		return snprintf(err, err_len, "libmicrohttpd did not start"), -ENOMEM;
	/* MHD_stop_daemon() closes it */
	srv->fd = -1;
	return 0;
}

int web_server_new(const struct web_cfg *cfg, char *ret_error, size_t error_len, web_server_t **ret_srv)
{
	char err[512] = "";
	web_server_t *srv;
	int r;

	if (!cfg || !cfg->db_url || !ret_srv)
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->fd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	/* the pool's wait ends at a CLOCK_MONOTONIC deadline (basic_mono_ns) */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->freed, &ca);
	pthread_cond_init(&srv->wake, &ca);
	pthread_condattr_destroy(&ca);
	r = copy_cfg(srv, cfg);
	if (r == 0)
		r = web_dbc_open(srv, cfg, err, sizeof(err));
	if (r == 0)
		r = start(srv, err, sizeof(err));
	if (r < 0) {
		if (ret_error && error_len)
			snprintf(ret_error, error_len, "%s", err[0] ? err : strerror(-r));
		web_server_free(srv);
		return r;
	}
	*ret_srv = srv;
	return 0;
}

unsigned web_server_port(const web_server_t *srv)
{
	return srv->port;
}

void web_server_stats(web_server_t *srv, struct web_stats *ret_stats)
{
	pthread_mutex_lock(&srv->lock);
	*ret_stats = srv->st;
	pthread_mutex_unlock(&srv->lock);
}

web_server_t *web_server_free(web_server_t *srv)
{
	if (!srv)
		return NULL;
	/* SSE streams see this within their 1 s poll and end */
	atomic_store(&srv->stopping, true);
	if (srv->mhd)
		MHD_stop_daemon(srv->mhd);
	if (srv->watchdog_on) {
		pthread_mutex_lock(&srv->lock);
		pthread_cond_signal(&srv->wake);
		pthread_mutex_unlock(&srv->lock);
		pthread_join(srv->watchdog, NULL);
	}
	if (srv->fd >= 0)
		close(srv->fd);
	if (srv->idle)
		web_pool_close(srv);
	pthread_cond_destroy(&srv->freed);
	pthread_cond_destroy(&srv->wake);
	pthread_mutex_destroy(&srv->lock);
	web_dbc_close(srv);
	free(srv->idle);
	free(srv->event_names);
	free(srv->db_url);
	free(srv->listen);
	free(srv->token);
	free(srv);
	return NULL;
}
