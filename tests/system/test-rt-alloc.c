/* SPDX-License-Identifier: MIT */
/*
 * test-rt-alloc.c - proof that the realtime threads never allocate once
 * running: malloc and friends are interposed here and count the calls made
 * by threads named "rx-*" (the bus RX/poll threads), while the real daemon
 * acquires a CAN trace and a real libmodbus TCP server for a few seconds.
 * The trace starts unreadable (a symlink to /proc/self/mem: every read
 * fails with EIO), so the count also covers a device that is gone: the
 * event, the backoff, reopen attempts, and the reopen that works once the
 * link points at the real trace.
 *
 * With an interface name (test-rt-alloc vcan0, in the CAN VM: suite hw)
 * it acquires a SocketCAN bus instead, while this thread sends frames,
 * and also counts the netlink sockets each thread opens (socket() is
 * interposed too): the link checks (libsocketcan) must run on the monitor
 * thread, never on an RX thread.
 *
 * Built without sanitizers only (they interpose malloc themselves).
 */
#include <assert.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/can.h>
#include <net/if.h>

#include "acquisition/acq.h"
#include "conf/config.h"
#include "pipeline/daemon.h"
#include "cli/demo-cmd.h"
#include "cli/demo-trdp.h"
#include "bus/sim-train.h"
#include "railmon-config.h"
#include "tlib.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_bool armed;
static _Atomic long rt_allocs, all_allocs;
static __thread int thread_kind = -1; /* -1 unknown, 0 other, 1 realtime */

/* Is the calling thread a bus RX/poll thread?  Asked until the thread has
   its name (set first thing by the trampoline), then cached. */
static int is_rt(void)
{
	char name[17] = "";

	if (thread_kind >= 0)
		return thread_kind;
	prctl(PR_GET_NAME, name, 0, 0, 0);
	if (!strncmp(name, "rx-", 3))
		thread_kind = 1;
	return !strncmp(name, "rx-", 3);
}

static void note(void)
{
	if (!atomic_load_explicit(&armed, memory_order_relaxed))
		return;
	atomic_fetch_add_explicit(&all_allocs, 1, memory_order_relaxed);
	if (is_rt())
		atomic_fetch_add_explicit(&rt_allocs, 1, memory_order_relaxed);
}

void *malloc(size_t n)
{
	note();
	return __libc_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	note();
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	note();
	return __libc_realloc(p, n);
}

void *aligned_alloc(size_t al, size_t n)
{
	note();
	return __libc_memalign(al, n);
}

int posix_memalign(void **ret, size_t al, size_t n)
{
	void *p;

	note();
	p = __libc_memalign(al, n);
	if (!p)
		return 12; /* ENOMEM */
	*ret = p;
	return 0;
}

void free(void *p)
{
	__libc_free(p);
}

static _Atomic long rx_netlink, monitor_netlink;

/* Netlink sockets by thread: libsocketcan opens one per call. */
int socket(int domain, int type, int protocol)
{
	char name[17] = "";

	if (domain == AF_NETLINK && atomic_load_explicit(&armed, memory_order_relaxed)) {
		prctl(PR_GET_NAME, name, 0, 0, 0);
		if (!strncmp(name, "rx-", 3))
			atomic_fetch_add(&rx_netlink, 1);
		else if (!strcmp(name, "monitor"))
			atomic_fetch_add(&monitor_netlink, 1);
	}
	return (int)syscall(SYS_socket, domain, type, protocol);
}

static void *probe_thread(void *p)
{
	void *volatile m;

	prctl(PR_SET_NAME, "rx-probe", 0, 0, 0);
	m = malloc(32);
	free(m);
	return p;
}

/* The counter itself must see an allocation by an "rx-" thread. */
static void test_counter(void)
{
	pthread_t t;
	void *volatile m;

	atomic_store(&armed, true);
	m = malloc(16);
	free(m);
	assert(pthread_create(&t, NULL, probe_thread, NULL) == 0);
	pthread_join(t, NULL);
	atomic_store(&armed, false);
	assert(atomic_load(&rt_allocs) == 1 && atomic_load(&all_allocs) >= 2);
	atomic_store(&rt_allocs, 0);
	atomic_store(&all_allocs, 0);
}

/* The data dir holds only files (segments, the trace link). */
static void remove_dir(const char *dir)
{
	char path[512];
	struct dirent *e;
	DIR *dp = opendir(dir);

	assert(dp);
	while ((e = readdir(dp)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			assert(unlink(path) == 0);
		}
	closedir(dp);
	assert(rmdir(dir) == 0);
}

/* Frames onto ifname for ms milliseconds, one a millisecond. */
static unsigned send_frames(const char *ifname, int ms)
{
	struct sockaddr_can addr = { .can_family = AF_CAN, .can_ifindex = (int)if_nametoindex(ifname) };
	struct can_frame f = { .can_id = 0x123, .len = 8 };
	int fd = socket(PF_CAN, SOCK_RAW, CAN_RAW);
	unsigned sent = 0;

	assert(fd >= 0 && addr.can_ifindex > 0 && bind(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0);
	for (int i = 0; i < ms; i++, usleep(1000)) {
		memcpy(f.data, &i, sizeof(i));
		sent += write(fd, &f, sizeof(f)) == sizeof(f);
	}
	close(fd);
	return sent;
}

/* A SocketCAN bus: no allocation and no netlink round-trip on its RX
   thread; its link checks ran, on the monitor. */
static int main_socketcan(const char *ifname)
{
	char text[512], err[CONF_ERR_MAX], warn[256], dir[256];
	struct pl_daemon_opts opts = { .lock_memory = true };
	struct pl_daemon_stats st;
	struct pl_daemon *d;
	struct conf_board *cfg;
	unsigned sent;

	snprintf(dir, sizeof(dir), "%s/railmon-rt-alloc.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	assert(mkdtemp(dir));
	opts.data_dir = dir;
	snprintf(text, sizeof(text), "[board]\nvehicle = RTALLOC\nrt_priority = 50\n[storage]\nsegment_size = 1M\n"
	         "[can vehicle]\ndriver = socketcan\ninterface = %s\n", ifname);
	assert(conf_parse("rt-alloc.ini", text, &cfg, err, sizeof(err)) == 0);
	assert(pl_daemon_new(cfg, &opts, &d, err, sizeof(err)) == 0);
	assert(pl_daemon_start(d, warn, sizeof(warn)) == 0);
	usleep(300000);
	atomic_store(&armed, true);
	sent = send_frames(ifname, 3000); /* the monitor checks every second */
	usleep(200000);
	atomic_store(&armed, false);
	pl_daemon_stop(d);
	pl_daemon_stats(d, &st);
	printf("SocketCAN %s while armed: %u frames sent, %llu received; %ld allocations on the RX thread; netlink "
	       "sockets: %ld on the RX thread, %ld on the monitor\n", ifname, sent, (unsigned long long)st.bus_rx[0],
	       atomic_load(&rt_allocs), atomic_load(&rx_netlink), atomic_load(&monitor_netlink));
	assert(sent > 1000 && st.bus_rx[0] >= sent);
	assert(atomic_load(&rt_allocs) == 0);
	assert(atomic_load(&rx_netlink) == 0 && atomic_load(&monitor_netlink) > 0);
	pl_daemon_free(d);
	conf_free(cfg);
	remove_dir(dir);
	puts("test-rt-alloc: ok");
	return 0;
}

int main(int argc, char **argv)
{
	char path[] = RAILMON_SOURCE_DIR "/cli/demo.ini", err[CONF_ERR_MAX], warn[256];
	char dir[] = "/tmp/railmon-rt-alloc.XXXXXX";
	char trace[sizeof(dir) + 16], tmp[sizeof(dir) + 16], real[BUS_PATH_MAX] = "";
	struct pl_daemon_opts opts = { .lock_memory = true };
	struct acq_link_state link = { 0 };
	struct pl_daemon_stats st;
	size_t can = 0, mb = 0, trdp = SIZE_MAX;
	struct bus_sim_train *srv;
	struct cli_demo_trdp *pub = NULL;
	struct pl_daemon *d;
	struct conf_board *cfg;
	uint16_t port, trdp_port;

	test_counter();
	if (argc > 1)
		return main_socketcan(argv[1]);
	assert(mkdtemp(dir));
	opts.data_dir = dir;
	assert(bus_sim_train_start(&srv, &port) == 0);
	assert(conf_load(path, &cfg, err, sizeof(err)) == 0);
	cfg->rt_priority = 50; /* SCHED_FIFO as onboard (root here) */
	snprintf(trace, sizeof(trace), "%s/trace.log", dir);
	snprintf(tmp, sizeof(tmp), "%s/trace.tmp", dir);
	assert(symlink("/proc/self/mem", trace) == 0);
	/* the demo's TRDP consist on a free port, published as in the demo */
	assert(cli_demo_trdp_ports(cfg, &trdp_port) == 0);
	for (size_t b = 0; b < cfg->nbuses; b++) {
		if (cfg->buses[b].kind == BUS_KIND_MODBUS) {
			cfg->buses[b].mb.port = port;
			mb = b;
			continue;
		}
		if (cfg->buses[b].kind == BUS_KIND_TRDP) {
			trdp = b;
			continue;
		}
		can = b;
		cfg->buses[b].can.trace_speed = 20; /* plenty of frames */
		snprintf(real, sizeof(real), "%s", cfg->buses[b].can.device);
		snprintf(cfg->buses[b].can.device, sizeof(cfg->buses[b].can.device), "%s", trace);
	}
	assert(real[0]);
	assert(pl_daemon_new(cfg, &opts, &d, err, sizeof(err)) == 0);
	assert(pl_daemon_start(d, warn, sizeof(warn)) == 0);
	assert(!trdp_port || cli_demo_trdp_start(srv, trdp_port, &pub) == 0);
	/* Realtime asked (and cpu_latency_us left at 0): the CPUs are kept
	   out of deep idle states while it runs, and let go at the stop. */
	assert(cfg->cpu_latency_us == 0 && acq_cpu_latency_current() == 0);
	assert(tlib_fds_on("/dev/cpu_dma_latency") == 1);
	/* Warm-up: connections made, first polls done.  Then count: the
	   trace is gone for 1 s, then readable. */
	usleep(500000);
	atomic_store(&armed, true);
	usleep(1000000);
	assert(symlink(real, tmp) == 0 && rename(tmp, trace) == 0);
	usleep(4000000);
	atomic_store(&armed, false);
	pub = cli_demo_trdp_free(pub);
	pl_daemon_stats(d, &st);
	pl_daemon_bus_link(d, can, &link);
	pl_daemon_stop(d);
	assert(tlib_fds_on("/dev/cpu_dma_latency") == 0);
	printf("while armed: %ld allocations in all threads, %ld in realtime threads; "
	       "%llu CAN frames, %llu Modbus items and %llu TRDP telegrams acquired; the trace was lost %llu times, "
	       "reopened %llu\n",
	       atomic_load(&all_allocs), atomic_load(&rt_allocs), (unsigned long long)st.bus_rx[can],
	       (unsigned long long)st.bus_rx[mb], trdp == SIZE_MAX ? 0ull : (unsigned long long)st.bus_rx[trdp],
	       (unsigned long long)link.losses, (unsigned long long)link.reopens);
	/* The realtime threads did real work, lost and reopened a device,
	   without a single allocation. */
	assert(st.bus_rx[can] > 1000 && st.bus_rx[mb] > 50 && (trdp == SIZE_MAX || st.bus_rx[trdp] > 50));
	assert(link.losses >= 1 && link.reopens >= 1 && link.state == ACQ_LINK_UP);
	assert(atomic_load(&rt_allocs) == 0);
	pl_daemon_free(d);
	conf_free(cfg);
	bus_sim_train_free(srv);
	remove_dir(dir);
	puts("test-rt-alloc: ok");
	return 0;
}
