/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "agg.h"

void evr__agg_init(struct evr_agg *a)
{
	memset(a, 0, sizeof(*a));
	evr__lat_init(&a->lat);
	evr__split_init(&a->split);
}

void evr__agg_fini(struct evr_agg *a)
{
	evr__lat_free(&a->lat);
	evr__split_free(&a->split);
	evr__agg_init(a);
}

int evr__agg_add(struct evr_agg *a, const struct evr_result *r,
		 const struct evr_latstats *lat)
{
	uint64_t end = r->start_ns + r->elapsed_ns;
	int err = 0;

	if (!a->n || r->start_ns < a->first_start_ns)
		a->first_start_ns = r->start_ns;
	if (!a->n || end > a->last_end_ns)
		a->last_end_ns = end;
	a->n++;
	a->bytes += r->bytes;
	a->sum_elapsed_ns += r->elapsed_ns;
	a->sum_iters += r->iters;
	a->mps = r->mps;
	a->late += r->late;
	a->spin_sleeps += r->spin_sleeps;
	if (r->late_max_ns > a->late_max_ns)
		a->late_max_ns = r->late_max_ns;
	/* usec/xfer is each connection's own, then their mean: with -D the
	 * connections run different numbers of iterations in different
	 * times, and neither sum alone gives it */
	if (r->iters) {
		a->sum_iter_ns += (long double)r->elapsed_ns / r->iters;
		a->n_timed++;
	}
	if (r->split_samples) {
		a->split_on = 1;
		if (evr__split_merge(&a->split, r->split_samples))
			err = -ENOMEM;
	}
	if (!lat)
		return err;
	a->lat_on = 1;
	return evr__lat_merge(&a->lat, lat) ? -ENOMEM : err;
}

void evr__agg_result(struct evr_agg *a, struct evr_result *r)
{
	unsigned n = a->n;

	r->nconns = n;
	r->bytes = a->bytes;
	r->iters = n ? (uint32_t)((a->sum_iters + n / 2) / n) : 0;
	r->start_ns = a->first_start_ns;
	r->elapsed_ns = n ? a->last_end_ns - a->first_start_ns : 0;
	r->conn_mean_ns = n ? (a->sum_elapsed_ns + n / 2) / n : 0;
	r->iter_mean_ns = a->n_timed ?
			  (double)(a->sum_iter_ns / a->n_timed) : 0.0;
	r->mps = a->mps;
	r->late = a->late;
	r->late_max_ns = a->late_max_ns;
	r->spin_sleeps = a->spin_sleeps;
	r->lat = NULL;
	r->lat_samples = NULL;
	if (a->lat_on) {
		evr__lat_compute(&a->lat, &a->lat_res);
		r->lat = &a->lat_res;
		r->lat_samples = &a->lat;
	}
	r->split = NULL;
	r->split_samples = NULL;
	if (a->split_on) {
		evr__split_compute(&a->split);
		r->split = &a->split.res;
		r->split_samples = &a->split;
	}
}
