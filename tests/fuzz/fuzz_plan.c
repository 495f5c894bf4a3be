/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Plan negotiation (wire.c, plan.c): the input as what a server reads
 * after its ACK (a 16-byte PLAN header, then 16-byte entries), and the
 * same bytes as what a client reads for the PLAN reply.  The server's
 * steps are those of session.c's plan_received().  Whatever decodes
 * re-encodes to the same bytes (but for the reserved bytes, which the
 * decoders ignore: entry bytes 13..15, reply bytes 12..15), and decodes
 * again to the same values.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "stream/plan.h"
#include "stream/wire.h"

static void check_test(const struct evr_test *t)
{
	struct evr_test again;
	uint8_t enc[EVR_PLAN_ENTRY_LEN];
	char s[32];

	FUZZ_CHECK(memchr(t->name, '\0', sizeof(t->name)) && t->name[0]);
	FUZZ_CHECK(t->size >= 1 && t->size <= EVR_MAX_XFER_SIZE);
	FUZZ_CHECK(t->count >= 1 && t->count <= EVR_MAX_COUNT);
	FUZZ_CHECK(t->iters >= 1 && t->iters <= EVR_MAX_COUNT);
	evr__plan_entry_encode(enc, t);
	FUZZ_CHECK(evr__plan_entry_decode(enc, &again, EVR_MAX_XFER_SIZE) ==
		   EVR_PLAN_OK);
	FUZZ_CHECK(!memcmp(&again, t, sizeof(again)));
	/* the report's labels for it */
	evr_size_str(s, sizeof(s), t->size);
	FUZZ_CHECK(s[0]);
	evr_count_str(s, sizeof(s), (long long)t->count * t->iters);
	FUZZ_CHECK(s[0]);
	(void)evr__test_bytes(t);
}

static void server_side(const uint8_t *data, size_t size)
{
	struct evr_plan_hdr h, h2;
	struct evr_conn_plan np;
	uint8_t enc[EVR_PLAN_HDR_LEN];
	size_t avail;
	unsigned i, n;
	int st;

	if (size < EVR_PLAN_HDR_LEN)
		return;
	memset(&h, 0, sizeof(h));
	st = evr__plan_hdr_decode(data, &h);
	FUZZ_CHECK(st == -1 || (st >= EVR_PLAN_OK && st < EVR_PLAN_E_MAX));
	FUZZ_CHECK(strcmp(evr__plan_status_str(st < 0 ? 0 : st),
			  "unknown reason"));
	if (st < 0)
		return;
	/* every field was read, whatever the verdict: all 16 bytes back */
	evr__plan_hdr_encode(enc, &h);
	FUZZ_CHECK(!memcmp(enc, data, EVR_PLAN_HDR_LEN));
	memset(&h2, 0, sizeof(h2));
	FUZZ_CHECK(evr__plan_hdr_decode(enc, &h2) == st);
	FUZZ_CHECK(!memcmp(&h, &h2, sizeof(h)));
	if (st != EVR_PLAN_OK)
		return;
	FUZZ_CHECK(h.ntests >= 1 && h.ntests <= EVR_PLAN_MAX_TESTS);
	FUZZ_CHECK(!(h.flags & ~EVR_PLAN_F_KNOWN));
	FUZZ_CHECK(h.version == EVR_WIRE_VERSION_DURATION ||
		   !(h.flags & EVR_PLAN_F_DURATION));

	/* the server reads ntests entries; take what the input has */
	avail = (size - EVR_PLAN_HDR_LEN) / EVR_PLAN_ENTRY_LEN;
	n = h.ntests < avail ? h.ntests : (unsigned)avail;
	memset(&np, 0, sizeof(np));
	np.opt = EVR_OPT_MIXED;
	np.ntests = n;
	for (i = 0; i < n; i++) {
		const uint8_t *in = data + EVR_PLAN_HDR_LEN +
				    (size_t)i * EVR_PLAN_ENTRY_LEN;
		uint8_t e[EVR_PLAN_ENTRY_LEN];

		st = evr__plan_entry_decode(in, &np.tests[i],
					    EVR_MAX_XFER_SIZE);
		FUZZ_CHECK(st >= EVR_PLAN_OK && st < EVR_PLAN_E_MAX);
		if (st) {
			np.ntests = i;
			break;
		}
		check_test(&np.tests[i]);
		evr__plan_entry_encode(e, &np.tests[i]);
		FUZZ_CHECK(!memcmp(e, in, 13));
		/* byte 13: the flags this end knows, kept; the rest zero */
		FUZZ_CHECK(e[13] == (in[13] & EVR_TEST_F_HOLD));
		FUZZ_CHECK(!e[14] && !e[15]);
	}
	if (np.ntests) {
		uint32_t max = evr__conn_plan_max_size(&np);

		FUZZ_CHECK(max >= EVR_SYNC_LEN && max <= EVR_MAX_XFER_SIZE);
		for (i = 0; i < np.ntests; i++)
			FUZZ_CHECK(np.tests[i].size <= max);
	}
}

static void client_side(const uint8_t *data, size_t size)
{
	uint8_t enc[EVR_PLAN_REPLY_LEN];
	uint32_t limit = 0, limit2 = 0;
	uint8_t first;
	int st;

	if (size < EVR_PLAN_REPLY_LEN)
		return;
	/* the first 16 bytes as any side sees them */
	(void)evr__is_hello(data);
	(void)evr__is_ack(data);
	if (evr__is_busy(data))
		FUZZ_CHECK(!evr__is_ack(data) && !evr__is_hello(data));
	if (evr__pattern_detect(data, EVR_SYNC_LEN, &first))
		FUZZ_CHECK(data[0] == first && data[15] == (uint8_t)(first + 15));

	st = evr__plan_reply_decode(data, &limit);
	FUZZ_CHECK(st >= -1);
	FUZZ_CHECK(evr__plan_status_str(st) != NULL);
	if (st < 0)
		return;
	evr__plan_reply_encode(enc, st, limit);
	FUZZ_CHECK(!memcmp(enc, data, 12));
	FUZZ_CHECK(evr__plan_reply_decode(enc, &limit2) == st);
	FUZZ_CHECK(limit2 == limit);
	FUZZ_CHECK(evr__plan_reply_decode(data, NULL) == st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	server_side(data, size);
	client_side(data, size);
	return 0;
}
