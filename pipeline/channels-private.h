/* SPDX-License-Identifier: MIT */
/*
 * channels-private.h - struct pl_channels and what its three files share
 * (private to pipeline/): channels.c builds it (the list, the DBCs, the
 * TRDP plans, the dictionary) and looks channels up by name and label,
 * channels-decode.c decodes frames and telegrams with it on the collector
 * thread, channels-live.c keeps each channel's latest value.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channels.h"
#include "dbc/j1939.h"
#include "trdp/dataset.h"
#include "trdp/xml.h"

/* Items one J1939 frame adds besides its message's samples: every session
   timed out, the session it ends, the changes of a DM1. */
#define J1939_ITEMS_MAX (DBC_J1939_SESSIONS + 1 + DBC_J1939_DTC_EVENTS)

#define LIVE_TEXT_WORDS (ACQ_TEXT_MAX / 8)

struct live_slot {
	_Atomic uint64_t bits;   /* the double's bits */
	_Atomic int64_t t_ns;
	_Atomic uint32_t quality;
	/* A text channel's text, under a sequence lock: the collector writes,
	   the stat server reads.  Words, each atomic (relaxed), so a reader
	   racing a write reads no torn byte, only a text the sequence makes
	   it read again. */
	_Atomic uint32_t text_seq;  /* odd while the text is being written */
	_Atomic uint64_t text[LIVE_TEXT_WORDS];
	_Atomic uint8_t text_len;
	_Atomic bool is_text;
};

/* Items of a variable array that get channels of their own: a UINT16
   length could give 65,535 channels per leaf (the bus has ids for 65,536
   in all), so the items after these are decoded but not kept, and
   counted (pl_channels_trdp_counts). */
#define TRDP_DYN_CHANNELS 16u

/* A telegram's leaves as channel numbers on its bus (id & 0xffff). */
struct trdp_tel_map {
	uint32_t *first;     /* per leaf: its first channel (a dynamic leaf has nslots) */
	uint32_t *nslots;    /* per leaf: 1, or a dynamic leaf's channels */
	size_t nchannels;    /* the telegram's channels: the most samples it gives */
	/* PD supervision (TRDP_TIMEOUT / TRDP_BACK) by the telegrams' receive
	   times, so a replay of the log gives the same events */
	int64_t timeout_ns;  /* the XML's timeout, else 3 cycles; 0: none (not PD) */
	int64_t last_ns;     /* the last one's receive time */
	uint8_t state;       /* TEL_* */
};

enum { TEL_NEVER, TEL_LIVE, TEL_TIMED_OUT };

/* A TRDP bus with an XML: its telegrams' plans and where their values go. */
struct trdp_bus {
	struct trdp_config *cfg;
	struct trdp_tel_map *map; /* per telegram of cfg */
	struct pl_trdp_counts counts;
};

struct pl_channels {
	const struct conf_board *cfg;
	struct trdp_bus *trdp[CONF_BUSES_MAX]; /* TRDP buses with xml = */
	/* the collector's scratch for one telegram's decode (allocated once) */
	struct trdp_value *tvalues;
	size_t ntvalues;
	char *ttext;
	size_t nttext;
	dbc_t *dbc[CONF_BUSES_MAX];
	dbc_j1939_t *j1939[CONF_BUSES_MAX]; /* j1939 = true buses */
	size_t decode_max;                 /* the largest message of any DBC */
	struct pl_channel *list;
	struct rec_channel *dict;
	struct live_slot *live;
	size_t n, cap;
	size_t base[CONF_BUSES_MAX];      /* index of the bus's first channel */
	size_t count[CONF_BUSES_MAX];
};
