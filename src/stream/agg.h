/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One test over many connections (rstream -c N): the sums that make the
 * aggregate row, as rstream(1) (MANY CONNECTIONS) defines each column.
 * Plain arithmetic, unit tested in tests/check_scale.c.
 */
#ifndef EVR_SRC_AGG_H
#define EVR_SRC_AGG_H

#include <stdint.h>

#include "evrdma/stream.h"
#include "latsplit.h"
#include "latstats.h"

struct evr_agg {
	unsigned n;               /* connections added */
	uint64_t bytes;
	uint64_t first_start_ns;  /* the earliest start */
	uint64_t last_end_ns;     /* the latest start + elapsed */
	uint64_t sum_elapsed_ns;
	uint64_t sum_iters;
	/* each connection's own time per iteration, elapsed / iters, summed
	 * over the n_timed connections that ran at least one iteration */
	long double sum_iter_ns;
	unsigned n_timed;
	/* --percentiles: the union of the connections' samples (bounded:
	 * exact up to EVR_LAT_EXACT_MAX, one histogram beyond) */
	int lat_on;
	struct evr_latstats lat;
	struct evr_lat_stats lat_res;
	/* --split: the union of the connections' parts */
	int split_on;
	struct evr_latsplit split;
	/* --mps: the rate asked, late iterations summed, the latest */
	uint32_t mps;
	uint64_t late, late_max_ns;
	uint64_t spin_sleeps;       /* -T n's sleeps (CPU watch), summed */
};

/* Empty, ready for evr__agg_add().  A zeroed struct may be fini'd. */
void evr__agg_init(struct evr_agg *a);
/* Free what a holds and make it empty again (evr__agg_init). */
void evr__agg_fini(struct evr_agg *a);
/* One connection's result for this test: r's start_ns, elapsed_ns, bytes
 * and iters, and lat (its samples) when not NULL.  Returns 0, or -ENOMEM
 * when lat's samples could not be merged (the percentiles then lack them,
 * min/max/mean still count them).  r->split_samples, when set, are merged
 * alike. */
int evr__agg_add(struct evr_agg *a, const struct evr_result *r,
		 const struct evr_latstats *lat);
/* The aggregate fields of r from a (r's name, size and count are the
 * caller's): nconns; bytes (the sum); iters (the mean per connection,
 * rounded to nearest: with a fixed count, every connection's); start_ns
 * and elapsed_ns (wall time from the first start to the last end);
 * conn_mean_ns (the mean of the connections' elapsed_ns); iter_mean_ns
 * (the mean of the connections' elapsed_ns / iters); and lat, the merged
 * distribution, or NULL without samples; split likewise; mps, late (the
 * sum) and late_max_ns (the largest).  r->lat points into a: valid until
 * a changes. */
void evr__agg_result(struct evr_agg *a, struct evr_result *r);

#endif
