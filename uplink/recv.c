/* SPDX-License-Identifier: MIT */
/*
 * recv.c - ground-side consumer: MQTT session, per-vehicle sequence
 * tracking and record output.
 *
 * Sequence tracking keeps, per vehicle, the sorted set of ranges seen.  A
 * record inside a range is a duplicate; the holes between ranges are the
 * gaps.  The set is bounded: past UPL_RECV_MAX_RANGES holes the oldest
 * range is forgotten, so a hostile or broken sender can cost memory only
 * up to a fixed limit.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mqtt-private.h"
#include "recv.h"

#define UPL_RECV_MAX_RANGES 1024
#define UPL_RECV_MAX_VEHICLES 4096

struct range {
	uint64_t lo, hi; /* [lo, hi) */
};

struct vehicle {
	char *name;
	struct range *ranges;
	size_t nranges, cap;
	uint64_t distinct;   /* records in all ranges */
	uint64_t duplicates;
};

struct upl_recv {
	struct upl_recv_cfg cfg;   /* strings point at our copies */
	atomic_bool stop;

	pthread_mutex_t lock;      /* guards everything below */
	pthread_cond_t cond;       /* signalled when subscribed or records change */
	struct upl_recv_stats st;
	struct vehicle *veh;
	size_t nveh;
	bool csv_header_done;
	int connack_rc;
	bool lost;
};

/* ---- sequence ranges ---- */

/* Index of the first range with hi >= seq (so it contains or touches seq). */
static size_t range_find(const struct vehicle *v, uint64_t seq)
{
	size_t lo = 0, hi = v->nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v->ranges[mid].hi < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool range_covered(const struct vehicle *v, uint64_t seq)
{
	size_t i = range_find(v, seq + 1);

	return i < v->nranges && v->ranges[i].lo <= seq;
}

static int range_grow(struct vehicle *v)
{
	struct range *n;
	size_t cap;

	if (v->nranges < v->cap)
		return 0;
	if (v->cap >= UPL_RECV_MAX_RANGES) {
		/* Forget the oldest range: its records may come out again as new
		   if they are ever re-sent, which is better than unbounded memory. */
		v->distinct -= v->ranges[0].hi - v->ranges[0].lo;
		memmove(v->ranges, v->ranges + 1, (v->nranges - 1) * sizeof(*v->ranges));
		v->nranges--;
		return 0;
	}
	cap = v->cap ? v->cap * 2 : 4;
	n = realloc(v->ranges, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	v->ranges = n;
	v->cap = cap;
	return 0;
}

/* Add [lo, hi), merging with every range it overlaps or touches.  The
   caller has already counted which records were new. */
static int range_insert(struct vehicle *v, uint64_t lo, uint64_t hi)
{
	size_t i = range_find(v, lo), j = i;
	int r;

	while (j < v->nranges && v->ranges[j].lo <= hi)
		j++;
	if (i == j) {
		r = range_grow(v);
		if (r < 0)
			return r;
		i = range_find(v, lo);
		memmove(v->ranges + i + 1, v->ranges + i, (v->nranges - i) * sizeof(*v->ranges));
		v->ranges[i] = (struct range){ lo, hi };
		v->nranges++;
		return 0;
	}
	/* Ranges i..j-1 collapse into one. */
	if (v->ranges[i].lo < lo)
		lo = v->ranges[i].lo;
	if (v->ranges[j - 1].hi > hi)
		hi = v->ranges[j - 1].hi;
	v->ranges[i] = (struct range){ lo, hi };
	memmove(v->ranges + i + 1, v->ranges + j, (v->nranges - j) * sizeof(*v->ranges));
	v->nranges -= j - i - 1;
	return 0;
}

static uint64_t vehicle_missing(const struct vehicle *v)
{
	if (!v->nranges)
		return 0;
	return v->ranges[v->nranges - 1].hi - v->ranges[0].lo - v->distinct;
}

static struct vehicle *vehicle_get(upl_recv_t *r, const char *name)
{
	struct vehicle *n;

	for (size_t i = 0; i < r->nveh; i++)
		if (strcmp(r->veh[i].name, name) == 0)
			return &r->veh[i];
	if (r->nveh >= UPL_RECV_MAX_VEHICLES)
		return NULL;
	n = realloc(r->veh, (r->nveh + 1) * sizeof(*n));
	if (!n)
		return NULL;
	r->veh = n;
	n = &r->veh[r->nveh];
	memset(n, 0, sizeof(*n));
	n->name = strdup(name);
	if (!n->name)
		return NULL;
	r->nveh++;
	r->st.vehicles = r->nveh;
	return n;
}

/* ---- output ---- */

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void hex(FILE *out, const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%02x", d[i]);
}

/* JSON has no NaN/Inf: write null, as Python's json does with allow_nan off. */
static void json_double(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.17g", v);
	else
		fputs("null", out);
}

static void write_jsonl(FILE *out, const char *vehicle, bool hist, const struct acq_item *it)
{
	fputs("{\"vehicle\":", out);
	json_string(out, vehicle);
	fprintf(out, ",\"seq\":%" PRIu64 ",\"t_ns\":%" PRId64 ",\"historical\":%s", it->seq,
	        it->t_ns, hist ? "true" : "false");
	if (it->kind == ACQ_ITEM_CAN) {
		fprintf(out, ",\"kind\":\"can\",\"bus\":%u,\"id\":%" PRIu32 ",\"flags\":%u,\"data\":\"",
		        it->bus, it->can.id, it->can.flags);
		hex(out, it->can.data, it->can.len);
		fputs("\"}\n", out);
	} else if (it->kind == ACQ_ITEM_SAMPLE) {
		fprintf(out, ",\"kind\":\"sample\",\"channel\":%" PRIu32 ",\"value\":", it->sample.channel);
		json_double(out, it->sample.value);
		fprintf(out, ",\"quality\":%" PRIu32 "}\n", it->sample.quality);
	} else {
		const char *name = upl_event_name(it->event.code);

		fprintf(out, ",\"kind\":\"event\",\"source\":%u,\"code\":%" PRIu32 ",\"name\":", it->bus,
		        it->event.code);
		if (name)
			json_string(out, name);
		else
			fputs("null", out);
		fprintf(out, ",\"arg\":%" PRId64 ",\"detail\":%" PRIu32 "}\n", it->event.arg,
		        it->event.detail);
	}
}

/* CSV: vehicle names are quoted with "" doubling, everything else is numeric or hex. */
static void write_csv(FILE *out, const char *vehicle, bool hist, const struct acq_item *it)
{
	fputc('"', out);
	for (const char *s = vehicle; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fprintf(out, "\",%" PRIu64 ",%" PRId64 ",%d,", it->seq, it->t_ns, hist);
	if (it->kind == ACQ_ITEM_CAN) {
		fprintf(out, "can,%u,%" PRIu32 ",%u,", it->bus, it->can.id, it->can.flags);
		hex(out, it->can.data, it->can.len);
		fputs(",,,,,,\n", out);
	} else if (it->kind == ACQ_ITEM_SAMPLE) {
		fprintf(out, "sample,%u,,,,%" PRIu32 ",%.17g,%" PRIu32 ",,,\n", it->bus,
		        it->sample.channel, it->sample.value, it->sample.quality);
	} else {
		fprintf(out, "event,%u,,,,,,,%" PRIu32 ",%" PRId64 ",%" PRIu32 "\n", it->bus,
		        it->event.code, it->event.arg, it->event.detail);
	}
}

static const char csv_header[] =
	"vehicle,seq,t_ns,historical,kind,bus,can_id,can_flags,can_data,channel,value,quality,"
	"event,arg,detail\n";

static void write_record(upl_recv_t *r, const char *vehicle, bool hist, const struct acq_item *it)
{
	if (r->cfg.format == UPL_RECV_JSONL) {
		write_jsonl(r->cfg.out, vehicle, hist, it);
	} else if (r->cfg.format == UPL_RECV_CSV) {
		if (!r->csv_header_done)
			fputs(csv_header, r->cfg.out);
		r->csv_header_done = true;
		write_csv(r->cfg.out, vehicle, hist, it);
	}
}

/* ---- one payload ---- */

/* The vehicle level of railmon/<vehicle>/<kind> must name the Batch's
   vehicle: otherwise one vehicle could inject records into another's
   sequence space. */
static bool topic_matches(const char *topic, const char *vehicle)
{
	const char *a, *b;

	if (!topic)
		return true;
	a = strchr(topic, '/');
	if (!a)
		return false;
	b = strchr(a + 1, '/');
	if (!b)
		return false;
	return (size_t)(b - a - 1) == strlen(vehicle) && !strncmp(a + 1, vehicle, (size_t)(b - a - 1));
}

static int feed_batch(upl_recv_t *r, const char *topic, const upl_batch_t *b,
                      const void *payload, size_t len)
{
	struct upl_batch_info info;
	struct vehicle *v;
	uint64_t fresh = 0;

	if (upl_batch_info(b, &info) < 0 || !topic_matches(topic, info.vehicle))
		return -EBADMSG;
	if (info.first_seq == 0 || info.first_seq + info.count < info.first_seq)
		return -EBADMSG;
	v = vehicle_get(r, info.vehicle);
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < info.count; i++) {
		struct acq_item it;

		if (range_covered(v, info.first_seq + i)) {
			v->duplicates++;
			r->st.duplicates++;
			continue;
		}
		if (upl_batch_item(b, i, &it) < 0)
			return -EBADMSG;
		write_record(r, info.vehicle, info.historical, &it);
		fresh++;
	}
	if (info.count && range_insert(v, info.first_seq, info.first_seq + info.count) < 0)
		return -ENOMEM;
	v->distinct += fresh;
	if (fresh && r->cfg.on_batch && r->cfg.on_batch(r->cfg.ctx, &info, payload, len) < 0)
		r->st.sink_errors++;
	if (fresh)
		r->st.batches++;
	if (r->cfg.out && ferror(r->cfg.out)) {
		r->st.sink_errors++;
		clearerr(r->cfg.out);
	}
	r->st.records += fresh;
	return (int)(fresh > INT32_MAX ? INT32_MAX : fresh);
}

static uint64_t total_missing(const upl_recv_t *r)
{
	uint64_t m = 0;

	for (size_t i = 0; i < r->nveh; i++)
		m += vehicle_missing(&r->veh[i]);
	return m;
}

int upl_recv_feed(upl_recv_t *r, const char *topic, const void *payload, size_t len)
{
	upl_batch_t *b = NULL;
	int ret;

	if (!r || (!payload && len))
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	r->st.messages++;
	ret = upl_batch_decode(payload, len, &b);
	if (ret == 0)
		ret = feed_batch(r, topic, b, payload, len);
	if (ret == -EBADMSG || ret == -EINVAL) {
		r->st.bad++;
		ret = -EBADMSG;
	}
	r->st.missing = total_missing(r);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	upl_batch_free(b);
	return ret;
}

/* ---- lifetime and queries ---- */

static int recv_cfg_check(const struct upl_recv_cfg *c)
{
	if (!c->client_id || !*c->client_id || c->port < 0 || c->port > 65535)
		return -EINVAL;
	if ((unsigned)c->format >= UPL_RECV_FORMAT_MAX || (c->format != UPL_RECV_NONE && !c->out))
		return -EINVAL;
	if (c->password && !c->username)
		return -EINVAL;
	if (c->keepalive_s && c->keepalive_s < 5)
		return -EINVAL;
	if (!c->use_tls)
		return c->tls.insecure ? -EINVAL : 0;
	return upl_mqtt_tls_check(&c->tls);
}

upl_recv_t *upl_recv_free(upl_recv_t *r)
{
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->nveh; i++) {
		free(r->veh[i].name);
		free(r->veh[i].ranges);
	}
	free(r->veh);
	free((char *)r->cfg.host);
	free((char *)r->cfg.client_id);
	free((char *)r->cfg.topic);
	free((char *)r->cfg.tls.ca_file);
	free((char *)r->cfg.tls.cert_file);
	free((char *)r->cfg.tls.key_file);
	free((char *)r->cfg.username);
	free((char *)r->cfg.password);
	pthread_cond_destroy(&r->cond);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

int upl_recv_new(const struct upl_recv_cfg *cfg, upl_recv_t **ret_recv)
{
	upl_recv_t *r;
	bool ok = true;
	int ret;

	if (!cfg || !ret_recv)
		return -EINVAL;
	ret = recv_cfg_check(cfg);
	if (ret < 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->cfg = *cfg;
	r->cfg.host = upl_strdup_opt(cfg->host, &ok);
	r->cfg.client_id = upl_strdup_opt(cfg->client_id, &ok);
	r->cfg.topic = upl_strdup_opt(cfg->topic ? cfg->topic : "railmon/+/data", &ok);
	r->cfg.tls.ca_file = upl_strdup_opt(cfg->tls.ca_file, &ok);
	r->cfg.tls.cert_file = upl_strdup_opt(cfg->tls.cert_file, &ok);
	r->cfg.tls.key_file = upl_strdup_opt(cfg->tls.key_file, &ok);
	r->cfg.username = upl_strdup_opt(cfg->username, &ok);
	r->cfg.password = upl_strdup_opt(cfg->password, &ok);
	if (!r->cfg.keepalive_s)
		r->cfg.keepalive_s = 20;
	if (!r->cfg.backoff_max_ms)
		r->cfg.backoff_max_ms = 16000;
	if (!ok) {
		upl_recv_free(r);
		return -ENOMEM;
	}
	upl_mqtt_lib_init();
	*ret_recv = r;
	return 0;
}

int upl_recv_stop(upl_recv_t *r)
{
	if (!r)
		return -EINVAL;
	atomic_store(&r->stop, true);
	return 0;
}

int upl_recv_stats(upl_recv_t *r, struct upl_recv_stats *ret)
{
	if (!r || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	*ret = r->st;
	pthread_mutex_unlock(&r->lock);
	return 0;
}

int upl_recv_vehicle(upl_recv_t *r, const char *name, struct upl_recv_vehicle *ret)
{
	int err = -ENOENT;

	if (!r || !name || !ret)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	for (size_t i = 0; i < r->nveh; i++) {
		const struct vehicle *v = &r->veh[i];

		if (strcmp(v->name, name) != 0 || !v->nranges)
			continue;
		ret->first_seq = v->ranges[0].lo;
		ret->next_seq = v->ranges[v->nranges - 1].hi;
		ret->records = v->distinct;
		ret->duplicates = v->duplicates;
		ret->missing = vehicle_missing(v);
		err = 0;
		break;
	}
	pthread_mutex_unlock(&r->lock);
	return err;
}

static void deadline_in(struct timespec *ts, unsigned timeout_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += timeout_ms / 1000;
	ts->tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

int upl_recv_wait_subscribed(upl_recv_t *r, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r)
		return -EINVAL;
	deadline_in(&ts, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (!r->st.subscribed && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = r->st.subscribed ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}

int upl_recv_wait_records(upl_recv_t *r, uint64_t n, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r)
		return -EINVAL;
	deadline_in(&ts, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (r->st.records < n && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = r->st.records >= n ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}

static bool vehicle_reached(const upl_recv_t *r, const char *name, uint64_t seq)
{
	for (size_t i = 0; i < r->nveh; i++)
		if (strcmp(r->veh[i].name, name) == 0)
			return r->veh[i].nranges == 1 && r->veh[i].ranges[0].hi >= seq;
	return false;
}

int upl_recv_wait_seq(upl_recv_t *r, const char *vehicle, uint64_t seq, unsigned timeout_ms)
{
	struct timespec ts;
	int err = 0;

	if (!r || !vehicle)
		return -EINVAL;
	deadline_in(&ts, timeout_ms);
	pthread_mutex_lock(&r->lock);
	while (!vehicle_reached(r, vehicle, seq) && err == 0)
		err = pthread_cond_timedwait(&r->cond, &r->lock, &ts);
	err = vehicle_reached(r, vehicle, seq) ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&r->lock);
	return err;
}

/* ---- the MQTT session ---- */

static void set_subscribed(upl_recv_t *r, bool on)
{
	pthread_mutex_lock(&r->lock);
	r->st.subscribed = on;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void on_connect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_recv_t *r = arg;

	r->connack_rc = rc;
	if (rc != 0)
		return;
	pthread_mutex_lock(&r->lock);
	r->st.connects++;
	pthread_mutex_unlock(&r->lock);
	if (mosquitto_subscribe(mosq, NULL, r->cfg.topic, 1) != MOSQ_ERR_SUCCESS)
		r->lost = true;
}

static void on_subscribe(struct mosquitto *mosq, void *arg, int mid, int n, const int *qos)
{
	upl_recv_t *r = arg;

	/* 0x80: the broker refused the subscription (ACL). */
	if (n < 1 || qos[0] == 0x80) {
		r->lost = true;
		return;
	}
	set_subscribed(r, true);
}

static void on_disconnect(struct mosquitto *mosq, void *arg, int rc)
{
	upl_recv_t *r = arg;

	r->lost = true;
}

static void on_message(struct mosquitto *mosq, void *arg, const struct mosquitto_message *m)
{
	upl_recv_t *r = arg;

	upl_recv_feed(r, m->topic, m->payload, m->payloadlen > 0 ? (size_t)m->payloadlen : 0);
}

static int session_new(upl_recv_t *r, struct mosquitto **ret)
{
	struct mosquitto *m;
	int rc, err;

	m = mosquitto_new(r->cfg.client_id, r->cfg.clean_session, r);
	if (!m)
		return errno ? -errno : -ENOMEM;
	mosquitto_connect_callback_set(m, on_connect);
	mosquitto_subscribe_callback_set(m, on_subscribe);
	mosquitto_disconnect_callback_set(m, on_disconnect);
	mosquitto_message_callback_set(m, on_message);
	rc = MOSQ_ERR_SUCCESS;
	if (r->cfg.username)
		rc = mosquitto_username_pw_set(m, r->cfg.username, r->cfg.password);
	err = upl_mqtt_errno(rc);
	if (err == 0 && r->cfg.use_tls)
		err = upl_mqtt_tls_apply(m, &r->cfg.tls);
	if (err < 0) {
		mosquitto_destroy(m);
		return err;
	}
	*ret = m;
	return 0;
}

/* One connection: returns when it is lost, times out, or stop is asked. */
static void session_run(upl_recv_t *r, struct mosquitto *m)
{
	int64_t deadline = upl_mono_ns() + 15 * INT64_C(1000000000);

	r->connack_rc = -1;
	r->lost = false;
	if (mosquitto_connect_async(m, r->cfg.host, r->cfg.port, (int)r->cfg.keepalive_s) !=
	    MOSQ_ERR_SUCCESS)
		return;
	while (!atomic_load(&r->stop) && !r->lost && r->connack_rc <= 0) {
		/* No CONNACK in time: a stopped broker accepts TCP but never answers. */
		if (r->connack_rc < 0 && upl_mono_ns() > deadline)
			break;
		if (mosquitto_loop(m, 100, 1) != MOSQ_ERR_SUCCESS)
			break;
	}
	if (r->connack_rc == 0 && !r->lost)
		mosquitto_disconnect(m);
	set_subscribed(r, false);
}

static void backoff_wait(upl_recv_t *r, unsigned ms)
{
	int64_t until = upl_mono_ns() + (int64_t)ms * 1000000;

	while (!atomic_load(&r->stop) && upl_mono_ns() < until) {
		struct timespec ts = { 0, 20000000 };

		nanosleep(&ts, NULL);
	}
}

int upl_recv_run(upl_recv_t *r)
{
	unsigned first, delay;

	if (!r || !r->cfg.host || !r->cfg.port)
		return -EINVAL;
	first = r->cfg.backoff_max_ms < 250 ? r->cfg.backoff_max_ms : 250;
	delay = first;
	while (!atomic_load(&r->stop)) {
		struct mosquitto *m = NULL;
		uint64_t before = r->st.connects;
		int err = session_new(r, &m);

		if (err < 0)
			return err;
		session_run(r, m);
		mosquitto_destroy(m);
		/* Reset the backoff after a session that worked. */
		delay = r->st.connects != before ? first : delay * 2;
		if (delay > r->cfg.backoff_max_ms)
			delay = r->cfg.backoff_max_ms;
		if (!atomic_load(&r->stop))
			backoff_wait(r, delay / 2 + (unsigned)(upl_mono_ns() % (delay / 2 + 1)));
	}
	atomic_store(&r->stop, false);
	return 0;
}
