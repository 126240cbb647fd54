/* SPDX-License-Identifier: MIT */
/*
 * test-can-socket.c - the SocketCAN driver against the kernel's CAN stack.
 *
 * Runs inside the test VM (tests/vm/vm-run.sh: vcan0 and vcan1 up, MTU 72,
 * can-utils from the host).  One boot runs every check: frames replayed by
 * canplayer from a file generated here (classic, extended, RTR, FD with
 * BRS/ESI) must arrive complete, in order and equal; cangen's incrementing
 * patterns (classic and FD) are checked frame by frame; a flood into a
 * small socket buffer must be counted exactly as dropped; injected error
 * frames must become events; CAN_RAW filters must filter; a link going
 * down must surface as -ENETDOWN.  An slcan interface on a pty stands in
 * for a physical controller (rtnl kind "can", real link data): the test
 * plays the adapter and sees on the wire whether the driver opened it
 * listen-only ("L\r") or in normal mode ("O\r").  Needs root in the VM
 * (sysctl, ip link, line discipline).
 *
 * Prints one line per failed check (on stderr) and exits 1 if any failed.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <libsocketcan.h>
#include <net/if.h>
#include <linux/can.h>
#include <linux/can/error.h>
#include <linux/can/netlink.h>
#include <linux/capability.h>
#include <linux/can/raw.h>
#include <linux/sockios.h>
#include <linux/tty.h>

#include "bus/bus.h"
/* one boot runs every check: count the failed ones and go on */
#define TLIB_CHECK_CONTINUE
#include "tlib.h"

extern char **environ;

/* Print a test's summary line: "ok" only if it added no failure. */
#define OK(before, ...)                                                      \
	do {                                                                 \
		printf(tlib_failures() == (before) ? "ok " : "NOT ok ");     \
		printf(__VA_ARGS__);                                         \
		printf("\n");                                                \
	} while (0)

#define BUS_INDEX 7
#define MARKER_ID 0x1abcdefu /* extended id no generator below produces */

/* ------------------------------------------------------------- helpers */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Start argv (bounded by timeout(1)); returns the pid. */
static pid_t spawn(char *const argv[])
{
	char *targv[32] = { "timeout", "60" };
	pid_t pid;
	int i;

	for (i = 0; argv[i]; i++) {
		assert(i + 3 < 32);
		targv[i + 2] = argv[i];
	}
	targv[i + 2] = NULL;
	if (posix_spawnp(&pid, "timeout", NULL, NULL, targv, environ) != 0) {
		printf("FATAL: cannot spawn %s\n", argv[0]);
		exit(1);
	}
	return pid;
}

static int wait_exit(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int run(char *const argv[])
{
	return wait_exit(spawn(argv));
}

static void write_sysctl(const char *path, long v)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%ld\n", v) < 0 || fclose(f) != 0) {
		printf("FATAL: cannot write %s (root in the VM?)\n", path);
		exit(1);
	}
}

/*
 * Redirect stderr to a file while the driver runs: libsocketcan prints
 * there itself when asked for what a link lacks, and the driver must not
 * make it (modules never log).
 */
struct capture {
	int saved, fd;
};

static void capture_begin(struct capture *c, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
	c->fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert(c->fd >= 0);
	fflush(stderr);
	c->saved = dup(2);
	assert(c->saved >= 0 && dup2(c->fd, 2) == 2);
}

/* Restore stderr; returns what was written meanwhile in out ("" = none). */
static const char *capture_end(struct capture *c, char *out, size_t size)
{
	ssize_t n;

	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	n = pread(c->fd, out, size - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(c->fd);
	return out;
}

static struct bus_cfg can_cfg(const char *ifname, bool fd)
{
	struct bus_cfg c = { .kind = BUS_KIND_CAN, .index = BUS_INDEX };

	snprintf(c.name, sizeof(c.name), "test");
	snprintf(c.can.ifname, sizeof(c.can.ifname), "%s", ifname);
	c.can.driver = BUS_CAN_SOCKETCAN;
	c.can.fd = fd;
	c.can.listen_only = true;
	return c;
}

static bus_dev_t *open_dev(const struct bus_cfg *cfg)
{
	bus_dev_t *d = NULL;
	int r = bus_dev_new(cfg, &d);

	if (r < 0) {
		printf("FATAL: bus_dev_new(%s): %s\n", cfg->can.ifname, strerror(-r));
		exit(1);
	}
	return d;
}

static bool is_frame(const struct acq_item *it)
{
	return it->kind == ACQ_ITEM_CAN && !(it->can.flags & ACQ_CAN_ERR);
}

/* One device being drained into a growing item array. */
struct sink {
	bus_dev_t *dev;
	struct acq_item *items;
	size_t cap, n, frames;
	size_t want;          /* stop once this many data frames arrived */
	uint32_t stop_id;     /* ... or once a frame with this id (0 = none) */
	bool stopped;
};

static void sink_init(struct sink *s, bus_dev_t *dev, size_t cap, size_t want)
{
	*s = (struct sink){ .dev = dev, .cap = cap, .want = want };
	s->items = calloc(cap, sizeof(*s->items));
	assert(s->items);
}

static void sink_done(struct sink *s)
{
	free(s->items);
}

static bool sink_full(const struct sink *s)
{
	return s->stopped || s->frames >= s->want || s->n == s->cap;
}

/* Read one batch (max items at a time); true if anything came. */
static bool sink_pull(struct sink *s, size_t max, int timeout_ms)
{
	size_t room = s->cap - s->n;
	int r;

	r = bus_dev_recv(s->dev, s->items + s->n, max < room ? max : room, timeout_ms);
	CHECK(r >= 0, "recv: %s", strerror(-r));
	if (r <= 0)
		return false;
	for (size_t i = s->n; i < s->n + (size_t)r; i++) {
		if (!is_frame(&s->items[i]))
			continue;
		s->frames++;
		if (s->stop_id && s->items[i].can.id == s->stop_id)
			s->stopped = true;
	}
	s->n += (size_t)r;
	return true;
}

/*
 * Drain all sinks until each is full or nothing arrived on any of them
 * for idle_ms.  Reading them in turn keeps every socket queue short.
 */
static void collect(struct sink *s, size_t ns, size_t max, int idle_ms)
{
	int idle = 0;

	while (idle < idle_ms) {
		bool any = false, all = true;

		for (size_t i = 0; i < ns; i++) {
			if (sink_full(&s[i]))
				continue;
			all = false;
			any |= sink_pull(&s[i], max, 10);
		}
		if (all)
			return;
		idle = any ? 0 : idle + 10;
	}
}

/* Data frames only, compacted to the front; returns their number. */
static size_t only_frames(const struct sink *s, struct acq_item *out)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		if (is_frame(&s->items[i]))
			out[n++] = s->items[i];
	return n;
}

static bool frame_eq(const struct acq_item *a, const struct acq_item *b)
{
	return a->can.id == b->can.id && a->can.flags == b->can.flags &&
	       a->can.len == b->can.len &&
	       ((a->can.flags & ACQ_CAN_RTR) || !memcmp(a->can.data, b->can.data, a->can.len));
}

static void check_stamps(const struct acq_item *it, size_t n, int64_t t0, int64_t t1, const char *what)
{
	int64_t prev = t0;
	size_t bad = 0;

	for (size_t i = 0; i < n; i++) {
		bad += it[i].t_ns < prev || it[i].t_ns > t1 || it[i].bus != BUS_INDEX;
		prev = it[i].t_ns;
	}
	CHECK(bad == 0, "%s: %zu items with stamp outside [send, now] / decreasing / wrong bus", what, bad);
}

/* ------------------------------------------------------ canplayer replay */

static uint32_t rnd_state = 0x2545f491;

static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 17;
	rnd_state ^= rnd_state << 5;
	return rnd_state;
}

static void gen_frame(struct acq_item *it)
{
	static const uint8_t fd_len[] = { 0, 1, 5, 8, 12, 16, 20, 24, 32, 48, 64 };
	uint32_t kind = rnd() % 4;

	memset(it, 0, sizeof(*it));
	it->kind = ACQ_ITEM_CAN;
	it->can.flags = kind & 1 ? ACQ_CAN_EXT : 0;
	it->can.id = rnd() & (kind & 1 ? CAN_EFF_MASK : CAN_SFF_MASK);
	if (it->can.id == MARKER_ID)
		it->can.id ^= 1;
	if (kind >= 2) {
		it->can.flags |= ACQ_CAN_FD | (rnd() % 2 ? ACQ_CAN_BRS : 0) | (rnd() % 5 ? 0 : ACQ_CAN_ESI);
		it->can.len = fd_len[rnd() % sizeof(fd_len)];
	} else if (rnd() % 16 == 0) {
		it->can.flags |= ACQ_CAN_RTR; /* canplayer of this era sends len 0 */
	} else {
		it->can.len = rnd() % 9;
	}
	if (!(it->can.flags & ACQ_CAN_RTR))
		for (unsigned i = 0; i < it->can.len; i++)
			it->can.data[i] = (uint8_t)rnd();
}

static void put_line(FILE *f, unsigned k, const struct acq_item *it)
{
	const struct acq_can *c = &it->can;

	fprintf(f, "(%u.%06u) vcan0 ", 1700000000 + k / 1000, (k % 1000) * 1000);
	fprintf(f, c->flags & ACQ_CAN_EXT ? "%08X" : "%03X", c->id);
	if (c->flags & ACQ_CAN_FD)
		fprintf(f, "##%X", (c->flags & ACQ_CAN_BRS ? CANFD_BRS : 0) |
		                   (c->flags & ACQ_CAN_ESI ? CANFD_ESI : 0));
	else
		fputc('#', f);
	if (c->flags & ACQ_CAN_RTR)
		fputc('R', f);
	for (unsigned i = 0; i < c->len; i++)
		fprintf(f, "%02X", c->data[i]);
	fputc('\n', f);
}

/*
 * Replay n generated frames with canplayer into an FD socket and a
 * classic-only socket at once: the first must see all, in order; the
 * second exactly the classic ones.
 */
static void test_canplayer(unsigned n)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfd = can_cfg("vcan0", true), ccl = can_cfg("vcan0", false);
	struct acq_item *exp = calloc(n, sizeof(*exp)), *got = calloc(n + 1, sizeof(*got));
	char path[512];
	size_t nclassic = 0, ngot, bad = 0;
	struct sink s[2];
	int64_t t0, t1;
	FILE *f;

	assert(exp && got);
	snprintf(path, sizeof(path), "%s/replay.log", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	f = fopen(path, "w");
	assert(f);
	for (unsigned k = 0; k < n; k++) {
		gen_frame(&exp[k]);
		put_line(f, k, &exp[k]);
		nclassic += !(exp[k].can.flags & ACQ_CAN_FD);
	}
	assert(fclose(f) == 0);

	sink_init(&s[0], open_dev(&cfd), n + 16, n);
	sink_init(&s[1], open_dev(&ccl), n + 16, nclassic);
	t0 = now_ns();
	pid_t pid = spawn((char *[]){ "canplayer", "-t", "-g", "0", "-I", path, NULL });
	collect(s, 2, 64, 5000);
	CHECK(wait_exit(pid) == 0, "canplayer failed");
	t1 = now_ns();

	ngot = only_frames(&s[0], got);
	CHECK(ngot == n, "canplayer: FD socket got %zu of %u frames", ngot, n);
	for (size_t i = 0; i < ngot && i < n; i++)
		if (!frame_eq(&got[i], &exp[i]) && bad++ < 3)
			printf("  frame %zu: got id %x flags %x len %u, sent id %x flags %x len %u\n", i,
			       got[i].can.id, got[i].can.flags, got[i].can.len,
			       exp[i].can.id, exp[i].can.flags, exp[i].can.len);
	CHECK(bad == 0, "canplayer: %zu frames differ from what was sent", bad);
	check_stamps(s[0].items, s[0].n, t0, t1, "canplayer");

	ngot = only_frames(&s[1], got);
	CHECK(ngot == nclassic, "classic socket got %zu of %zu classic frames", ngot, nclassic);
	bad = 0;
	for (size_t i = 0, j = 0; i < n && j < ngot; i++) {
		if (exp[i].can.flags & ACQ_CAN_FD)
			continue;
		bad += !frame_eq(&got[j++], &exp[i]);
	}
	CHECK(bad == 0, "classic socket: %zu frames differ", bad);

	struct bus_stats st;
	CHECK(bus_dev_stats(s[0].dev, &st) == 0 && st.rx_frames == n && st.rx_dropped == 0 &&
	      st.bad_input == 0, "stats rx %" PRIu64 " dropped %" PRIu64, st.rx_frames, st.rx_dropped);
	OK(f0, "canplayer: %u frames (%zu classic) in order, equal, stamped", n, nclassic);
	for (int i = 0; i < 2; i++) {
		bus_dev_free(s[i].dev);
		sink_done(&s[i]);
	}
	free(exp);
	free(got);
}

/* -------------------------------------------------------------- cangen */

static const uint8_t dlc2len[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64 };

/*
 * cangen -I i -L i -D i: frame k has id k, DLC k mod 9 (classic) or
 * mod 16 (FD) but at least 1, and as data the counter k little-endian
 * (truncated to the length; zero beyond 8 bytes).
 */
static size_t cangen_mismatches(const struct acq_item *got, size_t n, bool fd)
{
	size_t bad = 0;

	for (size_t k = 0; k < n; k++) {
		const struct acq_can *c = &got[k].can;
		unsigned dlc = fd ? k % 16 : k % 9;
		uint8_t flags = fd ? ACQ_CAN_FD | ACQ_CAN_BRS : 0;
		bool ok = c->id == (k & CAN_SFF_MASK) && c->flags == flags &&
		          c->len == dlc2len[dlc ? dlc : 1];

		for (unsigned i = 0; ok && i < c->len; i++)
			ok = c->data[i] == (i < 8 ? (uint8_t)(k >> (8 * i)) : 0);
		if (!ok && bad++ < 3)
			printf("  cangen frame %zu: id %x flags %x len %u data0 %02x\n",
			       k, c->id, c->flags, c->len, c->data[0]);
	}
	return bad;
}

static void test_cangen(unsigned n, bool fd)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfg = can_cfg("vcan0", true);
	struct acq_item *got = calloc(n + 1, sizeof(*got));
	char count[16];
	struct sink s;
	size_t ngot;
	int64_t t0;

	assert(got);
	snprintf(count, sizeof(count), "%u", n);
	sink_init(&s, open_dev(&cfg), n + 16, n);
	t0 = now_ns();
	pid_t pid = fd ? spawn((char *[]){ "cangen", "vcan0", "-g", "0", "-n", count, "-I", "i",
	                                   "-L", "i", "-D", "i", "-f", "-b", NULL })
	               : spawn((char *[]){ "cangen", "vcan0", "-g", "0", "-n", count, "-I", "i",
	                                   "-L", "i", "-D", "i", NULL });
	collect(&s, 1, 64, 5000);
	CHECK(wait_exit(pid) == 0, "cangen failed");
	ngot = only_frames(&s, got);
	CHECK(ngot == n, "cangen %s: got %zu of %u frames", fd ? "FD" : "classic", ngot, n);
	CHECK(cangen_mismatches(got, ngot, fd) == 0, "cangen %s: frames out of order or wrong",
	      fd ? "FD" : "classic");
	check_stamps(s.items, s.n, t0, now_ns(), "cangen");
	OK(f0, "cangen %s: %zu/%u frames in order with the expected pattern",
	       fd ? "FD+BRS" : "classic", ngot, n);
	bus_dev_free(s.dev);
	sink_done(&s);
	free(got);
}

/* --------------------------------------------------------------- flood */

static void send_frame(bus_dev_t *tx, uint32_t id, uint8_t flags, uint8_t len)
{
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	int r;

	it.can.id = id;
	it.can.flags = flags;
	it.can.len = len;
	for (unsigned i = 0; i < len; i++)
		it.can.data[i] = (uint8_t)(id + i);
	r = bus_dev_send(tx, &it);
	CHECK(r == 0, "send id %x: %s", id, strerror(-r));
}

static int64_t overflow_sum(const struct acq_item *it, size_t n, size_t *ret_events)
{
	int64_t sum = 0;

	*ret_events = 0;
	for (size_t i = 0; i < n; i++)
		if (it[i].kind == ACQ_ITEM_EVENT && it[i].event.code == ACQ_EV_CAN_RX_OVERFLOW &&
		    it[i].event.detail == 0) {
			sum += it[i].event.arg;
			(*ret_events)++;
		}
	return sum;
}

/*
 * Flood a reader that does not read, through a socket buffer of a few
 * frames, then drain it.  Every frame is either received (and then the
 * first ones, in order) or counted as dropped.  via_check: ask check()
 * for the drops before draining (SO_MEMINFO) instead of learning them
 * from the SO_RXQ_OVFL count on the next frame (the marker).
 */
static void flood_round(bus_dev_t *rx, bus_dev_t *tx, unsigned n, bool via_check, uint64_t *dropped)
{
	unsigned f0 = tlib_failures();
	struct acq_item ev[8];
	char count[16];
	struct sink s;
	size_t nev, recvd;
	int64_t drops = 0;
	int r;

	snprintf(count, sizeof(count), "%u", n);
	CHECK(run((char *[]){ "cangen", "vcan0", "-g", "0", "-n", count, "-I", "i", "-L", "8",
	                      "-D", "i", NULL }) == 0, "cangen flood failed");
	if (via_check) {
		r = bus_dev_check(rx, ev, 8);
		CHECK(r >= 1, "check() after the flood reported %d events", r);
		drops = overflow_sum(ev, r > 0 ? (size_t)r : 0, &nev);
		CHECK(nev == 1, "check(): %zu overflow events", nev);
	}
	sink_init(&s, rx, n + 64, n + 1);
	s.stop_id = MARKER_ID;
	collect(&s, 1, 64, 200); /* the queued frames: then the queue is empty */
	send_frame(tx, MARKER_ID, ACQ_CAN_EXT, 0);
	collect(&s, 1, 64, 3000);
	CHECK(s.stopped, "marker frame not received");
	recvd = s.frames - s.stopped;
	if (!via_check) {
		drops = overflow_sum(s.items, s.n, &nev);
		CHECK(nev == 1, "%zu overflow events from SO_RXQ_OVFL", nev);
	} else {
		overflow_sum(s.items, s.n, &nev);
		CHECK(nev == 0, "drops reported twice (%zu more events)", nev);
	}
	CHECK(drops > 0, "flood of %u frames into a tiny buffer dropped nothing", n);
	CHECK(recvd + (uint64_t)drops == n, "received %zu + dropped %" PRId64 " != sent %u",
	      recvd, drops, n);
	for (size_t i = 0, k = 0; i < s.n; i++)
		if (is_frame(&s.items[i]) && s.items[i].can.id != MARKER_ID) {
			CHECK(s.items[i].can.id == k, "flood frame %zu has id %x", k, s.items[i].can.id);
			k++;
		}
	*dropped += (uint64_t)drops;
	OK(f0, "flood (%s): sent %u, received %zu, dropped %" PRId64 " (driver count exact)",
	       via_check ? "check/SO_MEMINFO" : "SO_RXQ_OVFL", n, recvd, drops);
	sink_done(&s);
}

static void test_flood(void)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfg = can_cfg("vcan0", true), tcfg = can_cfg("vcan0", false);
	struct bus_stats st;
	uint64_t dropped = 0;
	bus_dev_t *rx, *tx;

	/* Sockets take rmem_default as their buffer: a few frames' worth. */
	write_sysctl("/proc/sys/net/core/rmem_default", 8192);
	rx = open_dev(&cfg);
	write_sysctl("/proc/sys/net/core/rmem_default", 16 << 20);
	tcfg.can.listen_only = false;
	tx = open_dev(&tcfg);
	flood_round(rx, tx, 2000, false, &dropped);
	flood_round(rx, tx, 2000, true, &dropped);
	CHECK(bus_dev_stats(rx, &st) == 0 && st.rx_dropped == dropped,
	      "stats.rx_dropped %" PRIu64 " != %" PRIu64, st.rx_dropped, dropped);
	OK(f0, "flood: stats.rx_dropped == %" PRIu64 " == sum of overflow events", dropped);
	bus_dev_free(rx);
	bus_dev_free(tx);
}

/* -------------------------------------------------------------- errors */

struct err_case {
	const char *what;
	uint32_t cls;        /* CAN_ERR_* class bits */
	uint8_t d1, d6, d7;  /* controller status, tx / rx error counters */
	uint32_t code;       /* expected event, ACQ_EV_NONE for none */
	int64_t arg;
	uint32_t detail;
};

static const struct err_case err_cases[] = {
	{ "bus-off", CAN_ERR_BUSOFF, 0, 0, 0, ACQ_EV_CAN_BUS_OFF, -1, (uint32_t)-1 },
	{ "error-passive", CAN_ERR_CRTL | CAN_ERR_CNT, CAN_ERR_CRTL_RX_PASSIVE, 100, 130,
	  ACQ_EV_CAN_ERROR_PASSIVE, 130, 100 },
	{ "error-warning", CAN_ERR_CRTL | CAN_ERR_CNT, CAN_ERR_CRTL_TX_WARNING, 97, 5,
	  ACQ_EV_CAN_ERROR_WARNING, 5, 97 },
	{ "error-active", CAN_ERR_CRTL, CAN_ERR_CRTL_ACTIVE, 3, 4, ACQ_EV_CAN_ERROR_ACTIVE, 4, 3 },
	{ "controller overflow", CAN_ERR_CRTL, CAN_ERR_CRTL_RX_OVERFLOW, 0, 0,
	  ACQ_EV_CAN_RX_OVERFLOW, 0, 1 },
	{ "restarted", CAN_ERR_RESTARTED, 0, 0, 0, ACQ_EV_CAN_RESTARTED, -1, (uint32_t)-1 },
	{ "protocol (no state)", CAN_ERR_PROT | CAN_ERR_ACK, 0, 0, 0, ACQ_EV_NONE, 0, 0 },
};

/*
 * Receive until want items came (max per call), then look briefly for
 * extras: the sender's write delivers synchronously, so anything more
 * would already be queued.  Returns how many items were received.
 */
static size_t recv_expect(bus_dev_t *d, struct acq_item *it, size_t cap, size_t want, size_t max)
{
	size_t n = 0;
	int r;

	while (n < cap && (r = bus_dev_recv(d, &it[n], max, n < want ? 1000 : 50)) > 0)
		n += (size_t)r;
	return n;
}

/* Expect: the raw error frame, then the event (if any), nothing else. */
static void check_err_case(const struct err_case *c, const struct acq_item *it, size_t n)
{
	size_t want = c->code == ACQ_EV_NONE ? 1 : 2;

	CHECK(n == want, "%s: %zu items, want %zu", c->what, n, want);
	if (n < 1)
		return;
	CHECK(it[0].kind == ACQ_ITEM_CAN && it[0].can.flags == ACQ_CAN_ERR &&
	      it[0].can.id == c->cls && it[0].can.len == CAN_ERR_DLC &&
	      it[0].can.data[1] == c->d1, "%s: raw error frame id %x flags %x", c->what,
	      it[0].can.id, it[0].can.flags);
	if (want < 2 || n < 2)
		return;
	CHECK(it[1].kind == ACQ_ITEM_EVENT && it[1].event.code == c->code &&
	      it[1].event.arg == c->arg && it[1].event.detail == c->detail &&
	      it[1].t_ns == it[0].t_ns && it[1].bus == BUS_INDEX,
	      "%s: event code %u arg %" PRId64 " detail %u", c->what, it[1].event.code,
	      it[1].event.arg, it[1].event.detail);
}

static void test_error_events(void)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfg = can_cfg("vcan0", false), tcfg = can_cfg("vcan0", true);
	struct acq_item it[8];
	bus_dev_t *rx, *tx;
	struct bus_stats st;
	size_t nc = sizeof(err_cases) / sizeof(err_cases[0]);

	rx = open_dev(&cfg);
	tcfg.can.listen_only = false;
	tx = open_dev(&tcfg);
	for (size_t i = 0; i < nc; i++) {
		const struct err_case *c = &err_cases[i];
		struct acq_item e = { .kind = ACQ_ITEM_CAN };
		size_t n;

		e.can.id = c->cls;
		e.can.flags = ACQ_CAN_ERR;
		e.can.len = CAN_ERR_DLC;
		e.can.data[1] = c->d1;
		e.can.data[6] = c->d6;
		e.can.data[7] = c->d7;
		CHECK(bus_dev_send(tx, &e) == 0, "send error frame %s", c->what);
		/* One item per call: the event must wait in the driver's queue. */
		n = recv_expect(rx, it, 8, c->code == ACQ_EV_NONE ? 1 : 2, 1);
		check_err_case(c, it, n);
	}
	/* can-utils' own error frame syntax: bus-off from cansend. */
	CHECK(run((char *[]){ "cansend", "vcan0", "20000040#0000000000000000", NULL }) == 0,
	      "cansend error frame");
	size_t n = recv_expect(rx, it, 8, 2, 8);
	CHECK(n == 2 && it[1].kind == ACQ_ITEM_EVENT && it[1].event.code == ACQ_EV_CAN_BUS_OFF,
	      "cansend bus-off: %zu items", n);
	CHECK(bus_dev_stats(rx, &st) == 0 && st.rx_errors == nc + 1 && st.rx_frames == 0,
	      "error stats: errors %" PRIu64 " frames %" PRIu64, st.rx_errors, st.rx_frames);
	OK(f0, "error frames: %zu kinds -> raw item + matching event", nc + 1);
	bus_dev_free(rx);
	bus_dev_free(tx);
}

/* ------------------------------------------------------------- filters */

static void test_filters(void)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfg = can_cfg("vcan0", true), tcfg = can_cfg("vcan0", true);
	static const uint32_t sent[][2] = {
		{ 0x120, 0 }, { 0x121, 0 }, { 0x18001234, ACQ_CAN_EXT }, { 0x17000000, ACQ_CAN_EXT },
		{ 0x120, ACQ_CAN_EXT }, { 0x1ff, ACQ_CAN_FD }, { 0x120, ACQ_CAN_FD },
	};
	static const uint32_t want[] = { 0x120, 0x18001234, 0x120 };
	struct sink s;
	bus_dev_t *tx;

	/* exact standard id 0x120, and extended ids 0x18xxxxxx */
	cfg.can.filters[0] = (struct bus_can_filter){ 0x120, CAN_SFF_MASK | CAN_EFF_FLAG };
	cfg.can.filters[1] = (struct bus_can_filter){ 0x18000000 | CAN_EFF_FLAG, 0x1f000000 | CAN_EFF_FLAG };
	cfg.can.nfilters = 2;
	sink_init(&s, open_dev(&cfg), 32, 32); /* wait for idle: extras would show */
	tcfg.can.listen_only = false;
	tx = open_dev(&tcfg);
	for (size_t i = 0; i < sizeof(sent) / sizeof(sent[0]); i++)
		send_frame(tx, sent[i][0], (uint8_t)sent[i][1], 8);
	send_frame(tx, MARKER_ID, ACQ_CAN_EXT, 0); /* filtered out too */
	collect(&s, 1, 64, 500);
	CHECK(s.n == 3, "filters passed %zu frames, want 3", s.n);
	for (size_t i = 0; i < s.n && i < 3; i++)
		CHECK(s.items[i].can.id == want[i], "filtered frame %zu id %x", i, s.items[i].can.id);
	OK(f0, "CAN_RAW filters from the bus config");
	bus_dev_free(s.dev);
	bus_dev_free(tx);
	sink_done(&s);
}

/* --------------------------------------------------- link and arguments */

/* Open/check on vcan must not make libsocketcan print "no link data". */
static void test_virtual_link(void)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfg = can_cfg("vcan1", true);
	struct capture cap;
	char buf[256];
	struct acq_item ev[4];
	bus_dev_t *d = NULL;
	int r, c[3];

	capture_begin(&cap, "stderr-virtual.txt");
	/* Normal mode without the opt-in is fine on a virtual link. */
	cfg.can.listen_only = false;
	cfg.can.allow_normal_mode = false;
	cfg.can.bitrate = 500000;
	r = bus_dev_new(&cfg, &d);
	for (int i = 0; i < 3; i++)
		c[i] = r == 0 ? bus_dev_check(d, ev, 4) : -1;
	capture_end(&cap, buf, sizeof(buf));
	CHECK(r == 0, "normal mode on vcan refused: %s", strerror(-r));
	CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0, "check on idle vcan: %d %d %d", c[0], c[1], c[2]);
	CHECK(buf[0] == '\0', "driver caused output on stderr: %s", buf);

	/* Link down: the device is gone (bus.h), cause ENETDOWN; a reopen
	   waits for the link to be up, then works again. */
	CHECK(bus_dev_recv(d, ev, 4, 50) == 0, "recv on idle vcan1");
	CHECK(run((char *[]){ "ip", "link", "set", "vcan1", "down", NULL }) == 0, "ip link down");
	r = bus_dev_recv(d, ev, 4, 1000);
	CHECK(r == -ENODEV && bus_dev_gone_cause(d) == -ENETDOWN, "recv after link down: %d, cause %d", r,
	      bus_dev_gone_cause(d));
	CHECK(bus_dev_release(d) == 0 && bus_dev_recv(d, ev, 4, 0) == -ENODEV, "recv after release");
	r = bus_dev_reopen(d);
	CHECK(r == -ENETDOWN, "reopen while down: %d", r);
	CHECK(run((char *[]){ "ip", "link", "set", "vcan1", "up", NULL }) == 0, "ip link up");
	r = bus_dev_reopen(d);
	CHECK(r == 0 && bus_dev_gone_cause(d) == 0, "reopen once up: %d", r);
	CHECK(run((char *[]){ "cansend", "vcan1", "123#11", NULL }) == 0, "cansend vcan1");
	r = bus_dev_recv(d, ev, 4, 1000);
	CHECK(r == 1 && ev[0].can.id == 0x123 && ev[0].can.len == 1 && ev[0].can.data[0] == 0x11,
	      "recv after link up: %d", r);
	bus_dev_free(d);
	OK(f0, "virtual link: normal mode allowed, silent libsocketcan, down = gone (ENETDOWN), reopened");
}

static void test_bad_args(void)
{
	unsigned f0 = tlib_failures();
	struct bus_cfg cfg = can_cfg("nosuch0", true);
	struct acq_item it = { .kind = ACQ_ITEM_SAMPLE };
	bus_dev_t *d = NULL;

	CHECK(bus_dev_new(&cfg, &d) == -ENODEV && !d, "missing interface");
	cfg = can_cfg("lo", true);
	CHECK(bus_dev_new(&cfg, &d) == -ENODEV && !d, "non-CAN interface");
	cfg = can_cfg("vcan0", true);
	cfg.can.nfilters = BUS_CAN_FILTERS_MAX + 1;
	CHECK(bus_dev_new(&cfg, &d) == -EINVAL && !d, "too many filters");
	cfg.can.nfilters = 0;
	d = open_dev(&cfg);
	CHECK(bus_dev_send(d, &it) == -EINVAL, "send of a sample");
	it.kind = ACQ_ITEM_CAN;
	it.can.len = 9;
	CHECK(bus_dev_send(d, &it) == -EINVAL, "classic frame of 9 bytes");
	it.can.flags = ACQ_CAN_FD;
	it.can.len = 65;
	CHECK(bus_dev_send(d, &it) == -EINVAL, "FD frame of 65 bytes");
	CHECK(bus_dev_recv(d, NULL, 4, 0) == -EINVAL, "recv NULL");
	CHECK(bus_dev_recv(d, &it, 0, 0) == -EINVAL, "recv max 0");
	CHECK(bus_dev_check(d, NULL, 4) == -EINVAL, "check NULL events");
	CHECK(bus_dev_check(d, NULL, 0) == 0, "check with no room is a no-op");
	CHECK(bus_dev_stats(d, NULL) == -EINVAL, "stats NULL");
	CHECK(bus_dev_send(d, NULL) == -EINVAL, "send NULL");
	bus_dev_free(d);
	OK(f0, "bad arguments in the VM");
}

/* ------------------------------------------- physical stand-in: slcan */

/*
 * The adapter end of an slcan line: everything the kernel writes to it is
 * recorded (slcan waits for each command to go into the pty, the master
 * end reads it later: adapter_take waits for it).
 */
struct adapter {
	int master;
	pthread_t thread;
	pthread_mutex_t lock;
	char wire[4096];
	size_t len;
	volatile bool stop;
};

static void *adapter_main(void *arg)
{
	struct adapter *a = arg;
	struct pollfd p = { .fd = a->master, .events = POLLIN };
	char buf[256];

	while (!a->stop) {
		if (poll(&p, 1, 20) <= 0)
			continue;
		ssize_t n = read(a->master, buf, sizeof(buf));
		if (n <= 0)
			continue;
		pthread_mutex_lock(&a->lock);
		for (ssize_t i = 0; i < n && a->len < sizeof(a->wire) - 1; i++)
			a->wire[a->len++] = buf[i];
		a->wire[a->len] = '\0';
		pthread_mutex_unlock(&a->lock);
	}
	return NULL;
}

/*
 * Take what went over the wire since the last call ("\r" shown as '|').
 * The kernel's write reaches the pty's master end through a work item, so
 * the bytes may arrive after the call that caused them returned (CI saw
 * "C|S6|" without the "L|" under load): wait, bounded by 3 s, until the
 * wire holds `until` (NULL: nothing is expected), then until it has been
 * quiet for 200 ms, so a stray byte after it is seen too.
 */
static void adapter_take(struct adapter *a, const char *until, char *out, size_t size)
{
	size_t seen = (size_t)-1;
	int quiet_ms = 0;

	for (int waited = 0; waited < 3000 && quiet_ms < 200; waited += 20) {
		pthread_mutex_lock(&a->lock);
		bool found = !until || strstr(a->wire, until);
		size_t len = a->len;
		pthread_mutex_unlock(&a->lock);
		quiet_ms = found && len == seen ? quiet_ms + 20 : 0;
		seen = len;
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000L }, NULL);
	}
	pthread_mutex_lock(&a->lock);
	snprintf(out, size, "%s", a->wire);
	a->len = 0;
	a->wire[0] = '\0';
	pthread_mutex_unlock(&a->lock);
	for (char *c = out; *c; c++)
		if (*c == '\r')
			*c = '|';
}

/* pty + N_SLCAN line discipline = a CAN interface; returns the tty fd. */
static int slcan_attach(struct adapter *a, char *ifname)
{
	int ldisc = N_SLCAN, slave;
	struct termios t;

	a->master = posix_openpt(O_RDWR | O_NOCTTY);
	if (a->master < 0 || grantpt(a->master) || unlockpt(a->master))
		return -1;
	slave = open(ptsname(a->master), O_RDWR | O_NOCTTY);
	if (slave < 0 || tcgetattr(slave, &t))
		return -1;
	cfmakeraw(&t);
	if (tcsetattr(slave, TCSANOW, &t) || ioctl(slave, TIOCSETD, &ldisc) ||
	    ioctl(slave, SIOCGIFNAME, ifname))
		return -1;
	pthread_mutex_init(&a->lock, NULL);
	if (pthread_create(&a->thread, NULL, adapter_main, a))
		return -1;
	return slave;
}

static void adapter_say(struct adapter *a, const char *line)
{
	CHECK(write(a->master, line, strlen(line)) == (ssize_t)strlen(line), "adapter write");
}

/* In a child without CAP_NET_ADMIN: open must refuse, not open normal. */
static int open_without_net_admin(const struct bus_cfg *cfg)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];
	bus_dev_t *dev = NULL;
	pid_t pid = fork();

	if (pid == 0) {
		if (syscall(SYS_capget, &h, d) || (d[0].effective &= ~(1u << CAP_NET_ADMIN), 0) ||
		    syscall(SYS_capset, &h, d))
			_exit(2);
		_exit(bus_dev_new(cfg, &dev) == -EPERM && !dev ? 0 : 1);
	}
	return wait_exit(pid);
}

/*
 * A socket of our own that sees ifname's error frames: the kernel changes
 * the controller state before it queues the frame, so once the frame is
 * there, check() must see the new state.  Open before causing the frame.
 */
static int err_watch_open(const char *ifname)
{
	struct sockaddr_can addr = { .can_family = AF_CAN, .can_ifindex = (int)if_nametoindex(ifname) };
	can_err_mask_t mask = CAN_ERR_MASK;
	int s = socket(PF_CAN, SOCK_RAW, CAN_RAW);

	if (s < 0 || setsockopt(s, SOL_CAN_RAW, CAN_RAW_ERR_FILTER, &mask, sizeof(mask)) ||
	    setsockopt(s, SOL_CAN_RAW, CAN_RAW_FILTER, NULL, 0) ||
	    bind(s, (struct sockaddr *)&addr, sizeof(addr))) {
		printf("FATAL: error-frame watch socket on %s: %s\n", ifname, strerror(errno));
		exit(1);
	}
	return s;
}

/* Wait (bounded) for one error frame on the watch socket, then close it. */
static bool err_watch_wait(int s)
{
	struct can_frame f;
	bool ok = poll(&(struct pollfd){ .fd = s, .events = POLLIN }, 1, 2000) == 1 &&
	          read(s, &f, sizeof(f)) == CAN_MTU && (f.can_id & CAN_ERR_FLAG);

	close(s);
	return ok;
}

static bool listen_only_now(const char *ifname)
{
	struct can_ctrlmode cm = { 0 };

	return can_get_ctrlmode(ifname, &cm) == 0 && (cm.flags & CAN_CTRLMODE_LISTENONLY);
}

/* Refusals must happen before anything reaches the adapter. */
static void physical_refusals(struct adapter *a, struct bus_cfg cfg)
{
	char wire[4096];
	bus_dev_t *d = NULL;

	/* Normal mode on a physical link without the board file's opt-in. */
	cfg.can.listen_only = false;
	CHECK(bus_dev_new(&cfg, &d) == -EPERM && !d, "normal mode on %s not refused", cfg.can.ifname);
	/* Listen-only asked but the process may not set it: refused too. */
	cfg.can.listen_only = true;
	CHECK(open_without_net_admin(&cfg) == 0, "open without CAP_NET_ADMIN not refused");
	adapter_take(a, NULL, wire, sizeof(wire));
	CHECK(wire[0] == '\0', "refused opens talked to the adapter: %s", wire);
}

/* Frames and a controller state change from the adapter, through d. */
static void physical_rx(struct adapter *a, bus_dev_t *d, const char *ifname)
{
	struct acq_item it[8];
	int watch, r;

	adapter_say(a, "t1232AABB\rT01ABCDEF83132333435363738\r");
	for (int n = 0; n < 2 && (r = bus_dev_recv(d, it + n, 8, 1000)) > 0;)
		n += r;
	CHECK(it[0].can.id == 0x123 && it[0].can.len == 2 && it[0].can.data[1] == 0xbb &&
	      it[1].can.id == 0x1abcdef && it[1].can.flags == ACQ_CAN_EXT && it[1].can.data[7] == '8',
	      "frames from the slcan adapter");

	/* check() reads the state via libsocketcan, the error frame follows
	   with the counters; nothing is reported twice. */
	watch = err_watch_open(ifname);
	adapter_say(a, "sp130100\r");
	CHECK(err_watch_wait(watch), "no error frame for the state change");
	r = bus_dev_check(d, it, 8);
	CHECK(r == 1 && it[0].event.code == ACQ_EV_CAN_ERROR_PASSIVE, "check(): %d events, code %u",
	      r, r > 0 ? it[0].event.code : 0);
	r = bus_dev_recv(d, it, 8, 1000);
	CHECK(r == 2 && it[0].can.flags == ACQ_CAN_ERR && it[1].event.code == ACQ_EV_CAN_ERROR_PASSIVE &&
	      it[1].event.arg == 130 && it[1].event.detail == 100, "state error frame: %d items", r);
	CHECK(bus_dev_check(d, it, 8) == 0, "state reported twice");
}

/* Listen-only with a bitrate: the adapter sees S6 (500k) and L, never O. */
static void physical_listen_only(struct adapter *a, struct bus_cfg cfg)
{
	struct acq_item tx = { .kind = ACQ_ITEM_CAN, .can.id = 0x10 };
	char wire[4096];
	bus_dev_t *d = NULL, *d2 = NULL;
	int r;

	cfg.can.listen_only = true;
	cfg.can.bitrate = 500000;
	r = bus_dev_new(&cfg, &d);
	CHECK(r == 0, "listen-only open of %s: %s", cfg.can.ifname, strerror(-r));
	if (r < 0)
		return;
	CHECK(listen_only_now(cfg.can.ifname), "%s not in listen-only mode", cfg.can.ifname);
	adapter_take(a, "L\r", wire, sizeof(wire));
	printf("  adapter saw on listen-only open: %s\n", wire);
	CHECK(strstr(wire, "S6|") && strstr(wire, "L|") && !strstr(wire, "O|"),
	      "wire on listen-only open: %s", wire);
	CHECK(bus_dev_send(d, &tx) == -EPERM, "send on a listen-only physical bus");
	/* Already listen-only at the right bitrate: a second open changes nothing;
	   sending stays refused even with the opt-in while listen-only. */
	cfg.can.allow_normal_mode = true;
	CHECK(bus_dev_new(&cfg, &d2) == 0 && bus_dev_send(d2, &tx) == -EPERM,
	      "listen-only + opt-in: send not refused");
	bus_dev_free(d2);
	adapter_take(a, NULL, wire, sizeof(wire));
	CHECK(wire[0] == '\0', "second listen-only open reconfigured the link: %s", wire);
	physical_rx(a, d, cfg.can.ifname);
	bus_dev_free(d);
}

/* With the opt-in, normal mode: listen-only is cleared, the adapter sees O. */
static void physical_normal(struct adapter *a, struct bus_cfg cfg)
{
	struct acq_item tx = { .kind = ACQ_ITEM_CAN, .can.id = 0x10, .can.len = 1 };
	char wire[4096];
	bus_dev_t *d = NULL;
	int r;

	cfg.can.listen_only = false;
	cfg.can.allow_normal_mode = true;
	r = bus_dev_new(&cfg, &d);
	CHECK(r == 0 && !listen_only_now(cfg.can.ifname), "normal mode with opt-in: %s", strerror(-r));
	adapter_take(a, "O\r", wire, sizeof(wire));
	printf("  adapter saw on normal open (opt-in): %s\n", wire);
	CHECK(strstr(wire, "O|") && !strstr(wire, "L|"), "wire on normal open: %s", wire);
	CHECK(bus_dev_send(d, &tx) == 0, "send in normal mode with the opt-in");
	adapter_take(a, "t010100\r", wire, sizeof(wire));
	CHECK(!strcmp(wire, "t010100|"), "frame on the wire: %s", wire);
	bus_dev_free(d);
}

static void test_physical(void)
{
	unsigned f0 = tlib_failures();
	struct adapter a = { 0 };
	char ifname[IFNAMSIZ] = "", err[4096];
	struct capture cap;
	struct bus_cfg cfg;
	int slave;

	slave = slcan_attach(&a, ifname);
	if (slave < 0) {
		printf("FATAL: cannot attach slcan to a pty: %s\n", strerror(errno));
		exit(1);
	}
	cfg = can_cfg(ifname, false);
	capture_begin(&cap, "stderr-physical.txt");
	physical_refusals(&a, cfg);
	physical_listen_only(&a, cfg);
	physical_normal(&a, cfg);
	capture_end(&cap, err, sizeof(err));
	CHECK(err[0] == '\0', "driver caused output on stderr: %s", err);

	a.stop = true;
	pthread_join(a.thread, NULL);
	close(slave);
	close(a.master);
	OK(f0, "physical stand-in (slcan %s): refusal, listen-only on the wire, state events", ifname);
}

/* Print how long the previous step took (CLOCK_MONOTONIC), for the budget. */
static void lap(const char *step)
{
	static int64_t last;
	struct timespec ts;
	int64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	if (last)
		printf("  (%s: %.1f s)\n", step, (double)(now - last) / 1e9);
	last = now;
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Big socket buffers by default: readers must not lose frames to
	   scheduling in a one-CPU VM (test_flood shrinks its own). */
	write_sysctl("/proc/sys/net/core/rmem_default", 16 << 20);
	lap(NULL);
	test_bad_args();
	test_virtual_link();
	lap("arguments, virtual link");
	test_canplayer(4000);
	lap("canplayer");
	test_cangen(20000, false);
	lap("cangen classic");
	test_cangen(5000, true);
	lap("cangen FD");
	test_filters();
	test_error_events();
	lap("filters, error frames");
	test_flood();
	lap("flood");
	test_physical();
	lap("physical stand-in");
	printf("%s: %u failed checks\n", tlib_failures() ? "FAIL" : "PASS", tlib_failures());
	return tlib_failures() ? 1 : 0;
}
