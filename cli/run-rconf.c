/* SPDX-License-Identifier: MIT */
/*
 * run-rconf.c - remote configuration in `railmon run` (issue 32,
 * docs/remote-config.md): a signed board file the ground pushed is
 * verified, checked as `check` does in a scratch directory, put in place
 * and started as SIGHUP does, then kept on probation; it goes back to the
 * previous files if it does not start or its collector stops before the
 * probation ends, and also at the next start if run was killed during it.
 * Every outcome is said on stderr, to the ground and in the log.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "acquisition/acq.h"
#include "basic/clock.h"
#include "basic/escape.h"
#include "cli.h"
#include "cli/check-plan.h"
#include "cli/run-runner.h"
#include "conf/config.h"
#include "evidence/evd.h"
#include "pipeline/daemon.h"
#include "pipeline/evidence.h"
#include "pipeline/logdir.h"
#include "pipeline/notify.h"
#include "pipeline/rconf-install.h"
#include "pipeline/runner.h"

/* A pushed board must keep its collector running (ticking: the pipeline's
   heartbeat, pl_daemon_heartbeat) through its first 30 s, or it goes back
   to the previous files (issue 32): a board that starts but records
   nothing is no better than one that does not start.  The tests set
   RCONF_PROBATION_ENV (ms) not to wait 30 s. */
#define RCONF_PROBATION_NS (30 * BASIC_NS_PER_SEC)
#define RCONF_PROBATION_ENV "RAILMON_CONFIG_PROBATION_MS"

/* The forwarder's thread: keep only the newest (a newer version replaces
   one not yet taken; the version check orders them anyway). */
void cli_rconf_arrived(void *ctx, const void *payload, size_t len)
{
	struct rconf_box *box = ctx;
	uint8_t *copy = len <= EVD_RCONF_MAX ? malloc(len ? len : 1) : NULL;

	if (copy)
		memcpy(copy, payload, len);
	pthread_mutex_lock(&box->mu);
	evd_digest(payload, len, box->digest);
	free(box->buf);
	box->buf = copy;
	box->len = len; /* no copy: too large or no memory, refused as such */
	pthread_mutex_unlock(&box->mu);
}

/* Write m's files under dir (CONTENT as sent, HASH as a link to the file
   on board) so that the new board file can be loaded and checked there
   with nothing of the running one changed. */
static int rconf_scratch(const char *dir, const char *board_dir, const struct evd_rconf *m, char *why, size_t whylen)
{
	char path[BUS_PATH_MAX * 2], target[BUS_PATH_MAX * 2];

	for (size_t i = 0; i < m->nfiles; i++) {
		const struct evd_rconf_file *f = &m->files[i];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", dir, f->name);
		for (char *s = strchr(path + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
			*s = 0;
			(void)mkdir(path, 0700); /* an error shows at the fopen below */
			*s = '/';
		}
		if (f->kind == EVD_RCONF_HASH) {
			snprintf(target, sizeof(target), "%s/%s", board_dir, f->name);
			if (symlink(target, path) < 0)
				return snprintf(why, whylen, "%s: %s", path, strerror(errno)), -errno;
			continue;
		}
		fp = fopen(path, "wb"); /* a file two buses name comes twice */
		if (!fp || fwrite(f->data, 1, f->len, fp) != f->len || fclose(fp) != 0) {
			int e = errno ? errno : EIO;
			snprintf(why, whylen, "cannot write %s to check it: %s", path, strerror(e));
			return -e;
		}
	}
	return 0;
}

static void rconf_scratch_remove(const char *dir, const struct evd_rconf *m)
{
	char path[BUS_PATH_MAX * 2];

	for (size_t i = m->nfiles; i-- > 0;) {
		snprintf(path, sizeof(path), "%s/%s", dir, m->files[i].name);
		(void)unlink(path);
		for (char *s = strrchr(path, '/'); s && s > path + strlen(dir); s = strrchr(path, '/')) {
			*s = 0;
			(void)rmdir(path); /* only empties go; the others' later */
		}
	}
	(void)rmdir(dir);
}

/* What `check` says of the new board, run on it where it was written:
   0, or -EINVAL with its first complaint in why. */
static int rconf_check(struct runner *rn, const char *board, const char *data, char *why, size_t whylen)
{
	struct conf_board *next;
	struct cli_check_key key = { 0 };
	uint8_t secret[EVD_SECRET_LEN];
	char err[CONF_ERR_MAX], *out = NULL, *bad = NULL;
	size_t outlen = 0, badlen = 0;
	FILE *o, *e;
	int r;

	if (conf_load(board, &next, err, sizeof(err)) < 0)
		return snprintf(why, whylen, "fails check: %s", err), -EINVAL;
	if (strcmp(next->vehicle, rn->cfg->vehicle) != 0) {
		snprintf(why, whylen, "fails check: the board is for vehicle %s, this is %s", next->vehicle,
		         rn->cfg->vehicle);
		conf_free(next);
		return -EINVAL;
	}
	key.r = pl_evidence_key(next, secret, err, sizeof(err));
	key.err = err;
	if (key.r > 0)
		evd_key_public_of(secret, key.public_key);
	memset(secret, 0, sizeof(secret));
	o = open_memstream(&out, &outlen);
	e = open_memstream(&bad, &badlen);
	r = o && e ? cli_check_board(o, e, next, data, &key) : -ENOMEM;
	if (o)
		fclose(o);
	if (e)
		fclose(e);
	if (r != 0) {
		const char *s = bad && bad[0] ? bad : "check refused it", *p = strstr(s, "railmon check: ");
		size_t n;

		s = p ? p + strlen("railmon check: ") : s;
		n = strcspn(s, "\n");
		snprintf(why, whylen, "fails check: %.*s", (int)n, s);
		r = -EINVAL;
	}
	free(out);
	free(bad);
	conf_free(next);
	return r;
}

/* Each outcome on stderr (the journal) and, retained, to the ground on
   railmon/<vehicle>/config/status (docs/remote-config.md). */
void cli_rconf_said(struct runner *rn, uint64_t version, const char *outcome, uint32_t code, const char *why)
{
	char *json = NULL;
	size_t len = 0;
	FILE *f;
	int r = -ENOMEM;
	uint32_t ev = !strcmp(outcome, "refused") ? ACQ_EV_CONFIG_REFUSED
	              : !strcmp(outcome, "rolled back") ? ACQ_EV_CONFIG_ROLLED_BACK : 0;

	/* in the log too (an applied one's restart records CONFIG_RELOAD) */
	if (ev && rn->d && pl_daemon_event(rn->d, ev, (int64_t)version, code) < 0)
		fprintf(stderr, "railmon %s: warning: remote configuration event not recorded: the event ring is full\n",
		        rn->cmd);

	fprintf(stderr, "railmon %s: remote configuration version %llu %s%s%s\n", rn->cmd, (unsigned long long)version,
	        outcome, why[0] ? ": " : "", why);
	if ((f = open_memstream(&json, &len))) {
		fprintf(f, "{\"version\":%llu,\"outcome\":\"%s\",\"why\":", (unsigned long long)version, outcome);
		basic_json_string(f, why);
		fputs("}", f);
		if (fclose(f) == 0)
			r = rn->d ? pl_daemon_config_status(rn->d, json) : -ENOTCONN;
	}
	if (r < 0 && r != -ENOTCONN)
		fprintf(stderr, "railmon %s: warning: remote configuration status not sent: %s\n", rn->cmd, strerror(-r));
	free(json);
}

/* Refused: said (line, status, event) and remembered, so that the same
   message again (the broker's retained one at each reconnect) is passed
   over in silence. */
static void rconf_refused(struct runner *rn, const uint8_t digest[EVD_HASH_LEN], uint64_t version, uint32_t code,
                          const char *why)
{
	cli_rconf_said(rn, version, "refused", code, why);
	memcpy(rn->refused_digest, digest, EVD_HASH_LEN);
	rn->refused_any = true;
}

/* evd_rconf_verify's refusal as the CONFIG_REFUSED event's detail */
static uint32_t rconf_verify_why(int r)
{
	switch (r) {
	case -EMSGSIZE: return ACQ_CONFIG_TOO_LARGE;
	case -EKEYREJECTED: return ACQ_CONFIG_BAD_SIGNATURE;
	case -EXDEV: return ACQ_CONFIG_OTHER_VEHICLE;
	case -ESTALE: return ACQ_CONFIG_OLD_VERSION;
	default: return ACQ_CONFIG_MALFORMED;
	}
}

/* The probation's end, whichever: data/config.trial goes. */
static void rconf_trial_clear(struct runner *rn, const char *data)
{
	int r = pl_rconf_trial_clear(data);

	if (r < 0)
		fprintf(stderr, "railmon %s: warning: %s/config.trial: %s\n", rn->cmd, data, strerror(-r));
}

void cli_rconf_trial_end(struct rconf_trial *t)
{
	free(t->m);
	free(t->buf);
	*t = (struct rconf_trial){ 0 };
}

/* Back to the previous files and board (the new one rn->cfg failed: why),
   started again; said by the previous board's forwarder. */
static void rconf_roll_back(struct runner *rn, const char *data, struct conf_board *prev, const struct evd_rconf *m,
                            uint32_t code, const char *why)
{
	char msg[CONF_ERR_MAX + 256];
	int r;

	cli_runner_stop(rn); /* a daemon that did not start is stopped already */
	r = pl_rconf_rollback(prev->path, m);
	rconf_trial_clear(rn, data);
	snprintf(msg, sizeof(msg), "%s%s", why, r < 0 ? "; putting the previous files back failed too" : "");
	if (rn->cfg != prev) {
		conf_free(rn->cfg);
		rn->cfg = prev;
	}
	(void)cli_runner_start(rn, 0);
	cli_rconf_said(rn, m->version, "rolled back", code, msg);
}

/* The pushed board on probation, each round: its collector must tick
   (the heartbeat within PL_ALIVE_NS, as the watchdogs want it) until the
   probation ends; then it is applied. */
void cli_runner_trial(struct runner *rn, int64_t now, bool final)
{
	struct rconf_trial *t = &rn->trial;
	char why[96];
	int64_t beat;

	if (!t->m || !rn->d)
		return;
	beat = pl_daemon_heartbeat(rn->d);
	if (now - beat > PL_ALIVE_NS) {
		snprintf(why, sizeof(why), "the new board's collector did not run for %.1f s within %.1f s of its start",
		         (double)(now - beat) / 1e9, (double)rn->probation_ns / 1e9);
		rconf_roll_back(rn, t->data, t->prev, t->m, ACQ_CONFIG_COLLECTOR_STOPPED, why);
	} else if (now >= t->until || final) {
		/* a clean stop with the collector running: it ran well so far */
		if (t->prev != rn->orig)
			conf_free(t->prev);
		rconf_trial_clear(rn, t->data);
		cli_rconf_said(rn, t->m->version, "applied", 0, "");
	} else {
		return;
	}
	pl_notify("READY=1");
	cli_rconf_trial_end(t);
}

/* A signed board file from the ground (issue 32, docs/remote-config.md):
   verified, checked as `check` does, put in place and started as SIGHUP
   does; back to the previous files if it does not start or its collector
   does not keep running through its probation (runner_trial). */
void cli_runner_rconf(struct runner *rn)
{
	struct evd_rconf *m = NULL;
	uint8_t pk[EVD_PUBLIC_LEN], *buf, digest[EVD_HASH_LEN];
	char why[CONF_ERR_MAX + 160], data[BUS_PATH_MAX], board_dir[BUS_PATH_MAX], scratch[BUS_PATH_MAX + 32];
	char path[BUS_PATH_MAX * 2], *slash;
	struct conf_board *next, *prev = rn->cfg;
	uint64_t cur = 0;
	size_t len;
	int r;

	if (rn->trial.m)
		return; /* one at a time: the next waits for this one's probation */
	pthread_mutex_lock(&rn->rconf.mu);
	buf = rn->rconf.buf;
	len = rn->rconf.len;
	memcpy(digest, rn->rconf.digest, sizeof(digest));
	rn->rconf.buf = NULL;
	rn->rconf.len = 0;
	pthread_mutex_unlock(&rn->rconf.mu);
	if (!buf && !len)
		return;
	why[0] = 0;
	if (rn->refused_any && !memcmp(digest, rn->refused_digest, sizeof(digest)))
		goto out; /* refused already: said once */
	snprintf(data, sizeof(data), "%s", pl_daemon_data_dir(rn->d));
	snprintf(board_dir, sizeof(board_dir), "%s", prev->path);
	slash = strrchr(board_dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(board_dir, sizeof(board_dir), ".");
	m = malloc(sizeof(*m));
	if (!buf && len > EVD_RCONF_MAX) {
		snprintf(why, sizeof(why), "too large: %zu bytes, at most %u", len, EVD_RCONF_MAX);
		rconf_refused(rn, digest, 0, ACQ_CONFIG_TOO_LARGE, why);
		goto out;
	}
	if (!buf || !m) {
		cli_rconf_said(rn, 0, "refused", ACQ_CONFIG_NO_MEMORY, "out of memory"); /* not remembered: may pass */
		goto out;
	}
	r = pl_evidence_config_pubkey(prev, pk, why, sizeof(why));
	if (r <= 0) {
		cli_rconf_said(rn, 0, "refused", ACQ_CONFIG_NO_KEY, r == 0 ? "the board names no [uplink] config_pubkey" : why);
		goto out;
	}
	if ((r = pl_rconf_version_load(data, &cur)) < 0) {
		snprintf(why, sizeof(why), "%s/config.version: %s", data, strerror(-r));
		cli_rconf_said(rn, 0, "refused", ACQ_CONFIG_NO_KEY, why);
		goto out;
	}
	/* The broker sends the retained message again at every connect,
	   including the one of the daemon it started: the version taken is
	   nothing to say again. */
	if (evd_rconf_parse(buf, len, m, why, sizeof(why)) == 0 && m->version == cur)
		goto out;
	r = evd_rconf_verify(buf, len, pk, prev->vehicle, cur, m, why, sizeof(why));
	if (r < 0) {
		rconf_refused(rn, digest, r == -EBADMSG || r == -EMSGSIZE ? 0 : m->version, rconf_verify_why(r), why);
		goto out;
	}
	for (size_t i = 0; i < m->nfiles; i++)
		for (size_t k = 0; k < i; k++)
			if (!strcmp(m->files[i].name, m->files[k].name))
				r = -EINVAL, snprintf(why, sizeof(why), "file %s sent twice", m->files[i].name);
	if (r < 0) {
		/* its install would take the first copy's .prev for the second */
		rconf_refused(rn, digest, m->version, ACQ_CONFIG_MALFORMED, why);
		goto out;
	}
	snprintf(scratch, sizeof(scratch), "%s/rconf.XXXXXX", data);
	if (!mkdtemp(scratch)) {
		snprintf(why, sizeof(why), "%s: %s", scratch, strerror(errno));
		cli_rconf_said(rn, m->version, "refused", ACQ_CONFIG_NOT_INSTALLED, why); /* may pass later */
		goto out;
	}
	r = rconf_scratch(scratch, board_dir, m, why, sizeof(why));
	snprintf(path, sizeof(path), "%s/%s", scratch, m->files[0].name);
	if (r == 0)
		r = rconf_check(rn, path, rn->opts.data_dir, why, sizeof(why));
	rconf_scratch_remove(scratch, m);
	if (r < 0) {
		rconf_refused(rn, digest, m->version, ACQ_CONFIG_FAILS_CHECK, why);
		goto out;
	}
	if (pl_rconf_install(prev->path, m, why, sizeof(why)) < 0) {
		cli_rconf_said(rn, m->version, "refused", ACQ_CONFIG_NOT_INSTALLED, why); /* may pass later */
		goto out;
	}
	/* Taken, whatever comes of starting it: a retained message that rolls
	   back is not tried again at every reconnect. */
	if ((r = pl_rconf_version_store(data, m->version)) < 0)
		fprintf(stderr, "railmon %s: warning: %s/config.version: %s\n", rn->cmd, data, strerror(-r));
	/* on probation from here: a run killed while it starts or runs goes
	   back at its next start (rconf_trial_left) */
	if ((r = pl_rconf_trial_store(data, buf, len)) < 0)
		fprintf(stderr, "railmon %s: warning: %s/config.trial: %s\n", rn->cmd, data, strerror(-r));
	if (conf_load(prev->path, &next, why, sizeof(why)) < 0) {
		pl_rconf_rollback(prev->path, m);
		rconf_trial_clear(rn, data);
		cli_rconf_said(rn, m->version, "rolled back", ACQ_CONFIG_UNREADABLE, why);
		goto out;
	}
	pl_notify("RELOADING=1");
	cli_runner_stop(rn);
	rn->cfg = next;
	rn->strict = true;
	r = cli_runner_start(rn, next->hash);
	rn->strict = false;
	if (r == 0) {
		/* started: on probation (runner_trial) with what going back needs */
		rn->trial = (struct rconf_trial){ .m = m, .buf = buf, .prev = prev,
		                                  .until = basic_mono_ns() + rn->probation_ns };
		snprintf(rn->trial.data, sizeof(rn->trial.data), "%s", data);
		return;
	}
	snprintf(why, sizeof(why), "the new board did not start: %s", rn->start_err);
	rconf_roll_back(rn, data, prev, m, ACQ_CONFIG_DID_NOT_START, why);
	pl_notify("READY=1");
out:
	free(m);
	free(buf);
}

/* A pushed board still on probation when run was killed (config.trial
   left): back to the previous files before the first start; *ret the
   message (said once the daemon runs), NULL if none. */
void cli_rconf_trial_left(struct runner *rn, struct evd_rconf **ret, uint8_t **ret_buf)
{
	const char *data = pl_data_dir(rn->cfg, rn->opts.data_dir);
	struct conf_board *prev;
	struct evd_rconf *m = malloc(sizeof(*m));
	char why[CONF_ERR_MAX];
	uint8_t *buf = NULL;
	size_t len = 0;
	int r = m ? pl_rconf_trial_load(data, &buf, &len) : -ENOMEM;

	*ret = NULL;
	*ret_buf = NULL;
	if (r <= 0 || evd_rconf_parse(buf, len, m, why, sizeof(why)) < 0) {
		if (r < 0 || buf)
			fprintf(stderr, "railmon %s: warning: %s/config.trial: %s; the board file is kept as it is\n",
			        rn->cmd, data, r < 0 ? strerror(-r) : why);
		if (buf)
			rconf_trial_clear(rn, data); /* not said again at every start */
		free(m);
		free(buf);
		return;
	}
	if ((r = pl_rconf_rollback(rn->cfg->path, m)) < 0)
		fprintf(stderr, "railmon %s: warning: putting the files before remote configuration version %" PRIu64
		        " back: %s\n", rn->cmd, m->version, strerror(-r));
	else if (conf_load(rn->cfg->path, &prev, why, sizeof(why)) < 0)
		fprintf(stderr, "railmon %s: warning: the board file before remote configuration version %" PRIu64
		        ": %s\n", rn->cmd, m->version, why);
	else
		rn->cfg = prev; /* freed at the end (not the caller's) */
	rconf_trial_clear(rn, data);
	*ret = m;
	*ret_buf = buf;
}

/* RCONF_PROBATION_ENV in ms, else RCONF_PROBATION_NS */
int64_t cli_rconf_probation(void)
{
	const char *env = getenv(RCONF_PROBATION_ENV);
	char *end;
	long long ms;

	if (!env || !*env)
		return RCONF_PROBATION_NS;
	errno = 0;
	ms = strtoll(env, &end, 10);
	if (errno || *end || ms < 0 || ms > 3600 * 1000)
		return RCONF_PROBATION_NS;
	return ms * BASIC_NS_PER_MS;
}
