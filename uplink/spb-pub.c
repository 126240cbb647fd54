/* SPDX-License-Identifier: MIT */
/*
 * spb-pub.c - the Sparkplug B publisher's thread and MQTT client
 * (spb-pub.h).
 *
 * One job over ~700 lines: one MQTT session's state machine (connect,
 * births, DDATA, the UNSUBSCRIBE barriers that confirm them, the cursor
 * they move, rewind on a drop).  The callbacks and the loop share every
 * field of struct upl_spb under its lock, so a split would only move the
 * struct into a private header and the same state across two files.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/clock.h"
#include "basic/thread.h"
#include "cursor.h"
#include "mqtt-private.h"
#include "reduce.h"
#include "sparkplug/spb-session.h"
#include "spb-pub.h"

#define TOPIC_MAX 256
#define CONF_DEVICES_MAX UPL_SPB_DEVICES_MAX
#define BACKOFF_MS 1000
/* the TCP connect, TLS handshake and CONNACK together: the connect is
   asynchronous, so a SYN nobody answers (a blackholed address, a broker
   whose listen queue is full) costs this much, not the kernel's minutes
   of retries, and a stop is seen within a loop's 100 ms */
#define CONNECT_TIMEOUT_MS 10000
/* glibc's default thread stack is 8 MiB, and the daemon's mlockall makes
   all of it resident.  Measured (railmon run without mlockall, pages
   touched, through spb-run-session: TLS with a device certificate,
   births, Rebirths, a 40,000-record backlog): 24 KiB; OpenSSL's
   handshake runs in this thread (mosquitto's TLS connect does) */
#define SPB_STACK_BYTES (256 * 1024)
#define CURSOR_EVERY_MS 1000
/* ... or once this many confirmed records are not yet in it: a backlog
   goes at the broker's speed, and a second of it can be a whole outage's
   (spb-run-session: a kill -9 just after the backlog was confirmed found
   the cursor file at the outage's start and sent ~40,000 values again) */
#define CURSOR_EVERY_RECORDS 2048
#define DRAIN_MS 2000
/* barriers pending at once: a turn sends one; 16 are some seconds of
   Batches when the broker is slow to answer */
#define BARRIERS_MAX 16
/* A Batch whose newest record is older than this goes is_historical:
   the backlog after an outage or a restart, not current values. */
#define HISTORICAL_NS (10 * 1000000000ll)

/* an UNSUBSCRIBE sent after DDATAs: its UNSUBACK confirms the records below seq */
struct spb_barrier {
	uint64_t seq;
	int mid;
};

struct upl_spb {
	struct upl_spb_cfg cfg;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;          /* stats, stop */
	bool stop;
	struct upl_spb_stats st;
	/* the thread's own */
	struct mosquitto *mosq;
	bool connack, connected, rebirth;
	/* with a primary host: births wait for its STATE online; its
	   offline ends the connection (Sparkplug 3.0, 5.9) */
	char state_topic[TOPIC_MAX];
	bool births_due, host_online, host_lost;
	bool dead[CONF_DEVICES_MAX];   /* a device gone (DDEATH sent), by cfg.devices index */
	struct spb_session sess;
	spb_payload_t *pl;
	upl_reducer_t *red;            /* NULL: every sample */
	char cursor_path[PATH_MAX];
	char ncmd[TOPIC_MAX], dcmd[TOPIC_MAX]; /* dcmd: the filter, .../DCMD/<node>/+ */
	uint64_t next_seq;             /* the next record to read */
	/* Sparkplug 3.0 wants DATA at QoS 0 (tck-id-topics-ddata-mqtt), so
	   no PUBACK says a DDATA arrived.  A broker handles a connection's
	   packets in order, so its UNSUBACK to an UNSUBSCRIBE sent after
	   DDATAs says it has them: the barrier.  The cursor is acked_seq,
	   what a barrier confirmed; a lost connection reads again from it,
	   what was sent but not confirmed going again as historical
	   (at-least-once: a DDATA the broker took just before the loss
	   arrives twice).  A barrier follows every turn's DDATAs, several
	   pending at once: one at a time left the Batches sent while it was
	   on the way unconfirmed, and a broker that took them and then
	   died had them twice (spb-run-session: 318 values, 474 ms of
	   them, after a freeze). */
	uint64_t acked_seq;
	struct spb_barrier barriers[BARRIERS_MAX]; /* pending, oldest first */
	unsigned nbarriers;
	uint64_t resend_until;         /* records below it are sent again: historical */
	char barrier_topic[TOPIC_MAX];
	const char *bus_names[CONF_DEVICES_MAX]; /* by bus index: the devices', for event texts */
	uint64_t cursor_saved;         /* value in the file (a kill -9 keeps it) */
	uint64_t cursor_synced;        /* value fsynced (a power cut keeps it) */
	int64_t cursor_synced_ms;      /* the last fsynced write (or failed one) */
	bool cursor_failing;           /* the last write failed: once a second only */
};

static int64_t now_ms(void)
{
	return basic_mono_ns() / 1000000;
}

static uint64_t wall_ms(void)
{
	return (uint64_t)(basic_realtime_ns() / 1000000);
}

#define STAT(p, expr) do { pthread_mutex_lock(&(p)->lock); expr; pthread_mutex_unlock(&(p)->lock); } while (0)

static bool stopping(struct upl_spb *p)
{
	bool s;

	pthread_mutex_lock(&p->lock);
	s = p->stop;
	pthread_mutex_unlock(&p->lock);
	return s;
}

/* Encodes pl and publishes it on topic (QoS qos).  0 or -errno. */
static int publish(struct upl_spb *p, const char *topic, int qos)
{
	size_t n = spb_payload_size(p->pl);
	uint8_t *buf = malloc(n ? n : 1);
	int r;

	if (!buf)
		return -ENOMEM;
	r = spb_payload_encode(p->pl, buf, n);
	if (r >= 0)
		r = upl_mqtt_errno(mosquitto_publish(p->mosq, NULL, topic, r, buf, qos, false));
	free(buf);
	if (r == 0)
		STAT(p, p->st.bytes += n);
	return r;
}

static int topic(struct upl_spb *p, enum spb_msg type, const char *device, char *buf)
{
	return spb_topic(buf, TOPIC_MAX, p->cfg.group, type, p->cfg.node, device) < 0 ? -EINVAL : 0;
}

/* One device's DBIRTH (alive again) or DDEATH (gone: no metrics). */
static int device_birth(struct upl_spb *p, size_t d, bool birth, uint64_t ms)
{
	const struct upl_spb_device *dev = &p->cfg.devices[d];
	char t[TOPIC_MAX];
	int r;

	if ((r = spb_session_next(&p->sess, p->pl, ms)) < 0 ||
	    (birth && (r = spb_dbirth_add_channels(p->pl, p->cfg.channels, p->cfg.nchannels, dev->bus, ms)) < 0) ||
	    (r = topic(p, birth ? SPB_DBIRTH : SPB_DDEATH, dev->name, t)) < 0 || (r = publish(p, t, 0)) < 0)
		return r;
	p->dead[d] = !birth;
	STAT(p, birth ? p->st.dbirths++ : p->st.ddeaths++);
	return 0;
}

/* NBIRTH, then a DBIRTH per device: at connect and for a Rebirth. */
static int births(struct upl_spb *p)
{
	char t[TOPIC_MAX];
	uint64_t ms = wall_ms();
	int r;

	if ((r = spb_session_nbirth(&p->sess, p->pl, ms)) < 0 || (r = topic(p, SPB_NBIRTH, NULL, t)) < 0 ||
	    (r = publish(p, t, 0)) < 0)
		return r;
	/* the births say no value: each channel's next sample goes */
	if (p->red)
		upl_reducer_reset(p->red);
	STAT(p, (p->st.nbirths++, p->st.connected = true));
	for (size_t d = 0; d < p->cfg.ndevices; d++)
		if ((r = device_birth(p, d, true, ms)) < 0)
			return r;
	return 0;
}

/* The devices the Batch says are back (want 1) or gone (-1): their
   DBIRTH before the Batch's DDATA, their DDEATH after it. */
static int device_changes(struct upl_spb *p, const rec_batch_t *b, size_t count, int want)
{
	for (size_t i = 0; i < count; i++) {
		struct acq_item it;
		if (rec_batch_item(b, i, &it) < 0 || spb_device_change(&it) != want)
			continue;
		for (size_t d = 0; d < p->cfg.ndevices; d++) {
			if (p->cfg.devices[d].bus != it.bus || p->dead[d] == (want < 0))
				continue;
			int r = device_birth(p, d, want > 0, wall_ms());
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static void on_connect(struct mosquitto *m, void *ctx, int rc)
{
	struct upl_spb *p = ctx;

	(void)m;
	p->connack = true;
	p->connected = rc == 0;
	if (rc)
		STAT(p, p->st.last_error = upl_mqtt_connack_errno(rc));
}

static void save_cursor(struct upl_spb *p, bool now);

/* The barrier's UNSUBACK: the broker has every DDATA sent before it. */
static void on_unsubscribe(struct mosquitto *m, void *ctx, int mid)
{
	struct upl_spb *p = ctx;

	(void)m;
	/* UNSUBACKs come in the order the UNSUBSCRIBEs went: the oldest
	   pending, or a later one (then the broker has the older too) */
	for (unsigned i = 0; i < p->nbarriers; i++)
		if (p->barriers[i].mid == mid) {
			p->acked_seq = p->barriers[i].seq;
			p->nbarriers -= i + 1;
			memmove(p->barriers, p->barriers + i + 1, p->nbarriers * sizeof(p->barriers[0]));
			/* here, not only after the turn: one loop can take many
			   UNSUBACKs, so the file never lags the acked_seq the stats
			   say by CURSOR_EVERY_RECORDS or more */
			save_cursor(p, false);
			STAT(p, p->st.acked_seq = p->acked_seq);
			break;
		}
}

/* After DDATAs: a barrier for what no pending barrier covers. */
static void barrier(struct upl_spb *p)
{
	uint64_t covered = p->nbarriers ? p->barriers[p->nbarriers - 1].seq : p->acked_seq;
	int mid;

	if (!p->mosq || !p->connected || p->nbarriers == BARRIERS_MAX || p->next_seq == covered)
		return;
	/* a filter never subscribed: UNSUBACK anyway (MQTT 3.1.1, 3.10.4),
	   no effect on any subscription or message */
	if (mosquitto_unsubscribe(p->mosq, &mid, p->barrier_topic) == MOSQ_ERR_SUCCESS)
		p->barriers[p->nbarriers++] = (struct spb_barrier){ p->next_seq, mid };
}

/* The connection is gone: what it did not confirm is read again. */
static void rewind_unacked(struct upl_spb *p)
{
	p->nbarriers = 0;
	if (p->next_seq == p->acked_seq)
		return;
	int r = p->cfg.source.seek(p->cfg.source.ctx, p->acked_seq);
	if (r < 0) {
		/* the log cannot go back (rotated away?): what was sent stays
		   unconfirmed, said as the last error */
		STAT(p, p->st.last_error = r);
		p->acked_seq = p->next_seq;
		return;
	}
	if (p->next_seq > p->resend_until)
		p->resend_until = p->next_seq;
	if (p->red)
		upl_reducer_reset(p->red);
	STAT(p, p->st.rewinds++);
	p->next_seq = p->acked_seq;
}

static void on_disconnect(struct mosquitto *m, void *ctx, int rc)
{
	struct upl_spb *p = ctx;

	(void)m;
	(void)rc;
	p->connected = false;
}

/* STATE's JSON, {"online" : true|false, "timestamp" : ...}: 1 online,
   0 offline, -EBADMSG anything else. */
static int state_online(const char *s, size_t len)
{
	char buf[256];
	const char *k;

	if (len >= sizeof(buf))
		return -EBADMSG;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (!(k = strstr(buf, "\"online\"")))
		return -EBADMSG;
	k += strlen("\"online\"");
	k += strspn(k, " \t\r\n");
	if (*k++ != ':')
		return -EBADMSG;
	k += strspn(k, " \t\r\n");
	return !strncmp(k, "true", 4) ? 1 : !strncmp(k, "false", 5) ? 0 : -EBADMSG;
}

/* NCMD and DCMD: only Rebirth is done; the rest counted.  STATE: the
   primary host online or not. */
static void on_message(struct mosquitto *m, void *ctx, const struct mosquitto_message *msg)
{
	struct upl_spb *p = ctx;
	bool ncmd = !strcmp(msg->topic, p->ncmd);
	struct spb_cmd c;
	int r;

	(void)m;
	if (p->state_topic[0] && !strcmp(msg->topic, p->state_topic)) {
		r = state_online(msg->payload, msg->payloadlen > 0 ? (size_t)msg->payloadlen : 0);
		if (r < 0) {
			STAT(p, p->st.state_bad++);
			return;
		}
		if (!r && p->sess.born)
			p->host_lost = true;
		p->host_online = r == 1;
		STAT(p, p->st.host_online = p->host_online);
		return;
	}
	r = spb_cmd_parse(msg->payload, msg->payloadlen > 0 ? (size_t)msg->payloadlen : 0, !ncmd, &c);
	pthread_mutex_lock(&p->lock);
	p->st.cmds++;
	p->st.cmd_refused += r < 0 ? 1 : c.refused;
	pthread_mutex_unlock(&p->lock);
	if (r == 0 && c.rebirth)
		p->rebirth = true;
}

static void drop_client(struct upl_spb *p)
{
	if (p->mosq) {
		mosquitto_destroy(p->mosq);
		rewind_unacked(p);
		STAT(p, p->st.connected = false);
	}
	p->mosq = NULL;
	p->connected = false;
}

/* A fresh client: bdSeq on disk, the will, CONNACK, the command topics,
   the births.  0 or -errno (then no client). */
static int connect_once(struct upl_spb *p)
{
	char t[TOPIC_MAX];
	uint8_t bdseq;
	int damage, r;
	int64_t until;

	if ((r = spb_bdseq_next(p->cfg.state_dir, &bdseq, &damage)) < 0)
		return r;
	STAT(p, (p->st.bdseq = bdseq, p->st.bdseq_damage = damage));
	spb_session_start(&p->sess, bdseq);
	p->mosq = mosquitto_new(NULL, true, p);
	if (!p->mosq)
		return -ENOMEM;
	mosquitto_connect_callback_set(p->mosq, on_connect);
	mosquitto_disconnect_callback_set(p->mosq, on_disconnect);
	mosquitto_message_callback_set(p->mosq, on_message);
	mosquitto_unsubscribe_callback_set(p->mosq, on_unsubscribe);
	/* the will is the NDEATH with this connection's bdSeq */
	if ((r = spb_session_ndeath(&p->sess, p->pl, wall_ms())) < 0 || (r = topic(p, SPB_NDEATH, NULL, t)) < 0)
		goto fail;
	{
		size_t n = spb_payload_size(p->pl);
		uint8_t will[64];
		int k = n <= sizeof(will) ? spb_payload_encode(p->pl, will, sizeof(will)) : -EMSGSIZE;
		if (k < 0 || (r = upl_mqtt_errno(mosquitto_will_set(p->mosq, t, k, will, 1, false))) < 0) {
			r = k < 0 ? k : r;
			goto fail;
		}
	}
	if (p->cfg.username &&
	    (r = upl_mqtt_errno(mosquitto_username_pw_set(p->mosq, p->cfg.username, p->cfg.password))) < 0)
		goto fail;
	if (p->cfg.use_tls && (r = upl_mqtt_tls_apply(p->mosq, &p->cfg.tls)) < 0)
		goto fail;
	p->connack = p->connected = false;
	/* not mosquitto_connect(): its TCP connect blocks for as long as the
	   kernel retries a SYN nobody answers (over 2 minutes), and a SIGTERM
	   waited for it (upl_spb_stop() joins this thread); the loop below
	   finishes the asynchronous one under the deadline, watching the stop
	   (the name lookup still blocks) */
	r = upl_mqtt_errno(mosquitto_connect_async(p->mosq, p->cfg.host, p->cfg.port,
	                                           (int)(p->cfg.keepalive_s ? p->cfg.keepalive_s : 20)));
	if (r < 0)
		goto fail;
	until = now_ms() + CONNECT_TIMEOUT_MS;
	while (!p->connack && now_ms() < until && !stopping(p))
		if ((r = upl_mqtt_errno(mosquitto_loop(p->mosq, 100, 1))) < 0)
			goto fail;
	if (!p->connected) {
		r = p->connack ? -ECONNREFUSED : -ETIMEDOUT;
		goto fail;
	}
	/* commands first, so a Rebirth sent right after the NBIRTH is heard;
	   the primary host's STATE (retained) before any birth */
	p->host_online = p->host_lost = false;
	p->births_due = true;
	memset(p->dead, 0, sizeof(p->dead)); /* births say every device again */
	if ((r = upl_mqtt_errno(mosquitto_subscribe(p->mosq, NULL, p->ncmd, 1))) < 0 ||
	    (r = upl_mqtt_errno(mosquitto_subscribe(p->mosq, NULL, p->dcmd, 1))) < 0 ||
	    (p->state_topic[0] && (r = upl_mqtt_errno(mosquitto_subscribe(p->mosq, NULL, p->state_topic, 1))) < 0))
		goto fail;
	STAT(p, p->st.connects++);
	return 0;
fail:
	drop_client(p);
	return r;
}

/* The cursor is what the broker confirmed: at once when that is all that
   was sent (so a kill -9 while idle sends nothing again), else once a
   CURSOR_EVERY_MS or CURSOR_EVERY_RECORDS confirmed, whichever comes
   first.  A kill -9 so sends again less than CURSOR_EVERY_RECORDS of what
   was confirmed, and what was sent and not yet confirmed.  Only the timed
   write (and the one at stop) fsyncs: a kill -9 needs none, the page
   cache outlives the process, and an fsync per 2048 records cost a
   backlog a fifth of its speed (spb-cursor with 400,000 records).  The
   timed one makes the others durable too, so a power cut takes back at
   most a CURSOR_EVERY_MS of confirmations, or leaves a file load() calls
   damage (basic/replace.h): the whole log again, never a gap. */
static void save_cursor(struct upl_spb *p, bool now)
{
	bool due = now || now_ms() - p->cursor_synced_ms >= CURSOR_EVERY_MS;
	int r;

	if (p->acked_seq == p->cursor_synced ||
	    (!due && (p->cursor_failing || p->acked_seq == p->cursor_saved ||
	              (p->acked_seq != p->next_seq && p->acked_seq - p->cursor_saved < CURSOR_EVERY_RECORDS))))
		return;
	/* a file that cannot be written (a directory in its place, EIO) is
	   tried once a second, not at every UNSUBACK (a create each) */
	r = due ? upl_cursor_store(p->cursor_path, p->acked_seq) : upl_cursor_store_nosync(p->cursor_path, p->acked_seq);
	p->cursor_failing = r < 0;
	if (r == 0) {
		p->cursor_saved = p->acked_seq;
		if (due)
			p->cursor_synced = p->acked_seq;
	} else {
		STAT(p, p->st.cursor_store_failures++);
	}
	/* the count's writes do not move the timer: a backlog's stream of
	   them must not put off the fsynced one */
	if (due || r < 0)
		p->cursor_synced_ms = now_ms();
	STAT(p, p->st.next_seq = p->cursor_saved);
}

/* One stored Batch as a DDATA per device with records in it.  0, 1 = no
   record now, or -errno (the connection's). */
static int send_next(struct upl_spb *p)
{
	struct upl_rec rec;
	rec_batch_t *b = NULL;
	char t[TOPIC_MAX];
	int k = p->cfg.source.next(p->cfg.source.ctx, &rec), r = 0;

	if (k <= 0)
		return k < 0 ? k : 1;
	/* sent before and not confirmed: again, as history */
	bool again = rec.first_seq < p->resend_until;
	bool historical = again || basic_realtime_ns() - rec.t_last_ns > HISTORICAL_NS;
	STAT(p, (p->st.batches++, p->st.historical += historical, p->st.resent += again));
	const uint8_t *payload = rec.payload;
	size_t len = rec.len;
	/* `uplink =`: the Batch as the policies reduce it (0: sent whole) */
	if (p->red && upl_reducer_batch(p->red, rec.payload, rec.len, &payload, &len) == 1)
		STAT(p, p->st.reduced++);
	else
		payload = rec.payload, len = rec.len;
	if (rec_batch_decode(payload, len, &b) < 0) {
		STAT(p, p->st.batches_bad++);
		goto done;
	}
	struct rec_batch_info info;
	rec_batch_info(b, &info);
	if ((r = device_changes(p, b, info.count, 1)) < 0)
		goto done;
	for (size_t d = 0; d < p->cfg.ndevices && r >= 0; d++) {
		const struct upl_spb_device *dev = &p->cfg.devices[d];
		if (p->dead[d]) {
			/* a host takes no DATA of a dead device: counted */
			STAT(p, p->st.dead_batches++);
			continue;
		}
		/* the seq is taken only by a DDATA that goes: none is skipped */
		if ((r = spb_session_begin(&p->sess, p->pl, wall_ms())) < 0)
			break;
		uint64_t nulled = 0;
		int n = spb_ddata_add_batch(p->pl, b, p->cfg.channels, p->cfg.nchannels, dev->bus, historical,
		                            &nulled);
		if (n == -ENOSPC)
			STAT(p, p->st.batches_too_big++);
		if (n <= 0)
			continue;
		if ((r = topic(p, SPB_DDATA, dev->name, t)) < 0 || (r = publish(p, t, 0)) < 0)
			break;
		spb_session_commit(&p->sess);
		STAT(p, (p->st.ddata++, p->st.metrics += (uint64_t)n, p->st.nulled += nulled));
	}
	/* the Batch's events: the node's Events metric, one NDATA */
	if (r == 0 && (r = spb_session_begin(&p->sess, p->pl, wall_ms())) == 0) {
		int n = spb_ndata_add_events(p->pl, b, p->bus_names, CONF_DEVICES_MAX, historical);
		if (n == -ENOSPC)
			STAT(p, p->st.batches_too_big++);
		if (n > 0 && (r = topic(p, SPB_NDATA, NULL, t)) == 0 && (r = publish(p, t, 0)) == 0) {
			spb_session_commit(&p->sess);
			STAT(p, (p->st.ndata++, p->st.events += (uint64_t)n));
		}
	}
	if (r == 0)
		r = device_changes(p, b, info.count, -1);
done:
	rec_batch_free(b);
	if (r == 0)
		p->next_seq = rec.first_seq + rec.count;
	return r;
}

/* A clean end of a connection says NDEATH itself: the broker sends the
   will only for a connection lost. */
static void say_death(struct upl_spb *p)
{
	char t[TOPIC_MAX];

	if (spb_session_ndeath(&p->sess, p->pl, wall_ms()) == 0 && topic(p, SPB_NDEATH, NULL, t) == 0 &&
	    publish(p, t, 1) == 0)
		for (int i = 0; i < 10; i++)
			mosquitto_loop(p->mosq, 20, 1);
	mosquitto_disconnect(p->mosq);
}

static void *run(void *arg)
{
	struct upl_spb *p = arg;
	int64_t retry_at = 0;

	while (!stopping(p)) {
		if (!p->mosq) {
			if (now_ms() < retry_at) {
				basic_sleep_until(CLOCK_MONOTONIC, basic_mono_ns() + 50000000);
				continue;
			}
			int r = connect_once(p);
			if (r < 0) {
				STAT(p, (p->st.connect_failures++, p->st.last_error = r));
				retry_at = now_ms() + BACKOFF_MS;
			}
			continue;
		}
		int r = upl_mqtt_errno(mosquitto_loop(p->mosq, 20, 1));
		if (r == 0 && p->host_lost) {
			/* the primary host went offline: say NDEATH, go, and
			   come back to wait for it (a new bdSeq) */
			say_death(p);
			STAT(p, p->st.host_losses++);
			drop_client(p);
			retry_at = now_ms() + BACKOFF_MS;
			continue;
		}
		if (r == 0 && p->births_due && (!p->state_topic[0] || p->host_online)) {
			p->births_due = false;
			r = births(p);
		}
		if (r == 0 && p->rebirth && p->sess.born) {
			p->rebirth = false;
			r = births(p);
			STAT(p, p->st.rebirths++);
		}
		/* a few Batches a turn, so commands are heard between them */
		for (int i = 0; i < 16 && r == 0 && p->sess.born; i++) {
			int k = send_next(p);
			if (k == 1)
				break;
			r = k;
		}
		if (r == 0)
			barrier(p);
		save_cursor(p, false);
		if (r < 0 || !p->connected) {
			STAT(p, p->st.last_error = r < 0 ? r : -ECONNRESET);
			drop_client(p);
			retry_at = now_ms() + BACKOFF_MS;
		}
	}
	if (p->mosq) {
		/* what the log holds now goes first, for at most a moment: a
		   clean stop leaves nothing behind while the broker is there */
		int64_t until = now_ms() + DRAIN_MS;
		while (p->connected && p->sess.born && now_ms() < until && send_next(p) == 0)
			mosquitto_loop(p->mosq, 0, 1);
		/* and the broker's word that it has them, so the next start
		   does not send them again */
		while (p->connected && p->next_seq != p->acked_seq && now_ms() < until) {
			barrier(p);
			mosquitto_loop(p->mosq, 20, 1);
		}
		say_death(p);
		drop_client(p);
	}
	save_cursor(p, true);
	return NULL;
}

int upl_spb_new(const struct upl_spb_cfg *cfg, upl_spb_t **ret_pub)
{
	struct upl_spb *p;
	uint64_t seq = 1;
	int r;

	if (!cfg || !ret_pub || !cfg->host || !cfg->state_dir || !cfg->source.next || !cfg->source.seek ||
	    cfg->ndevices > CONF_DEVICES_MAX ||
	    (!cfg->channels && cfg->nchannels) || (!cfg->devices && cfg->ndevices) || !cfg->port)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	pthread_mutex_init(&p->lock, NULL);
	for (size_t d = 0; d < cfg->ndevices; d++)
		if (cfg->devices[d].bus < CONF_DEVICES_MAX)
			p->bus_names[cfg->devices[d].bus] = cfg->devices[d].name;
	if (spb_topic(p->ncmd, sizeof(p->ncmd), cfg->group, SPB_NCMD, cfg->node, NULL) < 0 ||
	    snprintf(p->dcmd, sizeof(p->dcmd), SPB_NAMESPACE "/%s/DCMD/%s/+", cfg->group, cfg->node) >= TOPIC_MAX ||
	    snprintf(p->cursor_path, sizeof(p->cursor_path), "%s/sparkplug-cursor", cfg->state_dir) >=
	    (int)sizeof(p->cursor_path) ||
	    snprintf(p->barrier_topic, sizeof(p->barrier_topic), "railmon/spb-barrier/%s", cfg->node) >= TOPIC_MAX ||
	    (cfg->primary_host && cfg->primary_host[0] &&
	     (strpbrk(cfg->primary_host, "/+#") || snprintf(p->state_topic, sizeof(p->state_topic), SPB_NAMESPACE
	                                                     "/STATE/%s", cfg->primary_host) >= TOPIC_MAX))) {
		upl_spb_free(p);
		return -EINVAL;
	}
	r = spb_payload_new(cfg->max_metrics ? cfg->max_metrics : 4096, &p->pl);
	if (r == 0 && cfg->reduce)
		r = upl_reducer_new(cfg->reduce, &p->red);
	if (r == 0 && cfg->nchannels + 2 > (cfg->max_metrics ? cfg->max_metrics : 4096))
		r = -E2BIG; /* a DBIRTH must fit */
	/* a damaged cursor starts at the oldest record: duplicates, no gap */
	if (r == 0 && (p->st.cursor_damage = upl_cursor_load(p->cursor_path, &seq)) < 0)
		seq = 1;
	if (r == 0)
		r = cfg->source.seek(cfg->source.ctx, seq);
	if (r < 0) {
		upl_spb_free(p);
		return r;
	}
	p->next_seq = p->acked_seq = p->cursor_saved = p->cursor_synced = seq;
	p->st.next_seq = p->st.acked_seq = seq;
	upl_mqtt_lib_init();
	*ret_pub = p;
	return 0;
}

int upl_spb_start(upl_spb_t *p)
{
	if (!p || p->started)
		return -EINVAL;
	int r = basic_thread_create(&p->thread, "sparkplug", SPB_STACK_BYTES, run, p);
	if (r < 0)
		return r;
	p->started = true;
	return 0;
}

void upl_spb_stop(upl_spb_t *p)
{
	if (!p || !p->started)
		return;
	STAT(p, p->stop = true);
	pthread_join(p->thread, NULL);
	p->started = false;
}

upl_spb_t *upl_spb_free(upl_spb_t *p)
{
	if (!p)
		return NULL;
	upl_spb_stop(p);
	drop_client(p);
	upl_reducer_free(p->red);
	spb_payload_free(p->pl);
	pthread_mutex_destroy(&p->lock);
	free(p);
	return NULL;
}

void upl_spb_stats(upl_spb_t *p, struct upl_spb_stats *ret)
{
	if (!p || !ret)
		return;
	pthread_mutex_lock(&p->lock);
	*ret = p->st;
	pthread_mutex_unlock(&p->lock);
}
