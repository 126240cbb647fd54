/* SPDX-License-Identifier: MIT */
/*
 * run-say.c - a running daemon in the operator's words (run-say.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "pipeline/faults.h"
#include "storage/stor.h"
#include "cli/run-say.h"
#include "uplink/spb-pub.h"

void cli_run_started(FILE *out, const char *cmd, const struct conf_board *cfg, const char *data_dir,
                     const char *warn, const char *log_warning)
{
	if (warn[0])
		fprintf(out, "railmon %s: warning: %s\n", cmd, warn);
	if (log_warning[0])
		fprintf(out, "railmon %s: warning: %s\n", cmd, log_warning);
	if (cfg->uplink.enabled && cfg->uplink.tls_insecure)
		fprintf(out, "railmon %s: WARNING: [uplink] tls_insecure = true: the broker's certificate is NOT verified\n",
		        cmd);
	if (cfg->sparkplug.mqtt.enabled && cfg->sparkplug.mqtt.tls && cfg->sparkplug.mqtt.tls_insecure)
		fprintf(out, "railmon %s: WARNING: [sparkplug] tls_insecure = true: the broker's certificate is NOT "
		        "verified\n", cmd);
	fprintf(out, "railmon %s: vehicle %s, %zu bus%s, config %016" PRIx64 ", log in %s\n", cmd, cfg->vehicle,
	        cfg->nbuses, cfg->nbuses == 1 ? "" : "es", cfg->hash, data_dir);
}

void cli_uplink_dictionary(FILE *out, size_t sent, size_t channels)
{
	if (sent < channels)
		fprintf(out, "railmon: uplink: the retained channels message holds %zu of %zu channels (1 MiB); "
		        "the others are named by the Batches' dictionaries\n", sent, channels);
}

void cli_broker_url(const struct conf_uplink *up, char *buf, size_t len)
{
	snprintf(buf, len, "%s://%s:%u", up->tls ? "mqtts" : "mqtt", up->host, up->port);
}

/* The cursor damage codes of uplink/forward.h, in plain words. */
void cli_cursor_damage_words(int err, uint64_t damaged_seq, uint64_t log_next, char *buf, size_t len)
{
	switch (err) {
	case -ENODATA:
		snprintf(buf, len, "is empty");
		break;
	case -EBADMSG:
		snprintf(buf, len, "does not hold a cursor line (\"railmon-cursor 1 <seq>\"): it is damaged or was cut short");
		break;
	case -ERANGE:
		snprintf(buf, len, "holds a sequence number that is zero, negative or too large");
		break;
	case -EOVERFLOW:
		snprintf(buf, len, "points at seq %" PRIu64 ", past the end of the log (its next seq is %" PRIu64 ")",
		         damaged_seq, log_next);
		break;
	case -EISDIR:
		snprintf(buf, len, "is a directory, not a file: remove it, or the cursor is never saved and every start sends the whole log again");
		break;
	case -ESPIPE:
		snprintf(buf, len, "is not a regular file (a FIFO, socket or device); a regular file replaces it at the first acknowledgement");
		break;
	default:
		snprintf(buf, len, "cannot be read (%s)", strerror(-err));
		break;
	}
}

void cli_uplink_cursor_warning(FILE *out, const char *cmd, const char *data_dir,
                               const struct upl_forward_stats *st, uint64_t log_first)
{
	char words[256];

	if (!st->cursor_damage)
		return;
	cli_cursor_damage_words(st->cursor_damage, st->cursor_damaged_seq, log_first, words, sizeof(words));
	fprintf(out, "railmon %s: warning: the uplink cursor %s/uplink.cursor %s; sending the whole log again "
	        "from its oldest record (the ground gets duplicates, nothing is lost)\n", cmd, data_dir, words);
}

void cli_uplink_news(FILE *out, const char *cmd, const char *broker, const struct pl_uplink_news *n,
                     const char *error_text)
{
	switch (n->conn) {
	case PL_UPLINK_CONN_BACK:
		fprintf(out, "railmon %s: uplink: connected to %s after %" PRIu64 " failed attempt%s in %.1f s\n", cmd,
		        broker, n->back_fails, n->back_fails == 1 ? "" : "s", n->back_s);
		break;
	case PL_UPLINK_CONN_CONNECTED:
	case PL_UPLINK_CONN_RECONNECTED:
		fprintf(out, "railmon %s: uplink: %s to %s\n", cmd,
		        n->conn == PL_UPLINK_CONN_RECONNECTED ? "reconnected" : "connected", broker);
		break;
	case PL_UPLINK_CONN_LOST:
		fprintf(out, "railmon %s: uplink: lost the connection to %s: %s; reconnecting\n", cmd, broker,
		        error_text);
		break;
	default:
		break;
	}
	if (n->fail == PL_UPLINK_FAIL_CANNOT)
		fprintf(out, "railmon %s: uplink: cannot connect to %s: %s; retrying (said again at most once a minute)\n",
		        cmd, broker, error_text);
	else if (n->fail == PL_UPLINK_FAIL_STILL)
		fprintf(out, "railmon %s: uplink: still cannot connect to %s: %s (%" PRIu64 " attempts in %.0f s)\n",
		        cmd, broker, error_text, n->fails, n->fail_s);
}

void cli_spb_start_warning(FILE *out, const char *cmd, const char *data_dir, const struct upl_spb_stats *st)
{
	char words[256];

	if (!st->cursor_damage)
		return;
	cli_cursor_damage_words(st->cursor_damage, 0, 0, words, sizeof(words));
	fprintf(out, "railmon %s: warning: the sparkplug cursor %s/sparkplug-cursor %s; publishing the whole log "
	        "again from its oldest record, historical (the host gets duplicates, nothing is lost)\n", cmd, data_dir,
	        words);
}

void cli_spb_status(FILE *out, const char *broker, const struct upl_spb_stats *st, uint64_t next_seq)
{
	fprintf(out, "railmon: sparkplug to %s: %s, bdSeq %u, %" PRIu64 " DDATA (%" PRIu64 " metrics, %" PRIu64
	        " bytes), %" PRIu64 " records not yet confirmed by the broker (from seq %" PRIu64 "), %" PRIu64
	        " failed connection attempts", broker, st->connected ? "connected" : "not connected", st->bdseq,
	        st->ddata, st->metrics, st->bytes, next_seq > st->acked_seq ? next_seq - st->acked_seq : 0,
	        st->acked_seq, st->connect_failures);
	if (st->rewinds)
		fprintf(out, "; %" PRIu64 " Batches sent again (historical) after %" PRIu64 " lost connections",
		        st->resent, st->rewinds);
	if (st->batches_too_big)
		fprintf(out, "; %" PRIu64 " Batches too big for a DDATA, not sent", st->batches_too_big);
	if (st->nulled)
		fprintf(out, "; %" PRIu64 " samples sent null (value not of the channel's datatype)", st->nulled);
	if (st->batches_bad)
		fprintf(out, "; %" PRIu64 " Batches not decodable, not sent", st->batches_bad);
	if (st->dead_batches)
		fprintf(out, "; %" PRIu64 " Batches of a gone device (DDEATH), not sent", st->dead_batches);
	if (st->cmd_refused)
		fprintf(out, "; %" PRIu64 " command metrics refused (only Rebirth is done)", st->cmd_refused);
	if (st->state_bad)
		fprintf(out, "; %" PRIu64 " primary host STATE messages not understood", st->state_bad);
	if (st->bdseq_damage)
		fprintf(out, "; the bdSeq file sparkplug-bdseq was damaged (%s): started again at 0",
		        strerror(-st->bdseq_damage));
	if (st->cursor_store_failures)
		fprintf(out, "; cursor file write failures: %" PRIu64, st->cursor_store_failures);
	fputc('\n', out);
}

/* The uplink's part of the summary: what is still to be sent, and why. */
void cli_uplink_status(FILE *out, const char *broker, const struct upl_forward_stats *st, uint64_t next_seq)
{
	fprintf(out, "railmon: uplink to %s: %s, %" PRIu64 " records not yet acknowledged (from seq %" PRIu64 "), %"
	        PRIu64 " failed connection attempts", broker, st->connected ? "connected" : "not connected",
	        next_seq > st->cursor ? next_seq - st->cursor : 0, st->cursor, st->connect_fails);
	if (st->last_error_text[0])
		fprintf(out, ", last connection error: %s", st->last_error_text);
	if (st->cursor_errors)
		fprintf(out, "; cursor file write failures: %" PRIu64, st->cursor_errors);
	fputc('\n', out);
}

void cli_run_status(FILE *out, const struct conf_board *cfg, const struct cli_run_counts *c,
                    const struct acq_link_state *links)
{
	fprintf(out, "railmon: %" PRIu64 " records stored (seq %" PRIu64 "..%" PRIu64 "), %" PRIu64
	        " ring drops, %" PRIu64 " refused by the log;", c->records, c->first_seq,
	        c->next_seq ? c->next_seq - 1 : 0, c->ring_drops, c->log_dropped);
	for (size_t b = 0; b < cfg->nbuses; b++) {
		const struct acq_link_state *l = &links[b];

		fprintf(out, " %s: %" PRIu64 " in, %" PRIu64 " errors", cfg->buses[b].name, c->bus_rx[b],
		        c->bus_errors[b]);
		if (l->losses)
			fprintf(out, ", device lost %" PRIu64 " times, reopened %" PRIu64 ", now %s", l->losses,
			        l->reopens, acq_link_name(l->state));
		fputc(';', out);
	}
	fputc('\n', out);
}

void cli_run_status_text(const struct cli_run_counts *c, char *buf, size_t len)
{
	snprintf(buf, len, "STATUS=%" PRIu64 " records stored, %" PRIu64 " ring drops, %" PRIu64
	         " refused by the log", c->records, c->ring_drops, c->log_dropped);
}

/* What a loss's errno means for a bus device, where the text alone does
   not say it; "" otherwise. */
static const char *gone_words(int cause)
{
	switch (-cause) {
	case EPIPE: return " (the tty hung up: adapter unplugged or its pty closed)";
	case ENODEV: return " (interface deleted or adapter unplugged)";
	case ENETDOWN: return " (interface set down or deleted)";
	default: return "";
	}
}

void cli_link_words(const struct bus_cfg *bc, const struct acq_link_state *l, uint64_t lost, char *buf,
                    size_t len)
{
	char where[BUS_PATH_MAX + 32], extra[64] = "", blind[64] = "";

	pl_bus_where(bc, where, sizeof(where));
	if (lost > 1)
		snprintf(extra, sizeof(extra), " (%" PRIu64 " losses since the last message)", lost);
	/* The bus unheard after the device was there again (issue 30's blind
	   time); unknown when its return was not seen, only a timed retry. */
	if (l->state == ACQ_LINK_UP && l->blind_ms != ACQ_BLIND_UNKNOWN)
		snprintf(blind, sizeof(blind), ", read again %" PRIu32 " ms after it reappeared", l->blind_ms);
	if (l->state == ACQ_LINK_UP && lost) /* gone and back within a second: say why here */
		snprintf(buf, len, "bus '%s' (%s) is back after %.1f s, reopen #%" PRIu64 "%s%s; it was gone: %s%s",
		         bc->name, where, (double)(l->back_ns - l->gone_ns) / 1e9, l->reopens, blind, extra,
		         strerror(-l->cause), gone_words(l->cause));
	else if (l->state == ACQ_LINK_UP)
		snprintf(buf, len, "bus '%s' (%s) is back after %.1f s (%u attempt%s), reopen #%" PRIu64 "%s%s",
		         bc->name, where, (double)(l->back_ns - l->gone_ns) / 1e9, l->attempts, l->attempts == 1 ? "" : "s",
		         l->reopens, blind, extra);
	else if (lost)
		snprintf(buf, len, "bus '%s' (%s) is gone: %s%s; recording the rest, reopening as soon as it returns%s",
		         bc->name, where, strerror(-l->cause), gone_words(l->cause), extra);
	else
		snprintf(buf, len, "bus '%s' (%s) still gone after %u attempt%s: reopen: %s", bc->name, where,
		         l->attempts, l->attempts == 1 ? "" : "s", strerror(-l->reopen_err));
}

void cli_log_refusing(FILE *out, const char *cmd, int err, uint64_t total, char *status, size_t statuslen)
{
	fprintf(out, "railmon %s: THE LOG IS REFUSING RECORDS (%s): %" PRIu64 " refused so far; they are counted "
	        "and written as one event once the log accepts records again\n", cmd, err ? strerror(-err) : "error",
	        total);
	snprintf(status, statuslen, "STATUS=the log is refusing records (%s): %" PRIu64 " refused",
	         err ? strerror(-err) : "error", total);
}

void cli_log_recovered(FILE *out, const char *cmd, uint64_t total)
{
	fprintf(out, "railmon %s: the log takes records again; %" PRIu64 " were refused, counted in its "
	        "LOG_DROPPED events\n", cmd, total);
}

/* The exit status says whether the run kept everything: a replay that
   skipped parts of its source log, or stopped early, is not a success. */
int cli_run_verdict(FILE *out, const char *cmd, const struct pl_run_totals *t, int rc)
{
	if (t->refused) {
		/* A recorder that lost records did not succeed. */
		fprintf(out, "railmon %s: %" PRIu64 " records were refused by the log (%s)\n", cmd, t->refused,
		        t->log_error ? strerror(-t->log_error) : "see above");
		if (t->unreported)
			fprintf(out, "railmon %s: %" PRIu64 " of them are in no LOG_DROPPED event: the log still refused "
			        "records at the stop, so only this message says so\n", cmd, t->unreported);
		rc = 1;
	}
	if (t->hold_error) {
		/* Recording went on, but retention kept everything meanwhile:
		   the log may have outgrown its budget. */
		if (t->hold_error == -EBADMSG)
			fprintf(out, "railmon %s: the holds file %s/%s was damaged during the run (line %u): retention "
			        "deleted nothing while it was so", cmd, t->holds_dir, STOR_HOLDS_NAME, t->hold_error_line);
		else
			fprintf(out, "railmon %s: the holds file %s/%s could not be read during the run (%s): retention "
			        "deleted nothing while it was so", cmd, t->holds_dir, STOR_HOLDS_NAME, strerror(-t->hold_error));
		if (t->hold_error_now == -EBADMSG)
			fprintf(out, "; it still is, at line %u: the next start refuses it until it is repaired or "
			        "removed\n", t->hold_error_line);
		else if (t->hold_error_now < 0)
			fprintf(out, "; it still cannot be read (%s)\n", strerror(-t->hold_error_now));
		else
			fprintf(out, "; it is readable again\n");
		rc = 1;
	}
	if (t->replay_error) {
		fprintf(out, "railmon %s: the source log could not be read to its end: %s\n", cmd,
		        strerror(-t->replay_error));
		rc = 1;
	}
	if (t->replay_skipped) {
		fprintf(out, "railmon %s: %" PRIu64 " unreadable part%s of the source log skipped (see above)\n", cmd,
		        t->replay_skipped, t->replay_skipped == 1 ? "" : "s");
		rc = 1;
	}
	return rc;
}
