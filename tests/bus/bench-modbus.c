/* SPDX-License-Identifier: MIT */
/*
 * bench-modbus.c - Modbus driver throughput and poll-thread wakeup latency.
 *
 *   bench-modbus FAULT_SERVER PYMODBUS_SERVER [seconds]
 *
 * 1. Transactions/s of bus/modbus.c (12 groups of 10 requests due every
 *    1 ms, so it runs flat out) against the libmodbus server and the pymodbus
 *    server on loopback, beside a baseline measured in the same run: the
 *    same requests in a bare libmodbus modbus_read_*() loop, same server.
 * 2. Wakeup latency of the driver's pacing on a SCHED_FIFO 80 thread with
 *    mlockall, period 1 ms, one small request per period against the
 *    libmodbus server, beside `cyclictest -m -p 80 -i 1000 -l N -q -h 4096`
 *    in alternating rounds with the same period, priority, count and CPU
 *    (the last one; the server is kept on CPU 0 like a remote device).  Both
 *    histograms have 1 us buckets and percentiles are read the same way
 *    (upper edge of the bucket holding the p-th sample).
 * Needs root (SCHED_FIFO, mlockall) and rt-tests.  Prints; asserts nothing
 * about timing.
 */
#include <assert.h>
#include <errno.h>
#include <modbus.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "acquisition/acq-latency.h"
#include "bus/bus.h"
#include "modbus-peers/mb-expect.h"
#include "modbus-peers/peer.h"

enum { NCH = 120 };

/* units 1-3 x 4 tables x 10 separate registers: 12 groups of 10 requests
   due every 1 ms, more than loopback can serve */
static void bench_channels(struct bus_mb_channel *ch)
{
	for (int i = 0; i < NCH; i++) {
		enum bus_mb_table table = (enum bus_mb_table)(1 + i / 10 % 4);

		ch[i] = mb_chan((uint32_t)i + 1, (uint8_t)(1 + i / 40), table, (uint16_t)(10 * (i % 10)),
		                table <= BUS_MB_DISCRETE ? BUS_MB_BIT : BUS_MB_U16, 1);
	}
}

static double run_driver(int port, double secs)
{
	struct bus_mb_channel ch[NCH];
	struct bus_cfg cfg;
	struct bus_stats st;
	bus_dev_t *dev;
	int64_t t0, end;

	bench_channels(ch);
	cfg = mb_tcp_cfg(port, ch, NCH, 1000, 0);
	assert(bus_dev_new(&cfg, &dev) == 0);
	t0 = tlib_mono_ms();
	end = t0 + (int64_t)(secs * 1000);
	while (tlib_mono_ms() < end) {
		struct acq_item it[64];

		assert(bus_dev_recv(dev, it, 64, 100) >= 0);
	}
	assert(bus_dev_stats(dev, &st) == 0);
	if (st.rx_errors)
		fprintf(stderr, "driver: %llu ok, %llu failed transactions\n", (unsigned long long)st.rx_frames,
		        (unsigned long long)st.rx_errors);
	assert(st.rx_errors == 0);
	bus_dev_free(dev);
	return (double)st.rx_frames * 1000.0 / (double)(tlib_mono_ms() - t0);
}

/* The same requests, in the same order, with libmodbus's own read calls. */
static double run_baseline(int port, double secs)
{
	modbus_t *ctx = modbus_new_tcp("127.0.0.1", port);
	struct bus_mb_channel ch[NCH];
	uint16_t reg;
	uint8_t bit;
	uint64_t n = 0;
	int64_t t0, end;

	bench_channels(ch);
	assert(ctx && modbus_connect(ctx) == 0);
	t0 = tlib_mono_ms();
	end = t0 + (int64_t)(secs * 1000);
	while (tlib_mono_ms() < end) {
		for (int i = 0; i < NCH; i++, n++) {
			const struct bus_mb_channel *c = &ch[i];
			int r = -1;

			modbus_set_slave(ctx, c->unit_id);
			switch (c->table) {
			case BUS_MB_COIL: r = modbus_read_bits(ctx, c->addr, 1, &bit); break;
			case BUS_MB_DISCRETE: r = modbus_read_input_bits(ctx, c->addr, 1, &bit); break;
			case BUS_MB_HOLDING: r = modbus_read_registers(ctx, c->addr, 1, &reg); break;
			case BUS_MB_INPUT: r = modbus_read_input_registers(ctx, c->addr, 1, &reg); break;
			}
			assert(r == 1);
		}
	}
	modbus_close(ctx);
	modbus_free(ctx);
	return (double)n * 1000.0 / (double)(tlib_mono_ms() - t0);
}

struct lat_run {
	int cpu;
	int port;
	unsigned loops;
	struct acq_latency snap;
};

static void *lat_main(void *arg)
{
	struct lat_run *r = arg;
	struct bus_mb_channel ch[1] = { mb_chan(1, 1, BUS_MB_HOLDING, 0, BUS_MB_U16, 1) };
	struct bus_cfg cfg = mb_tcp_cfg(r->port, ch, 1, 500, 0);
	bus_dev_t *dev;

	assert(bus_dev_new(&cfg, &dev) == 0);
	/* the first period only connects: start counting after it */
	while (acq_latency_percentile_us(bus_dev_latency(dev), 100) == 0) {
		struct acq_item it[8];

		assert(bus_dev_recv(dev, it, 8, 100) >= 0);
	}
	for (;;) {
		struct acq_item it[8];

		acq_latency_snapshot(bus_dev_latency(dev), &r->snap);
		if (r->snap.count >= r->loops + 1)
			break;
		assert(bus_dev_recv(dev, it, 8, 100) >= 0);
	}
	bus_dev_free(dev);
	return NULL;
}

static void run_latency(int cpu, int port, unsigned loops, struct acq_latency *ret)
{
	struct lat_run r = { .cpu = cpu, .port = port, .loops = loops };
	struct sched_param sp = { .sched_priority = 80 };
	pthread_attr_t attr;
	pthread_t t;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	assert(pthread_attr_init(&attr) == 0);
	assert(pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED) == 0);
	assert(pthread_attr_setschedpolicy(&attr, SCHED_FIFO) == 0);
	assert(pthread_attr_setschedparam(&attr, &sp) == 0);
	assert(pthread_attr_setaffinity_np(&attr, sizeof(set), &set) == 0);
	if (pthread_create(&t, &attr, lat_main, &r) != 0) {
		fprintf(stderr, "SCHED_FIFO thread: %s (needs root)\n", strerror(errno));
		exit(1);
	}
	assert(pthread_join(t, NULL) == 0);
	*ret = r.snap;
}

/* Run cyclictest and read its histogram into an acq_latency. */
static void run_cyclictest(int cpu, unsigned loops, struct acq_latency *ret)
{
	char lbuf[32], abuf[16], line[256];
	char *argv[] = { "cyclictest", "-m", "-p", "80", "-i", "1000", "-a", abuf, "-l", lbuf, "-q", "-h", "4096", NULL };
	struct tlib_peer p;
	int status;

	snprintf(lbuf, sizeof(lbuf), "%u", loops);
	snprintf(abuf, sizeof(abuf), "%d", cpu);
	acq_latency_reset(ret);
	CHECK(tlib_peer_start(&p, argv, TLIB_PEER_STDOUT) == 0);
	while (tlib_peer_readline(&p, line, sizeof(line), (int)loops + 30000) == 0) {
		unsigned us;
		unsigned long long n;

		if (sscanf(line, "%u %llu", &us, &n) == 2 && us < ACQ_LAT_BUCKETS) {
			ret->bucket[us] = (uint32_t)n;
			ret->count += n;
		} else if (sscanf(line, "# Max Latencies: %u", &us) == 1) {
			ret->max_ns = (uint64_t)us * 1000;
		} else if (sscanf(line, "# Histogram Overflows: %llu", &n) == 1) {
			ret->overflow = n;
			ret->count += n;
		}
	}
	status = tlib_peer_finish(&p, PEER_WAIT_MS);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) || !ret->count) {
		fprintf(stderr, "cyclictest failed (rt-tests installed? root?)\n");
		exit(1);
	}
}

static void lat_merge(struct acq_latency *into, const struct acq_latency *l)
{
	into->count += l->count;
	into->sum_ns += l->sum_ns;
	into->overflow += l->overflow;
	into->overruns += l->overruns;
	if (l->max_ns > into->max_ns)
		into->max_ns = l->max_ns;
	for (unsigned i = 0; i < ACQ_LAT_BUCKETS; i++)
		into->bucket[i] += l->bucket[i];
}

/* Keep the CPUs out of deep idle states for the whole run, as cyclictest
   does for itself (/dev/cpu_dma_latency = 0 while the fd is open). */
static int dma_latency_hold(void)
{
	int32_t zero = 0;
	int fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);

	if (fd >= 0 && write(fd, &zero, sizeof(zero)) != sizeof(zero)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static void print_lat(const char *name, const struct acq_latency *l)
{
	printf("%-28s %8llu %6u %6u %7u %7.1f %9llu\n", name, (unsigned long long)l->count,
	       acq_latency_percentile_us(l, 50), acq_latency_percentile_us(l, 99),
	       acq_latency_percentile_us(l, 99.9), (double)l->max_ns / 1000.0,
	       (unsigned long long)l->overruns);
}

int main(int argc, char **argv)
{
	char *pyargv[] = { "/usr/bin/python3", NULL, "--tcp", "0", NULL };
	char *fargv[] = { NULL, "--tcp", "0", NULL };
	double secs = argc > 3 ? atof(argv[3]) : 2.0;
	unsigned loops = (unsigned)(secs * 2500);
	static struct acq_latency drv, cyc;
	double base_lm, base_py, drv_lm, drv_py;
	enum { ROUNDS = 10 };
	struct peer p;
	int dma_fd;
	int rt_cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;

	if (argc < 3) {
		fprintf(stderr, "usage: %s FAULT_SERVER PYMODBUS_SERVER [seconds]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fargv[0] = argv[1];
	pyargv[1] = argv[2];
	if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fprintf(stderr, "mlockall: %s (latency will suffer)\n", strerror(errno));

	peer_start(&p, pyargv);
	base_py = run_baseline(p.port, secs);
	drv_py = run_driver(p.port, secs);
	assert(peer_stop(&p, NULL) == 0);
	peer_start(&p, fargv);
	/* the server stands in for a remote device: keep it off the CPU the
	   two measured threads share */
	if (rt_cpu > 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(0, &set);
		sched_setaffinity(p.t.pid, sizeof(set), &set);
	}
	base_lm = run_baseline(p.port, secs);
	drv_lm = run_driver(p.port, secs);
	/* alternate short rounds so both see the same background load */
	dma_fd = dma_latency_hold();
	for (int round = 0; round < ROUNDS; round++) {
		static struct acq_latency one;

		run_latency(rt_cpu, p.port, loops / ROUNDS, &one);
		lat_merge(&drv, &one);
		run_cyclictest(rt_cpu, loops / ROUNDS, &one);
		lat_merge(&cyc, &one);
	}
	if (dma_fd >= 0)
		close(dma_fd);
	assert(peer_stop(&p, NULL) == 0);

	printf("\nModbus TCP transactions/s on loopback (%.1f s each)\n", secs);
	printf("%-28s %12s %12s %7s\n", "server", "railmon", "baseline", "ratio");
	printf("%-28s %12.0f %12.0f %7.2f\n", "libmodbus (mb-fault-server)", drv_lm, base_lm, drv_lm / base_lm);
	printf("%-28s %12.0f %12.0f %7.2f\n", "pymodbus 3.0", drv_py, base_py, drv_py / base_py);
	printf("(baseline: the same 120 requests in a bare libmodbus modbus_read_*() loop, same server)\n");
	printf("\nWakeup latency, SCHED_FIFO 80, period 1 ms, mlockall, both on CPU %d (us)\n", rt_cpu);
	printf("%-28s %8s %6s %6s %7s %7s %9s\n", "", "samples", "p50", "p99", "p99.9", "max", "overruns");
	print_lat("railmon modbus poll thread", &drv);
	print_lat("cyclictest (baseline)", &cyc);
	printf("p99 ratio railmon/cyclictest: %.2f (goal <= 1.20)\n",
	       (double)acq_latency_percentile_us(&drv, 99) / (double)acq_latency_percentile_us(&cyc, 99));
	return 0;
}
