/* SPDX-License-Identifier: MIT */
/*
 * demo-trdp.c - the demo's TRDP consist publisher (demo-trdp.h).
 *
 * It writes the PD telegrams a TCMS would send: the 40-byte header of
 * IEC 61375-2-3 (big-endian fields, the FCS a CRC-32 over the first 36
 * bytes stored little-endian: trdp/header.h) and the data sets of
 * cli/demo/consist.xml packed big-endian with no padding between
 * elements, the UDP payload padded to a multiple of 4.  The layouts below
 * are that file's; the daemon decodes them with the XML, so a layout that
 * drifts from it shows as wrong values or short data sets in the demo.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/thread.h"
#include "cli/demo-trdp.h"
#include "trdp/header.h"

/* consist.xml's ComIds and the data sets' bytes */
enum { DEMO_DOORS = 1001, DEMO_HVAC = 1002, DEMO_TRACTION = 1003 };
#define DEMO_DOORS_LEN 4u     /* Car1Open[2], Car2Open[2]: BOOL8 */
#define DEMO_HVAC_LEN 10u     /* CabinTemp[2] REAL32, Setpoint INT16 */
#define DEMO_TRACTION_LEN 14u /* State UINT8, Effort INT16, LineVoltage UINT16, MotorTemp UINT8, Time TIMEDATE64 */
#define DEMO_CYCLE_NS 100000000LL
/* Not glibc's 8 MiB default stack, which a process that mlockall()s holds
   whole (`railmon demo` does not lock; tests/system's rt-alloc runs this
   publisher beside a daemon that does).  Measured (railmon demo, pages
   touched): 12 KiB while publishing the consist's telegrams. */
#define DEMO_TRDP_STACK_BYTES (256 * 1024)

struct cli_demo_trdp {
	const struct bus_sim_train *sim;
	int fd;
	struct sockaddr_in dst;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	_Atomic uint64_t sent;
	uint32_t seq[3]; /* per ComId, as a publisher counts */
};

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint8_t *put_real32(uint8_t *p, float f)
{
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	return put32(p, v);
}

/* A raw value in range of its type (a simulated value never leaves it,
   but a cast of one out of range would be undefined). */
static long clamp(double v, long lo, long hi)
{
	return v < (double)lo ? lo : v > (double)hi ? hi : lround(v);
}

static void send_pd(struct cli_demo_trdp *p, int which, uint32_t com_id, const uint8_t *data, uint32_t len)
{
	uint8_t buf[TRDP_PD_HEADER_SIZE + 32] = { 0 }; /* the padding after the data set: zeros */
	size_t n = TRDP_PD_HEADER_SIZE + ((len + 3u) & ~3u);

	/* topology counters 0: no inauguration in the demo; reply ComId and
	   address 0 */
	const struct trdp_header h = { .seq = p->seq[which]++, .version = TRDP_PROTO_VERSION,
		                       .msg_type = TRDP_MSG_PD, .com_id = com_id, .dataset_len = len };

	trdp_pd_header_write(&h, buf, sizeof(buf));
	memcpy(buf + TRDP_PD_HEADER_SIZE, data, len);
	/* loopback: a send fails only when the receiver's buffer is full, and
	   then the daemon counts what it missed by the sequence counter */
	if (sendto(p->fd, buf, n, 0, (const struct sockaddr *)&p->dst, sizeof(p->dst)) == (ssize_t)n)
		atomic_fetch_add_explicit(&p->sent, 1, memory_order_relaxed);
}

/* One 100 ms tick: the doors and traction, and every tenth the HVAC. */
static void publish(struct cli_demo_trdp *p, unsigned tick)
{
	uint8_t d[DEMO_TRACTION_LEN], *q;
	struct bus_sim_journey j;
	double effort_kn, motor_c;
	int64_t real = basic_realtime_ns();

	bus_sim_train_journey(p->sim, &j);
	memset(d, j.doors_open ? 1 : 0, DEMO_DOORS_LEN);
	send_pd(p, 0, DEMO_DOORS, d, DEMO_DOORS_LEN);

	/* tractive effort falls as speed rises; electric braking pulls back */
	effort_kn = j.accel ? 180 - 4 * (j.t - 6) : j.cruise ? 25 : j.brake ? -120 : 0;
	motor_c = 55 + 10 * sin(j.now / 30.0) + (j.accel ? 5 : 0);
	q = d;
	*q++ = j.accel || j.cruise ? 1 : j.brake ? 2 : 0;
	q = put16(q, (uint16_t)(int16_t)clamp(effort_kn * 10, INT16_MIN, INT16_MAX));
	q = put16(q, (uint16_t)clamp(j.voltage_v * 10, 0, UINT16_MAX));
	*q++ = (uint8_t)clamp(motor_c + 40, 0, UINT8_MAX);
	q = put32(q, (uint32_t)(real / 1000000000));
	put32(q, (uint32_t)(real % 1000000000 / 1000));
	send_pd(p, 2, DEMO_TRACTION, d, DEMO_TRACTION_LEN);

	if (tick % 10 == 0) {
		/* at a sensor's resolution, 1/16 degC (a 12-bit DS18B20's): the
		   REAL32 then holds the value exactly and the table shows it whole */
		q = put_real32(d, (float)(round(j.cabin_c * 16) / 16));
		q = put_real32(q, (float)(round((j.cabin_c + 0.5) * 16) / 16)); /* car 2, the sunny side */
		put16(q, 215);                               /* 21.5 degC */
		send_pd(p, 1, DEMO_HVAC, d, DEMO_HVAC_LEN);
	}
}

static void *demo_trdp_main(void *arg)
{
	struct cli_demo_trdp *p = arg;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	/* paced by absolute times: the cycle does not drift with the work */
	for (unsigned tick = 0; !atomic_load(&p->stop); tick++) {
		publish(p, tick);
		next.tv_nsec += DEMO_CYCLE_NS;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

int cli_demo_trdp_ports(struct conf_board *cfg, uint16_t *ret_port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd, r = 0;

	*ret_port = 0;
	for (size_t b = 0; b < cfg->nbuses; b++) {
		struct bus_trdp_cfg *t = &cfg->buses[b].trdp;

		if (cfg->buses[b].kind != BUS_KIND_TRDP || t->bind_ip != INADDR_LOOPBACK || !t->pd_port)
			continue;
		if (!*ret_port) {
			/* the port the kernel gives a socket bound to port 0, free
			   until the daemon binds it a moment later */
			fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (fd < 0)
				return -errno;
			if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
			    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
				r = -errno;
			close(fd);
			if (r < 0)
				return r;
			*ret_port = ntohs(sa.sin_port);
		}
		t->pd_port = *ret_port;
		if (t->md_port == t->pd_port)
			t->md_port = 0;
	}
	return 0;
}

int cli_demo_trdp_start(const struct bus_sim_train *sim, uint16_t port, struct cli_demo_trdp **ret)
{
	struct cli_demo_trdp *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->sim = sim;
	p->dst = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(port),
	                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (p->fd < 0) {
		r = -errno;
		free(p);
		return r;
	}
	r = basic_thread_create(&p->thread, "demo-trdp", DEMO_TRDP_STACK_BYTES, demo_trdp_main, p);
	if (r < 0) {
		close(p->fd);
		free(p);
		return r;
	}
	p->started = true;
	*ret = p;
	return 0;
}

uint64_t cli_demo_trdp_sent(const struct cli_demo_trdp *p)
{
	return p ? atomic_load_explicit(&p->sent, memory_order_relaxed) : 0;
}

struct cli_demo_trdp *cli_demo_trdp_free(struct cli_demo_trdp *p)
{
	if (!p)
		return NULL;
	if (p->started) {
		atomic_store(&p->stop, true);
		pthread_join(p->thread, NULL);
	}
	close(p->fd);
	free(p);
	return NULL;
}
