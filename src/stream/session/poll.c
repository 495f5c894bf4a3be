/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * -T a's wait: a session polls before it sleeps, as rsockets' rpoll
 * (polling_time) and Linux busy polling do, while it is in a fast
 * exchange.  The estimator (struct evr_pollest, poll.h; this file, pure:
 * it calls nothing of the session's) decides for how long; the driver
 * (sessdrive.c's poll_async()) polls.
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
 * A completion channel is not armed while the session polls, only once
 * before it sleeps (evr_conn.polling).  Figures: doc/benchmarks.md.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "poll.h"

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

/* A wait of d ns the poll missed: a poll that covers it (with a quarter
 * to spare), up to the cap, if the wait was still a fast exchange's. */
static void grow_budget(struct evr_pollest *p, uint64_t d)
{
	uint64_t want = d + d / 4;

	p->missed = 0;
	if (!p->base_ns || d >= cold_ns(p) || want <= p->budget_ns)
		return;
	p->budget_ns = want < cap_ns(p) ? want : cap_ns(p);
}

/* A wait of d ns ended.  One long pause (between tests, a slow peer)
 * makes the session cold for a few waits, not for long: a wait counts
 * for at most 4 x the cold mark; the average falls by half of the
 * difference and rises by a quarter. */
static void wait_ended(struct evr_pollest *p, uint64_t d)
{
	if (p->missed)
		grow_budget(p, d);
	if (d > 4 * cold_ns(p))
		d = 4 * cold_ns(p);
	if (d < p->ewma_ns)
		p->ewma_ns -= (p->ewma_ns - d) / 2;
	else
		p->ewma_ns += (d - p->ewma_ns) / 4;
	/* cold: it sleeps at once, and polls from the base again when its
	 * exchange picks up */
	if (p->ewma_ns > cold_ns(p))
		p->budget_ns = p->base_ns;
}

void evr__poll_mark(struct evr_pollest *p, uint64_t bytes, uint64_t now)
{
	if (p->t0 && bytes == p->bytes)
		return;             /* the wait in hand goes on */
	if (p->t0)
		wait_ended(p, now - p->t0);
	p->bytes = bytes;
	p->t0 = now;
}
