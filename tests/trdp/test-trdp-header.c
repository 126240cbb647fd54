/* SPDX-License-Identifier: MIT */
/*
 * test-trdp-header - trdp/header.h's contract: the CRC-32 check value,
 * one PD header written byte by byte from the specification (parsed,
 * and what trdp_pd_header_write() writes compared with it), bad
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

/* The nibble-table CRC-32 trdp_fcs() was until it became zlib's crc32_z,
   kept here as the reference: the FCS on the wire must not change.  Its
   16 entries are the polynomial's, computed below, not copied. */
static uint32_t fcs_nibble(const uint8_t *p, size_t len)
{
	uint32_t tab[16];
	for (uint32_t i = 0; i < 16; i++) {
		uint32_t c = i;
		for (int k = 0; k < 4; k++)
			c = (c & 1u) ? (c >> 1) ^ 0xedb88320u : c >> 1;
		tab[i] = c;
	}
	uint32_t crc = 0xffffffffu;
	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ tab[crc & 15u];
		crc = (crc >> 4) ^ tab[crc & 15u];
	}
	return ~crc;
}

/* Random buffers of every length 0..300 at every start alignment 0..7
   (a table-driven CRC reads words at a time: its head and tail and the
   switch between byte and word loops are where it goes wrong). */
static void test_fcs_random(void)
{
	static uint8_t buf[300 + 8];
	uint64_t x = 0x9e3779b97f4a7c15u; /* xorshift64, fixed seed: reproducible */
	unsigned n = 0;

	/* the reference against the check value first, so a broken reference
	   cannot agree with a broken trdp_fcs */
	CHECK(fcs_nibble((const uint8_t *)"123456789", 9) == 0xcbf43926u);
	for (size_t len = 0; len <= 300; len++) {
		for (size_t off = 0; off < 8; off++) {
			for (size_t i = 0; i < sizeof(buf); i++) {
				x ^= x << 13;
				x ^= x >> 7;
				x ^= x << 17;
				buf[i] = (uint8_t)x;
			}
			uint32_t want = fcs_nibble(buf + off, len), got = trdp_fcs(buf + off, len);
			CHECK(got == want, "len %zu off %zu: 0x%08x, nibble 0x%08x", len, off, got, want);
			n++;
		}
	}
	CHECK(n == 301 * 8);
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

/* The writer against the hand-written bytes (the independent side), and
   the parser reading what the writer wrote back to the same fields. */
static void test_pd_write(void)
{
	const struct trdp_header in = {
		.kind = TRDP_KIND_MD, /* not read: a PD header is written whatever kind says */
		.seq = 0x01020304u, .version = TRDP_PROTO_VERSION, .msg_type = TRDP_MSG_PD, .com_id = 1000,
		.etb_topo = 5, .op_trn_topo = 6, .dataset_len = 8, .reserved = 0, .reply_com_id = 7,
		.reply_ip = 0xc0000201u, .reply_status = -1, .fcs = 0xdeadbeefu,
	};
	uint8_t buf[TRDP_PD_HEADER_SIZE + 8];
	struct trdp_header back;

	memset(buf, 0xaa, sizeof(buf));
	CHECK(trdp_pd_header_write(&in, buf, sizeof(buf)) == (int)TRDP_PD_HEADER_SIZE);
	for (size_t i = 0; i < sizeof(pd_hand); i++)
		CHECK(buf[i] == pd_hand[i], "byte %zu: wrote 0x%02x, spec 0x%02x", i, buf[i], pd_hand[i]);
	/* not a byte past the header */
	CHECK(buf[TRDP_PD_HEADER_SIZE] == 0xaa && buf[sizeof(buf) - 1] == 0xaa);
	CHECK(trdp_header_parse(TRDP_KIND_PD, buf, sizeof(buf), &back) == TRDP_HDR_OK);
	CHECK(back.seq == in.seq && back.version == in.version && back.msg_type == in.msg_type);
	CHECK(back.com_id == in.com_id && back.etb_topo == in.etb_topo && back.op_trn_topo == in.op_trn_topo);
	CHECK(back.dataset_len == in.dataset_len && back.reply_com_id == in.reply_com_id && back.reply_ip == in.reply_ip);
	CHECK(back.fcs == 0xea326930u);
	/* every field distinct and high bytes set, so a swapped offset or a
	   byte order wrong in any one field shows */
	const struct trdp_header all = {
		.seq = 0xf1f2f3f4u, .version = 0x01ffu, .msg_type = TRDP_MSG_PR, .com_id = 0xe1e2e3e4u,
		.etb_topo = 0xd1d2d3d4u, .op_trn_topo = 0xc1c2c3c4u, .dataset_len = 0, .reserved = 0xb1b2b3b4u,
		.reply_com_id = 0xa1a2a3a4u, .reply_ip = 0x91929394u,
	};
	CHECK(trdp_pd_header_write(&all, buf, TRDP_PD_HEADER_SIZE) == (int)TRDP_PD_HEADER_SIZE);
	CHECK(buf[0] == 0xf1 && buf[3] == 0xf4 && buf[4] == 0x01 && buf[5] == 0xff && buf[6] == 'P' && buf[7] == 'r');
	CHECK(buf[8] == 0xe1 && buf[12] == 0xd1 && buf[16] == 0xc1 && buf[23] == 0x00);
	CHECK(buf[24] == 0xb1 && buf[28] == 0xa1 && buf[32] == 0x91 && buf[35] == 0x94);
	CHECK(trdp_header_parse(TRDP_KIND_PD, buf, TRDP_PD_HEADER_SIZE, &back) == TRDP_HDR_OK);
	CHECK(back.seq == all.seq && back.version == all.version && back.msg_type == all.msg_type &&
	      back.com_id == all.com_id && back.etb_topo == all.etb_topo && back.op_trn_topo == all.op_trn_topo &&
	      back.reserved == all.reserved && back.reply_com_id == all.reply_com_id && back.reply_ip == all.reply_ip);
	/* too small a buffer: refused, nothing written */
	memset(buf, 0x55, sizeof(buf));
	CHECK(trdp_pd_header_write(&in, buf, TRDP_PD_HEADER_SIZE - 1) == -ENOSPC);
	CHECK(buf[0] == 0x55 && buf[TRDP_PD_HEADER_SIZE - 2] == 0x55);
	CHECK(trdp_pd_header_write(NULL, buf, sizeof(buf)) == -EINVAL);
	CHECK(trdp_pd_header_write(&in, NULL, sizeof(buf)) == -EINVAL);
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
	test_fcs_random();
	test_hand_header();
	test_pd_write();
	test_bad_args();
	test_counts_and_names();
	printf("trdp-header: ok\n");
	return 0;
}
