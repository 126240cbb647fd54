/* SPDX-License-Identifier: MIT */
/*
 * stat-table.c - what `railmon stat` shows (stat-table.h): health entries as the
 * table or as the stat socket's JSON lines, read from a daemon's socket
 * lines or from the Health entries a recorded log's Batches carry.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/utc.h"
#include "bus/bus.h"
#include "record/batch.h"
#include "report/logfault.h"
#include "report/say.h"
#include "cli/stat-table.h"
#include "pipeline/statserver.h"
#include "storage/stor.h"


void cli_health_header(FILE *out)
{
	fprintf(out, "%-14s %-9s %12s %9s %7s %7s %8s %6s %9s %7s %7s %8s %9s  %-9s %7s %8s\n", "name", "kind", "items",
	            "rate/s", "drops", "errors", "overruns", "ring%", "backlog", "p50us", "p99us", "p99.9us", "max us", "state",
	            "reopens", "blind ms");
}

/* What a TRDP bus's rx_dropped counts, by how it received (enum
   bus_trdp_receive): the kernel's drops of its sockets or of its packet
   ring, or in a replayed capture the TCP bytes the capture missed; a log
   written before Health said how (trdp_receive 0) gets a name true of
   each. */
static const char *rx_dropped_name(uint32_t receive)
{
	switch (receive) {
	case BUS_TRDP_RECEIVE_SOCKET:
		return "socket drops";
	case BUS_TRDP_RECEIVE_CAPTURE:
		return "packet ring drops";
	case BUS_TRDP_RECEIVE_REPLAY:
		return "capture gaps";
	default:
		return "receive drops";
	}
}

/* A TRDP bus's own counters under its row, a line for each part: what
   came, what was refused and why, what its sequence counters and timeouts
   say, MD over TCP, and what the XML decoded. */
static void trdp_rows(FILE *out, const struct rec_health *h)
{
	uint64_t bad = h->trdp_bad_short + h->trdp_bad_fcs + h->trdp_bad_version + h->trdp_bad_type +
	               h->trdp_bad_too_long + h->trdp_bad_truncated;

	fprintf(out, "  %-12s %" PRIu64 " telegrams (%.1f/s), %" PRIu64 " bytes, %" PRIu64 " %s, %" PRIu64
	        " byte ring drops\n", "telegrams", h->trdp_telegrams, h->trdp_telegrams_hz, h->trdp_bytes,
	        h->rx_dropped, rx_dropped_name(h->trdp_receive), h->trdp_byte_ring_drops);
	/* Said, not silent: the times of a kernel without SO_TIMESTAMPNS
	   (qemu-user) are the reads', later by the read's wait. */
	if (h->trdp_opts_refused & BUS_TRDP_NO_KERNEL_TIME)
		fprintf(out, "  %-12s SO_TIMESTAMPNS refused by the kernel: times are read times, not receive times\n",
		        "times");
	if (h->trdp_opts_refused & BUS_TRDP_NO_RXQ_OVFL)
		fprintf(out, "  %-12s SO_RXQ_OVFL refused by the kernel: socket drops read by SO_MEMINFO when idle\n",
		        "drops");
	fprintf(out, "  %-12s %" PRIu64 ": FCS %" PRIu64 ", version %" PRIu64 ", type %" PRIu64 ", length %" PRIu64
	        " (over the maximum %" PRIu64 ", over the bytes %" PRIu64 "), short %" PRIu64 "\n", "bad header", bad,
	        h->trdp_bad_fcs, h->trdp_bad_version, h->trdp_bad_type, h->trdp_bad_too_long + h->trdp_bad_truncated,
	        h->trdp_bad_too_long, h->trdp_bad_truncated, h->trdp_bad_short);
	fprintf(out, "  %-12s gaps %" PRIu64 ", repeats %" PRIu64 ", back %" PRIu64 ", untracked %" PRIu64
	        "; timeouts %" PRIu64 ", back after one %" PRIu64 "; topology changes %" PRIu64 "\n", "sequence",
	        h->trdp_seq_gaps, h->trdp_seq_repeats, h->trdp_seq_back, h->trdp_untracked, h->trdp_timeouts,
	        h->trdp_backs, h->trdp_topology_changes);
	fprintf(out, "  %-12s %" PRIu64 " connections (%" PRIu64 " refused, %" PRIu64 " closed), %" PRIu64
	        " messages, %" PRIu64 " cut, %" PRIu64 " bad header", "MD over TCP", h->trdp_tcp_accepted,
	        h->trdp_tcp_refused, h->trdp_tcp_closed, h->trdp_tcp_messages, h->trdp_tcp_cut, h->trdp_tcp_bad_header);
	if (h->trdp_tcp_listen_errno)
		fprintf(out, "; not listening: %s", strerror((int)h->trdp_tcp_listen_errno));
	fprintf(out, "\n  %-12s %" PRIu64 " telegrams, %" PRIu64 " of a ComId not in the XML, %" PRIu64
	        " short data sets, %" PRIu64 " array items past their channels\n", "decoded", h->trdp_decoded,
	        h->trdp_unknown_comid, h->trdp_short_payload, h->trdp_past_channels);
	/* a capture replayed into several buses: what none of them took */
	if (h->trdp_capture_unmatched)
		fprintf(out, "  %-12s %" PRIu64 " datagrams and TCP connections on its ports addressed to no bus\n",
		        "capture", h->trdp_capture_unmatched);
}

/* backlog: the log's records not yet synced, the uplink's not yet
   acknowledged by the broker; "-" for the rest. */
void cli_health_row(FILE *out, const struct rec_health *h)
{
	bool has_backlog = !strcmp(h->kind, "log") || !strcmp(h->kind, "uplink");

	/* The clock (docs/time.md): steps this run, and the kernel's word on
	   CLOCK_REALTIME in a line of its own (the columns are a bus's). */
	if (!strcmp(h->kind, "clock")) {
		fprintf(out, "%-14s %-9s %" PRIu64 " step%s this run; %s, max error %" PRIu64 " us, estimated %" PRIu64
		        " us, status 0x%04x\n", h->name, h->kind, h->items, h->items == 1 ? "" : "s",
		        h->state[0] ? h->state : "unknown", h->clock_max_error_us, h->clock_est_error_us,
		        h->clock_status);
		return;
	}
	/* A bus's drops are its ring's and its socket's (rx_dropped: the
	   kernel's overflow, SO_RXQ_OVFL or SO_MEMINFO, and for CAN the
	   interface's own drop counters the link check reads): frames and
	   telegrams lost before railmon read them are as lost as those its
	   ring refused.  0 for the other rows.  The dashboard's drops are the
	   same sum (web/api.c, PART_DROPS). */
	uint64_t drops = h->drops + h->rx_dropped;

	fprintf(out, "%-14s %-9s %12" PRIu64 " %9.1f %7" PRIu64 " %7" PRIu64 " %8" PRIu64 " %6u", h->name, h->kind, h->items,
	            h->rate_hz, drops, h->errors, h->overruns, h->ring_fill_pct);
	if (has_backlog)
		fprintf(out, " %9" PRIu64, h->backlog);
	else
		fprintf(out, " %9s", "-");
	if (h->latency_count)
		fprintf(out, " %7u %7u %8u %9.0f", h->latency_p50_us, h->latency_p99_us, h->latency_p999_us,
		            (double)h->latency_max_ns / 1e3);
	else
		fprintf(out, " %7s %7s %8s %9s", "-", "-", "-", "-");
	/* Buses: whether the device is there, how often it came back, and
	   how long it went unheard after its last return (when that was
	   seen); the uplink: connected or offline. */
	if (h->state[0] && strcmp(h->kind, "uplink") && h->reopens && h->blind_ms != UINT32_MAX)
		fprintf(out, "  %-9s %7" PRIu64 " %8" PRIu32 "\n", h->state, h->reopens, h->blind_ms);
	else if (h->state[0] && strcmp(h->kind, "uplink"))
		fprintf(out, "  %-9s %7" PRIu64 " %8s\n", h->state, h->reopens, "-");
	else if (h->state[0])
		fprintf(out, "  %-9s %7s %8s\n", h->state, "-", "-");
	else
		fprintf(out, "  %-9s %7s %8s\n", "-", "-", "-");
	if (!strcmp(h->kind, "trdp"))
		trdp_rows(out, h);
}

/* Minimal reader for our own JSON lines: numeric and string fields by
   key.  The value of key (what follows "key":), NULL if the line has
   none: the one lookup of the readers below. */
static const char *json_value(const char *line, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(line, pat);
	return p ? p + strlen(pat) : NULL;
}

static bool json_u64(const char *line, const char *key, uint64_t *ret)
{
	const char *p = json_value(line, key);

	if (!p)
		return false;
	*ret = strtoull(p, NULL, 10);
	return true;
}

static void json_str(const char *line, const char *key, char *out, size_t len)
{
	const char *p = json_value(line, key), *e;

	out[0] = 0;
	if (!p || *p++ != '"')
		return;
	e = strchr(p, '"');
	if (e)
		snprintf(out, len, "%.*s", (int)(e - p), p);
}

/* A TRDP bus's counters, as pipeline/statserver.c writes them. */
static void trdp_parse(const char *line, struct rec_health *h)
{
	const struct {
		const char *key;
		uint64_t *v;
	} keys[] = {
		{ "telegrams", &h->trdp_telegrams },
		{ "bytes", &h->trdp_bytes },
		{ "seq_gaps", &h->trdp_seq_gaps },
		{ "seq_repeats", &h->trdp_seq_repeats },
		{ "seq_back", &h->trdp_seq_back },
		{ "topology_changes", &h->trdp_topology_changes },
		{ "bad_short", &h->trdp_bad_short },
		{ "bad_fcs", &h->trdp_bad_fcs },
		{ "bad_version", &h->trdp_bad_version },
		{ "bad_type", &h->trdp_bad_type },
		{ "bad_too_long", &h->trdp_bad_too_long },
		{ "bad_truncated", &h->trdp_bad_truncated },
		{ "byte_ring_drops", &h->trdp_byte_ring_drops },
		{ "untracked", &h->trdp_untracked },
		{ "timeouts", &h->trdp_timeouts },
		{ "backs", &h->trdp_backs },
		{ "tcp_accepted", &h->trdp_tcp_accepted },
		{ "tcp_refused", &h->trdp_tcp_refused },
		{ "tcp_closed", &h->trdp_tcp_closed },
		{ "tcp_bad_header", &h->trdp_tcp_bad_header },
		{ "tcp_cut", &h->trdp_tcp_cut },
		{ "tcp_messages", &h->trdp_tcp_messages },
		{ "decoded", &h->trdp_decoded },
		{ "unknown_comid", &h->trdp_unknown_comid },
		{ "short_payload", &h->trdp_short_payload },
		{ "past_channels", &h->trdp_past_channels },
		{ "capture_unmatched", &h->trdp_capture_unmatched },
	};
	const char *p = strstr(line, "\"telegrams_hz\":");
	uint64_t v;
	char rx[16];

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
		json_u64(line, keys[k].key, keys[k].v);
	if (json_u64(line, "tcp_listen_errno", &v))
		h->trdp_tcp_listen_errno = (uint32_t)v;
	if (json_u64(line, "opts_refused", &v))
		h->trdp_opts_refused = (uint32_t)v;
	json_str(line, "receive", rx, sizeof(rx));
	h->trdp_receive = bus_trdp_receive_parse(rx);
	if (p)
		h->trdp_telegrams_hz = strtod(p + strlen("\"telegrams_hz\":"), NULL);
}

void cli_stat_health_parse(const char *line, struct rec_health *ret)
{
	struct rec_health h = { 0 };
	uint64_t v;
	char rate[32];
	const char *p = strstr(line, "\"rate_hz\":");

	json_str(line, "name", h.name, sizeof(h.name));
	json_str(line, "kind", h.kind, sizeof(h.kind));
	json_str(line, "state", h.state, sizeof(h.state));
	json_u64(line, "reopens", &h.reopens);
	h.blind_ms = json_u64(line, "blind_ms", &v) && v < UINT32_MAX ? (uint32_t)v : UINT32_MAX;
	json_u64(line, "items", &h.items);
	json_u64(line, "drops", &h.drops);
	json_u64(line, "rx_dropped", &h.rx_dropped);
	json_u64(line, "errors", &h.errors);
	json_u64(line, "overruns", &h.overruns);
	json_u64(line, "backlog", &h.backlog);
	json_u64(line, "latency_count", &h.latency_count);
	json_u64(line, "latency_max_ns", &h.latency_max_ns);
	json_u64(line, "clock_max_error_us", &h.clock_max_error_us);
	json_u64(line, "clock_est_error_us", &h.clock_est_error_us);
	if (json_u64(line, "clock_status", &v))
		h.clock_status = (uint32_t)v;
	if (json_u64(line, "ring_fill_pct", &v))
		h.ring_fill_pct = (uint32_t)v;
	if (json_u64(line, "latency_p50_us", &v))
		h.latency_p50_us = (uint32_t)v;
	if (json_u64(line, "latency_p99_us", &v))
		h.latency_p99_us = (uint32_t)v;
	if (json_u64(line, "latency_p999_us", &v))
		h.latency_p999_us = (uint32_t)v;
	if (p) {
		snprintf(rate, sizeof(rate), "%s", p + 10);
		h.rate_hz = strtod(rate, NULL);
	}
	if (!strcmp(h.kind, "trdp"))
		trdp_parse(line, &h);
	*ret = h;
}

static void row_from_json(FILE *out, const char *line)
{
	struct rec_health h;

	cli_stat_health_parse(line, &h);
	cli_health_row(out, &h);
}

/* A signed field of the daemon line (a negative cpu_latency_us). */
static bool json_int(const char *line, const char *key, int *ret)
{
	const char *p = json_value(line, key);

	if (!p)
		return false;
	*ret = (int)strtol(p, NULL, 10);
	return true;
}

static void daemon_rt(const char *line, struct cli_stat_daemon *d)
{
	if (!d)
		return;
	d->seen = true;
	d->rt_priority = 0;
	d->cpu_latency_us = -1;
	json_int(line, "rt_priority", &d->rt_priority);
	json_int(line, "cpu_latency_us", &d->cpu_latency_us);
	d->pm_qos_held = strstr(line, "\"pm_qos_held\":true") != NULL;
}

unsigned cli_stat_lines(FILE *in, bool json, FILE *out)
{
	return cli_stat_lines_daemon(in, json, out, NULL);
}

unsigned cli_stat_lines_daemon(FILE *in, bool json, FILE *out, struct cli_stat_daemon *ret_daemon)
{
	char line[4096]; /* a TRDP bus's line is about 1,300 bytes */
	unsigned rows = 0;

	if (ret_daemon)
		ret_daemon->seen = false;

	if (!json)
		cli_health_header(out);
	while (fgets(line, sizeof(line), in)) {
		uint64_t records = 0, next = 0, drops = 0, refused = 0, unsent = 0;
		uint64_t spb_ddata = 0, spb_unconfirmed = 0, spb_too_big = 0, spb_dead = 0;
		char up[32], spb[32];
		rows++;
		if (strstr(line, "\"name\":\"daemon\""))
			daemon_rt(line, ret_daemon);
		if (json)
			fputs(line, out);
		else if (strstr(line, "\"name\":\"daemon\"")) {
			json_u64(line, "records", &records);
			json_u64(line, "next_seq", &next);
			json_u64(line, "ring_drops", &drops);
			json_u64(line, "log_dropped", &refused);
			if (rows == 1)
				fprintf(out, "(no health entries yet: the daemon makes them every health_interval_s)\n");
			fprintf(out, "daemon: %" PRIu64 " records stored this run, next seq %" PRIu64 ", %" PRIu64 " ring drops, %"
			            PRIu64 " refused by the log", records, next, drops, refused);
			json_str(line, "uplink", up, sizeof(up));
			json_u64(line, "unsent", &unsent);
			if (up[0])
				fprintf(out, "; uplink %s, %" PRIu64 " record%s not yet acknowledged", up, unsent, unsent == 1 ? "" : "s");
			json_str(line, "sparkplug", spb, sizeof(spb));
			json_u64(line, "spb_ddata", &spb_ddata);
			json_u64(line, "spb_unconfirmed", &spb_unconfirmed);
			json_u64(line, "spb_too_big", &spb_too_big);
			json_u64(line, "spb_dead_batches", &spb_dead);
			if (spb[0])
				fprintf(out, "; sparkplug %s, %" PRIu64 " DDATA, %" PRIu64 " record%s not yet confirmed by the "
				        "broker, %" PRIu64 " Batches too big, %" PRIu64 " of a gone device", spb, spb_ddata,
				        spb_unconfirmed, spb_unconfirmed == 1 ? "" : "s", spb_too_big, spb_dead);
			fputc('\n', out);
		} else {
			row_from_json(out, line);
		}
	}
	return rows;
}

int cli_stat_log(const char *dir, bool json, FILE *out, FILE *err)
{
	struct rec_health last[64];
	double rate[64] = { 0 }; /* each entry's last rate before the daemon stopped */
	int64_t end_ns = INT64_MIN;
	char when[BASIC_UTC_MAX];
	size_t nlast = 0;
	stor_reader_t *rd;
	struct stor_rec rec;
	uint64_t skipped = 0;
	int r;

	r = stor_reader_open(dir, &rd);
	if (r < 0) {
		/* Neither a daemon's socket nor a log: say both, so a mistyped
		   directory is not an exit 1 without a word. */
		fprintf(err, "railmon stat: %s: no daemon running on it and no log to read (%s)\n", dir,
			strerror(-r));
		return -ENOENT;
	}
	while ((r = stor_reader_next(rd, &rec)) != 0) {
		rec_batch_t *b;
		struct rec_batch_info info;
		if (r == -EBADMSG) {
			/* The health shown may be older than the log's end:
			   say what was skipped, then show what could be read. */
			skipped += rpt_log_fault_print(err, "stat", dir, rd);
			continue;
		}
		if (r < 0)
			break;
		r = rec_batch_decode(rec.payload, rec.len, &b);
		if (r < 0) {
			rpt_log_undecodable_print(err, "stat", dir, &rec, r);
			skipped++;
			continue;
		}
		rec_batch_info(b, &info);
		end_ns = rec.t_last_ns > end_ns ? rec.t_last_ns : end_ns;
		for (size_t i = 0; i < info.nhealth; i++) {
			struct rec_health h;
			size_t k = 0;
			rec_batch_health(b, i, &h);
			while (k < nlast && strcmp(last[k].name, h.name))
				k++;
			if (k == nlast && nlast < 64)
				nlast++;
			if (k < nlast) {
				last[k] = h;
				rate[k] = h.rate_hz > 0 ? h.rate_hz : rate[k];
			}
		}
		rec_batch_free(b);
	}
	if (r == 0)
		skipped += rpt_log_tail_print(err, "stat", dir, rd);
	stor_reader_free(rd);
	if (r < 0)
		fprintf(err, "railmon stat: %s: %s\n", dir, strerror(-r));
	if (!nlast) {
		fprintf(err, "railmon stat: %s: no health records in the log\n", dir);
		return -ENOENT;
	}
	/* No daemon runs on it (cli/stat-cmd.c asked the socket first): a log
	   whose last health entry, written as the daemon stopped, says rate 0
	   would look like a live one with nothing coming in. */
	fprintf(err, "railmon stat: %s: a recorded log, no daemon on it; it ended at %s (its last record); rates are "
	        "the last each had while it ran, the rest as its last health entry says\n", dir,
	        end_ns == INT64_MIN ? "an unknown time" : basic_utc_text(end_ns, 3, 0, when, sizeof(when)));
	for (size_t i = 0; i < nlast; i++)
		last[i].rate_hz = last[i].rate_hz > 0 ? last[i].rate_hz : rate[i];
	if (!json)
		cli_health_header(out);
	for (size_t i = 0; i < nlast; i++) {
		if (json)
			pl_stat_health_json(out, &last[i]);
		else
			cli_health_row(out, &last[i]);
	}
	if (skipped)
		fprintf(err, "railmon stat: %s: %" PRIu64 " unreadable part%s of the log skipped (see above): the health "
		        "shown is the latest that could be read\n", dir, skipped, skipped == 1 ? "" : "s");
	return r < 0 || skipped ? 1 : 0;
}
