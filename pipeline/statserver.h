/* SPDX-License-Identifier: MIT */
/*
 * statserver.h - the stat socket of a running daemon (statserver.c) and
 * what its clients (cli/stat-cmd.c, cli/watch-cmd.c) share with it: the
 * lines it answers (health entries; the channels' latest values after
 * the clock line), written here, read back by the clients.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

struct pl_daemon;
struct rec_health;
struct pl_stat_server;

/* Serve the daemon's health as JSON lines on a unix socket at path (a stale
   socket there is replaced).  Own thread, normal priority. */
int pl_stat_server_start(struct pl_daemon *d, const char *path, struct pl_stat_server **ret_server);
/* Stop, remove the socket, free; accepts NULL; returns NULL. */
struct pl_stat_server *pl_stat_server_free(struct pl_stat_server *s);

/* A socket address for path ("@name": the abstract namespace); returns its
   length.  path must fit sun_path (the caller checks). */
socklen_t pl_stat_addr(const char *path, struct sockaddr_un *sa);
/* A client's connection: request (NULL: none, the health; "channels\n")
   sent, the writing side shut, the answer to read from *ret_f (the
   caller fcloses it).  0, -ENAMETOOLONG, or -errno of connect or send. */
int pl_stat_open(const char *path, const char *request, FILE **ret_f);

/* The health entries' lines (one JSON line per entry), as the socket
   answers and `stat --json` prints them.  Names are escaped. */
void pl_stat_health_json(FILE *out, const struct rec_health *h);

/* A channel's latest value as a daemon knows it. */
struct pl_stat_value {
	uint32_t id;
	const char *name, *unit, *source;
	const char *label;         /* the value table's text for value, NULL if none */
	double value;
	int64_t t_ns;              /* CLOCK_REALTIME of the sample; 0: never received */
	uint32_t quality;
	const char *text;          /* a text channel's text (Modbus type = string), else NULL */
};

/* One line of the stat socket's "channels" answer: id, name, unit, source,
   then value ("nan", "inf", "-inf" as strings), t_ns, age_ms (now_ns, the
   daemon's realtime clock, minus t_ns), quality and label, or value and
   age_ms null for a channel never received. */
void pl_stat_live_json(FILE *out, const struct pl_stat_value *v, int64_t now_ns);

/* The clock the "channels" answer's times and ages are on (docs/time.md):
   its first line, {"clock":"synced"|"unsynced","clock_max_error_us":N},
   from the kernel's adjtimex word on CLOCK_REALTIME. */
struct pl_stat_clock {
	bool unsynced;
	uint64_t max_error_us;
};

void pl_stat_clock_json(FILE *out, const struct pl_stat_clock *c);
