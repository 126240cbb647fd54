/* SPDX-License-Identifier: MIT */
/*
 * trace.c - what a trace holds, said before `railmon replay` reads it
 * (trace.h).  An incident investigator must know what a replay left out;
 * the daemon's summary has only counts.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "bus/bus.h"
#include "bus/candump.h"
#include "bus/trace.h"
#include "report/say.h"
#include "report/trace.h"

int rpt_trace_survey(FILE *out, const char *trace, enum bus_trace_format fmt)
{
	struct bus_cfg in = { .kind = BUS_KIND_CAN };
	struct acq_item items[256];
	uint64_t frames = 0, bad = 0;
	bus_dev_t *dev = NULL;
	char first[PATH_MAX + 128];
	int n;

	in.can.driver = BUS_CAN_TRACE;
	snprintf(in.can.device, sizeof(in.can.device), "%s", trace);
	if ((n = bus_dev_new(&in, &dev)) < 0)
		return n;
	while ((n = bus_dev_recv(dev, items, 256, 0)) > 0)
		for (int i = 0; i < n; i++) {
			frames += items[i].kind == ACQ_ITEM_CAN;
			bad += items[i].kind == ACQ_ITEM_EVENT && items[i].event.code == ACQ_EV_CAN_BAD_LINE;
		}
	fprintf(out, "railmon replay: %s: %s, %" PRIu64 " frames", trace, bus_trace_format_name(fmt), frames);
	if (bad && bus_can_trace_first_bad(dev, first, sizeof(first)) == 0)
		fprintf(out, "; %" PRIu64 " damaged part%s skipped, the first: %s", bad, bad == 1 ? "" : "s", first);
	if (bus_can_trace_skipped(dev, first, sizeof(first)) == 0)
		fprintf(out, "; objects that are no CAN frame skipped: %s", first);
	fputc('\n', out);
	bus_dev_free(dev);
	return n == -ENODATA ? 0 : n;
}

int rpt_trace_check(FILE *err, const char *trace, bool survey)
{
	enum bus_trace_format fmt;
	int r;

	r = bus_trace_detect_file(trace, &fmt);
	if (r == -EMEDIUMTYPE)
		return rpt_fail(err, "replay", "%s: not a trace in any format railmon reads (tried %s)", trace,
		                BUS_TRACE_FORMATS);
	if (r < 0 || (survey && (r = rpt_trace_survey(err, trace, fmt)) < 0))
		return rpt_fail(err, "replay", "%s: %s", trace, strerror(-r));
	return -1;
}
