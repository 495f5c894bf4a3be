/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The stream engines' public face: evr_stream_new/start/cancel/free, the
 * lookups of a start's names (RESOLVING), a cancel from inside a callback
 * delivered from the loop, the table of transports and what it answers
 * (evr_stream_transport_*, evr_stream_need(), evr_stream_memlock()), and the
 * options' defaults (evr_stream_opts_resolve()).  The engines
 * themselves are client.c (a plan's series, -c N) and server.c (accept,
 * peer history, -T f); the lifecycle both call back into is lifecycle.c,
 * below them (stream_int.h).
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evrdma/hostcheck.h"
#include "../loop/device.h"
#include "addr.h"
#include "rdma/rdma.h"
#include "stream_int.h"
#include "tcp.h"

/*
 * The transports, one row each: a third one is its own file plus a row
 * here (and a value at the end of enum evr_stream_transport).  What a
 * program asks of a transport (evr_stream_transport_check(), _caps(),
 * _fds(), evr_stream_memlock(), evr_stream_need()) is answered from its
 * row; its settings, from its connections (evr_conn_ops.settings).
 */
static const struct xport_type {
	enum evr_stream_transport kind;
	const char *name;           /* evr_stream_transport_name(): stable */
	unsigned caps;              /* EVR_TRANSPORT_CAP_*: an RDMA device
				     * (evr_stream_transport_check(), the
				     * host checks: evr_stream_need()), GID
				     * addresses, inline data, a kernel
				     * port */
	unsigned fds_base;          /* evr_stream_transport_fds(): the
				     * engine's own */
	unsigned fds_conn;          /* ... and each connection's */
	evr__xport_memlock_fn *memlock; /* what a run locks; NULL: nothing */
	evr__xport_new_fn *create;
} xports[] = {
	{ .kind = EVR_TRANSPORT_TCP, .name = "tcp",
	  .caps = EVR_TRANSPORT_CAP_KERNEL_PORT, .fds_base = 16,
	  .fds_conn = 1, .create = evr__tcp_xport_new },
	/* a connection has no fd: one completion channel per device */
	{ .kind = EVR_TRANSPORT_RDMA, .name = "rdma",
	  .caps = EVR_TRANSPORT_CAP_RDMA_DEVICE | EVR_TRANSPORT_CAP_GID |
		  EVR_TRANSPORT_CAP_INLINE,
	  .fds_base = 32, .memlock = evr__rdma_memlock, .create = evr__rdma_xport_new },
};

static const struct xport_type *xport_find(enum evr_stream_transport kind)
{
	size_t i;

	for (i = 0; i < EVR__ARRAY_SIZE(xports); i++)
		if (xports[i].kind == kind)
			return &xports[i];
	return NULL;
}

const char *evr_stream_transport_name(enum evr_stream_transport kind)
{
	const struct xport_type *t = xport_find(kind);

	return t ? t->name : NULL;
}

int evr_stream_transport_check(enum evr_stream_transport kind)
{
	const struct xport_type *t = xport_find(kind);

	if (!t)
		return -EINVAL;
	if (!(t->caps & EVR_TRANSPORT_CAP_RDMA_DEVICE))
		return 0;
	return evr__rdma_device_check();
}

unsigned evr_stream_transport_caps(enum evr_stream_transport kind)
{
	const struct xport_type *t = xport_find(kind);

	return t ? t->caps : 0;
}

unsigned long evr_stream_transport_fds(enum evr_stream_transport kind,
				       unsigned conns)
{
	const struct xport_type *t = xport_find(kind);

	/* the loop's, the libraries' (verbs contexts, CM channel) and
	 * stdio: a margin, not a count */
	return t ? (unsigned long)conns * t->fds_conn + t->fds_base :
		   (unsigned long)conns + 32;
}

uint64_t evr_stream_memlock(const struct evr_stream_opts *o)
{
	const struct xport_type *t = xport_find(o->transport);

	return t && t->memlock ? t->memlock(o) : 0;
}

int evr_stream_need(const struct evr_stream_opts *o, struct evr_hc_need *need)
{
	const struct xport_type *t = xport_find(o->transport);

	memset(need, 0, sizeof(*need));
	if (!t)
		return -EINVAL;
	need->rdma = !!(t->caps & EVR_TRANSPORT_CAP_RDMA_DEVICE);
	need->memlock = evr_stream_memlock(o);
	/* a server takes what descriptors it may, and turns connections
	 * away beyond its limits: no figure to check */
	if (!o->server)
		need->fds = evr_stream_transport_fds(o->transport,
						     o->conns ? o->conns : 1);
	need->addr = o->bind_addr;
	return 0;
}

/* Each row of EVR_STREAM_OPTIONS names a field that its kind can hold:
 * whole numbers of 4 or 8 bytes (the programs store them by size),
 * yes/no as an int, strings as pointers. */
#define OPT_FIELD_SIZE(f) sizeof(((struct evr_stream_opts *)0)->f)
#define KIND_HOLDS_NUM(f) (OPT_FIELD_SIZE(f) == 4 || OPT_FIELD_SIZE(f) == 8)
#define KIND_HOLDS_MS(f) (OPT_FIELD_SIZE(f) == 4)
#define KIND_HOLDS_FLAG(f) (OPT_FIELD_SIZE(f) == sizeof(int))
#define KIND_HOLDS_STR(f) (OPT_FIELD_SIZE(f) == sizeof(const char *))
#define KIND_HOLDS_WORD(f) 1
#define ASSERT_KIND(f, kind, ...) \
	_Static_assert(KIND_HOLDS_##kind(f), \
		       "EVR_STREAM_OPTIONS: " #f " is no " #kind " field");
EVR_STREAM_OPTIONS(ASSERT_KIND)
#undef ASSERT_KIND

/* A value given outside its row's range: every zero is a default, and a
 * negative is the never of an option that has one. */
static int out_of_range(long long v, long long lo, long long hi,
			unsigned flags)
{
	if (!v || (v < 0 && (flags & EVR_SOPT_ZERO_NEVER)))
		return 0;
	return v < lo || v > hi;
}

/* The engine's defaults, the one place they are filled in: the rows of
 * EVR_STREAM_OPTIONS, their ranges and defaults, and the rules between
 * options. */
int evr_stream_opts_resolve(const struct evr_stream_opts *in,
			    struct evr_stream_opts *out)
{
	struct evr_stream_opts o = *in;
	struct evr_plan plan;

#define RANGE_NUM(f, lo, hi, fl) \
	if (out_of_range((long long)o.f, (long long)(lo), (long long)(hi), \
			 (fl))) \
		return -EINVAL;
#define RANGE_MS RANGE_NUM
#define RANGE_FLAG(f, lo, hi, fl)
#define RANGE_STR(f, lo, hi, fl)
#define RANGE_WORD(f, lo, hi, fl)
#define CHECK(f, kind, lo, hi, def, fl, ...) RANGE_##kind(f, lo, hi, fl)
	EVR_STREAM_OPTIONS(CHECK)
#undef CHECK
#undef RANGE_NUM
#undef RANGE_MS
#undef RANGE_FLAG
#undef RANGE_STR
#undef RANGE_WORD
	/* Duration mode needs the plan negotiated, and its iteration mark
	 * overwrites a data byte, which -T v would check. */
	if (o.duration_ms && (o.server || o.no_negotiate || o.verify))
		return -EINVAL;
	if (evr__plan_build(&plan, &o))
		return -EINVAL;
#define DEFAULT(f, kind, lo, hi, def, ...) \
	if (!o.f) \
		o.f = def;
	EVR_STREAM_OPTIONS(DEFAULT)
#undef DEFAULT
	if (o.poll_us < 0)
		o.poll_us = EVR_POLL_NEVER;
	*out = o;
	return 0;
}

static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents);

/* Local to the stream engine for now: the multicast engine has its own
 * copy, and both may move to src/loop. */
int evr_stream_new(struct evr_stream **out, struct evr_loop *loop,
		   const struct evr_stream_opts *opts,
		   const struct evr_stream_cbs *cbs, void *ud)
{
	struct evr_stream_opts o;
	struct evr_stream *st;
	int ret = evr_stream_opts_resolve(opts, &o);

	if (ret)
		return ret;
	/* buffer_size as given: its 0 also lets RDMA's rings shrink with
	 * conns (conn_sizes() in rdma.c), which a given size does not */
	o.buffer_size = opts->buffer_size;
	st = o.server ? evr__server_new(&o) : evr__client_new(&o);
	if (!st)
		return -ENOMEM;
	st->state = EVR_STREAM_IDLE;
	st->loop = loop;
	st->o = o;
	st->host = evr__strdup_or_null(o.host);
	st->bind_addr = evr__strdup_or_null(o.bind_addr);
	st->port = strdup(o.port);
	if ((o.host && !st->host) || (o.bind_addr && !st->bind_addr) ||
	    !st->port) {
		evr_stream_free(st);
		return -ENOMEM;
	}
	st->o.host = st->host;
	st->o.bind_addr = st->bind_addr;
	st->o.port = st->port;
	st->cbs = *cbs;
	st->ud = ud;
	/* connection ids from 1: 0 is "no connection" (a failure before
	 * one existed, a server's listener) */
	st->next_id = 1;
	ev_timer_init(&st->done_w, evr__stream_done_cb, 0, 0);
	ev_timer_init(&st->cancel_w, cancel_cb, 0, 0);
	if (evr__plan_build(&st->plan, &st->o)) {
		evr_stream_free(st);
		return -EINVAL;
	}
	*out = st;
	return 0;
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
		evr_lookup_free(st->lk[i]);
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

/* Both names are numbers now: the engine's own start, or the run's end
 * if it fails. */
static void start_resolved(struct evr_stream *st)
{
	struct evr_failure f = { .phase = EVR_PH_SETUP };
	int ret = st->eng->start(st, &f);

	if (!ret)
		return;
	if (!f.err)
		f.err = ret;
	name_failed_addr(st, &f);
	evr__stream_finish(st, f.err, &f);
}

/* Lookup i's answer, in its callback: the first address's number in
 * num[i], every address in found[i].  err, or EAI_NONAME for an address
 * with no numeric text. */
static int take_answer(struct evr_stream *st, unsigned i, int err,
		       const struct sockaddr *sa)
{
	const struct evr__addrs *a;

	if (err)
		return err;
	if (evr__addr_numeric(sa, st->num[i], sizeof(st->num[i])))
		return EAI_NONAME;
	if (evr__lookup_addrs(st->lk[i], &a))
		st->found[i] = *a;
	return 0;
}

/* Lookup i (0: o.host, 1: o.bind_addr) answered: the engine's own start
 * once both have, with the numeric addresses in o; the run's end if a
 * name does not resolve or that start fails (it returned 0 already). */
static void looked_up(struct evr_stream *st, unsigned i, int err,
		      const struct sockaddr *sa)
{
	struct evr_failure f = { .phase = EVR_PH_SETUP };

	/* sa is the lookup's: read it before the lookup goes */
	err = take_answer(st, i, err, sa);
	evr_lookup_free(st->lk[i]);
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
	if (!st->lk[0] && !st->lk[1])
		start_resolved(st);
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
		ret = evr_lookup_start(&st->lk[0], st->loop, st->host, family,
					host_cb, st);
	if (!ret && needs_lookup(st, st->bind_addr))
		ret = evr_lookup_start(&st->lk[1], st->loop, st->bind_addr,
					family, bind_cb, st);
	if (ret) {
		lookups_stop(st);
		f->err = ret;
		f->where = "resolver";
		return ret;
	}
	return st->lk[0] || st->lk[1];
}

/* What a start needs before anything is made: an idle engine (once: a
 * failed start may be retried), a known transport, an address format it
 * takes.  Its transport, or NULL with f filled. */
static const struct xport_type *start_check(struct evr_stream *st,
					    struct evr_failure *f)
{
	const struct xport_type *t;

	if (st->state != EVR_STREAM_IDLE) {
		f->err = -EALREADY;
		return NULL;
	}
	t = xport_find(st->o.transport);
	if (!t) {
		f->err = -EINVAL;
		f->where = "transport";
		return NULL;
	}
	if (st->o.addr_fmt == EVR_ADDR_GID &&
	    !(t->caps & EVR_TRANSPORT_CAP_GID)) {
		f->err = -EVR_E_NOTSUP;
		f->detail = EVR_NOTSUP_GID_TCP;
		return NULL;
	}
	return t;
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
	t = start_check(st, f);
	if (!t)
		return f->err;
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
