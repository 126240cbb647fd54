/* SPDX-License-Identifier: MIT */
#pragma once

struct board_daemon;
struct board_stat_server;

/* Serve the daemon's health as JSON lines on a unix socket at path (a stale
   socket there is replaced).  Own thread, normal priority. */
int board_stat_server_start(struct board_daemon *d, const char *path, struct board_stat_server **ret_server);
/* Stop, remove the socket, free; accepts NULL; returns NULL. */
struct board_stat_server *board_stat_server_free(struct board_stat_server *s);
