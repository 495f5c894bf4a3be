/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA stream transport's connections (src/stream/rdma/rdma_conn.c,
 * rdma_dev.c's completions, rdma_cm.c's set-up and teardown) on the fake
 * device of tests/fakeverbs.c: a client and a server transport on one
 * real loop, connected back to back through the fake CM exactly as the
 * engines connect them (x_open, x_connect, the listener's
 * CONNECT_REQUEST, rdma_accept, ESTABLISHED), then driven through the
 * connection ops (send, recv, shutdown, close, ready) and the loop.
 *
 * Asserted: bytes intact and in order across many wraps of the rings,
 * with completions at once or held back; a sender stops (-EAGAIN) when
 * the peer's credits or ring run out and resumes once the peer reads;
 * the cork (sends with more gather into one write, which leaves at the
 * end); the peer's DISCONNECT read as EOF after the data; a failed
 * completion as -EIO with the blame (EVR_EIO_PEER or not) and a port
 * that went down as -EVR_E_PORTDOWN; a flush after our own shutdown is
 * no error, the same flush on a live connection is; a failed post as
 * -EIO naming ibv_post_send; an owner asleep is woken by the completion
 * channel.  After each test, the fake must have seen nothing a device
 * would refuse (queues past their depth, an rkey or lkey that does not
 * cover the bytes, an RNR, a CQ destroyed with events unacked), and
 * every object the code made must be gone.
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "fakeverbs.h"
#include "loop/loop.h"
#include "stream/rdma/rdma_int.h"

#define PUMP_ROUNDS 64
#define STEP_MAX 200000     /* every loop of a test is bounded */

struct side {
	struct evr_stream_opts o;
	struct evr_xport *xp;
	struct evr_conn *c;
	int connected, conn_err, drained, refused;
	unsigned wakes;
};

static struct evr_loop *L;
static struct side cli, srv;
static char trace_log[16384];

static void on_trace(void *ud, const char *line)
{
	size_t n = strlen(trace_log);

	snprintf(trace_log + n, sizeof(trace_log) - n, "%s\n", line);
}

static void on_connected(void *ud, struct evr_conn *c, int err)
{
	struct side *s = ud;

	s->connected++;
	s->conn_err = err;
}

static void on_accepted(void *ud, struct evr_conn *c,
			const struct sockaddr *peer)
{
	struct side *s = ud;

	s->c = c;
	s->connected++;
}

static void on_drained(void *ud)
{
	((struct side *)ud)->drained++;
}

static void on_refused(void *ud, int err, const struct sockaddr *peer)
{
	((struct side *)ud)->refused++;
}

static const struct evr_xport_cbs cbs = {
	.connected = on_connected,
	.accepted = on_accepted,
	.drained = on_drained,
	.refused = on_refused,
};

static void on_wake(struct evr_conn *c)
{
	((struct side *)c->wake_ud)->wakes++;
}

static struct rconn *rc_of(struct evr_conn *c)
{
	return evr__container_of(c, struct rconn, base);
}

/* The loop's turns: CM events, completion channels, deferred upcalls. */
static void pump(void)
{
	int i;

	for (i = 0; i < PUMP_ROUNDS; i++) {
		fv_progress();
		ev_run(L->ev, EVRUN_NOWAIT);
	}
}

static void xport_make(struct side *s, int server, int bs,
		       enum evr_io_mode io)
{
	struct evr_xport base = { .loop = L, .cbs = &cbs, .ud = s };
	struct evr_failure f;

	memset(s, 0, sizeof(*s));
	s->o.server = server;
	s->o.transport = EVR_TRANSPORT_RDMA;
	s->o.buffer_size = bs;
	s->o.io = io;
	s->o.stall_ms = 1000;
	base.o = &s->o;
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(evr__rdma_xport_new(&s->xp, &base, &f), 0);
}

/* A client and a server transport, and one connection between them. */
static void pair_up(int bs, enum evr_io_mode cio, enum evr_io_mode sio)
{
	struct rdma_xport *sx;
	struct evr_failure f;
	struct evr_addr dst;
	struct sockaddr_in *in = (void *)&dst.ss;
	int err = 0;

	fv_begin();
	ck_assert_int_eq(evr_loop_new(&L, NULL), 0);
	fv_use_loop(L);
	trace_log[0] = 0;
	evr_loop_set_trace(L, on_trace, NULL);
	xport_make(&cli, 0, bs, cio);
	xport_make(&srv, 1, bs, sio);
	/* the listener: what x_listen would have bound */
	sx = evr__container_of(srv.xp, struct rdma_xport, base);
	ck_assert_int_eq(rdma_create_id(sx->ch, &sx->lid, sx, RDMA_PS_TCP), 0);
	fv_listen(sx->lid);

	memset(&dst, 0, sizeof(dst));
	in->sin_family = AF_INET;
	in->sin_port = htons(7471);
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dst.len = sizeof(*in);
	dst.family = AF_INET;
	dst.valid = 1;
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(cli.xp->ops->open(cli.xp, &dst, -1, &cli.c, &f), 0);
	ck_assert_int_eq(cli.xp->ops->connect(cli.xp, cli.c, &dst, NULL, &f,
					      &err), EVR_XP_CONNECTING);
	pump();
	ck_assert_int_eq(cli.connected, 1);
	ck_assert_int_eq(cli.conn_err, 0);
	ck_assert_int_eq(srv.connected, 1);
	ck_assert_ptr_nonnull(srv.c);
	cli.c->wake = on_wake;
	cli.c->wake_ud = &cli;
	srv.c->wake = on_wake;
	srv.c->wake_ud = &srv;
	ck_assert_int_eq(rc_of(cli.c)->state, EVR_RC_OPEN);
	ck_assert_int_eq(rc_of(srv.c)->state, EVR_RC_OPEN);
}

static void assert_device_happy(void)
{
	ck_assert_uint_eq(fv_stats.sq_overflow, 0);
	ck_assert_uint_eq(fv_stats.rq_overflow, 0);
	ck_assert_uint_eq(fv_stats.cq_overflow, 0);
	ck_assert_uint_eq(fv_stats.rkey_bad, 0);
	ck_assert_uint_eq(fv_stats.lkey_bad, 0);
	ck_assert_uint_eq(fv_stats.rnr, 0);
	ck_assert_uint_eq(fv_stats.bad_opcode, 0);
}

/* Close what is open, free both transports, and check that everything
 * the code made on the fake device is gone. */
static void pair_down(void)
{
	if (cli.c)
		cli.c->ops->close(cli.c);
	if (srv.c)
		srv.c->ops->close(srv.c);
	cli.c = srv.c = NULL;
	pump();
	cli.xp->ops->free(cli.xp);
	srv.xp->ops->free(srv.xp);
	evr_loop_free(L);
	L = NULL;
	ck_assert_uint_eq(fv_stats.unacked_destroy, 0);
	ck_assert_uint_eq(fv_end(), 0);
}

/* ---- a byte stream to check ---- */

static uint8_t pattern(uint64_t i)
{
	uint64_t x = i * 0x9e3779b97f4a7c15ull;

	return (uint8_t)(x >> 56 ^ x >> 23 ^ i);
}

static void fill(uint8_t *b, uint64_t from, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = pattern(from + i);
}

/* The first position in b[0..n) that is not the stream's from there,
 * or n. */
static size_t mismatch(const uint8_t *b, uint64_t from, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i] != pattern(from + i))
			return i;
	return n;
}

/* Receive all that is there on c, checking it against the stream at
 * *got; returns the bytes read (or a negative errno as recv said). */
static ssize_t drain_check(struct evr_conn *c, uint64_t *got, size_t rlen)
{
	static uint8_t rb[1 << 17];
	ssize_t n, total = 0;
	int i;

	ck_assert_uint_le(rlen, sizeof(rb));
	for (i = 0; i < 1000; i++) {
		n = c->ops->recv(c, rb, rlen);
		if (n <= 0)
			return total ? total : n;
		ck_assert_uint_eq(mismatch(rb, *got, (size_t)n), (size_t)n);
		*got += (uint64_t)n;
		total += n;
	}
	return total;
}

/*
 * A stream of total bytes from client to server, sent in sizes[] turn by
 * turn (some with more), read in reads[] sizes, with completions executed
 * at once or (hold) only between turns, so that writes and their
 * completions lag behind the calls.
 */
static void stream_run(uint64_t total, int hold)
{
	static const size_t sizes[] = { 1, 7, 63, 64, 65, 100, 1000, 2047,
		2048, 2049, 4095, 4096, 5000, 8191, 9000, 20000, 3, 70000 };
	static const size_t reads[] = { 1, 13, 500, 3000, 7000, 65536, 100,
		131072 };
	static uint8_t sb[70000];
	uint64_t sent = 0, got = 0;
	unsigned step, k = 0, r = 0, eagain = 0;
	ssize_t n;

	fv_hold(hold);
	for (step = 0; step < STEP_MAX && got < total; step++) {
		if (sent < total) {
			size_t len = sizes[k % (sizeof(sizes) / sizeof(sizes[0]))];
			int more = k % 3 == 1 && sent + len < total;

			if (len > total - sent)
				len = (size_t)(total - sent);
			fill(sb, sent, len);
			n = cli.c->ops->send(cli.c, sb, len, more);
			ck_assert_msg(n > 0 || n == -EAGAIN,
				      "send: %zd at %llu", n,
				      (unsigned long long)sent);
			if (n > 0) {
				ck_assert_uint_le((size_t)n, len);
				sent += (uint64_t)n;
				k++;
			} else {
				eagain++;
			}
		}
		if (hold && step % 2)
			fv_progress();
		/* all sent: the sender's calls go on (an owner waits for
		 * its peer in recv), which lets its cork leave */
		if (sent == total)
			ck_assert_int_eq(cli.c->ops->recv(cli.c, sb, 1),
					 -EAGAIN);
		if (step % 2 == 0 || sent == total) {
			n = drain_check(srv.c,
					&got, reads[r++ % (sizeof(reads) /
							   sizeof(reads[0]))]);
			ck_assert_msg(n > 0 || n == -EAGAIN, "recv: %zd", n);
		}
		if (hold)
			fv_progress();
	}
	ck_assert_uint_eq(sent, total);
	ck_assert_uint_eq(got, total);
	/* the rings wrapped many times, and the sender had to wait */
	ck_assert_uint_ge(total, 8 * (uint64_t)rc_of(srv.c)->rbuf_size);
	ck_assert_uint_gt(eagain, 0);
	assert_device_happy();
	fv_hold(0);
}

START_TEST(test_connect_sets_up_both_ends)
{
	struct evr_conn_settings s;
	struct rconn *c, *v;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	c = rc_of(cli.c);
	v = rc_of(srv.c);
	/* -B 4096: rings of twice that, every receive posted */
	ck_assert_uint_eq(c->sbuf_size, 8192);
	ck_assert_uint_eq(v->rbuf_size, 8192);
	ck_assert_uint_eq(fv_rq_posted(c->id), c->rq_post);
	ck_assert_uint_eq(fv_rq_posted(v->id), v->rq_post);
	/* each knows the other's credits and ring half */
	ck_assert_int_eq(cli.c->ops->settings(cli.c, &s), 0);
	ck_assert_uint_eq(c->peer.credits, v->rq_size);
	ck_assert_uint_eq(v->peer.credits, c->rq_size);
	ck_assert_uint_eq(c->peer.data_buf.length, v->rbuf_size / 2);
	ck_assert_uint_eq(c->peer.data_buf.key, v->rmr->rkey);
	ck_assert_str_eq(cli.c->dev, "fake0");
	/* nothing to read yet */
	ck_assert_int_eq(srv.c->ops->recv(srv.c, trace_log, 16), -EAGAIN);
	pair_down();
}
END_TEST

START_TEST(test_stream_wraps_intact)
{
	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	stream_run(20 * 8192 + 12345, 0);
	pair_down();
}
END_TEST

START_TEST(test_stream_wraps_completions_late)
{
	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	stream_run(20 * 8192 + 777, 1);
	pair_down();
}
END_TEST

/* Both ways at once, with the default ring. */
START_TEST(test_stream_both_ways)
{
	static uint8_t b[3000];
	uint64_t sent[2] = { 0, 0 }, got[2] = { 0, 0 };
	const uint64_t total = 3u << 20;
	unsigned step;
	ssize_t n;

	pair_up(0, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	for (step = 0; step < STEP_MAX &&
	     (got[0] < total || got[1] < total); step++) {
		struct evr_conn *from = step & 1 ? srv.c : cli.c;
		struct evr_conn *to = step & 1 ? cli.c : srv.c;
		unsigned d = step & 1;
		size_t len = 1 + step * 131 % sizeof(b);

		if (len > total - sent[d])
			len = (size_t)(total - sent[d]);
		if (len) {
			fill(b, sent[d], len);
			n = from->ops->send(from, b, len, 0);
			ck_assert_msg(n > 0 || n == -EAGAIN, "send %zd", n);
			if (n > 0)
				sent[d] += (uint64_t)n;
		}
		n = drain_check(to, &got[d], 65536);
		ck_assert_msg(n > 0 || n == -EAGAIN, "recv %zd", n);
	}
	ck_assert_uint_eq(got[0], total);
	ck_assert_uint_eq(got[1], total);
	assert_device_happy();
	pair_down();
}
END_TEST

/*
 * Credits: 1-byte sends, one message each, while the server reads
 * nothing.  The client may have at most the server's credits in its
 * ring (the rest gathers in the cork), and stops (-EAGAIN) once its
 * staging ring is full; the server reads, its credits go back, the cork
 * leaves and the client sends again.
 */
START_TEST(test_credits_stop_and_resume)
{
	struct rconn *c, *v;
	uint64_t sent = 0, got = 0;
	unsigned i, credits;
	uint8_t b;
	ssize_t n = 0;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	c = rc_of(cli.c);
	v = rc_of(srv.c);
	credits = c->peer.credits;
	ck_assert_uint_eq(credits, v->rq_size);
	for (i = 0; i < STEP_MAX; i++) {
		fill(&b, sent, 1);
		n = cli.c->ops->send(cli.c, &b, 1, 0);
		if (n != 1)
			break;
		sent++;
	}
	ck_assert_int_eq(n, -EAGAIN);
	/* the credits ran out first: one message per credit reached the
	 * server (each took one of its receives), and no more; the rest
	 * waits in the staging ring */
	ck_assert_uint_eq(fv_data_writes(c->id), credits);
	ck_assert_uint_eq(fv_rq_posted(v->id), v->rq_post - credits);
	ck_assert_uint_gt(sent, credits);
	ck_assert_uint_le(sent, credits + c->sbuf_size);
	/* still stopped until the server reads, whatever the loop does */
	pump();
	ck_assert_int_eq(cli.c->ops->send(cli.c, &b, 1, 0), -EAGAIN);
	ck_assert_uint_eq(fv_data_writes(c->id), credits);

	/* the server reads: credits go back, the cork leaves, and the
	 * client sends again */
	for (i = 0; i < 1000 && got < sent; i++) {
		n = drain_check(srv.c, &got, 65536);
		ck_assert_msg(n > 0 || n == -EAGAIN, "recv %zd", n);
		if (n == -EAGAIN)
			ck_assert_int_eq(cli.c->ops->recv(cli.c, NULL, 0),
					 -EAGAIN);
	}
	ck_assert_uint_eq(got, sent);
	fill(&b, sent, 1);
	ck_assert_int_eq(cli.c->ops->send(cli.c, &b, 1, 0), 1);
	sent++;
	for (i = 0; i < 100 && got < sent; i++)
		drain_check(srv.c, &got, 16);
	ck_assert_uint_eq(got, sent);
	assert_device_happy();
	pair_down();
}
END_TEST

/*
 * The peer's ring: large sends while the server reads nothing.  What
 * reaches the server never exceeds its ring, the client stops, and
 * resumes once the server reads.
 */
START_TEST(test_ring_full_stop_and_resume)
{
	static uint8_t b[16384];
	struct rconn *c, *v;
	uint64_t sent = 0, got = 0;
	unsigned i;
	ssize_t n = 0;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	c = rc_of(cli.c);
	v = rc_of(srv.c);
	for (i = 0; i < 1000; i++) {
		fill(b, sent, sizeof(b));
		n = cli.c->ops->send(cli.c, b, sizeof(b), 0);
		if (n <= 0)
			break;
		sent += (uint64_t)n;
		pump();
	}
	ck_assert_int_eq(n, -EAGAIN);
	/* placed in the server's ring: at most the ring it offered */
	ck_assert_uint_le(v->rx.bytes_in, v->rbuf_size);
	ck_assert_uint_gt(v->rx.bytes_in, 0);
	ck_assert_uint_le(sent, v->rbuf_size + c->sbuf_size);
	ck_assert_uint_lt(v->rx.msg_count, c->peer.credits);
	/* one read takes at most the ring */
	n = drain_check(srv.c, &got, sizeof(b));
	ck_assert_int_gt(n, 0);
	for (i = 0; i < 2000 && got < 8 * (uint64_t)v->rbuf_size; i++) {
		fill(b, sent, sizeof(b));
		n = cli.c->ops->send(cli.c, b, sizeof(b), 0);
		ck_assert_msg(n > 0 || n == -EAGAIN, "send %zd", n);
		if (n > 0)
			sent += (uint64_t)n;
		n = drain_check(srv.c, &got, 5000);
		ck_assert_msg(n > 0 || n == -EAGAIN, "recv %zd", n);
	}
	ck_assert_uint_ge(got, 8 * (uint64_t)v->rbuf_size);
	assert_device_happy();
	pair_down();
}
END_TEST

/*
 * The cork: small sends with more gather, no write leaves; the send
 * without more sends them all as one write.  A receive on the sending
 * side also ends the gathering.
 */
START_TEST(test_cork_gathers_then_flushes)
{
	static uint8_t b[100];
	struct rconn *c;
	uint64_t sent = 0, got = 0;
	unsigned long w0;
	unsigned i;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	c = rc_of(cli.c);
	w0 = fv_data_writes(c->id);
	for (i = 0; i < 20; i++) {
		fill(b, sent, sizeof(b));
		ck_assert_int_eq(cli.c->ops->send(cli.c, b, sizeof(b), 1),
				 (ssize_t)sizeof(b));
		sent += sizeof(b);
	}
	/* gathered: nothing written, nothing to read */
	ck_assert_uint_eq(fv_data_writes(c->id), w0);
	pump();
	ck_assert_int_eq(drain_check(srv.c, &got, 4096), -EAGAIN);
	/* the last one, without more: what gathered leaves as one write
	 * (then the last send's own bytes, as a send that may go now) */
	fill(b, sent, sizeof(b));
	ck_assert_int_eq(cli.c->ops->send(cli.c, b, sizeof(b), 0),
			 (ssize_t)sizeof(b));
	sent += sizeof(b);
	ck_assert_uint_ge(fv_data_writes(c->id), w0 + 1);
	ck_assert_uint_le(fv_data_writes(c->id), w0 + 2);
	ck_assert_int_eq(drain_check(srv.c, &got, 4096), (ssize_t)sent);
	ck_assert_uint_le(rc_of(srv.c)->n_msgs, 2);

	/* gathering again, ended by a receive on the sending side */
	w0 = fv_data_writes(c->id);
	for (i = 0; i < 5; i++) {
		fill(b, sent, sizeof(b));
		ck_assert_int_eq(cli.c->ops->send(cli.c, b, sizeof(b), 1),
				 (ssize_t)sizeof(b));
		sent += sizeof(b);
	}
	ck_assert_uint_eq(fv_data_writes(c->id), w0);
	ck_assert_int_eq(cli.c->ops->recv(cli.c, b, sizeof(b)), -EAGAIN);
	ck_assert_uint_eq(fv_data_writes(c->id), w0 + 1);
	ck_assert_int_eq(drain_check(srv.c, &got, 4096), 500);
	ck_assert_uint_eq(got, sent);
	assert_device_happy();
	pair_down();
}
END_TEST

/*
 * The client sends, gathers more (the cork), and shuts down: the server
 * reads every byte, then EOF (0), again and again; its sends are
 * refused.  Both close, and the connections go without a timer: the fake
 * CM's DISCONNECTED ends them.
 */
START_TEST(test_disconnect_reads_as_eof_after_data)
{
	static uint8_t b[6000];
	uint64_t got = 0;
	ssize_t n;
	unsigned i;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	fill(b, 0, sizeof(b));
	ck_assert_int_eq(cli.c->ops->send(cli.c, b, 3000, 0), 3000);
	ck_assert_int_eq(cli.c->ops->send(cli.c, b + 3000, 3000, 1), 3000);
	cli.c->ops->shutdown(cli.c);
	ck_assert_int_eq(cli.c->ops->send(cli.c, b, 10, 0), -ECONNRESET);
	pump();
	/* the server reads (its ring's second half goes to the client,
	 * whose cork then leaves on its next call) */
	for (i = 0; i < 100 && got < sizeof(b); i++) {
		n = drain_check(srv.c, &got, 1000);
		ck_assert_msg(n > 0 || n == -EAGAIN, "recv %zd", n);
		n = cli.c->ops->recv(cli.c, b, 1);
		ck_assert_msg(n == 0 || n == -EAGAIN, "client recv %zd", n);
	}
	ck_assert_uint_eq(got, sizeof(b));
	pump();
	ck_assert_int_eq(srv.c->ops->recv(srv.c, b, sizeof(b)), 0);
	ck_assert_int_eq(srv.c->ops->recv(srv.c, b, sizeof(b)), 0);
	ck_assert_int_eq(srv.c->ops->send(srv.c, b, 10, 0), -ECONNRESET);
	ck_assert_int_eq(srv.c->ops->ready(srv.c), 1);
	ck_assert_uint_gt(srv.wakes, 0);
	ck_assert_int_eq(rc_of(srv.c)->err, 0);

	/* both close: gone without waiting for a timer */
	cli.c->ops->close(cli.c);
	srv.c->ops->close(srv.c);
	cli.c = srv.c = NULL;
	pump();
	ck_assert_uint_eq(fv_stats.qps, 0);
	ck_assert_int_eq(cli.drained, 1);
	ck_assert_int_eq(srv.drained, 1);
	ck_assert_ptr_null(strstr(trace_log, "Input/output error"));
	assert_device_happy();
	pair_down();
}
END_TEST

/* The server closes at once: the client reads EOF after what the
 * server had sent. */
START_TEST(test_peer_close_eof)
{
	uint8_t b[64];
	uint64_t got = 0;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	fill(b, 0, sizeof(b));
	ck_assert_int_eq(srv.c->ops->send(srv.c, b, sizeof(b), 0), 64);
	srv.c->ops->close(srv.c);
	srv.c = NULL;
	pump();
	ck_assert_int_eq(drain_check(cli.c, &got, sizeof(b)), 64);
	ck_assert_int_eq(cli.c->ops->recv(cli.c, b, sizeof(b)), 0);
	ck_assert_int_eq(rc_of(cli.c)->err, 0);
	pair_down();
}
END_TEST

/* A completion that failed: -EIO from then on, blamed on the peer or
 * its path (retries exhausted) or not (a local protection error). */
static void wc_error_case(enum ibv_wc_status st, int port_up, int want_err,
			  int want_detail)
{
	static uint8_t b[5000];
	ssize_t n;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	fv_port_active(port_up);
	fv_fail_next_wr(rc_of(cli.c)->id, st);
	fill(b, 0, sizeof(b));
	/* posted: the failure comes with its completion */
	ck_assert_int_gt(cli.c->ops->send(cli.c, b, sizeof(b), 0), 0);
	n = cli.c->ops->send(cli.c, b, sizeof(b), 0);
	if (n > 0)
		n = cli.c->ops->recv(cli.c, b, sizeof(b));
	ck_assert_int_eq(n, want_err);
	ck_assert_int_eq(cli.c->ops->recv(cli.c, b, sizeof(b)), want_err);
	ck_assert_int_eq(cli.c->eio_detail, want_detail);
	ck_assert_ptr_nonnull(strstr(trace_log, ibv_wc_status_str(st)));
	ck_assert_int_eq(cli.c->ops->ready(cli.c), 1);
	fv_port_active(1);
	pair_down();
}

START_TEST(test_wc_retry_exceeded_is_eio_peer)
{
	wc_error_case(IBV_WC_RETRY_EXC_ERR, 1, -EIO, EVR_EIO_PEER);
}
END_TEST

START_TEST(test_wc_remote_access_is_eio_peer)
{
	wc_error_case(IBV_WC_REM_ACCESS_ERR, 1, -EIO, EVR_EIO_PEER);
}
END_TEST

START_TEST(test_wc_local_error_is_eio_local)
{
	wc_error_case(IBV_WC_LOC_PROT_ERR, 1, -EIO, 0);
}
END_TEST

START_TEST(test_wc_error_port_down_is_portdown)
{
	wc_error_case(IBV_WC_RETRY_EXC_ERR, 0, -EVR_E_PORTDOWN, EVR_EIO_PEER);
}
END_TEST

/*
 * The QP goes to error with sends outstanding: on a live connection
 * (its QP put in error under it) that is -EIO blamed on the peer; after
 * our own shutdown, the same flush is no error.
 */
static void flush_case(int shut_first)
{
	static uint8_t b[3000];
	struct rconn *c;
	ssize_t n;
	int i;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	c = rc_of(cli.c);
	fv_hold(1);
	fill(b, 0, sizeof(b));
	for (i = 0; i < 3; i++)
		ck_assert_int_gt(cli.c->ops->send(cli.c, b, sizeof(b), 0), 0);
	if (shut_first)
		cli.c->ops->shutdown(cli.c);
	ck_assert_uint_ge(fv_sq_outstanding(c->id), 3);
	fv_qp_error(c->id);
	fv_hold(0);
	if (shut_first) {
		/* shut: nothing more to read (0), or not yet (-EAGAIN) */
		n = cli.c->ops->recv(cli.c, b, sizeof(b));
		ck_assert_msg(n == 0 || n == -EAGAIN, "recv %zd", n);
		ck_assert_int_eq(c->err, 0);
		ck_assert_ptr_null(strstr(trace_log, "Flush"));
	} else {
		ck_assert_int_eq(cli.c->ops->recv(cli.c, b, sizeof(b)), -EIO);
		ck_assert_int_eq(cli.c->eio_detail, EVR_EIO_PEER);
		ck_assert_ptr_nonnull(strstr(trace_log, "Flush"));
	}
	/* every flushed completion was taken */
	ck_assert_uint_eq(fv_sq_outstanding(c->id), 0);
	pair_down();
}

START_TEST(test_flush_after_own_shutdown_is_no_error)
{
	flush_case(1);
}
END_TEST

START_TEST(test_flush_of_live_connection_is_eio)
{
	flush_case(0);
}
END_TEST

/* ibv_post_send fails: -EIO, the call named. */
START_TEST(test_post_failure_is_eio_naming_the_call)
{
	uint8_t b[100];

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	fv_fail_next_post(rc_of(cli.c)->id, ENOMEM);
	memset(b, 7, sizeof(b));
	ck_assert_int_eq(cli.c->ops->send(cli.c, b, sizeof(b), 0), -EIO);
	ck_assert_int_eq(cli.c->ops->send(cli.c, b, sizeof(b), 0), -EIO);
	ck_assert_int_eq(cli.c->ops->recv(cli.c, b, sizeof(b)), -EIO);
	ck_assert_int_eq(cli.c->eio_detail, 0);
	ck_assert_ptr_nonnull(strstr(trace_log,
				     "ibv_post_send: Input/output error"));
	/* nothing reached the server */
	pump();
	ck_assert_int_eq(srv.c->ops->recv(srv.c, b, sizeof(b)), -EAGAIN);
	pair_down();
}
END_TEST

/* ibv_poll_cq fails: -EIO, named. */
START_TEST(test_poll_failure_is_eio)
{
	uint8_t b[100];

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_NONBLOCK);
	fv_fail_next_poll();
	ck_assert_int_eq(srv.c->ops->recv(srv.c, b, sizeof(b)), -EIO);
	ck_assert_ptr_nonnull(strstr(trace_log,
				     "ibv_poll_cq: Input/output error"));
	pair_down();
}
END_TEST

/*
 * An owner that sleeps (EVR_IO_ASYNC): its -EAGAIN arms the CQ, the
 * peer's write raises an event on the completion channel, the loop
 * polls and wakes the owner, whose next recv finds the bytes.  A polling
 * owner (NONBLOCK) asks ready(): 0 until something came.
 */
START_TEST(test_sleeping_owner_is_woken)
{
	uint8_t b[200];
	uint64_t got = 0;
	unsigned long ev0;

	pair_up(4096, EVR_IO_NONBLOCK, EVR_IO_ASYNC);
	ck_assert_int_eq(srv.c->ops->recv(srv.c, b, sizeof(b)), -EAGAIN);
	ck_assert_int_eq(cli.c->ops->recv(cli.c, b, sizeof(b)), -EAGAIN);
	ck_assert_int_eq(cli.c->ops->ready(cli.c), 0);
	pump();
	srv.wakes = 0;
	ev0 = fv_stats.cq_events;
	fill(b, 0, sizeof(b));
	ck_assert_int_eq(cli.c->ops->send(cli.c, b, sizeof(b), 0), 200);
	ck_assert_uint_eq(srv.wakes, 0);    /* never from inside a call */
	pump();
	ck_assert_uint_gt(fv_stats.cq_events, ev0);
	ck_assert_uint_eq(srv.wakes, 1);
	ck_assert_int_eq(drain_check(srv.c, &got, sizeof(b)), 200);

	/* the other way: the polling client's ready() says when */
	ck_assert_int_eq(srv.c->ops->send(srv.c, b, 10, 0), 10);
	ck_assert_int_eq(cli.c->ops->ready(cli.c), 1);
	got = 0;
	ck_assert_int_eq(drain_check(cli.c, &got, sizeof(b)), 10);
	ck_assert_int_eq(cli.c->ops->ready(cli.c), 0);
	assert_device_happy();
	pair_down();
}
END_TEST

static Suite *rdma_conn_suite(void)
{
	Suite *s = suite_create("rdma_conn");
	TCase *tc = tcase_create("fake device");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_connect_sets_up_both_ends);
	tcase_add_test(tc, test_stream_wraps_intact);
	tcase_add_test(tc, test_stream_wraps_completions_late);
	tcase_add_test(tc, test_stream_both_ways);
	tcase_add_test(tc, test_credits_stop_and_resume);
	tcase_add_test(tc, test_ring_full_stop_and_resume);
	tcase_add_test(tc, test_cork_gathers_then_flushes);
	tcase_add_test(tc, test_disconnect_reads_as_eof_after_data);
	tcase_add_test(tc, test_peer_close_eof);
	tcase_add_test(tc, test_wc_retry_exceeded_is_eio_peer);
	tcase_add_test(tc, test_wc_remote_access_is_eio_peer);
	tcase_add_test(tc, test_wc_local_error_is_eio_local);
	tcase_add_test(tc, test_wc_error_port_down_is_portdown);
	tcase_add_test(tc, test_flush_after_own_shutdown_is_no_error);
	tcase_add_test(tc, test_flush_of_live_connection_is_eio);
	tcase_add_test(tc, test_post_failure_is_eio_naming_the_call);
	tcase_add_test(tc, test_poll_failure_is_eio);
	tcase_add_test(tc, test_sleeping_owner_is_woken);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rdma_conn_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
