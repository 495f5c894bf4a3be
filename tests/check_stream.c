/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream engines' lifecycle (src/stream/stream_int.h), seen from
 * outside as an embedding host sees it: evr_stream_new/start/cancel/free
 * over loopback TCP (127.0.0.1, ephemeral ports), the transitions read
 * back through the trace hook (evr_loop_set_trace), done() counted.  And
 * the table of transports through evr_stream_transport_name().
 */
#include "config.h"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <ev.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "evrdma/hostcheck.h"
#include "evrdma/loop.h"
#include "evrdma/stream.h"
#include "loop/resolve.h"
#include "stream/addr.h"

#define MAXT 32

/* What one engine told its host. */
struct rec {
	const char *who;            /* "client" or "server": its trace lines */
	char trace[MAXT][64];       /* its lifecycle transitions, in order */
	unsigned ntrace;
	unsigned ndone, nresult, ninfo, nlistening, nconn_done;
	unsigned nagg;              /* results that sum up -c N (nconns N) */
	int status;
	int had_f;
	struct evr_failure f;
	struct evr_stream *st;
	/* what to do from a callback */
	int cancel_in_keepalive;    /* evr_stream_cancel() from info(KEEPALIVE) */
	int cancel_in_conn_done;    /* ... from info(CONN_DONE) */
	int cancel_in_done;         /* ... from done() */
	unsigned cancel_at_result;  /* ... from the n-th result(), from 1 */
	unsigned ntrace_after_cancel; /* ntrace when that cancel returned */
	unsigned ndone_after_cancel;
	/* evr_result_lat_walk() on each result, in order (MAXR at most) */
	uint64_t walked[4], walk_n[4], lat_samples[4];
	long double walk_sum[4], lat_sum[4];
	/* each connection's iterations (its own result, nconns 0), in order
	 * (MAXC at most), and their sum */
	uint32_t conn_iters[16];
	unsigned nconn_res;
	uint64_t sum_iters;
};

static struct evr_loop *L;
static ev_timer guard_w;        /* bounds each loop pass: see RUN_UNTIL */
static struct rec C, S;         /* the client's and the server's */
static unsigned nother;         /* trace lines of the sessions */

static void rec_init(struct rec *r, const char *who)
{
	memset(r, 0, sizeof(*r));
	r->who = who;
	r->status = 12345;
}

/* The engine's lines read "client: RUNNING -> FINISHING"; the sessions'
 * "conn 1: ...", which only count. */
static void on_trace(void *ud, const char *line)
{
	struct rec *r = NULL;
	size_t n;

	(void)ud;
	if (!strncmp(line, "client: ", 8))
		r = &C;
	else if (!strncmp(line, "server: ", 8))
		r = &S;
	if (!r) {
		nother++;
		return;
	}
	n = strlen(r->who) + 2;
	ck_assert_uint_lt(r->ntrace, MAXT);
	snprintf(r->trace[r->ntrace++], sizeof(r->trace[0]), "%s", line + n);
}

static void cancel_here(struct rec *r)
{
	evr_stream_cancel(r->st);
	r->ntrace_after_cancel = r->ntrace;
	r->ndone_after_cancel = r->ndone;
}

static void walk_cb(void *ud, uint64_t lo, uint64_t hi, uint64_t n)
{
	struct rec *r = ud;
	unsigned i = r->nresult;

	ck_assert_uint_le(lo, hi);
	ck_assert_uint_ge(n, 1);
	r->walk_n[i] += n;
	r->walk_sum[i] += (long double)lo * n;
}

static void on_result(void *ud, const struct evr_result *res)
{
	struct rec *r = ud;

	if (r->nresult < 4) {
		r->walked[r->nresult] = evr_result_lat_walk(res, walk_cb, r);
		if (res->lat) {
			r->lat_samples[r->nresult] = res->lat->samples;
			r->lat_sum[r->nresult] = (long double)res->lat->mean_ns *
						 res->lat->samples;
		}
	}
	r->nresult++;
	if (res->nconns)
		r->nagg++;
	else {
		if (r->nconn_res < 16)
			r->conn_iters[r->nconn_res] = res->iters;
		r->nconn_res++;
		r->sum_iters += res->iters;
	}
	if (r->nresult == r->cancel_at_result)
		cancel_here(r);
}

static void on_info(void *ud, const struct evr_info *i)
{
	struct rec *r = ud;

	r->ninfo++;
	if (i->kind == EVR_INFO_LISTENING)
		r->nlistening++;
	if (i->kind == EVR_INFO_CONN_DONE)
		r->nconn_done++;
	if (i->kind == EVR_INFO_KEEPALIVE && r->cancel_in_keepalive) {
		r->cancel_in_keepalive = 0;
		cancel_here(r);
	}
	if (i->kind == EVR_INFO_CONN_DONE && r->cancel_in_conn_done) {
		r->cancel_in_conn_done = 0;
		cancel_here(r);
	}
}

static void on_done(void *ud, int status, const struct evr_failure *f,
		    int in_child)
{
	struct rec *r = ud;

	ck_assert_int_eq(in_child, 0);
	r->ndone++;
	r->status = status;
	r->had_f = f != NULL;
	if (f)
		r->f = *f;
	if (r->cancel_in_done) {
		unsigned before = r->ntrace;

		/* finished: a cancel is no transition, and no second done() */
		evr_stream_cancel(r->st);
		ck_assert_uint_eq(r->ntrace, before);
	}
}

static const struct evr_stream_cbs cbs = {
	.result = on_result,
	.info = on_info,
	.done = on_done,
};

static void guard_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
}

static void setup(void)
{
	ck_assert_int_eq(evr_loop_new(&L, NULL), 0);
	evr_loop_set_trace(L, on_trace, NULL);
	ev_timer_init(&guard_w, guard_cb, 0.002, 0.002);
	ev_timer_start(evr_loop_ev(L), &guard_w);
	rec_init(&C, "client");
	rec_init(&S, "server");
	nother = 0;
}

static void teardown(void)
{
	evr_stream_free(C.st);
	evr_stream_free(S.st);
	C.st = S.st = NULL;
	ev_timer_stop(evr_loop_ev(L), &guard_w);
	evr_loop_free(L);
	L = NULL;
}

/* Run the loop until cond holds, for at most ms milliseconds (guard_w
 * wakes each pass within 2 ms). */
#define RUN_UNTIL(cond, ms) do { \
	uint64_t e_ = evr_now_ns() + (uint64_t)(ms) * 1000000u; \
	while (!(cond) && evr_now_ns() < e_) \
		ev_run(evr_loop_ev(L), EVRUN_ONCE); \
	ck_assert_msg((cond), "timed out waiting for %s", #cond); \
} while (0)

/* Run the loop for ms milliseconds whatever happens (a second done()
 * would come within it). */
static void run_ms(unsigned ms)
{
	uint64_t end = evr_now_ns() + (uint64_t)ms * 1000000u;

	while (evr_now_ns() < end)
		ev_run(evr_loop_ev(L), EVRUN_ONCE);
}

/* A loopback port nothing listens on (the kernel's pick, let go of). */
static char *free_port(char *buf, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	snprintf(buf, len, "%u", ntohs(sa.sin_port));
	return buf;
}

/* connect() to 127.0.0.1:port: 0, or -errno. */
static int try_connect(const char *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ret = 0;

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)atoi(port));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		ret = -errno;
	close(fd);
	return ret;
}

static void opts_client(struct evr_stream_opts *o, const char *port)
{
	memset(o, 0, sizeof(*o));
	o->host = "127.0.0.1";
	o->port = port;
	o->transport = EVR_TRANSPORT_TCP;
	o->io = EVR_IO_ASYNC;
	o->stall_ms = 5000;
	/* one small test: 100-byte transfers, 2 per iteration, 3 times */
	o->custom = 1;
	o->size = 100;
	o->count = 2;
	o->iters = 3;
}

static void opts_server(struct evr_stream_opts *o, const char *port)
{
	memset(o, 0, sizeof(*o));
	o->server = 1;
	o->bind_addr = "127.0.0.1";
	o->port = port;
	o->transport = EVR_TRANSPORT_TCP;
	o->io = EVR_IO_ASYNC;
	o->stall_ms = 5000;
	o->custom = 1;
	o->size = 100;
	o->count = 2;
	o->iters = 3;
}

/* A server listening on a free loopback port (a few tries: another
 * program may take the port between our pick and the bind). */
static void server_up(const struct evr_stream_opts *extra, char *port,
		      size_t len)
{
	struct evr_stream_opts o;
	struct evr_failure f;
	int tries, ret = -1;

	for (tries = 0; tries < 5 && ret; tries++) {
		opts_server(&o, free_port(port, len));
		if (extra)
			o.once = extra->once;
		ck_assert_int_eq(evr_stream_new(&S.st, L, &o, &cbs, &S), 0);
		ret = evr_stream_start(S.st, &f);
		if (ret) {
			ck_assert_int_eq(ret, -EADDRINUSE);
			evr_stream_free(S.st);
			S.st = NULL;
			S.ntrace = 0;
		}
	}
	ck_assert_int_eq(ret, 0);
}

/* The transitions r saw, exactly these in this order. */
static void assert_trace(const struct rec *r, const char *const *want,
			 unsigned n)
{
	unsigned i;

	for (i = 0; i < n && i < r->ntrace; i++)
		ck_assert_msg(!strcmp(r->trace[i], want[i]),
			      "%s transition %u: \"%s\", expected \"%s\"",
			      r->who, i, r->trace[i], want[i]);
	ck_assert_msg(r->ntrace == n, "%s: %u transitions, expected %u "
		      "(the last: \"%s\")", r->who, r->ntrace, n,
		      r->ntrace ? r->trace[r->ntrace - 1] : "");
}

#define ASSERT_TRACE(r, ...) do { \
	static const char *const w_[] = { __VA_ARGS__ }; \
	assert_trace((r), w_, sizeof(w_) / sizeof(w_[0])); \
} while (0)

/* ---- the table of transports ---- */

START_TEST(test_xport_name)
{
	ck_assert_str_eq(evr_stream_transport_name(EVR_TRANSPORT_TCP), "tcp");
	ck_assert_str_eq(evr_stream_transport_name(EVR_TRANSPORT_RDMA),
			 "rdma");
	ck_assert_ptr_null(evr_stream_transport_name(
		(enum evr_stream_transport)2));
	ck_assert_ptr_null(evr_stream_transport_name(
		(enum evr_stream_transport)-1));
}
END_TEST

/* What each transport says it can do or needs: the programs ask this,
 * never which transport it is. */
START_TEST(test_xport_caps)
{
	ck_assert_uint_eq(evr_stream_transport_caps(EVR_TRANSPORT_TCP),
			  EVR_TRANSPORT_CAP_KERNEL_PORT);
	ck_assert_uint_eq(evr_stream_transport_caps(EVR_TRANSPORT_RDMA),
			  EVR_TRANSPORT_CAP_RDMA_DEVICE |
			  EVR_TRANSPORT_CAP_GID | EVR_TRANSPORT_CAP_INLINE);
	ck_assert_uint_eq(evr_stream_transport_caps(
		(enum evr_stream_transport)2), 0);
}
END_TEST

/* What a transport needs of the host: TCP nothing, RDMA a device (as
 * many as libibverbs lists here), an unknown kind is refused. */
START_TEST(test_xport_check)
{
	struct ibv_device **l;
	int n = 0;

	l = ibv_get_device_list(&n);
	if (l)
		ibv_free_device_list(l);
	ck_assert_int_eq(evr_stream_transport_check(EVR_TRANSPORT_TCP), 0);
	ck_assert_int_eq(evr_stream_transport_check(EVR_TRANSPORT_RDMA),
			 n > 0 ? 0 : -EVR_E_NODEV);
	ck_assert_int_eq(evr_stream_transport_check(
		(enum evr_stream_transport)2), -EINVAL);
	/* one a connection more than the transport's own */
	ck_assert_uint_eq(evr_stream_transport_fds(EVR_TRANSPORT_TCP, 10) + 1,
			  evr_stream_transport_fds(EVR_TRANSPORT_TCP, 11));
	ck_assert_uint_gt(evr_stream_transport_fds(EVR_TRANSPORT_RDMA, 0),
			  evr_stream_transport_fds(EVR_TRANSPORT_TCP, 0));
}
END_TEST

/* A kind outside the table is refused at start, before any socket, and
 * leaves the engine IDLE; so is a GID address over a transport without
 * GIDs (TCP). */
START_TEST(test_start_refuses_unknown_xport_and_gid_tcp)
{
	struct evr_stream_opts o;
	struct evr_failure f;
	char port[16];

	opts_client(&o, free_port(port, sizeof(port)));
	o.transport = (enum evr_stream_transport)7;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, &f), -EINVAL);
	ck_assert_int_eq(f.err, -EINVAL);
	ck_assert_str_eq(f.where, "transport");
	evr_stream_free(C.st);
	C.st = NULL;

	opts_client(&o, port);
	o.addr_fmt = EVR_ADDR_GID;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, &f), -EVR_E_NOTSUP);
	ck_assert_int_eq(f.detail, EVR_NOTSUP_GID_TCP);
	run_ms(20);
	ck_assert_uint_eq(C.ntrace, 0); /* still IDLE */
	ck_assert_uint_eq(C.ndone, 0);
}
END_TEST

/* ---- the options as the engine runs them ---- */

/* Every zero that stands for a default comes back as it; given values
 * stay; a second resolve changes nothing. */
START_TEST(test_opts_resolve_fills_every_default)
{
	struct evr_stream_opts in, r, r2;

	memset(&in, 0, sizeof(in));
	ck_assert_int_eq(evr_stream_opts_resolve(&in, &r), 0);
	ck_assert_str_eq(r.port, EVR_DEFAULT_PORT);
	ck_assert_int_eq(r.buffer_size, EVR_DEFAULT_BUFFER_SIZE);
	ck_assert_uint_eq(r.stall_ms, EVR_DEFAULT_STALL_MS);
	ck_assert_uint_eq(r.conns, 1);
	ck_assert_uint_eq(r.max_connecting, EVR_DEFAULT_MAX_CONNECTING);
	ck_assert_uint_eq(r.chunk_size, EVR_DEFAULT_CHUNK_SIZE);
	ck_assert_uint_eq(r.max_conns, EVR_DEFAULT_MAX_SERVER_CONNS);
	ck_assert_uint_eq(r.max_memory, EVR_DEFAULT_MAX_MEMORY);
	ck_assert_int_eq(r.poll_us, EVR_DEFAULT_POLL_US);
	/* the zeros that are values, not defaults, stay */
	ck_assert_int_eq(r.transport, EVR_TRANSPORT_TCP);
	ck_assert_int_eq(r.inline_size, 0);
	ck_assert_int_eq(r.keepalive, 0);
	ck_assert_uint_eq(r.interval_ms, 0);
	ck_assert_uint_eq(r.duration_ms, 0);
	ck_assert_int_eq(evr_stream_opts_resolve(&r, &r2), 0);
	ck_assert_mem_eq(&r, &r2, sizeof(r));
	/* in place */
	ck_assert_int_eq(evr_stream_opts_resolve(&in, &in), 0);
	ck_assert_mem_eq(&in, &r, sizeof(r));

	/* given values are kept; any negative poll is the named never */
	memset(&in, 0, sizeof(in));
	in.port = "9";
	in.buffer_size = 4096;
	in.stall_ms = 50;
	in.conns = 3;
	in.max_connecting = 2;
	in.chunk_size = 4096;
	in.max_conns = 7;
	in.max_memory = 1 << 20;
	in.poll_us = -5;
	ck_assert_int_eq(evr_stream_opts_resolve(&in, &r), 0);
	ck_assert_str_eq(r.port, "9");
	ck_assert_int_eq(r.buffer_size, 4096);
	ck_assert_uint_eq(r.stall_ms, 50);
	ck_assert_uint_eq(r.conns, 3);
	ck_assert_uint_eq(r.max_connecting, 2);
	ck_assert_uint_eq(r.chunk_size, 4096);
	ck_assert_uint_eq(r.max_conns, 7);
	ck_assert_uint_eq(r.max_memory, 1 << 20);
	ck_assert_int_eq(r.poll_us, EVR_POLL_NEVER);
	ck_assert_int_eq(evr_stream_opts_resolve(&r, &r2), 0);
	ck_assert_mem_eq(&r, &r2, sizeof(r));
}
END_TEST

/* A row of EVR_STREAM_OPTIONS with a range (NUM, MS) as this test sees
 * it: the field, its range, its flags. */
struct range_row {
	const char *name;
	size_t off, size;
	long long lo, hi;
	unsigned flags;
};

#define RR_NUM 1
#define RR_MS 1
#define RR_FLAG 0
#define RR_STR 0
#define RR_WORD 0
#define RANGE_ROW(f, kind, lo, hi, def, fl, ...) \
	{ RR_##kind ? #f : NULL, offsetof(struct evr_stream_opts, f), \
	  sizeof(((struct evr_stream_opts *)0)->f), (long long)(lo), \
	  (long long)(hi), (fl) },
static const struct range_row range_rows[] = {
	EVR_STREAM_OPTIONS(RANGE_ROW)
};

static void set_field(struct evr_stream_opts *o, const struct range_row *r,
		      long long v)
{
	uint64_t u64 = (uint64_t)v;
	uint32_t u32 = (uint32_t)v;

	if (r->size == sizeof(u64))
		memcpy((char *)o + r->off, &u64, sizeof(u64));
	else
		memcpy((char *)o + r->off, &u32, sizeof(u32));
}

static int resolve_with(const struct range_row *r, long long v)
{
	struct evr_stream_opts o, out;

	memset(&o, 0, sizeof(o));
	set_field(&o, r, v);
	return evr_stream_opts_resolve(&o, &out);
}

/* Each ranged row of the option table: its ends taken, one past either
 * refused with -EINVAL (a 0 below is the default; below a never's 0,
 * never; past what the field holds, nothing to try). */
START_TEST(test_opts_resolve_ranges)
{
	size_t i, n = 0;

	for (i = 0; i < sizeof(range_rows) / sizeof(range_rows[0]); i++) {
		const struct range_row *r = &range_rows[i];

		if (!r->name)
			continue;
		n++;
		ck_assert_msg(!resolve_with(r, r->lo), "%s: %lld", r->name,
			      r->lo);
		ck_assert_msg(!resolve_with(r, r->hi), "%s: %lld", r->name,
			      r->hi);
		if (r->lo - 1 && !(r->flags & EVR_SOPT_ZERO_NEVER))
			ck_assert_msg(resolve_with(r, r->lo - 1) == -EINVAL,
				      "%s: %lld", r->name, r->lo - 1);
		if (r->size == 8 || r->hi < 0x7fffffffLL)
			ck_assert_msg(resolve_with(r, r->hi + 1) == -EINVAL,
				      "%s: %lld", r->name, r->hi + 1);
	}
	ck_assert_uint_ge(n, 14);
}
END_TEST

/* What resolve refuses, evr_stream_new() refuses with the same code;
 * what it accepts, the engine does. */
START_TEST(test_opts_resolve_refuses_as_the_engine)
{
	struct evr_stream_opts o, r;
	struct evr_stream *st = NULL;
	char port[16];
	int i;

	free_port(port, sizeof(port));
	for (i = 0; i < 7; i++) {
		opts_client(&o, port);
		switch (i) {
		case 0: o.conns = EVR_MAX_CONNS + 1; break;
		case 1: o.poll_us = EVR_MAX_POLL_US + 1; break;
		case 2: o.duration_ms = 10; o.verify = 1; break;
		case 3: o.duration_ms = 10; o.no_negotiate = 1; break;
		case 4: o.custom = 1; o.size = 0; o.count = o.iters = 1; break;
		case 5: o.custom = 1; o.size = 1; o.count = 1;
			o.iters = EVR_MAX_COUNT + 1; break;
		default: o.duration_ms = 10; o.server = 1; break;
		}
		ck_assert_int_eq(evr_stream_opts_resolve(&o, &r), -EINVAL);
		ck_assert_int_eq(evr_stream_new(&st, L, &o, &cbs, &C),
				 -EINVAL);
	}
	opts_client(&o, port);
	o.conns = EVR_MAX_CONNS;
	o.poll_us = EVR_MAX_POLL_US;
	ck_assert_int_eq(evr_stream_opts_resolve(&o, &r), 0);
	ck_assert_int_eq(evr_stream_new(&st, L, &o, &cbs, &C), 0);
	evr_stream_free(st);
}
END_TEST

/* What a run needs of the host, from the transport's row. */
START_TEST(test_stream_need)
{
	struct evr_stream_opts o;
	struct evr_hc_need n;

	memset(&o, 0, sizeof(o));
	o.transport = EVR_TRANSPORT_TCP;
	o.conns = 10;
	o.bind_addr = "127.0.0.1";
	memset(&n, 0xa5, sizeof(n));
	ck_assert_int_eq(evr_stream_need(&o, &n), 0);
	ck_assert_int_eq(n.rdma, 0);
	ck_assert_uint_eq(n.memlock, 0);
	ck_assert_uint_eq(n.fds, evr_stream_transport_fds(EVR_TRANSPORT_TCP, 10));
	ck_assert_uint_eq(n.fds_raise, 0);
	ck_assert_uint_eq(n.msg_size, 0);
	ck_assert_str_eq(n.addr, "127.0.0.1");

	o.transport = EVR_TRANSPORT_RDMA;
	o.conns = 0; /* one */
	o.bind_addr = NULL;
	ck_assert_int_eq(evr_stream_need(&o, &n), 0);
	ck_assert_int_eq(n.rdma, 1);
	ck_assert_uint_gt(n.memlock, 0);
	ck_assert_uint_eq(n.memlock, evr_stream_memlock(&o));
	ck_assert_uint_eq(n.fds, evr_stream_transport_fds(EVR_TRANSPORT_RDMA, 1));
	ck_assert_ptr_null(n.addr);

	/* a server's descriptors are not counted */
	o.server = 1;
	ck_assert_int_eq(evr_stream_need(&o, &n), 0);
	ck_assert_int_eq(n.rdma, 1);
	ck_assert_uint_eq(n.fds, 0);

	o.transport = (enum evr_stream_transport)7;
	ck_assert_int_eq(evr_stream_need(&o, &n), -EINVAL);
	ck_assert_int_eq(n.rdma, 0);
	ck_assert_uint_eq(n.memlock, 0);
}
END_TEST

/* ---- the client ---- */

/* Connection refused: the run fails as a whole, and done() comes once,
 * from the loop, never from inside evr_stream_start(). */
START_TEST(test_client_closed_port)
{
	struct evr_stream_opts o;
	char port[16];

	opts_client(&o, free_port(port, sizeof(port)));
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_uint_eq(C.ntrace, 0); /* IDLE until started */
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	ck_assert_uint_eq(C.ndone, 0);
	RUN_UNTIL(C.ndone, 10000);
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_int_eq(C.status, -ECONNREFUSED);
	ck_assert(C.had_f);
	ck_assert_int_eq(C.f.err, -ECONNREFUSED);
	ck_assert_int_eq(C.f.phase, EVR_PH_CONNECT);
	ck_assert_uint_eq(C.nresult, 0);
	ASSERT_TRACE(&C, "IDLE -> RUNNING", "RUNNING -> FAILING",
		     "FAILING -> FINISHING", "FINISHING -> FINISHED");
	/* a second start is refused: once */
	ck_assert_int_eq(evr_stream_start(C.st, NULL), -EALREADY);
}
END_TEST

/* -c 3 to a closed port: one failure ends the run, the first; the other
 * connections follow it without a second FAILING or done(). */
START_TEST(test_client_many_one_failure)
{
	struct evr_stream_opts o;
	char port[16];

	opts_client(&o, free_port(port, sizeof(port)));
	o.conns = 3;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 10000);
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_int_eq(C.status, -ECONNREFUSED);
	ck_assert_uint_eq(C.f.conn_total, 3);
	ck_assert_uint_ge(C.f.conn_index, 1);
	ck_assert_uint_le(C.f.conn_index, 3);
	ASSERT_TRACE(&C, "IDLE -> RUNNING", "RUNNING -> FAILING",
		     "FAILING -> FINISHING", "FINISHING -> FINISHED");
}
END_TEST

/* A run that ends well, against a server engine on the same loop; a
 * cancel after it (here from done() itself, and after) changes nothing. */
START_TEST(test_client_run_then_cancel_does_nothing)
{
	struct evr_stream_opts o;
	char port[16];

	server_up(NULL, port, sizeof(port));
	opts_client(&o, port);
	C.cancel_in_done = 1;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 10000);
	ck_assert_int_eq(C.status, 0);
	ck_assert(!C.had_f);
	ck_assert_uint_eq(C.nresult, 1);
	evr_stream_cancel(C.st);
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_int_eq(C.status, 0);
	ASSERT_TRACE(&C, "IDLE -> RUNNING", "RUNNING -> FINISHING",
		     "FINISHING -> FINISHED");
	/* the server serves on */
	RUN_UNTIL(S.nconn_done == 1, 5000);
	ASSERT_TRACE(&S, "IDLE -> RUNNING");
	ck_assert_uint_eq(S.ndone, 0);
}
END_TEST

/* A cancel from inside the engine's own callback (the keepalive info
 * that evr_stream_start() itself delivers) takes effect from the loop:
 * when evr_stream_cancel() returns the engine is CANCELLING and nothing
 * more; the connection is cancelled from the loop, no result follows,
 * and done() says cancelled, once. */
START_TEST(test_client_cancel_in_callback_is_deferred)
{
	struct evr_stream_opts o;
	char port[16];

	server_up(NULL, port, sizeof(port));
	opts_client(&o, port);
	o.keepalive = 1;
	C.cancel_in_keepalive = 1;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	ck_assert_int_eq(C.cancel_in_keepalive, 0); /* it was called */
	ck_assert_uint_eq(C.ntrace_after_cancel, 2);
	ck_assert_str_eq(C.trace[1], "RUNNING -> CANCELLING");
	ck_assert_uint_eq(C.ndone_after_cancel, 0);
	ck_assert_uint_eq(C.ndone, 0);
	RUN_UNTIL(C.ndone, 10000);
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_int_eq(C.status, -EVR_E_CANCELLED);
	ck_assert_uint_eq(C.nresult, 0);
	ASSERT_TRACE(&C, "IDLE -> RUNNING", "RUNNING -> CANCELLING",
		     "CANCELLING -> FAILING", "FAILING -> FINISHING",
		     "FINISHING -> FINISHED");
}
END_TEST

/* -c 2: a cancel from the second connection's own result() (the one
 * that completes the test) stops the aggregate that would follow it in
 * the same call: nothing is reported after a cancel.  The run ends
 * cancelled, or well if both connections closed before the loop ran the
 * cancel (stream.h: "or with how it ended, had it ended first"). */
START_TEST(test_client_cancel_in_result_stops_aggregate)
{
	struct evr_stream_opts o;
	char port[16];

	server_up(NULL, port, sizeof(port));
	opts_client(&o, port);
	o.conns = 2;
	C.cancel_at_result = 2;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 10000);
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_uint_eq(C.nresult, 2);
	ck_assert_uint_eq(C.nagg, 0);
	ck_assert_msg(C.status == 0 || C.status == -EVR_E_CANCELLED,
		      "status %d", C.status);
	ck_assert_uint_ge(C.ntrace, 3);
	ck_assert_str_eq(C.trace[0], "IDLE -> RUNNING");
	ck_assert_str_eq(C.trace[1], "RUNNING -> CANCELLING");
	ck_assert_str_eq(C.trace[C.ntrace - 1], "FINISHING -> FINISHED");
}
END_TEST

/* The same run without the cancel sums the test up: the check above
 * looks at a result that does come otherwise. */
START_TEST(test_client_many_aggregate)
{
	struct evr_stream_opts o;
	char port[16];

	server_up(NULL, port, sizeof(port));
	opts_client(&o, port);
	o.conns = 2;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 10000);
	ck_assert_int_eq(C.status, 0);
	ck_assert_uint_eq(C.nresult, 3);
	ck_assert_uint_eq(C.nagg, 1);
	ASSERT_TRACE(&C, "IDLE -> RUNNING", "RUNNING -> FINISHING",
		     "FINISHING -> FINISHED");
}
END_TEST

/* evr_result_lat_walk(): every iteration's sample of each connection's
 * result, and of the aggregate all of theirs; nothing without
 * opts.percentiles. */
START_TEST(test_client_lat_walk)
{
	struct evr_stream_opts o;
	char port[16];
	unsigned i;

	server_up(NULL, port, sizeof(port));
	opts_client(&o, port);
	o.conns = 2;
	o.iters = 7;
	o.percentiles = 1;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 10000);
	ck_assert_int_eq(C.status, 0);
	ck_assert_uint_eq(C.nresult, 3);
	for (i = 0; i < 3; i++) {
		/* 7 a connection, 14 in the aggregate (the last) */
		ck_assert_uint_eq(C.walked[i], i < 2 ? 7 : 14);
		ck_assert_uint_eq(C.walk_n[i], C.walked[i]);
		ck_assert_uint_eq(C.lat_samples[i], C.walked[i]);
		/* exact samples: their sum is the mean's total (to the
		 * rounding of a double mean) */
		ck_assert_msg(C.walk_sum[i] > 0 &&
			      C.walk_sum[i] - C.lat_sum[i] < 1 + C.walked[i] &&
			      C.lat_sum[i] - C.walk_sum[i] < 1 + C.walked[i],
			      "result %u: walked %.0Lf ns, mean x n %.0Lf", i,
			      C.walk_sum[i], C.lat_sum[i]);
	}
	ck_assert(C.walk_sum[0] + C.walk_sum[1] == C.walk_sum[2]);
}
END_TEST

START_TEST(test_client_lat_walk_off)
{
	struct evr_stream_opts o;
	char port[16];

	server_up(NULL, port, sizeof(port));
	opts_client(&o, port);
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 10000);
	ck_assert_int_eq(C.status, 0);
	ck_assert_uint_eq(C.nresult, 1);
	ck_assert_uint_eq(C.walked[0], 0);
	ck_assert_uint_eq(C.walk_n[0], 0);
	ck_assert_uint_eq(evr_result_lat_walk(NULL, walk_cb, &C), 0);
}
END_TEST

/* A cancel outside callbacks, before the client is even started: done()
 * follows from the loop, cancelled, with nothing to tell. */
START_TEST(test_client_cancel_idle)
{
	struct evr_stream_opts o;
	char port[16];

	opts_client(&o, free_port(port, sizeof(port)));
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	evr_stream_cancel(C.st);
	ck_assert_uint_eq(C.ndone, 0);
	RUN_UNTIL(C.ndone, 5000);
	run_ms(20);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_int_eq(C.status, -EVR_E_CANCELLED);
	ck_assert(!C.had_f);
	ASSERT_TRACE(&C, "IDLE -> CANCELLING", "CANCELLING -> FINISHING",
		     "FINISHING -> FINISHED");
}
END_TEST

/* ---- the server ---- */

/* Cancelled, a server stops listening at once and finishes with 0. */
START_TEST(test_server_cancel_stops_listening)
{
	char port[16];

	server_up(NULL, port, sizeof(port));
	ck_assert_uint_eq(S.nlistening, 1);
	ASSERT_TRACE(&S, "IDLE -> RUNNING");
	ck_assert_int_eq(try_connect(port), 0);
	run_ms(20);
	evr_stream_cancel(S.st);
	ck_assert_int_eq(try_connect(port), -ECONNREFUSED);
	ck_assert_uint_eq(S.ndone, 0);
	RUN_UNTIL(S.ndone, 5000);
	run_ms(20);
	ck_assert_uint_eq(S.ndone, 1);
	ck_assert_int_eq(S.status, 0);
	ck_assert(!S.had_f);
	ASSERT_TRACE(&S, "IDLE -> RUNNING", "RUNNING -> CANCELLING",
		     "CANCELLING -> FINISHING", "FINISHING -> FINISHED");
}
END_TEST

/* A server cancelled from its own info(CONN_DONE) callback: deferred to
 * the loop as well; then it stops listening. */
START_TEST(test_server_cancel_in_callback_is_deferred)
{
	struct evr_stream_opts o;
	char port[16];

	server_up(NULL, port, sizeof(port));
	S.cancel_in_conn_done = 1;
	opts_client(&o, port);
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(S.ndone && C.ndone, 10000);
	ck_assert_int_eq(C.status, 0);
	ck_assert_uint_eq(S.nconn_done, 1);
	/* when evr_stream_cancel() returned: CANCELLING, nothing more */
	ck_assert_uint_eq(S.ntrace_after_cancel, 2);
	ck_assert_uint_eq(S.ndone_after_cancel, 0);
	run_ms(20);
	ck_assert_uint_eq(S.ndone, 1);
	ck_assert_int_eq(S.status, 0);
	ASSERT_TRACE(&S, "IDLE -> RUNNING", "RUNNING -> CANCELLING",
		     "CANCELLING -> FINISHING", "FINISHING -> FINISHED");
	ck_assert_int_eq(try_connect(port), -ECONNREFUSED);
}
END_TEST

/* --once: the server finishes by itself after one client's run. */
START_TEST(test_server_once_finishes)
{
	struct evr_stream_opts o, so = { .once = 1 };
	char port[16];

	server_up(&so, port, sizeof(port));
	opts_client(&o, port);
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(S.ndone && C.ndone, 10000);
	run_ms(20);
	ck_assert_uint_eq(S.ndone, 1);
	ck_assert_int_eq(S.status, 0);
	ck_assert_int_eq(C.status, 0);
	ASSERT_TRACE(&S, "IDLE -> RUNNING", "RUNNING -> FINISHING",
		     "FINISHING -> FINISHED");
	ck_assert_uint_gt(nother, 0); /* the sessions traced too */
}
END_TEST

/* ---- -T a's poll: a hot session hands the loop on ---- */

/* The longest gap between two ticks in CPU time of this thread: what the
 * loop itself spent before the timer's turn came.  Wall time would count
 * the time the host did not run us at all. */
static double tick_last, tick_gap;
static unsigned ticks;

/* ---- names, looked up on the loop (src/loop/resolve.c) ---- */

/* A name (here "localhost", answered from /etc/hosts) is looked up on the
 * loop: evr_stream_start() returns with the engine RESOLVING and nothing
 * else done (a server not listening yet), the answer comes from the loop
 * and the run goes on: a server whose bind address is a name listens, a
 * client whose host is one runs to the end against it. */
START_TEST(test_names_resolve_on_the_loop)
{
	struct evr_stream_opts o;
	char port[16];

	opts_server(&o, free_port(port, sizeof(port)));
	o.bind_addr = "localhost";
	ck_assert_int_eq(evr_stream_new(&S.st, L, &o, &cbs, &S), 0);
	ck_assert_int_eq(evr_stream_start(S.st, NULL), 0);
	ASSERT_TRACE(&S, "IDLE -> RESOLVING");
	ck_assert_uint_eq(S.nlistening, 0);
	ck_assert_int_eq(try_connect(port), -ECONNREFUSED);
	RUN_UNTIL(S.nlistening == 1, 5000);
	ASSERT_TRACE(&S, "IDLE -> RESOLVING", "RESOLVING -> RUNNING");

	opts_client(&o, port);
	o.host = "localhost";
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	ASSERT_TRACE(&C, "IDLE -> RESOLVING");
	RUN_UNTIL(C.ndone, 10000);
	ck_assert_int_eq(C.status, 0);
	ck_assert(!C.had_f);
	ck_assert_uint_eq(C.nresult, 1);
	ASSERT_TRACE(&C, "IDLE -> RESOLVING", "RESOLVING -> RUNNING",
		     "RUNNING -> FINISHING", "FINISHING -> FINISHED");
}
END_TEST

/* The loop's table of names (evr_loop_set_lookups()): by default nothing
 * is kept, but lookups of a name whose query is under way share it; with
 * a cache an answer is given again without a query, always from the loop;
 * a lookup freed before its answer is not called; new options forget what
 * was kept; values out of range are refused. */
static unsigned lk_calls;
static int lk_err;
static sa_family_t lk_family;

static void lk_cb(void *ud, int err, const struct sockaddr *sa,
		  socklen_t len)
{
	struct evr_lookup **self = ud;

	lk_calls++;
	lk_err = err;
	lk_family = sa && len ? sa->sa_family : 0;
	evr_lookup_free(*self); /* allowed in its own callback */
	*self = NULL;
}

START_TEST(test_lookup_table)
{
	const struct evr_lookup_opts keep = { .cache_s = 60,
					      .negative_s = 5,
					      .timeout_s = 2 };
	struct evr_lookup_opts bad = keep;
	struct evr_lookup_stats st;
	struct evr_lookup *a = NULL, *b = NULL, *c = NULL;

	/* by default: no cache, one query per lookup not under way */
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_UNSPEC,
					  lk_cb, &a), 0);
	ck_assert_int_eq(evr_lookup_start(&b, L, "localhost", AF_UNSPEC,
					  lk_cb, &b), 0);
	ck_assert_uint_eq(lk_calls, 0);    /* never from inside start */
	evr_loop_lookup_stats(L, &st);
	ck_assert_uint_eq(st.queries, 1);
	ck_assert_uint_eq(st.hits, 1);     /* b waits for a's query */
	ck_assert_uint_eq(st.pending, 1);
	RUN_UNTIL(lk_calls == 2, 5000);
	ck_assert_int_eq(lk_err, 0);
	ck_assert(lk_family == AF_INET || lk_family == AF_INET6);
	evr_loop_lookup_stats(L, &st);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_uint_eq(st.cached, 0);   /* nothing kept */
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_UNSPEC,
					  lk_cb, &a), 0);
	RUN_UNTIL(lk_calls == 3, 5000);
	evr_loop_lookup_stats(L, &st);
	ck_assert_uint_eq(st.queries, 2);

	/* kept: the next lookups are hits, told from the loop */
	ck_assert_int_eq(evr_loop_set_lookups(L, &keep), 0);
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_UNSPEC,
					  lk_cb, &a), 0);
	RUN_UNTIL(lk_calls == 4, 5000);
	ck_assert_int_eq(evr_lookup_start(&b, L, "localhost", AF_UNSPEC,
					  lk_cb, &b), 0);
	ck_assert_int_eq(evr_lookup_start(&c, L, "localhost", AF_UNSPEC,
					  lk_cb, &c), 0);
	ck_assert_uint_eq(lk_calls, 4);
	evr_lookup_free(c);                /* freed first: never called */
	c = NULL;
	RUN_UNTIL(lk_calls == 5, 5000);
	run_ms(20);
	ck_assert_uint_eq(lk_calls, 5);
	ck_assert_int_eq(lk_err, 0);
	evr_loop_lookup_stats(L, &st);
	ck_assert_uint_eq(st.queries, 3);
	ck_assert_uint_eq(st.hits, 3);
	ck_assert_uint_eq(st.cached, 1);
	ck_assert_uint_eq(st.failures, 0);
	/* another family is another name */
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_INET,
					  lk_cb, &a), 0);
	RUN_UNTIL(lk_calls == 6, 5000);
	ck_assert_uint_eq(lk_family, AF_INET);
	evr_loop_lookup_stats(L, &st);
	ck_assert_uint_eq(st.queries, 4);
	ck_assert_uint_eq(st.cached, 2);

	/* new options forget what was kept */
	ck_assert_int_eq(evr_loop_set_lookups(L, &keep), 0);
	evr_loop_lookup_stats(L, &st);
	ck_assert_uint_eq(st.cached, 0);
	/* a lookup still waiting when the loop goes: freed by the engine's
	 * owner, the query by evr_loop_free() (ASan, valgrind) */
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_UNSPEC,
					  lk_cb, &a), 0);
	evr_lookup_free(a);
	a = NULL;

	/* refused: out of range, NaN; bad arguments */
	bad.cache_s = -1;
	ck_assert_int_eq(evr_loop_set_lookups(L, &bad), -EINVAL);
	bad = keep;
	bad.negative_s = EVR_LOOKUP_CACHE_MAX_S + 1;
	ck_assert_int_eq(evr_loop_set_lookups(L, &bad), -EINVAL);
	bad = keep;
	bad.timeout_s = 0.0 / 0.0;
	ck_assert_int_eq(evr_loop_set_lookups(L, &bad), -EINVAL);
	bad.timeout_s = EVR_LOOKUP_TIMEOUT_MAX_S + 1;
	ck_assert_int_eq(evr_loop_set_lookups(L, &bad), -EINVAL);
	ck_assert_int_eq(evr_loop_set_lookups(L, NULL), -EINVAL);
	ck_assert_int_eq(evr_lookup_start(&a, L, NULL, AF_UNSPEC, lk_cb, &a),
			 -EINVAL);
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_UNIX, lk_cb,
					  &a), -EINVAL);
	ck_assert_int_eq(evr_lookup_start(&a, L, "localhost", AF_UNSPEC,
					  NULL, &a), -EINVAL);
	ck_assert_uint_eq(lk_calls, 6);
}
END_TEST

static struct sockaddr_storage sa_of(const char *num, socklen_t *len)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, num, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		*len = sizeof(*in);
	} else {
		ck_assert_int_eq(inet_pton(AF_INET6, num, &in6->sin6_addr), 1);
		in6->sin6_family = AF_INET6;
		*len = sizeof(*in6);
	}
	return ss;
}

/* A name's addresses (issue 42 item 4): in the resolver's order, each
 * once, IPv4 and IPv6 only, at most EVR__LOOKUP_MAX; the first of a
 * family, for -b NAME and mckey's -b. */
START_TEST(test_addr_lists)
{
	static const char *const nums[] = { "::1", "127.0.0.1", "::1",
					    "10.0.0.1", "fd00::1" };
	struct evr__addrs a = { 0 };
	struct sockaddr_storage ss;
	struct sockaddr un = { .sa_family = AF_UNIX };
	struct evr_addr ea[3];
	socklen_t len;
	unsigned i, added = 0;

	for (i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		ss = sa_of(nums[i], &len);
		added += evr__addrs_add(&a, (struct sockaddr *)&ss, len);
	}
	ck_assert_uint_eq(added, 4);           /* ::1 once */
	ck_assert_uint_eq(a.n, 4);
	ck_assert_int_eq(a.ss[0].ss_family, AF_INET6);   /* order kept */
	ck_assert_int_eq(a.ss[1].ss_family, AF_INET);
	ck_assert_int_eq(a.ss[3].ss_family, AF_INET6);
	ck_assert_int_eq(evr__addrs_add(&a, &un, sizeof(un)), 0);
	ck_assert_int_eq(evr__addrs_add(&a, NULL, 0), 0);
	ck_assert_int_eq(evr__addrs_pick(&a, AF_INET6), 0);
	ck_assert_int_eq(evr__addrs_pick(&a, AF_INET), 1);
	ck_assert_int_eq(evr__addrs_pick(&a, AF_UNIX), -1);
	/* full: the rest are left out */
	for (i = 0; i < 2 * EVR__LOOKUP_MAX; i++) {
		char num[32];

		snprintf(num, sizeof(num), "10.1.0.%u", i + 1);
		ss = sa_of(num, &len);
		(void)evr__addrs_add(&a, (struct sockaddr *)&ss, len);
	}
	ck_assert_uint_eq(a.n, EVR__LOOKUP_MAX);
	a.n = 0;
	ck_assert_int_eq(evr__addrs_pick(&a, AF_INET), -1);

	memset(ea, 0, sizeof(ea));
	ea[0].family = AF_INET6;
	ea[1].family = AF_INET6;
	ea[2].family = AF_INET;
	ck_assert_int_eq(evr__addr_pick(ea, 3, AF_INET), 2);
	ck_assert_int_eq(evr__addr_pick(ea, 3, AF_INET6), 0);
	ck_assert_int_eq(evr__addr_pick(ea, 2, AF_INET), -1);
	ck_assert_int_eq(evr__addr_pick(ea, 0, AF_INET6), -1);
}
END_TEST

/* The failure of the last of a name's addresses says how many were
 * tried; one address, nothing more. */
START_TEST(test_failure_addrs_tried)
{
	struct evr_failure f = { .err = -ECONNREFUSED,
				 .phase = EVR_PH_CONNECT,
				 .where = "connect",
				 .peer = "127.0.0.1:7471" };
	char b[256];

	evr_failure_str(&f, b, sizeof(b));
	ck_assert_str_eq(b, "127.0.0.1:7471: connect: Connection refused");
	f.addrs_tried = 1;
	evr_failure_str(&f, b, sizeof(b));
	ck_assert_str_eq(b, "127.0.0.1:7471: connect: Connection refused");
	f.addrs_tried = 2;
	evr_failure_str(&f, b, sizeof(b));
	ck_assert_str_eq(b, "127.0.0.1:7471: connect: Connection refused "
			 "(the last of 2 addresses tried)");
}
END_TEST

/* Cancelled while its name is looked up, a client finishes at once as a
 * cancelled client does (done() from the loop, nothing to tell); freed
 * while looking up, an engine leaves nothing behind (the lookup's socket
 * and timers: ASan, valgrind) and calls nothing. */
START_TEST(test_client_cancel_and_free_resolving)
{
	struct evr_stream_opts o;
	char port[16];

	opts_client(&o, free_port(port, sizeof(port)));
	o.host = "localhost";
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	evr_stream_cancel(C.st);
	ck_assert_uint_eq(C.ndone, 0);
	RUN_UNTIL(C.ndone, 5000);
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 1);
	ck_assert_int_eq(C.status, -EVR_E_CANCELLED);
	ck_assert(!C.had_f);
	ASSERT_TRACE(&C, "IDLE -> RESOLVING", "RESOLVING -> CANCELLING",
		     "CANCELLING -> FINISHING", "FINISHING -> FINISHED");
	evr_stream_free(C.st);

	rec_init(&C, "client");
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	evr_stream_free(C.st);
	C.st = NULL;
	run_ms(50);
	ck_assert_uint_eq(C.ndone, 0);
	ASSERT_TRACE(&C, "IDLE -> RESOLVING");
}
END_TEST

/* The engine's own start, run when the name's answer comes, fails (the
 * port is taken, by a first server of the same name, so of the same
 * address whatever /etc/hosts says "localhost" is): evr_stream_start()
 * returned 0 already, so the failure comes through done(), as a listen
 * failure that evr_stream_start() would have returned for a number. */
START_TEST(test_server_name_then_bind_fails_through_done)
{
	struct evr_stream_opts o;
	struct evr_stream *first;
	struct rec r1;
	char port[16];

	rec_init(&r1, "server");
	opts_server(&o, free_port(port, sizeof(port)));
	o.bind_addr = "localhost";
	ck_assert_int_eq(evr_stream_new(&first, L, &o, &cbs, &r1), 0);
	ck_assert_int_eq(evr_stream_start(first, NULL), 0);
	RUN_UNTIL(r1.nlistening == 1, 5000);
	/* (the first server's transitions went to S's trace: it makes none
	 * from here on) */
	rec_init(&S, "server");
	ck_assert_int_eq(evr_stream_new(&S.st, L, &o, &cbs, &S), 0);
	ck_assert_int_eq(evr_stream_start(S.st, NULL), 0);
	RUN_UNTIL(S.ndone, 5000);
	run_ms(50);
	ck_assert_uint_eq(S.ndone, 1);
	ck_assert_int_eq(S.status, -EADDRINUSE);
	ck_assert(S.had_f);
	ck_assert_int_eq(S.f.err, -EADDRINUSE);
	ck_assert_int_eq(S.f.phase, EVR_PH_SETUP);
	ck_assert_uint_eq(S.f.conn_id, 0);
	ck_assert_str_eq(S.f.where, "bind");
	ck_assert_uint_eq(S.nlistening, 0);
	ASSERT_TRACE(&S, "IDLE -> RESOLVING", "RESOLVING -> FINISHING",
		     "FINISHING -> FINISHED");
	ck_assert_uint_eq(r1.ndone, 0);
	evr_stream_free(first);
}
END_TEST

static double thread_cpu(void)
{
	struct timespec ts;

	ck_assert_int_eq(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void tick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	double now = thread_cpu();

	(void)l;
	(void)w;
	(void)revents;
	if (ticks++ && now - tick_last > tick_gap)
		tick_gap = now - tick_last;
	tick_last = now;
}

/* A server in a child process with options o (its port a free loopback
 * one, written to port), until it is killed or, with o->once, its run
 * ends: exit 0 if that run went well.  alarm(): at most 60 s. */
static pid_t server_child(struct evr_stream_opts *o, char *port, size_t len)
{
	int p[2];
	pid_t pid;
	char c;

	ck_assert_int_eq(pipe(p), 0);
	o->port = free_port(port, len);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct evr_loop *l2;
		struct evr_stream *srv;

		close(p[0]);
		if (evr_loop_new(&l2, NULL) ||
		    evr_stream_new(&srv, l2, o, &cbs, &S) ||
		    evr_stream_start(srv, NULL))
			_exit(2);
		if (write(p[1], "r", 1) != 1)
			_exit(3);
		alarm(60);
		ev_run(evr_loop_ev(l2), 0);
		_exit(S.status == 0 ? 0 : 4);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

/* A 64-byte ping-pong in async mode against a server in another process
 * keeps finding its data while it polls (it is hot all the way): the
 * host's 1 ms timer still gets its turn after a few milliseconds of the
 * loop's CPU time.  Polling that kept the loop as long as data came held
 * it for the whole run (73-148 ms of CPU between two ticks). */
START_TEST(test_async_hot_poll_yields_to_timers)
{
	struct evr_stream_opts o;
	ev_timer tick_w;
	char port[16];
	int st;
	pid_t pid;

	/* ends by itself after one run */
	opts_server(&o, NULL);
	o.once = 1;
	o.size = 64;
	o.count = 1;
	o.iters = 20000;
	pid = server_child(&o, port, sizeof(port));
	opts_client(&o, port);
	o.size = 64;
	o.count = 1;
	o.iters = 20000;
	ticks = 0;
	tick_gap = 0;
	ev_timer_init(&tick_w, tick_cb, 0.001, 0.001);
	ev_timer_start(evr_loop_ev(L), &tick_w);
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 60000);
	ev_timer_stop(evr_loop_ev(L), &tick_w);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(C.status, 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_uint_eq(C.nresult, 1);
	ck_assert_uint_ge(ticks, 10);
	ck_assert_msg(tick_gap < 0.050, "the host's 1 ms timer waited %.1f ms "
		      "of CPU while a hot session polled (%u ticks)",
		      tick_gap * 1000.0, ticks);
}
END_TEST

/* One duration run of 64-byte ping-pongs on conns connections in io
 * mode: each connection's iterations in C. */
static void pingpong_run(const char *port, enum evr_io_mode io,
			 unsigned conns, unsigned ms)
{
	struct evr_stream_opts o;

	evr_stream_free(C.st);
	rec_init(&C, "client");
	opts_client(&o, port);
	o.io = io;
	o.size = 64;
	o.count = 1;
	o.iters = 1000000;
	o.duration_ms = ms;
	o.conns = conns;
	ck_assert_int_eq(evr_stream_new(&C.st, L, &o, &cbs, &C), 0);
	ck_assert_int_eq(evr_stream_start(C.st, NULL), 0);
	RUN_UNTIL(C.ndone, 30000);
	ck_assert_int_eq(C.status, 0);
	ck_assert_uint_eq(C.nconn_res, conns);
}

/* Many connections in one loop, fairly (HACKING.md): -c 4 in a duration
 * run against a server that serves them all in its one loop, the
 * slowest connection runs at least 0.8 x the iterations of the fastest,
 * and the four together at least 0.8 x as many as one alone.  Counts, not
 * times: a connection that polled or spun in place while the others'
 * replies waited did 35k iterations against 300 (-T a), and four
 * connections that each spun 64 tries a turn did half of what one did
 * (-T n), in every run; and four -T a connections of which only the
 * one whose CPU offer found it taken backed off did 0.73-1.04 x one's
 * on a host with one busy task (in CI, 0.81-0.97 x in all three rounds, in
 * both builds; test_driver_shared_poll_preempted in check_sessdrive holds
 * the fix).  The kernel's placement is another matter: three busy tasks
 * on two CPUs move, and while the client and the server share one, -T n
 * goes at the pace of time slices whatever the connections (51 round
 * trips in 0.4 s, -c 4 201), so a -T n run on a busy host can lose a
 * round to one that had a better placement: up to five rounds (a -c 1
 * run and a -c 4 run each), one of which must hold both.  The four do
 * more than one on a quiet host (1.3-1.5 x, both builds), but not on a
 * loaded one: CI's ASan build, its tests beside it, had -c 4 at 0.91-0.97
 * x -c 1 in all five rounds, evenly shared.  The bars are generous, and
 * still fail what they guard against: -c 4 at least 0.7 x -c 1 (the
 * spinning did 0.5 x), the slowest of the four at least 0.6 x the fastest
 * (a starved connection does 0.01 x). */
static void fair_share(enum evr_io_mode io)
{
	struct evr_stream_opts so;
	char port[16], msg[1024] = "";
	uint64_t one, four;
	unsigned round, i, lo, hi;
	int st, ok = 0;
	pid_t pid;

	opts_server(&so, NULL);
	so.io = io;
	pid = server_child(&so, port, sizeof(port));

	for (round = 0; round < 5 && !ok; round++) {
		pingpong_run(port, io, 1, 400);
		one = C.sum_iters;
		pingpong_run(port, io, 4, 400);
		four = C.sum_iters;
		lo = hi = C.conn_iters[0];
		for (i = 1; i < 4; i++) {
			if (C.conn_iters[i] < lo)
				lo = C.conn_iters[i];
			if (C.conn_iters[i] > hi)
				hi = C.conn_iters[i];
		}
		ok = lo * 10ull >= hi * 6ull && four * 10 >= one * 7;
		snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg),
			 " -c 4: %u, %u, %u, %u (%" PRIu64 "), -c 1: %" PRIu64
			 ";", C.conn_iters[0], C.conn_iters[1],
			 C.conn_iters[2], C.conn_iters[3], four, one);
	}
	/* SIGKILL: the child has Check's handlers, and its SIGTERM one ends
	 * the whole process group */
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(ok, "-T %c: no round fair (slowest >= 0.6 x fastest) "
		      "with -c 4 at least 0.7 x -c 1's iterations:%s",
		      io == EVR_IO_ASYNC ? 'a' : 'n', msg);
}

START_TEST(test_fair_share_nonblock)
{
	fair_share(EVR_IO_NONBLOCK);
}
END_TEST

START_TEST(test_fair_share_async)
{
	fair_share(EVR_IO_ASYNC);
}
END_TEST

static Suite *stream_suite(void)
{
	Suite *su = suite_create("stream");
	TCase *tc;

	tc = tcase_create("xport");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_xport_name);
	tcase_add_test(tc, test_xport_caps);
	tcase_add_test(tc, test_xport_check);
	tcase_add_test(tc, test_start_refuses_unknown_xport_and_gid_tcp);
	tcase_add_test(tc, test_opts_resolve_fills_every_default);
	tcase_add_test(tc, test_opts_resolve_refuses_as_the_engine);
	tcase_add_test(tc, test_opts_resolve_ranges);
	tcase_add_test(tc, test_stream_need);
	suite_add_tcase(su, tc);

	tc = tcase_create("client");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_client_closed_port);
	tcase_add_test(tc, test_client_many_one_failure);
	tcase_add_test(tc, test_client_run_then_cancel_does_nothing);
	tcase_add_test(tc, test_client_cancel_in_callback_is_deferred);
	tcase_add_test(tc, test_client_cancel_idle);
	tcase_add_test(tc, test_client_many_aggregate);
	tcase_add_test(tc, test_client_lat_walk);
	tcase_add_test(tc, test_client_lat_walk_off);
	tcase_add_test(tc, test_client_cancel_in_result_stops_aggregate);
	suite_add_tcase(su, tc);

	tc = tcase_create("server");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_server_cancel_stops_listening);
	tcase_add_test(tc, test_server_cancel_in_callback_is_deferred);
	tcase_add_test(tc, test_server_once_finishes);
	tcase_add_test(tc, test_names_resolve_on_the_loop);
	tcase_add_test(tc, test_lookup_table);
	tcase_add_test(tc, test_addr_lists);
	tcase_add_test(tc, test_failure_addrs_tried);
	tcase_add_test(tc, test_client_cancel_and_free_resolving);
	tcase_add_test(tc, test_server_name_then_bind_fails_through_done);
	suite_add_tcase(su, tc);

	tc = tcase_create("async");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_async_hot_poll_yields_to_timers);
	suite_add_tcase(su, tc);

	tc = tcase_create("fair");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 90);
	tcase_add_test(tc, test_fair_share_nonblock);
	tcase_add_test(tc, test_fair_share_async);
	suite_add_tcase(su, tc);
	return su;
}

int main(void)
{
	SRunner *sr = srunner_create(stream_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
