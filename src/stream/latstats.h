/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Round-trip latency samples of one test and their distribution.
 *
 * Samples are kept exactly (one uint64 each) up to EVR_LAT_EXACT_MAX, so
 * every run of upstream's plans (100k iterations at most) gets exact
 * nearest-rank percentiles.  Beyond that cap (long -I or -D runs) the
 * samples move into a log-linear histogram: values below 2^EVR_LAT_SUB_BITS
 * ns are exact, larger ones fall in buckets 2^(e) wide within each octave
 * [2^(e+SUB_BITS-1), 2^(e+SUB_BITS)), so a percentile read from a bucket
 * (its midpoint) is within 1/2^EVR_LAT_SUB_BITS (0.4 %) of the true
 * sample.  min, max and mean stay exact either way.
 */
#ifndef EVR_SRC_LATSTATS_H
#define EVR_SRC_LATSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "evrdma/stream.h"

#define EVR_LAT_EXACT_MAX 1000000u
#define EVR_LAT_SUB_BITS 8
#define EVR_LAT_HALF (1u << (EVR_LAT_SUB_BITS - 1))
/* exact values [0, 2^SUB), then 64 - SUB octaves of HALF buckets each */
#define EVR_LAT_NBUCKETS ((1u << EVR_LAT_SUB_BITS) + \
			  (64u - EVR_LAT_SUB_BITS) * EVR_LAT_HALF)

struct evr_latstats {
	uint64_t *v;              /* exact samples, or NULL */
	size_t n, cap;
	uint64_t *hist;           /* histogram counts, once past the cap */
	uint64_t count, min, max;
	long double sum;
	size_t exact_max;         /* EVR_LAT_EXACT_MAX; tests lower it */
};

void evr__lat_init(struct evr_latstats *l);
void evr__lat_reset(struct evr_latstats *l);
/* Returns 0, or -ENOMEM (the sample is lost but counted in min/max/mean). */
int evr__lat_add(struct evr_latstats *l, uint64_t ns);
/* Add src's samples to dst (rstream -c N: one test's connections into
 * its aggregate), as if each had been evr__lat_add()ed to dst: exact
 * while dst's samples and src's together fit dst->exact_max, else the
 * histogram, so the merge holds at most exact_max samples or one
 * histogram however many connections come in.  src is not changed.
 * Returns 0, or -ENOMEM (src's samples are then lost to the percentiles
 * but counted in min/max/mean). */
int evr__lat_merge(struct evr_latstats *dst, const struct evr_latstats *src);
/* Nearest-rank percentiles (rank = ceil(p * n), 1-based).  Reorders the
 * exact samples in place (a selection: no memory beyond them). */
void evr__lat_compute(struct evr_latstats *l, struct evr_lat_stats *out);
void evr__lat_free(struct evr_latstats *l);

/* The histogram's bucket of a value, and the range a bucket covers. */
unsigned evr__lat_bucket(uint64_t v);
void evr__lat_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi);

#endif
