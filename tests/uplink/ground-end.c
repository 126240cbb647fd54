/* SPDX-License-Identifier: MIT */
/* ground-end.c - uplink's receiver with the ground's ledger behind it (ground-end.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ground-end.h"

/* NULL passed on, so the tests of bad arguments reach the real calls. */
#define R(g) ((g) ? (g)->r : NULL)
#define L(g) ((g) ? (g)->l : NULL)

int fx_gnd_new(const struct fx_gnd_cfg *c, fx_gnd_t **ret)
{
	struct grd_ledger_cfg lc;
	struct upl_recv_cfg rc;
	fx_gnd_t *g;
	int err;

	if (!c || !ret)
		return -EINVAL;
	lc = (struct grd_ledger_cfg){
		.on_record = c->on_record, .on_batch = c->on_batch, .on_refused = c->on_refused,
		.on_jump = c->on_jump, .ctx = c->ctx, .max_vehicles = c->max_vehicles,
	};
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	err = grd_ledger_new(&lc, &g->l);
	if (err < 0) {
		free(g);
		return err;
	}
	rc = (struct upl_recv_cfg){
		.host = c->host, .port = c->port, .client_id = c->client_id, .topic = c->topic,
		.clean_session = c->clean_session, .use_tls = c->use_tls, .tls = c->tls,
		.username = c->username, .password = c->password, .keepalive_s = c->keepalive_s,
		.backoff_max_ms = c->backoff_max_ms, .on_data = grd_ledger_feed, .data_ctx = g->l,
		.on_channels = c->on_channels, .ctx = c->ctx, .on_status = c->on_status,
		.aux_topic = c->aux_topic, .on_aux = c->on_aux, .on_tick = c->on_tick, .on_idle = c->on_idle,
	};
	err = upl_recv_new(&rc, &g->r);
	if (err < 0) {
		grd_ledger_free(L(g));
		free(g);
		return err;
	}
	*ret = g;
	return 0;
}

fx_gnd_t *fx_gnd_free(fx_gnd_t *g)
{
	if (g) {
		upl_recv_free(R(g));
		grd_ledger_free(L(g));
		free(g);
	}
	return NULL;
}

int fx_gnd_feed(fx_gnd_t *g, const char *topic, const void *payload, size_t len)
{
	return upl_recv_feed(R(g), topic, payload, len);
}

int fx_gnd_stats(fx_gnd_t *g, struct fx_gnd_stats *ret)
{
	struct upl_recv_stats u;
	struct grd_ledger_stats l;
	int err = upl_recv_stats(R(g), ret ? &u : NULL);

	if (err == 0)
		err = grd_ledger_stats(L(g), &l);
	if (err < 0)
		return err;
	*ret = (struct fx_gnd_stats){
		.messages = u.messages, .bad = u.bad, .batches = l.batches, .records = l.records,
		.duplicates = l.duplicates, .unverified = l.unverified, .old = l.old, .missing = l.missing,
		.conflict_records = l.conflict_records, .vehicles = l.vehicles, .logs = l.logs,
		.sink_errors = l.sink_errors, .connects = u.connects, .connect_failures = u.connect_failures,
		.disconnects = u.disconnects, .fail = u.fail, .fail_err = u.fail_err,
		.fail_detail = u.fail_detail, .subscribed = u.subscribed,
	};
	memcpy(ret->refused, l.refused, sizeof(ret->refused));
	ret->refused[GRD_LEDGER_BAD_VEHICLE] += u.channels_refused;
	memcpy(ret->fail_text, u.fail_text, sizeof(ret->fail_text));
	return 0;
}

int fx_gnd_run(fx_gnd_t *g)
{
	return upl_recv_run(R(g));
}

int fx_gnd_stop(fx_gnd_t *g)
{
	return upl_recv_stop(R(g));
}

int fx_gnd_publish(fx_gnd_t *g, const char *topic, const void *payload, size_t len)
{
	return upl_recv_publish(R(g), topic, payload, len);
}

int fx_gnd_wait_subscribed(fx_gnd_t *g, unsigned timeout_ms)
{
	return upl_recv_wait_subscribed(R(g), timeout_ms);
}

int fx_gnd_wait_records(fx_gnd_t *g, uint64_t n, unsigned timeout_ms)
{
	return grd_ledger_wait_records(L(g), n, timeout_ms);
}

int fx_gnd_wait_seq(fx_gnd_t *g, const char *vehicle, uint64_t seq, unsigned timeout_ms)
{
	return grd_ledger_wait_seq(L(g), vehicle, seq, timeout_ms);
}

int fx_gnd_vehicle(fx_gnd_t *g, const char *vehicle, struct grd_ledger_vehicle *ret)
{
	return grd_ledger_vehicle(L(g), vehicle, ret);
}

int fx_gnd_log(fx_gnd_t *g, size_t i, struct grd_ledger_log *ret)
{
	return grd_ledger_log(L(g), i, ret);
}
