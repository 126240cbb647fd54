/* SPDX-License-Identifier: MIT */
/*
 * fleet-vehicles.c - a fleet for the ground tests: N vehicles, each an
 * in-memory log of real Batches (the uplink fixture's generator, encoded
 * by record/) behind a real forwarder (uplink/forward.c) that also serves
 * the ground's resend requests from a second reader on the same log.
 *
 *   fleet-vehicles PORT VEHICLES BATCHES RECORDS SECONDS DIR
 *
 * Appends BATCHES - 1 Batches of RECORDS records to every vehicle's log,
 * spread over SECONDS, and prints "appended" on stdout; then, on a line
 * "final" on stdin, the last Batch of each (so a hole at the end of a log
 * is followed by a Batch and can be found), prints "final"; on "skip N",
 * makes every log jump N seqs, as if retention had deleted N records before
 * they were forwarded (the forwarder answers "gone" when asked for them);
 * and on end of stdin stops every forwarder, prints each one's resend
 * counters ("VEHICLE resend: R requests, B batches, G gone, X refused")
 * and exits.  Cursor files go in DIR.  Each vehicle's log ids are
 * 1d1d...  (gen_init()).  With FLEET_PASSWORD in the environment each
 * vehicle logs in as its name with that password (the broker's ACL).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fixture.h"
#include "basic/clock.h"

#define FLEET_MAX 64

/* The resend reader: its own position in the vehicle's memlog. */
struct reader {
	struct memlog *l;
	size_t pos;
};

static int rd_seek(void *ctx, uint64_t seq)
{
	struct reader *rd = ctx;

	pthread_mutex_lock(&rd->l->lock);
	for (rd->pos = 0; rd->pos < rd->l->n; rd->pos++)
		if (rd->l->recs[rd->pos].first_seq + rd->l->recs[rd->pos].count > seq)
			break;
	pthread_mutex_unlock(&rd->l->lock);
	return 0;
}

static int rd_next(void *ctx, struct upl_rec *ret)
{
	struct reader *rd = ctx;
	int r = 0;

	pthread_mutex_lock(&rd->l->lock);
	if (rd->pos < rd->l->n) {
		const struct memrec *m = &rd->l->recs[rd->pos++];

		/* buf stays where it is until memlog_fini(), whatever recs does */
		*ret = (struct upl_rec){ m->first_seq, m->count, m->t_last_ns, m->buf, m->len, 0 };
		r = 1;
	}
	pthread_mutex_unlock(&rd->l->lock);
	return r;
}

struct vehicle {
	char name[16], cursor[256];
	struct memlog log;
	struct gen gen;
	struct reader rd;
	upl_forwarder_t *fwd;
};

static int start_vehicle(struct vehicle *v, int i, int port, const char *dir, size_t records)
{
	struct upl_forward_cfg c;

	snprintf(v->name, sizeof(v->name), "veh%02d", i);
	snprintf(v->cursor, sizeof(v->cursor), "%s/%s.cursor", dir, v->name);
	memlog_init(&v->log);
	if (gen_init(&v->gen, v->name, records, basic_realtime_ns()) < 0)
		return -ENOMEM;
	v->rd.l = &v->log;
	c = (struct upl_forward_cfg){
		.host = "127.0.0.1", .port = port, .client_id = v->name, .vehicle = v->name,
		.cursor_path = v->cursor, .source = memlog_source(&v->log), .inflight = 8, .idle_poll_ms = 20,
		.backoff_min_ms = 100, .backoff_max_ms = 1000, .ack_timeout_ms = 3000,
		.resend_source = { .seek = rd_seek, .next = rd_next, .ctx = &v->rd }, .resend_per_s = 50,
	};
	if (getenv("FLEET_PASSWORD")) {
		c.username = v->name;
		c.password = getenv("FLEET_PASSWORD");
	}
	if (upl_forwarder_new(&c, &v->fwd) < 0)
		return -EINVAL;
	return upl_forwarder_start(v->fwd);
}

static void append_all(struct vehicle *vs, int n, size_t records)
{
	for (int i = 0; i < n; i++)
		if (gen_batch(&vs[i].gen, &vs[i].log, records, 1000000) < 0)
			fprintf(stderr, "fleet-vehicles: %s: cannot append\n", vs[i].name);
}

int main(int argc, char **argv)
{
	static struct vehicle vs[FLEET_MAX];
	int port, n, batches;
	size_t records;
	double seconds;
	char line[64];

	if (argc != 7)
		return fprintf(stderr, "usage: fleet-vehicles PORT VEHICLES BATCHES RECORDS SECONDS DIR\n"), 2;
	port = atoi(argv[1]);
	n = atoi(argv[2]);
	batches = atoi(argv[3]);
	records = (size_t)atoi(argv[4]);
	seconds = atof(argv[5]);
	if (n < 1 || n > FLEET_MAX || batches < 2 || !records)
		return fprintf(stderr, "fleet-vehicles: bad arguments\n"), 2;
	for (int i = 0; i < n; i++)
		if (start_vehicle(&vs[i], i, port, argv[6], records) < 0)
			return fprintf(stderr, "fleet-vehicles: cannot start %s\n", vs[i].name), 1;
	for (int b = 0; b < batches - 1; b++) {
		struct timespec ts = { 0, (long)(seconds / (batches - 1) * 1e9) };

		append_all(vs, n, records);
		nanosleep(&ts, NULL);
	}
	printf("appended\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "final\n")) {
			append_all(vs, n, records);
			printf("final\n");
			fflush(stdout);
		} else if (!strncmp(line, "skip ", 5)) {
			for (int i = 0; i < n; i++) {
				pthread_mutex_lock(&vs[i].log.lock);
				vs[i].log.next_seq += strtoull(line + 5, NULL, 10);
				pthread_mutex_unlock(&vs[i].log.lock);
			}
			printf("skipped\n");
			fflush(stdout);
		}
	}
	for (int i = 0; i < n; i++) {
		struct upl_forward_stats st;

		upl_forwarder_stop(vs[i].fwd);
		upl_forwarder_stats(vs[i].fwd, &st);
		printf("%s resend: %llu requests, %llu batches, %llu gone, %llu refused\n", vs[i].name,
		       (unsigned long long)st.resend_requests, (unsigned long long)st.resend_batches,
		       (unsigned long long)st.resend_gone, (unsigned long long)st.resend_refused);
		upl_forwarder_free(vs[i].fwd);
		gen_fini(&vs[i].gen);
		memlog_fini(&vs[i].log);
	}
	return 0;
}
