/* SPDX-License-Identifier: MIT */
/*
 * batch-private.h - a decoded Batch, shared by batch.c (decode, records)
 * and seal.c (its Seal).  Internal to record/.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "acquisition/acq-item.h"
#include "railmon.pb-c.h"

struct rec_batch {
	Railmon__V1__Batch *msg;
	size_t ncan, nsmp, nev, ntx, ntr;
	int64_t *t;            /* absolute time of every record, in record order */
	uint32_t *can_off;     /* offset of each frame's payload in can->data */
	uint32_t *tr_off;      /* offset of each TRDP telegram in trdp->data */
	uint32_t *tr_sess;     /* index of each MD telegram's session id */
	uint64_t *seq;         /* a reduced Batch: each record's seq (NULL: contiguous) */
	uint64_t end_seq;      /* the range covered ends here (reduced: source_end_seq) */
};

/* batch-trdp.c: the TRDP telegrams' checks and records */
int rec_trdp_batch_check(struct rec_batch *b);
void rec_trdp_batch_item(const struct rec_batch *b, size_t i, struct acq_item *it);
