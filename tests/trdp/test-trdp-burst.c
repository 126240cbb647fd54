/* SPDX-License-Identifier: MIT */
/*
 * test-trdp-burst.c - the TRDP driver's receive loop at a high rate
 * (bench-trdp.sh's finding, on loopback, no root):
 *
 *  - one bus_dev_recv() takes what the socket holds up to the items' room,
 *    not one recvmmsg burst of a third of it: the source loop sleeps its
 *    coalescing window after any call that did not fill the room, so one
 *    burst a call capped the bus at ~21 telegrams a 1 ms window, and a
 *    steady 20,000/s overflowed the socket;
 *  - the socket queues 2,000 telegrams of 100 data bytes (100 ms at
 *    20,000/s) unread without a drop: the kernel's default receive buffer
 *    (208 KiB) held ~10 ms of them;
 *  - each telegram's bytes as sent, in order: a burst's datagrams are
 *    packed in the byte ring (moved down, the first only when it is not
 *    already in place), and a wrong move shows as another's bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bus/bus.h"
#include "tlib.h"
#include "trdp/header.h"

#define QUEUED 2000
#define ROOM 64
#define DATA 100

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

/* A valid PD telegram: seq, version 1, 'Pd', ComId 7, DATA bytes of its
   own (a telegram's bytes moved over another's show) */
static size_t telegram(uint8_t *b, uint32_t seq)
{
	const struct trdp_header h = { .seq = seq, .version = TRDP_PROTO_VERSION, .msg_type = TRDP_MSG_PD,
		                       .com_id = 7, .dataset_len = DATA };

	CHECK(trdp_pd_header_write(&h, b, TRDP_PD_HEADER_SIZE) == (int)TRDP_PD_HEADER_SIZE);
	for (size_t k = 0; k < DATA; k++)
		b[TRDP_PD_HEADER_SIZE + k] = (uint8_t)(seq * 7u + k);
	return TRDP_PD_HEADER_SIZE + DATA;
}

int main(void)
{
	struct bus_cfg cfg = { .kind = BUS_KIND_TRDP, .index = 0 };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct acq_item items[ROOM];
	struct bus_stats st;
	uint8_t buf[TRDP_PD_HEADER_SIZE + DATA], want[TRDP_PD_HEADER_SIZE + DATA];
	bus_dev_t *dev = NULL;
	int fd, n, first = 0, calls = 0, got = 0;

	strcpy(cfg.name, "burst");
	cfg.trdp.bind_ip = INADDR_LOOPBACK;
	cfg.trdp.pd_port = free_port();
	cfg.trdp.bytes_size = 8u << 20; /* room for every telegram queued */
	CHECK(bus_dev_new(&cfg, &dev) == 0);
	dst.sin_port = htons(cfg.trdp.pd_port);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(fd >= 0);
	/* loopback delivers in sendto(): all are queued when it returns */
	for (uint32_t i = 0; i < QUEUED; i++) {
		size_t len = telegram(buf, i);
		CHECK(sendto(fd, buf, len, 0, (struct sockaddr *)&dst, sizeof(dst)) == (ssize_t)len, "sendto %u: %s", i,
		      strerror(errno));
	}
	while (got < QUEUED && (n = bus_dev_recv(dev, items, ROOM, 200)) > 0) {
		if (!calls++)
			first = n;
		for (int i = 0; i < n; i++)
			if (items[i].kind == ACQ_ITEM_TRDP) {
				size_t len = telegram(want, (uint32_t)got);
				CHECK(items[i].trdp.len == len && items[i].trdp.data &&
				      !memcmp(items[i].trdp.data, want, len), "telegram %d: not its bytes as sent (len %u)",
				      got, (unsigned)items[i].trdp.len);
				got++;
				CHECK(bus_dev_trdp_release(dev, &items[i]) == 0);
			}
	}
	CHECK(bus_dev_stats(dev, &st) == 0);
	printf("trdp-burst: %d telegrams queued, %d received in %d calls of room %d (the first took %d), "
	       "%llu dropped\n", QUEUED, got, calls, ROOM, first, (unsigned long long)st.rx_dropped);
	/* a telegram is one item here (no gap, no new topology): the room
	   less the 3 a next telegram might need */
	CHECK(first >= ROOM - 2, "the first call took %d items of %d: one burst, not the room", first, ROOM);
	CHECK(got == QUEUED && st.rx_dropped == 0, "%d of %d received, %llu dropped by the socket", got, QUEUED,
	      (unsigned long long)st.rx_dropped);
	close(fd);
	bus_dev_free(dev);
	printf("PASS\n");
	return 0;
}
