/* SPDX-License-Identifier: MIT */
/*
 * candump-write.c - one CAN record as one candump log line, as can-utils'
 * lib.c writes it (see candump.c, the parser, for the grammar): what
 * `export --format candump` and `recv --format candump` print, and what
 * `replay` and candump tools read back.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "candump.h"
#include "spec.h"


static int format_id(const struct acq_can *can, char *buf, size_t len)
{
	if (can->flags & ACQ_CAN_ERR)
		return snprintf(buf, len, "%08X#", (can->id & TRACE_CD_EFF_MASK) | TRACE_CD_ERR_FLAG);
	if (can->flags & ACQ_CAN_EXT)
		return snprintf(buf, len, "%08X#", can->id & TRACE_CD_EFF_MASK);
	return snprintf(buf, len, "%03X#", can->id & TRACE_CD_SFF_MASK);
}

static bool item_formattable(const struct acq_item *item, const char *ifname)
{
	const struct acq_can *can = &item->can;

	if (item->kind != ACQ_ITEM_CAN || item->t_ns < 0 || !ifname || !*ifname || strchr(ifname, ' '))
		return false;
	if (can->flags & ACQ_CAN_FD)
		return !(can->flags & (ACQ_CAN_RTR | ACQ_CAN_ERR)) && trace_fd_len_ok(can->len);
	if (can->len > 8 || (can->flags & (ACQ_CAN_BRS | ACQ_CAN_ESI)))
		return false;
	if ((can->flags & ACQ_CAN_RTR) && (can->flags & ACQ_CAN_ERR))
		return false;
	return (can->flags & (ACQ_CAN_EXT | ACQ_CAN_ERR)) ? can->id <= TRACE_CD_EFF_MASK : can->id <= TRACE_CD_SFF_MASK;
}

int trace_candump_format(const struct acq_item *item, const char *ifname, char *buf, size_t len)
{
	const struct acq_can *can;
	size_t n;
	int r;

	if (!item || !buf || !item_formattable(item, ifname))
		return -EINVAL;
	can = &item->can;
	r = snprintf(buf, len, "(%lld.%06lld) %s ", (long long)(item->t_ns / 1000000000),
	             (long long)(item->t_ns % 1000000000 / 1000), ifname);
	if (r < 0 || (size_t)r >= len)
		return -ENOBUFS;
	n = (size_t)r;
	r = format_id(can, buf + n, len - n);
	if (r < 0 || (size_t)r >= len - n)
		return -ENOBUFS;
	n += (size_t)r;
	if (can->flags & ACQ_CAN_RTR)
		r = snprintf(buf + n, len - n, can->len ? "R%u" : "R", can->len);
	else if (can->flags & ACQ_CAN_FD)
		r = snprintf(buf + n, len - n, "#%X", TRACE_CD_FD_FDF | ((can->flags & ACQ_CAN_BRS) ? TRACE_CD_FD_BRS : 0) |
		             ((can->flags & ACQ_CAN_ESI) ? TRACE_CD_FD_ESI : 0));
	else
		r = 0;
	if (r < 0 || (size_t)r >= len - n)
		return -ENOBUFS;
	n += (size_t)r;
	for (unsigned i = 0; !(can->flags & ACQ_CAN_RTR) && i < can->len; i++) {
		if (len - n < 3)
			return -ENOBUFS;
		snprintf(buf + n, 3, "%02X", can->data[i]);
		n += 2;
	}
	r = snprintf(buf + n, len - n, "%s\n", (can->flags & ACQ_CAN_TX) ? " T" : "");
	if (r < 0 || (size_t)r >= len - n)
		return -ENOBUFS;
	return (int)(n + (size_t)r);
}
