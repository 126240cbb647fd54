/* SPDX-License-Identifier: MIT */
/* fixture.c - see fixture.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture.h"
#include "uplink/request.h"

int fx_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		close(fd);
		return -errno;
	}
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int broker_init(struct broker *b, bool persistent, const char *extra)
{
	struct passwd *pw = getpwuid(getuid());
	FILE *f;

	memset(b, 0, sizeof(*b));
	b->peer.pid = -1;
	snprintf(b->dir, sizeof(b->dir), "/tmp/railmon-broker-XXXXXX");
	if (!mkdtemp(b->dir))
		return -errno;
	snprintf(b->conf, sizeof(b->conf), "%s/mosquitto.conf", b->dir);
	b->port = fx_free_port();
	if (b->port < 0)
		return b->port;
	f = fopen(b->conf, "w");
	if (!f)
		return -errno;
	/* max_queued_messages 0 means "queue nothing" in mosquitto 2.0.11, not
	   "unlimited": an offline persistent subscriber would lose everything.
	   max_inflight_messages 0 (no limit) makes the broker write a message
	   to online subscribers before it sends PUBACK, instead of holding it
	   in a memory-only queue that a SIGKILL would lose after the ack. */
	fprintf(f, "listener %d 127.0.0.1\n%slog_dest stderr\n"
	           "log_type error\nlog_type warning\nlog_type notice\nlog_type information\n"
	           "max_queued_messages 1000000\nmax_inflight_messages 0\n",
	        b->port, extra && strstr(extra, "allow_anonymous") ? "" : "allow_anonymous true\n");
	/* As root mosquitto drops to user "mosquitto", which could not read
	   our temp dir: stay who we are. */
	if (pw)
		fprintf(f, "user %s\n", pw->pw_name);
	if (persistent)
		fprintf(f, "persistence true\npersistence_location %s/\nautosave_interval 1\n", b->dir);
	else
		fprintf(f, "persistence false\n");
	if (extra)
		fputs(extra, f);
	return fclose(f) ? -errno : 0;
}

static void *drain_main(void *arg)
{
	struct broker *b = arg;
	char path[256], buf[4096];
	ssize_t n;
	int fd;

	/* Keep reading mosquitto's log so it never blocks on a full pipe,
	   from what the wait for "running" read ahead. */
	snprintf(path, sizeof(path), "%s/broker.log", b->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0 && b->peer.len && write(fd, b->peer.buf, b->peer.len) < 0) {
		close(fd);
		fd = -1;
	}
	while ((n = read(b->peer.out_fd, buf, sizeof(buf))) > 0)
		if (fd >= 0 && write(fd, buf, (size_t)n) < 0)
			break;
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* Read mosquitto's lines until one says "running" (ready) or it closes. */
static int wait_ready(struct tlib_peer *p, int timeout_ms)
{
	int64_t end = tlib_mono_ms() + timeout_ms;
	char line[1024];
	int r;

	while ((r = tlib_peer_readline(p, line, sizeof(line), (int)(end - tlib_mono_ms()))) == 0) {
		fprintf(stderr, "broker: %s\n", line);
		if (strstr(line, " running"))
			return 0;
		if (strstr(line, "Error"))
			return -EIO;
	}
	return r;
}

int broker_start(struct broker *b)
{
	char *argv[] = { "mosquitto", "-c", b->conf, NULL };
	int r;

	/* A failed CHECK (abort), a signal (meson's timeout) or an exit
	   without broker_fini() must not leave a broker running: tlib's peers
	   die with the thread that started them. */
	r = tlib_peer_start(&b->peer, argv, TLIB_PEER_STDOUT | TLIB_PEER_STDERR);
	if (r < 0)
		return r;
	r = wait_ready(&b->peer, 10000);
	if (r < 0) {
		tlib_peer_stop(&b->peer, 0);
		b->peer.pid = -1;
		return r;
	}
	b->draining = pthread_create(&b->drain, NULL, drain_main, b) == 0;
	return 0;
}

int broker_signal(struct broker *b, int sig)
{
	if (b->peer.pid <= 0)
		return -ESRCH;
	if (kill(b->peer.pid, sig) < 0)
		return -errno;
	if (sig != SIGKILL && sig != SIGTERM)
		return 0;
	if (waitpid(b->peer.pid, NULL, 0) < 0)
		return -errno;
	b->peer.pid = -1;
	if (b->draining)
		pthread_join(b->drain, NULL);
	b->draining = false;
	close(b->peer.out_fd);
	b->peer.out_fd = -1;
	return 0;
}

void broker_fini(struct broker *b)
{
	char *argv[] = { "rm", "-rf", b->dir, NULL };

	if (b->peer.pid > 0) {
		kill(b->peer.pid, SIGCONT);
		broker_signal(b, SIGKILL);
	}
	if (!getenv("RAILMON_KEEP_TMP"))
		tlib_run(argv, 30);
}

/* ---- in-memory log ---- */

void memlog_init(struct memlog *l)
{
	memset(l, 0, sizeof(*l));
	pthread_mutex_init(&l->lock, NULL);
	l->next_seq = 1;
}

void memlog_fini(struct memlog *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->recs[i].buf);
	free(l->recs);
	pthread_mutex_destroy(&l->lock);
}

int memlog_append(struct memlog *l, uint32_t count, int64_t t_last_ns, const void *buf, size_t len)
{
	struct memrec *r;
	void *copy = malloc(len);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	pthread_mutex_lock(&l->lock);
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct memrec *n = realloc(l->recs, cap * sizeof(*n));

		if (!n) {
			pthread_mutex_unlock(&l->lock);
			free(copy);
			return -ENOMEM;
		}
		l->recs = n;
		l->cap = cap;
	}
	r = &l->recs[l->n++];
	*r = (struct memrec){ l->next_seq, count, t_last_ns, copy, (uint32_t)len };
	l->next_seq += count;
	l->bytes += len;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

static int memlog_seek(void *ctx, uint64_t seq)
{
	struct memlog *l = ctx;
	size_t i;

	pthread_mutex_lock(&l->lock);
	for (i = 0; i < l->n && l->recs[i].first_seq + l->recs[i].count <= seq; i++)
		;
	l->pos = i;
	pthread_mutex_unlock(&l->lock);
	return 0;
}

static int memlog_next(void *ctx, struct upl_rec *ret)
{
	struct memlog *l = ctx;
	int r = 0;

	pthread_mutex_lock(&l->lock);
	if (l->pos < l->n) {
		const struct memrec *m = &l->recs[l->pos++];

		*ret = (struct upl_rec){ m->first_seq, m->count, m->t_last_ns, m->buf, m->len, 0 };
		l->reads++;
		r = 1;
	}
	pthread_mutex_unlock(&l->lock);
	return r;
}

struct upl_source memlog_source(struct memlog *l)
{
	return (struct upl_source){ .seek = memlog_seek, .next = memlog_next, .ctx = l };
}

/* ---- generator ---- */

static uint64_t xr(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int gen_init_log(struct gen *g, const char *vehicle, const uint8_t *log_id, size_t max_items,
                 int64_t t0_ns)
{
	struct rec_batch_meta meta = { .vehicle = vehicle, .config_hash = 0x5eed };

	memset(g, 0, sizeof(*g));
	g->rng = 0x243f6a8885a308d3ull;
	g->t_ns = t0_ns;
	memset(meta.boot_id, 0xb0, sizeof(meta.boot_id));
	if (log_id)
		memcpy(meta.log_id, log_id, sizeof(meta.log_id));
	return rec_encoder_new(&meta, max_items, &g->enc);
}

int gen_init(struct gen *g, const char *vehicle, size_t max_items, int64_t t0_ns)
{
	static const uint8_t id[REC_LOG_ID_LEN] = { 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d,
	                                            0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x1d, 0x01 };

	return gen_init_log(g, vehicle, id, max_items, t0_ns);
}

void gen_fini(struct gen *g)
{
	g->enc = rec_encoder_free(g->enc);
}

void gen_item(struct gen *g, int64_t t, struct acq_item *it)
{
	uint64_t r = xr(&g->rng);

	memset(it, 0, sizeof(*it));
	it->t_ns = t;
	/* Roughly the mix: 2 CAN buses at a few hundred frames/s each
	   and 50 samples/s, with a rare event. */
	if (r % 1000 == 0) {
		it->kind = ACQ_ITEM_EVENT;
		it->bus = ACQ_SOURCE_DAEMON;
		it->event.code = ACQ_EV_CAN_ERROR_WARNING;
		it->event.arg = (int64_t)(r >> 40);
	} else if (r % 13 == 0) {
		it->kind = ACQ_ITEM_SAMPLE;
		it->sample.channel = (uint32_t)(r >> 20) % 24;
		it->sample.value = (double)((r >> 24) % 100000) / 100.0;
	} else {
		it->kind = ACQ_ITEM_CAN;
		it->bus = (uint16_t)(r >> 63);
		it->can.id = 0x100 + (uint32_t)((r >> 8) % 40);
		it->can.len = 8;
		for (int i = 0; i < 8; i++)
			it->can.data[i] = (uint8_t)(r >> (i * 5));
	}
}

int gen_batch(struct gen *g, struct memlog *l, size_t n, int64_t dt_ns)
{
	const uint8_t *buf;
	size_t len;
	int r;

	for (size_t i = 0; i < n; i++) {
		struct acq_item it;

		gen_item(g, g->t_ns, &it);
		g->t_ns += dt_ns;
		r = rec_encoder_add(g->enc, &it);
		if (r < 0)
			return r;
	}
	r = rec_encoder_finish(g->enc, l->next_seq, &buf, &len);
	if (r < 0)
		return r;
	return memlog_append(l, (uint32_t)r, g->t_ns - dt_ns, buf, len);
}

/* ---- recv's text output ---- */

int fx_text_record(void *ctx, const struct rec_batch_info *info, const rec_batch_t *b,
                   const struct acq_item *it, bool first, void **log_ctx)
{
	struct fx_text *t = ctx;
	struct rec_origin o = { info->vehicle, info->log_id, info->log_id_len };

	return rec_format_item(t->out, t->fmt, it, NULL, &o);
}

/* ---- forwarder events ---- */

void fx_events_init(struct fx_events *e)
{
	memset(e, 0, sizeof(*e));
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
}

void fx_on_event(void *ctx, enum upl_fwd_event ev, int err)
{
	struct fx_events *e = ctx;

	pthread_mutex_lock(&e->lock);
	e->n[ev]++;
	e->last_err = err;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

unsigned fx_events_get(struct fx_events *e, enum upl_fwd_event ev)
{
	unsigned v;

	pthread_mutex_lock(&e->lock);
	v = e->n[ev];
	pthread_mutex_unlock(&e->lock);
	return v;
}

int fx_events_wait(struct fx_events *e, enum upl_fwd_event ev, unsigned n, unsigned timeout_ms)
{
	struct timespec ts = basic_deadline_ms(CLOCK_REALTIME, timeout_ms);
	int err = 0;

	pthread_mutex_lock(&e->lock);
	while (e->n[ev] < n && err == 0)
		err = pthread_cond_timedwait(&e->cond, &e->lock, &ts);
	err = e->n[ev] >= n ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&e->lock);
	return err;
}

/* ---- recv on its own thread ---- */

static void *fx_recv_main(void *arg)
{
	struct fx_recv *rt = arg;

	CHECK(fx_gnd_run(rt->r) == 0);
	return NULL;
}

void fx_recv_start(struct fx_recv *rt, const struct fx_gnd_cfg *cfg)
{
	CHECK(fx_gnd_new(cfg, &rt->r) == 0);
	CHECK(pthread_create(&rt->t, NULL, fx_recv_main, rt) == 0);
	CHECK(fx_gnd_wait_subscribed(rt->r, 10000) == 0);
}

void fx_recv_stop(struct fx_recv *rt)
{
	fx_gnd_stop(rt->r);
	pthread_join(rt->t, NULL);
	rt->r = fx_gnd_free(rt->r);
}

/* ---- a plain libmosquitto ground ---- */

static void fx_seen_msg(struct mosquitto *m, void *arg, const struct mosquitto_message *msg)
{
	struct fx_seen *s = arg;
	rec_batch_t *b;
	struct rec_batch_info info;

	(void)m;
	pthread_mutex_lock(&s->lock);
	if (strstr(msg->topic, "/gone")) {
		snprintf(s->gone, sizeof(s->gone), "%.*s", msg->payloadlen, (const char *)msg->payload);
		s->gone_n++;
	} else if (s->n < FX_SEEN_MAX && rec_batch_decode(msg->payload, (size_t)msg->payloadlen, &b) == 0) {
		if (rec_batch_info(b, &info) == 0) {
			s->first[s->n] = info.first_seq;
			s->count[s->n] = info.count;
			s->historical[s->n] = info.historical;
			s->n++;
		} else {
			s->bad++;
		}
		rec_batch_free(b);
	} else {
		s->bad++;
	}
	pthread_mutex_unlock(&s->lock);
}

static void fx_seen_suback(struct mosquitto *m, void *arg, int mid, int n, const int *granted)
{
	struct fx_seen *s = arg;

	(void)m;
	(void)mid;
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < n; i++)
		s->subscribed += granted[i] <= 2; /* 0x80: refused */
	pthread_mutex_unlock(&s->lock);
}

static unsigned fx_seen_subscribed(struct fx_seen *s)
{
	unsigned v;

	pthread_mutex_lock(&s->lock);
	v = s->subscribed;
	pthread_mutex_unlock(&s->lock);
	return v;
}

struct mosquitto *fx_seen_connect(struct fx_seen *s, const char *id, int port, const char *vehicle)
{
	struct mosquitto *m;
	char topic[96];

	memset(s, 0, sizeof(*s));
	CHECK(pthread_mutex_init(&s->lock, NULL) == 0);
	m = mosquitto_new(id, true, s);
	CHECK(m);
	mosquitto_message_callback_set(m, fx_seen_msg);
	mosquitto_subscribe_callback_set(m, fx_seen_suback);
	CHECK(mosquitto_connect(m, "127.0.0.1", port, 10) == MOSQ_ERR_SUCCESS);
	snprintf(topic, sizeof(topic), "railmon/%s/data", vehicle);
	CHECK(mosquitto_subscribe(m, NULL, topic, 1) == MOSQ_ERR_SUCCESS);
	snprintf(topic, sizeof(topic), "railmon/%s/gone", vehicle);
	CHECK(mosquitto_subscribe(m, NULL, topic, 1) == MOSQ_ERR_SUCCESS);
	CHECK(mosquitto_loop_start(m) == MOSQ_ERR_SUCCESS);
	/* The broker's SUBACKs, not the order it happens to read two
	   connections in, say that a forwarder started next reaches s. */
	CHECK(WAIT_FOR(fx_seen_subscribed(s) == 2, 10000), "%s: %u of 2 subscriptions acknowledged", id,
	      fx_seen_subscribed(s));
	return m;
}

void fx_seen_close(struct mosquitto *m)
{
	mosquitto_loop_stop(m, true);
	mosquitto_destroy(m);
}

size_t fx_seen_n(struct fx_seen *s)
{
	size_t v;

	pthread_mutex_lock(&s->lock);
	v = s->n;
	pthread_mutex_unlock(&s->lock);
	return v;
}

struct upl_forward_stats fx_fwd_stats(upl_forwarder_t *f)
{
	struct upl_forward_stats st;

	CHECK(upl_forwarder_stats(f, &st) == 0);
	return st;
}

void fx_request_until_taken(struct mosquitto *m, upl_forwarder_t *f, const char *vehicle,
                            const struct upl_request *q)
{
	char msg[UPL_REQUEST_LINE_MAX], topic[128];
	uint64_t before = fx_fwd_stats(f).requests_taken;
	int n = upl_request_format(q, msg, sizeof(msg));

	CHECK(n > 0);
	snprintf(topic, sizeof(topic), "railmon/%s/request", vehicle);
	for (int tries = 0; fx_fwd_stats(f).requests_taken == before; tries++) {
		struct upl_forward_stats st = fx_fwd_stats(f);

		CHECK(tries < 100, "the forwarder never took request %s: %" PRIu64 " connects, last error '%s', requests "
		      "taken %" PRIu64 ", again %" PRIu64 ", refused %" PRIu64, q->id, st.connects, st.last_error_text,
		      st.requests_taken, st.requests_again, st.requests_refused);
		CHECK(mosquitto_publish(m, NULL, topic, n, msg, 1, false) == MOSQ_ERR_SUCCESS);
		WAIT_FOR(fx_fwd_stats(f).requests_taken > before, 200);
	}
}

/* ---- a TCP proxy that can reset every connection ---- */

static void proxy_pair_close(struct fx_proxy *p, int i, bool rst)
{
	struct linger lg = { 1, 0 };

	/* Linger 0 turns close() into a RST: the peer sees a reset, not EOF. */
	if (rst) {
		setsockopt(p->a[i], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		setsockopt(p->b[i], SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(p->a[i]);
	close(p->b[i]);
	p->a[i] = p->b[i] = -1;
}

static void proxy_accept(struct fx_proxy *p)
{
	struct sockaddr_in up = { .sin_family = AF_INET, .sin_port = htons((uint16_t)p->upstream),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int c = accept(p->lfd, NULL, NULL), u, i;

	if (c < 0)
		return;
	u = socket(AF_INET, SOCK_STREAM, 0);
	for (i = 0; i < FX_PROXY_MAX && p->a[i] >= 0; i++)
		;
	/* Broker down: refuse the client the same way. */
	if (u < 0 || i == FX_PROXY_MAX || connect(u, (struct sockaddr *)&up, sizeof(up)) < 0) {
		close(c);
		if (u >= 0)
			close(u);
		return;
	}
	p->a[i] = c;
	p->b[i] = u;
}

static bool proxy_pump(int from, int to, bool discard)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));

	/* blackhole: read and dropped, as a network that lost them */
	if (discard)
		return n > 0;

	for (ssize_t off = 0; n > 0 && off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w <= 0)
			return false;
		off += w;
	}
	return n > 0;
}

static void *proxy_main(void *arg)
{
	struct fx_proxy *p = arg;

	while (!p->stop) {
		struct pollfd fds[2 + 2 * FX_PROXY_MAX];
		int n = 2;

		fds[0] = (struct pollfd){ .fd = p->lfd, .events = POLLIN };
		fds[1] = (struct pollfd){ .fd = p->efd, .events = POLLIN };
		for (int i = 0; i < FX_PROXY_MAX; i++) {
			fds[n++] = (struct pollfd){ .fd = p->a[i], .events = POLLIN };
			fds[n++] = (struct pollfd){ .fd = p->b[i], .events = POLLIN };
		}
		if (poll(fds, (nfds_t)n, 200) <= 0)
			continue;
		if (fds[1].revents) {
			uint64_t v;

			if (read(p->efd, &v, sizeof(v)) == sizeof(v))
				for (int i = 0; i < FX_PROXY_MAX; i++)
					if (p->a[i] >= 0) {
						proxy_pair_close(p, i, true);
						__atomic_add_fetch(&p->resets, 1, __ATOMIC_RELAXED);
					}
			continue;
		}
		if (fds[0].revents)
			proxy_accept(p);
		for (int i = 0; i < FX_PROXY_MAX; i++) {
			short ra = fds[2 + 2 * i].revents, rb = fds[3 + 2 * i].revents;

			if (p->a[i] < 0 || fds[2 + 2 * i].fd != p->a[i])
				continue;
			if ((ra && !proxy_pump(p->a[i], p->b[i], __atomic_load_n(&p->blackhole, __ATOMIC_RELAXED))) ||
			    (rb && !proxy_pump(p->b[i], p->a[i], false)))
				proxy_pair_close(p, i, false);
		}
	}
	return NULL;
}

void fx_proxy_start(struct fx_proxy *p, int upstream)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);

	memset(p, 0, sizeof(*p));
	for (int i = 0; i < FX_PROXY_MAX; i++)
		p->a[i] = p->b[i] = -1;
	p->upstream = upstream;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(p->lfd >= 0);
	CHECK(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(listen(p->lfd, 16) == 0);
	CHECK(getsockname(p->lfd, (struct sockaddr *)&a, &al) == 0);
	p->port = ntohs(a.sin_port);
	p->efd = eventfd(0, 0);
	CHECK(p->efd >= 0);
	CHECK(pthread_create(&p->t, NULL, proxy_main, p) == 0);
}

void fx_proxy_reset(struct fx_proxy *p)
{
	uint64_t one = 1;

	CHECK(write(p->efd, &one, sizeof(one)) == sizeof(one));
}

void fx_proxy_stop(struct fx_proxy *p)
{
	p->stop = true;
	pthread_join(p->t, NULL);
	for (int i = 0; i < FX_PROXY_MAX; i++)
		if (p->a[i] >= 0)
			proxy_pair_close(p, i, false);
	close(p->lfd);
	close(p->efd);
}

void fx_proxy_blackhole(struct fx_proxy *p, bool on)
{
	__atomic_store_n(&p->blackhole, on, __ATOMIC_RELAXED);
}
