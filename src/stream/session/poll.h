/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * -T a's poll estimator: how long a session polls before it sleeps, from
 * how long its waits for the peer take.  Pure (no clock, no loop): the
 * caller gives the times, and check_poll drives it.  The poll itself
 * is the driver's (sessdrive.c's poll_async()).
 */
#ifndef EVR_SRC_POLL_H
#define EVR_SRC_POLL_H

#include <stdint.h>

#include "evrdma/stream.h"

/* -T a polls before it sleeps while the session is in an active exchange
 * (poll.c explains why): ewma_ns, an average of how long its waits for
 * the peer took, sleep and wake-up included; t0 and bytes, when the wait
 * in hand began and how many bytes had moved then. */
struct evr_pollest {
	uint64_t base_ns;           /* the poll set (opts.poll_us); 0: never */
	uint64_t budget_ns;         /* the poll now: base_ns, grown to cover
				     * replies that came later than it
				     * lasted (up to EVR_POLL_MAX_NS) until
				     * the session turns cold */
	int missed;                 /* the wait in hand's poll ran out */
	uint64_t ewma_ns, t0, bytes;
	unsigned misses;            /* polls in a row that found nothing, or
				     * lost the CPU */
	unsigned skip;              /* waits to sleep through before the next
				     * poll: 1, 2, 4 ... 64 after 2, 3, 4 ...
				     * misses (a peer slower than the poll),
				     * or after 1, 2, 3 ... polls that lost
				     * the CPU (a host too loaded for it) */
	uint64_t offer_ns;          /* a wait that goes on offers the CPU to
				     * other tasks this often, and the poll
				     * ends if one took it:
				     * EVR_POLL_OFFER_NS; 0: never */
	long taken;                 /* the thread's CPU taken (ru_nivcsw) at
				     * the wait's first offer, -1 before it;
				     * kept while the poll gives the loop its
				     * turn */
	uint64_t cont_t0;           /* a poll that gave the loop its turn
				     * while it waited: when it began (it
				     * goes on from there), else 0 */
	/* what the polls did (traced at the session's end) */
	uint64_t n_found;           /* data came while polling */
	uint64_t n_ran_out;         /* polled the budget, then slept */
	uint64_t n_preempted;       /* lost the CPU mid-poll, then slept */
	uint64_t n_unpolled;        /* slept at once (cold, backing off) */
	uint64_t n_yields;          /* gave the loop its turn mid-poll */
};

#define EVR_POLL_NS (EVR_DEFAULT_POLL_US * 1000u) /* the default budget */
#define EVR_POLL_COLD_NS 1000000u   /* waits longer than this on average
				     * (or 5 x budget_ns, if more): the
				     * session sleeps at once */
#define EVR_POLL_MAX_NS 5000000u    /* how long a learnt poll may grow */
#define EVR_POLL_SLICE_NS 2000000u  /* a poll gives the loop its turn at
				     * least this often */
#define EVR_POLL_OFFER_NS 100000u   /* a poll still waiting offers its CPU
				     * to other tasks (sched_yield) this
				     * often */

/* How a poll ended. */
enum evr_poll_end {
	EVR_POLL_RAN_OUT,   /* its budget ran out, nothing came */
	EVR_POLL_FOUND,     /* data came while it polled */
	EVR_POLL_PREEMPTED, /* another task had its CPU meanwhile */
};

void evr__poll_init(struct evr_pollest *p, uint64_t base_ns);
/* bytes is the session's count so far: when it moved since the wait in
 * hand began, that wait ended now and a new one begins. */
void evr__poll_mark(struct evr_pollest *p, uint64_t bytes, uint64_t now);
/* budget_ns while the waits average at most the cold mark and no
 * back-off is due, else 0 (sleep at once). */
uint64_t evr__poll_budget(const struct evr_pollest *p);
/* A poll ended: found (the poll keeps its length), ran out (the wait's
 * end then sizes a longer poll, or, at its cap, the session backs off),
 * or preempted (back to the base length, and it backs off at once). */
void evr__poll_result(struct evr_pollest *p, enum evr_poll_end how);

#endif
