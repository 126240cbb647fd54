/* SPDX-License-Identifier: MIT */
/*
 * copy.c - a group's new records as PostgreSQL's binary COPY rows, one
 * buffer per table (samples, can_frames, events, texts, trdp_telegrams),
 * their samples gathered for the rollups in the same pass, and each
 * buffer sent by one COPY FROM STDIN.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libpq-fe.h>

#include "db-private.h"
#include "acquisition/acq-item.h"

/* ---- COPY BINARY ---- */

/* The copy buffer of a record's table (GRD_COPY_*).  By kind, every kind
   named: a kind this file does not know would otherwise land in another
   table's columns (a telegram's addresses read as an event's code). */
static int table_of(const struct acq_item *it)
{
	_Static_assert(ACQ_ITEM_KIND_MAX == 5, "a table for each record kind");
	switch (it->kind) {
	case ACQ_ITEM_SAMPLE:
		return GRD_COPY_SAMPLES;
	case ACQ_ITEM_CAN:
		return GRD_COPY_CAN;
	case ACQ_ITEM_TEXT:
		return GRD_COPY_TEXTS;
	case ACQ_ITEM_TRDP:
		return GRD_COPY_TRDP;
	default:
		return GRD_COPY_EVENTS;
	}
}

/* An IPv4 address (host order) as inet's binary form: family
   (PGSQL_AF_INET, AF_INET + 0 in PostgreSQL's utils/inet.h), prefix bits,
   is_cidr, address length, the address in network order. */
static void put_inet(struct grd_buf *b, uint32_t ip)
{
	grd_put32(b, 8);
	grd_put16(b, 2 << 8 | 32);
	grd_put16(b, 0 << 8 | 4);
	grd_put32(b, ip);
}

/* A raw TRDP telegram: a row of trdp_telegrams (migration 0010), its
   columns in the table's order. */
static int add_trdp(struct grd_buf *b, int vid, int64_t t_pg, const struct acq_item *it)
{
	const struct acq_trdp *t = &it->trdp;
	bool md = t->flags & ACQ_TRDP_MD;
	/* record/batch-trdp.c's decoder refuses a Batch with any other (an
	   error here would be retried as the database's, for ever) */
	uint32_t len = t->data && t->len <= ACQ_TRDP_LEN_MAX ? t->len : 0;

	if (grd_buf_room(b, 19 + 2 + 16 * 4 + 12 * 8 + len + ACQ_TRDP_SESSION_LEN) < 0)
		return -ENOMEM;
	if (!b->used)
		grd_copy_head(b);
	grd_put16(b, 16);
	grd_f32(b, vid);
	grd_f64(b, t_pg);
	grd_f64(b, (int64_t)it->seq);
	grd_f32(b, it->bus);
	put_inet(b, t->src_ip);
	grd_f32(b, t->src_port);
	put_inet(b, t->dst_ip);
	grd_f32(b, t->dst_port);
	grd_f64(b, t->com_id);
	grd_f64(b, t->seq);
	grd_f64(b, t->etb_topo);
	grd_f64(b, t->op_trn_topo);
	grd_f32(b, t->msg_type);
	grd_f32(b, t->flags);
	grd_put32(b, len);
	if (len)
		memcpy(b->p + b->used, t->data, len);
	b->used += len;
	if (md) {
		grd_put32(b, ACQ_TRDP_SESSION_LEN);
		memcpy(b->p + b->used, t->session_id, ACQ_TRDP_SESSION_LEN);
		b->used += ACQ_TRDP_SESSION_LEN;
	} else {
		grd_put32(b, UINT32_MAX); /* NULL: PD has no session */
	}
	return 0;
}

/* One row of its kind's table (table_of()). */
static int add_row(grd_db_t *db, int vid, const struct acq_item *it)
{
	int k = table_of(it);
	struct grd_buf *b = &db->copy[k];
	int64_t t_pg = grd_floordiv(it->t_ns, 1000) - GRD_PG_EPOCH_US;

	if (k == GRD_COPY_TRDP)
		return add_trdp(b, vid, t_pg, it);
	if (grd_buf_room(b, 19 + 2 + 7 * 12 + (ACQ_CAN_DATA_MAX > ACQ_TEXT_MAX ? ACQ_CAN_DATA_MAX : ACQ_TEXT_MAX)) < 0)
		return -ENOMEM;
	if (!b->used)
		grd_copy_head(b);
	if (k == GRD_COPY_SAMPLES) {
		grd_put16(b, 6);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f64(b, it->sample.channel);
		grd_fdouble(b, it->sample.value);
		grd_f16(b, (int16_t)it->sample.quality);
	} else if (k == GRD_COPY_CAN) {
		unsigned len = it->can.len < ACQ_CAN_DATA_MAX ? it->can.len : ACQ_CAN_DATA_MAX;

		grd_put16(b, 7);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f32(b, it->bus);
		grd_f64(b, it->can.id);
		grd_f16(b, (int16_t)it->can.flags);
		grd_put32(b, len);
		memcpy(b->p + b->used, it->can.data, len);
		b->used += len;
	} else if (k == GRD_COPY_TEXTS) {
		/* text: the bytes as they are (printable ASCII, record/batch.c) */
		unsigned len = it->text.len < ACQ_TEXT_MAX ? it->text.len : ACQ_TEXT_MAX;

		grd_put16(b, 6);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f64(b, it->text.channel);
		grd_put32(b, len);
		memcpy(b->p + b->used, it->text.text, len);
		b->used += len;
		grd_f16(b, (int16_t)it->text.quality);
	} else {
		grd_put16(b, 7);
		grd_f32(b, vid);
		grd_f64(b, t_pg);
		grd_f64(b, (int64_t)it->seq);
		grd_f32(b, it->bus);
		grd_f32(b, (int32_t)it->event.code);
		grd_f64(b, it->event.arg);
		grd_f64(b, it->event.detail);
	}
	return 0;
}

/* seq in the sorted skip[0..n) */
static bool skipped(const uint64_t *skip, size_t n, uint64_t seq)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (skip[mid] == seq)
			return true;
		if (skip[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* A new Batch's records into the copy buffers (rows counted in n[]) and
   its samples into the rollups, in one pass; those in skip (a reduced
   Batch's, stored before this whole one) neither, so that the rollups
   count each record once too.  The rows added (at most count). */
int grd_copy_rows(grd_db_t *db, int vid, const rec_batch_t *b, uint64_t first_seq, uint32_t count,
                  const uint64_t *skip, size_t nskip, uint64_t n[GRD_COPY_TABLES])
{
	int r, added = 0;

	if (grd_rollup_reserve(db, count) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i < count; i++) {
		struct acq_item it;

		rec_batch_item(b, i, &it);
		/* CAN frames, samples, events, texts, telegrams: the Batch's order
		   (a reduced Batch's records carry their own seqs) */
		it.seq = rec_batch_seq(b, i) ? rec_batch_seq(b, i) : first_seq + i;
		if (skip && skipped(skip, nskip, it.seq))
			continue;
		r = add_row(db, vid, &it);
		if (r < 0)
			return r;
		grd_rollup_item(db, vid, &it);
		n[table_of(&it)]++;
		added++;
	}
	return added;
}

int grd_copy_table(grd_db_t *db, const char *table, struct grd_buf *b)
{
	char sql[128];
	PGresult *res;
	int r = 0;

	if (!b->used)
		return 0;
	if (grd_buf_room(b, 2) < 0)
		return -ENOMEM;
	grd_put16(b, 0xffff); /* the end */
	snprintf(sql, sizeof(sql), "COPY %s FROM STDIN (FORMAT binary)", table);
	res = PQexec(db->conn, sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		grd_db_fail_res(db, sql, res);
		PQclear(res);
		return -EIO;
	}
	PQclear(res);
	if (PQputCopyData(db->conn, b->p, (int)b->used) != 1 || PQputCopyEnd(db->conn, NULL) != 1) {
		grd_db_fail(db, sql, PQerrorMessage(db->conn));
		return -EIO;
	}
	while ((res = PQgetResult(db->conn))) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			grd_db_fail_res(db, sql, res);
			r = -EIO;
		}
		PQclear(res);
	}
	return r;
}

