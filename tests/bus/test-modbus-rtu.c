/* SPDX-License-Identifier: MIT */
/*
 * test-modbus-rtu.c - bus/modbus.c over Modbus RTU through socat pty pairs:
 *   - values of every table from the pymodbus RTU server (units 1-3);
 *   - faults from mb-fault-server on the serial line: exception, short
 *     reply, wrong unit id, CRC error, garbage, a silent request, each one
 *     event naming unit and register, never a value, their bytes counted
 *     as discarded, and a good read of another size right after each;
 *   - unit 0 (broadcast, never answered) refused at open;
 *   - RS-485 mode asked for on a tty that has none: a DISCONNECT with the
 *     ioctl's -errno and no values, never a silent fallback;
 *   - a serial device that appears late: retried until it works.
 *
 *   test-modbus-rtu FAULT_SERVER PYMODBUS_SERVER
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus.h"
#include "modbus-peers/mb-expect.h"
#include "modbus-peers/peer.h"

#define MAX_ITEMS 20000

static struct acq_item items_buf[MAX_ITEMS];

static void check_fcs(struct peer *p)
{
	uint64_t fc[256] = { 0 };

	assert(peer_stop(p, fc) == 0);
	for (int i = 0; i < 256; i++)
		assert(!fc[i] || (i >= 1 && i <= 4));
}

/* test_pymodbus_rtu's run is over: each of its 6 channels read 4 times. */
static bool pymodbus_enough(const struct acq_item *buf, size_t n)
{
	unsigned seen[6] = { 0 };

	for (size_t i = 0; i < n; i++)
		if (buf[i].kind == ACQ_ITEM_SAMPLE && buf[i].sample.channel >= 1 && buf[i].sample.channel <= 6)
			seen[buf[i].sample.channel - 1]++;
	for (int i = 0; i < 6; i++)
		if (seen[i] < 4)
			return false;
	return true;
}

static void test_pymodbus_rtu(const char *dir, const char *py)
{
	char a[300], b[300];
	struct bus_mb_channel ch[6] = {
		mb_chan(1, 1, BUS_MB_HOLDING, 10, BUS_MB_U16, 100),
		mb_chan(2, 1, BUS_MB_HOLDING, 11, BUS_MB_U32, 100),
		mb_chan(3, 2, BUS_MB_INPUT, 20, BUS_MB_S32, 100),
		mb_chan(4, 2, BUS_MB_COIL, 7, BUS_MB_BIT, 100),
		mb_chan(5, 3, BUS_MB_DISCRETE, 33, BUS_MB_BIT, 100),
		mb_chan(6, 3, BUS_MB_HOLDING, 5, BUS_MB_BIT, 100),
	};
	char *argv[] = { "/usr/bin/python3", (char *)py, "--rtu", b, NULL };
	unsigned seen[6] = { 0 };
	struct tlib_peer socat;
	struct peer p;
	struct bus_cfg cfg;
	bus_dev_t *dev;
	size_t n;

	ch[2].order = BUS_MB_CDAB;
	ch[5].bit = 9;
	snprintf(a, sizeof(a), "%s/py-a", dir);
	snprintf(b, sizeof(b), "%s/py-b", dir);
	tlib_socat_pty_pair(&socat, a, b);
	peer_start(&p, argv);
	cfg = mb_rtu_cfg(a, ch, 6, 500, 20);
	assert(bus_dev_new(&cfg, &dev) == 0);
	/* until every channel was read 4 times, not a fixed 450 ms: the CI's
	   ASan stage at load 15 once got fewer reads than that in 450 ms */
	n = mb_run_until(dev, items_buf, 0, MAX_ITEMS, pymodbus_enough, 30000);
	for (size_t i = 0; i < n; i++) {
		const struct acq_item *it = &items_buf[i];

		assert(it->bus == 5);
		if (it->kind == ACQ_ITEM_EVENT) {
			/* a loaded machine may skip periods: said, never made up */
			assert(it->event.code == ACQ_EV_MB_CONNECT ||
			       (it->event.code == ACQ_EV_MB_OVERRUN && it->event.arg >= 1));
			continue;
		}
		assert(it->sample.channel >= 1 && it->sample.channel <= 6);
		assert(it->sample.value == mb_expect(&ch[it->sample.channel - 1]));
		seen[it->sample.channel - 1]++;
	}
	for (int i = 0; i < 6; i++) {
		if (seen[i] < 4) {
			fprintf(stderr, "pymodbus RTU: after 30 s channels 1-6 read %u %u %u %u %u %u times, want 4 each\n",
			        seen[0], seen[1], seen[2], seen[3], seen[4], seen[5]);
			abort();
		}
	}
	assert(peer_stop(&p, NULL) == 0);
	bus_dev_free(dev);
	tlib_peer_stop(&socat, PEER_WAIT_MS);
	printf("pymodbus RTU: %zu items, all values right\n", n);
}

/*
 * Each fault on the line gives one event naming unit and register, never a
 * value.  A request whose answer went wrong in a way that leaves it owed
 * (another unit's frame, bad CRC, garbage, silence) is followed by a read of
 * another size (u32: 4 data bytes), whose good value shows the driver is in
 * step again at once; the cycle starts with one too, after the silent one.
 */
/*
 * The end of test_fault_rtu's 4th cycle: the index after the event that
 * ends a cycle (the silent request's timeout @600, or the garbage's @500
 * that skipped the rest), 0 before it came.  DISCARDED is pushed within
 * its transaction, before the fault event, so nothing of a cycle is cut.
 */
static size_t fault_rtu_end(const struct acq_item *buf, size_t n)
{
	size_t cycles = 0;

	for (size_t i = 0; i < n; i++)
		if (buf[i].kind == ACQ_ITEM_EVENT && buf[i].event.code == ACQ_EV_MB_TIMEOUT &&
		    (buf[i].event.arg == 600 || buf[i].event.arg == 500) && ++cycles == 4)
			return i + 1;
	return 0;
}

static bool fault_rtu_enough(const struct acq_item *buf, size_t n)
{
	return fault_rtu_end(buf, n) != 0;
}

static void test_fault_rtu(const char *dir, const char *fault_server)
{
	char a[300], b[300];
	char *argv[] = { (char *)fault_server, "--rtu", b, "--unit", "7",
		"--fault-addr", "100:exc", "--fault-addr", "200:short", "--fault-addr", "300:unit",
		"--fault-addr", "400:crc", "--fault-addr", "500:garbage", "--fault-addr", "600:silent", NULL };
	struct bus_mb_channel ch[10] = {
		mb_chan(1, 7, BUS_MB_HOLDING, 50, BUS_MB_U32, 400),
		mb_chan(2, 7, BUS_MB_HOLDING, 100, BUS_MB_U16, 400),
		mb_chan(3, 7, BUS_MB_HOLDING, 200, BUS_MB_U16, 400),
		mb_chan(4, 7, BUS_MB_HOLDING, 300, BUS_MB_U16, 400),
		mb_chan(5, 7, BUS_MB_HOLDING, 310, BUS_MB_U32, 400),
		mb_chan(6, 7, BUS_MB_HOLDING, 400, BUS_MB_U16, 400),
		mb_chan(7, 7, BUS_MB_HOLDING, 410, BUS_MB_U32, 400),
		mb_chan(8, 7, BUS_MB_HOLDING, 500, BUS_MB_U16, 400),
		mb_chan(9, 7, BUS_MB_HOLDING, 510, BUS_MB_U32, 400),
		mb_chan(10, 7, BUS_MB_HOLDING, 600, BUS_MB_U16, 400),
	};
	size_t exc = 0, bad = 0, crc = 0, garbage = 0, garbage_tmo = 0, silent = 0, discarded = 0;
	size_t ok[10] = { 0 };
	struct tlib_peer socat;
	struct peer p;
	struct bus_cfg cfg;
	bus_dev_t *dev;
	size_t n;

	snprintf(a, sizeof(a), "%s/fault-a", dir);
	snprintf(b, sizeof(b), "%s/fault-b", dir);
	tlib_socat_pty_pair(&socat, a, b);
	peer_start(&p, argv);
	cfg = mb_rtu_cfg(a, ch, 10, 150, 20);
	assert(bus_dev_new(&cfg, &dev) == 0);
	/* 4 whole cycles, however long a loaded machine takes (not a fixed
	   1500 ms, which may end inside one); what came after them is the
	   next cycle's and is not counted */
	n = mb_run_until(dev, items_buf, 0, MAX_ITEMS, fault_rtu_enough, 30000);
	if (!fault_rtu_end(items_buf, n)) {
		fprintf(stderr, "RTU faults: 4 cycles not over after 30 s (%zu items)\n", n);
		abort();
	}
	n = fault_rtu_end(items_buf, n);
	for (size_t i = 0; i < n; i++) {
		const struct acq_item *it = &items_buf[i];
		int64_t addr = it->event.arg;

		if (it->kind == ACQ_ITEM_SAMPLE) {
			/* only the fault-free channels may ever produce a value */
			uint32_t c = it->sample.channel;

			assert((c == 1 || c == 5 || c == 7 || c == 9) && it->sample.value == mb_expect(&ch[c - 1]));
			ok[c - 1]++;
			continue;
		}
		if (it->event.code == ACQ_EV_MB_CONNECT)
			continue;
		if (it->event.code == ACQ_EV_MB_OVERRUN) {
			/* periods skipped on a loaded machine: said, never made up */
			assert(it->event.arg >= 1);
			continue;
		}
		if (it->event.code == ACQ_EV_MB_DISCARDED) {
			/* the broken replies' bytes, thrown away: counted */
			assert(it->event.arg > 0);
			discarded += (size_t)it->event.arg;
			continue;
		}
		assert((it->event.detail >> 8 & 0xff) == 7);
		if (addr == 500) {
			/* garbage on a serial line: bad CRC, bad frame or too short */
			assert(it->event.code == ACQ_EV_MB_CRC || it->event.code == ACQ_EV_MB_BAD_REPLY ||
			       it->event.code == ACQ_EV_MB_TIMEOUT);
			garbage++;
			garbage_tmo += it->event.code == ACQ_EV_MB_TIMEOUT;
		} else if (it->event.code == ACQ_EV_MB_EXCEPTION) {
			assert(addr == 100);
			exc++;
		} else if (it->event.code == ACQ_EV_MB_BAD_REPLY) {
			assert(addr == 200 || addr == 300);
			bad++;
		} else if (it->event.code == ACQ_EV_MB_CRC) {
			assert(addr == 400 && (it->event.detail & 0xff) == 3);
			crc++;
		} else if (it->event.code == ACQ_EV_MB_TIMEOUT) {
			assert(addr == 600);
			silent++;
		} else {
			fprintf(stderr, "unexpected event %u at %lld\n", it->event.code, (long long)addr);
			abort();
		}
	}
	printf("RTU faults: %zu cycles: exc %zu bad %zu crc %zu garbage %zu silent %zu, %zu bytes discarded\n",
	       ok[0], exc, bad, crc, garbage, silent, discarded);
	assert(ok[0] == 4 && exc == ok[0] && bad == 2 * ok[0] && crc == ok[0] && garbage == ok[0]);
	/* in step again right after another unit's frame and a bad CRC */
	assert(ok[4] == ok[0] && ok[6] == ok[0]);
	/* a garbage frame that ran into the timeout skips the rest of the cycle */
	assert(ok[8] + garbage_tmo == ok[0] && silent == ok[8]);
	/* at least the short reply, the other unit's and the bad CRC frame */
	assert(discarded >= ok[0] * (5 + 7 + 7));
	check_fcs(&p);
	bus_dev_free(dev);
	tlib_peer_stop(&socat, PEER_WAIT_MS);
}

/* Unit 0 is the broadcast address: a serial link refuses to poll it. */
static void test_unit_zero_refused(void)
{
	struct bus_mb_channel ch[2] = { mb_chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16, 20),
	                                mb_chan(2, 0, BUS_MB_HOLDING, 1, BUS_MB_U16, 20) };
	struct bus_cfg cfg = mb_rtu_cfg("/dev/null", ch, 2, 50, 20);
	bus_dev_t *dev = NULL;

	assert(bus_dev_new(&cfg, &dev) == -EINVAL && !dev);
	cfg.mb.nchannels = 1;
	assert(bus_dev_new(&cfg, &dev) == 0 && dev);
	bus_dev_free(dev);
}

/* An event other than OVERRUN came (a device that cannot be opened). */
static bool saw_event(const struct acq_item *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (buf[i].kind == ACQ_ITEM_EVENT && buf[i].event.code != ACQ_EV_MB_OVERRUN)
			return true;
	return false;
}

/*
 * A device that cannot be opened: said by one DISCONNECT however often
 * it is retried.  Waits for it (a loaded machine may be late), then
 * watches ms more; periods skipped meanwhile (OVERRUN) are allowed,
 * anything else is named.  The DISCONNECT's arg (-errno).
 */
static int64_t expect_one_disconnect(bus_dev_t *dev, int ms)
{
	size_t n = mb_run_until(dev, items_buf, 0, MAX_ITEMS, saw_event, 10000);
	size_t disconnects = 0;
	int64_t arg = 0;

	n += mb_run_for(dev, ms, items_buf + n, MAX_ITEMS - n);
	for (size_t i = 0; i < n; i++) {
		const struct acq_event *e = &items_buf[i].event;

		if (items_buf[i].kind == ACQ_ITEM_EVENT && e->code == ACQ_EV_MB_DISCONNECT) {
			disconnects++;
			arg = e->arg;
		} else if (items_buf[i].kind != ACQ_ITEM_EVENT || e->code != ACQ_EV_MB_OVERRUN || e->arg < 1) {
			fprintf(stderr, "device not opened: item %zu of %zu: kind %u event %u arg %lld\n", i, n,
			        items_buf[i].kind, e->code, (long long)e->arg);
			abort();
		}
	}
	if (disconnects != 1) {
		fprintf(stderr, "device not opened: %zu DISCONNECT events, want 1\n", disconnects);
		abort();
	}
	return arg;
}

static void test_rs485_refused(const char *dir)
{
	char a[300], b[300];
	struct bus_mb_channel ch[1] = { mb_chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16, 20) };
	struct tlib_peer socat;
	struct bus_cfg cfg;
	bus_dev_t *dev;
	int64_t arg;

	snprintf(a, sizeof(a), "%s/rs-a", dir);
	snprintf(b, sizeof(b), "%s/rs-b", dir);
	tlib_socat_pty_pair(&socat, a, b);
	cfg = mb_rtu_cfg(a, ch, 1, 50, 20);
	cfg.mb.rs485 = true;
	assert(bus_dev_new(&cfg, &dev) == 0);
	arg = expect_one_disconnect(dev, 200);
	printf("RS-485 on a pty: refused with %s\n", strerror((int)-arg));
	assert(arg < 0);
	bus_dev_free(dev);
	tlib_peer_stop(&socat, PEER_WAIT_MS);
}

/* test_late_device's step is over: 20 samples read from the late device. */
static bool late_enough(const struct acq_item *buf, size_t n)
{
	size_t samples = 0;

	for (size_t i = 0; i < n; i++)
		samples += buf[i].kind == ACQ_ITEM_SAMPLE;
	return samples >= 20;
}

static void test_late_device(const char *dir, const char *py)
{
	char a[300], b[300];
	char *argv[] = { "/usr/bin/python3", (char *)py, "--rtu", b, NULL };
	struct bus_mb_channel ch[1] = { mb_chan(1, 2, BUS_MB_INPUT, 3, BUS_MB_U16, 20) };
	struct tlib_peer socat;
	struct peer p;
	struct bus_cfg cfg;
	bus_dev_t *dev;
	size_t n, samples = 0, connects = 0;

	snprintf(a, sizeof(a), "%s/late-a", dir);
	snprintf(b, sizeof(b), "%s/late-b", dir);
	cfg = mb_rtu_cfg(a, ch, 1, 200, 20);
	assert(bus_dev_new(&cfg, &dev) == 0);
	assert(expect_one_disconnect(dev, 300) == -ENOENT);
	tlib_socat_pty_pair(&socat, a, b);
	peer_start(&p, argv);
	/* until 20 samples came: pymodbus starting on a loaded machine took
	   longer than the fixed 2.5 s this step once waited */
	n = mb_run_until(dev, items_buf, 0, MAX_ITEMS, late_enough, 30000);
	for (size_t i = 0; i < n; i++) {
		if (items_buf[i].kind == ACQ_ITEM_SAMPLE) {
			assert(items_buf[i].sample.value == mb_expect(&ch[0]));
			samples++;
		} else if (items_buf[i].event.code == ACQ_EV_MB_CONNECT) {
			assert(items_buf[i].event.arg >= 2);
			connects++;
		} else if (items_buf[i].event.code == ACQ_EV_MB_OVERRUN) {
			/* the periods spent starting the peers between two runs,
			   or a busy machine: skipped, never made up */
			assert(items_buf[i].event.arg >= 1);
		} else {
			/* the tty can be there before the peer reads it: requests
			   may go unanswered until then, never after a good one */
			if ((items_buf[i].event.code != ACQ_EV_MB_TIMEOUT && items_buf[i].event.code != ACQ_EV_MB_BAD_REPLY &&
			     items_buf[i].event.code != ACQ_EV_MB_CRC) || samples) {
				fprintf(stderr, "late device: event %u arg %lld after %zu samples\n", items_buf[i].event.code,
				        (long long)items_buf[i].event.arg, samples);
				abort();
			}
		}
	}
	assert(connects == 1 && samples >= 20);
	assert(peer_stop(&p, NULL) == 0);
	bus_dev_free(dev);
	tlib_peer_stop(&socat, PEER_WAIT_MS);
	printf("late serial device: connected after retries, %zu samples\n", samples);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/test-modbus-rtu-XXXXXX";
	char cmd[300];

	if (argc != 3) {
		fprintf(stderr, "usage: %s FAULT_SERVER PYMODBUS_SERVER\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	assert(mkdtemp(dir));
	test_pymodbus_rtu(dir, argv[2]);
	test_fault_rtu(dir, argv[1]);
	test_unit_zero_refused();
	test_rs485_refused(dir);
	test_late_device(dir, argv[2]);
	/* socat removed its links on exit; the directory must be empty now */
	snprintf(cmd, sizeof(cmd), "%s", dir);
	assert(rmdir(cmd) == 0);
	printf("test-modbus-rtu: ok\n");
	return 0;
}
