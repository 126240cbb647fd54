/* SPDX-License-Identifier: MIT */
/*
 * pcap-dump - trace/pcap.h's view of a capture, one line per event, for
 * the tests to hold against tshark's, dpkt's and the sender's own:
 *   udp TIME_NS SRC:SPORT DST:DPORT VLAN LEN HEX
 *   tcp-open|tcp-data|tcp-gap|tcp-close TIME_NS CONN SRC:SPORT DST:DPORT VLAN LEN [HEX|syn|END]
 * then "stats k=v ..." and the first damage's words ("note ...") on
 * stderr.  pcap-dump FILE [window]: exit 0, 2 for a damaged file (after
 * what came before it), 1 for a file it cannot open.  pcap-dump -c FILE
 * prints only "N datagrams, N TCP bytes" (the benchmark's reader).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "trace/pcap.h"

static void addr(uint32_t a, uint16_t port)
{
	printf(" %u.%u.%u.%u:%u", a >> 24, (a >> 16) & 255, (a >> 8) & 255, a & 255, port);
}

static void event(const struct trace_pcap_event *e)
{
	printf("%s %" PRIu64, trace_pcap_kind_name(e->kind), e->time_ns);
	if (e->proto == 6)
		printf(" %" PRIu32, e->conn);
	addr(e->src, e->sport);
	addr(e->dst, e->dport);
	printf(" %d %zu ", e->vlan, e->len);
	if (e->kind == TRACE_PCAP_UDP || e->kind == TRACE_PCAP_TCP_DATA)
		for (size_t i = 0; i < e->len; i++)
			printf("%02x", e->data[i]);
	else if (e->kind == TRACE_PCAP_TCP_OPEN)
		printf("%s", e->syn ? "syn" : "mid-stream");
	else if (e->kind == TRACE_PCAP_TCP_CLOSE)
		printf("%s", trace_pcap_end_name(e->end));
	printf(" #%" PRIu64 "\n", e->packet);
}

int main(int argc, char **argv)
{
	struct trace_pcap_cfg cfg = { 0 };
	struct trace_pcap_event e;
	struct trace_pcap_stats st;
	trace_pcap_t *p;
	char err[300];
	int r, rc = 0;
	bool count = argc > 1 && strcmp(argv[1], "-c") == 0;
	uint64_t sum = 0;

	argv += count;
	argc -= count;

	if (argc < 2) {
		fprintf(stderr, "usage: pcap-dump FILE [window]\n");
		return 1;
	}
	if (argc > 2)
		cfg.window = strtoul(argv[2], NULL, 0);
	r = trace_pcap_open(argv[1], &cfg, &p, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "pcap-dump: %s\n", err);
		return 1;
	}
	while ((r = trace_pcap_next(p, &e)) != 0) {
		if (r < 0) {
			fprintf(stderr, "error %s\n", trace_pcap_error(p));
			rc = 2;
			continue; /* the connections still open are closed, then the end */
		}
		if (!count)
			event(&e);
		else if (e.len && e.data) /* touch the bytes, as a consumer would */
			sum += e.data[0] + e.data[e.len - 1];
	}
	if (count) {
		trace_pcap_stats(p, &st);
		printf("%" PRIu64 " datagrams, %" PRIu64 " TCP bytes (%" PRIu64 ")\n", st.udp_datagrams, st.tcp_bytes,
		       sum & 1);
		trace_pcap_free(p);
		return rc;
	}
	trace_pcap_stats(p, &st);
	fprintf(stderr, "stats link=%s ng=%d packets=%" PRIu64 " other_link=%" PRIu64 " bad_ip=%" PRIu64
	        " cut=%" PRIu64 " other_proto=%" PRIu64 " frag_overlap=%" PRIu64 " frag_incomplete=%" PRIu64
	        " frag_bad=%" PRIu64 " udp=%" PRIu64 " tcp_bytes=%" PRIu64 " tcp_retrans=%" PRIu64
	        " tcp_gaps=%" PRIu64 " tcp_gap_bytes=%" PRIu64 " tcp_evicted=%" PRIu64 " lost_events=%" PRIu64 "\n",
	        trace_pcap_link_name(p), trace_pcap_is_ng(p), st.packets, st.other_link, st.bad_ip, st.cut,
	        st.other_proto, st.frag_overlap, st.frag_incomplete, st.frag_bad, st.udp_datagrams, st.tcp_bytes,
	        st.tcp_retrans, st.tcp_gaps, st.tcp_gap_bytes, st.tcp_evicted, st.lost_events);
	if (trace_pcap_note(p)[0])
		fprintf(stderr, "note %s\n", trace_pcap_note(p));
	trace_pcap_free(p);
	return rc;
}
