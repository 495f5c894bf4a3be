/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Latency percentiles (--percentiles): nearest rank on exact samples, and
 * the log-linear histogram's error bound beyond the exact cap.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

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
