/* SPDX-License-Identifier: MIT */
/*
 * sim-train.c - the simulated train's Modbus TCP devices (sim-train.h):
 * a libmodbus server on a free loopback port that plays the traction
 * converter, HVAC and door controller of `railmon demo`, through a 60 s
 * station-to-station cycle.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <modbus.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/clock.h"
#include "basic/thread.h"
#include "bus/sim-train.h"

/* Not glibc's 8 MiB default stack, which a process that mlockall()s holds
   whole (`railmon demo` does not lock; tests/system's rt-alloc runs this
   server beside a daemon that does).  Measured (railmon demo, pages
   touched): 12 KiB while serving the demo's Modbus bus. */
#define SIM_STACK_BYTES (256 * 1024)

struct bus_sim_train {
	modbus_t *ctx;
	modbus_mapping_t *map;
	int listen_fd;
	uint16_t port;
	atomic_bool stop;
	pthread_t thread;
	double t0;
	_Atomic uint64_t requests;
};

static void put_u32(uint16_t *regs, uint32_t v)
{
	regs[0] = (uint16_t)(v >> 16);
	regs[1] = (uint16_t)v;
}

/* Float in CDAB order (word-swapped), as many converters send it. */
static void put_f32_cdab(uint16_t *regs, float f)
{
	uint32_t v;

	memcpy(&v, &f, sizeof(v));
	regs[0] = (uint16_t)v;
	regs[1] = (uint16_t)(v >> 16);
}

/* A 60 s station-to-station cycle: doors open, accelerate, cruise, brake. */
void bus_sim_train_journey(const struct bus_sim_train *s, struct bus_sim_journey *ret)
{
	double now = (double)basic_mono_ns() / 1e9 - s->t0, t = fmod(now, 60.0);
	struct bus_sim_journey j = { .t = t, .now = now, .accel = t >= 6 && t < 24, .cruise = t >= 24 && t < 40,
	                             .brake = t >= 40 && t < 54, .doors_open = t < 5 || t >= 56 };

	j.current_a = j.accel ? 820 - 10 * (t - 6) : j.brake ? -350 : j.cruise ? 120 : 15;
	j.voltage_v = 1500 + 40 * sin(now / 7.0) - j.current_a * 0.05;
	j.cabin_c = 21.8 + 0.6 * sin(now / 20.0);
	*ret = j;
}

static void simulate(struct bus_sim_train *s)
{
	uint16_t *in = s->map->tab_input_registers, *hold = s->map->tab_registers;
	struct bus_sim_journey j;

	bus_sim_train_journey(s, &j);
	in[0] = (uint16_t)(j.voltage_v * 10);
	in[1] = (uint16_t)(int16_t)j.current_a;
	put_u32(&in[2], (uint32_t)(1234567 + j.now * 12.5));
	put_f32_cdab(&in[4], (float)(62.0 + 8 * sin(j.now / 30.0) + (j.accel ? 3 : 0)));
	in[6] = (uint16_t)((j.brake ? 2.8 : j.doors_open ? 1.2 : 0.0) * 100);
	hold[10] = 215;
	hold[11] = (uint16_t)(int16_t)(218 + 6 * sin(j.now / 20.0)); /* cabin_c in 0.1 degC */
	s->map->tab_input_bits[0] = !j.doors_open;
	s->map->tab_input_bits[1] = !j.doors_open;
	s->map->tab_bits[0] = 1;
}

static void serve_client(struct bus_sim_train *s, int fd, fd_set *all)
{
	uint8_t q[MODBUS_TCP_MAX_ADU_LENGTH];
	int rc;

	modbus_set_socket(s->ctx, fd);
	rc = modbus_receive(s->ctx, q);
	if (rc > 0) {
		simulate(s);
		modbus_reply(s->ctx, q, rc, s->map);
		atomic_fetch_add_explicit(&s->requests, 1, memory_order_relaxed);
	} else if (rc == -1) {
		close(fd);
		FD_CLR(fd, all);
	}
}

static void *sim_main(void *p)
{
	struct bus_sim_train *s = p;
	fd_set all, rd;
	int maxfd = s->listen_fd;

	FD_ZERO(&all);
	FD_SET(s->listen_fd, &all);
	while (!atomic_load(&s->stop)) {
		struct timeval tv = { 0, 100000 };
		rd = all;
		if (select(maxfd + 1, &rd, NULL, NULL, &tv) <= 0)
			continue;
		for (int fd = 0; fd <= maxfd; fd++) {
			if (!FD_ISSET(fd, &rd))
				continue;
			if (fd == s->listen_fd) {
				int c = accept(s->listen_fd, NULL, NULL);
				if (c >= 0 && c < FD_SETSIZE) {
					FD_SET(c, &all);
					if (c > maxfd)
						maxfd = c;
				} else if (c >= 0) {
					close(c);
				}
			} else {
				serve_client(s, fd, &all);
			}
		}
	}
	for (int fd = 0; fd <= maxfd; fd++)
		if (FD_ISSET(fd, &all))
			close(fd);
	return NULL;
}

struct bus_sim_train *bus_sim_train_free(struct bus_sim_train *s)
{
	if (!s)
		return NULL;
	if (s->thread) {
		atomic_store(&s->stop, true);
		pthread_join(s->thread, NULL);
	}
	if (s->map)
		modbus_mapping_free(s->map);
	if (s->ctx)
		modbus_free(s->ctx);
	free(s);
	return NULL;
}

int bus_sim_train_start(struct bus_sim_train **ret, uint16_t *ret_port)
{
	struct bus_sim_train *s = calloc(1, sizeof(*s));
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int r;

	if (!s)
		return -ENOMEM;
	s->t0 = (double)basic_mono_ns() / 1e9;
	/* Port 0: the kernel picks a free port, read back below. */
	s->ctx = modbus_new_tcp("127.0.0.1", 0);
	s->map = modbus_mapping_new(16, 16, 32, 32);
	if (!s->ctx || !s->map) {
		bus_sim_train_free(s);
		return -ENOMEM;
	}
	s->listen_fd = modbus_tcp_listen(s->ctx, 8);
	if (s->listen_fd < 0 || getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl) < 0) {
		r = -errno;
		bus_sim_train_free(s);
		return r;
	}
	s->port = ntohs(sa.sin_port);
	if (ret_port)
		*ret_port = s->port;
	simulate(s);
	r = basic_thread_create(&s->thread, "sim-train", SIM_STACK_BYTES, sim_main, s);
	if (r < 0) {
		s->thread = 0;
		bus_sim_train_free(s);
		return r;
	}
	*ret = s;
	return 0;
}
