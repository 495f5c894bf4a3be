/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The scheduler (src/stream/session/sched.c) alone, with seats on a real
 * loop and no session: who is in play and when the state lives, the
 * slice, -T n's spin budget, the CPU offer (its throttle alone and
 * shared, and what it reports when another task took the CPU), the
 * back-off every connection of a loop hears of, and -T n's CPU watch.  The sessions' use of it
 * is check_sessdrive's (test_driver_shared_*).
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>

#include "fakecpu.h"
#include "loop/loop.h"
#include "stream/session/sched.h"

static struct evr_loop *loop;

static void setup(void)
{
	ck_assert_int_eq(evr_loop_new(&loop, NULL), 0);
	fake_yields = 0;
	fake_yield_taken_at = 0;
	fake_taken = 0;
}

static void teardown(void)
{
	/* every test leaves its seats: a loop with none holds nothing */
	ck_assert_ptr_null(loop->sched);
	evr_loop_free(loop);
}

/* The state lives from the first join to the last leave; a seat counts
 * once, however often it joins; shared means two or more in play. */
START_TEST(test_join_leave)
{
	struct evr_sched_seat a = { 0 }, b = { 0 }, c = { 0 };
	struct evr_sched *sc;

	ck_assert_ptr_null(loop->sched);
	ck_assert(!evr__sched_in_play(&a));
	ck_assert(!evr__sched_shared(&a));
	evr__sched_leave(&a, loop);             /* not in play: nothing */
	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	sc = loop->sched;
	ck_assert_ptr_nonnull(sc);
	ck_assert(evr__sched_in_play(&a));
	ck_assert_uint_eq(sc->seats, 1);
	ck_assert(!evr__sched_shared(&a));      /* alone */
	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert_uint_eq(sc->seats, 1);        /* once */
	ck_assert_int_eq(evr__sched_join(&b, loop), 0);
	ck_assert_int_eq(evr__sched_join(&c, loop), 0);
	ck_assert_ptr_eq(loop->sched, sc);
	ck_assert_uint_eq(sc->seats, 3);
	ck_assert(evr__sched_shared(&a) && evr__sched_shared(&c));
	evr__sched_leave(&b, loop);
	evr__sched_leave(&b, loop);             /* twice: once */
	ck_assert_uint_eq(sc->seats, 2);
	ck_assert(!evr__sched_in_play(&b));
	ck_assert(!evr__sched_shared(&b));      /* out of play: never */
	evr__sched_leave(&a, loop);
	ck_assert(!evr__sched_shared(&c));      /* alone again */
	evr__sched_leave(&c, loop);
	ck_assert_ptr_null(loop->sched);
	/* in play again: fresh state */
	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert_uint_eq(loop->sched->seats, 1);
	ck_assert_uint_eq(loop->sched->lost_cpu, 0);
	evr__sched_leave(&a, loop);
}
END_TEST

/* Two loops, two schedulers: a connection on one is not the other's. */
START_TEST(test_loops_apart)
{
	struct evr_loop *l2;
	struct evr_sched_seat a = { 0 }, b = { 0 };

	ck_assert_int_eq(evr_loop_new(&l2, NULL), 0);
	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert_int_eq(evr__sched_join(&b, l2), 0);
	ck_assert_ptr_ne(loop->sched, l2->sched);
	ck_assert(!evr__sched_shared(&a) && !evr__sched_shared(&b));
	evr__sched_leave(&b, l2);
	ck_assert_ptr_null(l2->sched);
	evr__sched_leave(&a, loop);
	evr_loop_free(l2);
}
END_TEST

START_TEST(test_slice)
{
	ck_assert(!evr__sched_slice_over(0, 0));
	ck_assert(!evr__sched_slice_over(EVR_SCHED_SLICE_MSGS - 1,
					 EVR_SCHED_SLICE_BYTES - 1));
	ck_assert(evr__sched_slice_over(EVR_SCHED_SLICE_MSGS, 0));
	ck_assert(evr__sched_slice_over(1, EVR_SCHED_SLICE_BYTES));
}
END_TEST

/* -T n alone spins for its budget from round 1 (round 0 reads no clock);
 * shared, it never spins in place. */
START_TEST(test_spin)
{
	struct evr_sched_seat a = { 0 }, b = { 0 };
	uint64_t t0 = 0, before;

	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert(evr__sched_spin_on(&a, 0, &t0));
	ck_assert_uint_eq(t0, 0);               /* no clock yet */
	before = evr_now_ns();
	ck_assert(evr__sched_spin_on(&a, 1, &t0));
	ck_assert_uint_ge(t0, before);
	ck_assert(evr__sched_spin_on(&a, 2, &t0));
	ck_assert(evr__sched_spin_on(&a, 500, &t0));
	/* its budget spent */
	t0 = evr_now_ns() - EVR_SCHED_SPIN_BUDGET_NS - 1;
	ck_assert(!evr__sched_spin_on(&a, 2, &t0));
	/* shared: not even round 0 */
	ck_assert_int_eq(evr__sched_join(&b, loop), 0);
	t0 = 0;
	ck_assert(!evr__sched_spin_on(&a, 0, &t0));
	ck_assert(!evr__sched_spin_on(&b, 1, &t0));
	ck_assert_uint_eq(t0, 0);
	evr__sched_leave(&b, loop);
	ck_assert(evr__sched_spin_on(&a, 0, &t0));
	evr__sched_leave(&a, loop);
}
END_TEST

#define EVERY 100000u   /* the offer's period in these tests (ns) */

/* Alone: the offer waits until the wait is every_ns old, then comes at
 * most once every every_ns (the poll's own clock); 0 never offers. */
START_TEST(test_offer_alone)
{
	struct evr_sched_seat a = { 0 };
	uint64_t own = 0, now = evr_now_ns();
	long taken = -1;

	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert(!evr__sched_offer_cpu(&a, 0, now, now - 10 * EVERY, &own,
					&taken));
	ck_assert(!evr__sched_offer_cpu(&a, EVERY, now, now - EVERY + 1,
					&own, &taken));
	ck_assert_uint_eq(fake_yields, 0);
	ck_assert_int_eq(taken, -1);            /* no offer: not read */
	/* due: it yields; nobody took the CPU */
	ck_assert(!evr__sched_offer_cpu(&a, EVERY, now, now - EVERY, &own,
					&taken));
	ck_assert_uint_eq(fake_yields, 1);
	ck_assert_int_eq(taken, 0);
	ck_assert_uint_ge(own, now);
	/* within every_ns of that offer: none */
	ck_assert(!evr__sched_offer_cpu(&a, EVERY, own + EVERY - 1,
					now - EVERY, &own, &taken));
	ck_assert_uint_eq(fake_yields, 1);
	/* the next one, and another task runs in it: the poll is over */
	fake_yield_taken_at = 2;
	now = own + EVERY;
	ck_assert(evr__sched_offer_cpu(&a, EVERY, now, now - EVERY, &own,
				       &taken));
	ck_assert_uint_eq(fake_yields, 2);
	ck_assert_int_eq(taken, 0);             /* the wait's first count */
	/* the CPU taken since the wait's first offer says so again */
	now = own + EVERY;
	ck_assert(evr__sched_offer_cpu(&a, EVERY, now, now - EVERY, &own,
				       &taken));
	/* a new wait (the caller resets taken): nobody took it since */
	taken = -1;
	now = own + EVERY;
	ck_assert(!evr__sched_offer_cpu(&a, EVERY, now, now - EVERY, &own,
					&taken));
	ck_assert_int_eq(taken, fake_taken);
	evr__sched_leave(&a, loop);
}
END_TEST

/* Shared: one offer a loop, not one a connection: the loop's clock, not
 * the poll's own, throttles it. */
START_TEST(test_offer_shared)
{
	struct evr_sched_seat a = { 0 }, b = { 0 };
	uint64_t own_a = 0, own_b = 0, now = evr_now_ns();
	long ta = -1, tb = -1;

	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert_int_eq(evr__sched_join(&b, loop), 0);
	ck_assert(!evr__sched_offer_cpu(&a, EVERY, now, now - EVERY, &own_a,
					&ta));
	ck_assert_uint_eq(fake_yields, 1);
	ck_assert_uint_eq(own_a, 0);            /* the loop's clock moved */
	ck_assert_uint_ge(loop->sched->offered_ns, now);
	/* b's own clock says due; the loop's says not */
	now = loop->sched->offered_ns + 1;
	ck_assert(!evr__sched_offer_cpu(&b, EVERY, now, now - EVERY,
					&own_b, &tb));
	ck_assert_uint_eq(fake_yields, 1);
	ck_assert_int_eq(tb, -1);
	now = loop->sched->offered_ns + EVERY;
	ck_assert(!evr__sched_offer_cpu(&b, EVERY, now, now - EVERY, &own_b,
					&tb));
	ck_assert_uint_eq(fake_yields, 2);
	evr__sched_leave(&b, loop);
	evr__sched_leave(&a, loop);
}
END_TEST

/* A shared poll that lost the CPU backs off every connection of the
 * loop: each other seat hears of it once; the one that lost it has
 * heard.  Alone there is nobody to tell. */
START_TEST(test_lost_cpu)
{
	struct evr_sched_seat a = { 0 }, b = { 0 }, c = { 0 };

	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	evr__sched_lost_cpu(&a);                /* alone: nothing */
	ck_assert_uint_eq(loop->sched->lost_cpu, 0);
	ck_assert(!evr__sched_lost_since(&a));
	ck_assert_int_eq(evr__sched_join(&b, loop), 0);
	ck_assert_int_eq(evr__sched_join(&c, loop), 0);
	evr__sched_lost_cpu(&a);
	ck_assert_uint_eq(loop->sched->lost_cpu, 1);
	ck_assert(!evr__sched_lost_since(&a));
	ck_assert(evr__sched_lost_since(&b));
	ck_assert(!evr__sched_lost_since(&b));  /* once */
	evr__sched_lost_cpu(&b);
	ck_assert(evr__sched_lost_since(&a));
	ck_assert(evr__sched_lost_since(&c));   /* two losses, heard once */
	ck_assert(!evr__sched_lost_since(&c));
	/* a seat that joins later has heard of the losses before it */
	evr__sched_leave(&c, loop);
	ck_assert_int_eq(evr__sched_join(&c, loop), 0);
	ck_assert(!evr__sched_lost_since(&c));
	evr__sched_leave(&c, loop);
	evr__sched_leave(&b, loop);
	evr__sched_lost_cpu(&a);                /* alone again */
	ck_assert(!evr__sched_lost_since(&a));
	evr__sched_leave(&a, loop);
}
END_TEST

/* ---- -T n's CPU watch: the rule (pure), then the seats' use of it ---- */

#define MS 1000000u

/* A window's end at t (ms) in which the thread ran ran_ms, with invol
 * involuntary and vol voluntary switches so far. */
static int look(struct evr_cpuwatch *cw, unsigned t, unsigned ran_ms,
		long vol, long invol)
{
	struct evr_cpusample cs = { (uint64_t)ran_ms * MS, vol, invol };

	return evr__cpuwatch_sample(cw, (uint64_t)t * MS, &cs);
}

/* A thread that ran all the time, or that lost a quarter or more of it
 * with no task switched in (a vCPU its host took, a softirq), never
 * sleeps; nor does one window short of its length. */
START_TEST(test_watch_quiet)
{
	struct evr_cpuwatch cw = { 0 };
	unsigned t;

	ck_assert(!look(&cw, 1, 0, 0, 0));     /* the first look opens */
	ck_assert_uint_eq(cw.t0, 1 * MS);
	ck_assert_uint_eq(cw.next, 2 * MS);
	for (t = 2; t <= 60; t++)               /* ran it all, switched */
		ck_assert(!look(&cw, t, t - 1, 0, (long)t));
	ck_assert(!look(&cw, 66, 61, 0, 100));  /* 4/5 of it */
	ck_assert(!look(&cw, 71, 62, 0, 100));  /* a fifth, no switch */
	ck_assert(!look(&cw, 76, 63, 0, 100));
	ck_assert(!look(&cw, 79, 63, 0, 101));  /* short of a window */
	ck_assert_uint_eq(cw.t0, 76 * MS);
	ck_assert_uint_eq(cw.contended, 0);
	ck_assert_uint_eq(cw.sleep_until, 0);
	ck_assert(!evr__cpuwatch_asleep(&cw, 80 * MS));
}
END_TEST

/* Two contended windows in a row sleep for the base; the sleep ends at
 * its time; each contended window after it sleeps at once, twice as
 * long, up to the most; a quiet window goes back to the base, and to
 * two windows in a row. */
START_TEST(test_watch_contended)
{
	struct evr_cpuwatch cw = { 0 };
	uint64_t want = EVR_SCHED_SLEEP_NS, until;
	unsigned t = 1, ran = 0, n;	/* (a clock of 0: no window) */

	look(&cw, t, ran, 0, 0);
	ck_assert(!look(&cw, t += 5, ran += 2, 0, 1)); /* one: not yet */
	ck_assert_uint_eq(cw.sleep_until, 0);
	ck_assert(look(&cw, t += 5, ran += 2, 0, 2));  /* two in a row */
	ck_assert_uint_eq(cw.sleep_until, t * (uint64_t)MS + want);
	ck_assert_uint_eq(cw.contended, 1);
	for (n = 2; n <= 12; n++) {
		until = cw.sleep_until;
		ck_assert(evr__cpuwatch_asleep(&cw, until - 1));
		ck_assert(!evr__cpuwatch_asleep(&cw, until));
		ck_assert_uint_eq(cw.t0, 0);    /* a window opens next */
		t = (unsigned)(until / MS) + 1;
		/* it slept: the voluntary count moved, the window opens */
		ck_assert(!look(&cw, t, ran, (long)n, 10));
		want = want * 2 > EVR_SCHED_SLEEP_MAX_NS ?
			       EVR_SCHED_SLEEP_MAX_NS : want * 2;
		ck_assert(look(&cw, t += 5, ran += 1, (long)n, 11));
		ck_assert_uint_eq(cw.sleep_until, t * (uint64_t)MS + want);
		ck_assert_uint_eq(cw.contended, n);
	}
	ck_assert_uint_eq(want, EVR_SCHED_SLEEP_MAX_NS);
	/* quiet again: the base, and two in a row */
	t = (unsigned)(cw.sleep_until / MS);
	ck_assert(!evr__cpuwatch_asleep(&cw, (uint64_t)t * MS));
	look(&cw, t, ran, 99, 20);
	ck_assert(!look(&cw, t += 5, ran += 5, 99, 21));
	ck_assert(!look(&cw, t += 5, ran += 1, 99, 22));
	ck_assert(look(&cw, t += 5, ran += 1, 99, 23));
	ck_assert_uint_eq(cw.sleep_until, t * (uint64_t)MS + EVR_SCHED_SLEEP_NS);
}
END_TEST

/* A window in which the thread slept (a voluntary switch), or whose
 * looks came far apart, decides nothing: a new one opens. */
START_TEST(test_watch_slept)
{
	struct evr_cpuwatch cw = { 0 };

	look(&cw, 1, 0, 0, 0);
	ck_assert(!look(&cw, 6, 1, 0, 1));
	ck_assert_uint_eq(cw.hit, 1);
	ck_assert(!look(&cw, 10, 2, 1, 2));     /* slept: opens */
	ck_assert_uint_eq(cw.t0, 10 * MS);
	ck_assert(!look(&cw, 31, 3, 1, 3));     /* over 4 windows: opens */
	ck_assert_uint_eq(cw.t0, 31 * MS);
	ck_assert_uint_eq(cw.sleep_until, 0);
	ck_assert(look(&cw, 36, 4, 1, 4));      /* the second in a row */
}
END_TEST

/* A seat alone spins in place only while its loop's watch lets it;
 * -T n's waits sleep until the watch's time, then spin again.  A seat
 * not in play spins by the budget alone. */
START_TEST(test_spin_watch)
{
	struct evr_sched_seat a = { 0 }, none = { 0 };
	uint64_t t0 = 0;

	ck_assert_int_eq(evr__sched_join(&a, loop), 0);
	ck_assert(!evr__sched_spin_sleeps(&a));
	ck_assert(evr__sched_spin_on(&a, 1, &t0));
	loop->sched->cw.sleep_until = evr_now_ns() + 1000 * MS;
	ck_assert(!evr__sched_spin_on(&a, 2, &t0));
	ck_assert(evr__sched_spin_sleeps(&a));
	loop->sched->cw.sleep_until = evr_now_ns() - 1;
	ck_assert(!evr__sched_spin_sleeps(&a));
	ck_assert_uint_eq(loop->sched->cw.sleep_until, 0);
	ck_assert(evr__sched_spin_on(&a, 2, &t0));
	/* the look it took: a window is open (a real getrusage) */
	ck_assert_uint_ne(loop->sched->cw.t0, 0);
	ck_assert(!evr__sched_spin_sleeps(&none));
	t0 = 0;
	ck_assert(evr__sched_spin_on(&none, 1, &t0));
	ck_assert(evr__sched_spin_on(&none, 2, &t0));
	evr__sched_spin_yield(&none);           /* not in play: nothing */
	evr__sched_leave(&a, loop);
}
END_TEST

static Suite *sched_suite(void)
{
	Suite *su = suite_create("sched");
	TCase *tc = tcase_create("seats");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_join_leave);
	tcase_add_test(tc, test_loops_apart);
	suite_add_tcase(su, tc);

	tc = tcase_create("rules");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_slice);
	tcase_add_test(tc, test_spin);
	tcase_add_test(tc, test_offer_alone);
	tcase_add_test(tc, test_offer_shared);
	tcase_add_test(tc, test_lost_cpu);
	suite_add_tcase(su, tc);

	tc = tcase_create("cpu watch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_watch_quiet);
	tcase_add_test(tc, test_watch_contended);
	tcase_add_test(tc, test_watch_slept);
	tcase_add_test(tc, test_spin_watch);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(sched_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
