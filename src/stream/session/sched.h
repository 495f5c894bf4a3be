/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The scheduler: one rule for every connection of a loop (HACKING.md,
 * "Many connections in one loop").  A connection that would poll or spin
 * in place (-T n's retries, -T a's poll) does so only while it is the
 * only one in play.  Shared, it takes one try per loop pass and hands the
 * loop on: every connection gets one turn a pass (libev runs each pending
 * watcher once a pass), a turn moves at most a slice
 * (evr__sched_slice_over()), and the pass itself (epoll_wait with no
 * timeout while anyone polls) is what finds the fds that are ready.
 *
 * Its state is one struct evr_sched per loop (evr_loop.sched, which the
 * loop only holds), made at the first connection's evr__sched_join() and
 * freed at the last one's evr__sched_leave().  A connection holds a seat:
 * its view of that state.  This file knows nothing of sessions or
 * transports; the driver (sessdrive.c) asks it, and check_sched drives it
 * alone.
 */
#ifndef EVR_SRC_SCHED_H
#define EVR_SRC_SCHED_H

#include <stddef.h>
#include <stdint.h>

struct evr_loop;

/*
 * -T n's CPU watch: a spin is for a CPU nobody else wants.  Spinning
 * (alone, in place; shared, through loop passes that never sleep), the
 * thread samples its own CPU time and context switches at most every
 * EVR_SCHED_WATCH_NS; a window of EVR_SCHED_WINDOW_NS in which the kernel
 * switched it out (an involuntary switch) and it ran less than 3/4 of
 * the time is contended; two such in a row, or one after a sleep, find
 * the host's CPUs wanted by more tasks than they hold: a
 * fork server's children, a busy host, a peer on the same CPU.  A
 * spinner there holds its CPU until its time slice ends, and its peer's
 * reply waits for that (one round trip a slice; a fork server's child
 * that shared a CPU with the client made 5 % of its siblings' round
 * trips).  The loop's -T n waits then sleep (the fd, or the completion
 * channel: evr_conn.sleeping) for sleep_ns, which doubles while the
 * contention lasts, up to EVR_SCHED_SLEEP_MAX_NS, and goes back to
 * EVR_SCHED_SLEEP_NS once a window is not contended; a sleeper the
 * kernel wakes runs at once.  Not a time gap alone: a vCPU its host
 * descheduled, or a softirq, makes no switch, and a kworker's switch
 * takes microseconds, not a quarter of the window.  A voluntary switch
 * in a window (the thread slept) discards it.
 */
#define EVR_SCHED_WATCH_NS 1000000u
#define EVR_SCHED_WINDOW_NS 5000000u
#define EVR_SCHED_SLEEP_NS 10000000u
#define EVR_SCHED_SLEEP_MAX_NS 320000000u

/* One look at the thread (getrusage(RUSAGE_THREAD)). */
struct evr_cpusample {
	uint64_t cpu_ns;        /* user + system time */
	long vol, invol;        /* voluntary, involuntary context switches */
};

struct evr_cpuwatch {
	uint64_t t0;            /* the window's start (0: none) */
	struct evr_cpusample at0; /* the thread then */
	uint64_t next;          /* no sample before this */
	uint64_t sleep_until;   /* 0: -T n spins; else its waits sleep */
	uint64_t sleep_ns;      /* the next sleep's length (0: the base) */
	unsigned hit;           /* the last window was contended */
	unsigned long contended; /* windows found contended */
};

/* The watch's rule (pure): a sample cs taken at now.  Returns 1 when it
 * closed a contended window (sleep_until is then set). */
int evr__cpuwatch_sample(struct evr_cpuwatch *cw, uint64_t now,
			 const struct evr_cpusample *cs);
/* Whether -T n's waits sleep at now (a sleep that has run out ends, and
 * the next window starts with the next sample). */
int evr__cpuwatch_asleep(struct evr_cpuwatch *cw, uint64_t now);

struct evr_sched {
	unsigned seats;         /* connections in play on this loop */
	struct evr_cpuwatch cw; /* -T n's CPU watch, the loop's thread's */
	uint64_t offered_ns;    /* when a shared poll last offered the CPU */
	unsigned long lost_cpu; /* shared polls that found the CPU wanted */
};

struct evr_sched_seat {
	struct evr_sched *sc;   /* NULL: not in play */
	unsigned long lost_seen; /* sc->lost_cpu when this seat last heard */
};

/* A turn moves at most this many transfers or bytes (round robin). */
#define EVR_SCHED_SLICE_MSGS 64
#define EVR_SCHED_SLICE_BYTES (1u << 20)
/* -T n alone: tries between looks at the clock, and how long it spins in
 * place before the loop gets its turn (sessdrive.c says why). */
#define EVR_SCHED_SPIN_TRIES 64
#define EVR_SCHED_SPIN_BUDGET_NS 1000000u

/* In play on loop, from a connection's first step: 0 or -ENOMEM.  A seat
 * already in play stays as it is. */
int evr__sched_join(struct evr_sched_seat *st, struct evr_loop *loop);
/* Out of play (a seat not in play: nothing). */
void evr__sched_leave(struct evr_sched_seat *st, struct evr_loop *loop);

static inline int evr__sched_in_play(const struct evr_sched_seat *st)
{
	return st->sc != NULL;
}

/* Others are in play beside this seat: it neither spins nor polls in
 * place. */
static inline int evr__sched_shared(const struct evr_sched_seat *st)
{
	return st->sc && st->sc->seats > 1;
}

/* A turn that has moved msgs transfers and bytes bytes is over. */
static inline int evr__sched_slice_over(unsigned msgs, size_t bytes)
{
	return msgs >= EVR_SCHED_SLICE_MSGS || bytes >= EVR_SCHED_SLICE_BYTES;
}

/* -T n: may round `round` (0, 1, ...) of EVR_SCHED_SPIN_TRIES tries go
 * on in place?  Not when shared; alone, for EVR_SCHED_SPIN_BUDGET_NS from
 * round 1 (*t0, which the caller zeroes; round 0 reads no clock), while
 * the CPU watch does not find the spin contended (it looks from round
 * 2). */
int evr__sched_spin_on(struct evr_sched_seat *st, unsigned round,
		       uint64_t *t0);
/* -T n, shared: a wait that hands the loop on (its CPU watch looks). */
void evr__sched_spin_yield(struct evr_sched_seat *st);
/* -T n: whether this seat's waits sleep for now (the CPU watch found
 * the spin contended); reads the clock only while they do. */
int evr__sched_spin_sleeps(struct evr_sched_seat *st);

/* The CPU offer: a wait begun at start that has gone on for every_ns
 * offers the CPU (sched_yield) so that a task that wants it runs now, at
 * most once every every_ns: *own, the poll's own last offer when alone;
 * shared, the loop's (one offer a loop, not one a connection).  *taken
 * keeps the thread's count of CPU taken by others at the wait's first
 * offer (-1 before it; the caller resets it when the wait ends).
 * Returns 1 when another task had the CPU since then: the poll is over.
 * every_ns 0: never. */
int evr__sched_offer_cpu(struct evr_sched_seat *st, uint64_t every_ns,
			 uint64_t now, uint64_t start, uint64_t *own,
			 long *taken);

/* A shared poll lost the CPU: every connection of the loop backs off,
 * not only the one whose turn it was (this seat has heard of it). */
void evr__sched_lost_cpu(struct evr_sched_seat *st);
/* Shared, and another seat's poll lost the CPU since this one last
 * heard: 1 (once per loss). */
int evr__sched_lost_since(struct evr_sched_seat *st);

#endif
