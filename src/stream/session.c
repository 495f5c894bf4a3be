/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"

/* A slice of work before the machine lets other watchers run. */
#define SLICE_MSGS 64
#define SLICE_BYTES (1u << 20)

static const char *const state_names[] = EVR__STATE_NAMES(EVR_SESS_STATES);

const char *evr__sess_state_name(enum evr_sess_state s)
{
	return EVR__NAME_AT(state_names, s);
}

static int terminal(const struct evr_sess *s)
{
	return s->state == EVR_SS_DONE || s->state == EVR_SS_FAILED;
}

static void set_state(struct evr_sess *s, enum evr_sess_state st)
{
	if (s->state != st && s->loop && evr__tracing(s->loop)) {
		evr__trace(s->loop, "conn %u: %s -> %s", s->id,
			   evr__sess_state_name(s->state),
			   evr__sess_state_name(st));
		if (s->io == EVR_IO_ASYNC &&
		    (st == EVR_SS_DONE || st == EVR_SS_FAILED))
			evr__trace(s->loop, "conn %u: poll: %" PRIu64
				   " found, %" PRIu64 " ran out, %" PRIu64
				   " lost the CPU, %" PRIu64
				   " slept at once, %" PRIu64 " yields, %"
				   PRIu64 " usec at the end", s->id,
				   s->pe.n_found, s->pe.n_ran_out,
				   s->pe.n_preempted, s->pe.n_unpolled,
				   s->pe.n_yields, s->pe.budget_ns / 1000);
	}
	s->state = st;
}

static void op(struct evr_sess *s, enum evr_sess_state st, int send,
	       uint8_t *buf, size_t len)
{
	set_state(s, st);
	s->op_send = send;
	s->op_buf = buf;
	s->op_len = len;
	s->op_off = 0;
	s->op_skip = 0;
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
		      s->state == EVR_SS_DATA_RECV;

	memset(f, 0, sizeof(*f));
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
	f->negotiated = s->negotiated;
	if (s->conn)
		snprintf(f->peer, sizeof(f->peer), "%s", s->conn->peer);
	set_state(s, EVR_SS_FAILED);
	return EVR_WANT_NONE;
}

static void sync_send(struct evr_sess *s)
{
	if (s->verify)
		evr__pattern_fill(&s->spat, s->buf, EVR_SYNC_LEN);
	op(s, EVR_SS_SYNC_SEND, 1, s->buf, EVR_SYNC_LEN);
}

static void sync_recv(struct evr_sess *s)
{
	op(s, EVR_SS_SYNC_RECV, 0, s->buf, EVR_SYNC_LEN);
}

size_t evr__sess_xfer_buf(const struct evr_sess *s, size_t size)
{
	return s->chunk && size > s->chunk ? s->chunk : size;
}

/* The next piece of the current transfer, from xoff on. */
static void data_piece(struct evr_sess *s, enum evr_sess_state st)
{
	size_t n = evr__sess_xfer_buf(s, cur(s)->size - s->xoff);

	if (st == EVR_SS_DATA_SEND && s->verify)
		evr__pattern_fill(&s->spat, s->buf, n);
	op(s, st, st == EVR_SS_DATA_SEND, s->buf, n);
	/* A client's echo is only counted unless it verifies (its buffer
	 * keeps what it sent, which is what a faithful echo holds): the
	 * copy out of an RDMA ring is saved.  A server reads what it echoes
	 * (and, -D, the iteration mark). */
	s->op_skip = st == EVR_SS_DATA_RECV && s->client && !s->verify &&
		     s->conn && s->conn->can_skip;
}

static void data_send(struct evr_sess *s)
{
	s->xoff = 0;
	data_piece(s, EVR_SS_DATA_SEND);
	if (s->dur_mode && s->client && s->xfer == 0) {
		/* Decide at the start of each iteration (it_t0 is "now"):
		 * the test ends with the first iteration begun past the
		 * deadline, or at the plan's cap. */
		s->it_last = s->it_t0 - s->t0 >= s->dur_ns ||
			     s->iter + 1 >= cur(s)->iters;
		s->buf[0] = s->it_last ? EVR_ITER_LAST : EVR_ITER_MORE;
	}
}

static void data_recv(struct evr_sess *s)
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

static int ensure_buf(struct evr_sess *s, size_t size);

/* After the sync: the clock starts and the client sends first.  The
 * buffer grows here, to this test's size (a server's: at most its
 * chunk): a connection holds no more than the test in hand needs (many
 * connections, -c). */
static enum evr_sess_want start_data(struct evr_sess *s)
{
	int err = ensure_buf(s, evr__sess_xfer_buf(s, cur(s)->size));

	if (err == -ENOBUFS)
		return fail(s, err, EVR_REJECT_BUDGET, "buffer");
	if (err)
		return fail(s, err, 0, "malloc");
	s->iter = 0;
	s->xfer = 0;
	s->it_last = 0;
	s->t0 = evr_now_ns();
	s->it_t0 = s->t0;
	s->in_data = 1;
	s->test_bytes0 = s->prog_bytes = s->bytes;
	s->prog_ns = s->t0;
	if (s->lat_on)
		evr__lat_reset(&s->lat);
	if (s->client)
		data_send(s);
	else
		data_recv(s);
	return EVR_WANT_READ;
}

static int check_pattern(struct evr_sess *s, const uint8_t *b, size_t len)
{
	uint64_t bad = 0;

	if (!s->verify || !evr__pattern_check(&s->rpat, b, len, &bad))
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

	s->in_data = 0;
	if (s->dur_mode) {
		/* the row shows the iterations actually run */
		done = *t;
		done.iters = s->iter;
		t = &done;
	}
	if (s->lat_on) {
		evr__lat_compute(&s->lat, &s->lat_res);
		s->lat_valid = 1;
	}
	if (s->owner && s->owner->result)
		s->owner->result(s, t, ns);
	s->lat_valid = 0;
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
static int ensure_buf(struct evr_sess *s, size_t size)
{
	struct evr_membudget *bg = s->budget;
	uint8_t *b;

	if (size < EVR_SYNC_LEN)
		size = EVR_SYNC_LEN;
	if (s->buf && s->bufsize >= size)
		return 0;
	if (bg && size > EVR_SYNC_LEN &&
	    (bg->used - s->charged > bg->max ||
	     size > bg->max - (bg->used - s->charged)))
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

static void encode_plan(struct evr_sess *s)
{
	struct evr_plan_hdr h = {
		.version = s->dur_mode ? EVR_WIRE_VERSION_DURATION :
					 EVR_WIRE_VERSION,
		.flags = (s->verify ? EVR_PLAN_F_VERIFY : 0) |
			 (s->dur_mode ? EVR_PLAN_F_DURATION : 0),
		.ntests = (uint16_t)s->plan.ntests,
		.conn_index = (uint16_t)s->conn_index,
		.conn_total = (uint16_t)s->conn_total,
		.pat_send = s->spat.next,
		.pat_recv = s->rpat.next,
	};
	unsigned i;

	evr__plan_hdr_encode(s->ctl, &h);
	for (i = 0; i < s->plan.ntests; i++)
		evr__plan_entry_encode(s->ctl + EVR_PLAN_HDR_LEN +
				       i * EVR_PLAN_ENTRY_LEN,
				       &s->plan.tests[i]);
	op(s, EVR_SS_PLAN_SEND, 1, s->ctl,
	   EVR_PLAN_HDR_LEN + s->plan.ntests * EVR_PLAN_ENTRY_LEN);
}

static void reply(struct evr_sess *s, int status)
{
	uint32_t limit = EVR_MAX_XFER_SIZE;

	s->reply_status = status;
	/* what the budget has left for one more buffer */
	if (status == EVR_PLAN_E_BUDGET && s->budget) {
		size_t used = s->budget->used - s->charged;
		size_t left = used < s->budget->max ?
			      s->budget->max - used : 0;

		limit = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
	}
	evr__plan_reply_encode(s->ctl, status, limit);
	op(s, EVR_SS_REPLY_SEND, 1, s->ctl, EVR_PLAN_REPLY_LEN);
}

/* Server: the client's plan entries have arrived. */
static void plan_received(struct evr_sess *s)
{
	struct evr_plan_hdr h;
	struct evr_conn_plan np;
	unsigned i;
	int st;

	evr__plan_hdr_decode(s->ctl, &h); /* checked in PLAN_HDR_RECV */
	memset(&np, 0, sizeof(np));
	np.opt = EVR_OPT_MIXED;
	np.ntests = h.ntests;
	for (i = 0; i < h.ntests; i++) {
		st = evr__plan_entry_decode(s->ctl + EVR_PLAN_HDR_LEN +
					    i * EVR_PLAN_ENTRY_LEN,
					    &np.tests[i], EVR_MAX_XFER_SIZE);
		if (st) {
			reply(s, st);
			return;
		}
	}
	/* Any size is served through a buffer of at most our chunk: what
	 * the plan can cost us is ours to bound, not the peer's. */
	st = ensure_buf(s, evr__sess_xfer_buf(s,
					      evr__conn_plan_max_size(&np)));
	if (st) {
		reply(s, st == -ENOBUFS ? EVR_PLAN_E_BUDGET :
					  EVR_PLAN_E_NOMEM);
		return;
	}
	s->plan = np;
	/* The server follows the client's plan, verification included; the
	 * client's send counter is where our receive counter starts. */
	s->verify = !!(h.flags & EVR_PLAN_F_VERIFY);
	s->dur_mode = !!(h.flags & EVR_PLAN_F_DURATION);
	if (s->verify) {
		s->rpat.next = h.pat_send;
		s->spat.next = h.pat_recv;
	}
	s->conn_index = h.conn_index;
	s->conn_total = h.conn_total;
	reply(s, EVR_PLAN_OK);
}

static enum evr_sess_want decided(struct evr_sess *s)
{
	if (s->owner && s->owner->decided && s->owner->decided(s))
		return EVR_WANT_DETACH;
	return EVR_WANT_READ; /* go on */
}

/* Server: the first 16 bytes of a connection were not a HELLO, so this is
 * an upstream client (or ours in verify mode) and they were the sync of
 * the first test.  A verifying client is known by its pattern, and where
 * its counter stands: the exchange is symmetric, so our send counter
 * starts there too (this is what keeps -T f and reconnections right). */
static enum evr_sess_want first_sync(struct evr_sess *s)
{
	uint8_t first;

	s->ti = 0;
	s->iter = 0;
	s->xfer = 0;
	set_state(s, EVR_SS_SYNC_RECV);
	if (evr__pattern_detect(s->ctl, EVR_SYNC_LEN, &first)) {
		s->verify = 1;
		s->rpat.next = first;
		s->spat.next = first;
	}
	memcpy(s->buf, s->ctl, EVR_SYNC_LEN);
	if (check_pattern(s, s->buf, EVR_SYNC_LEN))
		return EVR_WANT_NONE;
	sync_send(s);
	return decided(s);
}

/* The current operation has moved all its bytes: decide what comes next. */
static enum evr_sess_want op_done(struct evr_sess *s)
{
	const struct evr_test *t = cur(s);
	struct evr_plan_hdr h;
	int st;

	switch (s->state) {
	case EVR_SS_HELLO_SEND:
		op(s, EVR_SS_HELLO_RECV, 0, s->ctl, EVR_SYNC_LEN);
		break;
	case EVR_SS_HELLO_RECV:
		if (evr__is_busy(s->ctl))
			return fail(s, -EVR_E_REJECTED, EVR_PLAN_E_CONNS,
				    "server busy");
		if (evr__is_ack(s->ctl)) {
			encode_plan(s);
		} else if (s->dur_mode) {
			/* An upstream server cannot learn where a test
			 * ends: give up before any data moves. */
			return fail(s, -EVR_E_NOTSUP, EVR_NOTSUP_DURATION,
				    NULL);
		} else {
			/* An upstream server: that exchange was the first
			 * test's sync. */
			set_state(s, EVR_SS_SYNC_RECV);
			return start_data(s);
		}
		break;
	case EVR_SS_PLAN_SEND:
		op(s, EVR_SS_REPLY_RECV, 0, s->ctl, EVR_PLAN_REPLY_LEN);
		break;
	case EVR_SS_REPLY_RECV:
		st = evr__plan_reply_decode(s->ctl, NULL);
		if (st < 0)
			return fail(s, -EVR_E_PROTO, 0, "plan reply");
		if (st)
			return fail(s, -EVR_E_REJECTED, st, "plan");
		s->negotiated = 1;
		begin_test(s);
		break;
	case EVR_SS_FIRST_RECV:
		if (evr__is_hello(s->ctl)) {
			memcpy(s->ctl, evr__ack_msg, EVR_SYNC_LEN);
			op(s, EVR_SS_ACK_SEND, 1, s->ctl, EVR_SYNC_LEN);
			break;
		}
		return first_sync(s);
	case EVR_SS_ACK_SEND:
		op(s, EVR_SS_PLAN_HDR_RECV, 0, s->ctl, EVR_PLAN_HDR_LEN);
		break;
	case EVR_SS_PLAN_HDR_RECV:
		st = evr__plan_hdr_decode(s->ctl, &h);
		if (st < 0)
			return fail(s, -EVR_E_PROTO, 0, "plan header");
		if (st) {
			reply(s, st);
			break;
		}
		op(s, EVR_SS_PLAN_RECV, 0, s->ctl + EVR_PLAN_HDR_LEN,
		   (size_t)h.ntests * EVR_PLAN_ENTRY_LEN);
		break;
	case EVR_SS_PLAN_RECV:
		plan_received(s);
		break;
	case EVR_SS_REPLY_SEND:
		if (s->reply_status)
			return fail(s, -EVR_E_REJECTED, s->reply_status,
				    "plan");
		s->negotiated = 1;
		s->ti = 0;
		begin_test(s);
		return decided(s);
	case EVR_SS_SYNC_SEND:
		if (s->client)
			sync_recv(s);
		else
			return start_data(s);
		break;
	case EVR_SS_SYNC_RECV:
		/* an evrdma server at its --max-conns, to a client that
		 * did not negotiate: the first sync says so */
		if (s->client && !s->negotiated && !s->ti &&
		    evr__is_busy(s->buf))
			return fail(s, -EVR_E_REJECTED, EVR_PLAN_E_CONNS,
				    "server busy");
		if (check_pattern(s, s->buf, EVR_SYNC_LEN))
			return EVR_WANT_NONE;
		if (s->client)
			return start_data(s);
		sync_send(s);
		break;
	case EVR_SS_DATA_SEND:
		s->xoff += (uint32_t)s->op_len;
		if (s->xoff < t->size) {
			data_piece(s, EVR_SS_DATA_SEND);
			break;
		}
		if (++s->xfer < t->count) {
			data_send(s);
			break;
		}
		s->xfer = 0;
		if (!s->client && (++s->iter >= t->iters ||
				   (s->dur_mode && s->it_last)))
			return test_done(s);
		data_recv(s);
		break;
	case EVR_SS_DATA_RECV:
		if (check_pattern(s, s->buf, s->op_len))
			return EVR_WANT_NONE;
		/* the mark is the first byte of the iteration */
		if (s->dur_mode && !s->client && s->xfer == 0 && !s->xoff) {
			if (s->buf[0] == EVR_ITER_LAST)
				s->it_last = 1;
			else if (s->buf[0] != EVR_ITER_MORE)
				return fail(s, -EVR_E_PROTO, 0,
					    "iteration mark");
		}
		s->xoff += (uint32_t)s->op_len;
		if (s->xoff < t->size) {
			data_piece(s, EVR_SS_DATA_RECV);
			break;
		}
		if (++s->xfer < t->count) {
			data_recv(s);
			break;
		}
		s->xfer = 0;
		if (s->client) {
			if (s->lat_on || s->dur_mode) {
				uint64_t now = evr_now_ns();

				if (s->lat_on)
					evr__lat_add(&s->lat, now - s->it_t0);
				s->it_t0 = now;
			}
			if (++s->iter >= t->iters ||
			    (s->dur_mode && s->it_last))
				return test_done(s);
		}
		data_send(s);
		break;
	default:
		return fail(s, -EVR_E_PROTO, 0, "state");
	}
	return EVR_WANT_READ; /* any value but NONE/YIELD: keep going */
}

/* This send's bytes are not a stream's last before it turns round:
 * more of the same transfer, or another transfer, follows at once (the
 * transport may gather them: an RDMA cork). */
static int sends_more(const struct evr_sess *s)
{
	const struct evr_test *t = cur(s);

	return s->state == EVR_SS_DATA_SEND &&
	       (s->xoff + s->op_len < t->size || s->xfer + 1 < t->count);
}

static enum evr_sess_want run(struct evr_sess *s)
{
	unsigned msgs = 0;
	size_t moved = 0;

	for (;;) {
		struct evr_conn *c = s->conn;
		size_t left = s->op_len - s->op_off;
		enum evr_sess_want w;
		ssize_t n;

		n = s->op_send ?
			c->ops->send(c, s->op_buf + s->op_off, left,
				     sends_more(s)) :
			c->ops->recv(c, s->op_skip ? NULL :
					 s->op_buf + s->op_off, left);
		if (n > 0) {
			if (s->state == EVR_SS_DRAIN)
				return fail(s, -EVR_E_EXTRA, 0, "drain");
			s->op_off += (size_t)n;
			s->bytes += (uint64_t)n;
			moved += (size_t)n;
			if (s->op_off < s->op_len)
				continue;
			w = op_done(s);
			if (w == EVR_WANT_NONE || w == EVR_WANT_YIELD ||
			    w == EVR_WANT_DETACH)
				return w;
			/* A piece of a transfer is not a message: the slice
			 * is counted in whole transfers, as without chunks */
			if ((s->state == EVR_SS_DATA_SEND ||
			     s->state == EVR_SS_DATA_RECV) && s->xoff)
				continue;
			if (++msgs >= SLICE_MSGS || moved >= SLICE_BYTES)
				return EVR_WANT_YIELD;
			continue;
		}
		if (n == 0) {
			if (s->state == EVR_SS_DRAIN) {
				set_state(s, EVR_SS_DONE);
				return EVR_WANT_NONE;
			}
			return fail(s, -EVR_E_EOF, 0, "recv");
		}
		if (n == -EINTR)
			continue;
		if (n == -EAGAIN)
			return s->op_send ? EVR_WANT_WRITE : EVR_WANT_READ;
		return fail(s, (int)n, 0, s->op_send ? "send" : "recv");
	}
}

enum evr_sess_want evr__sess_event(struct evr_sess *s, enum evr_sess_event ev,
				   int arg)
{
	if (terminal(s))
		return EVR_WANT_NONE;
	switch (ev) {
	case EVR_SE_CONNECTED:
		if (s->state != EVR_SS_CONNECTING || !s->conn)
			return fail(s, -EVR_E_PROTO, 0, "connected");
		if (!s->client) {
			op(s, EVR_SS_FIRST_RECV, 0, s->ctl, EVR_SYNC_LEN);
		} else if (s->allow_negotiate) {
			memcpy(s->ctl, evr__hello_msg, EVR_SYNC_LEN);
			op(s, EVR_SS_HELLO_SEND, 1, s->ctl, EVR_SYNC_LEN);
		} else {
			begin_test(s);
		}
		return run(s);
	case EVR_SE_CONN_ERROR:
		if (s->conn && s->conn->setup_where) {
			/* the resources were not had: no connect was made */
			fail(s, arg ? arg : -EIO, 0, s->conn->setup_where);
			s->fail.phase = EVR_PH_SETUP;
			return EVR_WANT_NONE;
		}
		return fail(s, arg ? arg : -EIO, 0, "connect");
	case EVR_SE_READY:
		if (s->state == EVR_SS_CONNECTING)
			return EVR_WANT_CONNECT;
		return run(s);
	case EVR_SE_STALL:
		if (s->state == EVR_SS_DRAIN) {
			/* All tests passed; a client that never closes is
			 * simply let go. */
			set_state(s, EVR_SS_DONE);
			return EVR_WANT_NONE;
		}
		return fail(s, -EVR_E_STALL, (int)s->stall_ms, "watchdog");
	case EVR_SE_CANCEL:
		return fail(s, -EVR_E_CANCELLED, 0, "cancel");
	}
	return EVR_WANT_NONE;
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
	evr__poll_init(&s->pe, o->poll_us < 0 ? 0 :
			   (uint64_t)(o->poll_us ? o->poll_us :
				      EVR_DEFAULT_POLL_US) * 1000u);
	s->allow_negotiate = client && !o->no_negotiate &&
			     (!o->verify || o->force_negotiate);
	s->verify = o->verify;
	s->plan = *plan;
	s->conn_index = conn_index;
	s->conn_total = conn_total;
	s->interval_ms = o->interval_ms;
	if (!client) {
		s->chunk = o->chunk_size ? o->chunk_size :
					   EVR_DEFAULT_CHUNK_SIZE;
		if (s->chunk < EVR_SYNC_LEN)
			s->chunk = EVR_SYNC_LEN; /* the buffer holds a sync */
	}
	s->lat_on = client && o->percentiles;
	evr__lat_init(&s->lat);
	if (client && o->duration_ms) {
		unsigned i;

		s->dur_mode = 1;
		s->dur_ns = (uint64_t)o->duration_ms * 1000000u;
		/* the plan's counts become the upper bound */
		for (i = 0; i < s->plan.ntests; i++)
			s->plan.tests[i].iters = EVR_MAX_COUNT;
	}
	/* the sync message for now; each test grows it (start_data) */
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

static void sess_wake(struct evr_conn *c)
{
	struct evr_sess *s = c->wake_ud;

	/* The transport has news the fd may not show (an RDMA CM event):
	 * let the machine look, as if the fd were ready. */
	if (s->conn == c && !terminal(s))
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

static void set_hot(struct evr_sess *s, int hot);

void evr__sess_fini(struct evr_sess *s)
{
	if (s->loop)
		set_hot(s, 0);
	if (s->conn) {
		s->conn->wake = NULL;
		s->conn->ops->close(s->conn);
		s->conn = NULL;
	}
	if (!s->buf_ext)
		free(s->buf);
	uncharge(s);
	s->buf = NULL;
	s->buf_ext = 0;
	evr__lat_free(&s->lat);
}

/* ---- the driver: loop watchers that feed the machine ---- */

static void apply(struct evr_sess *s, enum evr_sess_want w);
static enum evr_sess_want spin(struct evr_sess *s, enum evr_sess_want w);

/* -T a: a session that will poll if its call finds nothing makes that
 * call without arming its completion channel (poll_async() arms it before
 * it sleeps): an arm is a system call, and the completion it asks for
 * another (an event to read and acknowledge) on every exchange. */
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

	/* an async session's turn after a yield: it counts on the loop as
	 * hot or not, not as an idle spinner (apply() turns it back on) */
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

/* Progress: only within a test's data phase, where the numbers mean
 * something; between tests the next report simply waits. */
static void prog_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_sess *s = evr__container_of(w, struct evr_sess, prog_w);
	const struct evr_test *t = cur(s);
	struct evr_progress p;
	uint64_t now, dt;

	if (!s->in_data || terminal(s))
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
	p.iters_total = s->dur_mode ? 0 : t->iters;
	p.duration_ns = s->dur_mode ? s->dur_ns : 0;
	p.bytes = s->bytes - s->test_bytes0;
	p.gbps = dt ? (double)(s->bytes - s->prog_bytes) * 8.0 / (double)dt :
		      0.0;
	s->prog_bytes = s->bytes;
	s->prog_ns = now;
	s->owner->progress(s, &p);
}

/* The idle watcher of a non-blocking session spins on the loop: a
 * spinning session knows whether others wait for their turn. */
static void idle_on(struct evr_sess *s)
{
	if (!ev_is_active(&s->idle_w)) {
		ev_idle_start(s->loop->ev, &s->idle_w);
		evr__loop_spin_enter(s->loop);
	}
}

static void idle_off(struct evr_sess *s)
{
	if (ev_is_active(&s->idle_w)) {
		ev_idle_stop(s->loop->ev, &s->idle_w);
		evr__loop_spin_leave(s->loop);
	}
}

void evr__sess_stop_watchers(struct evr_sess *s)
{
	struct ev_loop *l = s->loop->ev;

	ev_io_stop(l, &s->io_w);
	idle_off(s);
	set_hot(s, 0);
	ev_timer_stop(l, &s->wd_w);
	if (s->wd_state)
		ev_timer_stop(l, &s->prog_w);
	s->wd_state = 0;
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

/* Non-blocking mode retries at once, as upstream does.  Retrying in place
 * rather than going back to the loop after every EAGAIN saves a loop pass
 * (clock, epoll_wait, timers) per retry.  A pass is a system call, and on
 * a loaded host each one lets the scheduler switch the spinning process
 * out: on Soft-RoCE under emulation, with other jobs on the CPUs, a pass
 * per 64 retries made 64-byte ping-pong ten times slower than upstream's
 * spin, which makes no system call (on a quiet host both are within
 * noise).  So a lone spinning session keeps trying for up to
 * SPIN_BUDGET_NS (the loop's timers and other fds wait at most that
 * long); when other sessions spin too, each gets SPIN_TRIES and hands the
 * loop on.  At 200 usec a 64-byte ping-pong over Soft-RoCE under
 * emulation (a round trip of 100-150 usec) made a loop pass every round
 * trip or two: paired 1.10x upstream over ten rounds, against 1.04x at 1
 * ms and at 2 ms.
 *
 * Async mode polls before it sleeps, as rsockets' rpoll (polling_time)
 * and Linux busy polling do, while the session is in a fast exchange:
 * while its waits for the peer (the time from "would block" to bytes
 * moving, sleep and wake-up included) average at most the cold mark (1
 * ms, or five polls if more).  A connection in a fast exchange
 * (ping-pong, a stream whose window refills) finds its data while polling
 * and never pays a sleep and a wake-up, which on a quiet virtual machine
 * costs more than the round trip itself (a halted vCPU takes tens of
 * microseconds to wake; an emulated one, a millisecond); one whose waits
 * are long sleeps at once and costs nothing (an idle server, a quiet
 * client, a thousand silent connections).
 *
 * The poll starts at its base (EVR_POLL_NS, 200 usec, or opts.poll_us).
 * A reply that comes after the poll ran out, within a fast exchange's
 * wait, makes it 1.25 times that wait, up to EVR_POLL_MAX_NS (5 ms): an
 * emulated device, a long network round trip.  (At 2 ms, the waits of
 * 2-5 ms in the tail below each ended in a sleep and a wake-up; at 5 ms
 * the Soft-RoCE ping-pong took 0.93-1.00x the time, in five boots.)  It
 * keeps that length while replies keep coming within it, and goes back
 * to the base when the session turns cold.  Waits have a long tail: on
 * Soft-RoCE under emulation, of a 64-byte ping-pong's 20,000 waits some 5% took over
 * 512 usec and 1-3% over 1 ms.  A poll brought back to four times the
 * last reply's wait missed that tail 100-300 times a run, each miss a
 * sleep and a wake-up on one side and a longer wait on the other (which
 * then missed and backed off in turn): 1.10-1.18x upstream's spinning
 * rpoll.  Kept, it missed 5-15 times.  A miss costs at most one poll's
 * length of CPU before the sleep.  The poll is not sized from waits in
 * general: a wait that ended in a sleep includes the wake-up, and on this
 * VM a poll sized on those shrank below the round trip and never found
 * anything again.  A poll at its cap that
 * keeps finding nothing (a peer slower than it, or a host too loaded for
 * two pollers) backs off: after two misses in a row the session sleeps
 * through 1, 2, 4 ... 64 waits before it polls again; a find resets it.
 *
 * A poll is for a CPU nobody else wants.  A wait that goes on offers the
 * CPU every EVR_POLL_OFFER_NS, 100 usec (sched_yield): a task that wants
 * it (the peer on the same CPU, a busy host's other work) runs then, not
 * at the end of the poll's time slice.  When one did, or the kernel
 * preempted the poll meanwhile (the thread's involuntary context
 * switches moved: not a time gap, which a vCPU its host descheduled or
 * a softirq also makes, and which cost Soft-RoCE's -T a ping-pong 1.14x
 * in its TCG guest), the poll ends: the session sleeps, and backs off at
 * once: 1, 2, 4 ... 64 waits slept through, the poll back at its base; a
 * find resets it.  With both sides of a ping-pong on one CPU (taskset,
 * a host with more busy tasks than CPUs) each round trip had taken a
 * kernel time slice (2,595 usec/xfer): a default run's 100,000 took
 * minutes.
 *
 * A session whose data came while it polled counts as hot on the loop
 * until a poll finds nothing; while another session of the loop is hot,
 * each polls only a few tries and hands the loop on, so neither timers
 * nor other connections wait on a spinning one.  A session that stays
 * hot (a ping-pong finds every reply while it polls) gives the loop a
 * turn every slice all the same (the poll's length, at most
 * EVR_POLL_SLICE_NS, 2 ms; EVR_WANT_YIELD: its idle watcher brings it
 * back after one pass, unarmed), or it would keep the loop for its whole
 * run; so does a long poll still waiting, which then polls on from where
 * it was (evr_pollest.cont_t0) rather than from the start.  A completion
 * channel is not armed while the session polls, only once before it
 * sleeps (evr_conn.polling).
 *
 * Both spinning and polling ask the transport first whether anything
 * came (evr_conn_ops.ready: RDMA polls the CQ and counts the
 * connection's completions, whoever took them) and call again only
 * then: a try that finds nothing skips the session's step, the credit
 * and cork checks, and costs a CQ poll. */
#ifndef SPIN_TRIES
#define SPIN_TRIES 64
#endif
#ifndef SPIN_BUDGET_NS
#define SPIN_BUDGET_NS 1000000u
#endif
#define POLL_TRIES 4

static int waiting(enum evr_sess_want w)
{
	return w == EVR_WANT_READ || w == EVR_WANT_WRITE;
}

/* One try of an owner that polls (w: what the last call, which returned
 * -EAGAIN, waits for): the call again, unless the transport tells at
 * less cost that it would find nothing (evr_conn_ops.ready). */
static enum evr_sess_want try_again(struct evr_sess *s,
				    enum evr_sess_want w)
{
	struct evr_conn *c = s->conn;

	if (c && c->ops->ready && !c->ops->ready(c))
		return w;
	return evr__sess_event(s, EVR_SE_READY, 0);
}

static void set_hot(struct evr_sess *s, int hot)
{
	if (s->hot == hot)
		return;
	s->hot = hot;
	if (hot)
		evr__loop_spin_enter(s->loop);
	else
		evr__loop_spin_leave(s->loop);
}

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

/* -T a: how often the kernel has given this thread's CPU to another task
 * (preempted it, or a sched_yield let one run: ru_nivcsw), -1 if it
 * cannot tell.  Not a time gap: a vCPU its host descheduled, or a
 * softirq, takes as long, and neither is a task this poll holds up. */
static long cpu_taken(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw;
}

/* -T a: poll for the budget, then arm and sleep (see above). */
static enum evr_sess_want poll_async(struct evr_sess *s,
				     enum evr_sess_want w)
{
	uint64_t now = evr_now_ns(), start = now, entry = now, budget, slice;
	uint64_t offered = 0;
	unsigned n;
	int unarmed, yield = 0, preempted = 0;

	/* a poll that gave the loop its turn goes on from where it was, if
	 * the wait it polled for goes on (no byte moved meanwhile) */
	if (s->pe.cont_t0 && s->pe.t0 && s->bytes == s->pe.bytes)
		start = s->pe.cont_t0;
	else
		s->pe.taken = -1;
	s->pe.cont_t0 = 0;
	if (!waiting(w)) {
		/* done, or its turn again soon: whatever comes next (a close
		 * that waits for completions) arms as it needs */
		if (s->conn)
			s->conn->polling = 0;
		s->pe.t0 = 0;
		return w;
	}
	/* whether the call that returned w left the channel unarmed
	 * (poll_intent()) */
	unarmed = s->conn->polling;
	evr__poll_mark(&s->pe, s->bytes, now);
	budget = evr__poll_budget(&s->pe);
	if (!budget) {
		s->pe.n_unpolled++;
		if (s->pe.skip)
			s->pe.skip--;   /* backing off: this wait sleeps */
	}
	s->conn->polling = budget > 0;
	while (budget) {
		unarmed = 1;
		for (n = 0; n < POLL_TRIES && waiting(w); n++)
			w = try_again(s, w);
		now = evr_now_ns();
		if (s->bytes != s->pe.bytes) {
			/* found while polling: hot */
			s->pe.n_found++;
			evr__poll_mark(&s->pe, s->bytes, now);
			start = now;
			s->pe.taken = -1;
			evr__poll_result(&s->pe, EVR_POLL_FOUND);
			budget = evr__poll_budget(&s->pe);
			set_hot(s, 1);
		}
		if (!waiting(w) || evr__loop_spin_others(s->loop, s->hot))
			break;
		if (now - start >= budget) {
			/* nothing came: it sleeps, and backs off if that
			 * keeps happening */
			s->pe.n_ran_out++;
			evr__poll_result(&s->pe, EVR_POLL_RAN_OUT);
			set_hot(s, 0);
			break;
		}
		/* a slice polled (hot, or waiting in a long poll): the
		 * loop's turn (timers, other fds), then back to polling at
		 * once, from where it was */
		slice = budget < EVR_POLL_SLICE_NS ? budget : EVR_POLL_SLICE_NS;
		if (now - entry >= slice) {
			yield = 1;
			break;
		}
		/* a wait that goes on offers the CPU now and then: a task
		 * that wants it (the peer, on this CPU) runs now rather than
		 * when the kernel preempts the poll, and one that ran (or a
		 * preemption meanwhile) says the CPU is not the poll's */
		if (s->pe.offer_ns && now - start >= s->pe.offer_ns &&
		    now - offered >= s->pe.offer_ns) {
			if (s->pe.taken < 0)
				s->pe.taken = cpu_taken();
			sched_yield();
			now = offered = evr_now_ns();
			if (s->pe.taken >= 0 && cpu_taken() != s->pe.taken) {
				preempted = 1;
				break;
			}
		}
	}
	if (preempted) {
		/* it sleeps (the peer, or whoever wanted the CPU, runs),
		 * and backs off */
		s->pe.n_preempted++;
		evr__poll_result(&s->pe, EVR_POLL_PREEMPTED);
		set_hot(s, 0);
	}
	if (yield) {
		/* not armed: the idle watcher brings it back next turn */
		s->pe.n_yields++;
		s->pe.cont_t0 = start;
		s->conn->polling = 0;
		return EVR_WANT_YIELD;
	}
	/* before it sleeps, a completion channel is armed: once more, not
	 * polling, unless the last call armed it already */
	s->conn->polling = 0;
	if (unarmed && waiting(w))
		w = evr__sess_event(s, EVR_SE_READY, 0);
	if (waiting(w))
		evr__poll_mark(&s->pe, s->bytes, evr_now_ns());
	else
		s->pe.t0 = 0;
	return w;
}

static enum evr_sess_want spin(struct evr_sess *s, enum evr_sess_want w)
{
	uint64_t t0 = 0, now, budget;
	unsigned n, tries;

	if (s->io == EVR_IO_ASYNC)
		return poll_async(s, w);
	if (s->io != EVR_IO_NONBLOCK)
		return w;
	tries = SPIN_TRIES;
	budget = SPIN_BUDGET_NS;
	for (;;) {
		for (n = 0; n < tries && waiting(w); n++)
			w = try_again(s, w);
		if (!waiting(w) || evr__loop_spin_shared(s->loop))
			return w;
		now = evr_now_ns();
		if (!t0)
			t0 = now;
		else if (now - t0 >= budget)
			return w;
	}
}

void evr__sess_drive(struct evr_sess *s, enum evr_sess_event ev, int arg)
{
	apply(s, spin(s, evr__sess_event(s, ev, arg)));
}
