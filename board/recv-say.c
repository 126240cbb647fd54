/* SPDX-License-Identifier: MIT */
/*
 * recv-say.c - recv's words on stderr for what the ground station reports.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "recv-say.h"
#include "basic/clock.h"

void recv_note(void *ctx, const struct grd_note *n)
{
	struct recv_say *say = ctx;
	const struct rec_batch_info *info = n->info;
	int64_t now = basic_mono_ns();
	char id[2 * REC_LOG_ID_LEN + 1];
	/* An oversize Batch with --db is kept out of the database too. */
	const char *what = n->why < GRD_LATE ? "refused" : n->why == GRD_TOO_BIG && n->db ? "not stored" :
	                   "not in the ground log";

	grd_log_id_hex(info->log_id, info->log_id_len, id);
	if (n->why == GRD_CONTINUED) {
		fprintf(stderr, "railmon recv: %s log %.8s: a gap of over 2^32 records before seq %" PRIu64
		        " (more than a log marks): continuing in %s\n", info->vehicle, id[0] ? id : "(none)",
		        info->first_seq, n->dir);
		return;
	}
	if (say->printed[n->why] >= RECV_PRINT_BURST && now - say->printed_ns[n->why] < RECV_PRINT_EVERY_NS)
		return;
	if (say->printed[n->why] < RECV_PRINT_BURST)
		fprintf(stderr, "railmon recv: %s log %.8s: seq %" PRIu64 "..%" PRIu64 " %s: %s%s%s; %s%s\n",
		        info->vehicle, id[0] ? id : "(none)", info->first_seq,
		        info->first_seq + info->count - (info->count > 0), what, grd_why_text(n->why),
		        n->err ? ": " : "", n->err ? strerror(-n->err) : "", n->kept ? "kept in " : "not kept",
		        n->kept ? n->kept : "");
	else
		fprintf(stderr, "railmon recv: %" PRIu64 " Batches %s so far: %s\n", n->nth, what,
		        grd_why_text(n->why));
	say->printed[n->why]++;
	say->printed_ns[n->why] = now;
}

/* The summary line of the ground logs and the refused Batches kept. */
void recv_print_ground(const struct grd *g)
{
	uint64_t refused = 0;

	for (int i = GRD_LATE; i < GRD_WHY_MAX; i++)
		refused += g->refused[i];
	if (!g->dir && !g->kept && !g->keep_failed)
		return;
	if (g->dir)
		fprintf(stderr, "railmon recv: ground logs: %" PRIu64 " Batches stored", g->appended);
	else
		fprintf(stderr, "railmon recv: no ground log (--log)");
	if (g->had)
		fprintf(stderr, ", %" PRIu64 " received again that they held already", g->had);
	if (refused) {
		fprintf(stderr, "; not stored:");
		for (int i = GRD_LATE; i < GRD_WHY_MAX; i++)
			if (g->refused[i])
				fprintf(stderr, " %" PRIu64 " %s;", g->refused[i], grd_why_name((enum grd_why)i));
	}
	if (g->kept || g->keep_failed)
		fprintf(stderr, " %" PRIu64 " refused Batches kept in %s/%s", g->kept, g->keep_dir,
		        g->keep_failed ? " (some could not be written, see above)" : "");
	fputc('\n', stderr);
}

void recv_print_totals(const struct upl_recv_stats *st)
{
	uint64_t refused = 0;

	fprintf(stderr, "railmon recv: %" PRIu64 " messages, %" PRIu64 " records, %" PRIu64 " duplicates skipped, %"
	        PRIu64 " missing, %" PRIu64 " malformed payloads, %" PRIu64 " vehicles, %" PRIu64 " logs\n",
	        st->messages, st->records, st->duplicates, st->missing, st->bad, st->vehicles, st->logs);
	if (st->unverified || st->old)
		fprintf(stderr, "railmon recv: %" PRIu64 " of the duplicates skipped without comparing them (their "
		        "Batch is older than the last %d kept per log); %" PRIu64 " records below the %d seq ranges "
		        "kept per log written again (may be duplicates)\n", st->unverified, UPL_RECV_MAX_DIGESTS,
		        st->old, UPL_RECV_MAX_RANGES);
	for (int i = 0; i < UPL_RECV_REFUSAL_MAX; i++)
		refused += st->refused[i];
	if (refused)
		fprintf(stderr, "railmon recv: %" PRIu64 " Batches refused: %" PRIu64 " conflicts (%" PRIu64
		        " records), %" PRIu64 " implausible seq, %" PRIu64 " from vehicles past --max-vehicles, %"
		        PRIu64 " out of memory\n", refused, st->refused[UPL_RECV_CONFLICT], st->conflict_records,
		        st->refused[UPL_RECV_SEQ_JUMP], st->refused[UPL_RECV_TOO_MANY_VEHICLES],
		        st->refused[UPL_RECV_NO_MEMORY]);
	if (st->sink_errors)
		fprintf(stderr, "railmon recv: %" PRIu64 " Batches not stored or output not written (see above)\n",
		        st->sink_errors);
}

/* The database down (said when it starts, then every RECV_PRINT_EVERY_NS
   while it lasts), and back. */
void recv_report_db(struct db_report *d, grd_db_t *db)
{
	struct grd_db_stats st;
	int64_t now = basic_mono_ns();

	if (!db)
		return;
	grd_db_stats(db, &st);
	if (st.down && st.failures != d->failures && (!d->down || now - d->printed_ns >= RECV_PRINT_EVERY_NS)) {
		fprintf(stderr, "railmon recv: database: %s (%" PRIu64 " failed attempts so far; retrying, and "
		        "acknowledging nothing more until it commits)\n", st.error, st.failures);
		d->printed_ns = now;
		d->failures = st.failures;
	}
	if (d->down && !st.down)
		fprintf(stderr, "railmon recv: database: committing again\n");
	if (st.batches[GRD_DB_REFUSED] != d->refused && (!d->refused || now - d->refused_ns >= RECV_PRINT_EVERY_NS)) {
		fprintf(stderr, "railmon recv: database: refused for good (kept in table refused, %" PRIu64 " so far): "
		        "%s\n", st.batches[GRD_DB_REFUSED], st.last_refused);
		d->refused = st.batches[GRD_DB_REFUSED];
		d->refused_ns = now;
	}
	d->down = st.down;
}

void recv_print_db(const struct grd *g)
{
	struct grd_db_stats st;

	if (!g->db)
		return;
	grd_db_stats(g->db, &st);
	fprintf(stderr, "railmon recv: database: %" PRIu64 " Batches committed (%" PRIu64 " samples, %" PRIu64
	        " CAN frames, %" PRIu64 " events), %" PRIu64 " duplicates, %" PRIu64 " conflicts kept in "
	        "conflicts, %" PRIu64 " connections, %" PRIu64 " failed attempts\n", st.batches[GRD_DB_COMMITTED],
	        st.samples, st.can_frames, st.events, st.batches[GRD_DB_DUPLICATE], st.batches[GRD_DB_CONFLICT],
	        st.connects, st.failures);
	if (st.bad_names)
		fprintf(stderr, "railmon recv: database: %" PRIu64 " channel dictionary, value-table or Health entries not "
		        "stored: a name, unit, source or label that is not UTF-8, a value that is not a number\n", st.bad_names);
	if (st.batches[GRD_DB_REFUSED])
		fprintf(stderr, "railmon recv: database: %" PRIu64 " Batches refused for good, kept in table refused "
		        "(%" PRIu64 " of them not even there); the last: %s\n", st.batches[GRD_DB_REFUSED],
		        st.refused_lost, st.last_refused);
	if (g->dict_refused)
		fprintf(stderr, "railmon recv: database: %" PRIu64 " retained channel dictionaries refused for good: "
		        "%s\n", g->dict_refused, st.error);
	if (st.cancelled)
		fprintf(stderr, "railmon recv: database: %" PRIu64 " Batches NOT committed (stopped while the "
		        "database was down: %s); the gap repair asks their vehicles again\n", st.cancelled, st.error);
}

