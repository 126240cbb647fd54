/* SPDX-License-Identifier: MIT */
/*
 * reply.c - an error answer as JSON ({"error", "param", "status"}), which
 * the server (a bad Host, method or token), the API and the live stream
 * all give.  Its own file, below them: server.c dispatches to api.c and
 * live.c, and they answer errors without going back up to server.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "web/web-private.h"

int web_reply_error(struct web_reply *r, unsigned status, const char *param, const char *fmt, ...)
{
	char why[512], qwhy[1100], qparam[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (basic_json_string_buf(why, qwhy, sizeof(qwhy)) < 0)
		strcpy(qwhy, "\"(reason too long)\"");
	if (!param || basic_json_string_buf(param, qparam, sizeof(qparam)) < 0)
		strcpy(qparam, "null");
	free(r->body);
	r->status = status;
	r->type = "application/json";
	r->body = NULL;
	if (asprintf(&r->body, "{\"error\":%s,\"param\":%s,\"status\":%u}\n", qwhy, qparam, status) < 0)
		r->body = NULL;
	r->len = r->body ? strlen(r->body) : 0;
	return 0;
}

