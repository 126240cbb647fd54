/* SPDX-License-Identifier: MIT */
/*
 * batch-trdp.c - raw TRDP telegrams in a Batch (railmon.proto
 * TrdpTelegrams): the encoder's columns and the decoder's checks and
 * records, kept beside each other and out of batch-encode.c and batch.c,
 * which call in here.  A telegram is one record numbered after the texts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "railmon.pb-c.h"
#include "batch-encode-private.h"
#include "batch-private.h"

int rec_trdp_encoder_alloc(rec_encoder_t *e)
{
	size_t n = e->max;

	e->tr_dt = calloc(n, sizeof(int64_t));
	e->tr_bus = calloc(n, sizeof(uint32_t));
	e->tr_src = calloc(n, sizeof(uint32_t));
	e->tr_dst = calloc(n, sizeof(uint32_t));
	e->tr_ports = calloc(n, sizeof(uint32_t));
	e->tr_com = calloc(n, sizeof(uint32_t));
	e->tr_seq = calloc(n, sizeof(uint32_t));
	e->tr_etb = calloc(n, sizeof(uint32_t));
	e->tr_optrn = calloc(n, sizeof(uint32_t));
	e->tr_type = calloc(n, sizeof(uint32_t));
	e->tr_flags = calloc(n, sizeof(uint32_t));
	e->tr_len = calloc(n, sizeof(uint32_t));
	e->tr_session = calloc(n, ACQ_TRDP_SESSION_LEN);
	/* Records fill a Batch up to WIRE_RECORDS_MAX, and the first one goes
	   in whatever its size: that much room, never more.  calloc, so the
	   pages of a board without TRDP are never touched. */
	e->tr_data_cap = WIRE_RECORDS_MAX + ACQ_TRDP_LEN_MAX;
	e->tr_data = calloc(1, e->tr_data_cap);
	if (!e->tr_dt || !e->tr_bus || !e->tr_src || !e->tr_dst || !e->tr_ports || !e->tr_com ||
	    !e->tr_seq || !e->tr_etb || !e->tr_optrn || !e->tr_type || !e->tr_flags || !e->tr_len ||
	    !e->tr_session || !e->tr_data)
		return -ENOMEM;
	return 0;
}

void rec_trdp_encoder_free(rec_encoder_t *e)
{
	free(e->tr_dt);
	free(e->tr_bus);
	free(e->tr_src);
	free(e->tr_dst);
	free(e->tr_ports);
	free(e->tr_com);
	free(e->tr_seq);
	free(e->tr_etb);
	free(e->tr_optrn);
	free(e->tr_type);
	free(e->tr_flags);
	free(e->tr_len);
	free(e->tr_session);
	free(e->tr_data);
}

size_t rec_trdp_wire_max(const struct acq_item *it)
{
	return WIRE_TRDP_MAX + 3 + (it->trdp.len <= ACQ_TRDP_LEN_MAX ? it->trdp.len : 0);
}

int rec_trdp_encoder_check(const rec_encoder_t *e, const struct acq_item *it)
{
	const struct acq_trdp *t = &it->trdp;

	if (t->len > ACQ_TRDP_LEN_MAX || (t->len && !t->data))
		return -EINVAL;
	/* never met while WIRE_RECORDS_MAX bounds the records: a guard */
	if (e->tr_data_len + t->len > e->tr_data_cap)
		return -ENOBUFS;
	return 0;
}

int rec_trdp_encoder_add(rec_encoder_t *e, const struct acq_item *it, int64_t dt)
{
	const struct acq_trdp *t = &it->trdp;
	size_t i = e->ntr;

	e->tr_dt[i] = dt;
	e->tr_bus[i] = it->bus;
	e->tr_src[i] = t->src_ip;
	e->tr_dst[i] = t->dst_ip;
	e->tr_ports[i] = (uint32_t)t->src_port << 16 | t->dst_port;
	e->tr_com[i] = t->com_id;
	e->tr_seq[i] = t->seq;
	e->tr_etb[i] = t->etb_topo;
	e->tr_optrn[i] = t->op_trn_topo;
	e->tr_type[i] = t->msg_type;
	e->tr_flags[i] = t->flags;
	e->tr_len[i] = t->len;
	if (t->len)
		memcpy(e->tr_data + e->tr_data_len, t->data, t->len);
	e->tr_data_len += t->len;
	if (t->flags & ACQ_TRDP_MD)
		memcpy(e->tr_session + ACQ_TRDP_SESSION_LEN * e->tr_nsession++, t->session_id,
		       ACQ_TRDP_SESSION_LEN);
	e->ntr++;
	return 0;
}

void rec_trdp_encoder_reset(rec_encoder_t *e)
{
	e->ntr = 0;
	e->tr_data_len = 0;
	e->tr_nsession = 0;
}

Railmon__V1__TrdpTelegrams *rec_trdp_encoder_msg(rec_encoder_t *e, Railmon__V1__TrdpTelegrams *m)
{
	if (!e->ntr)
		return NULL;
	m->n_t_delta_ns = m->n_bus = m->n_src_ip = m->n_dst_ip = m->n_ports = m->n_com_id = m->n_seq =
		m->n_etb_topo = m->n_op_trn_topo = m->n_msg_type = m->n_flags = m->n_len = e->ntr;
	m->t_delta_ns = e->tr_dt;
	m->bus = e->tr_bus;
	m->src_ip = e->tr_src;
	m->dst_ip = e->tr_dst;
	m->ports = e->tr_ports;
	m->com_id = e->tr_com;
	m->seq = e->tr_seq;
	m->etb_topo = e->tr_etb;
	m->op_trn_topo = e->tr_optrn;
	m->msg_type = e->tr_type;
	m->flags = e->tr_flags;
	m->len = e->tr_len;
	m->data.data = e->tr_data;
	m->data.len = e->tr_data_len;
	m->session_id.data = e->tr_nsession ? e->tr_session : NULL;
	m->session_id.len = e->tr_nsession * ACQ_TRDP_SESSION_LEN;
	return m;
}

int rec_trdp_batch_check(rec_batch_t *b)
{
	const Railmon__V1__TrdpTelegrams *m = b->msg->trdp;
	size_t n, off = 0, nmd = 0;

	if (!m)
		return 0;
	n = m->n_t_delta_ns;
	if (m->n_bus != n || m->n_src_ip != n || m->n_dst_ip != n || m->n_ports != n || m->n_com_id != n ||
	    m->n_seq != n || m->n_etb_topo != n || m->n_op_trn_topo != n || m->n_msg_type != n ||
	    m->n_flags != n || m->n_len != n)
		return -EBADMSG;
	b->tr_off = calloc(n ? n : 1, sizeof(uint32_t));
	b->tr_sess = calloc(n ? n : 1, sizeof(uint32_t));
	if (!b->tr_off || !b->tr_sess)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (m->len[i] > ACQ_TRDP_LEN_MAX || m->bus[i] > 0xffff || m->msg_type[i] > 0xffff ||
		    m->flags[i] > 0xffff)
			return -EBADMSG;
		b->tr_off[i] = (uint32_t)off;
		off += m->len[i];
		b->tr_sess[i] = (uint32_t)nmd;
		if (m->flags[i] & ACQ_TRDP_MD)
			nmd++;
	}
	if (off != m->data.len || nmd * ACQ_TRDP_SESSION_LEN != m->session_id.len)
		return -EBADMSG;
	b->ntr = n;
	return 0;
}

void rec_trdp_batch_item(const rec_batch_t *b, size_t i, struct acq_item *it)
{
	const Railmon__V1__TrdpTelegrams *m = b->msg->trdp;
	struct acq_trdp *t = &it->trdp;

	it->kind = ACQ_ITEM_TRDP;
	it->bus = (uint16_t)m->bus[i];
	t->src_ip = m->src_ip[i];
	t->dst_ip = m->dst_ip[i];
	t->src_port = (uint16_t)(m->ports[i] >> 16);
	t->dst_port = (uint16_t)m->ports[i];
	t->com_id = m->com_id[i];
	t->seq = m->seq[i];
	t->etb_topo = m->etb_topo[i];
	t->op_trn_topo = m->op_trn_topo[i];
	t->msg_type = (uint16_t)m->msg_type[i];
	t->flags = (uint16_t)m->flags[i];
	t->len = m->len[i];
	/* data is NULL when every telegram of the Batch is empty */
	t->data = t->len ? m->data.data + b->tr_off[i] : NULL;
	if (t->flags & ACQ_TRDP_MD)
		memcpy(t->session_id, m->session_id.data + (size_t)b->tr_sess[i] * ACQ_TRDP_SESSION_LEN,
		       ACQ_TRDP_SESSION_LEN);
}
