/* SPDX-License-Identifier: MIT */
/*
 * types.h - TRDP's element types: their numbers (those of the reference
 * stack's trdp_types.h, TRDP_DATA_TYPE_T), names and sizes on the wire.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The element types, with the reference stack's numbers (trdp_types.h,
   TRDP_DATA_TYPE_T).  BITSET8 and ANTIVALENT8 are other names of 1, UTF8
   another name of 2. */
enum trdp_type {
	TRDP_TYPE_INVALID = 0,
	TRDP_TYPE_BOOL8 = 1,
	TRDP_TYPE_CHAR8 = 2,
	TRDP_TYPE_UTF16 = 3,
	TRDP_TYPE_INT8 = 4,
	TRDP_TYPE_INT16 = 5,
	TRDP_TYPE_INT32 = 6,
	TRDP_TYPE_INT64 = 7,
	TRDP_TYPE_UINT8 = 8,
	TRDP_TYPE_UINT16 = 9,
	TRDP_TYPE_UINT32 = 10,
	TRDP_TYPE_UINT64 = 11,
	TRDP_TYPE_REAL32 = 12,
	TRDP_TYPE_REAL64 = 13,
	TRDP_TYPE_TIMEDATE32 = 14,
	TRDP_TYPE_TIMEDATE48 = 15,
	TRDP_TYPE_TIMEDATE64 = 16,
	TRDP_TYPE_MAX
};

/* A type's name ("UINT16") and its size on the wire in bytes; NULL and 0
   for no base type. */
const char *trdp_type_name(uint32_t type);
size_t trdp_type_size(uint32_t type);
