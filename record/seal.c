/* SPDX-License-Identifier: MIT */
/*
 * seal.c - a decoded Batch's Seal as plain data (rec_batch_seal), and the
 * canonical bytes a Seal's signature covers (rec_seal_signed_bytes).  The
 * encoder writes a Seal in batch-encode.c (rec_encoder_set_seal).
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "railmon.pb-c.h"
#include "batch-private.h"
#include "seal.h"

static bool seal_bytes(const ProtobufCBinaryData *d, uint8_t *out, size_t len)
{
	if (d->len != len)
		return false;
	memcpy(out, d->data, len);
	return true;
}

int rec_batch_seal(const rec_batch_t *b, struct rec_seal *ret)
{
	const Railmon__V1__Seal *m;
	struct rec_seal s = { 0 };

	if (!b || !ret)
		return -EINVAL;
	m = b->msg->seal;
	if (!m)
		return -ENOENT;
	if (m->version < REC_SEAL_VERSION_MIN || m->version > REC_SEAL_VERSION || strlen(m->vehicle) > REC_SEAL_VEHICLE_MAX ||
	    m->first_seq == 0 || m->end_seq < m->first_seq ||
	    !seal_bytes(&m->log_id, s.log_id, REC_LOG_ID_LEN) ||
	    !seal_bytes(&m->boot_id, s.boot_id, REC_BOOT_ID_LEN) ||
	    !seal_bytes(&m->chain_start, s.chain_start, REC_SEAL_HASH_LEN) ||
	    !seal_bytes(&m->chain_head, s.chain_head, REC_SEAL_HASH_LEN) ||
	    !seal_bytes(&m->prev_seal, s.prev_seal, REC_SEAL_HASH_LEN) ||
	    (m->signature.len != 0 && m->signature.len != REC_SEAL_SIG_LEN) ||
	    m->batch_digests.len % REC_SEAL_HASH_LEN || (m->version < 2 && m->batch_digests.len))
		return -EBADMSG;
	s.version = m->version;
	s.digests = m->batch_digests.len ? m->batch_digests.data : NULL;
	/* a Batch is at most 1 MiB (a frame's limit): the count fits */
	s.ndigests = (uint32_t)(m->batch_digests.len / REC_SEAL_HASH_LEN);
	s.is_signed = m->signature.len == REC_SEAL_SIG_LEN;
	if (s.is_signed)
		memcpy(s.signature, m->signature.data, REC_SEAL_SIG_LEN);
	memcpy(s.vehicle, m->vehicle, strlen(m->vehicle) + 1);
	s.first_seq = m->first_seq;
	s.end_seq = m->end_seq;
	s.t_ns = m->t_ns;
	s.batch = (struct rec_seal_batch){ .schema_version = b->msg->schema_version, .t0_ns = b->msg->t0_ns,
	                                   .config_hash = b->msg->config_hash, .mono_t0_ns = b->msg->mono_t0_ns };
	*ret = s;
	return 0;
}

static uint8_t *put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*p++ = (uint8_t)(v >> (8 * i));
	return p;
}

int rec_seal_signed_bytes(const struct rec_seal *s, uint8_t buf[REC_SEAL_SIGNED_MAX])
{
	static const uint8_t magic[8] = "RMSEAL1";
	size_t vlen;
	uint8_t *p = buf;

	if (!s || !buf)
		return -EINVAL;
	vlen = strnlen(s->vehicle, sizeof(s->vehicle));
	if (vlen > REC_SEAL_VEHICLE_MAX)
		return -EINVAL;
	memcpy(p, magic, 8);
	p = put_le(p + 8, s->version ? s->version : REC_SEAL_VERSION, 4);
	*p++ = (uint8_t)vlen;
	memcpy(p, s->vehicle, vlen);
	p += vlen;
	memcpy(p, s->log_id, REC_LOG_ID_LEN);
	p += REC_LOG_ID_LEN;
	memcpy(p, s->boot_id, REC_BOOT_ID_LEN);
	p += REC_BOOT_ID_LEN;
	p = put_le(p, s->first_seq, 8);
	p = put_le(p, s->end_seq, 8);
	p = put_le(p, (uint64_t)s->t_ns, 8);
	memcpy(p, s->chain_start, REC_SEAL_HASH_LEN);
	memcpy(p + REC_SEAL_HASH_LEN, s->chain_head, REC_SEAL_HASH_LEN);
	memcpy(p + 2 * REC_SEAL_HASH_LEN, s->prev_seal, REC_SEAL_HASH_LEN);
	p += 3 * REC_SEAL_HASH_LEN;
	if ((s->version ? s->version : REC_SEAL_VERSION) >= 2) {
		p = put_le(p, s->batch.schema_version, 4);
		p = put_le(p, (uint64_t)s->batch.t0_ns, 8);
		p = put_le(p, s->batch.config_hash, 8);
		p = put_le(p, (uint64_t)s->batch.mono_t0_ns, 8);
	}
	return (int)(p - buf);
}
