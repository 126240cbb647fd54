/* SPDX-License-Identifier: MIT */
/*
 * test-trdp-header - trdp/header.h's contract: the CRC-32 check value,
 * one PD header written byte by byte from the specification, bad
 * arguments, the counters and the names.  The field-by-field comparison
 * with an independent writer is test-trdp-header.py.
 */
#include <errno.h>
#include <string.h>

#include "tlib.h"
#include "trdp/header.h"

/* seq 0x01020304, version 1.0, 'Pd', ComId 1000, etb 5, opTrn 6,
   datasetLength 8, reserved 0, reply ComId 7, reply IP 192.0.2.1, then
   the FCS little-endian (zlib.crc32 of the 36 bytes before it is
   0xea326930). */
static const uint8_t pd_hand[40] = {
	0x01, 0x02, 0x03, 0x04, 0x01, 0x00, 0x50, 0x64, 0x00, 0x00, 0x03, 0xe8,
	0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x08,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x07, 0xc0, 0x00, 0x02, 0x01,
	0x30, 0x69, 0x32, 0xea,
};

static void test_fcs(void)
{
	/* The CRC-32 check value of the catalogue of parametrised CRCs. */
	CHECK(trdp_fcs("123456789", 9) == 0xcbf43926u);
	CHECK(trdp_fcs("", 0) == 0);
	CHECK(trdp_fcs(pd_hand, 36) == 0xea326930u);
}

static void test_hand_header(void)
{
	uint8_t buf[48];
	memcpy(buf, pd_hand, sizeof(pd_hand));
	memset(buf + 40, 0xee, 8);
	struct trdp_header h;
	CHECK(trdp_header_parse(TRDP_KIND_PD, buf, sizeof(buf), &h) == TRDP_HDR_OK);
	CHECK(h.kind == TRDP_KIND_PD);
	CHECK(h.seq == 0x01020304u && h.version == 0x0100 && h.msg_type == TRDP_MSG_PD);
	CHECK(h.com_id == 1000 && h.etb_topo == 5 && h.op_trn_topo == 6 && h.dataset_len == 8);
	CHECK(h.reserved == 0 && h.reply_com_id == 7 && h.reply_ip == 0xc0000201u);
	CHECK(h.fcs == 0xea326930u);
	/* seven bytes of data set where the header says eight */
	CHECK(trdp_header_parse(TRDP_KIND_PD, buf, 47, &h) == TRDP_HDR_TRUNCATED);
	/* the same bytes read as MD are too short for its header */
	CHECK(trdp_header_parse(TRDP_KIND_MD, buf, sizeof(buf), &h) == TRDP_HDR_SHORT);
	/* a refusal by FCS leaves the output alone */
	struct trdp_header keep;
	memset(&keep, 0x77, sizeof(keep));
	buf[39] ^= 0x80;
	CHECK(trdp_header_parse(TRDP_KIND_PD, buf, sizeof(buf), &keep) == TRDP_HDR_BAD_FCS);
	CHECK(keep.seq == 0x77777777u);
}

static void test_bad_args(void)
{
	struct trdp_header h;
	size_t n = 0;
	CHECK(trdp_header_parse(TRDP_KIND_PD, NULL, 40, &h) == -EINVAL);
	CHECK(trdp_header_parse(TRDP_KIND_PD, pd_hand, 40, NULL) == -EINVAL);
	CHECK(trdp_header_parse(TRDP_KIND_MAX, pd_hand, 40, &h) == -EINVAL);
	CHECK(trdp_md_frame_len(NULL, 200, &n, NULL) == -EINVAL);
	CHECK(trdp_md_frame_len(pd_hand, 40, NULL, NULL) == -EINVAL);
	CHECK(trdp_md_frame_len(pd_hand, 40, &n, NULL) == -EAGAIN);
	CHECK(trdp_header_count(NULL, 0) == -EINVAL);
}

static void test_counts_and_names(void)
{
	struct trdp_header_counts c;
	memset(&c, 0, sizeof(c));
	CHECK(trdp_header_count(&c, TRDP_HDR_OK) == 0);
	CHECK(trdp_header_count(&c, TRDP_HDR_BAD_FCS) == 0);
	CHECK(trdp_header_count(&c, TRDP_HDR_BAD_FCS) == 0);
	CHECK(trdp_header_count(&c, TRDP_HDR_RESULT_MAX) == -EINVAL);
	CHECK(trdp_header_count(&c, -1) == -EINVAL);
	CHECK(c.n[TRDP_HDR_OK] == 1 && c.n[TRDP_HDR_BAD_FCS] == 2 && c.n[TRDP_HDR_TRUNCATED] == 0);
	for (int r = 0; r < TRDP_HDR_RESULT_MAX; r++)
		CHECK(strcmp(trdp_header_result_name(r), "?") != 0, "result %d has no name", r);
	CHECK_STR(trdp_header_result_name(TRDP_HDR_TRUNCATED), "truncated");
	CHECK_STR(trdp_header_result_name(TRDP_HDR_RESULT_MAX), "?");
	char b[3];
	CHECK_STR(trdp_msg_type_name(TRDP_MSG_MQ, b), "Mq");
	CHECK_STR(trdp_msg_type_name(0x5000, b), "??");
	CHECK(trdp_msg_kind(TRDP_MSG_PE) == TRDP_KIND_PD && trdp_msg_kind(TRDP_MSG_MC) == TRDP_KIND_MD);
	CHECK(trdp_msg_kind(0x4d6d) == -EINVAL);
}

int main(void)
{
	test_fcs();
	test_hand_header();
	test_bad_args();
	test_counts_and_names();
	printf("trdp-header: ok\n");
	return 0;
}
