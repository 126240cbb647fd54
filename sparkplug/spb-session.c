/* SPDX-License-Identifier: MIT */
/*
 * spb-session.c - a Sparkplug B edge node's topics, bdSeq, seq, NBIRTH
 * and NDEATH, and its command parser (spb-session.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/replace.h"
#include "sparkplug/spb-session.h"
#include "sparkplug_b.pb-c.h"

typedef Org__Eclipse__Tahu__Protobuf__Payload Payload;
typedef Org__Eclipse__Tahu__Protobuf__Payload__Metric Metric;

#define BDSEQ_MAGIC "railmon-spb-bdseq 1 "

static const char *const msg_names[SPB_MSG_MAX] = {
	[SPB_NBIRTH] = "NBIRTH", [SPB_NDEATH] = "NDEATH", [SPB_NDATA] = "NDATA", [SPB_NCMD] = "NCMD",
	[SPB_DBIRTH] = "DBIRTH", [SPB_DDEATH] = "DDEATH", [SPB_DDATA] = "DDATA", [SPB_DCMD] = "DCMD",
};

const char *spb_msg_name(enum spb_msg type)
{
	return (unsigned)type < SPB_MSG_MAX ? msg_names[type] : NULL;
}

/* A topic level: not empty, none of MQTT's separator and wildcards. */
static bool id_ok(const char *s)
{
	return s && *s && !strpbrk(s, "/+#");
}

int spb_topic(char *buf, size_t len, const char *group, enum spb_msg type, const char *node, const char *device)
{
	const char *name = spb_msg_name(type);
	bool dev = type >= SPB_DBIRTH;
	int n;

	if (!buf || !name || !id_ok(group) || !id_ok(node) || dev != (device != NULL) || (dev && !id_ok(device)))
		return -EINVAL;
	n = snprintf(NULL, 0, SPB_NAMESPACE "/%s/%s/%s%s%s", group, name, node, dev ? "/" : "", dev ? device : "");
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return snprintf(buf, len, SPB_NAMESPACE "/%s/%s/%s%s%s", group, name, node, dev ? "/" : "", dev ? device : "");
}

/* The stored bdSeq: 0 and *ret, -ENOENT (none yet), or why the file is
   not one (spb_bdseq_next()'s damage codes). */
static int bdseq_load(const char *path, unsigned *ret)
{
	char buf[64], *end;
	unsigned long v;
	ssize_t n = basic_file_read_state(path, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	if (strncmp(buf, BDSEQ_MAGIC, strlen(BDSEQ_MAGIC)) != 0)
		return -EBADMSG;
	/* only digits (strtoul takes blanks and signs), then the newline that
	   proves the write was whole */
	const char *num = buf + strlen(BDSEQ_MAGIC);
	if (*num < '0' || *num > '9')
		return -EBADMSG;
	v = strtoul(num, &end, 10);
	if (*end != '\n' || end[1])
		return -EBADMSG;
	if (v > 255 || end - num > 3)
		return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

int spb_bdseq_next(const char *dir, uint8_t *ret_bdseq, int *ret_damage)
{
	char path[PATH_MAX], line[64];
	unsigned last = 0;
	int r, damage = 0, len;
	uint8_t next;

	if (!dir || !*dir || !ret_bdseq || !ret_damage)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s/%s", dir, SPB_BDSEQ_FILE) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	r = bdseq_load(path, &last);
	if (r == 0)
		next = (uint8_t)((last + 1) & 0xff);
	else {
		/* first start (no file) is 0 too, but not damage */
		damage = r == -ENOENT ? 0 : r;
		next = 0;
	}
	len = snprintf(line, sizeof(line), BDSEQ_MAGIC "%u\n", (unsigned)next);
	r = basic_file_replace(path, line, (size_t)len);
	if (r < 0)
		return r;
	*ret_bdseq = next;
	*ret_damage = damage;
	return 0;
}

void spb_session_start(struct spb_session *s, uint8_t bdseq)
{
	*s = (struct spb_session){ .bdseq = bdseq };
}

static int add_bdseq(const struct spb_session *s, spb_payload_t *pl, uint64_t t_ms)
{
	/* UInt64 as the specification declares bdSeq, though 0..255 */
	const struct spb_birth_metric m = { SPB_METRIC_BDSEQ, SPB_ALIAS_BDSEQ, t_ms, NULL,
	                                    { SPB_DT_UINT64, false, s->bdseq, NULL }, NULL };

	return spb_payload_add_birth(pl, &m);
}

int spb_session_ndeath(const struct spb_session *s, spb_payload_t *pl, uint64_t t_ms)
{
	if (!s || !pl)
		return -EINVAL;
	spb_payload_reset(pl, t_ms, 0);
	spb_payload_drop_seq(pl);
	return add_bdseq(s, pl, t_ms);
}

int spb_session_nbirth(struct spb_session *s, spb_payload_t *pl, uint64_t t_ms)
{
	const struct spb_birth_metric rebirth = { SPB_METRIC_REBIRTH, SPB_ALIAS_REBIRTH, t_ms, NULL,
	                                          { SPB_DT_BOOLEAN, false, 0, NULL }, NULL };
	/* no event yet in this session: the NDATAs give them */
	const struct spb_birth_metric events = { SPB_METRIC_EVENTS, SPB_ALIAS_EVENTS, t_ms, NULL,
	                                         { SPB_DT_STRING, true, 0, NULL }, NULL };
	int r;

	if (!s || !pl)
		return -EINVAL;
	spb_payload_reset(pl, t_ms, 0);
	if ((r = add_bdseq(s, pl, t_ms)) < 0 || (r = spb_payload_add_birth(pl, &rebirth)) < 0 ||
	    (r = spb_payload_add_birth(pl, &events)) < 0)
		return r;
	s->seq = 1;
	s->born = true;
	return 0;
}

int spb_session_begin(struct spb_session *s, spb_payload_t *pl, uint64_t t_ms)
{
	if (!s || !pl)
		return -EINVAL;
	if (!s->born)
		return -EPROTO;
	spb_payload_reset(pl, t_ms, s->seq);
	return 0;
}

void spb_session_commit(struct spb_session *s)
{
	if (s)
		s->seq++; /* uint8_t: 255 wraps to 0, as the specification says */
}

int spb_session_next(struct spb_session *s, spb_payload_t *pl, uint64_t t_ms)
{
	int r = spb_session_begin(s, pl, t_ms);

	if (r == 0)
		spb_session_commit(s);
	return r;
}

/* Node Control/Rebirth = true, named or by its alias; a datatype, when
   given, must be Boolean. */
static bool is_rebirth(const Metric *m)
{
	bool named = m->name ? !strcmp(m->name, SPB_METRIC_REBIRTH) : m->has_alias && m->alias == SPB_ALIAS_REBIRTH;

	return named && (!m->has_datatype || m->datatype == SPB_DT_BOOLEAN) && !(m->has_is_null && m->is_null) &&
	       m->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_BOOLEAN_VALUE && m->boolean_value;
}

int spb_cmd_parse(const uint8_t *buf, size_t len, bool device, struct spb_cmd *ret)
{
	struct spb_cmd c = { 0 };
	Payload *p;

	if ((!buf && len) || !ret)
		return -EINVAL;
	if (len > SPB_CMD_MAX_BYTES)
		return -EMSGSIZE;
	p = org__eclipse__tahu__protobuf__payload__unpack(NULL, len, buf);
	if (!p)
		return -EBADMSG;
	c.metrics = p->n_metrics > UINT32_MAX ? UINT32_MAX : (uint32_t)p->n_metrics;
	for (size_t i = 0; i < p->n_metrics; i++) {
		if (!device && is_rebirth(p->metrics[i]))
			c.rebirth = true;
		else
			c.refused++;
	}
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	*ret = c;
	return 0;
}
