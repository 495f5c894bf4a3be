/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mckey payloads (mcast/payload.c): the input as a run of received
 * messages, each a 2-byte big-endian length then that many bytes (the
 * last one takes what is left).  Each is decoded (what decodes
 * re-encodes to the same header but for the flags and reserved bytes,
 * which the decoder ignores) and accounted as a receiver does; the
 * per-sender figures must add up.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "mcast/payload.h"

static void round_trip(const uint8_t *msg, size_t len)
{
	struct evr_mc_hdr h, h2;
	uint8_t enc[EVR_MC_HDR_LEN + 8];

	if (!evr__mc_payload_decode(msg, len, &h)) {
		FUZZ_CHECK(len < EVR_MC_HDR_LEN || memcmp(msg, "EVMK", 4) ||
			   msg[4] != 1);
		return;
	}
	FUZZ_CHECK(len >= EVR_MC_HDR_LEN);
	FUZZ_CHECK(evr__mc_payload_encode(enc, sizeof(enc), &h) == 1);
	FUZZ_CHECK(!memcmp(enc, msg, 5));
	FUZZ_CHECK(!memcmp(enc + 8, msg + 8, 12));
	FUZZ_CHECK(enc[EVR_MC_HDR_LEN] == EVR_MC_HDR_LEN); /* the fill */
	FUZZ_CHECK(evr__mc_payload_decode(enc, sizeof(enc), &h2) == 1);
	FUZZ_CHECK(h2.sender == h.sender && h2.seq == h.seq &&
		   h2.count == h.count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_mc_acct *a = malloc(sizeof(*a));
	uint64_t nmsg = 0, received = 0;
	size_t pos = 0;
	unsigned i;

	if (!a)
		return 0;
	evr__mc_acct_init(a);
	while (pos < size) {
		size_t len;
		uint8_t *msg;

		if (size - pos >= 2) {
			len = (size_t)data[pos] << 8 | data[pos + 1];
			pos += 2;
			if (len > size - pos)
				len = size - pos;
		} else {
			len = size - pos;
		}
		/* an exact-size copy, as a receive buffer's bytes */
		msg = malloc(len ? len : 1);
		if (!msg)
			break;
		memcpy(msg, data + pos, len);
		pos += len;
		round_trip(msg, len);
		evr__mc_acct_add(a, msg, len);
		free(msg);
		nmsg++;
	}

	FUZZ_CHECK(a->nsenders <= EVR_MC_MAX_SENDERS);
	for (i = 0; i < a->nsenders; i++) {
		const struct evr_mc_sender_stats *s = &a->senders[i];
		unsigned j;

		for (j = 0; j < i; j++)
			FUZZ_CHECK(a->senders[j].sender != s->sender);
		FUZZ_CHECK(s->received == s->unique + s->duplicates);
		FUZZ_CHECK(s->reordered <= s->unique);
		FUZZ_CHECK(s->any == (s->unique > 0));
		FUZZ_CHECK(!s->duplicates || s->seen);
		/* the bitmap's size follows from a count the peer chose */
		FUZZ_CHECK(!s->seen || (s->count >= 1 &&
					s->count <= EVR_MC_MAX_BITMAP_COUNT));
		FUZZ_CHECK(evr__mc_sender_lost(s) <= s->count);
		received += s->received;
	}
	FUZZ_CHECK(received + a->foreign + a->overflow + a->bad == nmsg);
	evr__mc_acct_fini(a);
	free(a);
	return 0;
}
