/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The scheduler (sched.h): who is in play on a loop, and the rules a
 * connection that would wait in place follows (spin, CPU offer, slice).
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "../../loop/loop.h"
#include "sched.h"

int evr__sched_join(struct evr_sched_seat *st, struct evr_loop *loop)
{
	struct evr_sched *sc = loop->sched;

	if (st->sc)
		return 0;
	if (!sc) {
		sc = calloc(1, sizeof(*sc));
		if (!sc)
			return -ENOMEM;
		loop->sched = sc;
	}
	sc->seats++;
	st->sc = sc;
	st->lost_seen = sc->lost_cpu;
	return 0;
}

void evr__sched_leave(struct evr_sched_seat *st, struct evr_loop *loop)
{
	struct evr_sched *sc = st->sc;

	if (!sc)
		return;
	st->sc = NULL;
	if (--sc->seats)
		return;
	/* the last one out: a loop with no connection holds nothing */
	if (loop->sched == sc)
		loop->sched = NULL;
	free(sc);
}

/* ---- -T n's CPU watch (sched.h says why) ---- */

static void window_open(struct evr_cpuwatch *cw, uint64_t now,
			const struct evr_cpusample *cs)
{
	cw->t0 = now;
	cw->at0 = *cs;
}

int evr__cpuwatch_sample(struct evr_cpuwatch *cw, uint64_t now,
			 const struct evr_cpusample *cs)
{
	uint64_t wall, ran;
	int hit;

	cw->next = now + EVR_SCHED_WATCH_NS;
	if (!cw->t0 || cs->vol != cw->at0.vol ||
	    now - cw->t0 > 4 * (uint64_t)EVR_SCHED_WINDOW_NS) {
		/* the first look, or the thread slept: a window starts */
		window_open(cw, now, cs);
		return 0;
	}
	wall = now - cw->t0;
	if (wall < EVR_SCHED_WINDOW_NS)
		return 0;
	ran = cs->cpu_ns - cw->at0.cpu_ns;
	hit = cs->invol != cw->at0.invol && ran < wall / 4 * 3;
	window_open(cw, now, cs);
	if (!hit) {
		cw->sleep_ns = 0;
		cw->hit = 0;
		return 0;
	}
	/* a first contended window after a quiet one: one more (a kworker,
	 * a migration) */
	if (!cw->sleep_ns && !cw->hit++)
		return 0;
	cw->hit = 0;
	if (!cw->sleep_ns)
		cw->sleep_ns = EVR_SCHED_SLEEP_NS;
	cw->sleep_until = now + cw->sleep_ns;
	if (cw->sleep_ns < EVR_SCHED_SLEEP_MAX_NS / 2)
		cw->sleep_ns *= 2;
	else
		cw->sleep_ns = EVR_SCHED_SLEEP_MAX_NS;
	cw->contended++;
	return 1;
}

int evr__cpuwatch_asleep(struct evr_cpuwatch *cw, uint64_t now)
{
	if (!cw->sleep_until)
		return 0;
	if (now < cw->sleep_until)
		return 1;
	/* awake: the next window opens at the next sample (it slept) */
	cw->sleep_until = 0;
	cw->t0 = 0;
	return 0;
}

/* A look at the thread for the watch, at most every EVR_SCHED_WATCH_NS. */
static void watch(struct evr_sched *sc, uint64_t now)
{
	struct evr_cpusample cs;
	struct timespec ts;
	struct rusage ru;

	if (now < sc->cw.next || sc->cw.sleep_until)
		return;
	/* the thread's CPU clock, not getrusage()'s times: those move by
	 * the scheduler's ticks (4 ms at HZ=250) */
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) ||
	    getrusage(RUSAGE_THREAD, &ru)) {
		sc->cw.next = now + EVR_SCHED_SLEEP_MAX_NS;
		return;
	}
	cs.cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	cs.vol = ru.ru_nvcsw;
	cs.invol = ru.ru_nivcsw;
	evr__cpuwatch_sample(&sc->cw, now, &cs);
}

int evr__sched_spin_on(struct evr_sched_seat *st, unsigned round,
		       uint64_t *t0)
{
	uint64_t now;

	if (evr__sched_shared(st))
		return 0;
	if (!round)
		return 1;
	now = evr_now_ns();
	if (round == 1) {
		*t0 = now;
		return 1;
	}
	if (!st->sc)
		return now - *t0 < EVR_SCHED_SPIN_BUDGET_NS;
	watch(st->sc, now);
	return now - *t0 < EVR_SCHED_SPIN_BUDGET_NS && !st->sc->cw.sleep_until;
}

void evr__sched_spin_yield(struct evr_sched_seat *st)
{
	if (st->sc)
		watch(st->sc, evr_now_ns());
}

int evr__sched_spin_sleeps(struct evr_sched_seat *st)
{
	return st->sc && st->sc->cw.sleep_until &&
	       evr__cpuwatch_asleep(&st->sc->cw, evr_now_ns());
}

/* How often the kernel has given this thread's CPU to another task
 * (preempted it, or a sched_yield let one run: ru_nivcsw), -1 if it
 * cannot tell.  Not a time gap: a vCPU its host descheduled, or a
 * softirq, takes as long, and neither is a task a poll holds up. */
static long cpu_taken(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw;
}

int evr__sched_offer_cpu(struct evr_sched_seat *st, uint64_t every_ns,
			 uint64_t now, uint64_t start, uint64_t *own,
			 long *taken)
{
	uint64_t *last = evr__sched_shared(st) ? &st->sc->offered_ns : own;

	if (!every_ns || now - start < every_ns || now - *last < every_ns)
		return 0;
	if (*taken < 0)
		*taken = cpu_taken();
	sched_yield();
	*last = evr_now_ns();
	return *taken >= 0 && cpu_taken() != *taken;
}

void evr__sched_lost_cpu(struct evr_sched_seat *st)
{
	if (evr__sched_shared(st))
		st->lost_seen = ++st->sc->lost_cpu;
}

int evr__sched_lost_since(struct evr_sched_seat *st)
{
	if (!evr__sched_shared(st) || st->lost_seen == st->sc->lost_cpu)
		return 0;
	st->lost_seen = st->sc->lost_cpu;
	return 1;
}
