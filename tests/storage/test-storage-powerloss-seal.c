/* SPDX-License-Identifier: MIT */
/*
 * test-storage-powerloss-seal.c - the power-loss sweep with the evidence
 * chain: the real sink (pipeline/sink.c) writes Batches and signed Seals over
 * three runs; the power goes at every write and sync, with the fault
 * device's 10 patterns of what the disk keeps of unsynced data.  After
 * each cut, recovery, and again after the next run took the chain up:
 * `verify` finds no problem in what was confirmed (fdatasync'd), and
 * every Seal among the confirmed records verifies.
 */
#include <inttypes.h>

#include "../evidence/evd-test-util.h"
#include "stor-faultdev.h"
#include "stor-test-util.h"

static uint8_t secret[EVD_SECRET_LEN], pub[EVD_PUBLIC_LEN];

struct cut {
	uint64_t confirmed; /* every record below it was fdatasync'd */
};

static void durable(struct fdev *dev, stor_log_t *log, int r, struct cut *c)
{
	if (r == 0 && !dev->dead && stor_log_confirmed_seq(log) > c->confirmed)
		c->confirmed = stor_log_confirmed_seq(log);
}

/* One run of the sink; stops at the cut. */
static void run(const char *dir, struct fdev *dev, unsigned items, uint32_t *seed, int64_t *t, struct cut *c)
{
	struct stor_log_cfg lc = { .dir = dir, .vehicle = "PL-EVD", .segment_bytes = 2048,
	                           .sync_window_ms = 3600 * 1000, .ops = &dev->ops };
	struct rec_batch_meta meta = { .vehicle = "PL-EVD", .config_hash = 3 };
	stor_log_t *log;
	pl_sink_t *s;

	meta.boot_id[0] = (uint8_t)et_rand(seed);
	if (stor_log_open(&lc, &log) < 0)
		return;
	if (pl_sink_new(&(struct pl_sink_cfg){ .log = log, .meta = &meta, .batch_max = 12, .batch_ms = 20,
	                                            .meta_interval_s = 3600, .deterministic = true,
	                                            .seal_secret = secret, .log_dir = dir }, &s) < 0) {
		stor_log_free(log);
		return;
	}
	for (unsigned i = 0; i < items && !dev->dead; i += 20) {
		et_feed(s, 20, t, seed);
		durable(dev, log, stor_log_sync(log), c);
	}
	if (!dev->dead)
		durable(dev, log, pl_sink_close(s), c);
	pl_sink_free(s);
	stor_log_free(log);
}

static void workload(const char *dir, struct fdev *dev, struct cut *c)
{
	uint32_t seed = 99;
	int64_t t = ET_T0;

	c->confirmed = 1;
	for (int k = 0; k < 3 && !dev->dead; k++)
		run(dir, dev, 60, &seed, &t, c);
}

/* The last Seal among the confirmed records, 0 if none. */
static uint64_t confirmed_seal(const char *dir, uint64_t confirmed)
{
	uint64_t last = 0;
	stor_reader_t *r;
	struct stor_rec rec;
	int n;

	CHECK(stor_reader_open(dir, &r) == 0);
	while ((n = stor_reader_next(r, &rec)) != 0)
		if (n == 1 && rec.first_seq < confirmed && et_is_seal(rec.payload, rec.len))
			last = rec.first_seq;
	stor_reader_free(r);
	return last;
}

static long n_verified_seals, n_problems_after;

static void check_verifies(const char *dir, uint64_t confirmed, long at, int pattern, const char *when)
{
	uint64_t seal = confirmed_seal(dir, confirmed);
	struct evd_result res;
	int r = evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub, .whole = true }, NULL, NULL, &res);

	/* a problem may only lie in what was never confirmed (a later block
	   the disk kept while it lost an earlier one) */
	if (r < 0 || (r == 1 && res.first.seq < confirmed && !(res.first.kind == EVD_PROBLEM_NO_SEAL && !seal)) ||
	    (seal && res.verified_end <= seal)) {
		fprintf(stderr, "FAIL %s: cut at op %ld, pattern %s: confirmed below %" PRIu64 ", last confirmed Seal %"
		        PRIu64 ", verified to %" PRIu64 ", first problem kind %d at seq %" PRIu64 "\n", when, at,
		        fdev_pattern_name(pattern), confirmed, seal, res.verified_end, res.first.kind, res.first.seq);
		abort();
	}
	n_verified_seals += res.seals;
	n_problems_after += r == 1;
}

static void after_cut(const char *dir, uint64_t confirmed, long at, int pattern)
{
	struct stor_log_cfg lc = { .dir = dir, .vehicle = "PL-EVD", .segment_bytes = 2048 };
	struct fdev dev;
	stor_log_t *log;
	struct cut c = { .confirmed = 1 };
	uint32_t seed = (uint32_t)at;
	int64_t t = ET_T0 + 3600 * 1000 * ET_MS;

	/* recovery: the log is opened (and closed) once, as the next start does */
	CHECK(stor_log_open(&lc, &log) == 0);
	stor_log_free(log);
	check_verifies(dir, confirmed, at, pattern, "after recovery");
	/* the next run takes the chain up and seals what it finds */
	CHECK(fdev_init(&dev, dir) == 0);
	run(dir, &dev, 20, &seed, &t, &c);
	fdev_done(&dev);
	check_verifies(dir, confirmed, at, pattern, "after the next run");
}

int main(void)
{
	char *dir = tu_tmpdir_in("powerloss-seal", true), sk[4200], pk[4200];
	char *keys = tu_tmpdir_in("powerloss-seal-keys", true);
	struct fdev dev;
	struct cut c;
	long total, runs = 0;

	snprintf(sk, sizeof(sk), "%s/v.key", keys);
	snprintf(pk, sizeof(pk), "%s/v.key.pub", keys);
	CHECK(evd_key_generate(sk, pk) == 0 && evd_key_load_secret(sk, secret) == 0 &&
	      evd_key_load_public(pk, pub) == 0);
	/* A clean run counts the write and sync points. */
	CHECK(fdev_init(&dev, dir) == 0);
	workload(dir, &dev, &c);
	total = dev.ops_seen;
	fdev_done(&dev);
	CHECK(confirmed_seal(dir, c.confirmed) > 0);
	check_verifies(dir, c.confirmed, 0, 0, "clean");
	tu_rm_rf(dir);

	for (long at = 1; at <= total; at++) {
		for (int p = 0; p < FDEV_PATTERNS; p++) {
			CHECK(mkdir(dir, 0755) == 0);
			CHECK(fdev_init(&dev, dir) == 0);
			dev.track = true;
			dev.mode = FDEV_CRASH;
			dev.fail_at = at;
			workload(dir, &dev, &c);
			CHECK(dev.dead);
			CHECK(fdev_power_cut(&dev, p, (uint32_t)(at * 16 + p)) == 0);
			fdev_done(&dev);
			after_cut(dir, c.confirmed, at, p);
			tu_rm_rf(dir);
			runs++;
		}
	}
	printf("power-loss sweep with Seals: %ld cut points x %d patterns = %ld runs: everything confirmed\n"
	       "  verified each time, after recovery and after the next run (%ld Seals verified; %ld verifications\n"
	       "  found damage, all of it in unconfirmed records)\n",
	       total, FDEV_PATTERNS, runs, n_verified_seals, n_problems_after);
	tu_rm_rf(keys);
	free(keys);
	free(dir);
	return 0;
}
