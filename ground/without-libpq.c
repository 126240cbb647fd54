/* SPDX-License-Identifier: MIT */
/*
 * without-libpq.c - the ground database API of a railmon built without libpq
 * (meson -Dpostgresql=disabled, or no libpq-dev at build time: the ARM
 * cross builds, whose multiarch libpq-dev cannot sit beside the build
 * machine's).  A vehicle's railmon never talks to PostgreSQL; this build
 * says so instead of pretending: every call is -ENOTSUP, and the commands
 * print GRD_DB_NOT_BUILT.  Ground logs, text output and everything on the
 * vehicle work as in a full build.
 */
#include <errno.h>
#include <string.h>

#include "db.h"
#include "ground.h"
#include "rollup.h"

int grd_db_new(const struct grd_db_cfg *cfg, grd_db_t **ret_db)
{
	if (ret_db)
		*ret_db = NULL;
	return -ENOTSUP;
}

grd_db_t *grd_db_free(grd_db_t *db)
{
	return NULL;
}

int grd_db_connect(grd_db_t *db)
{
	return -ENOTSUP;
}

const char *grd_db_error(const grd_db_t *db)
{
	return GRD_DB_NOT_BUILT;
}

int grd_db_version(grd_db_t *db, int *ret_version)
{
	return -ENOTSUP;
}

int grd_db_migrate(grd_db_t *db, bool init)
{
	return -ENOTSUP;
}

int grd_db_check(grd_db_t *db)
{
	return -ENOTSUP;
}

int grd_db_store_batch(grd_db_t *db, rec_batch_t **b, const void *payload, size_t len,
                       enum grd_db_outcome *ret_outcome)
{
	return -ENOTSUP;
}

int grd_db_dictionary(grd_db_t *db, const rec_batch_t *b)
{
	return -ENOTSUP;
}

int grd_db_flush(grd_db_t *db, bool force)
{
	return -ENOTSUP;
}

int grd_db_prune(grd_db_t *db, int64_t cutoff_ns, int64_t future_ns, int *ret_future)
{
	return -ENOTSUP;
}

void grd_db_stats(grd_db_t *db, struct grd_db_stats *ret_stats)
{
	if (ret_stats)
		memset(ret_stats, 0, sizeof(*ret_stats));
}

int grd_db_holes(grd_db_t *db, unsigned grace_s, struct grd_hole *ret_holes, size_t max)
{
	return -ENOTSUP;
}

int grd_db_request_asked(grd_db_t *db, const char *vehicle, int64_t from_ns, int64_t to_ns,
                         struct grd_hole *ret, size_t max)
{
	return -ENOTSUP;
}

int grd_db_export(grd_db_t *db, const struct grd_export_query *q, grd_export_fn fn, void *ctx)
{
	return -ENOTSUP;
}

int grd_db_channels(grd_db_t *db, const char *vehicle, struct rec_channels *map)
{
	return -ENOTSUP;
}

int grd_db_vehicle_known(grd_db_t *db, const char *vehicle)
{
	return -ENOTSUP;
}

int grd_db_status(grd_db_t *db, const char *vehicle, bool online)
{
	return -ENOTSUP;
}

int grd_db_config_status(grd_db_t *db, const char *vehicle, const struct grd_config_status_msg *m)
{
	return -ENOTSUP;
}

void grd_on_gone(void *ctx, const char *topic, const void *payload, size_t len)
{
}

int grd_repair_pass(grd_db_t *db, upl_recv_t *r, unsigned grace_s, uint64_t *ret_asked)
{
	return -ENOTSUP;
}

int grd_db_summary_rollups(grd_db_t *db, const char *vehicle, uint32_t channel, int64_t from_ns, int64_t to_ns,
                           struct grd_summary_row *rows, size_t max)
{
	return -ENOTSUP;
}

int grd_db_summary_channels(grd_db_t *db, const char *vehicle, int64_t from_ns, int64_t to_ns, uint32_t **ret_ids)
{
	*ret_ids = NULL;
	return -ENOTSUP;
}

int grd_db_rollup_valid_second(grd_db_t *db, const char *vehicle, uint32_t channel, int64_t from_ns, int64_t to_ns,
                               bool last, int64_t *ret_t_ns)
{
	return -ENOTSUP;
}

int grd_db_samples_of(grd_db_t *db, const char *vehicle, uint32_t channel, const int64_t *secs, const bool *whole,
                      size_t n, grd_sample_fn fn, void *ctx)
{
	return -ENOTSUP;
}

int grd_db_snapshot(grd_db_t *db)
{
	return -ENOTSUP;
}
