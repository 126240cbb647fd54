/* SPDX-License-Identifier: MIT */
/*
 * trdp-private.h - what the live TRDP driver (trdp.c) and the capture
 * driver (trdp-trace.c) share: the device state and the bookkeeping of one
 * received telegram (header check, sequence counters, topology, refusals,
 * their events), so a capture replayed gives the records, counters and
 * events the live bus gave for the same packets.
 */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "acquisition/acq-bytes.h"
#include "bus-private.h"
#include "trace/pcap.h"
#include "trdp/header.h"

#define TRDP_BURST 32
#define TRDP_RCVBUF (2 << 20) /* a UDP socket's receive buffer, bytes (open_sock) */
/* A PD datagram is at most its header and 1432 bytes; a longer one is
   still taken whole up to this, and flagged too long. */
#define PD_SLOT 2048u
/* The largest UDP payload: an MD telegram is at most 65504 bytes. */
#define MD_SLOT 65536u
#define OWN_BYTES_DEFAULT (4u << 20)
#define TRACK_MAX 1024u /* senders x ComIds followed, a power of 2 */
#define TRACK_PROBE 8
#define BAD_EVENT_NS 1000000000LL
#define TCP_CONN_MAX 16u /* MD over TCP: connections taken at once */
/* The largest MD message in a TCP stream: header and data set, padded to 4. */
#define TCP_MSG_MAX ((TRDP_MD_HEADER_SIZE + TRDP_MD_DATA_MAX + 3u) & ~3u)

enum { SOCK_PD, SOCK_MD, SOCK_N };

struct track {
	uint32_t src, com_id, last_seq;
	uint8_t used, kind;
};

/* One accepted MD connection (live bus only): its own framing state and
   buffer. */
struct tcp_conn {
	int fd; /* -1: free */
	uint32_t src_ip, dst_ip; /* host order */
	uint16_t src_port;
	size_t have; /* bytes of the current message in buf */
	size_t need; /* its length once the header is read, else 0 */
	int64_t t_ns; /* kernel receive time of the last read */
	uint8_t *buf; /* TCP_MSG_MAX bytes of priv's tcp_buf */
};

struct trdp_priv {
	int fd[SOCK_N];
	/* MD over TCP, live bus only (a capture opens no socket): the
	   listening socket (-1 none), the connections, their buffers (NULL
	   on a capture) */
	int lfd;
	struct tcp_conn conn[TCP_CONN_MAX];
	uint8_t *tcp_buf;
	_Alignas(struct cmsghdr) char tcp_cmsg[256];
	int ifindex;
	/* interface =: its return, watched while it is gone (rtnetlink, as
	   a SocketCAN interface's: trdp_await); fd -1 none (no interface, a
	   capture file, or no rtnetlink: timed retries) */
	struct bus_link_watch watch;
	struct acq_bytes own;
	uint8_t *own_buf;
	struct acq_bytes *bytes;
	uint32_t ovfl_last[SOCK_N];
	struct mmsghdr msg[TRDP_BURST];
	struct iovec iov[TRDP_BURST];
	struct sockaddr_in from[TRDP_BURST];
	_Alignas(struct cmsghdr) char cmsg[TRDP_BURST][256];
	uint8_t scratch[MD_SLOT]; /* what is read to be dropped: no room */
	struct track track[TRACK_MAX];
	bool topo_seen;
	uint32_t etb, optrn;
	uint64_t bad_since;
	int bad_reason;
	int64_t bad_last_ns;
	int next_sock; /* the socket read first next time: fairness */
	void *trace;   /* trdp-trace.c's reader; NULL on a live bus */
	/* receive = capture (trdp-capture.c): the interface's packet ring,
	   NULL otherwise or while gone; its event being read; the ring's
	   drop total last read */
	struct trace_pcap *live;
	uint32_t live_drops_last;
	unsigned live_wakes;
	/* the last read stopped for want of item room, not at an empty
	   ring; the reads since without a poll (trdp.c trdp_recv) */
	bool live_more;
	unsigned live_skips;
	/* the ring failed or the interface went: until then (monotonic ns)
	   the packets still in the ring's open block are waited for
	   (trdp-capture.c bus_trdp_live_last); 0 while it works */
	int64_t live_last_ns;
	/* counters: written by the RX thread, read by any (bus_counters' rule) */
	_Atomic uint64_t st_telegrams, st_bytes, st_refused[8], st_gaps, st_repeats, st_back, st_topo, st_bytes_drops,
		st_untracked, st_tcp_accepted, st_tcp_refused, st_tcp_closed, st_tcp_bad, st_tcp_cut,
		st_tcp_messages, st_tcp_listen_error, st_opts_refused,
		st_capture_unmatched;
};

/* The device state of cfg (no socket open yet, lfd and conn[].fd -1) in
   dev->priv, with its byte ring (cfg's, or its own).  0, -EINVAL, -ENOMEM. */
int bus_trdp_priv_new(bus_dev_t *dev, const struct bus_cfg *cfg);
/* Frees what bus_trdp_priv_new() made and tcp_buf (not the sockets, not
   trace). */
void bus_trdp_priv_free(bus_dev_t *dev);

/*
 * One telegram of kind (enum trdp_kind) at data[0..len), already in the
 * byte ring, as the item at out (whose kind, bus, t_ns and trdp.flags'
 * ACQ_TRDP_TCP the caller set): the header checked (trdp_telegram_fill;
 * cut not TRDP_HDR_OK: the telegram was cut, and is refused with that
 * result - TRDP_HDR_TOO_LONG by the receive slot, TRDP_HDR_SHORT or
 * TRDP_HDR_TRUNCATED by a TCP peer closing mid-message), the addresses
 * set, counted, sequence and topology followed, and the events it causes
 * after it.  Returns the items written (1 to 3).
 */
size_t bus_trdp_telegram(bus_dev_t *dev, enum trdp_kind kind, const uint8_t *data, size_t len, int cut,
                         uint32_t src_ip, uint16_t src_port, uint32_t dst_ip, uint16_t dst_port,
                         struct acq_item *out);

/*
 * One telegram's bytes (data[0..len), cut to the live receive slot, and
 * then refused as too long) copied into the byte ring and its item(s) at
 * out + *n (*n advanced), at time t_ns, through bus_trdp_telegram().
 * tcp: framed out of a TCP stream.  0, -ENOBUFS no room in the byte ring.
 */
int bus_trdp_emit(bus_dev_t *dev, enum trdp_kind kind, bool tcp, int cut, const uint8_t *data, size_t len,
                  int64_t t_ns, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport, struct acq_item *out,
                  size_t *n);
/* A captured UDP datagram (trace/pcap.h) as bus_trdp_emit() does it, its
   kind by its port: the one path of a replayed capture (trdp-trace.c)
   and of a live bus that receives through a packet ring (trdp-capture.c). */
int bus_trdp_udp_event(bus_dev_t *dev, const struct trace_pcap_event *e, int64_t t_ns, struct acq_item *out,
                       size_t *n);

/* receive = capture (trdp-capture.c).  Open the interface's packet ring
   with the bus's filter into priv->live: 0, or -errno of
   trace_pcap_open_live() (-EPERM without CAP_NET_RAW). */
int bus_trdp_live_open(bus_dev_t *dev);
/* Close it (NULL is fine). */
void bus_trdp_live_close(struct trdp_priv *p);
/* What the ring holds into items[0..max) (max >= 3); the items written,
   or -ENETDOWN / -EIO: the capture failed (the interface went, mostly),
   once bus_trdp_live_last() has nothing more. */
int bus_trdp_live_read(bus_dev_t *dev, struct acq_item *items, size_t max);
/* The interface went (the ring failed, or is down at an idle wait), or
   the source drains the bus at stop: the packets the ring took and has
   not handed over yet, waited for (bounded: two block timeouts and 50 ms
   from the first call, again after the ring gave packets) and read into
   items[0..max); the items written, 0 when none is left or the wait is
   over. */
int bus_trdp_live_last(bus_dev_t *dev, struct acq_item *items, size_t max);
/* The ring's kernel drops since the last call added to rx_dropped. */
void bus_trdp_live_drops(bus_dev_t *dev);
