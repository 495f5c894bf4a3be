/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * mckey payloads (mcast/payload.c): the input is two bytes that choose
 * the receiver's limits (window, senders tracked), then a run of received
 * messages, each a 2-byte big-endian length then that many bytes (the
 * last one takes what is left).  Each is decoded (what decodes
 * re-encodes to the same header but for the flags and reserved bytes,
 * which the decoder ignores; what is refused is refused for a reason)
 * and accounted as a receiver does: the per-sender figures must add up
 * and the memory held stay within the receiver's limits.
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
	int r = evr__mc_payload_decode(msg, len, &h);

	if (r == EVR_MC_DEC_NONE) {
		FUZZ_CHECK(len < 4 || memcmp(msg, "EVMK", 4));
		return;
	}
	FUZZ_CHECK(len >= 4 && !memcmp(msg, "EVMK", 4));
	if (r == EVR_MC_DEC_BAD) {
		/* short, another version, or a field out of range */
		FUZZ_CHECK(len < EVR_MC_HDR_LEN || msg[4] != 1 ||
			   !(msg[16] | msg[17] | msg[18] | msg[19]) ||
			   memcmp(msg + 12, msg + 16, 4) >= 0);
		return;
	}
	FUZZ_CHECK(r == EVR_MC_DEC_OK);
	/* every field within range before anything uses it */
	FUZZ_CHECK(len >= EVR_MC_HDR_LEN && h.count >= 1 && h.seq < h.count);
	FUZZ_CHECK(evr__mc_payload_encode(enc, sizeof(enc), &h) == 1);
	FUZZ_CHECK(!memcmp(enc, msg, 5));
	FUZZ_CHECK(!memcmp(enc + 8, msg + 8, 12));
	FUZZ_CHECK(enc[EVR_MC_HDR_LEN] == EVR_MC_HDR_LEN); /* the fill */
	FUZZ_CHECK(evr__mc_payload_decode(enc, sizeof(enc), &h2) ==
		   EVR_MC_DEC_OK);
	FUZZ_CHECK(h2.sender == h.sender && h2.seq == h.seq &&
		   h2.count == h.count);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evr_mc_acct a;
	uint64_t nmsg = 0, received = 0;
	unsigned i, window = 0, max_senders = 0;
	size_t pos = 0;

	/* The first two bytes choose the receiver's limits, small ones
	 * included, so that the window and the sender cap are exercised
	 * by short inputs: window 64 * (1 + b0 % 64), max_senders
	 * 1 + b1 (0 and 0 here mean the defaults). */
	if (size >= 2) {
		window = data[0] ? 64u * (1 + data[0] % 64) : 0;
		max_senders = data[1] ? 1u + data[1] % 32 : 0;
		pos = 2;
	}
	evr__mc_acct_init(&a, window, max_senders);
	FUZZ_CHECK(a.window >= EVR_MC_MIN_WINDOW && a.window % 64 == 0);
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
		evr__mc_acct_add(&a, msg, len);
		free(msg);
		nmsg++;
		/* memory is the receiver's choice, whatever came in */
		FUZZ_CHECK(a.bytes <= evr__mc_acct_max_bytes(window,
							     max_senders));
	}

	FUZZ_CHECK(a.nsenders <= a.max_senders && a.nsenders <= a.alloc);
	for (i = 0; i < a.nsenders; i++) {
		const struct evr_mc_sender_stats *s = &a.senders[i];
		unsigned j;

		for (j = 0; j < i; j++)
			FUZZ_CHECK(a.senders[j].sender != s->sender);
		FUZZ_CHECK(s->received == s->unique + s->duplicates +
			   s->out_of_window);
		FUZZ_CHECK(s->unique >= 1 && s->win);
		FUZZ_CHECK(s->reordered <= s->unique - 1);
		FUZZ_CHECK(s->count >= 1 && s->highest < s->count);
		FUZZ_CHECK(s->unique <= (uint64_t)s->highest + 1);
		/* every announced message: received, lost or not yet */
		FUZZ_CHECK(s->unique + evr__mc_sender_lost(s) +
			   evr__mc_sender_not_received(s) == s->count);
		received += s->received;
	}
	FUZZ_CHECK(received + a.foreign + a.untracked + a.bad == nmsg);
	evr__mc_acct_fini(&a);
	FUZZ_CHECK(a.bytes == 0 && !a.senders);
	return 0;
}
