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
	/* jit=off: the dashboard's queries are short, and a plan costed high
	   (an estimate over a big dictionary) spent 250 ms compiling */
	snprintf(opts, sizeof(opts), "-c default_transaction_read_only=on -c statement_timeout=%u -c jit=off",
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

/* May this request take a connection now?  A heavy one leaves the last
   connection to cheap ones (with a pool of one it would starve itself). */
static bool may_take(const web_server_t *srv, bool heavy)
{
	unsigned reserve = srv->cfg.pool > 1 ? 1 : 0;

	if (heavy && srv->heavy_now + reserve >= srv->cfg.pool)
		return false;
	return srv->nidle || srv->nopen < srv->cfg.pool;
}

PGconn *web_pool_get(web_server_t *srv, bool heavy, int64_t deadline_ns, bool *busy, char *err, size_t err_len)
{
	struct timespec until = basic_ns_to_ts(deadline_ns);
	PGconn *c = NULL;
	bool got = true;

	*busy = false;
	pthread_mutex_lock(&srv->lock);
	/* the wait is part of the request's budget (the cond's clock is
	   CLOCK_MONOTONIC): 40 heavy requests ahead do not make the 41st
	   wait for all of them */
	while (!may_take(srv, heavy))
		if (pthread_cond_timedwait(&srv->freed, &srv->lock, &until) == ETIMEDOUT && !may_take(srv, heavy)) {
			got = false;
			break;
		}
	if (got) {
		if (heavy)
			srv->heavy_now++;
		if (srv->nidle)
			c = srv->idle[--srv->nidle];
		else
			srv->nopen++;
	}
	pthread_mutex_unlock(&srv->lock);
	if (!got) {
		*busy = true;
		snprintf(err, err_len, "busy");
		return NULL;
	}
	if (c)
		return c;
	/* connect outside the lock: it may take a while */
	c = web_db_connect(srv, err, err_len);
	if (!c) {
		pthread_mutex_lock(&srv->lock);
		srv->nopen--;
		if (heavy)
			srv->heavy_now--;
		pthread_cond_broadcast(&srv->freed);
		pthread_mutex_unlock(&srv->lock);
	}
	return c;
}

void web_pool_put(web_server_t *srv, PGconn *conn, bool heavy, bool ok)
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
	if (heavy)
		srv->heavy_now--;
	/* all: a cheap waiter may be behind heavy ones that cannot take it */
	pthread_cond_broadcast(&srv->freed);
	pthread_mutex_unlock(&srv->lock);
}

int web_pool_budget(const web_server_t *srv, PGconn *conn, int64_t deadline_ns)
{
	double left_ms = (double)(deadline_ns - basic_mono_ns()) / (double)BASIC_NS_PER_MS;
	char sql[64];
	PGresult *res;
	bool ok;

	if (left_ms >= (double)srv->cfg.timeout_ms - 50.0)
		return 0;
	if (left_ms < 1.0)
		return -1;
	snprintf(sql, sizeof(sql), "SET statement_timeout = %.0f", left_ms);
	res = PQexec(conn, sql);
	ok = PQresultStatus(res) == PGRES_COMMAND_OK;
	PQclear(res);
	return ok ? 1 : -1;
}

void web_pool_budget_reset(PGconn *conn)
{
	PQclear(PQexec(conn, "RESET statement_timeout"));
}

void web_pool_close(web_server_t *srv)
{
	while (srv->nidle)
		PQfinish(srv->idle[--srv->nidle]);
	srv->nopen = 0;
}
