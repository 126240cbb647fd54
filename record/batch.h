/* SPDX-License-Identifier: MIT */
/*
 * batch.h - encode acq_items into a railmon.v1.Batch and decode them back.
 *
 * The encoder is used by the collector thread (normal priority): it
 * allocates its column arrays once at creation for max_items, then
 * add/finish never allocate.  The decoder is used by every reader (export,
 * replay, recv) and validates everything a Batch claims before exposing it:
 * column lengths, payload lengths, sequence ranges.  A malformed buffer is
 * -EBADMSG, never a crash.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"

#define REC_SCHEMA_VERSION 1
#define REC_BOOT_ID_LEN 16
/* The encoder never makes a larger Batch: the log stores records of at
   most 1 MiB (storage/DESIGN.md). */
#define REC_BATCH_MAX_BYTES (1u << 20)
#define REC_LOG_ID_LEN 16

struct rec_batch_meta {
	const char *vehicle;               /* copied */
	uint64_t config_hash;
	uint8_t boot_id[REC_BOOT_ID_LEN];
	uint8_t log_id[REC_LOG_ID_LEN];    /* the log's id (stor_log_id()); all zero = none,
	                                      then the field is left out */
	bool historical;
};

/* One entry of the channel dictionary. */
struct rec_channel {
	uint32_t id;
	const char *name;
	const char *unit;
	uint32_t bus;
	const char *source;
	bool has_range;                  /* min and max are declared */
	double min, max;
	const char *const *value_table;  /* nvalue_table "VALUE LABEL" strings */
	size_t nvalue_table;
	const char *bus_name;            /* NULL or "": not given */
	bool has_decimals;               /* the values' resolution is known: */
	uint32_t decimals;               /* rec_format_decimals() of scale, offset */
};

#define REC_HEALTH_BUCKETS 24 /* log2 latency buckets: [0,1) us, then [2^(k-1), 2^k) us */
#define REC_HEALTH_MAX 32     /* health entries one Batch carries */

/* One Health entry (see railmon.proto for the meaning of each field). */
struct rec_health {
	char name[32];
	char kind[16];
	uint32_t bus;
	uint64_t items, drops, errors, overruns, rx_dropped, bad_input, backlog;
	uint64_t latency_count, latency_max_ns;
	uint32_t latency_p50_us, latency_p99_us, latency_p999_us;
	uint64_t latency_us_buckets[REC_HEALTH_BUCKETS];
	uint32_t ring_fill_pct;
	double rate_hz;
	char state[12];       /* bus device: "up", "gone", "reopening"; "" otherwise */
	uint64_t reopens;     /* bus device: times it came back after going away */
	uint32_t blind_ms;    /* bus device: ms it went unheard after its last
	                         return (from the sign of it to the reopen);
	                         UINT32_MAX: not seen, never gone (on the wire
	                         blind_ms_plus1, 0 for that) */
	uint32_t window_alarm; /* log: enum stor_window_alarm (0 kept, 1 projected, 2 due) */
	uint64_t window_s;    /* log: age of the oldest record kept, seconds */
	/* the "clock" entry: the kernel's sync state (adjtimex), docs/time.md */
	bool clock_unsynced;
	uint64_t clock_max_error_us, clock_est_error_us;
	uint32_t clock_status;  /* timex.status bits */
	/* Modbus: request -> reply, log2 buckets like latency's */
	uint64_t transaction_us_buckets[REC_HEALTH_BUCKETS];
	uint32_t transaction_p99_us;
	uint64_t transaction_max_ns;
	/* a TRDP bus: sequence counters and topology (railmon.proto) */
	uint64_t trdp_seq_gaps, trdp_seq_repeats, trdp_seq_back, trdp_topology_changes;
	/* the rest of a TRDP bus's counters since the daemon started (railmon.proto
	   says each): received, refused by reason, MD over TCP, decoded */
	uint64_t trdp_telegrams, trdp_bytes;
	double trdp_telegrams_hz;
	uint64_t trdp_bad_short, trdp_bad_fcs, trdp_bad_version, trdp_bad_type, trdp_bad_too_long,
		trdp_bad_truncated;
	uint64_t trdp_byte_ring_drops, trdp_untracked, trdp_timeouts, trdp_backs;
	uint64_t trdp_tcp_accepted, trdp_tcp_refused, trdp_tcp_closed, trdp_tcp_bad_header, trdp_tcp_cut,
		trdp_tcp_messages;
	uint32_t trdp_tcp_listen_errno; /* errno of the TCP listener's last open, 0 listening */
	uint32_t trdp_opts_refused;     /* BUS_TRDP_NO_* (bus/bus.h): options the kernel refused */
	uint32_t trdp_receive;          /* enum bus_trdp_receive: what rx_dropped counts; 0 not said */
	uint64_t trdp_decoded, trdp_unknown_comid, trdp_short_payload, trdp_past_channels;
	uint64_t trdp_capture_unmatched; /* a capture into several buses: addressed to none */
};

typedef struct rec_encoder rec_encoder_t;

/* Allocate an encoder for up to max_items records per Batch (fewer when
   that many would pass REC_BATCH_MAX_BYTES).  0 or -errno. */
int rec_encoder_new(const struct rec_batch_meta *meta, size_t max_items, rec_encoder_t **ret_enc);
rec_encoder_t *rec_encoder_free(rec_encoder_t *enc);

/*
 * Queue one record.  Returns 0, -ENOBUFS when the batch is full (finish it
 * and add again): max_items records, or as many bytes as a Batch may take
 * (REC_BATCH_MAX_BYTES, a quarter of it kept for the dictionary and
 * health, or a Batch's 1,024 texts); -EINVAL for a bad item (unknown kind, len > 64,
 * a text byte that is not printable ASCII).  The first
 * record of a Batch always goes in.
 */
int rec_encoder_add(rec_encoder_t *enc, const struct acq_item *item);

/*
 * Add the channel dictionary to the next Batch, or as much of it as fits
 * (a large board's dictionary is over REC_BATCH_MAX_BYTES by itself):
 * entries channels[0..k) go in, the caller passes the rest to a later
 * Batch.  A second call before finish replaces the first.  Strings (the
 * value table's array too) are referenced, not copied: they must live
 * until rec_encoder_finish(); the
 * array itself may go once this returns.  The encoder's room for the
 * dictionary grows here, never in finish: call it once at set-up with the
 * whole dictionary, and later calls of at most that size do not allocate.
 * Returns k (0 when the Batch is full of records: try the next one),
 * -EINVAL, -ENOMEM, or -EMSGSIZE when channels[0] alone is too large for
 * any Batch.
 */
int rec_encoder_set_channels(rec_encoder_t *enc, const struct rec_channel *channels, size_t n);

/* Add a health entry to the next Batch (copied).  -ENOBUFS past
   REC_HEALTH_MAX or REC_BATCH_MAX_BYTES.  Health entries are not numbered
   records. */
int rec_encoder_add_health(rec_encoder_t *enc, const struct rec_health *h);

/* The writer's CLOCK_REALTIME - CLOCK_MONOTONIC offset for the records
   queued from now on: the Batches finished after this carry their
   monotonic base (Batch.mono_t0_ns = t0_ns - offset, docs/time.md) until
   rec_encoder_clear_clock_offset.  Kept across finish. */
void rec_encoder_set_clock_offset(rec_encoder_t *enc, int64_t offset_ns);
void rec_encoder_clear_clock_offset(rec_encoder_t *enc);

/* Records queued so far. */
size_t rec_encoder_count(const rec_encoder_t *enc);

/* The most bytes the queued Batch can pack into (an upper bound: what
   finish would give, or more). */
size_t rec_encoder_wire_max(const rec_encoder_t *enc);

/* Time span of the queued records (0,0 if none). */
void rec_encoder_span(const rec_encoder_t *enc, int64_t *ret_first_ns, int64_t *ret_last_ns);

/*
 * Encode the queued records as one Batch numbered from first_seq (records
 * are numbered can frames first, then samples, then events, then texts), and reset.
 * *ret_buf points into the encoder and stays valid until the next call.
 * Returns the number of records encoded (>= 0) or -errno.
 */
int rec_encoder_finish(rec_encoder_t *enc, uint64_t first_seq, const uint8_t **ret_buf, size_t *ret_len);

/* The same Batch, packed into dst (cap bytes) instead of the encoder's
   buffer, so a caller that hands the bytes on (the sink: to the evidence
   hasher's ring) need not copy them.  cap = rec_encoder_wire_max() is
   enough; -ENOBUFS, and nothing reset, when the Batch needs more. */
int rec_encoder_finish_to(rec_encoder_t *enc, uint64_t first_seq, uint8_t *dst, size_t cap, size_t *ret_len);

typedef struct rec_batch rec_batch_t;

struct rec_batch_info {
	uint32_t schema_version;
	uint64_t first_seq;
	uint32_t count;          /* records: covers [first_seq, first_seq + count) */
	const char *vehicle;
	uint64_t config_hash;
	const uint8_t *boot_id;  /* boot_id_len bytes */
	size_t boot_id_len;
	const uint8_t *log_id;   /* log_id_len bytes: REC_LOG_ID_LEN, or 0 from a sender
	                            without log ids (then log_id may be NULL) */
	size_t log_id_len;
	int64_t t0_ns;
	int64_t mono_t0_ns;      /* CLOCK_MONOTONIC at t0_ns; 0: not known */
	bool historical;
	bool reduced;            /* the uplink's reduced stream: count records of the
	                            log's [first_seq, end_seq), not contiguous */
	uint64_t end_seq;        /* the seq range covered ends here: first_seq + count,
	                            or a reduced Batch's source_end_seq */
	size_t nchannels;        /* dictionary entries carried */
	size_t nhealth;          /* health entries carried */
};

/* Decode and validate (a log_id other than 0 or REC_LOG_ID_LEN bytes is
   malformed).  Returns 0, -EBADMSG (malformed), -EINVAL, -ENOMEM. */
int rec_batch_decode(const void *buf, size_t len, rec_batch_t **ret_batch);
rec_batch_t *rec_batch_free(rec_batch_t *b);

int rec_batch_info(const rec_batch_t *b, struct rec_batch_info *ret_info);

/* Whether an encoded Batch holds the top-level field (record/railmon.proto)
   and, a varint one, its value into *value: 1, 0, or -1 when the fields do
   not walk (the decode will say why); for export's pass over Batches
   outside --from/--to (field 11, a dictionary) and an answers log's whole
   Batches (field 18, reduced: report/answers.c).  Only the top-level fields are
   walked, their contents jumped over: a few dozen bytes read whatever the
   Batch's size. */
int rec_batch_field(const void *payload, size_t len, unsigned field, uint64_t *value);

/* Record i (0 <= i < count) as an acq_item with seq = first_seq + i (a
   reduced Batch: the seq its seq_delta gives). */
int rec_batch_item(const rec_batch_t *b, size_t i, struct acq_item *ret_item);

/* The seq of record i: first_seq + i, or a reduced Batch's own (0 past
   the records). */
uint64_t rec_batch_seq(const rec_batch_t *b, size_t i);

/*
 * The fields that make an encoded Batch (bytes rec_encoder_finish() gave,
 * numbered from first_seq) a reduced one: appended to it, they are merged
 * by every protobuf parser.  seqs[0..n) are the records' seqs in record
 * order (strictly increasing, the first >= first_seq), end_seq the end of
 * the log range [first_seq, end_seq) they were kept from.  Written into
 * buf (cap bytes; REC_REDUCED_TAIL_MAX(n) is always enough).  Returns the
 * bytes written, -EINVAL (seqs not inside the range or not increasing) or
 * -ENOBUFS.
 */
#define REC_REDUCED_TAIL_MAX(n) (3 + 2 + 10 + 2 + 10 + (size_t)(n) * 10)
int rec_reduced_tail(uint64_t first_seq, uint64_t end_seq, const uint64_t *seqs, size_t n, uint8_t *buf,
                     size_t cap);
/*
 * A reduced Batch of no record still needs a time: the encoder writes no
 * t0_ns without a record, so the source's t0_ns is appended after the
 * tail (field 6; a parser keeps a field's last occurrence), which lets
 * the ground place the range on its day (ledger_days, the ground log's
 * frame).  Writes at most REC_REDUCED_T0_MAX bytes; returns the bytes
 * written, -EINVAL or -ENOBUFS.
 */
#define REC_REDUCED_T0_MAX 11
int rec_reduced_t0(int64_t t0_ns, uint8_t *buf, size_t cap);

/* Dictionary entry i; strings live as long as the batch. */
int rec_batch_channel(const rec_batch_t *b, size_t i, struct rec_channel *ret_channel);

/* Health entry i; the name and kind are truncated to fit. */
int rec_batch_health(const rec_batch_t *b, size_t i, struct rec_health *ret_health);

