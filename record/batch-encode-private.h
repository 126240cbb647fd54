/* SPDX-License-Identifier: MIT */
/*
 * batch-encode-private.h - the Batch encoder's state, shared by
 * batch-encode.c (records, finish) and batch-dict.c (the channel
 * dictionary, health entries).  Internal to record/.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "railmon.pb-c.h"
#include "seal.h"

/* Worst case for one record on the wire: 5 varint columns of <= 10 bytes
   plus 64 bytes of CAN FD payload.  Used to size the output buffer. */
#define REC_ITEM_WIRE_MAX (5 * 10 + ACQ_CAN_DATA_MAX)

/*
 * What one record can add to the packed columns, by kind (varints: sint64
 * time delta 10, a uint32 below 2^16 3, any uint32 5, sint64 10, a double
 * 8): CAN t/bus/id/flags(<256: 2)/len(<128: 1) + payload, sample
 * t/channel/value/quality, event t/source/code/arg/detail.
 */
#define WIRE_CAN_MAX (10 + 3 + 5 + 2 + 1)
#define WIRE_SAMPLE_MAX (10 + 5 + 8 + 5)
#define WIRE_EVENT_MAX (10 + 3 + 5 + 10 + 5)
/* a text: t/channel/quality and the string's tag, length and bytes */
#define WIRE_TEXT_MAX (10 + 5 + 5 + 2 + ACQ_TEXT_MAX)
/* a TRDP telegram: t/bus, 2 fixed32 addresses, ports, 7 uint32 columns
   (com_id, seq, topology counters, type, flags, len), the session id; its
   bytes are added by length */
#define WIRE_TRDP_MAX (10 + 3 + 2 * 4 + 5 + 6 * 5 + 3 + ACQ_TRDP_SESSION_LEN)
/* Texts a Batch holds at most: they change seldom (stored on change and
   now and then), and their columns are allocated at creation. */
#define TEXTS_MAX 1024
/* The Batch's own fields (vehicle aside: about 130 bytes) and the
   headers of the five column messages and their 32 packed fields (at
   most 6 bytes each: a one-byte tag and a length): 322 at most. */
#define WIRE_FIXED_MAX 512
/* Records may fill the Batch up to here; the rest is kept for the channel
   dictionary and health entries, so they always find room. */
#define WIRE_RECORDS_MAX (REC_BATCH_MAX_BYTES / 4 * 3)
/* The largest record: the dictionary and health leave room for it, so the
   first record of a Batch, which always goes in, never passes the cap. */
#define WIRE_ITEM_LARGEST (WIRE_CAN_MAX + ACQ_CAN_DATA_MAX)
/* The output buffer never needs more. */
#define WIRE_OUT_MAX (REC_BATCH_MAX_BYTES + 1024)

struct rec_encoder {
	size_t max;
	char *vehicle;
	uint64_t config_hash;
	uint8_t boot_id[REC_BOOT_ID_LEN];
	uint8_t log_id[REC_LOG_ID_LEN];
	bool has_log_id;
	bool historical;
	int64_t t0, t_first, t_last;
	bool has_clock_offset;        /* Batch.mono_t0_ns is written */
	int64_t clock_offset;         /* realtime - monotonic */

	/* Records queued: ncan + nsmp + nev + ntx + ntr, kept by
	   rec_encoder_add so that rec_encoder_count, asked several times per
	   record by the collector, is one load. */
	size_t nrec;
	/* CAN columns */
	size_t ncan;
	int64_t *can_dt;
	uint32_t *can_bus, *can_id, *can_flags, *can_len;
	uint8_t *can_data;
	size_t can_data_len;
	int64_t can_prev;
	/* sample columns */
	size_t nsmp;
	int64_t *smp_dt;
	uint32_t *smp_ch, *smp_q;
	double *smp_val;
	bool smp_any_bad;
	int64_t smp_prev;
	/* event columns */
	size_t nev;
	int64_t *ev_dt, *ev_arg;
	uint32_t *ev_src, *ev_code, *ev_detail;
	int64_t ev_prev;
	/* text columns: each text NUL-terminated in its slot of tx_buf */
	size_t ntx, tx_max;
	int64_t *tx_dt;
	uint32_t *tx_ch, *tx_q;
	char *tx_buf;
	char **tx_ptr;
	bool tx_any_bad;
	int64_t tx_prev;
	/* TRDP telegram columns; the bytes concatenated in tr_data (room for
	   WIRE_RECORDS_MAX and one largest telegram, allocated at creation) */
	size_t ntr;
	int64_t *tr_dt;
	uint32_t *tr_bus, *tr_src, *tr_dst, *tr_ports, *tr_com, *tr_seq, *tr_etb, *tr_optrn,
		*tr_type, *tr_flags, *tr_len;
	uint8_t *tr_data, *tr_session;
	size_t tr_data_len, tr_data_cap, tr_nsession;
	int64_t tr_prev;

	size_t nchannels;
	/* The dictionary's protobuf messages, sized by set_channels(): finish
	   runs on the collector thread, whose stack cannot hold one per
	   channel of a large board (a VLA here crashed at ~4000 channels). */
	Railmon__V1__Channel *ch_msg;
	Railmon__V1__Channel **ch_ptr;
	double (*ch_range)[2];    /* each entry's [min, max], copied at set time */
	size_t ch_cap;
	struct rec_health health[REC_HEALTH_MAX];
	Railmon__V1__Health health_msg[REC_HEALTH_MAX];
	Railmon__V1__Health *health_ptr[REC_HEALTH_MAX];
	size_t nhealth;
	struct rec_seal seal;      /* the next Batch's Seal, if has_seal */
	bool has_seal;

	/* Upper bounds of the packed Batch: fixed fields and records, and
	   what the dictionary and health entries add; kept under
	   REC_BATCH_MAX_BYTES (the log refuses anything larger). */
	size_t wire_records, wire_dict, wire_health;

	uint8_t *out;
	size_t out_size;
};

/* The most bytes the Batch so far can pack into. */
static inline size_t rec_encoder_wire(const rec_encoder_t *e)
{
	return e->wire_records + e->wire_dict + e->wire_health;
}

/* batch-trdp.c: the TRDP telegram columns (railmon.proto TrdpTelegrams) */
int rec_trdp_encoder_alloc(rec_encoder_t *e);
void rec_trdp_encoder_free(rec_encoder_t *e);
size_t rec_trdp_wire_max(const struct acq_item *it);
int rec_trdp_encoder_check(const rec_encoder_t *e, const struct acq_item *it);
int rec_trdp_encoder_add(rec_encoder_t *e, const struct acq_item *it, int64_t dt);
void rec_trdp_encoder_reset(rec_encoder_t *e);
Railmon__V1__TrdpTelegrams *rec_trdp_encoder_msg(rec_encoder_t *e, Railmon__V1__TrdpTelegrams *m);
