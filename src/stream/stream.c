/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream engines' public face: evr_stream_new/start/cancel/free, the
 * lifecycle shared by both engines (stream_int.h), done() and a cancel
 * from inside a callback delivered from the loop, and the table of
 * transports.  The engines themselves are client.c (a plan's series, -c
 * N) and server.c (accept, peer history, -T f).
 */
#include "config.h"

#include <infiniband/verbs.h>

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "rdma.h"
#include "stream_int.h"
#include "tcp.h"

/*
 * The transports, one row each: a third one is its own file plus a row
 * here (and a value at the end of enum evr_xport_kind).
 */
static const struct xport_type {
	enum evr_xport_kind kind;
	const char *name;           /* evr_xport_name(): stable */
	int gid;                    /* takes GID addresses (EVR_ADDR_GID) */
	int rdma_device;            /* needs one (evr_xport_check()) */
	unsigned fds_base;          /* evr_xport_fds(): the engine's own */
	unsigned fds_conn;          /* ... and each connection's */
	evr__xport_new_fn *create;
} xports[] = {
	{ .kind = EVR_XPORT_TCP, .name = "tcp", .fds_base = 16, .fds_conn = 1,
	  .create = evr__tcp_xport_new },
	/* a connection has no fd: one completion channel per device */
	{ .kind = EVR_XPORT_RDMA, .name = "rdma", .gid = 1, .rdma_device = 1,
	  .fds_base = 32, .create = evr__rdma_xport_new },
};

static const struct xport_type *xport_find(enum evr_xport_kind kind)
{
	size_t i;

	for (i = 0; i < EVR__ARRAY_SIZE(xports); i++)
		if (xports[i].kind == kind)
			return &xports[i];
	return NULL;
}

const char *evr_xport_name(enum evr_xport_kind kind)
{
	const struct xport_type *t = xport_find(kind);

	return t ? t->name : NULL;
}

int evr_xport_check(enum evr_xport_kind kind)
{
	const struct xport_type *t = xport_find(kind);
	struct ibv_device **l;
	int n = 0;

	if (!t)
		return -EINVAL;
	if (!t->rdma_device)
		return 0;
	l = ibv_get_device_list(&n);
	if (l)
		ibv_free_device_list(l);
	return n > 0 ? 0 : -EVR_E_NODEV;
}

unsigned long evr_xport_fds(enum evr_xport_kind kind, unsigned conns)
{
	const struct xport_type *t = xport_find(kind);

	/* the loop's, the libraries' (verbs contexts, CM channel) and
	 * stdio: a margin, not a count */
	return t ? (unsigned long)conns * t->fds_conn + t->fds_base :
		   (unsigned long)conns + 32;
}

static const char *const state_names[] = EVR__STATE_NAMES(EVR_STREAM_STATES);

const char *evr__stream_state_name(enum evr_stream_state s)
{
	return EVR__NAME_AT(state_names, s);
}

void evr__stream_set_state(struct evr_stream *st, enum evr_stream_state to)
{
	if (st->state != to && evr__tracing(st->loop))
		evr__trace(st->loop, "%s: %s -> %s", st->eng->name,
			   evr__stream_state_name(st->state),
			   evr__stream_state_name(to));
	st->state = to;
}

static void done_cb(struct ev_loop *l, ev_timer *w, int revents);
static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents);

/* Local to the stream engine for now: the multicast engine has its own
 * copy, and both may move to src/loop. */
int evr_stream_new(struct evr_stream **out, struct evr_loop *loop,
		   const struct evr_stream_opts *opts,
		   const struct evr_stream_cbs *cbs, void *ud)
{
	struct evr_stream *st = opts->server ? evr__server_new(opts) :
					       evr__client_new(opts);

	if (!st)
		return -ENOMEM;
	st->state = EVR_STREAM_IDLE;
	st->loop = loop;
	st->o = *opts;
	st->host = evr__strdup_or_null(opts->host);
	st->bind_addr = evr__strdup_or_null(opts->bind_addr);
	st->port = strdup(opts->port ? opts->port : EVR_DEFAULT_PORT);
	if ((opts->host && !st->host) ||
	    (opts->bind_addr && !st->bind_addr) || !st->port) {
		evr_stream_free(st);
		return -ENOMEM;
	}
	st->o.host = st->host;
	st->o.bind_addr = st->bind_addr;
	st->o.port = st->port;
	if (!st->o.stall_ms)
		st->o.stall_ms = EVR_DEFAULT_STALL_MS;
	if (opts->conns > EVR_MAX_CONNS || opts->poll_us > EVR_MAX_POLL_US) {
		evr_stream_free(st);
		return -EINVAL;
	}
	st->cbs = *cbs;
	st->ud = ud;
	/* connection ids from 1: 0 is "no connection" (a failure before
	 * one existed, a server's listener) */
	st->next_id = 1;
	/* Duration mode needs the plan negotiated, and its iteration mark
	 * overwrites a data byte, which -T v would check. */
	if (st->o.duration_ms && (st->o.server || st->o.no_negotiate ||
				  st->o.verify)) {
		evr_stream_free(st);
		return -EINVAL;
	}
	ev_timer_init(&st->done_w, done_cb, 0, 0);
	ev_timer_init(&st->cancel_w, cancel_cb, 0, 0);
	if (evr__plan_build(&st->plan, &st->o)) {
		evr_stream_free(st);
		return -EINVAL;
	}
	*out = st;
	return 0;
}

/* done() goes out from the loop, never from inside a session, a
 * transport or an API call: after it the engine touches nothing of its
 * own, so the callback may free it. */
static void done_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_stream *st = evr__container_of(w, struct evr_stream,
						  done_w);

	ev_timer_stop(l, w);
	if (st->cbs.done)
		st->cbs.done(st->ud, st->fin_status, st->fin_f, st->in_child);
}

static void finish_now(struct evr_stream *st)
{
	evr__stream_set_state(st, EVR_STREAM_FINISHED);
	ev_timer_stop(st->loop->ev, &st->cancel_w);
	ev_timer_start(st->loop->ev, &st->done_w);
}

void evr__stream_finish(struct evr_stream *st, int status,
			const struct evr_failure *f)
{
	if (evr__stream_ending(st))
		return;
	st->fin_status = status;
	st->fin_f = NULL;
	if (f) {
		st->fin_fail = *f;
		st->fin_f = &st->fin_fail;
	}
	evr__stream_set_state(st, EVR_STREAM_FINISHING);
	/* Let the last closes complete (our DISCONNECT reaching the peer)
	 * before the program exits; evr__stream_drained() finishes then. */
	if (st->xp && st->xp->ops->lingering(st->xp))
		return;
	finish_now(st);
}

void evr__stream_drained(void *ud)
{
	struct evr_stream *st = ud;

	if (st->state == EVR_STREAM_FINISHING)
		finish_now(st);
}

void evr__stream_result_init(struct evr_result *r, const struct evr_sess *s,
			     const struct evr_test *t, uint64_t elapsed_ns)
{
	*r = (struct evr_result){
		.name = t->name,
		.size = t->size,
		.count = t->count,
		.iters = t->iters,
		.bytes = evr__test_bytes(t),
		.elapsed_ns = elapsed_ns,
		.conn_id = s->id,
		.peer = s->conn ? s->conn->peer : "",
		.lat = s->lat_valid ? &s->lat_res : NULL,
		.lat_samples = s->lat_valid ? &s->lat : NULL,
		.start_ns = s->t0,
		.conn_mean_ns = elapsed_ns,
		.iter_mean_ns = t->iters ? (double)elapsed_ns / t->iters : 0.0,
	};
}

/* A transport without the op, or one that cannot tell, reports nothing. */
void evr__stream_settings(struct evr_stream *st, unsigned conn_id,
			  struct evr_conn *c)
{
	struct evr_conn_settings cs;
	struct evr_info i;

	if (!st->o.report_settings || !st->cbs.info || !c->ops->settings ||
	    c->ops->settings(c, &cs))
		return;
	i = (struct evr_info){
		.kind = EVR_INFO_SETTINGS,
		.conn_id = conn_id,
		.peer = cs.peer[0] ? cs.peer : c->peer,
		.keepalive_on = cs.keepalive_on,
		.keepalive_idle = cs.keepalive_idle_s,
		.settings = &cs,
	};
	EVR__STREAM_EMIT(st, info, &i);
}

/* Whether host must be looked up before the engine's start: a name that
 * getaddrinfo or rdma_getaddrinfo would resolve (they block on one), but
 * not over TCP with -f ip / ipv6, which take numbers only and say so at
 * once, nor a GID. */
static int needs_lookup(const struct evr_stream *st, const char *host)
{
	const struct evr_stream_opts *o = &st->o;

	if (!host || o->addr_fmt == EVR_ADDR_GID)
		return 0;
	if (!o->resolve_rdma && o->addr_fmt != EVR_ADDR_NAME)
		return 0;
	return !evr__host_numeric(host);
}

static void lookups_stop(struct evr_stream *st)
{
	unsigned i;

	for (i = 0; i < EVR__ARRAY_SIZE(st->lk); i++) {
		evr__lookup_free(st->lk[i]);
		st->lk[i] = NULL;
	}
}

/* rdma_getaddrinfo refusing the numeric address found for a name (no
 * RDMA device has it): the failure names the name, as it did before. */
static void name_failed_addr(const struct evr_stream *st,
			     struct evr_failure *f)
{
	const char *names[2] = { st->host, st->bind_addr };
	char rest[sizeof(f->addr)];
	unsigned i;
	size_t n;

	if (f->err != -EVR_E_RESOLVE)
		return;
	for (i = 0; i < 2; i++) {
		n = strlen(st->num[i]);
		if (!names[i] || !n || strncmp(f->addr, st->num[i], n) ||
		    strncmp(f->addr + n, " port ", 6))
			continue;
		snprintf(rest, sizeof(rest), "%s", f->addr + n);
		if (snprintf(f->addr, sizeof(f->addr), "%s%s", names[i],
			     rest) >= (int)sizeof(f->addr))
			f->addr[sizeof(f->addr) - 1] = '\0';
		return;
	}
}

/* Lookup i (0: o.host, 1: o.bind_addr) answered: the engine's own start
 * once both have, with the numeric addresses in o; the run's end if a
 * name does not resolve or that start fails (it returned 0 already). */
static void looked_up(struct evr_stream *st, unsigned i, int err,
		      const struct sockaddr *sa)
{
	struct evr_failure f = { .phase = EVR_PH_SETUP };
	int ret;

	/* sa is the lookup's: read it before the lookup goes */
	if (!err && evr__addr_numeric(sa, st->num[i], sizeof(st->num[i])))
		err = EAI_NONAME;
	evr__lookup_free(st->lk[i]);
	st->lk[i] = NULL;
	if (err) {
		lookups_stop(st);
		/* the port each call below would have been given */
		evr__resolve_failed(&f, &st->o, i ? st->bind_addr : st->host,
				    i && !st->o.server ? "0" : st->port, err);
		evr__stream_finish(st, f.err, &f);
		return;
	}
	if (i)
		st->o.bind_addr = st->num[1];
	else
		st->o.host = st->num[0];
	if (st->lk[0] || st->lk[1])
		return;
	ret = st->eng->start(st, &f);
	if (ret) {
		if (!f.err)
			f.err = ret;
		name_failed_addr(st, &f);
		evr__stream_finish(st, f.err, &f);
	}
}

static void host_cb(void *ud, int err, const struct sockaddr *sa,
		    socklen_t len)
{
	(void)len;
	looked_up(ud, 0, err, sa);
}

static void bind_cb(void *ud, int err, const struct sockaddr *sa,
		    socklen_t len)
{
	(void)len;
	looked_up(ud, 1, err, sa);
}

/* Start the lookups the engine's start needs: 0 (none), 1 (RESOLVING) or
 * a negative code with f filled. */
static int lookups_start(struct evr_stream *st, struct evr_failure *f)
{
	int family = st->o.addr_fmt == EVR_ADDR_IPV6 ? AF_INET6 : AF_UNSPEC;
	int ret = 0;

	if (!st->o.server && needs_lookup(st, st->host))
		ret = evr__lookup_start(&st->lk[0], st->loop, st->host, family,
					host_cb, st);
	if (!ret && needs_lookup(st, st->bind_addr))
		ret = evr__lookup_start(&st->lk[1], st->loop, st->bind_addr,
					family, bind_cb, st);
	if (ret) {
		lookups_stop(st);
		f->err = ret;
		f->where = "resolver";
		return ret;
	}
	return st->lk[0] || st->lk[1];
}

int evr_stream_start(struct evr_stream *st, struct evr_failure *f)
{
	const struct xport_type *t;
	struct evr_failure ignored;
	int ret;

	if (!f)
		f = &ignored;
	memset(f, 0, sizeof(*f));
	f->phase = EVR_PH_SETUP;
	if (st->state != EVR_STREAM_IDLE) {
		f->err = -EALREADY; /* once (a failed start may be retried) */
		return f->err;
	}
	t = xport_find(st->o.xport);
	if (!t) {
		f->err = -EINVAL;
		f->where = "transport";
		return f->err;
	}
	if (st->o.addr_fmt == EVR_ADDR_GID && !t->gid) {
		f->err = -EVR_E_NOTSUP;
		f->detail = EVR_NOTSUP_GID_TCP;
		return f->err;
	}
	if (!st->xp) {
		const struct evr_xport base = {
			.loop = st->loop, .o = &st->o, .cbs = st->eng->xcbs,
			.ud = st,
		};

		ret = t->create(&st->xp, &base, f);
		if (ret)
			return ret;
	}
	/* a name: looked up on the loop, the start continues there */
	ret = lookups_start(st, f);
	if (ret < 0)
		return ret;
	if (ret) {
		evr__stream_set_state(st, EVR_STREAM_RESOLVING);
		return 0;
	}
	ret = st->eng->start(st, f);
	if (ret && !f->err)
		f->err = ret;
	return ret;
}

static void cancel_now(struct evr_stream *st)
{
	/* RESOLVING: the engine has nothing yet, and finishes at once */
	lookups_stop(st);
	if (!evr__stream_ending(st))
		st->eng->cancel(st);
}

static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_stream *st = evr__container_of(w, struct evr_stream,
						  cancel_w);

	ev_timer_stop(l, w);
	cancel_now(st);
}

void evr_stream_cancel(struct evr_stream *st)
{
	if (evr__stream_ending(st))
		return;
	/* (a failing client is cancelling its connections already, and
	 * reports nothing more either) */
	if (st->state != EVR_STREAM_FAILING)
		evr__stream_set_state(st, EVR_STREAM_CANCELLING);
	if (st->cb_depth) {
		/* Called from our own callback: a session or the transport
		 * is below us on the stack; tear down from the loop. */
		ev_timer_start(st->loop->ev, &st->cancel_w);
		return;
	}
	cancel_now(st);
}

void evr_stream_free(struct evr_stream *st)
{
	if (!st)
		return;
	ev_timer_stop(st->loop->ev, &st->done_w);
	ev_timer_stop(st->loop->ev, &st->cancel_w);
	lookups_stop(st);
	st->eng->release(st);
	/* after the sessions: their closes may linger in it */
	if (st->xp)
		st->xp->ops->free(st->xp);
	free(st->host);
	free(st->bind_addr);
	free(st->port);
	/* the engine's own struct, which begins with st (client.c,
	 * server.c) */
	free(st);
}
