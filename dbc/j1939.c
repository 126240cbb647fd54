/* SPDX-License-Identifier: MIT */
/*
 * j1939.c - J1939-21 transport protocol reassembly (j1939.h).
 *
 * A fixed table of sessions, each with its 1785-byte buffer, allocated
 * once; looked up by a linear scan of DBC_J1939_SESSIONS entries (32 pairs
 * talking at once is already far more than a locomotive's engine bus has).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "j1939.h"
#include "basic/byteorder.h"

enum {
	CM_RTS = 16,
	CM_CTS = 17,
	CM_EOMA = 19,
	CM_BAM = 32,
	CM_ABORT = 255,
};

struct session {
	bool open, bam;
	uint8_t sa, da, priority;
	uint8_t total;        /* packets announced */
	uint8_t next;         /* sequence number expected next */
	uint16_t size;
	uint32_t pgn;
	int64_t deadline_ns;
	uint8_t data[DBC_J1939_TP_MAX];
};

struct dtc_slot {
	bool used, seen;
	uint8_t sa, fmi, oc;
	uint32_t spn;
};

struct bus_j1939 {
	struct session s[DBC_J1939_SESSIONS];
	struct dtc_slot dtc[DBC_J1939_DTC_MAX];
	struct dbc_j1939_stats stats;
};

struct dbc_j1939_id dbc_j1939_id_parse(uint32_t id)
{
	struct dbc_j1939_id r = {
		.priority = (uint8_t)((id >> 26) & 7), .sa = (uint8_t)id, .da = 0xff,
	};
	uint32_t pf = (id >> 16) & 0xff, ps = (id >> 8) & 0xff, dp = (id >> 24) & 3;

	if (pf < 240) {
		r.pgn = dp << 16 | pf << 8;
		r.da = (uint8_t)ps;
	} else {
		r.pgn = dp << 16 | pf << 8 | ps;
	}
	return r;
}

int dbc_j1939_new(dbc_j1939_t **ret_j)
{
	dbc_j1939_t *j;

	if (!ret_j)
		return -EINVAL;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	*ret_j = j;
	return 0;
}

dbc_j1939_t *dbc_j1939_free(dbc_j1939_t *j)
{
	free(j);
	return NULL;
}

void dbc_j1939_stats(const dbc_j1939_t *j, struct dbc_j1939_stats *ret_stats)
{
	if (j && ret_stats)
		*ret_stats = j->stats;
}

static struct session *find(dbc_j1939_t *j, uint8_t sa, uint8_t da)
{
	for (unsigned i = 0; i < DBC_J1939_SESSIONS; i++)
		if (j->s[i].open && j->s[i].sa == sa && j->s[i].da == da)
			return &j->s[i];
	return NULL;
}

/* End s with a fault of kind; returns 2 (feed's "fault"). */
static int fault(dbc_j1939_t *j, struct session *s, enum dbc_j1939_fault_kind kind, uint8_t reason,
                 struct dbc_j1939_fault *f)
{
	*f = (struct dbc_j1939_fault){ .kind = (uint8_t)kind, .sa = s->sa, .da = s->da, .reason = reason,
	                               .expected = s->next, .pgn = s->pgn, .got = (uint16_t)(s->next - 1),
	                               .total = s->total };
	s->open = false;
	j->stats.faults[kind]++;
	return 2;
}

/* A fault with no session behind it (refused announcement, odd frame). */
static int fault_at(dbc_j1939_t *j, enum dbc_j1939_fault_kind kind, uint8_t sa, uint8_t da, uint8_t reason,
                    uint32_t pgn, struct dbc_j1939_fault *f)
{
	*f = (struct dbc_j1939_fault){ .kind = (uint8_t)kind, .sa = sa, .da = da, .reason = reason, .pgn = pgn };
	j->stats.faults[kind]++;
	return 2;
}

static uint32_t cm_pgn(const uint8_t *d)
{
	return (uint32_t)d[5] | (uint32_t)d[6] << 8 | (uint32_t)d[7] << 16;
}

/* RTS or BAM: a new session of the pair (a running one is replaced). */
static int announce(dbc_j1939_t *j, const struct dbc_j1939_id *id, const uint8_t *d, int64_t t_ns,
                    struct dbc_j1939_fault *f)
{
	bool bam = d[0] == CM_BAM;
	unsigned size = basic_get_le16(d + 1), total = d[3];
	struct session *s = find(j, id->sa, id->da);
	int r = 0;

	/* J1939-21: 9..1785 bytes in ceil(size/7) packets; BAM goes to all */
	if (size < 9 || size > DBC_J1939_TP_MAX || total != (size + 6) / 7 || bam != (id->da == 0xff))
		return fault_at(j, DBC_J1939_MALFORMED, id->sa, id->da, d[0], cm_pgn(d), f);
	if (s) {
		r = fault(j, s, DBC_J1939_REPLACED, d[0], f);
	} else {
		for (unsigned i = 0; i < DBC_J1939_SESSIONS && !s; i++)
			if (!j->s[i].open)
				s = &j->s[i];
		if (!s)
			return fault_at(j, DBC_J1939_NO_ROOM, id->sa, id->da, d[0], cm_pgn(d), f);
	}
	s->open = true;
	s->bam = bam;
	s->sa = id->sa;
	s->da = id->da;
	s->priority = id->priority;
	s->total = (uint8_t)total;
	s->next = 1;
	s->size = (uint16_t)size;
	s->pgn = cm_pgn(d);
	/* BAM: the first packet within T1; RTS: the CTS, then the packet, within T2/T3 */
	s->deadline_ns = t_ns + (bam ? DBC_J1939_T1_NS : DBC_J1939_T2_NS);
	return r;
}

/* CTS, EndOfMsgAck, Abort: sent by either side, about the pair's session. */
static int control(dbc_j1939_t *j, const struct dbc_j1939_id *id, const uint8_t *d, int64_t t_ns,
                   struct dbc_j1939_fault *f)
{
	/* the receiver answers: its SA is the session's DA */
	struct session *s = find(j, id->da, id->sa);

	if (d[0] == CM_ABORT) {
		if (!s)
			s = find(j, id->sa, id->da); /* the originator gives up */
		if (s && (cm_pgn(d) == s->pgn))
			return fault(j, s, DBC_J1939_ABORT, d[1], f);
		j->stats.ctl++;
		return 0;
	}
	j->stats.ctl++;
	if (d[0] != CM_CTS || !s || s->bam || cm_pgn(d) != s->pgn)
		return 0;
	if (d[1] == 0) { /* hold the connection open */
		s->deadline_ns = t_ns + DBC_J1939_T2_NS;
		return 0;
	}
	if (d[2] < 1 || d[2] > s->total || d[2] > s->next)
		return fault(j, s, DBC_J1939_MALFORMED, d[0], f);
	/* may ask for packets again: they come in order from there */
	s->next = d[2];
	s->deadline_ns = t_ns + DBC_J1939_T2_NS;
	return 0;
}

static int tp_cm(dbc_j1939_t *j, const struct acq_item *it, const struct dbc_j1939_id *id,
                 struct dbc_j1939_fault *f)
{
	const uint8_t *d = it->can.data;

	if (it->can.len != 8)
		return fault_at(j, DBC_J1939_MALFORMED, id->sa, id->da, it->can.len ? d[0] : 0, 0, f);
	switch (d[0]) {
	case CM_RTS:
	case CM_BAM:
		return announce(j, id, d, it->t_ns, f);
	case CM_CTS:
	case CM_EOMA:
	case CM_ABORT:
		return control(j, id, d, it->t_ns, f);
	default:
		return fault_at(j, DBC_J1939_MALFORMED, id->sa, id->da, d[0], cm_pgn(d), f);
	}
}

static int tp_dt(dbc_j1939_t *j, const struct acq_item *it, const struct dbc_j1939_id *id,
                 struct dbc_j1939_msg *m, struct dbc_j1939_fault *f)
{
	struct session *s = find(j, id->sa, id->da);
	unsigned off, n;
	uint8_t seq;

	if (!s) {
		j->stats.stray_dt++;
		return 0;
	}
	if (it->can.len < 1)
		return fault(j, s, DBC_J1939_MALFORMED, 0, f);
	seq = it->can.data[0];
	if (seq != s->next)
		return fault(j, s, DBC_J1939_SEQUENCE, seq, f);
	off = (unsigned)(seq - 1) * 7;
	n = s->size - off < 7 ? s->size - off : 7;
	/* J1939 frames are 8 bytes; a shorter one would leave a hole */
	if (it->can.len < 1 + n)
		return fault(j, s, DBC_J1939_MALFORMED, seq, f);
	memcpy(s->data + off, it->can.data + 1, n);
	s->deadline_ns = it->t_ns + DBC_J1939_T1_NS;
	if (seq < s->total) {
		s->next++;
		return 0;
	}
	s->open = false;
	j->stats.messages++;
	*m = (struct dbc_j1939_msg){
		.id = { .pgn = s->pgn, .priority = s->priority, .sa = s->sa, .da = s->da },
		.len = s->size, .data = s->data, .bam = s->bam, .t_ns = it->t_ns,
	};
	return 1;
}

int dbc_j1939_feed(dbc_j1939_t *j, const struct acq_item *it, struct dbc_j1939_msg *ret_msg,
                   struct dbc_j1939_fault *ret_fault)
{
	struct dbc_j1939_id id;

	if (!j || !it || !ret_msg || !ret_fault)
		return -EINVAL;
	if (it->kind != ACQ_ITEM_CAN || (it->can.flags & (ACQ_CAN_RTR | ACQ_CAN_ERR)) ||
	    !(it->can.flags & ACQ_CAN_EXT) || it->can.len > ACQ_CAN_DATA_MAX)
		return 0;
	id = dbc_j1939_id_parse(it->can.id);
	if (id.pgn == DBC_J1939_PGN_TP_CM)
		return tp_cm(j, it, &id, ret_fault);
	if (id.pgn == DBC_J1939_PGN_TP_DT)
		return tp_dt(j, it, &id, ret_msg, ret_fault);
	return 0;
}

int dbc_j1939_expire(dbc_j1939_t *j, int64_t now_ns, struct dbc_j1939_fault *ret_fault)
{
	if (!j || !ret_fault)
		return -EINVAL;
	for (unsigned i = 0; i < DBC_J1939_SESSIONS; i++)
		if (j->s[i].open && now_ns > j->s[i].deadline_ns) {
			fault(j, &j->s[i], DBC_J1939_TIMEOUT, 0, ret_fault);
			return 1;
		}
	return 0;
}

/* ------------------------------------------------------------ DM1 */

static struct dtc_slot *dtc_find(dbc_j1939_t *j, uint8_t sa, uint32_t spn, uint8_t fmi)
{
	for (unsigned i = 0; i < DBC_J1939_DTC_MAX; i++)
		if (j->dtc[i].used && j->dtc[i].sa == sa && j->dtc[i].spn == spn && j->dtc[i].fmi == fmi)
			return &j->dtc[i];
	return NULL;
}

static struct dtc_slot *dtc_free_slot(dbc_j1939_t *j)
{
	for (unsigned i = 0; i < DBC_J1939_DTC_MAX; i++)
		if (!j->dtc[i].used)
			return &j->dtc[i];
	return NULL;
}

/* Report a change into out[*n], or count it when out is full. */
static void dtc_report(dbc_j1939_t *j, const struct dtc_slot *d, bool active, uint16_t lamps,
                       struct dbc_j1939_dtc *out, size_t max, size_t *n)
{
	if (*n == max) {
		j->stats.dtc_lost++;
		return;
	}
	out[(*n)++] = (struct dbc_j1939_dtc){ .spn = d->spn, .fmi = d->fmi, .oc = d->oc, .sa = d->sa,
	                                      .active = active, .lamps = lamps };
}

int dbc_j1939_dm1(dbc_j1939_t *j, uint8_t sa, const uint8_t *data, size_t len, struct dbc_j1939_dtc *out,
                  size_t max)
{
	uint16_t lamps;
	size_t n = 0;

	if (!j || (!data && len) || (!out && max))
		return -EINVAL;
	lamps = len >= 2 ? basic_get_le16(data) : 0;
	for (unsigned i = 0; i < DBC_J1939_DTC_MAX; i++)
		if (j->dtc[i].sa == sa)
			j->dtc[i].seen = false;
	/* SPN conversion method 4 (J1939-73): SPN bits 0-15 in bytes 0-1,
	   16-18 in the top of byte 2 under FMI; CM and OC in byte 3 */
	for (size_t o = 2; o + 4 <= len; o += 4) {
		const uint8_t *d = data + o;
		uint32_t spn = d[0] | (uint32_t)d[1] << 8 | (uint32_t)(d[2] >> 5) << 16;
		uint8_t fmi = d[2] & 0x1f, oc = d[3] & 0x7f;
		struct dtc_slot *s;

		if (spn == 0 || spn == 0x7ffff)
			continue; /* "no DTC", and padding */
		s = dtc_find(j, sa, spn, fmi);
		if (!s && !(s = dtc_free_slot(j))) {
			j->stats.dtc_lost++;
			continue;
		}
		if (!s->used) {
			*s = (struct dtc_slot){ .used = true, .sa = sa, .spn = spn, .fmi = fmi, .oc = oc };
			dtc_report(j, s, true, lamps, out, max, &n);
		}
		s->oc = oc;
		s->seen = true;
	}
	for (unsigned i = 0; i < DBC_J1939_DTC_MAX; i++) {
		struct dtc_slot *s = &j->dtc[i];

		if (s->used && s->sa == sa && !s->seen) {
			dtc_report(j, s, false, lamps, out, max, &n);
			s->used = false;
		}
	}
	return (int)n;
}
