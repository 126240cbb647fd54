/* SPDX-License-Identifier: MIT */
/*
 * slcan.c - the slcan line parser and the slcan driver.
 *
 * The driver opens the tty raw, closes the channel ("C"), sets the bitrate
 * ("S0".."S8"), and opens it listen-only ("L") unless the board file
 * explicitly allows normal mode ("O").  Each command must be answered by
 * CR (BELL = refused) within SLCAN_CMD_TIMEOUT_MS; the first, "C", is
 * sent again every SLCAN_C_RETRY_MS within that time.  Then recv() reads
 * lines: frames become items, bare CRs (late acknowledgements) are
 * skipped, anything else is counted in stats.bad_input and reported as an
 * ACQ_EV_CAN_BAD_LINE event (arg = count so far), and reading resyncs at
 * the next CR.  cfg->can.filters apply as on CAN_RAW (can-filter.h).
 *
 * Time: items carry CLOCK_REALTIME taken right after read(2) returned.
 * The adapter's own timestamp (Z1) is a 16-bit millisecond counter that
 * wraps every 60 s, has no epoch, and runs on the adapter's crystal, so it
 * could only be used for intervals within one minute and would still have
 * to be tied to host time; the host stamp is off by the USB latency
 * (about 1 ms) but is on the same clock as every other bus.
 *
 * All buffers are allocated at open; recv() only does poll/read.
 *
 * Gone: a tty that hung up or fails (adapter unplugged, pty closed) makes
 * recv() return -ENODEV (bus.h), cause -EPIPE for a hang-up, else the
 * read's -errno.  release() closes the tty; reopen() opens the same path
 * and sends the same init commands into the buffers of the first open.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "bus-private.h"
#include "can-filter.h"
#include "slcan.h"
#include "basic/clock.h"
#include "basic/hex.h"

#define SLCAN_RX_BUF 4096
#define SLCAN_CMD_TIMEOUT_MS 1000
/* After "C": the line must be quiet this long before the next command, and
   we wait at most SLCAN_DRAIN_MAX_MS for that (an adapter that keeps
   streaming is set up anyway; its frames are skipped as stray bytes). */
#define SLCAN_QUIET_MS 100
#define SLCAN_DRAIN_MAX_MS 1000
/* The first "C" is sent again every SLCAN_C_RETRY_MS within the command
   timeout: an adapter whose path appears before its firmware listens
   (a USB adapter still booting, a peer not yet reading) loses what came
   before, and waiting the whole second for that lost "C" left the bus
   blind for over a second after the device was ready (issue 30).  Only
   "C" is repeated: the drain after it swallows the extra answers, which
   after "S" or "L" would be read as the answer to the next command. */
#define SLCAN_C_RETRY_MS 50

static int hexnum(const char *s, unsigned n, uint32_t *ret)
{
	uint32_t v = 0;

	for (unsigned i = 0; i < n; i++) {
		int d = basic_hex_digit(s[i]);

		if (d < 0)
			return -EBADMSG;
		v = v << 4 | (uint32_t)d;
	}
	*ret = v;
	return 0;
}

static const uint8_t fd_dlc_len[16] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64 };

int bus_slcan_parse(const char *line, size_t len, struct acq_item *ret_item)
{
	struct acq_item it = { .kind = ACQ_ITEM_CAN };
	unsigned idlen, pos, rest;
	uint32_t id, dlc, v;
	bool remote = false;

	if (!line || !ret_item)
		return -EINVAL;
	len = strnlen(line, len);
	if (len < 1)
		return -EBADMSG;
	switch (line[0]) {
	case 'r': remote = true; /* fall through */
	case 't': idlen = 3; break;
	case 'R': remote = true; /* fall through */
	case 'T': idlen = 8; break;
	case 'b': it.can.flags |= ACQ_CAN_BRS; /* fall through */
	case 'd': idlen = 3; it.can.flags |= ACQ_CAN_FD; break;
	case 'B': it.can.flags |= ACQ_CAN_BRS; /* fall through */
	case 'D': idlen = 8; it.can.flags |= ACQ_CAN_FD; break;
	default: return -EBADMSG;
	}
	if (len < 2 + idlen || hexnum(line + 1, idlen, &id) < 0 || hexnum(line + 1 + idlen, 1, &dlc) < 0)
		return -EBADMSG;
	if (idlen == 3 ? id > 0x7ff : id > 0x1fffffff)
		return -EBADMSG;
	if (!(it.can.flags & ACQ_CAN_FD) && dlc > 8)
		return -EBADMSG;
	it.can.id = id;
	it.can.flags |= idlen == 8 ? ACQ_CAN_EXT : 0;
	it.can.flags |= remote ? ACQ_CAN_RTR : 0;
	it.can.len = fd_dlc_len[dlc];
	pos = 2 + idlen;
	rest = remote ? 0 : 2u * it.can.len;
	/* what follows the data is nothing or a 4-digit adapter timestamp */
	if (len != pos + rest && (len != pos + rest + 4 || hexnum(line + pos + rest, 4, &v) < 0))
		return -EBADMSG;
	for (unsigned i = 0; i < rest / 2; i++) {
		if (hexnum(line + pos + 2 * i, 2, &v) < 0)
			return -EBADMSG;
		it.can.data[i] = (uint8_t)v;
	}
	*ret_item = it;
	return 0;
}

struct slcan {
	int fd;
	char *rx;            /* bytes read, not yet consumed */
	size_t rx_pos, rx_fill;
	char line[BUS_SLCAN_LINE_MAX + 1];
	size_t line_len;
	bool overlong;       /* current line exceeded the maximum: garbage */
	int64_t rx_stamp;    /* CLOCK_REALTIME of the last read() */
	struct bus_path_watch watch; /* the tty's path, while it is away */
};


static int baud_const(uint32_t baud, speed_t *ret)
{
	static const struct { uint32_t baud; speed_t s; } map[] = {
		{ 9600, B9600 }, { 19200, B19200 }, { 38400, B38400 }, { 57600, B57600 },
		{ 115200, B115200 }, { 230400, B230400 }, { 460800, B460800 }, { 500000, B500000 },
		{ 921600, B921600 }, { 1000000, B1000000 }, { 2000000, B2000000 }, { 3000000, B3000000 },
		{ 4000000, B4000000 },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i].baud == baud) {
			*ret = map[i].s;
			return 0;
		}
	}
	return -EINVAL;
}

/* Lawicel "Sn" bitrate codes. */
static int bitrate_code(uint32_t bitrate)
{
	static const uint32_t rates[] = { 10000, 20000, 50000, 100000, 125000, 250000, 500000, 800000, 1000000 };

	for (int i = 0; i < (int)(sizeof(rates) / sizeof(rates[0])); i++)
		if (rates[i] == bitrate)
			return i;
	return -EINVAL;
}

static int tty_raw(int fd, uint32_t baud)
{
	struct termios tio;
	speed_t s;

	if (tcgetattr(fd, &tio) < 0)
		return -errno;
	cfmakeraw(&tio);
	tio.c_cflag |= CLOCAL | CREAD;
	tio.c_cc[VMIN] = 0;
	tio.c_cc[VTIME] = 0;
	if (baud) {
		if (baud_const(baud, &s) < 0)
			return -EINVAL;
		cfsetispeed(&tio, s);
		cfsetospeed(&tio, s);
	}
	if (tcsetattr(fd, TCSANOW, &tio) < 0)
		return -errno;
	return 0;
}

static int write_all(int fd, const char *s, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, s, len);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			if (poll(&p, 1, SLCAN_CMD_TIMEOUT_MS) <= 0)
				return -ETIMEDOUT;
			continue;
		}
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0) {
			s += n;
			len -= (size_t)n;
		}
	}
	return 0;
}

/* Send one command and wait up to timeout_ms for its answer: 0 on CR,
   -EIO on BELL, -ETIMEDOUT without answer. */
static int slcan_command_wait(int fd, const char *cmd, int timeout_ms)
{
	int64_t end = basic_mono_ns() + (int64_t)timeout_ms * 1000000;
	char c;
	int r = write_all(fd, cmd, strlen(cmd));

	while (r == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - basic_mono_ns();
		ssize_t n;

		/* stray bytes must not stretch the wait: the deadline is fixed */
		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)((left + 999999) / 1000000));
		if (r < 0 && errno == EINTR) {
			r = 0;
			continue;
		}
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		n = read(fd, &c, 1);
		if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
			r = 0;
			continue;
		}
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		if (c == '\r')
			return 0;
		if (c == '\a')
			return -EIO;
		r = 0; /* stray bytes before the answer (a frame of an open channel) */
	}
	return r;
}

static int slcan_command(int fd, const char *cmd)
{
	return slcan_command_wait(fd, cmd, SLCAN_CMD_TIMEOUT_MS);
}

/* "C", sent again every SLCAN_C_RETRY_MS until answered, within the same
   SLCAN_CMD_TIMEOUT_MS a single command gets. */
static int slcan_close_channel(int fd)
{
	int64_t end = basic_mono_ns() + (int64_t)SLCAN_CMD_TIMEOUT_MS * 1000000;
	int r;

	do {
		int64_t left_ms = (end - basic_mono_ns()) / 1000000;

		r = slcan_command_wait(fd, "C\r", left_ms < SLCAN_C_RETRY_MS ? (int)left_ms : SLCAN_C_RETRY_MS);
	} while (r == -ETIMEDOUT && basic_mono_ns() < end);
	return r;
}

/* Read and throw away until the line has been quiet for SLCAN_QUIET_MS
   (at most SLCAN_DRAIN_MAX_MS).  Answers still on their way, to the "C"
   a previous close left behind or to a command answered after our
   timeout, would otherwise be read as the answer to the next command: a
   stale BELL refused every "S" of a reopen, attempt after attempt. */
static void slcan_drain(int fd)
{
	int64_t end = basic_mono_ns() + (int64_t)SLCAN_DRAIN_MAX_MS * 1000000;
	char junk[64];

	tcflush(fd, TCIFLUSH);
	while (basic_mono_ns() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, SLCAN_QUIET_MS);

		if (r == 0 || (r < 0 && errno != EINTR))
			return;
		if (r > 0 && read(fd, junk, sizeof(junk)) <= 0 && errno != EINTR && errno != EAGAIN)
			return;
	}
}

static int slcan_setup(const struct bus_can_cfg *can, int fd)
{
	char cmd[8];
	int code, r;

	/* "C" on a closed channel is answered with BELL: that is fine */
	r = slcan_close_channel(fd);
	if (r < 0 && r != -EIO)
		return r;
	slcan_drain(fd);
	if (can->bitrate) {
		code = bitrate_code(can->bitrate);
		if (code < 0)
			return code;
		snprintf(cmd, sizeof(cmd), "S%d\r", code);
		r = slcan_command(fd, cmd);
		if (r < 0)
			return r;
	}
	return slcan_command(fd, can->listen_only ? "L\r" : "O\r");
}

/* Close the tty, keep the buffers (reopen uses them again). */
static void slcan_release(bus_dev_t *dev)
{
	struct slcan *sl = dev->priv;

	if (sl->fd >= 0) {
		/* best effort: leave the adapter closed */
		(void)!write(sl->fd, "C\r", 2);
		close(sl->fd);
		sl->fd = -1;
		/* Names made while the adapter was there are no sign of its
		   return. */
		bus_path_watch_flush(&sl->watch);
	}
	/* A line cut by the unplug is half a frame: not worth a report. */
	sl->rx_pos = sl->rx_fill = sl->line_len = 0;
	sl->overlong = false;
}

static void slcan_close(bus_dev_t *dev)
{
	struct slcan *sl = dev->priv;

	if (!sl)
		return;
	slcan_release(dev);
	bus_path_watch_done(&sl->watch);
	free(sl->rx);
	free(sl);
	dev->priv = NULL;
}

/* Open the tty and set the adapter up; no allocation (open and reopen). */
static int slcan_attach(bus_dev_t *dev)
{
	struct slcan *sl = dev->priv;
	int r;

	sl->fd = open(dev->cfg.can.device, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (sl->fd < 0)
		return -errno;
	r = tty_raw(sl->fd, dev->cfg.can.serial_baud);
	if (r == 0)
		r = slcan_setup(&dev->cfg.can, sl->fd);
	if (r < 0) {
		close(sl->fd);
		sl->fd = -1;
	}
	return r;
}

static int slcan_reopen(bus_dev_t *dev)
{
	slcan_release(dev);
	return slcan_attach(dev);
}

static int slcan_await(bus_dev_t *dev, int timeout_ms)
{
	struct slcan *sl = dev->priv;

	return bus_path_watch_wait(&sl->watch, timeout_ms);
}

static int slcan_open(bus_dev_t *dev, const struct bus_cfg *cfg)
{
	const struct bus_can_cfg *can = &cfg->can;
	struct slcan *sl;
	int r;

	if (!can->device[0] || !memchr(can->device, '\0', sizeof(can->device)) || can->dbitrate)
		return -EINVAL;
	if (!can->listen_only && !can->allow_normal_mode)
		return -EPERM;
	if (can->bitrate && bitrate_code(can->bitrate) < 0)
		return -EINVAL;
	sl = calloc(1, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	dev->priv = sl;
	sl->fd = -1;
	/* Without inotify the device is still reopened, by timed retries. */
	if (bus_path_watch_init(&sl->watch, can->device) < 0)
		sl->watch.fd = -1;
	sl->rx = malloc(SLCAN_RX_BUF);
	r = sl->rx ? bus_open_absent(dev, slcan_attach(dev)) : -ENOMEM;
	if (r < 0)
		slcan_close(dev);
	return r;
}

static void slcan_bad(bus_dev_t *dev, struct slcan *sl, struct acq_item *ret_item)
{
	uint64_t count = bus_stat_add(&dev->stats.bad_input, 1);

	*ret_item = (struct acq_item){
		.t_ns = sl->rx_stamp,
		.kind = ACQ_ITEM_EVENT,
		.bus = dev->cfg.index,
		.event = { .code = ACQ_EV_CAN_BAD_LINE, .arg = (int64_t)count },
	};
}

/* One complete line in sl->line: 1 if it produced an item, else 0. */
static int slcan_line(bus_dev_t *dev, struct slcan *sl, struct acq_item *ret_item)
{
	bool overlong = sl->overlong;
	size_t len = sl->line_len;

	sl->line_len = 0;
	sl->overlong = false;
	if (overlong) {
		slcan_bad(dev, sl, ret_item);
		return 1;
	}
	if (len == 0)
		return 0; /* bare CR: acknowledgement of a command */
	/* the parser stops at a NUL as at the end of a C string; on the wire it is garbage */
	if (memchr(sl->line, '\0', len) || bus_slcan_parse(sl->line, len, ret_item) < 0) {
		slcan_bad(dev, sl, ret_item);
		return 1;
	}
	if (!bus_can_filter_pass(&dev->cfg.can, &ret_item->can))
		return 0;
	ret_item->t_ns = sl->rx_stamp;
	ret_item->bus = dev->cfg.index;
	bus_stat_add(&dev->stats.rx_frames, 1);
	return 1;
}

/* Turn buffered bytes into at most max items. */
static size_t slcan_consume(bus_dev_t *dev, struct slcan *sl, struct acq_item *items, size_t max)
{
	size_t n = 0;

	while (n < max && sl->rx_pos < sl->rx_fill) {
		char c = sl->rx[sl->rx_pos++];

		if (c == '\r' || c == '\n') {
			n += (size_t)slcan_line(dev, sl, &items[n]);
		} else if (c == '\a') {
			/* BELL: the adapter refused something; a line of its own */
			sl->line_len = 0;
			sl->overlong = false;
			slcan_bad(dev, sl, &items[n++]);
		} else if (sl->line_len < BUS_SLCAN_LINE_MAX) {
			sl->line[sl->line_len++] = c;
		} else {
			sl->overlong = true; /* resync at the next CR */
		}
	}
	return n;
}

/*
 * A tty that hung up (pty master closed, USB adapter unplugged) polls
 * readable forever and reads 0 or fails: that is "gone", never a retry.
 * Bytes still queued are read first, so a frame sent just before the
 * unplug is not lost.
 */
static int slcan_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms)
{
	struct slcan *sl = dev->priv;
	struct pollfd p = { .fd = sl->fd, .events = POLLIN };
	size_t n = slcan_consume(dev, sl, items, max);
	ssize_t got;
	int r;

	if (n > 0)
		return (int)n;
	if (sl->fd < 0)
		return bus_gone(dev, dev->gone_cause); /* released, not reopened */
	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	if (r == 0)
		return 0;
	got = read(sl->fd, sl->rx, SLCAN_RX_BUF);
	sl->rx_stamp = basic_realtime_ns();
	if (got == 0)
		return bus_gone(dev, -EPIPE); /* hung up */
	if (got < 0 && errno != EAGAIN && errno != EINTR)
		return bus_gone(dev, -errno); /* EIO, ENXIO, ENODEV: the tty is dead */
	if (got < 0)
		return p.revents & (POLLHUP | POLLERR | POLLNVAL) ? bus_gone(dev, -EPIPE) : 0;
	sl->rx_pos = 0;
	sl->rx_fill = (size_t)got;
	return (int)slcan_consume(dev, sl, items, max);
}

const struct bus_ops bus_can_slcan_ops = {
	.name = "can-slcan",
	.open = slcan_open,
	.recv = slcan_recv,
	.close = slcan_close,
	.release = slcan_release,
	.reopen = slcan_reopen,
	.await_back = slcan_await,
};
