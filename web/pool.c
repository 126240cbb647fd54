/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the database connections of railmon serve: read-only
 * (default_transaction_read_only, so even a wrong query cannot write) and
 * bounded by a statement timeout (every query's time budget), pooled up
 * to cfg.pool so a busy dashboard waits instead of opening connections
 * without end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "web/web-private.h"

PGconn *web_db_connect(const web_server_t *srv, char *err, size_t err_len)
{
	char opts[160];
	const char *keys[] = { "dbname", "options", "application_name", NULL };
	const char *vals[] = { srv->cfg.db_url, opts, "railmon serve", NULL };
	PGconn *c;

	/* expand_dbname: the URL's own parameters apply, ours are added */
	snprintf(opts, sizeof(opts), "-c default_transaction_read_only=on -c statement_timeout=%u",
	         srv->cfg.timeout_ms);
	c = PQconnectdbParams(keys, vals, 1);
	if (c && PQstatus(c) == CONNECTION_OK)
		return c;
	snprintf(err, err_len, "%s", c ? PQerrorMessage(c) : "out of memory");
	/* libpq's messages end in a newline */
	err[strcspn(err, "\n")] = '\0';
	PQfinish(c);
	return NULL;
}

PGconn *web_pool_get(web_server_t *srv, char *err, size_t err_len)
{
	PGconn *c = NULL;

	pthread_mutex_lock(&srv->lock);
	while (!srv->nidle && srv->nopen >= srv->cfg.pool)
		pthread_cond_wait(&srv->freed, &srv->lock);
	if (srv->nidle)
		c = srv->idle[--srv->nidle];
	else
		srv->nopen++;
	pthread_mutex_unlock(&srv->lock);
	if (c)
		return c;
	/* connect outside the lock: it may take a while */
	c = web_db_connect(srv, err, err_len);
	if (!c) {
		pthread_mutex_lock(&srv->lock);
		srv->nopen--;
		pthread_cond_signal(&srv->freed);
		pthread_mutex_unlock(&srv->lock);
	}
	return c;
}

void web_pool_put(web_server_t *srv, PGconn *conn, bool ok)
{
	/* a connection whose server went away is not kept: the next request
	   connects again (the database came back, or says why not) */
	if (!ok && PQstatus(conn) != CONNECTION_OK) {
		PQfinish(conn);
		conn = NULL;
	}
	pthread_mutex_lock(&srv->lock);
	if (conn)
		srv->idle[srv->nidle++] = conn;
	else
		srv->nopen--;
	pthread_cond_signal(&srv->freed);
	pthread_mutex_unlock(&srv->lock);
}

void web_pool_close(web_server_t *srv)
{
	while (srv->nidle)
		PQfinish(srv->idle[--srv->nidle]);
	srv->nopen = 0;
}
