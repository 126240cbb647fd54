/* SPDX-License-Identifier: MIT */
/*
 * web-none.c - railmon without libpq or libmicrohttpd (cross builds):
 * `railmon serve` is not there, and says so.
 */
#include <errno.h>
#include <stdio.h>

#include "web/web.h"

const struct web_asset web_assets[] = { { "/", "text/plain", (const unsigned char *)"", 0 } };
const unsigned web_assets_n = 0;

int web_listen_is_loopback(const char *listen)
{
	return -ENOTSUP;
}

int web_server_new(const struct web_cfg *cfg, char *ret_error, size_t error_len, web_server_t **ret_srv)
{
	if (ret_error && error_len)
		snprintf(ret_error, error_len, "this railmon was built without PostgreSQL (libpq) or libmicrohttpd: "
		         "`railmon serve` needs a build with libpq-dev and libmicrohttpd-dev");
	return -ENOTSUP;
}

unsigned web_server_port(const web_server_t *srv)
{
	return 0;
}

void web_server_stats(web_server_t *srv, struct web_stats *ret_stats)
{
}

web_server_t *web_server_free(web_server_t *srv)
{
	return NULL;
}
