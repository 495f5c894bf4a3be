/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The kernel's RDMA netlink monitor messages (loop/nlmon.c): the input is
 * one datagram as the socket would hand it over.  What is parsed is
 * within its bounds (a known kind or OTHER, names NUL-terminated within
 * theirs), no more events than asked for, the same with fewer asked for,
 * and what the events say, built again into a datagram, parses to the
 * same events.
 */
#include "config.h"

#include <linux/netlink.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "loop/nlmon.h"

#define MAXEV 8

/* the events back into a datagram, as the kernel would send them */
static size_t build(uint8_t *b, size_t cap, const struct evr__nlmon_event *e,
		    int n)
{
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++) {
		struct nlmsghdr h = { .nlmsg_type = (5 << 10) + 28 };
		size_t start = len;
		struct {
			uint16_t type;
			const void *p;
			size_t n;
		} at[3];
		uint8_t kind = (uint8_t)(e[i].kind == EVR__NLMON_OTHER ?
					 200 : e[i].kind);
		int k, na = 0;

		at[na].type = 102;
		at[na].p = &kind;
		at[na++].n = 1;
		if (e[i].dev[0]) {
			at[na].type = 2;
			at[na].p = e[i].dev;
			at[na++].n = strlen(e[i].dev) + 1;
		}
		if (e[i].netdev[0]) {
			at[na].type = 51;
			at[na].p = e[i].netdev;
			at[na++].n = strlen(e[i].netdev) + 1;
		}
		FUZZ_CHECK(len + sizeof(h) <= cap);
		memcpy(b + len, &h, sizeof(h));
		len += sizeof(h);
		for (k = 0; k < na; k++) {
			struct nlattr a = {
				.nla_len = (uint16_t)(sizeof(a) + at[k].n),
				.nla_type = at[k].type };

			FUZZ_CHECK(len + sizeof(a) + at[k].n + 3 <= cap);
			memcpy(b + len, &a, sizeof(a));
			memcpy(b + len + sizeof(a), at[k].p, at[k].n);
			len += NLA_ALIGN(sizeof(a) + at[k].n);
		}
		h.nlmsg_len = (uint32_t)(len - start);
		memcpy(b + start, &h, sizeof(h));
	}
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr__nlmon_event e[MAXEV], e1[1], e2[MAXEV];
	static uint8_t again[MAXEV * 256];
	int r, r1, r2, i;
	size_t n;

	memset(e, 0xa5, sizeof(e));
	r = evr__nlmon_parse(data, size, e, MAXEV);
	FUZZ_CHECK(r >= -1 && r <= MAXEV);
	r1 = evr__nlmon_parse(data, size, e1, 1);
	/* the later messages' lengths are checked whatever is asked for;
	 * a malformed monitor message beyond what was asked for is not read */
	FUZZ_CHECK(r < 0 ? r1 == -1 || r1 == 1 : r1 == (r > 0 ? 1 : 0));
	if (r <= 0)
		return 0;
	for (i = 0; i < r; i++) {
		FUZZ_CHECK((unsigned)e[i].kind <= EVR__NLMON_OTHER);
		FUZZ_CHECK(memchr(e[i].dev, 0, sizeof(e[i].dev)));
		FUZZ_CHECK(memchr(e[i].netdev, 0, sizeof(e[i].netdev)));
	}
	FUZZ_CHECK(e1[0].kind == e[0].kind && !strcmp(e1[0].dev, e[0].dev) &&
		   !strcmp(e1[0].netdev, e[0].netdev));
	n = build(again, sizeof(again), e, r);
	r2 = evr__nlmon_parse(again, n, e2, MAXEV);
	FUZZ_CHECK(r2 == r);
	for (i = 0; i < r; i++)
		FUZZ_CHECK(e2[i].kind == e[i].kind &&
			   !strcmp(e2[i].dev, e[i].dev) &&
			   !strcmp(e2[i].netdev, e[i].netdev));
	return 0;
}
