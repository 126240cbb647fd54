/* SPDX-License-Identifier: MIT */
/*
 * test-tamper.c - the tamper matrix: logs written by the real sink with
 * their chain and Seals, tampered with as the issue lists (one flipped
 * byte anywhere, a deleted segment, two segments swapped, a record removed
 * from the middle, a forged record with its CRC recomputed, a replaced
 * Seal, a re-signed Seal, Seals signed by another key), each at random
 * positions in many random logs: `verify` must find every one.  Then 1,000
 * clean logs (several runs, crashes leaving unsealed tails, retention)
 * must verify without a false alarm.
 */
#include <inttypes.h>

#include "evd-test-util.h"
#include "stor-test-util.h"

#define TRIALS 60        /* per case */
#define CLEAN 1000

enum tamper {
	T_FLIP, T_DELETE, T_SWAP, T_REMOVE, T_FORGE, T_REPLACE_SEAL, T_RESIGN_SEAL, T_OTHER_KEY, T_MAX
};

static const char *const tamper_names[T_MAX] = {
	"flipped byte", "deleted segment", "two segments swapped", "record removed (GAP, CRC ok)",
	"forged record (CRC ok)", "replaced seal (old signature)", "re-signed seal (other key)",
	"signed by another key",
};

static const char *const kind_names[EVD_PROBLEM_KIND_MAX] = {
	"storage", "malformed", "signature", "chain", "seal-link", "no-seal", "head", "tail",
};

static uint8_t key_a[EVD_SECRET_LEN], key_b[EVD_SECRET_LEN], pub_a[EVD_PUBLIC_LEN];
static uint64_t n_restarts; /* clean logs with a chain restart */

/* The index of the last Seal's frame; the log has at least one. */
static size_t last_seal(const struct et_frame *fr, size_t n)
{
	size_t last = n;

	for (size_t i = 0; i < n; i++)
		if (fr[i].seal)
			last = i;
	CHECK(last < n);
	return last;
}

/* A random record frame sealed by a later Seal (not the last Seal: a log
   cut after its second-to-last Seal is a shorter log, not a tampered one),
   a data Batch when want_data. */
static size_t pick_sealed(const struct et_frame *fr, size_t n, bool want_data, uint32_t *seed)
{
	size_t last = last_seal(fr, n), i;

	CHECK(last > 1);
	do
		i = et_rand(seed) % last;
	while (want_data && fr[i].seal);
	return i;
}

static void tamper_seal(const char *dir, const struct et_segs *segs, bool resign, uint32_t *seed)
{
	struct et_frame *fr;
	size_t n = et_frames(dir, segs, &fr), i, len;
	struct rec_seal seal;
	uint8_t *p, *np;
	rec_batch_t *b;

	do
		i = et_rand(seed) % n;
	while (!fr[i].seal);
	p = et_payload(dir, segs, &fr[i]);
	/* (the Seal's digest list points into b: freed after the reseal) */
	CHECK(rec_batch_decode(p, fr[i].f.len, &b) == 0 && rec_batch_seal(b, &seal) == 0);
	/* what a forger wants a Seal to say: another head (for changed
	   records), or another range */
	if (et_rand(seed) % 2)
		seal.chain_head[et_rand(seed) % EVD_HASH_LEN] ^= (uint8_t)(1 + et_rand(seed) % 255);
	else
		seal.first_seq += 1 + et_rand(seed) % 3;
	if (resign)
		CHECK(evd_seal_sign(&seal, key_b) == 0);
	len = et_reseal(p, fr[i].f.len, &seal, &np);
	rec_batch_free(b);
	fr[i].f.len = (uint32_t)len;
	et_rewrite(dir, segs->names[fr[i].seg], fr[i].off, &fr[i].f, np);
	free(np);
	free(p);
	free(fr);
}

static void tamper_record(const char *dir, const struct et_segs *segs, bool forge, uint32_t *seed)
{
	struct et_frame *fr;
	size_t n = et_frames(dir, segs, &fr), i = pick_sealed(fr, n, forge, seed);
	struct stor_frame nf = fr[i].f;
	uint8_t *p = et_payload(dir, segs, &fr[i]);

	if (forge) {
		p[et_rand(seed) % nf.len] ^= (uint8_t)(1 + et_rand(seed) % 255);
	} else {
		/* as if the writer had dropped them: the reader skips a GAP */
		nf.flags = STOR_FRAME_GAP;
		nf.len = 0;
	}
	et_rewrite(dir, segs->names[fr[i].seg], fr[i].off, &nf, p);
	free(p);
	free(fr);
}

static void tamper_files(const char *dir, const struct et_segs *segs, enum tamper t, uint32_t *seed)
{
	char a[4200], b[4200], tmp[4200];
	size_t i, j, len;
	uint8_t *buf;

	switch (t) {
	case T_FLIP:
		i = et_rand(seed) % segs->n;
		buf = et_load(dir, segs->names[i], &len);
		j = et_rand(seed) % len;
		if (getenv("ET_DEBUG"))
			fprintf(stderr, "flip %s offset %zu of %zu\n", segs->names[i], j, len);
		buf[j] ^= (uint8_t)(1 + et_rand(seed) % 255);
		et_store(dir, segs->names[i], buf, len);
		free(buf);
		break;
	case T_DELETE:
		/* any but the newest: without it the log just ends earlier
		   (README "Evidence": compare with the ground's copy) */
		i = et_rand(seed) % (segs->n - 1);
		snprintf(a, sizeof(a), "%s/%s", dir, segs->names[i]);
		CHECK(unlink(a) == 0);
		break;
	case T_SWAP:
		i = et_rand(seed) % segs->n;
		do
			j = et_rand(seed) % segs->n;
		while (j == i);
		snprintf(a, sizeof(a), "%s/%s", dir, segs->names[i]);
		snprintf(b, sizeof(b), "%s/%s", dir, segs->names[j]);
		snprintf(tmp, sizeof(tmp), "%s/swap.tmp", dir);
		CHECK(rename(a, tmp) == 0 && rename(b, a) == 0 && rename(tmp, b) == 0);
		break;
	default:
		break;
	}
}

static bool trial(const char *dir, enum tamper t, uint32_t seed, enum evd_problem_kind *ret_kind)
{
	struct et_gen g = { .dir = dir, .secret = t == T_OTHER_KEY ? key_b : key_a, .seed = seed };
	struct evd_result res;
	struct et_segs segs;
	int r;

	/* enough segments to delete and swap, enough Seals to pick from */
	g.segment_bytes = 4096 + et_rand(&seed) % 8192;
	g.sessions = 1 + et_rand(&seed) % 3;
	g.items = 900 + et_rand(&seed) % 600;
	CHECK(mkdir(dir, 0755) == 0);
	et_generate(&g);
	et_list(dir, &segs);
	CHECK(segs.n >= 3, "%zu segments", segs.n);
	if (t <= T_SWAP)
		tamper_files(dir, &segs, t, &seed);
	else if (t == T_REMOVE || t == T_FORGE)
		tamper_record(dir, &segs, t == T_FORGE, &seed);
	else if (t == T_REPLACE_SEAL || t == T_RESIGN_SEAL)
		tamper_seal(dir, &segs, t == T_RESIGN_SEAL, &seed);
	r = evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub_a, .whole = true }, NULL, NULL, &res);
	CHECK(r >= 0);
	tu_rm_rf(dir);
	if (r == 1) {
		*ret_kind = res.first.kind;
		/* the first problem is located: a segment file, or the seq
		   before which a segment is missing */
		CHECK(res.first.segment || res.first.kind == EVD_PROBLEM_NO_SEAL);
	}
	return r == 1;
}

/* A clean log's ranges: in seq order, each after the one before, and of
   the kinds a clean log has (nothing damaged, changed or unproven); the
   seqs of all kinds add up to the span read. */
static void ranges_ok(const struct evd_result *r, uint32_t seed)
{
	uint64_t sum = 0;

	CHECK(r->nranges >= 1 && !r->ranges_omitted, "seed %u", seed);
	for (size_t i = 0; i < r->nranges; i++) {
		const struct evd_range *g = &r->ranges[i];

		CHECK(g->end > g->first && (i == 0 || g->first == r->ranges[i - 1].end), "seed %u: range %zu", seed, i);
		CHECK(g->kind == EVD_RANGE_VERIFIED || g->kind == EVD_RANGE_TAIL || g->kind == EVD_RANGE_BETWEEN ||
		      g->kind == EVD_RANGE_HEAD || g->kind == EVD_RANGE_NOT_STORED,
		      "seed %u: a clean log's range %" PRIu64 "..%" PRIu64 " of kind %d", seed, g->first, g->end - 1,
		      g->kind);
	}
	for (int k = 0; k < EVD_RANGE_KIND_MAX; k++)
		sum += r->seqs[k];
	CHECK(sum == r->ranges[r->nranges - 1].end - r->ranges[0].first, "seed %u", seed);
}

/* A clean log of random shape: runs, crashes, retention. */
static void clean(const char *dir, uint32_t seed, struct evd_result *tot)
{
	struct et_gen g = { .dir = dir, .secret = key_a, .seed = seed };
	struct evd_result res;
	int r;

	g.segment_bytes = 2048 + et_rand(&seed) % 16384;
	g.sessions = 1 + et_rand(&seed) % 4;
	g.items = 20 + et_rand(&seed) % 400;
	/* a crash in a later run: the first left a Seal (a log that never
	   got one has nothing to verify, and verify says so: no-seal) */
	g.crash_last = g.sessions > 1 && et_rand(&seed) % 2 == 0;
	/* Retention of a few tiny segments: without a crash, which could
	   leave it nothing but an unsealed tail (verify: no-seal, nothing
	   verified; a daemon seals every seal_interval_s). */
	if (!g.crash_last && et_rand(&seed) % 3 == 0)
		g.retention_bytes = (2 + et_rand(&seed) % 3) * (uint64_t)g.segment_bytes;
	/* A chain restart: a later run that does not take up the chain (as
	   a writer that found no Seal to continue), after a run that crashed
	   before sealing its last records: those lie between the chains. */
	if (g.sessions > 2 && et_rand(&seed) % 3 == 0) {
		g.fresh_session = 2 + et_rand(&seed) % (g.sessions - 1);
		g.crash_session = g.fresh_session - 1;
	}
	CHECK(mkdir(dir, 0755) == 0);
	et_generate(&g);
	r = evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub_a, .whole = !g.retention_bytes },
	                   NULL, NULL, &res);
	CHECK(r == 0, "clean log (seed %u) has %" PRIu64 " problem(s), first kind %d at seq %" PRIu64, seed,
	      res.problems, res.first.kind, res.first.seq);
	/* retention may leave only a Seal whose range it deleted: all head */
	CHECK((res.seals >= 1 || (g.retention_bytes && res.head_end > res.head_first)) && res.signed_seals >= res.seals,
	      "seed %u: %" PRIu64 " seals, %" PRIu64 " signed, %" PRIu64 " records, head %" PRIu64 "..%" PRIu64
	      ", tail %" PRIu64 "..%" PRIu64 ", retention %" PRIu64 ", segment %u, sessions %u", seed, res.seals,
	      res.signed_seals, res.records, res.head_first, res.head_end, res.tail_first, res.tail_end,
	      g.retention_bytes, g.segment_bytes, g.sessions);
	/* everything up to the last Seal verified; after it, the tail */
	CHECK(res.tail_end == res.tail_first || res.verified_end == res.tail_first);
	ranges_ok(&res, seed);
	tot->unsealed += res.unsealed;
	n_restarts += g.fresh_session != 0;
	tot->records += res.records;
	tot->seals += res.seals;
	tot->tail_end += res.tail_end > res.tail_first;
	tot->head_end += res.head_end > res.head_first;
	tu_rm_rf(dir);
}

int main(void)
{
	char *base = tu_tmpdir_in("evd-tamper", true), dir[4096];
	unsigned detected[T_MAX] = { 0 }, kinds[T_MAX][EVD_PROBLEM_KIND_MAX] = { { 0 } };
	struct evd_result tot = { 0 };
	char pk_path[4096], sk_path[4096];

	/* the vehicle's key (A) and a forger's (B), as keygen makes them */
	snprintf(sk_path, sizeof(sk_path), "%s/a.key", base);
	snprintf(pk_path, sizeof(pk_path), "%s/a.key.pub", base);
	CHECK(evd_key_generate(sk_path, pk_path) == 0);
	CHECK(evd_key_load_secret(sk_path, key_a) == 0 && evd_key_load_public(pk_path, pub_a) == 0);
	snprintf(sk_path, sizeof(sk_path), "%s/b.key", base);
	snprintf(pk_path, sizeof(pk_path), "%s/b.key.pub", base);
	CHECK(evd_key_generate(sk_path, pk_path) == 0 && evd_key_load_secret(sk_path, key_b) == 0);
	snprintf(dir, sizeof(dir), "%s/log", base);

	for (int t = 0; t < T_MAX; t++)
		for (unsigned k = 0; k < TRIALS; k++) {
			enum evd_problem_kind kind = EVD_PROBLEM_KIND_MAX;
			uint32_t seed = (uint32_t)t * 100003u + k + 1;

			if (trial(dir, (enum tamper)t, seed, &kind)) {
				detected[t]++;
				kinds[t][kind]++;
			} else {
				fprintf(stderr, "NOT DETECTED: %s, seed %u\n", tamper_names[t], seed);
			}
		}
	printf("tamper matrix (%d random logs and positions per case; verify --whole):\n", TRIALS);
	printf("  %-32s %9s   first problem reported\n", "case", "detected");
	for (int t = 0; t < T_MAX; t++) {
		char how[256] = "";
		size_t n = 0;

		for (int k = 0; k < EVD_PROBLEM_KIND_MAX; k++)
			if (kinds[t][k])
				n += (size_t)snprintf(how + n, sizeof(how) - n, "%s%s %u", n ? ", " : "", kind_names[k],
				                      kinds[t][k]);
		printf("  %-32s %4u/%-4u   %s\n", tamper_names[t], detected[t], TRIALS, how);
	}
	for (unsigned k = 0; k < CLEAN; k++)
		clean(dir, 7777777u + k, &tot);
	printf("clean: %d random logs (1-4 runs, %" PRIu64 " with an unsealed tail after a crash, %" PRIu64
	       " trimmed by retention, %" PRIu64 " with a chain restart: %" PRIu64 " seqs between chains), %" PRIu64
	       " records, %" PRIu64 " Seals: 0 false alarms\n",
	       CLEAN, tot.tail_end, tot.head_end, n_restarts, tot.unsealed, tot.records, tot.seals);
	for (int t = 0; t < T_MAX; t++)
		CHECK(detected[t] == TRIALS, "%s: %u of %d detected", tamper_names[t], detected[t], TRIALS);
	tu_rm_rf(base);
	free(base);
	return 0;
}
