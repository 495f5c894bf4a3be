/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The close of an RDMA connection (src/stream/rdma/rclose.c), driven by hand
 * through a mock connection that carries the actions out as rdma_conn.c's
 * close_step does: every ordering of the close (ours first, the peer's
 * DISCONNECT first, CM DISCONNECTED first, shutdown then close, errors,
 * a close while connecting, the engine freed while connections linger),
 * each asserted as the exact sequence of events, states and actions; and
 * the invariants checked over every state, event and set of facts.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/rdma/rclose.h"

/* ------------------------------------------------------------------ */
/* the mock connection                                                 */

struct mock {
	enum evr_rc_state state;
	enum evr_rc_disc disc;
	unsigned facts;
	int slot;            /* a control slot is free for our DISCONNECT */
	int post_fails;      /* ibv_post_send fails */
	int flush_disc;      /* rdma_disconnect flushes our DISCONNECT */
	unsigned posted;     /* work requests posted, not yet completed */
	unsigned flushed;    /* ... that came back flushed */
	unsigned lost;       /* ... destroyed with the QP, never completed */
	/* what the actions did */
	unsigned processes, disconnects, wakes, notifies, dreqs, watches;
	unsigned timer;      /* the last timer started: an EVR_RC_A_TIMER_* */
	int freed;
	unsigned depth;      /* nested steps, as close_step may nest */
	char log[2048];
};

static const char *const ev_names[] = {
	[EVR_RC_E_SHUT] = "shut",
	[EVR_RC_E_CLOSE] = "close",
	[EVR_RC_E_POLLED] = "polled",
	[EVR_RC_E_DISC_POSTED] = "disc_posted",
	[EVR_RC_E_DISC_DONE] = "disc_done",
	[EVR_RC_E_CM_DISC] = "cm_disc",
	[EVR_RC_E_TIMER] = "timer",
	[EVR_RC_E_CONN_FAIL] = "conn_fail",
	[EVR_RC_E_ABORT] = "abort",
	[EVR_RC_E_PORT_DOWN] = "port_down",
	[EVR_RC_E_DEV_GONE] = "dev_gone",
};

static const struct {
	unsigned bit;
	const char *name;
} act_names[] = {
	{ EVR_RC_A_TIMEOUT, "timeout" },
	{ EVR_RC_A_CONN_FAILED, "conn_failed" },
	{ EVR_RC_A_PROCESS, "process" },
	{ EVR_RC_A_DISCONNECT, "disconnect" },
	{ EVR_RC_A_TIMER_CLOSE, "timer_close" },
	{ EVR_RC_A_TIMER_GRACE, "timer_grace" },
	{ EVR_RC_A_TIMER_DISC, "timer_disc" },
	{ EVR_RC_A_WATCH, "watch" },
	{ EVR_RC_A_WAKE, "wake" },
	{ EVR_RC_A_NOTIFY, "notify" },
	{ EVR_RC_A_DREQ, "dreq" },
	{ EVR_RC_A_TEARDOWN, "teardown" },
	{ EVR_RC_A_FLUSH, "flush" },
};

#define ALL_ACTS ((EVR_RC_A_FLUSH << 1) - 1)

static void logf_(struct mock *m, const char *s)
{
	size_t n = strlen(m->log);

	ck_assert_uint_lt(n + strlen(s), sizeof(m->log) - 1);
	strcat(m->log, s);
}

static void mock_init(struct mock *m, enum evr_rc_state st, unsigned facts)
{
	memset(m, 0, sizeof(*m));
	m->state = st;
	m->facts = facts;
	m->slot = 1;
}

static void step(struct mock *m, enum evr_rc_event ev);

/* rdma_conn.c's process(): the CQ, then our DISCONNECT if it is due and a
 * control slot is free (post_disconnect). */
static void mock_process(struct mock *m)
{
	m->processes++;
	if (m->disc != EVR_RC_DISC_WANTED || !m->slot)
		return;
	/* the cork's bytes go first (post_disconnect) */
	if ((m->facts & EVR_RC_F_UNSENT) &&
	    !(m->facts & (EVR_RC_F_ERR | EVR_RC_F_PEER_DISC |
			  EVR_RC_F_CM_DISC)))
		return;
	step(m, EVR_RC_E_DISC_POSTED);
	if (m->post_fails)
		step(m, EVR_RC_E_DISC_DONE);
}

/* close_step's executor, in its order. */
static void step(struct mock *m, enum evr_rc_event ev)
{
	struct evr_rc_next n;
	char buf[256];
	size_t i;

	if (m->freed)
		ck_abort_msg("%s on a connection torn down", ev_names[ev]);
	n = evr__rc_close_next(m->state, m->disc, ev, m->facts);
	snprintf(buf, sizeof(buf), "%s%s:%s/%s[", m->log[0] ? " " : "",
		 ev_names[ev], evr__rc_state_name(n.state),
		 evr__rc_disc_name(n.disc));
	logf_(m, buf);
	for (i = 0; i < sizeof(act_names) / sizeof(act_names[0]); i++) {
		if (n.acts & act_names[i].bit) {
			logf_(m, act_names[i].name);
			if (n.acts & ~((act_names[i].bit << 1) - 1))
				logf_(m, ",");
		}
	}
	logf_(m, "]");
	ck_assert_uint_eq(n.acts & ~(unsigned)ALL_ACTS, 0);
	m->state = n.state;
	m->disc = n.disc;
	m->depth++;
	ck_assert_uint_lt(m->depth, 4);
	if (n.acts & EVR_RC_A_PROCESS)
		mock_process(m);
	if (n.acts & (EVR_RC_A_FLUSH | EVR_RC_A_DISCONNECT)) {
		/* the QP in error: every work request comes back flushed */
		m->flushed += m->posted;
		m->posted = 0;
	}
	if (n.acts & EVR_RC_A_DISCONNECT) {
		m->disconnects++;
		if (m->flush_disc && m->disc == EVR_RC_DISC_POSTED)
			step(m, EVR_RC_E_DISC_DONE);
	}
	if (n.acts & (EVR_RC_A_TIMER_CLOSE | EVR_RC_A_TIMER_GRACE |
		      EVR_RC_A_TIMER_DISC))
		m->timer = n.acts & (EVR_RC_A_TIMER_CLOSE |
				     EVR_RC_A_TIMER_GRACE |
				     EVR_RC_A_TIMER_DISC);
	if (n.acts & EVR_RC_A_WATCH)
		m->watches++;
	if (n.acts & EVR_RC_A_WAKE)
		m->wakes++;
	if (n.acts & EVR_RC_A_NOTIFY)
		m->notifies++;
	if (n.acts & EVR_RC_A_DREQ)
		m->dreqs++;
	if (n.acts & EVR_RC_A_TEARDOWN) {
		/* a QP destroyed with work requests outstanding loses them */
		m->lost += m->posted;
		m->freed = 1;
		m->timer = 0;
	}
	m->depth--;
}

/* What the engine's close (r_close) does: let go, then shut down and
 * close through the machine. */
static void mock_close(struct mock *m)
{
	m->facts &= ~(unsigned)EVR_RC_F_OWNED;
	m->facts |= EVR_RC_F_LINGER;
	step(m, EVR_RC_E_SHUT);
	step(m, EVR_RC_E_CLOSE);
}

/* An established connection the engine holds. */
static void open_conn(struct mock *m)
{
	mock_init(m, EVR_RC_OPEN, EVR_RC_F_OWNED);
}

#define ck_log(m, s) ck_assert_str_eq((m)->log, (s))

/* ------------------------------------------------------------------ */
/* names and predicates                                                */

START_TEST(test_names)
{
	int i, j;

	for (i = 0; i < EVR_RC__COUNT; i++) {
		ck_assert_str_ne(evr__rc_state_name(i), "?");
		for (j = 0; j < i; j++)
			ck_assert_str_ne(evr__rc_state_name(i),
					 evr__rc_state_name(j));
	}
	for (i = 0; i < EVR_RC_DISC__COUNT; i++)
		ck_assert_str_ne(evr__rc_disc_name(i), "?");
	ck_assert_str_eq(evr__rc_state_name(EVR_RC__COUNT), "?");
	ck_assert_str_eq(evr__rc_disc_name(EVR_RC_DISC__COUNT), "?");
	ck_assert_str_eq(evr__rc_state_name(EVR_RC_PEER_CLOSING),
			 "PEER_CLOSING");
	ck_assert_str_eq(evr__rc_disc_name(EVR_RC_DISC_NOT_OWED), "NOT_OWED");
}
END_TEST

/* Each predicate is its list of states, named: none depends on where a
 * state sits in the X-macro. */
START_TEST(test_predicates)
{
	static const char *const setting_up[] = { "NEW", "RESOLVE_ADDR",
		"RESOLVE_ROUTE", "CONNECTING", "ACCEPTING" };
	static const char *const established[] = { "OPEN", "CLOSING",
		"PEER_CLOSING", "DISCONNECTING" };
	static const char *const closing[] = { "CLOSING", "PEER_CLOSING" };
	static const char *const disconnected[] = { "DISCONNECTING",
		"CLOSED" };
	int i;
	size_t k;

	for (i = 0; i < EVR_RC__COUNT; i++) {
		const char *nm = evr__rc_state_name(i);
		int in;

		for (in = 0, k = 0; k < 5; k++)
			in |= !strcmp(nm, setting_up[k]);
		ck_assert_int_eq(evr__rc_setting_up(i), in);
		for (in = 0, k = 0; k < 4; k++)
			in |= !strcmp(nm, established[k]);
		ck_assert_int_eq(evr__rc_established(i), in);
		for (in = 0, k = 0; k < 2; k++)
			in |= !strcmp(nm, closing[k]);
		ck_assert_int_eq(evr__rc_closing(i), in);
		for (in = 0, k = 0; k < 2; k++)
			in |= !strcmp(nm, disconnected[k]);
		ck_assert_int_eq(evr__rc_disconnected(i), in);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* our close first                                                     */

/* A client at the end of its tests: shutdown, our DISCONNECT goes out;
 * the engine closes; the DISCONNECT completes; rdma_disconnect; the CM
 * says DISCONNECTED. */
START_TEST(test_local_close_first)
{
	struct mock m;

	open_conn(&m);
	step(&m, EVR_RC_E_SHUT);
	ck_assert_uint_eq(m.processes, 1);
	mock_close(&m);
	ck_assert_uint_eq(m.timer, EVR_RC_A_TIMER_CLOSE);
	step(&m, EVR_RC_E_POLLED); /* nothing yet: keep waiting */
	step(&m, EVR_RC_E_DISC_DONE);
	step(&m, EVR_RC_E_POLLED);
	ck_assert_uint_eq(m.timer, EVR_RC_A_TIMER_DISC);
	step(&m, EVR_RC_E_CM_DISC);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "shut:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "polled:CLOSING/POSTED[] "
	       "disc_done:CLOSING/DONE[] "
	       "polled:DISCONNECTING/DONE[disconnect,timer_disc] "
	       "cm_disc:CLOSED/DONE[teardown]");
	ck_assert_uint_eq(m.disconnects, 1);
	ck_assert_uint_eq(m.dreqs, 0);
	ck_assert_uint_eq(m.wakes, 0);
	ck_assert(m.freed);
}
END_TEST

/* The CM never says DISCONNECTED: the timer ends the wait. */
START_TEST(test_local_close_cm_silent)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	step(&m, EVR_RC_E_DISC_DONE);
	step(&m, EVR_RC_E_POLLED);
	step(&m, EVR_RC_E_TIMER);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "disc_done:CLOSING/DONE[] "
	       "polled:DISCONNECTING/DONE[disconnect,timer_disc] "
	       "timer:CLOSED/DONE[teardown]");
	ck_assert(m.freed);
}
END_TEST

/* Our DISCONNECT never completes: CLOSE_WAIT times out. */
START_TEST(test_local_close_times_out)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	step(&m, EVR_RC_E_POLLED);
	step(&m, EVR_RC_E_TIMER);
	step(&m, EVR_RC_E_CM_DISC);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "polled:CLOSING/POSTED[] "
	       "timer:DISCONNECTING/POSTED[timeout,disconnect,timer_disc] "
	       "cm_disc:CLOSED/POSTED[teardown]");
}
END_TEST

/* shutdown(SHUT_WR) then close, the DISCONNECT completed before the
 * close: the close still waits for one pass over the CQ. */
START_TEST(test_shutdown_then_close)
{
	struct mock m;

	open_conn(&m);
	step(&m, EVR_RC_E_SHUT);
	step(&m, EVR_RC_E_DISC_DONE);
	step(&m, EVR_RC_E_SHUT); /* again: nothing */
	mock_close(&m);
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "disc_done:OPEN/DONE[] "
	       "shut:OPEN/DONE[] "
	       "shut:OPEN/DONE[] "
	       "close:CLOSING/DONE[timer_close,watch] "
	       "polled:DISCONNECTING/DONE[disconnect,timer_disc]");
	ck_assert_uint_eq(m.processes, 1);
}
END_TEST

/* No control slot at the shutdown: the DISCONNECT is due; the close
 * waits one pass of the CQ for a slot. */
START_TEST(test_close_waits_for_a_slot)
{
	struct mock m;

	open_conn(&m);
	m.slot = 0;
	mock_close(&m);
	m.slot = 1; /* the pass's completions free one */
	mock_process(&m);
	step(&m, EVR_RC_E_POLLED);
	step(&m, EVR_RC_E_DISC_DONE);
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "close:CLOSING/WANTED[timer_close,watch] "
	       "disc_posted:CLOSING/POSTED[] "
	       "polled:CLOSING/POSTED[] "
	       "disc_done:CLOSING/DONE[] "
	       "polled:DISCONNECTING/DONE[disconnect,timer_disc]");
}
END_TEST

/* Bytes still in the cork at the close (no credits for them yet): the
 * DISCONNECT waits behind them, pass after pass, and goes once they
 * have left; the peer gets every byte before our end. */
START_TEST(test_close_waits_for_the_cork)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_UNSENT;
	mock_close(&m);
	mock_process(&m);
	step(&m, EVR_RC_E_POLLED);
	mock_process(&m);
	step(&m, EVR_RC_E_POLLED);
	m.facts &= ~(unsigned)EVR_RC_F_UNSENT; /* credits came: it left */
	mock_process(&m);
	step(&m, EVR_RC_E_POLLED);
	step(&m, EVR_RC_E_DISC_DONE);
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "close:CLOSING/WANTED[timer_close,watch] "
	       "polled:CLOSING/WANTED[] "
	       "polled:CLOSING/WANTED[] "
	       "disc_posted:CLOSING/POSTED[] "
	       "polled:CLOSING/POSTED[] "
	       "disc_done:CLOSING/DONE[] "
	       "polled:DISCONNECTING/DONE[disconnect,timer_disc]");
	ck_assert_uint_eq(m.disconnects, 1);
}
END_TEST

/* ... bounded by the close timer, and not for a connection that ended
 * (the peer will never take them). */
START_TEST(test_close_cork_bounded)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_UNSENT;
	mock_close(&m);
	step(&m, EVR_RC_E_POLLED);
	step(&m, EVR_RC_E_TIMER);
	ck_assert_uint_eq(m.disconnects, 1);
	ck_assert_uint_eq(m.state, EVR_RC_DISCONNECTING);
	open_conn(&m);
	m.facts |= EVR_RC_F_UNSENT;
	mock_close(&m);
	m.facts |= EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC;
	step(&m, EVR_RC_E_POLLED);
	ck_assert_uint_eq(m.disconnects, 1);
	ck_assert(m.freed);
}
END_TEST

/* ... and when the pass frees none, it waits no more. */
START_TEST(test_close_no_slot)
{
	struct mock m;

	open_conn(&m);
	m.slot = 0;
	mock_close(&m);
	mock_process(&m);
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "close:CLOSING/WANTED[timer_close,watch] "
	       "polled:DISCONNECTING/WANTED[disconnect,timer_disc]");
}
END_TEST

/* ibv_post_send fails: nothing will complete, rdma_disconnect at once. */
START_TEST(test_post_fails)
{
	struct mock m;

	open_conn(&m);
	m.post_fails = 1;
	step(&m, EVR_RC_E_SHUT);
	m.facts |= EVR_RC_F_ERR; /* post_ctrl's set_err */
	mock_close(&m);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "disc_done:OPEN/DONE[] "
	       "shut:OPEN/DONE[] "
	       "close:DISCONNECTING/DONE[disconnect,timer_disc]");
}
END_TEST

/* rdma_disconnect flushes our DISCONNECT: its completion only moves it. */
START_TEST(test_disconnect_flushes_ours)
{
	struct mock m;

	open_conn(&m);
	m.flush_disc = 1;
	mock_close(&m);
	step(&m, EVR_RC_E_TIMER);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "timer:DISCONNECTING/POSTED[timeout,disconnect,timer_disc] "
	       "disc_done:DISCONNECTING/DONE[]");
	ck_assert_uint_eq(m.state, EVR_RC_DISCONNECTING);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the peer's DISCONNECT first                                         */

/* A server: the client's DISCONNECT arrives, the session reads the end
 * and closes; we owe none and keep the QP up for the peer's DREQ. */
START_TEST(test_peer_disconnect_first)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_PEER_DISC;
	mock_close(&m);
	ck_assert_uint_eq(m.timer, EVR_RC_A_TIMER_GRACE);
	step(&m, EVR_RC_E_POLLED);
	step(&m, EVR_RC_E_POLLED);
	m.facts |= EVR_RC_F_CM_DISC; /* the peer's close is done */
	step(&m, EVR_RC_E_CM_DISC);
	ck_log(&m, "shut:OPEN/NOT_OWED[] "
	       "close:PEER_CLOSING/NOT_OWED[timer_grace,watch] "
	       "polled:PEER_CLOSING/NOT_OWED[] "
	       "polled:PEER_CLOSING/NOT_OWED[] "
	       "cm_disc:CLOSED/NOT_OWED[disconnect,teardown]");
	ck_assert_uint_eq(m.processes, 0);
	ck_assert_uint_eq(m.disconnects, 1);
}
END_TEST

/* ... and the peer's DREQ never comes: the grace timer. */
START_TEST(test_peer_disconnect_first_grace)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_PEER_DISC;
	mock_close(&m);
	step(&m, EVR_RC_E_TIMER);
	step(&m, EVR_RC_E_TIMER);
	ck_log(&m, "shut:OPEN/NOT_OWED[] "
	       "close:PEER_CLOSING/NOT_OWED[timer_grace,watch] "
	       "timer:DISCONNECTING/NOT_OWED[timeout,disconnect,timer_disc] "
	       "timer:CLOSED/NOT_OWED[teardown]");
}
END_TEST

/* The peer's DISCONNECT while ours waits for a slot: the close waits for
 * the peer; a slot that frees posts ours, and then it waits no more. */
START_TEST(test_peer_disconnect_while_ours_due)
{
	struct mock m;

	open_conn(&m);
	m.slot = 0;
	step(&m, EVR_RC_E_SHUT);
	m.facts |= EVR_RC_F_PEER_DISC;
	mock_close(&m);
	step(&m, EVR_RC_E_POLLED);
	m.slot = 1;
	mock_process(&m);
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "shut:OPEN/WANTED[] "
	       "close:PEER_CLOSING/WANTED[timer_grace,watch] "
	       "polled:PEER_CLOSING/WANTED[] "
	       "disc_posted:PEER_CLOSING/POSTED[] "
	       "polled:DISCONNECTING/POSTED[disconnect,timer_disc]");
}
END_TEST

/* The peer's DISCONNECT after ours went out: the close ends at once. */
START_TEST(test_peer_disconnect_after_ours)
{
	struct mock m;

	open_conn(&m);
	step(&m, EVR_RC_E_SHUT);
	m.facts |= EVR_RC_F_PEER_DISC | EVR_RC_F_PEER_SHUT;
	mock_close(&m);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "shut:OPEN/POSTED[] "
	       "close:DISCONNECTING/POSTED[disconnect,timer_disc]");
}
END_TEST

/* The peer's DISCONNECT while we wait for our own to complete. */
START_TEST(test_peer_disconnect_while_closing)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	m.facts |= EVR_RC_F_PEER_DISC;
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "polled:DISCONNECTING/POSTED[disconnect,timer_disc]");
}
END_TEST

/* ------------------------------------------------------------------ */
/* CM DISCONNECTED first                                               */

START_TEST(test_cm_disconnected_first)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_CM_DISC;
	step(&m, EVR_RC_E_CM_DISC);
	ck_assert_uint_eq(m.wakes, 1);
	mock_close(&m);
	ck_log(&m, "cm_disc:OPEN/NONE[wake] "
	       "shut:OPEN/NOT_OWED[] "
	       "close:CLOSED/NOT_OWED[disconnect,teardown]");
	ck_assert_uint_eq(m.dreqs, 0);
	ck_assert_uint_eq(m.disconnects, 1);
}
END_TEST

/* CM DISCONNECTED while our DISCONNECT is in flight. */
START_TEST(test_cm_disconnected_while_closing)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	m.facts |= EVR_RC_F_CM_DISC;
	step(&m, EVR_RC_E_CM_DISC);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "cm_disc:CLOSED/POSTED[disconnect,teardown]");
}
END_TEST

/* ------------------------------------------------------------------ */
/* errors                                                              */

START_TEST(test_error_before_close)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_ERR;
	mock_close(&m);
	ck_log(&m, "shut:OPEN/NOT_OWED[] "
	       "close:DISCONNECTING/NOT_OWED[disconnect,timer_disc]");
}
END_TEST

START_TEST(test_error_while_closing)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	m.facts |= EVR_RC_F_ERR;
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/WANTED[process] "
	       "disc_posted:OPEN/POSTED[] "
	       "close:CLOSING/POSTED[timer_close,watch] "
	       "polled:DISCONNECTING/POSTED[disconnect,timer_disc]");
}
END_TEST

/* The port went down under an open connection with work requests in
 * flight: they come back flushed through the error state (the QP is
 * never destroyed or reset with them outstanding), the owner is told,
 * and its close then disconnects as after any error. */
START_TEST(test_port_down_flushes)
{
	struct mock m;

	open_conn(&m);
	m.posted = 12;
	step(&m, EVR_RC_E_PORT_DOWN);
	ck_log(&m, "port_down:OPEN/NONE[wake,flush]");
	ck_assert_uint_eq(m.flushed, 12);
	ck_assert_uint_eq(m.wakes, 1);
	m.facts |= EVR_RC_F_ERR; /* the transport's sticky error */
	mock_close(&m);
	step(&m, EVR_RC_E_CM_DISC);
	ck_assert(m.freed);
	ck_assert_uint_eq(m.lost, 0);
}
END_TEST

/* ... and while connecting: the owner hears its connect failed; while
 * closing: the close goes straight on to disconnect. */
START_TEST(test_port_down_elsewhere)
{
	struct mock m;

	mock_init(&m, EVR_RC_CONNECTING, EVR_RC_F_OWNED);
	step(&m, EVR_RC_E_PORT_DOWN);
	ck_log(&m, "port_down:FAILED/NONE[conn_failed,notify,flush]");
	open_conn(&m);
	mock_close(&m);
	m.posted = 3;
	m.log[0] = '\0';
	step(&m, EVR_RC_E_PORT_DOWN);
	ck_log(&m, "port_down:DISCONNECTING/POSTED[disconnect,timer_disc,"
	       "flush]");
	ck_assert_uint_eq(m.flushed, 3);
}
END_TEST

/* The device is going: an owner is told, and its close tears down at
 * once, with no DREQ and no wait for the CM (its id is gone with the
 * device, and the device waits for us to let go). */
START_TEST(test_dev_gone_owned)
{
	struct mock m;

	open_conn(&m);
	step(&m, EVR_RC_E_DEV_GONE);
	ck_log(&m, "dev_gone:OPEN/NONE[wake]");
	m.facts |= EVR_RC_F_DEV_GONE | EVR_RC_F_ERR;
	m.log[0] = '\0';
	mock_close(&m);
	ck_log(&m, "shut:OPEN/NOT_OWED[] close:CLOSED/NOT_OWED[teardown]");
	ck_assert_uint_eq(m.dreqs, 0);
	ck_assert_uint_eq(m.disconnects, 0);
	ck_assert_uint_eq(m.timer, 0);
}
END_TEST

/* ... and what nobody owns goes at once: a lingering close, a server's
 * connection not yet accepted; a connect in progress fails to its
 * owner. */
START_TEST(test_dev_gone_unowned)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	m.facts |= EVR_RC_F_DEV_GONE;
	m.log[0] = '\0';
	step(&m, EVR_RC_E_DEV_GONE);
	ck_log(&m, "dev_gone:CLOSED/POSTED[teardown]");
	ck_assert_uint_eq(m.dreqs, 0);

	mock_init(&m, EVR_RC_ACCEPTING, EVR_RC_F_DEV_GONE);
	step(&m, EVR_RC_E_DEV_GONE);
	ck_log(&m, "dev_gone:CLOSED/NONE[teardown]");

	mock_init(&m, EVR_RC_RESOLVE_ROUTE, EVR_RC_F_OWNED | EVR_RC_F_DEV_GONE);
	step(&m, EVR_RC_E_DEV_GONE);
	ck_log(&m, "dev_gone:FAILED/NONE[conn_failed,notify]");
	ck_assert_uint_eq(m.notifies, 1);
}
END_TEST

/* An error while the peer closes first: no more waiting for its DREQ. */
START_TEST(test_error_while_peer_closing)
{
	struct mock m;

	open_conn(&m);
	m.facts |= EVR_RC_F_PEER_DISC;
	mock_close(&m);
	m.facts |= EVR_RC_F_ERR;
	step(&m, EVR_RC_E_POLLED);
	ck_log(&m, "shut:OPEN/NOT_OWED[] "
	       "close:PEER_CLOSING/NOT_OWED[timer_grace,watch] "
	       "polled:DISCONNECTING/NOT_OWED[disconnect,timer_disc]");
}
END_TEST

/* ------------------------------------------------------------------ */
/* closes before the connection is open                                */

START_TEST(test_close_while_connecting)
{
	static const enum evr_rc_state st[] = { EVR_RC_NEW,
		EVR_RC_RESOLVE_ADDR, EVR_RC_RESOLVE_ROUTE,
		EVR_RC_CONNECTING };
	size_t i;

	for (i = 0; i < sizeof(st) / sizeof(st[0]); i++) {
		struct mock m;
		char want[128];

		mock_init(&m, st[i], EVR_RC_F_OWNED);
		mock_close(&m);
		snprintf(want, sizeof(want), "shut:%s/NOT_OWED[] "
			 "close:CLOSED/NOT_OWED[teardown]",
			 evr__rc_state_name(st[i]));
		ck_log(&m, want);
		ck_assert_uint_eq(m.dreqs, 0);
		ck_assert_uint_eq(m.disconnects, 0);
	}
}
END_TEST

/* A connect fails: the owner is told, and closes. */
START_TEST(test_connect_fails_then_close)
{
	struct mock m;

	mock_init(&m, EVR_RC_CONNECTING, EVR_RC_F_OWNED);
	step(&m, EVR_RC_E_CONN_FAIL);
	ck_assert_uint_eq(m.notifies, 1);
	mock_close(&m);
	ck_log(&m, "conn_fail:FAILED/NONE[conn_failed,notify] "
	       "shut:FAILED/NOT_OWED[] "
	       "close:CLOSED/NOT_OWED[teardown]");
}
END_TEST

/* CM DISCONNECTED while connecting is a failed connect. */
START_TEST(test_cm_disconnected_while_connecting)
{
	struct mock m;

	mock_init(&m, EVR_RC_CONNECTING, EVR_RC_F_OWNED);
	m.facts |= EVR_RC_F_CM_DISC;
	step(&m, EVR_RC_E_CM_DISC);
	ck_log(&m, "cm_disc:FAILED/NONE[conn_failed,notify]");
}
END_TEST

/* A server's connection the engine never saw goes at once. */
START_TEST(test_accepting_ends)
{
	struct mock a, b, c;

	mock_init(&a, EVR_RC_ACCEPTING, 0);
	step(&a, EVR_RC_E_CM_DISC);
	mock_init(&b, EVR_RC_ACCEPTING, 0);
	step(&b, EVR_RC_E_CONN_FAIL); /* DEVICE_REMOVAL */
	mock_init(&c, EVR_RC_ACCEPTING, 0);
	step(&c, EVR_RC_E_ABORT);     /* REJECTED, CONNECT_ERROR */
	ck_log(&a, "cm_disc:CLOSED/NONE[teardown]");
	ck_log(&b, "conn_fail:CLOSED/NONE[conn_failed,teardown]");
	ck_log(&c, "abort:CLOSED/NONE[teardown]");
	ck_assert_uint_eq(a.notifies + b.notifies + c.notifies, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* lingering: the engine let go, the transport finishes the close      */

/* Nothing reaches the owner once it let go; the close goes on alone. */
START_TEST(test_lingering_no_owner)
{
	struct mock m;

	open_conn(&m);
	mock_close(&m);
	ck_assert(m.facts & EVR_RC_F_LINGER);
	m.facts |= EVR_RC_F_CM_DISC;
	step(&m, EVR_RC_E_CM_DISC);
	ck_assert_uint_eq(m.wakes + m.notifies, 0);
	ck_assert(m.freed);
}
END_TEST

/* The engine is freed while connections linger: each goes at once, with
 * a DREQ when it was established and never disconnected. */
START_TEST(test_engine_freed_while_lingering)
{
	struct mock a, b, c, d;

	open_conn(&a);
	mock_close(&a);                 /* CLOSING */
	step(&a, EVR_RC_E_ABORT);
	open_conn(&b);
	b.facts |= EVR_RC_F_PEER_DISC;
	mock_close(&b);                 /* PEER_CLOSING */
	step(&b, EVR_RC_E_ABORT);
	open_conn(&c);
	c.facts |= EVR_RC_F_ERR;
	mock_close(&c);                 /* DISCONNECTING */
	step(&c, EVR_RC_E_ABORT);
	open_conn(&d);                  /* still the engine's */
	step(&d, EVR_RC_E_ABORT);
	ck_assert_str_eq(strrchr(a.log, ' ') + 1,
			 "abort:CLOSED/POSTED[dreq,teardown]");
	ck_assert_str_eq(strrchr(b.log, ' ') + 1,
			 "abort:CLOSED/NOT_OWED[dreq,teardown]");
	ck_assert_str_eq(strrchr(c.log, ' ') + 1,
			 "abort:CLOSED/NOT_OWED[teardown]");
	ck_log(&d, "abort:CLOSED/NONE[dreq,teardown]");
	ck_assert_uint_eq(a.dreqs + b.dreqs + c.dreqs + d.dreqs, 3);
}
END_TEST

/* ------------------------------------------------------------------ */
/* invariants over every state, DISCONNECT state, event and facts      */

START_TEST(test_invariants)
{
	unsigned st, d, ev, f, seen_close = 0;

	for (st = 0; st < EVR_RC__COUNT; st++)
	for (d = 0; d < EVR_RC_DISC__COUNT; d++)
	for (ev = 0; ev < EVR_RC_E__COUNT; ev++)
	for (f = 0; f < (EVR_RC_F_DEV_GONE << 1); f++) {
		struct evr_rc_next n = evr__rc_close_next(st, d, ev, f);

		/* nothing happens to what is gone */
		if (st == EVR_RC_CLOSED) {
			ck_assert(n.state == st && n.disc == d && !n.acts);
			continue;
		}
		/* teardown is the end, and the end is a teardown */
		ck_assert_int_eq(!!(n.acts & EVR_RC_A_TEARDOWN),
				 n.state == EVR_RC_CLOSED);
		/* DREQ only at a teardown, when established and never
		 * disconnected */
		if (n.acts & EVR_RC_A_DREQ)
			ck_assert(n.acts & EVR_RC_A_TEARDOWN &&
				  evr__rc_established(st) &&
				  !evr__rc_disconnected(st));
		if ((n.acts & EVR_RC_A_TEARDOWN) &&
		    evr__rc_established(st) && !evr__rc_disconnected(st) &&
		    !(n.acts & EVR_RC_A_DISCONNECT) &&
		    !(f & EVR_RC_F_DEV_GONE))
			ck_assert(n.acts & EVR_RC_A_DREQ);
		/* a device going: nothing is said to the peer */
		if (f & EVR_RC_F_DEV_GONE)
			ck_assert(!(n.acts & EVR_RC_A_DREQ));
		/* ... and what the owner does not hold goes at once */
		if (ev == EVR_RC_E_DEV_GONE && !(f & EVR_RC_F_OWNED))
			ck_assert_uint_eq(n.state, EVR_RC_CLOSED);
		/* rdma_disconnect once: only on the way out of OPEN or a
		 * closing state */
		if (n.acts & EVR_RC_A_DISCONNECT) {
			ck_assert(evr__rc_closing(st) ||
				  (st == EVR_RC_OPEN && ev == EVR_RC_E_CLOSE));
			ck_assert(n.state == EVR_RC_DISCONNECTING ||
				  n.state == EVR_RC_CLOSED);
		}
		/* our DISCONNECT's progress moves nothing else */
		if (ev == EVR_RC_E_DISC_POSTED || ev == EVR_RC_E_DISC_DONE ||
		    ev == EVR_RC_E_SHUT)
			ck_assert(n.state == st &&
				  !(n.acts & ~(unsigned)EVR_RC_A_PROCESS));
		/* only the owner's close starts a close */
		if (evr__rc_closing(n.state) && !evr__rc_closing(st)) {
			ck_assert_uint_eq(ev, EVR_RC_E_CLOSE);
			ck_assert_uint_eq(st, EVR_RC_OPEN);
			seen_close = 1;
		}
		/* a failed connect is told to an owner only, once */
		if (n.acts & EVR_RC_A_NOTIFY)
			ck_assert(f & EVR_RC_F_OWNED &&
				  n.state == EVR_RC_FAILED &&
				  evr__rc_setting_up(st));
		/* no way back: the machine only moves towards CLOSED */
		if (n.state != st)
			ck_assert(n.state == EVR_RC_FAILED ||
				  evr__rc_closing(n.state) ||
				  evr__rc_disconnected(n.state));
		/* a DISCONNECT, once out of NONE, never returns to it */
		if (d != EVR_RC_DISC_NONE)
			ck_assert_uint_ne(n.disc, EVR_RC_DISC_NONE);
		/* one timer at a time */
		ck_assert_uint_le(__builtin_popcount(n.acts &
			(EVR_RC_A_TIMER_CLOSE | EVR_RC_A_TIMER_GRACE |
			 EVR_RC_A_TIMER_DISC)), 1);
		/* a wait needs its timer: no state that only an event
		 * nobody sends would end */
		if (n.state != st && (evr__rc_closing(n.state) ||
				      n.state == EVR_RC_DISCONNECTING))
			ck_assert(n.acts & (EVR_RC_A_TIMER_CLOSE |
					    EVR_RC_A_TIMER_GRACE |
					    EVR_RC_A_TIMER_DISC));
	}
	ck_assert(seen_close);
}
END_TEST

static Suite *rclose_suite(void)
{
	Suite *su = suite_create("rclose");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_predicates);
	suite_add_tcase(su, tc);

	tc = tcase_create("local");
	tcase_add_test(tc, test_local_close_first);
	tcase_add_test(tc, test_local_close_cm_silent);
	tcase_add_test(tc, test_local_close_times_out);
	tcase_add_test(tc, test_shutdown_then_close);
	tcase_add_test(tc, test_close_waits_for_a_slot);
	tcase_add_test(tc, test_close_no_slot);
	tcase_add_test(tc, test_close_waits_for_the_cork);
	tcase_add_test(tc, test_close_cork_bounded);
	tcase_add_test(tc, test_post_fails);
	tcase_add_test(tc, test_disconnect_flushes_ours);
	suite_add_tcase(su, tc);

	tc = tcase_create("peer");
	tcase_add_test(tc, test_peer_disconnect_first);
	tcase_add_test(tc, test_peer_disconnect_first_grace);
	tcase_add_test(tc, test_peer_disconnect_while_ours_due);
	tcase_add_test(tc, test_peer_disconnect_after_ours);
	tcase_add_test(tc, test_peer_disconnect_while_closing);
	tcase_add_test(tc, test_cm_disconnected_first);
	tcase_add_test(tc, test_cm_disconnected_while_closing);
	suite_add_tcase(su, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_error_before_close);
	tcase_add_test(tc, test_error_while_closing);
	tcase_add_test(tc, test_error_while_peer_closing);
	suite_add_tcase(su, tc);

	tc = tcase_create("device");
	tcase_add_test(tc, test_port_down_flushes);
	tcase_add_test(tc, test_port_down_elsewhere);
	tcase_add_test(tc, test_dev_gone_owned);
	tcase_add_test(tc, test_dev_gone_unowned);
	suite_add_tcase(su, tc);

	tc = tcase_create("setup");
	tcase_add_test(tc, test_close_while_connecting);
	tcase_add_test(tc, test_connect_fails_then_close);
	tcase_add_test(tc, test_cm_disconnected_while_connecting);
	tcase_add_test(tc, test_accepting_ends);
	suite_add_tcase(su, tc);

	tc = tcase_create("linger");
	tcase_add_test(tc, test_lingering_no_owner);
	tcase_add_test(tc, test_engine_freed_while_lingering);
	tcase_add_test(tc, test_invariants);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(rclose_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
