/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The multicast engine (mckey): the payload header, per-sender loss,
 * duplicate and reorder accounting, the per-QP state machine driven by
 * synthetic events over a mock transport on a real loop, and mckey's
 * command line.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <ev.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/mckey_opts.h"
#include "evrdma/hostcheck.h"
#include "evrdma/mcast.h"
#include "mcast/mc.h"
#include "mcast/payload.h"

#include <malloc.h>

/* Heap the process holds, as malloc counts it (arena and mmap'd chunks);
 * under ASan or valgrind malloc is theirs and this may read 0. */
static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* ================================================================== */
/* payload                                                             */

START_TEST(test_payload_bytes)
{
	struct evr_mc_hdr h = { .sender = 0x01020304u, .seq = 0x0a0b0c0du,
				.count = 0x11121314u };
	static const uint8_t want[24] = {
		'E', 'V', 'M', 'K', 1, 0, 0, 0,
		0x01, 0x02, 0x03, 0x04,
		0x0a, 0x0b, 0x0c, 0x0d,
		0x11, 0x12, 0x13, 0x14,
		0, 0, 0, 0,
	};
	uint8_t buf[40];
	struct evr_mc_hdr d;
	size_t i;

	memset(buf, 0xee, sizeof(buf));
	ck_assert_int_eq(evr__mc_payload_encode(buf, 32, &h), 1);
	ck_assert_mem_eq(buf, want, sizeof(want));
	/* after the header: the fill pattern, and nothing beyond len */
	for (i = 24; i < 32; i++)
		ck_assert_uint_eq(buf[i], (uint8_t)i);
	for (i = 32; i < sizeof(buf); i++)
		ck_assert_uint_eq(buf[i], 0xee);

	memset(&d, 0, sizeof(d));
	ck_assert_int_eq(evr__mc_payload_decode(buf, 32, &d), 1);
	ck_assert_uint_eq(d.sender, h.sender);
	ck_assert_uint_eq(d.seq, h.seq);
	ck_assert_uint_eq(d.count, h.count);

	/* exactly the header's length carries it too */
	memset(buf, 0xee, sizeof(buf));
	ck_assert_int_eq(evr__mc_payload_encode(buf, 24, &h), 1);
	ck_assert_mem_eq(buf, want, sizeof(want));
	ck_assert_uint_eq(buf[24], 0xee);
	ck_assert_int_eq(evr__mc_payload_decode(buf, 24, &d), 1);
}
END_TEST

START_TEST(test_payload_roundtrip)
{
	static const uint32_t vals[] = { 0, 1, 0x7f, 0x80, 0xff, 0x100,
					 0x12345678u, 0x80000000u,
					 0xfffffffeu, 0xffffffffu };
	uint8_t buf[1500];
	unsigned i, j;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		for (j = 0; j < sizeof(vals) / sizeof(vals[0]); j++) {
			struct evr_mc_hdr h = { .sender = vals[i],
						.seq = vals[j],
						.count = vals[(i + j) % 10] };
			struct evr_mc_hdr d = { 0, 0, 0 };
			size_t len = 24 + (i * 37 + j) % 1400;
			int valid = h.count && h.seq < h.count;

			ck_assert_int_eq(evr__mc_payload_encode(buf, len, &h),
					 1);
			/* big-endian: the most significant byte first */
			ck_assert_uint_eq(buf[8], (uint8_t)(h.sender >> 24));
			ck_assert_uint_eq(buf[11], (uint8_t)h.sender);
			ck_assert_uint_eq(buf[12], (uint8_t)(h.seq >> 24));
			ck_assert_uint_eq(buf[15], (uint8_t)h.seq);
			ck_assert_uint_eq(buf[16], (uint8_t)(h.count >> 24));
			ck_assert_uint_eq(buf[19], (uint8_t)h.count);
			/* no messages announced, or a sequence number beyond
			 * them: out of range, nothing decoded */
			ck_assert_int_eq(evr__mc_payload_decode(buf, len, &d),
					 valid ? EVR_MC_DEC_OK :
						 EVR_MC_DEC_BAD);
			if (!valid) {
				ck_assert_uint_eq(d.sender, 0);
				continue;
			}
			ck_assert_uint_eq(d.sender, h.sender);
			ck_assert_uint_eq(d.seq, h.seq);
			ck_assert_uint_eq(d.count, h.count);
		}
	}
}
END_TEST

START_TEST(test_payload_short)
{
	struct evr_mc_hdr h = { .sender = 7, .seq = 1, .count = 2 };
	struct evr_mc_hdr d;
	uint8_t full[64], buf[64];
	size_t len, i;

	ck_assert_int_eq(evr__mc_payload_encode(full, sizeof(full), &h), 1);
	for (len = 0; len < EVR_MC_HDR_LEN; len++) {
		memset(buf, 0xee, sizeof(buf));
		ck_assert_msg(evr__mc_payload_encode(buf, len, &h) == 0,
			      "len %zu carried a header", len);
		/* the fill only, no magic, nothing written beyond len */
		for (i = 0; i < len; i++)
			ck_assert_uint_eq(buf[i], (uint8_t)i);
		for (i = len; i < sizeof(buf); i++)
			ck_assert_uint_eq(buf[i], 0xee);
		ck_assert_int_eq(evr__mc_payload_decode(buf, len, &d),
				 EVR_MC_DEC_NONE);
		/* a valid header cut short is a broken one once the magic
		 * is in, no header before */
		ck_assert_msg(evr__mc_payload_decode(full, len, &d) ==
			      (len >= 4 ? EVR_MC_DEC_BAD : EVR_MC_DEC_NONE),
			      "decode of %zu bytes", len);
	}
	ck_assert_uint_eq(EVR_MC_HDR_LEN, 24);
}
END_TEST

START_TEST(test_payload_bad_magic_version)
{
	struct evr_mc_hdr h = { .sender = 9, .seq = 3, .count = 4 };
	struct evr_mc_hdr d;
	uint8_t buf[32];
	unsigned i;
	static const uint8_t versions[] = { 0, 2, 0x81, 0xff };

	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(evr__mc_payload_encode(buf, sizeof(buf), &h),
				 1);
		buf[i] ^= 0x20; /* "eVMK", "EvMK", ... */
		ck_assert_msg(evr__mc_payload_decode(buf, sizeof(buf), &d) ==
			      EVR_MC_DEC_NONE,
			      "magic byte %u altered, still accepted", i);
	}
	for (i = 0; i < sizeof(versions); i++) {
		ck_assert_int_eq(evr__mc_payload_encode(buf, sizeof(buf), &h),
				 1);
		buf[4] = versions[i];
		ck_assert_msg(evr__mc_payload_decode(buf, sizeof(buf), &d) ==
			      EVR_MC_DEC_BAD, "version %u not bad", versions[i]);
	}
	/* flags and reserved bytes are for later versions: ignored */
	ck_assert_int_eq(evr__mc_payload_encode(buf, sizeof(buf), &h), 1);
	buf[5] = buf[6] = buf[7] = buf[20] = buf[23] = 0xff;
	ck_assert_int_eq(evr__mc_payload_decode(buf, sizeof(buf), &d),
			 EVR_MC_DEC_OK);
	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(evr__mc_payload_decode(buf, sizeof(buf), &d),
			 EVR_MC_DEC_NONE);
}
END_TEST

/* ================================================================== */
/* accounting                                                          */

static void acct_msg(struct evr_mc_acct *a, uint32_t sender, uint32_t seq,
		     uint32_t count)
{
	struct evr_mc_hdr h = { .sender = sender, .seq = seq, .count = count };
	uint8_t buf[100];

	ck_assert_int_eq(evr__mc_payload_encode(buf, sizeof(buf), &h), 1);
	evr__mc_acct_add(a, buf, sizeof(buf));
}

static void acct_seq(struct evr_mc_acct *a, uint32_t sender, uint32_t count,
		     const uint32_t *seqs, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		acct_msg(a, sender, seqs[i], count);
}

#define SEQS(a, sender, count, ...) do { \
	static const uint32_t s_[] = { __VA_ARGS__ }; \
	acct_seq((a), (sender), (count), s_, sizeof(s_) / sizeof(s_[0])); \
} while (0)

/* lost: gaps up to the highest received; rest: announced above it */
static void assert_sender(const struct evr_mc_sender_stats *s, uint32_t id,
			  uint32_t count, uint64_t received, uint64_t unique,
			  uint64_t dup, uint64_t reord, uint64_t lost,
			  uint64_t rest)
{
	ck_assert_uint_eq(s->sender, id);
	ck_assert_uint_eq(s->count, count);
	ck_assert_uint_eq(s->received, received);
	ck_assert_uint_eq(s->unique, unique);
	ck_assert_uint_eq(s->duplicates, dup);
	ck_assert_uint_eq(s->reordered, reord);
	ck_assert_uint_eq(evr__mc_sender_lost(s), lost);
	ck_assert_uint_eq(evr__mc_sender_not_received(s), rest);
	/* every announced message is one of the three */
	ck_assert_uint_eq(s->unique + evr__mc_sender_lost(s) +
			  evr__mc_sender_not_received(s), s->count);
	ck_assert_uint_eq(s->received, s->unique + s->duplicates +
			  s->out_of_window);
}

START_TEST(test_acct_in_order)
{
	struct evr_mc_acct a;
	uint32_t i;

	evr__mc_acct_init(&a, 0, 0);
	ck_assert_uint_eq(a.nsenders, 0);
	ck_assert_uint_eq(a.window, EVR_MC_DEFAULT_WINDOW);
	ck_assert_uint_eq(a.max_senders, EVR_MC_DEFAULT_MAX_SENDERS);
	ck_assert_uint_eq(a.bytes, 0);
	for (i = 0; i < 10; i++)
		acct_msg(&a, 0x1000, i, 10);
	ck_assert_uint_eq(a.nsenders, 1);
	assert_sender(&a.senders[0], 0x1000, 10, 10, 10, 0, 0, 0, 0);
	ck_assert_uint_eq(a.senders[0].highest, 9);
	ck_assert_uint_eq(a.foreign, 0);
	ck_assert_uint_eq(a.bad, 0);
	ck_assert_uint_eq(a.untracked, 0);
	evr__mc_acct_fini(&a);
	ck_assert_uint_eq(a.nsenders, 0);
	ck_assert_uint_eq(a.bytes, 0);
}
END_TEST

START_TEST(test_acct_duplicates)
{
	struct evr_mc_acct a;

	evr__mc_acct_init(&a, 0, 0);
	SEQS(&a, 0x2000, 5, 0, 1, 1, 2, 0, 2, 2);
	/* 7 arrivals, 3 distinct; a duplicate is not also a reorder; 3
	 * and 4 were not received before the receiver stopped */
	assert_sender(&a.senders[0], 0x2000, 5, 7, 3, 4, 0, 0, 2);
	evr__mc_acct_fini(&a);
}
END_TEST

START_TEST(test_acct_reorder)
{
	struct evr_mc_acct a;

	evr__mc_acct_init(&a, 0, 0);
	SEQS(&a, 1, 4, 0, 2, 1, 3);
	assert_sender(&a.senders[0], 1, 4, 4, 4, 0, 1, 0, 0);
	ck_assert_uint_eq(a.senders[0].highest, 3);
	/* all backwards: every arrival after the first is below the highest */
	SEQS(&a, 2, 4, 3, 2, 1, 0);
	ck_assert_uint_eq(a.nsenders, 2);
	assert_sender(&a.senders[1], 2, 4, 4, 4, 0, 3, 0, 0);
	ck_assert_uint_eq(a.senders[1].highest, 3);
	/* the first arrival need not be seq 0: those before it are lost
	 * (a receiver cannot tell they were sent before it joined) */
	SEQS(&a, 3, 8, 5, 6, 7);
	assert_sender(&a.senders[2], 3, 8, 3, 3, 0, 0, 5, 0);
	evr__mc_acct_fini(&a);
}
END_TEST

START_TEST(test_acct_loss)
{
	struct evr_mc_acct a;

	evr__mc_acct_init(&a, 0, 0);
	SEQS(&a, 0xabcd0000u, 10, 0, 1, 2, 5, 9);
	assert_sender(&a.senders[0], 0xabcd0000u, 10, 5, 5, 0, 0, 5, 0);
	ck_assert_uint_eq(a.senders[0].highest, 9);
	/* a late retransmission of a lost one fills the gap */
	SEQS(&a, 0xabcd0000u, 10, 3);
	assert_sender(&a.senders[0], 0xabcd0000u, 10, 6, 6, 0, 1, 4, 0);
	/* one message of a million: nothing sized by the count */
	SEQS(&a, 0x77, 1000000, 999999);
	assert_sender(&a.senders[1], 0x77, 1000000, 1, 1, 0, 0, 999999, 0);
	ck_assert_uint_le(a.bytes, evr__mc_acct_max_bytes(0, 0));
	/* a duplicate in the window is one; seq 0, a million behind, is
	 * outside it: neither duplicate nor reorder, and still lost */
	SEQS(&a, 0x77, 1000000, 999999, 0);
	assert_sender(&a.senders[1], 0x77, 1000000, 3, 1, 1, 0, 999999, 0);
	ck_assert_uint_eq(a.senders[1].out_of_window, 1);
	evr__mc_acct_fini(&a);
}
END_TEST

/* Issue 14: a receiver that stopped at its own -C before a sender was
 * done has not lost the rest; it did not receive it before it stopped. */
START_TEST(test_acct_stopped_early_not_lost)
{
	struct evr_mc_acct a;

	evr__mc_acct_init(&a, 0, 0);
	/* -C 5 against a sender of 10 */
	SEQS(&a, 0x5000, 10, 0, 1, 2, 3, 4);
	assert_sender(&a.senders[0], 0x5000, 10, 5, 5, 0, 0, 0, 5);
	/* a gap below the highest is loss, what is above it is not */
	SEQS(&a, 0x6000, 10, 0, 1, 3);
	assert_sender(&a.senders[1], 0x6000, 10, 3, 3, 0, 0, 1, 6);
	/* everything: neither */
	SEQS(&a, 0x7000, 3, 2, 0, 1);
	assert_sender(&a.senders[2], 0x7000, 3, 3, 3, 0, 2, 0, 0);
	evr__mc_acct_fini(&a);
}
END_TEST

START_TEST(test_acct_senders)
{
	struct evr_mc_acct a;
	uint32_t i;

	evr__mc_acct_init(&a, 0, 0);
	/* interleaved: each sender keeps its own sequence space */
	for (i = 0; i < 5; i++) {
		if (i < 3)
			acct_msg(&a, 0xb0000000u, i, 3);
		acct_msg(&a, 0xa0000001u, i, 5);
	}
	acct_msg(&a, 0xa0000001u, 2, 5);
	ck_assert_uint_eq(a.nsenders, 2);
	/* the table is in order of first arrival */
	assert_sender(&a.senders[0], 0xb0000000u, 3, 3, 3, 0, 0, 0, 0);
	assert_sender(&a.senders[1], 0xa0000001u, 5, 6, 5, 1, 0, 0, 0);
	evr__mc_acct_fini(&a);
}
END_TEST

START_TEST(test_acct_foreign)
{
	struct evr_mc_acct a;
	uint8_t buf[200];
	struct evr_mc_hdr h = { .sender = 1, .seq = 0, .count = 1 };
	size_t i;

	evr__mc_acct_init(&a, 0, 0);
	memset(buf, 0, sizeof(buf));
	evr__mc_acct_add(&a, buf, sizeof(buf));   /* upstream: junk */
	evr__mc_acct_add(&a, buf, 0);             /* empty */
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 3);
	evr__mc_acct_add(&a, buf, sizeof(buf));
	ck_assert_int_eq(evr__mc_payload_encode(buf, sizeof(buf), &h), 1);
	evr__mc_acct_add(&a, buf, 3);             /* not even the magic */
	ck_assert_uint_eq(a.foreign, 4);
	ck_assert_uint_eq(a.bad, 0);
	/* a real header in a message too short to hold one: broken */
	evr__mc_acct_add(&a, buf, EVR_MC_HDR_LEN - 1);
	ck_assert_uint_eq(a.foreign, 4);
	ck_assert_uint_eq(a.bad, 1);
	ck_assert_uint_eq(a.nsenders, 0);
	evr__mc_acct_add(&a, buf, EVR_MC_HDR_LEN);
	ck_assert_uint_eq(a.foreign, 4);
	ck_assert_uint_eq(a.nsenders, 1);
	evr__mc_acct_fini(&a);
	ck_assert_uint_eq(a.foreign, 0);
}
END_TEST

/* Issue 14: out-of-range and malformed headers are counted as bad, and
 * none of them touches a sender's figures. */
START_TEST(test_acct_bad_headers)
{
	struct evr_mc_acct a;
	struct evr_mc_hdr h = { .sender = 5, .seq = 0, .count = 10 };
	uint8_t buf[64];

	evr__mc_acct_init(&a, 0, 0);
	acct_msg(&a, 5, 10, 10);      /* seq == count */
	acct_msg(&a, 5, 0xffffffffu, 10);
	acct_msg(&a, 5, 0, 0);        /* nothing announced */
	ck_assert_uint_eq(a.bad, 3);
	ck_assert_uint_eq(a.nsenders, 0);  /* no entry for a bad header */
	ck_assert_uint_eq(a.bytes, 0);
	acct_msg(&a, 5, 9, 10);
	acct_msg(&a, 5, 10, 10);
	ck_assert_uint_eq(a.bad, 4);
	ck_assert_uint_eq(a.nsenders, 1);
	/* a count other than the sender's first: not this sender's */
	acct_msg(&a, 5, 3, 20);
	acct_msg(&a, 5, 12, 20);
	ck_assert_uint_eq(a.bad, 6);
	/* another version */
	evr__mc_payload_encode(buf, sizeof(buf), &h);
	buf[4] = 2;
	evr__mc_acct_add(&a, buf, sizeof(buf));
	ck_assert_uint_eq(a.bad, 7);
	assert_sender(&a.senders[0], 5, 10, 1, 1, 0, 0, 9, 0);
	ck_assert_uint_eq(a.foreign, 0);
	ck_assert_uint_eq(a.untracked, 0);
	evr__mc_acct_fini(&a);
}
END_TEST

/* The window: duplicates and reordering within it, sequence numbers
 * behind it counted apart, bits of a wrapped window never stale. */
START_TEST(test_acct_window)
{
	struct evr_mc_acct a;
	uint32_t i;

	evr__mc_acct_init(&a, 64, 0);
	ck_assert_uint_eq(a.window, 64);
	for (i = 0; i < 64; i++)
		acct_msg(&a, 1, i, 100000);
	acct_msg(&a, 1, 0, 100000);     /* 63 behind: in the window, a dup */
	assert_sender(&a.senders[0], 1, 100000, 65, 64, 1, 0, 0, 100000 - 64);
	acct_msg(&a, 1, 64, 100000);    /* the window moves on by one */
	acct_msg(&a, 1, 0, 100000);     /* 64 behind: outside */
	ck_assert_uint_eq(a.senders[0].out_of_window, 1);
	ck_assert_uint_eq(a.senders[0].duplicates, 1);
	acct_msg(&a, 1, 1, 100000);     /* 63 behind: a dup again */
	ck_assert_uint_eq(a.senders[0].duplicates, 2);
	/* 200 and 180: the jump clears what 136..200 held before */
	acct_msg(&a, 1, 200, 100000);
	acct_msg(&a, 1, 180, 100000);   /* slot of 116 (and 52): not seen */
	assert_sender(&a.senders[0], 1, 100000, 70, 67, 2, 1, 201 - 67,
		      100000 - 201);
	acct_msg(&a, 1, 180, 100000);
	ck_assert_uint_eq(a.senders[0].duplicates, 3);
	/* a jump of more than a window clears it all */
	acct_msg(&a, 1, 99999, 100000);
	for (i = 99936; i < 99999; i++)
		acct_msg(&a, 1, i, 100000);
	ck_assert_uint_eq(a.senders[0].duplicates, 3);
	ck_assert_uint_eq(a.senders[0].reordered, 1 + 63);
	assert_sender(&a.senders[0], 1, 100000, 135, 131, 3, 64,
		      100000 - 131, 0);
	/* limits: clamped, rounded up to a multiple of 64 */
	evr__mc_acct_fini(&a);
	ck_assert_uint_eq(a.bytes, 0);
	evr__mc_acct_init(&a, 1, 0);
	ck_assert_uint_eq(a.window, EVR_MC_MIN_WINDOW);
	evr__mc_acct_init(&a, 100, 0);
	ck_assert_uint_eq(a.window, 128);
	evr__mc_acct_init(&a, 0xffffffffu, 0xffffffffu);
	ck_assert_uint_eq(a.window, EVR_MC_MAX_WINDOW);
	ck_assert_uint_eq(a.max_senders, EVR_MC_MAX_MAX_SENDERS);
	evr__mc_acct_fini(&a);
}
END_TEST

START_TEST(test_acct_max_senders)
{
	struct evr_mc_acct a;
	uint32_t i;

	evr__mc_acct_init(&a, 0, 3);
	for (i = 0; i < 5; i++)
		acct_msg(&a, 0x100 + i, 0, 2);
	acct_msg(&a, 0x104, 1, 2);
	ck_assert_uint_eq(a.nsenders, 3);
	ck_assert_uint_le(a.alloc, 3);
	ck_assert_uint_eq(a.untracked, 3);
	/* the tracked ones still are */
	acct_msg(&a, 0x102, 1, 2);
	assert_sender(&a.senders[2], 0x102, 2, 2, 2, 0, 0, 0, 0);
	ck_assert_uint_eq(a.untracked, 3);
	ck_assert_uint_le(a.bytes, evr__mc_acct_max_bytes(0, 3));
	evr__mc_acct_fini(&a);
}
END_TEST

START_TEST(test_acct_untracked)
{
	struct evr_mc_acct *a = malloc(sizeof(*a));
	uint32_t i;

	ck_assert_ptr_nonnull(a);
	evr__mc_acct_init(a, 0, 0);
	for (i = 0; i < EVR_MC_DEFAULT_MAX_SENDERS; i++)
		acct_msg(a, 0x100000u + i, 0, 3 + i % 5);
	ck_assert_uint_eq(a->nsenders, EVR_MC_DEFAULT_MAX_SENDERS);
	ck_assert_uint_eq(a->untracked, 0);
	acct_msg(a, 0xdead, 0, 3);
	acct_msg(a, 0xdead, 1, 3);
	acct_msg(a, 0xbeef, 0, 3);
	ck_assert_uint_eq(a->nsenders, EVR_MC_DEFAULT_MAX_SENDERS);
	ck_assert_uint_eq(a->untracked, 3);
	/* the senders in the table are still counted */
	acct_msg(a, 0x100000u, 1, 3);
	acct_msg(a, 0x100000u + EVR_MC_DEFAULT_MAX_SENDERS - 1, 1, 3 + 255 % 5);
	assert_sender(&a->senders[0], 0x100000u, 3, 2, 2, 0, 0, 0, 1);
	assert_sender(&a->senders[EVR_MC_DEFAULT_MAX_SENDERS - 1],
		      0x100000u + EVR_MC_DEFAULT_MAX_SENDERS - 1, 3 + 255 % 5,
		      2, 2, 0, 0, 0, 3 + 255 % 5 - 2);
	ck_assert_uint_eq(a->untracked, 3);
	evr__mc_acct_fini(a);   /* frees 256 windows: valgrind checks it */
	ck_assert_uint_eq(a->nsenders, 0);
	ck_assert_uint_eq(a->untracked, 0);
	free(a);
}
END_TEST

/* Found by fuzzing (tests/fuzz/corpus/mc_payload/regress-count-wrap):
 * a count near 2^32 once sized a bitmap that wrapped to 0 bytes.
 * Nothing is sized by a count any more; the extremes still add up. */
START_TEST(test_acct_huge_count)
{
	struct evr_mc_acct a;

	evr__mc_acct_init(&a, 0, 0);
	acct_msg(&a, 1, 1000, 0xffffffffu);
	acct_msg(&a, 1, 0xfffffffeu, 0xffffffffu);
	acct_msg(&a, 1, 1000, 0xffffffffu);   /* far behind: outside */
	acct_msg(&a, 1, 0xfffffffeu, 0xffffffffu);
	ck_assert_uint_eq(a.bad, 0);
	ck_assert_uint_eq(a.nsenders, 1);
	ck_assert_uint_eq(a.senders[0].out_of_window, 1);
	assert_sender(&a.senders[0], 1, 0xffffffffu, 4, 2, 1, 0,
		      0xffffffffu - 2, 0);
	ck_assert_uint_le(a.bytes, evr__mc_acct_max_bytes(0, 0));
	evr__mc_acct_fini(&a);
}
END_TEST

/* Issue 14: 40,000 forged 24-byte headers, from 300 sender ids, each
 * announcing 100 million messages at random sequence numbers, took the
 * old receiver to 154 MiB (a bitmap sized by each announced count).
 * The tracker holds no more than its limits allow, and says what it
 * dropped. */
START_TEST(test_acct_memory_bounded)
{
	struct evr_mc_acct a;
	uint64_t x = 14, tracked = 0;
	size_t heap0, heap1, bound = evr__mc_acct_max_bytes(0, 0);
	unsigned i;

	heap0 = heap_in_use();
	evr__mc_acct_init(&a, 0, 0);
	for (i = 0; i < 40000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		acct_msg(&a, 0x5eed0000u + (i % 300) * 0x1000u,
			 (uint32_t)(x >> 33) % 100000000u, 100000000u);
	}
	ck_assert_uint_eq(a.nsenders, EVR_MC_DEFAULT_MAX_SENDERS);
	ck_assert_uint_le(a.bytes, bound);
	/* 256 senders: their entries and 512-byte windows, under 160 KiB */
	ck_assert_uint_le(bound, 160 * 1024);
	heap1 = heap_in_use();
	ck_assert_msg(heap1 <= heap0 + 1024 * 1024,
		      "heap grew by %zu bytes", heap1 - heap0);
	/* what was dropped is counted, and everything adds up */
	ck_assert_uint_eq(a.untracked, 40000 / 300 * 44 + (40000 % 300 > 256 ?
			  40000 % 300 - 256 : 0));
	for (i = 0; i < a.nsenders; i++)
		tracked += a.senders[i].received;
	ck_assert_uint_eq(tracked + a.untracked, 40000);
	ck_assert_uint_gt(a.senders[0].out_of_window, 0);
	evr__mc_acct_fini(&a);
}
END_TEST

/* ================================================================== */
/* the state machine over a mock transport                             */

#define MAXQ 4
#define MAXSEND 64

struct mock {
	int engine_init_ret;       /* < 0: fail (recorded) */
	int prepare_ret;
	int node_init_fail_at;     /* index, or -1 */
	int resolve_ret[MAXQ];     /* 0 async, 1 sync, < 0 fail */
	int resolve_err;           /* status recorded for a failed resolve */
	int setup_ret[MAXQ];
	int join_ret[MAXQ];
	int leave_ret[MAXQ];
	int send_script[MAXSEND];  /* results of successive send calls */
	unsigned send_nscript;

	unsigned n_engine_init, n_engine_fini, n_prepare;
	unsigned n_node_init[MAXQ], n_node_fini[MAXQ];
	unsigned n_resolve[MAXQ], n_setup[MAXQ], n_join[MAXQ], n_leave[MAXQ];
	unsigned n_send_calls;
	unsigned nsent[MAXQ];
	uint32_t seq[MAXQ][MAXSEND];
	uint64_t t_ns[MAXQ][MAXSEND];
	unsigned bad_state;        /* an op called in the wrong state */
	char bad_what[128];
};

static struct mock M;

static void mock_bad(const char *what, const struct evr_mc_node *n)
{
	if (!M.bad_state++)
		snprintf(M.bad_what, sizeof(M.bad_what), "%s on qp %u in %s",
			 what, n ? n->index : 0,
			 n ? evr__mc_state_name(n->state) : "-");
}

static int mk_engine_init(struct evr_mcast *m)
{
	M.n_engine_init++;
	if (M.engine_init_ret < 0) {
		EVR__MC_FAIL(m, .status = 1,
			     .code = -EVR_E_NODEV,
			     .msg = "No RDMA devices were detected");
		return -1;
	}
	m->xp = malloc(16);
	ck_assert_ptr_nonnull(m->xp);
	return 0;
}

static void mk_engine_fini(struct evr_mcast *m)
{
	M.n_engine_fini++;
	free(m->xp);
	m->xp = NULL;
}

static int mk_node_init(struct evr_mc_node *n)
{
	ck_assert_uint_lt(n->index, MAXQ);
	M.n_node_init[n->index]++;
	if (M.node_init_fail_at == (int)n->index) {
		EVR__MC_FAIL(n->mc, .qp = n->index,
			     .status = 1,
			     .msg = "mckey: unable to allocate memory for test nodes");
		return -1;
	}
	n->xp = malloc(32);
	ck_assert_ptr_nonnull(n->xp);
	return 0;
}

static void mk_node_fini(struct evr_mc_node *n)
{
	M.n_node_fini[n->index]++;
	free(n->xp);
	n->xp = NULL;
}

static int mk_prepare(struct evr_mcast *m)
{
	M.n_prepare++;
	if (M.prepare_ret < 0) {
		EVR__MC_FAIL(m, .status = -2,
			     .code = -EVR_E_RESOLVE,
			     .msg = "getaddrinfo failed (Name or service "
				    "not known) - invalid hostname or IP address");
		return -1;
	}
	return 0;
}

static int mk_resolve(struct evr_mc_node *n)
{
	unsigned q = n->index;

	M.n_resolve[q]++;
	if (n->state != EVR_MC_RESOLVING)
		mock_bad("resolve", n);
	if (M.resolve_ret[q] < 0) {
		EVR__MC_FAIL(n->mc, .qp = q,
			     .status = M.resolve_err,
			     .msg = "mckey: resolve addr failure",
			     .sys_errno = ENETUNREACH);
		return -1;
	}
	return M.resolve_ret[q];
}

#define MTU_MSG "mckey: message_size 5000 is larger than active mtu 1024"

static int mk_setup(struct evr_mc_node *n)
{
	unsigned q = n->index;

	M.n_setup[q]++;
	if (n->state != EVR_MC_RESOLVING)
		mock_bad("setup", n);
	if (M.setup_ret[q] < 0) {
		EVR__MC_FAIL(n->mc, .qp = q,
			     .status = -EINVAL,
			     .msg = MTU_MSG);
		return -1;
	}
	return 0;
}

static int mk_join(struct evr_mc_node *n)
{
	unsigned q = n->index;

	M.n_join[q]++;
	if (n->state != EVR_MC_JOINING && n->state != EVR_MC_REJOINING)
		mock_bad("join", n);
	if (M.join_ret[q] < 0) {
		EVR__MC_FAIL(n->mc, .qp = q,
			     .status = -1,
			     .msg = "mckey: failure joining",
			     .sys_errno = EINVAL);
		return -1;
	}
	return M.join_ret[q];
}

static int mk_send(struct evr_mc_node *n, uint32_t seq)
{
	unsigned q = n->index;
	int r = 0;

	if (n->state != EVR_MC_RUNNING)
		mock_bad("send", n);
	if (M.n_send_calls < M.send_nscript)
		r = M.send_script[M.n_send_calls];
	M.n_send_calls++;
	if (r == -EAGAIN)
		return r;
	if (r < 0) {
		EVR__MC_FAIL(n->mc, .qp = q,
			     .status = r,
			     .msg = "mckey: sendto",
			     .sys_errno = EPERM);
		return r;
	}
	ck_assert_uint_lt(M.nsent[q], MAXSEND);
	M.seq[q][M.nsent[q]] = seq;
	M.t_ns[q][M.nsent[q]] = evr_now_ns();
	M.nsent[q]++;
	return 0;
}

static int mk_leave(struct evr_mc_node *n)
{
	unsigned q = n->index;

	M.n_leave[q]++;
	if (n->state != EVR_MC_JOINED && n->state != EVR_MC_RUNNING)
		mock_bad("leave", n);
	if (M.leave_ret[q] < 0) {
		EVR__MC_FAIL(n->mc, .qp = q,
			     .status = -1,
			     .msg = "mckey: failure leaving",
			     .sys_errno = EADDRNOTAVAIL);
		return -1;
	}
	return 0;
}

static const struct evr_mc_xport mock_xport = {
	.engine_init = mk_engine_init,
	.engine_fini = mk_engine_fini,
	.node_init = mk_node_init,
	.prepare = mk_prepare,
	.resolve = mk_resolve,
	.setup = mk_setup,
	.join = mk_join,
	.send = mk_send,
	.leave = mk_leave,
	.node_fini = mk_node_fini,
};

/* ---- what the callbacks saw ---- */

struct fail_rec {
	int err;
	unsigned qp;
	char msg[160];
	int with_errno, sys_errno;
	char detail[160];
	int code;
};

struct rec {
	struct evr_mcast *m;
	enum evr_mc_phase phase[16];
	unsigned nphase;
	unsigned nfail;
	struct fail_rec fail[16];
	unsigned ndone;
	int status;
	unsigned nqps;
	struct evr_mc_qp_report rep[MAXQ];
	struct evr_mc_sender_report srep[MAXQ][8];
	int all_terminal_at_done;
	int fini_at_done;          /* transport torn down before done */
	unsigned ndone_phase_after;/* phase callbacks after done */
	char trace[MAXQ][160];     /* "IDLE>RESOLVING>..." per QP */
	unsigned seen;             /* states entered, as bits */
	unsigned ntrace_bad;
};

static struct rec R;

static int state_of(const char *name)
{
	int s;

	for (s = 0; s < EVR_MC__COUNT; s++)
		if (!strcmp(evr__mc_state_name((enum evr_mc_state)s), name))
			return s;
	return -1;
}

static void on_trace(void *ud, const char *line)
{
	struct rec *r = ud;
	char a[32], b[32];
	unsigned q;
	int sa, sb;
	size_t len;

	if (sscanf(line, "qp %u: %31s -> %31s", &q, a, b) != 3 || q >= MAXQ) {
		r->ntrace_bad++;
		return;
	}
	sa = state_of(a);
	sb = state_of(b);
	if (sa < 0 || sb < 0) {
		r->ntrace_bad++;
		return;
	}
	r->seen |= 1u << sa | 1u << sb;
	len = strlen(r->trace[q]);
	if (!len)
		snprintf(r->trace[q], sizeof(r->trace[q]), "%s>%s", a, b);
	else
		snprintf(r->trace[q] + len, sizeof(r->trace[q]) - len, ">%s",
			 b);
}

static void on_phase(void *ud, enum evr_mc_phase p)
{
	struct rec *r = ud;

	if (r->ndone)
		r->ndone_phase_after++;
	ck_assert_uint_lt(r->nphase, 16);
	r->phase[r->nphase++] = p;
}

static void on_failure(void *ud, const struct evr_mc_failure *f)
{
	struct rec *r = ud;
	struct fail_rec *fr;

	ck_assert_uint_lt(r->nfail, 16);
	fr = &r->fail[r->nfail++];
	fr->err = f->err;
	fr->qp = f->qp;
	snprintf(fr->msg, sizeof(fr->msg), "%s", f->msg ? f->msg : "(null)");
	fr->with_errno = f->with_errno;
	fr->sys_errno = f->sys_errno;
	snprintf(fr->detail, sizeof(fr->detail), "%s", f->detail);
	fr->code = f->code;
}

static void on_done(void *ud, int status, unsigned nqps,
		    const struct evr_mc_qp_report *qps)
{
	struct rec *r = ud;
	unsigned i, j;

	r->ndone++;
	r->status = status;
	r->nqps = nqps;
	r->all_terminal_at_done = 1;
	r->fini_at_done = M.n_engine_fini == 1;
	for (i = 0; i < r->m->nnodes; i++) {
		if (r->m->nodes[i].state != EVR_MC_DONE &&
		    r->m->nodes[i].state != EVR_MC_FAILED)
			r->all_terminal_at_done = 0;
		if (M.n_node_fini[i] != 1)
			r->fini_at_done = 0;
	}
	ck_assert_uint_le(nqps, MAXQ);
	if (nqps)
		ck_assert_ptr_nonnull(qps);
	for (i = 0; i < nqps; i++) {
		r->rep[i] = qps[i];
		ck_assert_uint_le(qps[i].nsenders, 8);
		for (j = 0; j < qps[i].nsenders; j++)
			r->srep[i][j] = qps[i].senders[j];
		r->rep[i].senders = r->srep[i];
	}
}

static const struct evr_mcast_cbs CBS = {
	.phase = on_phase,
	.failure = on_failure,
	.done = on_done,
};

/* ---- the loop ---- */

static struct evr_loop *L;
static ev_timer guard_w;
static struct evr_mcast *LIVE; /* freed by the teardown if a test failed */

/* Keeps EVRUN_ONCE from blocking for long whatever the engine waits for. */
static void guard_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
}

static void sm_setup(void)
{
	unsigned q;

	memset(&M, 0, sizeof(M));
	memset(&R, 0, sizeof(R));
	LIVE = NULL;
	M.node_init_fail_at = -1;
	M.resolve_err = -1;
	for (q = 0; q < MAXQ; q++) {
		M.resolve_ret[q] = 1;
		M.join_ret[q] = 1;
	}
	ck_assert_int_eq(evr_loop_new(&L, NULL), 0);
	evr_loop_set_trace(L, on_trace, &R);
	ev_timer_init(&guard_w, guard_cb, 0.002, 0.002);
	ev_timer_start(evr_loop_ev(L), &guard_w);
}

static void sm_teardown(void)
{
	if (LIVE)
		evr_mcast_free(LIVE);
	LIVE = NULL;
	ev_timer_stop(evr_loop_ev(L), &guard_w);
	evr_loop_free(L);
	L = NULL;
}

static uint64_t ms_since(uint64_t t0)
{
	return (evr_now_ns() - t0) / 1000000u;
}

static void run_ms(unsigned ms)
{
	uint64_t end = evr_now_ns() + (uint64_t)ms * 1000000u;

	while (evr_now_ns() < end)
		ev_run(evr_loop_ev(L), EVRUN_ONCE);
}

#define RUN_UNTIL(cond, ms) do { \
	uint64_t e_ = evr_now_ns() + (uint64_t)(ms) * 1000000u; \
	while (!(cond) && evr_now_ns() < e_) \
		ev_run(evr_loop_ev(L), EVRUN_ONCE); \
	ck_assert_msg((cond), "timed out waiting for %s", #cond); \
} while (0)

#define WAIT_DONE() RUN_UNTIL(R.ndone, 10000)

#define NODE(m, q) (&(m)->nodes[(q)])
#define ST(m, q) (NODE(m, q)->state)
#define EV(m, q, e, a) evr__mc_node_event(NODE(m, q), (e), (a))

static struct evr_mcast_opts opts(int sender, unsigned nqps, unsigned count)
{
	struct evr_mcast_opts o;

	memset(&o, 0, sizeof(o));
	o.transport = EVR_MC_RDMA;
	o.group = "239.1.1.1";
	o.bind_addr = "10.0.0.1";
	o.sender = sender;
	o.nqps = nqps;
	o.count = count;
	o.size = 100;
	o.port_space = 0x111;
	o.settle_ms = 1;
	o.deadline_ms = 20000;
	return o;
}

static struct evr_mcast *mk(const struct evr_mcast_opts *o)
{
	struct evr_mcast *m = NULL;

	ck_assert_int_eq(evr__mcast_new_xport(&m, L, o, &CBS, &R, &mock_xport),
			 0);
	ck_assert_ptr_nonnull(m);
	R.m = m;
	LIVE = m;
	return m;
}

/* Error the way the real transports report one: record, then the event. */
static void inject_err(struct evr_mcast *m, unsigned q, enum evr_mc_ev ev,
		       int status, const char *msg)
{
	EVR__MC_FAIL(m, .qp = q,
			     .status = status,
			     .msg = msg);
	EV(m, q, ev, status);
}

static void assert_phases(unsigned n, ...)
{
	va_list ap;
	unsigned i;

	ck_assert_msg(R.nphase == n, "%u phase callbacks, want %u", R.nphase,
		      n);
	va_start(ap, n);
	for (i = 0; i < n; i++) {
		int want = va_arg(ap, int);

		ck_assert_msg((int)R.phase[i] == want,
			      "phase %u is %d, want %d", i, (int)R.phase[i],
			      want);
	}
	va_end(ap);
}

#define PH_ALL 4, EVR_MC_PH_STARTING, EVR_MC_PH_JOINING, EVR_MC_PH_TRANSFER, \
	EVR_MC_PH_TRANSFER_DONE
#define PH_NODONE 3, EVR_MC_PH_STARTING, EVR_MC_PH_JOINING, EVR_MC_PH_TRANSFER
#define PH_JOIN 2, EVR_MC_PH_STARTING, EVR_MC_PH_JOINING

static void assert_trace(unsigned q, const char *want)
{
	ck_assert_msg(!strcmp(R.trace[q], want), "qp %u went %s, want %s", q,
		      R.trace[q], want);
}

/* Free the engine after a finished run and check what every run owes:
 * done exactly once, after everything was torn down, exactly once. */
static void finish(struct evr_mcast *m)
{
	unsigned q, n = m->nnodes;

	run_ms(5); /* nothing more may come */
	ck_assert_uint_eq(R.ndone, 1);
	ck_assert_int_eq(R.all_terminal_at_done, 1);
	ck_assert_msg(R.fini_at_done, "done called before the teardown");
	ck_assert_uint_eq(R.ndone_phase_after, 0);
	ck_assert_uint_eq(R.nqps, n);
	for (q = 0; q < n; q++)
		ck_assert_uint_eq(R.rep[q].qp, q);
	ck_assert_uint_eq(R.ntrace_bad, 0);
	ck_assert_msg(M.bad_state == 0, "%s", M.bad_what);
	LIVE = NULL;
	evr_mcast_free(m);
	/* no second teardown */
	ck_assert_uint_eq(M.n_engine_fini, 1);
	for (q = 0; q < n; q++)
		ck_assert_uint_eq(M.n_node_fini[q], 1);
}

START_TEST(test_state_names)
{
	static const char *const names[] = { "IDLE", "RESOLVING", "JOINING",
					     "JOINED", "RUNNING", "REJOINING",
					     "DONE", "FAILED" };
	int s;

	ck_assert_int_eq(EVR_MC__COUNT, 8);
	ck_assert_int_eq(EVR_MC_IDLE, 0);
	for (s = 0; s < EVR_MC__COUNT; s++)
		ck_assert_str_eq(evr__mc_state_name((enum evr_mc_state)s),
				 names[s]);
	ck_assert_str_eq(evr__mc_state_name(EVR_MC__COUNT), "?");
	ck_assert_str_eq(evr__mc_state_name((enum evr_mc_state)-1), "?");
	ck_assert_str_eq(evr__mc_state_name((enum evr_mc_state)1000), "?");
}
END_TEST

/* One run that enters every state: qp 0 succeeds, qp 1 fails after GO. */
START_TEST(test_every_state)
{
	struct evr_mcast_opts o = opts(1, 2, 2);
	struct evr_mcast *m;
	int s;

	M.resolve_ret[0] = M.resolve_ret[1] = 0;
	M.join_ret[0] = M.join_ret[1] = 0;
	m = mk(&o);
	ck_assert_int_eq(ST(m, 0), EVR_MC_IDLE);
	ck_assert_int_eq(ST(m, 1), EVR_MC_IDLE);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RESOLVING);
	EV(m, 0, EVR_MCE_RESOLVED, 0);
	EV(m, 1, EVR_MCE_RESOLVED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINING);
	EV(m, 0, EVR_MCE_JOINED, 0);
	EV(m, 1, EVR_MCE_JOINED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	inject_err(m, 1, EVR_MCE_SEND_COMP, -EIO, "mckey: send completion");
	ck_assert_int_eq(ST(m, 1), EVR_MC_FAILED);
	EV(m, 0, EVR_MCE_GROUP_LOST, -ENETRESET);
	ck_assert_int_eq(ST(m, 0), EVR_MC_REJOINING);
	EV(m, 0, EVR_MCE_JOINED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	WAIT_DONE();
	for (s = 0; s < EVR_MC__COUNT; s++)
		ck_assert_msg(R.seen & 1u << s, "state %s never entered",
			      evr__mc_state_name((enum evr_mc_state)s));
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>REJOINING>RUNNING>DONE");
	assert_trace(1, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>FAILED");
	ck_assert_int_eq(R.status, -EIO);
	finish(m);
}
END_TEST

START_TEST(test_sender_success)
{
	struct evr_mcast_opts o = opts(1, 1, 3);
	struct evr_mcast *m;
	unsigned i;

	M.resolve_ret[0] = 0;
	M.join_ret[0] = 0;
	m = mk(&o);
	ck_assert_int_eq(ST(m, 0), EVR_MC_IDLE);
	ck_assert_uint_eq(M.n_engine_init, 0); /* nothing before start */
	evr_mcast_start(m);
	ck_assert_uint_eq(M.n_engine_init, 1);
	ck_assert_uint_eq(M.n_node_init[0], 1);
	ck_assert_uint_eq(M.n_prepare, 1);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RESOLVING);
	ck_assert_uint_eq(M.n_resolve[0], 1);
	ck_assert_uint_eq(M.n_setup[0], 0);
	assert_phases(PH_JOIN);
	evr_mcast_start(m);                 /* a second start does nothing */
	ck_assert_uint_eq(M.n_engine_init, 1);
	ck_assert_uint_eq(M.n_resolve[0], 1);

	/* out-of-order events are ignored */
	EV(m, 0, EVR_MCE_JOINED, 0);
	EV(m, 0, EVR_MCE_GO, 0);
	EV(m, 0, EVR_MCE_SEND_SLOT, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RESOLVING);
	ck_assert_uint_eq(M.n_send_calls, 0);

	EV(m, 0, EVR_MCE_RESOLVED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINING);
	ck_assert_uint_eq(M.n_setup[0], 1);
	ck_assert_uint_eq(M.n_join[0], 1);
	EV(m, 0, EVR_MCE_RESOLVED, 0);      /* again: ignored */
	ck_assert_uint_eq(M.n_setup[0], 1);
	ck_assert_uint_eq(M.n_join[0], 1);

	EV(m, 0, EVR_MCE_JOINED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ev_is_active(&NODE(m, 0)->step_w), 0);
	ck_assert_int_ne(ev_is_active(&m->settle_w), 0);
	/* nothing is sent before the settle timer */
	ck_assert_uint_eq(M.n_send_calls, 0);
	assert_phases(PH_JOIN);

	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	assert_phases(3, EVR_MC_PH_STARTING, EVR_MC_PH_JOINING,
		      EVR_MC_PH_TRANSFER);
	ck_assert_uint_eq(M.nsent[0], 3);   /* unpaced: all posted at once */
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(M.seq[0][i], i);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
	ck_assert_uint_eq(M.n_leave[0], 0);
	ck_assert_uint_eq(M.n_send_calls, 3); /* never more than count */
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_leave[0], 1);
	/* done comes from the loop, not from inside the event */
	ck_assert_uint_eq(R.ndone, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	ck_assert_uint_eq(R.nfail, 0);
	assert_phases(PH_ALL);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	ck_assert_int_eq(R.rep[0].joined, 1);
	ck_assert_int_eq(R.rep[0].timed_out, 0);
	ck_assert_uint_eq(R.rep[0].sent, 3);
	ck_assert_uint_eq(R.rep[0].send_completed, 3);
	ck_assert_uint_eq(R.rep[0].received, 0);
	ck_assert_uint_eq(R.rep[0].expected, 0);
	ck_assert_uint_eq(R.rep[0].nsenders, 0);
	ck_assert_uint_gt(R.rep[0].join_ns, 0);

	/* events after the end change nothing */
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	EV(m, 0, EVR_MCE_CANCEL, 0);
	EV(m, 0, EVR_MCE_DEADLINE, 0);
	EV(m, 0, EVR_MCE_STEP_TIMEOUT, 0);
	evr_mcast_cancel(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(R.nfail, 0);
	finish(m);
	ck_assert_int_eq(R.status, 0);
}
END_TEST

START_TEST(test_receiver_success)
{
	struct evr_mcast_opts o = opts(0, 1, 5);
	struct evr_mcast *m = mk(&o);

	evr_mcast_start(m);
	/* synchronous resolve and join */
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_uint_eq(M.n_join[0], 1);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_uint_eq(NODE(m, 0)->recvd, 2);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
	ck_assert_uint_eq(M.n_leave[0], 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_leave[0], 1);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	ck_assert_uint_eq(M.n_send_calls, 0);
	assert_phases(PH_ALL);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	ck_assert_uint_eq(R.rep[0].received, 5);
	ck_assert_uint_eq(R.rep[0].expected, 5);
	ck_assert_uint_eq(R.rep[0].sent, 0);
	ck_assert_int_eq(R.rep[0].timed_out, 0);
	ck_assert_int_eq(R.rep[0].joined, 1);
	finish(m);
}
END_TEST

/* ---- the embedding rules (mcast.h): cancel from inside the engine's own
 * callback takes effect from the loop; free from inside done() ---- */

static unsigned cancel_on_phase = 99; /* the phase whose callback cancels */
static int free_in_done;

static void on_phase_cancel(void *ud, enum evr_mc_phase p)
{
	struct rec *r = ud;

	on_phase(ud, p);
	if (p == cancel_on_phase)
		evr_mcast_cancel(r->m);
}

static void on_done_free(void *ud, int status, unsigned nqps,
			 const struct evr_mc_qp_report *qps)
{
	struct rec *r = ud;

	on_done(ud, status, nqps, qps);
	if (free_in_done) {
		LIVE = NULL;
		evr_mcast_free(r->m); /* the engine's last act was this call */
		r->m = NULL;
	}
}

static const struct evr_mcast_cbs CBS_REENTER = {
	.phase = on_phase_cancel,
	.failure = on_failure,
	.done = on_done_free,
};

static struct evr_mcast *mk_reenter(const struct evr_mcast_opts *o)
{
	struct evr_mcast *m = NULL;

	ck_assert_int_eq(evr__mcast_new_xport(&m, L, o, &CBS_REENTER, &R,
					      &mock_xport), 0);
	R.m = m;
	LIVE = m;
	return m;
}

START_TEST(test_cancel_inside_own_callback)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;

	cancel_on_phase = EVR_MC_PH_TRANSFER;
	free_in_done = 0;
	m = mk_reenter(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	/* the settle timer fires the TRANSFER phase, whose callback cancels:
	 * the engine goes on with its own step (both QPs start running) and
	 * tears down from the loop afterwards */
	RUN_UNTIL(R.nphase >= 3, 5000);
	ck_assert_int_eq(R.phase[2], EVR_MC_PH_TRANSFER);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
	ck_assert_int_eq(ST(m, 1), EVR_MC_RUNNING);
	ck_assert_uint_eq(R.ndone, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EINTR);
	assert_phases(PH_NODONE);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_leave[1], 1);
	finish(m);
	cancel_on_phase = 99;
}
END_TEST

/* A cancel from inside evr_mcast_start()'s own phase callback: the start
 * finishes its step, and the teardown follows from the loop. */
START_TEST(test_cancel_inside_start)
{
	struct evr_mcast_opts o = opts(1, 1, 3);
	struct evr_mcast *m;

	cancel_on_phase = EVR_MC_PH_STARTING;
	free_in_done = 0;
	m = mk_reenter(&o);
	evr_mcast_start(m);
	ck_assert_uint_eq(R.ndone, 0);
	ck_assert_int_ne(ev_is_active(&m->cancel_w), 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EINTR);
	ck_assert_uint_eq(M.nsent[0], 0);
	finish(m);
	cancel_on_phase = 99;
}
END_TEST

START_TEST(test_free_inside_done)
{
	struct evr_mcast_opts o = opts(0, 1, 2);
	struct evr_mcast *m;

	cancel_on_phase = 99;
	free_in_done = 1;
	m = mk_reenter(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	WAIT_DONE();
	ck_assert_ptr_null(R.m);
	ck_assert_int_eq(R.status, 0);
	ck_assert_uint_eq(R.rep[0].received, 2);
	run_ms(5); /* nothing of the engine is left to fire */
	ck_assert_uint_eq(R.ndone, 1);
	ck_assert_uint_eq(M.n_engine_fini, 1);
	free_in_done = 0;
}
END_TEST

/* Receives posted before the join may complete before GO; they count. */
START_TEST(test_receiver_all_before_go)
{
	struct evr_mcast_opts o = opts(0, 1, 5);
	struct evr_mcast *m;
	int i;

	M.join_ret[0] = 0;
	o.settle_ms = 30;
	m = mk(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINING);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINING);
	EV(m, 0, EVR_MCE_JOINED, 0);
	for (i = 0; i < 3; i++)
		EV(m, 0, EVR_MCE_RECV_COMP, 0);
	/* all five arrived, but not before GO is it over */
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_uint_eq(M.n_leave[0], 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	assert_phases(PH_ALL);
	ck_assert_uint_eq(R.rep[0].received, 5);
	ck_assert_uint_eq(M.n_leave[0], 1);
	finish(m);
}
END_TEST

/* Extra messages beyond count are counted but end nothing twice. */
START_TEST(test_receiver_extra)
{
	struct evr_mcast_opts o = opts(0, 1, 2);
	struct evr_mcast *m = mk(&o);
	int i;

	evr_mcast_start(m);
	for (i = 0; i < 4; i++)
		EV(m, 0, EVR_MCE_RECV_COMP, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	ck_assert_uint_eq(R.rep[0].received, 4);
	ck_assert_uint_eq(R.rep[0].expected, 2);
	ck_assert_uint_eq(M.n_leave[0], 1);
	finish(m);
}
END_TEST

START_TEST(test_barrier)
{
	struct evr_mcast_opts o = opts(1, 3, 2);
	struct evr_mcast *m;
	unsigned q, i, ntransfer = 0;

	for (q = 0; q < 3; q++)
		M.resolve_ret[q] = M.join_ret[q] = 0;
	m = mk(&o);
	evr_mcast_start(m);
	for (q = 0; q < 3; q++) {
		ck_assert_int_eq(ST(m, q), EVR_MC_RESOLVING);
		ck_assert_uint_eq(M.n_resolve[q], 1);
		EV(m, q, EVR_MCE_RESOLVED, 0);
		ck_assert_int_eq(ST(m, q), EVR_MC_JOINING);
	}
	EV(m, 0, EVR_MCE_JOINED, 0);
	EV(m, 2, EVR_MCE_JOINED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ST(m, 1), EVR_MC_JOINING);
	ck_assert_int_eq(ST(m, 2), EVR_MC_JOINED);
	ck_assert_int_eq(ev_is_active(&m->settle_w), 0);
	/* the barrier holds: no GO while one is still joining */
	run_ms(40);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ST(m, 2), EVR_MC_JOINED);
	ck_assert_uint_eq(M.n_send_calls, 0);
	assert_phases(PH_JOIN);
	EV(m, 1, EVR_MCE_JOINED, 0);
	ck_assert_int_ne(ev_is_active(&m->settle_w), 0);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	/* GO reaches all of them from the one timer */
	for (q = 0; q < 3; q++) {
		ck_assert_int_eq(ST(m, q), EVR_MC_RUNNING);
		ck_assert_uint_eq(M.nsent[q], 2);
		for (i = 0; i < 2; i++)
			ck_assert_uint_eq(M.seq[q][i], i);
	}
	for (q = 0; q < 3; q++) {
		EV(m, q, EVR_MCE_SEND_COMP, 0);
		EV(m, q, EVR_MCE_SEND_COMP, 0);
		ck_assert_int_eq(ST(m, q), EVR_MC_DONE);
	}
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	assert_phases(PH_ALL);
	for (i = 0; i < R.nphase; i++)
		ntransfer += R.phase[i] == EVR_MC_PH_TRANSFER;
	ck_assert_uint_eq(ntransfer, 1);
	for (q = 0; q < 3; q++) {
		ck_assert_uint_eq(M.n_leave[q], 1);
		ck_assert_uint_eq(R.rep[q].sent, 2);
		ck_assert_uint_eq(R.rep[q].send_completed, 2);
		ck_assert_int_eq(R.rep[q].joined, 1);
		assert_trace(q, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	}
	finish(m);
}
END_TEST

/* -C 0 (both roles): join, leave, no transfer, no "complete" line */
START_TEST(test_count_zero)
{
	struct evr_mcast_opts o = opts(_i, 2, 0);
	struct evr_mcast *m = mk(&o);
	unsigned q;

	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	assert_phases(PH_NODONE);
	ck_assert_uint_eq(M.n_send_calls, 0);
	for (q = 0; q < 2; q++) {
		ck_assert_uint_eq(M.n_join[q], 1);
		ck_assert_uint_eq(M.n_leave[q], 1);
		ck_assert_uint_eq(R.rep[q].expected, 0);
		ck_assert_int_eq(R.rep[q].joined, 1);
		assert_trace(q, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	}
	finish(m);
}
END_TEST

/* -S 0 turns into -C 0, as upstream */
START_TEST(test_size_zero)
{
	struct evr_mcast_opts o = opts(_i, 1, 10);
	struct evr_mcast *m;

	o.size = 0;
	m = mk(&o);
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	assert_phases(PH_NODONE);
	ck_assert_uint_eq(M.n_send_calls, 0);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(R.rep[0].expected, 0);
	ck_assert_uint_eq(R.rep[0].sent, 0);
	ck_assert_int_eq(R.rep[0].timed_out, 0);
	finish(m);
}
END_TEST

/* An ADDR_ERROR on one QP before GO ends the run: the others are
 * cancelled, only the joined one leaves, and neither the leave's own
 * failure nor a cancel masks the first status. */
START_TEST(test_resolve_error_async)
{
	struct evr_mcast_opts o = opts(0, 3, 5);
	struct evr_mcast *m;
	unsigned q;

	for (q = 0; q < 3; q++)
		M.resolve_ret[q] = 0;
	M.leave_ret[0] = -1;
	m = mk(&o);
	evr_mcast_start(m);
	EV(m, 0, EVR_MCE_RESOLVED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	inject_err(m, 1, EVR_MCE_RESOLVE_ERR, -ENETUNREACH,
		   "mckey: event: RDMA_CM_EVENT_ADDR_ERROR, error: -101");
	ck_assert_int_eq(ST(m, 1), EVR_MC_FAILED);
	ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED); /* its leave failed */
	ck_assert_int_eq(ST(m, 2), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_leave[1], 0);
	ck_assert_uint_eq(M.n_leave[2], 0);
	ck_assert_uint_eq(M.n_setup[2], 0);
	evr_mcast_cancel(m);                      /* must not mask it either */
	WAIT_DONE();
	ck_assert_int_eq(R.status, -ENETUNREACH);
	ck_assert_uint_eq(R.nfail, 2);
	ck_assert_int_eq(R.fail[0].err, -ENETUNREACH);
	ck_assert_uint_eq(R.fail[0].qp, 1);
	ck_assert_str_eq(R.fail[1].msg, "mckey: failure leaving");
	ck_assert_uint_eq(R.fail[1].qp, 0);
	ck_assert_int_eq(ev_is_active(&m->settle_w), 0);
	assert_phases(PH_JOIN);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>FAILED");
	assert_trace(1, "IDLE>RESOLVING>FAILED");
	assert_trace(2, "IDLE>RESOLVING>DONE");
	ck_assert_int_eq(R.rep[0].joined, 1);
	ck_assert_int_eq(R.rep[1].joined, 0);
	ck_assert_int_eq(R.rep[2].joined, 0);
	finish(m);
}
END_TEST

/* rdma_resolve_addr itself failing on the first QP: nothing else starts */
START_TEST(test_resolve_error_sync)
{
	struct evr_mcast_opts o = opts(1, 3, 5);
	struct evr_mcast *m;
	unsigned q;

	M.resolve_ret[0] = -1;
	M.resolve_err = -1;
	m = mk(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
	ck_assert_int_eq(ST(m, 1), EVR_MC_DONE);
	ck_assert_int_eq(ST(m, 2), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_resolve[1], 0);
	ck_assert_uint_eq(M.n_resolve[2], 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -1);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_str_eq(R.fail[0].msg, "mckey: resolve addr failure");
	ck_assert_int_eq(R.fail[0].with_errno, 1);
	ck_assert_int_eq(R.fail[0].sys_errno, ENETUNREACH);
	/* a failed call's code is its errno */
	ck_assert_int_eq(R.fail[0].code, -ENETUNREACH);
	for (q = 0; q < 3; q++)
		ck_assert_uint_eq(M.n_leave[q], 0);
	assert_phases(PH_JOIN);
	assert_trace(0, "IDLE>RESOLVING>FAILED");
	assert_trace(1, "IDLE>DONE");
	finish(m);
}
END_TEST

/* the join call failing (_i 0) or a MULTICAST_ERROR event (_i 1) */
START_TEST(test_join_error)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;

	M.join_ret[1] = _i ? 0 : -1;
	m = mk(&o);
	evr_mcast_start(m);
	if (_i) {
		ck_assert_int_eq(ST(m, 1), EVR_MC_JOINING);
		inject_err(m, 1, EVR_MCE_JOIN_ERR, -EINVAL, "mckey: event: "
			   "RDMA_CM_EVENT_MULTICAST_ERROR, error: -22");
	}
	ck_assert_int_eq(ST(m, 1), EVR_MC_FAILED);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_leave[0], 1); /* joined: leaves */
	ck_assert_uint_eq(M.n_leave[1], 0); /* never joined: no leave */
	WAIT_DONE();
	ck_assert_int_eq(R.status, _i ? -EINVAL : -1);
	ck_assert_uint_eq(R.nfail, 1);
	if (!_i) {
		ck_assert_str_eq(R.fail[0].msg, "mckey: failure joining");
		ck_assert_int_eq(R.fail[0].with_errno, 1);
	}
	assert_phases(PH_JOIN);
	assert_trace(1, "IDLE>RESOLVING>JOINING>FAILED");
	ck_assert_int_eq(R.rep[1].joined, 0);
	finish(m);
}
END_TEST

/* The MTU check (or any setup step) failing: the status is the check's,
 * no join, and no leave for QPs that never joined. */
START_TEST(test_setup_failure)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;

	M.resolve_ret[0] = M.resolve_ret[1] = 0;
	M.setup_ret[1] = -1;
	m = mk(&o);
	evr_mcast_start(m);
	EV(m, 0, EVR_MCE_RESOLVED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	EV(m, 1, EVR_MCE_RESOLVED, 0);
	ck_assert_int_eq(ST(m, 1), EVR_MC_FAILED);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_uint_eq(M.n_join[1], 0);
	ck_assert_uint_eq(M.n_leave[1], 0);
	ck_assert_uint_eq(M.n_leave[0], 1);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EINVAL);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_str_eq(R.fail[0].msg, MTU_MSG);
	/* no errno: a status that is a negative errno is the code */
	ck_assert_int_eq(R.fail[0].code, -EINVAL);
	ck_assert_uint_eq(R.fail[0].qp, 1);
	ck_assert_int_eq(R.fail[0].with_errno, 0);
	assert_trace(1, "IDLE>RESOLVING>FAILED");
	assert_phases(PH_JOIN);
	finish(m);
}
END_TEST

START_TEST(test_setup_failure_single)
{
	struct evr_mcast_opts o = opts(1, 1, 5);
	struct evr_mcast *m;

	M.setup_ret[0] = -1;
	m = mk(&o);
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EINVAL);
	ck_assert_uint_eq(M.n_join[0], 0);
	ck_assert_uint_eq(M.n_leave[0], 0);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_int_eq(R.rep[0].joined, 0);
	finish(m);
}
END_TEST

/* Receivers short of messages at the deadline: -ETIME (not -ETIMEDOUT,
 * a resolve or join that timed out), the late QP marked, the finished
 * one not. */
START_TEST(test_deadline_receiver)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;
	uint64_t t0 = evr_now_ns();
	int i;

	o.deadline_ms = 200;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	for (i = 0; i < 5; i++)
		EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_int_eq(ST(m, 1), EVR_MC_RUNNING);
	WAIT_DONE();
	ck_assert_uint_ge(ms_since(t0), 195);
	ck_assert_int_eq(R.status, -ETIME);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_str_eq(R.fail[0].msg, "mckey: deadline");
	ck_assert_str_eq(R.fail[0].detail,
			 "receives not complete on 1 of 2 QPs after 0.2 s");
	ck_assert_int_eq(R.fail[0].err, -ETIME);
	ck_assert_int_eq(R.fail[0].code, -ETIME);
	ck_assert_int_eq(R.rep[0].timed_out, 0);
	ck_assert_uint_eq(R.rep[0].received, 5);
	ck_assert_int_eq(R.rep[1].timed_out, 1);
	ck_assert_uint_eq(R.rep[1].received, 2);
	ck_assert_uint_eq(R.rep[1].expected, 5);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_leave[1], 1);
	assert_trace(1, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>FAILED");
	assert_phases(PH_NODONE);
	finish(m);
}
END_TEST

START_TEST(test_deadline_sender)
{
	struct evr_mcast_opts o = opts(1, 1, 3);
	struct evr_mcast *m;

	o.deadline_ms = 100;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -ETIME);
	ck_assert_str_eq(R.fail[0].detail,
			 "sends not complete on 1 of 1 QPs after 0.1 s");
	ck_assert_int_eq(R.rep[0].timed_out, 1);
	ck_assert_uint_eq(R.rep[0].sent, 3);
	ck_assert_uint_eq(R.rep[0].send_completed, 1);
	ck_assert_uint_eq(M.n_leave[0], 1);
	finish(m);
}
END_TEST

/* A failed completion after GO fails that QP; the others finish. */
START_TEST(test_completion_error)
{
	int sender = _i;
	struct evr_mcast_opts o = opts(sender, 2, 3);
	enum evr_mc_ev comp = sender ? EVR_MCE_SEND_COMP : EVR_MCE_RECV_COMP;
	struct evr_mcast *m = mk(&o);

	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, comp, 0);
	inject_err(m, 0, comp, -EIO, "mckey: completion error");
	ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_int_eq(ST(m, 1), EVR_MC_RUNNING);
	EV(m, 1, comp, 0);
	EV(m, 1, comp, 0);
	EV(m, 1, comp, 0);
	ck_assert_int_eq(ST(m, 1), EVR_MC_DONE);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EIO);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>FAILED");
	assert_trace(1, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	assert_phases(PH_NODONE);
	if (sender) {
		ck_assert_uint_eq(R.rep[0].send_completed, 1);
		ck_assert_uint_eq(R.rep[1].send_completed, 3);
	} else {
		ck_assert_uint_eq(R.rep[0].received, 1);
		ck_assert_uint_eq(R.rep[1].received, 3);
	}
	finish(m);
}
END_TEST

/* A QP's device went away (_i 0: the transport let go of the group and
 * everything else) or its port went down (_i 1: still in the group):
 * EVR_MCE_LOST after the go ends that QP with the status the transport
 * recorded, leaving the group only if it is still in it, and the other
 * QP finishes its part. */
START_TEST(test_device_lost)
{
	int gone = _i == 0;
	int status = gone ? -ENODEV : -ENETDOWN;
	struct evr_mcast_opts o = opts(0, 2, 3);
	struct evr_mcast *m = mk(&o);

	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	if (gone)
		m->nodes[0].joined = 0;
	EVR__MC_FAIL(m, .qp = 0, .status = status,
		     .code = gone ? -EVR_E_DEVGONE : -EVR_E_PORTDOWN,
		     .msg = gone ? "mckey: rxe0 was removed" :
				   "mckey: rxe0 port 1 went down");
	EV(m, 0, EVR_MCE_LOST, status);
	ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
	ck_assert_uint_eq(M.n_leave[0], gone ? 0 : 1);
	ck_assert_int_eq(ST(m, 1), EVR_MC_RUNNING);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 1), EVR_MC_DONE);
	WAIT_DONE();
	ck_assert_int_eq(R.status, status);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_int_eq(R.fail[0].code, gone ? -EVR_E_DEVGONE :
						-EVR_E_PORTDOWN);
	ck_assert_str_eq(evr_err_name(R.fail[0].code),
			 gone ? "devgone" : "portdown");
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>FAILED");
	ck_assert_uint_eq(R.rep[0].received, 1);
	ck_assert_uint_eq(R.rep[1].received, 3);
	finish(m);
}
END_TEST

START_TEST(test_step_timeout_resolving)
{
	struct evr_mcast_opts o = opts(0, 1, 5);
	struct evr_mcast *m;

	M.resolve_ret[0] = 0;
	m = mk(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RESOLVING);
	ck_assert_int_ne(ev_is_active(&NODE(m, 0)->step_w), 0);
	EV(m, 0, EVR_MCE_STEP_TIMEOUT, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -ETIMEDOUT);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_str_eq(R.fail[0].msg, "mckey: resolve addr failure");
	ck_assert_int_eq(R.fail[0].with_errno, 1);
	ck_assert_int_eq(R.fail[0].sys_errno, ETIMEDOUT);
	ck_assert_int_eq(R.fail[0].err, -ETIMEDOUT);
	ck_assert_int_eq(R.fail[0].code, -ETIMEDOUT);
	ck_assert_uint_eq(M.n_leave[0], 0);
	ck_assert_uint_eq(M.n_setup[0], 0);
	finish(m);
}
END_TEST

/* The real step timer: resolve_ms + 1 s for RESOLVING. */
START_TEST(test_step_timer_resolving)
{
	struct evr_mcast_opts o = opts(0, 1, 5);
	struct evr_mcast *m;
	uint64_t t0;

	M.resolve_ret[0] = 0;
	o.resolve_ms = 50;
	m = mk(&o);
	t0 = evr_now_ns();
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_uint_ge(ms_since(t0), 1045);
	ck_assert_int_eq(R.status, -ETIMEDOUT);
	ck_assert_str_eq(R.fail[0].msg, "mckey: resolve addr failure");
	finish(m);
}
END_TEST

/* The real step timer for JOINING (join_ms), on one of two QPs.  It
 * counts from when the step began, even when the loop has not run for a
 * while (its own time is then old: here 30 ms, and 35 ms once in CI
 * under ASan, when the timer fired 5 ms early). */
START_TEST(test_step_timer_joining)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;
	uint64_t t0;

	M.join_ret[1] = 0;
	o.join_ms = 40;
	m = mk(&o);
	usleep(30000);
	t0 = evr_now_ns();
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ST(m, 1), EVR_MC_JOINING);
	WAIT_DONE();
	ck_assert_uint_ge(ms_since(t0), 38);
	ck_assert_int_eq(R.status, -ETIMEDOUT);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_str_eq(R.fail[0].msg, "mckey: failure joining");
	ck_assert_int_eq(R.fail[0].sys_errno, ETIMEDOUT);
	ck_assert_uint_eq(R.fail[0].qp, 1);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_leave[1], 0);
	assert_trace(1, "IDLE>RESOLVING>JOINING>FAILED");
	assert_phases(PH_JOIN);
	finish(m);
}
END_TEST

/* RDMA_CM_EVENT_MULTICAST_ERROR after the join (GROUP_LOST): the QP
 * leaves and joins once more; receives that come meanwhile count, and
 * the run ends well (_i 0).  A second loss after that rejoin ends the QP
 * with one line naming it (_i 1); a rejoin that never completes ends at
 * join_ms as "failure rejoining" (_i 2).  The other QP runs on. */
START_TEST(test_rejoin_once)
{
	struct evr_mcast_opts o = opts(0, 2, 3);
	struct evr_mcast *m;

	o.join_ms = 40;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING && ST(m, 1) == EVR_MC_RUNNING,
		  5000);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	M.join_ret[0] = 0; /* the rejoin completes by its event */
	EV(m, 0, EVR_MCE_GROUP_LOST, -ENETRESET);
	ck_assert_int_eq(ST(m, 0), EVR_MC_REJOINING);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_join[0], 2);
	ck_assert(ev_is_active(&NODE(m, 0)->step_w));
	EV(m, 0, EVR_MCE_RECV_COMP, 0);   /* counted while rejoining */
	ck_assert_uint_eq(NODE(m, 0)->recvd, 2);
	EV(m, 0, EVR_MCE_GROUP_LOST, -ENETRESET); /* not joined: ignored */
	ck_assert_int_eq(ST(m, 0), EVR_MC_REJOINING);
	ck_assert_uint_eq(M.n_join[0], 2);
	if (_i == 2) {
		RUN_UNTIL(ST(m, 0) == EVR_MC_FAILED, 5000); /* join_ms */
	} else {
		EV(m, 0, EVR_MCE_JOINED, 0);
		ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
		ck_assert_int_eq(ev_is_active(&NODE(m, 0)->step_w), 0);
		if (_i == 1)
			EV(m, 0, EVR_MCE_GROUP_LOST, -ECONNRESET);
		else
			EV(m, 0, EVR_MCE_RECV_COMP, 0);
	}
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	WAIT_DONE();
	ck_assert_int_eq(ST(m, 1), EVR_MC_DONE);
	switch (_i) {
	case 0:
		ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
		ck_assert_int_eq(R.status, 0);
		ck_assert_uint_eq(R.nfail, 0);
		ck_assert_uint_eq(M.n_leave[0], 2); /* and at the end */
		assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>"
				"REJOINING>RUNNING>DONE");
		break;
	case 1:
		ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
		ck_assert_int_eq(R.status, -ECONNRESET);
		ck_assert_uint_eq(R.nfail, 1);
		ck_assert_str_eq(R.fail[0].msg, "mckey: QP 0 lost the group "
				 "again after rejoining it "
				 "(RDMA_CM_EVENT_MULTICAST_ERROR, error: -104)");
		ck_assert_uint_eq(M.n_join[0], 2); /* no third join */
		assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>"
				"REJOINING>RUNNING>FAILED");
		break;
	case 2:
		ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
		ck_assert_int_eq(R.status, -ETIMEDOUT);
		ck_assert_uint_eq(R.nfail, 1);
		ck_assert_str_eq(R.fail[0].msg, "mckey: failure rejoining after "
				 "RDMA_CM_EVENT_MULTICAST_ERROR");
		ck_assert_int_eq(R.fail[0].sys_errno, ETIMEDOUT);
		ck_assert_uint_eq(M.n_leave[0], 1); /* not joined: no leave */
		assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>"
				"REJOINING>FAILED");
		break;
	}
	finish(m);
}
END_TEST

/* The group lost during the settle pause (all joined, no GO yet): the
 * pause starts again once the QP has rejoined, and both QPs run. */
START_TEST(test_rejoin_in_settle)
{
	struct evr_mcast_opts o = opts(0, 2, 1);
	struct evr_mcast *m;

	o.settle_ms = 30;
	m = mk(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ST(m, 1), EVR_MC_JOINED);
	ck_assert(ev_is_active(&m->settle_w));
	M.join_ret[0] = 0;
	EV(m, 0, EVR_MCE_GROUP_LOST, -ENETRESET);
	ck_assert_int_eq(ST(m, 0), EVR_MC_REJOINING);
	EV(m, 0, EVR_MCE_JOINED, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert(ev_is_active(&m->settle_w));
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING && ST(m, 1) == EVR_MC_RUNNING,
		  5000);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 1, EVR_MCE_RECV_COMP, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>REJOINING>JOINED>"
			"RUNNING>DONE");
	finish(m);
}
END_TEST

/* A sender that loses the group: nothing is sent while it rejoins (the
 * mock fails a send outside RUNNING), the rest after. */
START_TEST(test_rejoin_sender_waits)
{
	struct evr_mcast_opts o = opts(1, 1, 4);
	struct evr_mcast *m;

	o.rate = 1000; /* a send a millisecond */
	M.send_nscript = 0;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(M.nsent[0] >= 1, 5000);
	M.join_ret[0] = 0;
	EV(m, 0, EVR_MCE_GROUP_LOST, -ENETRESET);
	ck_assert_int_eq(ST(m, 0), EVR_MC_REJOINING);
	run_ms(10);                        /* ten pacing ticks */
	ck_assert_uint_le(M.nsent[0], 2);
	ck_assert_int_eq(ST(m, 0), EVR_MC_REJOINING);
	EV(m, 0, EVR_MCE_JOINED, 0);
	RUN_UNTIL(M.nsent[0] == 4, 5000);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	finish(m);
}
END_TEST

/* A step timeout means nothing once joined. */
START_TEST(test_step_timeout_ignored)
{
	struct evr_mcast_opts o = opts(0, 1, 1);
	struct evr_mcast *m = mk(&o);

	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ev_is_active(&NODE(m, 0)->step_w), 0);
	EV(m, 0, EVR_MCE_STEP_TIMEOUT, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, EVR_MCE_STEP_TIMEOUT, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
	ck_assert_uint_eq(R.nfail, 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	finish(m);
}
END_TEST

START_TEST(test_cancel_running)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m = mk(&o);
	unsigned q;

	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	evr_mcast_cancel(m);
	for (q = 0; q < 2; q++) {
		ck_assert_int_eq(ST(m, q), EVR_MC_DONE);
		ck_assert_uint_eq(M.n_leave[q], 1);
	}
	evr_mcast_cancel(m);                 /* twice: nothing more */
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EINTR);
	ck_assert_uint_eq(R.rep[0].received, 2);
	ck_assert_int_eq(R.rep[0].timed_out, 0);
	assert_phases(PH_NODONE);
	evr_mcast_cancel(m);                 /* after done: nothing */
	ck_assert_int_eq(R.status, -EINTR);
	for (q = 0; q < 2; q++)
		ck_assert_uint_eq(M.n_leave[q], 1);
	finish(m);
}
END_TEST

START_TEST(test_cancel_joining)
{
	struct evr_mcast_opts o = opts(1, 3, 5);
	struct evr_mcast *m;

	M.resolve_ret[0] = 0;   /* qp 0 resolving */
	M.join_ret[1] = 0;      /* qp 1 joining, qp 2 joined */
	m = mk(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RESOLVING);
	ck_assert_int_eq(ST(m, 1), EVR_MC_JOINING);
	ck_assert_int_eq(ST(m, 2), EVR_MC_JOINED);
	evr_mcast_cancel(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	ck_assert_int_eq(ST(m, 1), EVR_MC_DONE);
	ck_assert_int_eq(ST(m, 2), EVR_MC_DONE);
	/* a late RESOLVED or JOINED changes nothing */
	EV(m, 0, EVR_MCE_RESOLVED, 0);
	EV(m, 1, EVR_MCE_JOINED, 0);
	ck_assert_uint_eq(M.n_setup[0], 0);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -EINTR);
	ck_assert_uint_eq(M.n_leave[0], 0);
	ck_assert_uint_eq(M.n_leave[1], 0);
	ck_assert_uint_eq(M.n_leave[2], 1);
	ck_assert_uint_eq(M.n_send_calls, 0);
	ck_assert_int_eq(ev_is_active(&NODE(m, 0)->step_w), 0);
	assert_phases(PH_JOIN);
	finish(m);
}
END_TEST

/* The run ends (_i 0: cancelled; _i 1: a failed receive completion on
 * one QP before GO) while the settle timer runs out: the run is over, so
 * the transfer phase must not be announced ("receiving data transfers"
 * after the end) and nothing starts. */
START_TEST(test_end_while_settling)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;

	if (_i)
		o.settle_ms = 0;
	m = mk(&o);
	evr_mcast_start(m);
	ck_assert_int_eq(ST(m, 0), EVR_MC_JOINED);
	ck_assert_int_eq(ST(m, 1), EVR_MC_JOINED);
	ck_assert_int_ne(ev_is_active(&m->settle_w), 0);
	if (_i) {
		inject_err(m, 0, EVR_MCE_RECV_COMP, -EIO,
			   "mckey: receive completion error");
		ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
	} else {
		evr_mcast_cancel(m);
		ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	}
	ck_assert_int_eq(ST(m, 1), EVR_MC_DONE);
	usleep(20000); /* the settle has expired when the loop runs */
	WAIT_DONE();
	ck_assert_int_eq(R.status, _i ? -EIO : -EINTR);
	assert_phases(PH_JOIN);
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_leave[1], 1);
	finish(m);
}
END_TEST

/* --rate: one send per tick, not all at once; completions do not post.
 * The pace counts from the first send, not from the loop's time, which
 * is as old as its last pass (CI under ASan once saw the 4 intervals
 * take 2.9 ms). */
START_TEST(test_rate_pacing)
{
	struct evr_mcast_opts o = opts(1, 1, 5);
	struct evr_mcast *m;
	unsigned prev, i;
	uint64_t end;

	o.rate = 1000;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	ck_assert_uint_eq(M.nsent[0], 1);
	ck_assert_int_ne(ev_is_active(&NODE(m, 0)->pace_w), 0);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_uint_eq(M.nsent[0], 1);
	prev = 1;
	end = evr_now_ns() + 5000000000ull;
	while (M.nsent[0] < 5 && evr_now_ns() < end) {
		ev_run(evr_loop_ev(L), EVRUN_ONCE);
		ck_assert_msg(M.nsent[0] - prev <= 1,
			      "%u sends in one loop iteration", M.nsent[0] - prev);
		prev = M.nsent[0];
	}
	ck_assert_uint_eq(M.nsent[0], 5);
	for (i = 0; i < 5; i++)
		ck_assert_uint_eq(M.seq[0][i], i);
	/* 4 intervals of 1 ms */
	ck_assert_msg(M.t_ns[0][4] - M.t_ns[0][0] >= 3000000u,
		      "5 paced sends in %llu ns",
		      (unsigned long long)(M.t_ns[0][4] - M.t_ns[0][0]));
	ck_assert_int_eq(ev_is_active(&NODE(m, 0)->pace_w), 0);
	run_ms(5);
	ck_assert_uint_eq(M.n_send_calls, 5);
	for (i = 0; i < 4; i++)
		EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	assert_phases(PH_ALL);
	finish(m);
}
END_TEST

/* ... from the time of the go, however old the loop's time is then (a
 * go handled late in a long loop pass): the pace from the loop's time
 * was overdue at once, and its first ticks came one a loop pass. */
START_TEST(test_rate_pacing_late_go)
{
	struct evr_mcast_opts o = opts(1, 1, 5);
	struct evr_mcast *m;
	uint64_t end;
	unsigned i;

	o.rate = 1000;
	o.settle_ms = 1000; /* the go is this test's, not the settle's */
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_JOINED, 5000);
	/* the loop's time stands still while this pass goes on */
	usleep(20000);
	EV(m, 0, EVR_MCE_GO, 0);
	ck_assert_uint_eq(M.nsent[0], 1);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	end = evr_now_ns() + 5000000000ull;
	while (M.nsent[0] < 5 && evr_now_ns() < end)
		ev_run(evr_loop_ev(L), EVRUN_ONCE);
	ck_assert_uint_eq(M.nsent[0], 5);
	/* 4 intervals of 1 ms, the first among them */
	ck_assert_msg(M.t_ns[0][1] - M.t_ns[0][0] >= 500000u,
		      "the first paced send %llu ns after the go",
		      (unsigned long long)(M.t_ns[0][1] - M.t_ns[0][0]));
	ck_assert_msg(M.t_ns[0][4] - M.t_ns[0][0] >= 3000000u,
		      "5 paced sends in %llu ns",
		      (unsigned long long)(M.t_ns[0][4] - M.t_ns[0][0]));
	for (i = 0; i < 4; i++)
		EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	finish(m);
}
END_TEST

/* A full send queue (-EAGAIN): retried on a completion or a send slot,
 * with the same sequence number. */
START_TEST(test_send_eagain)
{
	struct evr_mcast_opts o = opts(1, 1, 4);
	struct evr_mcast *m;
	unsigned i;

	M.send_script[0] = 0;
	M.send_script[1] = 0;
	M.send_script[2] = -EAGAIN;
	M.send_script[3] = -EAGAIN;
	M.send_nscript = 4;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	ck_assert_uint_eq(M.nsent[0], 2);
	ck_assert_uint_eq(M.n_send_calls, 3);
	ck_assert_uint_eq(NODE(m, 0)->sent, 2);
	EV(m, 0, EVR_MCE_SEND_SLOT, 0);
	ck_assert_uint_eq(M.n_send_calls, 4);
	ck_assert_uint_eq(M.nsent[0], 2);
	EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_uint_eq(M.nsent[0], 4);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(M.seq[0][i], i);
	ck_assert_int_eq(ST(m, 0), EVR_MC_RUNNING);
	for (i = 0; i < 3; i++)
		EV(m, 0, EVR_MCE_SEND_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	ck_assert_uint_eq(R.rep[0].sent, 4);
	ck_assert_uint_eq(R.rep[0].send_completed, 4);
	ck_assert_uint_eq(M.n_send_calls, 6);
	finish(m);
}
END_TEST

START_TEST(test_send_error)
{
	struct evr_mcast_opts o = opts(1, 1, 4);
	struct evr_mcast *m;

	M.send_script[0] = 0;
	M.send_script[1] = -1;
	M.send_nscript = 2;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_FAILED, 5000);
	ck_assert_uint_eq(M.n_send_calls, 2);
	ck_assert_uint_eq(M.n_leave[0], 1);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -1);
	ck_assert_str_eq(R.fail[0].msg, "mckey: sendto");
	ck_assert_uint_eq(R.rep[0].sent, 1);
	assert_phases(PH_NODONE);
	finish(m);
}
END_TEST

/* A leave failure on its own is the status (and the QP failed). */
START_TEST(test_leave_failure)
{
	struct evr_mcast_opts o = opts(0, 2, 0);
	struct evr_mcast *m;

	M.leave_ret[1] = -1;
	m = mk(&o);
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -1);
	ck_assert_uint_eq(R.nfail, 1);
	ck_assert_str_eq(R.fail[0].msg, "mckey: failure leaving");
	ck_assert_uint_eq(M.n_leave[0], 1);
	ck_assert_uint_eq(M.n_leave[1], 1);
	assert_trace(0, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>DONE");
	assert_trace(1, "IDLE>RESOLVING>JOINING>JOINED>RUNNING>FAILED");
	finish(m);
}
END_TEST

START_TEST(test_engine_init_failure)
{
	struct evr_mcast_opts o = opts(0, 2, 5);
	struct evr_mcast *m;

	M.engine_init_ret = -1;
	m = mk(&o);
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 1);
	ck_assert_str_eq(R.fail[0].msg, "No RDMA devices were detected");
	/* programs know it by its code, not its text */
	ck_assert_int_eq(R.fail[0].code, -EVR_E_NODEV);
	ck_assert_uint_eq(R.nphase, 0);
	ck_assert_uint_eq(M.n_prepare, 0);
	ck_assert_uint_eq(M.n_node_init[0], 0);
	ck_assert_uint_eq(M.n_resolve[0], 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_FAILED);
	ck_assert_int_eq(ST(m, 1), EVR_MC_FAILED);
	finish(m);
}
END_TEST

START_TEST(test_node_init_failure)
{
	struct evr_mcast_opts o = opts(0, 3, 5);
	struct evr_mcast *m;

	M.node_init_fail_at = 1;
	m = mk(&o);
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 1);
	ck_assert_uint_eq(R.nphase, 0);
	ck_assert_uint_eq(M.n_prepare, 0);
	ck_assert_uint_eq(M.n_node_init[2], 0);
	ck_assert_uint_eq(M.n_resolve[0], 0);
	finish(m);
}
END_TEST

START_TEST(test_prepare_failure)
{
	struct evr_mcast_opts o = opts(1, 2, 5);
	struct evr_mcast *m;

	M.prepare_ret = -1;
	m = mk(&o);
	evr_mcast_start(m);
	WAIT_DONE();
	ck_assert_int_eq(R.status, -2);
	assert_phases(1, EVR_MC_PH_STARTING);
	ck_assert_uint_eq(M.n_resolve[0], 0);
	ck_assert_uint_eq(M.n_resolve[1], 0);
	ck_assert_uint_eq(M.n_leave[0], 0);
	finish(m);
}
END_TEST

/* The receiver's report: per-QP counts and per-sender lines, from what
 * the transport accounted (the mock accounts like udp.c's io_cb). */
static void deliver(struct evr_mcast *m, unsigned q, uint32_t sender,
		    uint32_t seq, uint32_t count)
{
	struct evr_mc_hdr h = { .sender = sender, .seq = seq, .count = count };
	uint8_t buf[100];

	evr__mc_payload_encode(buf, sizeof(buf), &h);
	evr__mc_acct_add(&NODE(m, q)->acct, buf, sizeof(buf));
	EV(m, q, EVR_MCE_RECV_COMP, 0);
}

START_TEST(test_receiver_report)
{
	struct evr_mcast_opts o = opts(0, 2, 6);
	struct evr_mcast *m = mk(&o);
	uint8_t junk[10] = { 0 };
	const struct evr_mc_sender_report *s;

	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	/* qp 0: sender A 0,2,2,1 (one dup, one reorder; 3 of 6 not
	 * received before the QP stopped at its own -C 6: not lost),
	 * sender B 0, and an upstream (headerless) message */
	deliver(m, 0, 0xa0000000u, 0, 6);
	deliver(m, 0, 0xa0000000u, 2, 6);
	deliver(m, 0, 0xa0000000u, 2, 6);
	deliver(m, 0, 0xb0000000u, 0, 1);
	deliver(m, 0, 0xa0000000u, 1, 6);
	evr__mc_acct_add(&NODE(m, 0)->acct, junk, sizeof(junk));
	EV(m, 0, EVR_MCE_RECV_COMP, 0);
	ck_assert_int_eq(ST(m, 0), EVR_MC_DONE);
	/* qp 1: a header out of range, then sender C's 0-3 and 5: 4 was
	 * lost (5 came after it) */
	deliver(m, 1, 0xc0000001u, 6, 6);
	deliver(m, 1, 0xc0000001u, 0, 6);
	deliver(m, 1, 0xc0000001u, 1, 6);
	deliver(m, 1, 0xc0000001u, 2, 6);
	deliver(m, 1, 0xc0000001u, 3, 6);
	deliver(m, 1, 0xc0000001u, 5, 6);
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);

	ck_assert_uint_eq(R.rep[0].received, 6);
	ck_assert_uint_eq(R.rep[0].expected, 6);
	ck_assert_uint_eq(R.rep[0].foreign, 1);
	ck_assert_uint_eq(R.rep[0].nsenders, 2);
	s = &R.rep[0].senders[0];
	ck_assert_uint_eq(s->sender, 0xa0000000u);
	ck_assert_uint_eq(s->count, 6);
	ck_assert_uint_eq(s->unique, 3);
	ck_assert_uint_eq(s->duplicates, 1);
	ck_assert_uint_eq(s->reordered, 1);
	ck_assert_uint_eq(s->lost, 0);
	ck_assert_uint_eq(s->not_received, 3);
	ck_assert_uint_eq(s->out_of_window, 0);
	s = &R.rep[0].senders[1];
	ck_assert_uint_eq(s->sender, 0xb0000000u);
	ck_assert_uint_eq(s->count, 1);
	ck_assert_uint_eq(s->unique, 1);
	ck_assert_uint_eq(s->lost, 0);
	ck_assert_uint_eq(s->not_received, 0);
	ck_assert_uint_eq(R.rep[0].bad, 0);
	ck_assert_uint_eq(R.rep[0].untracked, 0);
	ck_assert_uint_eq(R.rep[0].window, EVR_MC_DEFAULT_WINDOW);
	ck_assert_uint_eq(R.rep[0].max_senders, EVR_MC_DEFAULT_MAX_SENDERS);

	ck_assert_uint_eq(R.rep[1].received, 6);
	ck_assert_uint_eq(R.rep[1].foreign, 0);
	ck_assert_uint_eq(R.rep[1].bad, 1);
	ck_assert_uint_eq(R.rep[1].nsenders, 1);
	s = &R.rep[1].senders[0];
	ck_assert_uint_eq(s->sender, 0xc0000001u);
	ck_assert_uint_eq(s->unique, 5);
	ck_assert_uint_eq(s->lost, 1);
	ck_assert_uint_eq(s->not_received, 0);
	ck_assert_uint_eq(s->duplicates, 0);
	ck_assert_uint_eq(s->reordered, 0);
	finish(m);
}
END_TEST

/* The receiver's limits come from its options, and reach the report. */
START_TEST(test_receiver_limits)
{
	struct evr_mcast_opts o = opts(0, 1, 4);
	struct evr_mcast *m;
	const struct evr_mc_sender_report *s;

	o.window = 64;
	o.max_senders = 1;
	m = mk(&o);
	evr_mcast_start(m);
	RUN_UNTIL(ST(m, 0) == EVR_MC_RUNNING, 5000);
	deliver(m, 0, 0xa0000000u, 100, 1000);
	deliver(m, 0, 0xb0000000u, 0, 1000);   /* beyond max_senders */
	deliver(m, 0, 0xa0000000u, 36, 1000);  /* 64 behind: outside */
	deliver(m, 0, 0xa0000000u, 37, 1000);  /* 63 behind: reordered */
	WAIT_DONE();
	ck_assert_int_eq(R.status, 0);
	ck_assert_uint_eq(R.rep[0].received, 4);
	ck_assert_uint_eq(R.rep[0].window, 64);
	ck_assert_uint_eq(R.rep[0].max_senders, 1);
	ck_assert_uint_eq(R.rep[0].untracked, 1);
	ck_assert_uint_eq(R.rep[0].nsenders, 1);
	s = &R.rep[0].senders[0];
	ck_assert_uint_eq(s->unique, 2);
	ck_assert_uint_eq(s->out_of_window, 1);
	ck_assert_uint_eq(s->reordered, 1);
	ck_assert_uint_eq(s->lost, 99);
	ck_assert_uint_eq(s->not_received, 899);
	finish(m);
}
END_TEST

/* Freed mid-run without a cancel: the transport is torn down, no done. */
START_TEST(test_free_mid_run)
{
	struct evr_mcast_opts o = opts(1, 2, 5);
	struct evr_mcast *m;
	unsigned q;

	M.join_ret[1] = 0;
	m = mk(&o);
	evr_mcast_start(m);
	LIVE = NULL;
	evr_mcast_free(m);
	ck_assert_uint_eq(R.ndone, 0);
	ck_assert_uint_eq(M.n_engine_fini, 1);
	for (q = 0; q < 2; q++)
		ck_assert_uint_eq(M.n_node_fini[q], 1);
	run_ms(20); /* no watcher of the freed engine fires */
	ck_assert_uint_eq(R.ndone, 0);

	/* and one never started touches no transport */
	memset(&M, 0, sizeof(M));
	m = mk(&o);
	LIVE = NULL;
	evr_mcast_free(m);
	ck_assert_uint_eq(M.n_engine_init + M.n_engine_fini, 0);
	ck_assert_uint_eq(M.n_node_fini[0], 0);
}
END_TEST

/* Defaults filled in by the engine. */
START_TEST(test_engine_defaults)
{
	struct evr_mcast_opts o = opts(0, 0, 5);
	struct evr_mcast *m;

	o.resolve_ms = 0;
	o.join_ms = 0;
	o.udp_port = 0;
	m = mk(&o);
	ck_assert_uint_eq(m->nnodes, 1);
	ck_assert_uint_eq(m->o.resolve_ms, EVR_MC_DEFAULT_RESOLVE_MS);
	ck_assert_uint_eq(m->o.join_ms, EVR_MC_DEFAULT_JOIN_MS);
	ck_assert_uint_eq(m->o.udp_port, EVR_MC_DEFAULT_UDP_PORT);
	/* the engine runs what evr_mcast_opts_resolve() says */
	{
		struct evr_mcast_opts r;

		ck_assert_int_eq(evr_mcast_opts_resolve(&o, &r), 0);
		r.group = m->o.group;
		r.bind_addr = m->o.bind_addr;
		ck_assert_mem_eq(&m->o, &r, sizeof(r));
	}
	/* the strings are the engine's own copies */
	ck_assert_ptr_ne(m->o.group, o.group);
	ck_assert_str_eq(m->o.group, "239.1.1.1");
	ck_assert_str_eq(m->o.bind_addr, "10.0.0.1");
	ck_assert_ptr_null(m->o.unmapped);
	LIVE = NULL;
	evr_mcast_free(m);
}
END_TEST

/* ================================================================== */
/* mckey's command line                                                */

#define MAX_ARGS 32

static char err_text[1024];

static int parse_v(struct mckey_cli *cli, const char *const *args)
{
	static char *argv[MAX_ARGS + 2];
	int argc = 0, ret;
	FILE *f;
	size_t n;

	memset(argv, 0, sizeof(argv));
	argv[argc++] = (char *)"mckey";
	while (args[argc - 1]) {
		ck_assert_int_lt(argc, MAX_ARGS);
		argv[argc] = (char *)args[argc - 1];
		argc++;
	}
	f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ret = mckey_parse(argc, argv, cli, f);
	rewind(f);
	n = fread(err_text, 1, sizeof(err_text) - 1, f);
	err_text[n] = 0;
	fclose(f);
	return ret;
}

#define PARSE(cli, ...) \
	parse_v((cli), (const char *const[]){ __VA_ARGS__, NULL })

static void assert_bad(int ret, const char *what)
{
	const char *nl = strchr(err_text, '\n');

	ck_assert_msg(ret == MCKEY_PARSE_BAD, "%s: got %d, not BAD", what, ret);
	ck_assert_msg(nl && nl[1] == 0, "%s: not one line: \"%s\"", what,
		      err_text);
	ck_assert_msg(!strncmp(err_text, "mckey: ", 7),
		      "%s: \"%s\" lacks the program name", what, err_text);
}

#define ASSERT_BAD(...) do { \
	struct mckey_cli c_; \
	assert_bad(PARSE(&c_, __VA_ARGS__), #__VA_ARGS__); \
} while (0)

#define ASSERT_PARSE(want, ...) do { \
	struct mckey_cli c_; \
	int r_ = PARSE(&c_, __VA_ARGS__); \
	ck_assert_msg(r_ == (want), "%s: got %d, want %d", #__VA_ARGS__, \
		      r_, (want)); \
} while (0)

START_TEST(test_parse_defaults)
{
	struct mckey_cli c;

	ck_assert_int_eq(PARSE(&c, "-m", "239.1.1.1"), MCKEY_PARSE_OK);
	ck_assert_str_eq(err_text, "");
	ck_assert_str_eq(c.o.group, "239.1.1.1");
	ck_assert_ptr_null(c.o.unmapped);
	ck_assert_ptr_null(c.o.bind_addr);
	ck_assert_int_eq(c.o.transport, EVR_MC_RDMA);
	ck_assert_int_eq(c.o.sender, 0);
	ck_assert_uint_eq(c.o.nqps, 1);
	ck_assert_uint_eq(c.o.count, 10);
	ck_assert_uint_eq(c.o.size, 100);
	ck_assert_int_eq(c.o.port_space, 0x111);
	ck_assert_int_eq(c.o.sendonly, 0);
	ck_assert_int_eq(c.o.no_loopback, 0);
	ck_assert_uint_eq(c.o.settle_ms, 3000);
	ck_assert(c.o.rate == 0);
	ck_assert_int_eq(c.stats, 0);
	ck_assert_int_eq(c.trace, 0);
	/* the engine's defaults are the library's to fill, not the parser's:
	 * left 0, and in effect as before */
	ck_assert_uint_eq(c.o.deadline_ms, 0);
	ck_assert_uint_eq(c.o.udp_port, 0);
	ck_assert_uint_eq(c.o.window, 0);
	ck_assert_uint_eq(c.o.max_senders, 0);
	{
		struct evr_mcast_opts eff;

		ck_assert_int_eq(evr_mcast_opts_resolve(&c.o, &eff), 0);
		ck_assert_uint_eq(eff.settle_ms, 3000);
		ck_assert_uint_eq(eff.deadline_ms, 30000);
		ck_assert_uint_eq(eff.udp_port, 7174);
		ck_assert_uint_eq(eff.window, 4096);
		ck_assert_uint_eq(eff.max_senders, 256);
	}
}
END_TEST

START_TEST(test_parse_upstream_options)
{
	struct mckey_cli c;

	ck_assert_int_eq(PARSE(&c, "-m", "ff0e::1234", "-s", "-b", "10.0.0.2",
			       "-c", "4", "-C", "20", "-S", "1024", "-p", "0x2",
			       "-o", "-l"), MCKEY_PARSE_OK);
	ck_assert_str_eq(c.o.group, "ff0e::1234");
	ck_assert_int_eq(c.o.sender, 1);
	ck_assert_str_eq(c.o.bind_addr, "10.0.0.2");
	ck_assert_uint_eq(c.o.nqps, 4);
	ck_assert_uint_eq(c.o.count, 20);
	ck_assert_uint_eq(c.o.size, 1024);
	ck_assert_int_eq(c.o.port_space, 2);
	ck_assert_int_eq(c.o.sendonly, 1);
	ck_assert_int_eq(c.o.no_loopback, 1);
	ck_assert_int_eq(c.o.transport, EVR_MC_RDMA);

	/* -M with -b: the MGID is the group */
	ck_assert_int_eq(PARSE(&c, "-M", "ff12:a01b::1", "-b", "10.0.0.1"),
			 MCKEY_PARSE_OK);
	ck_assert_str_eq(c.o.unmapped, "ff12:a01b::1");
	ck_assert_str_eq(c.o.group, "ff12:a01b::1");
	ck_assert_str_eq(c.o.bind_addr, "10.0.0.1");

	/* clustered and attached, as getopt allows */
	ck_assert_int_eq(PARSE(&c, "-sol", "-m239.2.2.2", "-c2", "-C0", "-S0"),
			 MCKEY_PARSE_OK);
	ck_assert_int_eq(c.o.sender, 1);
	ck_assert_int_eq(c.o.sendonly, 1);
	ck_assert_int_eq(c.o.no_loopback, 1);
	ck_assert_str_eq(c.o.group, "239.2.2.2");
	ck_assert_uint_eq(c.o.nqps, 2);
	ck_assert_uint_eq(c.o.count, 0);
	ck_assert_uint_eq(c.o.size, 0);

	/* limits that are accepted */
	ck_assert_int_eq(PARSE(&c, "-m", "g", "-c", "1024", "-C", "100000000",
			       "-S", "65507"), MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.nqps, 1024);
	ck_assert_uint_eq(c.o.count, 100000000);
	ck_assert_uint_eq(c.o.size, 65507);
	ck_assert_int_eq(PARSE(&c, "-m", "g", "-c", "1"), MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.nqps, 1);
}
END_TEST

START_TEST(test_parse_port_space)
{
	static const struct { const char *arg; int want; } ok[] = {
		{ "0x111", 0x111 }, { "273", 0x111 }, { "0X111", 0x111 },
		{ "0x2", 2 }, { "2", 2 }, { "0x0002", 2 },
	};
	static const char *const bad[] = { "0x106", "0", "1", "3", "0x112",
					   "274", "-2", "abc", "", "0x",
					   "2x", "0x1111", "0x10111" };
	struct mckey_cli c;
	unsigned i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(PARSE(&c, "-m", "g", "-p", ok[i].arg) ==
			      MCKEY_PARSE_OK, "-p %s refused", ok[i].arg);
		ck_assert_int_eq(c.o.port_space, ok[i].want);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_bad(PARSE(&c, "-m", "g", "-p", bad[i]), bad[i]);
}
END_TEST

START_TEST(test_parse_bad_values)
{
	ASSERT_BAD("-m", "g", "-c", "0");
	ASSERT_BAD("-m", "g", "-c", "-1");
	ASSERT_BAD("-m", "g", "-c", "abc");
	ASSERT_BAD("-m", "g", "-c", "1025");
	ASSERT_BAD("-m", "g", "-c", "");
	ASSERT_BAD("-m", "g", "-c", "3x");
	ASSERT_BAD("-m", "g", "-c", "99999999999999999999");
	ASSERT_BAD("-m", "g", "-C", "-1");
	ASSERT_BAD("-m", "g", "-C", "ten");
	ASSERT_BAD("-m", "g", "-C", "100000001");
	ASSERT_BAD("-m", "g", "-S", "65508");
	ASSERT_BAD("-m", "g", "-S", "-1");
	ASSERT_BAD("-m", "g", "-S", "1k");
	ASSERT_BAD("-m", "g", "--udp-port", "0");
	ASSERT_BAD("-m", "g", "--udp-port", "65536");
	ASSERT_BAD("-m", "g", "--settle", "-1");
	ASSERT_BAD("-m", "g", "--settle", "x");
	ASSERT_BAD("-m", "g", "--settle", "nan");
	ASSERT_BAD("-m", "g", "--deadline", "0");
	ASSERT_BAD("-m", "g", "--deadline", "inf");
	ASSERT_BAD("-m", "g", "--rate", "0");
	ASSERT_BAD("-m", "g", "--rate", "-5");
	ASSERT_BAD("-m", "g", "--rate", "fast");
	ASSERT_BAD("-m", "g", "stray");
	/* no group at all */
	ASSERT_BAD("-s");
	ASSERT_BAD("-b", "10.0.0.1", "-C", "5");
}
END_TEST

START_TEST(test_parse_unmapped_usage)
{
	ASSERT_PARSE(MCKEY_PARSE_UNMAPPED, "-M", "ff12:a01b::1");
	ASSERT_PARSE(MCKEY_PARSE_UNMAPPED, "-M", "0", "-s");
	ASSERT_PARSE(MCKEY_PARSE_USAGE, "-m", "g", "-x");
	ASSERT_PARSE(MCKEY_PARSE_USAGE, "-m", "g", "--bogus");
	ASSERT_PARSE(MCKEY_PARSE_USAGE, "-m", "g", "-c");   /* no argument */
	ASSERT_PARSE(MCKEY_PARSE_USAGE, "-m");
	ASSERT_PARSE(MCKEY_PARSE_HELP, "--help");
	ASSERT_PARSE(MCKEY_PARSE_VERSION, "--version");
}
END_TEST

START_TEST(test_parse_long_options)
{
	struct mckey_cli c;

	ck_assert_int_eq(PARSE(&c, "-m", "239.1.1.1", "--udp", "--udp-port",
			       "9000", "--settle", "0.5", "--deadline", "2.5",
			       "--rate", "20", "--stats", "--trace"),
			 MCKEY_PARSE_OK);
	ck_assert_int_eq(c.o.transport, EVR_MC_UDP);
	ck_assert_uint_eq(c.o.udp_port, 9000);
	ck_assert_uint_eq(c.o.settle_ms, 500);
	ck_assert_uint_eq(c.o.deadline_ms, 2500);
	ck_assert(c.o.rate == 20.0);
	ck_assert_int_eq(c.stats, 1);
	ck_assert_int_eq(c.trace, 1);

	ck_assert_int_eq(PARSE(&c, "-m", "g", "--settle", "0",
			       "--deadline=0.01", "--rate=0.5",
			       "--udp-port=65535"), MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.settle_ms, 0);
	ck_assert_uint_eq(c.o.deadline_ms, 10);
	ck_assert(c.o.rate == 0.5);
	ck_assert_uint_eq(c.o.udp_port, 65535);
	ck_assert_int_eq(PARSE(&c, "-m", "g", "--settle", "3600",
			       "--deadline", "86400"), MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.settle_ms, 3600000);
	ck_assert_uint_eq(c.o.deadline_ms, 86400000);
	ASSERT_BAD("-m", "g", "--settle", "3601");
	ASSERT_BAD("-m", "g", "--deadline", "86401");

	/* the receiver's own limits on what senders can make it track */
	ck_assert_int_eq(PARSE(&c, "-m", "g", "--window", "64",
			       "--max-senders", "1"), MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.window, 64);
	ck_assert_uint_eq(c.o.max_senders, 1);
	ck_assert_int_eq(PARSE(&c, "-m", "g", "--window=1048576",
			       "--max-senders=4096"), MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.window, 1048576);
	ck_assert_uint_eq(c.o.max_senders, 4096);
	ck_assert_int_eq(PARSE(&c, "-m", "g", "--window", "100"),
			 MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.window, 128);   /* a multiple of 64 */
	ASSERT_BAD("-m", "g", "--window", "63");
	ASSERT_BAD("-m", "g", "--window", "1048577");
	ASSERT_BAD("-m", "g", "--window", "4k");
	ASSERT_BAD("-m", "g", "--max-senders", "0");
	ASSERT_BAD("-m", "g", "--max-senders", "4097");
	ASSERT_BAD("-m", "g", "--max-senders", "-1");
}
END_TEST

/* Parsing twice starts from the defaults again (optind reset). */
START_TEST(test_parse_repeat)
{
	struct mckey_cli c;
	int i;

	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(PARSE(&c, "-m", "239.9.9.9", "-s", "-c", "4",
				       "--udp", "--stats"), MCKEY_PARSE_OK);
		ck_assert_int_eq(c.o.sender, 1);
		ck_assert_uint_eq(c.o.nqps, 4);
		ck_assert_int_eq(PARSE(&c, "-m", "239.8.8.8"), MCKEY_PARSE_OK);
		ck_assert_int_eq(c.o.sender, 0);
		ck_assert_uint_eq(c.o.nqps, 1);
		ck_assert_int_eq(c.o.transport, EVR_MC_RDMA);
		ck_assert_int_eq(c.stats, 0);
		ck_assert_str_eq(c.o.group, "239.8.8.8");
	}
	/* after a failure in the middle of a cluster */
	ck_assert_int_eq(PARSE(&c, "-m", "g", "-sx"), MCKEY_PARSE_USAGE);
	ck_assert_int_eq(PARSE(&c, "-lc", "0", "-m", "g"), MCKEY_PARSE_BAD);
	ck_assert_int_eq(PARSE(&c, "-m", "239.7.7.7", "-C", "3"),
			 MCKEY_PARSE_OK);
	ck_assert_uint_eq(c.o.count, 3);
	ck_assert_int_eq(c.o.sender, 0);
	ck_assert_int_eq(c.o.no_loopback, 0);
	ck_assert_str_eq(c.o.group, "239.7.7.7");
}
END_TEST

START_TEST(test_usage_text)
{
	char buf[2048];
	FILE *f = tmpfile();
	size_t n;

	ck_assert_ptr_nonnull(f);
	mckey_usage(f, "mckey");
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	ck_assert_str_eq(buf,
		"usage: mckey\n"
		"\t-m multicast_address\n"
		"\t[-M unmapped_multicast_address]\n"
		"\t replaces -m and requires -b\n"
		"\t[-s(ender)]\n"
		"\t[-b bind_address]\n"
		"\t[-c connections]\n"
		"\t[-C message_count]\n"
		"\t[-S message_size]\n"
		"\t[-p port_space - 0x111 for UDP (default), 0x2 for IPOIB]\n"
		"\t[-o join as a send-only full-member]\n"
		"\t[-l join without multicast loopback]\n");
}
END_TEST

/* ================================================================== */

/* The one formatter of mcast failures: upstream's text, then what failed,
 * then the errno's text. */
START_TEST(test_failure_str)
{
	struct evr_mc_failure f;
	char b[128];

	memset(&f, 0, sizeof(f));
	f.msg = "mckey: addr bind failure";
	f.with_errno = 1;
	f.sys_errno = EADDRNOTAVAIL;
	evr_mc_failure_str(&f, b, sizeof(b));
	ck_assert_str_eq(b, "mckey: addr bind failure: Cannot assign requested address");
	snprintf(f.detail, sizeof(f.detail), "10.9.9.9");
	evr_mc_failure_str(&f, b, sizeof(b));
	ck_assert_str_eq(b, "mckey: addr bind failure 10.9.9.9: Cannot assign requested address");
	f.with_errno = 0;
	snprintf(f.detail, sizeof(f.detail), "timed out");
	evr_mc_failure_str(&f, b, sizeof(b));
	ck_assert_str_eq(b, "mckey: addr bind failure: timed out");
	f.detail[0] = '\0';
	evr_mc_failure_str(&f, b, 10);
	ck_assert_str_eq(b, "mckey: ad");
	evr_mc_failure_str(NULL, b, sizeof(b));
	ck_assert_str_eq(b, "no failure");
	evr_mc_failure_str(&f, NULL, 5);
}
END_TEST

/* Transports are a table: each kind has its name, and a kind no
 * transport has is refused before anything is allocated. */
START_TEST(test_transport_names)
{
	struct evr_mcast_opts o = { .group = "239.1.1.1" };
	struct evr_mcast_cbs cbs = { 0 };
	struct evr_mcast *m = (struct evr_mcast *)&o;
	struct evr_loop *l;

	ck_assert_str_eq(evr_mc_transport_name(EVR_MC_RDMA), "rdma");
	ck_assert_str_eq(evr_mc_transport_name(EVR_MC_UDP), "udp");
	ck_assert_ptr_null(evr_mc_transport_name(EVR_MC_UDP + 1));
	ck_assert_ptr_null(evr_mc_transport_name((enum evr_mc_transport)-1));
	ck_assert_int_eq(evr_loop_new(&l, NULL), 0);
	o.transport = (enum evr_mc_transport)(EVR_MC_UDP + 1);
	ck_assert_int_eq(evr_mcast_new(&m, l, &o, &cbs, NULL), -EINVAL);
	ck_assert_ptr_eq(m, (struct evr_mcast *)&o); /* untouched */
	o.transport = EVR_MC_UDP;
	ck_assert_int_eq(evr_mcast_new(&m, l, &o, &cbs, NULL), 0);
	evr_mcast_free(m);
	evr_loop_free(l);
}
END_TEST

/* What a transport needs of the host (UDP nothing, RDMA a device: as
 * many as libibverbs lists here), and its own settings of the options,
 * resolved, as rows: UDP's port, RDMA's port space. */
START_TEST(test_transport_check_settings)
{
	struct evr_mcast_opts o = { .group = "239.1.1.1" };
	struct evr_setting rows[EVR_SETTINGS_MAX];
	struct ibv_device **l;
	int n = 0;

	l = ibv_get_device_list(&n);
	if (l)
		ibv_free_device_list(l);
	ck_assert_int_eq(evr_mc_transport_check(EVR_MC_UDP), 0);
	ck_assert_int_eq(evr_mc_transport_check(EVR_MC_RDMA),
			 n > 0 ? 0 : -EVR_E_NODEV);
	ck_assert_int_eq(evr_mc_transport_check(EVR_MC_UDP + 1), -EINVAL);

	o.transport = EVR_MC_UDP;
	ck_assert_int_eq(evr_mcast_settings(&o, rows, EVR_SETTINGS_MAX), 1);
	ck_assert_str_eq(rows[0].key, "udp_port");
	ck_assert_int_eq(rows[0].value, EVR_MC_DEFAULT_UDP_PORT);
	ck_assert_uint_eq(rows[0].flags, 0);
	o.transport = EVR_MC_RDMA;
	o.port_space = 0x111;
	ck_assert_int_eq(evr_mcast_settings(&o, rows, EVR_SETTINGS_MAX), 1);
	ck_assert_str_eq(rows[0].key, "port_space");
	ck_assert_int_eq(rows[0].value, 0x111);
	ck_assert_int_eq(evr_mcast_settings(&o, rows, 0), 0);
	o.transport = (enum evr_mc_transport)(EVR_MC_UDP + 1);
	ck_assert_int_eq(evr_mcast_settings(&o, rows, EVR_SETTINGS_MAX),
			 -EINVAL);
}
END_TEST

/* Every zero that stands for a default comes back as it, the limits
 * clamped as the engine clamps them; a second resolve changes nothing. */
START_TEST(test_opts_resolve)
{
	struct evr_mcast_opts in, r, r2;

	memset(&in, 0, sizeof(in));
	in.size = 100;
	in.count = 5;
	ck_assert_int_eq(evr_mcast_opts_resolve(&in, &r), 0);
	ck_assert_uint_eq(r.nqps, 1);
	ck_assert_uint_eq(r.resolve_ms, EVR_MC_DEFAULT_RESOLVE_MS);
	ck_assert_uint_eq(r.join_ms, EVR_MC_DEFAULT_JOIN_MS);
	ck_assert_uint_eq(r.deadline_ms, EVR_MC_DEFAULT_DEADLINE_MS);
	ck_assert_uint_eq(r.udp_port, EVR_MC_DEFAULT_UDP_PORT);
	ck_assert_uint_eq(r.window, EVR_MC_DEFAULT_WINDOW);
	ck_assert_uint_eq(r.max_senders, EVR_MC_DEFAULT_MAX_SENDERS);
	ck_assert_uint_eq(r.count, 5);
	/* zeros that are values */
	ck_assert_uint_eq(r.settle_ms, 0);
	ck_assert_int_eq(r.port_space, 0);
	ck_assert(r.rate == 0);
	ck_assert_int_eq(evr_mcast_opts_resolve(&r, &r2), 0);
	ck_assert_mem_eq(&r, &r2, sizeof(r));
	ck_assert_int_eq(evr_mcast_opts_resolve(&in, &in), 0);
	ck_assert_mem_eq(&in, &r, sizeof(r));

	/* given values kept, the limits clamped and rounded, no size no
	 * messages */
	memset(&in, 0, sizeof(in));
	in.transport = EVR_MC_UDP;
	in.nqps = 3;
	in.deadline_ms = 7;
	in.udp_port = 9;
	in.window = 100;
	in.max_senders = EVR_MC_MAX_MAX_SENDERS + 1;
	in.count = 5;
	ck_assert_int_eq(evr_mcast_opts_resolve(&in, &r), 0);
	ck_assert_uint_eq(r.nqps, 3);
	ck_assert_uint_eq(r.deadline_ms, 7);
	ck_assert_uint_eq(r.udp_port, 9);
	ck_assert_uint_eq(r.window, 128);
	ck_assert_uint_eq(r.max_senders, EVR_MC_MAX_MAX_SENDERS);
	ck_assert_uint_eq(r.count, 0);
	ck_assert_int_eq(evr_mcast_opts_resolve(&r, &r2), 0);
	ck_assert_mem_eq(&r, &r2, sizeof(r));

	/* an unknown transport, as evr_mcast_new() */
	in.transport = (enum evr_mc_transport)7;
	ck_assert_int_eq(evr_mcast_opts_resolve(&in, &r), -EINVAL);
}
END_TEST

/* What a run needs of the host, from the transport's row. */
START_TEST(test_mcast_need)
{
	struct evr_mcast_opts o;
	struct evr_hc_need n;

	memset(&o, 0, sizeof(o));
	o.transport = EVR_MC_UDP;
	o.size = 100;
	o.count = 10;
	o.bind_addr = "127.0.0.1";
	memset(&n, 0xa5, sizeof(n));
	ck_assert_int_eq(evr_mcast_need(&o, &n), 0);
	ck_assert_int_eq(n.rdma, 0);
	ck_assert_uint_eq(n.memlock, 0);
	/* a socket a QP, and the loop's own (nqps 0: one QP) */
	ck_assert_uint_eq(n.fds, 17);
	o.nqps = 1024;
	ck_assert_int_eq(evr_mcast_need(&o, &n), 0);
	ck_assert_uint_eq(n.fds, 1040);
	o.nqps = 0;
	ck_assert_uint_eq(n.fds_raise, 0);
	ck_assert_uint_eq(n.msg_size, 100);
	ck_assert_str_eq(n.addr, "127.0.0.1");

	o.transport = EVR_MC_RDMA;
	ck_assert_int_eq(evr_mcast_need(&o, &n), 0);
	ck_assert_int_eq(n.rdma, 1);
	ck_assert_uint_gt(n.memlock, 0);
	ck_assert_uint_eq(n.memlock, evr_mcast_memlock(&o));
	/* RDMA's QPs share the channels: the same whatever -c */
	ck_assert_uint_eq(n.fds, 32);
	o.nqps = 1024;
	ck_assert_int_eq(evr_mcast_need(&o, &n), 0);
	ck_assert_uint_eq(n.fds, 32);
	o.nqps = 0;
	ck_assert_uint_eq(n.msg_size, 100);
	/* no messages: no size to fit the MTU */
	o.count = 0;
	ck_assert_int_eq(evr_mcast_need(&o, &n), 0);
	ck_assert_uint_eq(n.msg_size, 0);

	o.transport = (enum evr_mc_transport)7;
	ck_assert_int_eq(evr_mcast_need(&o, &n), -EINVAL);
	ck_assert_int_eq(n.rdma, 0);
}
END_TEST

static Suite *mcast_suite(void)
{
	Suite *s = suite_create("mcast");
	TCase *tc;

	tc = tcase_create("payload");
	tcase_add_test(tc, test_payload_bytes);
	tcase_add_test(tc, test_payload_roundtrip);
	tcase_add_test(tc, test_payload_short);
	tcase_add_test(tc, test_payload_bad_magic_version);
	tcase_add_test(tc, test_transport_names);
	tcase_add_test(tc, test_transport_check_settings);
	tcase_add_test(tc, test_opts_resolve);
	tcase_add_test(tc, test_mcast_need);
	suite_add_tcase(s, tc);

	tc = tcase_create("accounting");
	tcase_add_test(tc, test_acct_in_order);
	tcase_add_test(tc, test_acct_duplicates);
	tcase_add_test(tc, test_acct_reorder);
	tcase_add_test(tc, test_acct_loss);
	tcase_add_test(tc, test_acct_senders);
	tcase_add_test(tc, test_acct_foreign);
	tcase_add_test(tc, test_acct_bad_headers);
	tcase_add_test(tc, test_acct_untracked);
	tcase_add_test(tc, test_acct_huge_count);
	tcase_add_test(tc, test_acct_stopped_early_not_lost);
	tcase_add_test(tc, test_acct_window);
	tcase_add_test(tc, test_acct_max_senders);
	tcase_add_test(tc, test_acct_memory_bounded);
	suite_add_tcase(s, tc);

	tc = tcase_create("machine");
	tcase_add_checked_fixture(tc, sm_setup, sm_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_every_state);
	tcase_add_test(tc, test_sender_success);
	tcase_add_test(tc, test_receiver_success);
	tcase_add_test(tc, test_receiver_all_before_go);
	tcase_add_test(tc, test_receiver_extra);
	tcase_add_test(tc, test_barrier);
	tcase_add_loop_test(tc, test_count_zero, 0, 2);
	tcase_add_loop_test(tc, test_size_zero, 0, 2);
	tcase_add_test(tc, test_resolve_error_async);
	tcase_add_test(tc, test_resolve_error_sync);
	tcase_add_loop_test(tc, test_join_error, 0, 2);
	tcase_add_loop_test(tc, test_rejoin_once, 0, 3);
	tcase_add_test(tc, test_rejoin_sender_waits);
	tcase_add_test(tc, test_rejoin_in_settle);
	tcase_add_test(tc, test_setup_failure);
	tcase_add_test(tc, test_setup_failure_single);
	tcase_add_test(tc, test_deadline_receiver);
	tcase_add_test(tc, test_deadline_sender);
	tcase_add_loop_test(tc, test_completion_error, 0, 2);
	tcase_add_loop_test(tc, test_device_lost, 0, 2);
	tcase_add_test(tc, test_step_timeout_resolving);
	tcase_add_test(tc, test_step_timer_resolving);
	tcase_add_test(tc, test_step_timer_joining);
	tcase_add_test(tc, test_step_timeout_ignored);
	tcase_add_test(tc, test_cancel_running);
	tcase_add_test(tc, test_cancel_joining);
	tcase_add_loop_test(tc, test_end_while_settling, 0, 2);
	tcase_add_test(tc, test_rate_pacing);
	tcase_add_test(tc, test_rate_pacing_late_go);
	tcase_add_test(tc, test_send_eagain);
	tcase_add_test(tc, test_send_error);
	tcase_add_test(tc, test_leave_failure);
	tcase_add_test(tc, test_engine_init_failure);
	tcase_add_test(tc, test_node_init_failure);
	tcase_add_test(tc, test_prepare_failure);
	tcase_add_test(tc, test_receiver_report);
	tcase_add_test(tc, test_receiver_limits);
	tcase_add_test(tc, test_free_mid_run);
	tcase_add_test(tc, test_cancel_inside_own_callback);
	tcase_add_test(tc, test_cancel_inside_start);
	tcase_add_test(tc, test_free_inside_done);
	tcase_add_test(tc, test_engine_defaults);
	suite_add_tcase(s, tc);

	tc = tcase_create("cli");
	tcase_add_test(tc, test_failure_str);
	tcase_add_test(tc, test_parse_defaults);
	tcase_add_test(tc, test_parse_upstream_options);
	tcase_add_test(tc, test_parse_port_space);
	tcase_add_test(tc, test_parse_bad_values);
	tcase_add_test(tc, test_parse_long_options);
	tcase_add_test(tc, test_usage_text);
	/* last: getopt prints to the real stderr, and a failure without
	 * fork would leave getopt's state half-way through a cluster */
	tcase_add_test(tc, test_parse_unmapped_usage);
	tcase_add_test(tc, test_parse_repeat);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mcast_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
