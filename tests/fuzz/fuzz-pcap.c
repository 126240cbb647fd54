/* SPDX-License-Identifier: MIT */
/*
 * fuzz-pcap: trace/pcap.c on arbitrary files, through libpcap's own reader
 * (trace_pcap_open_mem: fmemopen and pcap_fopen_offline).  The first byte
 * picks small bounds (a 256-byte TCP window, one or four datagrams in
 * reassembly, one or three connections, a 1 us fragment timeout) so that
 * the eviction, window and timeout paths are reached by small inputs.
 * No out-of-bounds access, and the events agree with the counters: every
 * UDP event counted, every TCP byte delivered counted, no event lost.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/pcap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_pcap_cfg cfg = { 0 };
	struct trace_pcap_event e;
	struct trace_pcap_stats st;
	uint64_t udp = 0, tcp = 0, gaps = 0, bytes = 0;
	trace_pcap_t *p;
	int r;

	if (size < 2)
		return 0;
	cfg.window = data[0] & 1 ? 256 : 4096;
	cfg.frags = data[0] & 2 ? 1 : 4;
	cfg.conns = data[0] & 4 ? 1 : 3;
	cfg.frag_timeout_ns = data[0] & 8 ? 1000 : 0;
	if (trace_pcap_open_mem(data + 1, size - 1, "fuzz", &cfg, &p, NULL, 0) < 0)
		return 0;
	while ((r = trace_pcap_next(p, &e)) != 0) {
		if (r < 0) {
			assert(r == -EBADMSG || r == -ENOMEM);
			continue;
		}
		assert(e.kind < TRACE_PCAP_KIND_MAX);
		assert(e.vlan >= -1 && e.vlan < 4096);
		if (e.kind == TRACE_PCAP_UDP) {
			assert(e.proto == 17 && e.len <= 65535 && (e.data || !e.len));
			bytes += e.len ? (uint64_t)(e.data[0] + e.data[e.len - 1]) : 0; /* read both ends */
			udp++;
		} else {
			assert(e.proto == 6 && e.conn > 0);
			if (e.kind == TRACE_PCAP_TCP_DATA) {
				assert(e.data && e.len > 0 && e.len <= 2 * 65535);
				bytes += (uint64_t)(e.data[0] + e.data[e.len - 1]);
				tcp += e.len;
			}
			if (e.kind == TRACE_PCAP_TCP_GAP)
				gaps++;
		}
	}
	trace_pcap_stats(p, &st);
	assert(st.udp_datagrams == udp && st.tcp_bytes == tcp && st.tcp_gaps == gaps && st.lost_events == 0);
	trace_pcap_free(p);
	(void)bytes;
	return 0;
}
