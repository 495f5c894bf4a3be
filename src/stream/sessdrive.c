/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session's driver (session.h): the loop watchers that feed the pure
 * machine of session.c (fd readiness, the idle watcher of a session that
 * retries or yields, the stall watchdog, progress reports), apply() that
 * turns what the machine waits for into them, and spin(), how a session
 * waits in place between two calls.
 */
#include "config.h"

#include <stdint.h>

#include "session.h"

static void apply(struct evr_sess *s, enum evr_sess_want w);
static enum evr_sess_want spin(struct evr_sess *s, enum evr_sess_want w);

/* -T a: a session that will poll if its call finds nothing makes that
 * call without arming its completion channel (evr__poll_async() arms it
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

	if (s->bytes != s->wd_bytes || s->held) {
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
	if (s->wd_state)
		ev_timer_stop(l, &s->prog_w);
	s->wd_state = 0;
	if (s->in_play)
		evr__loop_play(s->loop, 0);
	s->in_play = 0;
}

static void apply(struct evr_sess *s, enum evr_sess_want w)
{
	struct ev_loop *l = s->loop->ev;
	int events;

	if (w == EVR_WANT_NONE || w == EVR_WANT_DETACH) {
		evr__sess_stop_watchers(s);
		if (w == EVR_WANT_DETACH && s->owner && s->owner->detached)
			s->owner->detached(s);
		else if (w == EVR_WANT_NONE && s->owner && s->owner->finished)
			s->owner->finished(s);
		return;
	}
	if (!s->wd_state) {
		ev_tstamp iv = s->stall_ms / 4000.0;

		ev_init(&s->io_w, io_cb);
		ev_idle_init(&s->idle_w, idle_cb);
		/* At the top priority a machine that yielded runs in the
		 * next loop turn whatever else is pending; at the default
		 * one it would wait for a turn with nothing else to do,
		 * which never comes with thousands of busy connections. */
		ev_set_priority(&s->idle_w, EV_MAXPRI);
		ev_timer_init(&s->wd_w, wd_cb, iv, iv);
		ev_timer_start(l, &s->wd_w);
		ev_timer_init(&s->prog_w, prog_cb, s->interval_ms / 1000.0,
			      s->interval_ms / 1000.0);
		if (s->interval_ms && s->owner && s->owner->progress)
			ev_timer_start(l, &s->prog_w);
		s->wd_last = ev_now(l);
		s->wd_bytes = s->bytes;
		s->wd_idle = 0;
		s->wd_state = 1;
	}
	if (w == EVR_WANT_CONNECT)
		return;
	if ((w == EVR_WANT_READ || w == EVR_WANT_WRITE) &&
	    s->io == EVR_IO_BLOCK) {
		/* A blocking call returned EAGAIN: its SO_RCVTIMEO or
		 * SO_SNDTIMEO (the stall timeout) ran out. */
		apply(s, evr__sess_event(s, EVR_SE_STALL, 0));
		return;
	}
	if (w == EVR_WANT_YIELD || s->io != EVR_IO_ASYNC) {
		ev_io_stop(l, &s->io_w);
		idle_on(s);
		return;
	}
	idle_off(s);
	if (s->conn->fd < 0) {
		/* no fd of its own (RDMA: the device's channel is the
		 * transport's): it sleeps until the transport wakes it */
		ev_io_stop(l, &s->io_w);
		return;
	}
	events = w == EVR_WANT_READ ? EV_READ : EV_WRITE;
	if (!ev_is_active(&s->io_w) ||
	    (s->io_w.events & (EV_READ | EV_WRITE)) != events ||
	    s->io_w.fd != s->conn->fd) {
		ev_io_stop(l, &s->io_w);
		ev_io_set(&s->io_w, s->conn->fd, events);
		ev_io_start(l, &s->io_w);
	}
}

/*
 * How a session waits between two calls, by I/O mode: -T b blocks in the
 * call (its SO_RCVTIMEO/SO_SNDTIMEO is the stall timeout); -T n retries
 * at once, as upstream does (spin()); -T a polls a while, then arms its
 * channel and sleeps (evr__poll_async(), poll.c).
 *
 * Alone on its loop, a spinning session retries in place for up to
 * SPIN_BUDGET_NS rather than going back to the loop after each EAGAIN: a
 * loop pass is a system call (clock, epoll_wait, timers), and on a loaded
 * host each one lets the scheduler switch the spinner out, which
 * upstream's spin, making no system call, never risks.  The loop's
 * timers and other fds wait at most that long.  A budget of a round trip
 * or two made a loop pass that often over an emulated device and cost
 * the difference.  Figures: doc/benchmarks.md.
 *
 * Shared with other connections (evr__loop_shared(): a client's -c N, a
 * server's clients, a daemon's probes beside its responders), a session
 * neither spins nor polls in place, which would hold up the others whose
 * data has come: the call of its turn is its try, and it hands the loop
 * on (EVR_WANT_YIELD: its idle watcher, at the top priority, brings it
 * back next pass).  libev runs every pending watcher once a pass, so each
 * connection gets one turn a pass, and a turn moves at most a slice
 * (SLICE_MSGS transfers, SLICE_BYTES: run() in session.c): round robin.
 * While anyone waits that way the loop does not sleep, and its
 * epoll_wait, not a try per fd, finds the sockets that are ready
 * (HACKING.md, "the scheduler").
 *
 * Spinning and polling alike ask the transport first whether anything
 * came (evr_conn_ops.ready: RDMA polls the CQ) and call again only then
 * (evr__sess_try_again()): a try that finds nothing skips the session's
 * step, the credit and cork checks, and costs a CQ poll.
 */
#ifndef SPIN_TRIES
#define SPIN_TRIES 64
#endif
#ifndef SPIN_BUDGET_NS
#define SPIN_BUDGET_NS 1000000u
#endif

/* -T n: retry at once.  Alone, in place, for up to SPIN_BUDGET_NS;
 * shared, the call of its turn was the try: the loop's turn next. */
static enum evr_sess_want spin(struct evr_sess *s, enum evr_sess_want w)
{
	uint64_t t0 = 0, now;
	unsigned n;

	if (s->io == EVR_IO_ASYNC)
		return evr__poll_async(s, w);
	if (s->io != EVR_IO_NONBLOCK || evr__loop_shared(s->loop))
		return w;
	for (;;) {
		for (n = 0; n < SPIN_TRIES && evr__sess_waiting(w); n++)
			w = evr__sess_try_again(s, w);
		if (!evr__sess_waiting(w) || evr__loop_shared(s->loop))
			return w;
		now = evr_now_ns();
		if (!t0)
			t0 = now;
		else if (now - t0 >= SPIN_BUDGET_NS)
			return w;
	}
}

void evr__sess_drive(struct evr_sess *s, enum evr_sess_event ev, int arg)
{
	/* in play before its first step: a wait of that step already
	 * counts the others in (it never polls in place beside them) */
	if (!s->in_play) {
		s->in_play = 1;
		evr__loop_play(s->loop, 1);
	}
	apply(s, spin(s, evr__sess_event(s, ev, arg)));
}
