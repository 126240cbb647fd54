/* SPDX-License-Identifier: MIT */
/*
 * j1939-dump LOG - run a candump log through the J1939 transport
 * reassembler (dbc/j1939.h) and print what it makes of it, one line each:
 *   msg <t_us> <pgn hex> sa=<hex> da=<hex> prio=<n> bam=<0|1> len=<n> <data hex>
 *   fault <t_us> <kind> sa=<hex> da=<hex> pgn=<hex> reason=<n> expected=<n> got=<n>/<n>
 * then, at the end of the log (every open session times out there),
 *   stats messages=<n> abort=<n> timeout=<n> sequence=<n> replaced=<n> no_room=<n> malformed=<n> stray_dt=<n> ctl=<n>
 * A test helper: test-j1939.py compares it with what its sessions should give.
 */
#include <stdio.h>
#include <string.h>

#include "trace/candump.h"
#include "dbc/j1939.h"

static const char *const kinds[] = { "?", "abort", "timeout", "sequence", "replaced", "no_room", "malformed" };

static void print_fault(int64_t t_ns, const struct dbc_j1939_fault *f)
{
	printf("fault %lld %s sa=%02x da=%02x pgn=%05x reason=%u expected=%u got=%u/%u\n", (long long)(t_ns / 1000),
	       kinds[f->kind], f->sa, f->da, (unsigned)f->pgn, f->reason, f->expected, f->got, f->total);
}

static void print_msg(const struct dbc_j1939_msg *m)
{
	printf("msg %lld %05x sa=%02x da=%02x prio=%u bam=%d len=%u ", (long long)(m->t_ns / 1000), (unsigned)m->id.pgn,
	       m->id.sa, m->id.da, m->id.priority, m->bam, m->len);
	for (unsigned i = 0; i < m->len; i++)
		printf("%02x", m->data[i]);
	putchar('\n');
}

static void expire(dbc_j1939_t *j, int64_t now_ns)
{
	struct dbc_j1939_fault f;

	while (dbc_j1939_expire(j, now_ns, &f) == 1)
		print_fault(now_ns, &f);
}

int main(int argc, char **argv)
{
	char line[TRACE_CANDUMP_LINE_MAX + 2];
	struct dbc_j1939_stats st;
	dbc_j1939_t *j = NULL;
	unsigned long lineno = 0;
	int64_t last = 0;
	FILE *in;

	if (argc != 2) {
		fprintf(stderr, "usage: j1939-dump LOG\n");
		return 2;
	}
	in = fopen(argv[1], "re");
	if (!in || dbc_j1939_new(&j) < 0) {
		perror(argv[1]);
		return 1;
	}
	while (fgets(line, sizeof(line), in)) {
		struct dbc_j1939_msg m;
		struct dbc_j1939_fault f;
		struct acq_item it;
		int r;

		lineno++;
		if (trace_candump_parse(line, strlen(line), &it, NULL, 0) < 0) {
			fprintf(stderr, "%s:%lu: bad frame\n", argv[1], lineno);
			return 1;
		}
		expire(j, it.t_ns);
		last = it.t_ns;
		r = dbc_j1939_feed(j, &it, &m, &f);
		if (r == 1)
			print_msg(&m);
		else if (r == 2)
			print_fault(it.t_ns, &f);
	}
	fclose(in);
	expire(j, last + 10 * DBC_J1939_T2_NS);
	dbc_j1939_stats(j, &st);
	printf("stats messages=%llu abort=%llu timeout=%llu sequence=%llu replaced=%llu no_room=%llu malformed=%llu "
	       "stray_dt=%llu ctl=%llu\n", (unsigned long long)st.messages,
	       (unsigned long long)st.faults[DBC_J1939_ABORT], (unsigned long long)st.faults[DBC_J1939_TIMEOUT],
	       (unsigned long long)st.faults[DBC_J1939_SEQUENCE], (unsigned long long)st.faults[DBC_J1939_REPLACED],
	       (unsigned long long)st.faults[DBC_J1939_NO_ROOM], (unsigned long long)st.faults[DBC_J1939_MALFORMED],
	       (unsigned long long)st.stray_dt, (unsigned long long)st.ctl);
	dbc_j1939_free(j);
	return 0;
}
