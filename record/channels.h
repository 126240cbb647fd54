/* SPDX-License-Identifier: MIT */
/*
 * channels.h - what the channel ids of a log mean: the names and units the
 * Batches' channel dictionaries give, looked up by id.
 *
 * A board has up to 65,536 channels per bus and up to 65,536 buses (ids
 * are bus << 16 | n), so the map grows as entries come (a hash table,
 * open addressing, at most half full) and a lookup is one probe or a few.
 * A later entry for an id replaces the earlier one (latest wins, as a
 * board file changed between runs).  export keeps one map per run, recv
 * one per (vehicle, log id).  Not thread-safe: one user at a time.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "batch.h"
#include "format.h"

typedef struct rec_channels rec_channels_t;

/* An empty map.  0 or -EINVAL, -ENOMEM. */
int rec_channels_new(rec_channels_t **ret_map);
rec_channels_t *rec_channels_free(rec_channels_t *map);

/* Name id (strings copied; NULL taken as "").  0, -EINVAL, -ENOMEM (the
   map is as it was). */
int rec_channels_set(rec_channels_t *map, uint32_t id, const char *name, const char *unit);

/* Keep entry c (every string and the value table copied; bus_name, if
   given, names c->bus for every record of that bus).  0, -EINVAL,
   -ENOMEM (the map is as it was). */
int rec_channels_put(rec_channels_t *map, const struct rec_channel *c);

/* Every dictionary entry b carries.  Returns the number of entries taken,
   or -EINVAL, -ENOMEM (the entries before stay taken). */
int rec_channels_learn(rec_channels_t *map, const rec_batch_t *b);

/* The entry for id (struct rec_channel of batch.h, every field; strings
   are "" if the dictionary gave none), NULL if none (or map is NULL).
   Valid until the next set, put, learn or free. */
const struct rec_channel *rec_channels_find(const rec_channels_t *map, uint32_t id);

/* The name of bus index bus as the dictionaries give it, NULL if none. */
const char *rec_channels_bus_name(const rec_channels_t *map, uint32_t bus);

/* The value-table label of channel id for value, NULL if none. */
const char *rec_channels_label(const rec_channels_t *map, uint32_t id, double value);

/* A record's names as rec_format_item() takes them: its bus's name; for a
   sample, its channel's name, unit and value-table label (NULL for a
   channel the map does not know).  Valid until the next set, put, learn
   or free. */
struct rec_names rec_channels_names(const rec_channels_t *map, const struct acq_item *it);

/* Every entry, sorted by id, as a malloc'd array of n pointers into the
   map (free() it; the entries stay valid until the next set, learn or
   free of the map).  Returns n (0: *ret_list NULL), or -EINVAL, -ENOMEM. */
int rec_channels_sorted(const rec_channels_t *map, const struct rec_channel ***ret_list);

/* Entries held. */
size_t rec_channels_count(const rec_channels_t *map);

/*
 * Names given on input (export -c, watch, triggers): the one resolution
 * every command uses.  CAN channels are named "Message.Signal"; a bare
 * signal name stands for the one qualified name that ends in ".name".
 *
 * rec_name_resolve() looks want up among n names, name_at(ctx, i) for
 * i < n (NULL entries skipped): a name equal to want wins; else the one
 * name that ends in "." + want.  Returns 0 with the index in *ret_index;
 * -ENOENT when nothing matches; -ENOTUNIQ when several names end in
 * "." + want, with why = "'want' is ambiguous: A.want, B.want (give one
 * of them)" (candidates in alphabetical order, "..." past the buffer);
 * -EINVAL on bad arguments.  why may be NULL.
 */
typedef const char *(*rec_name_at_fn)(const void *ctx, size_t i);
int rec_name_resolve(rec_name_at_fn name_at, const void *ctx, size_t n, const char *want, size_t *ret_index,
                     char *why, size_t whylen);

/* The same over the names map holds; the channel's id in *ret_id. */
int rec_channels_resolve(const rec_channels_t *map, const char *want, uint32_t *ret_id, char *why, size_t whylen);

/* The ids of every entry of map whose name equals one of n names,
   name_at(ctx, i) (NULL entries skipped; names already resolved, compared
   whole), in id order: a malloc'd array in *ret_ids with room for one
   more (free() it), set only on success.  The one "ids of the --channel
   names" of export's and summary's database paths.  Returns how many, or
   -EINVAL, -ENOMEM. */
int rec_channels_ids(const rec_channels_t *map, rec_name_at_fn name_at, const void *ctx, size_t n,
                     uint32_t **ret_ids);
