/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <string.h>

#include "agg.h"

void evr__agg_reset(struct evr_agg *a)
{
	memset(a, 0, sizeof(*a));
}

void evr__agg_add(struct evr_agg *a, uint64_t start_ns, uint64_t elapsed_ns,
		  uint64_t bytes)
{
	uint64_t end = start_ns + elapsed_ns;

	if (!a->n || start_ns < a->first_start_ns)
		a->first_start_ns = start_ns;
	if (!a->n || end > a->last_end_ns)
		a->last_end_ns = end;
	a->n++;
	a->bytes += bytes;
	a->sum_elapsed_ns += elapsed_ns;
}

void evr__agg_result(const struct evr_agg *a, struct evr_result *r)
{
	r->nconns = a->n;
	r->bytes = a->bytes;
	r->start_ns = a->first_start_ns;
	r->elapsed_ns = a->n ? a->last_end_ns - a->first_start_ns : 0;
	r->conn_mean_ns = a->n ? (a->sum_elapsed_ns + a->n / 2) / a->n : 0;
}
