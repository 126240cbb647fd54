/* SPDX-License-Identifier: MIT */
/*
 * names.h - the words for record kinds, sample qualities and event codes,
 * as every text output writes them: one place.
 *
 * Event names come from railmon.proto's EventCode itself
 * ("EVENT_CAN_BUS_OFF" -> "CAN_BUS_OFF"), so a code added to the schema
 * has its name at once.  Kinds and qualities are the words export has
 * always written ("sample", "out_of_range"); the record test checks the
 * quality words against the schema's Quality enum.  All are static
 * strings; nothing allocates.
 */
#pragma once

#include <stdint.h>

#include "acquisition/acq-item.h"

/* "can", "sample" or "event"; NULL for any other value. */
const char *rec_kind_name(uint32_t kind);

/* A kind's name ("samples" is taken for "sample" too) -> *ret_kind.
   0, or -EINVAL for NULL or a word that names no kind. */
int rec_kind_parse(const char *name, enum acq_item_kind *ret_kind);

/* "good", "out_of_range" or "invalid"; NULL for any other value. */
const char *rec_quality_name(uint32_t quality);

/* "CAN_BUS_OFF" for ACQ_EV_CAN_BUS_OFF; NULL for a code the schema does
   not name (a newer sender's: print the number). */
const char *rec_event_name(uint32_t code);
