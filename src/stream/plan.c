/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"

/*
 * Upstream's table: 64, then for k = 7..22 the pair 2^k, 2^k + 2^(k-1).
 * The default run takes 64, 4k, 64k and 1m; -S all takes all 33.
 */
uint32_t evr__size_table(unsigned i, int *in_default)
{
	uint32_t size;

	if (i == 0) {
		size = 64;
	} else {
		unsigned k = 7 + (i - 1) / 2;

		size = 1u << k;
		if ((i - 1) & 1)
			size += 1u << (k - 1);
	}
	if (in_default)
		*in_default = size == 64 || size == 4096 || size == 65536 ||
			      size == 1048576;
	return size;
}

uint32_t evr__size_to_count(uint32_t size)
{
	if (size >= (1u << 20))
		return 100;
	if (size >= (1u << 16))
		return 1000;
	if (size >= (1u << 10))
		return 10000;
	return 100000;
}

void evr_size_str(char *out, size_t len, long long size)
{
	long long base, fraction = 0;
	const char *mag;

	if (size >= (1LL << 30)) {
		base = 1LL << 30;
		mag = "g";
	} else if (size >= (1LL << 20)) {
		base = 1LL << 20;
		mag = "m";
	} else if (size >= (1LL << 10)) {
		base = 1LL << 10;
		mag = "k";
	} else {
		base = 1;
		mag = "";
	}
	if (size / base < 10)
		fraction = (size % base) * 10 / base;
	if (fraction)
		snprintf(out, len, "%lld.%lld%s", size / base, fraction, mag);
	else
		snprintf(out, len, "%lld%s", size / base, mag);
}

void evr_count_str(char *out, size_t len, long long cnt)
{
	if (cnt >= 1000000000LL)
		snprintf(out, len, "%lldb", cnt / 1000000000LL);
	else if (cnt >= 1000000LL)
		snprintf(out, len, "%lldm", cnt / 1000000LL);
	else if (cnt >= 1000LL)
		snprintf(out, len, "%lldk", cnt / 1000LL);
	else
		snprintf(out, len, "%lld", cnt);
}

void evr__test_init(struct evr_test *t, enum evr_test_kind kind,
		    uint32_t size, uint32_t count, uint32_t iters)
{
	char s[5]; /* upstream's 5-byte buffer: labels are at most 4 chars */

	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->size = size;
	switch (kind) {
	case EVR_TEST_LAT:
		evr_size_str(s, sizeof(s), size);
		snprintf(t->name, sizeof(t->name), "%s_lat", s);
		t->count = 1;
		t->iters = evr__size_to_count(size);
		break;
	case EVR_TEST_BW:
		evr_size_str(s, sizeof(s), size);
		snprintf(t->name, sizeof(t->name), "%s_bw", s);
		t->count = evr__size_to_count(size);
		t->iters = 1;
		break;
	default:
		snprintf(t->name, sizeof(t->name), "custom");
		t->count = count;
		t->iters = iters;
		break;
	}
}

static void plan_series(struct evr_conn_plan *cp, enum evr_test_kind kind,
			int all)
{
	unsigned i;

	cp->opt = kind == EVR_TEST_LAT ? EVR_OPT_LATENCY : EVR_OPT_BANDWIDTH;
	cp->ntests = 0;
	for (i = 0; i < EVR_SIZE_TABLE_LEN; i++) {
		int in_default;
		uint32_t size = evr__size_table(i, &in_default);

		if (all || in_default)
			evr__test_init(&cp->tests[cp->ntests++], kind, size, 0, 0);
	}
}

int evr__plan_build(struct evr_plan *p, const struct evr_stream_opts *o)
{
	memset(p, 0, sizeof(*p));
	if (o->custom) {
		if (!o->size || o->size > EVR_MAX_XFER_SIZE || !o->count ||
		    o->count > EVR_MAX_COUNT || !o->iters ||
		    o->iters > EVR_MAX_COUNT)
			return -EINVAL;
		p->nconns = 1;
		p->conns[0].opt = EVR_OPT_MIXED;
		p->conns[0].ntests = 1;
		evr__test_init(&p->conns[0].tests[0], EVR_TEST_CUSTOM, o->size,
			       o->count, o->iters);
		return 0;
	}
	p->nconns = 2;
	plan_series(&p->conns[0], EVR_TEST_LAT, o->size_all);
	plan_series(&p->conns[1], EVR_TEST_BW, o->size_all);
	return 0;
}

uint32_t evr__conn_plan_max_size(const struct evr_conn_plan *cp)
{
	uint32_t max = 16; /* the sync message */
	unsigned i;

	for (i = 0; i < cp->ntests; i++)
		if (cp->tests[i].size > max)
			max = cp->tests[i].size;
	return max;
}

uint64_t evr__test_bytes(const struct evr_test *t)
{
	return (uint64_t)t->iters * t->count * t->size * 2;
}
