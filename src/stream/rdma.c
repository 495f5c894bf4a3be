/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport of the stream engine: upstream's rsocket stream
 * protocol (spec/rsocket-protocol.md; the rules live in rsproto.c) on RDMA
 * CM and verbs, driven by the loop.
 *
 * One RDMA CM event channel per engine and one completion channel per
 * device, non-blocking fds in the loop, whatever the number of
 * connections; nothing ever waits in rdma_get_cm_event or
 * ibv_get_cq_event.  The connections of a device share its CQs (struct
 * rcq: as many as the device's CQ size needs, each holding what its
 * connections' queues may complete at once).  Whoever polls a CQ (a
 * connection's send or receive, or the channel's watcher) hands each
 * completion to its connection (the slot in its wr_id) and the others'
 * owners are woken, so a connection has no fd of its own (evr_conn.fd is
 * -1): its owner sleeps until woken.  The transport processes by itself
 * what comes before an owner has the connection (a server's connection
 * between CONNECT_REQUEST and ESTABLISHED, when the peer's first messages
 * may already arrive) and after (a close in progress).
 *
 * The transport never calls the engine from inside send/recv/close or
 * from the middle of its CM event processing: upcalls (connected,
 * accepted, wake, drained) are queued and delivered from a zero timer, so
 * that a blocking receive may process CM events safely.
 *
 * Close (spec §5.5): post RS_CTRL_DISCONNECT unless the peer's came first,
 * then wait for the first of its completion, the peer's DISCONNECT, CM
 * DISCONNECTED or a timer; rdma_disconnect; wait (bounded) for CM
 * DISCONNECTED; destroy.  This happens after the session has let go: the
 * connection lingers here, and evr_stream_free tears down what is left.
 * The states and the decisions are rclose.c's; events here only record
 * facts (rconn.facts) and call close_step(), the one close path.
 */
#include "config.h"

#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evrdma/hostcheck.h"
#include "../loop/channel.h"
#include "rclose.h"
#include "rdma.h"
#include "rsproto.h"

#define RS_SQ_SIZE 384            /* upstream's default queue depths */
#define RS_RQ_SIZE 384            /* = the credits we grant */
/* Receives beyond the credits: the peer's control messages (up to 4 in
 * flight, and more while our re-posting lags) then never meet an empty
 * receive queue, whose RNR NAK would cost 655 ms each. */
#define RQ_EXTRA (4 * EVR_RS_CTRL_SIZE)
/* Receives go back in batches of this many (one ibv_post_recv each, not
 * one a message: a call is some 170 instructions under Soft-RoCE).  What
 * waits for its batch comes out of RQ_EXTRA: the peer may have rq_size
 * messages and EVR_RS_CTRL_SIZE control messages in flight (credits go
 * back as messages consumed + rq_size), so the receives still posted,
 * rq_post less what waits, must cover both. */
#define REPOST_BATCH 8
_Static_assert(REPOST_BATCH - 1 + EVR_RS_CTRL_SIZE <= RQ_EXTRA,
	       "the receives held back fit in the spare ones");

/*
 * A connection's cell: the target SGL its peer writes (32 bytes) and the
 * control slots its SGE updates go out of when they cannot go inline (64
 * bytes), under one memory region that the peer may write (as upstream
 * registers its target SGL and iomap together).  A page of its own for
 * each was two pages per connection for 96 bytes; cells share pages (32
 * to a 4 KiB page), each connection registering only its own cell's
 * bytes, so a peer's writes stay within its own connection's cell.  The
 * pages go when the transport does.
 */
#define CELL_SGL (EVR_RS_SGL_SIZE * EVR_RS_SGE_LEN)
#define CELL_USED (CELL_SGL + EVR_RS_CTRL_SIZE * EVR_RS_SGE_LEN)
#define CELL_SIZE 128u
_Static_assert(CELL_USED <= CELL_SIZE, "a cell holds the SGL and the slots");

#define DEFAULT_INLINE 64
#define MIN_BUF 4096
#define RESOLVE_MS 2000
#define RESOLVE_RETRIES 3
#define CLOSE_WAIT_MS 2000        /* our DISCONNECT's completion */
#define DISC_WAIT_MS 1000         /* CM DISCONNECTED after rdma_disconnect */
#define PEER_DISC_GRACE_MS 1000   /* the peer's DREQ after its DISCONNECT */
#define LISTEN_BACKLOG 1024
#define CQ_BATCH 16
#define PDATA_MAX 256

/* wr_id: whose and what.  Bit 63: a receive; 62..60: a send's kind;
 * 59..44: the connection's slot generation; 43..20: its slot; 19..0: a
 * DATA write's length (at most EVR_RS_MAX_TRANSFER).  A completion whose
 * generation is not its slot's belongs to a connection gone since (the
 * flushed work requests of a destroyed QP on a shared CQ): dropped. */
#define WR_RECV (1ull << 63)
enum { WK_DATA = 1, WK_SGL, WK_DISC, WK_KEEPALIVE };
#define WR_KIND(id) ((unsigned)((id) >> 60) & 7u)
#define WR_GEN(id) ((uint16_t)((id) >> 44))
#define WR_SLOT(id) ((uint32_t)((id) >> 20) & 0xffffffu)
#define WR_LEN(id) ((uint32_t)(id) & 0xfffffu)
#define SLOT_MAX 0xffffffu

/* deferred upcalls */
enum {
	PEND_CONNECTED = 1,
	PEND_ACCEPTED = 2,
	PEND_WAKE = 4,
	PEND_POLLED = 8,              /* not the owner's: process it here */
};

struct rdma_xport;
struct rdev;

/* A CQ shared by connections of one device: size entries, used of them
 * reserved by its connections' queues (a CQ must never overflow). */
struct rcq {
	struct rcq *next;
	struct rdev *dev;
	struct ibv_cq *cq;
	unsigned size, used, nconns;
	unsigned unacked;              /* events taken, not yet acked */
	int armed;                     /* a completion will raise an event */
	int evented;                   /* an event came: poll it, re-arm */
	unsigned waiters;              /* connections whose owner sleeps on
					* it, or that the transport holds */
};

/* One device's completion channel (an fd in the loop) and its CQs. */
struct rdev {
	struct rdev *next;
	struct rdma_xport *x;
	struct ibv_context *verbs;
	struct ibv_comp_channel *cch;
	ev_io w;
	struct rcq *cqs;
	unsigned ncqs;
	int max_cqe;
};

struct rslot {
	struct rconn *rc;              /* NULL: free */
	uint16_t gen;
	uint32_t next_free;
};

struct rconn {
	struct evr_conn base;
	struct rdma_xport *x;
	struct rconn *prev, *next;     /* every connection of the engine */
	struct rconn *pend_next;       /* queued for an upcall */
	unsigned pend;
	int conn_err;                  /* for PEND_CONNECTED */
	unsigned id_no;                /* for traces */
	/* moved by set_state while setting up, then only by close_step */
	enum evr_rc_state state;
	enum evr_rc_disc disc;         /* our DISCONNECT */
	unsigned facts;                /* EVR_RC_F_*: what happened */
	struct rdma_cm_id *id;
	struct sockaddr_storage dst;
	uint8_t route[256];            /* -T r: a path from rdma_getaddrinfo */
	size_t route_len;
	unsigned retries;
	int inline_req;
	uint32_t max_inline;
	/* endpoint */
	struct rcq *rcq;               /* its share of a device's CQ */
	unsigned cq_need;              /* CQ entries its queues may fill */
	uint32_t slot;                 /* x->slots[slot].rc == this */
	uint16_t gen;
	struct rconn *touch_next;      /* completions came, in one poll */
	int touched;
	/* completions of its taken (by whichever poll), and how many of
	 * them the last call that found nothing to do had seen (r_ready) */
	uint32_t n_wc, wc_seen;
	int waiting;                   /* counted in rcq->waiters */
	unsigned repost;               /* receives to post again */
	uint8_t *sbuf, *rbuf;          /* one allocation, rbuf after sbuf */
	uint8_t *tsgl;                 /* a cell (cell_get()): the target SGL
					* the peer writes, then the control
					* slots */
	struct ibv_mr *smr, *tmr, *rmr;
	uint32_t sbuf_size, rbuf_size;
	uint32_t sq_size, rq_size, rq_post;
	uint32_t *rmsg;
	struct evr_rs_conn_data peer;
	int swap_sge;
	struct evr_rs_tx tx;
	struct evr_rs_rx rx;
	/* the data path's own figures (traced at the end) */
	uint64_t n_writes, n_corked, b_corked, n_msgs;
	uint64_t n_send_polls;     /* sends that polled the CQ first */
	int err;                       /* sticky: the connection is broken */
	ev_timer close_w;
	ev_timer ka_w;
};

struct rdma_xport {
	struct evr_xport base;
	struct rdma_event_channel *ch;
	ev_io cm_w;
	struct rdma_cm_id *lid;        /* listener */
	int listen_afib;
	struct rconn *conns;
	struct rconn *pend_head, *pend_tail;
	unsigned nlinger;
	int drain_pend;
	unsigned next_no;
	unsigned nconns;               /* in conns */
	int starved;                   /* refusing since the last accept */
	ev_timer defer_w;
	struct rdev *devs;
	struct rslot *slots;
	uint32_t nslots, free_slot;    /* free_slot: a list through next_free,
					* SLOT_MAX when empty */
	/* the connections' cells (cell_get()), carved from whole pages */
	uint8_t **cell_pages;
	unsigned ncell_pages;
	uint8_t *cell_free;            /* a list through each free cell */
};

static void close_step(struct rconn *rc, enum evr_rc_event ev, int err);
static void cell_put(struct rdma_xport *x, uint8_t *c);
static void process(struct rconn *rc);
static void flush_cork(struct rconn *rc);

static uint64_t wr_id(const struct rconn *rc, unsigned kind, uint32_t len)
{
	return (uint64_t)kind << 60 | (uint64_t)rc->gen << 44 |
	       (uint64_t)rc->slot << 20 | len;
}

static void set_state(struct rconn *rc, enum evr_rc_state st)
{
	struct evr_loop *l = rc->x->base.loop;

	if (rc->state != st && evr__tracing(l))
		evr__trace(l, "rdma %u: %s -> %s", rc->id_no,
			   evr__rc_state_name(rc->state),
			   evr__rc_state_name(st));
	rc->state = st;
}

static void set_disc(struct rconn *rc, enum evr_rc_disc d)
{
	struct evr_loop *l = rc->x->base.loop;

	if (rc->disc != d && evr__tracing(l))
		evr__trace(l, "rdma %u: DISCONNECT %s -> %s", rc->id_no,
			   evr__rc_disc_name(rc->disc), evr__rc_disc_name(d));
	rc->disc = d;
}

static int has(const struct rconn *rc, unsigned facts)
{
	return !!(rc->facts & facts);
}

/* The owner shut it down: we send nothing more. */
static int shut(const struct rconn *rc)
{
	return rc->disc != EVR_RC_DISC_NONE;
}

static void trace_err(struct rconn *rc, const char *what, int err)
{
	struct evr_loop *l = rc->x->base.loop;

	if (evr__tracing(l))
		evr__trace(l, "rdma %u: %s: %s", rc->id_no, what,
			   strerror(err < 0 ? -err : err));
}

/* ---- deferred upcalls ---- */

static void defer_kick(struct rdma_xport *x)
{
	if (!ev_is_active(&x->defer_w)) {
		ev_timer_set(&x->defer_w, 0., 0.);
		ev_timer_start(x->base.loop->ev, &x->defer_w);
	}
}

static void pend_add(struct rconn *rc, unsigned what)
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
	defer_kick(x);
}

static void pend_remove(struct rconn *rc)
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

static void wake(struct rconn *rc)
{
	if (has(rc, EVR_RC_F_OWNED))
		pend_add(rc, PEND_WAKE);
}

static void closing_polled(struct rconn *rc);

/* The queued upcalls, in order; each entry is off the queue before its
 * upcall, which may queue more (or close rc). */
static void run_pend(struct rdma_xport *x)
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
			rc->facts |= EVR_RC_F_OWNED;
			x->base.cbs->accepted(x->base.ud, &rc->base,
					      rdma_get_peer_addr(rc->id));
		} else if (p & PEND_CONNECTED) {
			x->base.cbs->connected(x->base.ud, &rc->base,
					       rc->conn_err);
		} else if ((p & (PEND_WAKE | PEND_POLLED)) &&
			   has(rc, EVR_RC_F_OWNED)) {
			if (rc->base.wake)
				rc->base.wake(&rc->base);
		} else if (p & PEND_POLLED) {
			closing_polled(rc); /* may destroy rc */
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
	run_pend(evr__container_of(w, struct rdma_xport, defer_w));
}

/* ---- completions ---- */

static int io_mode(const struct rconn *rc)
{
	return rc->x->base.o->io;
}

/* Someone sleeps on the completion channel: arm the CQ before waiting
 * (the owner, unless it spins; the transport, for a connection it holds
 * itself). */
static int waits_on_fd(const struct rconn *rc)
{
	return !has(rc, EVR_RC_F_OWNED) || io_mode(rc) != EVR_IO_NONBLOCK;
}

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
static void set_waiting(struct rconn *rc, int on)
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

static int arm(struct rconn *rc)
{
	set_waiting(rc, 1);
	return rc->rcq ? arm_cq(rc->rcq) : 0;
}

/* Connected, and neither side has ended it: errors count, credits flow. */
static int live(const struct rconn *rc)
{
	return (rc->state == EVR_RC_OPEN || rc->state == EVR_RC_ACCEPTING) &&
	       !has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC) && !rc->err;
}

/* Bytes may still go to the peer: ours to send, its ring to take. */
static int may_write(const struct rconn *rc)
{
	return (rc->state == EVR_RC_OPEN || rc->state == EVR_RC_CLOSING) &&
	       !rc->err && !has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC) &&
	       rc->disc != EVR_RC_DISC_POSTED && rc->disc != EVR_RC_DISC_DONE;
}

static void set_err(struct rconn *rc, int err, const char *what)
{
	if (rc->err)
		return;
	trace_err(rc, what, err);
	rc->err = err;
	wake(rc);
}

static int post_recvs(struct rconn *rc, unsigned n)
{
	struct ibv_recv_wr wr[CQ_BATCH], *bad;
	unsigned i, k;

	while (n) {
		k = n < CQ_BATCH ? n : CQ_BATCH;
		memset(wr, 0, sizeof(wr[0]) * k);
		for (i = 0; i < k; i++) {
			/* no SGE: every message is an RDMA write with
			 * immediate, whose bytes land in our ring */
			wr[i].wr_id = WR_RECV | wr_id(rc, 0, 0);
			wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
		}
		if (ibv_post_recv(rc->id->qp, wr, &bad))
			return -EIO;
		n -= k;
	}
	return 0;
}

/* One receive completion; returns 1 when its receive is to be re-posted. */
static int recv_wc(struct rconn *rc, const struct ibv_wc *wc)
{
	struct evr_rs_sge sge;
	uint32_t msg, data;

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR && live(rc))
			set_err(rc, -EIO, ibv_wc_status_str(wc->status));
		return 0;
	}
	if (!(wc->wc_flags & IBV_WC_WITH_IMM))
		return 1; /* a plain send: not rsocket's, ignored */
	msg = evr__rs_imm_decode(wc->imm_data);
	data = evr__rs_msg_data(msg);
	switch (evr__rs_msg_op(msg)) {
	case EVR_RS_OP_SGL:
		/* With 16 bytes the peer has written its next ring half
		 * into our target SGL; trust it only now that the write is
		 * complete, and keep our own copy of the entries. */
		if (wc->byte_len >= EVR_RS_SGE_LEN) {
			evr__rs_sge_decode(rc->tsgl + EVR_RS_SGE_LEN *
					   rc->tx.target_next, &sge);
			evr__rs_tx_sgl(&rc->tx, data, &sge);
		} else {
			evr__rs_tx_sgl(&rc->tx, data, NULL);
		}
		break;
	case EVR_RS_OP_CTRL:
		/* facts only: the close decides at its next step */
		if (data == EVR_RS_CTRL_DISCONNECT) {
			rc->facts |= EVR_RC_F_PEER_DISC;
			wake(rc);
		} else if (data == EVR_RS_CTRL_SHUTDOWN) {
			rc->facts |= EVR_RC_F_PEER_SHUT;
			if (shut(rc))
				rc->facts |= EVR_RC_F_PEER_DISC;
			wake(rc);
		}
		break;
	case EVR_RS_OP_IOMAP_SGL:
	case EVR_RS_OP_WRITE:
		break; /* we advertise no iomap; nothing to do */
	default: /* DATA, and the reserved ops upstream files as data */
		if (has(rc, EVR_RC_F_PEER_DISC))
			break;
		if (!data) {
			/* nothing to read, but a credit to give back */
			rc->rx.rseq_no++;
			break;
		}
		rc->n_msgs++;
		switch (evr__rs_rx_push(&rc->rx, data)) {
		case 0:
			break;
		case -EMSGSIZE:
			set_err(rc, -EPROTO, "peer wrote past the ring space "
				"we offered");
			break;
		default:
			set_err(rc, -EPROTO, "peer exceeded its credits");
			break;
		}
		break;
	}
	return 1;
}

static void send_wc(struct rconn *rc, const struct ibv_wc *wc)
{
	unsigned kind = WR_KIND(wc->wr_id);

	switch (kind) {
	case WK_DATA:
		evr__rs_tx_data_done(&rc->tx, WR_LEN(wc->wr_id));
		break;
	case WK_DISC:
		evr__rs_tx_ctrl_done(&rc->tx);
		/* whatever its status; only moves rc->disc */
		close_step(rc, EVR_RC_E_DISC_DONE, 0);
		return;
	default:
		evr__rs_tx_ctrl_done(&rc->tx);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && live(rc) && !shut(rc))
		set_err(rc, -EIO, ibv_wc_status_str(wc->status));
}

/* The connection a completion is for, or NULL (gone since). */
static struct rconn *wc_conn(const struct rdma_xport *x, uint64_t id)
{
	uint32_t slot = WR_SLOT(id);

	if (slot >= x->nslots || x->slots[slot].gen != WR_GEN(id))
		return NULL;
	return x->slots[slot].rc;
}

/* Receives go back at once, whether or not the data was read: credits,
 * not receives, bound what the peer may send. */
static void repost(struct rconn *rc)
{
	unsigned n = rc->repost;

	if (n < REPOST_BATCH)
		return;
	rc->repost = 0;
	if (!has(rc, EVR_RC_F_PEER_DISC) &&
	    !evr__rc_disconnected(rc->state) && rc->id->qp &&
	    post_recvs(rc, n))
		set_err(rc, -EIO, "ibv_post_recv");
}

/* Someone other than the poller got completions: an owner asleep is
 * woken (one that spins or polls finds them on its own), and the
 * transport looks at a connection it holds. */
static void notify(struct rconn *rc)
{
	if (!has(rc, EVR_RC_F_OWNED))
		pend_add(rc, PEND_POLLED);
	else if (rc->waiting)
		pend_add(rc, PEND_WAKE);
}

/* Poll a shared CQ until it is empty, handing each completion to its
 * connection.  Returns how many were self's (NULL: the channel's
 * watcher); the others' are told (notify). */
static int poll_rcq(struct rcq *q, struct rconn *self)
{
	struct rdma_xport *x = q->dev->x;
	struct ibv_wc wc[CQ_BATCH];
	struct rconn *rc, *touched = NULL;
	int n, i, mine = 0;

	do {
		n = ibv_poll_cq(q->cq, CQ_BATCH, wc);
		if (n < 0) {
			if (self)
				set_err(self, -EIO, "ibv_poll_cq");
			break;
		}
		for (i = 0; i < n; i++) {
			rc = wc_conn(x, wc[i].wr_id);
			if (!rc)
				continue;
			if (wc[i].wr_id & WR_RECV)
				rc->repost += recv_wc(rc, &wc[i]);
			else
				send_wc(rc, &wc[i]);
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
		repost(rc);
		if (rc != self)
			notify(rc);
	}
	return mine;
}

/* Poll rc's CQ; returns the completions that were rc's. */
static int poll_cq(struct rconn *rc)
{
	return rc->rcq ? poll_rcq(rc->rcq, rc) : 0;
}

/* The events on a device's channel: each disarmed its CQ, whose
 * completions are polled (self's counted, the others' owners told) and
 * which is armed again if anyone waits on it.  Returns self's. */
static int dev_events(struct rdev *d, struct rconn *self)
{
	struct rcq *q;
	int mine = 0;

	dev_drain(d);
	for (q = d->cqs; q; q = q->next) {
		struct rconn *me = self && self->rcq == q ? self : NULL;

		if (!q->evented)
			continue;
		q->evented = 0;
		mine += poll_rcq(q, me);
		/* what came between the poll and the arming */
		if (q->waiters && arm_cq(q) > 0)
			mine += poll_rcq(q, me);
	}
	return mine;
}

/* The channel's watcher, then the upcalls at once rather than a loop
 * pass later. */
static void dev_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct rdev *d = evr__container_of(w, struct rdev, w);

	dev_events(d, NULL);
	run_pend(d->x);
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
	d->max_cqe = !ibv_query_device(verbs, &da) && da.max_cqe > 0 ?
		     da.max_cqe : 4096;
	ev_io_init(&d->w, dev_cb, d->cch->fd, EV_READ);
	ev_io_start(x->base.loop->ev, &d->w);
	d->next = x->devs;
	x->devs = d;
	return d;
}

static void dev_free(struct rdev *d)
{
	struct rdev **pp;

	for (pp = &d->x->devs; *pp != d; pp = &(*pp)->next)
		;
	*pp = d->next;
	ev_io_stop(d->x->base.loop->ev, &d->w);
	ibv_destroy_comp_channel(d->cch);
	free(d);
}

static void cq_free(struct rcq *q)
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
	dev_events(d, NULL);
	if (q->unacked)
		ibv_ack_cq_events(q->cq, q->unacked);
	ibv_destroy_cq(q->cq);
	free(q);
	if (!d->cqs)
		dev_free(d);
}

/*
 * A share of a CQ of rc's device for need entries: the first CQ with
 * room, or a new one.  CQs grow geometrically, from what the engine
 * expects (a client's -c connections) up to the device's limit, so that
 * N connections take a handful of CQs, never one each (rxe allows 16,384
 * CQs in all).
 */
static int cq_reserve(struct rconn *rc, unsigned need, const char **what)
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
				dev_free(d);
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
				dev_free(d);
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
static void cq_release(struct rconn *rc)
{
	struct rcq *q = rc->rcq;

	if (!q)
		return;
	set_waiting(rc, 0);
	rc->rcq = NULL;
	/* what the CQ holds of rc now (its slot is stale: dropped) leaves
	 * before another connection takes the room */
	poll_rcq(q, NULL);
	q->used -= rc->cq_need;
	if (!--q->nconns)
		cq_free(q);
}

static int slot_get(struct rconn *rc)
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

static void slot_put(struct rconn *rc)
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

/* ---- control messages ---- */

static int post_ctrl(struct rconn *rc, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	evr__rs_tx_ctrl_post(&rc->tx);
	if (ibv_post_send(rc->id->qp, wr, &bad)) {
		evr__rs_tx_ctrl_done(&rc->tx);
		set_err(rc, -EIO, "ibv_post_send");
		return -EIO;
	}
	return 0;
}

/* Return ring space and credits at upstream's thresholds, except that
 * the ring's second half is advertised once the peer has written a
 * quarter of the ring, not at ESTABLISHED (evr__rs_rx_update_gated).  A
 * write into a peer that closes right after connecting (or after a few
 * bytes) can leave its QP holding a reference to its MR on Soft-RoCE
 * (Linux 6.1), and rsockets' close, which deregisters its MRs before it
 * destroys the QP, then hangs in the kernel (__rxe_cleanup): 5 of 600
 * such clients against us, 0 of 600 against upstream's server, which
 * writes later, 0 of 600 with the gate. */
/* Every rsocket message is an RDMA write with immediate data: the
 * message in the immediate, the bytes (if any) to raddr/rkey. */
static void write_imm(struct ibv_send_wr *wr, uint64_t id, uint32_t msg,
		      uint64_t raddr, uint32_t rkey)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = id;
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->imm_data = evr__rs_imm_encode(msg);
	wr->wr.rdma.remote_addr = raddr;
	wr->wr.rdma.rkey = rkey;
}

static void update_credits_(struct rconn *rc)
{
	while (rc->state == EVR_RC_OPEN && live(rc) && !shut(rc) &&
	       evr__rs_tx_ctrl_avail(&rc->tx)) {
		enum evr_rs_update k = evr__rs_rx_update_gated(&rc->rx);
		struct ibv_send_wr wr;
		struct ibv_sge sg;
		struct evr_rs_sge sge;
		unsigned entry = 0;
		uint32_t limit;
		uint8_t *slot;

		if (k == EVR_RS_UPD_NONE)
			return;
		limit = evr__rs_rx_update(&rc->rx, k, (uintptr_t)rc->rbuf,
					  rc->rmr->rkey, &sge, &entry);
		/* a credits-only write carries no bytes, but still gets a
		 * valid target: the peer's SGL */
		write_imm(&wr, wr_id(rc, WK_SGL, 0),
			  evr__rs_msg(EVR_RS_OP_SGL, limit),
			  rc->peer.target_sgl.addr, rc->peer.target_sgl.key);
		if (k == EVR_RS_UPD_SGE) {
			slot = rc->tsgl + CELL_SGL +
			       EVR_RS_SGE_LEN * (rc->tx.ctrl_seqno %
						 EVR_RS_CTRL_SIZE);
			evr__rs_sge_encode(slot, &sge, rc->swap_sge);
			sg.addr = (uintptr_t)slot;
			sg.length = EVR_RS_SGE_LEN;
			sg.lkey = rc->tmr->lkey;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.wr.rdma.remote_addr += EVR_RS_SGE_LEN * entry;
			if (rc->max_inline >= EVR_RS_SGE_LEN)
				wr.send_flags = IBV_SEND_INLINE;
		}
		if (post_ctrl(rc, &wr))
			return;
	}
}

/* Most calls have nothing to send (credits go back every half): that
 * is known without the full call's frame. */
static inline void update_credits(struct rconn *rc)
{
	if (evr__rs_rx_update_gated(&rc->rx) != EVR_RS_UPD_NONE)
		update_credits_(rc);
}

static void post_disconnect(struct rconn *rc)
{
	struct ibv_send_wr wr;

	if (rc->disc != EVR_RC_DISC_WANTED || !evr__rs_tx_ctrl_avail(&rc->tx))
		return;
	/* the cork's bytes first: they are the peer's before our end */
	if (rc->tx.cork_len && may_write(rc))
		return;
	write_imm(&wr, wr_id(rc, WK_DISC, 0),
		  evr__rs_msg(EVR_RS_OP_CTRL, EVR_RS_CTRL_DISCONNECT),
		  rc->peer.target_sgl.addr, rc->peer.target_sgl.key);
	/* the steps only move rc->disc */
	close_step(rc, EVR_RC_E_DISC_POSTED, 0);
	if (post_ctrl(rc, &wr))
		close_step(rc, EVR_RC_E_DISC_DONE, 0); /* nothing will complete */
}

/* Keepalive (-k): a 0-byte RDMA WRITE without immediate, which the peer's
 * HCA acknowledges without a completion; a dead peer fails it. */
static void ka_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct rconn *rc = evr__container_of(w, struct rconn, ka_w);
	struct ibv_send_wr wr;

	if (rc->state != EVR_RC_OPEN || !live(rc) || shut(rc) ||
	    !evr__rs_tx_ctrl_avail(&rc->tx))
		return;
	if (evr__tracing(rc->x->base.loop))
		evr__trace(rc->x->base.loop, "rdma %u: keepalive", rc->id_no);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id(rc, WK_KEEPALIVE, 0);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = rc->peer.target_sgl.addr;
	wr.wr.rdma.rkey = rc->peer.target_sgl.key;
	post_ctrl(rc, &wr);
}

/* upstream's rs_process_cq: events, credits, completions, credits */
static void process(struct rconn *rc)
{
	if (!rc->rcq)
		return;
	if (has(rc, EVR_RC_F_OWNED))
		set_waiting(rc, 0); /* its owner is here, not asleep */
	update_credits(rc);
	poll_cq(rc);
	update_credits(rc);
	flush_cork(rc);
	post_disconnect(rc);
}

/* Nothing to do right now.  Returns 1 when the caller should look again
 * (completions came in), 0 when it should return -EAGAIN.  A sleeper on
 * the channel needs the CQ armed, and a last poll after arming so that no
 * completion slips in between unseen. */
static int no_progress(struct rconn *rc)
{
	/* (r_ready: nothing new since this) */
	rc->wc_seen = rc->n_wc;
	if (!waits_on_fd(rc))
		return 0;
	/* The owner polls: arm only before it sleeps.  The call polled the
	 * CQ a moment ago (process()); the owner's next try polls it again,
	 * so a second poll here would only make each try longer. */
	if (rc->base.polling)
		return 0;
	if (arm(rc) < 0) {
		set_err(rc, -EIO, "ibv_req_notify_cq");
		return 1;
	}
	return poll_cq(rc) > 0;
}

/* -T b: sleep on the completion channel (and the CM channel, for a
 * disconnect) until something happens or the deadline passes. */
static void cm_drain(struct rdma_xport *x);

static int block_wait(struct rconn *rc, uint64_t deadline)
{
	struct pollfd p[2];
	uint64_t now = evr_now_ns();
	int ms, n;

	if (no_progress(rc))
		return 1;
	if (now >= deadline)
		return 0;
	ms = (int)((deadline - now + 999999) / 1000000);
	p[0].fd = rc->rcq->dev->cch->fd;
	p[0].events = POLLIN;
	p[1].fd = rc->x->ch->fd;
	p[1].events = POLLIN;
	n = poll(p, 2, ms);
	if (n < 0)
		return errno == EINTR;
	if (n == 0)
		return 0;
	if (p[0].revents)
		dev_events(rc->rcq->dev, rc);
	if (p[1].revents)
		cm_drain(rc->x);
	return 1;
}

static uint64_t block_deadline(const struct rconn *rc)
{
	return evr_now_ns() + (uint64_t)rc->x->base.o->stall_ms * 1000000u;
}

/* Nothing moved: a blocking connection waits, up to its deadline (set on
 * the first wait of a call); the others try again only while completions
 * still make progress.  1: try again, 0: -EAGAIN. */
static int wait_more(struct rconn *rc, uint64_t *deadline)
{
	if (io_mode(rc) != EVR_IO_BLOCK)
		return no_progress(rc);
	if (!*deadline)
		*deadline = block_deadline(rc);
	return block_wait(rc, *deadline);
}

/* ---- the data path ---- */

/* One DATA write of xfer bytes to raddr: inline from buf (NULL: from the
 * staging ring) when it fits, else from the ring at off, len1 bytes there
 * and the rest from its start (a copy that wraps is two SGEs). */
static int post_write(struct rconn *rc, uint32_t xfer, uint64_t raddr,
		      uint32_t rkey, const uint8_t *buf, uint32_t off,
		      uint32_t len1)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sg[2];

	write_imm(&wr, wr_id(rc, WK_DATA, xfer), evr__rs_msg(EVR_RS_OP_DATA, xfer),
		  raddr, rkey);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = sg;
	wr.num_sge = 1;
	if (xfer <= rc->max_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	if (buf) {
		sg[0].addr = (uintptr_t)buf;
		sg[0].length = xfer;
		sg[0].lkey = 0;
	} else {
		sg[0].addr = (uintptr_t)(rc->sbuf + off);
		sg[0].length = len1;
		sg[0].lkey = rc->smr->lkey;
		if (len1 < xfer) {
			sg[1].addr = (uintptr_t)rc->sbuf;
			sg[1].length = xfer - len1;
			sg[1].lkey = rc->smr->lkey;
			wr.num_sge = 2;
		}
	}
	if (ibv_post_send(rc->id->qp, &wr, &bad)) {
		set_err(rc, -EIO, "ibv_post_send");
		return -EIO;
	}
	rc->n_writes++;
	return 0;
}

/* Copy len bytes into the staging ring at off (len1 of them there, the
 * rest at its start). */
static void stage_copy(struct rconn *rc, const uint8_t *buf, uint32_t len,
		       uint32_t off, uint32_t len1)
{
	memcpy(rc->sbuf + off, buf, len1);
	if (len1 < len)
		memcpy(rc->sbuf, buf + len1, len - len1);
}

static int post_data(struct rconn *rc, const uint8_t *buf, uint32_t xfer)
{
	uint64_t raddr;
	uint32_t rkey, off = 0, len1 = 0;

	evr__rs_tx_commit(&rc->tx, xfer, &raddr, &rkey);
	if (xfer <= rc->max_inline)
		return post_write(rc, xfer, raddr, rkey, buf, 0, 0);
	evr__rs_tx_stage(&rc->tx, xfer, &off, &len1);
	stage_copy(rc, buf, xfer, off, len1);
	return post_write(rc, xfer, raddr, rkey, NULL, off, len1);
}

/* The cork's writes, as far as resources and the rule allow
 * (evr__rs_tx_cork_chunk). */
static void flush_cork(struct rconn *rc)
{
	uint64_t raddr;
	uint32_t xfer, rkey, off, len1;

	while (rc->tx.cork_len && may_write(rc) &&
	       (xfer = evr__rs_tx_cork_chunk(&rc->tx))) {
		evr__rs_tx_cork_commit(&rc->tx, xfer, &raddr, &rkey, &off,
				       &len1);
		if (post_write(rc, xfer, raddr, rkey, NULL, off, len1))
			return;
		rc->n_corked++;
		rc->b_corked += xfer;
	}
}

static ssize_t r_send(struct evr_conn *c, const void *buf, size_t len,
		      int more)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);
	const uint8_t *p = buf;
	uint64_t deadline = 0;
	size_t sent;
	uint32_t xfer, off, len1;

	for (;;) {
		if (rc->err)
			return rc->err;
		if (shut(rc) || has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC))
			return -ECONNRESET;
		if (rc->state != EVR_RC_OPEN)
			return -EAGAIN;
		rc->tx.more = more;
		/* A send that may go now goes without a look at the CQ, as
		 * upstream's rsend does: a ping-pong's reply leaves at once.
		 * One that must wait or gather looks first: completions
		 * give back credits and ring space. */
		if (evr__rs_tx_cork_due(&rc->tx, len)) {
			rc->n_send_polls++;
			process(rc);
		}
		if (rc->err)
			return rc->err;
		/* upstream's rsend: chunks of 2048 doubling to 64k, each
		 * its own write while it may go now */
		evr__rs_tx_begin(&rc->tx);
		sent = 0;
		while (sent < len && !evr__rs_tx_cork_due(&rc->tx, len - sent) &&
		       (xfer = evr__rs_tx_chunk(&rc->tx, len - sent))) {
			if (post_data(rc, p + sent, xfer))
				break;
			sent += xfer;
		}
		if (rc->err)
			return sent ? (ssize_t)sent : rc->err;
		/* the rest gathers in the staging ring (the cork) */
		if (sent < len &&
		    (xfer = evr__rs_tx_cork(&rc->tx, len - sent, &off, &len1))) {
			stage_copy(rc, p + sent, xfer, off, len1);
			sent += xfer;
			flush_cork(rc);
		}
		if (sent)
			return (ssize_t)sent;
		if (rc->err)
			return rc->err;
		if (!wait_more(rc, &deadline))
			return -EAGAIN;
	}
}

static ssize_t r_recv(struct evr_conn *c, void *buf, size_t len)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);
	uint8_t *p = buf;
	uint64_t deadline = 0;
	uint32_t n, off;
	size_t got;

	/* a receive ends what a caller sending more gathered */
	rc->tx.more = 0;
	for (;;) {
		/* bytes already in the ring are read first, as upstream's
		 * rrecv does; the CQ is polled when it runs dry */
		if ((rc->state == EVR_RC_OPEN ||
		     rc->state == EVR_RC_ACCEPTING) &&
		    !evr__rs_rx_peek(&rc->rx, &off))
			process(rc);
		got = 0;
		while (got < len && (n = evr__rs_rx_peek(&rc->rx, &off))) {
			if (n > len - got)
				n = (uint32_t)(len - got);
			if (p)
				memcpy(p + got, rc->rbuf + off, n);
			evr__rs_rx_consume(&rc->rx, n);
			got += n;
		}
		if (got) {
			update_credits(rc);
			return (ssize_t)got;
		}
		/* queued data first, then the end or the error */
		if (has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_PEER_SHUT |
			EVR_RC_F_CM_DISC))
			return 0;
		if (rc->err)
			return rc->err;
		if (rc->state != EVR_RC_OPEN)
			return shut(rc) ? 0 : -EAGAIN;
		if (!wait_more(rc, &deadline))
			return -EAGAIN;
	}
}

/* upstream's rshutdown(SHUT_RDWR): DISCONNECT, unless the peer's (or the
 * CM's) came first, in which case we post nothing more. */
static void r_shutdown(struct evr_conn *c)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);

	rc->tx.more = 0; /* what gathered goes, then our end */
	close_step(rc, EVR_RC_E_SHUT, 0);
}

/* ---- closing ---- */

/* A pass over a connection the transport holds (accepting, or closing):
 * its completions, then the close's next step. */
static void closing_polled(struct rconn *rc)
{
	process(rc);
	if (evr__rc_closing(rc->state))
		close_step(rc, EVR_RC_E_POLLED, 0); /* may destroy rc */
}

/* The transport looks after rc itself from now on: its CQ armed, and a
 * pass for what came before. */
static void own_watch(struct rconn *rc)
{
	if (!rc->rcq)
		return;
	arm(rc);
	pend_add(rc, PEND_POLLED);
}

static void close_timer(struct rconn *rc, unsigned ms)
{
	struct ev_loop *l = rc->x->base.loop->ev;

	ev_timer_stop(l, &rc->close_w);
	ev_timer_set(&rc->close_w, ms / 1000.0, 0.);
	ev_timer_start(l, &rc->close_w);
}

static void close_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	close_step(evr__container_of(w, struct rconn, close_w),
		   EVR_RC_E_TIMER, 0);
}

static void teardown(struct rconn *rc, int dreq);

/*
 * The one close path: events record their facts and call this, which
 * asks the machine (rclose.c) where the connection goes, traces the move
 * and carries the actions out.  The only place that moves a connection
 * out of OPEN (or the setup) towards CLOSED, and the only caller of
 * teardown.  err: why a connect failed (E_CONN_FAIL, E_CM_DISC).
 * Returns nothing: rc may be gone.
 */
static void close_step(struct rconn *rc, enum evr_rc_event ev, int err)
{
	struct ev_loop *l = rc->x->base.loop->ev;
	struct evr_rc_next n;

	n = evr__rc_close_next(rc->state, rc->disc, ev,
			       rc->facts | (rc->err ? EVR_RC_F_ERR : 0) |
			       (rc->tx.cork_len ? EVR_RC_F_UNSENT : 0));
	if (n.acts & EVR_RC_A_TIMEOUT)
		trace_err(rc, "close", ETIMEDOUT);
	if (n.acts & EVR_RC_A_CONN_FAILED)
		trace_err(rc, "connect", err);
	set_state(rc, n.state);
	set_disc(rc, n.disc);
	/* Each action below may step again (a completion of our DISCONNECT
	 * while the CQ is processed), which only ever moves rc->disc. */
	if (n.acts & EVR_RC_A_PROCESS)
		process(rc);
	if (n.acts & EVR_RC_A_DISCONNECT) {
		/* QP to error and DREQ (or DREP) */
		ev_timer_stop(l, &rc->ka_w);
		rdma_disconnect(rc->id);
		poll_cq(rc); /* the flushed work requests */
	}
	if (n.acts & EVR_RC_A_TIMER_CLOSE)
		close_timer(rc, CLOSE_WAIT_MS);
	if (n.acts & EVR_RC_A_TIMER_GRACE)
		close_timer(rc, PEER_DISC_GRACE_MS);
	if (n.acts & EVR_RC_A_TIMER_DISC)
		close_timer(rc, DISC_WAIT_MS);
	if (n.acts & EVR_RC_A_WATCH)
		own_watch(rc);
	if (n.acts & EVR_RC_A_WAKE)
		wake(rc);
	if (n.acts & EVR_RC_A_NOTIFY) {
		rc->conn_err = err ? err : -ECONNABORTED;
		pend_add(rc, PEND_CONNECTED);
	}
	if (n.acts & EVR_RC_A_TEARDOWN)
		teardown(rc, !!(n.acts & EVR_RC_A_DREQ));
}

static void r_close(struct evr_conn *c)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);

	c->wake = NULL;
	rc->tx.more = 0;
	rc->facts &= ~(unsigned)EVR_RC_F_OWNED;
	rc->facts |= EVR_RC_F_LINGER;
	pend_remove(rc);
	rc->x->nlinger++;
	/* as rclose(): rshutdown first, while still open */
	close_step(rc, EVR_RC_E_SHUT, 0);
	close_step(rc, EVR_RC_E_CLOSE, 0);
}

/* The endpoint as create_ep sized it and the peer's private data told
 * us; only meaningful once connected or accepted. */
static int r_settings(struct evr_conn *c, struct evr_conn_settings *o)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);
	const struct evr_stream_opts *so = rc->x->base.o;

	memset(o, 0, sizeof(*o));
	o->xport = EVR_XPORT_RDMA;
	if (!rc->id || !evr__rc_established(rc->state))
		return -ENOTCONN;
	evr__sockaddr_str(rdma_get_local_addr(rc->id), o->local,
			  sizeof(o->local));
	evr__sockaddr_str(rdma_get_peer_addr(rc->id), o->peer,
			  sizeof(o->peer));
	o->keepalive_on = so->keepalive > 0;
	o->keepalive_idle_s = so->keepalive;
	o->rdma_sbuf_bytes = rc->sbuf_size;
	o->rdma_rbuf_bytes = rc->rbuf_size;
	o->rdma_inline_bytes = rc->max_inline;
	o->rdma_sq_depth = rc->sq_size;
	o->rdma_rq_depth = rc->rq_post;
	o->rdma_credits_granted = rc->rq_size;
	o->rdma_credits_peer = rc->peer.credits;
	o->rdma_peer_target_sgl = rc->peer.target_sgl.length;
	o->rdma_peer_rbuf_bytes = rc->peer.data_buf.length * 2;
	return 0;
}

/* Whether a call may find something to do: a completion of rc's came
 * since the last call that found nothing (taken by this poll, or by
 * another connection's on the shared CQ), or rc is no longer simply
 * open (a disconnect, an error, a shutdown).  While its owner polls,
 * only completions move rc's ring, credits and send queue. */
static int r_ready(struct evr_conn *c)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);

	if (rc->state != EVR_RC_OPEN || !live(rc) || shut(rc) || !rc->rcq)
		return 1;
	if (rc->n_wc == rc->wc_seen)
		poll_rcq(rc->rcq, rc);
	return rc->n_wc != rc->wc_seen;
}

static const struct evr_conn_ops rdma_conn_ops = {
	.send = r_send,
	.recv = r_recv,
	.shutdown = r_shutdown,
	.close = r_close,
	.settings = r_settings,
	.ready = r_ready,
};

/* Free everything of a connection, in reverse order of creation; dreq:
 * established and never disconnected, so rdma_disconnect first.  Only
 * close_step calls it. */
static void teardown(struct rconn *rc, int dreq)
{
	struct rdma_xport *x = rc->x;
	struct ev_loop *l = x->base.loop->ev;

	if (evr__tracing(x->base.loop))
		evr__trace(x->base.loop, "rdma %u: %" PRIu64 " DATA writes "
			   "(%" PRIu64 " from the cork, %" PRIu64 " bytes), "
			   "%" PRIu64 " DATA messages in, %" PRIu64
			   " sends polled first", rc->id_no,
			   rc->n_writes, rc->n_corked, rc->b_corked,
			   rc->n_msgs, rc->n_send_polls);
	ev_timer_stop(l, &rc->close_w);
	ev_timer_stop(l, &rc->ka_w);
	pend_remove(rc);
	if (rc->prev)
		rc->prev->next = rc->next;
	else
		x->conns = rc->next;
	if (rc->next)
		rc->next->prev = rc->prev;
	x->nconns--;
	if (has(rc, EVR_RC_F_LINGER) && !--x->nlinger) {
		x->drain_pend = 1;
		defer_kick(x);
	}
	if (rc->id && rc->id->qp) {
		if (dreq)
			rdma_disconnect(rc->id);
		rdma_destroy_qp(rc->id);
	}
	slot_put(rc);
	cq_release(rc);
	if (rc->smr)
		ibv_dereg_mr(rc->smr);
	if (rc->tmr)
		ibv_dereg_mr(rc->tmr);
	if (rc->rmr)
		ibv_dereg_mr(rc->rmr);
	free(rc->sbuf);         /* and rbuf */
	cell_put(x, rc->tsgl);
	free(rc->rmsg);
	if (rc->id)
		rdma_destroy_id(rc->id);
	free(rc);
}

/* ---- setting a connection up ---- */

static struct rconn *rconn_new(struct rdma_xport *x, int inline_size)
{
	struct rconn *rc = calloc(1, sizeof(*rc));
	const struct evr_stream_opts *o = x->base.o;

	if (!rc)
		return NULL;
	rc->base.ops = &rdma_conn_ops;
	rc->base.fd = -1;
	rc->base.can_skip = 1;
	if (o->keepalive) {
		/* what rgetsockopt reads back on an rsocket */
		rc->base.ka_on = 1;
		rc->base.ka_idle = o->keepalive;
	}
	rc->x = x;
	rc->id_no = x->next_no++;
	rc->inline_req = inline_size < 0 ? DEFAULT_INLINE : inline_size;
	ev_init(&rc->close_w, close_cb);
	ev_init(&rc->ka_w, ka_cb);
	rc->next = x->conns;
	if (x->conns)
		x->conns->prev = rc;
	x->conns = rc;
	x->nconns++;
	return rc;
}

static void *page_alloc(size_t size)
{
	void *p;

	if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), size))
		return NULL;
	memset(p, 0, size);
	return p;
}

static uint8_t *cell_get(struct rdma_xport *x)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), i;
	uint8_t *c, **pages_;

	if (!x->cell_free) {
		c = page_alloc(pg);
		if (!c)
			return NULL;
		pages_ = realloc(x->cell_pages,
				 (x->ncell_pages + 1) * sizeof(*pages_));
		if (!pages_) {
			free(c);
			return NULL;
		}
		x->cell_pages = pages_;
		x->cell_pages[x->ncell_pages++] = c;
		for (i = 0; i + CELL_SIZE <= pg; i += CELL_SIZE) {
			memcpy(c + i, &x->cell_free, sizeof(x->cell_free));
			x->cell_free = c + i;
		}
	}
	c = x->cell_free;
	memcpy(&x->cell_free, c, sizeof(x->cell_free));
	memset(c, 0, CELL_SIZE);
	return c;
}

static void cell_put(struct rdma_xport *x, uint8_t *c)
{
	if (!c)
		return;
	memcpy(c, &x->cell_free, sizeof(x->cell_free));
	x->cell_free = c;
}

/* Pages, as the kernel pins them. */
static uint64_t pages(uint64_t bytes)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	return (bytes + pg - 1) / pg * pg;
}

/*
 * A connection's sizes among n of the engine (evr__rs_scale): its queue
 * depths, and its rings (twice -B, as rsockets and Linux double
 * SO_SNDBUF) unless -B fixed them.
 */
static void conn_sizes(const struct evr_stream_opts *o, unsigned n,
		       uint32_t *ring, uint32_t *sq, uint32_t *rq)
{
	uint64_t bs = o->buffer_size > 0 ? (uint64_t)o->buffer_size :
		      EVR_DEFAULT_BUFFER_SIZE;
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);

	*ring = bs * 2 < MIN_BUF ? MIN_BUF : (uint32_t)(bs * 2);
	if (o->buffer_size <= 0)
		*ring = (uint32_t)(evr__rs_scale(*ring, EVR_RS_RING_MIN, n) /
				   pg * pg);
	*sq = evr__rs_scale(RS_SQ_SIZE, EVR_RS_QP_MIN, n);
	*rq = evr__rs_scale(RS_RQ_SIZE, EVR_RS_QP_MIN, n);
}

/*
 * What create_ep() locks per connection: the rings, its cell (a share of
 * a page),
 * and the CQ and QP rings a hardware provider allocates in user memory
 * and pins (64-byte CQEs, send WQEs of 64 bytes plus the inline data,
 * 64-byte receive WQEs: about, not the provider's exact layout).  The
 * device may cap the queue depths lower; the figure stays the upper
 * bound.
 */
uint64_t evr_stream_memlock(const struct evr_stream_opts *o)
{
	uint64_t inl = o->inline_size > 0 ? (uint64_t)o->inline_size :
		       DEFAULT_INLINE;
	unsigned n = o->server || !o->conns ? 1 : o->conns;
	uint32_t buf, sq, rq0;
	uint64_t rq, one;

	conn_sizes(o, n, &buf, &sq, &rq0);
	rq = rq0 + RQ_EXTRA;
	/* the cell's page is charged to each registration on it */
	one = pages(2 * (uint64_t)buf) + pages(CELL_USED) +
	      pages((sq + rq) * 64) + pages(sq * (64 + inl) + rq * 64);
	return one * n;
}

/* The peer's private data, once per connection. */
static void save_peer(struct rconn *rc, const struct evr_rs_conn_data *cd)
{
	rc->peer = *cd;
	rc->swap_sge = !(cd->flags & EVR_RS_FLAG_NET) !=
		       !evr__rs_host_big_endian();
	evr__rs_tx_init(&rc->tx, rc->sq_size - EVR_RS_CTRL_SIZE,
			rc->sbuf_size, cd);
	evr__rs_rx_init(&rc->rx, rc->rbuf_size, (uint16_t)rc->rq_size,
			cd->target_sgl.length, rc->rmsg, rc->rq_post + 1);
}

/*
 * rs_create_ep's equivalent: a completion channel and one CQ for both
 * queues, an RC QP through librdmacm (so that it makes every state
 * transition), the three buffers, and every receive posted before the
 * peer can send.
 */
static int create_ep(struct rconn *rc, const char **what)
{
	const struct evr_stream_opts *o = rc->x->base.o;
	struct rdma_cm_id *id = rc->id;
	struct ibv_device_attr da;
	struct ibv_qp_init_attr qa;
	uint32_t maxwr = EVR_RS_QP_MAX;
	size_t soff;
	int ret;

	/* iWARP has no write with immediate: rsockets then speaks another
	 * dialect (RS_OPT_MSG_SEND), which we do not */
	*what = "iWARP device";
	if (id->verbs->device->transport_type == IBV_TRANSPORT_IWARP)
		return -EPROTONOSUPPORT;
	/* a client knows how many it opens; a server counts what it holds */
	conn_sizes(o, o->server || o->conns <= 1 ? rc->x->nconns :
		   (unsigned)o->conns, &rc->sbuf_size, &rc->sq_size,
		   &rc->rq_size);
	rc->rbuf_size = rc->sbuf_size;
	if (!ibv_query_device(id->verbs, &da) && da.max_qp_wr > 0)
		maxwr = (uint32_t)da.max_qp_wr;
	if (rc->sq_size > maxwr)
		rc->sq_size = maxwr;
	if (rc->rq_size + RQ_EXTRA > maxwr)
		rc->rq_size = maxwr - RQ_EXTRA;
	rc->rq_post = rc->rq_size + RQ_EXTRA;

	ret = cq_reserve(rc, rc->sq_size + rc->rq_post, what);
	if (ret)
		return ret;
	*what = "memory";
	ret = slot_get(rc);
	if (ret)
		return ret;

	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rc;
	qa.send_cq = rc->rcq->cq;
	qa.recv_cq = rc->rcq->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rc->sq_size;
	qa.cap.max_recv_wr = rc->rq_post;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = (uint32_t)rc->inline_req;
	*what = "rdma_create_qp";
	if (rdma_create_qp(id, NULL, &qa))
		return -errno ? -errno : -EINVAL;
	/* the provider may give more than asked */
	rc->max_inline = qa.cap.max_inline_data;

	*what = "memory";
	/* both rings in one run of pages (the receive ring on a cache
	 * line, whatever -B made the send ring) */
	soff = ((size_t)rc->sbuf_size + 63) & ~(size_t)63;
	rc->sbuf = page_alloc(soff + rc->rbuf_size);
	rc->tsgl = cell_get(rc->x);
	rc->rmsg = calloc(rc->rq_post + 1, sizeof(*rc->rmsg));
	if (!rc->sbuf || !rc->tsgl || !rc->rmsg)
		return -ENOMEM;
	rc->rbuf = rc->sbuf + soff;
	*what = "ibv_reg_mr";
	rc->smr = ibv_reg_mr(id->pd, rc->sbuf, rc->sbuf_size,
			     IBV_ACCESS_LOCAL_WRITE);
	rc->tmr = ibv_reg_mr(id->pd, rc->tsgl, CELL_USED,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rc->rmr = ibv_reg_mr(id->pd, rc->rbuf, rc->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rc->smr || !rc->tmr || !rc->rmr)
		return -errno ? -errno : -ENOMEM;
	*what = "ibv_post_recv";
	ret = post_recvs(rc, rc->rq_post);
	if (ret)
		return ret;
	return 0;
}

static void our_conn_data(struct rconn *rc, uint8_t *out)
{
	struct evr_rs_conn_data cd;

	evr__rs_conn_data_init(&cd, (uint16_t)rc->rq_size,
			       (uintptr_t)rc->tsgl, rc->tmr->rkey,
			       (uintptr_t)rc->rbuf, rc->rmr->rkey,
			       rc->rbuf_size);
	evr__rs_conn_data_encode(out, &cd);
}

static void established(struct rconn *rc)
{
	const struct evr_stream_opts *o = rc->x->base.o;

	set_state(rc, EVR_RC_OPEN);
	if (o->keepalive) {
		ev_timer_set(&rc->ka_w, o->keepalive, o->keepalive);
		ev_timer_start(rc->x->base.loop->ev, &rc->ka_w);
	}
	/* the first CQ processing after ESTABLISHED: our second half goes
	 * to the peer's entry 1 (and whatever came early is taken in) */
	process(rc);
}

/* Client: a connect attempt failed; the owner closes the connection. */
static void connect_failed(struct rconn *rc, int err)
{
	close_step(rc, EVR_RC_E_CONN_FAIL, err);
}

static int resolve_route(struct rconn *rc)
{
	if (rc->route_len) {
		/* -T r gave a path: set it, which resolves the route */
		if (!rdma_set_option(rc->id, RDMA_OPTION_IB,
				     RDMA_OPTION_IB_PATH, rc->route,
				     (socklen_t)rc->route_len))
			return 0;
	}
	return rdma_resolve_route(rc->id, RESOLVE_MS) ? -errno : 0;
}

static int do_connect(struct rconn *rc)
{
	uint8_t pd[EVR_RS_AFIB_HDR_LEN + EVR_RS_CONN_DATA_LEN];
	struct rdma_conn_param p;
	const char *what;
	size_t off = 0;
	int ret;

	ret = create_ep(rc, &what);
	if (ret) {
		trace_err(rc, what, ret);
		rc->base.setup_where = what;
		return ret;
	}
	memset(pd, 0, sizeof(pd));
	/* AF_IB: the kernel adds no CMA header, so rsockets leaves room for
	 * one (zeros here) and the listener skips it */
	if (rc->dst.ss_family == AF_IB)
		off = EVR_RS_AFIB_HDR_LEN;
	our_conn_data(rc, pd + off);
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = (uint8_t)(off + EVR_RS_CONN_DATA_LEN);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;   /* RNR: retry for ever, as upstream */
	if (rdma_connect(rc->id, &p))
		return -errno;
	set_state(rc, EVR_RC_CONNECTING);
	return 0;
}

/* ---- the CM event channel ---- */

static void on_request(struct rdma_xport *x, struct rdma_cm_event *e)
{
	size_t off = x->listen_afib ? EVR_RS_AFIB_HDR_LEN : 0;
	struct evr_rs_conn_data cd;
	struct rdma_conn_param p;
	uint8_t pd[EVR_RS_CONN_DATA_LEN];
	struct rconn *rc;
	const char *what = "private data";
	int ret;

	ret = e->param.conn.private_data_len < off ? -EMSGSIZE :
	      evr__rs_conn_data_decode((const uint8_t *)
				       e->param.conn.private_data + off,
				       e->param.conn.private_data_len - off,
				       &cd);
	if (ret || !x->lid) {
		/* not an rsocket of our version: refused, as upstream */
		rdma_reject(e->id, NULL, 0);
		rdma_destroy_id(e->id);
		return;
	}
	/* the inline size is invisible on the wire: the default */
	rc = rconn_new(x, -1);
	if (!rc) {
		rdma_reject(e->id, NULL, 0);
		rdma_destroy_id(e->id);
		return;
	}
	rc->id = e->id;
	rc->id->context = rc;
	evr__sockaddr_str(rdma_get_peer_addr(rc->id), rc->base.peer,
			  sizeof(rc->base.peer));
	ret = create_ep(rc, &what);
	if (ret)
		goto fail;
	save_peer(rc, &cd);
	our_conn_data(rc, pd);
	/* echo the REQ's parameters; replace only the private data */
	p = e->param.conn;
	p.private_data = pd;
	p.private_data_len = sizeof(pd);
	what = "rdma_accept";
	if (rdma_accept(rc->id, &p)) {
		ret = -errno;
		goto fail;
	}
	set_state(rc, EVR_RC_ACCEPTING);
	x->starved = 0;
	/* the peer may write before ESTABLISHED: take it in meanwhile */
	own_watch(rc);
	return;
fail:
	trace_err(rc, what, ret);
	rdma_reject(rc->id, NULL, 0);
	/* Out of fds (the completion channel) or memory: the request is
	 * gone (rejected), so nothing spins; say so once per episode. */
	if (!x->starved && x->base.cbs->refused) {
		x->starved = 1;
		x->base.cbs->refused(x->base.ud, ret,
				     rdma_get_peer_addr(rc->id));
	}
	close_step(rc, EVR_RC_E_ABORT, 0);
}

static void on_established(struct rconn *rc, struct rdma_cm_event *e)
{
	struct evr_rs_conn_data cd;
	int ret;

	if (rc->state == EVR_RC_ACCEPTING) {
		established(rc);
		pend_add(rc, PEND_ACCEPTED);
		return;
	}
	if (rc->state != EVR_RC_CONNECTING)
		return;
	ret = evr__rs_conn_data_decode(e->param.conn.private_data,
				       e->param.conn.private_data_len, &cd);
	if (ret) {
		/* upstream: ENOTSUP; the close sends the DREQ */
		connect_failed(rc, ret == -EPROTONOSUPPORT ? -ENOTSUP : ret);
		return;
	}
	save_peer(rc, &cd);
	established(rc);
	pend_add(rc, PEND_CONNECTED);
}

static void on_disconnected(struct rconn *rc)
{
	rc->facts |= EVR_RC_F_CM_DISC;
	/* ends a connect attempt with ECONNRESET */
	close_step(rc, EVR_RC_E_CM_DISC, -ECONNRESET);
}

static void cm_event(struct rdma_xport *x, struct rdma_cm_event *e)
{
	struct rconn *rc;
	int ret;

	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		on_request(x, e);
		return;
	}
	rc = e->id ? e->id->context : NULL;
	if (!rc || (void *)rc == (void *)x)
		return; /* the listener's own events */
	switch (e->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rc->state != EVR_RC_RESOLVE_ADDR)
			break;
		rc->retries = 0;
		set_state(rc, EVR_RC_RESOLVE_ROUTE);
		ret = resolve_route(rc);
		if (ret)
			connect_failed(rc, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rc->state != EVR_RC_RESOLVE_ROUTE)
			break;
		ret = do_connect(rc);
		if (ret)
			connect_failed(rc, ret);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
		if (rc->state != EVR_RC_RESOLVE_ADDR &&
		    rc->state != EVR_RC_RESOLVE_ROUTE)
			break;
		if (e->status == -ETIMEDOUT && rc->retries++ < RESOLVE_RETRIES) {
			ret = rc->state == EVR_RC_RESOLVE_ADDR ?
			      (rdma_resolve_addr(rc->id, NULL,
						 (struct sockaddr *)&rc->dst,
						 RESOLVE_MS) ? -errno : 0) :
			      resolve_route(rc);
			if (!ret)
				break;
		}
		connect_failed(rc, e->status < 0 ? e->status : -EHOSTUNREACH);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		on_established(rc, e);
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (rc->state == EVR_RC_CONNECTING)
			connect_failed(rc, -ECONNREFUSED);
		else if (rc->state == EVR_RC_ACCEPTING)
			close_step(rc, EVR_RC_E_ABORT, 0);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (rc->state == EVR_RC_CONNECTING)
			connect_failed(rc, e->status < 0 ? e->status :
					   -ETIMEDOUT);
		else if (rc->state == EVR_RC_ACCEPTING)
			close_step(rc, EVR_RC_E_ABORT, 0);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		on_disconnected(rc);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rc->state == EVR_RC_OPEN)
			set_err(rc, -ENODEV, "device removal");
		else if (evr__rc_setting_up(rc->state))
			connect_failed(rc, -ENODEV);
		break;
	default: /* TIMEWAIT_EXIT, ADDR_CHANGE, ... */
		break;
	}
}

/* Drain the CM channel; each event is copied and acked before it is
 * handled, so that destroying its id never waits for an ack. */
static void cm_drain(struct rdma_xport *x)
{
	struct rdma_cm_event *ev;

	while (x->ch && !rdma_get_cm_event(x->ch, &ev)) {
		struct rdma_cm_event e = *ev;
		uint8_t pd[PDATA_MAX];

		if ((e.event == RDMA_CM_EVENT_CONNECT_REQUEST ||
		     e.event == RDMA_CM_EVENT_ESTABLISHED) &&
		    e.param.conn.private_data) {
			size_t n = e.param.conn.private_data_len;

			if (n > sizeof(pd))
				n = sizeof(pd);
			memcpy(pd, e.param.conn.private_data, n);
			e.param.conn.private_data = pd;
			e.param.conn.private_data_len = (uint8_t)n;
		}
		rdma_ack_cm_event(ev);
		cm_event(x, &e);
	}
}

static void cm_cb(struct ev_loop *l, ev_io *w, int revents)
{
	cm_drain(evr__container_of(w, struct rdma_xport, cm_w));
}

/* ---- the engine side ---- */

/* AF_IB (-f gid) needs native InfiniBand addressing: an IB port.  RoCE
 * (rxe among them) and iWARP ports have none, and the kernel would only
 * say "No such device" once resolution fails. */
static int have_ib_port(void)
{
	struct ibv_device **l;
	int i, n = 0, found = 0;

	l = ibv_get_device_list(&n);
	for (i = 0; l && i < n && !found; i++) {
		struct ibv_context *ctx = ibv_open_device(l[i]);
		struct ibv_device_attr da;
		struct ibv_port_attr pa;
		uint8_t p;

		if (!ctx)
			continue;
		if (!ibv_query_device(ctx, &da))
			for (p = 1; p <= da.phys_port_cnt && !found; p++)
				found = !ibv_query_port(ctx, p, &pa) &&
					pa.link_layer ==
						IBV_LINK_LAYER_INFINIBAND;
		ibv_close_device(ctx);
	}
	if (l)
		ibv_free_device_list(l);
	return found;
}

static int check_family(int family, struct evr_failure *f)
{
	if (family != AF_IB || have_ib_port())
		return 0;
	f->err = -EVR_E_NOTSUP;
	f->detail = EVR_NOTSUP_AF_IB;
	f->where = NULL;
	return f->err;
}

static int x_listen(struct evr_xport *xp, struct evr_failure *f, int *ka_on,
		    int *ka_idle)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct evr_addr a;
	int one = 1, ret;

	ret = evr__resolve(xp->o, xp->o->bind_addr, xp->o->port, 1, &a, f);
	if (ret)
		return ret;
	if (check_family(a.family, f))
		return f->err;
	if (rdma_create_id(x->ch, &x->lid, x, RDMA_PS_TCP)) {
		f->where = "rdma_create_id";
		goto fail;
	}
	/* SO_REUSEADDR, as rstream sets it on its listener */
	if (rdma_set_option(x->lid, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR,
			    &one, sizeof(one))) {
		f->where = "rdma_set_option REUSEADDR";
		goto fail;
	}
	if (rdma_bind_addr(x->lid, (struct sockaddr *)&a.ss)) {
		evr__bind_failed(f, errno ? -errno : -EINVAL, &a, NULL);
		if (a.family == AF_IB)
			f->where = "rdma_bind_addr (AF_IB)";
		goto fail;
	}
	x->listen_afib = a.family == AF_IB;
	/* upstream listens with a backlog of 1; we serve many */
	if (rdma_listen(x->lid, LISTEN_BACKLOG)) {
		f->where = "listen";
		goto fail;
	}
	if (xp->o->keepalive) {
		*ka_on = 1;
		*ka_idle = xp->o->keepalive;
	}
	return 0;
fail:
	f->err = errno ? -errno : -EINVAL;
	if (x->lid) {
		rdma_destroy_id(x->lid);
		x->lid = NULL;
	}
	return f->err;
}

static void x_stop_listen(struct evr_xport *xp)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);

	if (x->lid) {
		rdma_destroy_id(x->lid);
		x->lid = NULL;
	}
}

static int x_open(struct evr_xport *xp, const struct evr_addr *dst,
		  int inline_size, struct evr_conn **out,
		  struct evr_failure *f)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct rconn *rc;

	if (check_family(dst->family, f))
		return f->err;
	rc = rconn_new(x, inline_size);
	if (!rc) {
		f->err = -ENOMEM;
		f->where = "malloc";
		return f->err;
	}
	if (rdma_create_id(x->ch, &rc->id, rc, RDMA_PS_TCP)) {
		f->err = -errno;
		f->where = "rdma_create_id";
		close_step(rc, EVR_RC_E_ABORT, 0);
		return f->err;
	}
	rc->facts |= EVR_RC_F_OWNED;
	*out = &rc->base;
	return 0;
}

static int x_connect(struct evr_xport *xp, struct evr_conn *c,
		     const struct evr_addr *dst, const struct evr_addr *src,
		     struct evr_failure *f, int *err)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);

	memcpy(&rc->dst, &dst->ss, sizeof(rc->dst));
	if (dst->route_len && dst->route_len <= sizeof(rc->route)) {
		memcpy(rc->route, dst->route, dst->route_len);
		rc->route_len = dst->route_len;
	}
	evr__sockaddr_str((const struct sockaddr *)&dst->ss, c->peer,
			  sizeof(c->peer));
	if (src && src->valid &&
	    rdma_bind_addr(rc->id, (struct sockaddr *)&src->ss)) {
		evr__bind_failed(f, -errno, src, dst);
		return f->err;
	}
	set_state(rc, EVR_RC_RESOLVE_ADDR);
	if (rdma_resolve_addr(rc->id, NULL, (struct sockaddr *)&rc->dst,
			      RESOLVE_MS)) {
		*err = -errno;
		return EVR_XP_FAILED_NOW;
	}
	return EVR_XP_CONNECTING;
}

static unsigned x_lingering(struct evr_xport *xp)
{
	return evr__container_of(xp, struct rdma_xport, base)->nlinger;
}

static void x_free(struct evr_xport *xp)
{
	struct rdma_xport *x = evr__container_of(xp, struct rdma_xport, base);
	struct ev_loop *l = xp->loop->ev;

	while (x->conns)
		close_step(x->conns, EVR_RC_E_ABORT, 0);
	/* the last connection's teardown freed its CQ and channel */
	while (x->devs) {
		if (x->devs->cqs)
			cq_free(x->devs->cqs); /* the last frees the device */
		else
			dev_free(x->devs);
	}
	free(x->slots);
	while (x->ncell_pages)
		free(x->cell_pages[--x->ncell_pages]);
	free(x->cell_pages);
	x_stop_listen(xp);
	ev_timer_stop(l, &x->defer_w);
	if (x->ch) {
		ev_io_stop(l, &x->cm_w);
		rdma_destroy_event_channel(x->ch);
	}
	free(x);
}

static const struct evr_xport_ops rdma_xport_ops = {
	.listen = x_listen,
	.stop_listen = x_stop_listen,
	.open = x_open,
	.connect = x_connect,
	.lingering = x_lingering,
	.free = x_free,
};

int evr__rdma_xport_new(struct evr_xport **out, const struct evr_xport *base,
			struct evr_failure *f)
{
	struct rdma_xport *x = calloc(1, sizeof(*x));
	int ret;

	if (!x) {
		f->err = -ENOMEM;
		f->where = "malloc";
		return f->err;
	}
	x->base = *base;
	x->base.ops = &rdma_xport_ops;
	ret = evr__cm_channel_open(&x->ch);
	if (ret) {
		f->err = ret == -ENODEV ? -EVR_E_NODEV : ret;
		f->where = "rdma_create_event_channel";
		free(x);
		return f->err;
	}
	ev_io_init(&x->cm_w, cm_cb, x->ch->fd, EV_READ);
	ev_io_start(base->loop->ev, &x->cm_w);
	ev_init(&x->defer_w, defer_cb);
	*out = &x->base;
	return 0;
}
