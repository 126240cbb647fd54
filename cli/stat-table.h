/* SPDX-License-Identifier: MIT */
/*
 * stat-table.h - what `railmon stat` shows: health entries (record/batch.h's
 * struct rec_health) as a table or as the stat socket's JSON lines (one
 * per entry, then a "daemon" line with the record counters), read from a
 * daemon's socket or from the Health entries a recorded log carries.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

struct rec_health;


/* The table's header line, and one entry as its row: backlog only for
   the log and the uplink, latency only once measured, a bus's device
   state and reopens, the uplink's state. */
void cli_health_header(FILE *out);
void cli_health_row(FILE *out, const struct rec_health *h);

/* One health line of the stat socket (pl_stat_health_json) into *ret:
   the fields the table shows; blind_ms UINT32_MAX when the line has none. */
void cli_stat_health_parse(const char *line, struct rec_health *ret);

/* The lines a daemon's stat socket sent (in, to its end): copied (json)
   or as the table, the "daemon" line as a sentence.  Returns the lines
   read. */
unsigned cli_stat_lines(FILE *in, bool json, FILE *out);

/* What the "daemon" line says of realtime (seen: there was one). */
struct cli_stat_daemon {
	bool seen;
	int rt_priority, cpu_latency_us;
	bool pm_qos_held;
};

/* cli_stat_lines, and the daemon line's realtime fields into *ret_daemon
   (may be NULL). */
unsigned cli_stat_lines_daemon(FILE *in, bool json, FILE *out, struct cli_stat_daemon *ret_daemon);

/* The latest Health entries in the log in dir, one per name, on out;
   unreadable parts said on err.  0, 1 if parts of the log could not be
   read, or -errno (-ENOENT: no health entries, said). */
int cli_stat_log(const char *dir, bool json, FILE *out, FILE *err);
