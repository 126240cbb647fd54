/* SPDX-License-Identifier: MIT */
/*
 * bench-evidence.c - what the evidence chain costs, ratios from one run:
 *  1. the pipeline behind the collector (pipeline/sink.c: CAN frames decoded
 *     with the demo's DBC, encoded, appended to the log), and the same
 *     without decoding (raw frames only: the chain's worst case), each with
 *     the chain and signed Seals against without them (no_evidence), on
 *     the same frames, alternated, best of 5 each; a Seal every 300,000
 *     frames (the default seal_interval_s, 60 s, at 5000 frames/s) and one
 *     before each segment closes;
 *  2. `verify` of the log against `sha256sum` of the same segment files;
 *  3. a Seal's bytes, and what they come to per hour.
 * The log is in /dev/shm (no disk waits): the chain's share is the largest
 * there; on flash it is smaller.  With two cores the chain is hashed on a
 * thread of its own: the pipeline's throughput is then bounded by the
 * collector thread's CPU time (its copy of each Batch; its waits for the
 * hash at each Seal are not CPU), and the chain's cost is the CPU time of
 * the process, every thread.  CPU times keep other load on a shared
 * machine out of the ratios (wall times on the 2-vCPU VM under a load of
 * 20 swung 2-5x either way between runs).  Reading the log is CPU seconds
 * too (this process's, and sha256sum's).
 */
#include <inttypes.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "pipeline/channels.h"
#include "conf/config.h"
#include "evd-test-util.h"
#include "railmon-config.h"
#include "stor-test-util.h"

#define ITEMS 1000000
#define ROUNDS 5
/* a Seal per 300,000 frames: seal_interval_s = 60 at this load (5000 frames/s) */
#define SEAL_EVERY 300000

static double now_s(void)
{
	return (double)basic_now_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9;
}

static double children_s(void)
{
	struct rusage ru;

	CHECK(getrusage(RUSAGE_CHILDREN, &ru) == 0);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

/* The demo vehicle's messages (cli/demo/train.dbc), random payloads. */
static struct acq_item *make_items(void)
{
	static const uint32_t ids[] = { 256, 288, 512, 768, 784, 0x18ff0021 | 0x80000000u };
	static const uint8_t lens[] = { 8, 8, 4, 8, 4, 8 };
	struct acq_item *v = calloc(ITEMS, sizeof(*v));
	uint32_t seed = 1;
	int64_t t = ET_T0;

	CHECK(v);
	for (size_t i = 0; i < ITEMS; i++) {
		uint32_t r = et_rand(&seed), k = r % 6;

		v[i].t_ns = (t += 200000); /* 5000 frames/s of record time */
		v[i].kind = ACQ_ITEM_CAN;
		v[i].can.id = ids[k] & 0x1fffffff;
		v[i].can.flags = ids[k] >> 31 ? ACQ_CAN_EXT : 0;
		v[i].can.len = lens[k];
		for (int b = 0; b < 8; b++)
			v[i].can.data[b] = (uint8_t)(et_rand(&seed) >> 8);
	}
	return v;
}

static pl_channels_t *demo_channels(struct conf_board **ret_cfg)
{
	static const char text[] = "[board]\nvehicle = BENCH\n[can vehicle]\ndriver = trace\nfile = "
	                           RAILMON_SOURCE_DIR "/cli/demo/train.log\ndbc = " RAILMON_SOURCE_DIR
	                           "/cli/demo/train.dbc\n";
	char err[512];
	pl_channels_t *ch;

	CHECK(conf_parse("bench.ini", text, ret_cfg, err, sizeof(err)) == 0, "%s", err);
	CHECK(pl_channels_new(*ret_cfg, &ch, err, sizeof(err)) == 0, "%s", err);
	return ch;
}

/* Feed every item through a new sink over a new log; seconds. */
struct timing {
	double thread, cpu;
};

static double thread_s(void)
{
	return (double)basic_now_ns(CLOCK_THREAD_CPUTIME_ID) / 1e9;
}

static struct timing run(const char *dir, const struct acq_item *items, pl_channels_t *ch, const uint8_t *secret,
                         bool evidence, struct pl_sink_stats *ret)
{
	struct stor_log_cfg lc = { .dir = dir, .vehicle = "BENCH", .segment_bytes = 16 << 20,
	                           .sync_window_ms = 200 };
	struct rec_batch_meta meta = { .vehicle = "BENCH", .config_hash = 1 };
	stor_log_t *log;
	pl_sink_t *s;
	double t0, t1, c0, c1;

	tu_rm_rf(dir);
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(stor_log_open(&lc, &log) == 0);
	CHECK(pl_sink_new(&(struct pl_sink_cfg){ .log = log, .channels = ch, .meta = &meta, .batch_max = 4096,
	                                              .batch_ms = 1000, .meta_interval_s = 60, .deterministic = true,
	                                              .seal_secret = secret, .seal_interval_s = 1,
	                                              .log_dir = dir, .no_evidence = !evidence }, &s) == 0);
	t0 = now_s();
	c0 = thread_s();
	for (size_t i = 0; i < ITEMS; i += 250) {
		CHECK(pl_sink_items(s, items + i, ITEMS - i < 250 ? ITEMS - i : 250) == 0);
		pl_sink_tick(s);
		if (evidence && i && i % SEAL_EVERY == 0)
			pl_sink_seal(s);
	}
	CHECK(pl_sink_close(s) == 0);
	c1 = thread_s();
	t1 = now_s();
	pl_sink_stats(s, ret);
	pl_sink_free(s);
	stor_log_free(log);
	return (struct timing){ c1 - c0, t1 - t0 };
}

static double run_cmd(const char *cmd)
{
	double t0 = children_s();
	int st = system(cmd);

	CHECK(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s", cmd);
	return children_s() - t0;
}

/* Bytes of the log's Seal frames, and how many; of those bytes, the
   Batch digest lists' (Seal v2). */
static void seal_bytes(const char *dir, uint64_t *ret_bytes, uint64_t *ret_n, uint64_t *ret_log,
                       uint64_t *ret_list)
{
	stor_reader_t *r;
	struct stor_rec rec;
	int n;

	*ret_bytes = *ret_n = *ret_log = *ret_list = 0;
	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0) {
		CHECK(n == 1);
		*ret_log += stor_frame_size(rec.len);
		if (rec.count == 1 && et_is_seal(rec.payload, rec.len)) {
			struct rec_seal seal;
			rec_batch_t *b;

			*ret_bytes += stor_frame_size(rec.len);
			(*ret_n)++;
			CHECK(rec_batch_decode(rec.payload, rec.len, &b) == 0 && rec_batch_seal(b, &seal) == 0);
			*ret_list += (uint64_t)seal.ndigests * EVD_HASH_LEN;
			rec_batch_free(b);
		}
	}
	stor_reader_free(r);
}

/* Best of ROUNDS (wall and CPU each), alternating without and with the chain. */
static void pair(const char *dir, const struct acq_item *items, pl_channels_t *ch, const uint8_t *secret,
                 struct timing best[2], struct pl_sink_stats st[2])
{
	best[0] = best[1] = (struct timing){ 1e9, 1e9 };
	for (int k = 0; k < 2 * ROUNDS; k++) {
		struct timing t = run(dir, items, ch, secret, k % 2, &st[k % 2]);
		struct timing *b = &best[k % 2];

		b->thread = t.thread < b->thread ? t.thread : b->thread;
		b->cpu = t.cpu < b->cpu ? t.cpu : b->cpu;
	}
}

static void print_pair(const char *what, const struct timing b[2], const struct pl_sink_stats st[2])
{
	printf("%-42s %9.3f %9.0f %6.3f %7.3f %6.3f\n", what, b[0].thread, ITEMS / b[0].thread, 1.0, b[0].cpu, 1.0);
	printf("%-42s %9.3f %9.0f %6.3f %7.3f %6.3f\n", "  + chain and signed Seals (60 s at 5k/s)",
	       b[1].thread, ITEMS / b[1].thread, b[1].thread / b[0].thread, b[1].cpu, b[1].cpu / b[0].cpu);
	printf("%-42s collector %+.1f%%, CPU %+.1f%%; %" PRIu64 " records, %" PRIu64 " Batches, %" PRIu64
	       " Seals\n", "", (b[1].thread / b[0].thread - 1) * 100, (b[1].cpu / b[0].cpu - 1) * 100,
	       st[1].records, st[1].batches, st[1].seals);
}

int main(void)
{
	char *dir = tu_tmpdir_in("evd-bench", true), sk[4200], pk[4200], cmd[8600];
	struct acq_item *items = make_items();
	uint8_t secret[EVD_SECRET_LEN], pub[EVD_PUBLIC_LEN];
	struct timing dec[2], raw[2];
	double t_verify = 1e9, t_sha = 1e9;
	struct pl_sink_stats st_dec[2], st_raw[2];
	struct conf_board *cfg;
	pl_channels_t *ch = demo_channels(&cfg);
	struct evd_result res;
	uint64_t sbytes, nseals, logbytes, listbytes;

	snprintf(sk, sizeof(sk), "%s.key", dir);
	snprintf(pk, sizeof(pk), "%s.key.pub", dir);
	CHECK(evd_key_generate(sk, pk) == 0 && evd_key_load_secret(sk, secret) == 0 &&
	      evd_key_load_public(pk, pub) == 0);
	pair(dir, items, NULL, secret, raw, st_raw);
	pair(dir, items, ch, secret, dec, st_dec);
	/* the last run was with the chain and decoding: its log is verified */
	seal_bytes(dir, &sbytes, &nseals, &logbytes, &listbytes);
	snprintf(cmd, sizeof(cmd), "sha256sum %s/*.seg > /dev/null", dir);
	for (int k = 0; k < ROUNDS; k++) {
		double t0 = now_s(), t;

		CHECK(evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub, .whole = true }, NULL, NULL,
		                     &res) == 0);
		t = now_s() - t0;
		t_verify = t < t_verify ? t : t_verify;
		t = run_cmd(cmd);
		t_sha = t < t_sha ? t : t_sha;
	}
	printf("\nevidence cost, one run: %d CAN frames of the demo vehicle into a log in /dev/shm,\n"
	       "best of %d; %ld CPUs (the chain is hashed on a thread of its own with more than one)\n", ITEMS, ROUNDS,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-42s %9s %9s %6s %7s %6s\n", "pipeline behind the collector", "collector", "frames/s",
	       "ratio", "all CPU", "ratio");
	print_pair("decode (demo DBC) + encode + append", dec, st_dec);
	print_pair("raw frames: encode + append (worst case)", raw, st_raw);
	printf("\n%-46s %8s %12s %8s\n", "reading the same log", "CPU s", "MB/s", "ratio");
	printf("%-46s %8.3f %12.1f %8.3f\n", "sha256sum of the segment files (baseline)", t_sha,
	       (double)logbytes / 1e6 / t_sha, 1.0);
	printf("%-46s %8.3f %12.1f %8.3f\n", "railmon verify (CRC, decode, chain, Seals)", t_verify,
	       (double)logbytes / 1e6 / t_verify, t_verify / t_sha);
	printf("  %" PRIu64 " records, %.1f MB, %" PRIu64 " Seals verified\n", res.records, (double)logbytes / 1e6,
	       res.seals);
	printf("\nSeal overhead: %" PRIu64 " bytes per Seal (its Batch and frame), of which %" PRIu64 " the "
	       "Batch digest list (32 bytes a Batch: a change named at its Batch)\n", nseals ? sbytes / nseals : 0,
	       nseals ? listbytes / nseals : 0);
	{
		double log_h = (double)logbytes / ((double)ITEMS / 5000) * 3600; /* this load: 5000 frames/s */
		double segs_h = log_h / (16 << 20);

		/* the digest lists grow with the Batches, not the Seals: every
		   Batch of the run is listed once */
		double fixed = nseals ? (double)(sbytes - listbytes) / (double)nseals : 0;
		double list_h = (double)listbytes / ((double)ITEMS / 5000) * 3600;

		printf("  per hour at seal_interval_s = 60 (default) and one more per 16 MiB segment closed at\n"
		       "  this load (5000 frames/s, %.0f MB of log an hour: %.0f segments): %.1f KiB of Seals,\n"
		       "  %.1f KiB of digest lists (every Batch once): %.1f KiB, %.4f%% of the log\n", log_h / 1e6,
		       segs_h, (60 + segs_h) * fixed / 1024, list_h / 1024, ((60 + segs_h) * fixed + list_h) / 1024,
		       100 * ((60 + segs_h) * fixed + list_h) / log_h);
	}
	pl_channels_free(ch);
	conf_free(cfg);
	tu_rm_rf(dir);
	unlink(sk);
	unlink(pk);
	free(items);
	free(dir);
	return 0;
}
