/* SPDX-License-Identifier: MIT */
/*
 * gen-evidence-log.c - the victim for attack-evidence.py: a signed log
 * written by the real sink (pipeline/sink.c) over several runs, as
 * evd-test-util.h's et_generate writes them.  The attacker then works on
 * its bytes alone.
 *
 * gen-evidence-log DIR SECRET_KEY_FILE SHAPE SEED
 *   SHAPE plain:   3 runs, every one closed with its Seal
 *   SHAPE small:   2 runs of 120 items in 2 KiB segments (v1-seal-log was
 *                  made so, by the sink of before Seal v2)
 *   SHAPE restart: 4 runs; the 2nd ends without its Seal (a crash), the 3rd
 *                  starts a new chain (a writer that found no Seal to take
 *                  up), so the 2nd run's last records lie between chains
 * Prints "first last" seq of the log.
 */
#include <inttypes.h>

#include "evd-test-util.h"

int main(int argc, char **argv)
{
	uint8_t secret[EVD_SECRET_LEN];
	struct et_gen g = { 0 };
	struct et_segs segs;
	struct et_frame *fr;
	size_t n;

	if (argc != 5) {
		fprintf(stderr, "usage: gen-evidence-log DIR SECRET_KEY_FILE plain|small|restart SEED\n");
		return 2;
	}
	CHECK(evd_key_load_secret(argv[2], secret) == 0, "%s", argv[2]);
	g.dir = argv[1];
	g.secret = secret;
	g.seed = (uint32_t)strtoul(argv[4], NULL, 10);
	g.segment_bytes = 8192;
	g.items = 1200;
	if (!strcmp(argv[3], "plain")) {
		g.sessions = 3;
	} else if (!strcmp(argv[3], "small")) {
		g.sessions = 2;
		g.items = 120;
		g.segment_bytes = 2048;
	} else if (!strcmp(argv[3], "restart")) {
		g.sessions = 4;
		g.crash_session = 2;
		g.fresh_session = 3;
	} else {
		fprintf(stderr, "gen-evidence-log: unknown shape %s\n", argv[3]);
		return 2;
	}
	CHECK(mkdir(g.dir, 0755) == 0, "%s: %s", g.dir, strerror(errno));
	et_generate(&g);
	et_list(g.dir, &segs);
	n = et_frames(g.dir, &segs, &fr);
	CHECK(n > 0);
	printf("%" PRIu64 " %" PRIu64 "\n", fr[0].f.first_seq, fr[n - 1].f.first_seq + fr[n - 1].f.count - 1);
	free(fr);
	return 0;
}
