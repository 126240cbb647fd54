/* SPDX-License-Identifier: MIT */
/*
 * demo.c - `railmon demo`: a simulated train on this machine, end to end.
 *
 * A libmodbus TCP server on a free loopback port plays the traction
 * converter, HVAC and door controller; the vehicle CAN bus is the candump
 * trace shipped in board/demo/.  Both are acquired by the real daemon
 * (realtime threads, rings, collector, DBC, Batches, flash log) and shown
 * as a live table.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <modbus.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "conf/config.h"
#include "daemon.h"
#include "demo.h"
#include "basic/clock.h"

/* ------------------------------------------------------ the simulated train */

struct demo_server {
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
static void demo_simulate(struct demo_server *s)
{
	double t = fmod((double)basic_mono_ns() / 1e9 - s->t0, 60.0), now = (double)basic_mono_ns() / 1e9 - s->t0;
	uint16_t *in = s->map->tab_input_registers, *hold = s->map->tab_registers;
	bool accel = t >= 6 && t < 24, brake = t >= 40 && t < 54, doors_open = t < 5 || t >= 56;
	double current = accel ? 820 - 10 * (t - 6) : brake ? -350 : (t >= 24 && t < 40) ? 120 : 15;
	double voltage = 1500 + 40 * sin(now / 7.0) - current * 0.05;

	in[0] = (uint16_t)(voltage * 10);
	in[1] = (uint16_t)(int16_t)current;
	put_u32(&in[2], (uint32_t)(1234567 + now * 12.5));
	put_f32_cdab(&in[4], (float)(62.0 + 8 * sin(now / 30.0) + (accel ? 3 : 0)));
	in[6] = (uint16_t)((brake ? 2.8 : doors_open ? 1.2 : 0.0) * 100);
	hold[10] = 215;
	hold[11] = (uint16_t)(int16_t)(218 + 6 * sin(now / 20.0));
	s->map->tab_input_bits[0] = !doors_open;
	s->map->tab_input_bits[1] = !doors_open;
	s->map->tab_bits[0] = 1;
}

static void demo_serve_client(struct demo_server *s, int fd, fd_set *all)
{
	uint8_t q[MODBUS_TCP_MAX_ADU_LENGTH];
	int rc;

	modbus_set_socket(s->ctx, fd);
	rc = modbus_receive(s->ctx, q);
	if (rc > 0) {
		demo_simulate(s);
		modbus_reply(s->ctx, q, rc, s->map);
		atomic_fetch_add_explicit(&s->requests, 1, memory_order_relaxed);
	} else if (rc == -1) {
		close(fd);
		FD_CLR(fd, all);
	}
}

static void *demo_server_main(void *p)
{
	struct demo_server *s = p;
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
				demo_serve_client(s, fd, &all);
			}
		}
	}
	for (int fd = 0; fd <= maxfd; fd++)
		if (FD_ISSET(fd, &all))
			close(fd);
	return NULL;
}

struct demo_server *board_demo_server_free(struct demo_server *s)
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

int board_demo_server_start(struct demo_server **ret, uint16_t *ret_port)
{
	struct demo_server *s = calloc(1, sizeof(*s));
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
		board_demo_server_free(s);
		return -ENOMEM;
	}
	s->listen_fd = modbus_tcp_listen(s->ctx, 8);
	if (s->listen_fd < 0 || getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl) < 0) {
		r = -errno;
		board_demo_server_free(s);
		return r;
	}
	s->port = ntohs(sa.sin_port);
	if (ret_port)
		*ret_port = s->port;
	demo_simulate(s);
	r = -pthread_create(&s->thread, NULL, demo_server_main, s);
	if (r < 0) {
		s->thread = 0;
		board_demo_server_free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/* -------------------------------------------------------------- display */

static void demo_table(struct board_daemon *d, FILE *out, bool ansi, double elapsed)
{
	const struct pl_channel *ch;
	size_t n = board_daemon_channels(d, &ch);
	struct board_daemon_stats st;
	int64_t now = basic_realtime_ns();

	board_daemon_stats(d, &st);
	if (ansi)
		fputs("\033[H\033[2J", out);
	fprintf(out, "railmon demo  t=%.1fs  records stored %llu (seq %llu..%llu)  ring drops %llu\n",
	        elapsed, (unsigned long long)st.records, (unsigned long long)st.first_seq,
	        (unsigned long long)(st.next_seq ? st.next_seq - 1 : 0), (unsigned long long)st.ring_drops);
	fprintf(out, "%-22s %14s  %-6s %-10s %8s  %s\n", "channel", "value", "unit", "label", "age", "source");
	for (size_t i = 0; i < n; i++) {
		struct pl_live lv;
		const char *label;
		board_daemon_live(d, i, &lv);
		if (!lv.t_ns) {
			fprintf(out, "%-22s %14s  %-6s %-10s %8s  %s\n", ch[i].name, "-", ch[i].unit, "", "", ch[i].source);
			continue;
		}
		label = board_daemon_value_label(d, i, lv.value);
		fprintf(out, "%-22s %14.3f  %-6s %-10s %7.1fs  %s\n", ch[i].name, lv.value, ch[i].unit,
		        label ? label : (lv.quality ? "OUT-RANGE" : ""), (double)(now - lv.t_ns) / 1e9,
		        ch[i].source);
	}
	fflush(out);
}

/* ----------------------------------------------------------------- run */

static int demo_config(const struct demo_opts *o, uint16_t port, struct conf_board **ret_cfg)
{
	char err[CONF_ERR_MAX];
	struct conf_board *cfg;
	int r;

	r = conf_load(o->board, &cfg, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		return r;
	}
	/* The simulated devices live on the port we just got. */
	for (size_t b = 0; b < cfg->nbuses; b++)
		if (cfg->buses[b].kind == BUS_KIND_MODBUS && !cfg->buses[b].mb.rtu &&
		    !strcmp(cfg->buses[b].mb.host, "127.0.0.1"))
			cfg->buses[b].mb.port = port;
	*ret_cfg = cfg;
	return 0;
}

int board_demo_run(const struct demo_opts *o, volatile sig_atomic_t *stop)
{
	struct demo_server *srv = NULL;
	struct conf_board *cfg = NULL;
	struct board_daemon *d = NULL;
	struct board_daemon_opts dopts = { .data_dir = o->data_dir };
	struct board_daemon_stats st;
	char err[CONF_ERR_MAX], warn[256];
	int64_t t0, next_draw = 0;
	uint64_t per_kind[BUS_KIND_MAX] = { 0 };
	int r;

	r = board_demo_server_start(&srv, NULL);
	if (r < 0) {
		fprintf(stderr, "railmon demo: cannot start the simulated Modbus devices: %s\n", strerror(-r));
		return r;
	}
	r = demo_config(o, srv->port, &cfg);
	if (r < 0)
		goto out;
	r = board_daemon_new(cfg, &dopts, &d, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "railmon demo: %s\n", err);
		goto out;
	}
	fprintf(stderr, "railmon demo: simulated Modbus devices on 127.0.0.1:%u, CAN trace %s, log in %s\n",
	        srv->port, cfg->buses[0].can.device, board_daemon_data_dir(d));
	r = board_daemon_start(d, warn, sizeof(warn));
	if (r < 0) {
		fprintf(stderr, "railmon demo: cannot start: %s\n", strerror(-r));
		goto out;
	}
	if (warn[0])
		fprintf(stderr, "railmon demo: warning: %s\n", warn);
	t0 = basic_mono_ns();
	while (!*stop && (o->duration_s <= 0 || basic_mono_ns() - t0 < (int64_t)(o->duration_s * 1e9))) {
		if (o->live && basic_mono_ns() >= next_draw) {
			demo_table(d, stdout, o->ansi, (double)(basic_mono_ns() - t0) / 1e9);
			next_draw = basic_mono_ns() + 500000000;
		}
		usleep(50000);
	}
	board_daemon_stop(d);
	demo_table(d, stdout, false, (double)(basic_mono_ns() - t0) / 1e9);
	board_daemon_stats(d, &st);
	for (size_t b = 0; b < cfg->nbuses; b++)
		per_kind[cfg->buses[b].kind] += st.bus_rx[b];
	printf("\nrailmon demo: stopped after %.1f s: %llu records stored (seq %llu..%llu) in %llu batches, "
	       "%llu CAN frames and %llu Modbus samples acquired, %llu ring drops, %llu records refused by the log\n"
	       "log: %s   (try: railmon export --data %s --format csv)\n",
	       (double)(basic_mono_ns() - t0) / 1e9, (unsigned long long)st.records,
	       (unsigned long long)st.first_seq, (unsigned long long)(st.next_seq - 1),
	       (unsigned long long)st.batches, (unsigned long long)per_kind[BUS_KIND_CAN],
	       (unsigned long long)per_kind[BUS_KIND_MODBUS], (unsigned long long)st.ring_drops,
	       (unsigned long long)st.log_dropped, board_daemon_data_dir(d), board_daemon_data_dir(d));
	r = 0;
out:
	board_daemon_free(d);
	conf_free(cfg);
	board_demo_server_free(srv);
	return r;
}
