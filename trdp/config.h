/* SPDX-License-Identifier: MIT */
/*
 * config.h - a device's TRDP configuration as trdp_config_load() (xml.h)
 * reads it: plain data, read-only for the caller, no code of its own (so
 * xml.c, which fills it, and dataset.c, which compiles its data sets, both
 * include it without depending on each other's code).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "types.h"

/* A type number above this is a data set's id (a nested data set): the
   reference's TRDP_TYPE_MAX.  17..30 are reserved, and refused. */
#define TRDP_TYPE_RESERVED_MAX 30u

/* Nested data sets deeper than this are refused (a telegram of the
   reference stack goes at most 5 deep, TAU_MAX_DS_LEVEL). */
#define TRDP_NEST_MAX 16u

struct trdp_element {
	char *name;            /* the XML's name, or "element<N>" (1-based) without one (unique in
	                          its data set: see renamed) */
	uint32_t type;         /* enum trdp_type; TRDP_TYPE_INVALID for a nested data set */
	uint32_t nested;       /* a nested data set: its index in trdp_config.datasets */
	uint32_t array_size;   /* 1 a single value, N a fixed array, 0 a variable one */
	char *unit;            /* "" without one */
	double scale, offset;  /* value = raw * scale + offset (1 and 0 without) */
	uint32_t line, column; /* of its start tag, 1-based */
};

struct trdp_dataset {
	uint32_t id;
	char *name;            /* "" without one */
	struct trdp_element *elements;
	size_t n_elements;
	uint32_t line, column;
};

struct trdp_plan;

struct trdp_telegram {
	uint32_t comid;
	char *name;            /* the XML's name, or "comid<N>" without one (unique: see renamed) */
	char *interface;       /* the bus-interface's name, "" without one */
	uint32_t dataset_id;   /* 0: none (a telegram without payload) */
	int32_t dataset;       /* its index in trdp_config.datasets, -1 without */
	bool pd;               /* has a <pd-parameter> */
	uint32_t cycle_us;     /* its cycle, 0 without */
	uint32_t timeout_us;   /* its timeout, 0 without (the receiver then takes 3 cycles) */
	bool md;               /* has an <md-parameter> */
	uint32_t reply_timeout_us, confirm_timeout_us; /* 0 without */
	bool md_tcp;           /* protocol="TCP" */
	uint32_t line, column;
	struct trdp_plan *plan; /* the data set compiled (dataset.h); NULL without one */
};

struct trdp_config {
	char *file;                       /* the name errors give */
	struct trdp_dataset *datasets;    /* file order */
	size_t n_datasets;
	struct trdp_telegram *telegrams;  /* file order */
	size_t n_telegrams;
	/* telegrams of the same ComId, name and data set on another
	   bus-interface, kept once (the reference's examples publish one
	   telegram on two interfaces) */
	size_t merged;
	/* names made unique: a telegram name used by an earlier ComId becomes
	   "name#ComId", an element name used earlier in its data set
	   "name#2", "name#3"... (the reference's examples do both) */
	size_t renamed;
	uint32_t *by_comid;               /* private: telegram indices in ComId order */
};

