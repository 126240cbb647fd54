/* SPDX-License-Identifier: MIT */
/*
 * types.c - the element types' names and sizes (types.h), the one table
 * xml.c and dataset.c share.
 */
#include "types.h"

const char *trdp_type_name(uint32_t type)
{
	static const char *const names[TRDP_TYPE_MAX] = {
		NULL, "BOOL8", "CHAR8", "UTF16", "INT8", "INT16", "INT32", "INT64", "UINT8",
		"UINT16", "UINT32", "UINT64", "REAL32", "REAL64", "TIMEDATE32", "TIMEDATE48", "TIMEDATE64",
	};
	return type < TRDP_TYPE_MAX ? names[type] : NULL;
}

size_t trdp_type_size(uint32_t type)
{
	static const uint8_t sizes[TRDP_TYPE_MAX] = { 0, 1, 1, 2, 1, 2, 4, 8, 1, 2, 4, 8, 4, 8, 4, 6, 8 };
	return type < TRDP_TYPE_MAX ? sizes[type] : 0;
}
