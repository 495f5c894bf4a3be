/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Test plans: upstream rstream's size table, size_to_count(), size_str(),
 * cnt_str(), test names and the plans built from the options.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/plan.h"

/* upstream's test_size[] with its option column (0 = default set) */
static const struct {
	uint32_t size;
	int in_default;
} upstream_sizes[EVR_SIZE_TABLE_LEN] = {
	{ 64, 1 },       { 128, 0 },      { 192, 0 },      { 256, 0 },
	{ 384, 0 },      { 512, 0 },      { 768, 0 },      { 1024, 0 },
	{ 1536, 0 },     { 2048, 0 },     { 3072, 0 },     { 4096, 1 },
	{ 6144, 0 },     { 8192, 0 },     { 12288, 0 },    { 16384, 0 },
	{ 24576, 0 },    { 32768, 0 },    { 49152, 0 },    { 65536, 1 },
	{ 98304, 0 },    { 131072, 0 },   { 196608, 0 },   { 262144, 0 },
	{ 393216, 0 },   { 524288, 0 },   { 786432, 0 },   { 1048576, 1 },
	{ 1572864, 0 },  { 2097152, 0 },  { 3145728, 0 },  { 4194304, 0 },
	{ 6291456, 0 },
};

/* The names -S all prints, in table order [obs]. */
static const char *const all_labels[EVR_SIZE_TABLE_LEN] = {
	"64", "128", "192", "256", "384", "512", "768", "1k", "1.5k", "2k",
	"3k", "4k", "6k", "8k", "12k", "16k", "24k", "32k", "48k", "64k",
	"96k", "128k", "192k", "256k", "384k", "512k", "768k", "1m", "1.5m",
	"2m", "3m", "4m", "6m",
};

static void custom_opts(struct evr_stream_opts *o, uint32_t size,
			uint32_t count, uint32_t iters)
{
	memset(o, 0, sizeof(*o));
	o->custom = 1;
	o->size = size;
	o->count = count;
	o->iters = iters;
}

/* ---- the size table ---- */

START_TEST(test_size_table_values)
{
	unsigned i;

	ck_assert_uint_eq(EVR_SIZE_TABLE_LEN, 33);
	for (i = 0; i < EVR_SIZE_TABLE_LEN; i++) {
		int def = -1;

		ck_assert_msg(evr__size_table(i, &def) == upstream_sizes[i].size,
			      "entry %u: %u, expected %u", i,
			      evr__size_table(i, NULL), upstream_sizes[i].size);
		ck_assert_msg(def == upstream_sizes[i].in_default,
			      "entry %u (%u): in_default %d", i,
			      upstream_sizes[i].size, def);
	}
}
END_TEST

START_TEST(test_size_table_defaults)
{
	unsigned i, n = 0;
	uint32_t got[4] = { 0 };

	for (i = 0; i < EVR_SIZE_TABLE_LEN; i++) {
		int def = 0;
		uint32_t size = evr__size_table(i, &def);

		if (def) {
			ck_assert_uint_lt(n, 4);
			got[n++] = size;
		}
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(got[0], 64);
	ck_assert_uint_eq(got[1], 4096);
	ck_assert_uint_eq(got[2], 65536);
	ck_assert_uint_eq(got[3], 1048576);
}
END_TEST

START_TEST(test_size_table_increasing)
{
	unsigned i;

	/* NULL in_default is allowed; the table is strictly increasing and
	 * ends at upstream's 6 MiB buffer. */
	for (i = 1; i < EVR_SIZE_TABLE_LEN; i++)
		ck_assert_uint_gt(evr__size_table(i, NULL),
				  evr__size_table(i - 1, NULL));
	ck_assert_uint_eq(evr__size_table(EVR_SIZE_TABLE_LEN - 1, NULL),
			  6u << 20);
}
END_TEST

/* ---- size_to_count ---- */

START_TEST(test_size_to_count)
{
	ck_assert_uint_eq(evr__size_to_count(1), 100000);
	ck_assert_uint_eq(evr__size_to_count(64), 100000);
	ck_assert_uint_eq(evr__size_to_count(1023), 100000);
	ck_assert_uint_eq(evr__size_to_count(1024), 10000);
	ck_assert_uint_eq(evr__size_to_count(4096), 10000);
	ck_assert_uint_eq(evr__size_to_count(65535), 10000);
	ck_assert_uint_eq(evr__size_to_count(65536), 1000);
	ck_assert_uint_eq(evr__size_to_count(1048575), 1000);
	ck_assert_uint_eq(evr__size_to_count(1048576), 100);
	ck_assert_uint_eq(evr__size_to_count(6u << 20), 100);
	ck_assert_uint_eq(evr__size_to_count(1u << 30), 100);
}
END_TEST

/* ---- size_str / cnt_str ---- */

static void check_size_str(long long n, const char *want)
{
	char buf[32];

	memset(buf, 'X', sizeof(buf));
	evr_size_str(buf, sizeof(buf), n);
	ck_assert_msg(!strcmp(buf, want), "size_str(%lld) = \"%s\", want \"%s\"",
		      n, buf, want);
}

static void check_cnt_str(long long n, const char *want)
{
	char buf[32];

	memset(buf, 'X', sizeof(buf));
	evr_count_str(buf, sizeof(buf), n);
	ck_assert_msg(!strcmp(buf, want), "cnt_str(%lld) = \"%s\", want \"%s\"",
		      n, buf, want);
}

START_TEST(test_size_str_examples)
{
	check_size_str(64, "64");
	check_size_str(1000, "1000");
	check_size_str(1023, "1023");
	check_size_str(1024, "1k");
	check_size_str(1536, "1.5k");
	check_size_str(1024 * 9 + 1023, "9.9k");   /* truncated, not rounded */
	check_size_str(10 * 1024 + 512, "10k");    /* no fraction at >= 10 */
	check_size_str(12792627, "12m");           /* 12.2 MiB */
	check_size_str(12800000, "12m");
	check_size_str(1048576000, "1000m");
	check_size_str(1567637790, "1.4g");        /* 1.46 GiB */
	check_size_str(1LL << 30, "1g");
	check_size_str(5LL << 30, "5g");
	check_size_str(1048576 + 104857, "1m");    /* 1.09999: .0 is omitted */
	check_size_str(1048576 + 104858, "1.1m");
}
END_TEST

START_TEST(test_size_str_small)
{
	check_size_str(0, "0");
	check_size_str(1, "1");
	check_size_str(9, "9");
	check_size_str(10, "10");
}
END_TEST

START_TEST(test_size_str_table_labels)
{
	unsigned i;

	for (i = 0; i < EVR_SIZE_TABLE_LEN; i++)
		check_size_str(evr__size_table(i, NULL), all_labels[i]);
}
END_TEST

START_TEST(test_size_str_truncates_to_len)
{
	char buf[5];

	/* upstream's 5-byte label buffer */
	evr_size_str(buf, sizeof(buf), 1536);
	ck_assert_str_eq(buf, "1.5k");
	evr_size_str(buf, sizeof(buf), 1048576000);
	ck_assert_str_eq(buf, "1000");
}
END_TEST

START_TEST(test_cnt_str_examples)
{
	check_cnt_str(0, "0");
	check_cnt_str(1, "1");
	check_cnt_str(999, "999");
	check_cnt_str(1000, "1k");
	check_cnt_str(1999, "1k");
	check_cnt_str(10000, "10k");
	check_cnt_str(100000, "100k");
	check_cnt_str(999999, "999k");
	check_cnt_str(1000000, "1m");
	check_cnt_str(999999999, "999m");
	check_cnt_str(1000000000, "1b");
	check_cnt_str(2500000000LL, "2b");
}
END_TEST

/* ---- evr__test_init ---- */

START_TEST(test_test_init_latency)
{
	struct evr_test t;

	memset(&t, 0xa5, sizeof(t));
	evr__test_init(&t, EVR_TEST_LAT, 64, 777, 888);
	ck_assert_str_eq(t.name, "64_lat");
	ck_assert_uint_eq(t.kind, EVR_TEST_LAT);
	ck_assert_uint_eq(t.size, 64);
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.iters, 100000);

	evr__test_init(&t, EVR_TEST_LAT, 1536, 0, 0);
	ck_assert_str_eq(t.name, "1.5k_lat");
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.iters, 10000);

	evr__test_init(&t, EVR_TEST_LAT, 1048576, 0, 0);
	ck_assert_str_eq(t.name, "1m_lat");
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.iters, 100);
}
END_TEST

START_TEST(test_test_init_bandwidth)
{
	struct evr_test t;

	memset(&t, 0xa5, sizeof(t));
	evr__test_init(&t, EVR_TEST_BW, 6u << 20, 5, 5);
	ck_assert_str_eq(t.name, "6m_bw");
	ck_assert_uint_eq(t.kind, EVR_TEST_BW);
	ck_assert_uint_eq(t.size, 6u << 20);
	ck_assert_uint_eq(t.count, 100);
	ck_assert_uint_eq(t.iters, 1);

	evr__test_init(&t, EVR_TEST_BW, 65536, 0, 0);
	ck_assert_str_eq(t.name, "64k_bw");
	ck_assert_uint_eq(t.count, 1000);
	ck_assert_uint_eq(t.iters, 1);

	evr__test_init(&t, EVR_TEST_BW, 64, 0, 0);
	ck_assert_str_eq(t.name, "64_bw");
	ck_assert_uint_eq(t.count, 100000);
	ck_assert_uint_eq(t.iters, 1);
}
END_TEST

START_TEST(test_test_init_custom)
{
	struct evr_test t;

	memset(&t, 0xa5, sizeof(t));
	evr__test_init(&t, EVR_TEST_CUSTOM, 4096, 123, 45);
	ck_assert_str_eq(t.name, "custom");
	ck_assert_uint_eq(t.kind, EVR_TEST_CUSTOM);
	ck_assert_uint_eq(t.size, 4096);
	ck_assert_uint_eq(t.count, 123);
	ck_assert_uint_eq(t.iters, 45);
}
END_TEST

/* ---- evr__plan_build ---- */

static void check_series(const struct evr_conn_plan *cp, enum evr_test_kind k,
			 int all)
{
	const char *suffix = k == EVR_TEST_LAT ? "_lat" : "_bw";
	unsigned i, n = 0;

	ck_assert_int_eq(cp->opt, k == EVR_TEST_LAT ? EVR_OPT_LATENCY :
						      EVR_OPT_BANDWIDTH);
	for (i = 0; i < EVR_SIZE_TABLE_LEN; i++) {
		const struct evr_test *t;
		char name[32];
		uint32_t c;

		if (!all && !upstream_sizes[i].in_default)
			continue;
		ck_assert_uint_lt(n, cp->ntests);
		t = &cp->tests[n++];
		snprintf(name, sizeof(name), "%s%s", all_labels[i], suffix);
		ck_assert_str_eq(t->name, name);
		ck_assert_uint_eq(t->kind, k);
		ck_assert_uint_eq(t->size, upstream_sizes[i].size);
		c = evr__size_to_count(t->size);
		ck_assert_uint_eq(t->count, k == EVR_TEST_LAT ? 1 : c);
		ck_assert_uint_eq(t->iters, k == EVR_TEST_LAT ? c : 1);
	}
	ck_assert_uint_eq(cp->ntests, n);
}

START_TEST(test_plan_default)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	memset(&o, 0, sizeof(o));
	memset(&p, 0xa5, sizeof(p));
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.nconns, 2);
	ck_assert_uint_eq(p.conns[0].ntests, 4);
	ck_assert_uint_eq(p.conns[1].ntests, 4);
	check_series(&p.conns[0], EVR_TEST_LAT, 0);
	check_series(&p.conns[1], EVR_TEST_BW, 0);
	ck_assert_str_eq(p.conns[0].tests[0].name, "64_lat");
	ck_assert_str_eq(p.conns[0].tests[3].name, "1m_lat");
	ck_assert_str_eq(p.conns[1].tests[1].name, "4k_bw");
}
END_TEST

START_TEST(test_plan_default_ignores_unset_values)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	/* Not custom: the size/count/iters fields play no part. */
	memset(&o, 0, sizeof(o));
	o.size = 1000;
	o.count = 0;
	o.iters = 0;
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.nconns, 2);
	ck_assert_uint_eq(p.conns[0].tests[0].size, 64);
}
END_TEST

START_TEST(test_plan_size_all)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	memset(&o, 0, sizeof(o));
	o.size_all = 1;
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.nconns, 2);
	ck_assert_uint_eq(p.conns[0].ntests, 33);
	ck_assert_uint_eq(p.conns[1].ntests, 33);
	check_series(&p.conns[0], EVR_TEST_LAT, 1);
	check_series(&p.conns[1], EVR_TEST_BW, 1);
	ck_assert_str_eq(p.conns[0].tests[0].name, "64_lat");
	ck_assert_str_eq(p.conns[0].tests[8].name, "1.5k_lat");
	ck_assert_str_eq(p.conns[0].tests[32].name, "6m_lat");
	ck_assert_str_eq(p.conns[1].tests[32].name, "6m_bw");
}
END_TEST

START_TEST(test_plan_custom)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	custom_opts(&o, 100, 3, 4);
	memset(&p, 0xa5, sizeof(p));
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.nconns, 1);
	ck_assert_int_eq(p.conns[0].opt, EVR_OPT_MIXED);
	ck_assert_uint_eq(p.conns[0].ntests, 1);
	ck_assert_str_eq(p.conns[0].tests[0].name, "custom");
	ck_assert_uint_eq(p.conns[0].tests[0].kind, EVR_TEST_CUSTOM);
	ck_assert_uint_eq(p.conns[0].tests[0].size, 100);
	ck_assert_uint_eq(p.conns[0].tests[0].count, 3);
	ck_assert_uint_eq(p.conns[0].tests[0].iters, 4);
}
END_TEST

START_TEST(test_plan_custom_wins_over_size_all)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	custom_opts(&o, 1000, 10, 1);
	o.size_all = 1;
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.nconns, 1);
	ck_assert_uint_eq(p.conns[0].ntests, 1);
	ck_assert_str_eq(p.conns[0].tests[0].name, "custom");
	ck_assert_uint_eq(p.conns[0].tests[0].size, 1000);
}
END_TEST

START_TEST(test_plan_custom_limits)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	custom_opts(&o, EVR_MAX_XFER_SIZE, EVR_MAX_COUNT, EVR_MAX_COUNT);
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.conns[0].tests[0].size, 1u << 30);
	ck_assert_uint_eq(p.conns[0].tests[0].count, 1000000000u);
	ck_assert_uint_eq(p.conns[0].tests[0].iters, 1000000000u);

	custom_opts(&o, 1, 1, 1);
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(p.conns[0].tests[0].size, 1);
}
END_TEST

START_TEST(test_plan_custom_invalid)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	custom_opts(&o, 0, 10, 10);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
	custom_opts(&o, 100, 0, 10);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
	custom_opts(&o, 100, 10, 0);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
	custom_opts(&o, (1u << 30) + 1, 10, 10);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
	custom_opts(&o, 0xffffffffu, 10, 10);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
	custom_opts(&o, 100, EVR_MAX_COUNT + 1, 10);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
	custom_opts(&o, 100, 10, EVR_MAX_COUNT + 1);
	ck_assert_int_eq(evr__plan_build(&p, &o), -EINVAL);
}
END_TEST

/* ---- max size and bytes ---- */

START_TEST(test_conn_plan_max_size)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan p;

	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(evr__conn_plan_max_size(&p.conns[0]), 1048576);
	ck_assert_uint_eq(evr__conn_plan_max_size(&p.conns[1]), 1048576);

	o.size_all = 1;
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(evr__conn_plan_max_size(&p.conns[0]), 6u << 20);

	custom_opts(&o, 100000, 1, 1);
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(evr__conn_plan_max_size(&p.conns[0]), 100000);

	/* never below the 16-byte sync message */
	custom_opts(&o, 1, 1, 1);
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	ck_assert_uint_eq(evr__conn_plan_max_size(&p.conns[0]), 16);
	memset(&cp, 0, sizeof(cp));
	ck_assert_uint_eq(evr__conn_plan_max_size(&cp), 16);

	/* the largest, wherever it is */
	memset(&cp, 0, sizeof(cp));
	cp.ntests = 3;
	evr__test_init(&cp.tests[0], EVR_TEST_LAT, 4096, 0, 0);
	evr__test_init(&cp.tests[1], EVR_TEST_CUSTOM, 70000, 1, 1);
	evr__test_init(&cp.tests[2], EVR_TEST_LAT, 64, 0, 0);
	ck_assert_uint_eq(evr__conn_plan_max_size(&cp), 70000);
}
END_TEST

START_TEST(test_test_bytes)
{
	struct evr_test t;

	evr__test_init(&t, EVR_TEST_LAT, 64, 0, 0);
	ck_assert_uint_eq(evr__test_bytes(&t), 12800000ULL); /* "12m" */
	evr__test_init(&t, EVR_TEST_BW, 1048576, 0, 0);
	ck_assert_uint_eq(evr__test_bytes(&t), 209715200ULL);
	evr__test_init(&t, EVR_TEST_CUSTOM, 100, 3, 4);
	ck_assert_uint_eq(evr__test_bytes(&t), 2400ULL);

	/* beyond 32 bits, and beyond 32-bit intermediate products */
	evr__test_init(&t, EVR_TEST_CUSTOM, 1u << 20, 100000, 1);
	ck_assert_uint_eq(evr__test_bytes(&t), 209715200000ULL);
	evr__test_init(&t, EVR_TEST_CUSTOM, 1u << 30, 1000000, 1000);
	ck_assert_uint_eq(evr__test_bytes(&t),
			  2ULL * 1000 * 1000000 * (1ULL << 30));
	evr__test_init(&t, EVR_TEST_CUSTOM, 4000000000u, 3, 5);
	ck_assert_uint_eq(evr__test_bytes(&t), 120000000000ULL);
}
END_TEST

static Suite *plan_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc;

	tc = tcase_create("size_table");
	tcase_add_test(tc, test_size_table_values);
	tcase_add_test(tc, test_size_table_defaults);
	tcase_add_test(tc, test_size_table_increasing);
	tcase_add_test(tc, test_size_to_count);
	suite_add_tcase(s, tc);

	tc = tcase_create("labels");
	tcase_add_test(tc, test_size_str_examples);
	tcase_add_test(tc, test_size_str_small);
	tcase_add_test(tc, test_size_str_table_labels);
	tcase_add_test(tc, test_size_str_truncates_to_len);
	tcase_add_test(tc, test_cnt_str_examples);
	suite_add_tcase(s, tc);

	tc = tcase_create("test_init");
	tcase_add_test(tc, test_test_init_latency);
	tcase_add_test(tc, test_test_init_bandwidth);
	tcase_add_test(tc, test_test_init_custom);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan_build");
	tcase_add_test(tc, test_plan_default);
	tcase_add_test(tc, test_plan_default_ignores_unset_values);
	tcase_add_test(tc, test_plan_size_all);
	tcase_add_test(tc, test_plan_custom);
	tcase_add_test(tc, test_plan_custom_wins_over_size_all);
	tcase_add_test(tc, test_plan_custom_limits);
	tcase_add_test(tc, test_plan_custom_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("sizes");
	tcase_add_test(tc, test_conn_plan_max_size);
	tcase_add_test(tc, test_test_bytes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(plan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
