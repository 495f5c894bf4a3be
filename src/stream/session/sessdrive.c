/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session's driver (session.h): the loop watchers that feed the pure
 * machine of session.c (fd readiness, the idle watcher of a session that
 * retries or yields, the stall watchdog, progress reports, the
 * connection's wake-ups), apply() that turns what the machine waits for
 * into them, and how a session waits in place between two calls: spin()
 * (-T n) and poll_async() (-T a, with poll.c's estimator).  The engines
 * call the driver; the driver calls the machine; the machine calls
 * neither.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>

#include "poll.h"
#include "sched.h"
#include "session.h"

static void apply(struct evr_sess *s, enum evr_sess_want w);
static enum evr_sess_want spin(struct evr_sess *s, enum evr_sess_want w);
static enum evr_sess_want poll_async(struct evr_sess *s, enum evr_sess_want w);

/* -T a: a session that will poll if its call finds nothing makes that
 * call without arming its completion channel (poll_async() arms it
 * before it sleeps): an arm is a system call, and the completion it asks
 * for another (an event to read and acknowledge) on every exchange. */
static void poll_intent(struct evr_sess *s)
{
	if (s->io == EVR_IO_ASYNC && s->conn)
		s->conn->polling = evr__poll_budget(&s->pe) > 0;
}

static void io_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct evr_sess *s = evr__container_of(w, struct evr_sess, io_w);

	poll_intent(s);
	apply(s, spin(s, evr__sess_event(s, EVR_SE_READY, 0)));
}

static void idle_off(struct evr_sess *s);

static void idle_cb(struct ev_loop *l, ev_idle *w, int revents)
{
	struct evr_sess *s = evr__container_of(w, struct evr_sess, idle_w);

	/* an async session's turn after a yield: its poll goes on, or it
	 * sleeps (apply() turns the idle watcher back on if it yields) */
	if (s->io == EVR_IO_ASYNC)
		idle_off(s);
	poll_intent(s);
	apply(s, spin(s, evr__sess_event(s, EVR_SE_READY, 0)));
}

static void wd_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_sess *s = evr__container_of(w, struct evr_sess, wd_w);
	ev_tstamp now = ev_now(l);

	if (s->bytes != s->wd_bytes || s->held || evr__sess_pacing(s)) {
		s->wd_bytes = s->bytes;
		s->wd_last = now;
		s->wd_idle = 0;
		return;
	}
	/* The ticks are stall/4 apart: the 4th idle one in a row is at
	 * least the stall timeout after the last byte.  Comparing times
	 * alone missed it by a hair (each tick runs a little late), and
	 * the connection was dropped a tick later, 1.5 x the timeout. */
	if (++s->wd_idle >= 4 || (now - s->wd_last) * 1000.0 >= s->stall_ms)
		apply(s, evr__sess_event(s, EVR_SE_STALL, 0));
}

/* --mps: a long wait for the next iteration's time is over but for its
 * last EVR_PACE_SPIN_NS (wait_for()). */
static void pace_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_sess *s = evr__container_of(w, struct evr_sess, pace_w);

	apply(s, spin(s, evr__sess_event(s, EVR_SE_READY, 0)));
}

static void prog_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	evr__sess_progress(evr__container_of(w, struct evr_sess, prog_w));
}

/* The idle watcher: the session's next turn, one loop pass from now (a
 * spinner's retry, a poll that yielded, a machine that yielded). */
static void idle_on(struct evr_sess *s)
{
	ev_idle_start(s->loop->ev, &s->idle_w);
}

static void idle_off(struct evr_sess *s)
{
	ev_idle_stop(s->loop->ev, &s->idle_w);
}

void evr__sess_stop_watchers(struct evr_sess *s)
{
	struct ev_loop *l = s->loop->ev;

	ev_io_stop(l, &s->io_w);
	idle_off(s);
	ev_timer_stop(l, &s->wd_w);
	if (s->wd_state) {
		ev_timer_stop(l, &s->prog_w);
		ev_timer_stop(l, &s->pace_w);
	}
	s->wd_state = 0;
	evr__sched_leave(&s->seat, s->loop);
}

/* The machine is over (NONE), or its owner took the connection
 * (DETACH): the watchers stop, and the owner hears. */
static void finish(struct evr_sess *s, enum evr_sess_want w)
{
	evr__sess_stop_watchers(s);
	if (!s->owner)
		return;
	if (w == EVR_WANT_DETACH && s->owner->detached)
		s->owner->detached(s);
	else if (w == EVR_WANT_NONE && s->owner->finished)
		s->owner->finished(s);
}

/* The watchers, at the machine's first wait: fd, idle, the stall
 * watchdog, progress reports. */
static void watchers_init(struct evr_sess *s)
{
	struct ev_loop *l = s->loop->ev;
	ev_tstamp iv = s->stall_ms / 4000.0;

	ev_init(&s->io_w, io_cb);
	ev_idle_init(&s->idle_w, idle_cb);
	/* At the top priority a machine that yielded runs in the next loop
	 * turn whatever else is pending; at the default one it would wait
	 * for a turn with nothing else to do, which never comes with
	 * thousands of busy connections. */
	ev_set_priority(&s->idle_w, EV_MAXPRI);
	ev_timer_init(&s->wd_w, wd_cb, iv, iv);
	ev_timer_start(l, &s->wd_w);
	ev_init(&s->pace_w, pace_cb);
	ev_timer_init(&s->prog_w, prog_cb, s->interval_ms / 1000.0,
		      s->interval_ms / 1000.0);
	if (s->interval_ms && s->owner && s->owner->progress)
		ev_timer_start(l, &s->prog_w);
	s->wd_last = ev_now(l);
	s->wd_bytes = s->bytes;
	s->wd_idle = 0;
	s->wd_state = 1;
}

/* -T a: sleep until the fd is ready for what the machine waits for. */
static void watch_fd(struct evr_sess *s, enum evr_sess_want w)
{
	struct ev_loop *l = s->loop->ev;
	int events = w == EVR_WANT_READ ? EV_READ : EV_WRITE;

	if (ev_is_active(&s->io_w) &&
	    (s->io_w.events & (EV_READ | EV_WRITE)) == events &&
	    s->io_w.fd == s->conn->fd)
		return;
	ev_io_stop(l, &s->io_w);
	ev_io_set(&s->io_w, s->conn->fd, events);
	ev_io_start(l, &s->io_w);
}

/*
 * --mps: until the next iteration's time.  A loop sleeps in epoll_wait
 * for whole milliseconds (libev rounds its timeout up) and wakes late
 * by the kernel's timer slack and a wake-up: a wait longer than
 * EVR_PACE_SPIN_NS sleeps until that much is left, and the rest goes by
 * in the loop's turns (the idle watcher: the loop does not sleep), so
 * that a request leaves within a loop pass of its time.  A request sent
 * late would count its lateness as latency.
 */
#define EVR_PACE_SPIN_NS 2000000u

static void pace_wait(struct evr_sess *s)
{
	struct ev_loop *l = s->loop->ev;
	uint64_t at = evr__sess_pace_at(s), now = evr_now_ns();

	ev_io_stop(l, &s->io_w);
	ev_timer_stop(l, &s->pace_w);
	if (at > now + EVR_PACE_SPIN_NS) {
		idle_off(s);
		ev_timer_set(&s->pace_w,
			     (double)(at - now - EVR_PACE_SPIN_NS) / 1e9, 0.);
		ev_timer_start(l, &s->pace_w);
		return;
	}
	idle_on(s);
}

/* The watchers for what a live machine waits for (w: not NONE, DETACH,
 * or a blocking call's timeout). */
static void wait_for(struct evr_sess *s, enum evr_sess_want w)
{
	s->held = w == EVR_WANT_GATE;
	if (w == EVR_WANT_CONNECT)
		return;
	if (w == EVR_WANT_PACE) {
		pace_wait(s);
		return;
	}
	if (w == EVR_WANT_GATE) {
		/* nothing until its owner opens the gate (EVR_SE_OPEN);
		 * the watchdog stays, and lets it be (held) */
		ev_io_stop(s->loop->ev, &s->io_w);
		idle_off(s);
		return;
	}
	if (w == EVR_WANT_YIELD ||
	    (s->io != EVR_IO_ASYNC && !(s->conn && s->conn->sleeping))) {
		ev_io_stop(s->loop->ev, &s->io_w);
		idle_on(s);
		return;
	}
	idle_off(s);
	if (s->conn->fd < 0) {
		/* no fd of its own (RDMA: the device's channel is the
		 * transport's): it sleeps until the transport wakes it */
		ev_io_stop(s->loop->ev, &s->io_w);
		return;
	}
	watch_fd(s, w);
}

static void apply(struct evr_sess *s, enum evr_sess_want w)
{
	int at_gate;

	if (w == EVR_WANT_NONE || w == EVR_WANT_DETACH) {
		finish(s, w);
		return;
	}
	if (!s->wd_state)
		watchers_init(s);
	if (s->io == EVR_IO_BLOCK && evr__sess_waiting(w)) {
		/* A blocking call returned EAGAIN: its SO_RCVTIMEO or
		 * SO_SNDTIMEO (the stall timeout) ran out. */
		apply(s, evr__sess_event(s, EVR_SE_STALL, 0));
		return;
	}
	/* just come to its gate (not held yet: a wake-up there is not) */
	at_gate = w == EVR_WANT_GATE && !s->held;
	wait_for(s, w);
	/* last, with the watchers set: the owner may open every gate from
	 * here, this one's too, and s may be gone after */
	if (at_gate && s->owner && s->owner->at_gate)
		s->owner->at_gate(s);
}

/*
 * How a session waits between two calls, by I/O mode: -T b blocks in the
 * call (its SO_RCVTIMEO/SO_SNDTIMEO is the stall timeout); -T n retries
 * at once, as upstream does (spin()); -T a polls a while, then arms its
 * channel and sleeps (poll_async(), below; poll.c estimates how long).
 *
 * Alone on its loop, a spinning session retries in place for up to
 * EVR_SCHED_SPIN_BUDGET_NS rather than going back to the loop after each
 * EAGAIN: a loop pass is a system call (clock, epoll_wait, timers), and on a loaded
 * host each one lets the scheduler switch the spinner out, which
 * upstream's spin, making no system call, never risks.  The loop's
 * timers and other fds wait at most that long.  A budget of a round trip
 * or two made a loop pass that often over an emulated device and cost
 * the difference.  Figures: doc/benchmarks.md.
 *
 * Shared with other connections (sched.h: a client's -c N, a
 * server's clients, a daemon's probes beside its responders), a session
 * neither spins nor polls in place, which would hold up the others whose
 * data has come: the call of its turn is its try, and it hands the loop
 * on (EVR_WANT_YIELD: its idle watcher, at the top priority, brings it
 * back next pass).  libev runs every pending watcher once a pass, so each
 * connection gets one turn a pass, and a turn moves at most a slice
 * (evr__sched_slice_over(): run() in session.c): round robin.
 * While anyone waits that way the loop does not sleep, and its
 * epoll_wait, not a try per fd, finds the sockets that are ready
 * (HACKING.md, "the scheduler").
 *
 * Spinning and polling alike ask the transport first whether anything
 * came (evr_conn_ops.ready: RDMA polls the CQ) and call again only then
 * (evr__sess_try_again()): a try that finds nothing skips the session's
 * step, the credit and cork checks, and costs a CQ poll.
 */
/* -T n on a host whose CPUs others want (the CPU watch, sched.h): the
 * session sleeps until its fd, or its transport, wakes it.  A completion
 * channel is armed by a call made sleeping (evr_conn.sleeping): the
 * first wait that sleeps calls once more. */
static enum evr_sess_want spin_sleep(struct evr_sess *s, enum evr_sess_want w)
{
	if (s->conn->sleeping)
		return w;
	s->conn->sleeping = 1;
	s->spin_sleeps++;
	if (evr__tracing(s->loop))
		evr__trace(s->loop, "conn %u: spin: the CPU is wanted (%lu "
			   "contended windows): -T n waits sleep for the next "
			   "%" PRIu64 " ms", s->id, s->seat.sc->cw.contended,
			   (s->seat.sc->cw.sleep_until - evr_now_ns()) / 1000000);
	return s->conn->fd < 0 ? evr__sess_event(s, EVR_SE_READY, 0) : w;
}

/* -T n: retry at once.  Alone, in place, for up to
 * EVR_SCHED_SPIN_BUDGET_NS; shared, the call of its turn was the try:
 * the loop's turn next.  Either way, while the CPU watch finds no
 * contention; then it sleeps (spin_sleep()). */
static enum evr_sess_want spin(struct evr_sess *s, enum evr_sess_want w)
{
	uint64_t t0 = 0;
	unsigned n, round;

	if (s->io == EVR_IO_ASYNC)
		return poll_async(s, w);
	if (s->io != EVR_IO_NONBLOCK || !evr__sess_waiting(w))
		return w;
	if (evr__sched_spin_sleeps(&s->seat))
		return spin_sleep(s, w);
	s->conn->sleeping = 0;
	for (round = 0; evr__sess_waiting(w) &&
			evr__sched_spin_on(&s->seat, round, &t0); round++)
		for (n = 0; n < EVR_SCHED_SPIN_TRIES && evr__sess_waiting(w);
		     n++)
			w = evr__sess_try_again(s, w);
	if (!evr__sess_waiting(w))
		return w;
	if (evr__sched_shared(&s->seat))
		evr__sched_spin_yield(&s->seat);
	return evr__sched_spin_sleeps(&s->seat) ? spin_sleep(s, w) : w;
}

void evr__sess_drive(struct evr_sess *s, enum evr_sess_event ev, int arg)
{
	/* in play before its first step: a wait of that step already
	 * counts the others in (it never polls in place beside them) */
	if (!evr__sched_in_play(&s->seat) &&
	    evr__sched_join(&s->seat, s->loop)) {
		ev = EVR_SE_FAIL;
		arg = -ENOMEM;
	}
	apply(s, spin(s, evr__sess_event(s, ev, arg)));
}

static void sess_wake(struct evr_conn *c)
{
	struct evr_sess *s = c->wake_ud;

	/* The transport has news the fd may not show (an RDMA CM event):
	 * let the machine look, as if the fd were ready. */
	if (s->conn == c && !evr__sess_terminal(s))
		evr__sess_drive(s, EVR_SE_READY, 0);
}

void evr__sess_attach(struct evr_sess *s, struct evr_conn *c)
{
	s->conn = c;
	if (c) {
		c->wake = sess_wake;
		c->wake_ud = s;
	}
}

void evr__sess_fini(struct evr_sess *s)
{
	if (s->loop && (s->wd_state || evr__sched_in_play(&s->seat)))
		evr__sess_stop_watchers(s);
	if (s->conn) {
		s->conn->wake = NULL;
		s->conn->ops->close(s->conn);
		s->conn = NULL;
	}
	evr__sess_release(s);
}

/* ---- -T a: the poll (the estimator is poll.c's) ---- */

#define POLL_TRIES 4

/*
 * The CPU offer (evr__sched_offer_cpu()): a poll is for a CPU nobody else
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
 * the loop, once every EVR_POLL_OFFER_NS (evr_sched.offered_ns), not by
 * every connection; an offer that finds the CPU taken backs off every
 * connection of the loop (evr_sched.lost_cpu), not only the one whose
 * turn made it: the others polling on kept the loop off the sleep that
 * lets the peer on the same CPU run, and four connections did less than
 * one on a busy host (0.73-1.04 x; 1.15-1.57 x since).
 *
 */

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

/* The slicing: alone, a session that has polled a slice since the call
 * (the poll's length, at most EVR_POLL_SLICE_NS: a ping-pong that finds
 * every reply, or a long poll still waiting) gives the loop its turn
 * (timers, fds), then polls on from where it was.  Shared, every try is
 * a turn's (poll_async() yields after the CPU offer). */
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

/* A poll in hand (poll_async()), and how it ended. */
struct poll_run {
	uint64_t entry, start, budget;
	uint64_t offered;           /* its last CPU offer, alone */
	unsigned tries;             /* calls a round (0: shared, the turn's
				     * call was the try) */
	int shared;
	int unarmed;                /* the channel is not armed */
};

enum poll_exit {
	PX_ON,                      /* it polls on */
	PX_SLEEP,                   /* done, or nothing came: it sleeps */
	PX_YIELD,                   /* the loop's turn, then it polls on */
	PX_PREEMPTED,               /* another task wanted the CPU */
};

/* Nothing came yet (at now): whether the poll goes on. */
static enum poll_exit poll_check(struct evr_sess *s, struct poll_run *r,
				 uint64_t now)
{
	if (now - r->start >= r->budget) {
		/* nothing came: it sleeps, and backs off if that keeps
		 * happening */
		s->pe.n_ran_out++;
		evr__poll_result(&s->pe, EVR_POLL_RAN_OUT);
		return PX_SLEEP;
	}
	if (poll_slice(r->shared, now - r->entry, r->budget))
		return PX_YIELD;
	if (evr__sched_offer_cpu(&s->seat, s->pe.offer_ns, now, r->start,
				 &r->offered, &s->pe.taken))
		return PX_PREEMPTED;
	/* shared: the others' turns, then this one's */
	return r->shared ? PX_YIELD : PX_ON;
}

/* Poll for the budget (tries, then a look at the clock, a round). */
static enum poll_exit poll_loop(struct evr_sess *s, struct poll_run *r,
				enum evr_sess_want *wp)
{
	enum evr_sess_want w = *wp;
	enum poll_exit x = PX_SLEEP;
	uint64_t now;
	unsigned n;

	while (r->budget) {
		if (r->tries)
			r->unarmed = 1;
		for (n = 0; n < r->tries && evr__sess_waiting(w); n++)
			w = evr__sess_try_again(s, w);
		now = evr_now_ns();
		if (s->bytes != s->pe.bytes) {
			r->start = now;
			r->budget = poll_found(s, now);
		}
		x = evr__sess_waiting(w) ? poll_check(s, r, now) : PX_SLEEP;
		if (x != PX_ON)
			break;
	}
	*wp = w;
	return x == PX_ON ? PX_SLEEP : x;
}

static enum evr_sess_want poll_async(struct evr_sess *s, enum evr_sess_want w)
{
	struct poll_run r = { .entry = evr_now_ns() };
	int found = poll_resume(s, r.entry, &r.start);

	if (!evr__sess_waiting(w)) {
		/* done, or its turn again soon: whatever comes next (a close
		 * that waits for completions) arms as it needs */
		if (s->conn)
			s->conn->polling = 0;
		s->pe.t0 = 0;
		return w;
	}
	r.shared = evr__sched_shared(&s->seat);
	/* whether the call that returned w left the channel unarmed
	 * (poll_intent() in sessdrive.c) */
	r.unarmed = s->conn->polling;
	if (evr__sched_lost_since(&s->seat)) {
		s->pe.n_preempted++;
		evr__poll_result(&s->pe, EVR_POLL_PREEMPTED);
	}
	r.budget = poll_estimate(s, r.entry, found);
	s->conn->polling = r.budget > 0;
	/* shared, the call of this turn was the try; the offers are the
	 * loop's, not each connection's */
	r.tries = r.shared ? 0 : POLL_TRIES;
	switch (poll_loop(s, &r, &w)) {
	case PX_PREEMPTED:
		/* it sleeps (the peer, or whoever wanted the CPU, runs),
		 * and backs off */
		s->pe.n_preempted++;
		evr__poll_result(&s->pe, EVR_POLL_PREEMPTED);
		evr__sched_lost_cpu(&s->seat);
		break;
	case PX_YIELD:
		/* not armed: the idle watcher brings it back next turn */
		s->pe.n_yields++;
		s->pe.cont_t0 = r.start;
		s->conn->polling = 0;
		return EVR_WANT_YIELD;
	default:
		break;
	}
	return poll_sleep(s, w, r.unarmed);
}
