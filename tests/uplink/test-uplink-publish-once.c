/* SPDX-License-Identifier: MIT */
/*
 * test-uplink-publish-once.c - upl_publish_once() (uplink/publish.c, what
 * `railmon config push` publishes with) and upl_request_publish()
 * (uplink/request-pub.c, `railmon request`) against brokers that do not
 * answer, each within its timeout and said in words:
 * 1. a socket whose listen queue is full (the kernel drops our SYN, as a
 *    host behind a dropping firewall does): the TCP connect never
 *    completes; mosquitto_connect() blocked in it for over 2 minutes;
 * 2. a socket that accepts (the kernel completes the handshake) and stays
 *    silent: no CONNACK;
 * 3. a closed port: refused;
 * 4. a real mosquitto: published and acknowledged (the asynchronous
 *    connect still gets there; the request's line after the CONNACK).
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fixture.h"
#include "uplink/publish.h"
#include "uplink/request.h"

/* A loopback listener that never accepts; its port in *port. */
static int listener(int backlog, int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
	CHECK(listen(fd, backlog) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&sa, &n) == 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A non-blocking connect to port; whether it completed within ms. */
static bool connect_within(int port, int ms, int *ret_fd)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	CHECK(fd >= 0);
	*ret_fd = fd;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return true;
	CHECK(errno == EINPROGRESS, "connect: %s", strerror(errno));
	return poll(&p, 1, ms) == 1;
}

static int publish(int port, unsigned timeout_ms, char *why, size_t whylen)
{
	struct upl_pub_cfg cfg = { .host = "127.0.0.1", .port = port, .timeout_ms = timeout_ms };
	static const char payload[] = "hello";

	return upl_publish_once(&cfg, "railmon/EV-7/config", payload, sizeof(payload) - 1, true, why, whylen);
}

/* `railmon request`'s publish, the same way */
static int request(int port, unsigned timeout_ms, char *why, size_t whylen)
{
	struct upl_request_pub c = { .host = "127.0.0.1", .port = port, .vehicle = "EV-7", .timeout_ms = timeout_ms };
	struct upl_request r = { .id = "r1", .from_ns = 1, .to_ns = 2 };

	return upl_request_publish(&c, &r, why, whylen);
}

static void test_queue_full(void)
{
	char why[256];
	int port, fd = listener(0, &port), fill[4], nfill = 0, r;
	bool pending = false;

	/* fill its accept queue (nobody accepts): until a connect stays
	   pending, the kernel dropping its SYN */
	while (nfill < 4 && !pending)
		pending = !connect_within(port, 300, &fill[nfill++]);
	CHECK(pending, "the listen queue of %d did not fill", port);
	r = publish(port, 500, why, sizeof(why));
	CHECK(r == -ETIMEDOUT, "queue full: %d (%s)", r, why);
	CHECK(strstr(why, "no connection to the broker within 500 ms"), "%s", why);
	printf("listen queue full: %s\n", why);
	r = request(port, 500, why, sizeof(why));
	CHECK(r == -ETIMEDOUT, "request, queue full: %d (%s)", r, why);
	CHECK(strstr(why, "no connection to the broker within 500 ms"), "%s", why);
	printf("request, listen queue full: %s\n", why);
	for (int i = 0; i < nfill; i++)
		close(fill[i]);
	close(fd);
}

static void test_silent(void)
{
	char why[256];
	int port, fd = listener(8, &port), r;

	r = publish(port, 500, why, sizeof(why));
	CHECK(r == -ETIMEDOUT, "silent: %d (%s)", r, why);
	CHECK(strstr(why, "accepted the connection but did not answer it (no CONNACK) within 500 ms"), "%s", why);
	printf("accepted, silent: %s\n", why);
	r = request(port, 500, why, sizeof(why));
	CHECK(r == -ETIMEDOUT, "request, silent: %d (%s)", r, why);
	CHECK(strstr(why, "accepted the connection but did not answer it (no CONNACK) within 500 ms"), "%s", why);
	printf("request, accepted, silent: %s\n", why);
	close(fd);
}

static void test_refused(void)
{
	char why[256];
	int port, fd = listener(8, &port), r;

	close(fd); /* the port is closed now */
	r = publish(port, 2000, why, sizeof(why));
	CHECK(r == -ECONNREFUSED, "closed port: %d (%s)", r, why);
	CHECK(strstr(why, "refused"), "%s", why);
	printf("closed port: %s\n", why);
	r = request(port, 2000, why, sizeof(why));
	CHECK(r == -ECONNREFUSED, "request, closed port: %d (%s)", r, why);
}

static void test_broker(void)
{
	struct broker br;
	char why[256];
	int r;

	CHECK(broker_init(&br, false, NULL) == 0);
	CHECK(broker_start(&br) == 0);
	r = publish(br.port, 10000, why, sizeof(why));
	CHECK(r == 0, "mosquitto: %d (%s)", r, why);
	r = request(br.port, 10000, why, sizeof(why));
	CHECK(r == 0, "request, mosquitto: %d (%s)", r, why);
	broker_fini(&br);
	printf("mosquitto: published, acknowledged (config and request)\n");
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_queue_full();
	test_silent();
	test_refused();
	test_broker();
	return 0;
}
