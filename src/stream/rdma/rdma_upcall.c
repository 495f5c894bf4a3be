/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport (rdma_int.h): what goes up to the engine.  The
 * upcalls queued for it (connected, accepted, wake, a held connection's
 * completions) and delivered from a zero timer, never from inside send,
 * recv, close or a CM event; and a connection's sticky error, which
 * wakes its owner.  Below the connection and the completions: it calls
 * nothing of theirs but through rdma_xport.up.
 */
#include "config.h"

#include <string.h>

#include "rdma_int.h"

void evr__rdma_trace_err(struct rconn *rc, const char *what, int err)
{
	struct evr_loop *l = rc->x->base.loop;

	if (evr__tracing(l))
		evr__trace(l, "rdma %u: %s: %s", rc->id_no, what,
			   strerror(err < 0 ? -err : err));
}

void evr__rdma_set_err(struct rconn *rc, int err, const char *what)
{
	if (rc->err)
		return;
	evr__rdma_trace_err(rc, what, err);
	rc->err = err;
	evr__rdma_wake(rc);
}

/* A device's reason for a broken connection (-EVR_E_PORTDOWN,
 * -EVR_E_DEVGONE) in place of the work request's plain -EIO. */
void evr__rdma_err_reason(struct rconn *rc, int err)
{
	if (rc->err == -EIO)
		rc->err = err;
}

/* What happened to the connection (EVR_RC_F_*): set, then cleared. */
void evr__rdma_facts(struct rconn *rc, unsigned set, unsigned clear)
{
	rc->facts = (rc->facts | set) & ~clear;
}

void evr__rdma_defer_kick(struct rdma_xport *x)
{
	if (!ev_is_active(&x->defer_w)) {
		ev_timer_set(&x->defer_w, 0., 0.);
		ev_timer_start(x->base.loop->ev, &x->defer_w);
	}
}

void evr__rdma_pend_add(struct rconn *rc, unsigned what)
{
	struct rdma_xport *x = rc->x;

	if (!rc->pend) {
		rc->pend_next = NULL;
		if (x->pend_tail)
			x->pend_tail->pend_next = rc;
		else
			x->pend_head = rc;
		x->pend_tail = rc;
	}
	rc->pend |= what;
	evr__rdma_defer_kick(x);
}

void evr__rdma_pend_remove(struct rconn *rc)
{
	struct rdma_xport *x = rc->x;
	struct rconn **pp, *prev = NULL;

	if (!rc->pend)
		return;
	for (pp = &x->pend_head; *pp; prev = *pp, pp = &(*pp)->pend_next) {
		if (*pp == rc) {
			*pp = rc->pend_next;
			if (x->pend_tail == rc)
				x->pend_tail = prev;
			break;
		}
	}
	rc->pend = 0;
	rc->pend_next = NULL;
}

void evr__rdma_wake(struct rconn *rc)
{
	if (evr__rdma_has(rc, EVR_RC_F_OWNED))
		evr__rdma_pend_add(rc, PEND_WAKE);
}

/* The queued upcalls, in order; each entry is off the queue before its
 * upcall, which may queue more (or close rc). */
void evr__rdma_run_pend(struct rdma_xport *x)
{
	struct rconn *rc;

	while ((rc = x->pend_head)) {
		unsigned p = rc->pend;

		x->pend_head = rc->pend_next;
		if (!x->pend_head)
			x->pend_tail = NULL;
		rc->pend = 0;
		rc->pend_next = NULL;
		/* each upcall may close rc: touch nothing of it after */
		if (p & PEND_ACCEPTED) {
			evr__rdma_facts(rc, EVR_RC_F_OWNED, 0);
			x->base.cbs->accepted(x->base.ud, &rc->base,
					      rdma_get_peer_addr(rc->id));
		} else if (p & PEND_CONNECTED) {
			x->base.cbs->connected(x->base.ud, &rc->base,
					       rc->conn_err);
		} else if ((p & (PEND_WAKE | PEND_POLLED)) &&
			   evr__rdma_has(rc, EVR_RC_F_OWNED)) {
			if (rc->base.wake)
				rc->base.wake(&rc->base);
		} else if (p & PEND_POLLED) {
			x->up.closing_polled(rc); /* may destroy rc */
		}
	}
	if (x->drain_pend && !x->nlinger) {
		x->drain_pend = 0;
		if (x->base.cbs->drained)
			x->base.cbs->drained(x->base.ud);
	}
}

static void defer_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	evr__rdma_run_pend(evr__container_of(w, struct rdma_xport, defer_w));
}

void evr__rdma_upcall_init(struct rdma_xport *x)
{
	ev_init(&x->defer_w, defer_cb);
}
