/* SPDX-License-Identifier: MIT */
/*
 * trdp-sink.c - bench-trdp.sh's floor: the least a UDP socket reader
 * does to record what railmon's TRDP bus records.  The same socket options
 * as bus/trdp.c (kernel receive time, destination address, drop counter, a
 * 2 MiB buffer), the same pattern (poll, recvmmsg bursts of 64 until the
 * socket is empty, then a 1 ms wait as the source loop's coalescing
 * window), and each datagram with its receive time appended to a file
 * through stdio, as `tcpdump -w` does; no validation, no ring, no log.
 *
 *   trdp-sink BIND_IP PORT FILE    (until SIGINT or SIGTERM)
 *
 * Prints "received N, dropped D" at the end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BURST 64

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	static uint8_t buf[BURST][2048];
	static _Alignas(struct cmsghdr) char cmsg[BURST][256];
	struct mmsghdr msg[BURST];
	struct iovec iov[BURST];
	struct sockaddr_in sa = { .sin_family = AF_INET }, from[BURST];
	struct sigaction act = { .sa_handler = on_signal };
	uint64_t got = 0;
	uint32_t drops = 0;
	int one = 1, rcvbuf = 2 << 20, fd;
	FILE *out;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: trdp-sink BIND_IP PORT FILE\n");
		return 1;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("trdp-sink: socket");
		return 1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	out = fopen(argv[3], "w");
	if (!out) {
		perror(argv[3]);
		return 1;
	}
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n;

		if (poll(&p, 1, 1000) <= 0)
			continue;
		do {
			for (int i = 0; i < BURST; i++) {
				iov[i] = (struct iovec){ buf[i], sizeof(buf[i]) };
				msg[i].msg_hdr = (struct msghdr){ .msg_name = &from[i], .msg_namelen = sizeof(from[i]),
					                          .msg_iov = &iov[i], .msg_iovlen = 1,
					                          .msg_control = cmsg[i], .msg_controllen = sizeof(cmsg[i]) };
			}
			n = recvmmsg(fd, msg, BURST, MSG_DONTWAIT, NULL);
			for (int i = 0; i < n; i++) {
				struct { int64_t t_ns; uint32_t len, src; } rec = { 0 };
				for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg[i].msg_hdr); c; c = CMSG_NXTHDR(&msg[i].msg_hdr, c)) {
					if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
						struct timespec ts;
						memcpy(&ts, CMSG_DATA(c), sizeof(ts));
						rec.t_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
					} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
						memcpy(&drops, CMSG_DATA(c), sizeof(drops));
					}
				}
				rec.len = msg[i].msg_len;
				rec.src = from[i].sin_addr.s_addr;
				fwrite(&rec, sizeof(rec), 1, out);
				fwrite(buf[i], 1, msg[i].msg_len, out);
			}
			got += n > 0 ? (uint64_t)n : 0;
		} while (n == BURST);
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	fclose(out);
	printf("received %" PRIu64 ", dropped %" PRIu32 "\n", got, drops);
	return 0;
}
