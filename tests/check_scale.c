/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream -c N: the aggregate of one test over many connections, its row,
 * the option, the failure line naming the connection, and the file
 * descriptor arithmetic behind RLIMIT_NOFILE.
 */
#include "config.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/fdlimit.h"
#include "cli/jsonout.h"
#include "cli/report.h"
#include "cli/rstream_opts.h"
#include "evrdma/stream.h"
#include "stream/agg.h"

/* ---- aggregation ---- */

/* One connection's result as the engine hands it to the aggregate. */
static void add1(struct evr_agg *a, uint64_t start_ns, uint64_t elapsed_ns,
		 uint64_t bytes, uint32_t iters)
{
	struct evr_result r = {
		.start_ns = start_ns, .elapsed_ns = elapsed_ns,
		.bytes = bytes, .iters = iters,
	};

	ck_assert_int_eq(evr__agg_add(a, &r, NULL), 0);
}

START_TEST(test_agg_empty)
{
	struct evr_agg a;
	struct evr_result r;

	evr__agg_init(&a);
	memset(&r, 0, sizeof(r));
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.nconns, 0);
	ck_assert_uint_eq(r.bytes, 0);
	ck_assert_uint_eq(r.iters, 0);
	ck_assert_uint_eq(r.elapsed_ns, 0);
	ck_assert_uint_eq(r.conn_mean_ns, 0);
	ck_assert_double_eq(r.iter_mean_ns, 0.0);
	ck_assert_ptr_null(r.lat);
	evr__agg_fini(&a);
}
END_TEST

/* --mps: the aggregate's rate asked is the connections', its late ones
 * their sum, its latest the largest (rstream(1), --mps); -T n's sleeps
 * summed too */
START_TEST(test_agg_pace)
{
	struct evr_agg a;
	struct evr_result r = { .elapsed_ns = 1000, .iters = 10, .mps = 500 };

	evr__agg_init(&a);
	r.late = 3;
	r.late_max_ns = 7000;
	r.spin_sleeps = 2;
	ck_assert_int_eq(evr__agg_add(&a, &r, NULL), 0);
	r.late = 4;
	r.late_max_ns = 9000;
	ck_assert_int_eq(evr__agg_add(&a, &r, NULL), 0);
	r.late = 0;
	r.late_max_ns = 0;
	r.spin_sleeps = 5;
	ck_assert_int_eq(evr__agg_add(&a, &r, NULL), 0);
	memset(&r, 0, sizeof(r));
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.mps, 500);
	ck_assert_uint_eq(r.late, 7);
	ck_assert_uint_eq(r.late_max_ns, 9000);
	ck_assert_uint_eq(r.spin_sleeps, 9);
	evr__agg_fini(&a);
}
END_TEST

START_TEST(test_agg_wall_and_mean)
{
	struct evr_agg a;
	struct evr_result r;

	evr__agg_init(&a);
	/* three connections, reported out of start order: wall time is
	 * from the earliest start (1000) to the latest end (1000+900 vs
	 * 1500+600=2100 vs 1200+100=1300): 1100 ns */
	add1(&a, 1500, 600, 100, 1);
	add1(&a, 1000, 900, 200, 1);
	add1(&a, 1200, 100, 300, 1);
	memset(&r, 0, sizeof(r));
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.nconns, 3);
	ck_assert_uint_eq(r.bytes, 600);
	ck_assert_uint_eq(r.start_ns, 1000);
	ck_assert_uint_eq(r.elapsed_ns, 1100);
	/* mean of 600, 900, 100 = 533.33, rounded */
	ck_assert_uint_eq(r.conn_mean_ns, 533);
	evr__agg_fini(&a);
}
END_TEST

START_TEST(test_agg_one_and_large)
{
	struct evr_agg a;
	struct evr_result r;
	unsigned i;

	evr__agg_init(&a);
	add1(&a, 5, 10, 7, 1);
	memset(&r, 0, sizeof(r));
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.nconns, 1);
	ck_assert_uint_eq(r.elapsed_ns, 10);
	ck_assert_uint_eq(r.conn_mean_ns, 10);

	/* 100000 connections of 1 GiB each way do not overflow */
	evr__agg_fini(&a);
	for (i = 0; i < 100000; i++)
		add1(&a, 1000000000ULL + i, 3000000000ULL, 2ULL << 30, 1);
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.nconns, 100000);
	ck_assert_uint_eq(r.bytes, 100000ULL * (2ULL << 30));
	ck_assert_uint_eq(r.elapsed_ns, 3000000000ULL + 99999);
	ck_assert_uint_eq(r.conn_mean_ns, 3000000000ULL);
	evr__agg_fini(&a);
}
END_TEST

/* -D: the connections run different numbers of iterations in different
 * times, from different starts.  Every column of the aggregate is the
 * formula rstream(1) gives for it, computed here by hand:
 *   conn  start_ns  elapsed_ns     iters  own ns/iter
 *   1     100       1000000000     1000   1000000
 *   2     300       1200000000      800   1500000
 *   3     200        900000000     1500    600000
 *   4      50       1100000000     1101    999091.73...
 * (64-byte ping-pong: 128 bytes an iteration). */
static void agg_duration(struct evr_agg *a, struct evr_result *r)
{
	evr__agg_init(a);
	add1(a, 100, 1000000000ULL, 128ULL * 1000, 1000);
	add1(a, 300, 1200000000ULL, 128ULL * 800, 800);
	add1(a, 200, 900000000ULL, 128ULL * 1500, 1500);
	add1(a, 50, 1100000000ULL, 128ULL * 1101, 1101);
	memset(r, 0, sizeof(*r));
	r->name = "custom";
	r->size = 64;
	r->count = 1;
	evr__agg_result(a, r);
}

START_TEST(test_agg_duration)
{
	struct evr_agg a;
	struct evr_result r;
	double iter_ns = (1000000.0 + 1500000.0 + 600000.0 +
			  1100000000.0 / 1101) / 4;

	agg_duration(&a, &r);
	ck_assert_uint_eq(r.nconns, 4);
	/* total: the sum of the connections' bytes */
	ck_assert_uint_eq(r.bytes, 128ULL * 4401);
	/* iters: the mean per connection, 4401 / 4 = 1100.25 -> 1100 (not
	 * whichever connection reported last) */
	ck_assert_uint_eq(r.iters, 1100);
	/* time: from the first start (50) to the last end (300 + 1.2 s) */
	ck_assert_uint_eq(r.start_ns, 50);
	ck_assert_uint_eq(r.elapsed_ns, 1200000300ULL - 50);
	ck_assert_uint_eq(r.conn_mean_ns, 1050000000ULL);
	/* the mean of the connections' own time per iteration */
	ck_assert_double_eq_tol(r.iter_mean_ns, iter_ns, 1e-6);
	evr__agg_fini(&a);
}
END_TEST

/* Iterations average to the nearest integer; a fixed count is kept. */
START_TEST(test_agg_iters_rounding)
{
	struct evr_agg a;
	struct evr_result r;
	unsigned i;

	evr__agg_init(&a);
	add1(&a, 0, 10, 1, 3);
	add1(&a, 0, 10, 1, 4);
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.iters, 4); /* 3.5 rounds up */
	add1(&a, 0, 10, 1, 3);
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.iters, 3); /* 3.33 */
	evr__agg_fini(&a);
	for (i = 0; i < 7; i++)
		add1(&a, i, 1000 + i, 1, 100000);
	evr__agg_result(&a, &r);
	ck_assert_uint_eq(r.iters, 100000);
	/* equal counts: the mean of own times = mean time / count */
	ck_assert_double_eq_tol(r.iter_mean_ns, 1003.0 / 100000, 1e-12);
	evr__agg_fini(&a);
}
END_TEST

/* The row and the JSON record of that aggregate: Gb/sec over the wall
 * time, usec/xfer the mean of the connections' own usec/xfer
 * (500, 750, 300 and 499.5459: 512.386..., not 1.05 s / 1101 / 2). */
START_TEST(test_agg_duration_row)
{
	struct evr_agg a;
	struct evr_result r;
	char buf[160];
	json_t *o;
	double own[4] = { 1000000000.0 / 1000 / 2000, 1200000000.0 / 800 / 2000,
			  900000000.0 / 1500 / 2000,
			  1100000000.0 / 1101 / 2000 };
	double mean = (own[0] + own[1] + own[2] + own[3]) / 4;

	agg_duration(&a, &r);
	rstream_format_row(buf, sizeof(buf), &r);
	/* 563328 bytes = 550k; 4506624 bits / 1200000.25 us = 0.00 Gb/s */
	ck_assert_str_eq(buf, "custom    64      1       1k      550k        "
			      "1.20s      0.00     512.39\n");
	o = jo_result(&r);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "iters")),
			 1100);
	ck_assert_int_eq(json_integer_value(json_object_get(o,
			 "total_bytes")), 563328);
	ck_assert_int_eq(json_integer_value(json_object_get(o,
			 "elapsed_ns")), 1200000250);
	ck_assert_double_eq_tol(json_real_value(json_object_get(o,
				"usec_per_xfer")), mean, 1e-9);
	ck_assert_double_eq_tol(json_real_value(json_object_get(o, "gbps")),
				563328 * 8.0 / 1200000250.0, 1e-12);
	ck_assert(!json_object_get(o, "latency"));
	ck_assert(!json_object_get(o, "start_ns"));
	json_decref(o);
	/* start_ns on the run's clock: the first start (50) less its start */
	o = jo_result_since(&r, 30);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "start_ns")),
			 20);
	json_decref(o);
	o = jo_result_since(&r, 51); /* a start before the run: left out */
	ck_assert(!json_object_get(o, "start_ns"));
	json_decref(o);
	evr__agg_fini(&a);
}
END_TEST

/* --percentiles: the aggregate carries the union of the connections'
 * samples; none without samples. */
START_TEST(test_agg_latency)
{
	struct evr_agg a;
	struct evr_result r = { .iters = 1, .elapsed_ns = 1 };
	struct evr_latstats l[3];
	unsigned i, k;

	evr__agg_init(&a);
	/* connection k takes (k + 1) * 100 samples: 1000k + 1 .. */
	for (k = 0; k < 3; k++) {
		evr__lat_init(&l[k]);
		for (i = 0; i < (k + 1) * 100; i++)
			ck_assert_int_eq(evr__lat_add(&l[k], 1000 * k + 1 + i),
					 0);
		ck_assert_int_eq(evr__agg_add(&a, &r, &l[k]), 0);
	}
	evr__agg_result(&a, &r);
	ck_assert_ptr_nonnull(r.lat);
	ck_assert_uint_eq(r.lat->samples, 600);
	ck_assert_uint_eq(r.lat->min_ns, 1);
	ck_assert_uint_eq(r.lat->max_ns, 2300);
	/* sorted union: 1..100, 1001..1200, 2001..2300; rank 300 of 600
	 * is 1200, rank 540 is 2240, rank 594 is 2294, rank 600 is 2300 */
	ck_assert_uint_eq(r.lat->p50_ns, 1200);
	ck_assert_uint_eq(r.lat->p90_ns, 2240);
	ck_assert_uint_eq(r.lat->p99_ns, 2294);
	ck_assert_uint_eq(r.lat->p999_ns, 2300);
	ck_assert_double_eq_tol(r.lat->mean_ns,
				(100 * 50.5 + 200 * 1100.5 + 300 * 2150.5) / 600,
				1e-9);
	for (k = 0; k < 3; k++)
		evr__lat_free(&l[k]);
	evr__agg_fini(&a);
	/* after fini, an aggregate without samples has no distribution */
	add1(&a, 0, 10, 2, 1);
	evr__agg_result(&a, &r);
	ck_assert_ptr_null(r.lat);
	evr__agg_fini(&a);
}
END_TEST

/* ---- rows ---- */

START_TEST(test_row_aggregate)
{
	struct evr_result r = {
		.name = "custom", .size = 64, .count = 10, .iters = 1,
		.nconns = 4, .bytes = 4 * 1280,
		/* wall 2 ms; one connection took 1 ms on average */
		.elapsed_ns = 2000000, .conn_mean_ns = 1000000,
		.iter_mean_ns = 1000000,
	};
	char buf[160];

	rstream_format_row(buf, sizeof(buf), &r);
	/* 5120 bytes: "5k"; 40960 bits / 2000 us = 0.02 Gb/s;
	 * usec/xfer = 1000 us / 1 / 20 = 50.00 (one connection's) */
	ck_assert_str_eq(buf, "custom    64      10      1       5k          "
			      "0.00s      0.02      50.00\n");
}
END_TEST

START_TEST(test_row_per_conn)
{
	struct evr_result r = {
		.name = "64_lat", .size = 64, .count = 1, .iters = 100000,
		.conn_index = 17, .bytes = 12800000,
		.elapsed_ns = 1180000000ULL, .conn_mean_ns = 1180000000ULL,
	};
	char buf[160];

	rstream_format_row(buf, sizeof(buf), &r);
	/* the name takes the connection's number; the columns after it
	 * move right by what it overflows */
	ck_assert_str_eq(buf, "64_lat#17 64      1       100k    12m         "
			      "1.18s      0.09       5.90\n");
	r.name = "64k_lat";
	r.conn_index = 100000;
	rstream_format_row(buf, sizeof(buf), &r);
	ck_assert(!strncmp(buf, "64k_lat#100000 64 ", 18));
}
END_TEST

/* ---- options ---- */

static int parse(struct rstream_cli *cli, int argc, const char **argv,
		 char *err, size_t errlen)
{
	FILE *f = tmpfile();
	int ret;
	size_t n;

	ck_assert_ptr_nonnull(f);
	ret = rstream_parse(argc, (char **)argv, cli, f);
	rewind(f);
	n = fread(err, 1, errlen - 1, f);
	err[n] = 0;
	fclose(f);
	return ret;
}

START_TEST(test_opt_connections)
{
	struct rstream_cli cli;
	char err[512];
	const char *a1[] = { "rstream", "-s", "h", "-c", "100", NULL };
	const char *a2[] = { "rstream", "-s", "h", "--connections", "100000",
			     "--per-conn", NULL };
	const char *a3[] = { "rstream", "-s", "h", NULL };
	const char *a4[] = { "rstream", "-s", "h", "-c", "4", "-T", "v",
			     NULL };

	ck_assert_int_eq(parse(&cli, 5, a1, err, sizeof(err)),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(cli.o.conns, 100);
	ck_assert_int_eq(cli.per_conn, 0);
	ck_assert_int_eq(parse(&cli, 6, a2, err, sizeof(err)),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(cli.o.conns, 100000);
	ck_assert_int_eq(cli.per_conn, 1);
	ck_assert_int_eq(parse(&cli, 3, a3, err, sizeof(err)),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(cli.o.conns, 0);
	/* many verifying connections negotiate */
	ck_assert_int_eq(parse(&cli, 7, a4, err, sizeof(err)),
			 RSTREAM_PARSE_OK);
	ck_assert_int_eq(cli.o.force_negotiate, 1);
}
END_TEST

/* The server's limits: values with suffixes, defaults left as 0 (the
 * engine's), and each one refused on a client. */
START_TEST(test_opt_server_limits)
{
	struct rstream_cli cli;
	char err[512];
	const char *a1[] = { "rstream", "--max-conns", "2", "--max-memory",
			     "3g", "--chunk", "64k", NULL };
	const char *a2[] = { "rstream", NULL };
	static const char *const opts[] = { "--max-conns", "--max-memory",
					    "--chunk" };
	unsigned i;

	ck_assert_int_eq(parse(&cli, 7, a1, err, sizeof(err)),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(cli.o.max_conns, 2);
	ck_assert_uint_eq(cli.o.max_memory, 3ULL << 30);
	ck_assert_uint_eq(cli.o.chunk_size, 64 << 10);
	ck_assert_int_eq(parse(&cli, 1, a2, err, sizeof(err)),
			 RSTREAM_PARSE_OK);
	ck_assert_uint_eq(cli.o.max_conns, 0);
	ck_assert_uint_eq(cli.o.max_memory, 0);
	ck_assert_uint_eq(cli.o.chunk_size, 0);
	for (i = 0; i < 3; i++) {
		const char *a[] = { "rstream", "-s", "h", opts[i], "4096",
				    NULL };

		ck_assert_int_eq(parse(&cli, 5, a, err, sizeof(err)),
				 RSTREAM_PARSE_BAD);
		ck_assert_msg(strstr(err, opts[i]) &&
			      strstr(err, "is a server option"), "%s", err);
	}
}
END_TEST

START_TEST(test_opt_connections_bad)
{
	static const char *const vals[] = { "0", "100001", "-1", "x", "1k",
					    "" };
	struct rstream_cli cli;
	char err[512];
	unsigned i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		const char *a[] = { "rstream", "-s", "h", "-c", vals[i], NULL };

		ck_assert_int_eq(parse(&cli, 5, a, err, sizeof(err)),
				 RSTREAM_PARSE_BAD);
		ck_assert_msg(strstr(err, "connections must be 1 to 100000") &&
			      strchr(err, '\n') == err + strlen(err) - 1,
			      "'%s': %s", vals[i], err);
	}
	{
		const char *a[] = { "rstream", "-c", "2", NULL };

		ck_assert_int_eq(parse(&cli, 3, a, err, sizeof(err)),
				 RSTREAM_PARSE_BAD);
		ck_assert_ptr_nonnull(strstr(err, "client option"));
	}
	{
		const char *a[] = { "rstream", "-s", "h", "-c", "2", "-T", "b",
				    NULL };

		ck_assert_int_eq(parse(&cli, 7, a, err, sizeof(err)),
				 RSTREAM_PARSE_BAD);
		ck_assert_ptr_nonnull(strstr(err, "-T b"));
	}
}
END_TEST

/* ---- the failure line ---- */

START_TEST(test_failure_names_connection)
{
	struct evr_failure f;
	char buf[512];

	memset(&f, 0, sizeof(f));
	f.err = -EVR_E_EOF;
	f.phase = EVR_PH_RECV;
	snprintf(f.test, sizeof(f.test), "custom");
	f.test_total = 1;
	f.iters_total = 10;
	f.xfers_total = 1;
	f.negotiated = 1;
	snprintf(f.peer, sizeof(f.peer), "127.0.0.1:7471");
	f.conn_index = 37;
	f.conn_total = 1000;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert_str_eq(buf, "connection 37 of 1000: 127.0.0.1:7471: test "
			      "custom (1 of 1), receive, iteration 1 of 10, "
			      "transfer 1 of 1: peer closed the connection");
	/* one connection: as before */
	f.conn_total = 0;
	evr_failure_str(&f, buf, sizeof(buf));
	ck_assert(!strncmp(buf, "127.0.0.1:7471: test custom", 27));
}
END_TEST

/* ---- file descriptors ---- */

START_TEST(test_fds_needed)
{
	ck_assert_uint_eq(evr_stream_transport_fds(EVR_TRANSPORT_TCP, 1), 17);
	ck_assert_uint_eq(evr_stream_transport_fds(EVR_TRANSPORT_TCP, 1000), 1016);
	ck_assert_uint_eq(evr_stream_transport_fds(EVR_TRANSPORT_TCP, 100000), 100016);
	/* RDMA: one completion channel per device, none per connection */
	ck_assert_uint_eq(evr_stream_transport_fds(EVR_TRANSPORT_RDMA, 1000), 32);
	ck_assert_uint_eq(evr_stream_transport_fds(EVR_TRANSPORT_RDMA, 10000), 32);
}
END_TEST

START_TEST(test_fdlimit_plan)
{
	struct rlimit cur = { .rlim_cur = 1024, .rlim_max = 4096 }, out;

	/* enough already: nothing changes */
	ck_assert_int_eq(fdlimit_plan(1000, &cur, 0, &out), 0);
	ck_assert_uint_eq(out.rlim_cur, 1024);
	ck_assert_uint_eq(out.rlim_max, 4096);
	/* soft up to hard */
	ck_assert_int_eq(fdlimit_plan(2000, &cur, 0, &out), 0);
	ck_assert_uint_eq(out.rlim_cur, 4096);
	ck_assert_uint_eq(out.rlim_max, 4096);
	ck_assert_int_eq(fdlimit_plan(4096, &cur, 0, &out), 0);
	ck_assert_uint_eq(out.rlim_cur, 4096);
	/* past the hard limit: only when privileged, up to nr_open */
	ck_assert_int_eq(fdlimit_plan(20010, &cur, 0, &out), -1);
	ck_assert_int_eq(fdlimit_plan(20010, &cur, 1048576, &out), 0);
	ck_assert_uint_eq(out.rlim_cur, 20010);
	ck_assert_uint_eq(out.rlim_max, 20010);
	ck_assert_int_eq(fdlimit_plan(2000000, &cur, 1048576, &out), -1);
	/* unlimited */
	cur.rlim_cur = RLIM_INFINITY;
	cur.rlim_max = RLIM_INFINITY;
	ck_assert_int_eq(fdlimit_plan(2000000, &cur, 0, &out), 0);
	ck_assert(out.rlim_cur == RLIM_INFINITY);
	cur.rlim_cur = 64;
	ck_assert_int_eq(fdlimit_plan(2000000, &cur, 0, &out), 0);
	ck_assert(out.rlim_cur == RLIM_INFINITY);
}
END_TEST

static Suite *scale_suite(void)
{
	Suite *s = suite_create("scale");
	TCase *tc;

	tc = tcase_create("aggregate");
	tcase_add_test(tc, test_agg_empty);
	tcase_add_test(tc, test_agg_wall_and_mean);
	tcase_add_test(tc, test_agg_one_and_large);
	tcase_add_test(tc, test_agg_duration);
	tcase_add_test(tc, test_agg_iters_rounding);
	tcase_add_test(tc, test_agg_duration_row);
	tcase_add_test(tc, test_agg_latency);
	tcase_add_test(tc, test_agg_pace);
	tcase_add_test(tc, test_row_aggregate);
	tcase_add_test(tc, test_row_per_conn);
	suite_add_tcase(s, tc);

	tc = tcase_create("cli");
	tcase_add_test(tc, test_opt_connections);
	tcase_add_test(tc, test_opt_connections_bad);
	tcase_add_test(tc, test_opt_server_limits);
	tcase_add_test(tc, test_failure_names_connection);
	tcase_add_test(tc, test_fds_needed);
	tcase_add_test(tc, test_fdlimit_plan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(scale_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
