/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The wire: HELLO/ACK, the plan negotiation messages and upstream's
 * verification pattern.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "stream/wire.h"

static const uint8_t zeros16[16];

static void seq16(uint8_t *b, uint8_t first)
{
	unsigned i;

	for (i = 0; i < 16; i++)
		b[i] = (uint8_t)(first + i);
}

/* ---- HELLO / ACK ---- */

START_TEST(test_hello_ack_shape)
{
	ck_assert_uint_eq(EVR_SYNC_LEN, 16);
	ck_assert_uint_eq(sizeof(evr__hello_msg), 16);
	ck_assert_uint_eq(sizeof(evr__ack_msg), 16);
	ck_assert_int_ne(memcmp(evr__hello_msg, evr__ack_msg, 16), 0);
	ck_assert_int_ne(memcmp(evr__hello_msg, zeros16, 16), 0);
	ck_assert_int_ne(memcmp(evr__ack_msg, zeros16, 16), 0);
}
END_TEST

START_TEST(test_hello_ack_recognised)
{
	uint8_t b[16];

	memcpy(b, evr__hello_msg, 16);
	ck_assert(evr__is_hello(b));
	ck_assert(!evr__is_ack(b));
	memcpy(b, evr__ack_msg, 16);
	ck_assert(evr__is_ack(b));
	ck_assert(!evr__is_hello(b));
}
END_TEST

START_TEST(test_hello_ack_not_other_things)
{
	uint8_t b[16];
	unsigned i;

	ck_assert(!evr__is_hello(zeros16));
	ck_assert(!evr__is_ack(zeros16));
	seq16(b, 0);
	ck_assert(!evr__is_hello(b));
	ck_assert(!evr__is_ack(b));
	/* every byte counts, the last one included */
	for (i = 0; i < 16; i++) {
		memcpy(b, evr__hello_msg, 16);
		b[i] ^= 0x01;
		ck_assert_msg(!evr__is_hello(b), "byte %u ignored", i);
		memcpy(b, evr__ack_msg, 16);
		b[i] ^= 0x01;
		ck_assert_msg(!evr__is_ack(b), "byte %u ignored", i);
	}
	/* neither is a pattern, a plan header or a reply */
	ck_assert(!evr__pattern_detect(evr__hello_msg, 16, NULL));
	ck_assert(!evr__pattern_detect(evr__ack_msg, 16, NULL));
	ck_assert_int_eq(evr__plan_reply_decode(evr__ack_msg, NULL), -1);
}
END_TEST

/* A server at its --max-conns says BUSY: 16 bytes of their own, none of
 * the other messages, and every byte counts. */
START_TEST(test_busy_msg)
{
	uint8_t b[16];
	unsigned i;

	ck_assert_uint_eq(sizeof(evr__busy_msg), 16);
	ck_assert(evr__is_busy(evr__busy_msg));
	ck_assert(!evr__is_busy(evr__hello_msg));
	ck_assert(!evr__is_busy(evr__ack_msg));
	ck_assert(!evr__is_busy(zeros16));
	ck_assert(!evr__is_hello(evr__busy_msg));
	ck_assert(!evr__is_ack(evr__busy_msg));
	ck_assert(!evr__pattern_detect(evr__busy_msg, 16, NULL));
	ck_assert_int_eq(evr__plan_reply_decode(evr__busy_msg, NULL), -1);
	for (i = 0; i < 16; i++) {
		memcpy(b, evr__busy_msg, 16);
		b[i] ^= 0x01;
		ck_assert_msg(!evr__is_busy(b), "byte %u ignored", i);
	}
	/* its reason, and the budget's, say what the server is out of (the
	 * option to change is rstream's words: check_cli) */
	ck_assert_str_eq(evr__plan_status_str(EVR_PLAN_E_CONNS),
			 "the server serves as many connections as it allows: "
			 "try again later");
	ck_assert_ptr_nonnull(strstr(evr__plan_status_str(EVR_PLAN_E_BUDGET),
				     "memory budget"));
	ck_assert_ptr_null(strstr(evr__plan_status_str(EVR_PLAN_E_BUDGET),
				  "--"));
}
END_TEST

/* ---- plan header ---- */

START_TEST(test_plan_hdr_bytes)
{
	struct evr_plan_hdr h = {
		.version = EVR_WIRE_VERSION,
		.flags = 0xa55a,
		.ntests = 33,
		.conn_index = 0x0102,
		.conn_total = 0x0304,
		.pat_send = 0x40,
		.pat_recv = 0xc1,
	};
	static const uint8_t want[16] = {
		'E', 'V', 'P', 'L', 0x00, 0x01, 0xa5, 0x5a,
		0x00, 0x21, 0x01, 0x02, 0x03, 0x04, 0x40, 0xc1,
	};
	uint8_t b[16];

	memset(b, 0xee, sizeof(b));
	evr__plan_hdr_encode(b, &h);
	ck_assert_mem_eq(b, want, 16);
}
END_TEST

START_TEST(test_plan_hdr_round_trip)
{
	struct evr_plan_hdr h = {
		.version = EVR_WIRE_VERSION,
		.flags = EVR_PLAN_F_VERIFY,
		.ntests = EVR_PLAN_MAX_TESTS,
		.conn_index = 1,
		.conn_total = 2,
		.pat_send = 200,
		.pat_recv = 7,
	}, d;
	uint8_t b[16];

	evr__plan_hdr_encode(b, &h);
	memset(&d, 0xee, sizeof(d));
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_OK);
	ck_assert_uint_eq(d.pat_send, 200);
	ck_assert_uint_eq(d.pat_recv, 7);
	ck_assert_uint_eq(d.version, EVR_WIRE_VERSION);
	ck_assert_uint_eq(d.flags, EVR_PLAN_F_VERIFY);
	ck_assert_uint_eq(d.ntests, EVR_PLAN_MAX_TESTS);
	ck_assert_uint_eq(d.conn_index, 1);
	ck_assert_uint_eq(d.conn_total, 2);

	h.ntests = 1;
	h.flags = 0;
	h.conn_index = 0xffff;
	h.conn_total = 0xfffe;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_OK);
	ck_assert_uint_eq(d.ntests, 1);
	ck_assert_uint_eq(d.flags, 0);
	ck_assert_uint_eq(d.conn_index, 0xffff);
	ck_assert_uint_eq(d.conn_total, 0xfffe);
}
END_TEST

START_TEST(test_plan_hdr_bad_magic)
{
	struct evr_plan_hdr h = { .version = EVR_WIRE_VERSION, .ntests = 1 }, d;
	uint8_t b[16];
	unsigned i;

	for (i = 0; i < 4; i++) {
		evr__plan_hdr_encode(b, &h);
		b[i] ^= 0x20;
		ck_assert_int_eq(evr__plan_hdr_decode(b, &d), -1);
	}
	ck_assert_int_eq(evr__plan_hdr_decode(zeros16, &d), -1);
	ck_assert_int_eq(evr__plan_hdr_decode(evr__hello_msg, &d), -1);
	/* a plan reply is not a plan header */
	evr__plan_reply_encode(b, EVR_PLAN_OK, 0);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), -1);
}
END_TEST

START_TEST(test_plan_hdr_bad_version)
{
	struct evr_plan_hdr h = { .ntests = 1 }, d;
	uint8_t b[16];

	h.version = EVR_WIRE_VERSION_DURATION + 1;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_VERSION);
	ck_assert_uint_eq(d.version, EVR_WIRE_VERSION_DURATION + 1);
	h.version = 0;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_VERSION);
	h.version = 0x0100; /* a little-endian 1 */
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_VERSION);
	/* the version is judged before the rest */
	h.version = 7;
	h.ntests = 0;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_VERSION);
}
END_TEST

/* Duration mode (-D) is version 2 with its flag; a version-1 header
 * with that flag, or any unknown flag, is refused. */
START_TEST(test_plan_hdr_duration_flags)
{
	struct evr_plan_hdr h = { .ntests = 1 }, d;
	uint8_t b[16];

	h.version = EVR_WIRE_VERSION_DURATION;
	h.flags = EVR_PLAN_F_DURATION;
	evr__plan_hdr_encode(b, &h);
	ck_assert_uint_eq(b[5], 2);
	ck_assert_uint_eq(b[7], 2);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_OK);
	ck_assert_uint_eq(d.flags, EVR_PLAN_F_DURATION);
	h.version = EVR_WIRE_VERSION;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_FLAGS);
	h.flags = 0x0100;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_FLAGS);
	h.version = EVR_WIRE_VERSION_DURATION;
	h.flags = 0;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_OK);
	ck_assert_str_eq(evr__plan_status_str(EVR_PLAN_E_FLAGS),
			 "unsupported plan flags");
	ck_assert(EVR_ITER_MORE != EVR_ITER_LAST);
}
END_TEST

START_TEST(test_plan_hdr_bad_ntests)
{
	struct evr_plan_hdr h = { .version = EVR_WIRE_VERSION }, d;
	uint8_t b[16];

	h.ntests = 0;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_NTESTS);
	h.ntests = EVR_PLAN_MAX_TESTS + 1;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_NTESTS);
	h.ntests = 0xffff;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_E_NTESTS);
	h.ntests = EVR_PLAN_MAX_TESTS;
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &d), EVR_PLAN_OK);
}
END_TEST

/* ---- plan entries ---- */

START_TEST(test_plan_entry_bytes)
{
	struct evr_test t;
	static const uint8_t want[16] = {
		0x00, 0x01, 0x86, 0xa0,   /* size 100000 */
		0x05, 0x06, 0x07, 0x08,   /* count */
		0x00, 0x0a, 0x0b, 0x0c,   /* iters */
		0x02, 0x00, 0x00, 0x00,   /* kind BW */
	};
	uint8_t b[16];

	memset(&t, 0, sizeof(t));
	strcpy(t.name, "junk");
	t.size = 100000;
	t.count = 0x05060708;
	t.iters = 0x000a0b0c;
	t.kind = EVR_TEST_BW;
	memset(b, 0xee, sizeof(b));
	evr__plan_entry_encode(b, &t);
	ck_assert_mem_eq(b, want, 16);
}
END_TEST

START_TEST(test_plan_entry_round_trip)
{
	struct evr_test t, d;
	uint8_t b[16];

	/* names come from kind and size; counts are the sender's */
	evr__test_init(&t, EVR_TEST_BW, 100000, 0, 0);
	t.count = 0x05060708;
	t.iters = 0x000a0b0c;
	evr__plan_entry_encode(b, &t);
	memset(&d, 0xee, sizeof(d));
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(d.name, "97k_bw");
	ck_assert_uint_eq(d.kind, EVR_TEST_BW);
	ck_assert_uint_eq(d.size, 100000);
	ck_assert_uint_eq(d.count, 0x05060708);
	ck_assert_uint_eq(d.iters, 0x000a0b0c);

	evr__test_init(&t, EVR_TEST_LAT, 1536, 0, 0);
	t.count = 2;
	t.iters = 50;
	evr__plan_entry_encode(b, &t);
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(d.name, "1.5k_lat");
	ck_assert_uint_eq(d.kind, EVR_TEST_LAT);
	ck_assert_uint_eq(d.size, 1536);
	ck_assert_uint_eq(d.count, 2);
	ck_assert_uint_eq(d.iters, 50);

	evr__test_init(&t, EVR_TEST_CUSTOM, 100, 3, 4);
	evr__plan_entry_encode(b, &t);
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, 100), EVR_PLAN_OK);
	ck_assert_str_eq(d.name, "custom");
	ck_assert_uint_eq(d.kind, EVR_TEST_CUSTOM);
	ck_assert_uint_eq(d.size, 100);
	ck_assert_uint_eq(d.count, 3);
	ck_assert_uint_eq(d.iters, 4);

	/* the limits themselves are accepted */
	evr__test_init(&t, EVR_TEST_CUSTOM, EVR_MAX_XFER_SIZE, EVR_MAX_COUNT,
		       EVR_MAX_COUNT);
	evr__plan_entry_encode(b, &t);
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_uint_eq(d.size, EVR_MAX_XFER_SIZE);
	ck_assert_uint_eq(d.count, EVR_MAX_COUNT);
	ck_assert_uint_eq(d.iters, EVR_MAX_COUNT);
}
END_TEST

static int decode_one(uint32_t size, uint32_t count, uint32_t iters,
		      uint8_t kind, uint32_t max)
{
	struct evr_test t, d;
	uint8_t b[16];

	memset(&t, 0, sizeof(t));
	t.size = size;
	t.count = count;
	t.iters = iters;
	t.kind = kind;
	evr__plan_entry_encode(b, &t);
	return evr__plan_entry_decode(b, &d, max);
}

START_TEST(test_plan_entry_rejections)
{
	ck_assert_int_eq(decode_one(100, 3, 4, 0, 1u << 30), EVR_PLAN_OK);
	ck_assert_int_eq(decode_one(0, 3, 4, 0, 1u << 30), EVR_PLAN_E_SIZE);
	ck_assert_int_eq(decode_one(4097, 3, 4, 0, 4096), EVR_PLAN_E_SIZE);
	ck_assert_int_eq(decode_one(4096, 3, 4, 0, 4096), EVR_PLAN_OK);
	ck_assert_int_eq(decode_one((1u << 30) + 1, 1, 1, 2, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_E_SIZE);
	ck_assert_int_eq(decode_one(100, 0, 4, 0, 1u << 30), EVR_PLAN_E_COUNT);
	ck_assert_int_eq(decode_one(100, 3, 0, 0, 1u << 30), EVR_PLAN_E_COUNT);
	ck_assert_int_eq(decode_one(100, EVR_MAX_COUNT + 1, 4, 0, 1u << 30),
			 EVR_PLAN_E_COUNT);
	ck_assert_int_eq(decode_one(100, 3, EVR_MAX_COUNT + 1, 0, 1u << 30),
			 EVR_PLAN_E_COUNT);
	ck_assert_int_eq(decode_one(100, 0xffffffffu, 4, 1, 1u << 30),
			 EVR_PLAN_E_COUNT);
	ck_assert_int_eq(decode_one(100, 3, 4, 3, 1u << 30), EVR_PLAN_E_KIND);
	ck_assert_int_eq(decode_one(100, 3, 4, 0xff, 1u << 30), EVR_PLAN_E_KIND);
}
END_TEST

START_TEST(test_plan_entry_padding_ignored)
{
	struct evr_test t, d;
	uint8_t b[16];

	evr__test_init(&t, EVR_TEST_CUSTOM, 100, 3, 4);
	evr__plan_entry_encode(b, &t);
	ck_assert_uint_eq(b[13], 0);
	ck_assert_uint_eq(b[14], 0);
	ck_assert_uint_eq(b[15], 0);
	b[13] = b[14] = b[15] = 0x77; /* flags unknown here, reserved */
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, 1u << 30), EVR_PLAN_OK);
	ck_assert_uint_eq(d.size, 100);
	/* of byte 13's flags, only those this end knows are kept */
	ck_assert_uint_eq(d.flags, EVR_TEST_F_HOLD);
}
END_TEST

/* Hold stamps (wire.h): an entry's byte 13 asks, the reply says. */
START_TEST(test_plan_entry_hold_flag)
{
	struct evr_test t, d;
	uint8_t b[16];

	evr__test_init(&t, EVR_TEST_LAT, 64, 0, 0);
	ck_assert_uint_eq(t.flags, 0);
	t.flags = EVR_TEST_F_HOLD;
	evr__plan_entry_encode(b, &t);
	ck_assert_uint_eq(b[12], EVR_TEST_LAT);
	ck_assert_uint_eq(b[13], 0x01);
	ck_assert_uint_eq(b[14], 0);
	ck_assert_uint_eq(b[15], 0);
	memset(&d, 0xee, sizeof(d));
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, 1u << 30), EVR_PLAN_OK);
	ck_assert_uint_eq(d.flags, EVR_TEST_F_HOLD);
	b[13] = 0;
	ck_assert_int_eq(evr__plan_entry_decode(b, &d, 1u << 30), EVR_PLAN_OK);
	ck_assert_uint_eq(d.flags, 0);
	ck_assert_uint_eq(EVR_REPLY_F_HOLD, 0x00000002u);
	ck_assert_uint_eq(EVR_HOLD_LEN, 8);
}
END_TEST

/* ---- plan reply ---- */

START_TEST(test_plan_reply)
{
	static const uint8_t want[16] = {
		'E', 'V', 'P', 'R', 0x00, 0x00, 0x00, 0x03,
		0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	};
	uint32_t limit = 0;
	uint8_t b[16];
	int st;

	memset(b, 0xee, sizeof(b));
	evr__plan_reply_encode(b, EVR_PLAN_E_SIZE, EVR_MAX_XFER_SIZE);
	ck_assert_mem_eq(b, want, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), EVR_PLAN_E_SIZE);
	ck_assert_uint_eq(limit, EVR_MAX_XFER_SIZE);
	ck_assert_int_eq(evr__plan_reply_decode(b, NULL), EVR_PLAN_E_SIZE);

	for (st = EVR_PLAN_OK; st < EVR_PLAN_E_MAX; st++) {
		evr__plan_reply_encode(b, st, 12345);
		ck_assert_int_eq(evr__plan_reply_decode(b, &limit), st);
		ck_assert_uint_eq(limit, 12345);
	}
	/* the features: bytes 12-15, zero from a server before them, and
	 * nothing else of the reply changes with them */
	evr__plan_reply_encode(b, EVR_PLAN_OK, 7);
	ck_assert_uint_eq(evr__plan_reply_features(b), 0);
	evr__plan_reply_set_features(b, EVR_REPLY_F_END);
	ck_assert_uint_eq(b[15], 1);
	ck_assert_uint_eq(b[12] | b[13] | b[14], 0);
	ck_assert_uint_eq(evr__plan_reply_features(b), EVR_REPLY_F_END);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), EVR_PLAN_OK);
	ck_assert_uint_eq(limit, 7);
}
END_TEST

START_TEST(test_plan_reply_not_a_reply)
{
	struct evr_plan_hdr h = { .version = EVR_WIRE_VERSION, .ntests = 1 };
	uint32_t limit = 77;
	uint8_t b[16];

	ck_assert_int_eq(evr__plan_reply_decode(zeros16, &limit), -1);
	ck_assert_int_eq(evr__plan_reply_decode(evr__hello_msg, &limit), -1);
	ck_assert_int_eq(evr__plan_reply_decode(evr__ack_msg, &limit), -1);
	evr__plan_hdr_encode(b, &h);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), -1);
	seq16(b, 0);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), -1);
	/* a status that cannot be an int */
	evr__plan_reply_encode(b, 0, 0);
	b[4] = 0x80;
	ck_assert_int_eq(evr__plan_reply_decode(b, NULL), -1);
}
END_TEST

START_TEST(test_plan_status_strings)
{
	const char *s[EVR_PLAN_E_MAX];
	int i, j;

	for (i = 0; i < EVR_PLAN_E_MAX; i++) {
		s[i] = evr__plan_status_str(i);
		ck_assert_ptr_nonnull(s[i]);
		ck_assert_uint_gt(strlen(s[i]), 0);
		ck_assert_ptr_null(strchr(s[i], '\n'));
		for (j = 0; j < i; j++)
			ck_assert_msg(strcmp(s[i], s[j]),
				      "statuses %d and %d share \"%s\"", i, j,
				      s[i]);
	}
	/* unknown ones still give a string, different from every known one */
	for (i = 0; i < EVR_PLAN_E_MAX; i++) {
		ck_assert_str_ne(evr__plan_status_str(EVR_PLAN_E_MAX), s[i]);
		ck_assert_str_ne(evr__plan_status_str(-1), s[i]);
	}
	ck_assert_ptr_nonnull(evr__plan_status_str(12345));
}
END_TEST

/* ---- the verification pattern ---- */

START_TEST(test_pattern_fill)
{
	struct evr_pattern p = { 0 };
	uint8_t b[600];
	unsigned i;

	evr__pattern_fill(&p, b, 300);
	for (i = 0; i < 300; i++)
		ck_assert_uint_eq(b[i], i & 0xff);
	ck_assert_uint_eq(p.next, 300 & 0xff);
	/* the counter runs on across calls */
	evr__pattern_fill(&p, b, 10);
	for (i = 0; i < 10; i++)
		ck_assert_uint_eq(b[i], (300 + i) & 0xff);
	ck_assert_uint_eq(p.next, 310 & 0xff);
	/* and wraps 255 -> 0 */
	p.next = 250;
	evr__pattern_fill(&p, b, 16);
	ck_assert_uint_eq(b[5], 255);
	ck_assert_uint_eq(b[6], 0);
	ck_assert_uint_eq(b[15], 9);
	ck_assert_uint_eq(p.next, 10);
	/* a zero-length fill changes nothing */
	evr__pattern_fill(&p, b, 0);
	ck_assert_uint_eq(p.next, 10);
}
END_TEST

START_TEST(test_pattern_round_trip)
{
	struct evr_pattern tx = { 0 }, rx = { 0 };
	uint8_t b[1000];
	uint64_t bad = 4242;
	unsigned i, lens[] = { 16, 300, 1, 255, 256, 257, 16, 999 };
	uint64_t total = 0;

	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		evr__pattern_fill(&tx, b, lens[i]);
		ck_assert_int_eq(evr__pattern_check(&rx, b, lens[i], &bad), 0);
		total += lens[i];
		ck_assert_uint_eq(rx.total, total);
		ck_assert_uint_eq(rx.next, tx.next);
	}
	ck_assert_uint_eq(bad, 4242); /* untouched on success */
	ck_assert_uint_eq(tx.next, total & 0xff);
}
END_TEST

START_TEST(test_pattern_check_failure)
{
	struct evr_pattern tx = { 0 }, rx = { 0 };
	uint8_t b[300], good[300];
	uint64_t bad = 0;

	evr__pattern_fill(&tx, b, 300);
	ck_assert_int_eq(evr__pattern_check(&rx, b, 300, &bad), 0);
	evr__pattern_fill(&tx, b, 300);
	memcpy(good, b, sizeof(good));
	b[7] ^= 0x40;
	b[100] ^= 0x40; /* the first bad byte is what counts */
	ck_assert_int_eq(evr__pattern_check(&rx, b, 300, &bad), -1);
	ck_assert_uint_eq(bad, 300 + 7);
	/* a failed check does not advance */
	ck_assert_uint_eq(rx.total, 300);
	ck_assert_uint_eq(rx.next, 300 & 0xff);
	ck_assert_int_eq(evr__pattern_check(&rx, good, 300, &bad), 0);
	ck_assert_uint_eq(rx.total, 600);

	/* bad byte at offset 0 of a message, bad pointer optional */
	evr__pattern_fill(&tx, b, 16);
	b[0] ^= 1;
	ck_assert_int_eq(evr__pattern_check(&rx, b, 16, &bad), -1);
	ck_assert_uint_eq(bad, 600);
	ck_assert_int_eq(evr__pattern_check(&rx, b, 16, NULL), -1);
	/* zeros against a fresh receiver fail at byte 1 */
	memset(&rx, 0, sizeof(rx));
	ck_assert_int_eq(evr__pattern_check(&rx, zeros16, 16, &bad), -1);
	ck_assert_uint_eq(bad, 1);
}
END_TEST

START_TEST(test_pattern_check_offset_beyond_32_bits)
{
	struct evr_pattern rx = { 0 };
	uint8_t b[16];
	uint64_t bad = 0;

	rx.total = 5ULL << 32;
	rx.next = 3;
	seq16(b, 3);
	b[9] = 0;
	ck_assert_int_eq(evr__pattern_check(&rx, b, 16, &bad), -1);
	ck_assert_uint_eq(bad, (5ULL << 32) + 9);
}
END_TEST

START_TEST(test_pattern_detect_every_start)
{
	uint8_t b[16], first;
	unsigned start;

	for (start = 0; start < 256; start++) {
		seq16(b, (uint8_t)start);
		first = (uint8_t)(start + 1);
		ck_assert_msg(evr__pattern_detect(b, 16, &first),
			      "start %u not detected", start);
		ck_assert_uint_eq(first, start);
	}
}
END_TEST

START_TEST(test_pattern_detect_wrap)
{
	static const uint8_t b[16] = { 250, 251, 252, 253, 254, 255, 0, 1,
				       2, 3, 4, 5, 6, 7, 8, 9 };
	uint8_t first = 0;

	ck_assert(evr__pattern_detect(b, 16, &first));
	ck_assert_uint_eq(first, 250);
	ck_assert(evr__pattern_detect(b, 16, NULL));
}
END_TEST

START_TEST(test_pattern_detect_negative)
{
	uint8_t b[16], first;
	unsigned i;

	ck_assert(!evr__pattern_detect(zeros16, 16, &first));
	ck_assert(!evr__pattern_detect(evr__hello_msg, 16, &first));
	memset(b, 0xff, sizeof(b));
	ck_assert(!evr__pattern_detect(b, 16, &first));
	/* descending */
	for (i = 0; i < 16; i++)
		b[i] = (uint8_t)(100 - i);
	ck_assert(!evr__pattern_detect(b, 16, &first));
	/* one wrong byte anywhere */
	for (i = 0; i < 16; i++) {
		seq16(b, 37);
		b[i] ^= 0x10;
		ck_assert_msg(!evr__pattern_detect(b, 16, &first),
			      "wrong byte %u not noticed", i);
	}
}
END_TEST

static Suite *wire_suite(void)
{
	Suite *s = suite_create("wire");
	TCase *tc;

	tc = tcase_create("hello");
	tcase_add_test(tc, test_hello_ack_shape);
	tcase_add_test(tc, test_hello_ack_recognised);
	tcase_add_test(tc, test_hello_ack_not_other_things);
	tcase_add_test(tc, test_busy_msg);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan_hdr");
	tcase_add_test(tc, test_plan_hdr_bytes);
	tcase_add_test(tc, test_plan_hdr_round_trip);
	tcase_add_test(tc, test_plan_hdr_bad_magic);
	tcase_add_test(tc, test_plan_hdr_bad_version);
	tcase_add_test(tc, test_plan_hdr_duration_flags);
	tcase_add_test(tc, test_plan_hdr_bad_ntests);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan_entry");
	tcase_add_test(tc, test_plan_entry_bytes);
	tcase_add_test(tc, test_plan_entry_round_trip);
	tcase_add_test(tc, test_plan_entry_rejections);
	tcase_add_test(tc, test_plan_entry_padding_ignored);
	tcase_add_test(tc, test_plan_entry_hold_flag);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan_reply");
	tcase_add_test(tc, test_plan_reply);
	tcase_add_test(tc, test_plan_reply_not_a_reply);
	tcase_add_test(tc, test_plan_status_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("pattern");
	tcase_add_test(tc, test_pattern_fill);
	tcase_add_test(tc, test_pattern_round_trip);
	tcase_add_test(tc, test_pattern_check_failure);
	tcase_add_test(tc, test_pattern_check_offset_beyond_32_bits);
	tcase_add_test(tc, test_pattern_detect_every_start);
	tcase_add_test(tc, test_pattern_detect_wrap);
	tcase_add_test(tc, test_pattern_detect_negative);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(wire_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
