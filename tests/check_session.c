/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The per-connection state machine, driven by hand with synthetic events
 * over an in-memory mock transport: every state, every error path, and
 * whole client/server runs connected back to back without sockets.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <ev.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fakecpu.h"
#include "loop/bytes.h"
#include "stream/plan.h"
#include "stream/session/session.h"
#include "stream/transport.h"
#include "stream/wire.h"

/* ------------------------------------------------------------------ */
/* an in-memory byte queue                                             */

struct bq {
	uint8_t *d;
	size_t rd, wr, cap;
	size_t limit;   /* at most this many unread bytes; 0: no limit */
	int eof;        /* the writer has shut down */
	unsigned gen;   /* bumped by every push and pop */
};

static size_t bq_avail(const struct bq *q)
{
	return q->wr - q->rd;
}

static void bq_push(struct bq *q, const void *p, size_t n)
{
	if (q->rd && q->rd == q->wr)
		q->rd = q->wr = 0;
	if (q->wr + n > q->cap) {
		size_t cap = q->cap ? q->cap : 256;

		while (cap < q->wr + n)
			cap *= 2;
		q->d = realloc(q->d, cap);
		if (!q->d)
			ck_abort_msg("out of memory");
		q->cap = cap;
	}
	memcpy(q->d + q->wr, p, n);
	q->wr += n;
	q->gen++;
}

static size_t bq_pop(struct bq *q, void *p, size_t n)
{
	if (n > bq_avail(q))
		n = bq_avail(q);
	if (p)
		memcpy(p, q->d + q->rd, n);
	q->rd += n;
	q->gen++;
	return n;
}

static void bq_free(struct bq *q)
{
	free(q->d);
	memset(q, 0, sizeof(*q));
}

/* ------------------------------------------------------------------ */
/* the mock transport (the CPU's: fakecpu.h)                          */

#define SCRIPT_MAX 8

struct mock {
	struct evr_conn c;      /* first: the session holds &c */
	struct bq *rx, *tx;     /* what we receive / what we send */
	size_t chunk;           /* partial I/O: at most this per call */
	int recv_script[SCRIPT_MAX]; /* one-shot results, used in order */
	unsigned recv_nscript, recv_iscript;
	int send_script[SCRIPT_MAX];
	unsigned send_nscript, send_iscript;
	int send_block;         /* sends return -EAGAIN while set */
	int send_err;           /* sends return this while set */
	int recv_err;           /* receives return this while set */
	unsigned sends, recvs, shutdowns, closes;
	size_t max_len;         /* the largest send or receive asked for */
	/* sends' more flag: bytes offered with it; a send with it pending
	 * (the transport may hold its bytes); receives or shutdowns that
	 * came while one was pending (the session's contract says never) */
	uint64_t more_bytes;
	int more_pending;
	unsigned more_broken;
	uint64_t skipped;       /* bytes received with buf NULL (can_skip) */
	/* the ready op (mock_ready_ops): -1 tells the truth (the queues
	 * moved since the last -EAGAIN), 0 or 1 is said every time */
	int ready_says;
	unsigned readies;       /* calls of ready */
	unsigned rx_gen, tx_gen; /* the queues at the last -EAGAIN */
	int eagain_seen;
	unsigned wasted;        /* calls that returned -EAGAIN with nothing
				 * moved since the last one did */
	/* receives return -EAGAIN until evr_now_ns() reaches this (a peer
	 * whose reply takes that long); the first and last such calls */
	uint64_t hold_until, held_first, held_last;
	/* while it holds: once, in the first call after the session's
	 * sched_yield numbered off_cpu_after (0: never), another task has
	 * taken the CPU (fake_taken): a preemption between two offers */
	unsigned off_cpu_after;
};

/* A call that returns -EAGAIN: was it one the ready op could have
 * saved? */
static ssize_t mock_eagain(struct mock *m, ssize_t ret)
{
	if (ret != -EAGAIN)
		return ret;
	if (m->eagain_seen && m->rx->gen == m->rx_gen &&
	    m->tx->gen == m->tx_gen)
		m->wasted++;
	m->eagain_seen = 1;
	m->rx_gen = m->rx->gen;
	m->tx_gen = m->tx->gen;
	return ret;
}

static ssize_t mock_send_(struct evr_conn *c, const void *buf, size_t len,
			  int more);
static ssize_t mock_recv_(struct evr_conn *c, void *buf, size_t len);

static ssize_t mock_send(struct evr_conn *c, const void *buf, size_t len,
			 int more)
{
	return mock_eagain((struct mock *)c, mock_send_(c, buf, len, more));
}

static ssize_t mock_recv(struct evr_conn *c, void *buf, size_t len)
{
	return mock_eagain((struct mock *)c, mock_recv_(c, buf, len));
}

static int mock_ready(struct evr_conn *c)
{
	struct mock *m = (struct mock *)c;

	m->readies++;
	if (m->ready_says >= 0)
		return m->ready_says;
	return !m->eagain_seen || m->rx->gen != m->rx_gen ||
	       m->tx->gen != m->tx_gen || m->rx->eof;
}

static ssize_t mock_send_(struct evr_conn *c, const void *buf, size_t len,
			  int more)
{
	struct mock *m = (struct mock *)c;
	size_t n = len;

	/* (no ck_assert on hot paths: each one is a write to Check's pipe) */
	if (m->closes || !len)
		ck_abort_msg("send on a closed conn or of 0 bytes");
	m->sends++;
	if (len > m->max_len)
		m->max_len = len;
	m->more_pending = more;
	if (more)
		m->more_bytes += len;
	if (m->send_iscript < m->send_nscript)
		return m->send_script[m->send_iscript++];
	if (m->send_err)
		return m->send_err;
	if (m->send_block)
		return -EAGAIN;
	if (m->tx->eof)
		ck_abort_msg("send after shutdown");
	if (m->chunk && n > m->chunk)
		n = m->chunk;
	if (m->tx->limit) {
		if (bq_avail(m->tx) >= m->tx->limit)
			return -EAGAIN;
		if (n > m->tx->limit - bq_avail(m->tx))
			n = m->tx->limit - bq_avail(m->tx);
	}
	bq_push(m->tx, buf, n);
	return (ssize_t)n;
}

static ssize_t mock_recv_(struct evr_conn *c, void *buf, size_t len)
{
	struct mock *m = (struct mock *)c;
	size_t n = len;

	if (m->closes || !len)
		ck_abort_msg("recv on a closed conn or of 0 bytes");
	m->recvs++;
	m->more_broken += m->more_pending;
	if (len > m->max_len)
		m->max_len = len;
	if (m->recv_iscript < m->recv_nscript)
		return m->recv_script[m->recv_iscript++];
	if (m->recv_err)
		return m->recv_err;
	if (m->hold_until) {
		uint64_t now = evr_now_ns();

		if (now < m->hold_until) {
			if (!m->held_first)
				m->held_first = now;
			m->held_last = now;
			if (m->off_cpu_after && fake_yields >= m->off_cpu_after) {
				m->off_cpu_after = 0;
				fake_taken++;
			}
			return -EAGAIN;
		}
	}
	if (!bq_avail(m->rx))
		return m->rx->eof ? 0 : -EAGAIN;
	if (m->chunk && n > m->chunk)
		n = m->chunk;
	if (!buf) {
		if (!m->c.can_skip)
			ck_abort_msg("recv(NULL) from a transport that cannot skip");
		n = bq_pop(m->rx, NULL, n);
		m->skipped += n;
		return (ssize_t)n;
	}
	return (ssize_t)bq_pop(m->rx, buf, n);
}

static void mock_shutdown(struct evr_conn *c)
{
	struct mock *m = (struct mock *)c;

	m->shutdowns++;
	m->tx->eof = 1;
}

static void mock_close(struct evr_conn *c)
{
	struct mock *m = (struct mock *)c;

	/* the mock belongs to the test: nothing to free */
	m->closes++;
}

static const struct evr_conn_ops mock_ops = {
	.send = mock_send,
	.recv = mock_recv,
	.shutdown = mock_shutdown,
	.close = mock_close,
};

static const struct evr_conn_ops mock_ready_ops = {
	.send = mock_send,
	.recv = mock_recv,
	.shutdown = mock_shutdown,
	.close = mock_close,
	.ready = mock_ready,
};

static void mock_init(struct mock *m, struct bq *rx, struct bq *tx,
		      const char *peer)
{
	memset(m, 0, sizeof(*m));
	m->c.ops = &mock_ops;
	m->c.fd = -1;
	snprintf(m->c.peer, sizeof(m->c.peer), "%s", peer);
	m->rx = rx;
	m->tx = tx;
}

static void script_recv(struct mock *m, int ret)
{
	ck_assert_uint_lt(m->recv_nscript, SCRIPT_MAX);
	m->recv_script[m->recv_nscript++] = ret;
}

static void script_send(struct mock *m, int ret)
{
	ck_assert_uint_lt(m->send_nscript, SCRIPT_MAX);
	m->send_script[m->send_nscript++] = ret;
}

/* ------------------------------------------------------------------ */
/* results, through the owner callbacks                                */

#define REC_MAX 70

struct rec {
	unsigned n;
	struct evr_test t[REC_MAX];
	uint64_t ns[REC_MAX];
	enum evr_sess_state state_at_result[REC_MAX];
	unsigned plan_done;
	enum evr_sess_state state_at_plan_done;
	unsigned results_at_plan_done;
	uint64_t lat_samples[REC_MAX]; /* 0 when no latency stats came */
	int split_valid[REC_MAX];      /* --split: the parts came */
	struct evr_lat_split split[REC_MAX];
};

static void rec_result(struct evr_sess *s, const struct evr_test *t,
		       uint64_t ns)
{
	struct rec *r = s->owner_ud;

	ck_assert_uint_lt(r->n, REC_MAX);
	r->t[r->n] = *t;
	r->ns[r->n] = ns;
	r->state_at_result[r->n] = s->state;
	r->lat_samples[r->n] = evr__sess_lat_valid(s) ? s->lat_res.samples : 0;
	r->split_valid[r->n] = evr__sess_split_valid(s);
	if (evr__sess_split_valid(s))
		r->split[r->n] = s->split->res;
	r->n++;
}

static void rec_plan_done(struct evr_sess *s)
{
	struct rec *r = s->owner_ud;

	r->plan_done++;
	r->state_at_plan_done = s->state;
	r->results_at_plan_done = r->n;
}

static const struct evr_sess_owner rec_owner = {
	.result = rec_result,
	.plan_done = rec_plan_done,
};

static void assert_result(const struct rec *r, unsigned i, const char *name,
			  uint32_t size, uint32_t count, uint32_t iters)
{
	ck_assert_msg(i < r->n, "result %u missing (%u results)", i, r->n);
	ck_assert_str_eq(r->t[i].name, name);
	ck_assert_uint_eq(r->t[i].size, size);
	ck_assert_uint_eq(r->t[i].count, count);
	ck_assert_uint_eq(r->t[i].iters, iters);
}

/* ------------------------------------------------------------------ */
/* fixture: a loop, two queues, a mock and a session                   */

static struct evr_loop *loop;
static struct bq q_in, q_out;   /* q_in: peer -> us, q_out: us -> peer */
static struct mock m;
static struct evr_sess s;
static struct rec rec;
static int s_live;

static void setup(void)
{
	ck_assert_int_eq(evr_loop_new(&loop, NULL), 0);
	memset(&q_in, 0, sizeof(q_in));
	memset(&q_out, 0, sizeof(q_out));
	memset(&rec, 0, sizeof(rec));
	mock_init(&m, &q_in, &q_out, "192.0.2.1:7471");
	s_live = 0;
}

static void teardown(void)
{
	if (s_live) {
		evr__sess_fini(&s);
		s_live = 0;
	}
	bq_free(&q_in);
	bq_free(&q_out);
	evr_loop_free(loop);
	loop = NULL;
}

static void reset_fixture(void)
{
	if (s_live) {
		evr__sess_fini(&s);
		s_live = 0;
	}
	bq_free(&q_in);
	bq_free(&q_out);
	memset(&rec, 0, sizeof(rec));
	mock_init(&m, &q_in, &q_out, "192.0.2.1:7471");
}

static void base_opts(struct evr_stream_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->io = EVR_IO_NONBLOCK;
	o->port = EVR_DEFAULT_PORT;
}

static void custom_plan(struct evr_conn_plan *cp, uint32_t size,
			uint32_t count, uint32_t iters)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	base_opts(&o);
	o.custom = 1;
	o.size = size;
	o.count = count;
	o.iters = iters;
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	*cp = p.conns[0];
}

/* Two latency tests, with fewer iterations than upstream's. */
static void lat2_plan(struct evr_conn_plan *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->opt = EVR_OPT_LATENCY;
	cp->ntests = 2;
	evr__test_init(&cp->tests[0], EVR_TEST_LAT, 64, 0, 0);
	cp->tests[0].iters = 50;
	evr__test_init(&cp->tests[1], EVR_TEST_LAT, 1536, 0, 0);
	cp->tests[1].iters = 20;
}

static void default_lat_plan(struct evr_conn_plan *cp)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	base_opts(&o);
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	*cp = p.conns[0];
}

static void start_sess(int client, const struct evr_conn_plan *cp,
		       const struct evr_stream_opts *o)
{
	ck_assert_int_eq(evr__sess_init(&s, loop, client, cp, 0, 1, o), 0);
	s_live = 1;
	s.id = client ? 1 : 2;
	s.owner = &rec_owner;
	s.owner_ud = &rec;
	evr__sess_attach(&s, &m.c);
	ck_assert_int_eq(s.state, EVR_SS_CONNECTING);
}

static enum evr_sess_want ev(enum evr_sess_event e, int arg)
{
	return evr__sess_event(&s, e, arg);
}

static enum evr_sess_want ready(void)
{
	return evr__sess_event(&s, EVR_SE_READY, 0);
}

/* READY until the machine waits for I/O or ends (not just fake_yields). */
static enum evr_sess_want settle(void)
{
	enum evr_sess_want w;
	unsigned i = 0;

	do {
		w = ready();
		if (++i >= 100000)
			ck_abort_msg("still yielding");
	} while (w == EVR_WANT_YIELD);
	return w;
}

#define ASSERT_AT(want_w, got_w, st) do { \
	enum evr_sess_want w__ = (got_w); \
	ck_assert_msg(w__ == (want_w), "want %d, got %d (state %s)", \
		      (int)(want_w), (int)w__, \
		      evr__sess_state_name(s.state)); \
	ck_assert_msg(s.state == (st), "state %s, expected %s", \
		      evr__sess_state_name(s.state), \
		      evr__sess_state_name(st)); \
} while (0)

static void feed(const void *p, size_t n)
{
	bq_push(&q_in, p, n);
}

static void feed_zeros(size_t n)
{
	uint8_t *z = calloc(1, n);

	ck_assert_ptr_nonnull(z);
	feed(z, n);
	free(z);
}

static void feed_pattern(struct evr_pattern *p, size_t n)
{
	uint8_t *b = malloc(n);

	ck_assert_ptr_nonnull(b);
	evr__pattern_fill(p, b, n);
	feed(b, n);
	free(b);
}

/* Take exactly n bytes the session sent. */
static void take(void *p, size_t n)
{
	ck_assert_msg(bq_avail(&q_out) >= n, "sent %zu bytes, expected %zu",
		      bq_avail(&q_out), n);
	bq_pop(&q_out, p, n);
}

static void take_discard(size_t n)
{
	take(NULL, n);
}

static void take_expect_pattern(struct evr_pattern *p, size_t n)
{
	uint8_t *b = malloc(n);
	uint64_t bad = 0;

	ck_assert_ptr_nonnull(b);
	take(b, n);
	ck_assert_msg(!evr__pattern_check(p, b, n, &bad),
		      "sent data breaks the pattern at %llu",
		      (unsigned long long)bad);
	free(b);
}

static void feed_hdr(uint16_t version, uint16_t flags, uint16_t ntests,
		     uint16_t idx, uint16_t total)
{
	struct evr_plan_hdr h = {
		.version = version, .flags = flags, .ntests = ntests,
		.conn_index = idx, .conn_total = total,
	};
	uint8_t b[EVR_PLAN_HDR_LEN];

	evr__plan_hdr_encode(b, &h);
	feed(b, sizeof(b));
}

static void feed_entry_f(uint32_t size, uint32_t count, uint32_t iters,
			 uint8_t kind, uint8_t flags)
{
	struct evr_test t;
	uint8_t b[EVR_PLAN_ENTRY_LEN];

	memset(&t, 0, sizeof(t));
	t.size = size;
	t.count = count;
	t.iters = iters;
	t.kind = kind;
	t.flags = flags;
	evr__plan_entry_encode(b, &t);
	feed(b, sizeof(b));
}

static void feed_entry(uint32_t size, uint32_t count, uint32_t iters,
		       uint8_t kind)
{
	feed_entry_f(size, count, iters, kind, 0);
}

static void feed_reply_f(int status, uint32_t features)
{
	uint8_t b[EVR_PLAN_REPLY_LEN];

	evr__plan_reply_encode(b, status, EVR_MAX_XFER_SIZE);
	evr__plan_reply_set_features(b, features);
	feed(b, sizeof(b));
}

/* A reply as a server before the features sends it (zeros there). */
static void feed_reply(int status)
{
	feed_reply_f(status, 0);
}

static void assert_failed(int err, enum evr_phase ph)
{
	ck_assert_msg(s.state == EVR_SS_FAILED, "state %s, not FAILED",
		      evr__sess_state_name(s.state));
	ck_assert_msg(s.fail.err == err, "err %d, expected %d", s.fail.err,
		      err);
	ck_assert_msg(s.fail.phase == ph, "phase %d, expected %d",
		      (int)s.fail.phase, (int)ph);
	ck_assert_str_eq(s.fail.peer, "192.0.2.1:7471");
	ck_assert_int_eq(s.fail.negotiated,
			 evr__sess_has(&s, EVR_SF_NEGOTIATED));
}

/* A terminal machine ignores everything. */
static void assert_terminal_sticks(void)
{
	enum evr_sess_state st = s.state;
	struct evr_failure f = s.fail;
	unsigned r = m.recvs, w = m.sends, n = rec.n;

	feed_zeros(64);
	ck_assert_int_eq(ev(EVR_SE_READY, 0), EVR_WANT_NONE);
	ck_assert_int_eq(ev(EVR_SE_STALL, 0), EVR_WANT_NONE);
	ck_assert_int_eq(ev(EVR_SE_CANCEL, 0), EVR_WANT_NONE);
	ck_assert_int_eq(ev(EVR_SE_CONNECTED, 0), EVR_WANT_NONE);
	ck_assert_int_eq(ev(EVR_SE_CONN_ERROR, -EPIPE), EVR_WANT_NONE);
	ck_assert_int_eq(s.state, st);
	ck_assert_int_eq(s.fail.err, f.err);
	ck_assert_int_eq(s.fail.phase, f.phase);
	ck_assert_int_eq(s.fail.detail, f.detail);
	ck_assert_uint_eq(m.recvs, r);
	ck_assert_uint_eq(m.sends, w);
	ck_assert_uint_eq(rec.n, n);
}

/* ------------------------------------------------------------------ */
/* state names                                                         */

START_TEST(test_state_names)
{
	static const char *const names[] = {
		"CONNECTING", "HELLO_SEND", "HELLO_RECV", "PLAN_SEND",
		"REPLY_RECV", "FIRST_RECV", "ACK_SEND", "PLAN_HDR_RECV",
		"PLAN_RECV", "REPLY_SEND", "SYNC_SEND", "SYNC_RECV",
		"DATA_SEND", "DATA_RECV", "DRAIN", "DONE", "FAILED",
	};
	unsigned i;

	ck_assert_uint_eq(EVR_SS__COUNT, sizeof(names) / sizeof(names[0]));
	for (i = 0; i < EVR_SS__COUNT; i++)
		ck_assert_str_eq(evr__sess_state_name(i), names[i]);
	ck_assert_str_eq(evr__sess_state_name(EVR_SS__COUNT), "?");
	ck_assert_str_eq(evr__sess_state_name((enum evr_sess_state)-1), "?");
}
END_TEST

START_TEST(test_init)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ck_assert_int_eq(s.client, 1);
	ck_assert_ptr_eq(s.loop, loop);
	ck_assert_ptr_eq(s.conn, &m.c);
	ck_assert_uint_eq(s.stall_ms, EVR_DEFAULT_STALL_MS);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 0);
	ck_assert_uint_eq(s.plan.ntests, 1);
	ck_assert_uint_eq(s.plan.tests[0].size, 100);
	/* a sync message's worth; each test grows it to its size */
	ck_assert_ptr_nonnull(s.buf);
	ck_assert_uint_eq(s.bufsize, EVR_SYNC_LEN);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(m.closes, 1);
	ck_assert_ptr_null(s.conn);
	ck_assert_ptr_null(s.buf);

	/* the buffer holds at least a sync message; options are taken */
	custom_plan(&cp, 1, 1, 1);
	o.stall_ms = 2500;
	o.no_negotiate = 1;
	o.verify = 1;
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	s_live = 1;
	ck_assert_uint_ge(s.bufsize, EVR_SYNC_LEN);
	ck_assert_uint_eq(s.stall_ms, 2500);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 1);
	ck_assert_ptr_null(s.conn);
	/* no conn attached: fini closes nothing */
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(m.closes, 1);

	/* -T v alone does not negotiate (upstream servers verify the
	 * first sync); --negotiate makes it */
	o.no_negotiate = 0;
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
	evr__sess_fini(&s);
	o.force_negotiate = 1;
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 1);
	evr__sess_fini(&s);

	/* a server never negotiates on its own initiative */
	ck_assert_int_eq(evr__sess_init(&s, loop, 0, &cp, 0, 1, &o), 0);
	s_live = 1;
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* client with negotiation                                             */

START_TEST(test_client_negotiated_steps)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan_hdr h;
	struct evr_test t;
	uint8_t b[64];
	unsigned it;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);

	ASSERT_AT(EVR_WANT_CONNECT, ready(), EVR_SS_CONNECTING);
	ck_assert_uint_eq(m.sends + m.recvs, 0);

	m.send_block = 1;
	ASSERT_AT(EVR_WANT_WRITE, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_SEND);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_HELLO_RECV);
	take(b, 16);
	ck_assert(evr__is_hello(b));
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_HELLO_RECV);

	/* the ACK, in two pieces */
	feed(evr__ack_msg, 5);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_HELLO_RECV);
	m.send_block = 1;
	feed(evr__ack_msg + 5, 11);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_PLAN_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);

	/* a valid plan: header + one entry */
	ck_assert_uint_eq(bq_avail(&q_out), 32);
	take(b, 32);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.version, EVR_WIRE_VERSION);
	ck_assert_uint_eq(h.flags, 0);
	ck_assert_uint_eq(h.ntests, 1);
	ck_assert_uint_eq(h.conn_index, 0);
	ck_assert_uint_eq(h.conn_total, 1);
	ck_assert_int_eq(evr__plan_entry_decode(b + 16, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(t.name, "custom");
	ck_assert_uint_eq(t.kind, EVR_TEST_CUSTOM);
	ck_assert_uint_eq(t.size, 100);
	ck_assert_uint_eq(t.count, 3);
	ck_assert_uint_eq(t.iters, 4);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);

	m.send_block = 1;
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_SYNC_SEND);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	ck_assert_uint_eq(bq_avail(&q_out), 0);

	m.send_block = 1;
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_DATA_SEND);
	m.send_block = 0;
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		ck_assert_uint_eq(s.iter, it);
		/* the client sends all of an iteration before receiving */
		ck_assert_uint_eq(bq_avail(&q_out), 300);
		take_discard(300);
		ck_assert_uint_eq(rec.n, 0);
		feed_zeros(150);
		ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
		feed_zeros(150);
		if (it < 3)
			continue;
		ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	}
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	/* the plan is over after the last result, before the shutdown */
	ck_assert_uint_eq(rec.plan_done, 1);
	ck_assert_uint_eq(rec.results_at_plan_done, 1);
	ck_assert_int_eq(rec.state_at_plan_done, EVR_SS_DATA_RECV);
	ck_assert_uint_eq(m.shutdowns, 1);
	ck_assert_uint_eq(m.closes, 0);
	/* hello, ack, plan, reply, two syncs, 4 x (300 + 300) */
	ck_assert_uint_eq(s.bytes, 16 + 16 + 32 + 16 + 32 + 2400);
	ck_assert_int_eq(s.fail.err, 0);
	assert_terminal_sticks();
}
END_TEST

/* Client up to REPLY_RECV, with the plan consumed from the output. */
static void client_to_reply_recv(const struct evr_conn_plan *cp,
				 const struct evr_stream_opts *o)
{
	start_sess(1, cp, o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(16 + 16 + cp->ntests * 16);
}

START_TEST(test_client_plan_bytes_lat2)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan_hdr h;
	struct evr_test t;
	uint8_t b[16 + 3 * 16];

	base_opts(&o);
	lat2_plan(&cp);
	start_sess(1, &cp, &o);
	s.conn_index = 1;
	s.conn_total = 2;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(16);
	ck_assert_uint_eq(bq_avail(&q_out), 48);
	take(b, 48);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.ntests, 2);
	ck_assert_uint_eq(h.conn_index, 1);
	ck_assert_uint_eq(h.conn_total, 2);
	ck_assert_int_eq(evr__plan_entry_decode(b + 16, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(t.name, "64_lat");
	ck_assert_uint_eq(t.kind, EVR_TEST_LAT);
	ck_assert_uint_eq(t.count, 1);
	ck_assert_uint_eq(t.iters, 50);
	ck_assert_int_eq(evr__plan_entry_decode(b + 32, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_str_eq(t.name, "1.5k_lat");
	ck_assert_uint_eq(t.size, 1536);
	ck_assert_uint_eq(t.iters, 20);
}
END_TEST

START_TEST(test_client_rejected)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	client_to_reply_recv(&cp, &o);
	feed_reply(EVR_PLAN_E_SIZE);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_SIZE);
	ck_assert_str_eq(s.fail.test, "");
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_client_rejected_each_status)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	int st;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	for (st = 1; st < EVR_PLAN_E_MAX; st++) {
		client_to_reply_recv(&cp, &o);
		feed_reply(st);
		ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
		assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
		ck_assert_int_eq(s.fail.detail, st);
		reset_fixture();
	}
}
END_TEST

START_TEST(test_client_garbage_reply)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	client_to_reply_recv(&cp, &o);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_client_upstream_server)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];
	unsigned it;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take(b, 16);
	ck_assert(evr__is_hello(b));
	/* an upstream server answers the "sync" with its own 16 bytes:
	 * that exchange was the first test's sync, data starts at once */
	m.send_block = 1;
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_DATA_SEND);
	ck_assert_uint_eq(s.ti, 0);
	m.send_block = 0;
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		/* no plan, no second sync: just the data */
		ck_assert_uint_eq(bq_avail(&q_out), 300);
		take_discard(300);
		feed_zeros(300);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	ck_assert_uint_eq(m.shutdowns, 1);
}
END_TEST

/* -D: the plan says version 2 with the duration flag and iterations as
 * an upper bound; each iteration's first transfer starts with its mark,
 * and the test ends after the iteration marked LAST. */
START_TEST(test_client_duration)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_plan_hdr h;
	struct evr_test t;
	uint8_t b[64];
	unsigned it;

	base_opts(&o);
	o.duration_ms = 1000;
	o.percentiles = 1;
	custom_plan(&cp, 10, 2, 5);
	start_sess(1, &cp, &o);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_DURATION), 1);
	ck_assert_uint_eq(s.dur_ns, 1000000000ull);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take(b, 32);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.version, EVR_WIRE_VERSION_DURATION);
	ck_assert_uint_eq(h.flags, EVR_PLAN_F_DURATION);
	ck_assert_int_eq(evr__plan_entry_decode(b + 16, &t, EVR_MAX_XFER_SIZE),
			 EVR_PLAN_OK);
	ck_assert_uint_eq(t.iters, EVR_MAX_COUNT);
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	s.dur_ns = UINT64_MAX / 2;   /* no deadline yet */
	feed_zeros(16);
	for (it = 0; it < 3; it++) {
		if (it == 2)
			s.dur_ns = 0;   /* the deadline has passed */
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take(b, 20);
		ck_assert_uint_eq(b[0], it < 2 ? EVR_ITER_MORE : EVR_ITER_LAST);
		feed_zeros(20);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	/* the row holds the iterations run, not the cap */
	assert_result(&rec, 0, "custom", 10, 2, 3);
	ck_assert_uint_eq(rec.lat_samples[0], 3);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
}
END_TEST

/* -D with a server that takes the END mark (its reply says so): the test
 * ends at the first iteration boundary past the deadline with a transfer
 * marked END, which the server does not echo: an iteration longer than
 * the duration runs once (a LAST mark runs the iteration it starts:
 * two 1m_bw iterations of 8.5 s each for -D 0.2 on Soft-RoCE). */
START_TEST(test_client_duration_end)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[64];

	base_opts(&o);
	o.duration_ms = 1000;
	o.percentiles = 1;
	custom_plan(&cp, 10, 2, 5);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(32);
	feed_reply_f(EVR_PLAN_OK, EVR_REPLY_F_END);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	s.dur_ns = UINT64_MAX / 2;   /* no deadline yet */
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take(b, 20);
	ck_assert_uint_eq(b[0], EVR_ITER_MORE);
	s.dur_ns = 0;                /* the deadline passes meanwhile */
	feed_zeros(20);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	/* one transfer, marked END, and nothing after it */
	ck_assert_uint_eq(bq_avail(&q_out), 10);
	take(b, 10);
	ck_assert_uint_eq(b[0], EVR_ITER_END);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 10, 2, 1);
	ck_assert_uint_eq(rec.lat_samples[0], 1);
}
END_TEST

/* -D against a server that does not negotiate: fail before any data. */
START_TEST(test_client_duration_upstream)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.duration_ms = 500;
	custom_plan(&cp, 100, 1, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_NOTSUP, EVR_PH_NEGOTIATE);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 0);
}
END_TEST

/* -c N against a server that does not negotiate (upstream's serves one
 * connection at a time; the others waited in its backlog for the stall
 * timeout): the first connection that hears it fails, not supported. */
START_TEST(test_client_conns_upstream)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.conns = 2;
	custom_plan(&cp, 100, 1, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_NOTSUP, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_NOTSUP_CONNS);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 0);
}
END_TEST

/* --percentiles: one sample per iteration, handed with the result. */
START_TEST(test_client_percentiles)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	o.percentiles = 1;
	o.no_negotiate = 1;
	custom_plan(&cp, 8, 1, 7);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
	for (it = 0; it < 7; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(8);
		feed_zeros(8);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_uint_eq(rec.lat_samples[0], 7);
	ck_assert_int_eq(evr__sess_lat_valid(&s), 0);
}
END_TEST

/* --split, client: the plan asks for hold stamps; a server that takes
 * them stamps each echo, and the test's round trips come in parts (the
 * mock has no receive timestamps: no local part). */
/* A --split client through its negotiation, the server's reply carrying
 * features, and the first sync: at its first data transfer.  The plan it
 * sent in plan[32]. */
static void split_client_start(const struct evr_conn_plan *cp,
			       const struct evr_stream_opts *o,
			       uint32_t features, uint8_t *plan)
{
	start_sess(1, cp, o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take(plan, 32);
	feed_reply_f(EVR_PLAN_OK, features);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
}

START_TEST(test_client_split)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[64], plan[32];
	unsigned it;

	base_opts(&o);
	o.lat_split = 1;
	custom_plan(&cp, 64, 1, 3);
	split_client_start(&cp, &o, EVR_REPLY_F_END | EVR_REPLY_F_HOLD, plan);
	ck_assert_uint_eq(plan[EVR_PLAN_HDR_LEN + 13], EVR_TEST_F_HOLD);
	for (it = 0; it < 3; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		memset(b, 0, sizeof(b));
		/* held 1, 2, 3 ns: less than any round trip, even the
		 * mock's (it takes well under a microsecond on a fast host,
		 * which made holds of 1 to 3 usec "longer than the round
		 * trip", rejected, now and then) */
		evr__put64(b, it + 1);
		/* in two pieces: the stamp's bytes split across reads */
		feed(b, 5);
		ck_assert_int_eq(ready(), EVR_WANT_READ);
		feed(b + 5, sizeof(b) - 5);
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_int_eq(rec.split_valid[0], 1);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].samples, 3);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].min_ns, 1);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].p50_ns, 2);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].max_ns, 3);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_NET].samples, 3);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_LOCAL].samples, 0);
	ck_assert_uint_eq(rec.split[0].rejected, 0);

	/* a hold longer than the round trip: left out, counted */
	reset_fixture();
	split_client_start(&cp, &o, EVR_REPLY_F_END | EVR_REPLY_F_HOLD, plan);
	for (it = 0; it < 3; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		memset(b, 0, sizeof(b));
		evr__put64(b, it == 1 ? UINT64_MAX : 10);
		feed(b, sizeof(b));
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_int_eq(rec.split_valid[0], 1);
	ck_assert_uint_eq(rec.split[0].rejected, 1);
	ck_assert_uint_eq(rec.split[0].part[EVR_SPLIT_PEER].samples, 2);

	/* a server before hold stamps (no feature): no parts, and its
	 * echo is not read as one */
	reset_fixture();
	split_client_start(&cp, &o, EVR_REPLY_F_END, plan);
	for (it = 0; it < 3; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		feed_zeros(64);
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_int_eq(rec.split_valid[0], 0);
	ck_assert_ptr_null(s.split);

	/* tests under 8 bytes, and verification, ask for none */
	reset_fixture();
	custom_plan(&cp, 7, 1, 3);
	start_sess(1, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ready();
	take(plan, sizeof(plan));
	ck_assert_uint_eq(plan[EVR_PLAN_HDR_LEN + 13], 0);
	reset_fixture();
	custom_plan(&cp, 64, 1, 3);
	o.verify = 1;
	o.force_negotiate = 1;
	start_sess(1, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	take_discard(16);
	feed(evr__ack_msg, 16);
	ready();
	take(plan, sizeof(plan));
	ck_assert_uint_eq(plan[EVR_PLAN_HDR_LEN + 13], 0);
}
END_TEST

/* The server's side of hold stamps: only for an entry that asks, over
 * the first 8 bytes of each echo's last transfer, from the kernel's
 * arrival time when the transport gives one, else from the read. */
static uint64_t serve_stamped(int ask, uint64_t rx_after_floor_ns,
			      unsigned sleep_us, uint8_t *echo)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t r[EVR_PLAN_REPLY_LEN], d[64];

	base_opts(&o);
	custom_plan(&cp, 64, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	if (ask)
		feed_entry_f(64, 2, 1, EVR_TEST_CUSTOM, EVR_TEST_F_HOLD);
	else
		feed_entry(64, 2, 1, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take(r, sizeof(r));
	ck_assert_uint_eq(evr__plan_reply_features(r) & EVR_REPLY_F_HOLD,
			  EVR_REPLY_F_HOLD);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	memset(d, 0x11, sizeof(d));
	feed(d, sizeof(d));
	feed(d, sizeof(d));
	/* the kernel's stamp: some time after the test's start */
	m.c.rx_rt_ns = rx_after_floor_ns == UINT64_MAX ? 1 : /* stale */
		       rx_after_floor_ns ? s.rx_floor_rt + rx_after_floor_ns :
					   0;
	usleep(sleep_us);
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	/* two transfers: only the last carries the stamp */
	take(d, sizeof(d));
	memset(r, 0x11, sizeof(r));
	ck_assert_mem_eq(d, r, 8);
	take(echo, 64);
	return evr__get64(echo);
}

START_TEST(test_server_hold_stamps)
{
	uint8_t e[64], want[64];
	uint64_t h;

	memset(want, 0x11, sizeof(want));
	/* not asked: the echo is the request */
	serve_stamped(0, 0, 0, e);
	ck_assert_mem_eq(e, want, 64);
	/* asked, the kernel's arrival 1 usec after the start, 30 ms
	 * before the read: the hold counts those 30 ms */
	reset_fixture();
	h = serve_stamped(1, 1000, 30000, e);
	ck_assert_mem_eq(e + 8, want + 8, 56);
	ck_assert_uint_ge(h, 30000000);
	ck_assert_uint_lt(h, 5000000000ull);
	/* no kernel stamp: the hold starts at the read */
	reset_fixture();
	h = serve_stamped(1, 0, 30000, e);
	ck_assert_uint_lt(h, 30000000);
	/* a stamp from before the test (a stale one): not believed */
	reset_fixture();
	h = serve_stamped(1, UINT64_MAX, 30000, e);
	ck_assert_uint_lt(h, 30000000);
}
END_TEST

/* The server in duration mode: reads each iteration's mark. */
START_TEST(test_server_duration)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t d[10];
	unsigned it;

	base_opts(&o);
	default_lat_plan(&cp);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(10, 2, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_DURATION), 1);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	memset(d, 0, sizeof(d));
	for (it = 0; it < 4; it++) {
		d[0] = it < 3 ? EVR_ITER_MORE : EVR_ITER_LAST;
		feed(d, 10);
		d[0] = 0x55; /* only the first transfer carries the mark */
		feed(d, 10);
		if (it < 3) {
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
			take_discard(20);
		}
	}
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	take_discard(20);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 10, 2, 4);

	/* the reply says it takes END marks; one ends the test after an
	 * iteration, read and not echoed */
	reset_fixture();
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(10, 2, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	{
		uint8_t r[EVR_PLAN_REPLY_LEN];

		take(r, sizeof(r));
		ck_assert_int_eq(evr__plan_reply_decode(r, NULL), EVR_PLAN_OK);
		ck_assert_uint_eq(evr__plan_reply_features(r) &
				  EVR_REPLY_F_END, EVR_REPLY_F_END);
	}
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	d[0] = EVR_ITER_MORE;
	feed(d, 10);
	feed(d, 10);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take_discard(20);
	d[0] = EVR_ITER_END;
	feed(d, 10);
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 10, 2, 1);

	/* anything else where a mark belongs is a protocol error */
	reset_fixture();
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(10, 1, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	feed_zeros(16);
	d[0] = 'X';
	feed(d, 10);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_RECV);

	/* a version-1 plan with the duration flag is refused */
	reset_fixture();
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, EVR_PLAN_F_DURATION, 1, 0, 1);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_FLAGS);
}
END_TEST

/* -D through a chunked server: the mark is the first byte of an
 * iteration's first transfer, read from its first piece only; a piece
 * further in that starts with anything is data. */
START_TEST(test_server_duration_chunked)
{
	enum { SZ = 200000, CH = 65536 };
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t *d = calloc(1, SZ);
	unsigned it;

	ck_assert_ptr_nonnull(d);
	base_opts(&o);
	o.chunk_size = CH;
	default_lat_plan(&cp);
	start_sess(0, &cp, &o);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION_DURATION, EVR_PLAN_F_DURATION, 1, 0, 1);
	feed_entry(SZ, 1, EVR_MAX_COUNT, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
	take_discard(32);
	ck_assert_uint_le(s.bufsize, CH);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take_discard(16);
	d[CH] = 'X';     /* the second piece's first byte: no mark */
	d[2 * CH] = EVR_ITER_LAST;
	for (it = 0; it < 3; it++) {
		d[0] = it < 2 ? EVR_ITER_MORE : EVR_ITER_LAST;
		feed(d, SZ);
		if (it < 2) {
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
			take_discard(SZ);
		}
	}
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	take_discard(SZ);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", SZ, 1, 3);
	ck_assert_uint_le(s.bufsize, CH);
	ck_assert_uint_le(m.max_len, CH);
	free(d);
}
END_TEST

/* The memory budget: a plan whose buffer the budget cannot take is
 * refused with its own reason and what is left; one that fits is
 * charged, and the charge comes back when the machine goes. */
START_TEST(test_server_budget)
{
	struct evr_membudget bg = { .used = 0, .max = 100000 };
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];
	uint32_t limit = 0;

	base_opts(&o);              /* chunk: 1 MiB */
	default_lat_plan(&cp);
	start_sess(0, &cp, &o);
	evr__sess_set_budget(&s, &bg);
	ck_assert_uint_eq(bg.used, EVR_SYNC_LEN);
	bg.used += 30000;           /* another connection's */
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(4 << 20, 1, 1, EVR_TEST_CUSTOM); /* needs the chunk */
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_BUDGET);
	take_discard(16);
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), EVR_PLAN_E_BUDGET);
	ck_assert_uint_eq(limit, 100000 - 30000);
	ck_assert_uint_eq(bg.used, 30000 + EVR_SYNC_LEN);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(bg.used, 30000);

	/* 60000 bytes fit in the 70000 left */
	reset_fixture();
	start_sess(0, &cp, &o);
	evr__sess_set_budget(&s, &bg);
	ev(EVR_SE_CONNECTED, 0);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(60000, 1, 1, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
	take_discard(16);
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, NULL), EVR_PLAN_OK);
	ck_assert_uint_eq(bg.used, 30000 + 60000);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(bg.used, 30000);

	/* an upstream client's test (the server's own plan) that the
	 * budget cannot take fails the connection, saying why */
	reset_fixture();
	bg.used = 99990;
	custom_plan(&cp, 60000, 1, 1);
	start_sess(0, &cp, &o);
	evr__sess_set_budget(&s, &bg);
	ev(EVR_SE_CONNECTED, 0);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	take_discard(16);           /* the sync went back first */
	ck_assert_int_eq(s.fail.err, -ENOBUFS);
	ck_assert_int_eq(s.fail.phase, EVR_PH_SYNC);
	/* the call, and the limit it met as a fact */
	ck_assert_str_eq(s.fail.where, "buffer");
	ck_assert_int_eq(s.fail.detail, EVR_REJECT_BUDGET);
	evr__sess_fini(&s);
	s_live = 0;
	ck_assert_uint_eq(bg.used, 99990);
}
END_TEST

/* A server at its --max-conns sends BUSY at once: a client says so,
 * negotiating (in place of the ACK) or not (in place of the sync). */
START_TEST(test_client_server_busy)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	char line[512];

	base_opts(&o);
	custom_plan(&cp, 100, 1, 1);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__busy_msg, 16);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_CONNS);
	evr_failure_str(&s.fail, line, sizeof(line));
	/* the engine's words: rstream adds its option (check_cli) */
	ck_assert_msg(strstr(line, "connection refused") &&
		      strstr(line, "as many connections as it allows") &&
		      !strstr(line, "--"), "%s", line);

	reset_fixture();
	o.no_negotiate = 1;
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	feed(evr__busy_msg, 16);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_REJECTED, EVR_PH_SYNC);
	ck_assert_int_eq(s.fail.detail, EVR_PLAN_E_CONNS);
}
END_TEST

START_TEST(test_client_verify_no_hello)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 }, peer_rx = { 0 };
	unsigned it;

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	m.send_block = 1;
	ASSERT_AT(EVR_WANT_WRITE, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	/* the first thing sent is the pattern 0..15, not a HELLO */
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 16);
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_expect_pattern(&peer_rx, 300);
		feed_pattern(&peer_tx, 300);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(s.spat.next, (16 + 1200) & 0xff);
	ck_assert_uint_eq(s.rpat.total, 16 + 1200);
}
END_TEST

START_TEST(test_client_verify_failure)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 };
	uint8_t b[300];

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	feed_pattern(&peer_tx, 16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	feed_pattern(&peer_tx, 300);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	/* second iteration: the second transfer has a bad byte at 42 */
	evr__pattern_fill(&peer_tx, b, 300);
	b[142] ^= 0xff;
	feed(b, 300);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_RECV);
	ck_assert_uint_eq(s.fail.bytes_done, 16 + 300 + 142);
	ck_assert_str_eq(s.fail.where, "verify");
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.iters_done, 1);
	ck_assert_uint_eq(s.fail.iters_total, 4);
	ck_assert_uint_eq(s.fail.xfers_done, 1);
	ck_assert_uint_eq(s.fail.xfers_total, 3);
	ck_assert_uint_eq(rec.n, 0);
}
END_TEST

START_TEST(test_client_verify_bad_sync)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	/* an upstream server without -T v answers with zeros */
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_SYNC);
	ck_assert_uint_eq(s.fail.bytes_done, 1);
}
END_TEST

START_TEST(test_client_verify_negotiated)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 }, peer_rx = { 0 };
	struct evr_plan_hdr h;
	uint8_t b[32];
	unsigned it;

	base_opts(&o);
	o.verify = 1;
	o.force_negotiate = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	take(b, 16);
	ck_assert(evr__is_hello(b));
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take(b, 32);
	ck_assert_int_eq(evr__plan_hdr_decode(b, &h), EVR_PLAN_OK);
	ck_assert_uint_eq(h.flags, EVR_PLAN_F_VERIFY);
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	/* negotiation bytes are not part of the pattern */
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 16);
	for (it = 0; it < 4; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_expect_pattern(&peer_rx, 300);
		feed_pattern(&peer_tx, 300);
	}
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	ck_assert_uint_eq(s.rpat.total, 16 + 1200);
}
END_TEST

START_TEST(test_client_no_negotiate)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];

	base_opts(&o);
	o.no_negotiate = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATE), 0);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take(b, 16);
	ck_assert(!evr__is_hello(b));
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 300);
}
END_TEST

START_TEST(test_client_lat2_negotiated)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	lat2_plan(&cp);
	client_to_reply_recv(&cp, &o);
	feed_reply(EVR_PLAN_OK);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
	for (it = 0; it < 50; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(64);
		feed_zeros(64);
	}
	/* the first test is over: its result, then the next sync */
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_uint_eq(rec.plan_done, 0);
	assert_result(&rec, 0, "64_lat", 64, 1, 50);
	ck_assert_uint_eq(s.ti, 1);
	take_discard(16);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	feed_zeros(16);
	for (it = 0; it < 20; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_discard(1536);
		feed_zeros(1536);
	}
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 2);
	ck_assert_uint_eq(rec.plan_done, 1);
	assert_result(&rec, 1, "1.5k_lat", 1536, 1, 20);
	ck_assert_uint_eq(m.shutdowns, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* server                                                              */

START_TEST(test_server_negotiated_steps)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	uint8_t b[16];
	uint32_t limit = 0;
	unsigned it;

	base_opts(&o);
	default_lat_plan(&cp);      /* the server's own plan differs */
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 0);

	m.send_block = 1;
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_ACK_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take(b, 16);
	ck_assert(evr__is_ack(b));

	feed_hdr(EVR_WIRE_VERSION, 0, 1, 1, 2);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	m.send_block = 1;
	feed_entry(100, 3, 4, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_REPLY_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, &limit), EVR_PLAN_OK);
	ck_assert_uint_eq(limit, EVR_MAX_XFER_SIZE);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 0);
	ck_assert_uint_eq(s.conn_index, 1);
	ck_assert_uint_eq(s.conn_total, 2);
	ck_assert_uint_eq(s.plan.ntests, 1);
	ck_assert_str_eq(s.plan.tests[0].name, "custom");

	m.send_block = 1;
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_SYNC_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_discard(16);
	for (it = 0; it < 4; it++) {
		/* the server receives an iteration, then sends it back */
		ck_assert_uint_eq(s.iter, it);
		feed_zeros(200);
		ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
		ck_assert_uint_eq(bq_avail(&q_out), 0);
		m.send_block = 1;
		feed_zeros(100);
		ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_DATA_SEND);
		m.send_block = 0;
		if (it < 3) {
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
			take_discard(300);
		}
	}
	ASSERT_AT(EVR_WANT_YIELD, ready(), EVR_SS_DRAIN);
	take_discard(300);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	ck_assert_int_eq(rec.state_at_result[0], EVR_SS_DATA_SEND);
	/* our side of the plan is done before the client's close */
	ck_assert_uint_eq(rec.plan_done, 1);
	ck_assert_uint_eq(rec.results_at_plan_done, 1);
	ck_assert_int_eq(rec.state_at_plan_done, EVR_SS_DATA_SEND);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DRAIN);
	/* the client closes: all is well */
	q_in.eof = 1;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
	ck_assert_int_eq(s.fail.err, 0);
	ck_assert_uint_eq(m.shutdowns, 0);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_server_negotiated_verify_flag)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, EVR_PLAN_F_VERIFY, 1, 0, 1);
	feed_entry(100, 3, 4, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_SYNC_RECV);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 1);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_SYNC);
	ck_assert_uint_eq(s.fail.bytes_done, 1);
}
END_TEST

/* Server past the HELLO: its ACK is consumed from the output. */
static void server_to_plan_hdr(const struct evr_stream_opts *o)
{
	struct evr_conn_plan cp;

	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
}

static void assert_rejected_with(int status)
{
	uint8_t b[16];

	ck_assert_msg(bq_avail(&q_out) == 16, "sent %zu bytes, not a reply",
		      bq_avail(&q_out));
	take(b, 16);
	ck_assert_int_eq(evr__plan_reply_decode(b, NULL), status);
	assert_failed(-EVR_E_REJECTED, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, status);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
}

START_TEST(test_server_rejects_version)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	m.send_block = 1;
	feed_hdr(EVR_WIRE_VERSION_DURATION + 1, 0, 1, 0, 1);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_REPLY_SEND);
	m.send_block = 0;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(EVR_PLAN_E_VERSION);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_server_rejects_ntests)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	feed_hdr(EVR_WIRE_VERSION, 0, 0, 0, 1);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(EVR_PLAN_E_NTESTS);
	reset_fixture();

	server_to_plan_hdr(&o);
	feed_hdr(EVR_WIRE_VERSION, 0, EVR_PLAN_MAX_TESTS + 1, 0, 1);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(EVR_PLAN_E_NTESTS);
}
END_TEST

static void server_rejects_entry(uint32_t size, uint32_t count, uint32_t iters,
				 uint8_t kind, int status)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	/* the bad entry is the second one */
	feed_hdr(EVR_WIRE_VERSION, 0, 2, 0, 1);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	feed_entry(64, 1, 10, EVR_TEST_LAT);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	feed_entry(size, count, iters, kind);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_rejected_with(status);
	/* the rejected plan did not replace the server's own */
	ck_assert_uint_eq(s.plan.ntests, 1);
	ck_assert_uint_eq(s.plan.tests[0].size, 100);
	reset_fixture();
}

START_TEST(test_server_rejects_entries)
{
	server_rejects_entry(0, 1, 1, EVR_TEST_CUSTOM, EVR_PLAN_E_SIZE);
	server_rejects_entry(EVR_MAX_XFER_SIZE + 1, 1, 1, EVR_TEST_BW,
			     EVR_PLAN_E_SIZE);
	server_rejects_entry(100, 0, 1, EVR_TEST_CUSTOM, EVR_PLAN_E_COUNT);
	server_rejects_entry(100, 1, 0, EVR_TEST_CUSTOM, EVR_PLAN_E_COUNT);
	server_rejects_entry(100, EVR_MAX_COUNT + 1, 1, EVR_TEST_CUSTOM,
			     EVR_PLAN_E_COUNT);
	server_rejects_entry(100, 1, 1, 3, EVR_PLAN_E_KIND);
}
END_TEST

START_TEST(test_server_bad_plan_magic)
{
	struct evr_stream_opts o;

	base_opts(&o);
	server_to_plan_hdr(&o);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
	/* nothing to answer a stranger with */
	ck_assert_uint_eq(bq_avail(&q_out), 0);
}
END_TEST

START_TEST(test_server_upstream_client)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	/* upstream's sync: 16 bytes of whatever is in its buffer */
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 16);   /* our sync reply */
	take_discard(16);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 0);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 0);
	for (it = 0; it < 4; it++) {
		feed_zeros(300);
		if (it < 3)
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		else
			ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
		ck_assert_uint_eq(bq_avail(&q_out), 300);
		take_discard(300);
	}
	ck_assert_uint_eq(rec.n, 1);
	assert_result(&rec, 0, "custom", 100, 3, 4);
	q_in.eof = 1;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_DONE);
}
END_TEST

START_TEST(test_server_pattern_sync_37)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { .next = 37 }, peer_rx = { .next = 37 };
	uint8_t b[300];

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_pattern(&peer_tx, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_VERIFY), 1);
	/* the reply carries the pattern from where the client stood */
	take(b, 16);
	ck_assert_uint_eq(b[0], 37);
	ck_assert_uint_eq(b[15], 52);
	peer_rx.next = 37;
	ck_assert_int_eq(evr__pattern_check(&peer_rx, b, 16, NULL), 0);

	feed_pattern(&peer_tx, 300);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	take_expect_pattern(&peer_rx, 300);
	/* second iteration, first transfer, byte 5 is wrong */
	evr__pattern_fill(&peer_tx, b, 300);
	b[5] = (uint8_t)(b[5] + 1);
	feed(b, 300);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_RECV);
	ck_assert_uint_eq(s.fail.bytes_done, 16 + 300 + 5);
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.iters_done, 1);
	ck_assert_uint_eq(s.fail.xfers_done, 0);
}
END_TEST

START_TEST(test_server_pattern_sync_wraps)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { .next = 250 }, peer_rx = { .next = 250 };

	base_opts(&o);
	custom_plan(&cp, 100, 3, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_pattern(&peer_tx, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 300);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	take_expect_pattern(&peer_rx, 300);
	ck_assert_uint_eq(rec.n, 1);
}
END_TEST

START_TEST(test_server_verify_given_zeros)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_VERIFY, EVR_PH_SYNC);
	ck_assert_uint_eq(s.fail.bytes_done, 1);
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(bq_avail(&q_out), 0);
}
END_TEST

/* The owner's decided() hook: once the client is known, the owner may
 * take the machine away (-T f forks there). */
static unsigned decided_n;
static int decided_ret;
static enum evr_sess_state decided_state;

static int rec_decided(struct evr_sess *x)
{
	decided_n++;
	decided_state = x->state;
	return decided_ret;
}

static const struct evr_sess_owner decide_owner = {
	.result = rec_result,
	.decided = rec_decided,
};

START_TEST(test_server_decided_upstream_client)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	ck_assert_uint_eq(decided_n, 0);
	feed_zeros(16);
	/* detached before our sync reply went out */
	ASSERT_AT(EVR_WANT_DETACH, ready(), EVR_SS_SYNC_SEND);
	ck_assert_uint_eq(decided_n, 1);
	ck_assert_int_eq(decided_state, EVR_SS_SYNC_SEND);
	ck_assert_uint_eq(bq_avail(&q_out), 0);
	/* whoever runs it next carries on from there, undecided again */
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(bq_avail(&q_out), 16);
	ck_assert_uint_eq(decided_n, 1);
}
END_TEST

START_TEST(test_server_decided_negotiated)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(64, 2, 5, EVR_TEST_CUSTOM);
	/* after the accepting reply: the plan is known */
	ASSERT_AT(EVR_WANT_DETACH, ready(), EVR_SS_SYNC_RECV);
	ck_assert_uint_eq(decided_n, 1);
	ck_assert_int_eq(evr__sess_has(&s, EVR_SF_NEGOTIATED), 1);
	ck_assert_uint_eq(bq_avail(&q_out), 32);    /* ACK and reply */
	/* not detached: it goes on by itself */
	reset_fixture();
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 0;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(64, 2, 5, EVR_TEST_CUSTOM);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	ck_assert_uint_eq(decided_n, 1);
	/* a rejected plan is not a decision */
	reset_fixture();
	start_sess(0, &cp, &o);
	s.owner = &decide_owner;
	decided_n = 0;
	decided_ret = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(0, 2, 5, EVR_TEST_CUSTOM);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	ck_assert_uint_eq(decided_n, 0);
}
END_TEST

START_TEST(test_server_extra_data_in_drain)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_DATA_RECV);
	feed_zeros(100);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	ck_assert_uint_eq(rec.n, 1);
	feed_zeros(1);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_EXTRA, EVR_PH_CLOSE);
	ck_assert_str_eq(s.fail.where, "drain");
}
END_TEST

/* ------------------------------------------------------------------ */
/* EOF, errors, EAGAIN, EINTR                                          */

/*
 * Bring a session to a receive state, then close the peer.  Each case:
 * who, how far to go, and what the failure must say.
 */
enum eof_at {
	C_HELLO_RECV, C_REPLY_RECV, C_SYNC_RECV_T2, C_DATA_RECV,
	S_FIRST_RECV, S_PLAN_HDR_RECV, S_PLAN_RECV, S_SYNC_RECV_T2,
	S_DATA_RECV, EOF_AT_COUNT
};

static void go_to(enum eof_at at)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	unsigned it;

	base_opts(&o);
	switch (at) {
	case C_HELLO_RECV:
		custom_plan(&cp, 100, 3, 4);
		start_sess(1, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_HELLO_RECV);
		break;
	case C_REPLY_RECV:
		custom_plan(&cp, 100, 3, 4);
		client_to_reply_recv(&cp, &o);
		break;
	case C_SYNC_RECV_T2:
		lat2_plan(&cp);
		client_to_reply_recv(&cp, &o);
		feed_reply(EVR_PLAN_OK);
		feed_zeros(16 + 50 * 64);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
		ck_assert_uint_eq(s.ti, 1);
		break;
	case C_DATA_RECV:
		custom_plan(&cp, 100, 3, 4);
		client_to_reply_recv(&cp, &o);
		feed_reply(EVR_PLAN_OK);
		feed_zeros(16 + 300 + 100);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		break;
	case S_FIRST_RECV:
		custom_plan(&cp, 100, 3, 4);
		start_sess(0, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_FIRST_RECV);
		break;
	case S_PLAN_HDR_RECV:
		server_to_plan_hdr(&o);
		break;
	case S_PLAN_RECV:
		server_to_plan_hdr(&o);
		feed_hdr(EVR_WIRE_VERSION, 0, 2, 0, 1);
		feed_entry(64, 1, 50, EVR_TEST_LAT);
		ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
		break;
	case S_SYNC_RECV_T2:
		lat2_plan(&cp);
		start_sess(0, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_FIRST_RECV);
		feed_zeros(16);
		for (it = 0; it < 50; it++)
			feed_zeros(64);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_SYNC_RECV);
		ck_assert_uint_eq(s.ti, 1);
		break;
	case S_DATA_RECV:
		custom_plan(&cp, 100, 3, 4);
		start_sess(0, &cp, &o);
		ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0),
			  EVR_SS_FIRST_RECV);
		feed_zeros(16 + 300 + 300 + 200);
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		break;
	default:
		ck_abort();
	}
	take_discard(bq_avail(&q_out));
}

struct eof_case {
	enum eof_at at;
	enum evr_phase phase;
	const char *test;           /* NULL: not in a test */
	unsigned test_index, test_total;
	uint64_t iters_done, iters_total, xfers_done, xfers_total;
};

static const struct eof_case eof_cases[] = {
	{ C_HELLO_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ C_REPLY_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ C_SYNC_RECV_T2, EVR_PH_SYNC, "1.5k_lat", 1, 2, 0, 20, 0, 1 },
	{ C_DATA_RECV, EVR_PH_RECV, "custom", 0, 1, 1, 4, 1, 3 },
	{ S_FIRST_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ S_PLAN_HDR_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ S_PLAN_RECV, EVR_PH_NEGOTIATE, NULL, 0, 0, 0, 0, 0, 0 },
	{ S_SYNC_RECV_T2, EVR_PH_SYNC, "1.5k_lat", 1, 2, 0, 20, 0, 1 },
	{ S_DATA_RECV, EVR_PH_RECV, "custom", 0, 1, 2, 4, 2, 3 },
};

static void check_fail_context(const struct eof_case *c)
{
	if (!c->test) {
		ck_assert_str_eq(s.fail.test, "");
		return;
	}
	ck_assert_str_eq(s.fail.test, c->test);
	ck_assert_uint_eq(s.fail.test_index, c->test_index);
	ck_assert_uint_eq(s.fail.test_total, c->test_total);
	ck_assert_uint_eq(s.fail.iters_done, c->iters_done);
	ck_assert_uint_eq(s.fail.iters_total, c->iters_total);
	ck_assert_uint_eq(s.fail.xfers_done, c->xfers_done);
	ck_assert_uint_eq(s.fail.xfers_total, c->xfers_total);
}

START_TEST(test_eof_in_each_phase)
{
	const struct eof_case *c = &eof_cases[_i];
	uint64_t bytes;

	go_to(c->at);
	bytes = s.bytes;
	q_in.eof = 1;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EVR_E_EOF, c->phase);
	ck_assert_str_eq(s.fail.where, "recv");
	ck_assert_uint_eq(s.fail.bytes_done, bytes);
	check_fail_context(c);
	ck_assert_uint_eq(rec.n, c->test_index);
	/* only the client cases went through an accepted plan */
	ck_assert_int_eq(s.fail.negotiated,
			 c->at == C_SYNC_RECV_T2 || c->at == C_DATA_RECV);
	assert_terminal_sticks();
}
END_TEST

START_TEST(test_reset_in_each_phase)
{
	const struct eof_case *c = &eof_cases[_i];

	go_to(c->at);
	m.recv_err = -ECONNRESET;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-ECONNRESET, c->phase);
	ck_assert_str_eq(s.fail.where, "recv");
	check_fail_context(c);
}
END_TEST

START_TEST(test_send_errors)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);

	/* the HELLO cannot go out */
	start_sess(1, &cp, &o);
	m.send_err = -ECONNRESET;
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONNECTED, 0), EVR_SS_FAILED);
	assert_failed(-ECONNRESET, EVR_PH_NEGOTIATE);
	ck_assert_str_eq(s.fail.where, "send");
	reset_fixture();

	/* data: the peer went away in the middle of a send */
	o.no_negotiate = 1;
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take_discard(16);
	feed_zeros(16);
	/* two transfers and a half go out, then EPIPE */
	m.chunk = 50;
	q_out.limit = 250;
	ASSERT_AT(EVR_WANT_WRITE, settle(), EVR_SS_DATA_SEND);
	ck_assert_uint_eq(s.xfer, 2);
	m.send_err = -EPIPE;
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-EPIPE, EVR_PH_SEND);
	ck_assert_str_eq(s.fail.where, "send");
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.xfers_done, 2);
	ck_assert_uint_eq(s.fail.iters_done, 0);
	ck_assert_uint_eq(s.fail.bytes_done, 16 + 16 + 250);
	reset_fixture();

	/* the server cannot send its reply */
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	feed_entry(100, 1, 1, EVR_TEST_CUSTOM);
	script_send(&m, 16);      /* the ACK goes */
	script_send(&m, -ENOTCONN);
	ASSERT_AT(EVR_WANT_NONE, ready(), EVR_SS_FAILED);
	assert_failed(-ENOTCONN, EVR_PH_NEGOTIATE);
	ck_assert_str_eq(s.fail.where, "send");
}
END_TEST

START_TEST(test_eagain_and_eintr)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	/* -EAGAIN on receive: wait to read, even with data queued */
	feed(evr__hello_msg, 16);
	script_recv(&m, -EAGAIN);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_FIRST_RECV);
	/* -EAGAIN on send: wait to write */
	script_send(&m, -EAGAIN);
	ASSERT_AT(EVR_WANT_WRITE, ready(), EVR_SS_ACK_SEND);
	/* -EINTR is retried at once, in the same event */
	script_send(&m, -EINTR);
	script_recv(&m, -EINTR);
	feed_hdr(EVR_WIRE_VERSION, 0, 1, 0, 1);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_RECV);
	ck_assert_uint_eq(m.send_iscript, 2);
	ck_assert_uint_eq(m.recv_iscript, 2);
	take_discard(16);
	ck_assert_int_eq(s.fail.err, 0);
}
END_TEST

START_TEST(test_partial_io)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;
	struct evr_pattern peer_tx = { 0 }, peer_rx = { 0 };
	unsigned it, guard = 0;

	/* 1-byte transfers each way: every message in many pieces */
	base_opts(&o);
	o.verify = 1;
	custom_plan(&cp, 100, 3, 2);
	start_sess(1, &cp, &o);
	m.chunk = 1;
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	take_expect_pattern(&peer_rx, 16);
	feed_pattern(&peer_tx, 16);
	for (it = 0; it < 2; it++) {
		ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
		take_expect_pattern(&peer_rx, 300);
		feed_pattern(&peer_tx, 300);
	}
	while (s.state != EVR_SS_DONE && s.state != EVR_SS_FAILED) {
		ready();
		ck_assert_uint_lt(++guard, 1000);
	}
	ck_assert_int_eq(s.state, EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	ck_assert_uint_ge(m.recvs, 16 + 600);
}
END_TEST

/* ------------------------------------------------------------------ */
/* stall, cancel, connect                                              */

START_TEST(test_stall)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);

	/* waiting for the ACK */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_STALL, EVR_PH_NEGOTIATE);
	ck_assert_int_eq(s.fail.detail, EVR_DEFAULT_STALL_MS);
	ck_assert_str_eq(s.fail.where, "watchdog");
	assert_terminal_sticks();
	reset_fixture();

	/* in a test, with a stall timeout of our own */
	o.stall_ms = 2500;
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(16 + 300 + 100);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DATA_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_STALL, EVR_PH_RECV);
	ck_assert_int_eq(s.fail.detail, 2500);
	ck_assert_str_eq(s.fail.test, "custom");
	ck_assert_uint_eq(s.fail.iters_done, 1);
	ck_assert_uint_eq(s.fail.xfers_done, 1);
	reset_fixture();

	/* while connecting */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_STALL, EVR_PH_CONNECT);
	ck_assert_int_eq(s.fail.detail, 2500);
}
END_TEST

START_TEST(test_stall_in_drain_is_done)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(116);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_STALL, 0), EVR_SS_DONE);
	ck_assert_int_eq(s.fail.err, 0);
	ck_assert_uint_eq(rec.n, 1);
	assert_terminal_sticks();
}
END_TEST

/* The driver cannot go on (its scheduler seat could not be had): the
 * machine fails with the driver's error, at whatever phase it is, and
 * stays failed; an errno of 0 is still a failure (-EIO). */
START_TEST(test_driver_fail_event)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_FAIL, -ENOMEM), EVR_SS_FAILED);
	assert_failed(-ENOMEM, EVR_PH_CONNECT);
	ck_assert_str_eq(s.fail.where, "driver");
	assert_terminal_sticks();
	reset_fixture();

	go_to(C_DATA_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_FAIL, 0), EVR_SS_FAILED);
	assert_failed(-EIO, EVR_PH_RECV);
	ck_assert_str_eq(s.fail.where, "driver");
}
END_TEST

START_TEST(test_cancel)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_CONNECT);
	ck_assert_str_eq(s.fail.where, "cancel");
	assert_terminal_sticks();
	reset_fixture();

	go_to(C_DATA_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_RECV);
	ck_assert_str_eq(s.fail.test, "custom");
	reset_fixture();

	/* even in DRAIN a cancel is a cancel */
	custom_plan(&cp, 100, 1, 1);
	start_sess(0, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed_zeros(116);
	ASSERT_AT(EVR_WANT_READ, settle(), EVR_SS_DRAIN);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CANCEL, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_CANCELLED, EVR_PH_CLOSE);
}
END_TEST

START_TEST(test_conn_error)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_CONNECT, ready(), EVR_SS_CONNECTING);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONN_ERROR, -ECONNREFUSED),
		  EVR_SS_FAILED);
	assert_failed(-ECONNREFUSED, EVR_PH_CONNECT);
	ck_assert_str_eq(s.fail.where, "connect");
	ck_assert_str_eq(s.fail.test, "");
	ck_assert_uint_eq(s.fail.bytes_done, 0);
	ck_assert_uint_eq(m.sends + m.recvs, 0);
	assert_terminal_sticks();
	reset_fixture();

	/* no errno given: still a failure */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONN_ERROR, 0), EVR_SS_FAILED);
	ck_assert_int_lt(s.fail.err, 0);
	ck_assert_int_eq(s.fail.phase, EVR_PH_CONNECT);
	reset_fixture();

	/* the transport's own set-up failed (no verbs resources): a local
	 * error of the setup phase, named by its call, not a connect */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_CONNECT, ready(), EVR_SS_CONNECTING);
	m.c.setup_where = "ibv_reg_mr";
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONN_ERROR, -ENOMEM),
		  EVR_SS_FAILED);
	assert_failed(-ENOMEM, EVR_PH_SETUP);
	ck_assert_str_eq(s.fail.where, "ibv_reg_mr");
}
END_TEST

START_TEST(test_connected_misuse)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	custom_plan(&cp, 100, 3, 4);
	/* CONNECTED without a transport */
	ck_assert_int_eq(evr__sess_init(&s, loop, 1, &cp, 0, 1, &o), 0);
	s_live = 1;
	ck_assert_int_eq(evr__sess_event(&s, EVR_SE_CONNECTED, 0),
			 EVR_WANT_NONE);
	ck_assert_int_eq(s.state, EVR_SS_FAILED);
	ck_assert_int_eq(s.fail.err, -EVR_E_PROTO);
	evr__sess_fini(&s);
	s_live = 0;

	/* CONNECTED twice */
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	ASSERT_AT(EVR_WANT_NONE, ev(EVR_SE_CONNECTED, 0), EVR_SS_FAILED);
	assert_failed(-EVR_E_PROTO, EVR_PH_NEGOTIATE);
}
END_TEST

START_TEST(test_events_after_done)
{
	struct evr_stream_opts o;
	struct evr_conn_plan cp;

	base_opts(&o);
	o.no_negotiate = 1;
	custom_plan(&cp, 10, 1, 1);
	start_sess(1, &cp, &o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_SYNC_RECV);
	feed_zeros(16 + 10);
	ASSERT_AT(EVR_WANT_NONE, settle(), EVR_SS_DONE);
	ck_assert_uint_eq(rec.n, 1);
	assert_terminal_sticks();
	ck_assert_uint_eq(m.shutdowns, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* two machines back to back                                           */

struct end {
	struct evr_sess s;
	struct mock m;
	struct rec rec;
	int live;
};

static struct bq q_c2s, q_s2c;
static struct end cl, sv;

static void pair_setup(void)
{
	setup();
	memset(&q_c2s, 0, sizeof(q_c2s));
	memset(&q_s2c, 0, sizeof(q_s2c));
	memset(&cl, 0, sizeof(cl));
	memset(&sv, 0, sizeof(sv));
}

static void pair_teardown(void)
{
	if (cl.live)
		evr__sess_fini(&cl.s);
	if (sv.live)
		evr__sess_fini(&sv.s);
	cl.live = sv.live = 0;
	bq_free(&q_c2s);
	bq_free(&q_s2c);
	teardown();
}

static void end_start(struct end *e, int client,
		      const struct evr_conn_plan *cp,
		      const struct evr_stream_opts *o)
{
	ck_assert_int_eq(evr__sess_init(&e->s, loop, client, cp, 0, 1, o), 0);
	e->live = 1;
	e->s.id = client ? 1 : 2;
	e->s.owner = &rec_owner;
	e->s.owner_ud = &e->rec;
	if (client)
		mock_init(&e->m, &q_s2c, &q_c2s, "server:7471");
	else
		mock_init(&e->m, &q_c2s, &q_s2c, "client:40000");
	evr__sess_attach(&e->s, &e->m.c);
}

static int term(const struct evr_sess *x)
{
	return x->state == EVR_SS_DONE || x->state == EVR_SS_FAILED;
}

/* Connect both and run them in turn until both have ended, or until
 * neither moves a byte any more (one waits for the other in vain). */
static unsigned pump(void)
{
	unsigned rounds = 0, idle = 0;

	evr__sess_event(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_event(&cl.s, EVR_SE_CONNECTED, 0);
	while ((!term(&cl.s) || !term(&sv.s)) && idle < 1000) {
		uint64_t before = cl.s.bytes + sv.s.bytes;

		if (!term(&cl.s))
			evr__sess_event(&cl.s, EVR_SE_READY, 0);
		if (!term(&sv.s))
			evr__sess_event(&sv.s, EVR_SE_READY, 0);
		idle = cl.s.bytes + sv.s.bytes == before ? idle + 1 : 0;
		if (++rounds >= 10000000)
			ck_abort_msg("no end");
	}
	return rounds;
}

static void assert_both_done(void)
{
	ck_assert_msg(cl.s.state == EVR_SS_DONE, "client %s err %d phase %d",
		      evr__sess_state_name(cl.s.state), cl.s.fail.err,
		      (int)cl.s.fail.phase);
	ck_assert_msg(sv.s.state == EVR_SS_DONE, "server %s err %d phase %d",
		      evr__sess_state_name(sv.s.state), sv.s.fail.err,
		      (int)sv.s.fail.phase);
	ck_assert_uint_eq(bq_avail(&q_c2s), 0);
	ck_assert_uint_eq(bq_avail(&q_s2c), 0);
	ck_assert_uint_eq(cl.m.shutdowns, 1);
	/* both moved the same bytes, in opposite directions */
	ck_assert_uint_eq(cl.s.bytes, sv.s.bytes);
}

START_TEST(test_e2e_custom_negotiated)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	custom_plan(&pc, 100, 3, 4);
	default_lat_plan(&ps);      /* the server was started without -C */
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&cl.s, EVR_SF_NEGOTIATED), 1);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 1);
	ck_assert_uint_eq(cl.rec.n, 1);
	ck_assert_uint_eq(sv.rec.n, 1);
	assert_result(&cl.rec, 0, "custom", 100, 3, 4);
	assert_result(&sv.rec, 0, "custom", 100, 3, 4);
	ck_assert_uint_eq(cl.s.bytes, 16 + 16 + 32 + 16 + 32 + 2400);
}
END_TEST

/* The session tells the transport which sends a stream's next transfer
 * follows at once (more: an RDMA cork may gather them): all but the last
 * transfer of each direction of an iteration, never a ping-pong's, never
 * a control message; and it never turns to receive with bytes held. */
START_TEST(test_e2e_sends_more)
{
	static const struct {
		uint32_t size, count, iters;
		uint64_t more;      /* bytes sent with more, each side */
	} c[] = {
		{ 100, 3, 4, 4 * 2 * 100 },
		{ 64, 1, 50, 0 },   /* ping-pong: every send goes now */
		{ 1, 1000, 1, 999 },
	};
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	unsigned i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (i) {
			pair_teardown();
			pair_setup();
		}
		base_opts(&oc);
		base_opts(&os);
		custom_plan(&pc, c[i].size, c[i].count, c[i].iters);
		default_lat_plan(&ps);
		end_start(&cl, 1, &pc, &oc);
		end_start(&sv, 0, &ps, &os);
		pump();
		assert_both_done();
		ck_assert_uint_eq(cl.m.more_bytes, c[i].more);
		ck_assert_uint_eq(sv.m.more_bytes, c[i].more);
		ck_assert_uint_eq(cl.m.more_broken, 0);
		ck_assert_uint_eq(sv.m.more_broken, 0);
		ck_assert_int_eq(cl.m.more_pending, 0);
		ck_assert_int_eq(sv.m.more_pending, 0);
	}
}
END_TEST

/* Where the transport can (RDMA), a client that does not verify takes
 * its echo without copying it (recv with buf NULL), every byte of every
 * data transfer; one that verifies copies and checks all; a server
 * always reads what it echoes; control messages are always read. */
START_TEST(test_e2e_skip_echo)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	int v;

	for (v = 0; v < 2; v++) {
		if (v) {
			pair_teardown();
			pair_setup();
		}
		base_opts(&oc);
		base_opts(&os);
		oc.verify = v;
		custom_plan(&pc, 100, 3, 4);
		ps = pc;
		if (!v)
			default_lat_plan(&ps);
		end_start(&cl, 1, &pc, &oc);
		end_start(&sv, 0, &ps, &os);
		cl.m.c.can_skip = 1;
		sv.m.c.can_skip = 1;
		pump();
		assert_both_done();
		assert_result(&cl.rec, 0, "custom", 100, 3, 4);
		ck_assert_uint_eq(cl.m.skipped, v ? 0 : 100 * 3 * 4);
		ck_assert_uint_eq(sv.m.skipped, 0);
		if (v)
			ck_assert_uint_eq(cl.s.rpat.total, 100 * 3 * 4 + 16);
	}
}
END_TEST

START_TEST(test_e2e_lat2_negotiated)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	unsigned i;

	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	for (i = 0; i < 2; i++) {
		const struct rec *r = i ? &sv.rec : &cl.rec;

		ck_assert_uint_eq(r->n, 2);
		assert_result(r, 0, "64_lat", 64, 1, 50);
		assert_result(r, 1, "1.5k_lat", 1536, 1, 20);
	}
	/* the server grew its buffer for the client's plan */
	ck_assert_uint_ge(sv.s.bufsize, 1536);
	ck_assert_uint_eq(sv.s.plan.ntests, 2);
}
END_TEST

/* Buffers follow the test in hand: 16 bytes until the first test, then
 * each test's size (rstream -c N keeps many connections). */
START_TEST(test_e2e_buffer_per_test)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	ck_assert_uint_eq(cl.s.bufsize, EVR_SYNC_LEN);
	ck_assert_uint_eq(sv.s.bufsize, EVR_SYNC_LEN);
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.s.bufsize, 1536);
	ck_assert_uint_eq(cl.s.buf_ext, 0);
}
END_TEST

/* A buffer the owner lends (-c N without -T v) is used while it is large
 * enough, and never freed by the machine. */
START_TEST(test_e2e_shared_buffer)
{
	static uint8_t shared[2048];
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_use_buf(&cl.s, shared, sizeof(shared));
	ck_assert_ptr_eq(cl.s.buf, shared);
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_ptr_eq(cl.s.buf, shared);
	ck_assert_uint_eq(cl.s.buf_ext, 1);
	evr__sess_fini(&cl.s); /* must not free shared */
	cl.live = 0;
	ck_assert_ptr_null(cl.s.buf);

	/* lent too small: the machine takes a buffer of its own */
	pair_teardown();
	pair_setup();
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_use_buf(&cl.s, shared, 64);
	pump();
	assert_both_done();
	ck_assert_ptr_ne(cl.s.buf, shared);
	ck_assert_uint_eq(cl.s.buf_ext, 0);
	ck_assert_uint_ge(cl.s.bufsize, 1536);
}
END_TEST

/* A 4 MiB transfer through a server with a 64 KiB chunk: the server's
 * buffer and every call it makes stay within the chunk, the counts and
 * bytes are those of the plan, and with -T v every byte both ways
 * carries the pattern (negotiated, and the server's own plan). */
START_TEST(test_e2e_chunked)
{
	enum { SZ = 4 << 20, CH = 64 << 10, CNT = 2, IT = 3 };
	struct evr_membudget bg = { .used = 0, .max = 1 << 20 };
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	int v;

	for (v = 0; v < 3; v++) {
		if (v) {
			pair_teardown();
			pair_setup();
		}
		base_opts(&oc);
		base_opts(&os);
		os.chunk_size = CH;
		oc.verify = v > 0;
		oc.force_negotiate = v == 1;  /* v == 2: upstream's wire */
		custom_plan(&pc, SZ, CNT, IT);
		if (v == 2)
			ps = pc;
		else
			default_lat_plan(&ps);
		end_start(&cl, 1, &pc, &oc);
		end_start(&sv, 0, &ps, &os);
		evr__sess_set_budget(&sv.s, &bg);
		pump();
		assert_both_done();
		ck_assert_int_eq(evr__sess_has(&cl.s, EVR_SF_NEGOTIATED),
				 v < 2);
		ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), v > 0);
		assert_result(&cl.rec, 0, "custom", SZ, CNT, IT);
		assert_result(&sv.rec, 0, "custom", SZ, CNT, IT);
		ck_assert_uint_eq(cl.s.bytes,
				  (v < 2 ? 16 + 16 + 32 + 16 : 0) + 32 +
				  2ULL * SZ * CNT * IT);
		ck_assert_uint_le(sv.s.bufsize, CH);
		ck_assert_uint_le(sv.m.max_len, CH);
		ck_assert_uint_eq(bg.used, CH);
		/* the client needs what it asked for, no more */
		ck_assert_uint_eq(cl.s.bufsize, SZ);
		if (v) {
			ck_assert_uint_eq(sv.s.rpat.total,
					  16 + (uint64_t)SZ * CNT * IT);
			ck_assert_uint_eq(cl.s.rpat.total,
					  16 + (uint64_t)SZ * CNT * IT);
		}
		evr__sess_fini(&sv.s);
		sv.live = 0;
		ck_assert_uint_eq(bg.used, 0);
	}
}
END_TEST

START_TEST(test_e2e_verify)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	lat2_plan(&pc);
	/* no negotiation with -T v: the server runs the same plan */
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&cl.s, EVR_SF_NEGOTIATED), 0);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 0);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), 1);
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&cl.rec, 1, "1.5k_lat", 1536, 1, 20);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
	/* everything received was checked */
	ck_assert_uint_eq(cl.s.rpat.total, cl.s.bytes / 2);
	ck_assert_uint_eq(sv.s.rpat.total, sv.s.bytes / 2);
	ck_assert_uint_eq(cl.s.spat.next, sv.s.rpat.next);
	ck_assert_uint_eq(sv.s.spat.next, cl.s.rpat.next);
}
END_TEST

START_TEST(test_e2e_verify_counter_carried)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	/* a second connection: the client's counters stand at 37 */
	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	os.verify = 1;
	custom_plan(&pc, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	cl.s.spat.next = 37;
	cl.s.rpat.next = 37;
	pump();
	assert_both_done();
	ck_assert_uint_eq(sv.s.rpat.total, 16 + 1200);
	ck_assert_uint_eq(cl.s.rpat.total, 16 + 1200);
	ck_assert_uint_eq(cl.s.spat.next, (37 + 16 + 1200) & 0xff);
	ck_assert_uint_eq(cl.rec.n, 1);
	ck_assert_uint_eq(sv.rec.n, 1);
}
END_TEST

START_TEST(test_e2e_verify_negotiated)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	/* --negotiate with -T v: the server follows plan and verify flag */
	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	oc.force_negotiate = 1;
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 1);
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), 1);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
	ck_assert_uint_eq(cl.s.rpat.total, 2 * 16 + 50 * 64 + 20 * 1536);
	ck_assert_uint_eq(sv.s.rpat.total, 2 * 16 + 50 * 64 + 20 * 1536);
}
END_TEST

/*
 * The engine carries a client's pattern counters from one connection to
 * the next (as upstream's static counter does), so the second connection
 * of a default run starts at 64 (four 16-byte syncs; the data of the
 * latency series is a multiple of 256).  A negotiating server must pick
 * the counter up, as it does from an upstream client's first sync.
 */
START_TEST(test_e2e_verify_negotiated_counter_carried)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	oc.force_negotiate = 1;
	custom_plan(&pc, 100, 3, 4);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	cl.s.spat.next = 64;
	cl.s.rpat.next = 64;
	pump();
	ck_assert_msg(sv.s.state == EVR_SS_DONE,
		      "server %s: err %d, bad byte %llu (client counter at "
		      "64, server expects 0 after negotiation)",
		      evr__sess_state_name(sv.s.state), sv.s.fail.err,
		      (unsigned long long)sv.s.fail.bytes_done);
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 1);
}
END_TEST

START_TEST(test_e2e_no_negotiate)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	base_opts(&oc);
	base_opts(&os);
	oc.no_negotiate = 1;
	lat2_plan(&pc);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_NEGOTIATED), 0);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 0, "64_lat", 64, 1, 50);
}
END_TEST

START_TEST(test_e2e_small_pieces)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	/* odd-sized partial transfers and full queues on both sides */
	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	cl.m.chunk = 7;
	sv.m.chunk = 13;
	q_c2s.limit = 50;
	q_s2c.limit = 29;
	pump();
	assert_both_done();
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
}
END_TEST

START_TEST(test_e2e_small_pieces_verify)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc;

	base_opts(&oc);
	base_opts(&os);
	oc.verify = 1;
	custom_plan(&pc, 1000, 5, 3);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &pc, &os);
	cl.m.chunk = 33;
	sv.m.chunk = 17;
	q_c2s.limit = 100;
	q_s2c.limit = 64;
	pump();
	assert_both_done();
	ck_assert_int_eq(evr__sess_has(&sv.s, EVR_SF_VERIFY), 1);
	assert_result(&cl.rec, 0, "custom", 1000, 5, 3);
	assert_result(&sv.rec, 0, "custom", 1000, 5, 3);
}
END_TEST

START_TEST(test_e2e_mismatch_without_negotiation)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	/* upstream's failure mode: the server expects more iterations */
	base_opts(&oc);
	base_opts(&os);
	oc.no_negotiate = 1;
	custom_plan(&pc, 100, 3, 4);
	custom_plan(&ps, 100, 3, 5);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	ck_assert_int_eq(cl.s.state, EVR_SS_DONE);
	ck_assert_int_eq(sv.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(sv.s.fail.err, -EVR_E_EOF);
	ck_assert_int_eq(sv.s.fail.phase, EVR_PH_RECV);
	ck_assert_str_eq(sv.s.fail.test, "custom");
	ck_assert_uint_eq(sv.s.fail.iters_done, 4);
	ck_assert_uint_eq(sv.s.fail.iters_total, 5);
	ck_assert_uint_eq(sv.s.fail.xfers_done, 0);
	ck_assert_str_eq(sv.s.fail.peer, "client:40000");
	ck_assert_uint_eq(sv.rec.n, 0);
}
END_TEST

START_TEST(test_e2e_client_sends_too_much)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	unsigned i;

	/* the client runs more iterations than the server's plan */
	base_opts(&oc);
	base_opts(&os);
	oc.no_negotiate = 1;
	custom_plan(&pc, 100, 3, 2);
	custom_plan(&ps, 100, 3, 1);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	evr__sess_event(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_event(&cl.s, EVR_SE_CONNECTED, 0);
	for (i = 0; !term(&sv.s); i++) {
		if (i >= 100000)
			ck_abort_msg("server never ended");
		evr__sess_event(&cl.s, EVR_SE_READY, 0);
		evr__sess_event(&sv.s, EVR_SE_READY, 0);
	}
	ck_assert_int_eq(sv.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(sv.s.fail.err, -EVR_E_EXTRA);
	ck_assert_int_eq(sv.s.fail.phase, EVR_PH_CLOSE);
	ck_assert_uint_eq(sv.rec.n, 1);
	ck_assert_int_eq(cl.s.state, EVR_SS_DATA_RECV);
}
END_TEST

/* ------------------------------------------------------------------ */
/* the driver: the same machines on a real loop                        */

static unsigned finished_n[2];

static void drv_finished(struct evr_sess *x)
{
	ck_assert(term(x));
	/* its watchers are stopped before it is handed back */
	ck_assert(!ev_is_active(&x->io_w));
	ck_assert(!ev_is_active(&x->idle_w));
	ck_assert(!ev_is_active(&x->wd_w));
	finished_n[x->client ? 0 : 1]++;
}

static const struct evr_sess_owner drv_owner = {
	.result = rec_result,
	.finished = drv_finished,
};

static void drv_start(struct end *e, int client,
		      const struct evr_conn_plan *cp,
		      const struct evr_stream_opts *o)
{
	end_start(e, client, cp, o);
	e->s.owner = &drv_owner;
}

START_TEST(test_driver_pair_nonblock)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 0, &ps, &os);
	cl.m.chunk = 100;
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert(!term(&cl.s));
	ck_assert(!term(&sv.s));
	/* returns once both have stopped all their watchers */
	evr_loop_run(loop);
	assert_both_done();
	ck_assert_uint_eq(finished_n[0], 1);
	ck_assert_uint_eq(finished_n[1], 1);
	ck_assert_uint_eq(cl.rec.n, 2);
	ck_assert_uint_eq(sv.rec.n, 2);
	assert_result(&sv.rec, 1, "1.5k_lat", 1536, 1, 20);
}
END_TEST

/* A polling owner asks the transport's ready op before it calls again:
 * a -T n pair wastes (almost) no calls on a transport that has one, and
 * ends with the same results. */
static void ready_pair(int with_ready, unsigned *wasted, unsigned *readies)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	base_opts(&os);
	custom_plan(&pc, 100, 3, 200);
	custom_plan(&ps, 100, 3, 200);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 0, &ps, &os);
	if (with_ready) {
		cl.m.c.ops = sv.m.c.ops = &mock_ready_ops;
		cl.m.ready_says = sv.m.ready_says = -1;
	}
	cl.m.chunk = 50;
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	evr_loop_run(loop);
	assert_both_done();
	ck_assert_uint_eq(cl.rec.n, 1);
	assert_result(&cl.rec, 0, "custom", 100, 3, 200);
	*wasted = cl.m.wasted + sv.m.wasted;
	*readies = cl.m.readies + sv.m.readies;
}

START_TEST(test_driver_ready_saves_calls)
{
	unsigned w0, r0, w1, r1;

	ready_pair(0, &w0, &r0);
	pair_teardown();
	pair_setup();
	ready_pair(1, &w1, &r1);
	/* without it, the spinners call in vain over and over */
	ck_assert_uint_eq(r0, 0);
	ck_assert_uint_gt(w0, 1000);
	/* with it, only the loop's own passes call without asking */
	ck_assert_uint_gt(r1, 1000);
	ck_assert_msg(w1 * 20 < w0, "wasted %u calls with ready, %u without",
		      w1, w0);
}
END_TEST

/* A client whose HELLO nobody answers: the watchdog ends it. */
static void stall_run(const struct evr_conn_ops *ops, int ready_says)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.stall_ms = 40;
	custom_plan(&pc, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	cl.m.c.ops = ops;
	cl.m.ready_says = ready_says;
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_HELLO_RECV);
	evr_loop_run(loop);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_int_eq(cl.s.fail.detail, 40);
	ck_assert_int_eq(cl.s.fail.phase, EVR_PH_NEGOTIATE);
	ck_assert_uint_eq(finished_n[0], 1);
}

/* A transport that never says ready: the session still stalls out on
 * its watchdog (no hang), and it asked rather than called. */
START_TEST(test_driver_ready_never)
{
	stall_run(&mock_ready_ops, 0);
	ck_assert_uint_gt(cl.m.readies, 100);
	ck_assert_msg(cl.m.recvs * 20 < cl.m.readies, "%u recvs, %u readies",
		      cl.m.recvs, cl.m.readies);
}
END_TEST

START_TEST(test_driver_stall_nonblock)
{
	stall_run(&mock_ops, -1);
}
END_TEST

/* -T a with a long poll (set here, poll_ms; a learnt one grows to 5
 * ms): while it waits it gives the loop its turn every slice (2 ms), so
 * that timers and other connections never wait the whole poll, and then
 * goes on polling where it was, neither starting the poll over nor
 * sleeping.  One client, its mock echoing what it sends; the echo comes
 * hold_ms after the start.  The times are long beside a slice, so that a
 * loaded host (CI runs tests side by side) that deschedules the test for
 * a few milliseconds does not change the outcome.  Returns the loop's
 * turns during the hold. */
static unsigned turns;
static uint64_t turns_until;
static char poll_line[256];     /* the session's "poll:" trace line */

static void poll_trace(void *ud, const char *line)
{
	(void)ud;
	if (strstr(line, ": poll: "))
		snprintf(poll_line, sizeof(poll_line), "%s", line);
}

/* 1: at the loop's first turn within the hold, another task takes the
 * CPU (fake_taken): a preemption while the poll gave the loop its turn */
static int turn_takes_cpu;

static void count_turn(struct ev_loop *l, ev_prepare *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
	if (evr_now_ns() < turns_until) {
		turns++;
		if (turn_takes_cpu) {
			turn_takes_cpu = 0;
			fake_taken++;
		}
	}
}

static unsigned long_poll_run_(unsigned poll_ms, unsigned hold_ms,
			       unsigned stall_ms, uint64_t offer_ns,
			       unsigned off_cpu_after)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;
	ev_prepare pw;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.io = EVR_IO_ASYNC;
	oc.poll_us = (int)poll_ms * 1000;
	oc.no_negotiate = 1;
	oc.stall_ms = stall_ms;
	custom_plan(&pc, 100, 1, 3);
	drv_start(&cl, 1, &pc, &oc);
	/* an echo: what it sends comes back */
	mock_init(&cl.m, &q_c2s, &q_c2s, "server:7471");
	turns = 0;
	poll_line[0] = 0;
	evr_loop_set_trace(loop, poll_trace, NULL);
	cl.s.pe.offer_ns = offer_ns;
	cl.m.off_cpu_after = off_cpu_after;
	fake_yields = 0;
	cl.m.hold_until = turns_until = evr_now_ns() + hold_ms * 1000000ull;
	ev_prepare_init(&pw, count_turn);
	ev_prepare_start(evr_loop_ev(loop), &pw);
	ev_unref(evr_loop_ev(loop)); /* the session's watchers run the loop */
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	evr_loop_run(loop);
	ev_ref(evr_loop_ev(loop));
	ev_prepare_stop(evr_loop_ev(loop), &pw);
	ck_assert_uint_eq(finished_n[0], 1);
	return turns;
}

/* These long polls do not offer their CPU (offer_ns 0): a test that CI
 * preempts mid-poll would otherwise sleep, correctly, and fail. */
static unsigned long_poll_run(unsigned poll_ms, unsigned hold_ms,
			      unsigned stall_ms)
{
	return long_poll_run_(poll_ms, hold_ms, stall_ms, 0, 0);
}

START_TEST(test_driver_long_poll_yields)
{
	unsigned t = long_poll_run(100, 30, 5000);

	/* found by polling (fd -1: a session that slept would stall out),
	 * the loop's turn in between */
	ck_assert_int_eq(cl.s.state, EVR_SS_DONE);
	ck_assert_uint_eq(cl.rec.n, 1);
	ck_assert_msg(t >= 1, "no turn for the loop in a 30 ms wait");
	ck_assert_uint_ge(cl.s.pe.n_yields, 1);
	/* (whether a try of the poll found the reply or the call that
	 * resumed it after the loop's turn depends on timing: not asserted) */
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
}
END_TEST

/* ... and the turns do not make the poll longer: a reply later than the
 * poll still finds the session asleep (and, fd -1, nobody wakes it: its
 * watchdog ends it), after about 20 ms of polling, not 300. */
START_TEST(test_driver_long_poll_ends)
{
	long_poll_run(20, 300, 600);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 1);
	ck_assert_uint_ge(cl.s.pe.n_yields, 1);
	ck_assert_msg(cl.m.held_last - cl.m.held_first < 150000000,
		      "polled %.1f ms", (cl.m.held_last - cl.m.held_first) / 1e6);
	ck_assert_uint_ge(cl.m.held_last - cl.m.held_first, 19000000);
	/* --trace says what the polls did, as counted */
	{
		char want[256];

		snprintf(want, sizeof(want), "conn 1: poll: %" PRIu64
			 " found, 1 ran out, 0 lost the CPU, %" PRIu64
			 " slept at once, %" PRIu64
			 " yields, 20000 usec at the end",
			 cl.s.pe.n_found, cl.s.pe.n_unpolled,
			 cl.s.pe.n_yields);
		ck_assert_str_eq(poll_line, want);
	}
}
END_TEST

/* A poll whose CPU another task took (the peer on the same CPU, a busy
 * host) stops polling and sleeps, long before its 20 ms, and backs off:
 * polling on would take the CPU from whoever sends the reply.  (Another
 * task "runs" after the first offer, in the mock's receive: the second
 * offer sees it.  The session sleeps, and with fd -1 nobody wakes it: its
 * watchdog ends it.) */
START_TEST(test_driver_poll_preempted)
{
	long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 1);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 1);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
	ck_assert_uint_eq(fake_yields, 2);
	/* backing off: the next wait sleeps; the poll is at its base */
	ck_assert_uint_eq(cl.s.pe.skip, 1);
	ck_assert_uint_eq(cl.s.pe.budget_ns, 20000000);
	{
		char want[256];

		snprintf(want, sizeof(want), "conn 1: poll: 0 found, 0 ran "
			 "out, 1 lost the CPU, 0 slept at once, %" PRIu64
			 " yields, 20000 usec at the end", cl.s.pe.n_yields);
		ck_assert_str_eq(poll_line, want);
	}
}
END_TEST

/* ... and so does one whose CPU was taken while it gave the loop its
 * turn (every 2 ms of a 20 ms poll): the count it compares with is the
 * one from its first offer, before the turn, not one read afresh after
 * it (which would hide the preemption and poll on to the end). */
START_TEST(test_driver_poll_preempted_across_turn)
{
	unsigned t;

	turn_takes_cpu = 1;
	t = long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 0);
	turn_takes_cpu = 0;
	ck_assert_msg(t >= 1, "no turn for the loop in the poll");
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 1);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
	ck_assert_uint_ge(cl.s.pe.n_yields, 1);
	/* ended soon after the turn, not at the poll's 20 ms */
	ck_assert_msg(cl.m.held_last - cl.m.held_first < 15000000,
		      "polled %.1f ms", (cl.m.held_last - cl.m.held_first) / 1e6);
}
END_TEST

/* Shared, the CPU a poll offers is the loop's (its offers are, once
 * every EVR_POLL_OFFER_NS for all its connections): when one
 * connection's offer finds that another task took it, every connection
 * of the loop backs off, not that one alone, whose peers' polls would go
 * on taking the CPU from whoever sends their replies.  (-c 4 against a
 * server on a host with one busy task did 0.73-1.04 x the iterations of
 * -c 1 while only the one backed off, 1.17-1.39 x since.)  Two clients
 * on one loop, each its mock echoing after 300 ms; the first offer lets
 * another task run.  Both sleep, long before their 20 ms poll, and (fd
 * -1: nobody wakes them) stall out. */
START_TEST(test_driver_shared_poll_preempted)
{
	struct evr_sched_seat third = { 0 };
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;
	uint64_t until;
	struct end *e[2] = { &cl, &sv };
	unsigned i;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.io = EVR_IO_ASYNC;
	oc.poll_us = 20000;
	oc.no_negotiate = 1;
	oc.stall_ms = 600;
	custom_plan(&pc, 100, 1, 3);
	drv_start(&cl, 1, &pc, &oc);
	drv_start(&sv, 1, &pc, &oc);
	mock_init(&cl.m, &q_c2s, &q_c2s, "server:7471");
	mock_init(&sv.m, &q_s2c, &q_s2c, "server:7472");
	fake_yields = 0;
	fake_yield_taken_at = 1;
	until = evr_now_ns() + 300000000ull;
	cl.m.hold_until = sv.m.hold_until = until;
	/* a third connection in play from the start (it never moves):
	 * the first client's first wait is a shared one already, not a
	 * poll in place before the second is in play */
	ck_assert_int_eq(evr__sched_join(&third, loop), 0);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	evr__sess_drive(&sv.s, EVR_SE_CONNECTED, 0);
	ck_assert_uint_eq(loop->sched->seats, 3);
	evr_loop_run(loop);
	evr__sched_leave(&third, loop);
	ck_assert_ptr_null(loop->sched);
	fake_yield_taken_at = 0;
	ck_assert_uint_eq(finished_n[0], 2);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(e[i]->s.fail.err, -EVR_E_STALL);
		ck_assert_msg(e[i]->s.pe.n_preempted == 1 &&
			      e[i]->s.pe.n_ran_out == 0,
			      "connection %u: %" PRIu64 " polls lost the CPU, %"
			      PRIu64 " ran out", i + 1, e[i]->s.pe.n_preempted,
			      e[i]->s.pe.n_ran_out);
		ck_assert_msg(e[i]->m.held_last - e[i]->m.held_first < 15000000,
			      "connection %u polled %.1f ms", i + 1,
			      (e[i]->m.held_last - e[i]->m.held_first) / 1e6);
	}
}
END_TEST

/* A poll still waiting offers its CPU (sched_yield, every
 * EVR_POLL_OFFER_NS): a task that wants it runs at once, and one that
 * did ends the poll as above.  Here the first offer lets one run. */
START_TEST(test_driver_poll_offers_cpu)
{
	fake_yield_taken_at = 1;
	long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 0);
	fake_yield_taken_at = 0;
	ck_assert_uint_eq(fake_yields, 1);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 1);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 0);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	/* not before the wait has gone on for an offer's interval */
	ck_assert_uint_ge(fake_yield_first_ns - cl.m.held_first,
			  EVR_POLL_OFFER_NS - 10000);
}
END_TEST

/* ... and offers that no task takes change nothing: the poll waits its
 * whole length.  (It offers every 100 usec; how many offers a busy host
 * lets it make in 20 ms, each handing the CPU to whoever is runnable, is
 * the host's business.) */
START_TEST(test_driver_poll_offers_untaken)
{
	long_poll_run_(20, 300, 600, EVR_POLL_OFFER_NS, 0);
	ck_assert_uint_eq(cl.s.pe.n_preempted, 0);
	ck_assert_uint_eq(cl.s.pe.n_ran_out, 1);
	ck_assert_uint_ge(fake_yields, 1);
	ck_assert_uint_ge(cl.m.held_last - cl.m.held_first, 19000000);
}
END_TEST

START_TEST(test_driver_block_eagain_is_stall)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;

	/* a blocking call that returns EAGAIN timed out (SO_RCVTIMEO) */
	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	oc.io = EVR_IO_BLOCK;
	oc.stall_ms = 1500;
	custom_plan(&pc, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_STALL);
	ck_assert_int_eq(cl.s.fail.detail, 1500);
	ck_assert_uint_eq(finished_n[0], 1);
}
END_TEST

START_TEST(test_driver_cancel)
{
	struct evr_stream_opts oc;
	struct evr_conn_plan pc;

	finished_n[0] = finished_n[1] = 0;
	base_opts(&oc);
	custom_plan(&pc, 100, 3, 4);
	drv_start(&cl, 1, &pc, &oc);
	evr__sess_drive(&cl.s, EVR_SE_CONNECTED, 0);
	ck_assert(ev_is_active(&cl.s.wd_w));
	ck_assert(ev_is_active(&cl.s.idle_w));
	evr__sess_drive(&cl.s, EVR_SE_CANCEL, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	ck_assert_int_eq(cl.s.fail.err, -EVR_E_CANCELLED);
	ck_assert_uint_eq(finished_n[0], 1);
	/* nothing is left on the loop */
	evr_loop_run(loop);
	ck_assert_uint_eq(finished_n[0], 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* every state, seen through the trace                                 */

struct trace_rec {
	int seen[EVR_SS__COUNT];
	unsigned lines;
	char first[8][64];
};

static void trace_cb(void *ud, const char *line)
{
	struct trace_rec *t = ud;
	const char *arrow = strstr(line, " -> ");
	const char *from = strchr(line, ':');
	unsigned i;

	ck_assert_ptr_nonnull(arrow);
	ck_assert_ptr_nonnull(from);
	ck_assert(!strncmp(line, "conn ", 5));
	from += 2;
	for (i = 0; i < EVR_SS__COUNT; i++) {
		const char *n = evr__sess_state_name(i);
		size_t l = strlen(n);

		if (!strcmp(arrow + 4, n))
			t->seen[i] = 1;
		if ((size_t)(arrow - from) == l && !strncmp(from, n, l))
			t->seen[i] = 1;
	}
	if (t->lines < 8 && !strncmp(line, "conn 1: ", 8))
		snprintf(t->first[t->lines++], sizeof(t->first[0]), "%s",
			 line + 8);
}

START_TEST(test_every_state_traced)
{
	struct evr_stream_opts oc, os;
	struct evr_conn_plan pc, ps;
	struct trace_rec tr;
	unsigned i;
	static const char *const client_start[] = {
		"CONNECTING -> HELLO_SEND", "HELLO_SEND -> HELLO_RECV",
		"HELLO_RECV -> PLAN_SEND", "PLAN_SEND -> REPLY_RECV",
		"REPLY_RECV -> SYNC_SEND", "SYNC_SEND -> SYNC_RECV",
		"SYNC_RECV -> DATA_SEND", "DATA_SEND -> DATA_RECV",
	};

	memset(&tr, 0, sizeof(tr));
	evr_loop_set_trace(loop, trace_cb, &tr);
	base_opts(&oc);
	base_opts(&os);
	lat2_plan(&pc);
	custom_plan(&ps, 100, 3, 4);
	end_start(&cl, 1, &pc, &oc);
	end_start(&sv, 0, &ps, &os);
	pump();
	assert_both_done();
	for (i = 0; i < 8; i++)
		ck_assert_str_eq(tr.first[i], client_start[i]);
	/* and a failure */
	evr__sess_fini(&cl.s);
	cl.live = 0;
	bq_free(&q_c2s);
	bq_free(&q_s2c);
	end_start(&cl, 1, &pc, &oc);
	evr__sess_event(&cl.s, EVR_SE_CANCEL, 0);
	ck_assert_int_eq(cl.s.state, EVR_SS_FAILED);
	evr_loop_set_trace(loop, NULL, NULL);
	for (i = 0; i < EVR_SS__COUNT; i++)
		ck_assert_msg(tr.seen[i], "state %s never seen",
			      evr__sess_state_name(i));
}
END_TEST

/* ------------------------------------------------------------------ */

/* -T a polls while the session's waits for its peer are short on
 * average (an active exchange), sleeps at once while they are long (an
 * idle peer); one long pause makes it cold for a wait or two, not for
 * long. */
START_TEST(test_poll_budget)
{
	struct evr_pollest p;
	uint64_t now = 1000000, bytes = 0, e0;
	int i;

	evr__poll_init(&p, EVR_POLL_NS);
	/* a new session polls */
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* a wait begins; no byte moved: the same wait goes on */
	evr__poll_mark(&p, bytes, now);
	ck_assert_uint_eq(p.t0, now);
	evr__poll_mark(&p, bytes, now + 5000);
	ck_assert_uint_eq(p.t0, now);
	ck_assert_uint_eq(p.ewma_ns, 0);
	/* ping-pong: each wait 4 us; the average comes to it */
	for (i = 0; i < 40; i++) {
		now += 4000;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
	}
	ck_assert_uint_ge(p.ewma_ns, 3990);
	ck_assert_uint_le(p.ewma_ns, 4000);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* one pause of 2 s counts as 4 x the cold mark, and rises by a
	 * quarter: cold, sleep at once */
	e0 = p.ewma_ns;
	now += 2000000000ull;
	bytes += 64;
	evr__poll_mark(&p, bytes, now);
	ck_assert_uint_eq(p.ewma_ns, e0 + (4 * EVR_POLL_COLD_NS - e0) / 4);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
	/* the exchange goes on, each wait now with a sleep and a wake-up
	 * (100 us): active again at the next wait */
	now += 100000;
	bytes += 64;
	evr__poll_mark(&p, bytes, now);
	ck_assert_uint_le(p.ewma_ns, EVR_POLL_COLD_NS);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* an idle peer (a wait of seconds each time): cold, and stays so */
	for (i = 0; i < 10; i++) {
		now += 3000000000ull;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
		if (i >= 1)
			ck_assert_uint_eq(evr__poll_budget(&p), 0);
	}
	ck_assert_uint_gt(p.ewma_ns, 3 * EVR_POLL_COLD_NS);
}
END_TEST

/* -T a backs off a poll that keeps finding nothing once it cannot grow
 * (it is at its cap): after two misses in a row it sleeps through 1, 2,
 * 4 ... 64 waits; a find resets it. */
START_TEST(test_poll_backoff)
{
	struct evr_pollest p;
	unsigned expect[] = { 0, 1, 2, 4, 8, 16, 32, 64, 64, 64 };
	unsigned i;

	evr__poll_init(&p, EVR_POLL_NS);
	/* a poll that may still grow does not back off */
	for (i = 0; i < 10; i++)
		evr__poll_result(&p, EVR_POLL_RAN_OUT);
	ck_assert_uint_eq(p.misses, 0);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* grown to its cap */
	p.budget_ns = EVR_POLL_MAX_NS;
	for (i = 0; i < 10; i++) {
		evr__poll_result(&p, EVR_POLL_RAN_OUT);
		ck_assert_uint_eq(p.skip, expect[i]);
		ck_assert_uint_eq(evr__poll_budget(&p),
				  expect[i] ? 0 : EVR_POLL_MAX_NS);
	}
	/* the waits slept through count the skip down (the driver's
	 * poll_async() does) */
	while (p.skip)
		p.skip--;
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_MAX_NS);
	/* a poll that finds data: no back-off at all */
	evr__poll_result(&p, EVR_POLL_FOUND);
	ck_assert_uint_eq(p.misses, 0);
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	ck_assert_uint_eq(p.skip, 0);
	ck_assert_uint_gt(evr__poll_budget(&p), 0);
}
END_TEST

/* A poll that lost its CPU (EVR_POLL_PREEMPTED) backs off at once,
 * wherever its length was: back to the base, and 1, 2, 4 ... 64 waits
 * slept through; the wait in hand sizes nothing.  A find resets it. */
START_TEST(test_poll_preempted)
{
	struct evr_pollest p;
	unsigned expect[] = { 1, 2, 4, 8, 16, 32, 64, 64 };
	uint64_t now = 1000000, bytes = 0;
	unsigned i;

	evr__poll_init(&p, EVR_POLL_NS);
	ck_assert_uint_eq(p.offer_ns, EVR_POLL_OFFER_NS);
	p.budget_ns = 2000000;      /* learnt */
	evr__poll_mark(&p, bytes, now);
	evr__poll_result(&p, EVR_POLL_PREEMPTED);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_NS);
	ck_assert_uint_eq(p.skip, 1);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
	/* the wait ends 900 us later: no poll sized on it */
	evr__poll_mark(&p, bytes += 64, now += 900000);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_NS);
	for (i = 1; i < sizeof(expect) / sizeof(expect[0]); i++) {
		evr__poll_result(&p, EVR_POLL_PREEMPTED);
		ck_assert_uint_eq(p.skip, expect[i]);
	}
	evr__poll_result(&p, EVR_POLL_FOUND);
	ck_assert_uint_eq(p.skip, 0);
	ck_assert_uint_eq(p.misses, 0);
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
}
END_TEST

/* Replies that come later than the poll lasts (an emulated device, a
 * network round trip over 200 usec) make it longer: a miss whose wait
 * then took d makes it 1.25 d, up to 5 ms, if d was still a fast
 * exchange's (under the cold mark: 1 ms, or five polls); the cold mark
 * follows the poll.  Replies found early leave it as it is (the next
 * reply of a long tail would miss a shorter one); a session that turns
 * cold polls from the base again. */
START_TEST(test_poll_grows)
{
	struct evr_pollest p;
	uint64_t now = 1000000, bytes = 0;
	int i;

	evr__poll_init(&p, EVR_POLL_NS);
	evr__poll_mark(&p, bytes, now);
	/* the poll ran out; the reply came 400 us after the wait began */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 400000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 500000);
	ck_assert_uint_eq(evr__poll_budget(&p), 500000);
	/* a wait found while polling, after 300 us: 4 x 300 is more than
	 * the poll, which stays */
	now += 300000;
	evr__poll_mark(&p, bytes += 64, now);
	evr__poll_result(&p, EVR_POLL_FOUND);
	ck_assert_uint_eq(p.budget_ns, 500000);
	/* a miss, then 900 us: 1125 (the cold mark is 5 x 500 now) */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 900000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 1125000);
	/* a miss, then 1.9 ms: 2375 */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 1900000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 2375000);
	/* a miss, then 4.4 ms: 5500 is past the cap (5 ms) */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 4400000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_MAX_NS);
	ck_assert_uint_eq(EVR_POLL_MAX_NS, 5000000);
	ck_assert_uint_eq(p.misses, 0);
	/* at the cap, misses count */
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	ck_assert_uint_eq(p.misses, 1);
	/* a miss whose wait is past the cold mark (5 x 600 us): no growth */
	p.budget_ns = 600000;
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	now += 5000000;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(p.budget_ns, 600000);
	/* replies found after 20 us: the poll stays as it grew */
	for (i = 0; i < 100; i++) {
		now += 20000;
		evr__poll_mark(&p, bytes += 64, now);
		evr__poll_result(&p, EVR_POLL_FOUND);
	}
	ck_assert_uint_eq(p.budget_ns, 600000);
	ck_assert_uint_eq(evr__poll_budget(&p), 600000);
	/* a pause turns the session cold: it sleeps at once, and the
	 * poll is back at its base */
	now += 2000000000ull;
	evr__poll_mark(&p, bytes += 64, now);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
	ck_assert_uint_eq(p.budget_ns, EVR_POLL_NS);
	/* the exchange picks up: it polls from the base */
	for (i = 0; i < 10; i++) {
		now += 20000;
		evr__poll_mark(&p, bytes += 64, now);
	}
	ck_assert_uint_eq(evr__poll_budget(&p), EVR_POLL_NS);
	/* a poll of 0 never grows: it never polls */
	evr__poll_init(&p, 0);
	evr__poll_mark(&p, bytes += 64, now += 1000);
	evr__poll_result(&p, EVR_POLL_RAN_OUT);
	evr__poll_mark(&p, bytes += 64, now += 100000);
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
}
END_TEST

/* The budget is the session's (opts.poll_us, rstream --poll-usec): none
 * never polls; a long one moves the cold mark to five budgets, so that a
 * peer whose waits are longer than 1 ms but within it still counts as a
 * fast exchange. */
START_TEST(test_poll_budget_set)
{
	struct evr_pollest none, p, d;
	uint64_t now = 1000, bytes = 0;
	int i;

	evr__poll_init(&none, 0);
	evr__poll_init(&p, 2000000); /* 2 ms */
	evr__poll_init(&d, EVR_POLL_NS);
	ck_assert_uint_eq(evr__poll_budget(&none), 0);
	ck_assert_uint_eq(evr__poll_budget(&p), 2000000);
	/* waits of 3 ms: cold for the default budget, not for 2 ms */
	for (i = 0; i < 20; i++) {
		now += 3000000;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
		evr__poll_mark(&d, bytes, now);
	}
	ck_assert_uint_eq(evr__poll_budget(&p), 2000000);
	ck_assert_uint_eq(evr__poll_budget(&d), 0);
	/* waits of 12 ms: cold for both */
	for (i = 0; i < 20; i++) {
		now += 12000000;
		bytes += 64;
		evr__poll_mark(&p, bytes, now);
	}
	ck_assert_uint_eq(evr__poll_budget(&p), 0);
}
END_TEST

static Suite *session_suite(void)
{
	Suite *su = suite_create("session");
	TCase *tc;

	tc = tcase_create("basics");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_state_names);
	tcase_add_test(tc, test_init);
	suite_add_tcase(su, tc);

	tc = tcase_create("client");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_negotiated_steps);
	tcase_add_test(tc, test_client_plan_bytes_lat2);
	tcase_add_test(tc, test_client_rejected);
	tcase_add_test(tc, test_client_rejected_each_status);
	tcase_add_test(tc, test_client_garbage_reply);
	tcase_add_test(tc, test_client_upstream_server);
	tcase_add_test(tc, test_client_verify_no_hello);
	tcase_add_test(tc, test_client_verify_failure);
	tcase_add_test(tc, test_client_verify_bad_sync);
	tcase_add_test(tc, test_client_verify_negotiated);
	tcase_add_test(tc, test_client_no_negotiate);
	tcase_add_test(tc, test_client_lat2_negotiated);
	suite_add_tcase(su, tc);

	tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_server_negotiated_steps);
	tcase_add_test(tc, test_server_negotiated_verify_flag);
	tcase_add_test(tc, test_server_budget);
	tcase_add_test(tc, test_client_server_busy);
	tcase_add_test(tc, test_server_rejects_version);
	tcase_add_test(tc, test_server_rejects_ntests);
	tcase_add_test(tc, test_server_rejects_entries);
	tcase_add_test(tc, test_server_bad_plan_magic);
	tcase_add_test(tc, test_server_upstream_client);
	tcase_add_test(tc, test_server_pattern_sync_37);
	tcase_add_test(tc, test_server_pattern_sync_wraps);
	tcase_add_test(tc, test_server_verify_given_zeros);
	tcase_add_test(tc, test_server_extra_data_in_drain);
	tcase_add_test(tc, test_server_decided_upstream_client);
	tcase_add_test(tc, test_server_decided_negotiated);
	suite_add_tcase(su, tc);

	tc = tcase_create("duration");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_duration);
	tcase_add_test(tc, test_client_duration_upstream);
	tcase_add_test(tc, test_client_duration_end);
	tcase_add_test(tc, test_client_conns_upstream);
	tcase_add_test(tc, test_client_percentiles);
	tcase_add_test(tc, test_client_split);
	tcase_add_test(tc, test_server_hold_stamps);
	tcase_add_test(tc, test_server_duration);
	tcase_add_test(tc, test_server_duration_chunked);
	suite_add_tcase(su, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_eof_in_each_phase, 0,
			    sizeof(eof_cases) / sizeof(eof_cases[0]));
	tcase_add_loop_test(tc, test_reset_in_each_phase, 0,
			    sizeof(eof_cases) / sizeof(eof_cases[0]));
	tcase_add_test(tc, test_send_errors);
	tcase_add_test(tc, test_eagain_and_eintr);
	tcase_add_test(tc, test_partial_io);
	tcase_add_test(tc, test_stall);
	tcase_add_test(tc, test_stall_in_drain_is_done);
	tcase_add_test(tc, test_cancel);
	tcase_add_test(tc, test_driver_fail_event);
	tcase_add_test(tc, test_conn_error);
	tcase_add_test(tc, test_connected_misuse);
	tcase_add_test(tc, test_events_after_done);
	suite_add_tcase(su, tc);

	tc = tcase_create("pair");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_e2e_custom_negotiated);
	tcase_add_test(tc, test_e2e_sends_more);
	tcase_add_test(tc, test_e2e_skip_echo);
	tcase_add_test(tc, test_e2e_lat2_negotiated);
	tcase_add_test(tc, test_e2e_buffer_per_test);
	tcase_add_test(tc, test_e2e_shared_buffer);
	tcase_add_test(tc, test_e2e_chunked);
	tcase_add_test(tc, test_e2e_verify);
	tcase_add_test(tc, test_e2e_verify_counter_carried);
	tcase_add_test(tc, test_e2e_verify_negotiated);
	tcase_add_test(tc, test_e2e_verify_negotiated_counter_carried);
	tcase_add_test(tc, test_e2e_no_negotiate);
	tcase_add_test(tc, test_e2e_small_pieces);
	tcase_add_test(tc, test_e2e_small_pieces_verify);
	tcase_add_test(tc, test_e2e_mismatch_without_negotiation);
	tcase_add_test(tc, test_e2e_client_sends_too_much);
	tcase_add_test(tc, test_every_state_traced);
	suite_add_tcase(su, tc);

	tc = tcase_create("driver");
	tcase_add_checked_fixture(tc, pair_setup, pair_teardown);
	tcase_add_test(tc, test_driver_pair_nonblock);
	tcase_add_test(tc, test_driver_stall_nonblock);
	tcase_add_test(tc, test_driver_ready_saves_calls);
	tcase_add_test(tc, test_driver_ready_never);
	tcase_add_test(tc, test_driver_block_eagain_is_stall);
	tcase_add_test(tc, test_driver_cancel);
	tcase_add_test(tc, test_driver_long_poll_yields);
	tcase_add_test(tc, test_driver_long_poll_ends);
	tcase_add_test(tc, test_driver_poll_preempted);
	tcase_add_test(tc, test_driver_poll_preempted_across_turn);
	tcase_add_test(tc, test_driver_poll_offers_cpu);
	tcase_add_test(tc, test_driver_shared_poll_preempted);
	tcase_add_test(tc, test_driver_poll_offers_untaken);
	tcase_add_test(tc, test_poll_budget);
	tcase_add_test(tc, test_poll_backoff);
	tcase_add_test(tc, test_poll_preempted);
	tcase_add_test(tc, test_poll_budget_set);
	tcase_add_test(tc, test_poll_grows);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(session_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
