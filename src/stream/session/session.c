/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One connection's test as a pure state machine (session.h): an event in
 * (evr__sess_event()), what it waits for out, the syncs and transfers of
 * each test, and its results; the negotiation before the first test
 * (HELLO, the plan, the reply) is negotiate.c's.  It touches no watcher:
 * sessdrive.c drives it on the loop, poll.c is -T a's wait.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../loop/bytes.h"
#include "negotiate.h"
#include "session.h"

/* A slice of work before the machine lets other watchers run. */

static const char *const state_names[] = EVR__STATE_NAMES(EVR_SESS_STATES);

static int ensure_buf(struct evr_sess *s, size_t size);

const char *evr__sess_state_name(enum evr_sess_state s)
{
	return EVR__NAME_AT(state_names, s);
}

static int terminal(const struct evr_sess *s)
{
	return evr__sess_terminal(s);
}

/* --trace: a transition (out of the data path's way: set_state() is on
 * every transfer's, inlined). */
static EVR__COLD void trace_state(const struct evr_sess *s,
				  enum evr_sess_state st)
{
	evr__trace(s->loop, "conn %u: %s -> %s", s->id,
		   evr__sess_state_name(s->state), evr__sess_state_name(st));
	if (s->io == EVR_IO_ASYNC && (st == EVR_SS_DONE || st == EVR_SS_FAILED))
		evr__trace(s->loop, "conn %u: poll: %" PRIu64 " found, %" PRIu64
			   " ran out, %" PRIu64 " lost the CPU, %" PRIu64
			   " slept at once, %" PRIu64 " yields, %" PRIu64
			   " usec at the end", s->id, s->pe.n_found,
			   s->pe.n_ran_out, s->pe.n_preempted,
			   s->pe.n_unpolled, s->pe.n_yields,
			   s->pe.budget_ns / 1000);
}

static inline void set_state(struct evr_sess *s, enum evr_sess_state st)
{
	if (s->state != st && s->loop && evr__tracing(s->loop))
		trace_state(s, st);
	s->state = st;
}

static EVR__HOT_INLINE void op(struct evr_sess *s, enum evr_sess_state st,
				   int send, uint8_t *buf, size_t len)
{
	set_state(s, st);
	s->op_kind = send ? EVR_OP_SEND : EVR_OP_RECV;
	s->op_buf = buf;
	s->op_len = len;
	s->op_off = 0;
	if (s->hold == EVR_HOLD_CAPTURE)
		s->hold = EVR_HOLD_ON;
}

/* The wall clock, for the hold stamps: the kernel's receive timestamps
 * are CLOCK_REALTIME. */
static uint64_t rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* When the bytes the last recv returned arrived: the kernel's stamp when
 * it gave one within [lo, now], else now (the stamps are off, the
 * transport has none, or the clock stepped). */
static uint64_t arrival_rt(const struct evr_sess *s, uint64_t lo,
			   uint64_t now, int *kernel)
{
	uint64_t k = s->conn ? s->conn->rx_rt_ns : 0;

	*kernel = k && k >= lo && k <= now;
	return *kernel ? k : now;
}

static const struct evr_test *cur(const struct evr_sess *s)
{
	return &s->plan.tests[s->ti < s->plan.ntests ? s->ti : 0];
}

static enum evr_phase phase_of(enum evr_sess_state st)
{
	switch (st) {
	case EVR_SS_CONNECTING:
		return EVR_PH_CONNECT;
	case EVR_SS_SYNC_SEND:
	case EVR_SS_SYNC_RECV:
		return EVR_PH_SYNC;
	case EVR_SS_DATA_SEND:
	case EVR_SS_PACE:       /* --mps: the next request waits its time */
		return EVR_PH_SEND;
	case EVR_SS_DATA_RECV:
		return EVR_PH_RECV;
	case EVR_SS_DRAIN:
	case EVR_SS_DONE:
		return EVR_PH_CLOSE;
	default:
		return EVR_PH_NEGOTIATE;
	}
}

static enum evr_sess_want fail(struct evr_sess *s, int err, int detail,
			       const char *where)
{
	struct evr_failure *f = &s->fail;
	const struct evr_test *t = cur(s);
	int in_test = s->state == EVR_SS_SYNC_SEND ||
		      s->state == EVR_SS_SYNC_RECV ||
		      s->state == EVR_SS_DATA_SEND ||
		      s->state == EVR_SS_DATA_RECV || s->state == EVR_SS_PACE;

	memset(f, 0, sizeof(*f));
	f->conn_id = s->id;
	f->err = err;
	f->detail = detail;
	f->phase = phase_of(s->state);
	f->where = where;
	if (in_test && s->plan.ntests) {
		snprintf(f->test, sizeof(f->test), "%s", t->name);
		f->test_index = s->ti;
		f->test_total = s->plan.ntests;
		f->iters_done = s->iter;
		f->iters_total = t->iters;
		f->xfers_done = s->xfer;
		f->xfers_total = t->count;
	}
	f->bytes_done = s->bytes;
	f->negotiated = evr__sess_has(s, EVR_SF_NEGOTIATED);
	if (s->conn) {
		snprintf(f->peer, sizeof(f->peer), "%s", s->conn->peer);
		snprintf(f->device, sizeof(f->device), "%s", s->conn->dev);
		f->port = s->conn->port;
		if (err == -EVR_E_DEVGONE || err == -EVR_E_PORTDOWN)
			f->detail = s->conn->dev_detail;
		else if (err == -EIO)
			f->detail = s->conn->eio_detail;
	}
	set_state(s, EVR_SS_FAILED);
	return EVR_WANT_NONE;
}

static void sync_send(struct evr_sess *s)
{
	if (evr__sess_has(s, EVR_SF_VERIFY))
		evr__pattern_fill(&s->spat, s->buf, EVR_SYNC_LEN);
	op(s, EVR_SS_SYNC_SEND, 1, s->buf, EVR_SYNC_LEN);
}

static void sync_recv(struct evr_sess *s)
{
	op(s, EVR_SS_SYNC_RECV, 0, s->buf, EVR_SYNC_LEN);
}

/* Client: a piece of an echo is only counted unless it verifies (its
 * buffer keeps what it sent, which is what a faithful echo holds): the
 * copy out of an RDMA ring is saved (a server reads what it echoes and,
 * -D, the iteration mark) ... but the stamp of an echo's last transfer
 * is read. */
static EVR__HOT_INLINE void echo_piece(struct evr_sess *s)
{
	if (s->hold != EVR_HOLD_OFF && !s->xoff &&
	    s->xfer + 1 == cur(s)->count)
		s->hold = EVR_HOLD_CAPTURE;
	else if (!evr__sess_has(s, EVR_SF_VERIFY) && s->conn &&
		 s->conn->can_skip)
		s->op_kind = EVR_OP_SKIP;
}

/* The next piece of the current transfer, from xoff on. */
static EVR__HOT_INLINE void data_piece(struct evr_sess *s,
					   enum evr_sess_state st)
{
	size_t n = evr__sess_xfer_buf(s, cur(s)->size - s->xoff);

	if (st == EVR_SS_DATA_SEND && evr__sess_has(s, EVR_SF_VERIFY))
		evr__pattern_fill(&s->spat, s->buf, n);
	op(s, st, st == EVR_SS_DATA_SEND, s->buf, n);
	if (st == EVR_SS_DATA_RECV && s->client)
		echo_piece(s);
}

/* Server: the request's hold, over the first bytes of its echo's last
 * transfer (wire.h, "hold stamps"). */
static void stamp_hold(struct evr_sess *s)
{
	uint64_t now = rt_ns();

	evr__put64(s->buf, now > s->rx_rt ? now - s->rx_rt : 0);
	/* the next request cannot arrive before this echo leaves */
	s->rx_floor_rt = now;
}

/* Client: an iteration's round trip is over: its parts.  All three on
 * the wall clock, read once here: the round trip of the percentiles is
 * the monotonic clock's, read a moment before, and a preemption between
 * the two reads would not be in it. */
static void split_iteration(struct evr_sess *s)
{
	uint64_t now = rt_ns(), arr, hold = evr__get64(s->hold_b);
	int kernel;

	arr = arrival_rt(s, s->it_rt0, now, &kernel);
	evr__split_add(s->split, now - s->it_rt0, hold, kernel, now - arr);
	s->it_rt0 = now;
}

/* Client, -D: the mark of the iteration it begins, in its first byte.
 * Decided at the start of each iteration (it_t0 is "now"): the test ends
 * with the first iteration begun past the deadline, or at the plan's
 * cap.  A server that takes the END mark: the test ends at the first
 * iteration boundary past the deadline, and an iteration longer than the
 * duration runs once (a LAST mark runs the iteration it starts: with
 * -D 0.2 on Soft-RoCE, two 1m_bw iterations of 8.5 s each). */
static void mark_iteration(struct evr_sess *s)
{
	/* paced (--mps), it_t0 is the schedule's time: a run behind its
	 * schedule ended by that would go on long past the duration (at
	 * 10 a second, 10 iterations of a second each for -D 1) */
	uint64_t at = s->mps ? evr_now_ns() : s->it_t0;
	int past = at - s->t0 >= s->dur_ns;
	int end_ok = evr__sess_has(s, EVR_SF_END);

	if (end_ok && past && s->iter)
		s->mark = EVR_IT_END;
	else if (s->iter + 1 >= cur(s)->iters || (past && !end_ok))
		s->mark = EVR_IT_LAST;
	else
		s->mark = EVR_IT_MORE;
	s->buf[0] = s->mark == EVR_IT_END ? EVR_ITER_END :
		    s->mark == EVR_IT_LAST ? EVR_ITER_LAST : EVR_ITER_MORE;
}

static EVR__HOT_INLINE void data_send(struct evr_sess *s)
{
	s->xoff = 0;
	data_piece(s, EVR_SS_DATA_SEND);
	/* the stamp is written just before the send (run()): what the
	 * server does between now and then is its hold too */
	if (!s->client && s->hold != EVR_HOLD_OFF)
		s->hold = s->xfer + 1 == cur(s)->count ? EVR_HOLD_STAMP :
							 EVR_HOLD_ON;
	if (evr__sess_has(s, EVR_SF_DURATION) && s->client && s->xfer == 0)
		mark_iteration(s);
}

static EVR__HOT_INLINE void data_recv(struct evr_sess *s)
{
	s->xoff = 0;
	data_piece(s, EVR_SS_DATA_RECV);
}

static void begin_test(struct evr_sess *s)
{
	s->iter = 0;
	s->xfer = 0;
	if (s->client)
		sync_send(s);
	else
		sync_recv(s);
}

/* After the sync: the clock starts and the client sends first.  The
 * buffer grows here, to this test's size (a server's: at most its
 * chunk): a connection holds no more than the test in hand needs (many
 * connections, -c). */
static int test_holds(const struct evr_sess *s)
{
	const struct evr_test *t = cur(s);

	/* a test the plan marked (--split), whose echoes are not a
	 * pattern's and have room for the stamp; a client that has a
	 * server that stamps, and somewhere to keep the split */
	if (!(t->flags & EVR_TEST_F_HOLD) || evr__sess_has(s, EVR_SF_VERIFY) ||
	    t->size < EVR_HOLD_LEN)
		return 0;
	return !s->client || (evr__sess_has(s, EVR_SF_HOLD) && s->split);
}

static enum evr_sess_want start_data(struct evr_sess *s)
{
	int err = ensure_buf(s, evr__sess_xfer_buf(s, cur(s)->size));

	if (err == -ENOBUFS)
		return fail(s, err, EVR_REJECT_BUDGET, "buffer");
	if (err)
		return fail(s, err, 0, "malloc");
	s->iter = 0;
	s->xfer = 0;
	s->mark = EVR_IT_MORE;
	s->t0 = evr_now_ns();
	s->it_t0 = s->t0;
	s->late = 0;
	s->late_max_ns = 0;
	s->spin_sleeps0 = s->spin_sleeps;
	s->tphase = EVR_TP_DATA;
	s->test_bytes0 = s->prog_bytes = s->bytes;
	s->prog_ns = s->t0;
	if (evr__sess_has(s, EVR_SF_PERCENTILES))
		evr__lat_reset(&s->lat);
	s->hold = test_holds(s) ? EVR_HOLD_ON : EVR_HOLD_OFF;
	if (s->hold != EVR_HOLD_OFF) {
		s->rx_floor_rt = s->it_rt0 = rt_ns();
		if (s->client)
			evr__split_reset(s->split);
	}
	if (s->client)
		data_send(s);
	else
		data_recv(s);
	return EVR_WANT_READ;
}

static EVR__HOT_INLINE int check_pattern(struct evr_sess *s,
					 const uint8_t *b, size_t len)
{
	uint64_t bad = 0;

	if (!evr__sess_has(s, EVR_SF_VERIFY) ||
	    !evr__pattern_check(&s->rpat, b, len, &bad))
		return 0;
	fail(s, -EVR_E_VERIFY, (int)(bad > 0x7fffffff ? 0x7fffffff : bad),
	     "verify");
	s->fail.bytes_done = bad; /* the stream offset of the bad byte */
	return -1;
}

static enum evr_sess_want test_done(struct evr_sess *s)
{
	uint64_t ns = evr_now_ns() - s->t0;
	const struct evr_test *t = cur(s);
	struct evr_test done;

	s->tphase = EVR_TP_RESULT;
	if (evr__sess_has(s, EVR_SF_DURATION)) {
		/* the row shows the iterations actually run */
		done = *t;
		done.iters = s->iter;
		t = &done;
	}
	if (evr__sess_lat_valid(s))
		evr__lat_compute(&s->lat, &s->lat_res);
	if (evr__sess_split_valid(s))
		evr__split_compute(s->split);
	if (s->owner && s->owner->result)
		s->owner->result(s, t, ns);
	s->tphase = EVR_TP_NONE;
	s->hold = EVR_HOLD_OFF;
	if (++s->ti < s->plan.ntests) {
		begin_test(s);
		return EVR_WANT_YIELD;
	}
	if (s->owner && s->owner->plan_done)
		s->owner->plan_done(s);
	if (s->client) {
		s->conn->ops->shutdown(s->conn);
		set_state(s, EVR_SS_DONE);
		return EVR_WANT_NONE;
	}
	op(s, EVR_SS_DRAIN, 0, s->buf, s->bufsize);
	return EVR_WANT_YIELD;
}

static void uncharge(struct evr_sess *s)
{
	if (s->budget)
		s->budget->used -= s->charged;
	s->charged = 0;
}

/* Grow the buffer to size: -ENOMEM, or -ENOBUFS when the budget cannot
 * take it (the sync-sized buffer every machine starts with is charged
 * but never refused: the connection count bounds those). */
/* A buffer of size bytes in place of this machine's own would take its
 * server past its budget. */
static int over_budget(const struct evr_sess *s, size_t size)
{
	const struct evr_membudget *bg = s->budget;
	size_t others;

	if (!bg)
		return 0;
	others = bg->used - s->charged;
	return others > bg->max || size > bg->max - others;
}

static int ensure_buf(struct evr_sess *s, size_t size)
{
	struct evr_membudget *bg = s->budget;
	uint8_t *b;

	if (size < EVR_SYNC_LEN)
		size = EVR_SYNC_LEN;
	if (s->buf && s->bufsize >= size)
		return 0;
	if (size > EVR_SYNC_LEN && over_budget(s, size))
		return -ENOBUFS;
	b = calloc(1, size);
	if (!b)
		return -ENOMEM;
	if (!s->buf_ext)
		free(s->buf);
	uncharge(s);
	s->buf_ext = 0;
	s->buf = b;
	s->bufsize = size;
	s->charged = size;
	if (bg)
		bg->used += size;
	return 0;
}

/* Server: the client is known (negotiated, or upstream's first sync
 * came): the owner may take the connection elsewhere (-T f). */
static enum evr_sess_want decided(struct evr_sess *s)
{
	if (s->owner && s->owner->decided && s->owner->decided(s))
		return EVR_WANT_DETACH;
	return EVR_WANT_READ; /* go on */
}

/* Client: the parts' samples, once the server says it stamps, and the
 * kernel's arrival stamps. */
static int split_start(struct evr_sess *s)
{
	if (!s->split) {
		s->split = malloc(sizeof(*s->split));
		if (!s->split)
			return -ENOMEM;
		evr__split_init(s->split);
	}
	if (s->conn && s->conn->ops->rx_stamps)
		(void)s->conn->ops->rx_stamps(s->conn);
	return 0;
}

/* What the machine takes from the negotiation (negotiate.h). */
static int nego_take(struct evr_sess *s, const struct evr_nego_next *n)
{
	s->feat = (s->feat | n->feat_set) & ~n->feat_clear;
	if (n->take & EVR_NEGO_T_PLAN)
		s->plan = n->plan;
	if (n->take & EVR_NEGO_T_PATS) {
		s->spat.next = n->pat_send;
		s->rpat.next = n->pat_recv;
	}
	if (n->take & EVR_NEGO_T_PLACE) {
		s->conn_index = n->conn_index;
		s->conn_total = n->conn_total;
	}
	if (n->take & EVR_NEGO_T_START)
		s->ti = 0;
	if (n->take & EVR_NEGO_T_REWIND) {
		s->iter = 0;
		s->xfer = 0;
	}
	if (n->take & EVR_NEGO_T_SPLIT)
		return split_start(s);
	return 0;
}

/* What the negotiation said comes next (negotiate.h), done. */
static enum evr_sess_want nego_act(struct evr_sess *s,
				   const struct evr_nego_next *n)
{
	struct evr_nego_next after;
	int err;

	if (nego_take(s, n))
		return fail(s, -ENOMEM, 0, "malloc");
	switch (n->what) {
	case EVR_NEGO_OP:
		op(s, n->st, n->send, s->ctl + n->off, n->len);
		break;
	case EVR_NEGO_FAIL:
		return fail(s, n->err, n->detail, n->where);
	case EVR_NEGO_UPSTREAM:
		/* (never gated: negotiate.c refuses an upstream server to
		 * connections side by side) */
		set_state(s, EVR_SS_SYNC_RECV);
		return start_data(s);
	case EVR_NEGO_BEGIN:
		if (evr__sess_has(s, EVR_SF_GATE)) {
			/* the first test waits for its owner */
			set_state(s, EVR_SS_GATED);
			return EVR_WANT_GATE;
		}
		begin_test(s);
		break;
	case EVR_NEGO_BEGIN_DECIDED:
		begin_test(s);
		return decided(s);
	case EVR_NEGO_FIRST_SYNC:
		set_state(s, EVR_SS_SYNC_RECV);
		memcpy(s->buf, s->ctl, EVR_SYNC_LEN);
		if (check_pattern(s, s->buf, EVR_SYNC_LEN))
			return EVR_WANT_NONE;
		sync_send(s);
		return decided(s);
	case EVR_NEGO_PLAN:
		err = ensure_buf(s, evr__sess_xfer_buf(s, n->need));
		evr__nego_plan_take(s, err, &after);
		return nego_act(s, &after);
	}
	return EVR_WANT_READ; /* any value but NONE/YIELD: keep going */
}

static enum evr_sess_want negotiated_step(struct evr_sess *s)
{
	struct evr_nego_next n;

	evr__nego_done(s, &n);
	return nego_act(s, &n);
}

/* A sync moved (SYNC_SEND, SYNC_RECV): the client sends first, then
 * reads the server's; the data starts after both. */
static enum evr_sess_want sync_done(struct evr_sess *s)
{
	if (s->state == EVR_SS_SYNC_SEND) {
		if (!s->client)
			return start_data(s);
		sync_recv(s);
		return EVR_WANT_READ;
	}
	/* an evrdma server at its --max-conns, to a client that did not
	 * negotiate: the first sync says so */
	if (s->client && !evr__sess_has(s, EVR_SF_NEGOTIATED) && !s->ti &&
	    evr__is_busy(s->buf))
		return fail(s, -EVR_E_REJECTED, EVR_PLAN_E_CONNS,
			    "server busy");
	if (check_pattern(s, s->buf, EVR_SYNC_LEN))
		return EVR_WANT_NONE;
	if (s->client)
		return start_data(s);
	sync_send(s);
	return EVR_WANT_READ;
}

/* Server, -D: the mark is the first byte of the iteration: 0, or -1 (the
 * machine failed) for a byte that is no mark. */
static int read_mark(struct evr_sess *s)
{
	if (!evr__sess_has(s, EVR_SF_DURATION) || s->client || s->xfer ||
	    s->xoff)
		return 0;
	switch (s->buf[0]) {
	case EVR_ITER_MORE:
		return 0;
	case EVR_ITER_LAST:
		s->mark = EVR_IT_LAST;
		return 0;
	case EVR_ITER_END:
		s->mark = EVR_IT_END;   /* (we said we take it) */
		return 0;
	}
	fail(s, -EVR_E_PROTO, 0, "iteration mark");
	return -1;
}

/* Client, --mps: when iteration i is due. */
static uint64_t pace_due(const struct evr_sess *s, uint32_t i)
{
	return s->t0 + (uint64_t)i * 1000000000u / s->mps;
}

/* Client: the echo is in, the iteration's round trip over (its latency,
 * its split, the -D clock).  Returns 1 when the test is over too. */
static int client_iteration_over(struct evr_sess *s, const struct evr_test *t)
{
	if (evr__sess_has(s, EVR_SF_PERCENTILES | EVR_SF_DURATION) ||
	    s->hold != EVR_HOLD_OFF) {
		uint64_t now = evr_now_ns();

		if (evr__sess_has(s, EVR_SF_PERCENTILES))
			evr__lat_add(&s->lat, now - s->it_t0);
		if (s->hold != EVR_HOLD_OFF)
			split_iteration(s);
		s->it_t0 = s->mps ? pace_due(s, s->iter + 1) : now;
	}
	return ++s->iter >= t->iters || s->mark == EVR_IT_LAST;
}

/* Client, --mps: the next iteration goes at its time (it_t0), not when
 * the last one's echo is in.  One whose time came while the last was
 * still out goes at once, late, and its round trip counts from its time
 * all the same: a stall of the peer shows in full in every round trip
 * it held up, not as one slow sample (coordinated omission). */
static enum evr_sess_want pace(struct evr_sess *s)
{
	uint64_t now = evr_now_ns();

	if (now < s->it_t0) {
		set_state(s, EVR_SS_PACE);
		return EVR_WANT_PACE;
	}
	if (s->state != EVR_SS_PACE) {
		s->late++;
		if (now - s->it_t0 > s->late_max_ns)
			s->late_max_ns = now - s->it_t0;
	}
	data_send(s);
	return EVR_WANT_READ;
}

/* A piece of a transfer was sent: the rest of it, the next transfer, or
 * the turn round (a server's iteration may end the test here). */
static enum evr_sess_want data_sent(struct evr_sess *s,
				    const struct evr_test *t)
{
	s->xoff += (uint32_t)s->op_len;
	if (s->xoff < t->size) {
		data_piece(s, EVR_SS_DATA_SEND);
		return EVR_WANT_READ;
	}
	if (s->mark == EVR_IT_END)
		return test_done(s); /* the END transfer: no echo */
	if (++s->xfer < t->count) {
		data_send(s);
		return EVR_WANT_READ;
	}
	s->xfer = 0;
	if (!s->client && (++s->iter >= t->iters || s->mark == EVR_IT_LAST))
		return test_done(s);
	data_recv(s);
	return EVR_WANT_READ;
}

/* A piece of a transfer came: checked, then the rest of it, the next
 * transfer, or the turn round (a client's iteration may end the test
 * here). */
static enum evr_sess_want data_received(struct evr_sess *s,
					const struct evr_test *t)
{
	if (check_pattern(s, s->buf, s->op_len) || read_mark(s))
		return EVR_WANT_NONE;
	s->xoff += (uint32_t)s->op_len;
	if (s->xoff < t->size) {
		data_piece(s, EVR_SS_DATA_RECV);
		return EVR_WANT_READ;
	}
	if (s->mark == EVR_IT_END)
		return test_done(s); /* the END transfer: read, no echo */
	if (++s->xfer < t->count) {
		data_recv(s);
		return EVR_WANT_READ;
	}
	s->xfer = 0;
	if (!s->client && s->hold != EVR_HOLD_OFF) {
		int kernel;

		s->rx_rt = arrival_rt(s, s->rx_floor_rt, rt_ns(), &kernel);
	}
	if (s->client && client_iteration_over(s, t))
		return test_done(s);
	if (s->client && s->mps)
		return pace(s);
	data_send(s);
	return EVR_WANT_READ;
}

/* The current operation has moved all its bytes: decide what comes next
 * (any value but NONE/YIELD: keep going). */
static enum evr_sess_want op_done(struct evr_sess *s)
{
	switch (s->state) {
	case EVR_SS_HELLO_SEND:
	case EVR_SS_HELLO_RECV:
	case EVR_SS_PLAN_SEND:
	case EVR_SS_REPLY_RECV:
	case EVR_SS_FIRST_RECV:
	case EVR_SS_ACK_SEND:
	case EVR_SS_PLAN_HDR_RECV:
	case EVR_SS_PLAN_RECV:
	case EVR_SS_REPLY_SEND:
		return negotiated_step(s);
	case EVR_SS_SYNC_SEND:
	case EVR_SS_SYNC_RECV:
		return sync_done(s);
	case EVR_SS_DATA_SEND:
		return data_sent(s, cur(s));
	case EVR_SS_DATA_RECV:
		return data_received(s, cur(s));
	default:
		return fail(s, -EVR_E_PROTO, 0, "state");
	}
}

/* This send's bytes are not a stream's last before it turns round:
 * more of the same transfer, or another transfer, follows at once (the
 * transport may gather them: an RDMA cork). */
static int sends_more(const struct evr_sess *s)
{
	const struct evr_test *t = cur(s);

	return s->state == EVR_SS_DATA_SEND && s->mark != EVR_IT_END &&
	       (s->xoff + s->op_len < t->size || s->xfer + 1 < t->count);
}

/* One call of the transport for the operation in hand (a server's hold
 * stamp written just before the send that carries it). */
static ssize_t io_call(struct evr_sess *s)
{
	struct evr_conn *c = s->conn;
	size_t left = s->op_len - s->op_off;

	if (s->hold == EVR_HOLD_STAMP) {
		s->hold = EVR_HOLD_ON;
		stamp_hold(s);
	}
	if (s->op_kind == EVR_OP_SEND)
		return c->ops->send(c, s->op_buf + s->op_off, left,
				    c->takes_more && sends_more(s));
	return c->ops->recv(c, s->op_kind == EVR_OP_SKIP ? NULL :
				 s->op_buf + s->op_off, left);
}

/* n bytes moved (n > 0): counted, and a client's hold stamp kept. */
static void io_moved(struct evr_sess *s, size_t n)
{
	if (s->hold == EVR_HOLD_CAPTURE && s->op_off < EVR_HOLD_LEN)
		memcpy(s->hold_b + s->op_off, s->op_buf + s->op_off,
		       EVR_HOLD_LEN - s->op_off < n ? EVR_HOLD_LEN - s->op_off :
						      n);
	s->op_off += n;
	s->bytes += (uint64_t)n;
}

/* The call moved nothing (n <= 0, not EINTR): the end of the peer's
 * stream, a wait, or the failure. */
static enum evr_sess_want io_stopped(struct evr_sess *s, ssize_t n)
{
	int send = s->op_kind == EVR_OP_SEND;

	if (n == 0 && s->state == EVR_SS_DRAIN) {
		set_state(s, EVR_SS_DONE);
		return EVR_WANT_NONE;
	}
	if (n == 0)
		return fail(s, -EVR_E_EOF, 0, "recv");
	if (n == -EAGAIN)
		return send ? EVR_WANT_WRITE : EVR_WANT_READ;
	return fail(s, (int)n, 0, send ? "send" : "recv");
}

/* A piece of a transfer is not a message: the slice is counted in whole
 * transfers, as without chunks. */
static int in_transfer(const struct evr_sess *s)
{
	return (s->state == EVR_SS_DATA_SEND ||
		s->state == EVR_SS_DATA_RECV) && s->xoff;
}

/* Move bytes until the transport has none, the machine ends or yields,
 * or the turn's slice is over. */
static enum evr_sess_want run(struct evr_sess *s)
{
	unsigned msgs = 0;
	size_t moved = 0;

	for (;;) {
		enum evr_sess_want w;
		ssize_t n = io_call(s);

		if (n == -EINTR)
			continue;
		if (n <= 0)
			return io_stopped(s, n);
		if (s->state == EVR_SS_DRAIN)
			return fail(s, -EVR_E_EXTRA, 0, "drain");
		io_moved(s, (size_t)n);
		moved += (size_t)n;
		if (s->op_off < s->op_len)
			continue;
		w = op_done(s);
		if (w == EVR_WANT_NONE || w == EVR_WANT_YIELD ||
		    w == EVR_WANT_DETACH || w == EVR_WANT_GATE ||
		    w == EVR_WANT_PACE)
			return w;
		if (in_transfer(s))
			continue;
		if (evr__sched_slice_over(++msgs, moved))
			return EVR_WANT_YIELD;
	}
}

static enum evr_sess_want conn_error(struct evr_sess *s, int err)
{
	if (!s->conn || !s->conn->setup_where)
		return fail(s, err, 0, "connect");
	/* the resources were not had: no connect was made */
	fail(s, err, 0, s->conn->setup_where);
	s->fail.phase = EVR_PH_SETUP;
	return EVR_WANT_NONE;
}

static enum evr_sess_want stalled(struct evr_sess *s)
{
	if (s->state != EVR_SS_DRAIN)
		return fail(s, -EVR_E_STALL, (int)s->stall_ms, "watchdog");
	/* All tests passed; a client that never closes is simply let go. */
	set_state(s, EVR_SS_DONE);
	return EVR_WANT_NONE;
}

enum evr_sess_want evr__sess_event(struct evr_sess *s, enum evr_sess_event ev,
				   int arg)
{
	struct evr_nego_next n;
	enum evr_sess_want w;

	if (terminal(s))
		return EVR_WANT_NONE;
	switch (ev) {
	case EVR_SE_CONNECTED:
		if (s->state != EVR_SS_CONNECTING || !s->conn)
			return fail(s, -EVR_E_PROTO, 0, "connected");
		evr__nego_start(s, &n);
		w = nego_act(s, &n);
		if (w == EVR_WANT_NONE || w == EVR_WANT_GATE)
			return w;
		return run(s);
	case EVR_SE_CONN_ERROR:
		return conn_error(s, arg ? arg : -EIO);
	case EVR_SE_READY:
		if (s->state == EVR_SS_CONNECTING)
			return EVR_WANT_CONNECT;
		if (s->state == EVR_SS_GATED)
			return EVR_WANT_GATE; /* (a wake-up: nothing to do) */
		if (s->state == EVR_SS_PACE && pace(s) == EVR_WANT_PACE)
			return EVR_WANT_PACE;
		return run(s);
	case EVR_SE_OPEN:
		if (s->state != EVR_SS_GATED)
			return fail(s, -EVR_E_PROTO, 0, "gate");
		s->feat &= ~EVR_SF_GATE;
		begin_test(s);
		return run(s);
	case EVR_SE_STALL:
		return stalled(s);
	case EVR_SE_CANCEL:
		return fail(s, -EVR_E_CANCELLED, 0, "cancel");
	case EVR_SE_FAIL:
		return fail(s, arg ? arg : -EIO, 0, "driver");
	}
	return EVR_WANT_NONE;
}

/* What the options ask of the session (its plan copied first: -D makes
 * its counts the upper bound). */
static void init_features(struct evr_sess *s, const struct evr_stream_opts *o)
{
	int client = s->client;
	unsigned i;

	evr__sess_set(s, EVR_SF_NEGOTIATE, client && !o->no_negotiate &&
				   (!o->verify || o->force_negotiate));
	evr__sess_set(s, EVR_SF_VERIFY, o->verify);
	evr__sess_set(s, EVR_SF_PERCENTILES, client &&
				   (o->percentiles || o->mps));
	evr__sess_set(s, EVR_SF_SPLIT, client && o->lat_split);
	s->mps = client ? o->mps : 0;
	if (!client || !o->duration_ms)
		return;
	s->feat |= EVR_SF_DURATION;
	s->dur_ns = (uint64_t)o->duration_ms * 1000000u;
	for (i = 0; i < s->plan.ntests; i++)
		s->plan.tests[i].iters = EVR_MAX_COUNT;
}

int evr__sess_init(struct evr_sess *s, struct evr_loop *loop, int client,
		   const struct evr_conn_plan *plan, unsigned conn_index,
		   unsigned conn_total, const struct evr_stream_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->state = EVR_SS_CONNECTING;
	s->loop = loop;
	s->client = client;
	s->io = o->io;
	s->stall_ms = o->stall_ms ? o->stall_ms : EVR_DEFAULT_STALL_MS;
	evr__poll_init(&s->pe, o->poll_us <= EVR_POLL_NEVER ? 0 :
			   (uint64_t)(o->poll_us ? o->poll_us :
				      EVR_DEFAULT_POLL_US) * 1000u);
	s->plan = *plan;
	init_features(s, o);
	s->conn_index = conn_index;
	s->conn_total = conn_total;
	s->side_by_side = client && o->conns > 1 ? o->conns : 1;
	s->interval_ms = o->interval_ms;
	if (!client) {
		s->chunk = o->chunk_size ? o->chunk_size :
					   EVR_DEFAULT_CHUNK_SIZE;
		if (s->chunk < EVR_SYNC_LEN)
			s->chunk = EVR_SYNC_LEN; /* the buffer holds a sync */
	}
	evr__lat_init(&s->lat);
	/* the sync message for now; each test grows it
	 * (evr__sess_start_data) */
	return ensure_buf(s, EVR_SYNC_LEN);
}

void evr__sess_set_budget(struct evr_sess *s, struct evr_membudget *b)
{
	uncharge(s);
	s->budget = b;
	if (b && s->buf && !s->buf_ext) {
		s->charged = s->bufsize;
		b->used += s->charged;
	}
}

void evr__sess_use_buf(struct evr_sess *s, uint8_t *buf, size_t size)
{
	if (!s->buf_ext)
		free(s->buf);
	uncharge(s);
	s->buf = buf;
	s->bufsize = size;
	s->buf_ext = 1;
}

/* The machine's half of evr__sess_fini() (sessdrive.c), which stops the
 * watchers and closes the connection first. */
void evr__sess_release(struct evr_sess *s)
{
	if (!s->buf_ext)
		free(s->buf);
	uncharge(s);
	s->buf = NULL;
	s->buf_ext = 0;
	evr__lat_free(&s->lat);
	if (s->split) {
		evr__split_free(s->split);
		free(s->split);
		s->split = NULL;
	}
}

/* Progress: only within a test's data phase, where the numbers mean
 * something; between tests the next report simply waits. */
void evr__sess_progress(struct evr_sess *s)
{
	const struct evr_test *t = cur(s);
	struct evr_progress p;
	uint64_t now, dt;

	if (s->tphase != EVR_TP_DATA || terminal(s))
		return;
	now = evr_now_ns();
	dt = now - s->prog_ns;
	memset(&p, 0, sizeof(p));
	p.conn_id = s->id;
	p.peer = s->conn ? s->conn->peer : "";
	p.server = !s->client;
	p.test = t->name;
	p.test_index = s->ti;
	p.test_total = s->plan.ntests;
	p.elapsed_ns = now - s->t0;
	p.iters_done = s->iter;
	p.iters_total = evr__sess_has(s, EVR_SF_DURATION) ? 0 : t->iters;
	p.duration_ns = evr__sess_has(s, EVR_SF_DURATION) ? s->dur_ns : 0;
	p.bytes = s->bytes - s->test_bytes0;
	p.gbps = dt ? (double)(s->bytes - s->prog_bytes) * 8.0 / (double)dt :
		      0.0;
	s->prog_bytes = s->bytes;
	s->prog_ns = now;
	s->owner->progress(s, &p);
}
