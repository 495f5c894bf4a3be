/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "latstats.h"

void evr__lat_init(struct evr_latstats *l)
{
	memset(l, 0, sizeof(*l));
	l->exact_max = EVR_LAT_EXACT_MAX;
}

void evr__lat_reset(struct evr_latstats *l)
{
	l->n = 0;
	l->count = 0;
	l->min = 0;
	l->max = 0;
	l->sum = 0;
	if (l->hist) {
		free(l->hist);
		l->hist = NULL;
	}
}

void evr__lat_free(struct evr_latstats *l)
{
	free(l->v);
	free(l->hist);
	l->v = NULL;
	l->hist = NULL;
	l->n = l->cap = 0;
}

static unsigned flog2(uint64_t v)
{
	return 63u - (unsigned)__builtin_clzll(v);
}

unsigned evr__lat_bucket(uint64_t v)
{
	unsigned e;

	if (v < (1u << EVR_LAT_SUB_BITS))
		return (unsigned)v;
	/* v >> e lands in [HALF, 2 * HALF) */
	e = flog2(v) - (EVR_LAT_SUB_BITS - 1);
	return (1u << EVR_LAT_SUB_BITS) + (e - 1) * EVR_LAT_HALF +
	       (unsigned)((v >> e) - EVR_LAT_HALF);
}

void evr__lat_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi)
{
	unsigned e, k;

	if (b < (1u << EVR_LAT_SUB_BITS)) {
		*lo = *hi = b;
		return;
	}
	b -= 1u << EVR_LAT_SUB_BITS;
	e = b / EVR_LAT_HALF + 1;
	k = b % EVR_LAT_HALF + EVR_LAT_HALF;
	*lo = (uint64_t)k << e;
	*hi = *lo + ((1ull << e) - 1);
}

static int to_hist(struct evr_latstats *l)
{
	size_t i;

	l->hist = calloc(EVR_LAT_NBUCKETS, sizeof(*l->hist));
	if (!l->hist)
		return -ENOMEM;
	for (i = 0; i < l->n; i++)
		l->hist[evr__lat_bucket(l->v[i])]++;
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
	return 0;
}

int evr__lat_add(struct evr_latstats *l, uint64_t ns)
{
	if (!l->count || ns < l->min)
		l->min = ns;
	if (ns > l->max)
		l->max = ns;
	l->count++;
	l->sum += ns;
	if (!l->hist && l->n == l->cap) {
		if (l->cap >= l->exact_max) {
			if (to_hist(l))
				return -ENOMEM;
		} else {
			size_t nc = l->cap ? l->cap * 2 : 1024;
			uint64_t *nv;

			if (nc > l->exact_max)
				nc = l->exact_max;
			nv = realloc(l->v, nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			l->v = nv;
			l->cap = nc;
		}
	}
	if (l->hist)
		l->hist[evr__lat_bucket(ns)]++;
	else
		l->v[l->n++] = ns;
	return 0;
}

int evr__lat_merge(struct evr_latstats *dst, const struct evr_latstats *src)
{
	size_t need, i;
	unsigned b;

	if (!src->count)
		return 0;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum += src->sum;
	/* The rule of evr__lat_add: exact while the union fits the cap. */
	if (!dst->hist && !src->hist && src->n <= dst->exact_max - dst->n) {
		need = dst->n + src->n;
		if (need > dst->cap) {
			size_t nc = dst->cap ? dst->cap : 1024;
			uint64_t *nv;

			while (nc < need)
				nc *= 2;
			if (nc > dst->exact_max)
				nc = dst->exact_max;
			nv = realloc(dst->v, nc * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			dst->v = nv;
			dst->cap = nc;
		}
		if (src->n)
			memcpy(dst->v + dst->n, src->v, src->n * sizeof(*src->v));
		dst->n = need;
		return 0;
	}
	/* Beyond it the histogram: bucket counts add up, so the union's
	 * nearest rank falls in the same bucket as the true sample's and
	 * the 0.4 % bound holds for the merge as for one connection. */
	if (!dst->hist && to_hist(dst))
		return -ENOMEM;
	if (src->hist) {
		for (b = 0; b < EVR_LAT_NBUCKETS; b++)
			dst->hist[b] += src->hist[b];
	} else {
		for (i = 0; i < src->n; i++)
			dst->hist[evr__lat_bucket(src->v[i])]++;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* 1-based nearest rank of the per-mille percentile pm among n. */
static uint64_t rank_of(uint64_t n, unsigned pm)
{
	uint64_t r = (n * pm + 999) / 1000;

	return r ? r : 1;
}

static uint64_t hist_value(const struct evr_latstats *l, uint64_t n,
			   uint64_t rank)
{
	uint64_t seen = 0, lo, hi, v;
	unsigned b;

	for (b = 0; b < EVR_LAT_NBUCKETS; b++) {
		seen += l->hist[b];
		if (seen >= rank)
			break;
	}
	if (b == EVR_LAT_NBUCKETS)
		return l->max;
	evr__lat_bucket_range(b, &lo, &hi);
	v = lo + (hi - lo) / 2;
	/* the extremes are known exactly */
	if (v < l->min)
		v = l->min;
	if (v > l->max)
		v = l->max;
	(void)n;
	return v;
}

void evr__lat_compute(struct evr_latstats *l, struct evr_lat_stats *out)
{
	static const unsigned pms[4] = { 500, 900, 990, 999 };
	uint64_t *dst[4] = { &out->p50_ns, &out->p90_ns, &out->p99_ns,
			     &out->p999_ns };
	uint64_t n;
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->samples = l->count;
	if (!l->count)
		return;
	out->min_ns = l->min;
	out->max_ns = l->max;
	out->mean_ns = (double)(l->sum / l->count);
	if (l->hist) {
		n = 0;
		for (i = 0; i < EVR_LAT_NBUCKETS; i++)
			n += l->hist[i];
		for (i = 0; i < 4; i++)
			*dst[i] = n ? hist_value(l, n, rank_of(n, pms[i])) :
				      l->max;
		return;
	}
	n = l->n;
	if (!n) {
		/* every sample was lost to ENOMEM: only the extremes */
		for (i = 0; i < 4; i++)
			*dst[i] = l->max;
		return;
	}
	qsort(l->v, n, sizeof(*l->v), cmp_u64);
	for (i = 0; i < 4; i++)
		*dst[i] = l->v[rank_of(n, pms[i]) - 1];
}
