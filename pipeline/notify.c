/* SPDX-License-Identifier: MIT */
/*
 * notify.c - service manager integration without libsystemd: the sd_notify
 * datagram protocol (READY=1, WATCHDOG=1, RELOADING=1, STOPPING=1,
 * STATUS=...) and a Linux hardware watchdog device.
 *
 * The protocol is one datagram on the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or '@' for the abstract namespace); a few dozen
 * lines here save a dependency on an embedded target.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <linux/watchdog.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pipeline/notify.h"

int pl_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd, r = 0;

	if (!state)
		return -EINVAL;
	if (!path || !*path)
		return 0; /* not started by a service manager: nothing to tell */
	if (strlen(path) >= sizeof(sa.sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	strcpy(sa.sun_path, path);
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	if (path[0] == '@')
		sa.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len) < 0)
		r = -errno;
	close(fd);
	return r < 0 ? r : 1;
}

uint64_t pl_notify_watchdog_usec(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	char *end;
	unsigned long long v;

	if (!usec)
		return 0;
	/* WATCHDOG_PID set for another process: the watchdog is not ours. */
	if (pid && strtol(pid, NULL, 10) != getpid())
		return 0;
	v = strtoull(usec, &end, 10);
	return *end ? 0 : v;
}

int pl_hwdog_open(const char *path, int timeout_s, int *ret_fd)
{
	int fd, t = timeout_s;

	if (!path || !ret_fd || timeout_s < 0)
		return -EINVAL;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Not every driver can change its timeout; the default then holds. */
	if (t > 0)
		ioctl(fd, WDIOC_SETTIMEOUT, &t);
	*ret_fd = fd;
	return 0;
}

int pl_hwdog_kick(int fd)
{
	if (fd < 0)
		return -EINVAL;
	if (ioctl(fd, WDIOC_KEEPALIVE, 0) < 0 && write(fd, "\0", 1) != 1)
		return -errno;
	return 0;
}

int pl_hwdog_close(int fd, int disarm)
{
	if (fd < 0)
		return -EINVAL;
	/* 'V' is the magic close: without it (a crash), the board resets. */
	if (disarm && write(fd, "V", 1) != 1) {
		int r = -errno;
		close(fd);
		return r;
	}
	close(fd);
	return 0;
}
