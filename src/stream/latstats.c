/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "latstats.h"
#include "latsplit.h"

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

/* Room for need exact samples (need <= exact_max): the capacity doubles
 * from 1024, capped at exact_max. */
static int grow(struct evr_latstats *l, size_t need)
{
	size_t nc = l->cap ? l->cap : 1024;
	uint64_t *nv;

	if (need <= l->cap)
		return 0;
	while (nc < need)
		nc *= 2;
	if (nc > l->exact_max)
		nc = l->exact_max;
	nv = realloc(l->v, nc * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->cap = nc;
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
		if (l->cap >= l->exact_max ? to_hist(l) : grow(l, l->n + 1))
			return -ENOMEM;
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
		if (grow(dst, need))
			return -ENOMEM;
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

/*
 * Nearest rank by selection, in place.  qsort() here (glibc's merge sort)
 * takes a second copy of the samples for its scratch: 8 MB beside the
 * 8 MB of a full 10^6-sample set, and an aggregate of -c N holds one.
 * Quickselect needs nothing beyond the array and is O(n); its partition
 * is three-way, so runs of equal samples (common in latencies) cost no
 * more than distinct ones, and a range that does not shrink within its
 * budget of rounds is heap-sorted instead, so no input makes it
 * quadratic.
 */
static void swap_u64(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

static void sift_down(uint64_t *v, size_t i, size_t n)
{
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && v[c + 1] > v[c])
			c++;
		if (v[i] >= v[c])
			return;
		swap_u64(&v[i], &v[c]);
		i = c;
	}
}

static void heap_sort(uint64_t *v, size_t n)
{
	size_t i;

	for (i = n / 2; i-- > 0;)
		sift_down(v, i, n);
	for (i = n; i-- > 1;) {
		swap_u64(&v[0], &v[i]);
		sift_down(v, 0, i);
	}
}

static uint64_t median3(uint64_t a, uint64_t b, uint64_t c)
{
	if (a > b)
		swap_u64(&a, &b);
	if (b > c)
		b = c;
	return a > b ? a : b;
}

/* Put the k-th smallest of v[lo, hi) at v[k], none larger before it and
 * none smaller after it (lo <= k < hi). */
static void select_k(uint64_t *v, size_t lo, size_t hi, size_t k)
{
	unsigned budget = 2 * flog2(hi - lo + 1) + 8;
	size_t lt, gt, i, j;
	uint64_t p;

	while (hi - lo > 16) {
		if (!budget--) {
			heap_sort(v + lo, hi - lo);
			return;
		}
		p = median3(v[lo], v[lo + (hi - lo) / 2], v[hi - 1]);
		/* [lo, lt) < p, [lt, i) == p, [gt, hi) > p */
		lt = i = lo;
		gt = hi;
		while (i < gt) {
			if (v[i] < p)
				swap_u64(&v[lt++], &v[i++]);
			else if (v[i] > p)
				swap_u64(&v[i], &v[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return; /* v[k] == p, in place */
	}
	for (i = lo + 1; i < hi; i++)
		for (j = i; j > lo && v[j - 1] > v[j]; j--)
			swap_u64(&v[j - 1], &v[j]);
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
	uint64_t n, lo;
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
	/* the ranks ascend: each is found in the part right of the last */
	lo = 0;
	for (i = 0; i < 4; i++) {
		uint64_t k = rank_of(n, pms[i]) - 1;

		select_k(l->v, lo, n, k);
		*dst[i] = l->v[k];
		lo = k;
	}
}

/* Public: the samples of a result (include/evrdma/stream.h).  The exact
 * samples may have been reordered by evr__lat_compute(): order is not
 * promised, only the values. */
static uint64_t lat_walk(const struct evr_latstats *l,
			 void (*fn)(void *ud, uint64_t lo_ns, uint64_t hi_ns,
				    uint64_t n),
			 void *ud)
{
	uint64_t total = 0, lo, hi;
	unsigned b;
	size_t i;

	if (l->hist) {
		for (b = 0; b < EVR_LAT_NBUCKETS; b++) {
			if (!l->hist[b])
				continue;
			evr__lat_bucket_range(b, &lo, &hi);
			fn(ud, lo, hi, l->hist[b]);
			total += l->hist[b];
		}
		return total;
	}
	for (i = 0; i < l->n; i++)
		fn(ud, l->v[i], l->v[i], 1);
	return l->n;
}

uint64_t evr_result_lat_walk(const struct evr_result *r,
			     void (*fn)(void *ud, uint64_t lo_ns,
					uint64_t hi_ns, uint64_t n),
			     void *ud)
{
	if (!r || !r->lat_samples || !r->lat)
		return 0;
	return lat_walk(r->lat_samples, fn, ud);
}

uint64_t evr_result_split_walk(const struct evr_result *r,
			       enum evr_split_part part,
			       void (*fn)(void *ud, uint64_t lo_ns,
					  uint64_t hi_ns, uint64_t n),
			       void *ud)
{
	if (!r || !r->split || !r->split_samples ||
	    (unsigned)part >= EVR_SPLIT_PARTS)
		return 0;
	return lat_walk(&r->split_samples->part[part], fn, ud);
}
