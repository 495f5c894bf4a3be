/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Latency percentiles (--percentiles): nearest rank on exact samples, and
 * the log-linear histogram's error bound beyond the exact cap.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stream/latsplit.h"
#include "stream/latstats.h"
#include "cli/progress.h"

static void add_all(struct evr_latstats *l, const uint64_t *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert_int_eq(evr__lat_add(l, v[i]), 0);
}

START_TEST(test_empty)
{
	struct evr_latstats l;
	struct evr_lat_stats r;

	evr__lat_init(&l);
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.samples, 0);
	ck_assert_uint_eq(r.max_ns, 0);
	evr__lat_free(&l);
}
END_TEST

START_TEST(test_one_sample)
{
	struct evr_latstats l;
	struct evr_lat_stats r;

	evr__lat_init(&l);
	evr__lat_add(&l, 1234);
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.samples, 1);
	ck_assert_uint_eq(r.min_ns, 1234);
	ck_assert_uint_eq(r.p50_ns, 1234);
	ck_assert_uint_eq(r.p90_ns, 1234);
	ck_assert_uint_eq(r.p99_ns, 1234);
	ck_assert_uint_eq(r.p999_ns, 1234);
	ck_assert_uint_eq(r.max_ns, 1234);
	ck_assert_double_eq(r.mean_ns, 1234.0);
	evr__lat_free(&l);
}
END_TEST

START_TEST(test_all_equal)
{
	struct evr_latstats l;
	struct evr_lat_stats r;
	unsigned i;

	evr__lat_init(&l);
	for (i = 0; i < 5000; i++)
		evr__lat_add(&l, 777);
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.samples, 5000);
	ck_assert_uint_eq(r.min_ns, 777);
	ck_assert_uint_eq(r.p50_ns, 777);
	ck_assert_uint_eq(r.p999_ns, 777);
	ck_assert_uint_eq(r.max_ns, 777);
	ck_assert_double_eq(r.mean_ns, 777.0);
	evr__lat_free(&l);
}
END_TEST

/* 1..1000 in a scrambled order: rank ceil(p n) is the value itself. */
START_TEST(test_nearest_rank_1000)
{
	struct evr_latstats l;
	struct evr_lat_stats r;
	unsigned i;

	evr__lat_init(&l);
	for (i = 0; i < 1000; i++)
		evr__lat_add(&l, (i * 617u) % 1000u + 1u); /* a permutation */
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.samples, 1000);
	ck_assert_uint_eq(r.min_ns, 1);
	ck_assert_uint_eq(r.p50_ns, 500);
	ck_assert_uint_eq(r.p90_ns, 900);
	ck_assert_uint_eq(r.p99_ns, 990);
	ck_assert_uint_eq(r.p999_ns, 999);
	ck_assert_uint_eq(r.max_ns, 1000);
	ck_assert_double_eq(r.mean_ns, 500.5);
	evr__lat_free(&l);
}
END_TEST

/* Small sets: nearest rank rounds the rank up. */
START_TEST(test_nearest_rank_small)
{
	static const uint64_t ten[10] = { 90, 10, 80, 20, 70, 30, 60, 40,
					  100, 50 };
	static const uint64_t three[3] = { 300, 100, 200 };
	struct evr_latstats l;
	struct evr_lat_stats r;

	evr__lat_init(&l);
	add_all(&l, ten, 10);
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.p50_ns, 50);   /* rank 5 */
	ck_assert_uint_eq(r.p90_ns, 90);   /* rank 9 */
	ck_assert_uint_eq(r.p99_ns, 100);  /* rank ceil(9.9) = 10 */
	ck_assert_uint_eq(r.p999_ns, 100);
	evr__lat_reset(&l);
	add_all(&l, three, 3);
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.samples, 3);
	ck_assert_uint_eq(r.min_ns, 100);
	ck_assert_uint_eq(r.p50_ns, 200);  /* rank ceil(1.5) = 2 */
	ck_assert_uint_eq(r.p90_ns, 300);
	ck_assert_uint_eq(r.max_ns, 300);
	evr__lat_free(&l);
}
END_TEST

/* Every value falls in a bucket that holds it, buckets are ordered and
 * no wider than 1/2^(SUB_BITS-1) of their lower bound. */
START_TEST(test_bucket_bounds)
{
	uint64_t v, lo, hi, plo = 0, phi = 0;
	unsigned b, pb = 0;
	int k;

	for (k = 0; k < 64 * 16; k++) {
		v = k < 64 * 8 ? (uint64_t)k * 37u :
			(1ull << (k / 16)) + (uint64_t)(k % 16) * 3u;
		b = evr__lat_bucket(v);
		ck_assert_uint_lt(b, EVR_LAT_NBUCKETS);
		evr__lat_bucket_range(b, &lo, &hi);
		ck_assert(lo <= v && v <= hi);
		ck_assert((hi - lo) * (uint64_t)EVR_LAT_HALF <= lo || lo == hi);
	}
	for (b = 0; b < EVR_LAT_NBUCKETS; b++) {
		evr__lat_bucket_range(b, &lo, &hi);
		if (b)
			ck_assert_uint_eq(lo, phi + 1);
		ck_assert_uint_eq(evr__lat_bucket(lo), b);
		ck_assert_uint_eq(evr__lat_bucket(hi), b);
		plo = lo;
		phi = hi;
		pb = b;
	}
	ck_assert_uint_eq(phi, UINT64_MAX);
	(void)plo;
	(void)pb;
}
END_TEST

/* Past the exact cap the histogram answers within its error bound:
 * relative error <= 1/2^SUB_BITS against the exact nearest rank. */
START_TEST(test_histogram_error)
{
	struct evr_latstats l, x;
	struct evr_lat_stats h, e;
	uint64_t vals[4], got[4];
	unsigned i;
	uint64_t seed = 42;

	evr__lat_init(&l);
	evr__lat_init(&x);
	l.exact_max = 1000; /* force the histogram early */
	for (i = 0; i < 20000; i++) {
		uint64_t v;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		/* 1 us .. ~16 ms, spread over many octaves */
		v = 1000 + ((seed >> 33) % (1u << (10 + i % 14)));
		evr__lat_add(&l, v);
		evr__lat_add(&x, v);
	}
	ck_assert_ptr_nonnull(l.hist);
	ck_assert_ptr_null(x.hist);
	evr__lat_compute(&l, &h);
	evr__lat_compute(&x, &e);
	ck_assert_uint_eq(h.samples, 20000);
	ck_assert_uint_eq(h.min_ns, e.min_ns);
	ck_assert_uint_eq(h.max_ns, e.max_ns);
	ck_assert_double_eq_tol(h.mean_ns, e.mean_ns, 1e-6 * e.mean_ns);
	vals[0] = e.p50_ns; vals[1] = e.p90_ns;
	vals[2] = e.p99_ns; vals[3] = e.p999_ns;
	got[0] = h.p50_ns; got[1] = h.p90_ns;
	got[2] = h.p99_ns; got[3] = h.p999_ns;
	for (i = 0; i < 4; i++) {
		double err = (double)(got[i] > vals[i] ? got[i] - vals[i] :
					vals[i] - got[i]);

		ck_assert_msg(err <= (double)vals[i] / (1u << EVR_LAT_SUB_BITS),
			      "percentile %u: %llu vs exact %llu", i,
			      (unsigned long long)got[i],
			      (unsigned long long)vals[i]);
	}
	ck_assert(h.p50_ns <= h.p90_ns && h.p90_ns <= h.p99_ns &&
		  h.p99_ns <= h.p999_ns && h.p999_ns <= h.max_ns &&
		  h.min_ns <= h.p50_ns);
	evr__lat_free(&l);
	evr__lat_free(&x);
}
END_TEST

/* Reset between tests keeps nothing of the previous test. */
START_TEST(test_reset)
{
	struct evr_latstats l;
	struct evr_lat_stats r;
	unsigned i;

	evr__lat_init(&l);
	l.exact_max = 10;
	for (i = 0; i < 100; i++)
		evr__lat_add(&l, 5000 + i);
	ck_assert_ptr_nonnull(l.hist);
	evr__lat_reset(&l);
	evr__lat_add(&l, 3);
	evr__lat_compute(&l, &r);
	ck_assert_uint_eq(r.samples, 1);
	ck_assert_uint_eq(r.p50_ns, 3);
	ck_assert_uint_eq(r.max_ns, 3);
	evr__lat_free(&l);
}
END_TEST

START_TEST(test_format)
{
	struct evr_progress p = {
		.test = "64_lat", .elapsed_ns = 2000000000ull,
		.iters_done = 41234, .iters_total = 100000, .gbps = 0.05,
	};
	struct evr_lat_stats s = {
		.samples = 3, .min_ns = 1000, .p50_ns = 2000, .p90_ns = 3000,
		.p99_ns = 3000, .p999_ns = 3000, .max_ns = 3000,
		.mean_ns = 2000,
	};
	char b[256];

	progress_format(b, sizeof(b), &p);
	ck_assert_str_eq(b, "[   2.0s] 64_lat 41234/100000 iters 0.05 Gb/s");
	p.iters_total = 0;
	p.duration_ns = 1500000000ull;
	progress_format(b, sizeof(b), &p);
	ck_assert_str_eq(b, "[   2.0s] 64_lat 41234 iters of 1.5s 0.05 Gb/s");
	p.server = 1;
	p.conn_id = 3;
	p.peer = "127.0.0.1:5000";
	p.duration_ns = 0;
	progress_format(b, sizeof(b), &p);
	ck_assert_str_eq(b, "[   2.0s] conn 3 127.0.0.1:5000 64_lat 41234 "
			    "iters 0.05 Gb/s");
	ck_assert_str_eq(lat_header(),
			 "name         samples     min_us     p50_us     p90_us"
			 "     p99_us   p99.9_us     max_us    mean_us\n");
	lat_format_row(b, sizeof(b), "64_lat", &s);
	ck_assert_str_eq(b, "64_lat             3       1.00       2.00       "
			    "3.00       3.00       3.00       3.00       2.00\n");
}
END_TEST

/* ---- merging (rstream -c N: a test's connections into its aggregate) */

static uint64_t rng(uint64_t *seed)
{
	*seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
	return *seed >> 33;
}

/* n samples spread over many octaves (off + 1 us .. ~16 ms) into l, and
 * a copy of each into u (the union, for the brute-force answer).  Sets
 * with different offsets make a union unlike either of them. */
static void fill(struct evr_latstats *l, size_t n, uint64_t off,
		 uint64_t *seed, uint64_t *u, size_t *un)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t v = off + 1000 + rng(seed) % (1u << (10 + i % 14));

		ck_assert_int_eq(evr__lat_add(l, v), 0);
		u[(*un)++] = v;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The merged distribution against nearest rank on the sorted union:
 * equal when exact, else within 1/2^SUB_BITS; count, min, max and mean
 * exact either way. */
static void check_union(struct evr_latstats *m, uint64_t *u, size_t un,
			int exact)
{
	static const unsigned pm[4] = { 500, 900, 990, 999 };
	struct evr_lat_stats r;
	uint64_t got[4];
	long double sum = 0;
	size_t i;

	qsort(u, un, sizeof(*u), cmp_u64);
	for (i = 0; i < un; i++)
		sum += u[i];
	evr__lat_compute(m, &r);
	ck_assert_uint_eq(r.samples, un);
	ck_assert_uint_eq(r.min_ns, u[0]);
	ck_assert_uint_eq(r.max_ns, u[un - 1]);
	ck_assert_double_eq_tol(r.mean_ns, (double)(sum / un), 1e-6);
	got[0] = r.p50_ns; got[1] = r.p90_ns;
	got[2] = r.p99_ns; got[3] = r.p999_ns;
	for (i = 0; i < 4; i++) {
		size_t rank = (un * pm[i] + 999) / 1000;
		uint64_t want = u[(rank ? rank : 1) - 1];
		uint64_t err = got[i] > want ? got[i] - want : want - got[i];

		if (exact)
			ck_assert_msg(!err, "p%u: %llu, union's %llu", pm[i],
				      (unsigned long long)got[i],
				      (unsigned long long)want);
		else
			ck_assert_msg(err * (1u << EVR_LAT_SUB_BITS) <= want,
				      "p%u: %llu, union's %llu", pm[i],
				      (unsigned long long)got[i],
				      (unsigned long long)want);
	}
}

START_TEST(test_merge_exact_exact)
{
	struct evr_latstats a, b, c;
	static uint64_t u[3000];
	size_t un = 0;
	uint64_t seed = 7;

	evr__lat_init(&a);
	evr__lat_init(&b);
	evr__lat_init(&c);
	fill(&a, 1234, 0, &seed, u, &un);
	fill(&b, 700, 50000, &seed, u, &un);
	fill(&c, 1, 3000000, &seed, u, &un);
	/* computed first (sorted in place), as the engine does */
	{
		struct evr_lat_stats r;

		evr__lat_compute(&b, &r);
	}
	ck_assert_int_eq(evr__lat_merge(&a, &b), 0);
	ck_assert_int_eq(evr__lat_merge(&a, &c), 0);
	ck_assert_ptr_null(a.hist);
	ck_assert_uint_eq(a.n, 1935);
	/* src untouched */
	ck_assert_uint_eq(b.count, 700);
	ck_assert_uint_eq(b.n, 700);
	check_union(&a, u, un, 1);
	evr__lat_free(&a);
	evr__lat_free(&b);
	evr__lat_free(&c);
}
END_TEST

/* Into an empty one, and an empty one in: nothing changes. */
START_TEST(test_merge_empty)
{
	struct evr_latstats a, b;
	struct evr_lat_stats r;
	static uint64_t u[100];
	size_t un = 0;
	uint64_t seed = 3;

	evr__lat_init(&a);
	evr__lat_init(&b);
	ck_assert_int_eq(evr__lat_merge(&a, &b), 0);
	evr__lat_compute(&a, &r);
	ck_assert_uint_eq(r.samples, 0);
	fill(&b, 100, 0, &seed, u, &un);
	ck_assert_int_eq(evr__lat_merge(&a, &b), 0);
	evr__lat_reset(&b);
	ck_assert_int_eq(evr__lat_merge(&a, &b), 0);
	check_union(&a, u, un, 1);
	evr__lat_free(&a);
	evr__lat_free(&b);
}
END_TEST

/* Two exact sets whose union passes the cap: the histogram. */
START_TEST(test_merge_exact_overflow)
{
	struct evr_latstats a, b;
	static uint64_t u[1200];
	size_t un = 0;
	uint64_t seed = 11;

	evr__lat_init(&a);
	evr__lat_init(&b);
	a.exact_max = b.exact_max = 1000;
	fill(&a, 600, 0, &seed, u, &un);
	fill(&b, 600, 100000, &seed, u, &un);
	ck_assert_ptr_null(a.hist);
	ck_assert_ptr_null(b.hist);
	ck_assert_int_eq(evr__lat_merge(&a, &b), 0);
	ck_assert_ptr_nonnull(a.hist);
	ck_assert_ptr_null(a.v);
	check_union(&a, u, un, 0);
	evr__lat_free(&a);
	evr__lat_free(&b);
}
END_TEST

/* exact into histogram, and histogram into exact */
START_TEST(test_merge_exact_hist)
{
	struct evr_latstats e, h, e2, h2;
	static uint64_t u[6000], u2[6000];
	size_t un = 0, un2 = 0;
	uint64_t seed = 19, seed2 = 19;

	evr__lat_init(&e);
	evr__lat_init(&h);
	h.exact_max = 1000;
	fill(&h, 4000, 0, &seed, u, &un);
	fill(&e, 500, 20000000, &seed, u, &un);
	ck_assert_ptr_nonnull(h.hist);
	ck_assert_ptr_null(e.hist);
	ck_assert_int_eq(evr__lat_merge(&h, &e), 0);
	check_union(&h, u, un, 0);

	/* the same samples the other way round */
	evr__lat_init(&e2);
	evr__lat_init(&h2);
	h2.exact_max = 1000;
	fill(&h2, 4000, 0, &seed2, u2, &un2);
	fill(&e2, 500, 20000000, &seed2, u2, &un2);
	ck_assert_int_eq(evr__lat_merge(&e2, &h2), 0);
	ck_assert_ptr_nonnull(e2.hist);
	check_union(&e2, u2, un2, 0);
	evr__lat_free(&e);
	evr__lat_free(&h);
	evr__lat_free(&e2);
	evr__lat_free(&h2);
}
END_TEST

START_TEST(test_merge_hist_hist)
{
	struct evr_latstats a, b;
	static uint64_t u[9000];
	size_t un = 0;
	uint64_t seed = 23;

	evr__lat_init(&a);
	evr__lat_init(&b);
	a.exact_max = b.exact_max = 1000;
	fill(&a, 5000, 0, &seed, u, &un);
	/* b's samples sit higher: the union's tail is b's */
	fill(&b, 4000, 20000000, &seed, u, &un);
	ck_assert_ptr_nonnull(a.hist);
	ck_assert_ptr_nonnull(b.hist);
	ck_assert_int_eq(evr__lat_merge(&a, &b), 0);
	check_union(&a, u, un, 0);
	evr__lat_free(&a);
	evr__lat_free(&b);
}
END_TEST

/* Many connections into one: memory stays at the cap, then one
 * histogram, however many come in. */
START_TEST(test_merge_bounded)
{
	struct evr_latstats m, c;
	static uint64_t u[200 * 37];
	size_t un = 0;
	uint64_t seed = 31;
	unsigned k;

	evr__lat_init(&m);
	m.exact_max = 1000;
	for (k = 0; k < 200; k++) {
		evr__lat_init(&c);
		fill(&c, 37, k * 1000, &seed, u, &un);
		ck_assert_int_eq(evr__lat_merge(&m, &c), 0);
		ck_assert_uint_le(m.cap, m.exact_max);
		if (k < 27)
			ck_assert_ptr_null(m.hist); /* 27 x 37 = 999 */
		else
			ck_assert_ptr_nonnull(m.hist);
		evr__lat_free(&c);
	}
	ck_assert_ptr_null(m.v);
	check_union(&m, u, un, 0);
	evr__lat_free(&m);
}
END_TEST

/* Percentiles by selection against a full sort, on the shapes that make
 * a naive quickselect quadratic or wrong: sorted, reversed, all equal,
 * two values, organ pipe, few distinct values, and random. */
START_TEST(test_select_shapes)
{
	static const unsigned pm[4] = { 500, 900, 990, 999 };
	const size_t n = 100003;
	uint64_t *v = malloc(n * sizeof(*v)), seed = 5;
	struct evr_latstats l;
	struct evr_lat_stats r;
	unsigned shape, i;
	size_t j;

	ck_assert_ptr_nonnull(v);
	for (shape = 0; shape < 7; shape++) {
		uint64_t got[4];

		evr__lat_init(&l);
		for (j = 0; j < n; j++) {
			uint64_t x;

			switch (shape) {
			case 0: x = j; break;
			case 1: x = n - j; break;
			case 2: x = 777; break;
			case 3: x = j & 1 ? 10 : 20; break;
			case 4: x = j < n / 2 ? j : n - j; break;
			case 5: x = rng(&seed) % 4; break;
			default: x = rng(&seed); break;
			}
			v[j] = x;
			ck_assert_int_eq(evr__lat_add(&l, x), 0);
		}
		evr__lat_compute(&l, &r);
		qsort(v, n, sizeof(*v), cmp_u64);
		got[0] = r.p50_ns; got[1] = r.p90_ns;
		got[2] = r.p99_ns; got[3] = r.p999_ns;
		for (i = 0; i < 4; i++)
			ck_assert_msg(got[i] == v[(n * pm[i] + 999) / 1000 - 1],
				      "shape %u p%u: %llu, sorted %llu", shape,
				      pm[i], (unsigned long long)got[i],
				      (unsigned long long)v[(n * pm[i] + 999) /
							    1000 - 1]);
		ck_assert_uint_eq(r.min_ns, v[0]);
		ck_assert_uint_eq(r.max_ns, v[n - 1]);
		evr__lat_free(&l);
	}
	free(v);
}
END_TEST

/* evr_result_lat_walk() over a result's samples. */
struct walk {
	uint64_t n, calls, last_hi;
	long double sum_lo;
	int ascending;
	uint64_t in_range; /* samples of probe_v found in a range */
	uint64_t probe_v;
};

static void walk_cb(void *ud, uint64_t lo, uint64_t hi, uint64_t n)
{
	struct walk *w = ud;

	ck_assert_uint_le(lo, hi);
	ck_assert_uint_ge(n, 1);
	if (w->calls && lo <= w->last_hi)
		w->ascending = 0;
	w->last_hi = hi;
	w->calls++;
	w->n += n;
	w->sum_lo += (long double)lo * n;
	if (lo <= w->probe_v && w->probe_v <= hi)
		w->in_range += n;
}

/* Exact samples: each once, as it is. */
START_TEST(test_walk_exact)
{
	static const uint64_t v[5] = { 500, 100, 300, 100, 900 };
	struct evr_latstats l;
	struct evr_lat_stats res;
	struct evr_result r = { 0 };
	struct walk w = { .probe_v = 100 };

	evr__lat_init(&l);
	add_all(&l, v, 5);
	evr__lat_compute(&l, &res);  /* reorders them: the walk still holds */
	r.lat = &res;
	r.lat_samples = &l;
	ck_assert_uint_eq(evr_result_lat_walk(&r, walk_cb, &w), 5);
	ck_assert_uint_eq(w.calls, 5);
	ck_assert_uint_eq(w.n, 5);
	ck_assert(w.sum_lo == 1900);
	ck_assert_uint_eq(w.in_range, 2);
	/* no lat (opts.percentiles off): nothing */
	r.lat = NULL;
	w.calls = 0;
	ck_assert_uint_eq(evr_result_lat_walk(&r, walk_cb, &w), 0);
	ck_assert_uint_eq(w.calls, 0);
	evr__lat_free(&l);
}
END_TEST

/* Past the cap, the histogram's buckets: ascending, disjoint, each
 * holding its samples, all of them counted. */
START_TEST(test_walk_hist)
{
	struct evr_latstats l;
	struct evr_lat_stats res;
	struct evr_result r = { 0 };
	struct walk w = { .ascending = 1, .probe_v = 25000 };
	uint64_t i, n25 = 0, x;

	evr__lat_init(&l);
	l.exact_max = 1000;
	for (i = 0; i < 5000; i++) {
		x = 20000 + (i * 7919u) % 10000u; /* 20 to 30 us */
		if (evr__lat_bucket(x) == evr__lat_bucket(25000))
			n25++;
		ck_assert_int_eq(evr__lat_add(&l, x), 0);
	}
	ck_assert_ptr_nonnull(l.hist);
	evr__lat_compute(&l, &res);
	r.lat = &res;
	r.lat_samples = &l;
	ck_assert_uint_eq(evr_result_lat_walk(&r, walk_cb, &w), 5000);
	ck_assert_uint_eq(w.n, 5000);
	ck_assert_int_eq(w.ascending, 1);
	ck_assert_uint_gt(w.calls, 10);
	ck_assert_uint_lt(w.calls, 1000);
	ck_assert_uint_eq(w.in_range, n25);
	ck_assert_uint_gt(n25, 0);
	/* the buckets' lower bounds: within 0.4 % of the true total */
	ck_assert(w.sum_lo <= l.sum && w.sum_lo >= l.sum * (1 - 1 / 256.0));
	evr__lat_free(&l);
}
END_TEST

/* ---- a round trip in its parts (latsplit.h) ---- */

static void walk_count(void *ud, uint64_t lo, uint64_t hi, uint64_t n)
{
	uint64_t *sum = ud;

	ck_assert_uint_eq(lo, hi);
	sum[0] += n;
	sum[1] += lo * n;
}

START_TEST(test_split_parts)
{
	struct evr_latsplit sp, agg;
	struct evr_result r;
	uint64_t w[2] = { 0, 0 };

	evr__split_init(&sp);
	/* rtt 100: hold 30, local 20 -> net 50; no local known: net 70 */
	ck_assert_int_eq(evr__split_add(&sp, 100, 30, 1, 20), 0);
	ck_assert_int_eq(evr__split_add(&sp, 100, 30, 0, 999), 0);
	/* parts that do not fit: left out of all three */
	ck_assert_int_eq(evr__split_add(&sp, 100, 101, 1, 0), 1);
	ck_assert_int_eq(evr__split_add(&sp, 100, 60, 1, 41), 1);
	ck_assert_int_eq(evr__split_add(&sp, 100, UINT64_MAX, 1, 2), 1);
	ck_assert_int_eq(evr__split_add(&sp, 100, 2, 1, UINT64_MAX), 1);
	/* exactly the round trip: a net of 0 */
	ck_assert_int_eq(evr__split_add(&sp, 100, 60, 1, 40), 0);
	evr__split_compute(&sp);
	ck_assert_uint_eq(sp.res.rejected, 4);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_NET].samples, 3);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_NET].min_ns, 0);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_NET].p50_ns, 50);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_NET].max_ns, 70);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_PEER].samples, 3);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_LOCAL].samples, 2);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_LOCAL].max_ns, 40);

	/* the public walk, over one part */
	memset(&r, 0, sizeof(r));
	ck_assert_uint_eq(evr_result_split_walk(&r, EVR_SPLIT_NET, walk_count,
						w), 0);
	r.split = &sp.res;
	r.split_samples = &sp;
	ck_assert_uint_eq(evr_result_split_walk(&r, EVR_SPLIT_NET, walk_count,
						w), 3);
	ck_assert_uint_eq(w[0], 3);
	ck_assert_uint_eq(w[1], 120);
	ck_assert_uint_eq(evr_result_split_walk(&r, EVR_SPLIT_PARTS,
						walk_count, w), 0);

	/* an aggregate: both connections' samples and rejections */
	evr__split_init(&agg);
	ck_assert_int_eq(evr__split_merge(&agg, &sp), 0);
	ck_assert_int_eq(evr__split_merge(&agg, &sp), 0);
	evr__split_compute(&agg);
	ck_assert_uint_eq(agg.res.rejected, 8);
	ck_assert_uint_eq(agg.res.part[EVR_SPLIT_PEER].samples, 6);
	ck_assert_uint_eq(agg.res.part[EVR_SPLIT_LOCAL].samples, 4);

	/* reset: a new test starts empty */
	evr__split_reset(&sp);
	evr__split_compute(&sp);
	ck_assert_uint_eq(sp.res.rejected, 0);
	ck_assert_uint_eq(sp.res.part[EVR_SPLIT_NET].samples, 0);
	evr__split_free(&sp);
	evr__split_free(&agg);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("latstats");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_one_sample);
	tcase_add_test(tc, test_all_equal);
	tcase_add_test(tc, test_nearest_rank_1000);
	tcase_add_test(tc, test_nearest_rank_small);
	tcase_add_test(tc, test_bucket_bounds);
	tcase_add_test(tc, test_histogram_error);
	tcase_add_test(tc, test_reset);
	tcase_add_test(tc, test_format);
	tcase_add_test(tc, test_walk_exact);
	tcase_add_test(tc, test_walk_hist);
	tcase_add_test(tc, test_split_parts);
	suite_add_tcase(s, tc);
	tc = tcase_create("merge");
	tcase_add_test(tc, test_merge_exact_exact);
	tcase_add_test(tc, test_merge_empty);
	tcase_add_test(tc, test_merge_exact_overflow);
	tcase_add_test(tc, test_merge_exact_hist);
	tcase_add_test(tc, test_merge_hist_hist);
	tcase_add_test(tc, test_merge_bounded);
	tcase_add_test(tc, test_select_shapes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
