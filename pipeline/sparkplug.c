/* SPDX-License-Identifier: MIT */
/* sparkplug.c - the Sparkplug B edge node over a running railmon's log (sparkplug.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forwarder.h"
#include "sparkplug.h"

/* The devices: every bus, or those `devices =` names (conf/ checked them). */
static void devices(struct pl_sparkplug *s, const struct conf_board *cfg)
{
	const struct conf_sparkplug *sp = &cfg->sparkplug;

	for (size_t b = 0; b < cfg->nbuses; b++) {
		bool on = !sp->ndevices;
		for (size_t i = 0; i < sp->ndevices; i++)
			on |= !strcmp(sp->devices[i], cfg->buses[b].name);
		if (on)
			s->devs[s->ndevs++] = (struct upl_spb_device){ cfg->buses[b].name, (uint16_t)b };
	}
}

static int channels(struct pl_sparkplug *s, const pl_channels_t *ch)
{
	const struct pl_channel *list = NULL;
	size_t n = ch ? pl_channels_list(ch, &list) : 0;
	const struct rec_channel *dict = n ? pl_channels_dictionary(ch) : NULL;
	size_t room = 1, at = 0;

	/* the value tables as DBIRTH properties: "VALUE LABEL" a line */
	for (size_t i = 0; dict && i < n; i++)
		for (size_t k = 0; k < dict[i].nvalue_table; k++)
			room += strlen(dict[i].value_table[k]) + 1;
	s->chans = calloc(n ? n : 1, sizeof(*s->chans));
	s->labels = malloc(room);
	if (!s->chans || !s->labels)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct pl_live live = { 0 };
		const char *labels = NULL;
		pl_channels_live(ch, i, &live);
		if (dict && dict[i].nvalue_table) {
			labels = s->labels + at;
			for (size_t k = 0; k < dict[i].nvalue_table; k++)
				at += (size_t)sprintf(s->labels + at, "%s%s", k ? "\n" : "", dict[i].value_table[k]);
			s->labels[at++] = '\0';
		}
		/* the datatype from what the dictionary knows of the values */
		int decimals = dict && dict[i].has_decimals ? (int)dict[i].decimals : -1;
		double range[2] = { dict ? dict[i].min : 0, dict ? dict[i].max : 0 };
		uint32_t dt = spb_datatype_of_channel(live.is_text, decimals,
		                                      dict && dict[i].has_range ? range : NULL);
		s->chans[i] = (struct spb_channel){ list[i].id, list[i].bus, list[i].name, list[i].unit, live.is_text,
		                                    labels, dt };
	}
	s->nchans = n;
	return 0;
}

int pl_sparkplug_open(struct pl_sparkplug *s, const struct conf_board *cfg, const char *dir,
                      const pl_channels_t *ch, char *err, size_t errlen)
{
	const struct conf_sparkplug *sp = &cfg->sparkplug;
	const struct conf_uplink *u = &sp->mqtt;
	int r;

	memset(s, 0, sizeof(*s));
	if (!u->enabled)
		return 0;
	devices(s, cfg);
	if ((r = channels(s, ch)) < 0 || (r = stor_reader_open(dir, &s->reader)) < 0) {
		snprintf(err, errlen, "%s: sparkplug cannot read the log: %s", dir, strerror(-r));
		return r;
	}
	struct upl_reduce_cfg red;
	if ((r = pl_uplink_reduce(cfg, ch, &red, err, errlen)) < 0)
		return r;
	struct upl_spb_cfg c = {
		.reduce = r ? &red : NULL, /* copied by the reducer */
		.host = u->host, .port = u->port, .use_tls = u->tls,
		.tls = { u->ca_file[0] ? u->ca_file : NULL, u->cert_file[0] ? u->cert_file : NULL,
		         u->key_file[0] ? u->key_file : NULL, u->tls_insecure },
		.username = u->username[0] ? u->username : NULL, .password = u->password[0] ? u->password : NULL,
		.keepalive_s = u->keepalive_s, .group = sp->group_id, .node = sp->edge_node, .state_dir = dir,
		.primary_host = sp->primary_host,
		.channels = s->chans, .nchannels = s->nchans, .devices = s->devs, .ndevices = s->ndevs,
		.source = pl_log_source(s->reader), /* the forwarder's view of the log */
		/* a DBIRTH and a whole Batch's DDATA fit */
		.max_metrics = cfg->batch_max > s->nchans + 2 ? cfg->batch_max : s->nchans + 2,
	};
	r = upl_spb_new(&c, &s->pub);
	pl_uplink_reduce_free(&red);
	if (r < 0)
		snprintf(err, errlen, "%s:%d: [sparkplug]: %s", cfg->path, sp->line, strerror(-r));
	return r;
}

void pl_sparkplug_close(struct pl_sparkplug *s)
{
	if (s->pub) {
		upl_spb_stop(s->pub);
		upl_spb_stats(s->pub, &s->last);
		s->stopped = true;
	}
	s->pub = upl_spb_free(s->pub);
	stor_reader_free(s->reader);
	s->reader = NULL;
	free(s->chans);
	s->chans = NULL;
	free(s->labels);
	s->labels = NULL;
	s->nchans = 0;
}
