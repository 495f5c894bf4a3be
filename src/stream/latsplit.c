/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "latsplit.h"

void evr__split_init(struct evr_latsplit *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < EVR_SPLIT_PARTS; i++)
		evr__lat_init(&s->part[i]);
}

void evr__split_reset(struct evr_latsplit *s)
{
	int i;

	for (i = 0; i < EVR_SPLIT_PARTS; i++)
		evr__lat_reset(&s->part[i]);
	s->rejected = 0;
	memset(&s->res, 0, sizeof(s->res));
}

void evr__split_free(struct evr_latsplit *s)
{
	int i;

	for (i = 0; i < EVR_SPLIT_PARTS; i++)
		evr__lat_free(&s->part[i]);
}

int evr__split_add(struct evr_latsplit *s, uint64_t rtt_ns, uint64_t hold_ns,
		   int have_local, uint64_t local_ns)
{
	int err = 0;

	if (!have_local)
		local_ns = 0;
	/* (each part alone first: their sum cannot wrap then) */
	if (hold_ns > rtt_ns || local_ns > rtt_ns ||
	    hold_ns + local_ns > rtt_ns) {
		s->rejected++;
		return 1;
	}
	if (evr__lat_add(&s->part[EVR_SPLIT_NET], rtt_ns - hold_ns - local_ns))
		err = -ENOMEM;
	if (evr__lat_add(&s->part[EVR_SPLIT_PEER], hold_ns))
		err = -ENOMEM;
	if (have_local && evr__lat_add(&s->part[EVR_SPLIT_LOCAL], local_ns))
		err = -ENOMEM;
	return err;
}

int evr__split_merge(struct evr_latsplit *dst, const struct evr_latsplit *src)
{
	int i, err = 0;

	for (i = 0; i < EVR_SPLIT_PARTS; i++)
		if (evr__lat_merge(&dst->part[i], &src->part[i]))
			err = -ENOMEM;
	dst->rejected += src->rejected;
	return err;
}

void evr__split_compute(struct evr_latsplit *s)
{
	int i;

	for (i = 0; i < EVR_SPLIT_PARTS; i++)
		evr__lat_compute(&s->part[i], &s->res.part[i]);
	s->res.rejected = s->rejected;
}
