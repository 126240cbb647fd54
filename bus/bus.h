/* SPDX-License-Identifier: MIT */
/*
 * bus.h - one interface for every train bus driver.
 *
 * A bus device is opened from a fully validated struct bus_cfg (conf/
 * parses the board file into it), then driven by exactly one thread:
 * the realtime RX thread for CAN, the poll thread for Modbus.  Drivers
 * never log and never allocate after open(); they return -errno and expose
 * counters through bus_dev_stats().
 *
 * Read-only towards the train is a property of the drivers: CAN opens
 * listen-only unless cfg says otherwise, Modbus only ever sends function
 * codes 1-4.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"

struct acq_latency; /* acquisition/acq-latency.h */

#define BUS_NAME_MAX 32
#define BUS_PATH_MAX 256

enum bus_kind {
	BUS_KIND_CAN = 0,
	BUS_KIND_MODBUS = 1,
	BUS_KIND_TRDP = 2,
	BUS_KIND_MAX
};

enum bus_can_driver {
	BUS_CAN_SOCKETCAN = 0,
	BUS_CAN_SLCAN = 1,
	BUS_CAN_TRACE = 2, /* candump log file as a source */
	BUS_CAN_DRIVER_MAX
};

#define BUS_CAN_FILTERS_MAX 32

struct bus_can_filter {
	uint32_t id;   /* with CAN_EFF_FLAG for extended ids, as CAN_RAW wants */
	uint32_t mask;
};

struct bus_can_cfg {
	enum bus_can_driver driver;
	char ifname[BUS_NAME_MAX];  /* socketcan: interface; trace: iface filter ("" = all) */
	char device[BUS_PATH_MAX];  /* slcan: tty; trace: candump file */
	uint32_t bitrate;           /* 0 = leave as configured */
	uint32_t dbitrate;          /* CAN FD data phase, 0 = leave */
	uint32_t serial_baud;       /* slcan tty baud */
	bool fd;                    /* accept CAN FD frames */
	bool listen_only;           /* default true: never ACK or send on the train */
	bool allow_normal_mode;     /* explicit board-file opt-in to open a
	                               physical interface not in listen-only */
	double trace_speed;         /* trace: 0 = as fast as possible, 1 = real time */
	bool trace_loop;            /* trace: start over at EOF (demo) */
	uint32_t trace_channel;     /* trace: only this channel of an ASC, BLF or
	                               TRC file (1-based as they number them);
	                               0 = every channel */
	struct bus_can_filter filters[BUS_CAN_FILTERS_MAX];
	unsigned nfilters;
	char dbc[BUS_PATH_MAX];     /* "" = no decoding, raw frames only */
	bool dbc_strict;            /* refuse what a lenient DBC load warns about */
	bool j1939;                 /* J1939: transport reassembly, DM1, DBC by PGN */
};

/* Modbus data tables; the value is the read function code for the table. */
enum bus_mb_table {
	BUS_MB_COIL = 1,
	BUS_MB_DISCRETE = 2,
	BUS_MB_HOLDING = 3,
	BUS_MB_INPUT = 4,
};

enum bus_mb_type {
	BUS_MB_U16 = 0,
	BUS_MB_S16,
	BUS_MB_U32,
	BUS_MB_S32,
	BUS_MB_U64,
	BUS_MB_F32,
	BUS_MB_F64,
	BUS_MB_BIT,  /* one bit of a register (bit field), or a coil/discrete input */
	BUS_MB_S64,
	BUS_MB_U8,   /* one byte of a register: enum bus_mb_byte says which */
	BUS_MB_S8,
	BUS_MB_STRING, /* count registers of ASCII text, two bytes each (a text channel) */
	BUS_MB_TYPE_MAX
};

/* A string channel's registers at most: its text fits ACQ_TEXT_MAX bytes. */
#define BUS_MB_STRING_REGS_MAX 32

/* Which byte of its register a u8/s8 channel is, after the byte order's
   swap: the high (most significant) or the low one (Telegraf's UINT8H and
   UINT8L). */
enum bus_mb_byte {
	BUS_MB_BYTE_HIGH = 0,
	BUS_MB_BYTE_LOW,
	BUS_MB_BYTE_MAX
};

/* Order of bytes as they appear on the wire, A = most significant byte. */
enum bus_mb_order {
	BUS_MB_ABCD = 0, /* big-endian words, big-endian bytes (Modbus default) */
	BUS_MB_DCBA,     /* fully little-endian */
	BUS_MB_BADC,     /* big-endian words, bytes swapped within each word */
	BUS_MB_CDAB,     /* little-endian words ("word swap") */
	BUS_MB_ORDER_MAX
};

struct bus_mb_channel {
	uint32_t id;              /* board-wide channel id */
	char name[64];
	char unit[16];
	uint8_t unit_id;          /* Modbus slave / unit id */
	enum bus_mb_table table;
	uint16_t addr;            /* 0-based protocol address */
	enum bus_mb_type type;
	enum bus_mb_order order;
	uint8_t bit;              /* BUS_MB_BIT on registers: bit number 0..15 */
	enum bus_mb_byte byte;    /* BUS_MB_U8/S8: which byte of the register */
	uint8_t count;            /* BUS_MB_STRING: registers, 1..BUS_MB_STRING_REGS_MAX */
	double scale;             /* value = raw * scale + offset */
	double offset;
	uint32_t period_ms;       /* poll period of this channel's group */
};

struct bus_mb_cfg {
	bool rtu;                     /* false = TCP */
	char host[128];               /* TCP */
	uint16_t port;
	char device[BUS_PATH_MAX];    /* RTU serial device */
	uint32_t baud;
	char parity;                  /* 'N', 'E', 'O' */
	uint8_t data_bits;
	uint8_t stop_bits;
	bool rs485;                   /* set the RS-485 mode ioctl on the tty */
	uint32_t response_timeout_ms;
	uint32_t byte_timeout_ms;
	uint16_t max_gap;             /* registers a merged request may skip */
	uint32_t text_refresh_ms;     /* a string channel's unchanged text is stored
	                                 again after this long; 0 = 60 s */
	struct bus_mb_channel *channels; /* owned by the board config */
	size_t nchannels;
};

#define BUS_TRDP_GROUPS_MAX 16

struct acq_bytes; /* acquisition/acq-bytes.h */

/* A TRDP bus (IEC 61375-2-3): UDP process data and message data. */
struct bus_trdp_cfg {
	char ifname[BUS_NAME_MAX];  /* interface the groups are joined on; "" = the
	                               kernel's choice (the default route's) */
	uint32_t bind_ip;           /* local address to receive on, host order; 0 =
	                               any (needed for multicast: a socket bound to
	                               a unicast address gets no group traffic) */
	uint32_t groups[BUS_TRDP_GROUPS_MAX]; /* multicast groups joined, host order */
	unsigned ngroups;
	uint16_t pd_port;           /* 17224; 0 = no process data */
	uint16_t md_port;           /* 17225, UDP and a TCP listener; 0 = no message data */
	char xml[BUS_PATH_MAX];     /* the device's TRDP XML; "" none (raw only) */
	/* Receive UDP through a packet ring on ifname (libpcap live,
	   bus/trdp-capture.c; CAP_NET_RAW) instead of the UDP sockets, which
	   then only hold the ports and the groups; false = the sockets */
	bool receive_capture;
	/* capture: the ring's block timeout (libpcap's, the kernel's
	   tp_retire_blk_tov): a block is handed over this long after it was
	   opened, or when full; bounds a telegram's wait at low rates */
	uint32_t capture_block_ms;
	/* capture: the ring's size, KiB (libpcap's buffer size, tcpdump -B);
	   0 = the key's default.  Cut in blocks of 256 KiB, each retired at
	   its timeout however few packets it holds: at low rates the ring
	   lasts (kib / 256) x capture_block_ms while the bus thread is held
	   up.  Kernel memory, not swapped, for as long as the bus runs */
	uint32_t capture_buffer_kib;
	/* Where the telegrams' bytes go (acq-bytes.h): set by the pipeline,
	   whose sink releases them; NULL = the driver's own ring (a driver
	   used alone: tests, check), released by bus_dev_trdp_release().
	   Must outlive the device. */
	struct acq_bytes *bytes;
	size_t bytes_size;          /* own ring's size when bytes is NULL; 0 = 4 MiB */
	/* A replay: a packet capture (pcap, pcapng) read instead of the
	   network (bus/trdp-trace.c); "" = live */
	char capture[BUS_PATH_MAX];
	double trace_speed;         /* capture: 0 = as fast as possible, 1 = real time */
	/* A capture replayed into several TRDP buses (conf_replay_capture):
	   the board's buses, this one among them at its index, so each takes
	   only what is addressed to it (bus_trdp_capture_owner()); NULL: all
	   of the capture on its ports.  Must outlive the device. */
	const struct bus_cfg *capture_buses;
	size_t capture_nbuses;
};

/* A TRDP bus's own counters (bus_dev_trdp_stats()). */
/* bus_trdp_stats.opts_refused: SO_TIMESTAMPNS refused, a telegram's time
   is its read's (CLOCK_REALTIME after recvmmsg), not the kernel's receive
   time; SO_RXQ_OVFL refused, socket drops read by SO_MEMINFO when idle. */
#define BUS_TRDP_NO_KERNEL_TIME 1u
#define BUS_TRDP_NO_RXQ_OVFL 2u

/* bus_trdp_stats.receive: how the bus receives, which names what its
   rx_dropped counts (besides the byte ring's drops, counted in both): the
   sockets' overflows, the packet ring's kernel drops (pcap_stats'
   ps_drop), or, in a capture file replayed, TCP bytes the capture missed.
   railmon.proto's Health.trdp_receive, 0 there: not said (a writer
   before it). */
enum bus_trdp_receive {
	BUS_TRDP_RECEIVE_UNKNOWN = 0,
	BUS_TRDP_RECEIVE_SOCKET = 1,
	BUS_TRDP_RECEIVE_CAPTURE = 2,
	BUS_TRDP_RECEIVE_REPLAY = 3,
};

struct bus_trdp_stats {
	uint64_t telegrams;         /* received, any header */
	uint64_t bytes;             /* their bytes (headers, data sets, padding) */
	uint64_t refused[8];        /* by enum trdp_header_result (trdp/header.h),
	                               [0] = the valid ones */
	uint64_t seq_gaps;          /* telegrams missed by sequence counter */
	uint64_t seq_repeats;       /* a counter repeated */
	uint64_t seq_back;          /* a counter that went back (a restarted sender) */
	uint64_t topology_changes;
	uint64_t bytes_drops;       /* dropped: no room in the byte ring */
	uint64_t untracked;         /* telegrams of senders past the tracking table */
	/* MD over TCP */
	uint64_t tcp_accepted;      /* connections taken */
	uint64_t tcp_refused;       /* connections closed at once: all slots taken */
	uint64_t tcp_closed;        /* taken connections closed (peer, bad header, gone) */
	uint64_t tcp_bad_header;    /* connections closed by us on an invalid header */
	uint64_t tcp_cut;           /* connections that ended mid-message */
	uint64_t tcp_messages;      /* valid messages framed */
	uint64_t capture_unmatched; /* a capture into several buses: UDP datagrams and TCP
	                               connections on this bus's ports (and on no earlier
	                               bus's) addressed to no bus of the board */
	unsigned opts_refused;      /* BUS_TRDP_NO_* of the sockets' last open: options the
	                               kernel refused (qemu-user; ENOPROTOOPT), done without */
	enum bus_trdp_receive receive; /* sockets, packet ring or a capture file */
	int tcp_listen_error;       /* -errno of the TCP listener's last open (-EADDRINUSE:
	                               a stack on this host has the port; UDP goes on),
	                               0 listening or md_port 0 */
};

struct bus_cfg {
	enum bus_kind kind;
	char name[BUS_NAME_MAX];  /* section name in the board file */
	uint16_t index;           /* position in the board file = acq_item.bus */
	union {
		struct bus_can_cfg can;
		struct bus_mb_cfg mb;
		struct bus_trdp_cfg trdp;
	};
};

/* A copy of a device's counters, taken by bus_dev_stats(). */
struct bus_stats {
	uint64_t rx_frames;      /* frames / successful transactions */
	uint64_t rx_errors;      /* error frames, failed transactions */
	uint64_t rx_dropped;     /* kernel overflow (SO_RXQ_OVFL) */
	uint64_t bad_input;      /* garbage lines / malformed replies */
	uint64_t tx_frames;
};

/*
 * A device: opaque.  Its driver, its copy of the configuration, its live
 * counters and the driver's state are private to bus/ (bus-private.h), as
 * libmodbus keeps struct _modbus: callers use the functions below.
 */
typedef struct bus_dev bus_dev_t;

/*
 * Open the driver cfg names.  cfg is copied; pointers inside it (Modbus
 * channel tables) must outlive the device.  Returns 0 and the device in
 * *ret_dev, -EINVAL on bad arguments, -EPROTONOSUPPORT for a driver not
 * built, or the driver's -errno.
 */
int bus_dev_new(const struct bus_cfg *cfg, bus_dev_t **ret_dev);
/* Close and free; accepts NULL; returns NULL. */
bus_dev_t *bus_dev_free(bus_dev_t *dev);
/*
 * Fill up to max items: CAN drivers wait at most timeout_ms for input
 * (< 0: no limit); Modbus runs the transactions of its poll groups that are
 * due.  Returns the number of items (0 on timeout), -ENODATA at the end of
 * a trace, -ENODEV when the device is gone (below), or -errno.  Called by
 * one thread only (the RX/poll thread).  RT-safe once open: no allocation,
 * no locks, no logging.
 */
int bus_dev_recv(bus_dev_t *dev, struct acq_item *items, size_t max, int timeout_ms);
/* Transmit one CAN item (replay onto vcan); 0, -EOPNOTSUPP for Modbus and
   traces, -EPERM for a physical bus not opened in normal mode, -errno. */
int bus_dev_send(bus_dev_t *dev, const struct acq_item *item);
/*
 * Poll the link for what recv() cannot see (SocketCAN: controller state and
 * error counters, interface and socket drop counters), as events into
 * events (up to max; what does not fit is found again next time).  Returns
 * their number (0 for drivers with nothing to poll) or -errno.  It may
 * block for netlink round-trips (libsocketcan), so it must not run on the
 * realtime RX thread: it runs on a normal-priority thread (acquisition's
 * monitor) while recv() goes on, and shares only atomics with recv().
 * Never concurrently with bus_dev_release(), bus_dev_reopen() or
 * bus_dev_free(): the caller keeps them apart (acq_source does).
 */
int bus_dev_check(bus_dev_t *dev, struct acq_item *events, size_t max);
/* Whether bus_dev_check() can report anything for this device (false:
   it always returns 0, and no thread needs to call it). */
bool bus_dev_has_check(const bus_dev_t *dev);
/*
 * A device that goes away: bus_dev_recv() returns -ENODEV, and keeps
 * returning it, when the device is gone - slcan: the tty hung up or failed
 * (USB adapter unplugged, its pty closed); SocketCAN: the interface was
 * deleted or went down; trace: the file cannot be read.  Other negative
 * returns are errors on a device that is still there.
 *
 * bus_dev_gone_cause(): what the driver saw, as -errno (-EPIPE hung up,
 * -EIO, -ENODEV deleted, -ENETDOWN down...); 0 when not gone.
 * bus_dev_release(): close the device's handle now, keep its buffers.
 * bus_dev_reopen(): open it again with the set-up open() did; 0, or
 * -errno while it is still away (-ENOENT, -ENODEV, -ENETDOWN; -ETIMEDOUT
 * for an adapter that does not answer its init commands).
 *
 * Call them from the thread that drives the device.  RT-safe: no
 * allocation; reopen blocks at most for the driver's bounded set-up
 * (slcan: 1 s per unanswered init command).  -EINVAL for NULL,
 * -EOPNOTSUPP for a driver that never says gone.
 */
int bus_dev_gone_cause(const bus_dev_t *dev);
int bus_dev_release(bus_dev_t *dev);
int bus_dev_reopen(bus_dev_t *dev);
/*
 * While the device is released: wait up to timeout_ms for a sign that it
 * is back, watched, not polled (slcan: its tty path created or moved in
 * again, inotify; SocketCAN: the interface added or up again, rtnetlink
 * link events).  Returns 1 when there was one (reopen now), 0 when
 * timeout_ms passed without one, -EOPNOTSUPP when this device has nothing
 * to watch (the caller's timed retries alone decide), -EINVAL for NULL.
 * From the thread that reopens; no allocation; a sign is a hint, the
 * reopen says whether the device is really there.
 */
int bus_dev_await(bus_dev_t *dev, int timeout_ms);
/*
 * bus_dev_new() for a device that may be away right now (a daemon that
 * restarts its pipeline while an adapter is unplugged): when a driver that
 * can reopen finds the device absent (-ENOENT, -ENODEV, -ENXIO, -EIO,
 * -ETIMEDOUT, -ENETDOWN), the device is returned released, with that
 * -errno in bus_dev_gone_cause(), for the caller's reopen loop.  Every
 * other error (a bad configuration, listen-only refused) fails as in
 * bus_dev_new().
 */
int bus_dev_new_absent_ok(const struct bus_cfg *cfg, bus_dev_t **ret_dev);
/* Copy the counters out; any thread.  Each value is read atomically
   (never torn) but not together with the others: they may be a few
   frames apart. */
int bus_dev_stats(const bus_dev_t *dev, struct bus_stats *ret_stats);
/*
 * The device's wakeup-latency histogram (acquisition/acq-latency.h), written
 * by the thread that calls bus_dev_recv(); read it with
 * acq_latency_snapshot() from any thread.  Lives as long as dev.  NULL for
 * NULL dev or a driver that does not pace itself.
 */
const struct acq_latency *bus_dev_latency(const bus_dev_t *dev);
/* Its transaction times, request sent -> reply read (Modbus), in the same
   kind of histogram and on the same terms; NULL if it has none. */
const struct acq_latency *bus_dev_transaction(const bus_dev_t *dev);

/* A TRDP bus's counters (sequence counters, refusals by reason); any
   thread, as bus_dev_stats().  -EINVAL for NULL or another kind of bus. */
int bus_dev_trdp_stats(const bus_dev_t *dev, struct bus_trdp_stats *ret_stats);
/* A receive mode's name in stat --json ("socket", "capture", "replay"),
   NULL for BUS_TRDP_RECEIVE_UNKNOWN or any other value; and back, 0
   (unknown) for a name that is none of them. */
const char *bus_trdp_receive_name(uint32_t receive);
enum bus_trdp_receive bus_trdp_receive_parse(const char *name);

/*
 * Which TRDP bus of buses[0..n) a captured UDP datagram or TCP connection
 * (addresses and ports, host order) is for, as the live buses' sockets
 * would have it: on the bus's ports (UDP: to its PD or MD port, or from
 * its MD port, an MD reply; TCP: its MD port at either end), then by the
 * address it was sent to (TCP: the end on the MD port): the bus bound to
 * that address first; else, for a multicast group, a bus bound to any
 * address that joins the group; else, for a unicast address, a bus bound
 * to any address.  Ties go to the first in board order.  Returns its
 * index, or -1 when none takes it; *ret_first (may be NULL) is the first
 * bus whose ports it is on (-1 none): the one that counts it unmatched.
 */
int bus_trdp_capture_owner(const struct bus_cfg *buses, size_t n, bool tcp, uint32_t src, uint16_t sport,
                           uint32_t dst, uint16_t dport, int *ret_first);
/* A TRDP bus on its own byte ring (cfg.bytes NULL): the telegram items
   handed out so far are consumed up to and including it; its bytes may be
   overwritten from now on.  -EINVAL for NULL, another bus, or a ring the
   pipeline owns. */
int bus_dev_trdp_release(bus_dev_t *dev, const struct acq_item *it);
