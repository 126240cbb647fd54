/* SPDX-License-Identifier: MIT */
/*
 * header.h - the TRDP telegram headers (IEC 61375-2-3): process data (PD,
 * 40 bytes) and message data (MD, 116 bytes), parsed and validated.
 *
 * Every field is big-endian on the wire except the header's frame check
 * sequence: a CRC-32 (the IEEE/zlib polynomial, init and final xor
 * 0xffffffff) over the header bytes before it, stored little-endian.  The
 * checks and their order follow the TCNopen reference stack's
 * trdp_pdCheck() and trdp_mdCheck(): size, FCS, protocol version (major
 * byte 1), message type, dataset length against the maximum; we add the
 * dataset length against the bytes received, which the stack checks for MD
 * only, because a PD telegram whose data set is cut must not be decoded.
 * A telegram that fails is never decoded; the reason is counted
 * (struct trdp_header_counts) so what is refused is said.
 *
 * Plain functions on caller buffers: no allocation, no state, RT-safe.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"

#define TRDP_PD_HEADER_SIZE 40u
#define TRDP_MD_HEADER_SIZE 116u
#define TRDP_PD_DATA_MAX 1432u  /* the stack's TRDP_MAX_PD_DATA_SIZE */
#define TRDP_MD_DATA_MAX 65388u /* the stack's TRDP_MAX_MD_DATA_SIZE */
#define TRDP_PROTO_VERSION 0x0100u /* major 1, minor 0; only the major byte is checked */
#define TRDP_SESSION_ID_SIZE 16u
#define TRDP_URI_SIZE 32u
#define TRDP_PD_PORT 17224u
#define TRDP_MD_PORT 17225u

/* Message types: two ASCII letters, big-endian on the wire. */
enum trdp_msg_type {
	TRDP_MSG_PD = 0x5064, /* 'Pd' process data */
	TRDP_MSG_PP = 0x5070, /* 'Pp' process data, reply to a pull request */
	TRDP_MSG_PR = 0x5072, /* 'Pr' process data request (pull) */
	TRDP_MSG_PE = 0x5065, /* 'Pe' process data error */
	TRDP_MSG_MN = 0x4d6e, /* 'Mn' notification (no reply) */
	TRDP_MSG_MR = 0x4d72, /* 'Mr' request with reply */
	TRDP_MSG_MP = 0x4d70, /* 'Mp' reply without confirmation */
	TRDP_MSG_MQ = 0x4d71, /* 'Mq' reply with confirmation */
	TRDP_MSG_MC = 0x4d63, /* 'Mc' confirm */
	TRDP_MSG_ME = 0x4d65, /* 'Me' error */
};

/* Why a header was refused.  TRDP_HDR_OK is 0, the rest count refusals;
   the names (trdp_header_result_name()) are what events and stat rows say. */
enum trdp_header_result {
	TRDP_HDR_OK = 0,
	TRDP_HDR_SHORT,       /* fewer bytes than the header */
	TRDP_HDR_BAD_FCS,     /* header CRC does not match */
	TRDP_HDR_BAD_VERSION, /* protocol version's major byte is not 1 */
	TRDP_HDR_BAD_TYPE,    /* not a message type of this kind (PD or MD) */
	TRDP_HDR_TOO_LONG,    /* datasetLength over the kind's maximum */
	TRDP_HDR_TRUNCATED,   /* datasetLength over the bytes after the header */
	TRDP_HDR_RESULT_MAX
};

enum trdp_kind {
	TRDP_KIND_PD = 0,
	TRDP_KIND_MD = 1,
	TRDP_KIND_MAX
};

/* A parsed header in host order.  The PD-only and MD-only fields are zero
   for the other kind.  The URIs are the 32 bytes as sent (NUL-padded, not
   necessarily NUL-terminated). */
struct trdp_header {
	uint8_t kind; /* enum trdp_kind */
	uint32_t seq;
	uint16_t version;
	uint16_t msg_type; /* enum trdp_msg_type */
	uint32_t com_id;
	uint32_t etb_topo;
	uint32_t op_trn_topo;
	uint32_t dataset_len;
	/* PD */
	uint32_t reserved;
	uint32_t reply_com_id;
	uint32_t reply_ip; /* host order */
	/* MD */
	int32_t reply_status;
	uint32_t reply_timeout_us;
	uint8_t session_id[TRDP_SESSION_ID_SIZE];
	uint8_t source_uri[TRDP_URI_SIZE];
	uint8_t dest_uri[TRDP_URI_SIZE];
	uint32_t fcs; /* as stored (the value of the little-endian bytes) */
};

/* Per-reason counters of one receiver (n[TRDP_HDR_OK] counts the good). */
struct trdp_header_counts {
	uint64_t n[TRDP_HDR_RESULT_MAX];
};

/* CRC-32 as the header's FCS computes it (zlib's crc32(0, buf, len)).
   RT-safe. */
uint32_t trdp_fcs(const void *buf, size_t len);

/*
 * Parse and validate the header of a telegram of kind `kind` in buf[0..len)
 * (a whole UDP payload, or the start of an MD message in a TCP stream).
 * Returns enum trdp_header_result (>= 0); on TRDP_HDR_OK and on every
 * refusal after the FCS (so an event can name the ComId of a bad version
 * or type) *ret_hdr is filled, otherwise left alone.  -EINVAL for NULL
 * arguments or an unknown kind.  RT-safe.
 */
int trdp_header_parse(enum trdp_kind kind, const void *buf, size_t len, struct trdp_header *ret_hdr);

/* The kind a message type belongs to, or -EINVAL if it is neither. */
int trdp_msg_kind(uint16_t msg_type);

/*
 * Framing of MD over TCP: the length of the message that starts at
 * buf[0..avail), header and data set padded to a multiple of 4 (the
 * stack's trdp_packetSizeMD()), into *ret_len.  Returns 0; -EAGAIN when
 * fewer than TRDP_MD_HEADER_SIZE bytes are there yet; -EBADMSG when the
 * header is invalid (the stream cannot be framed any more: close it), with
 * the reason in *ret_result when ret_result is not NULL; -EINVAL for NULL.
 */
int trdp_md_frame_len(const void *buf, size_t avail, size_t *ret_len, int *ret_result);

/*
 * Write a PD header into buf[0..TRDP_PD_HEADER_SIZE) from h's shared and
 * PD fields (seq, version, msg_type, com_id, the topology counters,
 * dataset_len, reserved, reply_com_id, reply_ip; kind, fcs and the MD
 * fields are not read), big-endian, and the FCS over the 36 bytes before
 * it, little-endian: the one writer the demo's publisher and the tests'
 * senders share, so a header that trdp_header_parse() accepts is made in
 * one place.  Returns TRDP_PD_HEADER_SIZE; -EINVAL for NULL, -ENOSPC when
 * len is under TRDP_PD_HEADER_SIZE (nothing written).  RT-safe.
 */
int trdp_pd_header_write(const struct trdp_header *h, void *buf, size_t len);

/* Count one result into c.  Returns 0; -EINVAL for NULL or a result out
   of range (not counted).  RT-safe. */
int trdp_header_count(struct trdp_header_counts *c, int result);

/* "ok", "short", "bad-fcs", "bad-version", "bad-type", "too-long",
   "truncated"; "?" out of range.  Static strings. */
const char *trdp_header_result_name(int result);

/* "Pd", "Mn", ...: the two letters; "??" when not printable ASCII letters.
   buf gets 3 bytes (NUL-terminated); returns buf. */
const char *trdp_msg_type_name(uint16_t msg_type, char buf[static 3]);

/*
 * A received telegram as the record of its raw bytes (struct acq_trdp):
 * the header parsed and validated as trdp_header_parse() does, its fields
 * (0 when the FCS was wrong or the bytes too short), the kind and the
 * result in flags, data = buf and len (capped at ACQ_TRDP_LEN_MAX; the
 * addresses and ports are the caller's).  Returns the enum
 * trdp_header_result, -EINVAL for NULL or an unknown kind.  RT-safe; buf
 * must outlive the record.
 */
int trdp_telegram_fill(enum trdp_kind kind, const void *buf, size_t len, struct acq_trdp *ret_t);
