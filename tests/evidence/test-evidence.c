/* SPDX-License-Identifier: MIT */
/*
 * test-evidence.c - the pieces of the evidence chain (evidence/evd.h,
 * record/seal.h): key files, Seal signatures, the digest a re-send must
 * not change, the Seal's wire form, the sealer taking up a log's chain,
 * and bad arguments.
 */
#include <inttypes.h>
#include <sys/stat.h>

#include "evd-test-util.h"
#include "stor-test-util.h"

static char *base;

static void path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", base, name);
}

static void write_file(const char *p, const char *text, mode_t mode)
{
	FILE *f = fopen(p, "w");

	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0 && chmod(p, mode) == 0);
}

static void test_keys(void)
{
	char sk[4096], pk[4096], bad[4096];
	uint8_t secret[EVD_SECRET_LEN], pub[EVD_PUBLIC_LEN], pub2[EVD_PUBLIC_LEN];
	struct stat st;

	path(sk, sizeof(sk), "v.key");
	path(pk, sizeof(pk), "v.key.pub");
	CHECK(evd_key_generate(sk, pk) == 0);
	CHECK(stat(sk, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(stat(pk, &st) == 0 && (st.st_mode & 0777) == 0644);
	/* never overwritten */
	CHECK(evd_key_generate(sk, pk) == -EEXIST);
	CHECK(evd_key_load_secret(sk, secret) == 0 && evd_key_load_public(pk, pub) == 0);
	evd_key_public_of(secret, pub2);
	CHECK(!memcmp(pub, pub2, sizeof(pub)));
	/* the secret file names its public half too */
	CHECK(evd_key_load_public(sk, pub2) == 0 && !memcmp(pub, pub2, sizeof(pub)));
	/* which is which, for verify's warning */
	CHECK(evd_key_is_secret(sk) == 1 && evd_key_is_secret(pk) == 0 && evd_key_is_secret(base) == -EISDIR &&
	      evd_key_is_secret(NULL) == -EINVAL);
	/* a key others can read is refused, as ssh does */
	CHECK(chmod(sk, 0640) == 0 && evd_key_load_secret(sk, secret) == -EPERM);
	CHECK(chmod(sk, 0600) == 0);
	/* a public key is not a secret key; garbage is neither */
	CHECK(chmod(pk, 0600) == 0 && evd_key_load_secret(pk, secret) == -EBADMSG);
	path(bad, sizeof(bad), "bad.key");
	write_file(bad, "railmon-ed25519-secret 12zz\n", 0600);
	CHECK(evd_key_load_secret(bad, secret) == -EBADMSG && evd_key_load_public(bad, pub2) == -EBADMSG);
	write_file(bad, "", 0600);
	CHECK(evd_key_load_secret(bad, secret) == -EBADMSG);
	CHECK(evd_key_load_secret(base, secret) == -EISDIR);
	path(bad, sizeof(bad), "none.key");
	CHECK(evd_key_load_secret(bad, secret) == -ENOENT && evd_key_load_public(bad, pub) == -ENOENT);
	CHECK(evd_key_generate(NULL, pk) == -EINVAL && evd_key_load_secret(NULL, secret) == -EINVAL &&
	      evd_key_load_public(pk, NULL) == -EINVAL);
	puts("keys: 0600 secret, never overwritten, group-readable or malformed keys refused");
}

static void test_signature(void)
{
	char sk[4096], pk[4096];
	uint8_t a[EVD_SECRET_LEN], b[EVD_SECRET_LEN], pa[EVD_PUBLIC_LEN], h1[EVD_HASH_LEN], h2[EVD_HASH_LEN];
	struct rec_seal s = { .vehicle = "V1", .first_seq = 5, .end_seq = 99, .t_ns = ET_T0 }, t;

	path(sk, sizeof(sk), "b.key");
	path(pk, sizeof(pk), "b.key.pub");
	CHECK(evd_key_generate(sk, pk) == 0 && evd_key_load_secret(sk, b) == 0);
	path(sk, sizeof(sk), "v.key");
	CHECK(evd_key_load_secret(sk, a) == 0);
	evd_key_public_of(a, pa);
	CHECK(evd_seal_check(&s, pa) == -ENOKEY);
	evd_seal_hash(&s, h1);
	CHECK(evd_seal_sign(&s, a) == 0 && s.is_signed && evd_seal_check(&s, pa) == 0);
	/* the hash the next Seal links to covers the signature */
	evd_seal_hash(&s, h2);
	CHECK(memcmp(h1, h2, sizeof(h1)));
	/* every signed field matters */
	t = s, t.first_seq++;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	t = s, t.t_ns++;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	t = s, t.prev_seal[31] ^= 1;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	t = s, t.vehicle[1] = '2';
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	/* v2: its own Batch's fields too (the last Seal has no later link) */
	t = s, t.batch.config_hash ^= 1;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	t = s, t.batch.mono_t0_ns++;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	t = s, t.batch.t0_ns++;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	t = s, t.batch.schema_version++;
	CHECK(evd_seal_check(&t, pa) == -EKEYREJECTED);
	/* ... which the link leaves to the signature: the next Seal still
	   links to a Seal whose Batch changed (named at it, -ESTALE) */
	t = s, t.batch.config_hash ^= 1;
	evd_seal_hash(&t, h1);
	CHECK(!memcmp(h1, h2, sizeof(h1)));
	/* v1 signs no Batch field (old logs verify as before) */
	t = s, t.version = 1;
	CHECK(evd_seal_sign(&t, a) == 0);
	t.batch.config_hash ^= 1;
	CHECK(evd_seal_check(&t, pa) == 0);
	t = s;
	CHECK(evd_seal_sign(&t, b) == 0 && evd_seal_check(&t, pa) == -EKEYREJECTED);
	CHECK(evd_seal_sign(NULL, a) == -EINVAL && evd_seal_check(&s, NULL) == -EINVAL);
	puts("signatures: every signed field checked, another key refused");
}

static void test_digest(void)
{
	uint8_t buf[64], d1[EVD_HASH_LEN], d2[EVD_HASH_LEN], h[EVD_HASH_LEN] = { 0 }, g[EVD_HASH_LEN];
	uint8_t log_id[REC_LOG_ID_LEN] = { 1 };

	memset(buf, 0x55, sizeof(buf));
	evd_digest(buf, 40, d1);
	/* a re-send from the backlog appends Batch.historical = true */
	buf[40] = 7 << 3;
	buf[41] = 1;
	evd_digest(buf, 42, d2);
	CHECK(!memcmp(d1, d2, sizeof(d1)));
	buf[39] ^= 1;
	evd_digest(buf, 42, d2);
	CHECK(memcmp(d1, d2, sizeof(d1)));
	evd_chain_step(h, d1);
	evd_chain_genesis(log_id, 1, g);
	CHECK(memcmp(h, g, sizeof(h)));
	evd_chain_genesis(log_id, 2, h);
	CHECK(memcmp(h, g, sizeof(h)));
	puts("digest: the historical flag of a re-send is outside it, every other byte inside");
}

/* The Seal's wire form, and what the decoder refuses. */
static void test_wire(void)
{
	struct rec_batch_meta meta = { .vehicle = "V1", .log_id = { 9 } };
	struct rec_seal s = { .vehicle = "V1", .log_id = { 9 }, .first_seq = 3, .end_seq = 10, .t_ns = 42 }, got;
	struct acq_item ev = { .kind = ACQ_ITEM_EVENT, .t_ns = 42, .bus = ACQ_SOURCE_DAEMON,
	                       .event = { .code = ACQ_EV_SEAL, .arg = 7 } };
	uint8_t buf[REC_SEAL_SIGNED_MAX];
	rec_encoder_t *enc;
	rec_batch_t *b;
	const uint8_t *out;
	size_t len;

	memset(s.chain_head, 0xab, sizeof(s.chain_head));
	memset(s.signature, 0xcd, sizeof(s.signature));
	s.is_signed = true;
	CHECK(rec_encoder_new(&meta, 16, &enc) == 0);
	CHECK(rec_encoder_add(enc, &ev) == 0 && rec_encoder_set_seal(enc, &s) == 0);
	CHECK(rec_encoder_finish(enc, 10, &out, &len) == 1);
	CHECK(rec_batch_decode(out, len, &b) == 0 && rec_batch_seal(b, &got) == 0);
	CHECK(!memcmp(&got, &s, sizeof(s)) || (got.first_seq == 3 && got.end_seq == 10 && got.is_signed &&
	                                        !memcmp(got.chain_head, s.chain_head, EVD_HASH_LEN)));
	CHECK(rec_seal_signed_bytes(&got, buf) == rec_seal_signed_bytes(&s, buf));
	rec_batch_free(b);
	/* the next Batch has none: a data Batch */
	CHECK(rec_encoder_add(enc, &ev) == 0 && rec_encoder_finish(enc, 11, &out, &len) == 1);
	CHECK(rec_batch_decode(out, len, &b) == 0 && rec_batch_seal(b, &got) == -ENOENT);
	rec_batch_free(b);
	/* an empty range that ends before it starts */
	s.end_seq = 2;
	CHECK(rec_encoder_add(enc, &ev) == 0 && rec_encoder_set_seal(enc, &s) == 0);
	CHECK(rec_encoder_finish(enc, 12, &out, &len) == 1);
	CHECK(rec_batch_decode(out, len, &b) == 0 && rec_batch_seal(b, &got) == -EBADMSG);
	rec_batch_free(b);
	CHECK(rec_batch_seal(NULL, &got) == -EINVAL && rec_encoder_set_seal(NULL, &s) == -EINVAL &&
	      rec_seal_signed_bytes(NULL, buf) == -EINVAL);
	rec_encoder_free(enc);
	puts("wire: Batch.seal round trip, data Batches have none, a bad range refused");
}

/* The sealer takes up the log's chain after a clean stop and after a
   crash (sealing the tail then), and starts a new one after damage. */
static void test_resume(void)
{
	char dir[4096], sk[4096];
	uint8_t secret[EVD_SECRET_LEN], pub[EVD_PUBLIC_LEN];
	struct et_gen g = { .dir = dir, .secret = secret, .segment_bytes = 8192, .items = 300, .seed = 5 };
	struct evd_result res;
	uint32_t seed = 11;
	int64_t t = ET_T0;

	path(sk, sizeof(sk), "v.key");
	CHECK(evd_key_load_secret(sk, secret) == 0);
	evd_key_public_of(secret, pub);
	path(dir, sizeof(dir), "log");
	CHECK(mkdir(dir, 0755) == 0);
	CHECK(et_session(&g, false, false, &t, &seed) == 0);
	CHECK(et_session(&g, true, false, &t, &seed) == 0);
	CHECK(evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub, .whole = true }, NULL, NULL, &res) == 0);
	CHECK(res.tail_end > res.tail_first && res.verified_end == res.tail_first && !res.unsealed);
	/* the next run seals the crash's tail: one chain, nothing unsealed */
	CHECK(et_session(&g, false, false, &t, &seed) == 0);
	CHECK(evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub, .whole = true }, NULL, NULL, &res) == 0);
	CHECK(res.tail_end == res.tail_first && !res.unsealed && res.verified_first == 1);
	printf("resume: a crash's unsealed tail is sealed by the next run: seq 1..%" PRIu64 " verified, %" PRIu64
	       " Seals\n", res.verified_end - 1, res.seals);
	/* without a key: verified as a chain, refused against a key */
	tu_rm_rf(dir);
	CHECK(mkdir(dir, 0755) == 0);
	g.secret = NULL;
	g.sessions = 2;
	et_generate(&g);
	CHECK(evd_verify_dir(dir, &(struct evd_verify_cfg){ 0 }, NULL, NULL, &res) == 0 && res.seals &&
	      !res.signed_seals);
	CHECK(evd_verify_dir(dir, &(struct evd_verify_cfg){ .public_key = pub }, NULL, NULL, &res) == 1 &&
	      res.first.kind == EVD_PROBLEM_SIGNATURE && res.first.err == -ENOKEY);
	tu_rm_rf(dir);
	puts("unsigned: the chain verifies without a key, and fails against one");
}

/* Hashed on the sealer's thread or inline: the same chain, the same Seals,
   through ring wraps (Batches of up to 1 MiB in an 8 MiB ring). */
static void test_threaded(void)
{
	struct evd_sealer_cfg cfg = { .vehicle = "V1", .next_seq = 1 };
	evd_sealer_t *a, *b;
	uint8_t *buf = malloc(1u << 20);
	uint32_t seed = 3;
	uint64_t seq = 1;

	CHECK(buf);
	for (size_t i = 0; i < (1u << 20); i++)
		buf[i] = (uint8_t)et_rand(&seed);
	CHECK(evd_sealer_new(&cfg, &a) == 0);
	cfg.threaded = true;
	CHECK(evd_sealer_new(&cfg, &b) == 0);
	for (int round = 0; round < 6; round++) {
		struct rec_seal sa, sb;

		for (int k = 0; k < 20; k++) {
			size_t len = et_rand(&seed) % (1u << 20);
			const uint8_t *p = buf + et_rand(&seed) % ((1u << 20) - len + 1);

			evd_sealer_add(a, seq, 3, p, len);
			evd_sealer_add(b, seq, 3, p, len);
			seq += 3;
		}
		CHECK(evd_sealer_seal(a, seq, 1, 0, &sa) == 0 && evd_sealer_seal(b, seq, 1, 0, &sb) == 0);
		CHECK(!memcmp(sa.chain_head, sb.chain_head, EVD_HASH_LEN) &&
		      !memcmp(sa.chain_start, sb.chain_start, EVD_HASH_LEN) && sa.first_seq == sb.first_seq);
		/* the Seal's own Batch starts the next range */
		evd_sealer_add(a, seq, 1, buf, 300);
		evd_sealer_add(b, seq, 1, buf, 300);
		seq++;
	}
	evd_sealer_free(a);
	evd_sealer_free(b);
	free(buf);
	puts("threaded: the hasher thread gives the inline chain, Seal for Seal (120 Batches up to 1 MiB)");
}

/* A Seal the log refused (a full disk) is not linked to: the next one
   covers its range again and links to the one before. */
/* Packed in place (evd_sealer_reserve + add_reserved, the sink's way)
   against the inline chain: the same Seals, with Batches shorter than
   their room, rooms given up (a refused append) and filled with other
   bytes, and the ring wrapping.  NULL without a hasher thread. */
static void test_reserved(void)
{
	struct evd_sealer_cfg cfg = { .vehicle = "V1", .next_seq = 1 };
	evd_sealer_t *a, *b;
	uint8_t *buf = malloc(1u << 20);
	uint32_t seed = 7;
	uint64_t seq = 1;
	unsigned dropped = 0;

	CHECK(buf);
	for (size_t i = 0; i < (1u << 20); i++)
		buf[i] = (uint8_t)et_rand(&seed);
	CHECK(evd_sealer_new(&cfg, &a) == 0);
	CHECK(evd_sealer_reserve(a, 100) == NULL);
	cfg.threaded = true;
	CHECK(evd_sealer_new(&cfg, &b) == 0);
	for (int round = 0; round < 6; round++) {
		struct rec_seal sa, sb;

		for (int k = 0; k < 20; k++) {
			size_t len = et_rand(&seed) % (1u << 20);
			size_t max = len + et_rand(&seed) % 4096;
			const uint8_t *p = buf + et_rand(&seed) % ((1u << 20) - len + 1);
			uint8_t *room = evd_sealer_reserve(b, max);

			CHECK(room);
			if (et_rand(&seed) % 5 == 0) {
				/* refused: the room is written, then not added */
				memset(room, 0x5a, max);
				dropped++;
				continue;
			}
			memcpy(room, p, len);
			memset(room + len, 0xa5, max - len); /* past len: not hashed */
			evd_sealer_add(a, seq, 3, p, len);
			evd_sealer_add_reserved(b, seq, 3, len);
			seq += 3;
		}
		CHECK(evd_sealer_pending(a) == evd_sealer_pending(b));
		CHECK(evd_sealer_seal(a, seq, 1, 0, &sa) == 0 && evd_sealer_seal(b, seq, 1, 0, &sb) == 0);
		CHECK(!memcmp(sa.chain_head, sb.chain_head, EVD_HASH_LEN) &&
		      !memcmp(sa.chain_start, sb.chain_start, EVD_HASH_LEN) && sa.first_seq == sb.first_seq &&
		      !memcmp(sa.prev_seal, sb.prev_seal, EVD_HASH_LEN));
		/* the Seal's own Batch, in place too: it starts the next range */
		memcpy(evd_sealer_reserve(b, 300), buf, 300);
		evd_sealer_add(a, seq, 1, buf, 300);
		evd_sealer_add_reserved(b, seq, 1, 300);
		seq++;
	}
	CHECK(dropped > 0);
	evd_sealer_free(a);
	evd_sealer_free(b);
	free(buf);
	printf("reserved: Batches packed in the hasher's ring give the inline chain (%u rooms given up)\n", dropped);
}

static void test_refused_seal(void)
{
	evd_sealer_t *s;
	struct rec_seal s1, s2, s3;
	uint8_t buf[100] = { 1 }, h1[EVD_HASH_LEN];

	CHECK(evd_sealer_new(&(struct evd_sealer_cfg){ .vehicle = "V1", .next_seq = 1 }, &s) == 0);
	evd_sealer_add(s, 1, 5, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 6, 1, 0, &s1) == 0);
	evd_sealer_add(s, 6, 1, buf, 10); /* s1's Batch, taken */
	evd_seal_hash(&s1, h1);
	evd_sealer_add(s, 7, 5, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 12, 2, 0, &s2) == 0 && s2.first_seq == 7 && !memcmp(s2.prev_seal, h1, EVD_HASH_LEN));
	/* s2's Batch refused: seq 12 is a gap */
	evd_sealer_add(s, 13, 5, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 18, 3, 0, &s3) == 0);
	CHECK(s3.first_seq == 7 && !memcmp(s3.prev_seal, h1, EVD_HASH_LEN) &&
	      !memcmp(s3.chain_start, s2.chain_start, EVD_HASH_LEN));
	evd_sealer_free(s);
	puts("refused Seal: the next covers its range again, linked to the one before");
}

/* Seal v2: each Seal lists its range's Batch digests, which fold from its
   chain_start to its head; a restart starts at the genesis of its first
   seq and links to the last Seal the log took (signed: a restart cannot be
   passed off as the start of the log). */
static void test_restart_linked(void)
{
	struct evd_sealer_cfg cfg = { .vehicle = "V1", .next_seq = 1, .log_id = { 9, 8, 7 } };
	uint8_t buf[100] = { 1 }, h1[EVD_HASH_LEN], g[EVD_HASH_LEN], h[EVD_HASH_LEN], d[3][EVD_HASH_LEN];
	struct rec_seal s1, s2;
	evd_sealer_t *s;

	CHECK(evd_sealer_new(&cfg, &s) == 0);
	evd_sealer_add(s, 1, 5, buf, sizeof(buf));
	buf[0] = 2;
	evd_sealer_add(s, 6, 5, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 11, 1, 0, &s1) == 0 && s1.version == REC_SEAL_VERSION && s1.ndigests == 2);
	buf[0] = 1;
	evd_digest(buf, sizeof(buf), d[0]);
	buf[0] = 2;
	evd_digest(buf, sizeof(buf), d[1]);
	CHECK(!memcmp(s1.digests, d[0], EVD_HASH_LEN) && !memcmp(s1.digests + EVD_HASH_LEN, d[1], EVD_HASH_LEN));
	memcpy(h, s1.chain_start, EVD_HASH_LEN);
	evd_chain_step(h, d[0]);
	evd_chain_step(h, d[1]);
	CHECK(!memcmp(h, s1.chain_head, EVD_HASH_LEN));
	evd_sealer_add(s, 11, 1, buf, 10); /* s1's Batch, taken */
	evd_seal_hash(&s1, h1);
	evd_sealer_add(s, 12, 5, buf, sizeof(buf)); /* then lost by the log */
	/* lost from 12 on: s1 (seq 11) is the newest Seal the log holds */
	CHECK(evd_sealer_restart(s, 17, 12) == 0);
	buf[0] = 3;
	evd_sealer_add(s, 17, 4, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 21, 2, 0, &s2) == 0);
	evd_chain_genesis(cfg.log_id, 17, g);
	evd_digest(buf, sizeof(buf), d[2]);
	CHECK(s2.first_seq == 17 && !memcmp(s2.chain_start, g, EVD_HASH_LEN) && !memcmp(s2.prev_seal, h1, EVD_HASH_LEN));
	CHECK(s2.ndigests == 1 && !memcmp(s2.digests, d[2], EVD_HASH_LEN));
	evd_sealer_add(s, 21, 1, buf, 10); /* s2's Batch, taken */
	/* lost from 11 on (s1's Batch too, and s2's): linked to no Seal, not to
	   one the log lost; where the loss began not known: the same */
	evd_sealer_add(s, 22, 1, buf, sizeof(buf));
	CHECK(evd_sealer_restart(s, 23, 11) == 0);
	evd_sealer_add(s, 23, 1, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 24, 4, 0, &s2) == 0 && s2.first_seq == 23);
	for (int i = 0; i < EVD_HASH_LEN; i++)
		CHECK(!s2.prev_seal[i]);
	evd_sealer_add(s, 24, 1, buf, 10);
	CHECK(evd_sealer_restart(s, 25, 0) == 0);
	evd_sealer_add(s, 25, 1, buf, sizeof(buf));
	CHECK(evd_sealer_seal(s, 26, 5, 0, &s2) == 0);
	for (int i = 0; i < EVD_HASH_LEN; i++)
		CHECK(!s2.prev_seal[i]);
	evd_sealer_free(s);
	puts("Seal v2: digest list folds to the head; a restart starts at its genesis, linked to the Seal before");
}

static void test_bad_args(void)
{
	struct evd_result res;
	evd_sealer_t *s;
	evd_verifier_t *v;
	struct rec_seal seal;

	CHECK(evd_sealer_new(NULL, &s) == -EINVAL);
	CHECK(evd_sealer_new(&(struct evd_sealer_cfg){ .vehicle = "V", .next_seq = 0 }, &s) == -EINVAL);
	CHECK(evd_sealer_new(&(struct evd_sealer_cfg){ .vehicle = "V", .next_seq = 5 }, &s) == 0);
	CHECK(evd_sealer_pending(s) == 0 && evd_sealer_seal(s, 4, 0, 0, &seal) == -EINVAL);
	evd_sealer_free(s);
	CHECK(evd_verifier_new(NULL, &v) == -EINVAL && evd_verifier_record(NULL, NULL, NULL) == -EINVAL &&
	      evd_verifier_end(NULL, NULL, NULL) == -EINVAL && evd_verifier_result(NULL, &res) == -EINVAL);
	CHECK(evd_verify_dir(NULL, &(struct evd_verify_cfg){ 0 }, NULL, NULL, &res) == -EINVAL);
	CHECK(evd_verify_dir("/nonexistent/railmon", &(struct evd_verify_cfg){ 0 }, NULL, NULL, &res) == -ENOENT);
	CHECK(evd_sealer_free(NULL) == NULL && evd_verifier_free(NULL) == NULL);
	puts("bad arguments: -EINVAL");
}

int main(void)
{
	base = tu_tmpdir_in("evd", true);
	CHECK(evd_init() == 0);
	test_keys();
	test_signature();
	test_digest();
	test_wire();
	test_resume();
	test_threaded();
	test_reserved();
	test_refused_seal();
	test_restart_linked();
	test_bad_args();
	tu_rm_rf(base);
	free(base);
	return 0;
}
