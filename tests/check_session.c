/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The per-connection state machine (src/stream/session/session.c),
 * driven by hand with synthetic events over an in-memory mock transport
 * (fakesess.c): every state, every error path, the tests' data (-D,
 * --percentiles, --split, -T v), and whole client/server runs connected
 * back to back without sockets.  Its negotiation is check_negotiate's,
 * its driver check_sessdrive's, -T a's estimator check_poll's.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakesess.h"
#include "loop/bytes.h"

/* ------------------------------------------------------------------ */
/* state names                                                         */

START_TEST(test_state_names)
{
	static const char *const names[] = {
		"CONNECTING", "HELLO_SEND", "HELLO_RECV", "PLAN_SEND",
		"REPLY_RECV", "FIRST_RECV", "ACK_SEND", "PLAN_HDR_RECV",
		"PLAN_RECV", "REPLY_SEND", "GATED", "SYNC_SEND", "SYNC_RECV",
		"DATA_SEND", "DATA_RECV", "PACE", "DRAIN", "DONE", "FAILED",
	};
	unsigned i;

	ck_assert_uint_eq(EVR_SS__COUNT, sizeof(names) / sizeof(names[0]));
	for (i = 0; i < EVR_SS__COUNT; i++)
		ck_assert_str_eq(evr__sess_state_name(i), names[i]);
	ck_assert_str_eq(evr__sess_state_name(EVR_SS__COUNT), "?");
	ck_assert_str_eq(evr__sess_state_name((enum evr_sess_state)-1), "?");
}
END_TEST

START_TEST(test_init)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ck_assert_int_eq(s.client, 1);
	ck_assert_ptr_eq(s.loop, loop);
	ck_assert_ptr_eq(s.conn, &m.c);
	ck_assert_uint_eq(s.stall_ms, EVR_DEFAULT_STALL_MS);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 0);
	ck_assert_uint_eq(s.plan.ntests, 1);
	ck_assert_uint_eq(s.plan.tests[0].size, 100);
	/* a sync message's worth; each test grows it to its size */
	ck_assert_ptr_nonnull(s.buf);
	ck_assert_uint_eq(s.bufsize, EVR_SYNC_LEN);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(m.closes, 1);
	ck_assert_ptr_null(s.conn);
	ck_assert_ptr_null(s.buf);

	/* the buffer holds at least a sync message; options are taken */
	custom_plan(&cp, 1, 1, 1);
	o.stall_ms = 2500;
	o.no_negotiate = 1;
	o.verify = 1;
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	s_live = 1;
	ck_assert_uint_ge(s.bufsize, EVR_SYNC_LEN);
	ck_assert_uint_eq(s.stall_ms, 2500);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 1);
	ck_assert_ptr_null(s.conn);
	/* no conn attached: fini closes nothing */
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(m.closes, 1);

	/* -T v alone does not negotiate (upstream servers verify the
	 * first sync); --negotiate makes it */
	o.no_negotiate = 0;
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
	evr__sess_fini(&s);
	o.force_negotiate = 1;
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 1);
	evr__sess_fini(&s);

	/* a server never negotiates on its own initiative */
	ck_assert_int_eq(evr__sess_init(&s, loop, 0, &cp, 0, 1, &o), 0);
	s_live = 1;
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the tests themselves: -D, --percentiles, --split, hold stamps, -T v */

/* -D: the plan says version 2 with the duration flag and iterations as
 * an upper bound; each iteration's first transfer starts with its mark,
 * and the test ends after the iteration marked LAST. */
START_TEST(test_client_duration)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan_hdr h;
	struct evr_test t;
	uint8_t b[64];
	unsigned it;

	base_opts(&o);
	o.duration_ms = 1000;
	o.percentiles = 1;
	custom_plan(&cp, 10, 2, 5);
	start_sess(1, &cp, &o);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_DURATION), 1);
	ck_assert_uint_eq(s.dur_ns, 1000000000ull);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take(b, 32);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.version, EVR_WIRE_VERSION_DURATION);
	ck_assert_uint_eq(h.flags, EVR_PLAN_F_DURATION);
	ck_assert_int_eq(evr__plan_entry_decode(b + 16, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_uint_eq(t.iters, EVR_MAX_COUNT);
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	s.dur_ns = UINT64_MAX / 2;   /* no deadline yet */
	feed_zeros(16);
	for (it = 0; it < 3; it++) {
		if (it == 2)
			s.dur_ns = 0;   /* the deadline has passed */
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take(b, 20);
		ck_assert_uint_eq(b[0], it < 2 ? EVR_ITER_MORE : EVR_ITER_LAST);
		feed_zeros(20);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	/* the row holds the iterations run, not the cap */
	assert_result(&rec, 0, "custom", 10, 2, 3);
	ck_assert_uint_eq(rec.lat_samples[0], 3);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
}
END_TEST

/* -D with a server that takes the END mark (its reply says so): the test
 * ends at the first iteration boundary past the deadline with a transfer
 * marked END, which the server does not echo: an iteration longer than
 * the duration runs once (a LAST mark runs the iteration it starts:
 * two 1m_bw iterations of 8.5 s each for -D 0.2 on Soft-RoCE). */
START_TEST(test_client_duration_end)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[64];

	base_opts(&o);
	o.duration_ms = 1000;
	o.percentiles = 1;
	custom_plan(&cp, 10, 2, 5);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(32);
	feed_reply_f(EVR_PLAN_OK, EVR_REPLY_F_END);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	s.dur_ns = UINT64_MAX / 2;   /* no deadline yet */
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take(b, 20);
	ck_assert_uint_eq(b[0], EVR_ITER_MORE);
	s.dur_ns = 0;                /* the deadline passes meanwhile */
	feed_zeros(20);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	/* one transfer, marked END, and nothing after it */
	ck_assert_uint_eq(bq_avail(&q_out), 10);
	take(b, 10);
	ck_assert_uint_eq(b[0], EVR_ITER_END);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 10, 2, 1);
	ck_assert_uint_eq(rec.lat_samples[0], 1);
}
END_TEST

/* --percentiles: one sample per iteration, handed with the result. */
START_TEST(test_client_percentiles)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	o.percentiles = 1;
	o.no_negotiate = 1;
	custom_plan(&cp, 8, 1, 7);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
	for (it = 0; it < 7; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(8);
		feed_zeros(8);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_uint_eq(rec.lat_samples[0], 7);
	ck_assert_int_eq(evr__sess_lat_valid(&s), 0);
}
END_TEST

/* --split, client: the plan asks for hold stamps; a server that takes
 * them stamps each echo, and the test's round trips come in parts (the
 * mock has no receive timestamps: no local part). */
/* A --split client through its negotiation, the server's reply carrying
 * features, and the first sync: at its first data transfer.  The plan it
 * sent in plan[32]. */
static void split_client_start(const struct evr_conn_plan *cp,
			       const struct evr_stream_opts *o,
			       uint32_t features, uint8_t *plan)
{
	start_sess(1, cp, o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take(plan, 32);
	feed_reply_f(EVR_PLAN_OK, features);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
}

START_TEST(test_client_split)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[64], plan[32];
	unsigned it;

	base_opts(&o);
	o.lat_split = 1;
	custom_plan(&cp, 64, 1, 3);
	split_client_start(&cp, &o, EVR_REPLY_F_END | EVR_REPLY_F_HOLD, plan);
	ck_assert_uint_eq(plan[EVR_PLAN_HDR_LEN + 13], EVR_TEST_F_HOLD);
	for (it = 0; it < 3; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		memset(b, 0, sizeof(b));
		/* held 1, 2, 3 ns: less than any round trip, even the
		 * mock's (it takes well under a microsecond on a fast host,
		 * which made holds of 1 to 3 usec "longer than the round
		 * trip", rejected, now and then) */
		evr__put64(b, it + 1);
		/* in two pieces: the stamp's bytes split across reads */
		feed(b, 5);
		ck_assert_int_eq(ready(), EVR_WANT_READ);
		feed(b + 5, sizeof(b) - 5);
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_int_eq(rec.split_valid[0], 1);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].samples, 3);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].min_ns, 1);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].p50_ns, 2);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].max_ns, 3);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_NET].samples, 3);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_LOCAL].samples, 0);
	ck_assert_uint_eq(rec.split[0].rejected, 0);

	/* a hold longer than the round trip: left out, counted */
	reset_fixture();
	split_client_start(&cp, &o, EVR_REPLY_F_END | EVR_REPLY_F_HOLD, plan);
	for (it = 0; it < 3; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		memset(b, 0, sizeof(b));
		evr__put64(b, it == 1 ? UINT64_MAX : 10);
		feed(b, sizeof(b));
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_int_eq(rec.split_valid[0], 1);
	ck_assert_uint_eq(rec.split[0].rejected, 1);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].samples, 2);

	/* a server before hold stamps (no feature): no parts, and its
	 * echo is not read as one */
	reset_fixture();
	split_client_start(&cp, &o, EVR_REPLY_F_END, plan);
	for (it = 0; it < 3; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		feed_zeros(64);
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_int_eq(rec.split_valid[0], 0);
	ck_assert_ptr_null(s.split);

	/* tests under 8 bytes, and verification, ask for none */
	reset_fixture();
	custom_plan(&cp, 7, 1, 3);
	start_sess(1, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ready();
	take(plan, sizeof(plan));
	ck_assert_uint_eq(plan[EVR_PLAN_HDR_LEN + 13], 0);
	reset_fixture();
	custom_plan(&cp, 64, 1, 3);
	o.verify = 1;
	o.force_negotiate = 1;
	start_sess(1, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ready();
	take(plan, sizeof(plan));
	ck_assert_uint_eq(plan[EVR_PLAN_HDR_LEN + 13], 0);
}
END_TEST

/* The server's side of hold stamps: only for an entry that asks, over
 * the first 8 bytes of each echo's last transfer, from the kernel's
 * arrival time when the transport gives one, else from the read. */
static uint64_t serve_stamped(int ask, uint64_t rx_after_floor_ns,
			      unsigned sleep_us, uint8_t *echo)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t r[EVR_PLAN_REPLY_LEN], d[64];

	base_opts(&o);
	custom_plan(&cp, 64, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	if (ask)
		feed_entry_f(64, 2, 1, EVR_TEST_CUSTOM, EVR_TEST_F_HOLD);
	else
		feed_entry(64, 2, 1, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take(r, sizeof(r));
	ck_assert_uint_eq(evr__plan_reply_features(r) & EVR_REPLY_F_HOLD,
			  EVR_REPLY_F_HOLD);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	memset(d, 0x11, sizeof(d));
	feed(d, sizeof(d));
	feed(d, sizeof(d));
	/* the kernel's stamp: some time after the test's start */
	m.c.rx_rt_ns = rx_after_floor_ns == UINT64_MAX ? 1 : /* stale */
		       rx_after_floor_ns ? s.rx_floor_rt + rx_after_floor_ns :
					   0;
	usleep(sleep_us);
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	/* two transfers: only the last carries the stamp */
	take(d, sizeof(d));
	memset(r, 0x11, sizeof(r));
	ck_assert_mem_eq(d, r, 8);
	take(echo, 64);
	return evr__get64(echo);
}

START_TEST(test_server_hold_stamps)
{
	uint8_t e[64], want[64];
	uint64_t h;

	memset(want, 0x11, sizeof(want));
	/* not asked: the echo is the request */
	serve_stamped(0, 0, 0, e);
	ck_assert_mem_eq(e, want, 64);
	/* asked, the kernel's arrival 1 usec after the start, 30 ms
	 * before the read: the hold counts those 30 ms */
	reset_fixture();
	h = serve_stamped(1, 1000, 30000, e);
	ck_assert_mem_eq(e + 8, want + 8, 56);
	ck_assert_uint_ge(h, 30000000);
	ck_assert_uint_lt(h, 5000000000ull);
	/* no kernel stamp: the hold starts at the read */
	reset_fixture();
	h = serve_stamped(1, 0, 30000, e);
	ck_assert_uint_lt(h, 30000000);
	/* a stamp from before the test (a stale one): not believed */
	reset_fixture();
	h = serve_stamped(1, UINT64_MAX, 30000, e);
	ck_assert_uint_lt(h, 30000000);
}
END_TEST

/* The server in duration mode: reads each iteration's mark. */
START_TEST(test_server_duration)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t d[10];
	unsigned it;

	base_opts(&o);
	default_lat_plan(&cp);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(10, 2, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_DURATION), 1);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	memset(d, 0, sizeof(d));
	for (it = 0; it < 4; it++) {
		d[0] = it < 3 ? EVR_ITER_MORE : EVR_ITER_LAST;
		feed(d, 10);
		d[0] = 0x55; /* only the first transfer carries the mark */
		feed(d, 10);
		if (it < 3) {
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
			take_discard(20);
		}
	}
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	take_discard(20);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 10, 2, 4);

	/* the reply says it takes END marks; one ends the test after an
	 * iteration, read and not echoed */
	reset_fixture();
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(10, 2, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	{
		uint8_t r[EVR_PLAN_REPLY_LEN];

		take(r, sizeof(r));
		ck_assert_int_eq(evr__plan_reply_decode(r, NULL), EVR_PLAN_OK);
		ck_assert_uint_eq(evr__plan_reply_features(r) &
				  EVR_REPLY_F_END, EVR_REPLY_F_END);
	}
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	d[0] = EVR_ITER_MORE;
	feed(d, 10);
	feed(d, 10);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take_discard(20);
	d[0] = EVR_ITER_END;
	feed(d, 10);
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 10, 2, 1);

	/* anything else where a mark belongs is a protocol error */
	reset_fixture();
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(10, 1, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	feed_zeros(16);
	d[0] = 'X';
	feed(d, 10);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_RECV);

	/* a version-1 plan with the duration flag is refused */
	reset_fixture();
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, EVR_PLAN_F_DURATION, 1, 0, 1);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_FLAGS);
}
END_TEST

/* -D through a chunked server: the mark is the first byte of an
 * iteration's first transfer, read from its first piece only; a piece
 * further in that starts with anything is data. */
START_TEST(test_server_duration_chunked)
{
	enum { SZ = 200000, CH = 65536 };
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t *d = calloc(1, SZ);
	unsigned it;

	ck_assert_ptr_nonnull(d);
	base_opts(&o);
	o.chunk_size = CH;
	default_lat_plan(&cp);
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(SZ, 1, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
	take_discard(32);
	ck_assert_uint_le(s.bufsize, CH);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take_discard(16);
	d[CH] = 'X';     /* the second piece's first byte: no mark */
	d[2 * CH] = EVR_ITER_LAST;
	for (it = 0; it < 3; it++) {
		d[0] = it < 2 ? EVR_ITER_MORE : EVR_ITER_LAST;
		feed(d, SZ);
		if (it < 2) {
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
			take_discard(SZ);
		}
	}
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	take_discard(SZ);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", SZ, 1, 3);
	ck_assert_uint_le(s.bufsize, CH);
	ck_assert_uint_le(m.max_len, CH);
	free(d);
}
END_TEST

START_TEST(test_client_verify_no_hello)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 }, peer_rx = { 0 };
	unsigned it;

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	m.send_block = 1;
	ASSERT_AT(EVR_WANT_WRITE, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	/* the first thing sent is the pattern 0..15, not a HELLO */
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 16);
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_expect_pattern(&peer_rx, 300);
		feed_pattern(&peer_tx, 300);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(s.spat.next, (16 + 1200) & 0xff);
	ck_assert_uint_eq(s.rpat.total, 16 + 1200);
}
END_TEST

START_TEST(test_client_verify_failure)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 };
	uint8_t b[300];

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	feed_pattern(&peer_tx, 16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	feed_pattern(&peer_tx, 300);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	/* second iteration: the second transfer has a bad byte at 42 */
	evr__pattern_fill(&peer_tx, b, 300);
	b[142] ^= 0xff;
	feed(b, 300);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_RECV);
	ck_assert_uint_eq(s.fail.bytes_done, 16 + 300 + 142);
	ck_assert_str_eq(s.fail.where, "verify");
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.iters_done, 1);
	ck_assert_uint_eq(s.fail.iters_total, 4);
	ck_assert_uint_eq(s.fail.xfers_done, 1);
	ck_assert_uint_eq(s.fail.xfers_total, 3);
	ck_assert_uint_eq(rec.n, 0);
}
END_TEST

START_TEST(test_client_verify_bad_sync)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	/* an upstream server without -T v answers with zeros */
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_SYNC);
	ck_assert_uint_eq(s.fail.bytes_done, 1);
}
END_TEST

START_TEST(test_client_lat2_negotiated)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	lat2_plan(&cp);
	client_to_reply_recv(&cp, &o);
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
	for (it = 0; it < 50; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		feed_zeros(64);
	}
	/* the first test is over: its result, then the next sync */
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_uint_eq(rec.plan_done, 0);
	assert_result(&rec, 0, "64_lat", 64, 1, 50);
	ck_assert_uint_eq(s.ti, 1);
	take_discard(16);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	feed_zeros(16);
	for (it = 0; it < 20; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(1536);
		feed_zeros(1536);
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 2);
	ck_assert_uint_eq(rec.plan_done, 1);
	assert_result(&rec, 1, "1.5k_lat", 1536, 1, 20);
	ck_assert_uint_eq(m.shutdowns, 1);
}
END_TEST

START_TEST(test_server_extra_data_in_drain)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	feed_zeros(100);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	ck_assert_uint_eq(rec.n, 1);
	feed_zeros(1);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_EXTRA, EVR_PH_CLOSE);
	ck_assert_str_eq(s.fail.where, "drain");
}
END_TEST

/* ------------------------------------------------------------------ */
/* EOF, errors, EAGAIN, EINTR                                          */

/*
 * Bring a session to a receive state, then close the peer.  Each case:
 * who, how far to go, and what the failure must say.
 */
enum eof_at {
	C_HELLO_RECV, C_REPLY_RECV, C_SYNC_RECV_T2, C_DATA_RECV,
	S_FIRST_RECV, S_PLAN_HDR_RECV, S_PLAN_RECV, S_SYNC_RECV_T2,
	S_DATA_RECV, EOF_AT_COUNT
};

static void go_to(enum eof_at at)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	switch (at) {
	case C_HELLO_RECV:
		custom_plan(&cp, 100, 3, 4);
		start_sess(1, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_HELLO_RECV);
		break;
	case C_REPLY_RECV:
		custom_plan(&cp, 100, 3, 4);
		client_to_reply_recv(&cp, &o);
		break;
	case C_SYNC_RECV_T2:
		lat2_plan(&cp);
		client_to_reply_recv(&cp, &o);
		feed_reply(EVR_PLAN_OK);
		feed_zeros(16 + 50 * 64);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
		ck_assert_uint_eq(s.ti, 1);
		break;
	case C_DATA_RECV:
		custom_plan(&cp, 100, 3, 4);
		client_to_reply_recv(&cp, &o);
		feed_reply(EVR_PLAN_OK);
		feed_zeros(16 + 300 + 100);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		break;
	case S_FIRST_RECV:
		custom_plan(&cp, 100, 3, 4);
		start_sess(0, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_FIRST_RECV);
		break;
	case S_PLAN_HDR_RECV:
		server_to_plan_hdr(&o);
		break;
	case S_PLAN_RECV:
		server_to_plan_hdr(&o);
		feed_hdr(EVR_WIRE_VERSION, 0, 2, 0, 1);
		feed_entry(64, 1, 50, EVR_TEST_LAT);
		ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
		break;
	case S_SYNC_RECV_T2:
		lat2_plan(&cp);
		start_sess(0, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_FIRST_RECV);
		feed_zeros(16);
		for (it = 0; it < 50; it++)
			feed_zeros(64);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
		ck_assert_uint_eq(s.ti, 1);
		break;
	case S_DATA_RECV:
		custom_plan(&cp, 100, 3, 4);
		start_sess(0, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_FIRST_RECV);
		feed_zeros(16 + 300 + 300 + 200);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		break;
	default:
		ck_abort();
	}
	take_discard(bq_avail(&q_out));
}

struct eof_case {
	enum eof_at at;
	enum evr_phase phase;
	const char *test;           /* NULL: not in a test */
	unsigned test_index, test_total;
	uint64_t iters_done, iters_total, xfers_done, xfers_total;
};

static const struct eof_case eof_cases[] = {
	{ C_HELLO_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ C_REPLY_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ C_SYNC_RECV_T2, EVR_PH_SYNC, "1.5k_lat", 1, 2, 0, 20, 0, 1 },
	{ C_DATA_RECV, EVR_PH_RECV, "custom", 0, 1, 1, 4, 1, 3 },
	{ S_FIRST_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ S_PLAN_HDR_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ S_PLAN_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ S_SYNC_RECV_T2, EVR_PH_SYNC, "1.5k_lat", 1, 2, 0, 20, 0, 1 },
	{ S_DATA_RECV, EVR_PH_RECV, "custom", 0, 1, 2, 4, 2, 3 },
};

static void check_fail_context(const struct eof_case *c)
{
	if (!c->test) {
		ck_assert_str_eq(s.fail.test, "");
		return;
	}
	ck_assert_str_eq(s.fail.test, c->test);
	ck_assert_uint_eq(s.fail.test_index, c->test_index);
	ck_assert_uint_eq(s.fail.test_total, c->test_total);
	ck_assert_uint_eq(s.fail.iters_done, c->iters_done);
	ck_assert_uint_eq(s.fail.iters_total, c->iters_total);
	ck_assert_uint_eq(s.fail.xfers_done, c->xfers_done);
	ck_assert_uint_eq(s.fail.xfers_total, c->xfers_total);
}

START_TEST(test_eof_in_each_phase)
{
	const struct eof_case *c = &eof_cases[_i];
	uint64_t bytes;

	go_to(c->at);
	bytes = s.bytes;
	q_in.eof = 1;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_EOF, c->phase);
	ck_assert_str_eq(s.fail.where, "recv");
	ck_assert_uint_eq(s.fail.bytes_done, bytes);
	check_fail_context(c);
	ck_assert_uint_eq(rec.n, c->test_index);
	/* only the client cases went through an accepted plan */
	ck_assert_int_eq(s.fail.negotiated,
			 c->at == C_SYNC_RECV_T2 || c->at == C_DATA_RECV);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_reset_in_each_phase)
{
	const struct eof_case *c = &eof_cases[_i];

	go_to(c->at);
	m.recv_err = -ECONNRESET;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-ECONNRESET, c->phase);
	ck_assert_str_eq(s.fail.where, "recv");
	check_fail_context(c);
}
END_TEST

START_TEST(test_send_errors)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);

	/* the HELLO cannot go out */
	start_sess(1, &cp, &o);
	m.send_err = -ECONNRESET;
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONNECTED, 0), EVR_SS_FAILED);
	assert_failed(-ECONNRESET, EVR_PH_NEGOTIATE);
	ck_assert_str_eq(s.fail.where, "send");
	reset_fixture();

	/* data: the peer went away in the middle of a send */
	o.no_negotiate = 1;
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
	/* two transfers and a half go out, then EPIPE */
	m.chunk = 50;
	q_out.limit = 250;
	ASSERT_AT(EVR_WANT_WRITE, settle(), EVR_SS_DATA_SEND);
	ck_assert_uint_eq(s.xfer, 2);
	m.send_err = -EPIPE;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EPIPE, EVR_PH_SEND);
	ck_assert_str_eq(s.fail.where, "send");
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.xfers_done, 2);
	ck_assert_uint_eq(s.fail.iters_done, 0);
	ck_assert_uint_eq(s.fail.bytes_done, 16 + 16 + 250);
	reset_fixture();

	/* the server cannot send its reply */
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(100, 1, 1, EVR_TEST_CUSTOM);
	script_send(&m, 16);      /* the ACK goes */
	script_send(&m, -ENOTCONN);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-ENOTCONN, EVR_PH_NEGOTIATE);
	ck_assert_str_eq(s.fail.where, "send");
}
END_TEST

START_TEST(test_eagain_and_eintr)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	/* -EAGAIN on receive: wait to read, even with data queued */
	feed(evr__hello_msg, 16);
	script_recv(&m, -EAGAIN);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_FIRST_RECV);
	/* -EAGAIN on send: wait to write */
	script_send(&m, -EAGAIN);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_ACK_SEND);
	/* -EINTR is retried at once, in the same event */
	script_send(&m, -EINTR);
	script_recv(&m, -EINTR);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	ck_assert_uint_eq(m.send_iscript, 2);
	ck_assert_uint_eq(m.recv_iscript, 2);
	take_discard(16);
	ck_assert_int_eq(s.fail.err, 0);
}
END_TEST

START_TEST(test_partial_io)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 }, peer_rx = { 0 };
	unsigned it, guard = 0;

	/* 1-byte transfers each way: every message in many pieces */
	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 2);
	start_sess(1, &cp, &o);
	m.chunk = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 16);
	for (it = 0; it < 2; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_expect_pattern(&peer_rx, 300);
		feed_pattern(&peer_tx, 300);
	}
	while (s.state != EVR_SS_DONE && s.state != EVR_SS_FAILED) {
		ready();
		ck_assert_uint_lt(++guard, 1000);
	}
	ck_assert_int_eq(s.state, EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_uint_ge(m.recvs, 16 + 600);
}
END_TEST

/* ------------------------------------------------------------------ */
/* stall, cancel, connect                                              */

START_TEST(test_stall)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);

	/* waiting for the ACK */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_STALL, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_DEFAULT_STALL_MS);
	ck_assert_str_eq(s.fail.where, "watchdog");
	assert_terminal_sticks();
	reset_fixture();

	/* in a test, with a stall timeout of our own */
	o.stall_ms = 2500;
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(16 + 300 + 100);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_STALL, EVR_PH_RECV);
	ck_assert_int_eq(s.fail.detail, 2500);
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.iters_done, 1);
	ck_assert_uint_eq(s.fail.xfers_done, 1);
	reset_fixture();

	/* while connecting */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_STALL, EVR_PH_CONNECT);
	ck_assert_int_eq(s.fail.detail, 2500);
}
END_TEST

START_TEST(test_stall_in_drain_is_done)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(116);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_DONE);
	ck_assert_int_eq(s.fail.err, 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_terminal_sticks();
}
END_TEST

/* The driver cannot go on (its scheduler seat could not be had): the
 * machine fails with the driver's error, at whatever phase it is, and
 * stays failed; an errno of 0 is still a failure (-EIO). */
START_TEST(test_driver_fail_event)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_FAIL, -ENOMEM), EVR_SS_FAILED);
	assert_failed(-ENOMEM, EVR_PH_CONNECT);
	ck_assert_str_eq(s.fail.where, "driver");
	assert_terminal_sticks();
	reset_fixture();

	go_to(C_DATA_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_FAIL, 0), EVR_SS_FAILED);
	assert_failed(-EIO, EVR_PH_RECV);
	ck_assert_str_eq(s.fail.where, "driver");
}
END_TEST

START_TEST(test_cancel)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_CONNECT);
	ck_assert_str_eq(s.fail.where, "cancel");
	assert_terminal_sticks();
	reset_fixture();

	go_to(C_DATA_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_RECV);
	ck_assert_str_eq(s.fail.test, "custom");
	reset_fixture();

	/* even in DRAIN a cancel is a cancel */
	custom_plan(&cp, 100, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(116);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_CLOSE);
}
END_TEST

START_TEST(test_conn_error)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_CONNECT, ready(), EVR_SS_CONNECTING);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONN_ERROR, -ECONNREFUSED),
		  EVR_SS_FAILED);
	assert_failed(-ECONNREFUSED, EVR_PH_CONNECT);
	ck_assert_str_eq(s.fail.where, "connect");
	ck_assert_str_eq(s.fail.test, "");
	ck_assert_uint_eq(s.fail.bytes_done, 0);
	ck_assert_uint_eq(m.sends + m.recvs, 0);
	assert_terminal_sticks();
	reset_fixture();

	/* no errno given: still a failure */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONN_ERROR, 0), EVR_SS_FAILED);
	ck_assert_int_lt(s.fail.err, 0);
	ck_assert_int_eq(s.fail.phase, EVR_PH_CONNECT);
	reset_fixture();

	/* the transport's own set-up failed (no verbs resources): a local
	 * error of the setup phase, named by its call, not a connect */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_CONNECT, ready(), EVR_SS_CONNECTING);
	m.c.setup_where = "ibv_reg_mr";
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONN_ERROR, -ENOMEM),
		  EVR_SS_FAILED);
	assert_failed(-ENOMEM, EVR_PH_SETUP);
	ck_assert_str_eq(s.fail.where, "ibv_reg_mr");
}
END_TEST

START_TEST(test_connected_misuse)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	/* CONNECTED without a transport */
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	s_live = 1;
	ck_assert_int_eq(evr__sess_event(&s, EVR_SE_CONNECTED, 0),
			 EVR_WANT_NONE);
	ck_assert_int_eq(s.state, EVR_SS_FAILED);
	ck_assert_int_eq(s.fail.err, -EVR_E_PROTO);
	evr__sess_fini(&s);
	s_live = 0;

	/* CONNECTED twice */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONNECTED, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
}
END_TEST

START_TEST(test_events_after_done)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.no_negotiate = 1;
	custom_plan(&cp, 10, 1, 1);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	feed_zeros(16 + 10);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	assert_terminal_sticks();
	ck_assert_uint_eq(m.shutdowns, 1);
}
END_TEST

/* --all-at-once's gate (EVR_SF_GATE): a client that the server has
 * accepted, with its plan, waits before its first sync, sends nothing,
 * and a wake-up there is no step; the owner's OPEN starts the test. */
START_TEST(test_gate_after_reply)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t sync[16];

	base_opts(&o);
	custom_plan(&cp, 10, 1, 1);
	start_sess(1, &cp, &o);
	evr__sess_set(&s, EVR_SF_GATE, 1);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(16 + 16 + 16);
	feed_reply(0);
	ASSERT_AT(EVR_WANT_GATE, ready(), EVR_SS_GATED);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ASSERT_AT(EVR_WANT_GATE, ready(), EVR_SS_GATED);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	/* opened: the sync goes, then the test */
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_OPEN, 0), EVR_SS_SYNC_RECV);
	take(sync, sizeof(sync));
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_GATE), 0);
	feed_zeros(16 + 10);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	take_discard(10);
}
END_TEST

/* Not negotiating (--no-negotiate), the gate is at the connect; a busy
 * server's answer to HELLO fails the session before its gate; OPEN
 * anywhere but at the gate is a misuse; a cancel ends a waiting one. */
START_TEST(test_gate_edges)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.no_negotiate = 1;
	custom_plan(&cp, 10, 1, 1);
	start_sess(1, &cp, &o);
	evr__sess_set(&s, EVR_SF_GATE, 1);
	ASSERT_AT(EVR_WANT_GATE, ev(EVR_SE_CONNECTED, 0), EVR_SS_GATED);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_NEGOTIATE);
	reset_fixture();

	base_opts(&o);
	start_sess(1, &cp, &o);
	evr__sess_set(&s, EVR_SF_GATE, 1);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__busy_msg, 16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_CONNS);
	reset_fixture();

	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_OPEN, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
}
END_TEST

/* ------------------------------------------------------------------ */
/* two machines back to back (fakesess.c's pair)                      */

/* --mps: both machines in turn, on the real clock, for at most 2 s; the
 * server takes no turn for hold_ns once the client's first request is
 * out.  Returns how many of the client's turns waited for its time. */
static unsigned drive_paced(uint64_t hold_ns)
{
	uint64_t t0 = evr_now_ns(), th = 0;
	unsigned paced = 0;

	evr__sess_event(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_event(&cl.s, EVR_SE_CONNECTED, 0);
	while ((!term(&cl.s) || !term(&sv.s)) &&
	       evr_now_ns() - t0 < 2000000000u) {
		if (!term(&cl.s) &&
		    evr__sess_event(&cl.s, EVR_SE_READY, 0) == EVR_WANT_PACE) {
			ck_assert_int_eq(cl.s.state, EVR_SS_PACE);
			paced++;
		}
		if (!th && cl.s.state == EVR_SS_DATA_RECV)
			th = evr_now_ns();
		if (!term(&sv.s) && (!th || evr_now_ns() - th >= hold_ns))
			evr__sess_event(&sv.s, EVR_SE_READY, 0);
	}
	return paced;
}

/* --mps 200: five iterations 5 ms apart, the client waiting in PACE
 * between them; none late (a round trip here is microseconds: 5 ms leaves
 * room for a descheduled test); five round trips */
/* A client at mps, five 8-byte iterations, against a server that takes
 * no turn for hold_ns after the first request: both must finish. */
static void paced_pair(uint32_t mps, uint64_t hold_ns)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	oc.mps = mps;
	custom_plan(&pc, 8, 1, 5);
	default_lat_plan(&ps);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	ck_assert_uint_gt(drive_paced(hold_ns), 0);
	assert_both_done();
}

START_TEST(test_e2e_paced)
{
	paced_pair(200, 0);
	assert_result(&cl.rec, 0, "custom", 8, 1, 5);
	/* the last one's time is 20 ms after the start */
	ck_assert_uint_ge(cl.rec.ns[0], 20000000u);
	ck_assert_uint_eq(cl.rec.lat_samples[0], 5);
	ck_assert_uint_eq(cl.s.late, 0);
	ck_assert_uint_eq(cl.s.late_max_ns, 0);
	/* the server knows nothing of it */
	ck_assert_uint_eq(sv.s.mps, 0);
}
END_TEST

/* --mps 20 with a server that stops for 175 ms: the three iterations
 * whose times (50, 100, 150 ms) came while the first was out go at once,
 * late, each round trip counted from its time; the fifth (200 ms) waits
 * for its time again (25 ms after the stop: room for a descheduled
 * test) */
START_TEST(test_e2e_paced_late)
{
	paced_pair(20, 175000000u);
	ck_assert_uint_eq(cl.s.late, 3);
	/* the first late one went 125 ms or more after its time */
	ck_assert_uint_ge(cl.s.late_max_ns, 125000000u);
	ck_assert_uint_lt(cl.s.late_max_ns, 1000000000u);
	ck_assert_uint_eq(cl.s.lat_res.samples, 5);
	/* the first round trip held the stop; the late ones from their
	 * times: 175, 125, 75, 25 ms and more; the median 75 (70: the
	 * estimate's rounding) */
	ck_assert_uint_ge(cl.s.lat_res.max_ns, 175000000u);
	ck_assert_uint_ge(cl.s.lat_res.p50_ns, 70000000u);
	ck_assert_uint_ge(cl.rec.ns[0], 200000000u);
}
END_TEST

START_TEST(test_e2e_custom_negotiated)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	custom_plan(&pc, 100, 3, 4);
	default_lat_plan(&ps);      /* the server was started without -C */
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&cl.s, EVR_SF_NEGOTIATED), 1);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 1);
	ck_assert_uint_eq(cl.rec.n, 1);
	ck_assert_uint_eq(sv.rec.n, 1);
	assert_result(&cl.rec, 0, "custom", 100, 3, 4);
	assert_result(&sv.rec, 0, "custom", 100, 3, 4);
	ck_assert_uint_eq(cl.s.bytes, 16 + 16 + 32 + 16 + 32 + 2400);
}
END_TEST

/* The session tells the transport which sends a stream's next transfer
 * follows at once (more: an RDMA cork may gather them): all but the last
 * transfer of each direction of an iteration, never a ping-pong's, never
 * a control message; and it never turns to receive with bytes held. */
START_TEST(test_e2e_sends_more)
{
	static const struct {
		uint32_t size, count, iters;
		uint64_t more;      /* bytes sent with more, each side */
	} c[] = {
		{ 100, 3, 4, 4 * 2 * 100 },
		{ 64, 1, 50, 0 },   /* ping-pong: every send goes now */
		{ 1, 1000, 1, 999 },
	};
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	unsigned i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (i) {
			pair_teardown();
			pair_setup();
		}
		base_opts(&oc);
		base_opts(&os);
		custom_plan(&pc, c[i].size, c[i].count, c[i].iters);
		default_lat_plan(&ps);
		end_start(&cl, 1, &pc, &oc);
		end_start(&sv, 0, &ps, &os);
		pump();
		assert_both_done();
		ck_assert_uint_eq(cl.m.more_bytes, c[i].more);
		ck_assert_uint_eq(sv.m.more_bytes, c[i].more);
		ck_assert_uint_eq(cl.m.more_broken, 0);
		ck_assert_uint_eq(sv.m.more_broken, 0);
		ck_assert_int_eq(cl.m.more_pending, 0);
		ck_assert_int_eq(sv.m.more_pending, 0);
	}
	/* a transport that has no use for the flag (TCP) is never given
	 * it: the session does not work it out per send */
	pair_teardown();
	pair_setup();
	base_opts(&oc);
	base_opts(&os);
	custom_plan(&pc, 1, 1000, 1);
	default_lat_plan(&ps);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	cl.m.c.takes_more = 0;
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.m.more_bytes, 0);
	ck_assert_uint_eq(sv.m.more_bytes, 999);
}
END_TEST

/* Where the transport can (RDMA), a client that does not verify takes
 * its echo without copying it (recv with buf NULL), every byte of every
 * data transfer; one that verifies copies and checks all; a server
 * always reads what it echoes; control messages are always read. */
START_TEST(test_e2e_skip_echo)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	int v;

	for (v = 0; v < 2; v++) {
		if (v) {
			pair_teardown();
			pair_setup();
		}
		base_opts(&oc);
		base_opts(&os);
		oc.verify = v;
		custom_plan(&pc, 100, 3, 4);
		ps = pc;
		if (!v)
			default_lat_plan(&ps);
		end_start(&cl, 1, &pc, &oc);
		end_start(&sv, 0, &ps, &os);
		cl.m.c.can_skip = 1;
		sv.m.c.can_skip = 1;
		pump();
		assert_both_done();
		assert_result(&cl.rec, 0, "custom", 100, 3, 4);
		ck_assert_uint_eq(cl.m.skipped, v ? 0 : 100 * 3 * 4);
		ck_assert_uint_eq(sv.m.skipped, 0);
		if (v)
			ck_assert_uint_eq(cl.s.rpat.total, 100 * 3 * 4 + 16);
	}
}
END_TEST

START_TEST(test_e2e_lat2_negotiated)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	unsigned i;

	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	for (i = 0; i < 2; i++) {
		const struct rec *r = i ? &sv.rec : &cl.rec;

		ck_assert_uint_eq(r->n, 2);
		assert_result(r, 0, "64_lat", 64, 1, 50);
		assert_result(r, 1, "1.5k_lat", 1536, 1, 20);
	}
	/* the server grew its buffer for the client's plan */
	ck_assert_uint_ge(sv.s.bufsize, 1536);
	ck_assert_uint_eq(sv.s.plan.ntests, 2);
}
END_TEST

/* Buffers follow the test in hand: 16 bytes until the first test, then
 * each test's size (rstream -c N keeps many connections). */
START_TEST(test_e2e_buffer_per_test)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	ck_assert_uint_eq(cl.s.bufsize, EVR_SYNC_LEN);
	ck_assert_uint_eq(sv.s.bufsize, EVR_SYNC_LEN);
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.s.bufsize, 1536);
	ck_assert_uint_eq(cl.s.buf_ext, 0);
}
END_TEST

/* A buffer the owner lends (-c N without -T v) is used while it is large
 * enough, and never freed by the machine. */
START_TEST(test_e2e_shared_buffer)
{
	static uint8_t shared[2048];
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_use_buf(&cl.s, shared, sizeof(shared));
	ck_assert_ptr_eq(cl.s.buf, shared);
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_ptr_eq(cl.s.buf, shared);
	ck_assert_uint_eq(cl.s.buf_ext, 1);
	evr__sess_fini(&cl.s); /* must not free shared */
	cl.live = 0;
	ck_assert_ptr_null(cl.s.buf);

	/* lent too small: the machine takes a buffer of its own */
	pair_teardown();
	pair_setup();
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_use_buf(&cl.s, shared, 64);
	pump();
	assert_both_done();
	ck_assert_ptr_ne(cl.s.buf, shared);
	ck_assert_uint_eq(cl.s.buf_ext, 0);
	ck_assert_uint_ge(cl.s.bufsize, 1536);
}
END_TEST

/* A 4 MiB transfer through a server with a 64 KiB chunk: the server's
 * buffer and every call it makes stay within the chunk, the counts and
 * bytes are those of the plan, and with -T v every byte both ways
 * carries the pattern (negotiated, and the server's own plan). */
START_TEST(test_e2e_chunked)
{
	enum { SZ = 4 << 20, CH = 64 << 10, CNT = 2, IT = 3 };
	struct evr_membudget bg = { .used = 0, .max = 1 << 20 };
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	int v;

	for (v = 0; v < 3; v++) {
		if (v) {
			pair_teardown();
			pair_setup();
		}
		base_opts(&oc);
		base_opts(&os);
		os.chunk_size = CH;
		oc.verify = v > 0;
		oc.force_negotiate = v == 1;  /* v == 2: upstream's wire */
		custom_plan(&pc, SZ, CNT, IT);
		if (v == 2)
			ps = pc;
		else
			default_lat_plan(&ps);
		end_start(&cl, 1, &pc, &oc);
		end_start(&sv, 0, &ps, &os);
		evr__sess_set_budget(&sv.s, &bg);
		pump();
		assert_both_done();
		ck_assert_int_eq(evr__sess_has(&cl.s, EVR_SF_NEGOTIATED),
				 v < 2);
		ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), v > 0);
		assert_result(&cl.rec, 0, "custom", SZ, CNT, IT);
		assert_result(&sv.rec, 0, "custom", SZ, CNT, IT);
		ck_assert_uint_eq(cl.s.bytes,
				  (v < 2 ? 16 + 16 + 32 + 16 : 0) + 32 +
				  2ULL * SZ * CNT * IT);
		ck_assert_uint_le(sv.s.bufsize, CH);
		ck_assert_uint_le(sv.m.max_len, CH);
		ck_assert_uint_eq(bg.used, CH);
		/* the client needs what it asked for, no more */
		ck_assert_uint_eq(cl.s.bufsize, SZ);
		if (v) {
			ck_assert_uint_eq(sv.s.rpat.total,
					  16 + (uint64_t)SZ * CNT * IT);
			ck_assert_uint_eq(cl.s.rpat.total,
					  16 + (uint64_t)SZ * CNT * IT);
		}
		evr__sess_fini(&sv.s);
		sv.live = 0;
		ck_assert_uint_eq(bg.used, 0);
	}
}
END_TEST

START_TEST(test_e2e_verify)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	lat2_plan(&pc);
	/* no negotiation with -T v: the server runs the same plan */
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&cl.s, EVR_SF_NEGOTIATED), 0);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 0);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), 1);
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&cl.rec, 1, "1.5k_lat", 1536, 1, 20);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
	/* everything received was checked */
	ck_assert_uint_eq(cl.s.rpat.total, cl.s.bytes / 2);
	ck_assert_uint_eq(sv.s.rpat.total, sv.s.bytes / 2);
	ck_assert_uint_eq(cl.s.spat.next, sv.s.rpat.next);
	ck_assert_uint_eq(sv.s.spat.next, cl.s.rpat.next);
}
END_TEST

START_TEST(test_e2e_verify_counter_carried)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	/* a second connection: the client's counters stand at 37 */
	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	os.verify = 1;
	custom_plan(&pc, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	cl.s.spat.next = 37;
	cl.s.rpat.next = 37;
	pump();
	assert_both_done();
	ck_assert_uint_eq(sv.s.rpat.total, 16 + 1200);
	ck_assert_uint_eq(cl.s.rpat.total, 16 + 1200);
	ck_assert_uint_eq(cl.s.spat.next, (37 + 16 + 1200) & 0xff);
	ck_assert_uint_eq(cl.rec.n, 1);
	ck_assert_uint_eq(sv.rec.n, 1);
}
END_TEST

START_TEST(test_e2e_verify_negotiated)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	/* --negotiate with -T v: the server follows plan and verify flag */
	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	oc.force_negotiate = 1;
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 1);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), 1);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
	ck_assert_uint_eq(cl.s.rpat.total, 2 * 16 + 50 * 64 + 20 * 1536);
	ck_assert_uint_eq(sv.s.rpat.total, 2 * 16 + 50 * 64 + 20 * 1536);
}
END_TEST

/*
 * The engine carries a client's pattern counters from one connection to
 * the next (as upstream's static counter does), so the second connection
 * of a default run starts at 64 (four 16-byte syncs; the data of the
 * latency series is a multiple of 256).  A negotiating server must pick
 * the counter up, as it does from an upstream client's first sync.
 */
START_TEST(test_e2e_verify_negotiated_counter_carried)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	oc.force_negotiate = 1;
	custom_plan(&pc, 100, 3, 4);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	cl.s.spat.next = 64;
	cl.s.rpat.next = 64;
	pump();
	ck_assert_msg(sv.s.state == EVR_SS_DONE,
		      "server %s: err %d, bad byte %llu (client counter at "
		      "64, server expects 0 after negotiation)",
		      evr__sess_state_name(sv.s.state), sv.s.fail.err,
		      (unsigned long long)sv.s.fail.bytes_done);
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 1);
}
END_TEST

START_TEST(test_e2e_no_negotiate)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	base_opts(&oc);
	base_opts(&os);
	oc.no_negotiate = 1;
	lat2_plan(&pc);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 0, "64_lat", 64, 1, 50);
}
END_TEST

START_TEST(test_e2e_small_pieces)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	/* odd-sized partial transfers and full queues on both sides */
	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	cl.m.chunk = 7;
	sv.m.chunk = 13;
	q_c2s.limit = 50;
	q_s2c.limit = 29;
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
}
END_TEST

START_TEST(test_e2e_small_pieces_verify)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	custom_plan(&pc, 1000, 5, 3);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	cl.m.chunk = 33;
	sv.m.chunk = 17;
	q_c2s.limit = 100;
	q_s2c.limit = 64;
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), 1);
	assert_result(&cl.rec, 0, "custom", 1000, 5, 3);
	assert_result(&sv.rec, 0, "custom", 1000, 5, 3);
}
END_TEST

START_TEST(test_e2e_mismatch_without_negotiation)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	/* upstream's failure mode: the server expects more iterations */
	base_opts(&oc);
	base_opts(&os);
	oc.no_negotiate = 1;
	custom_plan(&pc, 100, 3, 4);
	custom_plan(&ps, 100, 3, 5);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	ck_assert_int_eq(cl.s.state, EVR_SS_DONE);
	ck_assert_int_eq(sv.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(sv.s.fail.err, -EVR_E_EOF);
	ck_assert_int_eq(sv.s.fail.phase, EVR_PH_RECV);
	ck_assert_str_eq(sv.s.fail.test, "custom");
	ck_assert_uint_eq(sv.s.fail.iters_done, 4);
	ck_assert_uint_eq(sv.s.fail.iters_total, 5);
	ck_assert_uint_eq(sv.s.fail.xfers_done, 0);
	ck_assert_str_eq(sv.s.fail.peer, "client:40000");
	ck_assert_uint_eq(sv.rec.n, 0);
}
END_TEST

START_TEST(test_e2e_client_sends_too_much)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	unsigned i;

	/* the client runs more iterations than the server's plan */
	base_opts(&oc);
	base_opts(&os);
	oc.no_negotiate = 1;
	custom_plan(&pc, 100, 3, 2);
	custom_plan(&ps, 100, 3, 1);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_event(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_event(&cl.s, EVR_SE_CONNECTED, 0);
	for (i = 0; !term(&sv.s); i++) {
		if (i >= 100000)
			ck_abort_msg("server never ended");
		evr__sess_event(&cl.s, EVR_SE_READY, 0);
		evr__sess_event(&sv.s, EVR_SE_READY, 0);
	}
	ck_assert_int_eq(sv.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(sv.s.fail.err, -EVR_E_EXTRA);
	ck_assert_int_eq(sv.s.fail.phase, EVR_PH_CLOSE);
	ck_assert_uint_eq(sv.rec.n, 1);
	ck_assert_int_eq(cl.s.state, EVR_SS_DATA_RECV);
}
END_TEST

/* ------------------------------------------------------------------ */
/* every state, seen through the trace                                 */

struct trace_rec {
	int seen[EVR_SS__COUNT];
	unsigned lines;
	char first[8][64];
};

static void trace_cb(void *ud, const char *line)
{
	struct trace_rec *t = ud;
	const char *arrow = strstr(line, " -> ");
	const char *from = strchr(line, ':');
	unsigned i;

	ck_assert_ptr_nonnull(arrow);
	ck_assert_ptr_nonnull(from);
	ck_assert(!strncmp(line, "conn ", 5));
	from += 2;
	for (i = 0; i < EVR_SS__COUNT; i++) {
		const char *n = evr__sess_state_name(i);
		size_t l = strlen(n);

		if (!strcmp(arrow + 4, n))
			t->seen[i] = 1;
		if ((size_t)(arrow - from) == l && !strncmp(from, n, l))
			t->seen[i] = 1;
	}
	if (t->lines < 8 && !strncmp(line, "conn 1: ", 8))
		snprintf(t->first[t->lines++], sizeof(t->first[0]), "%s",
			 line + 8);
}

START_TEST(test_every_state_traced)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	struct trace_rec tr;
	unsigned i;
	static const char *const client_start[] = {
		"CONNECTING -> HELLO_SEND", "HELLO_SEND -> HELLO_RECV",
		"HELLO_RECV -> PLAN_SEND", "PLAN_SEND -> REPLY_RECV",
		"REPLY_RECV -> SYNC_SEND", "SYNC_SEND -> SYNC_RECV",
		"SYNC_RECV -> DATA_SEND", "DATA_SEND -> DATA_RECV",
	};

	memset(&tr, 0, sizeof(tr));
	evr_loop_set_trace(loop, trace_cb, &tr);
	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	for (i = 0; i < 8; i++)
		ck_assert_str_eq(tr.first[i], client_start[i]);
	/* a gated client (--all-at-once), opened at its gate */
	evr__sess_fini(&cl.s);
	evr__sess_fini(&sv.s);
	bq_free(&q_c2s);
	bq_free(&q_s2c);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_set(&cl.s, EVR_SF_GATE, 1);
	pump();
	ck_assert_int_eq(cl.s.state, EVR_SS_GATED);
	ck_assert_int_eq(evr__sess_event(&cl.s, EVR_SE_OPEN, 0),
			 EVR_WANT_READ);
	for (i = 0; i < 1000 && (!term(&cl.s) || !term(&sv.s)); i++) {
		evr__sess_event(&cl.s, EVR_SE_READY, 0);
		evr__sess_event(&sv.s, EVR_SE_READY, 0);
	}
	assert_both_done();
	/* a paced client (--mps), waiting for its times */
	evr__sess_fini(&cl.s);
	evr__sess_fini(&sv.s);
	bq_free(&q_c2s);
	bq_free(&q_s2c);
	oc.mps = 2000;
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	ck_assert_uint_gt(drive_paced(0), 0);
	assert_both_done();
	oc.mps = 0;
	/* and a failure */
	evr__sess_fini(&cl.s);
	cl.live = 0;
	bq_free(&q_c2s);
	bq_free(&q_s2c);
	end_start(&cl, 1, &pc, &oc);
	evr__sess_event(&cl.s, EVR_SE_CANCEL, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	evr_loop_set_trace(loop, NULL, NULL);
	for (i = 0; i < EVR_SS__COUNT; i++)
		ck_assert_msg(tr.seen[i], "state %s never seen",
			      evr__sess_state_name(i));
}
END_TEST

static Suite *session_suite(void)
{
	Suite *su = suite_create("session");
	TCase *tc;

	tc = tcase_create("basics");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_init);
	suite_add_tcase(su, tc);

	tc = tcase_create("client");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_verify_no_hello);
	tcase_add_test(tc, test_client_verify_failure);
	tcase_add_test(tc, test_client_verify_bad_sync);
	tcase_add_test(tc, test_client_lat2_negotiated);
	suite_add_tcase(su, tc);

	tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_server_extra_data_in_drain);
	suite_add_tcase(su, tc);

	tc = tcase_create("duration");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_duration);
	tcase_add_test(tc, test_client_duration_end);
	tcase_add_test(tc, test_client_percentiles);
	tcase_add_test(tc, test_client_split);
	tcase_add_test(tc, test_server_hold_stamps);
	tcase_add_test(tc, test_server_duration);
	tcase_add_test(tc, test_server_duration_chunked);
	suite_add_tcase(su, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_eof_in_each_phase, 0,
			    sizeof(eof_cases) / sizeof(eof_cases[0]));
	tcase_add_loop_test(tc, test_reset_in_each_phase, 0,
			    sizeof(eof_cases) / sizeof(eof_cases[0]));
	tcase_add_test(tc, test_send_errors);
	tcase_add_test(tc, test_eagain_and_eintr);
	tcase_add_test(tc, test_partial_io);
	tcase_add_test(tc, test_stall);
	tcase_add_test(tc, test_stall_in_drain_is_done);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_driver_fail_event);
	tcase_add_test(tc, test_conn_error);
	tcase_add_test(tc, test_connected_misuse);
	tcase_add_test(tc, test_events_after_done);
	tcase_add_test(tc, test_gate_after_reply);
	tcase_add_test(tc, test_gate_edges);
	suite_add_tcase(su, tc);

	tc = tcase_create("pair");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_e2e_custom_negotiated);
	tcase_add_test(tc, test_e2e_sends_more);
	tcase_add_test(tc, test_e2e_skip_echo);
	tcase_add_test(tc, test_e2e_lat2_negotiated);
	tcase_add_test(tc, test_e2e_buffer_per_test);
	tcase_add_test(tc, test_e2e_shared_buffer);
	tcase_add_test(tc, test_e2e_chunked);
	tcase_add_test(tc, test_e2e_verify);
	tcase_add_test(tc, test_e2e_verify_counter_carried);
	tcase_add_test(tc, test_e2e_verify_negotiated);
	tcase_add_test(tc, test_e2e_verify_negotiated_counter_carried);
	tcase_add_test(tc, test_e2e_no_negotiate);
	tcase_add_test(tc, test_e2e_small_pieces);
	tcase_add_test(tc, test_e2e_small_pieces_verify);
	tcase_add_test(tc, test_e2e_mismatch_without_negotiation);
	tcase_add_test(tc, test_e2e_client_sends_too_much);
	tcase_add_test(tc, test_every_state_traced);
	tcase_add_test(tc, test_e2e_paced);
	tcase_add_test(tc, test_e2e_paced_late);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(session_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
