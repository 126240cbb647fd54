/* SPDX-License-Identifier: MIT */
/*
 * trdp-flood.c - the TRDP benchmark's sender (bench-trdp.sh): RATE PD
 * telegrams a second of a DATA-byte data set to DEST:PORT for SECONDS,
 * paced by the monotonic clock (every 1 ms what is due by then is sent,
 * so the rate holds even where a sleep oversleeps), one sendto() each.
 * Each telegram is valid (version 1, 'Pd', its FCS) with its own sequence
 * counter, so the receiver's gap counters would show a loss.
 *
 *   trdp-flood DEST PORT RATE SECONDS [DATA_BYTES [COM_ID]]
 *
 * Prints "sent N in S s (R/s), M send errors" when done.  Exit 1 on bad
 * arguments or no socket.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "trdp/header.h"

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET };
	uint8_t buf[TRDP_PD_HEADER_SIZE + TRDP_PD_DATA_MAX] = { 0 };
	uint64_t sent = 0, errors = 0, total;
	double rate, secs;
	size_t data, len;
	uint32_t com_id;
	struct trdp_header h = { .version = TRDP_PROTO_VERSION, .msg_type = TRDP_MSG_PD };
	int64_t t0, end;
	int fd;

	if (argc < 5 || inet_pton(AF_INET, argv[1], &dst.sin_addr) != 1) {
		fprintf(stderr, "usage: trdp-flood DEST PORT RATE SECONDS [DATA_BYTES [COM_ID]]\n");
		return 1;
	}
	dst.sin_port = htons((uint16_t)atoi(argv[2]));
	rate = atof(argv[3]);
	secs = atof(argv[4]);
	data = argc > 5 ? (size_t)atoi(argv[5]) : 100;
	com_id = argc > 6 ? (uint32_t)strtoul(argv[6], NULL, 10) : 2000;
	if (rate <= 0 || secs <= 0 || data > TRDP_PD_DATA_MAX) {
		fprintf(stderr, "trdp-flood: RATE and SECONDS > 0, DATA_BYTES <= %u\n", TRDP_PD_DATA_MAX);
		return 1;
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("trdp-flood: socket");
		return 1;
	}
	len = TRDP_PD_HEADER_SIZE + ((data + 3) & ~(size_t)3);
	/* the fixed fields once: version, type, ComId, datasetLength */
	h.com_id = com_id;
	h.dataset_len = (uint32_t)data;
	for (size_t i = 0; i < data; i++)
		buf[TRDP_PD_HEADER_SIZE + i] = (uint8_t)i;
	total = (uint64_t)(rate * secs + 0.5);
	t0 = mono_ns();
	while (sent + errors < total) {
		/* what is due by now */
		uint64_t due = (uint64_t)((double)(mono_ns() - t0) * rate / 1e9) + 1;
		if (due > total)
			due = total;
		while (sent + errors < due) {
			h.seq = (uint32_t)(sent + errors);
			trdp_pd_header_write(&h, buf, sizeof(buf));
			if (sendto(fd, buf, len, 0, (struct sockaddr *)&dst, sizeof(dst)) == (ssize_t)len)
				sent++;
			else
				errors++;
		}
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	end = mono_ns();
	printf("sent %" PRIu64 " in %.3f s (%.0f/s), %" PRIu64 " send errors\n", sent, (double)(end - t0) / 1e9,
	       (double)sent * 1e9 / (double)(end - t0), errors);
	return 0;
}
