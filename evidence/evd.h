/* SPDX-License-Identifier: MIT */
/*
 * evd.h - evidence: the hash chain over every Batch, the signed Seals that
 * cover it, the vehicle's key, and the verification of a log (README
 * "Evidence").  Cryptography is libsodium's: BLAKE2b-256 for the chain
 * (crypto_generichash; libsodium's own hash, faster than its SHA-256 in
 * software, which is what a board's ARM core without SHA extensions runs)
 * and Ed25519 for the signatures (crypto_sign).
 *
 * Chain: head(0) = chain_start; head(i) = BLAKE2b-256(head(i-1) || d(i)),
 * d(i) = BLAKE2b-256 of Batch i's bytes without trailing Batch.historical
 * fields (the forwarder appends one to a re-sent Batch: the ground log then
 * holds the same Batch with two more bytes).
 *
 * Nothing here logs; errors are -errno, and the verifier describes each
 * problem in a struct the caller prints.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/seal.h"
#include "storage/stor.h"

#define EVD_HASH_LEN 32
#define EVD_PUBLIC_LEN 32
#define EVD_SECRET_LEN 64

/* libsodium's set-up; call before anything else (idempotent, thread-safe).
   0 or -EIO. */
int evd_init(void);

/* d(i) of a Batch's bytes (see above). */
void evd_digest(const void *payload, size_t len, uint8_t ret_digest[EVD_HASH_LEN]);

/* head = BLAKE2b-256(head || digest). */
void evd_chain_step(uint8_t head[EVD_HASH_LEN], const uint8_t digest[EVD_HASH_LEN]);

/* Where a new chain starts: BLAKE2b-256("railmon.chain.v1" || log id ||
   first seq, LE). */
void evd_chain_genesis(const uint8_t log_id[REC_LOG_ID_LEN], uint64_t first_seq,
                       uint8_t ret_head[EVD_HASH_LEN]);

/* What the next Seal's prev_seal holds: BLAKE2b-256 of this one's signed
   bytes with its Batch's fields (rec_seal_batch) as zeros, and its
   signature (64 zeros when unsigned), which covers those fields. */
void evd_seal_hash(const struct rec_seal *seal, uint8_t ret_hash[EVD_HASH_LEN]);

/* Sign seal (sets signature and is_signed).  0 or -EINVAL. */
int evd_seal_sign(struct rec_seal *seal, const uint8_t secret[EVD_SECRET_LEN]);

/* 0: signed by the key; -ENOKEY: not signed; -EKEYREJECTED: the signature
   does not verify (another key, or bytes changed); -EINVAL. */
int evd_seal_check(const struct rec_seal *seal, const uint8_t public_key[EVD_PUBLIC_LEN]);

/* ---------------------------------------------------------------- keys */

/*
 * Key files are one line of text: "railmon-ed25519-secret HEX64" (the
 * 32-byte seed; mode 0600) and "railmon-ed25519-public HEX64".
 *
 * Make a new key pair.  Both files are created new (O_EXCL: an existing
 * key is never overwritten), the secret one 0600, and synced.  0, -EEXIST,
 * -errno.
 */
int evd_key_generate(const char *secret_path, const char *public_path);

/* Read a secret key.  0; -EPERM when the file is readable or writable by
   group or others (as ssh does: a key others could read is not the
   vehicle's alone); -EBADMSG not a railmon secret key; -errno. */
int evd_key_load_secret(const char *path, uint8_t ret_secret[EVD_SECRET_LEN]);

/* Read a public key (or the public half of a secret key file).  0,
   -EBADMSG, -errno. */
int evd_key_load_public(const char *path, uint8_t ret_public[EVD_PUBLIC_LEN]);

/* 1 when path is a railmon secret key file (verify warns: it needs only
   the public half), 0 when it is not, -errno when it cannot be read. */
int evd_key_is_secret(const char *path);

/* Hex of the first 8 bytes of a public key: how the key is named to a
   person (check, verify, keygen).  buf holds 17 bytes; returns buf. */
const char *evd_key_id(const uint8_t public_key[EVD_PUBLIC_LEN], char buf[17]);

/* The public key of a secret key. */
void evd_key_public_of(const uint8_t secret[EVD_SECRET_LEN], uint8_t ret_public[EVD_PUBLIC_LEN]);

/* -------------------------------------------------------------- sealer */

/*
 * The vehicle side: every Batch the log took enters the chain
 * (evd_sealer_add), and evd_sealer_seal makes the Seal for everything
 * since the last one.  Called from one thread at a time (the collector's);
 * no allocation after new.
 */
typedef struct evd_sealer evd_sealer_t;

struct evd_sealer_cfg {
	const char *vehicle;              /* at most 63 bytes (copied) */
	uint8_t log_id[REC_LOG_ID_LEN];
	uint8_t boot_id[REC_BOOT_ID_LEN];
	const uint8_t *secret;            /* EVD_SECRET_LEN bytes (copied), NULL: unsigned */
	uint64_t config_hash;             /* the Seal Batches' config_hash (signed) */
	const char *dir;                  /* the log, to continue its chain; NULL: a new chain */
	uint64_t next_seq;                /* the log's next seq */
	bool threaded;                    /* hash on a thread of the sealer's own (a
	                                     board with more than one core): add only
	                                     copies the Batch, seal waits for the hash */
};

/*
 * Make a sealer.  With dir it looks for the last Seal in the newest
 * segments of the log and continues its chain through the records written
 * after it (a crash before the next seal: the next Seal covers them);
 * without one (a new log, or damage after it), a new chain starts at
 * next_seq: its chain_start is the genesis of next_seq, and its prev_seal
 * the last Seal found before the damage (zero when none was found).
 * 0, -EINVAL, -ENOMEM.
 */
int evd_sealer_new(const struct evd_sealer_cfg *cfg, evd_sealer_t **ret_sealer);
evd_sealer_t *evd_sealer_free(evd_sealer_t *s);

/* true when the last chain of the log was continued; false: a new chain
   (chain_start the genesis of its first seq) starts at evd_sealer_first(). */
bool evd_sealer_continued(const evd_sealer_t *s);
uint64_t evd_sealer_first(const evd_sealer_t *s);

/* A Batch the log took (records [first_seq, first_seq + count)). */
void evd_sealer_add(evd_sealer_t *s, uint64_t first_seq, uint32_t count, const void *payload, size_t len);

/* Room for the next Batch's bytes (max of them) in the hasher's ring, so
   the caller packs it there (rec_encoder_finish_to) and the ring need not
   copy it: NULL without a hasher thread (then evd_sealer_add).  If the
   log takes the Batch, evd_sealer_add_reserved(len <= max) adds it; else
   the room is simply not used.  No other add or seal in between. */
void *evd_sealer_reserve(evd_sealer_t *s, size_t max);
void evd_sealer_add_reserved(evd_sealer_t *s, uint64_t first_seq, uint32_t count, size_t len);

/*
 * Start a new chain at next_seq: Batches added since the last Seal were
 * lost by the log after it took them (a full disk at the sync, an I/O
 * error), so no Seal could match them.  They stay unsealed, which verify
 * reports as such (between chains).  The new chain's first Seal (v2) has
 * the genesis of next_seq as chain_start and, as prev_seal, the newest
 * Seal the log took below lost_first, the first seq it lost (the restart
 * is signed and linked to what the log still holds); lost_first 0 (not
 * known) or no such Seal among the last few taken: zero.  0, -EINVAL.
 */
int evd_sealer_restart(evd_sealer_t *s, uint64_t next_seq, uint64_t lost_first);

/* Records added since the last Seal (0: nothing to seal). */
uint64_t evd_sealer_pending(const evd_sealer_t *s);

/*
 * The Seal of everything added since the last one, to be written as the
 * Batch numbered end_seq (the log's next seq): that Batch, once the log
 * took it, must be added next; if the log refused it, the next Seal covers
 * the same range and more, linked to the Seal before.  Signed when the
 * sealer has a key, over its own Batch's fields too (record/seal.h
 * rec_seal_batch): that Batch holds its one SEAL record at t_ns (its
 * t0_ns), the config's config_hash and mono_t0_ns (rec_mono_t0 of t_ns
 * and the clock offset the Batch is written with; 0: none), so it must be
 * encoded so.  0, -EINVAL (end_seq behind the chain).
 */
int evd_sealer_seal(evd_sealer_t *s, uint64_t end_seq, int64_t t_ns, int64_t mono_t0_ns,
                    struct rec_seal *ret_seal);

/* ------------------------------------------------------------ verifier */

enum evd_problem_kind {
	EVD_PROBLEM_STORAGE = 0, /* the log's reader found damage (stor_fault) */
	EVD_PROBLEM_MALFORMED,   /* a record that is no valid Batch, or one whose seq
	                            or log id does not match its frame or log */
	EVD_PROBLEM_SIGNATURE,   /* a Seal not signed by the key (another key,
	                            altered), or not signed at all */
	EVD_PROBLEM_CHAIN,       /* the records of a Seal's range do not hash to
	                            its chain head: changed, removed, added.  With
	                            the Seal's digest list (v2) the problem names
	                            the first Batch that changed (segment, offset,
	                            its seqs), else the Seal and its range; a Seal
	                            Batch changed outside its signed Seal is named
	                            at itself (the next Seal's link shows it) */
	EVD_PROBLEM_SEAL_LINK,   /* a Seal that does not follow the one before it
	                            (a seal removed, replaced or moved) */
	EVD_PROBLEM_NO_SEAL,     /* the log has records but no Seal */
	EVD_PROBLEM_HEAD,        /* --whole: the log does not start at seq 1 (its
	                            oldest segments deleted, up to a chain restart
	                            too), or its first Seal does not start a chain
	                            (its range began before the log) */
	EVD_PROBLEM_TAIL,        /* bytes after the last good frame of the newest,
	                            open segment that are no frame: damage, or a
	                            torn write of a power cut not yet recovered
	                            (the reader stops there: what follows is unread) */
	EVD_PROBLEM_KIND_MAX
};

struct evd_problem {
	enum evd_problem_kind kind;
	uint64_t segment;        /* file (its first seq) and byte offset where found */
	uint64_t offset;
	uint64_t seq;            /* the record it concerns (the Seal's for CHAIN) */
	uint64_t range_first;    /* the seq range concerned, [first, end) */
	uint64_t range_end;
	struct stor_fault fault; /* STORAGE: what the reader said */
	unsigned answers;        /* 0: in the log; n: in its answers log
	                            <dir>/answers.<n>/ (a ground log's) */
	int err;                 /* -errno detail; CHAIN: 0 the Seal's whole range
	                            (no digest list: the changed Batch cannot be
	                            named), -EBADE this Batch is not one the Seal
	                            lists (changed or added), -ENOENT these seqs
	                            hold no record but the Seal lists a Batch there
	                            (removed), -ESTALE this Seal Batch's bytes are
	                            not those the next Seal's link went through
	                            (changed outside its signed Seal), -EDOM the
	                            Seal's range starts inside a Batch */
};

/*
 * What verify proves, seq by seq: the log's seqs from its first to its
 * last fall into ranges of these kinds, in seq order.  Only VERIFIED is
 * proven (a signed Seal covers it through the chain, or it is a Seal's own
 * record, whose signature covers its seq, range, head and time, and v2 its
 * Batch's schema_version, t0_ns, config_hash and mono_t0_ns); every
 * other kind is a reason it is not.
 */
enum evd_range_kind {
	EVD_RANGE_VERIFIED = 0,
	EVD_RANGE_TAIL,       /* after the last Seal: not sealed yet */
	EVD_RANGE_BETWEEN,    /* between two chains: after the last Seal of one,
	                         before the range of the next chain's first Seal */
	EVD_RANGE_HEAD,       /* before the first Seal's range (retention deleted
	                         the Seal that covered them) */
	EVD_RANGE_NO_SEAL,    /* the log has no Seal at all */
	EVD_RANGE_DAMAGED,    /* unreadable, missing (a segment deleted), repeated
	                         or malformed records */
	EVD_RANGE_CHANGED,    /* proven changed: do not match their Seal (a Batch
	                         whose digest the Seal does not list, a Batch the
	                         Seal lists that is gone, a Seal Batch whose bytes
	                         the next Seal's link does not match) */
	EVD_RANGE_UNPROVEN,   /* covered by a Seal that fails: its signature (not
	                         this key, altered), its link, or its range */
	EVD_RANGE_NOT_STORED, /* seqs no record holds, inside a Seal whose chain
	                         matches: the writer dropped them (full disk) */
	EVD_RANGE_REDUCED,    /* a ground log's reduced Batches (the uplink's
	                         policies): new content no Seal covers; the
	                         vehicle's log holds these seqs whole */
	EVD_RANGE_KIND_MAX
};

struct evd_range {
	uint64_t first, end;  /* [first, end) */
	enum evd_range_kind kind;
};

/* Ranges a result lists (adjacent ones of a kind are merged); more are
   counted in ranges_omitted, and in seqs[] always. */
#define EVD_RANGES_MAX 64

struct evd_result {
	uint64_t records;         /* records read */
	uint64_t seals;           /* Seals that verified */
	uint64_t signed_seals;    /* ... whose signature verified with the key */
	uint64_t bad_signatures;  /* Seals whose signature did not */
	uint64_t v1_seals;        /* Seals of format version 1 (before issue 24) */
	struct evd_range ranges[EVD_RANGES_MAX];
	size_t nranges;
	uint64_t ranges_omitted;
	uint64_t seqs[EVD_RANGE_KIND_MAX]; /* seqs of each kind */
	uint64_t verified_first;  /* the first and last verified seq: [first, end);
	                             only ranges[] says which seqs between them are */
	uint64_t verified_end;
	int64_t verified_t_first; /* from sealed content only, never a frame header:
	                             the earliest and latest t0_ns (its first */
	int64_t verified_t_last;  /* record's time) of a verified data Batch */
	int64_t seal_t_first;     /* the signed t_ns of the first and last Seal */
	int64_t seal_t_last;      /* that verified */
	uint64_t head_first;      /* the first and last HEAD seq: [first, end) */
	uint64_t head_end;
	uint64_t tail_first;      /* the unsealed tail: [first, end) */
	uint64_t tail_end;
	uint64_t unsealed;        /* seqs BETWEEN chains */
	uint64_t dropped;         /* seqs NOT_STORED */
	uint64_t problems;
	struct evd_problem first; /* the first problem, if problems */
	/* a ground log's answers logs (<dir>/answers.<n>/, recv --log: a
	   request's answers over seqs it holds reduced), read after it: their
	   Batches (and those Batches' seqs) of each kind.  VERIFIED: a whole
	   Batch a Seal of the log lists (the Seal verified, its digest list
	   folds to its chain head); CHANGED: one such a Seal over its seqs
	   does not list; UNPROVEN: no such Seal over its seqs (after the
	   log's last Seal, a Seal that failed or has no list); REDUCED: a
	   reduced Batch (a request naming channels); DAMAGED: unreadable or
	   malformed. */
	uint64_t answers_logs;
	uint64_t answers_batches[EVD_RANGE_KIND_MAX];
	uint64_t answers_seqs[EVD_RANGE_KIND_MAX];
};

typedef struct evd_verifier evd_verifier_t;

struct evd_verify_cfg {
	const uint8_t *public_key; /* EVD_PUBLIC_LEN; NULL: check the chain only
	                              (every seal counts as unauthenticated) */
	bool whole;                /* the log must reach back to the start of its
	                              first chain (no retention) */
	/* evd_verify_dir: how far through the log (bytes of its segments,
	   storage/stor.h stor_progress), per record read; NULL: not called */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

int evd_verifier_new(const struct evd_verify_cfg *cfg, evd_verifier_t **ret_verifier);
evd_verifier_t *evd_verifier_free(evd_verifier_t *v);

/*
 * Feed the log in order: every record (evd_verifier_record) and every
 * fault the reader reported (evd_verifier_fault).  Each returns 1 when it
 * found a problem (described in *ret_problem when not NULL), 0 if not,
 * -ENOMEM.
 */
int evd_verifier_record(evd_verifier_t *v, const struct stor_rec *rec, struct evd_problem *ret_problem);
int evd_verifier_fault(evd_verifier_t *v, const struct stor_fault *fault, struct evd_problem *ret_problem);

/* The end of the log: what is left is the unsealed tail.  tail: the
   reader's stor_reader_tail() when it returned 1, else NULL.  Returns 1 if
   that makes a problem (no Seal at all, garbage after the tail), else 0. */
int evd_verifier_end(evd_verifier_t *v, const struct stor_tail *tail, struct evd_problem *ret_problem);

int evd_verifier_result(const evd_verifier_t *v, struct evd_result *ret_result);

/* Problem callback for evd_verify_dir: each problem as found. */
typedef void (*evd_problem_fn)(void *ctx, const struct evd_problem *p);

/* Verify a log directory (vehicle or ground log) from its oldest record
   to its newest, then a ground log's answers logs (dir/answers.<n>/, n
   from 1) against its Seals (evd_result.answers_*).  0: no problem; 1:
   problems (result.problems); -errno (the directory cannot be read). */
int evd_verify_dir(const char *dir, const struct evd_verify_cfg *cfg, evd_problem_fn fn, void *ctx,
                   struct evd_result *ret_result);
