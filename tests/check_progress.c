/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * rstream's progress lines (src/cli/progress.c): -c N's connections'
 * reports of one tick make one line, at that tick's time, and a
 * connection whose test is over keeps its count in the sums.  Fed
 * reports by hand; the lines read back from a memory stream.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/progress.h"

static char *out;
static size_t outlen;
static FILE *f;
static struct progress_out po;

static void setup(void)
{
	f = open_memstream(&out, &outlen);
	ck_assert_ptr_nonnull(f);
	progress_init(&po, f, 0);
}

static void teardown(void)
{
	progress_free(&po);
	fclose(f);
	free(out);
	out = NULL;
}

/* Connection k (of n) reports iters of total at t seconds. */
static void report(unsigned k, unsigned n, double t, unsigned iters,
		   unsigned total)
{
	struct evr_progress p;

	memset(&p, 0, sizeof(p));
	p.conn_id = k;
	p.conn_index = k;
	p.conn_total = n;
	p.test = "custom";
	p.elapsed_ns = (uint64_t)(t * 1e9);
	p.iters_done = iters;
	p.iters_total = total;
	p.gbps = 0.5;
	progress_print(&po, &p);
}

/* Connection k's result: its test is over after iters. */
static void done(unsigned k, unsigned iters)
{
	struct evr_result r;

	memset(&r, 0, sizeof(r));
	r.name = "custom";
	r.conn_index = k;
	r.iters = iters;
	progress_conn_done(&po, &r);
}

static void assert_lines(const char *want)
{
	fflush(f);
	ck_assert_str_eq(out, want);
}

/* One connection finishes first: the next lines come at their own tick
 * with its count kept (rstream printed the previous tick's sums under
 * the next tick's time, the finished connection dropped: 5118/24000,
 * then 2360/16000). */
START_TEST(test_finished_conn_counts)
{
	report(1, 3, 1.0, 10, 100);
	report(2, 3, 1.0, 11, 100);
	report(3, 3, 1.0, 12, 100);
	done(1, 100);
	report(2, 3, 2.0, 50, 100);
	report(3, 3, 2.0, 55, 100);
	report(2, 3, 3.0, 70, 100);
	report(3, 3, 3.0, 80, 100);
	assert_lines("[   1.0s] custom 3 conns 33/300 iters 1.50 Gb/s\n"
		     "[   2.0s] custom 3 conns 205/300 iters 1.00 Gb/s\n"
		     "[   3.0s] custom 3 conns 250/300 iters 1.00 Gb/s\n");
}
END_TEST

/* A connection that reports again before the others (its peer slow to
 * report) ends the round: the line carries the round's time, not the
 * new report's. */
START_TEST(test_round_keeps_its_time)
{
	report(1, 2, 1.0, 10, 100);
	report(1, 2, 2.0, 20, 100);
	report(2, 2, 2.1, 21, 100);
	assert_lines("[   1.0s] custom 1 conns 10/100 iters 0.50 Gb/s\n"
		     "[   2.1s] custom 2 conns 41/200 iters 1.00 Gb/s\n");
}
END_TEST

/* The last connection still running: its round needs only itself. */
START_TEST(test_last_one_alone)
{
	report(1, 2, 1.0, 10, 100);
	done(2, 100);
	report(1, 2, 2.0, 30, 100);
	assert_lines("[   1.0s] custom 2 conns 110/200 iters 0.50 Gb/s\n"
		     "[   2.0s] custom 2 conns 130/200 iters 0.50 Gb/s\n");
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *su = suite_create("progress");
	TCase *tc = tcase_create("rounds");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_finished_conn_counts);
	tcase_add_test(tc, test_round_keeps_its_time);
	tcase_add_test(tc, test_last_one_alone);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(progress_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
