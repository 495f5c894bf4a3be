/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport (rdma_int.h): completions and what they come through.
 * Each device's completion channel (struct rdev, an fd in the loop) and
 * the CQs its connections share (struct rcq); a completion goes to its
 * connection by the slot in its wr_id (x->slots), and the owners that
 * sleep are woken.  What a completion means is the connection's
 * (rdma_conn.c's handlers, reached through rdma_xport.up): this file
 * reads no message.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../loop/channel.h"
#include "rdma_int.h"


/* ---- completions ---- */

/* Take every pending event off the device's channel (non-blocking):
 * each one disarmed its CQ, and is acknowledged in batches. */
static void dev_drain(struct rdev *d)
{
	struct ibv_cq *cq;
	void *ctx;

	while (!ibv_get_cq_event(d->cch, &cq, &ctx)) {
		struct rcq *q = ctx;

		q->armed = 0;
		q->evented = 1;
		if (++q->unacked >= EVR__CQ_ACK_BATCH) {
			ibv_ack_cq_events(q->cq, q->unacked);
			q->unacked = 0;
		}
	}
}

/* Whether rc wants its CQ's events: its owner sleeps (it said so by
 * arming before a wait), or the transport holds it.  A CQ nobody waits
 * on is not armed again after an event: a connection that polls (-T a
 * while hot, -T n) then takes no interrupt for what it finds itself. */
void evr__rdma_set_waiting(struct rconn *rc, int on)
{
	if (!rc->rcq || rc->waiting == on)
		return;
	rc->waiting = on;
	if (on)
		rc->rcq->waiters++;
	else
		rc->rcq->waiters--;
}

static int arm_cq(struct rcq *q)
{
	if (q->armed)
		return 0;
	if (ibv_req_notify_cq(q->cq, 0))
		return -errno;
	q->armed = 1;
	return 1;
}

int evr__rdma_arm(struct rconn *rc)
{
	evr__rdma_set_waiting(rc, 1);
	return rc->rcq ? arm_cq(rc->rcq) : 0;
}

/* The connection a completion is for, or NULL (gone since). */
static struct rconn *wc_conn(const struct rdma_xport *x, uint64_t id)
{
	uint32_t slot = WR_SLOT(id);

	if (slot >= x->nslots || x->slots[slot].gen != WR_GEN(id))
		return NULL;
	return x->slots[slot].rc;
}

/* Someone other than the poller got completions: an owner asleep is
 * woken (one that spins or polls finds them on its own), and the
 * transport looks at a connection it holds. */
static void notify(struct rconn *rc)
{
	if (!evr__rdma_has(rc, EVR_RC_F_OWNED))
		evr__rdma_pend_add(rc, PEND_POLLED);
	else if (rc->waiting)
		evr__rdma_pend_add(rc, PEND_WAKE);
}

/* Poll a shared CQ until it is empty, handing each completion to its
 * connection.  Returns how many were self's (NULL: the channel's
 * watcher); the others' are told (notify). */
int evr__rdma_poll_rcq(struct rcq *q, struct rconn *self)
{
	struct rdma_xport *x = q->dev->x;
	struct ibv_wc wc[CQ_BATCH];
	struct rconn *rc, *touched = NULL;
	int n, i, mine = 0;

	do {
		n = ibv_poll_cq(q->cq, CQ_BATCH, wc);
		if (n < 0) {
			if (self)
				evr__rdma_set_err(self, -EIO, "ibv_poll_cq");
			break;
		}
		for (i = 0; i < n; i++) {
			rc = wc_conn(x, wc[i].wr_id);
			if (!rc)
				continue;
			if (wc[i].wr_id & WR_RECV)
				x->up.recv_wc(rc, &wc[i]);
			else
				x->up.send_wc(rc, &wc[i]);
			mine += rc == self;
			rc->n_wc++;
			if (!rc->touched) {
				rc->touched = 1;
				rc->touch_next = touched;
				touched = rc;
			}
		}
	} while (n == CQ_BATCH);
	while ((rc = touched)) {
		touched = rc->touch_next;
		rc->touched = 0;
		rc->touch_next = NULL;
		x->up.repost(rc);
		if (rc != self)
			notify(rc);
	}
	return mine;
}

/* Poll rc's CQ; returns the completions that were rc's. */
int evr__rdma_poll_cq(struct rconn *rc)
{
	return rc->rcq ? evr__rdma_poll_rcq(rc->rcq, rc) : 0;
}

/* The events on a device's channel: each disarmed its CQ, whose
 * completions are polled (self's counted, the others' owners told) and
 * which is armed again if anyone waits on it.  Returns self's. */
int evr__rdma_dev_events(struct rdev *d, struct rconn *self)
{
	struct rcq *q;
	int mine = 0;

	dev_drain(d);
	for (q = d->cqs; q; q = q->next) {
		struct rconn *me = self && self->rcq == q ? self : NULL;

		if (!q->evented)
			continue;
		q->evented = 0;
		mine += evr__rdma_poll_rcq(q, me);
		/* what came between the poll and the arming */
		if (q->waiters && arm_cq(q) > 0)
			mine += evr__rdma_poll_rcq(q, me);
	}
	return mine;
}

/* The channel's watcher, then the upcalls at once rather than a loop
 * pass later. */
static void dev_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct rdev *d = evr__container_of(w, struct rdev, w);

	evr__rdma_dev_events(d, NULL);
	evr__rdma_run_pend(d->x);
}

/* ---- devices, shared CQs, slots ---- */

static struct rdev *dev_get(struct rdma_xport *x, struct ibv_context *verbs,
			    int *err)
{
	struct ibv_device_attr da;
	struct rdev *d;

	for (d = x->devs; d; d = d->next)
		if (d->verbs == verbs)
			return d;
	d = calloc(1, sizeof(*d));
	if (!d) {
		*err = -ENOMEM;
		return NULL;
	}
	*err = evr__comp_channel_open(verbs, &d->cch);
	if (*err) {
		free(d);
		return NULL;
	}
	d->x = x;
	d->verbs = verbs;
	d->user.note = x->up.dev_note;
	*err = evr__dev_attach(x->base.loop, verbs, &d->user);
	if (*err) {
		ibv_destroy_comp_channel(d->cch);
		free(d);
		return NULL;
	}
	d->max_cqe = !ibv_query_device(verbs, &da) && da.max_cqe > 0 ?
		     da.max_cqe : 4096;
	ev_io_init(&d->w, dev_cb, d->cch->fd, EV_READ);
	ev_io_start(x->base.loop->ev, &d->w);
	d->next = x->devs;
	x->devs = d;
	return d;
}

void evr__rdma_dev_free(struct rdev *d)
{
	struct rdev **pp;

	for (pp = &d->x->devs; *pp != d; pp = &(*pp)->next)
		;
	*pp = d->next;
	ev_io_stop(d->x->base.loop->ev, &d->w);
	ibv_destroy_comp_channel(d->cch);
	evr__dev_detach(&d->user);
	free(d);
}

void evr__rdma_cq_free(struct rcq *q)
{
	struct rdev *d = q->dev;
	struct rcq **pp;

	for (pp = &d->cqs; *pp != q; pp = &(*pp)->next)
		;
	*pp = q->next;
	d->ncqs--;
	/* every event of q taken must be acked, or destroying blocks; the
	 * other CQs' events taken with them are served here (dev_events),
	 * or their sleepers would never hear of them */
	evr__rdma_dev_events(d, NULL);
	if (q->unacked)
		ibv_ack_cq_events(q->cq, q->unacked);
	ibv_destroy_cq(q->cq);
	free(q);
	if (!d->cqs)
		evr__rdma_dev_free(d);
}

/*
 * A share of a CQ of rc's device for need entries: the first CQ with
 * room, or a new one.  CQs grow geometrically, from what the engine
 * expects (a client's -c connections) up to the device's limit, so that
 * N connections take a handful of CQs, never one each (rxe allows 16,384
 * CQs in all).
 */
int evr__rdma_cq_reserve(struct rconn *rc, unsigned need, const char **what)
{
	struct rdma_xport *x = rc->x;
	const struct evr_stream_opts *o = x->base.o;
	struct rdev *d;
	struct rcq *q;
	uint64_t size;
	int err;

	*what = "ibv_create_comp_channel";
	d = dev_get(x, rc->id->verbs, &err);
	if (!d)
		return err;
	for (q = d->cqs; q; q = q->next)
		if (q->size - q->used >= need)
			break;
	if (!q) {
		size = (uint64_t)need * (o->server || o->conns <= 1 ? 1 :
					  (unsigned)o->conns);
		if (d->ncqs)
			size = (uint64_t)need << (d->ncqs < 10 ? d->ncqs : 10);
		if (size > (uint64_t)d->max_cqe)
			size = (uint64_t)d->max_cqe;
		if (size < need) {
			*what = "ibv_create_cq";
			if (!d->cqs)
				evr__rdma_dev_free(d);
			return -ENOSPC;
		}
		q = calloc(1, sizeof(*q));
		*what = "ibv_create_cq";
		if (q)
			q->cq = ibv_create_cq(d->verbs, (int)size, q, d->cch, 0);
		if (!q || !q->cq) {
			err = -errno ? -errno : -ENOMEM;
			free(q);
			if (!d->cqs)
				evr__rdma_dev_free(d);
			return err;
		}
		q->dev = d;
		q->size = (unsigned)size;
		q->next = d->cqs;
		d->cqs = q;
		d->ncqs++;
	}
	q->used += need;
	q->nconns++;
	rc->rcq = q;
	rc->cq_need = need;
	return 0;
}

/* The share back, once rc's QP is gone (its completions still on the
 * CQ are dropped by the slot's generation); the last one frees the CQ,
 * the device's last CQ its channel. */
void evr__rdma_cq_release(struct rconn *rc)
{
	struct rcq *q = rc->rcq;

	if (!q)
		return;
	evr__rdma_set_waiting(rc, 0);
	rc->rcq = NULL;
	/* what the CQ holds of rc now (its slot is stale: dropped) leaves
	 * before another connection takes the room */
	evr__rdma_poll_rcq(q, NULL);
	q->used -= rc->cq_need;
	if (!--q->nconns)
		evr__rdma_cq_free(q);
}

int evr__rdma_slot_get(struct rconn *rc)
{
	struct rdma_xport *x = rc->x;
	struct rslot *s;
	uint32_t i, n;

	if (x->free_slot == SLOT_MAX || !x->nslots) {
		n = x->nslots ? x->nslots * 2 : 16;
		if (n > SLOT_MAX)
			n = SLOT_MAX;
		if (n <= x->nslots)
			return -ENOSPC;
		s = realloc(x->slots, n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		x->slots = s;
		for (i = x->nslots; i < n; i++) {
			s[i].rc = NULL;
			s[i].gen = 0;
			s[i].next_free = i + 1 < n ? i + 1 : SLOT_MAX;
		}
		x->free_slot = x->nslots;
		x->nslots = n;
	}
	i = x->free_slot;
	x->free_slot = x->slots[i].next_free;
	x->slots[i].rc = rc;
	rc->slot = i;
	rc->gen = x->slots[i].gen;
	return 0;
}

void evr__rdma_slot_put(struct rconn *rc)
{
	struct rdma_xport *x = rc->x;
	struct rslot *s;

	if (!x->slots || rc->slot >= x->nslots ||
	    x->slots[rc->slot].rc != rc)
		return;
	s = &x->slots[rc->slot];
	s->rc = NULL;
	s->gen++;                 /* its completions yet to come: stale */
	s->next_free = x->free_slot;
	x->free_slot = rc->slot;
}
