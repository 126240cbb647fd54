/* SPDX-License-Identifier: MIT */
/*
 * test-trdp-noopts.c - a kernel that refuses SO_TIMESTAMPNS and
 * SO_RXQ_OVFL (qemu-user says ENOPROTOOPT for both): the TRDP bus still
 * receives, a telegram's time is then its read's, and the bus says so
 * (bus_trdp_stats.opts_refused, `stat`'s "times" and "drops" lines)
 * instead of falling back silently.  The refusal is forced here by this
 * program's own setsockopt(), which the static libbus links to in place
 * of libc's; with the options granted the same checks see the kernel's
 * receive time and nothing refused.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bus/bus.h"
#include "cli/stat-table.h"
#include "record/batch.h"
#include "tlib.h"
#include "trdp/header.h"

static bool refuse; /* refuse the two options, as qemu-user does */

int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (refuse && level == SOL_SOCKET && (name == SO_TIMESTAMPNS || name == SO_RXQ_OVFL)) {
		errno = ENOPROTOOPT;
		return -1;
	}
	return (int)syscall(SYS_setsockopt, fd, level, name, val, len);
}

static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	      getsockname(fd, (struct sockaddr *)&sa, &sl) == 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* One PD telegram (sequence counter seq) sent and read back: its time,
   and in *ret_mid the moment between the send (loopback delivers in
   sendto) and the read. */
static int64_t round_trip(bus_dev_t *dev, int fd, const struct sockaddr_in *dst, uint32_t seq, int64_t *ret_mid)
{
	const struct trdp_header h = { .seq = seq, .version = TRDP_PROTO_VERSION, .msg_type = TRDP_MSG_PD, .com_id = 7 };
	uint8_t b[TRDP_PD_HEADER_SIZE] = { 0 };
	struct acq_item items[8];
	int64_t t = 0;
	int n, got = 0;

	CHECK(trdp_pd_header_write(&h, b, sizeof(b)) == (int)TRDP_PD_HEADER_SIZE);
	CHECK(sendto(fd, b, sizeof(b), 0, (const struct sockaddr *)dst, sizeof(*dst)) == (ssize_t)sizeof(b));
	*ret_mid = now_ns();
	while (!got && (n = bus_dev_recv(dev, items, 8, 5000)) > 0)
		for (int i = 0; i < n; i++)
			if (items[i].kind == ACQ_ITEM_TRDP) {
				got++;
				t = items[i].t_ns;
				CHECK(bus_dev_trdp_release(dev, &items[i]) == 0);
			}
	CHECK(got == 1, "telegram %u not received", seq);
	return t;
}

/* A telegram's time against the moment between its send and its read:
   the kernel's receive time is before it, a read's time after.  The
   kernel turns its receive timestamps on for the first socket that asks
   in a deferred work item (net_enable_timestamp()); until that has run,
   on a loaded machine, a datagram gets the time of its read even with the
   option granted.  So with the options granted the telegrams are sent
   until one has the kernel's time (a driver that ignores it never gets
   there: 10 s, then failed); refused, the first must have the read's. */
static void one(bool refused)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_TRDP, .index = 0 };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct bus_trdp_stats ts;
	bus_dev_t *dev = NULL;
	int64_t mid, t, until;
	uint32_t seq = 1;
	int fd;

	refuse = refused;
	strcpy(cfg.name, "noopts");
	cfg.trdp.bind_ip = INADDR_LOOPBACK;
	cfg.trdp.pd_port = free_port();
	CHECK(bus_dev_new(&cfg, &dev) == 0);
	CHECK(bus_dev_trdp_stats(dev, &ts) == 0);
	CHECK(ts.opts_refused == (refused ? BUS_TRDP_NO_KERNEL_TIME | BUS_TRDP_NO_RXQ_OVFL : 0u),
	      "refused %d: opts_refused %u", refused, ts.opts_refused);
	dst.sin_port = htons(cfg.trdp.pd_port);
	CHECK((fd = socket(AF_INET, SOCK_DGRAM, 0)) >= 0);
	t = round_trip(dev, fd, &dst, seq, &mid);
	until = mid + 10 * (int64_t)1000000000;
	if (refused)
		CHECK(t >= mid, "options refused: time %lld before the read (%lld): not the read's", (long long)t,
		      (long long)mid);
	else {
		while (t > mid && mid < until) {
			sched_yield(); /* the kernel's work item runs */
			t = round_trip(dev, fd, &dst, ++seq, &mid);
		}
		CHECK(t <= mid, "options granted: time %lld after the send (%lld), %u telegrams in 10 s: not the kernel's",
		      (long long)t, (long long)mid, seq);
	}
	printf("trdp-noopts: options %s: opts_refused %u, telegram %u's time %+lld ns from between send and read\n",
	       refused ? "refused" : "granted", ts.opts_refused, seq, (long long)(t - mid));
	close(fd);
	bus_dev_free(dev);
	refuse = false;
}

/* stat's table from the daemon's JSON line: the fallbacks said under the
   bus's row, nothing when none. */
static void table(const char *json, bool want)
{
	struct rec_health h;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f);
	cli_stat_health_parse(json, &h);
	cli_health_row(f, &h);
	CHECK(fclose(f) == 0);
	CHECK(!strstr(text, "times        SO_TIMESTAMPNS refused by the kernel: times are read times") == !want, "%s",
	      text);
	CHECK(!strstr(text, "drops        SO_RXQ_OVFL refused by the kernel: socket drops read by SO_MEMINFO") == !want,
	      "%s", text);
	free(text);
}

/* The telegrams line names rx_dropped by how the bus received ("receive"
   in the JSON line, Health.trdp_receive in a log); a line without it (a
   log written before Health said it) in words true of any. */
static void named(const char *receive, const char *want)
{
	char json[256], line[128];
	struct rec_health h;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f);
	snprintf(json, sizeof(json), "{\"name\":\"ecn\",\"kind\":\"trdp\",\"items\":1,\"rx_dropped\":7,"
	         "\"telegrams\":1,\"byte_ring_drops\":2%s%s%s}", receive ? ",\"receive\":\"" : "",
	         receive ? receive : "", receive ? "\"" : "");
	cli_stat_health_parse(json, &h);
	cli_health_row(f, &h);
	CHECK(fclose(f) == 0);
	snprintf(line, sizeof(line), " bytes, 7 %s, 2 byte ring drops\n", want);
	CHECK(strstr(text, line), "receive %s: want \"%s\" in:\n%s", receive ? receive : "(none)", line, text);
	free(text);
}

int main(void)
{
	one(false);
	one(true);
	table("{\"name\":\"ecn\",\"kind\":\"trdp\",\"items\":1,\"telegrams\":1,\"opts_refused\":3}", true);
	table("{\"name\":\"ecn\",\"kind\":\"trdp\",\"items\":1,\"telegrams\":1,\"opts_refused\":0}", false);
	named("socket", "socket drops");
	named("capture", "packet ring drops");
	named("replay", "capture gaps");
	named(NULL, "receive drops");
	printf("PASS\n");
	return 0;
}
