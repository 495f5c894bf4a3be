/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * -T a's wait: a session polls before it sleeps, as rsockets' rpoll
 * (polling_time) and Linux busy polling do, while it is in a fast
 * exchange.  The estimator (struct evr_pollest, poll.h) decides for how
 * long, evr__poll_async() polls.
 *
 * Why: a connection in a fast exchange (ping-pong, a stream whose window
 * refills) that finds its data while polling never pays a sleep and a
 * wake-up, which on a virtual machine costs more than the round trip (a
 * halted vCPU takes tens of microseconds to wake, an emulated one a
 * millisecond); one whose waits are long sleeps at once and costs nothing
 * (an idle server, a thousand silent connections).
 *
 * The estimator:
 * - hot or cold: the session polls while its waits for the peer (sleep
 *   and wake-up included) average at most the cold mark (1 ms, or five
 *   polls if more), and sleeps at once otherwise;
 * - the length: the base (opts.poll_us, EVR_POLL_NS by default); a reply
 *   that comes after the poll ran out, within a fast exchange's wait,
 *   makes it 1.25 x that wait, up to EVR_POLL_MAX_NS (an emulated
 *   device, a long network round trip).  It keeps that length while
 *   replies keep coming, for waits have a long tail and a poll cut back
 *   to the last wait missed it (each miss a sleep here and a longer wait
 *   at the peer, which then missed in turn), and goes back to the base
 *   when the session turns cold.  Only a miss sizes it: a wait that ended
 *   in a sleep includes the wake-up, and a poll sized on those shrank
 *   below the round trip and never found anything again.  A miss costs
 *   at most one poll's length of CPU;
 * - back-off: a poll at its cap that keeps finding nothing (a peer slower
 *   than it, a host too loaded for two pollers) sleeps through 1, 2, 4
 *   ... 64 waits after two misses in a row; a find resets it.
 *
 * The CPU offer (poll_offer_cpu()): a poll is for a CPU nobody else
 * wants.  A wait that goes on offers it every EVR_POLL_OFFER_NS
 * (sched_yield), so that a task that wants it (the peer on the same CPU,
 * a busy host's other work) runs then, not at the end of the poll's time
 * slice.  When one did, or the kernel preempted the poll meanwhile (the
 * thread's involuntary context switches moved; not a time gap, which a
 * vCPU its host descheduled or a softirq also makes), the poll ends: the
 * session sleeps, back at the base length, and backs off at once.
 * Without it, the two sides of a ping-pong on one CPU took a kernel time
 * slice a round trip.
 *
 * The slicing (poll_slice()): alone on its loop, a session that stays hot
 * gives the loop a turn every slice all the same (the poll's length, at
 * most EVR_POLL_SLICE_NS), or it would keep the loop for its whole run;
 * so does a long poll still waiting, which then polls on from where it
 * was (evr_pollest.cont_t0).  Shared (sessdrive.c), its poll is one try a
 * loop pass, for its budget across the passes, and the CPU is offered by
 * the loop, once every EVR_POLL_OFFER_NS (evr_loop.offered_ns), not by
 * every connection; an offer that finds the CPU taken backs off every
 * connection of the loop (evr_loop.lost_cpu), not only the one whose
 * turn made it: the others polling on kept the loop off the sleep that
 * lets the peer on the same CPU run, and four connections did less than
 * one on a busy host (0.73-1.04 x; 1.15-1.57 x since).
 *
 * A completion channel is not armed while the session polls, only once
 * before it sleeps (evr_conn.polling).  Figures: doc/benchmarks.md.
 */
#include "config.h"

#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include "poll.h"
#include "session.h"

#define POLL_TRIES 4

/* ---- the estimator (pure) ---- */

/* Waits that average more than this are not a fast exchange: 1 ms, or 5
 * polls' worth for a longer poll (learnt, or rstream --poll-usec). */
static uint64_t cold_ns(const struct evr_pollest *p)
{
	return p->budget_ns * 5 > EVR_POLL_COLD_NS ? p->budget_ns * 5 :
						      EVR_POLL_COLD_NS;
}

/* How long the learnt poll may grow: EVR_POLL_MAX_NS, or the base if that
 * is longer. */
static uint64_t cap_ns(const struct evr_pollest *p)
{
	return p->base_ns > EVR_POLL_MAX_NS ? p->base_ns : EVR_POLL_MAX_NS;
}

void evr__poll_init(struct evr_pollest *p, uint64_t base_ns)
{
	memset(p, 0, sizeof(*p));
	p->base_ns = base_ns;
	p->budget_ns = base_ns;
	p->offer_ns = EVR_POLL_OFFER_NS;
	p->taken = -1;
}

uint64_t evr__poll_budget(const struct evr_pollest *p)
{
	return p->ewma_ns <= cold_ns(p) && !p->skip ? p->budget_ns : 0;
}

/* The waits to sleep through at back-off step k: 1, 2, 4 ... 64. */
static unsigned skip_for(unsigned k)
{
	return k < 6 ? 1u << k : 64;
}

void evr__poll_result(struct evr_pollest *p, enum evr_poll_end how)
{
	switch (how) {
	case EVR_POLL_FOUND:
		/* the poll keeps its length: the next reply of the tail
		 * would miss a shorter one (see above) */
		p->misses = 0;
		p->skip = 0;
		return;
	case EVR_POLL_PREEMPTED:
		/* Another task wanted this CPU: polling takes it from
		 * whoever would send the reply (the peer, the device's
		 * softirq) or from other programs.  The wait sizes nothing
		 * (it holds the time off the CPU), the poll is back at its
		 * base, and the session backs off at once: it sleeps
		 * through 1, 2, 4 ... 64 waits. */
		p->missed = 0;
		p->budget_ns = p->base_ns;
		if (p->misses < 16)
			p->misses++;
		p->skip = skip_for(p->misses - 1);
		return;
	case EVR_POLL_RAN_OUT:
		break;
	}
	/* The reply comes later than the poll lasted.  While the poll may
	 * still grow, the wait's end sizes it (poll_mark); one that cannot
	 * grow backs off. */
	p->missed = 1;
	if (p->budget_ns < cap_ns(p))
		return;
	if (p->misses < 16)
		p->misses++;
	if (p->misses >= 2)
		p->skip = skip_for(p->misses - 2);
}

void evr__poll_mark(struct evr_pollest *p, uint64_t bytes, uint64_t now)
{
	uint64_t d;

	if (p->t0 && bytes == p->bytes)
		return;             /* the wait in hand goes on */
	if (p->t0) {
		/* one long pause (between tests, a slow peer) makes the
		 * session cold for a few waits, not for long: a wait counts
		 * for at most 4 x the cold mark; the average falls by half
		 * of the difference and rises by a quarter */
		d = now - p->t0;
		if (p->missed) {
			/* the poll missed this one: one that covers it (with
			 * a quarter to spare), up to the cap, if the wait was
			 * still a fast exchange's */
			p->missed = 0;
			if (p->base_ns && d < cold_ns(p) &&
			    d + d / 4 > p->budget_ns)
				p->budget_ns = d + d / 4 < cap_ns(p) ?
					       d + d / 4 : cap_ns(p);
		}
		if (d > 4 * cold_ns(p))
			d = 4 * cold_ns(p);
		if (d < p->ewma_ns)
			p->ewma_ns -= (p->ewma_ns - d) / 2;
		else
			p->ewma_ns += (d - p->ewma_ns) / 4;
		/* cold: it sleeps at once, and polls from the base again
		 * when its exchange picks up */
		if (p->ewma_ns > cold_ns(p))
			p->budget_ns = p->base_ns;
	}
	p->bytes = bytes;
	p->t0 = now;
}

/* ---- the poll ---- */

/* How often the kernel has given this thread's CPU to another task
 * (preempted it, or a sched_yield let one run: ru_nivcsw), -1 if it
 * cannot tell.  Not a time gap: a vCPU its host descheduled, or a
 * softirq, takes as long, and neither is a task this poll holds up. */
static long cpu_taken(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw;
}

/* The estimator's side of a find (data came while polling, or while the
 * poll gave the loop its turn): the wait in hand ended now, the poll keeps
 * its length.  Returns the budget for the wait that begins. */
static uint64_t poll_found(struct evr_sess *s, uint64_t now)
{
	s->pe.n_found++;
	evr__poll_mark(&s->pe, s->bytes, now);
	s->pe.taken = -1;
	evr__poll_result(&s->pe, EVR_POLL_FOUND);
	return evr__poll_budget(&s->pe);
}

/* A poll that gave the loop its turn goes on from where it was (*start),
 * if the wait it polled for goes on (no byte moved meanwhile); if bytes
 * moved, the call that resumed it found them: returns 1. */
static int poll_resume(struct evr_sess *s, uint64_t now, uint64_t *start)
{
	struct evr_pollest *p = &s->pe;
	int found = 0;

	*start = now;
	if (p->cont_t0 && p->t0 && s->bytes == p->bytes)
		*start = p->cont_t0;
	else if (p->cont_t0 && p->t0)
		found = 1;
	else
		p->taken = -1;
	p->cont_t0 = 0;
	return found;
}

/* The estimator at the start of a wait: the wait marked (or found, see
 * poll_resume()), and the budget to poll it for; 0: it sleeps at once
 * (cold, or backing off: this wait is one it sleeps through). */
static uint64_t poll_estimate(struct evr_sess *s, uint64_t now, int found)
{
	uint64_t budget;

	if (found) {
		budget = poll_found(s, now);
	} else {
		evr__poll_mark(&s->pe, s->bytes, now);
		budget = evr__poll_budget(&s->pe);
	}
	if (!budget) {
		s->pe.n_unpolled++;
		if (s->pe.skip)
			s->pe.skip--;
	}
	return budget;
}

/* The CPU offer: a wait that has gone on for offer_ns offers the CPU
 * (sched_yield), at most once per offer_ns (*offp: this poll's last
 * offer, or, shared, the loop's), so that a task that wants it (the peer,
 * on this CPU) runs now rather than when the kernel preempts the poll.
 * Returns 1 when one ran, or a preemption came meanwhile: the CPU is not
 * the poll's. */
static int poll_offer_cpu(struct evr_sess *s, uint64_t now, uint64_t start,
			  uint64_t *offp)
{
	struct evr_pollest *p = &s->pe;

	if (!p->offer_ns || now - start < p->offer_ns ||
	    now - *offp < p->offer_ns)
		return 0;
	if (p->taken < 0)
		p->taken = cpu_taken();
	sched_yield();
	*offp = evr_now_ns();
	return p->taken >= 0 && cpu_taken() != p->taken;
}

/* The slicing: alone, a session that has polled a slice since the call
 * (the poll's length, at most EVR_POLL_SLICE_NS: a ping-pong that finds
 * every reply, or a long poll still waiting) gives the loop its turn
 * (timers, fds), then polls on from where it was.  Shared, every try is
 * a turn's (evr__poll_async() yields after the CPU offer). */
static int poll_slice(int shared, uint64_t polled, uint64_t budget)
{
	uint64_t slice = budget < EVR_POLL_SLICE_NS ? budget :
						      EVR_POLL_SLICE_NS;

	return !shared && polled >= slice;
}

/* The poll is over and the session sleeps: a completion channel is armed
 * first (once more, not polling, unless the last call armed it already),
 * and the wait in hand is marked. */
static enum evr_sess_want poll_sleep(struct evr_sess *s,
				     enum evr_sess_want w, int unarmed)
{
	s->conn->polling = 0;
	if (unarmed && evr__sess_waiting(w))
		w = evr__sess_event(s, EVR_SE_READY, 0);
	if (evr__sess_waiting(w))
		evr__poll_mark(&s->pe, s->bytes, evr_now_ns());
	else
		s->pe.t0 = 0;
	return w;
}

enum evr_sess_want evr__poll_async(struct evr_sess *s, enum evr_sess_want w)
{
	uint64_t now = evr_now_ns(), entry = now, start, budget;
	uint64_t offered = 0, *offp;
	unsigned n, tries;
	int unarmed, found, yield = 0, preempted = 0;
	int shared = evr__loop_shared(s->loop);

	found = poll_resume(s, now, &start);
	if (!evr__sess_waiting(w)) {
		/* done, or its turn again soon: whatever comes next (a close
		 * that waits for completions) arms as it needs */
		if (s->conn)
			s->conn->polling = 0;
		s->pe.t0 = 0;
		return w;
	}
	/* whether the call that returned w left the channel unarmed
	 * (poll_intent() in sessdrive.c) */
	unarmed = s->conn->polling;
	if (shared && s->pe_lost != s->loop->lost_cpu) {
		s->pe_lost = s->loop->lost_cpu;
		s->pe.n_preempted++;
		evr__poll_result(&s->pe, EVR_POLL_PREEMPTED);
	}
	budget = poll_estimate(s, now, found);
	s->conn->polling = budget > 0;
	/* shared, the call of this turn was the try; the offers are the
	 * loop's, not each connection's */
	tries = shared ? 0 : POLL_TRIES;
	offp = shared ? &s->loop->offered_ns : &offered;
	while (budget) {
		if (tries)
			unarmed = 1;
		for (n = 0; n < tries && evr__sess_waiting(w); n++)
			w = evr__sess_try_again(s, w);
		now = evr_now_ns();
		if (s->bytes != s->pe.bytes) {
			start = now;
			budget = poll_found(s, now);
		}
		if (!evr__sess_waiting(w))
			break;
		if (now - start >= budget) {
			/* nothing came: it sleeps, and backs off if that
			 * keeps happening */
			s->pe.n_ran_out++;
			evr__poll_result(&s->pe, EVR_POLL_RAN_OUT);
			break;
		}
		if (poll_slice(shared, now - entry, budget)) {
			yield = 1;
			break;
		}
		if (poll_offer_cpu(s, now, start, offp)) {
			preempted = 1;
			break;
		}
		if (shared) {
			yield = 1;  /* the others' turns, then this one's */
			break;
		}
	}
	if (preempted) {
		/* it sleeps (the peer, or whoever wanted the CPU, runs),
		 * and backs off */
		s->pe.n_preempted++;
		evr__poll_result(&s->pe, EVR_POLL_PREEMPTED);
		if (shared)
			s->pe_lost = ++s->loop->lost_cpu;
	}
	if (yield) {
		/* not armed: the idle watcher brings it back next turn */
		s->pe.n_yields++;
		s->pe.cont_t0 = start;
		s->conn->polling = 0;
		return EVR_WANT_YIELD;
	}
	return poll_sleep(s, w, unarmed);
}
