/* SPDX-License-Identifier: MIT */
/* logsource.c - the records of a railmon log as an acq_source (logsource.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition/acq-bytes.h"
#include "basic/counter.h"
#include "logsource.h"
#include "storage/stor.h"
#include "record/batch.h"

struct pl_logsource {
	const struct conf_board *cfg;
	const char *dir;
	struct pl_logsource_faults faults;
	/* The source's thread only: */
	stor_reader_t *rd;
	bool opened, ended;
	bool tail_seen;           /* the end of the log looked at (faults.tail) */
	rec_batch_t *batch;       /* the Batch being handed out */
	size_t pos, count;        /* its next item, its items */
	int error;                /* what ended it early; read after done */
	struct acq_bytes *bytes;  /* TRDP telegrams' bytes go here (set_bytes) */
	/* Any thread: */
	_Atomic uint64_t items[CONF_BUSES_MAX];
	_Atomic uint64_t skipped;
};

/* The evidence chain's records (SEAL, SEAL_CHAIN_NEW, SEAL_UNSIGNED,
   SEAL_KEY_FAULT) vouch for the log that wrote them: the replay's log seals
   its own records with its own chain, and an old seal in it would claim a
   range and a chain it does not cover. */
static bool is_seal_event(uint32_t code)
{
	return code >= ACQ_EV_SEAL && code <= ACQ_EV_SEAL_KEY_FAULT;
}

/* What of a recorded log goes back through the pipeline (logsource.h).
   The daemon's own events (bus ACQ_SOURCE_DAEMON: start, stop, log,
   uplink and seal events) are left out with the bus test; START, STOP and
   the seal events are also refused by code, whatever bus they name. */
static bool wanted(const pl_logsource_t *ls, const struct acq_item *it)
{
	if (it->bus >= ls->cfg->nbuses)
		return false;
	/* samples and texts of CAN and TRDP buses are decoded again from
	   their frames and telegrams: only Modbus ones go through as recorded */
	if (it->kind == ACQ_ITEM_SAMPLE || it->kind == ACQ_ITEM_TEXT)
		return ls->cfg->buses[it->bus].kind == BUS_KIND_MODBUS;
	/* a TRDP bus's supervision is decoded again from its telegrams' times
	   (pl_channels_decode); a silence at the log's end, which only a live
	   tick saw, is not replayed */
	if (it->kind == ACQ_ITEM_EVENT && (it->event.code == ACQ_EV_TRDP_TIMEOUT || it->event.code == ACQ_EV_TRDP_BACK))
		return false;
	if (it->kind == ACQ_ITEM_EVENT)
		return it->event.code != ACQ_EV_START && it->event.code != ACQ_EV_STOP &&
		       !is_seal_event(it->event.code);
	return true;
}

/* The next Batch that decodes into ls->batch; false at the end of the log
   (or an error: ls->error). */
static bool next_batch(pl_logsource_t *ls)
{
	struct rec_batch_info info;
	struct stor_rec rec;
	int r;

	if (!ls->opened) {
		ls->opened = true;
		r = stor_reader_open(ls->dir, &ls->rd);
		if (r < 0) {
			ls->error = r;
			return false;
		}
	}
	while ((r = stor_reader_next(ls->rd, &rec)) != 0) {
		if (r == -EBADMSG) {
			/* The reader has moved past it: say what it cost, go on. */
			if (!ls->faults.reader || ls->faults.reader(ls->faults.ctx, ls->dir, ls->rd))
				basic_counter_add(&ls->skipped, 1);
			continue;
		}
		if (r < 0) {
			ls->error = r;
			return false;
		}
		r = rec_batch_decode(rec.payload, rec.len, &ls->batch);
		if (r < 0) {
			/* Said and counted; the replay goes on with the next one. */
			if (ls->faults.undecodable)
				ls->faults.undecodable(ls->faults.ctx, ls->dir, &rec, r);
			basic_counter_add(&ls->skipped, 1);
			continue;
		}
		rec_batch_info(ls->batch, &info);
		ls->pos = 0;
		ls->count = info.count;
		return true;
	}
	if (!ls->tail_seen && ls->faults.tail) {
		ls->tail_seen = true;
		if (ls->faults.tail(ls->faults.ctx, ls->dir, ls->rd))
			basic_counter_add(&ls->skipped, 1);
	}
	return false;
}

/* A telegram's bytes out of its Batch (freed before the item is
   consumed) into the byte ring the sink releases. */
static int copy_bytes(pl_logsource_t *ls, struct acq_item *it)
{
	uint8_t *p;

	if (!(p = acq_bytes_reserve(ls->bytes, it->trdp.len ? it->trdp.len : 1)))
		return -ENOBUFS;
	if (it->trdp.len)
		memcpy(p, it->trdp.data, it->trdp.len);
	it->trdp.data = p;
	return 0;
}

void pl_logsource_set_bytes(pl_logsource_t *ls, struct acq_bytes *bytes)
{
	if (ls)
		ls->bytes = bytes;
}

static int ls_recv(void *ctx, struct acq_item *items, size_t max, int timeout_ms)
{
	pl_logsource_t *ls = ctx;
	size_t n = 0;

	while (n < max && !ls->ended) {
		if (!ls->batch && !next_batch(ls)) {
			ls->ended = true;
			break;
		}
		while (n < max && ls->pos < ls->count) {
			rec_batch_item(ls->batch, ls->pos++, &items[n]);
			if (!wanted(ls, &items[n]))
				continue;
			if (items[n].kind == ACQ_ITEM_TRDP && copy_bytes(ls, &items[n]) < 0) {
				/* no room until the sink releases some: the same item
				   next time (a replay waits, never drops) */
				ls->pos--;
				acq_bytes_commit(ls->bytes);
				return (int)n;
			}
			items[n++].seq = 0;
		}
		if (ls->pos >= ls->count)
			ls->batch = rec_batch_free(ls->batch);
	}
	if (ls->bytes)
		acq_bytes_commit(ls->bytes);
	return n || !ls->ended ? (int)n : -ENODATA;
}

/* Counted per bus once in the ring: what a stop left unread is not. */
static void ls_pushed(void *ctx, const struct acq_item *items, size_t n)
{
	pl_logsource_t *ls = ctx;

	for (size_t i = 0; i < n; i++)
		basic_counter_add(&ls->items[items[i].bus], 1);
}

const struct acq_source_ops pl_logsource_ops = { .recv = ls_recv, .pushed = ls_pushed };

int pl_logsource_new(const struct conf_board *cfg, const char *dir, const struct pl_logsource_faults *faults,
                     pl_logsource_t **ret)
{
	pl_logsource_t *ls;

	if (!cfg || !dir || !ret)
		return -EINVAL;
	ls = calloc(1, sizeof(*ls));
	if (!ls)
		return -ENOMEM;
	ls->cfg = cfg;
	ls->dir = dir;
	if (faults)
		ls->faults = *faults;
	*ret = ls;
	return 0;
}

pl_logsource_t *pl_logsource_free(pl_logsource_t *ls)
{
	if (!ls)
		return NULL;
	rec_batch_free(ls->batch);
	stor_reader_free(ls->rd);
	free(ls);
	return NULL;
}

uint64_t pl_logsource_items(const pl_logsource_t *ls, size_t b)
{
	return ls && b < CONF_BUSES_MAX ? atomic_load_explicit(&((pl_logsource_t *)ls)->items[b],
	                                                        memory_order_relaxed) : 0;
}

uint64_t pl_logsource_skipped(const pl_logsource_t *ls)
{
	return ls ? atomic_load_explicit(&((pl_logsource_t *)ls)->skipped, memory_order_relaxed) : 0;
}

int pl_logsource_error(const pl_logsource_t *ls)
{
	return ls ? ls->error : 0;
}
