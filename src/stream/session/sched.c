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

int evr__sched_spin_on(const struct evr_sched_seat *st, unsigned round,
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
	return now - *t0 < EVR_SCHED_SPIN_BUDGET_NS;
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
