/* SPDX-License-Identifier: MIT */
/*
 * test-pcap: trace/pcap.h on the captures pcap-gen.py writes byte by byte
 * (its docstring lists them): each event as written, the counters, the
 * bounds (a small TCP window, the fragment timeout), the detection by
 * magic, a cut file and bad arguments.  test-pcap DIR.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/pcap.h"
#include "trace/trace.h"

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); exit(1); } } while (0)
#define T0 1700000000000000000ULL
#define IP(a, b, c, d) ((uint32_t)(a) << 24 | (b) << 16 | (c) << 8 | (d))

static const char *dir;

static trace_pcap_t *open_file(const char *name, const struct trace_pcap_cfg *cfg)
{
	char path[4096], err[300];
	trace_pcap_t *p = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (trace_pcap_open(path, cfg, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	return p;
}

static int next(trace_pcap_t *p, struct trace_pcap_event *e)
{
	int r = trace_pcap_next(p, e);

	CHECK(r >= 0);
	return r;
}

static void test_udp(void)
{
	static const char *const want[] = { "pd untagged", "pd vlan 5", "md qinq" };
	static const int vlans[] = { -1, 5, 7 };
	trace_pcap_t *p = open_file("udp.pcap", NULL);
	struct trace_pcap_event e;
	struct trace_pcap_stats st;

	CHECK(!trace_pcap_is_ng(p) && strcmp(trace_pcap_link_name(p), "EN10MB") == 0);
	for (int i = 0; i < 3; i++) {
		CHECK(next(p, &e) == 1 && e.kind == TRACE_PCAP_UDP && e.proto == 17);
		CHECK(e.len == strlen(want[i]) && memcmp(e.data, want[i], e.len) == 0);
		CHECK(e.vlan == vlans[i] && e.time_ns == T0 + (uint64_t)i * 1000 && e.packet == (uint64_t)i + 1);
		CHECK(e.src == IP(192, 0, 2, 1) && e.dst == IP(192, 0, 2, 2) && e.sport == 40001 + i);
		CHECK(e.dport == (i == 2 ? 17225 : 17224));
	}
	/* fragments sent last first, one twice: whole at the packet of the first, the 7th */
	CHECK(next(p, &e) == 1 && e.kind == TRACE_PCAP_UDP && e.len == 3000 && e.packet == 7 && e.sport == 40000);
	for (size_t i = 0; i < 2816; i++)
		CHECK(e.data[i] == (uint8_t)i);
	CHECK(next(p, &e) == 0 && next(p, &e) == 0);
	trace_pcap_stats(p, &st);
	CHECK(st.packets == 9 && st.udp_datagrams == 4 && st.other_proto == 1 && st.other_link == 1);
	CHECK(st.frag_incomplete == 0 && st.frag_overlap == 0 && st.lost_events == 0 && trace_pcap_note(p)[0] == 0);
	trace_pcap_free(p);
}

/* The client's stream as read with a window of `window` bytes. */
static void read_tcp(size_t window, char *tx, size_t *ret_gap, struct trace_pcap_stats *st)
{
	struct trace_pcap_cfg cfg = { .window = window };
	trace_pcap_t *p = open_file("tcp.pcap", &cfg);
	struct trace_pcap_event e;
	int opens = 0, closes = 0;
	size_t n = 0;

	*ret_gap = 0;
	while (next(p, &e) == 1) {
		CHECK(e.proto == 6 && e.conn == 1);
		if (e.kind == TRACE_PCAP_TCP_OPEN)
			CHECK(e.syn && e.sport == 50000 && e.packet == 1 && ++opens == 1);
		else if (e.kind == TRACE_PCAP_TCP_CLOSE)
			CHECK(e.end == TRACE_PCAP_END_FIN && e.packet == 9 && ++closes == 1);
		else if (e.kind == TRACE_PCAP_TCP_GAP)
			*ret_gap += e.len;
		else if (e.sport == 50000) {
			memcpy(tx + n, e.data, e.len);
			n += e.len;
		} else
			CHECK(e.len == 6 && memcmp(e.data, "reply\n", 6) == 0 && e.time_ns == T0 + 6 * 1001);
	}
	tx[n] = 0;
	CHECK(opens == 1 && closes == 1);
	trace_pcap_stats(p, st);
	trace_pcap_free(p);
}

static void test_tcp(void)
{
	struct trace_pcap_stats st;
	char tx[256];
	size_t gap;

	/* swapped and repeated: in order, no gap, the repeat counted */
	read_tcp(0, tx, &gap, &st);
	CHECK(strcmp(tx, "first message\nsecond\nthird and last\n") == 0 && gap == 0);
	CHECK(st.tcp_gaps == 0 && st.tcp_retrans == 14 && st.tcp_bytes == 42);
	/* a 16-byte window cannot hold the third (15 bytes, 7 past the next):
	   the second's 7 bytes are given up as a gap, and when they come they
	   are old */
	read_tcp(16, tx, &gap, &st);
	CHECK(strcmp(tx, "first message\nthird and last\n") == 0 && gap == 7);
	CHECK(st.tcp_gaps == 1 && st.tcp_gap_bytes == 7 && st.tcp_retrans == 7 + 14);
}

/* A segment that begins inside what the stream has (3 bytes of it) and
   goes on: only its new bytes delivered, the old ones counted; one all
   old: counted, nothing delivered. */
static void test_tcp_overlap(void)
{
	trace_pcap_t *p = open_file("overlap.pcap", NULL);
	struct trace_pcap_event e;
	struct trace_pcap_stats st;
	char rx[64];
	size_t n = 0;
	int datas = 0;

	while (next(p, &e) == 1)
		if (e.kind == TRACE_PCAP_TCP_DATA) {
			CHECK(n + e.len < sizeof(rx));
			memcpy(rx + n, e.data, e.len);
			n += e.len;
			datas++;
		}
	rx[n] = 0;
	CHECK(strcmp(rx, "hello world\n") == 0 && datas == 2);
	trace_pcap_stats(p, &st);
	CHECK(st.tcp_retrans == 3 + 3 && st.tcp_bytes == 12 && st.tcp_gaps == 0);
	trace_pcap_free(p);
}

/* Two connections at once: both followed, closed by the capture's end;
   with room for one, the first is let go when the second begins, and its
   bytes that come later begin a third, mid-stream. */
static void test_conns(void)
{
	static const struct { enum trace_pcap_kind kind; uint32_t conn; uint64_t packet; int end; const char *data; }
	two[] = {
		{ TRACE_PCAP_TCP_OPEN, 1, 1, 0, NULL }, { TRACE_PCAP_TCP_OPEN, 2, 2, 0, NULL },
		{ TRACE_PCAP_TCP_DATA, 1, 3, 0, "one" }, { TRACE_PCAP_TCP_DATA, 2, 4, 0, "two" },
		{ TRACE_PCAP_TCP_CLOSE, 1, 4, TRACE_PCAP_END_CAPTURE, NULL },
		{ TRACE_PCAP_TCP_CLOSE, 2, 4, TRACE_PCAP_END_CAPTURE, NULL },
	}, one[] = {
		{ TRACE_PCAP_TCP_OPEN, 1, 1, 0, NULL },
		{ TRACE_PCAP_TCP_CLOSE, 1, 2, TRACE_PCAP_END_EVICTED, NULL }, { TRACE_PCAP_TCP_OPEN, 2, 2, 0, NULL },
		{ TRACE_PCAP_TCP_CLOSE, 2, 3, TRACE_PCAP_END_EVICTED, NULL }, { TRACE_PCAP_TCP_OPEN, 3, 3, 0, NULL },
		{ TRACE_PCAP_TCP_DATA, 3, 3, 0, "one" },
		{ TRACE_PCAP_TCP_CLOSE, 3, 4, TRACE_PCAP_END_EVICTED, NULL }, { TRACE_PCAP_TCP_OPEN, 4, 4, 0, NULL },
		{ TRACE_PCAP_TCP_DATA, 4, 4, 0, "two" },
		{ TRACE_PCAP_TCP_CLOSE, 4, 4, TRACE_PCAP_END_CAPTURE, NULL },
	};
	struct trace_pcap_cfg cfg = { .conns = 1 };
	struct trace_pcap_event e;
	struct trace_pcap_stats st;

	for (int k = 0; k < 2; k++) {
		trace_pcap_t *p = open_file("conns.pcap", k ? &cfg : NULL);
		size_t n = k ? sizeof(one) / sizeof(one[0]) : sizeof(two) / sizeof(two[0]);

		for (size_t i = 0; i < n; i++) {
			const __typeof__(two[0]) *w = k ? &one[i] : &two[i];

			CHECK(next(p, &e) == 1 && e.kind == w->kind && e.conn == w->conn && e.packet == w->packet);
			if (w->kind == TRACE_PCAP_TCP_CLOSE)
				CHECK((int)e.end == w->end);
			if (w->data)
				CHECK(e.len == 3 && memcmp(e.data, w->data, 3) == 0);
			if (w->kind == TRACE_PCAP_TCP_OPEN)
				CHECK(e.syn == (w->packet < 3));
		}
		CHECK(next(p, &e) == 0);
		trace_pcap_stats(p, &st);
		CHECK(st.tcp_evicted == (k ? 3u : 0u) && st.tcp_bytes == 6);
		trace_pcap_free(p);
	}
}

static void test_frag(void)
{
	struct trace_pcap_cfg cfg = { .frag_timeout_ns = 60ULL * 1000000000ULL };
	struct trace_pcap_event e;
	struct trace_pcap_stats st;
	char want[300];
	trace_pcap_t *p = open_file("frag.pcap", NULL);

	/* 30 s: 11 and 12 time out at packet 5, whose fragment of 12 starts anew */
	CHECK(strcmp(trace_pcap_link_name(p), "RAW") == 0);
	CHECK(next(p, &e) == 0);
	trace_pcap_stats(p, &st);
	CHECK(st.frag_overlap == 1 && st.frag_incomplete == 3 && st.udp_datagrams == 0);
	snprintf(want, sizeof(want), "%s/frag.pcap: packet 2 at byte 124: IPv4 datagram id 10 (first fragment in packet 1) "
	         "has overlapping fragments: dropped", dir);
	CHECK(strcmp(trace_pcap_note(p), want) == 0);
	trace_pcap_free(p);

	/* 60 s: 12 completes, 11 is still incomplete at the end */
	p = open_file("frag.pcap", &cfg);
	CHECK(next(p, &e) == 1 && e.kind == TRACE_PCAP_UDP && e.len == 120 && e.packet == 5);
	CHECK(next(p, &e) == 0);
	trace_pcap_stats(p, &st);
	CHECK(st.frag_overlap == 1 && st.frag_incomplete == 1 && st.udp_datagrams == 1);
	trace_pcap_free(p);

	/* one datagram in reassembly at a time: 12 pushes 11 out */
	cfg.frags = 1;
	p = open_file("frag.pcap", &cfg);
	CHECK(next(p, &e) == 1 && e.len == 120 && next(p, &e) == 0);
	trace_pcap_stats(p, &st);
	CHECK(st.frag_incomplete == 1 && st.udp_datagrams == 1);
	trace_pcap_free(p);
}

static void test_links(void)
{
	struct trace_pcap_event e;
	trace_pcap_t *p = open_file("sll.pcap", NULL);

	CHECK(next(p, &e) == 1 && e.vlan == 5 && e.len == 8 && memcmp(e.data, "over sll", 8) == 0);
	CHECK(e.time_ns == T0 && next(p, &e) == 0);
	trace_pcap_free(p);
	p = open_file("sll2.pcap", NULL);
	CHECK(next(p, &e) == 1 && e.vlan == -1 && e.dport == 17225 && e.len == 9 && e.time_ns == T0 + 5);
	CHECK(next(p, &e) == 0);
	trace_pcap_free(p);
	/* two interfaces, ns and us resolution */
	p = open_file("two.pcapng", NULL);
	CHECK(trace_pcap_is_ng(p));
	CHECK(next(p, &e) == 1 && e.time_ns == T0 + 123456789 && memcmp(e.data, "ng ns", 5) == 0);
	CHECK(next(p, &e) == 1 && e.time_ns == T0 + 234567000 && memcmp(e.data, "ng us", 5) == 0);
	CHECK(next(p, &e) == 0);
	trace_pcap_free(p);
}

static char *slurp(const char *name, size_t *ret_len)
{
	char path[4096];
	FILE *f;
	char *b = malloc(1 << 20);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	CHECK(f && b);
	*ret_len = fread(b, 1, 1 << 20, f);
	fclose(f);
	return b;
}

static void test_cut_and_detect(void)
{
	static const uint8_t magics[][4] = {
		{ 0xd4, 0xc3, 0xb2, 0xa1 }, { 0xa1, 0xb2, 0xc3, 0xd4 }, { 0x4d, 0x3c, 0xb2, 0xa1 }, { 0xa1, 0xb2, 0x3c, 0x4d },
	};
	struct trace_pcap_event e;
	trace_pcap_t *p;
	size_t len;
	char *b = slurp("two.pcapng", &len), err[300];
	int r, n = 0;

	for (size_t i = 0; i < 4; i++)
		CHECK(trace_format_detect(magics[i], 4) == TRACE_PCAP);
	CHECK(trace_format_detect(b, len) == TRACE_PCAPNG);
	free(b);
	/* the SHB's type alone is "\n\r\r\n": blank text, not a capture */
	CHECK(trace_format_detect("\n\r\r\n\n\n\n\n\n\n\n\n", 12) == TRACE_EMPTY);
	CHECK(strcmp(trace_format_name(TRACE_PCAPNG), "pcapng") == 0);

	/* cut in the middle of the 3rd packet: two, then the damage named */
	b = slurp("udp.pcap", &len);
	CHECK(trace_pcap_open_mem(b, 24 + 2 * 16 + 14 + 20 + 8 + 11 + 14 + 4 + 20 + 8 + 9 + 20, "cut.pcap", NULL, &p,
	                          err, sizeof(err)) == 0);
	while ((r = trace_pcap_next(p, &e)) == 1)
		n++;
	CHECK(n == 2 && r == -EBADMSG);
	CHECK(strncmp(trace_pcap_error(p), "cut.pcap: damaged after packet 2 (at byte ", 42) == 0);
	CHECK(strstr(trace_pcap_error(p), "truncated"));
	CHECK(trace_pcap_next(p, &e) == 0);
	trace_pcap_free(p);
	free(b);
}

static void test_bad_args(void)
{
	struct trace_pcap_cfg cfg = { .window = 1000 };
	struct trace_pcap_event e;
	trace_pcap_t *p = NULL;
	char err[300];
	char path[4096];

	CHECK(trace_pcap_open(NULL, NULL, &p, err, sizeof(err)) == -EINVAL);
	snprintf(path, sizeof(path), "%s/udp.pcap", dir);
	CHECK(trace_pcap_open(path, NULL, NULL, err, sizeof(err)) == -EINVAL);
	CHECK(trace_pcap_open(path, &cfg, &p, err, sizeof(err)) == -EINVAL && !p); /* not a power of two */
	cfg = (struct trace_pcap_cfg){ .n_udp_ports = TRACE_PCAP_UDP_PORTS_MAX + 1 };
	CHECK(trace_pcap_open(path, &cfg, &p, err, sizeof(err)) == -EINVAL);
	CHECK(trace_pcap_open("/nonexistent/x.pcap", NULL, &p, err, sizeof(err)) == -ENOENT);
	CHECK(strstr(err, "/nonexistent/x.pcap"));
	CHECK(trace_pcap_open_mem("hello, world\n", 13, "text", NULL, &p, err, sizeof(err)) == -EMEDIUMTYPE);
	CHECK(strncmp(err, "text: not a capture libpcap reads", 33) == 0);
	CHECK(trace_pcap_open_mem(NULL, 3, "x", NULL, &p, NULL, 0) == -EINVAL);
	CHECK(trace_pcap_next(NULL, &e) == -EINVAL);
	CHECK(trace_pcap_free(NULL) == NULL);
	CHECK(strcmp(trace_pcap_kind_name(TRACE_PCAP_KIND_MAX), "unknown") == 0);
	CHECK(strcmp(trace_pcap_end_name(TRACE_PCAP_END_RST), "rst") == 0);
	/* a port of our choice: 17224 alone leaves the MD datagram and the fragments' 17224 */
	cfg = (struct trace_pcap_cfg){ .udp_ports = { 17225 }, .n_udp_ports = 1 };
	p = open_file("udp.pcap", &cfg);
	CHECK(next(p, &e) == 1 && e.dport == 17225 && next(p, &e) == 0);
	trace_pcap_free(p);
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	dir = argv[1];
	test_udp();
	test_tcp();
	test_tcp_overlap();
	test_conns();
	test_frag();
	test_links();
	test_cut_and_detect();
	test_bad_args();
	printf("ok\n");
	return 0;
}
