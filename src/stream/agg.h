/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One test over many connections (rstream -c N): the sums that make the
 * aggregate row.  Plain arithmetic, unit tested in tests/check_plan.c.
 */
#ifndef EVR_SRC_AGG_H
#define EVR_SRC_AGG_H

#include <stdint.h>

#include "evrdma/stream.h"

struct evr_agg {
	unsigned n;               /* connections added */
	uint64_t bytes;
	uint64_t first_start_ns;  /* the earliest start */
	uint64_t last_end_ns;     /* the latest start + elapsed */
	uint64_t sum_elapsed_ns;
};

void evr__agg_reset(struct evr_agg *a);
/* One connection's result for this test. */
void evr__agg_add(struct evr_agg *a, uint64_t start_ns, uint64_t elapsed_ns,
		  uint64_t bytes);
/* The aggregate fields of r from a (r's test fields are the caller's):
 * nconns, bytes, start_ns, elapsed_ns (wall time from the first start to
 * the last end) and conn_mean_ns (the mean time of one connection). */
void evr__agg_result(const struct evr_agg *a, struct evr_result *r);

#endif
