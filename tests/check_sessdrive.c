/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session's driver (src/stream/session/sessdrive.c): two machines
 * over the mock transport (fakesess.c) on a real loop, -T n, -T a and
 * -T b, the ready op, the watchdog, cancel, and -T a's long polls: the
 * loop's turns while one waits, the CPU offered and found taken
 * (fakecpu.h), alone and shared.  The scheduler alone is check_sched's.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <ev.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecpu.h"
#include "fakesess.h"

/* ------------------------------------------------------------------ */
/* the driver: the same machines on a real loop                        */

static unsigned finished_n[2];

static void drv_finished(struct evr_sess *x)
{
	ck_assert(term(x));
	/* its watchers are stopped before it is handed back */
	ck_assert(!ev_is_active(&x->io_w));
	ck_assert(!ev_is_active(&x->idle_w));
	ck_assert(!ev_is_active(&x->wd_w));
	finished_n[x->client ? 0 : 1]++;
}

static const struct evr_sess_owner drv_owner = {
	.result = rec_result,
	.finished = drv_finished,
};

static void drv_start(struct end *e, int client,
		      const struct evr_conn_plan *cp,
		      const struct evr_stream_opts *o)
{
	end_start(e, client, cp, o);
	e->s.owner = &drv_owner;
}

START_TEST(test_driver_pair_nonblock)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 0, &ps, &os);
	cl.m.chunk = 100;
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert(!term(&cl.s));
	ck_assert(!term(&sv.s));
	/* returns once both have stopped all their watchers */
	evr_loop_run(loop);
	assert_both_done();
	ck_assert_uint_eq(finished_n[0], 1);
	ck_assert_uint_eq(finished_n[1], 1);
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
}
END_TEST

/* A polling owner asks the transport's ready op before it calls again:
 * a -T n pair wastes (almost) no calls on a transport that has one, and
 * ends with the same results. */
static void ready_pair(int with_ready, unsigned *wasted, unsigned *readies)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	base_opts(&os);
	custom_plan(&pc, 100, 3, 200);
	custom_plan(&ps, 100, 3, 200);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 0, &ps, &os);
	if (with_ready) {
		cl.m.c.ops = sv.m.c.ops = &mock_ready_ops;
		cl.m.ready_says = sv.m.ready_says = -1;
	}
	cl.m.chunk = 50;
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	evr_loop_run(loop);
	assert_both_done();
	ck_assert_uint_eq(cl.rec.n, 1);
	assert_result(&cl.rec, 0, "custom", 100, 3, 200);
	*wasted = cl.m.wasted + sv.m.wasted;
	*readies = cl.m.readies + sv.m.readies;
}

START_TEST(test_driver_ready_saves_calls)
{
	unsigned w0, r0, w1, r1;

	ready_pair(0, &w0, &r0);
	pair_teardown();
	pair_setup();
	ready_pair(1, &w1, &r1);
	/* without it, the spinners call in vain over and over */
	ck_assert_uint_eq(r0, 0);
	ck_assert_uint_gt(w0, 1000);
	/* with it, only the loop's own passes call without asking */
	ck_assert_uint_gt(r1, 1000);
	ck_assert_msg(w1 * 20 < w0, "wasted %u calls with ready, %u without",
		      w1, w0);
}
END_TEST

/* A client whose HELLO nobody answers: the watchdog ends it. */
static void stall_run(const struct evr_conn_ops *ops, int ready_says)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.stall_ms = 40;
	custom_plan(&pc, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	cl.m.c.ops = ops;
	cl.m.ready_says = ready_says;
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_HELLO_RECV);
	evr_loop_run(loop);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_int_eq(cl.s.fail.detail, 40);
	ck_assert_int_eq(cl.s.fail.phase, EVR_PH_NEGOTIATE);
	ck_assert_uint_eq(finished_n[0], 1);
}

/* A transport that never says ready: the session still stalls out on
 * its watchdog (no hang), and it asked rather than called. */
START_TEST(test_driver_ready_never)
{
	stall_run(&mock_ready_ops, 0);
	ck_assert_uint_gt(cl.m.readies, 100);
	ck_assert_msg(cl.m.recvs * 20 < cl.m.readies, "%u recvs, %u readies",
		      cl.m.recvs, cl.m.readies);
}
END_TEST

START_TEST(test_driver_stall_nonblock)
{
	stall_run(&mock_ops, -1);
}
END_TEST

/* -T a with a long poll (set here, poll_ms; a learnt one grows to 5
 * ms): while it waits it gives the loop its turn every slice (2 ms), so
 * that timers and other connections never wait the whole poll, and then
 * goes on polling where it was, neither starting the poll over nor
 * sleeping.  One client, its mock echoing what it sends; the echo comes
 * hold_ms after the start.  The times are long beside a slice, so that a
 * loaded host (CI runs tests side by side) that deschedules the test for
 * a few milliseconds does not change the outcome.  Returns the loop's
 * turns during the hold. */
static unsigned turns;
static uint64_t turns_until;
static char poll_line[256];     /* the session's "poll:" trace line */

static void poll_trace(void *ud, const char *line)
{
	(void)ud;
	if (strstr(line, ": poll: "))
		snprintf(poll_line, sizeof(poll_line), "%s", line);
}

/* 1: at the loop's first turn within the hold, another task takes the
 * CPU (fake_taken): a preemption while the poll gave the loop its turn */
static int turn_takes_cpu;

static void count_turn(struct ev_loop *l, ev_prepare *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
	if (evr_now_ns() < turns_until) {
		turns++;
		if (turn_takes_cpu) {
			turn_takes_cpu = 0;
			fake_taken++;
		}
	}
}

static unsigned long_poll_run_(unsigned poll_ms, unsigned hold_ms,
			       unsigned stall_ms, uint64_t offer_ns,
			       unsigned off_cpu_after)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;
	ev_prepare pw;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.io = EVR_IO_ASYNC;
	oc.poll_us = (int)poll_ms * 1000;
	oc.no_negotiate = 1;
	oc.stall_ms = stall_ms;
	custom_plan(&pc, 100, 1, 3);
	drv_start(&cl, 1, &pc, &oc);
	/* an echo: what it sends comes back */
	mock_init(&cl.m, &q_c2s, &q_c2s, "server:7471");
	turns = 0;
	poll_line[0] = 0;
	evr_loop_set_trace(loop, poll_trace, NULL);
	cl.s.pe.offer_ns = offer_ns;
	cl.m.off_cpu_after = off_cpu_after;
	fake_yields = 0;
	cl.m.hold_until = turns_until = evr_now_ns() + hold_ms * 1000000ull;
	ev_prepare_init(&pw, count_turn);
	ev_prepare_start(evr_loop_ev(loop), &pw);
	ev_unref(evr_loop_ev(loop)); /* the session's watchers run the loop */
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	evr_loop_run(loop);
	ev_ref(evr_loop_ev(loop));
	ev_prepare_stop(evr_loop_ev(loop), &pw);
	ck_assert_uint_eq(finished_n[0], 1);
	return turns;
}

/* These long polls do not offer their CPU (offer_ns 0): a test that CI
 * preempts mid-poll would otherwise sleep, correctly, and fail. */
static unsigned long_poll_run(unsigned poll_ms, unsigned hold_ms,
			      unsigned stall_ms)
{
	return long_poll_run_(poll_ms, hold_ms, stall_ms, 0, 0);
}

START_TEST(test_driver_long_poll_yields)
{
	unsigned t = long_poll_run(100, 30, 5000);

	/* found by polling (fd -1: a session that slept would stall out),
	 * the loop's turn in between */
	ck_assert_int_eq(cl.s.state, EVR_SS_DONE);
	ck_assert_uint_eq(cl.rec.n, 1);
	ck_assert_msg(t >= 1, "no turn for the loop in a 30 ms wait");
	ck_assert_uint_ge(cl.s.pe.n_yields, 1);
	/* (whether a try of the poll found the reply or the call that
	 * resumed it after the loop's turn depends on timing: not asserted) */
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
}
END_TEST

/* ... and the turns do not make the poll longer: a reply later than the
 * poll still finds the session asleep (and, fd -1, nobody wakes it: its
 * watchdog ends it), after about 20 ms of polling, not 300. */
START_TEST(test_driver_long_poll_ends)
{
	long_poll_run(20, 300, 600);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 1);
	ck_assert_uint_ge(cl.s.pe.n_yields, 1);
	ck_assert_msg(cl.m.held_last - cl.m.held_first < 150000000,
		      "polled %.1f ms", (cl.m.held_last - cl.m.held_first) / 1e6);
	ck_assert_uint_ge(cl.m.held_last - cl.m.held_first, 19000000);
	/* --trace says what the polls did, as counted */
	{
		char want[256];

		snprintf(want, sizeof(want), "conn 1: poll: %" PRIu64
			 " found, 1 ran out, 0 lost the CPU, %" PRIu64
			 " slept at once, %" PRIu64
			 " yields, 20000 usec at the end",
			 cl.s.pe.n_found, cl.s.pe.n_unpolled,
			 cl.s.pe.n_yields);
		ck_assert_str_eq(poll_line, want);
	}
}
END_TEST

/* A poll whose CPU another task took (the peer on the same CPU, a busy
 * host) stops polling and sleeps, long before its 20 ms, and backs off:
 * polling on would take the CPU from whoever sends the reply.  (Another
 * task "runs" after the first offer, in the mock's receive: the second
 * offer sees it.  The session sleeps, and with fd -1 nobody wakes it: its
 * watchdog ends it.) */
START_TEST(test_driver_poll_preempted)
{
	long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 1);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 1);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
	ck_assert_uint_eq(fake_yields, 2);
	/* backing off: the next wait sleeps; the poll is at its base */
	ck_assert_uint_eq(cl.s.pe.skip, 1);
	ck_assert_uint_eq(cl.s.pe.budget_ns, 20000000);
	{
		char want[256];

		snprintf(want, sizeof(want), "conn 1: poll: 0 found, 0 ran "
			 "out, 1 lost the CPU, 0 slept at once, %" PRIu64
			 " yields, 20000 usec at the end", cl.s.pe.n_yields);
		ck_assert_str_eq(poll_line, want);
	}
}
END_TEST

/* ... and so does one whose CPU was taken while it gave the loop its
 * turn (every 2 ms of a 20 ms poll): the count it compares with is the
 * one from its first offer, before the turn, not one read afresh after
 * it (which would hide the preemption and poll on to the end). */
START_TEST(test_driver_poll_preempted_across_turn)
{
	unsigned t;

	turn_takes_cpu = 1;
	t = long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 0);
	turn_takes_cpu = 0;
	ck_assert_msg(t >= 1, "no turn for the loop in the poll");
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 1);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
	ck_assert_uint_ge(cl.s.pe.n_yields, 1);
	/* ended soon after the turn, not at the poll's 20 ms */
	ck_assert_msg(cl.m.held_last - cl.m.held_first < 15000000,
		      "polled %.1f ms", (cl.m.held_last - cl.m.held_first) / 1e6);
}
END_TEST

/* Shared, the CPU a poll offers is the loop's (its offers are, once
 * every EVR_POLL_OFFER_NS for all its connections): when one
 * connection's offer finds that another task took it, every connection
 * of the loop backs off, not that one alone, whose peers' polls would go
 * on taking the CPU from whoever sends their replies.  (-c 4 against a
 * server on a host with one busy task did 0.73-1.04 x the iterations of
 * -c 1 while only the one backed off, 1.17-1.39 x since.)  Two clients
 * on one loop, each its mock echoing after 300 ms; the first offer lets
 * another task run.  Both sleep, long before their 20 ms poll, and (fd
 * -1: nobody wakes them) stall out. */
START_TEST(test_driver_shared_poll_preempted)
{
	struct evr_sched_seat third = { 0 };
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;
	uint64_t until;
	struct end *e[2] = { &cl, &sv };
	unsigned i;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.io = EVR_IO_ASYNC;
	oc.poll_us = 20000;
	oc.no_negotiate = 1;
	oc.stall_ms = 600;
	custom_plan(&pc, 100, 1, 3);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 1, &pc, &oc);
	mock_init(&cl.m, &q_c2s, &q_c2s, "server:7471");
	mock_init(&sv.m, &q_s2c, &q_s2c, "server:7472");
	fake_yields = 0;
	fake_yield_taken_at = 1;
	until = evr_now_ns() + 300000000ull;
	cl.m.hold_until = sv.m.hold_until = until;
	/* a third connection in play from the start (it never moves):
	 * the first client's first wait is a shared one already, not a
	 * poll in place before the second is in play */
	ck_assert_int_eq(evr__sched_join(&third, loop), 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	ck_assert_uint_eq(loop->sched->seats, 3);
	evr_loop_run(loop);
	evr__sched_leave(&third, loop);
	ck_assert_ptr_null(loop->sched);
	fake_yield_taken_at = 0;
	ck_assert_uint_eq(finished_n[0], 2);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(e[i]->s.fail.err, -EVR_E_STALL);
		ck_assert_msg(e[i]->s.pe.n_preempted == 1 &&
			      e[i]->s.pe.n_ran_out == 0,
			      "connection %u: %" PRIu64 " polls lost the CPU, %"
			      PRIu64 " ran out", i + 1, e[i]->s.pe.n_preempted,
			      e[i]->s.pe.n_ran_out);
		ck_assert_msg(e[i]->m.held_last - e[i]->m.held_first < 15000000,
			      "connection %u polled %.1f ms", i + 1,
			      (e[i]->m.held_last - e[i]->m.held_first) / 1e6);
	}
}
END_TEST

/* A poll still waiting offers its CPU (sched_yield, every
 * EVR_POLL_OFFER_NS): a task that wants it runs at once, and one that
 * did ends the poll as above.  Here the first offer lets one run. */
START_TEST(test_driver_poll_offers_cpu)
{
	fake_yield_taken_at = 1;
	long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 0);
	fake_yield_taken_at = 0;
	ck_assert_uint_eq(fake_yields, 1);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 1);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	/* not before the wait has gone on for an offer's interval */
	ck_assert_uint_ge(fake_yield_first_ns - cl.m.held_first,
			  EVR_POLL_OFFER_NS - 10000);
}
END_TEST

/* ... and offers that no task takes change nothing: the poll waits its
 * whole length.  (It offers every 100 usec; how many offers a busy host
 * lets it make in 20 ms, each handing the CPU to whoever is runnable, is
 * the host's business.) */
START_TEST(test_driver_poll_offers_untaken)
{
	long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 0);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 0);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 1);
	ck_assert_uint_ge(fake_yields, 1);
	ck_assert_uint_ge(cl.m.held_last - cl.m.held_first, 19000000);
}
END_TEST

START_TEST(test_driver_block_eagain_is_stall)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;

	/* a blocking call that returns EAGAIN timed out (SO_RCVTIMEO) */
	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.io = EVR_IO_BLOCK;
	oc.stall_ms = 1500;
	custom_plan(&pc, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_int_eq(cl.s.fail.detail, 1500);
	ck_assert_uint_eq(finished_n[0], 1);
}
END_TEST

START_TEST(test_driver_cancel)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	custom_plan(&pc, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert(ev_is_active(&cl.s.wd_w));
	ck_assert(ev_is_active(&cl.s.idle_w));
	evr__sess_drive(&cl.s, EVR_SE_CANCEL, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_CANCELLED);
	ck_assert_uint_eq(finished_n[0], 1);
	/* nothing is left on the loop */
	evr_loop_run(loop);
	ck_assert_uint_eq(finished_n[0], 1);
}
END_TEST

/* --all-at-once's gate, driven: the owner hears once that a session is
 * at its gate, however often it is woken there; waiting, it has no fd
 * or idle watcher, and its watchdog lets it be past the stall timeout;
 * opened, it runs its test to the end. */
static unsigned gate_calls;

static void drv_at_gate(struct evr_sess *x)
{
	ck_assert_int_eq(x->state, EVR_SS_GATED);
	ck_assert(x->held);
	gate_calls++;
}

static const struct evr_sess_owner gate_owner = {
	.result = rec_result,
	.finished = drv_finished,
	.at_gate = drv_at_gate,
};

static void stop_loop(struct ev_loop *l, ev_timer *w, int revents)
{
	ev_break(l, EVBREAK_ALL);
}

START_TEST(test_driver_gate)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	ev_timer t;

	finished_n[0] = finished_n[1] = 0;
	gate_calls = 0;
	base_opts(&oc);
	base_opts(&os);
	oc.stall_ms = 40;
	custom_plan(&pc, 100, 3, 4);
	default_lat_plan(&ps);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 0, &ps, &os);
	cl.s.owner = &gate_owner;
	evr__sess_set(&cl.s, EVR_SF_GATE, 1);
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	/* the negotiation goes on the loop, then 5 of the client's stall
	 * timeouts with it at its gate (the server waits for the first
	 * sync, on its own, longer timeout) */
	ev_timer_init(&t, stop_loop, 0.2, 0.);
	ev_timer_start(loop->ev, &t);
	evr_loop_run(loop);
	ck_assert_int_eq(cl.s.state, EVR_SS_GATED);
	ck_assert_uint_eq(gate_calls, 1);
	ck_assert(!ev_is_active(&cl.s.io_w));
	ck_assert(!ev_is_active(&cl.s.idle_w));
	ck_assert(ev_is_active(&cl.s.wd_w));
	evr__sess_drive(&cl.s, EVR_SE_READY, 0);
	evr__sess_drive(&cl.s, EVR_SE_READY, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_GATED);
	ck_assert_uint_eq(gate_calls, 1);
	ck_assert_uint_eq(cl.rec.n, 0);
	evr__sess_drive(&cl.s, EVR_SE_OPEN, 0);
	ck_assert(!cl.s.held);
	evr_loop_run(loop);
	assert_both_done();
	ck_assert_uint_eq(gate_calls, 1);
	ck_assert_uint_eq(finished_n[0], 1);
	assert_result(&cl.rec, 0, "custom", 100, 3, 4);
}
END_TEST

static Suite *sessdrive_suite(void)
{
	Suite *su = suite_create("sessdrive");
	TCase *tc;

	tc = tcase_create("driver");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_driver_pair_nonblock);
	tcase_add_test(tc, test_driver_stall_nonblock);
	tcase_add_test(tc, test_driver_ready_saves_calls);
	tcase_add_test(tc, test_driver_ready_never);
	tcase_add_test(tc, test_driver_block_eagain_is_stall);
	tcase_add_test(tc, test_driver_cancel);
	tcase_add_test(tc, test_driver_gate);
	tcase_add_test(tc, test_driver_long_poll_yields);
	tcase_add_test(tc, test_driver_long_poll_ends);
	tcase_add_test(tc, test_driver_poll_preempted);
	tcase_add_test(tc, test_driver_poll_preempted_across_turn);
	tcase_add_test(tc, test_driver_poll_offers_cpu);
	tcase_add_test(tc, test_driver_shared_poll_preempted);
	tcase_add_test(tc, test_driver_poll_offers_untaken);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(sessdrive_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
