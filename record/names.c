/* SPDX-License-Identifier: MIT */
/* names.c - kinds, qualities and event codes in words (names.h). */
#include <errno.h>
#include <string.h>

#include "names.h"
#include "railmon.pb-c.h"

static const char *const kind_names[ACQ_ITEM_KIND_MAX] = {
	[ACQ_ITEM_CAN] = "can",
	[ACQ_ITEM_SAMPLE] = "sample",
	[ACQ_ITEM_EVENT] = "event",
	[ACQ_ITEM_TEXT] = "text",
	[ACQ_ITEM_TRDP] = "trdp",
};

/* railmon.proto's Quality, lower case without the QUALITY_ prefix. */
static const char *const quality_names[ACQ_Q_MAX] = {
	[ACQ_Q_GOOD] = "good",
	[ACQ_Q_OUT_OF_RANGE] = "out_of_range",
	[ACQ_Q_INVALID] = "invalid",
};

const char *rec_kind_name(uint32_t kind)
{
	return kind < ACQ_ITEM_KIND_MAX ? kind_names[kind] : NULL;
}

int rec_kind_parse(const char *name, enum acq_item_kind *ret_kind)
{
	if (!name || !ret_kind)
		return -EINVAL;
	for (unsigned i = 0; i < ACQ_ITEM_KIND_MAX; i++)
		if (!strcmp(name, kind_names[i]) || (i == ACQ_ITEM_SAMPLE && !strcmp(name, "samples"))) {
			*ret_kind = (enum acq_item_kind)i;
			return 0;
		}
	return -EINVAL;
}

const char *rec_quality_name(uint32_t quality)
{
	return quality < ACQ_Q_MAX ? quality_names[quality] : NULL;
}

const char *rec_event_name(uint32_t code)
{
	const ProtobufCEnumValue *v;

	if (code > INT32_MAX)
		return NULL;
	v = protobuf_c_enum_descriptor_get_value(&railmon__v1__event_code__descriptor, (int)code);
	return v ? v->name + strlen("EVENT_") : NULL;
}
