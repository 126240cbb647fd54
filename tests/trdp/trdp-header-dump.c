/* SPDX-License-Identifier: MIT */
/*
 * trdp-header-dump - reads lines "pd HEX", "md HEX" or "frame HEX" on
 * stdin and prints what trdp/header.c makes of each, one line of
 * key=value, so tests/trdp/test-trdp-header.py compares it with the
 * headers its independent Python writer (trdp_pub.py) built.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hex.h"
#include "trdp/header.h"

static void print_hex(const char *key, const uint8_t *p, size_t n)
{
	char buf[2 * TRDP_URI_SIZE + 1];
	basic_hex_encode(p, n, false, buf);
	printf(" %s=%s", key, buf);
}

static void dump(const char *what, const uint8_t *buf, size_t len)
{
	if (!strcmp(what, "frame")) {
		size_t flen = 0;
		int result = -1;
		int r = trdp_md_frame_len(buf, len, &flen, &result);
		printf("r=%d len=%zu result=%s\n", r, flen, r == -EBADMSG ? trdp_header_result_name(result) : "-");
		return;
	}
	enum trdp_kind kind = !strcmp(what, "md") ? TRDP_KIND_MD : TRDP_KIND_PD;
	struct trdp_header h;
	memset(&h, 0, sizeof(h));
	int r = trdp_header_parse(kind, buf, len, &h);
	char type[3];
	printf("result=%s", trdp_header_result_name(r));
	if (r == TRDP_HDR_OK || r > TRDP_HDR_BAD_FCS) {
		printf(" seq=%" PRIu32 " version=%u type=%s com_id=%" PRIu32 " etb=%" PRIu32
		       " optrn=%" PRIu32 " dataset_len=%" PRIu32 " fcs=%" PRIu32,
		       h.seq, h.version, trdp_msg_type_name(h.msg_type, type), h.com_id, h.etb_topo,
		       h.op_trn_topo, h.dataset_len, h.fcs);
		if (kind == TRDP_KIND_PD)
			printf(" reserved=%" PRIu32 " reply_com_id=%" PRIu32 " reply_ip=%" PRIu32,
			       h.reserved, h.reply_com_id, h.reply_ip);
		else {
			printf(" reply_status=%" PRId32 " reply_timeout=%" PRIu32, h.reply_status,
			       h.reply_timeout_us);
			print_hex("session", h.session_id, sizeof(h.session_id));
			print_hex("src_uri", h.source_uri, sizeof(h.source_uri));
			print_hex("dst_uri", h.dest_uri, sizeof(h.dest_uri));
		}
	}
	printf("\n");
}

int main(void)
{
	static char line[200000];
	static uint8_t buf[100000];

	while (fgets(line, sizeof(line), stdin)) {
		char *sp = strchr(line, ' ');
		if (!sp)
			return 2;
		*sp = 0;
		char *hex = sp + 1;
		size_t n = strcspn(hex, "\r\n");
		ssize_t len = basic_hex_decode(hex, n, buf, sizeof(buf));
		if (len < 0)
			return 2;
		dump(line, buf, (size_t)len);
	}
	return 0;
}
