/* SPDX-License-Identifier: MIT */
/*
 * spb-pub-demo PORT STATE_DIR BATCHES - uplink/'s Sparkplug publisher
 * (spb-pub.h) on a log of BATCHES Batches made here (record/'s encoder),
 * to the broker at 127.0.0.1:PORT, group "Fleet", node "T-7", devices
 * "can0" (bus 0: Engine.Speed, Door.State text) and "mb1" (bus 1:
 * Brake.Pressure).  Batch k (from 0) holds Engine.Speed = 1000 + k,
 * Door.State "door k", Brake.Pressure = k / 4, at 1733400000000 + k ms;
 * Batch 2 also mb1's MB_DISCONNECT, Batch 3 its MB_CONNECT (4 records).
 * With PRIMARY_HOST, births wait for its STATE online.
 * With SPB_DEMO_EVERY_MS set, a growing log: Batch k is readable from
 * k * EVERY_MS after the start (a live train, for an outage test).
 * Prints "started bdseq N" once connected, runs until SIGTERM (a clean
 * stop: NDEATH, then the stats) or SIGKILL (the broker's will).
 * test-spb-live.py checks what a Tahu host receives.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "uplink/spb-pub.h"

#define T0_NS 1733400000000000000ll

#define BATCHES_MAX 256

struct src {
	int n, next;
	int64_t t0_ns, every_ns;       /* every_ns 0: all readable at once */
	uint8_t *buf[BATCHES_MAX];
	size_t len[BATCHES_MAX];
	uint32_t count[BATCHES_MAX];
};

static int src_seek(void *ctx, uint64_t seq)
{
	struct src *s = ctx;
	/* Batch k holds seqs [1 + 4k, 1 + 4k + count[k]): the first one
	   holding seq or after it */
	for (s->next = 0; s->next < s->n && 1 + 4 * (uint64_t)s->next + s->count[s->next] <= seq; s->next++)
		;
	return 0;
}

static int src_next(void *ctx, struct upl_rec *ret)
{
	struct src *s = ctx;

	if (s->next >= s->n || (s->every_ns && basic_mono_ns() < s->t0_ns + s->next * s->every_ns))
		return 0;
	int k = s->next++;
	*ret = (struct upl_rec){ .first_seq = 1 + 4 * (uint64_t)k, .count = s->count[k], .payload = s->buf[k],
	                         .len = (uint32_t)s->len[k], .t_last_ns = T0_NS + (int64_t)k * 1000000 };
	return 1;
}

static int make_log(struct src *s, int n)
{
	struct rec_batch_meta meta = { .vehicle = "T-7", .config_hash = 1 };

	s->n = n;
	/* t_last_ns: the record times (2024: historical to the publisher) */
	for (int k = 0; k < n; k++) {
		rec_encoder_t *enc;
		const uint8_t *b;
		size_t len;
		int64_t t = T0_NS + (int64_t)k * 1000000;
		struct acq_item a = { .t_ns = t, .kind = ACQ_ITEM_SAMPLE, .bus = 0, .sample = { 0, 0, 1000 + k } };
		struct acq_item c = { .t_ns = t, .kind = ACQ_ITEM_SAMPLE, .bus = 1, .sample = { 0x10000, 0, k / 4.0 } };
		struct acq_item d = { .t_ns = t, .kind = ACQ_ITEM_TEXT, .bus = 0, .text = { .channel = 1 } };
		d.text.len = (uint8_t)snprintf(d.text.text, sizeof(d.text.text), "door %d", k);
		/* bus 1 (mb1) disconnects in Batch 2 and is back in Batch 3 */
		struct acq_item e = { .t_ns = t, .kind = ACQ_ITEM_EVENT, .bus = 1,
		                      .event = { k == 2 ? ACQ_EV_MB_DISCONNECT : ACQ_EV_MB_CONNECT, 0, 0 } };
		bool ev = k == 2 || k == 3;
		if (rec_encoder_new(&meta, 4, &enc) < 0 || rec_encoder_add(enc, &a) < 0 || rec_encoder_add(enc, &c) < 0 ||
		    rec_encoder_add(enc, &d) < 0 || (ev && rec_encoder_add(enc, &e) < 0) ||
		    rec_encoder_finish(enc, 1 + 4 * (uint64_t)k, &b, &len) != 3 + ev)
			return -EIO;
		s->count[k] = 3 + ev;
		s->buf[k] = malloc(len);
		if (!s->buf[k])
			return -ENOMEM;
		memcpy(s->buf[k], b, len);
		s->len[k] = len;
		rec_encoder_free(enc);
	}
	return 0;
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static const struct spb_channel ch[] = {
		{ 0, 0, "Engine.Speed", "rpm", false, NULL, SPB_DT_DOUBLE },
		{ 1, 0, "Door.State", NULL, true, NULL, SPB_DT_STRING },
		{ 0x10000, 1, "Brake.Pressure", "bar", false, NULL, SPB_DT_DOUBLE },
	};
	static const struct upl_spb_device dev[] = { { "can0", 0 }, { "mb1", 1 } };
	struct src s = { 0 };
	struct upl_spb_stats st;
	upl_spb_t *pub;
	int r, n;

	if ((argc != 4 && argc != 5) || (n = atoi(argv[3])) < 0 || n > BATCHES_MAX)
		return fprintf(stderr, "usage: spb-pub-demo PORT STATE_DIR BATCHES(0-%d) [PRIMARY_HOST]\n", BATCHES_MAX), 2;
	s.t0_ns = basic_mono_ns();
	s.every_ns = getenv("SPB_DEMO_EVERY_MS") ? atoll(getenv("SPB_DEMO_EVERY_MS")) * 1000000 : 0;
	if ((r = make_log(&s, n)) < 0)
		return fprintf(stderr, "log: %s\n", strerror(-r)), 1;
	struct upl_spb_cfg cfg = {
		.host = "127.0.0.1", .port = (uint16_t)atoi(argv[1]), .keepalive_s = 5, .group = "Fleet", .node = "T-7",
		.state_dir = argv[2], .channels = ch, .nchannels = 3, .devices = dev, .ndevices = 2,
		.source = { .seek = src_seek, .next = src_next, .ctx = &s }, .primary_host = argc == 5 ? argv[4] : NULL,
	};
	signal(SIGTERM, on_term);
	if ((r = upl_spb_new(&cfg, &pub)) < 0 || (r = upl_spb_start(pub)) < 0)
		return fprintf(stderr, "publisher: %s\n", strerror(-r)), 1;
	bool said = false;
	uint64_t last[4] = { 0 };
	while (!stop) {
		upl_spb_stats(pub, &st);
		if (!said && st.connects) {
			printf("started bdseq %u\n", st.bdseq);
			fflush(stdout);
			said = true;
		}
		if (st.ddata != last[0] || st.connect_failures != last[1] || st.rewinds != last[2] ||
		    st.acked_seq != last[3]) {
			/* for a test to wait on: what went, what the broker confirmed */
			printf("progress ddata %" PRIu64 " acked %" PRIu64 " failures %" PRIu64 " rewinds %" PRIu64 "\n",
			       st.ddata, st.acked_seq, st.connect_failures, st.rewinds);
			fflush(stdout);
			last[0] = st.ddata, last[1] = st.connect_failures, last[2] = st.rewinds, last[3] = st.acked_seq;
		}
		basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + 20000000); /* polling the stats, not a wait for a peer */
	}
	upl_spb_stats(pub, &st);
	pub = upl_spb_free(pub);
	printf("stopped connects %" PRIu64 " nbirths %" PRIu64 " dbirths %" PRIu64 " rebirths %" PRIu64 " ddata %" PRIu64
	       " metrics %" PRIu64 " bytes %" PRIu64 " cmds %" PRIu64 " refused %" PRIu64 " next_seq %" PRIu64
	       " rewinds %" PRIu64 " resent %" PRIu64 "\n",
	       st.connects, st.nbirths, st.dbirths, st.rebirths, st.ddata, st.metrics, st.bytes, st.cmds, st.cmd_refused,
	       st.next_seq, st.rewinds, st.resent);
	for (int k = 0; k < s.n; k++)
		free(s.buf[k]);
	return 0;
}
