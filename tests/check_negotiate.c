/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session machine's negotiation (src/stream/session/negotiate.c),
 * driven through the machine with synthetic events over the mock
 * transport (fakesess.c): the client's HELLO, plan and the server's
 * reply (accepted, rejected, garbage, busy, the budget's refusal), what
 * an upstream peer gets (a server without HELLO, a client's bare sync,
 * a verifying client known by its pattern), and the owner's decided().
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fakesess.h"

/* ------------------------------------------------------------------ */
/* client with negotiation                                             */

START_TEST(test_client_negotiated_steps)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan_hdr h;
	struct evr_test t;
	uint8_t b[64];
	unsigned it;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);

	ASSERT_AT(EVR_WANT_CONNECT, ready(), EVR_SS_CONNECTING);
	ck_assert_uint_eq(m.sends + m.recvs, 0);

	m.send_block = 1;
	ASSERT_AT(EVR_WANT_WRITE, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_SEND);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_HELLO_RECV);
	take(b, 16);
	ck_assert(evr__is_hello(b));
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_HELLO_RECV);

	/* the ACK, in two pieces */
	feed(evr__ack_msg, 5);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_HELLO_RECV);
	m.send_block = 1;
	feed(evr__ack_msg + 5, 11);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_PLAN_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);

	/* a valid plan: header + one entry */
	ck_assert_uint_eq(bq_avail(&q_out), 32);
	take(b, 32);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.version, EVR_WIRE_VERSION);
	ck_assert_uint_eq(h.flags, 0);
	ck_assert_uint_eq(h.ntests, 1);
	ck_assert_uint_eq(h.conn_index, 0);
	ck_assert_uint_eq(h.conn_total, 1);
	ck_assert_int_eq(evr__plan_entry_decode(b + 16, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(t.name, "custom");
	ck_assert_uint_eq(t.kind, EVR_TEST_CUSTOM);
	ck_assert_uint_eq(t.size, 100);
	ck_assert_uint_eq(t.count, 3);
	ck_assert_uint_eq(t.iters, 4);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);

	m.send_block = 1;
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_SYNC_SEND);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	ck_assert_uint_eq(bq_avail(&q_out), 0);

	m.send_block = 1;
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_DATA_SEND);
	m.send_block = 0;
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		ck_assert_uint_eq(s.iter, it);
		/* the client sends all of an iteration before receiving */
		ck_assert_uint_eq(bq_avail(&q_out), 300);
		take_discard(300);
		ck_assert_uint_eq(rec.n, 0);
		feed_zeros(150);
		ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
		feed_zeros(150);
		if (it < 3)
			continue;
		ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	}
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	/* the plan is over after the last result, before the shutdown */
	ck_assert_uint_eq(rec.plan_done, 1);
	ck_assert_uint_eq(rec.results_at_plan_done, 1);
	ck_assert_int_eq(rec.state_at_plan_done, EVR_SS_DATA_RECV);
	ck_assert_uint_eq(m.shutdowns, 1);
	ck_assert_uint_eq(m.closes, 0);
	/* hello, ack, plan, reply, two syncs, 4 x (300 + 300) */
	ck_assert_uint_eq(s.bytes, 16 + 16 + 32 + 16 + 32 + 2400);
	ck_assert_int_eq(s.fail.err, 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_client_plan_bytes_lat2)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan_hdr h;
	struct evr_test t;
	uint8_t b[16 + 3 * 16];

	base_opts(&o);
	lat2_plan(&cp);
	start_sess(1, &cp, &o);
	s.conn_index = 1;
	s.conn_total = 2;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(16);
	ck_assert_uint_eq(bq_avail(&q_out), 48);
	take(b, 48);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.ntests, 2);
	ck_assert_uint_eq(h.conn_index, 1);
	ck_assert_uint_eq(h.conn_total, 2);
	ck_assert_int_eq(evr__plan_entry_decode(b + 16, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(t.name, "64_lat");
	ck_assert_uint_eq(t.kind, EVR_TEST_LAT);
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.iters, 50);
	ck_assert_int_eq(evr__plan_entry_decode(b + 32, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(t.name, "1.5k_lat");
	ck_assert_uint_eq(t.size, 1536);
	ck_assert_uint_eq(t.iters, 20);
}
END_TEST

START_TEST(test_client_rejected)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	client_to_reply_recv(&cp, &o);
	feed_reply(EVR_PLAN_E_SIZE);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_SIZE);
	ck_assert_str_eq(s.fail.test, "");
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_client_rejected_each_status)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	int st;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	for (st = 1; st < EVR_PLAN_E_MAX; st++) {
		client_to_reply_recv(&cp, &o);
		feed_reply(st);
		ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
		assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
		ck_assert_int_eq(s.fail.detail, st);
		reset_fixture();
	}
}
END_TEST

START_TEST(test_client_garbage_reply)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	client_to_reply_recv(&cp, &o);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_client_upstream_server)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];
	unsigned it;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take(b, 16);
	ck_assert(evr__is_hello(b));
	/* an upstream server answers the "sync" with its own 16 bytes:
	 * that exchange was the first test's sync, data starts at once */
	m.send_block = 1;
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_DATA_SEND);
	ck_assert_uint_eq(s.ti, 0);
	m.send_block = 0;
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		/* no plan, no second sync: just the data */
		ck_assert_uint_eq(bq_avail(&q_out), 300);
		take_discard(300);
		feed_zeros(300);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	ck_assert_uint_eq(m.shutdowns, 1);
}
END_TEST

/* -D against a server that does not negotiate: fail before any data. */
START_TEST(test_client_duration_upstream)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.duration_ms = 500;
	custom_plan(&cp, 100, 1, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_NOTSUP, EVR_PH_NEGOTIATE);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 0);
}
END_TEST

/* -c N against a server that does not negotiate (upstream's serves one
 * connection at a time; the others waited in its backlog for the stall
 * timeout): the first connection that hears it fails, not supported. */
START_TEST(test_client_conns_upstream)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.conns = 2;
	custom_plan(&cp, 100, 1, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_NOTSUP, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_NOTSUP_CONNS);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 0);
}
END_TEST

/* A server at its --max-conns sends BUSY at once: a client says so,
 * negotiating (in place of the ACK) or not (in place of the sync). */
START_TEST(test_client_server_busy)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	char line[512];

	base_opts(&o);
	custom_plan(&cp, 100, 1, 1);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__busy_msg, 16);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_CONNS);
	evr_failure_str(&s.fail, line, sizeof(line));
	/* the engine's words: rstream adds its option (check_cli) */
	ck_assert_msg(strstr(line, "connection refused") &&
		      strstr(line, "as many connections as it allows") &&
		      !strstr(line, "--"), "%s", line);

	reset_fixture();
	o.no_negotiate = 1;
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	feed(evr__busy_msg, 16);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_SYNC);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_CONNS);
}
END_TEST

START_TEST(test_client_verify_negotiated)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 }, peer_rx = { 0 };
	struct evr_plan_hdr h;
	uint8_t b[32];
	unsigned it;

	base_opts(&o);
	o.verify = 1;
	o.force_negotiate = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take(b, 16);
	ck_assert(evr__is_hello(b));
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take(b, 32);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.flags, EVR_PLAN_F_VERIFY);
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	/* negotiation bytes are not part of the pattern */
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 16);
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_expect_pattern(&peer_rx, 300);
		feed_pattern(&peer_tx, 300);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	ck_assert_uint_eq(s.rpat.total, 16 + 1200);
}
END_TEST

START_TEST(test_client_no_negotiate)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];

	base_opts(&o);
	o.no_negotiate = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take(b, 16);
	ck_assert(!evr__is_hello(b));
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 300);
}
END_TEST

/* ------------------------------------------------------------------ */
/* server                                                              */

START_TEST(test_server_negotiated_steps)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];
	uint32_t limit = 0;
	unsigned it;

	base_opts(&o);
	default_lat_plan(&cp);      /* the server's own plan differs */
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 0);

	m.send_block = 1;
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_ACK_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take(b, 16);
	ck_assert(evr__is_ack(b));

	feed_hdr(EVR_WIRE_VERSION, 0, 1, 1, 2);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	m.send_block = 1;
	feed_entry(100, 3, 4, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_REPLY_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), EVR_PLAN_OK);
	ck_assert_uint_eq(limit, EVR_MAX_XFER_SIZE);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 0);
	ck_assert_uint_eq(s.conn_index, 1);
	ck_assert_uint_eq(s.conn_total, 2);
	ck_assert_uint_eq(s.plan.ntests, 1);
	ck_assert_str_eq(s.plan.tests[0].name, "custom");

	m.send_block = 1;
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_SYNC_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	for (it = 0; it < 4; it++) {
		/* the server receives an iteration, then sends it back */
		ck_assert_uint_eq(s.iter, it);
		feed_zeros(200);
		ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
		ck_assert_uint_eq(bq_avail(&q_out), 0);
		m.send_block = 1;
		feed_zeros(100);
		ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_DATA_SEND);
		m.send_block = 0;
		if (it < 3) {
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
			take_discard(300);
		}
	}
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	take_discard(300);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	ck_assert_int_eq(rec.state_at_result[0], EVR_SS_DATA_SEND);
	/* our side of the plan is done before the client's close */
	ck_assert_uint_eq(rec.plan_done, 1);
	ck_assert_uint_eq(rec.results_at_plan_done, 1);
	ck_assert_int_eq(rec.state_at_plan_done, EVR_SS_DATA_SEND);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DRAIN);
	/* the client closes: all is well */
	q_in.eof = 1;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_int_eq(s.fail.err, 0);
	ck_assert_uint_eq(m.shutdowns, 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_server_negotiated_verify_flag)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, EVR_PLAN_F_VERIFY, 1, 0, 1);
	feed_entry(100, 3, 4, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 1);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_SYNC);
	ck_assert_uint_eq(s.fail.bytes_done, 1);
}
END_TEST

/* The memory budget: a plan whose buffer the budget cannot take is
 * refused with its own reason and what is left; one that fits is
 * charged, and the charge comes back when the machine goes. */
START_TEST(test_server_budget)
{
	struct evr_membudget bg = { .used = 0, .max = 100000 };
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];
	uint32_t limit = 0;

	base_opts(&o);              /* chunk: 1 MiB */
	default_lat_plan(&cp);
	start_sess(0, &cp, &o);
	evr__sess_set_budget(&s, &bg);
	ck_assert_uint_eq(bg.used, EVR_SYNC_LEN);
	bg.used += 30000;           /* another connection's */
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(4 << 20, 1, 1, EVR_TEST_CUSTOM); /* needs the chunk */
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_BUDGET);
	take_discard(16);
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), EVR_PLAN_E_BUDGET);
	ck_assert_uint_eq(limit, 100000 - 30000);
	ck_assert_uint_eq(bg.used, 30000 + EVR_SYNC_LEN);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(bg.used, 30000);

	/* 60000 bytes fit in the 70000 left */
	reset_fixture();
	start_sess(0, &cp, &o);
	evr__sess_set_budget(&s, &bg);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(60000, 1, 1, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
	take_discard(16);
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, NULL), EVR_PLAN_OK);
	ck_assert_uint_eq(bg.used, 30000 + 60000);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(bg.used, 30000);

	/* an upstream client's test (the server's own plan) that the
	 * budget cannot take fails the connection, saying why */
	reset_fixture();
	bg.used = 99990;
	custom_plan(&cp, 60000, 1, 1);
	start_sess(0, &cp, &o);
	evr__sess_set_budget(&s, &bg);
	ev(EVR_SE_CONNECTED, 0);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	take_discard(16);           /* the sync went back first */
	ck_assert_int_eq(s.fail.err, -ENOBUFS);
	ck_assert_int_eq(s.fail.phase, EVR_PH_SYNC);
	/* the call, and the limit it met as a fact */
	ck_assert_str_eq(s.fail.where, "buffer");
	ck_assert_int_eq(s.fail.detail, EVR_REJECT_BUDGET);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(bg.used, 99990);
}
END_TEST

static void assert_rejected_with(int status)
{
	uint8_t b[16];

	ck_assert_msg(bq_avail(&q_out) == 16, "sent %zu bytes, not a reply",
		      bq_avail(&q_out));
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, NULL), status);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, status);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
}

START_TEST(test_server_rejects_version)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	m.send_block = 1;
	feed_hdr(EVR_WIRE_VERSION_DURATION + 1, 0, 1, 0, 1);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_REPLY_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(EVR_PLAN_E_VERSION);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_server_rejects_ntests)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	feed_hdr(EVR_WIRE_VERSION, 0, 0, 0, 1);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(EVR_PLAN_E_NTESTS);
	reset_fixture();

	server_to_plan_hdr(&o);
	feed_hdr(EVR_WIRE_VERSION, 0, EVR_PLAN_MAX_TESTS + 1, 0, 1);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(EVR_PLAN_E_NTESTS);
}
END_TEST

static void server_rejects_entry(uint32_t size, uint32_t count, uint32_t iters,
				 uint8_t kind, int status)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	/* the bad entry is the second one */
	feed_hdr(EVR_WIRE_VERSION, 0, 2, 0, 1);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	feed_entry(64, 1, 10, EVR_TEST_LAT);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	feed_entry(size, count, iters, kind);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(status);
	/* the rejected plan did not replace the server's own */
	ck_assert_uint_eq(s.plan.ntests, 1);
	ck_assert_uint_eq(s.plan.tests[0].size, 100);
	reset_fixture();
}

START_TEST(test_server_rejects_entries)
{
	server_rejects_entry(0, 1, 1, EVR_TEST_CUSTOM, EVR_PLAN_E_SIZE);
	server_rejects_entry(EVR_MAX_XFER_SIZE + 1, 1, 1, EVR_TEST_BW,
			     EVR_PLAN_E_SIZE);
	server_rejects_entry(100, 0, 1, EVR_TEST_CUSTOM, EVR_PLAN_E_COUNT);
	server_rejects_entry(100, 1, 0, EVR_TEST_CUSTOM, EVR_PLAN_E_COUNT);
	server_rejects_entry(100, EVR_MAX_COUNT + 1, 1, EVR_TEST_CUSTOM,
			     EVR_PLAN_E_COUNT);
	server_rejects_entry(100, 1, 1, 3, EVR_PLAN_E_KIND);
}
END_TEST

START_TEST(test_server_bad_plan_magic)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
	/* nothing to answer a stranger with */
	ck_assert_uint_eq(bq_avail(&q_out), 0);
}
END_TEST

START_TEST(test_server_upstream_client)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	/* upstream's sync: 16 bytes of whatever is in its buffer */
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 16);   /* our sync reply */
	take_discard(16);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 0);
	for (it = 0; it < 4; it++) {
		feed_zeros(300);
		if (it < 3)
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		else
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
		ck_assert_uint_eq(bq_avail(&q_out), 300);
		take_discard(300);
	}
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	q_in.eof = 1;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
}
END_TEST

START_TEST(test_server_pattern_sync_37)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { .next = 37 }, peer_rx = { .next = 37 };
	uint8_t b[300];

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_pattern(&peer_tx, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 1);
	/* the reply carries the pattern from where the client stood */
	take(b, 16);
	ck_assert_uint_eq(b[0], 37);
	ck_assert_uint_eq(b[15], 52);
	peer_rx.next = 37;
	ck_assert_int_eq(evr__pattern_check(&peer_rx, b, 16, NULL), 0);

	feed_pattern(&peer_tx, 300);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take_expect_pattern(&peer_rx, 300);
	/* second iteration, first transfer, byte 5 is wrong */
	evr__pattern_fill(&peer_tx, b, 300);
	b[5] = (uint8_t)(b[5] + 1);
	feed(b, 300);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_RECV);
	ck_assert_uint_eq(s.fail.bytes_done, 16 + 300 + 5);
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.iters_done, 1);
	ck_assert_uint_eq(s.fail.xfers_done, 0);
}
END_TEST

START_TEST(test_server_pattern_sync_wraps)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { .next = 250 }, peer_rx = { .next = 250 };

	base_opts(&o);
	custom_plan(&cp, 100, 3, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_pattern(&peer_tx, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 300);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	take_expect_pattern(&peer_rx, 300);
	ck_assert_uint_eq(rec.n, 1);
}
END_TEST

START_TEST(test_server_verify_given_zeros)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_SYNC);
	ck_assert_uint_eq(s.fail.bytes_done, 1);
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(bq_avail(&q_out), 0);
}
END_TEST

/* The owner's decided() hook: once the client is known, the owner may
 * take the machine away (-T f forks there). */
static unsigned decided_n;
static int decided_ret;
static enum evr_sess_state decided_state;

static int rec_decided(struct evr_sess *x)
{
	decided_n++;
	decided_state = x->state;
	return decided_ret;
}

static const struct evr_sess_owner decide_owner = {
	.result = rec_result,
	.decided = rec_decided,
};

START_TEST(test_server_decided_upstream_client)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	ck_assert_uint_eq(decided_n, 0);
	feed_zeros(16);
	/* detached before our sync reply went out */
	ASSERT_AT(EVR_WANT_DETACH, ready(), EVR_SS_SYNC_SEND);
	ck_assert_uint_eq(decided_n, 1);
	ck_assert_int_eq(decided_state, EVR_SS_SYNC_SEND);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	/* whoever runs it next carries on from there, undecided again */
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 16);
	ck_assert_uint_eq(decided_n, 1);
}
END_TEST

START_TEST(test_server_decided_negotiated)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(64, 2, 5, EVR_TEST_CUSTOM);
	/* after the accepting reply: the plan is known */
	ASSERT_AT(EVR_WANT_DETACH, ready(), EVR_SS_SYNC_RECV);
	ck_assert_uint_eq(decided_n, 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	ck_assert_uint_eq(bq_avail(&q_out), 32);    /* ACK and reply */
	/* not detached: it goes on by itself */
	reset_fixture();
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 0;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(64, 2, 5, EVR_TEST_CUSTOM);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(decided_n, 1);
	/* a rejected plan is not a decision */
	reset_fixture();
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(0, 2, 5, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	ck_assert_uint_eq(decided_n, 0);
}
END_TEST

static Suite *negotiate_suite(void)
{
	Suite *su = suite_create("negotiate");
	TCase *tc;

	tc = tcase_create("client");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_negotiated_steps);
	tcase_add_test(tc, test_client_plan_bytes_lat2);
	tcase_add_test(tc, test_client_rejected);
	tcase_add_test(tc, test_client_rejected_each_status);
	tcase_add_test(tc, test_client_garbage_reply);
	tcase_add_test(tc, test_client_upstream_server);
	tcase_add_test(tc, test_client_verify_negotiated);
	tcase_add_test(tc, test_client_no_negotiate);
	tcase_add_test(tc, test_client_server_busy);
	tcase_add_test(tc, test_client_duration_upstream);
	tcase_add_test(tc, test_client_conns_upstream);
	suite_add_tcase(su, tc);

	tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_server_negotiated_steps);
	tcase_add_test(tc, test_server_negotiated_verify_flag);
	tcase_add_test(tc, test_server_budget);
	tcase_add_test(tc, test_server_rejects_version);
	tcase_add_test(tc, test_server_rejects_ntests);
	tcase_add_test(tc, test_server_rejects_entries);
	tcase_add_test(tc, test_server_bad_plan_magic);
	tcase_add_test(tc, test_server_upstream_client);
	tcase_add_test(tc, test_server_pattern_sync_37);
	tcase_add_test(tc, test_server_pattern_sync_wraps);
	tcase_add_test(tc, test_server_verify_given_zeros);
	tcase_add_test(tc, test_server_decided_upstream_client);
	tcase_add_test(tc, test_server_decided_negotiated);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(negotiate_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
