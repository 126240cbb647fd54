/* SPDX-License-Identifier: MIT */
/*
 * statserver.c - the stat socket of a running daemon (statserver.h): its
 * thread, its lines and the client's open.  JSON lines, one per health
 * entry then a "daemon" line; or, asked "channels", the clock line and
 * one line per channel with its latest value (`railmon watch`).  The
 * clients are cli/stat-cmd.c and cli/watch-cmd.c (pl_stat_open); run and
 * demo start the server.  Here, beside the daemon whose state it says,
 * because it is a thread of the running daemon, not a command's words.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pipeline/daemon.h"
#include "pipeline/clockwatch.h"
#include "pipeline/health.h"
#include "pipeline/statserver.h"
#include "uplink/forward.h"
#include "uplink/spb-pub.h"
#include "record/batch.h"
#include "basic/clock.h"
#include "basic/thread.h"
#include "basic/escape.h"

/* glibc's default thread stack is 8 MiB, and the daemon's mlockall makes
   all of it resident.  Measured (railmon run without mlockall, pages
   touched): 20 KiB while serving stat, stat --json and watch. */
#define STAT_STACK_BYTES (256 * 1024)

struct pl_stat_server {
	struct pl_daemon *d;
	int fd;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	pthread_t thread;
	int stop_fd;       /* eventfd: readable once the server is to stop */
};

/* A TRDP bus's counters (railmon.proto's Health says each); the keys are
   cli/stat-table.c's to read back, none a suffix of another after a quote. */
static void trdp_json(FILE *f, const struct rec_health *h)
{
	fprintf(f, ",\"telegrams\":%" PRIu64 ",\"telegrams_hz\":%.1f,\"bytes\":%" PRIu64 ",\"seq_gaps\":%" PRIu64
	        ",\"seq_repeats\":%" PRIu64 ",\"seq_back\":%" PRIu64 ",\"topology_changes\":%" PRIu64,
	        h->trdp_telegrams, h->trdp_telegrams_hz, h->trdp_bytes, h->trdp_seq_gaps, h->trdp_seq_repeats,
	        h->trdp_seq_back, h->trdp_topology_changes);
	fprintf(f, ",\"bad_short\":%" PRIu64 ",\"bad_fcs\":%" PRIu64 ",\"bad_version\":%" PRIu64 ",\"bad_type\":%"
	        PRIu64 ",\"bad_too_long\":%" PRIu64 ",\"bad_truncated\":%" PRIu64 ",\"byte_ring_drops\":%" PRIu64
	        ",\"untracked\":%" PRIu64 ",\"timeouts\":%" PRIu64 ",\"backs\":%" PRIu64, h->trdp_bad_short,
	        h->trdp_bad_fcs, h->trdp_bad_version, h->trdp_bad_type, h->trdp_bad_too_long, h->trdp_bad_truncated,
	        h->trdp_byte_ring_drops, h->trdp_untracked, h->trdp_timeouts, h->trdp_backs);
	fprintf(f, ",\"tcp_accepted\":%" PRIu64 ",\"tcp_refused\":%" PRIu64 ",\"tcp_closed\":%" PRIu64
	        ",\"tcp_bad_header\":%" PRIu64 ",\"tcp_cut\":%" PRIu64 ",\"tcp_messages\":%" PRIu64
	        ",\"tcp_listen_errno\":%" PRIu32, h->trdp_tcp_accepted, h->trdp_tcp_refused, h->trdp_tcp_closed,
	        h->trdp_tcp_bad_header, h->trdp_tcp_cut, h->trdp_tcp_messages, h->trdp_tcp_listen_errno);
	fprintf(f, ",\"decoded\":%" PRIu64 ",\"unknown_comid\":%" PRIu64 ",\"short_payload\":%" PRIu64
	        ",\"past_channels\":%" PRIu64 ",\"capture_unmatched\":%" PRIu64 ",\"opts_refused\":%" PRIu32,
	        h->trdp_decoded, h->trdp_unknown_comid, h->trdp_short_payload, h->trdp_past_channels,
	        h->trdp_capture_unmatched, h->trdp_opts_refused);
	/* how it received, which says what rx_dropped counts; none from a
	   log written before Health said it */
	if (bus_trdp_receive_name(h->trdp_receive))
		fprintf(f, ",\"receive\":\"%s\"", bus_trdp_receive_name(h->trdp_receive));
}

/* Names come from the board file or, with --data, from a recorded or
   received log: escaped, so no name can break the line. */
void pl_stat_health_json(FILE *f, const struct rec_health *h)
{
	uint64_t txn = 0;

	fputs("{\"name\":", f);
	basic_json_string(f, h->name);
	fputs(",\"kind\":", f);
	basic_json_string(f, h->kind);
	fprintf(f, ",\"bus\":%u,\"items\":%" PRIu64 ",\"rate_hz\":%.1f,"
	        "\"drops\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"overruns\":%" PRIu64 ",\"rx_dropped\":%" PRIu64
	        ",\"bad_input\":%" PRIu64 ",\"backlog\":%" PRIu64 ",\"ring_fill_pct\":%u,\"latency_count\":%" PRIu64
	        ",\"latency_p50_us\":%u,\"latency_p99_us\":%u,\"latency_p999_us\":%u,\"latency_max_ns\":%" PRIu64
	        ",\"state\":",
	        h->bus, h->items, h->rate_hz, h->drops, h->errors, h->overruns, h->rx_dropped,
	        h->bad_input, h->backlog, h->ring_fill_pct, h->latency_count, h->latency_p50_us, h->latency_p99_us,
	        h->latency_p999_us, h->latency_max_ns);
	basic_json_string(f, h->state);
	for (size_t k = 0; k < REC_HEALTH_BUCKETS; k++)
		txn += h->transaction_us_buckets[k];
	fprintf(f, ",\"reopens\":%" PRIu64 ",\"window_alarm\":%u,\"window_s\":%" PRIu64 ",\"transaction_count\":%"
	        PRIu64 ",\"transaction_p99_us\":%u,\"transaction_max_ns\":%" PRIu64, h->reopens, h->window_alarm,
	        h->window_s, txn, h->transaction_p99_us, h->transaction_max_ns);
	/* a bus that came back, its return seen: how long it went unheard */
	if (h->state[0] && h->reopens && h->blind_ms != UINT32_MAX)
		fprintf(f, ",\"blind_ms\":%" PRIu32, h->blind_ms);
	if (!strcmp(h->kind, "trdp"))
		trdp_json(f, h);
	if (!strcmp(h->kind, "clock"))
		fprintf(f, ",\"clock_unsynced\":%s,\"clock_max_error_us\":%" PRIu64 ",\"clock_est_error_us\":%" PRIu64
		        ",\"clock_status\":%u", h->clock_unsynced ? "true" : "false", h->clock_max_error_us,
		        h->clock_est_error_us, h->clock_status);
	fputs("}\n", f);
}

void pl_stat_live_json(FILE *f, const struct pl_stat_value *v, int64_t now_ns)
{
	fprintf(f, "{\"id\":%" PRIu32 ",\"name\":", v->id);
	basic_json_string(f, v->name);
	fputs(",\"unit\":", f);
	basic_json_string(f, v->unit);
	fputs(",\"source\":", f);
	basic_json_string(f, v->source);
	if (!v->t_ns) {
		fputs(",\"value\":null,\"age_ms\":null}\n", f);
		return;
	}
	if (v->text) {
		fputs(",\"value\":null,\"text\":", f); /* a text channel (Modbus type = string) */
		basic_json_string(f, v->text);
	} else if (isfinite(v->value))
		fprintf(f, ",\"value\":%.17g", v->value);
	else
		fprintf(f, ",\"value\":\"%s\"", isnan(v->value) ? "nan" : v->value < 0 ? "-inf" : "inf");
	fprintf(f, ",\"t_ns\":%" PRId64 ",\"age_ms\":%.1f,\"quality\":%" PRIu32, v->t_ns,
	        (double)(now_ns - v->t_ns) / 1e6, v->quality);
	if (v->label && !v->text) {
		fputs(",\"label\":", f);
		basic_json_string(f, v->label);
	}
	fputs("}\n", f);
}

void pl_stat_clock_json(FILE *out, const struct pl_stat_clock *c)
{
	fprintf(out, "{\"clock\":\"%s\",\"clock_max_error_us\":%" PRIu64 "}\n", c->unsynced ? "unsynced" : "synced",
	        c->max_error_us);
}

/* "@name" is Linux's abstract namespace: no file, nothing to clean up, and
   it works where the filesystem cannot hold sockets (9p, read-only roots). */
socklen_t pl_stat_addr(const char *path, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	strcpy(sa->sun_path, path);
	if (path[0] == '@')
		sa->sun_path[0] = 0;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
}

int pl_stat_open(const char *path, const char *request, FILE **ret_f)
{
	struct sockaddr_un sa;
	socklen_t salen;
	size_t len = request ? strlen(request) : 0;
	FILE *f;
	int fd, r;

	if (!*path || strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	salen = pl_stat_addr(path, &sa);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, salen) < 0 ||
	    (len && send(fd, request, len, MSG_NOSIGNAL) != (ssize_t)len)) {
		r = -errno;
		close(fd);
		return r;
	}
	shutdown(fd, SHUT_WR);
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	*ret_f = f;
	return 0;
}

/* Every channel's latest value, one JSON line each (`railmon watch`): the
   age is the daemon's, so a client's clock does not matter. */
static void channels_json(FILE *f, struct pl_daemon *d)
{
	const struct pl_channel *ch;
	size_t n = pl_daemon_channels(d, &ch);
	int64_t now = basic_realtime_ns();
	struct pl_clock_sync cs;

	/* First the clock the ages and times are on (watch's title). */
	if (pl_clock_sync_read(&cs) == 0)
		pl_stat_clock_json(f, &(struct pl_stat_clock){ .unsynced = cs.unsynced,
		                                                 .max_error_us = cs.max_error_us });

	for (size_t i = 0; i < n; i++) {
		struct pl_live lv = { 0 };
		struct pl_stat_value v = { .id = ch[i].id, .name = ch[i].name, .unit = ch[i].unit,
		                            .source = ch[i].source };

		pl_daemon_live(d, i, &lv);
		if (lv.t_ns) {
			v.t_ns = lv.t_ns;
			v.value = lv.value;
			v.quality = lv.quality;
			if (lv.is_text)
				v.text = lv.text;
			else
				v.label = pl_daemon_value_label(d, i, lv.value);
		}
		pl_stat_live_json(f, &v, now);
	}
}

/* What the client asks for: a line "channels" sent at once, or nothing
   (EOF, or silence for 100 ms: `socat - UNIX-CONNECT:PATH`): the health. */
static bool wants_channels(int c)
{
	struct pollfd pfd = { .fd = c, .events = POLLIN };
	char req[32];
	ssize_t n;

	if (poll(&pfd, 1, 100) <= 0)
		return false;
	n = recv(c, req, sizeof(req) - 1, MSG_DONTWAIT);
	if (n <= 0)
		return false;
	req[n] = 0;
	return !strncmp(req, "channels", 8);
}

static void serve_one(struct pl_stat_server *s, int c)
{
	struct rec_health h[PL_HEALTH_MAX];
	struct pl_daemon_stats st;
	struct upl_forward_stats us;
	struct upl_spb_stats sp;
	uint64_t cursor;
	bool connected, insecure, qos_held;
	int rt_priority, cpu_latency_us;
	size_t n;
	bool channels = wants_channels(c);
	FILE *f = fdopen(c, "w");

	if (!f) {
		close(c);
		return;
	}
	if (channels) {
		channels_json(f, s->d);
		fclose(f);
		return;
	}
	n = pl_daemon_health(s->d, h, PL_HEALTH_MAX);
	for (size_t i = 0; i < n; i++)
		pl_stat_health_json(f, &h[i]);
	pl_daemon_stats(s->d, &st);
	fprintf(f, "{\"name\":\"daemon\",\"records\":%" PRIu64 ",\"first_seq\":%" PRIu64 ",\"next_seq\":%" PRIu64
	        ",\"ring_drops\":%" PRIu64 ",\"log_dropped\":%" PRIu64, st.records, st.first_seq, st.next_seq,
	        st.ring_drops, st.log_dropped);
	/* the uplink now, not at the last health entry */
	if (pl_daemon_uplink(s->d, &cursor, &connected, &insecure) == 0)
		fprintf(f, ",\"uplink\":\"%s\",\"unsent\":%" PRIu64, connected ? "connected" : "offline",
		        st.next_seq > cursor ? st.next_seq - cursor : 0);
	/* what the board asked of realtime, for stat to hold the machine to */
	pl_daemon_rt(s->d, &rt_priority, &cpu_latency_us, &qos_held);
	fprintf(f, ",\"rt_priority\":%d,\"cpu_latency_us\":%d,\"pm_qos_held\":%s", rt_priority, cpu_latency_us,
	        qos_held ? "true" : "false");
	/* held windows sent ahead of the backlog (issue 17) */
	if (pl_daemon_uplink_stats(s->d, &us) == 0)
		fprintf(f, ",\"hold_requests\":%" PRIu64 ",\"hold_batches\":%" PRIu64 ",\"hold_refused\":%" PRIu64,
		        us.hold_requests, us.hold_batches, us.hold_refused);
	/* the Sparkplug B publisher: what went, what the broker has not
	   confirmed, what was not sent and why */
	if (pl_daemon_sparkplug_stats(s->d, &sp) == 0)
		fprintf(f, ",\"sparkplug\":\"%s\",\"spb_bdseq\":%u,\"spb_ddata\":%" PRIu64 ",\"spb_bytes\":%" PRIu64
		        ",\"spb_unconfirmed\":%" PRIu64 ",\"spb_resent\":%" PRIu64 ",\"spb_too_big\":%" PRIu64
		        ",\"spb_dead_batches\":%" PRIu64 ",\"spb_nulled\":%" PRIu64
		        ",\"spb_bdseq_damage\":%d,\"spb_cursor_damage\":%d",
		        sp.connected ? "connected" : "offline", sp.bdseq, sp.ddata, sp.bytes,
		        st.next_seq > sp.acked_seq ? st.next_seq - sp.acked_seq : 0, sp.resent, sp.batches_too_big,
		        sp.dead_batches, sp.nulled, sp.bdseq_damage, sp.cursor_damage);
	fputs("}\n", f);
	fclose(f);
}

static void *stat_main(void *p)
{
	struct pl_stat_server *s = p;

	/* Asleep until a client or the stop: no wakeups on an idle board. */
	for (;;) {
		struct pollfd pfd[2] = { { .fd = s->fd, .events = POLLIN }, { .fd = s->stop_fd, .events = POLLIN } };
		int c;

		if (poll(pfd, 2, -1) < 0)
			continue; /* EINTR */
		if (pfd[1].revents)
			break;
		c = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c >= 0)
			serve_one(s, c);
		else if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
			poll(pfd + 1, 1, 100); /* out of fds or memory: not a spin */
	}
	return NULL;
}

int pl_stat_server_start(struct pl_daemon *d, const char *path, struct pl_stat_server **ret)
{
	struct pl_stat_server *s;
	struct sockaddr_un sa;
	socklen_t salen;
	int r;

	if (!d || !path || !ret || !*path || strlen(path) >= sizeof(sa.sun_path))
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->d = d;
	strcpy(s->path, path);
	s->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (s->stop_fd < 0) {
		r = -errno;
		free(s);
		return r;
	}
	salen = pl_stat_addr(path, &sa);
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->fd < 0) {
		r = -errno;
		close(s->stop_fd);
		free(s);
		return r;
	}
	if (path[0] != '@')
		unlink(path); /* a stale socket of a previous run */
	if (bind(s->fd, (struct sockaddr *)&sa, salen) < 0 || listen(s->fd, 4) < 0) {
		r = -errno;
		close(s->fd);
		close(s->stop_fd);
		free(s);
		return r;
	}
	r = basic_thread_create(&s->thread, "stat", STAT_STACK_BYTES, stat_main, s);
	if (r < 0) {
		close(s->fd);
		close(s->stop_fd);
		if (path[0] != '@')
			unlink(path);
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

struct pl_stat_server *pl_stat_server_free(struct pl_stat_server *s)
{
	if (!s)
		return NULL;
	eventfd_write(s->stop_fd, 1);
	pthread_join(s->thread, NULL);
	close(s->fd);
	close(s->stop_fd);
	if (s->path[0] != '@')
		unlink(s->path);
	free(s);
	return NULL;
}

