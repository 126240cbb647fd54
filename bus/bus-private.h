/* SPDX-License-Identifier: MIT */
/*
 * bus-private.h - shared between bus/ backends only: the device structure
 * and the driver interface.  Nothing outside bus/ includes it (cli/ and
 * the tests go through bus.h), so a driver's state can change without
 * touching its users.
 */
#pragma once

#include <errno.h>
#include <stdatomic.h>
#include <sys/inotify.h>

#include <linux/netlink.h>

#include "basic/counter.h"
#include "bus.h"

/*
 * The live counters of a device (struct bus_dev.stats), the same fields as
 * struct bus_stats.  Each one is written by a single thread, the one that
 * drives the device (RX/poll thread; the sending thread for tx_frames), and
 * read by the health reporter on another thread.  Atomic so a reader never
 * sees a torn value (a plain 64-bit store is two stores on 32-bit ARM);
 * relaxed because each counter stands alone: nobody reads other data on
 * the strength of a counter's value, so no ordering is needed, only
 * untorn and eventually current.  Drivers add with bus_stat_add().
 */
struct bus_counters {
	_Atomic uint64_t rx_frames;
	_Atomic uint64_t rx_errors;
	_Atomic uint64_t rx_dropped;
	_Atomic uint64_t bad_input;
	_Atomic uint64_t tx_frames;
	_Atomic uint64_t check_dropped; /* drops found by check(), whose thread
	                                   is not recv()'s: reported in
	                                   bus_stats.rx_dropped with rx_dropped */
};

struct bus_ops {
	const char *name;
	/* Set up the device from cfg; called once, may allocate. */
	int (*open)(bus_dev_t *dev, const struct bus_cfg *cfg);
	/*
	 * Fill up to max items.  CAN drivers wait at most timeout_ms for
	 * input; Modbus runs the transactions of the poll groups that are due.
	 * Returns the number of items (0 on timeout) or -errno.  RT-safe.
	 */
	int (*recv)(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms);
	/* Transmit one item (CAN replay onto vcan); -EOPNOTSUPP for Modbus. */
	int (*send)(bus_dev_t *dev, const struct acq_item *item);
	/* Poll the link (bus.h: bus_dev_check): off the RX thread, beside
	   recv(); shares only atomics with it; writes only check_dropped of
	   the counters. */
	int (*check)(bus_dev_t *dev, struct acq_item *events, size_t max);
	void (*close)(bus_dev_t *dev);
	/*
	 * After recv() said the device is gone (-ENODEV): release() closes its
	 * OS handle at once (a replugged USB adapter then gets its old name
	 * back) and keeps every buffer; reopen() opens it again from dev->cfg,
	 * with the same set-up as open() (listen-only, bitrate), into those
	 * buffers.  Neither allocates.  NULL in drivers that never say gone
	 * (Modbus reconnects by itself inside recv()).
	 */
	void (*release)(bus_dev_t *dev);
	int (*reopen)(bus_dev_t *dev);
	/* While released: wait up to timeout_ms for the device to come back
	   (bus.h: bus_dev_await); NULL for drivers with nothing to watch. */
	int (*await_back)(bus_dev_t *dev, int timeout_ms);
	/* Wakeup-latency histogram of a driver that paces itself (Modbus);
	   NULL member for drivers that wait on their bus instead. */
	const struct acq_latency *(*latency)(const bus_dev_t *dev);
	/* Its transaction times (request -> reply), NULL member if none. */
	const struct acq_latency *(*transaction)(const bus_dev_t *dev);
};

struct bus_dev {
	const struct bus_ops *ops;
	struct bus_cfg cfg;
	struct bus_counters stats;
	int gone_cause;           /* -errno behind recv()'s last -ENODEV */
	bool absent_ok;           /* open: a device not there is gone, not an error */
	void *priv;               /* driver state */
};

/*
 * Add n to a counter of struct bus_counters and return the new value.
 * Only the counter's one writer thread calls this (see above):
 * basic/counter.h.
 */
static inline uint64_t bus_stat_add(_Atomic uint64_t *counter, uint64_t n)
{
	return basic_counter_add(counter, n);
}

/* recv()'s way to say the device is gone (bus.h): keep why, -ENODEV. */
static inline int bus_gone(bus_dev_t *dev, int cause)
{
	dev->gone_cause = cause;
	return -ENODEV;
}

/*
 * open()'s way to end when attaching the device failed with r: 0 with the
 * device released and gone (bus.h) when the caller accepts an absent
 * device and r says absent, else r (the caller frees what open allocated).
 */
static inline int bus_open_absent(bus_dev_t *dev, int r)
{
	if (r >= 0 || !dev->absent_ok)
		return r;
	switch (-r) {
	case ENOENT: case ENODEV: case ENXIO: case EIO: case ETIMEDOUT: case ENETDOWN:
		dev->gone_cause = r;
		return 0;
	default:
		return r;
	}
}

/*
 * The return of a serial device's path, watched instead of polled
 * (dev-watch.c): inotify on the path's directory.  init() at open (may
 * allocate: an inotify instance), done() at close; wait() on the thread
 * that reopens, no allocation: up to timeout_ms for the path to be
 * created, moved in or changed; 1 when it was (try the reopen now), 0 on
 * timeout or other names, -EOPNOTSUPP when nothing is watched (no
 * inotify, the directory is missing too: the caller's timed retries
 * decide).  flush() forgets what is queued (at release: what happened
 * while the device was there says nothing of its return).
 */
struct bus_path_watch {
	int fd, wd;
	char dir[256];
	char name[256];
	/* Room for several events at once; aligned as the kernel writes them. */
	_Alignas(struct inotify_event) char buf[4096];
};

int bus_path_watch_init(struct bus_path_watch *w, const char *path);
void bus_path_watch_done(struct bus_path_watch *w);
int bus_path_watch_wait(struct bus_path_watch *w, int timeout_ms);
void bus_path_watch_flush(struct bus_path_watch *w);

/*
 * The return of a SocketCAN interface (dev-watch.c): rtnetlink link
 * events, as bus_path_watch's functions (wait: 1 when an RTM_NEWLINK says
 * the interface of that name is up).
 */
struct bus_link_watch {
	int fd;
	char ifname[16];
	_Alignas(struct nlmsghdr) char buf[8192];
};

int bus_link_watch_init(struct bus_link_watch *w, const char *ifname);
void bus_link_watch_done(struct bus_link_watch *w);
int bus_link_watch_wait(struct bus_link_watch *w, int timeout_ms);
void bus_link_watch_flush(struct bus_link_watch *w);

/* One ops table per backend; bus.c picks one from the cfg. */
extern const struct bus_ops bus_can_socket_ops;
extern const struct bus_ops bus_can_slcan_ops;
extern const struct bus_ops bus_can_trace_ops;
extern const struct bus_ops bus_modbus_ops;
extern const struct bus_ops bus_trdp_ops;
extern const struct bus_ops bus_trdp_trace_ops;
