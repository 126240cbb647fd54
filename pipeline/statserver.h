/* SPDX-License-Identifier: MIT */
/*
 * statserver.h - the stat socket of a running daemon (statserver.c) and
 * what its clients (cli/stat.c, cli/watch.c) share with it.
 */
#pragma once

#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

struct pl_daemon;
struct rec_health;
struct rpt_stat_server;

/* Serve the daemon's health as JSON lines on a unix socket at path (a stale
   socket there is replaced).  Own thread, normal priority. */
int rpt_stat_server_start(struct pl_daemon *d, const char *path, struct rpt_stat_server **ret_server);
/* Stop, remove the socket, free; accepts NULL; returns NULL. */
struct rpt_stat_server *rpt_stat_server_free(struct rpt_stat_server *s);

/* A socket address for path ("@name": the abstract namespace); returns its
   length.  path must fit sun_path (the caller checks). */
socklen_t rpt_stat_addr(const char *path, struct sockaddr_un *sa);
/* A client's connection: request (NULL: none, the health; "channels\n")
   sent, the writing side shut, the answer to read from *ret_f (the
   caller fcloses it).  0, -ENAMETOOLONG, or -errno of connect or send. */
int rpt_stat_open(const char *path, const char *request, FILE **ret_f);
