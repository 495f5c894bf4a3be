/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The multicast engine: N per-QP state machines that join side by side,
 * meet at a barrier once all have joined, settle on a timer (upstream
 * sleeps 3 s), transfer, leave and tear down.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evrdma/hostcheck.h"
#include "../loop/device.h"
#include "../loop/resolve.h"
#include "mc.h"

static const char *const state_names[] = EVR__STATE_NAMES(EVR_MC_STATES);

const char *evr__mc_state_name(enum evr_mc_state s)
{
	return EVR__NAME_AT(state_names, s);
}

static void set_state(struct evr_mc_node *n, enum evr_mc_state st)
{
	if (n->state != st && evr__tracing(n->mc->loop))
		evr__trace(n->mc->loop, "qp %u: %s -> %s", n->index,
			   evr__mc_state_name(n->state),
			   evr__mc_state_name(st));
	n->state = st;
}

static void mc_fail(struct evr_mcast *m, const struct evr__mc_fail_args *a)
{
	struct evr_mc_failure f = {
		.err = a->status,
		.qp = a->qp,
		.msg = a->msg,
		.with_errno = a->sys_errno != 0,
		.sys_errno = a->sys_errno,
		.code = a->code ? a->code : a->sys_errno ? -a->sys_errno :
			a->status < -1 && a->status > -4096 ? a->status : -EIO,
	};

	if (a->detail)
		snprintf(f.detail, sizeof(f.detail), "%s", a->detail);
	if (!m->have_status) {
		m->status = a->status;
		m->have_status = 1;
	}
	EVR__UPCALL(m->cb_depth, m->cbs.failure, m->ud, &f);
}

/* mckey's line for a name that does not resolve; status: its code. */
static void addr_failed(struct evr_mcast *m, int code)
{
	char d[160];

	snprintf(d, sizeof(d), "getaddrinfo failed (%s) - invalid "
		 "hostname or IP address", gai_strerror(code));
	EVR__MC_FAIL(m, .status = code, .code = -EVR_E_RESOLVE, .msg = d);
}

static int mc_get_addr(struct evr_mcast *m, const char *host,
		       struct sockaddr_storage *out, socklen_t *len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
	unsigned i;
	int ret;

	/* a name evr_mcast_start() looked up: its address */
	for (i = 0; i < 2; i++) {
		if (host && host == (i ? m->o.bind_addr : m->o.group) &&
		    m->found_len[i]) {
			memcpy(out, &m->found[i], m->found_len[i]);
			if (len)
				*len = m->found_len[i];
			return 0;
		}
	}
	ret = getaddrinfo(host, NULL, &hints, &res);
	if (ret) {
		addr_failed(m, ret);
		return -1;
	}
	memcpy(out, res->ai_addr, res->ai_addrlen);
	if (len)
		*len = res->ai_addrlen;
	freeaddrinfo(res);
	if (evr__addr_scope_missing((const struct sockaddr *)out)) {
		char d[160];

		/* bind would refuse it with a bare EINVAL */
		snprintf(d, sizeof(d), "%.46s is a link-local address: give "
			 "its interface, as %.46s%%eth0", host, host);
		EVR__MC_FAIL(m, .status = -EINVAL, .code = -EVR_E_RESOLVE,
			     .msg = "mckey", .detail = d);
		return -1;
	}
	return 0;
}

static void mc_cm_event(struct evr_mcast *m, unsigned qp, const char *event,
			int status, int is_error)
{
	EVR__UPCALL(m->cb_depth, m->cbs.cm_event, m->ud, qp, event, status,
		    is_error);
}

static void mc_joined(struct evr_mcast *m, const struct evr_mc_joined *j)
{
	EVR__UPCALL(m->cb_depth, m->cbs.joined, m->ud, j);
}

static void phase(struct evr_mcast *m, enum evr_mc_phase p)
{
	EVR__UPCALL(m->cb_depth, m->cbs.phase, m->ud, p);
}

static int terminal(const struct evr_mc_node *n)
{
	return n->state == EVR_MC_DONE || n->state == EVR_MC_FAILED;
}

static void check_all_joined(struct evr_mcast *m);
static void check_all_done(struct evr_mcast *m);

/* Leave the group (only if joined: upstream's leave after a failed join
 * just adds "failure leaving" noise) and finish this machine. */
static void finish_node(struct evr_mc_node *n, enum evr_mc_state st)
{
	struct evr_mcast *m = n->mc;

	ev_timer_stop(m->loop->ev, &n->pace_w);
	ev_timer_stop(m->loop->ev, &n->step_w);
	if (n->joined) {
		n->joined = 0;
		if (m->x->leave(n) < 0 && st == EVR_MC_DONE)
			st = EVR_MC_FAILED;
	}
	set_state(n, st);
	check_all_done(m);
}

static void node_failed(struct evr_mc_node *n, int status)
{
	struct evr_mcast *m = n->mc;
	unsigned i;

	/* Transports record their failure (with upstream's text) first;
	 * should one not, the run must still not end with status 0. */
	if (!m->have_status) {
		m->status = status ? status : -EIO;
		m->have_status = 1;
	}
	n->failed = 1;
	finish_node(n, EVR_MC_FAILED);
	/* Before the transfer phase one failure ends the run, as upstream's
	 * connect loop does; afterwards the other QPs finish their part. */
	if (!m->phase_go)
		for (i = 0; i < m->nnodes; i++)
			if (!terminal(&m->nodes[i]))
				evr__mc_node_event(&m->nodes[i],
						   EVR_MCE_CANCEL, 0);
}

static void pump(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	unsigned burst = m->o.rate > 0 ? 1 : UINT32_MAX;
	int r;

	while (burst-- && n->sent < m->o.count) {
		r = m->x->send(n, (uint32_t)n->sent);
		if (r == -EAGAIN)
			return;
		if (r < 0) {
			/* a transport that lost the node's device ended it */
			if (!terminal(n))
				node_failed(n, r);
			return;
		}
		n->sent++;
	}
	if (n->sent >= m->o.count)
		ev_timer_stop(m->loop->ev, &n->pace_w);
}

static void transfer_check(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;

	if (!n->go || n->state != EVR_MC_RUNNING)
		return;
	if (m->o.sender ? n->send_done >= m->o.count : n->recvd >= m->o.count)
		finish_node(n, EVR_MC_DONE);
}

static void step_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_mc_node *n = evr__container_of(w, struct evr_mc_node,
						  step_w);

	evr__mc_node_event(n, EVR_MCE_STEP_TIMEOUT, 0);
}

/* Resolution and joining are bounded by a timer of our own as well as
 * by the kernel's: a lost event must not hang the run. */
static void step_timer(struct evr_mc_node *n, unsigned ms)
{
	evr__timer_restart(n->mc->loop->ev, &n->step_w, ms / 1000.0);
}

static void pace_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_mc_node *n = evr__container_of(w, struct evr_mc_node,
						  pace_w);

	evr__mc_node_event(n, EVR_MCE_SEND_SLOT, 0);
}

/* JOINING (or REJOINING): the join call, bounded by join_ms. */
static void start_join(struct evr_mc_node *n, enum evr_mc_state st)
{
	struct evr_mcast *m = n->mc;
	int r;

	set_state(n, st);
	step_timer(n, m->o.join_ms);
	n->join_t0 = evr_now_ns();
	r = m->x->join(n);
	if (r < 0) {
		/* a transport that lost the node's device ended it */
		if (!terminal(n))
			node_failed(n, r);
		return;
	}
	if (r == 1)
		evr__mc_node_event(n, EVR_MCE_JOINED, 0);
}

/* The group joined again after a MULTICAST_ERROR: back where the node
 * was (sending or receiving again; or waiting for the others, or for
 * its GO if that came meanwhile). */
static void rejoined(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;

	n->joined = 1;
	step_timer(n, 0);
	if (n->go) {
		set_state(n, EVR_MC_RUNNING);
		if (m->o.sender && m->o.rate <= 0)
			pump(n);
		transfer_check(n);
		return;
	}
	set_state(n, EVR_MC_JOINED);
	if (m->phase_go)
		evr__mc_node_event(n, EVR_MCE_GO, 0);
	else
		check_all_joined(m);
}

/* RDMA_CM_EVENT_MULTICAST_ERROR after the join: "the group should be
 * rejoined, if desired".  Once: leave, join again (sends wait, receives
 * still count); a second loss ends the QP with one line. */
static void group_lost(struct evr_mc_node *n, int status)
{
	struct evr_mcast *m = n->mc;
	char d[160];

	if (n->rejoins) {
		snprintf(d, sizeof(d), "mckey: QP %u lost the group again "
			 "after rejoining it (RDMA_CM_EVENT_MULTICAST_ERROR, "
			 "error: %d)", n->index, status);
		EVR__MC_FAIL(m, .qp = n->index, .status = status, .msg = d);
		node_failed(n, status);
		return;
	}
	n->rejoins++;
	n->joined = 0;
	if (m->x->leave(n) < 0) {
		node_failed(n, -EIO); /* recorded by the transport */
		return;
	}
	start_join(n, EVR_MC_REJOINING);
}

static void mc_node_event(struct evr_mc_node *n, enum evr_mc_ev ev, int arg)
{
	struct evr_mcast *m = n->mc;
	int r;

	if (terminal(n))
		return;
	switch (ev) {
	case EVR_MCE_START:
		if (n->state != EVR_MC_IDLE)
			return;
		set_state(n, EVR_MC_RESOLVING);
		step_timer(n, m->o.resolve_ms + 1000);
		r = m->x->resolve(n);
		if (r < 0) {
			/* a transport that lost the node's device ended it */
			if (!terminal(n))
				node_failed(n, r);
			return;
		}
		if (r == 1)
			evr__mc_node_event(n, EVR_MCE_RESOLVED, 0);
		return;
	case EVR_MCE_RESOLVED:
		if (n->state != EVR_MC_RESOLVING)
			return;
		r = m->x->setup(n);
		if (r < 0) {
			/* a transport that lost the node's device ended it */
			if (!terminal(n))
				node_failed(n, r);
			return;
		}
		start_join(n, EVR_MC_JOINING);
		return;
	case EVR_MCE_RESOLVE_ERR:
	case EVR_MCE_JOIN_ERR:
		node_failed(n, arg);
		return;
	case EVR_MCE_JOINED:
		if (n->state == EVR_MC_REJOINING) {
			rejoined(n);
			return;
		}
		if (n->state != EVR_MC_JOINING)
			return;
		n->join_ns = evr_now_ns() - n->join_t0;
		n->joined = 1;
		step_timer(n, 0);
		set_state(n, EVR_MC_JOINED);
		check_all_joined(m);
		return;
	case EVR_MCE_GO:
		if (n->state != EVR_MC_JOINED)
			return;
		n->go = 1;
		set_state(n, EVR_MC_RUNNING);
		if (!m->o.count) {
			finish_node(n, EVR_MC_DONE);
			return;
		}
		if (m->o.sender) {
			if (m->o.rate > 0)
				evr__timer_every(m->loop->ev, &n->pace_w,
						 1.0 / m->o.rate);
			pump(n);
		} else {
			transfer_check(n);
		}
		return;
	case EVR_MCE_SEND_SLOT:
		if (n->state == EVR_MC_RUNNING)
			pump(n);
		return;
	case EVR_MCE_SEND_COMP:
		if (arg) {
			node_failed(n, arg);
			return;
		}
		n->send_done++;
		if (n->state == EVR_MC_RUNNING && m->o.rate <= 0)
			pump(n);
		transfer_check(n);
		return;
	case EVR_MCE_RECV_COMP:
		if (arg) {
			node_failed(n, arg);
			return;
		}
		n->recvd++;
		transfer_check(n);
		return;
	case EVR_MCE_DEADLINE:
		if (n->state != EVR_MC_RUNNING && n->state != EVR_MC_REJOINING)
			return;
		n->timed_out = 1;
		n->failed = 1;
		finish_node(n, EVR_MC_FAILED);
		return;
	case EVR_MCE_CANCEL:
		finish_node(n, n->failed ? EVR_MC_FAILED : EVR_MC_DONE);
		return;
	case EVR_MCE_LOST:
		node_failed(n, arg);
		return;
	case EVR_MCE_GROUP_LOST:
		if (n->state == EVR_MC_JOINED || n->state == EVR_MC_RUNNING)
			group_lost(n, arg);
		return;
	case EVR_MCE_STEP_TIMEOUT:
		if (n->state == EVR_MC_RESOLVING)
			EVR__MC_FAIL(m, .qp = n->index, .status = -ETIMEDOUT,
				     .msg = "mckey: resolve addr failure",
				     .sys_errno = ETIMEDOUT);
		else if (n->state == EVR_MC_JOINING)
			EVR__MC_FAIL(m, .qp = n->index, .status = -ETIMEDOUT,
				     .msg = "mckey: failure joining",
				     .sys_errno = ETIMEDOUT);
		else if (n->state == EVR_MC_REJOINING)
			EVR__MC_FAIL(m, .qp = n->index, .status = -ETIMEDOUT,
				     .msg = "mckey: failure rejoining after "
					    "RDMA_CM_EVENT_MULTICAST_ERROR",
				     .sys_errno = ETIMEDOUT);
		else
			return;
		node_failed(n, -ETIMEDOUT);
		return;
	}
}

/* ---- the engine ---- */

static void settle_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_mcast *m = evr__container_of(w, struct evr_mcast, settle_w);
	unsigned i;

	m->phase_go = 1;
	phase(m, EVR_MC_PH_TRANSFER);
	if (m->o.count) {
		ev_tstamp d = m->o.deadline_ms / 1000.0;

		ev_timer_set(&m->deadline_w, d, 0);
		ev_timer_start(l, &m->deadline_w);
	}
	for (i = 0; i < m->nnodes; i++)
		evr__mc_node_event(&m->nodes[i], EVR_MCE_GO, 0);
}

static void deadline_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_mcast *m = evr__container_of(w, struct evr_mcast,
						deadline_w);
	unsigned i, late = 0;
	char d[160];

	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[i].state == EVR_MC_RUNNING ||
		    m->nodes[i].state == EVR_MC_REJOINING)
			late++;
	if (!late)
		return;
	snprintf(d, sizeof(d), "%s not complete on %u of %u QPs after %.1f s",
		 m->o.sender ? "sends" : "receives", late, m->nnodes,
		 m->o.deadline_ms / 1000.0);
	/* -ETIME, not the -ETIMEDOUT of a resolve or join that timed out
	 * (upstream's ADDR_ERROR status): mckey's exit status tells them
	 * apart */
	EVR__MC_FAIL(m, .status = -ETIME, .msg = "mckey: deadline",
		     .detail = d);
	for (i = 0; i < m->nnodes; i++)
		evr__mc_node_event(&m->nodes[i], EVR_MCE_DEADLINE, 0);
}

static void check_all_joined(struct evr_mcast *m)
{
	unsigned i;

	for (i = 0; i < m->nnodes; i++)
		if (m->nodes[i].state != EVR_MC_JOINED)
			return;
	/* "Pause to give SM chance to configure switches" -- a timer here,
	 * where upstream sleeps; from the start again after a rejoin that
	 * came during it. */
	ev_timer_stop(m->loop->ev, &m->settle_w);
	ev_timer_set(&m->settle_w, m->o.settle_ms / 1000.0, 0);
	ev_timer_start(m->loop->ev, &m->settle_w);
}

static void build_reports(struct evr_mcast *m)
{
	unsigned i, j, ns = 0;

	for (i = 0; i < m->nnodes; i++)
		ns += m->nodes[i].acct.nsenders;
	m->reports = calloc(m->nnodes ? m->nnodes : 1, sizeof(*m->reports));
	m->sreports = calloc(ns ? ns : 1, sizeof(*m->sreports));
	if (!m->reports || !m->sreports)
		return;
	ns = 0;
	for (i = 0; i < m->nnodes; i++) {
		struct evr_mc_node *n = &m->nodes[i];
		struct evr_mc_qp_report *r = &m->reports[i];

		r->qp = i;
		r->joined = n->join_ns != 0 || n->go;
		r->timed_out = n->timed_out;
		r->sent = n->sent;
		r->send_completed = n->send_done;
		r->received = n->recvd;
		r->expected = m->o.sender ? 0 : m->o.count;
		r->join_ns = n->join_ns;
		r->foreign = n->acct.foreign;
		r->bad = n->acct.bad;
		r->untracked = n->acct.untracked;
		r->window = n->acct.window;
		r->max_senders = n->acct.max_senders;
		r->nsenders = n->acct.nsenders;
		r->senders = &m->sreports[ns];
		for (j = 0; j < n->acct.nsenders; j++, ns++) {
			const struct evr_mc_sender_stats *s =
				&n->acct.senders[j];
			struct evr_mc_sender_report *sr = &m->sreports[ns];

			sr->sender = s->sender;
			sr->count = s->count;
			sr->unique = s->unique;
			sr->duplicates = s->duplicates;
			sr->reordered = s->reordered;
			sr->lost = evr__mc_sender_lost(s);
			sr->not_received = evr__mc_sender_not_received(s);
			sr->out_of_window = s->out_of_window;
		}
	}
}

static void finish_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_mcast *m = evr__container_of(w, struct evr_mcast, finish_w);
	unsigned i;

	ev_timer_stop(l, w);
	ev_timer_stop(l, &m->settle_w);
	ev_timer_stop(l, &m->deadline_w);
	if (m->phase_go && !m->have_status && m->o.count)
		phase(m, EVR_MC_PH_TRANSFER_DONE);
	build_reports(m);
	/* Tear down in upstream's order once the report is taken. */
	for (i = 0; i < m->nnodes; i++)
		m->x->node_fini(&m->nodes[i]);
	m->x->engine_fini(m);
	m->finished = 1;
	ev_timer_stop(l, &m->cancel_w);
	/* the engine's last act: done() may free it */
	if (m->cbs.done)
		m->cbs.done(m->ud, m->status, m->reports ? m->nnodes : 0,
			    m->reports);
}

static void check_all_done(struct evr_mcast *m)
{
	unsigned i;

	for (i = 0; i < m->nnodes; i++)
		if (!terminal(&m->nodes[i]))
			return;
	/* Everyone is done: a settle still running must not announce a
	 * transfer phase that will never happen. */
	ev_timer_stop(m->loop->ev, &m->settle_w);
	ev_timer_stop(m->loop->ev, &m->deadline_w);
	/* Finish from the loop, not from inside a node's event; a timer
	 * rather than an idle watcher, which busy fds would starve. */
	if (!m->finished && !ev_is_active(&m->finish_w))
		ev_timer_start(m->loop->ev, &m->finish_w);
}

static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents);

/* The engine's defaults, the one place they are filled in
 * (evr_mcast_opts_resolve()). */
void evr__mcast_opts_fill(struct evr_mcast_opts *o)
{
	if (!o->nqps)
		o->nqps = 1;
	if (!o->resolve_ms)
		o->resolve_ms = EVR_MC_DEFAULT_RESOLVE_MS;
	if (!o->join_ms)
		o->join_ms = EVR_MC_DEFAULT_JOIN_MS;
	if (!o->deadline_ms)
		o->deadline_ms = EVR_MC_DEFAULT_DEADLINE_MS;
	if (!o->udp_port)
		o->udp_port = EVR_MC_DEFAULT_UDP_PORT;
	o->window = evr__mc_window(o->window);
	o->max_senders = evr__mc_max_senders(o->max_senders);
	/* upstream: a zero size means no messages at all */
	if (!o->size)
		o->count = 0;
}

static const struct evr_mc_up mc_up = {
	.node_event = mc_node_event,
	.failed = mc_fail,
	.get_addr = mc_get_addr,
	.cm_event = mc_cm_event,
	.joined = mc_joined,
};

int evr__mcast_new_xport(struct evr_mcast **out, struct evr_loop *loop,
			 const struct evr_mcast_opts *o,
			 const struct evr_mcast_cbs *cbs, void *ud,
			 const struct evr_mc_xport *x)
{
	struct evr_mcast *m = calloc(1, sizeof(*m));
	unsigned i;

	if (!m)
		return -ENOMEM;
	m->loop = loop;
	m->o = *o;
	m->x = x;
	m->up = &mc_up;
	m->cbs = *cbs;
	m->ud = ud;
	m->group = evr__strdup_or_null(o->group);
	m->unmapped = evr__strdup_or_null(o->unmapped);
	m->bind_addr = evr__strdup_or_null(o->bind_addr);
	m->o.group = m->group;
	m->o.unmapped = m->unmapped;
	m->o.bind_addr = m->bind_addr;
	evr__mcast_opts_fill(&m->o);
	m->nnodes = m->o.nqps;
	m->nodes = calloc(m->nnodes, sizeof(*m->nodes));
	if ((o->group && !m->group) || (o->unmapped && !m->unmapped) ||
	    (o->bind_addr && !m->bind_addr) || !m->nodes) {
		evr_mcast_free(m);
		return -ENOMEM;
	}
	for (i = 0; i < m->nnodes; i++) {
		m->nodes[i].index = i;
		m->nodes[i].mc = m;
		evr__mc_acct_init(&m->nodes[i].acct, m->o.window,
				  m->o.max_senders);
		ev_init(&m->nodes[i].pace_w, pace_cb);
		ev_init(&m->nodes[i].step_w, step_cb);
	}
	ev_init(&m->settle_w, settle_cb);
	ev_init(&m->deadline_w, deadline_cb);
	ev_timer_init(&m->finish_w, finish_cb, 0, 0);
	ev_timer_init(&m->cancel_w, cancel_cb, 0, 0);
	*out = m;
	return 0;
}

/*
 * The transports, one row each, as the stream engine's (stream.c): a new
 * one is its own file plus a row here (and a value at the end of enum
 * evr_mc_transport).  What a program asks of a transport
 * (evr_mc_transport_name(), _check(), evr_mcast_memlock(),
 * evr_mcast_need(), evr_mcast_settings()) is answered from its row.
 */
static const struct mc_xport_type {
	enum evr_mc_transport kind;
	const char *name;           /* evr_mc_transport_name(): stable */
	int rdma_device;            /* uses one: the host checks apply */
	uint64_t (*memlock)(const struct evr_mcast_opts *o); /* NULL: none */
	evr__mc_settings_fn *settings; /* its own settings of the options */
	const struct evr_mc_xport *ops;
	/* descriptors a run holds (evr_mcast_need()): the loop's, stdio,
	 * the channels and device contexts, and each QP's own (a UDP
	 * socket; RDMA's QPs share the CM and completion channels) */
	unsigned fds_base, fds_qp;
} xports[] = {
	{ .kind = EVR_MC_RDMA, .name = "rdma", .rdma_device = 1,
	  .memlock = evr__mc_rdma_memlock, .settings = evr__mc_rdma_settings,
	  .ops = &evr__mc_rdma_xport, .fds_base = 32, .fds_qp = 0 },
	{ .kind = EVR_MC_UDP, .name = "udp", .settings = evr__mc_udp_settings,
	  .ops = &evr__mc_udp_xport, .fds_base = 16, .fds_qp = 1 },
};

static const struct mc_xport_type *xport_find(enum evr_mc_transport kind)
{
	size_t i;

	for (i = 0; i < EVR__ARRAY_SIZE(xports); i++)
		if (xports[i].kind == kind)
			return &xports[i];
	return NULL;
}

const char *evr_mc_transport_name(enum evr_mc_transport t)
{
	const struct mc_xport_type *x = xport_find(t);

	return x ? x->name : NULL;
}

int evr_mc_transport_check(enum evr_mc_transport t)
{
	const struct mc_xport_type *x = xport_find(t);

	if (!x)
		return -EINVAL;
	return x->rdma_device ? evr__rdma_device_check() : 0;
}

int evr_mcast_settings(const struct evr_mcast_opts *o,
		       struct evr_setting *rows, unsigned max)
{
	const struct mc_xport_type *x = xport_find(o->transport);
	struct evr_mcast_opts eff = *o;

	if (!x)
		return -EINVAL;
	evr__mcast_opts_fill(&eff);
	return (int)x->settings(&eff, rows, max);
}

uint64_t evr_mcast_memlock(const struct evr_mcast_opts *o)
{
	const struct mc_xport_type *x = xport_find(o->transport);

	return x && x->memlock ? x->memlock(o) : 0;
}

int evr_mcast_need(const struct evr_mcast_opts *o, struct evr_hc_need *need)
{
	const struct mc_xport_type *x = xport_find(o->transport);

	memset(need, 0, sizeof(*need));
	if (!x)
		return -EINVAL;
	need->rdma = x->rdma_device;
	need->memlock = evr_mcast_memlock(o);
	/* a message's payload, if any is sent (a zero size sends none) */
	need->msg_size = o->count ? o->size : 0;
	need->addr = o->bind_addr;
	need->fds = x->fds_base + (unsigned long)x->fds_qp *
		    (o->nqps ? o->nqps : 1);
	return 0;
}

int evr_mcast_opts_resolve(const struct evr_mcast_opts *o,
			   struct evr_mcast_opts *out)
{
	if (!xport_find(o->transport))
		return -EINVAL;
	if (out != o)
		*out = *o;
	evr__mcast_opts_fill(out);
	return 0;
}

int evr_mcast_new(struct evr_mcast **out, struct evr_loop *loop,
		  const struct evr_mcast_opts *o,
		  const struct evr_mcast_cbs *cbs, void *ud)
{
	const struct mc_xport_type *x = xport_find(o->transport);

	if (!x)
		return -EINVAL;
	return evr__mcast_new_xport(out, loop, o, cbs, ud, x->ops);
}

static int lookups_start(struct evr_mcast *m);
static void start_joining(struct evr_mcast *m);

void evr_mcast_start(struct evr_mcast *m)
{
	unsigned i;

	if (m->started)
		return;
	m->started = 1;
	if (m->x->engine_init(m) < 0) {
		for (i = 0; i < m->nnodes; i++)
			set_state(&m->nodes[i], EVR_MC_FAILED);
		check_all_done(m);
		return;
	}
	for (i = 0; i < m->nnodes; i++) {
		if (m->x->node_init(&m->nodes[i]) < 0) {
			unsigned j;

			for (j = 0; j < m->nnodes; j++)
				set_state(&m->nodes[j], EVR_MC_FAILED);
			check_all_done(m);
			return;
		}
	}
	phase(m, EVR_MC_PH_STARTING);
	/* a name: looked up on the loop, the start goes on there */
	if (lookups_start(m))
		start_joining(m);
}

static void lookups_stop(struct evr_mcast *m)
{
	unsigned i;

	for (i = 0; i < 2; i++) {
		evr_lookup_free(m->lk[i]);
		m->lk[i] = NULL;
	}
}

/* The bind name's every address, for pick_bind() (in lookup i's
 * callback). */
static void keep_all(struct evr_mcast *m, unsigned i)
{
	const struct evr__addrs *all;

	if (evr__lookup_addrs(m->lk[i], &all))
		m->bind_all = *all;
}

static void looked_up(struct evr_mcast *m, unsigned i, int err,
		      const struct sockaddr *sa, socklen_t len)
{
	unsigned k;

	/* sa is the lookup's: copied before the lookup goes */
	if (!err && len > sizeof(m->found[i]))
		err = EAI_FAMILY;
	if (!err) {
		memcpy(&m->found[i], sa, len);
		m->found_len[i] = len;
		if (i == 1)
			keep_all(m, i);
	}
	evr_lookup_free(m->lk[i]);
	m->lk[i] = NULL;
	if (err) {
		lookups_stop(m);
		addr_failed(m, err);
		for (k = 0; k < m->nnodes; k++)
			set_state(&m->nodes[k], EVR_MC_FAILED);
		check_all_done(m);
		return;
	}
	if (!m->lk[0] && !m->lk[1])
		start_joining(m);
}

static void group_cb(void *ud, int err, const struct sockaddr *sa,
		     socklen_t len)
{
	looked_up(ud, 0, err, sa, len);
}

static void bind_cb(void *ud, int err, const struct sockaddr *sa,
		    socklen_t len)
{
	looked_up(ud, 1, err, sa, len);
}

/* Start looking up the group and bind address that are names (not with
 * an AF_IB group, which the transports refuse or take as it is): 1 when
 * there is none, 0 when they are under way.  A resolver that cannot
 * start leaves the names to getaddrinfo, as before. */
static int lookups_start(struct evr_mcast *m)
{
	if (m->o.unmapped)
		return 1;
	if (m->o.group && !evr__host_numeric(m->o.group) &&
	    evr_lookup_start(&m->lk[0], m->loop, m->o.group, AF_UNSPEC,
			      group_cb, m))
		m->lk[0] = NULL;
	if (m->o.bind_addr && !evr__host_numeric(m->o.bind_addr) &&
	    evr_lookup_start(&m->lk[1], m->loop, m->o.bind_addr, AF_UNSPEC,
			      bind_cb, m))
		m->lk[1] = NULL;
	return !m->lk[0] && !m->lk[1];
}

/* The group's family: its name's address, or its number's (0 when it
 * is neither: the transport's prepare says why). */
static int group_family(const struct evr_mcast *m)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *res;
	int family;

	if (m->found_len[0])
		return m->found[0].ss_family;
	if (!m->o.group || getaddrinfo(m->o.group, NULL, &hints, &res))
		return 0;
	family = res->ai_family;
	freeaddrinfo(res);
	return family;
}

/* -b NAME: its first address of the group's family.  With none, its
 * first stays, and the transport's check names both families. */
static void pick_bind(struct evr_mcast *m)
{
	int k = evr__addrs_pick(&m->bind_all, group_family(m));

	if (k <= 0)
		return;
	memcpy(&m->found[1], &m->bind_all.ss[k], m->bind_all.len[k]);
	m->found_len[1] = m->bind_all.len[k];
}

/* The addresses known: the transport's prepare, then every QP's join. */
static void start_joining(struct evr_mcast *m)
{
	unsigned i;

	pick_bind(m);
	if (m->x->prepare(m) < 0) {
		for (i = 0; i < m->nnodes; i++)
			set_state(&m->nodes[i], EVR_MC_FAILED);
		check_all_done(m);
		return;
	}
	phase(m, EVR_MC_PH_JOINING);
	for (i = 0; i < m->nnodes && !m->have_status; i++)
		evr__mc_node_event(&m->nodes[i], EVR_MCE_START, 0);
}

static void cancel_now(struct evr_mcast *m)
{
	unsigned i;

	if (m->finished)
		return;
	lookups_stop(m); /* the nodes wait IDLE meanwhile */
	if (!m->have_status) {
		m->status = -EINTR;
		m->have_status = 1;
	}
	for (i = 0; i < m->nnodes; i++) {
		if (m->nodes[i].state == EVR_MC_IDLE)
			set_state(&m->nodes[i], EVR_MC_DONE);
		else
			evr__mc_node_event(&m->nodes[i], EVR_MCE_CANCEL, 0);
	}
	check_all_done(m);
}

static void cancel_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct evr_mcast *m = evr__container_of(w, struct evr_mcast, cancel_w);

	ev_timer_stop(l, w);
	cancel_now(m);
}

void evr_mcast_cancel(struct evr_mcast *m)
{
	if (m->finished)
		return;
	if (m->cb_depth) {
		/* From our own callback: a node or the transport is below us
		 * on the stack; tear down from the loop. */
		ev_timer_start(m->loop->ev, &m->cancel_w);
		return;
	}
	cancel_now(m);
}

void evr_mcast_free(struct evr_mcast *m)
{
	unsigned i;

	if (!m)
		return;
	lookups_stop(m);
	if (m->nodes) {
		if (m->started && !m->finished) {
			for (i = 0; i < m->nnodes; i++) {
				ev_timer_stop(m->loop->ev, &m->nodes[i].pace_w);
				ev_timer_stop(m->loop->ev, &m->nodes[i].step_w);
				m->x->node_fini(&m->nodes[i]);
			}
			m->x->engine_fini(m);
		}
		for (i = 0; i < m->nnodes; i++)
			evr__mc_acct_fini(&m->nodes[i].acct);
	}
	if (m->loop) {
		ev_timer_stop(m->loop->ev, &m->settle_w);
		ev_timer_stop(m->loop->ev, &m->deadline_w);
		ev_timer_stop(m->loop->ev, &m->finish_w);
		ev_timer_stop(m->loop->ev, &m->cancel_w);
	}
	free(m->nodes);
	free(m->reports);
	free(m->sreports);
	free(m->group);
	free(m->unmapped);
	free(m->bind_addr);
	free(m);
}

void evr_mc_failure_str(const struct evr_mc_failure *f, char *buf,
			size_t len)
{
	if (!buf || !len)
		return;
	if (!f)
		snprintf(buf, len, "no failure");
	else if (f->with_errno)
		snprintf(buf, len, "%s%s%s: %s", f->msg ? f->msg : "",
			 f->detail[0] ? " " : "", f->detail,
			 strerror(f->sys_errno));
	else if (f->detail[0])
		snprintf(buf, len, "%s: %s", f->msg ? f->msg : "", f->detail);
	else
		snprintf(buf, len, "%s", f->msg ? f->msg : "");
}
