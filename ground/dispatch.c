/* SPDX-License-Identifier: MIT */
/*
 * dispatch.c - where each Batch the ledger hands over goes: the
 * callbacks `railmon recv` wires to the ground's ledger behind uplink's
 * receiver (ground/receiver.c)
 * send it on to the database (ground/commit.c), the ground logs and the
 * refused files (ground/logs.c) and the text output's names
 * (ground/recv-text.c).  The receiver decodes each payload once: the decoded
 * Batch comes with it and goes on to the database, which keeps it until
 * its group commits, and to the ground log (its time span, the check of a
 * Batch behind the log's end), so nothing here decodes.
 */
#include <errno.h>

#include "ground.h"

/* The ledger's on_refused: it would not take the Batch. */
void grd_refused(void *ctx, enum grd_ledger_refusal why, const struct rec_batch_info *info, rec_batch_t **b,
                 const void *payload, size_t len)
{
	struct grd *g = ctx;
	enum grd_db_outcome out;

	_Static_assert((int)GRD_NO_MEMORY == (int)GRD_LEDGER_NO_MEMORY, "refusal reasons line up");
	grd_refuse(g, (enum grd_why)why, info, payload, len, 0);
	/* The database decides for itself (its ledger may not hold what this
	   receiver remembers): it keeps a real conflict in its conflicts table. */
	if (g->db && why == GRD_LEDGER_CONFLICT)
		grd_db_store_batch(g->db, b, payload, len, &out); /* stopped: counted in its stats.cancelled */
}

void grd_channels(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b)
{
	struct grd *g = ctx;

	if (g->text)
		grd_text_channels(ctx, info, b);
	if (g->db && grd_db_dictionary(g->db, b) == -EPERM)
		g->dict_refused++;
}

void grd_idle(void *ctx)
{
	struct grd *g = ctx;

	if (g->db)
		grd_db_flush(g->db, false);
	if (g->db && g->status)
		grd_status_retry(g);
	if (g->db && g->config_status)
		grd_config_status_retry(g);
}

int grd_batch(void *ctx, const struct rec_batch_info *info, rec_batch_t **b, const void *payload, size_t len,
              void **log_ctx)
{
	struct grd *g = ctx;
	enum grd_db_outcome out;
	int r = 0, k = 0;

	if (g->db && len > REC_BATCH_MAX_BYTES) {
		/* No railmon makes one (record/batch.h): refused once, counted and
		   kept, neither in the database nor in a ground log. */
		grd_refuse(g, GRD_TOO_BIG, info, payload, len, 0);
		return -EFBIG;
	}
	/* The ground log first: the database takes the decoded Batch (its
	   group frees it once committed, perhaps on another thread), and the
	   log needs it only during the call. */
	if (g->dir)
		k = grd_append(g, info, *b, payload, len, log_ctx);
	if (g->db)
		r = grd_db_store_batch(g->db, b, payload, len, &out);
	return r < 0 ? r : k;
}

int grd_jump(void *ctx, const struct rec_batch_info *info, rec_batch_t **b, const void *payload, size_t len,
             void **log_ctx)
{
	struct grd *g = ctx;
	enum grd_db_outcome out;

	/* The ledger decides (ground/ingest.c), not a ground log. */
	if (len > REC_BATCH_MAX_BYTES) {
		grd_refuse(g, GRD_TOO_BIG, info, payload, len, 0);
		return -EFBIG;
	}
	/* Not in a ground log nor the text output: kept and said, as a seq
	   jump is without a database (the database keeps the payload of a
	   vehicle's first GRD_DB_DOOR_PAYLOADS refusals only). */
	grd_refuse(g, GRD_JUMP_DB, info, payload, len, 0);
	return grd_db_store_batch(g->db, b, payload, len, &out);
}
