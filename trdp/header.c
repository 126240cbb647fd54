/* SPDX-License-Identifier: MIT */
/*
 * header.c - TRDP PD and MD headers: parse, validate, frame MD in a TCP
 * stream.  Offsets and checks from IEC 61375-2-3 as the TCNopen stack
 * lays them out (PD_HEADER_T, MD_HEADER_T, trdp_pdCheck, trdp_mdCheck).
 */
#include "trdp/header.h"

#include <errno.h>
#include <string.h>

#include "basic/byteorder.h"
#include "basic/crc-slice8.h"
#include "fcs-table.h"

/* Byte offsets of the fields both kinds share. */
enum {
	OFF_SEQ = 0,
	OFF_VERSION = 4,
	OFF_TYPE = 6,
	OFF_COMID = 8,
	OFF_ETB = 12,
	OFF_OPTRN = 16,
	OFF_DSLEN = 20,
	/* PD */
	OFF_PD_RESERVED = 24,
	OFF_PD_REPLY_COMID = 28,
	OFF_PD_REPLY_IP = 32,
	/* MD */
	OFF_MD_STATUS = 24,
	OFF_MD_SESSION = 28,
	OFF_MD_TIMEOUT = 44,
	OFF_MD_SRC_URI = 48,
	OFF_MD_DST_URI = 80,
};

uint32_t trdp_fcs(const void *buf, size_t len)
{
	/* The FCS is the CRC-32 of IEEE 802.3 / zlib: reflected polynomial
	   0xedb88320, initial value and final xor 0xffffffff (check value
	   0xcbf43926).  Slicing by 8 over generated constant tables
	   (fcs-table.h, made by basic/gen-crc-table.py; the loop is
	   basic/crc-slice8.h's): a 36-byte PD header in 4 steps of 8 bytes
	   and 4 single ones.  The nibble loop before it took
	   5-6% of railmon run's CPU at 20,000 telegrams/s, and zlib's
	   crc32_z, byte by byte below 47 bytes, was about half as fast as
	   this on a PD header (docs/figures.md).  Little-endian loads by
	   bytes: no unaligned access on armhf.  RT-safe. */
	return ~basic_crc32_slice8(trdp_fcs_table, 0xffffffffu, buf, len);
}

int trdp_msg_kind(uint16_t msg_type)
{
	switch (msg_type) {
	case TRDP_MSG_PD:
	case TRDP_MSG_PP:
	case TRDP_MSG_PR:
	case TRDP_MSG_PE:
		return TRDP_KIND_PD;
	case TRDP_MSG_MN:
	case TRDP_MSG_MR:
	case TRDP_MSG_MP:
	case TRDP_MSG_MQ:
	case TRDP_MSG_MC:
	case TRDP_MSG_ME:
		return TRDP_KIND_MD;
	default:
		return -EINVAL;
	}
}

static void fill_header(enum trdp_kind kind, const uint8_t *p, struct trdp_header *h)
{
	memset(h, 0, sizeof(*h));
	h->kind = (uint8_t)kind;
	h->seq = basic_get_be32(p + OFF_SEQ);
	h->version = basic_get_be16(p + OFF_VERSION);
	h->msg_type = basic_get_be16(p + OFF_TYPE);
	h->com_id = basic_get_be32(p + OFF_COMID);
	h->etb_topo = basic_get_be32(p + OFF_ETB);
	h->op_trn_topo = basic_get_be32(p + OFF_OPTRN);
	h->dataset_len = basic_get_be32(p + OFF_DSLEN);
	if (kind == TRDP_KIND_PD) {
		h->reserved = basic_get_be32(p + OFF_PD_RESERVED);
		h->reply_com_id = basic_get_be32(p + OFF_PD_REPLY_COMID);
		h->reply_ip = basic_get_be32(p + OFF_PD_REPLY_IP);
		h->fcs = basic_get_le32(p + TRDP_PD_HEADER_SIZE - 4);
	} else {
		h->reply_status = (int32_t)basic_get_be32(p + OFF_MD_STATUS);
		memcpy(h->session_id, p + OFF_MD_SESSION, TRDP_SESSION_ID_SIZE);
		h->reply_timeout_us = basic_get_be32(p + OFF_MD_TIMEOUT);
		memcpy(h->source_uri, p + OFF_MD_SRC_URI, TRDP_URI_SIZE);
		memcpy(h->dest_uri, p + OFF_MD_DST_URI, TRDP_URI_SIZE);
		h->fcs = basic_get_le32(p + TRDP_MD_HEADER_SIZE - 4);
	}
}

int trdp_header_parse(enum trdp_kind kind, const void *buf, size_t len, struct trdp_header *ret_hdr)
{
	if (!buf || !ret_hdr || (kind != TRDP_KIND_PD && kind != TRDP_KIND_MD))
		return -EINVAL;
	const uint8_t *p = buf;
	size_t hlen = kind == TRDP_KIND_PD ? TRDP_PD_HEADER_SIZE : TRDP_MD_HEADER_SIZE;
	uint32_t max = kind == TRDP_KIND_PD ? TRDP_PD_DATA_MAX : TRDP_MD_DATA_MAX;

	if (len < hlen)
		return TRDP_HDR_SHORT;
	/* The FCS first, as the stack does: a header with a wrong FCS says
	   nothing trustworthy, not even its ComId. */
	if (trdp_fcs(p, hlen - 4) != basic_get_le32(p + hlen - 4))
		return TRDP_HDR_BAD_FCS;
	struct trdp_header h;
	fill_header(kind, p, &h);
	int result = TRDP_HDR_OK;
	if ((h.version & 0xff00u) != (TRDP_PROTO_VERSION & 0xff00u))
		result = TRDP_HDR_BAD_VERSION;
	else if (trdp_msg_kind(h.msg_type) != (int)kind)
		result = TRDP_HDR_BAD_TYPE;
	else if (h.dataset_len > max)
		result = TRDP_HDR_TOO_LONG;
	/* Bytes past datasetLength are padding to 4 (stale bytes allowed);
	   fewer than datasetLength means the data set was cut. */
	else if (h.dataset_len > len - hlen)
		result = TRDP_HDR_TRUNCATED;
	*ret_hdr = h;
	return result;
}

int trdp_pd_header_write(const struct trdp_header *h, void *buf, size_t len)
{
	if (!h || !buf)
		return -EINVAL;
	if (len < TRDP_PD_HEADER_SIZE)
		return -ENOSPC;
	uint8_t *p = buf;

	basic_put_be32(p + OFF_SEQ, h->seq);
	basic_put_be16(p + OFF_VERSION, h->version);
	basic_put_be16(p + OFF_TYPE, h->msg_type);
	basic_put_be32(p + OFF_COMID, h->com_id);
	basic_put_be32(p + OFF_ETB, h->etb_topo);
	basic_put_be32(p + OFF_OPTRN, h->op_trn_topo);
	basic_put_be32(p + OFF_DSLEN, h->dataset_len);
	basic_put_be32(p + OFF_PD_RESERVED, h->reserved);
	basic_put_be32(p + OFF_PD_REPLY_COMID, h->reply_com_id);
	basic_put_be32(p + OFF_PD_REPLY_IP, h->reply_ip);
	basic_put_le32(p + TRDP_PD_HEADER_SIZE - 4, trdp_fcs(p, TRDP_PD_HEADER_SIZE - 4));
	return (int)TRDP_PD_HEADER_SIZE;
}

int trdp_md_frame_len(const void *buf, size_t avail, size_t *ret_len, int *ret_result)
{
	if (!buf || !ret_len)
		return -EINVAL;
	if (avail < TRDP_MD_HEADER_SIZE)
		return -EAGAIN;
	struct trdp_header h;
	/* Validate the header alone: the data set is not in the buffer yet. */
	int r = trdp_header_parse(TRDP_KIND_MD, buf, TRDP_MD_HEADER_SIZE, &h);
	if (r == TRDP_HDR_TRUNCATED)
		r = TRDP_HDR_OK;
	if (r < 0)
		return r;
	if (r != TRDP_HDR_OK) {
		if (ret_result)
			*ret_result = r;
		return -EBADMSG;
	}
	size_t n = TRDP_MD_HEADER_SIZE + (size_t)h.dataset_len;
	*ret_len = (n + 3u) & ~(size_t)3u;
	if (ret_result)
		*ret_result = TRDP_HDR_OK;
	return 0;
}

int trdp_header_count(struct trdp_header_counts *c, int result)
{
	if (!c || result < 0 || result >= TRDP_HDR_RESULT_MAX)
		return -EINVAL;
	c->n[result]++;
	return 0;
}

const char *trdp_header_result_name(int result)
{
	static const char *const names[TRDP_HDR_RESULT_MAX] = {
		[TRDP_HDR_OK] = "ok",
		[TRDP_HDR_SHORT] = "short",
		[TRDP_HDR_BAD_FCS] = "bad-fcs",
		[TRDP_HDR_BAD_VERSION] = "bad-version",
		[TRDP_HDR_BAD_TYPE] = "bad-type",
		[TRDP_HDR_TOO_LONG] = "too-long",
		[TRDP_HDR_TRUNCATED] = "truncated",
	};
	if (result < 0 || result >= TRDP_HDR_RESULT_MAX)
		return "?";
	return names[result];
}

static int is_letter(unsigned c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

const char *trdp_msg_type_name(uint16_t msg_type, char buf[static 3])
{
	unsigned a = msg_type >> 8, b = msg_type & 0xffu;
	if (is_letter(a) && is_letter(b)) {
		buf[0] = (char)a;
		buf[1] = (char)b;
	} else {
		buf[0] = buf[1] = '?';
	}
	buf[2] = 0;
	return buf;
}

int trdp_telegram_fill(enum trdp_kind kind, const void *buf, size_t len, struct acq_trdp *ret_t)
{
	struct trdp_header h;

	if (!buf || !ret_t)
		return -EINVAL;
	int r = trdp_header_parse(kind, buf, len, &h);
	if (r < 0)
		return r;
	struct acq_trdp *t = ret_t;
	t->com_id = t->seq = t->etb_topo = t->op_trn_topo = 0;
	t->msg_type = 0;
	memset(t->session_id, 0, sizeof(t->session_id));
	/* a short header or a wrong FCS: no field is to be trusted */
	if (r != TRDP_HDR_SHORT && r != TRDP_HDR_BAD_FCS) {
		t->com_id = h.com_id;
		t->seq = h.seq;
		t->etb_topo = h.etb_topo;
		t->op_trn_topo = h.op_trn_topo;
		t->msg_type = h.msg_type;
		if (kind == TRDP_KIND_MD)
			memcpy(t->session_id, h.session_id, sizeof(t->session_id));
	}
	t->flags = (uint16_t)((t->flags & ACQ_TRDP_TCP) | (kind == TRDP_KIND_MD ? ACQ_TRDP_MD : 0) |
	                      (unsigned)r << ACQ_TRDP_RESULT_SHIFT);
	t->data = buf;
	t->len = (uint32_t)(len < ACQ_TRDP_LEN_MAX ? len : ACQ_TRDP_LEN_MAX);
	return r;
}
