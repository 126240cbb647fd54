/* SPDX-License-Identifier: MIT */
/*
 * batch-private.h - a decoded Batch, shared by batch.c (decode, records)
 * and seal.c (its Seal).  Internal to record/.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "railmon.pb-c.h"

struct rec_batch {
	Railmon__V1__Batch *msg;
	size_t ncan, nsmp, nev, ntx;
	int64_t *t;            /* absolute time of every record, in record order */
	uint32_t *can_off;     /* offset of each frame's payload in can->data */
};
