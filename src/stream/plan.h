/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Test plans: which tests run on which connection, with upstream rstream's
 * size table, counts and labels.
 */
#ifndef EVR_SRC_PLAN_H
#define EVR_SRC_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "evrdma/stream.h"

#define EVR_SIZE_TABLE_LEN 33
#define EVR_PLAN_MAX_TESTS 64
#define EVR_PLAN_MAX_CONNS 2

enum evr_test_kind {
	EVR_TEST_CUSTOM = 0,
	EVR_TEST_LAT = 1,
	EVR_TEST_BW = 2,
};

/* Which rsocket optimisation a connection is opened with (upstream's
 * opt_mixed / opt_latency / opt_bandwidth). */
enum evr_conn_opt {
	EVR_OPT_MIXED = 0,
	EVR_OPT_LATENCY,
	EVR_OPT_BANDWIDTH,
};

struct evr_test {
	char name[16];
	uint32_t size;
	uint32_t count;   /* transfers per iteration, each way */
	uint32_t iters;
	uint8_t kind;
	uint8_t flags;    /* EVR_TEST_F_*: what the plan entry asks */
};

/* A test's flags (its plan entry's byte 13, wire.h) */
#define EVR_TEST_F_HOLD 0x01 /* the server says its hold in each echo */

struct evr_conn_plan {
	enum evr_conn_opt opt;
	unsigned ntests;
	struct evr_test tests[EVR_PLAN_MAX_TESTS];
};

struct evr_plan {
	unsigned nconns;
	struct evr_conn_plan conns[EVR_PLAN_MAX_CONNS];
};

/* The i-th entry of upstream's 33-size table, and whether the default run
 * (as opposed to -S all) selects it. */
uint32_t evr__size_table(unsigned i, int *in_default);
/* upstream size_to_count(): 100 / 1000 / 10000 / 100000. */
uint32_t evr__size_to_count(uint32_t size);
/* upstream size_str() and cnt_str() are public: evr_size_str(),
 * evr_count_str() (evrdma/stream.h). */

/* Fill t as upstream's init_latency_test/init_bandwidth_test or custom. */
void evr__test_init(struct evr_test *t, enum evr_test_kind kind,
		    uint32_t size, uint32_t count, uint32_t iters);
/* Build the plan for the given options.  Returns 0 or -EINVAL. */
int evr__plan_build(struct evr_plan *p, const struct evr_stream_opts *o);
/* The largest transfer size of a connection's tests (its buffer size). */
uint32_t evr__conn_plan_max_size(const struct evr_conn_plan *cp);
/* Bytes one test moves, both directions, as upstream computes it. */
uint64_t evr__test_bytes(const struct evr_test *t);

#endif
