/* SPDX-License-Identifier: MIT */
/*
 * acq-item.h - the one record type that crosses module boundaries.
 *
 * Every source (CAN, Modbus, replay) produces struct acq_item into an SPSC
 * ring; the collector drains them, numbers them, decodes CAN frames into
 * samples and hands them to the encoder; readers of the log decode Batches
 * back into the same items for export and replay.  bus/, storage/, record/
 * and uplink/ may include this header (and only this one from acquisition/):
 * it is plain data with no functions, so the module graph stays one-way.
 *
 * The numeric values of enum acq_event_code and the flag bits are part of
 * the wire contract: record/railmon.proto mirrors them.  Append, never
 * renumber.
 */
#pragma once

#include <stdint.h>

enum acq_item_kind {
	ACQ_ITEM_CAN = 0,    /* a raw CAN / CAN FD / error frame */
	ACQ_ITEM_SAMPLE = 1, /* a decoded physical value of one channel */
	ACQ_ITEM_EVENT = 2,  /* something that happened: fault, state change */
	ACQ_ITEM_TEXT = 3,   /* the text of a text channel (Modbus type = string) */
	ACQ_ITEM_TRDP = 4,   /* a raw TRDP telegram (struct acq_trdp) */
	ACQ_ITEM_KIND_MAX
};

/* CAN frame flags (acq_can.flags).  Mirrors railmon.proto CanFlag. */
enum {
	ACQ_CAN_EXT = 1u << 0, /* 29-bit identifier */
	ACQ_CAN_FD = 1u << 1,  /* CAN FD frame */
	ACQ_CAN_BRS = 1u << 2, /* FD bit-rate switch */
	ACQ_CAN_ESI = 1u << 3, /* FD error state indicator */
	ACQ_CAN_RTR = 1u << 4, /* remote request */
	ACQ_CAN_ERR = 1u << 5, /* error frame (id holds CAN_ERR_* class bits) */
	ACQ_CAN_TX = 1u << 6,  /* sent by us (echo / replay), not received */
};

#define ACQ_CAN_DATA_MAX 64

struct acq_can {
	uint32_t id;    /* without EFF/RTR/ERR flag bits; see flags */
	uint8_t flags;  /* ACQ_CAN_* */
	uint8_t len;    /* payload bytes, 0..8 classic, 0..64 FD */
	uint8_t data[ACQ_CAN_DATA_MAX];
};

/* Sample quality (acq_sample.quality).  Mirrors railmon.proto Quality. */
enum acq_quality {
	ACQ_Q_GOOD = 0,
	ACQ_Q_OUT_OF_RANGE = 1, /* outside the min/max the signal declares */
	ACQ_Q_INVALID = 2,      /* raw pattern is "not available"/NaN */
	ACQ_Q_MAX
};

struct acq_sample {
	uint32_t channel; /* board-wide channel id, bus << 16 | n: pipeline/channels.h */
	uint32_t quality; /* enum acq_quality */
	double value;     /* physical value after scale and offset */
};

/* A text channel's value: ASCII registers (a vehicle number, a software
   version, a fault text), trailing NULs and spaces trimmed.  Bytes that are
   not printable ASCII are written as '?' and make the quality INVALID,
   so the text is always valid UTF-8 for any consumer.  Sized to fit the
   union beside acq_can, so the ring's element does not grow. */
#define ACQ_TEXT_MAX 64 /* bytes: 32 registers */

struct acq_text {
	uint32_t channel; /* board-wide channel id, as acq_sample's */
	uint8_t quality;  /* enum acq_quality */
	uint8_t len;      /* bytes of text, 0..ACQ_TEXT_MAX, not NUL-terminated */
	char text[ACQ_TEXT_MAX];
};

/* The BACK and CONNECT events' detail (and acq_link_state.blind_ms) when
   the device's return was not seen: no watch, a timed retry, the first
   connect. */
#define ACQ_BLIND_UNKNOWN UINT32_MAX

/*
 * A raw TRDP telegram (trdp/header.h has the header's layout).  A telegram
 * (up to 1472 bytes of UDP payload, 65504 of MD) does not fit the item, so
 * the item carries the header's fields and points at the bytes: into the
 * TRDP bus's byte ring on the live path (valid until the collector has
 * consumed the item: acquisition/README.md), into the decoded Batch for a
 * reader (valid until rec_batch_free()).  Whoever keeps an item longer
 * copies the bytes (record/order.c does).  Mirrors railmon.proto
 * TrdpTelegrams.
 */
enum {
	ACQ_TRDP_MD = 1u << 0,  /* message data, else process data */
	ACQ_TRDP_TCP = 1u << 1, /* MD over TCP */
};
#define ACQ_TRDP_RESULT_SHIFT 8 /* flags >> 8: the header's enum trdp_header_result */
#define ACQ_TRDP_SESSION_LEN 16

struct acq_trdp {
	uint32_t src_ip, dst_ip;     /* IPv4, host order */
	uint16_t src_port, dst_port;
	uint32_t com_id;
	uint32_t seq;                /* sequenceCounter */
	uint32_t etb_topo, op_trn_topo;
	uint16_t msg_type;           /* 'Pd' 0x5064, ... */
	uint16_t flags;              /* ACQ_TRDP_* | header result << ACQ_TRDP_RESULT_SHIFT */
	uint32_t len;                /* bytes at data: the whole telegram */
	const uint8_t *data;
	uint8_t session_id[ACQ_TRDP_SESSION_LEN]; /* MD only */
};
/* The largest telegram recorded: an MD header and the largest data set. */
#define ACQ_TRDP_LEN_MAX (116u + 65388u)

/*
 * Events.  `source` is the bus index the event belongs to (0xffff for the
 * daemon itself); `arg` and `detail` are event specific and documented
 * beside each code.
 */
enum acq_event_code {
	ACQ_EV_NONE = 0,
	ACQ_EV_START = 1,           /* daemon started; arg = pid */
	ACQ_EV_STOP = 2,            /* clean stop; arg = records written */
	ACQ_EV_RING_OVERRUN = 3,    /* arg = items dropped since last report */
	ACQ_EV_CAN_BUS_OFF = 10,
	ACQ_EV_CAN_ERROR_PASSIVE = 11, /* arg = rx err counter, detail = tx */
	ACQ_EV_CAN_ERROR_WARNING = 12,
	ACQ_EV_CAN_RESTARTED = 13,
	ACQ_EV_CAN_RX_OVERFLOW = 14, /* arg = frames dropped by the kernel */
	ACQ_EV_CAN_ERROR_FRAME = 15, /* arg = CAN_ERR class bits, detail = data[1..4] */
	ACQ_EV_CAN_BAD_LINE = 16,    /* slcan/trace garbage; arg = count */
	ACQ_EV_CAN_ERROR_ACTIVE = 17, /* back to error-active */
	ACQ_EV_CAN_GONE = 18,       /* device gone (unplugged, pty closed, interface
	                               deleted or down, file unreadable); arg = -errno */
	ACQ_EV_CAN_BACK = 19,       /* reopened; arg = attempts, detail = ms blind after
	                               its return: from the sign of it (a watch) to
	                               the reopen, ACQ_BLIND_UNKNOWN if not seen
	                               (how long it was gone: from CAN_GONE's stamp) */
	ACQ_EV_MB_TIMEOUT = 20,     /* arg = register address, detail = unit<<8|fc */
	ACQ_EV_MB_EXCEPTION = 21,   /* arg = register address, detail = unit<<8|exception code */
	ACQ_EV_MB_CRC = 22,         /* arg = register address, detail = unit<<8|fc */
	ACQ_EV_MB_BAD_REPLY = 23,   /* wrong unit id, length, tid; arg = address */
	ACQ_EV_MB_DISCONNECT = 24,  /* arg = -errno */
	ACQ_EV_MB_CONNECT = 25,     /* (re)connected; arg = attempts it took, detail =
	                               ms blind after an RTU tty's return, as
	                               CAN_BACK's (ACQ_BLIND_UNKNOWN if not seen) */
	ACQ_EV_MB_OVERRUN = 26,     /* poll period missed; arg = periods skipped */
	ACQ_EV_MB_LATE_REPLY = 27,  /* RTU reply that came after its response timeout,
	                               recognised and thrown away; arg = ms after its
	                               request, detail = bytes << 16 | unit << 8 | fc */
	ACQ_EV_MB_DISCARDED = 28,   /* RTU bytes that answered no request (noise, cut or
	                               unasked frames), thrown away; arg = bytes,
	                               detail = complete frames among them */
	ACQ_EV_CLOCK_STEP = 30,     /* CLOCK_REALTIME jumped against CLOCK_MONOTONIC;
	                               arg = step in ns (new - old offset), detail = ms
	                               between the two readings it lies within */
	ACQ_EV_LOG_FAULT = 40,      /* arg = -errno */
	ACQ_EV_LOG_DROPPED = 41,    /* records dropped by the log; arg = count,
	                               detail = errno of the refusal (ENOSPC, EIO) */
	ACQ_EV_LOG_RETENTION = 42,  /* arg = records deleted, detail = 1 if never forwarded */
	ACQ_EV_UPLINK_FAULT = 50,   /* arg = -errno, detail = enum upl_fwd_event (1
	                               connect failed, 2 disconnected, 3 ack timeout,
	                               4 cursor reset) */
	ACQ_EV_UPLINK_CONNECT = 51,
	ACQ_EV_CONFIG_RELOAD = 60,  /* arg = new config hash (low 63 bits) */
	ACQ_EV_CONFIG_REFUSED = 61, /* a remote configuration refused; arg = its version (0
	                               unreadable), detail = enum acq_config_why */
	ACQ_EV_CONFIG_ROLLED_BACK = 62, /* arg = version, detail = enum acq_config_why */
	/* J1939 (dbc/j1939.h), bus = the CAN bus: a transport session that
	   ended without its message, arg = kind (enum dbc_j1939_fault_kind) |
	   reason << 8 | expected seq << 16 | packets got << 24 | packets
	   announced << 32 | destination address << 40, detail = PGN |
	   source address << 24 */
	ACQ_EV_J1939_TP_FAULT = 70,
	/* a DM1 trouble code that appeared / cleared: arg = SPN | FMI << 19 |
	   occurrence count << 24 | lamp status (DM1 bytes 0-1) << 32,
	   detail = source address */
	ACQ_EV_J1939_DTC_ACTIVE = 71,
	ACQ_EV_J1939_DTC_CLEARED = 72,
	ACQ_EV_SEAL = 80,           /* a seal Batch's record; arg = records covered, detail = signed */
	ACQ_EV_SEAL_CHAIN_NEW = 81, /* a new seal chain; arg = first seq covered, detail 1:
	                               after records the log lost */
	ACQ_EV_SEAL_UNSIGNED = 82,  /* sealing without a key */
	ACQ_EV_SEAL_KEY_FAULT = 83, /* signing failed; arg = -errno */
	/* holds and the retention window (record/railmon.proto has the args) */
	ACQ_EV_TRIGGER = 85,        /* arg = hold id or -errno, detail = trigger index */
	ACQ_EV_HOLD_ENDED = 86,     /* arg = holds expired */
	ACQ_EV_RETENTION_WINDOW = 87, /* arg = bytes needed, detail = 1 projected, 2 due */
	ACQ_EV_RETENTION_PAST_HELD = 88, /* arg = segments deleted past held ones */
	ACQ_EV_CHANNEL_STALE = 89,  /* detail = channel id, arg = ms since its last value, -1 none */
	ACQ_EV_CHANNEL_FRESH = 90,  /* detail = channel id, arg = ms since the value before */
	ACQ_EV_HOLD_FAULT = 91,     /* arg = -errno, detail = line */
	ACQ_EV_CLOCK_UNSYNCED = 92, /* kernel: CLOCK_REALTIME unsynchronised; arg = max error
	                               in us, detail = timex.status */
	ACQ_EV_CLOCK_SYNCED = 93,   /* synchronised again; arg = est. error in us, detail = status */
	ACQ_EV_TRDP_BAD_HEADER = 100, /* arg = telegrams refused since the last one (at most one a
	                                 second), detail = the last one's trdp_header_result */
	ACQ_EV_TRDP_TOPOLOGY = 101, /* arg = etbTopoCnt << 32 | opTrnTopoCnt, detail = ComId */
	ACQ_EV_TRDP_TIMEOUT = 102,  /* no telegram of a ComId within its timeout (the XML's, else
	                               3 cycles): its channels are stale; stamped at the last
	                               one + the timeout; arg = the timeout in ms, detail = ComId */
	ACQ_EV_TRDP_BACK = 103,     /* its telegrams again; arg = ms since the last one before,
	                               detail = ComId */
	ACQ_EV_CODE_MAX
};

/* Why a remote configuration was refused or rolled back (the CONFIG_
   events' detail; record/railmon.proto says them in words). */
enum acq_config_why {
	ACQ_CONFIG_TOO_LARGE = 1,
	ACQ_CONFIG_MALFORMED = 2,
	ACQ_CONFIG_BAD_SIGNATURE = 3,
	ACQ_CONFIG_OTHER_VEHICLE = 4,
	ACQ_CONFIG_OLD_VERSION = 5,
	ACQ_CONFIG_FAILS_CHECK = 6,
	ACQ_CONFIG_NOT_INSTALLED = 7,
	ACQ_CONFIG_NO_KEY = 8,
	ACQ_CONFIG_NO_MEMORY = 9,
	ACQ_CONFIG_DID_NOT_START = 10,
	ACQ_CONFIG_COLLECTOR_STOPPED = 11,
	ACQ_CONFIG_UNREADABLE = 12,
	ACQ_CONFIG_STOPPED_ON_PROBATION = 13, /* run killed before its probation ended */
};

#define ACQ_SOURCE_DAEMON 0xffffu

struct acq_event {
	uint32_t code;   /* enum acq_event_code */
	uint32_t detail; /* code specific */
	int64_t arg;     /* code specific */
};

struct acq_item {
	int64_t t_ns;   /* CLOCK_REALTIME nanoseconds: kernel RX stamp for CAN,
	                   sampling instant for Modbus */
	uint64_t seq;   /* assigned by the collector; 0 before that */
	uint16_t kind;  /* enum acq_item_kind */
	uint16_t bus;   /* index of the bus in the board file, or ACQ_SOURCE_DAEMON */
	uint32_t reserved;
	union {
		struct acq_can can;
		struct acq_sample sample;
		struct acq_event event;
		struct acq_text text;
		struct acq_trdp trdp;
	};
};

/* A telegram's fields fit beside a CAN frame: the ring's element does not
   grow with TRDP. */
_Static_assert(sizeof(struct acq_trdp) <= sizeof(struct acq_can) + 4, "acq_trdp fits the item's union");
