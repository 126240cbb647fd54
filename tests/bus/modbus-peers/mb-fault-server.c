/* SPDX-License-Identifier: MIT */
/*
 * mb-fault-server.c - libmodbus-based Modbus test peer that injects faults.
 *
 *   mb-fault-server (--tcp PORT | --rtu DEVICE --unit N) [options]
 *     --seed S            random fault draw seed (default 1)
 *     --fault-pct P       percentage of requests answered with a fault
 *     --weights LIST      kind=weight,... for the random draw, kinds:
 *                         exc short long unit garbage delay drop crc split
 *                         tid func excfn
 *                         (split: the reply stalls for D ms after its byte
 *                         count, past the client's byte timeout; tid: a
 *                         perfect reply under a neighbouring transaction id
 *                         (TCP); func: a reply of the same size from another
 *                         read function; excfn: an exception for another
 *                         function)
 *     --fault-addr A:KIND requests starting at register A always get KIND
 *     --silent-unit U     never answer unit U (a dead device)
 *     --delay-ms D        "delay" answers correctly after D ms (default 30)
 *     --log FILE          one line per request: seq unit fc addr count kind
 *
 * libmodbus listens, accepts, opens the serial line and frames every
 * request (modbus_receive); replies are built here so that they can be
 * broken on purpose.  Values as mb-values.h says: each encodes its unit and
 * address, so a value attributed to the wrong register is caught.
 *
 * Prints "READY <port>" (TCP) or "READY" (RTU) on stdout once it serves.
 * It stops when its stdin reaches EOF, printing "FC <code> <count>" for
 * every function code it received, so a test can assert which codes a
 * client ever sent.  Test program: may print.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <modbus.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mb-values.h"

enum fault { F_NONE, F_EXC, F_SHORT, F_LONG, F_UNIT, F_GARBAGE, F_DELAY, F_DROP, F_CRC, F_SILENT, F_SPLIT,
             F_TID, F_FUNC, F_EXCFN, F_MAX };
static const char *const fault_names[F_MAX] = { "none", "exc", "short", "long", "unit", "garbage",
                                                "delay", "drop", "crc", "silent", "split",
                                                "tid", "func", "excfn" };

#define MAX_CLIENTS 8
#define MAX_FIXED 64

struct server {
	modbus_t *ctx;
	bool rtu;
	int hdr;                   /* header length: 7 TCP, 1 RTU */
	uint64_t rng;
	unsigned fault_pct;
	unsigned weights[F_MAX];
	unsigned weight_sum;
	struct { uint16_t addr; enum fault kind; } fixed[MAX_FIXED];
	unsigned nfixed;
	int silent_unit;
	unsigned delay_ms;
	FILE *log;
	uint64_t seq;
	uint64_t fc_count[256];
};

static uint64_t rnd(struct server *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static void write_all(int fd, const uint8_t *b, size_t n)
{
	while (n) {
		ssize_t w = write(fd, b, n);

		if (w <= 0)
			return; /* the client went away; its problem */
		b += w;
		n -= (size_t)w;
	}
}

/* Frame pdu[0..n) for unit and send it; crc_bad flips the RTU CRC. */
static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void send_pdu(struct server *s, int fd, const uint8_t *req, uint8_t unit, const uint8_t *pdu,
                     size_t n, bool crc_bad, bool split)
{
	uint8_t adu[600];
	size_t len = 0;

	if (!s->rtu) {
		adu[len++] = req[0];
		adu[len++] = req[1];
		adu[len++] = 0;
		adu[len++] = 0;
		adu[len++] = (uint8_t)((n + 1) >> 8);
		adu[len++] = (uint8_t)(n + 1);
	}
	adu[len++] = unit;
	memcpy(adu + len, pdu, n);
	len += n;
	if (s->rtu) {
		uint16_t crc = mb_crc16(adu, len);

		if (crc_bad)
			crc ^= 0xffff;
		adu[len++] = (uint8_t)crc;
		adu[len++] = (uint8_t)(crc >> 8);
	}
	if (split) {
		/* header, function and byte count now, the data later */
		size_t head = (s->rtu ? 1 : 7) + 2;

		write_all(fd, adu, head);
		sleep_ms(s->delay_ms);
		write_all(fd, adu + head, len - head);
		return;
	}
	write_all(fd, adu, len);
}

static enum fault pick_fault(struct server *s, unsigned unit, unsigned addr)
{
	unsigned w;

	if ((int)unit == s->silent_unit)
		return F_SILENT;
	for (unsigned i = 0; i < s->nfixed; i++)
		if (s->fixed[i].addr == addr)
			return s->fixed[i].kind;
	if (!s->fault_pct || !s->weight_sum || rnd(s) % 1000 >= s->fault_pct * 10)
		return F_NONE;
	w = (unsigned)(rnd(s) % s->weight_sum);
	for (unsigned k = 0; k < F_MAX; k++) {
		if (w < s->weights[k])
			return (enum fault)k;
		w -= s->weights[k];
	}
	return F_NONE;
}

/* Send the reply pdu[0..n) broken as f says; false: hang up instead. */
static bool reply_with(struct server *s, int fd, const uint8_t *req, enum fault f, uint8_t *pdu, size_t n)
{
	uint8_t unit = req[s->hdr - 1], fc = req[s->hdr];

	switch (f) {
	case F_EXC:
		pdu[0] = (uint8_t)(fc | 0x80);
		pdu[1] = (uint8_t[]){ 1, 2, 3, 4, 6, 11 }[s->seq % 6];
		n = 2;
		break;
	case F_SHORT:
		n -= pdu[1] > 1 ? 2 : 1;
		pdu[1] = (uint8_t)(n - 2);
		break;
	case F_LONG:
		pdu[n++] = 0xde;
		pdu[n++] = 0xad;
		pdu[1] = (uint8_t)(n - 2);
		break;
	case F_UNIT:
		unit++;
		break;
	case F_GARBAGE: {
		uint8_t g[12];

		for (size_t i = 0; i < sizeof(g); i++)
			g[i] = (uint8_t)rnd(s);
		g[0] = (uint8_t)(req[0] ^ 0x80); /* never the client's transaction id */
		write_all(fd, g, sizeof(g));
		return true;
	}
	case F_DELAY:
		sleep_ms(s->delay_ms);
		break;
	case F_DROP:
		return s->rtu; /* RTU cannot hang up: stays silent instead */
	case F_SILENT:
		return true;
	case F_TID: {
		uint8_t other[MODBUS_TCP_MAX_ADU_LENGTH];

		memcpy(other, req, (size_t)s->hdr + 5);
		other[1] ^= 0x01; /* the id of a neighbouring transaction */
		send_pdu(s, fd, other, unit, pdu, n, false, false);
		return true;
	}
	case F_FUNC:
		pdu[0] = fc == 3 ? 4 : fc == 4 ? 3 : fc == 1 ? 2 : 1; /* same size, other table */
		break;
	case F_EXCFN:
		pdu[0] = (uint8_t)((fc == 3 ? 4 : 3) | 0x80);
		pdu[1] = 2;
		n = 2;
		break;
	default:
		break;
	}
	send_pdu(s, fd, req, unit, pdu, n, f == F_CRC && s->rtu, f == F_SPLIT);
	return true;
}

/* Answer one request; returns false when the connection is to be dropped. */
static bool answer(struct server *s, int fd, const uint8_t *req)
{
	uint8_t unit = req[s->hdr - 1], fc = req[s->hdr];
	unsigned addr = (unsigned)(req[s->hdr + 1] << 8 | req[s->hdr + 2]);
	unsigned count = (unsigned)(req[s->hdr + 3] << 8 | req[s->hdr + 4]);
	uint8_t pdu[600];
	enum fault f;

	s->fc_count[fc]++;
	if (fc < 1 || fc > 4 || count == 0 || count > (fc <= 2 ? 2000u : 125u)) {
		/* Not ours to judge politely: record it, refuse it. */
		pdu[0] = (uint8_t)(fc | 0x80);
		pdu[1] = fc < 1 || fc > 4 ? 1 : 3;
		send_pdu(s, fd, req, unit, pdu, 2, false, false);
		fprintf(s->log, "%llu %u %u %u %u badreq\n", (unsigned long long)++s->seq, unit, fc, addr, count);
		return true;
	}
	f = pick_fault(s, unit, addr);
	fprintf(s->log, "%llu %u %u %u %u %s\n", (unsigned long long)++s->seq, unit, fc, addr, count,
	        fault_names[f]);
	return reply_with(s, fd, req, f, pdu, mb_build_read(unit, fc, addr, count, pdu));
}

static int parse_kind(const char *name)
{
	for (int k = 0; k < F_MAX; k++)
		if (!strcmp(name, fault_names[k]))
			return k;
	return -1;
}

static int parse_weights(struct server *s, char *list)
{
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		char *eq = strchr(tok, '=');
		int k;

		if (!eq)
			return -1;
		*eq = 0;
		k = parse_kind(tok);
		if (k < 0)
			return -1;
		s->weights[k] = (unsigned)atoi(eq + 1);
		s->weight_sum += s->weights[k];
	}
	return 0;
}

static int parse_fixed(struct server *s, const char *arg)
{
	char kind[16];
	unsigned addr;
	int k;

	if (s->nfixed >= MAX_FIXED || sscanf(arg, "%u:%15s", &addr, kind) != 2)
		return -1;
	k = parse_kind(kind);
	if (k < 0 || addr > 65535)
		return -1;
	s->fixed[s->nfixed].addr = (uint16_t)addr;
	s->fixed[s->nfixed++].kind = (enum fault)k;
	return 0;
}

static void serve_tcp(struct server *s, int lfd)
{
	struct pollfd pfd[2 + MAX_CLIENTS];
	int clients[MAX_CLIENTS];
	int nclients = 0;
	uint8_t req[MODBUS_TCP_MAX_ADU_LENGTH];

	for (;;) {
		pfd[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < nclients; i++)
			pfd[2 + i] = (struct pollfd){ .fd = clients[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)(2 + nclients), -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pfd[0].revents)
			return; /* stdin closed: the test is done with us */
		for (int i = nclients - 1; i >= 0; i--) {
			if (!pfd[2 + i].revents)
				continue;
			modbus_set_socket(s->ctx, clients[i]);
			if (modbus_receive(s->ctx, req) <= 0 || !answer(s, clients[i], req)) {
				close(clients[i]);
				clients[i] = clients[--nclients];
			}
		}
		if (pfd[1].revents & POLLIN) {
			int fd = accept(lfd, NULL, NULL);
			int one = 1;

			/* Like libmodbus's own sockets: without it Nagle holds a
			   second small write (late reply, then garbage) for the
			   client's delayed ACK, 40 ms. */
			if (fd >= 0)
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			if (fd >= 0 && nclients < MAX_CLIENTS)
				clients[nclients++] = fd;
			else if (fd >= 0)
				close(fd);
		}
	}
}

static void serve_rtu(struct server *s)
{
	uint8_t req[MODBUS_RTU_MAX_ADU_LENGTH];
	int fd = modbus_get_socket(s->ctx);

	for (;;) {
		struct pollfd pfd[2] = { { .fd = 0, .events = POLLIN }, { .fd = fd, .events = POLLIN } };
		int r;

		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (pfd[0].revents)
			return;
		r = modbus_receive(s->ctx, req);
		if (r > 0)
			answer(s, fd, req);
		else if (r < 0 && errno != ETIMEDOUT && errno != EMBBADCRC && errno != EMBBADDATA)
			return;
	}
}

static int setup(struct server *s, int argc, char **argv, int *ret_port, const char **ret_dev, int *ret_unit)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return -1;
		i++;
		if (!strcmp(a, "--tcp"))
			*ret_port = atoi(v);
		else if (!strcmp(a, "--rtu"))
			*ret_dev = v, s->rtu = true;
		else if (!strcmp(a, "--unit"))
			*ret_unit = atoi(v);
		else if (!strcmp(a, "--seed"))
			s->rng = strtoull(v, NULL, 0) | 1;
		else if (!strcmp(a, "--fault-pct"))
			s->fault_pct = (unsigned)atoi(v);
		else if (!strcmp(a, "--weights")) {
			if (parse_weights(s, argv[i]) < 0)
				return -1;
		} else if (!strcmp(a, "--fault-addr")) {
			if (parse_fixed(s, v) < 0)
				return -1;
		} else if (!strcmp(a, "--silent-unit"))
			s->silent_unit = atoi(v);
		else if (!strcmp(a, "--delay-ms"))
			s->delay_ms = (unsigned)atoi(v);
		else if (!strcmp(a, "--log")) {
			s->log = fopen(v, "w");
			if (!s->log)
				return -1;
		} else
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct server s = { .rng = 1, .silent_unit = -1, .delay_ms = 30, .hdr = 7 };
	int port = -1, unit = 1, lfd = -1;
	const char *dev = NULL;

	if (setup(&s, argc, argv, &port, &dev, &unit) < 0 || (port < 0 && !dev)) {
		fprintf(stderr, "usage: %s (--tcp PORT | --rtu DEV --unit N) [options]\n", argv[0]);
		return 2;
	}
	if (!s.log)
		s.log = fopen("/dev/null", "w");
	if (!s.weight_sum)
		parse_weights(&s, (char[]){ "exc=1,short=1,long=1,unit=1,garbage=1,delay=1,drop=1" });
	if (s.rtu) {
		s.hdr = 1;
		s.ctx = modbus_new_rtu(dev, 115200, 'N', 8, 1);
		if (!s.ctx || modbus_set_slave(s.ctx, unit) < 0 || modbus_connect(s.ctx) < 0) {
			fprintf(stderr, "mb-fault-server: %s: %s\n", dev, modbus_strerror(errno));
			return 1;
		}
		printf("READY\n");
	} else {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);

		s.ctx = modbus_new_tcp("127.0.0.1", port);
		lfd = s.ctx ? modbus_tcp_listen(s.ctx, 8) : -1;
		if (lfd < 0 || getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
			fprintf(stderr, "mb-fault-server: listen %d: %s\n", port, modbus_strerror(errno));
			return 1;
		}
		printf("READY %u\n", ntohs(sa.sin_port));
	}
	fflush(stdout);
	if (s.rtu)
		serve_rtu(&s);
	else
		serve_tcp(&s, lfd);
	for (int fc = 0; fc < 256; fc++)
		if (s.fc_count[fc])
			printf("FC %d %llu\n", fc, (unsigned long long)s.fc_count[fc]);
	fflush(stdout);
	fclose(s.log);
	modbus_free(s.ctx);
	return 0;
}
