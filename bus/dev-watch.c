/* SPDX-License-Identifier: MIT */
/*
 * dev-watch.c - waiting for a serial device's path to come back
 * (bus-private.h: struct bus_path_watch), for the drivers of tty adapters
 * (slcan, Modbus RTU).
 *
 * A vanished tty is watched for, not polled for: an inotify watch on the
 * directory of its path (/dev for /dev/ttyUSB0, /dev/serial/by-id for a
 * by-id link, /tmp for a socat pty link) wakes the waiting thread when a
 * name is created, moved in (udev and socat make links by rename) or has
 * its attributes changed (udev's chmod/chown after devtmpfs made the
 * node), so the reopen follows the return within one poll() instead of
 * within a backoff step of up to 5 s.
 *
 * Set up once at open (inotify_init1, a fixed event buffer); waiting reads
 * into that buffer, so no allocation on the RX thread.  A watched
 * directory that goes away itself (by-id, when its last adapter is
 * unplugged) ends its watch (IN_IGNORED); the wait then adds it again each
 * time it is called, and the directory's return counts as the path's.
 *
 * A SocketCAN interface that went down or was deleted is watched the same
 * way with rtnetlink: a socket in the RTNLGRP_LINK group (opened at open)
 * hears every RTM_NEWLINK, and one for our name with IFF_UP is the sign
 * (a re-created interface has a new index: the name is what stays).
 */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "bus-private.h"

#define WATCH_MASK (IN_CREATE | IN_MOVED_TO | IN_ATTRIB)

static int watch_add(struct bus_path_watch *w)
{
	w->wd = inotify_add_watch(w->fd, w->dir, WATCH_MASK | IN_ONLYDIR);
	return w->wd < 0 ? -errno : 0;
}

int bus_path_watch_init(struct bus_path_watch *w, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 1;

	memset(w, 0, sizeof(*w));
	w->fd = w->wd = -1;
	if (!slash) /* a bare name: in the current directory */
		memcpy(w->dir, ".", 2);
	else if (dlen == 0) /* /name */
		memcpy(w->dir, "/", 2);
	else if (dlen < sizeof(w->dir))
		memcpy(w->dir, path, dlen);
	else
		return -ENAMETOOLONG;
	if (strlen(slash ? slash + 1 : path) >= sizeof(w->name))
		return -ENAMETOOLONG;
	strcpy(w->name, slash ? slash + 1 : path);
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0)
		return -errno;
	/* A directory missing now is added by the first wait that finds it. */
	(void)watch_add(w);
	return 0;
}

void bus_path_watch_done(struct bus_path_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = w->wd = -1;
}

/* Read what is queued; 1 when an event names our path (or the directory
   came back), 0 otherwise. */
static int watch_read(struct bus_path_watch *w)
{
	int hit = 0;
	ssize_t n;

	while ((n = read(w->fd, w->buf, sizeof(w->buf))) > 0) {
		for (size_t off = 0; off + sizeof(struct inotify_event) <= (size_t)n;) {
			struct inotify_event ev;

			/* memcpy: the kernel packs the events back to back */
			memcpy(&ev, w->buf + off, sizeof(ev));
			if (ev.mask & IN_IGNORED)
				w->wd = -1;
			else if (ev.len && !strcmp(w->buf + off + sizeof(ev), w->name))
				hit = 1;
			off += sizeof(ev) + ev.len;
		}
	}
	return hit;
}

/* The one wait of both watches: poll fd for up to timeout_ms.  1 when it
   has something to read, 0 on a timeout or a signal (the caller's loop
   looks again), -errno; -EOPNOTSUPP with no fd (the caller waits a timed
   step instead). */
static int watch_poll(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r;

	if (fd < 0)
		return -EOPNOTSUPP;
	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r > 0;
}

int bus_path_watch_wait(struct bus_path_watch *w, int timeout_ms)
{
	int r;

	if (w->fd >= 0 && w->wd < 0) {
		/* The directory went with the device: its return is a change
		   to look at; until then, a timed wait (no watch to wake us). */
		if (watch_add(w) == 0)
			return 1;
		return -EOPNOTSUPP;
	}
	r = watch_poll(w->fd, timeout_ms);
	return r == 1 ? watch_read(w) : r;
}

void bus_path_watch_flush(struct bus_path_watch *w)
{
	if (w->fd >= 0)
		(void)watch_read(w);
}

/* ------------------------------------------------------------ links */

int bus_link_watch_init(struct bus_link_watch *w, const char *ifname)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK };

	memset(w, 0, sizeof(*w));
	if (strlen(ifname) >= sizeof(w->ifname)) {
		w->fd = -1;
		return -ENAMETOOLONG;
	}
	strcpy(w->ifname, ifname);
	w->fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (w->fd < 0)
		return -errno;
	if (bind(w->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(w->fd);
		w->fd = -1;
		return r;
	}
	return 0;
}

void bus_link_watch_done(struct bus_link_watch *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}

/* One RTM_NEWLINK: our name, up? */
static bool link_msg_up(const struct bus_link_watch *w, const struct nlmsghdr *nh)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(nh);
	int len = (int)nh->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*ifi));

	if (nh->nlmsg_type != RTM_NEWLINK || len < 0 || !(ifi->ifi_flags & IFF_UP))
		return false;
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == IFLA_IFNAME)
			return !strncmp(RTA_DATA(a), w->ifname, RTA_PAYLOAD(a)) &&
			       strnlen(RTA_DATA(a), RTA_PAYLOAD(a)) == strlen(w->ifname);
	return false;
}

/* Read what is queued; 1 when our interface was said up.  An overrun
   socket (ENOBUFS: events lost) is a sign too: the reopen will tell. */
static int link_read(struct bus_link_watch *w)
{
	int hit = 0;
	ssize_t n;

	while ((n = recv(w->fd, w->buf, sizeof(w->buf), 0)) != 0) {
		if (n < 0) {
			if (errno == ENOBUFS)
				hit = 1;
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			break;
		}
		/* By hand, not NLMSG_NEXT: its length may step below 0, which
		   a size_t would wrap. */
		for (size_t off = 0; off + sizeof(struct nlmsghdr) <= (size_t)n;) {
			const struct nlmsghdr *nh = (const struct nlmsghdr *)(w->buf + off);

			if (nh->nlmsg_len < sizeof(*nh) || nh->nlmsg_len > (size_t)n - off)
				break;
			if (link_msg_up(w, nh))
				hit = 1;
			off += NLMSG_ALIGN(nh->nlmsg_len);
		}
	}
	return hit;
}

int bus_link_watch_wait(struct bus_link_watch *w, int timeout_ms)
{
	int r = watch_poll(w->fd, timeout_ms);

	return r == 1 ? link_read(w) : r;
}

void bus_link_watch_flush(struct bus_link_watch *w)
{
	if (w->fd >= 0)
		(void)link_read(w);
}
