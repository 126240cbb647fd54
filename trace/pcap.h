/* SPDX-License-Identifier: MIT */
/*
 * pcap.h - packet captures (pcap and pcapng, read by libpcap) turned into
 * the UDP datagrams and TCP streams TRDP travels in (IEC 61375-2-3: process
 * data on UDP 17224, message data on UDP and TCP 17225).
 *
 * Link types: Ethernet with 802.1Q / 802.1ad VLAN tags, Linux cooked SLL
 * and SLL2 (tcpdump -i any), raw IPv4.  IPv4 fragments are reassembled in
 * a bounded pool (TRACE_PCAP_FRAGS datagrams at a time, a timeout in
 * capture time); TCP streams on the TCP port are put in sequence order per
 * connection and direction in a bounded window.  Everything else in the
 * capture (ARP, IPv6, other ports) is counted and passed over.
 *
 * Memory: the pools are allocated at open; reading allocates nothing per
 * packet.  Not RT-safe (file I/O); one reader per thread.
 *
 * Live (trace_pcap_open_live): the same decoding of the packets of an
 * interface, read through libpcap's packet ring (on Linux AF_PACKET
 * TPACKET_V3, as tcpdump), so a live capture and a capture file are one
 * code path.  No file I/O then: trace_pcap_next() never blocks and
 * allocates nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct trace_pcap trace_pcap_t;

/* The defaults of struct trace_pcap_cfg (a field left 0 takes them). */
#define TRACE_PCAP_PORT_PD 17224       /* TRDP process data (UDP) */
#define TRACE_PCAP_PORT_MD 17225       /* TRDP message data (UDP and TCP) */
#define TRACE_PCAP_FRAGS 64            /* datagrams in reassembly at once */
#define TRACE_PCAP_FRAG_TIMEOUT_NS (30ULL * 1000000000ULL) /* as Linux's ipfrag_time */
#define TRACE_PCAP_CONNS 32            /* TCP connections followed at once */
#define TRACE_PCAP_WINDOW (64 * 1024)  /* out-of-order bytes held per direction */
#define TRACE_PCAP_UDP_PORTS_MAX 8

struct trace_pcap_cfg {
	/* UDP destination ports taken (the source port is ephemeral); none
	   given: 17224 and 17225 */
	uint16_t udp_ports[TRACE_PCAP_UDP_PORTS_MAX];
	size_t n_udp_ports;
	/* also the UDP datagrams from this source port (0: none): MD replies
	   sent from 17225 to the requester's ephemeral port */
	uint16_t udp_src_port;
	uint16_t tcp_port;          /* either end of a connection; 0: 17225 */
	bool no_tcp;                /* follow no TCP at all (a TRDP bus without MD) */
	unsigned frags;             /* 0: TRACE_PCAP_FRAGS */
	uint64_t frag_timeout_ns;   /* 0: TRACE_PCAP_FRAG_TIMEOUT_NS */
	unsigned conns;             /* 0: TRACE_PCAP_CONNS */
	size_t window;              /* 0: TRACE_PCAP_WINDOW; at most 1 MiB */
};

enum trace_pcap_kind {
	TRACE_PCAP_UDP,         /* one whole UDP datagram (reassembled if it came in fragments) */
	TRACE_PCAP_TCP_OPEN,    /* a connection seen first (by its SYN, or mid-stream: syn false) */
	TRACE_PCAP_TCP_DATA,    /* the next in-order bytes of one direction of a connection */
	TRACE_PCAP_TCP_GAP,     /* bytes of a direction never seen: len of them skipped */
	TRACE_PCAP_TCP_CLOSE,   /* the connection's end: FIN both ways, RST, or end of capture / evicted */
	TRACE_PCAP_KIND_MAX,
};

enum trace_pcap_end {
	TRACE_PCAP_END_FIN,     /* FIN in both directions, all bytes before them seen */
	TRACE_PCAP_END_RST,
	TRACE_PCAP_END_CAPTURE, /* the capture ended with the connection open */
	TRACE_PCAP_END_EVICTED, /* more than cfg.conns connections at once: the oldest let go */
	TRACE_PCAP_END_MAX,
};

struct trace_pcap_event {
	enum trace_pcap_kind kind;
	uint64_t time_ns;       /* capture time (of the packet that completed it), ns since the epoch */
	uint64_t packet;        /* that packet's number in the file, from 1 */
	uint32_t src, dst;      /* IPv4 addresses, host order */
	uint16_t sport, dport;
	uint8_t proto;          /* 17 UDP, 6 TCP */
	int vlan;               /* the innermost 802.1Q VID, -1 untagged */
	uint32_t conn;          /* TCP: the connection's id, from 1 in order of appearance */
	bool syn;               /* TCP_OPEN: its SYN was seen (else the capture began mid-stream) */
	enum trace_pcap_end end; /* TCP_CLOSE: why */
	const uint8_t *data;    /* UDP, TCP_DATA: valid until the next trace_pcap_next() */
	size_t len;             /* bytes in data; TCP_GAP: bytes skipped */
};

/* What was passed over or lost, counted (each says why). */
struct trace_pcap_stats {
	uint64_t packets;         /* read from the file */
	uint64_t other_link;      /* not IPv4 (ARP, IPv6, LLDP, ...) */
	uint64_t bad_ip;          /* IPv4 header wrong (version, length, checksum not checked) */
	uint64_t cut;             /* captured shorter than on the wire (snaplen): not decodable */
	uint64_t other_proto;     /* IPv4 but neither UDP nor TCP, or not on the ports */
	uint64_t frag_overlap;    /* datagrams dropped for overlapping fragments */
	uint64_t frag_incomplete; /* datagrams whose fragments never all came (timeout, pool full, end) */
	uint64_t frag_bad;        /* fragments past 65535 bytes or of a datagram too scattered */
	uint64_t udp_datagrams;   /* delivered */
	uint64_t tcp_bytes;       /* stream bytes delivered */
	uint64_t tcp_retrans;     /* segment bytes seen again (retransmissions, duplicates) */
	uint64_t tcp_gaps;        /* gaps in a stream */
	uint64_t tcp_gap_bytes;   /* bytes in them */
	uint64_t tcp_evicted;     /* connections let go for room */
	uint64_t lost_events;     /* a packet made more events than the queue holds (a bug if ever > 0) */
};

/* Open the capture at path (pcap or pcapng, by its content); cfg NULL for
   the defaults.  0 and *ret; -EMEDIUMTYPE not a capture libpcap reads,
   -ENOTSUP a link type not read here, -EINVAL, -ENOMEM, -errno of open.
   The message of a failure is in errbuf (errlen bytes, may be NULL). */
int trace_pcap_open(const char *path, const struct trace_pcap_cfg *cfg, trace_pcap_t **ret,
                    char *errbuf, size_t errlen);

/* The same on bytes in memory (the fuzzer's path): buf must live until
   trace_pcap_free(); name is what messages call it. */
int trace_pcap_open_mem(const void *buf, size_t len, const char *name, const struct trace_pcap_cfg *cfg,
                        trace_pcap_t **ret, char *errbuf, size_t errlen);

/* A live capture of interface ifname (libpcap: pcap_create, not
   promiscuous, incoming packets only, nanosecond kernel timestamps, not
   immediate): the kernel hands over a block of the ring of buffer_bytes
   when it is full or at the latest timeout_ms after it was opened (a
   packet waits up to that long).  snaplen: the bytes kept of a packet
   (its link header included; longer ones are counted cut); it does not
   size the ring's blocks (256 KiB with libpcap 1.10).  filter is a
   BPF expression (tcpdump's syntax) run in the kernel; cfg's ports are
   still applied here.  Needs CAP_NET_RAW.  0 and *ret; -EPERM, -ENODEV
   (no such interface), -ENETDOWN, -EINVAL (the filter), -ENOTSUP (the
   link type), -ENOMEM, -EIO; the message in errbuf. */
int trace_pcap_open_live(const char *ifname, const char *filter, int snaplen, int buffer_bytes, int timeout_ms,
                         const struct trace_pcap_cfg *cfg, trace_pcap_t **ret, char *errbuf, size_t errlen);

/* A live capture's descriptor to poll for POLLIN (a block handed over);
   -1 for a file. */
int trace_pcap_fd(const trace_pcap_t *p);

/* A live capture's packets dropped by the kernel so far (the ring was
   full: pcap_stats' ps_drop, 32 bits that wrap).  0, -EINVAL (a file),
   -EIO. */
int trace_pcap_drops(trace_pcap_t *p, uint32_t *ret);

/* A live capture's packets the kernel put in the ring that were not read
   yet (pcap_stats' ps_recv less ps_drop, less the packets read): those
   of blocks handed over and of the block the kernel still fills, which
   it hands over only at its timeout.  An estimate from above: packets
   libpcap skips itself (before the filter was set) are never read.
   0, -EINVAL (a file), -EIO. */
int trace_pcap_unread(trace_pcap_t *p, uint32_t *ret);

/* The next event: 1 and *ret_ev, 0 at the end of the capture (after the
   last connections' CLOSE), -EBADMSG the file is damaged past here
   (trace_pcap_error() names the file, the packet number and the byte
   offset; what came before was delivered, the rest is not read).  Live:
   -EAGAIN when the ring holds nothing now (poll trace_pcap_fd()),
   -ENETDOWN the interface went down, -EIO another error of libpcap's
   (trace_pcap_error() says it); never 0. */
int trace_pcap_next(trace_pcap_t *p, struct trace_pcap_event *ret_ev);

/* The last error's message ("" if none), owned by p. */
const char *trace_pcap_error(const trace_pcap_t *p);

/* The counters so far. */
void trace_pcap_stats(const trace_pcap_t *p, struct trace_pcap_stats *ret);

/* The first damage seen ("" if none), naming the file, the packet's
   number and its byte offset (pcapng: where its block ends); the rest are
   counted in the stats only.  Owned by p. */
const char *trace_pcap_note(const trace_pcap_t *p);

/* The link type's name ("EN10MB", "LINUX_SLL2", ...), libpcap's. */
const char *trace_pcap_link_name(const trace_pcap_t *p);

/* true for pcapng, false for classic pcap. */
bool trace_pcap_is_ng(const trace_pcap_t *p);

/* Frees p and everything it holds; NULL is fine.  Returns NULL. */
trace_pcap_t *trace_pcap_free(trace_pcap_t *p);

/* The kind's and an end's name ("udp", "tcp-data", ..., "fin", "rst", ...). */
const char *trace_pcap_kind_name(enum trace_pcap_kind k);
const char *trace_pcap_end_name(enum trace_pcap_end e);
