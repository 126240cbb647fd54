/* SPDX-License-Identifier: MIT */
/*
 * test-blind.c - how long the recorder is blind after a device returns
 * (issue 30): an slcan adapter on a busy bus (slcan-peer.py --stream over
 * a socat pty pair, frames numbered without end) is read by an acq_source
 * as the recorder reads it; it is unplugged (its socat stopped), stays
 * away for 5 s (the scenario: a fixed outage, not a wait for something),
 * and is plugged back: a new socat and adapter, whose path appears by a
 * rename (as udev makes its links) at a moment the test notes.  The blind
 * time is the first frame logged after the return (its arrival stamp)
 * minus that moment.  The test fails above 1 s and prints the figure; the
 * goal is 200 ms.  A source that polled for the device with its backoff
 * (100 ms doubling to 5 s) would be blind for up to 5 s here.
 *
 * Then one return of an adapter that is not ready when its path appears
 * (slcan-peer.py --stream ... LATE_MS: it loses what the driver sent in
 * its first LATE_MS, as a booting adapter does): the driver's first "C"
 * goes unanswered, and a driver that waited its whole 1 s command timeout
 * for it (and then its reopen backoff) was blind for over a second; one
 * that sends "C" again soon reads the bus about its drain (100 ms) after
 * the adapter is ready.  Both figures are printed: from the path's return
 * and from the adapter's readiness (its READY stamp).
 *
 * The same for a Modbus RTU device (pymodbus-server.py --rtu over a socat
 * pty pair, one register polled every 20 ms, read at the driver level):
 * the blind time is the first good sample after the return (its stamp:
 * when its request went out) minus the moment its path appeared; the
 * driver's own reconnect backoff (50 ms doubling to 2 s) would make it up
 * to 2 s.
 *
 *   test-blind SLCAN_PEER PYMODBUS_SERVER [CYCLES]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acquisition/source.h"
#include "basic/clock.h"
#include "bus/bus.h"
#include "modbus-peers/mb-expect.h"
#include "modbus-peers/peer.h"
#include "tlib.h"

#define RING_SLOTS 65536
#define WAIT_MS 20000        /* bound of every wait for an event */
#define OUTAGE_MS 5000       /* the scenario: unplugged this long */
#define BLIND_FAIL_NS (1000 * BASIC_NS_PER_MS)
#define NUMBERS_PER_PLUG 100000000u
#define LATE_MS 100          /* the late adapter: not ready this long */

struct rig {
	const char *script;
	char a[200], a_new[200], b[200];
	struct tlib_peer socat, adapter;
	bus_dev_t *dev;
	struct acq_ring ring;
	struct acq_item *ring_buf;
	acq_source_t *src;
	struct acq_item out[1024];
	/* what the consumer saw */
	uint64_t frames, last_number;
	unsigned gone, back;
	int64_t first_after_ns;  /* stamp of the first frame after the return */
	uint64_t first_after_number;
	uint32_t back_attempts, back_blind_ms;
	uint64_t expect_from;    /* numbers of the adapter plugged last */
	bool modbus;             /* samples and CONNECT/DISCONNECT, not frames */
	bool armed;              /* Modbus: the next sample is the first after
	                            the return */
	int late_ms;             /* slcan: the next adapter plugged is late */
};

/* The bus device as a source, as pipeline/sources.c makes it. */
static int rig_recv(void *ctx, struct acq_item *items, size_t max, int timeout_ms)
{
	return bus_dev_recv(ctx, items, max, timeout_ms);
}

static int rig_gone_cause(void *ctx)
{
	return bus_dev_gone_cause(ctx);
}

static int rig_release(void *ctx)
{
	return bus_dev_release(ctx);
}

static int rig_reopen(void *ctx)
{
	return bus_dev_reopen(ctx);
}

static int rig_await(void *ctx, int timeout_ms)
{
	return bus_dev_await(ctx, timeout_ms);
}

static const struct acq_source_ops rig_ops = {
	.recv = rig_recv, .gone_cause = rig_gone_cause, .release = rig_release, .reopen = rig_reopen,
	.await = rig_await,
};

static uint64_t number_of(const struct acq_item *it)
{
	uint64_t v = 0;

	for (int k = 0; k < 8; k++)
		v = v << 8 | it->can.data[k];
	return v;
}

/* Take what the source pushed; note frames (or samples), gone and back. */
static void rig_note(struct rig *g, const struct acq_item *it)
{
	uint32_t gone = g->modbus ? ACQ_EV_MB_DISCONNECT : ACQ_EV_CAN_GONE;
	uint32_t back = g->modbus ? ACQ_EV_MB_CONNECT : ACQ_EV_CAN_BACK;

	if (it->kind == ACQ_ITEM_EVENT && it->event.code == gone) {
		g->gone++;
	} else if (it->kind == ACQ_ITEM_EVENT && it->event.code == back) {
		g->back++;
		g->back_attempts = (uint32_t)it->event.arg;
		g->back_blind_ms = it->event.detail;
	} else if (it->kind == ACQ_ITEM_SAMPLE && g->modbus) {
		CHECK(it->sample.value == 1000, "a value the server does not hold");
		g->frames++;
		if (g->armed && !g->first_after_ns)
			g->first_after_ns = it->t_ns;
	} else if (it->kind == ACQ_ITEM_CAN && !g->modbus) {
		uint64_t v = number_of(it);

		CHECK(it->can.id == 0x123 && it->can.len == 8, "a frame the adapter did not send");
		g->frames++;
		g->last_number = v;
		if (v >= g->expect_from && !g->first_after_ns) {
			g->first_after_ns = it->t_ns;
			g->first_after_number = v;
		}
	}
}

static void rig_pop(struct rig *g)
{
	size_t n;

	while ((n = acq_ring_item_pop_bulk(&g->ring, g->out, sizeof(g->out) / sizeof(g->out[0]))) > 0)
		for (size_t i = 0; i < n; i++)
			rig_note(g, &g->out[i]);
}

static void rig_start(struct rig *g, struct acq_source_cfg *sc, const struct acq_thread_cfg *tcfg)
{
	g->ring_buf = calloc(RING_SLOTS, sizeof(*g->ring_buf));
	CHECK(g->ring_buf);
	acq_ring_init(&g->ring, g->ring_buf, RING_SLOTS, sizeof(*g->ring_buf));
	sc->ctx = g->dev;
	sc->ring = &g->ring;
	CHECK(acq_source_new(sc, &g->src) == 0 && acq_source_start(g->src, tcfg, NULL) == 0);
}

static void rig_free(struct rig *g)
{
	CHECK(acq_ring_drops(&g->ring) == 0, "the test's ring dropped %" PRIu64, acq_ring_drops(&g->ring));
	acq_source_free(g->src);
	bus_dev_free(g->dev);
	free(g->ring_buf);
}

/* Pop until cond holds, at most WAIT_MS (an event awaited, not a time). */
#define POP_UNTIL(g, cond, what)                                                        \
	do {                                                                            \
		int64_t end_ = tlib_mono_ms() + WAIT_MS;                                \
		for (rig_pop(g); !(cond) && tlib_mono_ms() < end_; rig_pop(g))          \
			tlib_sleep_ms(1);                                               \
		CHECK(cond, "waited %d ms for %s", WAIT_MS, what);                      \
	} while (0)

/*
 * Plug the adapter in: a socat pair whose recorder side is made under a
 * temporary name, the adapter opened on its own side, then the recorder's
 * path renamed into place - the moment the device appears, returned
 * (CLOCK_REALTIME, the clock of the frames' stamps).
 */
static int64_t plug(struct rig *g, uint64_t first)
{
	char f[32], late[16], line[128];
	char *argv[] = { "/usr/bin/python3", (char *)g->script, "--stream", g->b, f, "C,S6,L", late, NULL };
	int64_t t;

	snprintf(f, sizeof(f), "%" PRIu64, first);
	snprintf(late, sizeof(late), "%d", g->late_ms);
	tlib_socat_pty_pair(&g->socat, g->a_new, g->b);
	CHECK(tlib_peer_start(&g->adapter, argv, TLIB_PEER_STDIN | TLIB_PEER_STDOUT) == 0);
	CHECK(tlib_peer_readline(&g->adapter, line, sizeof(line), WAIT_MS) == 0 && !strcmp(line, "OPEN"),
	      "the adapter did not open %s", g->b);
	g->expect_from = first;
	g->first_after_ns = 0;
	t = basic_realtime_ns();
	CHECK(rename(g->a_new, g->a) == 0, "rename %s: %s", g->a_new, strerror(errno));
	return t;
}

/*
 * The path goes with the device, as a real unplug takes the node and
 * udev's links.  socat removes only the name it made (a_new), not the one
 * it was renamed to: left behind, that link points at a /dev/pts number
 * the next pty gets, of this test's next plug or of any test running
 * beside it, and a reopen before the rename opened that pty (a stranger's,
 * or the adapter's own side) and waited a whole command timeout for an
 * answer: blind 1.1-2.3 s in parallel with the suite, and a watch that had
 * nothing to see (the "return" was a dangling link resolving again).
 */
static void unplug_path(const struct rig *g)
{
	CHECK(unlink(g->a) == 0, "unlink %s: %s", g->a, strerror(errno));
}

static void unplug(struct rig *g)
{
	unplug_path(g);
	tlib_peer_stop(&g->socat, 2000);
	/* the adapter ends by itself on the pty's EIO */
	CHECK(tlib_peer_finish(&g->adapter, WAIT_MS) == 0, "the adapter did not end after the unplug");
}

/*
 * The blind time BACK (CONNECT) carries, from the watch's sign of the
 * return to the reopen, lies within the one measured here (from before the
 * rename to the first frame or sample after the reopen): a time started
 * at the loss, at a failed attempt or not at all would not.  The link
 * state stat and run show says the same.
 */
static void back_blind_check(const struct rig *g, int64_t blind_ns, uint32_t link_blind_ms)
{
	CHECK(g->back_blind_ms != ACQ_BLIND_UNKNOWN, "BACK says the return was not seen");
	CHECK((int64_t)g->back_blind_ms * BASIC_NS_PER_MS <= blind_ns, "BACK says blind %" PRIu32
	      " ms, more than the %.1f ms measured", g->back_blind_ms, (double)blind_ns / BASIC_NS_PER_MS);
	CHECK(link_blind_ms == g->back_blind_ms, "the link state says blind %" PRIu32 " ms, BACK %" PRIu32 " ms",
	      link_blind_ms, g->back_blind_ms);
}

/* The late adapter's READY stamp (printed before it answered anything,
   so already in the pipe): the blind time from its readiness. */
static void late_report(struct rig *g, int64_t blind)
{
	char line[128];
	long long ready_ns = 0;

	CHECK(tlib_peer_readline(&g->adapter, line, sizeof(line), WAIT_MS) == 0 &&
	      sscanf(line, "READY %lld", &ready_ns) == 1, "the late adapter did not say READY: %s", line);
	printf("slcan late adapter (ready %d ms after its path appeared, lost what came before): blind %.1f ms "
	       "after the return, %.1f ms after it was ready\n", g->late_ms, (double)blind / BASIC_NS_PER_MS,
	       (double)(g->first_after_ns - (int64_t)ready_ns) / BASIC_NS_PER_MS);
	/* frames are only sent after READY; a stamp before it is a wrong clock */
	CHECK(g->first_after_ns > (int64_t)ready_ns, "first frame stamped before the adapter was ready");
}

/* One unplug, outage and replug; returns the blind time in ns. */
static int64_t cycle(struct rig *g, unsigned k)
{
	unsigned gone = g->gone, back = g->back;
	struct acq_link_state link;
	uint64_t frames;
	int64_t t_back, blind, end;

	/* the bus is busy before the unplug */
	frames = g->frames;
	POP_UNTIL(g, g->frames >= frames + 1000, "1,000 frames on the busy bus");
	unplug(g);
	POP_UNTIL(g, g->gone == gone + 1, "the GONE event after the unplug");
	frames = g->frames;
	end = tlib_mono_ms() + OUTAGE_MS;
	while (tlib_mono_ms() < end) {
		rig_pop(g);
		tlib_sleep_ms(10);
	}
	t_back = plug(g, (uint64_t)(k + 2) * NUMBERS_PER_PLUG);
	POP_UNTIL(g, g->first_after_ns != 0, "the first frame after the return");
	POP_UNTIL(g, g->back == back + 1, "the BACK event");
	blind = g->first_after_ns - t_back;
	CHECK(acq_source_link(g->src, &link) == 0);
	if (g->late_ms)
		late_report(g, blind);
	printf("slcan cycle %u: blind %.1f ms after the return (first frame logged: number %" PRIu64
	       "; back after %" PRIu32 " reopen attempts, the last failed one: %s; %.0f ms gone; BACK says blind %"
	       PRIu32 " ms from the watch's sign; %" PRIu64 " frames logged so far)\n",
	       k + 1, (double)blind / BASIC_NS_PER_MS, g->first_after_number - g->expect_from, g->back_attempts,
	       strerror(-link.reopen_err), (double)(link.back_ns - link.gone_ns) / BASIC_NS_PER_MS, g->back_blind_ms,
	       frames);
	CHECK(link.back_ns - link.gone_ns >= OUTAGE_MS * BASIC_NS_PER_MS, "gone %.0f ms, the outage was %d ms",
	      (double)(link.back_ns - link.gone_ns) / BASIC_NS_PER_MS, OUTAGE_MS);
	back_blind_check(g, blind, link.blind_ms);
	/* stamps are taken after the frame arrived, the rename before */
	CHECK(blind > 0 && blind <= BLIND_FAIL_NS, "blind %.1f ms after the return (fails above 1 s)",
	      (double)blind / BASIC_NS_PER_MS);
	return blind;
}

/* ---------------------------------------------------------- Modbus RTU */

/* The server on the adapter's side: ready (it printed READY) before the
   recorder's path is renamed into place. */
static int64_t rtu_plug(struct rig *g, struct peer *srv)
{
	char *argv[] = { "/usr/bin/python3", (char *)g->script, "--rtu", g->b, NULL };
	int64_t t;

	tlib_socat_pty_pair(&g->socat, g->a_new, g->b);
	peer_start(srv, argv);
	g->expect_from = 0;
	g->first_after_ns = 0;
	g->armed = true;
	t = basic_realtime_ns();
	CHECK(rename(g->a_new, g->a) == 0, "rename %s: %s", g->a_new, strerror(errno));
	return t;
}

static int64_t rtu_cycle(struct rig *g, struct peer *srv, unsigned k)
{
	unsigned gone = g->gone, back;
	uint64_t samples = g->frames;
	struct acq_link_state link;
	int64_t t_back, blind, end;

	POP_UNTIL(g, g->frames >= samples + 10, "10 samples before the unplug");
	unplug_path(g);
	tlib_peer_stop(&g->socat, 2000);
	peer_stop(srv, NULL); /* how pymodbus takes losing its tty is its business */
	POP_UNTIL(g, g->gone == gone + 1, "the DISCONNECT after the unplug");
	samples = g->frames;
	back = g->back;
	end = tlib_mono_ms() + OUTAGE_MS;
	while (tlib_mono_ms() < end) {
		rig_pop(g);
		tlib_sleep_ms(10);
	}
	samples = g->frames - samples;
	t_back = rtu_plug(g, srv);
	POP_UNTIL(g, g->first_after_ns != 0, "the first sample after the return");
	POP_UNTIL(g, g->back == back + 1, "the CONNECT");
	blind = g->first_after_ns - t_back;
	CHECK(acq_source_link(g->src, &link) == 0);
	printf("Modbus RTU cycle %u: blind %.1f ms after the return (the first good sample's request; polled "
	       "every 20 ms; %" PRIu64 " samples during the outage; CONNECT says blind %" PRIu32
	       " ms from the watch's sign)\n",
	       k + 1, (double)blind / BASIC_NS_PER_MS, samples, g->back_blind_ms);
	CHECK(samples == 0, "samples from a device that was away");
	back_blind_check(g, blind, link.blind_ms);
	CHECK(blind > 0 && blind <= BLIND_FAIL_NS, "blind %.1f ms after the return (fails above 1 s)",
	      (double)blind / BASIC_NS_PER_MS);
	return blind;
}

/* The RTU device read by an acq_source's thread, as the recorder reads it
   (its own reconnects inside recv: CONNECT/DISCONNECT tell). */
static void rtu_run(const char *py, const char *dir, unsigned cycles, int64_t *blind)
{
	struct bus_mb_channel ch = mb_chan(7, 1, BUS_MB_HOLDING, 0, BUS_MB_U16, 20);
	struct bus_cfg cfg;
	struct acq_thread_cfg tcfg = { .name = "blind-mb", .cpu = -1 };
	/* as pipeline/sources.c sets up a Modbus source: its own events
	   tell the source's link state */
	struct acq_source_cfg sc = { .ops = &rig_ops, .seed = 31, .link_down_code = ACQ_EV_MB_DISCONNECT,
	                             .link_up_code = ACQ_EV_MB_CONNECT };
	static struct rig g;
	struct peer srv;

	g.script = py;
	g.modbus = true;
	snprintf(g.a, sizeof(g.a), "%s/mb-a", dir);
	snprintf(g.a_new, sizeof(g.a_new), "%s/mb-a.new", dir);
	snprintf(g.b, sizeof(g.b), "%s/mb-b", dir);
	cfg = mb_rtu_cfg(g.a, &ch, 1, 100, 20);
	cfg.index = 1;
	rtu_plug(&g, &srv);
	CHECK(bus_dev_new(&cfg, &g.dev) == 0);
	rig_start(&g, &sc, &tcfg);
	for (unsigned k = 0; k < cycles; k++)
		blind[k] = rtu_cycle(&g, &srv, k);
	rig_free(&g);
	peer_stop(&srv, NULL);
	tlib_peer_stop(&g.socat, 2000);
	unlink(g.a);
	unlink(g.b);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

static void summary(const char *what, int64_t *blind, unsigned cycles)
{
	qsort(blind, cycles, sizeof(blind[0]), cmp_i64);
	printf("%s blind time over %u returns: min %.1f ms, median %.1f ms, max %.1f ms (goal <= 200 ms)\n", what,
	       cycles, (double)blind[0] / BASIC_NS_PER_MS, (double)blind[cycles / 2] / BASIC_NS_PER_MS,
	       (double)blind[cycles - 1] / BASIC_NS_PER_MS);
}

int main(int argc, char **argv)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN, .index = 0 };
	struct acq_thread_cfg tcfg = { .name = "blind-rx", .cpu = -1 };
	struct acq_source_cfg sc = { .ops = &rig_ops, .stamp_latency = true, .seed = 30 };
	char dir[] = "/tmp/test-blind-XXXXXX";
	unsigned cycles = argc > 3 ? (unsigned)atoi(argv[3]) : 1;
	static struct rig g;
	int64_t blind[32];

	CHECK(argc >= 3 && cycles >= 1 && cycles <= 32, "usage: test-blind SLCAN_PEER PYMODBUS_SERVER [CYCLES <= 32]");
	CHECK(mkdtemp(dir));
	g.script = argv[1];
	snprintf(g.a, sizeof(g.a), "%s/slcan-a", dir);
	snprintf(g.a_new, sizeof(g.a_new), "%s/slcan-a.new", dir);
	snprintf(g.b, sizeof(g.b), "%s/slcan-b", dir);
	cfg.can.driver = BUS_CAN_SLCAN;
	cfg.can.listen_only = true;
	cfg.can.bitrate = 500000;
	cfg.can.serial_baud = 115200;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", g.a);

	plug(&g, NUMBERS_PER_PLUG);
	CHECK(bus_dev_new(&cfg, &g.dev) == 0);
	rig_start(&g, &sc, &tcfg);

	for (unsigned k = 0; k < cycles; k++)
		blind[k] = cycle(&g, k);
	summary("slcan", blind, cycles);
	/* and once an adapter that is ready a little after its path is back
	   (not in the summary: its blind time includes its boot) */
	g.late_ms = LATE_MS;
	cycle(&g, cycles);
	rig_free(&g);
	tlib_peer_stop(&g.adapter, 2000);
	tlib_peer_stop(&g.socat, 2000);
	unlink(g.a);
	unlink(g.b);

	rtu_run(argv[2], dir, cycles, blind);
	summary("Modbus RTU", blind, cycles);
	rmdir(dir);
	printf("test-blind: ok\n");
	return tlib_failures() ? 1 : 0;
}
