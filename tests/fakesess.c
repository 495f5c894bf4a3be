/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The session suites' shared fakes and fixtures (fakesess.h): the byte
 * queue, the mock transport, the recording owner, one machine against a
 * scripted peer and two back to back.  Moved here from check_session.c
 * when it was split by the files it tests; each helper is defined once.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakecpu.h"
#include "fakesess.h"

/* ------------------------------------------------------------------ */
/* an in-memory byte queue                                             */

size_t bq_avail(const struct bq *q)
{
	return q->wr - q->rd;
}

void bq_push(struct bq *q, const void *p, size_t n)
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

size_t bq_pop(struct bq *q, void *p, size_t n)
{
	if (n > bq_avail(q))
		n = bq_avail(q);
	if (p)
		memcpy(p, q->d + q->rd, n);
	q->rd += n;
	q->gen++;
	return n;
}

void bq_free(struct bq *q)
{
	free(q->d);
	memset(q, 0, sizeof(*q));
}

/* ------------------------------------------------------------------ */
/* the mock transport (the CPU's: fakecpu.h)                          */

/* A call that returns -EAGAIN: was it one the ready op could have
 * saved? */
static ssize_t mock_eagain(struct mock *mk, ssize_t ret)
{
	if (ret != -EAGAIN)
		return ret;
	if (mk->eagain_seen && mk->rx->gen == mk->rx_gen &&
	    mk->tx->gen == mk->tx_gen)
		mk->wasted++;
	mk->eagain_seen = 1;
	mk->rx_gen = mk->rx->gen;
	mk->tx_gen = mk->tx->gen;
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
	struct mock *mk = (struct mock *)c;

	mk->readies++;
	if (mk->ready_says >= 0)
		return mk->ready_says;
	return !mk->eagain_seen || mk->rx->gen != mk->rx_gen ||
	       mk->tx->gen != mk->tx_gen || mk->rx->eof;
}

static ssize_t mock_send_(struct evr_conn *c, const void *buf, size_t len,
			  int more)
{
	struct mock *mk = (struct mock *)c;
	size_t n = len;

	/* (no ck_assert on hot paths: each one is a write to Check's pipe) */
	if (mk->closes || !len)
		ck_abort_msg("send on a closed conn or of 0 bytes");
	mk->sends++;
	if (len > mk->max_len)
		mk->max_len = len;
	mk->more_pending = more;
	if (more)
		mk->more_bytes += len;
	if (mk->send_iscript < mk->send_nscript)
		return mk->send_script[mk->send_iscript++];
	if (mk->send_err)
		return mk->send_err;
	if (mk->send_block)
		return -EAGAIN;
	if (mk->tx->eof)
		ck_abort_msg("send after shutdown");
	if (mk->chunk && n > mk->chunk)
		n = mk->chunk;
	if (mk->tx->limit) {
		if (bq_avail(mk->tx) >= mk->tx->limit)
			return -EAGAIN;
		if (n > mk->tx->limit - bq_avail(mk->tx))
			n = mk->tx->limit - bq_avail(mk->tx);
	}
	bq_push(mk->tx, buf, n);
	return (ssize_t)n;
}

static ssize_t mock_recv_(struct evr_conn *c, void *buf, size_t len)
{
	struct mock *mk = (struct mock *)c;
	size_t n = len;

	if (mk->closes || !len)
		ck_abort_msg("recv on a closed conn or of 0 bytes");
	mk->recvs++;
	mk->more_broken += mk->more_pending;
	if (len > mk->max_len)
		mk->max_len = len;
	if (mk->recv_iscript < mk->recv_nscript)
		return mk->recv_script[mk->recv_iscript++];
	if (mk->recv_err)
		return mk->recv_err;
	if (mk->hold_until) {
		uint64_t now = evr_now_ns();

		if (now < mk->hold_until) {
			if (!mk->held_first)
				mk->held_first = now;
			mk->held_last = now;
			if (mk->off_cpu_after && fake_yields >= mk->off_cpu_after) {
				mk->off_cpu_after = 0;
				fake_taken++;
			}
			return -EAGAIN;
		}
	}
	if (!bq_avail(mk->rx))
		return mk->rx->eof ? 0 : -EAGAIN;
	if (mk->chunk && n > mk->chunk)
		n = mk->chunk;
	if (!buf) {
		if (!mk->c.can_skip)
			ck_abort_msg("recv(NULL) from a transport that cannot skip");
		n = bq_pop(mk->rx, NULL, n);
		mk->skipped += n;
		return (ssize_t)n;
	}
	return (ssize_t)bq_pop(mk->rx, buf, n);
}

static void mock_shutdown(struct evr_conn *c)
{
	struct mock *mk = (struct mock *)c;

	mk->shutdowns++;
	mk->tx->eof = 1;
}

static void mock_close(struct evr_conn *c)
{
	struct mock *mk = (struct mock *)c;

	/* the mock belongs to the test: nothing to free */
	mk->closes++;
}

const struct evr_conn_ops mock_ops = {
	.send = mock_send,
	.recv = mock_recv,
	.shutdown = mock_shutdown,
	.close = mock_close,
};

const struct evr_conn_ops mock_ready_ops = {
	.send = mock_send,
	.recv = mock_recv,
	.shutdown = mock_shutdown,
	.close = mock_close,
	.ready = mock_ready,
};

void mock_init(struct mock *mk, struct bq *rx, struct bq *tx,
	       const char *peer)
{
	memset(mk, 0, sizeof(*mk));
	mk->c.ops = &mock_ops;
	mk->c.fd = -1;
	mk->c.takes_more = 1; /* it records the more flags */
	snprintf(mk->c.peer, sizeof(mk->c.peer), "%s", peer);
	mk->rx = rx;
	mk->tx = tx;
}

void script_recv(struct mock *mk, int ret)
{
	ck_assert_uint_lt(mk->recv_nscript, SCRIPT_MAX);
	mk->recv_script[mk->recv_nscript++] = ret;
}

void script_send(struct mock *mk, int ret)
{
	ck_assert_uint_lt(mk->send_nscript, SCRIPT_MAX);
	mk->send_script[mk->send_nscript++] = ret;
}

/* ------------------------------------------------------------------ */
/* results, through the owner callbacks                                */

void rec_result(struct evr_sess *x, const struct evr_test *t,
		uint64_t ns)
{
	struct rec *r = x->owner_ud;

	ck_assert_uint_lt(r->n, REC_MAX);
	r->t[r->n] = *t;
	r->ns[r->n] = ns;
	r->state_at_result[r->n] = x->state;
	r->lat_samples[r->n] = evr__sess_lat_valid(x) ? x->lat_res.samples : 0;
	r->split_valid[r->n] = evr__sess_split_valid(x);
	if (evr__sess_split_valid(x))
		r->split[r->n] = x->split->res;
	r->n++;
}

void rec_plan_done(struct evr_sess *x)
{
	struct rec *r = x->owner_ud;

	r->plan_done++;
	r->state_at_plan_done = x->state;
	r->results_at_plan_done = r->n;
}

const struct evr_sess_owner rec_owner = {
	.result = rec_result,
	.plan_done = rec_plan_done,
};

void assert_result(const struct rec *r, unsigned i, const char *name,
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

struct evr_loop *loop;
struct bq q_in, q_out;   /* q_in: peer -> us, q_out: us -> peer */
struct mock m;
struct evr_sess s;
struct rec rec;
int s_live;

void setup(void)
{
	ck_assert_int_eq(evr_loop_new(&loop, NULL), 0);
	memset(&q_in, 0, sizeof(q_in));
	memset(&q_out, 0, sizeof(q_out));
	memset(&rec, 0, sizeof(rec));
	mock_init(&m, &q_in, &q_out, "192.0.2.1:7471");
	s_live = 0;
}

void teardown(void)
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

void reset_fixture(void)
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

void base_opts(struct evr_stream_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->io = EVR_IO_NONBLOCK;
	o->port = EVR_DEFAULT_PORT;
}

void custom_plan(struct evr_conn_plan *cp, uint32_t size,
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
void lat2_plan(struct evr_conn_plan *cp)
{
	memset(cp, 0, sizeof(*cp));
	cp->opt = EVR_OPT_LATENCY;
	cp->ntests = 2;
	evr__test_init(&cp->tests[0], EVR_TEST_LAT, 64, 0, 0);
	cp->tests[0].iters = 50;
	evr__test_init(&cp->tests[1], EVR_TEST_LAT, 1536, 0, 0);
	cp->tests[1].iters = 20;
}

void default_lat_plan(struct evr_conn_plan *cp)
{
	struct evr_stream_opts o;
	struct evr_plan p;

	base_opts(&o);
	ck_assert_int_eq(evr__plan_build(&p, &o), 0);
	*cp = p.conns[0];
}

void start_sess(int client, const struct evr_conn_plan *cp,
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

enum evr_sess_want ev(enum evr_sess_event e, int arg)
{
	return evr__sess_event(&s, e, arg);
}

enum evr_sess_want ready(void)
{
	return evr__sess_event(&s, EVR_SE_READY, 0);
}

/* READY until the machine waits for I/O or ends (not just fake_yields). */
enum evr_sess_want settle(void)
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

void feed(const void *p, size_t n)
{
	bq_push(&q_in, p, n);
}

void feed_zeros(size_t n)
{
	uint8_t *z = calloc(1, n);

	ck_assert_ptr_nonnull(z);
	feed(z, n);
	free(z);
}

void feed_pattern(struct evr_pattern *p, size_t n)
{
	uint8_t *b = malloc(n);

	ck_assert_ptr_nonnull(b);
	evr__pattern_fill(p, b, n);
	feed(b, n);
	free(b);
}

/* Take exactly n bytes the session sent. */
void take(void *p, size_t n)
{
	ck_assert_msg(bq_avail(&q_out) >= n, "sent %zu bytes, expected %zu",
		      bq_avail(&q_out), n);
	bq_pop(&q_out, p, n);
}

void take_discard(size_t n)
{
	take(NULL, n);
}

void take_expect_pattern(struct evr_pattern *p, size_t n)
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

void feed_hdr(uint16_t version, uint16_t flags, uint16_t ntests,
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

void feed_entry_f(uint32_t size, uint32_t count, uint32_t iters,
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

void feed_entry(uint32_t size, uint32_t count, uint32_t iters,
		uint8_t kind)
{
	feed_entry_f(size, count, iters, kind, 0);
}

void feed_reply_f(int status, uint32_t features)
{
	uint8_t b[EVR_PLAN_REPLY_LEN];

	evr__plan_reply_encode(b, status, EVR_MAX_XFER_SIZE);
	evr__plan_reply_set_features(b, features);
	feed(b, sizeof(b));
}

/* A reply as a server before the features sends it (zeros there). */
void feed_reply(int status)
{
	feed_reply_f(status, 0);
}

void assert_failed(int err, enum evr_phase ph)
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
void assert_terminal_sticks(void)
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

/* Client up to REPLY_RECV, with the plan consumed from the output. */
void client_to_reply_recv(const struct evr_conn_plan *cp,
			  const struct evr_stream_opts *o)
{
	start_sess(1, cp, o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_HELLO_RECV);
	feed(evr__ack_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_REPLY_RECV);
	take_discard(16 + 16 + cp->ntests * 16);
}

/* Server past the HELLO: its ACK is consumed from the output. */
void server_to_plan_hdr(const struct evr_stream_opts *o)
{
	struct evr_conn_plan cp;

	custom_plan(&cp, 100, 3, 4);
	start_sess(0, &cp, o);
	ASSERT_AT(EVR_WANT_READ, ev(EVR_SE_CONNECTED, 0), EVR_SS_FIRST_RECV);
	feed(evr__hello_msg, 16);
	ASSERT_AT(EVR_WANT_READ, ready(), EVR_SS_PLAN_HDR_RECV);
	take_discard(16);
}

/* ------------------------------------------------------------------ */
/* two machines back to back                                           */

struct bq q_c2s, q_s2c;
struct end cl, sv;

void pair_setup(void)
{
	setup();
	memset(&q_c2s, 0, sizeof(q_c2s));
	memset(&q_s2c, 0, sizeof(q_s2c));
	memset(&cl, 0, sizeof(cl));
	memset(&sv, 0, sizeof(sv));
}

void pair_teardown(void)
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

void end_start(struct end *e, int client,
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

int term(const struct evr_sess *x)
{
	return x->state == EVR_SS_DONE || x->state == EVR_SS_FAILED;
}

/* Connect both and run them in turn until both have ended, or until
 * neither moves a byte any more (one waits for the other in vain). */
unsigned pump(void)
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

void assert_both_done(void)
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
