/* SPDX-License-Identifier: MIT */
/*
 * test-bus-gone.c - devices that go away, at the driver level (bus.h):
 *   - slcan over a socat pty pair: the socat is stopped (the adapter is
 *     unplugged); recv says -ENODEV (with the hang-up as the cause) at
 *     once and on every later call instead of spinning on "errors";
 *     release, reopen fails while the path is missing; socat and the
 *     adapter come back at the same path, reopen runs the init commands
 *     again and the frames sent after the replug arrive;
 *   - a trace whose reads fail (EIO from /proc/self/mem behind a symlink):
 *     -ENODEV with cause -EIO; the link is pointed at a real trace and the
 *     reopen reads it; a release and reopen in the middle of a file reads
 *     every line exactly once; a directory is refused with -EISDIR;
 *   - a Modbus RTU device that vanishes (its socat stopped): one
 *     DISCONNECT, then bounded reconnect attempts that use almost no CPU,
 *     one CONNECT and values again once it is back;
 *   - bad arguments.
 *
 *   test-bus-gone SLCAN_PEER PYMODBUS_SERVER
 */
#undef NDEBUG
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bus/bus.h"
#include "modbus-peers/mb-expect.h"
#include "modbus-peers/peer.h"

#define MAX_ITEMS 4096

static struct acq_item items_buf[MAX_ITEMS];

static int64_t thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_args(const char *dir)
{
	struct bus_mb_channel ch = { .id = 1, .unit_id = 1, .table = BUS_MB_HOLDING, .type = BUS_MB_U16,
	                             .scale = 1, .period_ms = 100 };
	struct bus_cfg cfg = { .kind = BUS_KIND_MODBUS };
	bus_dev_t *dev;

	assert(bus_dev_gone_cause(NULL) == -EINVAL);
	assert(bus_dev_release(NULL) == -EINVAL);
	assert(bus_dev_reopen(NULL) == -EINVAL);
	/* Modbus reconnects by itself: no release/reopen from outside */
	strcpy(cfg.mb.host, "127.0.0.1");
	cfg.mb.port = 1;
	cfg.mb.response_timeout_ms = 100;
	cfg.mb.channels = &ch;
	cfg.mb.nchannels = 1;
	assert(bus_dev_new(&cfg, &dev) == 0);
	assert(bus_dev_gone_cause(dev) == 0);
	assert(bus_dev_release(dev) == -EOPNOTSUPP);
	assert(bus_dev_reopen(dev) == -EOPNOTSUPP);
	bus_dev_free(dev);
	/* a directory as a trace opens, then fails every read: refused */
	memset(&cfg, 0, sizeof(cfg));
	cfg.kind = BUS_KIND_CAN;
	cfg.can.driver = BUS_CAN_TRACE;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", dir);
	dev = NULL;
	assert(bus_dev_new(&cfg, &dev) == -EISDIR && !dev);
	assert(bus_dev_new_absent_ok(&cfg, &dev) == -EISDIR && !dev); /* not absence: a wrong file */

	/* A restart during an outage: an absent adapter opens gone */
	memset(&cfg, 0, sizeof(cfg));
	cfg.kind = BUS_KIND_CAN;
	cfg.can.driver = BUS_CAN_SLCAN;
	cfg.can.listen_only = true;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s/unplugged", dir);
	assert(bus_dev_new(&cfg, &dev) == -ENOENT && !dev);
	assert(bus_dev_new_absent_ok(&cfg, &dev) == 0 && bus_dev_gone_cause(dev) == -ENOENT);
	assert(bus_dev_recv(dev, items_buf, 64, 100) == -ENODEV && bus_dev_reopen(dev) == -ENOENT);
	dev = bus_dev_free(dev);
	cfg.can.listen_only = false; /* normal mode without the opt-in: still refused */
	assert(bus_dev_new_absent_ok(&cfg, &dev) == -EPERM && !dev);
	assert(bus_dev_new_absent_ok(NULL, &dev) == -EINVAL);
	printf("arguments: NULL -> -EINVAL, Modbus -> -EOPNOTSUPP, a directory as trace -> -EISDIR; "
	       "an absent adapter opens gone only when asked\n");
}

/* ------------------------------------------------------------- slcan */

/* slcan-peer.py --serial: wait for OPEN; the caller then opens or reopens. */
static void adapter_plug(struct peer *p, const char *script, const char *pty, unsigned first, unsigned count)
{
	char f[16], c[16], line[128];
	char *argv[] = { "/usr/bin/python3", (char *)script, "--serial", (char *)pty, f, c, NULL };

	snprintf(f, sizeof(f), "%u", first);
	snprintf(c, sizeof(c), "%u", count);
	CHECK(tlib_peer_start(&p->t, argv, TLIB_PEER_STDIN | TLIB_PEER_STDOUT) == 0);
	assert(tlib_peer_readline(&p->t, line, sizeof(line), PEER_WAIT_MS) == 0 && !strcmp(line, "OPEN"));
}

/* Receive count frames whose data are the numbers first.. in order. */
static void receive_numbers(bus_dev_t *dev, unsigned first, unsigned count)
{
	unsigned got = 0;
	int64_t end = tlib_mono_ms() + 10000;

	while (got < count && tlib_mono_ms() < end) {
		struct acq_item it[64];
		int n = bus_dev_recv(dev, it, 64, 200);

		assert(n >= 0);
		for (int i = 0; i < n; i++) {
			uint64_t v = 0;

			assert(it[i].kind == ACQ_ITEM_CAN && it[i].can.id == 0x123 && it[i].can.len == 8);
			for (int k = 0; k < 8; k++)
				v = v << 8 | it[i].can.data[k];
			assert(v == first + got);
			got++;
		}
	}
	if (got != count) {
		fprintf(stderr, "got %u of %u frames\n", got, count);
		abort();
	}
}

static void test_slcan(const char *dir, const char *script)
{
	char a[200], b[200], line[128];
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN, .index = 2 };
	struct tlib_peer socat;
	struct peer adapter;
	struct bus_stats st;
	struct acq_item it[64];
	bus_dev_t *dev;
	int n = 0, calls = 0, r;
	int64_t end;

	snprintf(a, sizeof(a), "%s/slcan-a", dir);
	snprintf(b, sizeof(b), "%s/slcan-b", dir);
	cfg.can.driver = BUS_CAN_SLCAN;
	cfg.can.listen_only = true;
	cfg.can.bitrate = 500000;
	cfg.can.serial_baud = 115200;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", a);
	tlib_socat_pty_pair(&socat, a, b);
	adapter_plug(&adapter, script, b, 1, 50);
	assert(bus_dev_new(&cfg, &dev) == 0);
	receive_numbers(dev, 1, 50);

	/* unplug: socat goes, the adapter's side of the pty with it */
	tlib_peer_stop(&socat, PEER_WAIT_MS);
	assert(peer_stop(&adapter, NULL) == 0);
	end = tlib_mono_ms() + 5000;
	while ((n = bus_dev_recv(dev, it, 64, 100)) == 0 && tlib_mono_ms() < end)
		calls++;
	if (n != -ENODEV) {
		fprintf(stderr, "slcan recv after the unplug: %d (%s), want -ENODEV\n", n, strerror(-n));
		abort();
	}
	r = bus_dev_gone_cause(dev);
	assert(r == -EPIPE || r == -EIO);
	/* said once is said for good: no poll on a dead tty, no new "error" */
	for (int i = 0; i < 1000; i++)
		assert(bus_dev_recv(dev, it, 64, 100) == -ENODEV);
	assert(bus_dev_release(dev) == 0);
	assert(bus_dev_recv(dev, it, 64, 100) == -ENODEV && bus_dev_gone_cause(dev) == r);
	assert(bus_dev_reopen(dev) == -ENOENT); /* socat removed its link */
	printf("slcan unplugged: -ENODEV (%s) after %d empty reads; reopen: %s\n", strerror(-r), calls,
	       strerror(ENOENT));

	/* replug at the same path: reopen sends the init commands again */
	tlib_socat_pty_pair(&socat, a, b);
	adapter_plug(&adapter, script, b, 51, 50);
	assert(bus_dev_reopen(dev) == 0 && bus_dev_gone_cause(dev) == 0);
	assert(tlib_peer_readline(&adapter.t, line, sizeof(line), PEER_WAIT_MS) == 0 && !strcmp(line, "SENT 50"));
	receive_numbers(dev, 51, 50);
	assert(bus_dev_stats(dev, &st) == 0 && st.rx_frames == 100 && st.bad_input == 0);
	bus_dev_free(dev); /* the closing C the adapter waits for */
	assert(peer_stop(&adapter, NULL) == 0);
	tlib_peer_stop(&socat, PEER_WAIT_MS);
	printf("slcan replugged: reopened with C,S6,L again, the 50 frames sent after it received\n");
}

/* ------------------------------------------------------------- trace */

static void write_trace(const char *path, unsigned first, unsigned count)
{
	FILE *f = fopen(path, "w");

	assert(f);
	for (unsigned k = first; k < first + count; k++)
		fprintf(f, "(%u.000000) can0 123#%016X\n", 1000 + k, k);
	assert(fclose(f) == 0);
}

static unsigned trace_drain(bus_dev_t *dev, unsigned first, unsigned max)
{
	unsigned got = 0;
	int n;

	while (got < max && (n = bus_dev_recv(dev, items_buf, got + 64 <= max ? 64 : max - got, 0)) > 0) {
		for (int i = 0; i < n; i++) {
			uint64_t v = 0;

			for (int k = 0; k < 8; k++)
				v = v << 8 | items_buf[i].can.data[k];
			assert(items_buf[i].kind == ACQ_ITEM_CAN && v == first + got);
			got++;
		}
	}
	return got;
}

static void test_trace(const char *dir)
{
	char link[200], real[200], tmp[200];
	struct bus_cfg cfg = { .kind = BUS_KIND_CAN, .index = 1 };
	bus_dev_t *dev;
	unsigned got;
	int n;

	snprintf(link, sizeof(link), "%s/trace.log", dir);
	snprintf(real, sizeof(real), "%s/real.log", dir);
	snprintf(tmp, sizeof(tmp), "%s/trace.tmp", dir);
	/* /proc/self/mem opens as a regular file and fails its reads (EIO at
	   offset 0, nothing is mapped there): a file that cannot be read */
	assert(symlink("/proc/self/mem", link) == 0);
	cfg.can.driver = BUS_CAN_TRACE;
	snprintf(cfg.can.device, sizeof(cfg.can.device), "%s", link);
	assert(bus_dev_new(&cfg, &dev) == 0);
	n = bus_dev_recv(dev, items_buf, 64, 100);
	if (n != -ENODEV) {
		fprintf(stderr, "trace recv on a failing file: %d (%s), want -ENODEV\n", n, strerror(-n));
		abort();
	}
	assert(bus_dev_gone_cause(dev) == -EIO);
	assert(bus_dev_release(dev) == 0 && bus_dev_recv(dev, items_buf, 64, 100) == -ENODEV);
	/* 5000 lines: more than the driver's 64 KiB buffer holds */
	write_trace(real, 1, 5000);
	assert(symlink(real, tmp) == 0 && rename(tmp, link) == 0);
	assert(bus_dev_reopen(dev) == 0 && bus_dev_gone_cause(dev) == 0);
	got = trace_drain(dev, 1, 1000);
	assert(got == 1000);
	/* away and back in the middle of the file: it goes on where it was */
	assert(bus_dev_release(dev) == 0 && bus_dev_recv(dev, items_buf, 64, 0) == -ENODEV);
	assert(bus_dev_reopen(dev) == 0);
	got += trace_drain(dev, 1001, 4000);
	assert(got == 5000 && bus_dev_recv(dev, items_buf, 64, 0) == -ENODATA);
	bus_dev_free(dev);
	unlink(link);
	unlink(real);
	printf("trace: a read error (EIO) is -ENODEV; reopened on a real file and in mid-file: "
	       "%u lines, each once\n", got);
}

/* -------------------------------------------------------- Modbus RTU */

struct mb_tally {
	size_t samples, connects, disconnects, other;
	int64_t disconnect_arg;
};

static struct mb_tally mb_run(bus_dev_t *dev, int ms, int64_t *ret_cpu_ms)
{
	struct mb_tally t = { 0 };
	int64_t end = tlib_mono_ms() + ms, cpu0 = thread_cpu_ms();

	for (int64_t left; (left = end - tlib_mono_ms()) > 0;) {
		struct acq_item it[64];
		int r = bus_dev_recv(dev, it, 64, (int)left);

		assert(r >= 0); /* Modbus faults are events, never errors */
		for (int i = 0; i < r; i++) {
			if (it[i].kind == ACQ_ITEM_SAMPLE) {
				assert(it[i].sample.value == 1000); /* unit 1, holding 0 */
				t.samples++;
			} else if (it[i].event.code == ACQ_EV_MB_CONNECT) {
				t.connects++;
			} else if (it[i].event.code == ACQ_EV_MB_DISCONNECT) {
				t.disconnects++;
				t.disconnect_arg = it[i].event.arg;
			} else {
				t.other++;
			}
		}
	}
	if (ret_cpu_ms)
		*ret_cpu_ms = thread_cpu_ms() - cpu0;
	return t;
}

static void test_modbus_rtu(const char *dir, const char *py)
{
	char a[200], b[200];
	char *argv[] = { "/usr/bin/python3", (char *)py, "--rtu", b, NULL };
	struct bus_mb_channel ch = mb_chan(7, 1, BUS_MB_HOLDING, 0, BUS_MB_U16, 20);
	struct bus_cfg cfg;
	struct tlib_peer socat;
	struct peer srv;
	struct mb_tally t;
	bus_dev_t *dev;
	int64_t cpu_ms;

	snprintf(a, sizeof(a), "%s/mb-a", dir);
	snprintf(b, sizeof(b), "%s/mb-b", dir);
	cfg = mb_rtu_cfg(a, &ch, 1, 100, 20);
	cfg.index = 3;
	tlib_socat_pty_pair(&socat, a, b);
	peer_start(&srv, argv);
	assert(bus_dev_new(&cfg, &dev) == 0);
	t = mb_run(dev, 1000, NULL);
	assert(t.connects == 1 && t.disconnects == 0 && t.samples >= 10);

	/* the serial device vanishes */
	tlib_peer_stop(&socat, PEER_WAIT_MS);
	peer_stop(&srv, NULL); /* how pymodbus takes losing its tty is its business */
	t = mb_run(dev, 3000, &cpu_ms);
	printf("RTU device gone: %zu DISCONNECT (%s), %zu other events, %zu values, %lld ms CPU in 3 s\n",
	       t.disconnects, strerror((int)-t.disconnect_arg), t.other, t.samples, (long long)cpu_ms);
	/* said once, then quiet: reconnect attempts at most every 2 s */
	assert(t.disconnects == 1 && t.connects == 0 && t.samples == 0 && t.disconnect_arg < 0);
	assert(cpu_ms <= 90); /* 3% of the 3 s */

	/* back at the same path */
	tlib_socat_pty_pair(&socat, a, b);
	peer_start(&srv, argv);
	t = mb_run(dev, 4000, NULL);
	printf("RTU device back: %zu CONNECT, %zu values\n", t.connects, t.samples);
	assert(t.connects == 1 && t.disconnects == 0 && t.samples >= 10);
	bus_dev_free(dev);
	assert(peer_stop(&srv, NULL) == 0);
	tlib_peer_stop(&socat, PEER_WAIT_MS);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test-bus-gone-XXXXXX";

	assert(argc == 3);
	signal(SIGPIPE, SIG_IGN);
	assert(mkdtemp(dir));
	test_args(dir);
	test_slcan(dir, argv[1]);
	test_trace(dir);
	test_modbus_rtu(dir, argv[2]);
	assert(rmdir(dir) == 0);
	printf("test-bus-gone: ok\n");
	return 0;
}
