/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * -T a's poll estimator (src/stream/session/poll.c), pure: the times
 * are given, nothing runs.  How the driver uses it on a loop is
 * check_sessdrive's (test_driver_*poll*).
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "stream/session/poll.h"

/* -T a polls while the session's waits for its peer are short on
 * average (an active exchange), sleeps at once while they are long (an
 * idle peer); one long pause makes it cold for a wait or two, not for
 * long. */
START_TEST(test_poll_budget)
{
	struct evr_pollest p;
	uint64_t now = 1000000, bytes = 0, e0;
	int i;

	evr__poll_init(&p, EVR_POLL_NS);
	/* a new session polls */
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* a wait begins; no byte moved: the same wait goes on */
	evr__poll_mark(&p, bytes, now);
	ck_assert_uint_eq(p.t0, now);
	evr__poll_mark(&p, bytes, now + 5000);
	ck_assert_uint_eq(p.t0, now);
	ck_assert_uint_eq(p.ewma_ns, 0);
	/* ping-pong: each wait 4 us; the average comes to it */
	for (i = 0; i < 40; i++) {
		now += 4000;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
	}
	ck_assert_uint_ge(p.ewma_ns, 3990);
	ck_assert_uint_le(p.ewma_ns, 4000);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* one pause of 2 s counts as 4 x the cold mark, and rises by a
	 * quarter: cold, sleep at once */
	e0 = p.ewma_ns;
	now += 2000000000ull;
	bytes += 64;
	evr__poll_mark(&p, bytes, now);
	ck_assert_uint_eq(p.ewma_ns, e0 + (4 * EVR_POLL_COLD_NS - e0) / 4);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
	/* the exchange goes on, each wait now with a sleep and a wake-up
	 * (100 us): active again at the next wait */
	now += 100000;
	bytes += 64;
	evr__poll_mark(&p, bytes, now);
	ck_assert_uint_le(p.ewma_ns, EVR_POLL_COLD_NS);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* an idle peer (a wait of seconds each time): cold, and stays so */
	for (i = 0; i < 10; i++) {
		now += 3000000000ull;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
		if (i >= 1)
			ck_assert_uint_eq(evr__poll_budget(&p), 0);
	}
	ck_assert_uint_gt(p.ewma_ns, 3 * EVR_POLL_COLD_NS);
}
END_TEST

/* -T a backs off a poll that keeps finding nothing once it cannot grow
 * (it is at its cap): after two misses in a row it sleeps through 1, 2,
 * 4 ... 64 waits; a find resets it. */
START_TEST(test_poll_backoff)
{
	struct evr_pollest p;
	unsigned expect[] = { 0, 1, 2, 4, 8, 16, 32, 64, 64, 64 };
	unsigned i;

	evr__poll_init(&p, EVR_POLL_NS);
	/* a poll that may still grow does not back off */
	for (i = 0; i < 10; i++)
		evr__poll_result(&p, EVR_POLL_RAN_OUT);
	ck_assert_uint_eq(p.misses, 0);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* grown to its cap */
	p.budget_ns = EVR_POLL_MAX_NS;
	for (i = 0; i < 10; i++) {
		evr__poll_result(&p, EVR_POLL_RAN_OUT);
		ck_assert_uint_eq(p.skip, expect[i]);
		ck_assert_uint_eq(evr__poll_budget(&p),
				  expect[i] ? 0 : EVR_POLL_MAX_NS);
	}
	/* the waits slept through count the skip down (the driver's
	 * poll_async() does) */
	while (p.skip)
		p.skip--;
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_MAX_NS);
	/* a poll that finds data: no back-off at all */
	evr__poll_result(&p, EVR_POLL_FOUND);
	ck_assert_uint_eq(p.misses, 0);
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	ck_assert_uint_eq(p.skip, 0);
	ck_assert_uint_gt(evr__poll_budget(&p), 0);
}
END_TEST

/* A poll that lost its CPU (EVR_POLL_PREEMPTED) backs off at once,
 * wherever its length was: back to the base, and 1, 2, 4 ... 64 waits
 * slept through; the wait in hand sizes nothing.  A find resets it. */
START_TEST(test_poll_preempted)
{
	struct evr_pollest p;
	unsigned expect[] = { 1, 2, 4, 8, 16, 32, 64, 64 };
	uint64_t now = 1000000, bytes = 0;
	unsigned i;

	evr__poll_init(&p, EVR_POLL_NS);
	ck_assert_uint_eq(p.offer_ns, EVR_POLL_OFFER_NS);
	p.budget_ns = 2000000;      /* learnt */
	evr__poll_mark(&p, bytes, now);
	evr__poll_result(&p, EVR_POLL_PREEMPTED);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_NS);
	ck_assert_uint_eq(p.skip, 1);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
	/* the wait ends 900 us later: no poll sized on it */
	evr__poll_mark(&p, bytes += 64, now += 900000);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_NS);
	for (i = 1; i < sizeof(expect) / sizeof(expect[0]); i++) {
		evr__poll_result(&p, EVR_POLL_PREEMPTED);
		ck_assert_uint_eq(p.skip, expect[i]);
	}
	evr__poll_result(&p, EVR_POLL_FOUND);
	ck_assert_uint_eq(p.skip, 0);
	ck_assert_uint_eq(p.misses, 0);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
}
END_TEST

/* Replies that come later than the poll lasts (an emulated device, a
 * network round trip over 200 usec) make it longer: a miss whose wait
 * then took d makes it 1.25 d, up to 5 ms, if d was still a fast
 * exchange's (under the cold mark: 1 ms, or five polls); the cold mark
 * follows the poll.  Replies found early leave it as it is (the next
 * reply of a long tail would miss a shorter one); a session that turns
 * cold polls from the base again. */
START_TEST(test_poll_grows)
{
	struct evr_pollest p;
	uint64_t now = 1000000, bytes = 0;
	int i;

	evr__poll_init(&p, EVR_POLL_NS);
	evr__poll_mark(&p, bytes, now);
	/* the poll ran out; the reply came 400 us after the wait began */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 400000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 500000);
	ck_assert_uint_eq(evr__poll_budget(&p), 500000);
	/* a wait found while polling, after 300 us: 4 x 300 is more than
	 * the poll, which stays */
	now += 300000;
	evr__poll_mark(&p, bytes += 64, now);
	evr__poll_result(&p, EVR_POLL_FOUND);
	ck_assert_uint_eq(p.budget_ns, 500000);
	/* a miss, then 900 us: 1125 (the cold mark is 5 x 500 now) */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 900000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 1125000);
	/* a miss, then 1.9 ms: 2375 */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 1900000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 2375000);
	/* a miss, then 4.4 ms: 5500 is past the cap (5 ms) */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 4400000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_MAX_NS);
	ck_assert_uint_eq(EVR_POLL_MAX_NS, 5000000);
	ck_assert_uint_eq(p.misses, 0);
	/* at the cap, misses count */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	ck_assert_uint_eq(p.misses, 1);
	/* a miss whose wait is past the cold mark (5 x 600 us): no growth */
	p.budget_ns = 600000;
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 5000000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 600000);
	/* replies found after 20 us: the poll stays as it grew */
	for (i = 0; i < 100; i++) {
		now += 20000;
		evr__poll_mark(&p, bytes += 64, now);
		evr__poll_result(&p, EVR_POLL_FOUND);
	}
	ck_assert_uint_eq(p.budget_ns, 600000);
	ck_assert_uint_eq(evr__poll_budget(&p), 600000);
	/* a pause turns the session cold: it sleeps at once, and the
	 * poll is back at its base */
	now += 2000000000ull;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_NS);
	/* the exchange picks up: it polls from the base */
	for (i = 0; i < 10; i++) {
		now += 20000;
		evr__poll_mark(&p, bytes += 64, now);
	}
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* a poll of 0 never grows: it never polls */
	evr__poll_init(&p, 0);
	evr__poll_mark(&p, bytes += 64, now += 1000);
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	evr__poll_mark(&p, bytes += 64, now += 100000);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
}
END_TEST

/* The budget is the session's (opts.poll_us, rstream --poll-usec): none
 * never polls; a long one moves the cold mark to five budgets, so that a
 * peer whose waits are longer than 1 ms but within it still counts as a
 * fast exchange. */
START_TEST(test_poll_budget_set)
{
	struct evr_pollest none, p, d;
	uint64_t now = 1000, bytes = 0;
	int i;

	evr__poll_init(&none, 0);
	evr__poll_init(&p, 2000000); /* 2 ms */
	evr__poll_init(&d, EVR_POLL_NS);
	ck_assert_uint_eq(evr__poll_budget(&none), 0);
	ck_assert_uint_eq(evr__poll_budget(&p), 2000000);
	/* waits of 3 ms: cold for the default budget, not for 2 ms */
	for (i = 0; i < 20; i++) {
		now += 3000000;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
		evr__poll_mark(&d, bytes, now);
	}
	ck_assert_uint_eq(evr__poll_budget(&p), 2000000);
	ck_assert_uint_eq(evr__poll_budget(&d), 0);
	/* waits of 12 ms: cold for both */
	for (i = 0; i < 20; i++) {
		now += 12000000;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
	}
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
}
END_TEST

static Suite *poll_suite(void)
{
	Suite *su = suite_create("poll");
	TCase *tc;

	tc = tcase_create("estimator");
	tcase_add_test(tc, test_poll_budget);
	tcase_add_test(tc, test_poll_backoff);
	tcase_add_test(tc, test_poll_preempted);
	tcase_add_test(tc, test_poll_grows);
	tcase_add_test(tc, test_poll_budget_set);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(poll_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
