/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport (rdma_int.h): one connection's life once it is set
 * up.  What its completions say (the rsocket messages), control
 * messages (credits, keepalive, our DISCONNECT), the data path (r_send,
 * r_recv: RDMA writes with immediate, the cork), the close (close_step(),
 * executing rclose.c's decisions, and teardown), the settings, and the
 * connection ops.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "../../loop/device.h"
#include "rdma_int.h"

#define CLOSE_WAIT_MS 2000        /* our DISCONNECT's completion */
#define DISC_WAIT_MS 1000         /* CM DISCONNECTED after rdma_disconnect */
#define PEER_DISC_GRACE_MS 1000   /* the peer's DREQ after its DISCONNECT */

static void flush_cork(struct rconn *rc);

/* ---- a connection's state, traced ---- */

void evr__rdma_set_state(struct rconn *rc, enum evr_rc_state st)
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

/* ---- completions: what the peer's messages say ---- */

int evr__rdma_post_recvs(struct rconn *rc, unsigned n)
{
	struct ibv_recv_wr wr[CQ_BATCH], *bad;
	struct ibv_sge sg[CQ_BATCH];
	unsigned i, k;

	while (n) {
		k = n < CQ_BATCH ? n : CQ_BATCH;
		memset(wr, 0, sizeof(wr[0]) * k);
		for (i = 0; i < k; i++) {
			/* no SGE: every message is an RDMA write with
			 * immediate, whose bytes land in our ring */
			wr[i].wr_id = WR_RECV | evr__rdma_wr_id(rc, 0, 0);
			wr[i].next = i + 1 < k ? &wr[i + 1] : NULL;
			if (!rc->msg_send)
				continue;
			/* iWARP: the message itself, in its slot.  The
			 * receives complete in the order posted and at
			 * most rq_post are posted, so a slot comes round
			 * again only once its message has been read. */
			sg[i].addr = (uintptr_t)(rc->mbuf + EVR_RS_MSG_LEN *
						 rc->recv_next);
			sg[i].length = EVR_RS_MSG_LEN;
			sg[i].lkey = rc->smr->lkey;
			wr[i].sg_list = &sg[i];
			wr[i].num_sge = 1;
			wr[i].wr_id |= rc->recv_next;
			rc->recv_next = (rc->recv_next + 1) % rc->rq_post;
		}
		if (ibv_post_recv(rc->id->qp, wr, &bad))
			return -EIO;
		n -= k;
	}
	return 0;
}

/* A work request failed: the connection is broken (-EIO, as rsockets
 * say it), and whose side failed is kept for the failure's detail: the
 * peer's or its path's when our requests went unacknowledged (retries
 * ran out), found no receive, or were refused by the peer; and when a
 * send of a live connection was flushed: its QP was put in error under
 * it, not by our close (seen when the peer's RNIC went away just after
 * the connection was made: "negotiation: recv: Input/output error",
 * with "Work Request Flushed Error" in the trace).  Our own device's
 * and port's failures have their own codes (EVR_E_DEVGONE,
 * EVR_E_PORTDOWN). */
static void wc_failed(struct rconn *rc, const struct ibv_wc *wc)
{
	int peer;

	if (rc->err)
		return;
	switch (wc->status) {
	case IBV_WC_WR_FLUSH_ERR:
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_REM_INV_REQ_ERR:
	case IBV_WC_REM_ACCESS_ERR:
	case IBV_WC_REM_OP_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_REM_INV_RD_REQ_ERR:
		peer = 1;
		break;
	default:
		peer = 0;
		break;
	}
	rc->base.eio_detail = peer ? EVR_EIO_PEER : 0;
	evr__rdma_set_err(rc, -EIO, ibv_wc_status_str(wc->status));
}

/* The peer's private data, once per connection: the data path's
 * rings start from it. */
void evr__rdma_take_peer(struct rconn *rc, const struct evr_rs_conn_data *cd)
{
	rc->peer = *cd;
	rc->swap_sge = !(cd->flags & EVR_RS_FLAG_NET) !=
		       !evr__rs_host_big_endian();
	evr__rs_tx_init(&rc->tx, rc->sq_size - EVR_RS_CTRL_SIZE,
			rc->sbuf_size, cd);
	if (rc->msg_send)
		evr__rs_tx_msg_send(&rc->tx);
	evr__rs_rx_init(&rc->rx, rc->rbuf_size, (uint16_t)rc->rq_size,
			cd->target_sgl.length, rc->rmsg, rc->rq_post + 1);
}

/* The message of a receive: in its immediate, or (iWARP) in its slot
 * of mbuf.  0, or -EPROTO (the connection's error set). */
static int recv_msg(struct rconn *rc, const struct ibv_wc *wc, uint32_t *msg)
{
	uint32_t slot = WR_LEN(wc->wr_id);

	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		*msg = evr__rs_imm_decode(wc->imm_data);
		return 0;
	}
	if (!rc->msg_send || slot >= rc->rq_post)
		return 1; /* a plain send: not rsocket's, ignored */
	if (!evr__rs_msg_recv(rc->mbuf + EVR_RS_MSG_LEN * slot, wc->byte_len,
			      rc->swap_sge, msg))
		return 0;
	evr__rdma_set_err(rc, -EPROTO, "peer's message is not 4 bytes");
	return -EPROTO;
}

/* An SGL message: its credit limit, and our target SGL's next entry
 * when the peer wrote one before it.  That write is complete once its
 * message is: trust the entry only now, and keep our own copy. */
static void recv_sgl(struct rconn *rc, const struct ibv_wc *wc,
		     uint32_t data)
{
	uint8_t *e = rc->tsgl + EVR_RS_SGE_LEN * rc->tx.target_next;
	struct evr_rs_sge sge;
	int ret;

	if (!rc->msg_send) {
		/* the write with immediate carried 16 bytes, or none */
		ret = wc->byte_len >= EVR_RS_SGE_LEN;
		evr__rs_sge_decode(e, &sge);
		if (ret && sge.length > EVR_RS_RBUF_HALF_MAX)
			ret = -EPROTO;
	} else {
		/* a send of 4 bytes either way: the entry says */
		ret = evr__rs_sgl_take(e, &sge);
	}
	if (ret < 0) {
		evr__rdma_set_err(rc, -EPROTO, "peer's ring half is larger "
				  "than any ring");
		return;
	}
	if (ret && evr__tracing(rc->x->base.loop))
		evr__trace(rc->x->base.loop, "rdma %u: <- sge %016" PRIx64
			   " %08x %08x", rc->id_no, sge.addr, sge.key,
			   sge.length);
	evr__rs_tx_sgl(&rc->tx, data, ret ? &sge : NULL);
}

/* One receive completion; returns 1 when its receive is to be re-posted. */
static int recv_one(struct rconn *rc, const struct ibv_wc *wc)
{
	uint32_t msg, data;
	int ret;

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status != IBV_WC_WR_FLUSH_ERR && evr__rdma_live(rc))
			wc_failed(rc, wc);
		return 0;
	}
	ret = recv_msg(rc, wc, &msg);
	if (ret)
		return ret > 0;
	/* --trace: each message (tests/fuzz/trace2seed.sh makes seeds of
	 * them) */
	if (evr__tracing(rc->x->base.loop))
		evr__trace(rc->x->base.loop, "rdma %u: <- msg %08x",
			   rc->id_no, msg);
	data = evr__rs_msg_data(msg);
	switch (evr__rs_msg_op(msg)) {
	case EVR_RS_OP_SGL:
		recv_sgl(rc, wc, data);
		break;
	case EVR_RS_OP_CTRL:
		/* facts only: the close decides at its next step */
		if (data == EVR_RS_CTRL_DISCONNECT) {
			evr__rdma_facts(rc, EVR_RC_F_PEER_DISC, 0);
			evr__rdma_wake(rc);
		} else if (data == EVR_RS_CTRL_SHUTDOWN) {
			evr__rdma_facts(rc, EVR_RC_F_PEER_SHUT, 0);
			if (evr__rdma_shut(rc))
				evr__rdma_facts(rc, EVR_RC_F_PEER_DISC, 0);
			evr__rdma_wake(rc);
		}
		break;
	case EVR_RS_OP_IOMAP_SGL:
	case EVR_RS_OP_WRITE:
		break; /* we advertise no iomap; nothing to do */
	default: /* DATA, and the reserved ops upstream files as data */
		if (evr__rdma_has(rc, EVR_RC_F_PEER_DISC))
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
			evr__rdma_set_err(rc, -EPROTO, "peer wrote past the "
					  "ring space we offered");
			break;
		default:
			evr__rdma_set_err(rc, -EPROTO,
					  "peer exceeded its credits");
			break;
		}
		break;
	}
	return 1;
}

/* One receive completion: its receive counted for re-posting
 * (evr__rdma_repost()) when it is to be. */
void evr__rdma_recv_wc(struct rconn *rc, const struct ibv_wc *wc)
{
	rc->repost += (unsigned)recv_one(rc, wc);
}

void evr__rdma_send_wc(struct rconn *rc, const struct ibv_wc *wc)
{
	unsigned kind = WR_KIND(wc->wr_id);

	switch (kind) {
	case WK_DATA:
		evr__rs_tx_data_done(&rc->tx, WR_LEN(wc->wr_id));
		break;
	case WK_DISC:
		evr__rs_tx_ctrl_done(&rc->tx);
		/* whatever its status; only moves rc->disc */
		evr__rdma_close_step(rc, EVR_RC_E_DISC_DONE, 0);
		return;
	case WK_PART:
		break; /* failed: its message's send gives back what it took */
	case WK_SGL:
		/* an SGE update of the iWARP dialect took two slots */
		if (WR_LEN(wc->wr_id) > 1)
			evr__rs_tx_ctrl_done(&rc->tx);
		evr__rs_tx_ctrl_done(&rc->tx);
		break;
	default:
		evr__rs_tx_ctrl_done(&rc->tx);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && evr__rdma_live(rc) &&
	    !evr__rdma_shut(rc))
		wc_failed(rc, wc);
}

/* Receives go back at once, whether or not the data was read: credits,
 * not receives, bound what the peer may send. */
void evr__rdma_repost(struct rconn *rc)
{
	unsigned n = rc->repost;

	if (n < REPOST_BATCH)
		return;
	rc->repost = 0;
	if (!evr__rdma_has(rc, EVR_RC_F_PEER_DISC) &&
	    !evr__rc_disconnected(rc->state) && rc->id->qp &&
	    evr__rdma_post_recvs(rc, n))
		evr__rdma_set_err(rc, -EIO, "ibv_post_recv");
}

/* ---- messages ---- */

/*
 * One rsocket message as work requests.  In the write-with-immediate
 * dialect (InfiniBand, RoCE) it is one RDMA write with immediate: the
 * message in the immediate, its bytes (if any) to raddr/rkey.  In the
 * iWARP dialect (rc->msg_send) it is a plain RDMA write of its bytes
 * (none: no write), unsignaled, then an inline send of the message in
 * our byte order, which completes for both.  msg_init() makes the
 * write; the caller gives it its bytes (sg_list, num_sge, inline) and
 * its flags; msg_wrs() returns the first work request to post.
 */
struct rmsg {
	struct ibv_send_wr w, s;
	struct ibv_sge ssg;
	uint32_t msg;
};

static void msg_init(struct rmsg *m, uint64_t id, uint32_t msg,
		     uint64_t raddr, uint32_t rkey)
{
	memset(&m->w, 0, sizeof(m->w));
	m->w.wr_id = id;
	m->w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	m->w.imm_data = evr__rs_imm_encode(msg);
	m->w.wr.rdma.remote_addr = raddr;
	m->w.wr.rdma.rkey = rkey;
	m->msg = msg;
}

static struct ibv_send_wr *msg_wrs(struct rconn *rc, struct rmsg *m)
{
	if (!rc->msg_send)
		return &m->w;
	memset(&m->s, 0, sizeof(m->s));
	m->s.wr_id = m->w.wr_id;
	m->s.opcode = IBV_WR_SEND;
	m->s.send_flags = IBV_SEND_INLINE |
			  (m->w.send_flags & IBV_SEND_SIGNALED);
	m->ssg.addr = (uintptr_t)&m->msg;
	m->ssg.length = EVR_RS_MSG_LEN;
	m->s.sg_list = &m->ssg;
	m->s.num_sge = 1;
	if (!m->w.num_sge)
		return &m->s;
	m->w.opcode = IBV_WR_RDMA_WRITE;
	m->w.imm_data = 0;
	m->w.wr_id = evr__rdma_wr_id(rc, WK_PART, 0);
	m->w.send_flags &= ~(unsigned)IBV_SEND_SIGNALED;
	m->w.next = &m->s;
	return &m->w;
}

/* ---- control messages ---- */

/* Post a control message (or the keepalive's write) that takes slots
 * control slots. */
static int post_ctrl(struct rconn *rc, struct ibv_send_wr *first,
		     unsigned slots)
{
	struct ibv_send_wr *bad, *last = first;
	unsigned i;

	while (last->next)
		last = last->next;
	last->send_flags |= IBV_SEND_SIGNALED;
	for (i = 0; i < slots; i++)
		evr__rs_tx_ctrl_post(&rc->tx);
	if (ibv_post_send(rc->id->qp, first, &bad)) {
		for (i = 0; i < slots; i++)
			evr__rs_tx_ctrl_done(&rc->tx);
		evr__rdma_set_err(rc, -EIO, "ibv_post_send");
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
 * writes later, 0 of 600 with the gate.  The iWARP dialect sends an
 * update only with two slots free, as rsockets do (rs_2ctrl_avail). */
static void update_credits_(struct rconn *rc)
{
	unsigned need = rc->msg_send ? 2 : 1;

	while (rc->state == EVR_RC_OPEN && evr__rdma_live(rc) &&
	       !evr__rdma_shut(rc) && evr__rs_tx_ctrl_room(&rc->tx, need)) {
		enum evr_rs_update k = evr__rs_rx_update_gated(&rc->rx);
		struct rmsg m;
		struct ibv_sge sg;
		struct evr_rs_sge sge;
		unsigned entry = 0, slots = 1;
		uint32_t limit;
		uint8_t *slot;

		if (k == EVR_RS_UPD_NONE)
			return;
		limit = evr__rs_rx_update(&rc->rx, k, (uintptr_t)rc->rbuf,
					  rc->rmr->rkey, &sge, &entry);
		if (k == EVR_RS_UPD_SGE && rc->msg_send)
			slots = 2; /* the write and the send */
		/* a credits-only write carries no bytes, but still gets a
		 * valid target: the peer's SGL */
		msg_init(&m, evr__rdma_wr_id(rc, WK_SGL, slots),
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
			m.w.sg_list = &sg;
			m.w.num_sge = 1;
			m.w.wr.rdma.remote_addr += EVR_RS_SGE_LEN * entry;
			if (rc->max_inline >= EVR_RS_SGE_LEN)
				m.w.send_flags = IBV_SEND_INLINE;
		}
		if (post_ctrl(rc, msg_wrs(rc, &m), slots))
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
	struct rmsg m;

	if (rc->disc != EVR_RC_DISC_WANTED || !evr__rs_tx_ctrl_avail(&rc->tx))
		return;
	/* the cork's bytes first: they are the peer's before our end */
	if (rc->tx.cork_len && evr__rdma_may_write(rc))
		return;
	msg_init(&m, evr__rdma_wr_id(rc, WK_DISC, 0),
		 evr__rs_msg(EVR_RS_OP_CTRL, EVR_RS_CTRL_DISCONNECT),
		 rc->peer.target_sgl.addr, rc->peer.target_sgl.key);
	/* the steps only move rc->disc */
	evr__rdma_close_step(rc, EVR_RC_E_DISC_POSTED, 0);
	if (post_ctrl(rc, msg_wrs(rc, &m), 1))
		/* nothing will complete */
		evr__rdma_close_step(rc, EVR_RC_E_DISC_DONE, 0);
}

/* Keepalive (-k): a 0-byte RDMA WRITE without immediate, which the peer's
 * HCA acknowledges without a completion; a dead peer fails it.  The same
 * in both dialects, as rsockets send it. */
void evr__rdma_ka_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct rconn *rc = evr__container_of(w, struct rconn, ka_w);
	struct ibv_send_wr wr;

	if (rc->state != EVR_RC_OPEN || !evr__rdma_live(rc) ||
	    evr__rdma_shut(rc) || !evr__rs_tx_ctrl_avail(&rc->tx))
		return;
	if (evr__tracing(rc->x->base.loop))
		evr__trace(rc->x->base.loop, "rdma %u: keepalive", rc->id_no);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = evr__rdma_wr_id(rc, WK_KEEPALIVE, 0);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = rc->peer.target_sgl.addr;
	wr.wr.rdma.rkey = rc->peer.target_sgl.key;
	post_ctrl(rc, &wr, 1);
}

/* upstream's rs_process_cq: events, credits, completions, credits */
void evr__rdma_process(struct rconn *rc)
{
	if (!rc->rcq)
		return;
	if (evr__rdma_has(rc, EVR_RC_F_OWNED))
		/* its owner is here, not asleep */
		evr__rdma_set_waiting(rc, 0);
	update_credits(rc);
	evr__rdma_poll_cq(rc);
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
	if (!evr__rdma_waits_on_fd(rc))
		return 0;
	/* The owner polls: arm only before it sleeps.  The call polled the
	 * CQ a moment ago (evr__rdma_process()); the owner's next try polls
	 * it again, so a second poll here would only make each try longer. */
	if (rc->base.polling)
		return 0;
	if (evr__rdma_arm(rc) < 0) {
		evr__rdma_set_err(rc, -EIO, "ibv_req_notify_cq");
		return 1;
	}
	return evr__rdma_poll_cq(rc) > 0;
}

/* -T b: sleep on the completion channel (and the CM channel, for a
 * disconnect) until something happens or the deadline passes. */

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
		evr__rdma_dev_events(rc->rcq->dev, rc);
	if (p[1].revents)
		rc->x->up.cm_drain(rc->x);
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
	if (evr__rdma_io_mode(rc) != EVR_IO_BLOCK)
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
	struct ibv_send_wr *bad;
	struct ibv_sge sg[2];
	struct rmsg m;

	msg_init(&m, evr__rdma_wr_id(rc, WK_DATA, xfer),
		 evr__rs_msg(EVR_RS_OP_DATA, xfer), raddr, rkey);
	m.w.send_flags = IBV_SEND_SIGNALED;
	m.w.sg_list = sg;
	m.w.num_sge = 1;
	if (xfer <= rc->max_inline)
		m.w.send_flags |= IBV_SEND_INLINE;
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
			m.w.num_sge = 2;
		}
	}
	if (ibv_post_send(rc->id->qp, msg_wrs(rc, &m), &bad)) {
		evr__rdma_set_err(rc, -EIO, "ibv_post_send");
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

	while (rc->tx.cork_len && evr__rdma_may_write(rc) &&
	       (xfer = evr__rs_tx_cork_chunk(&rc->tx))) {
		evr__rs_tx_cork_commit(&rc->tx, xfer, &raddr, &rkey, &off,
				       &len1);
		if (post_write(rc, xfer, raddr, rkey, NULL, off, len1))
			return;
		rc->n_corked++;
		rc->b_corked += xfer;
	}
}

/* The sticky error as the owner hears it: a work request that failed
 * (-EIO) because its port went down is the port's failure.  rxe fails
 * them as soon as the link goes, before the loop has read the port's
 * event: the registry is asked now (it may tell this connection, and
 * others, from inside this call). */
static int owner_err(struct rconn *rc)
{
	if (rc->err == -EIO && rc->rcq && rc->id &&
	    evr__dev_refresh(&rc->rcq->dev->user, rc->id->port_num) !=
	    EVR__PORT_ACTIVE)
		evr__rdma_err_reason(rc, -EVR_E_PORTDOWN);
	return rc->err;
}

/* The connection ended under the owner (the peer's DISCONNECT or the
 * CM's, or our shutdown): -ECONNRESET, unless the CM's disconnect came
 * because our own port went down.  siw moves its QPs to error as its
 * link goes, and the connection manager's reset (over TCP) reaches us
 * before the port's event; the registry is asked now, as for a failed
 * work request. */
static int reset_err(struct rconn *rc)
{
	if (!rc->err && evr__rdma_has(rc, EVR_RC_F_CM_DISC) && rc->rcq &&
	    rc->id && evr__dev_refresh(&rc->rcq->dev->user,
				       rc->id->port_num) != EVR__PORT_ACTIVE)
		evr__rdma_set_err(rc, -EVR_E_PORTDOWN, "port down");
	return rc->err ? rc->err : -ECONNRESET;
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
			return owner_err(rc);
		if (evr__rdma_shut(rc) ||
		    evr__rdma_has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_CM_DISC))
			return reset_err(rc);
		if (rc->state != EVR_RC_OPEN)
			return -EAGAIN;
		rc->tx.more = more;
		/* A send that may go now goes without a look at the CQ, as
		 * upstream's rsend does: a ping-pong's reply leaves at once.
		 * One that must wait or gather looks first: completions
		 * give back credits and ring space. */
		if (evr__rs_tx_cork_due(&rc->tx, len)) {
			rc->n_send_polls++;
			evr__rdma_process(rc);
		}
		if (rc->err)
			return owner_err(rc);
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
			return sent ? (ssize_t)sent : owner_err(rc);
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
			return owner_err(rc);
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
			evr__rdma_process(rc);
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
		/* queued data first, then the end or the error; the CM's
		 * disconnect alone may be our port's going down.  Data that
		 * came before the end may still be in the CQ: the end can
		 * be seen first (the CM's DISCONNECTED, on its own channel;
		 * a peer that closes right after its last message, as
		 * upstream's over iWARP, whose data is a write and a send
		 * each), and the connection is no longer open, whose state
		 * alone polled above.  The CQ is polled until it holds no
		 * more of ours. */
		if (evr__rdma_has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_PEER_SHUT |
				      EVR_RC_F_CM_DISC) &&
		    evr__rdma_poll_cq(rc) > 0)
			continue;
		if (evr__rdma_has(rc, EVR_RC_F_PEER_DISC | EVR_RC_F_PEER_SHUT))
			return 0;
		if (evr__rdma_has(rc, EVR_RC_F_CM_DISC))
			return reset_err(rc) == -EVR_E_PORTDOWN ?
			       -EVR_E_PORTDOWN : 0;
		if (rc->err)
			return owner_err(rc);
		if (rc->state != EVR_RC_OPEN)
			return evr__rdma_shut(rc) ? 0 : -EAGAIN;
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
	evr__rdma_close_step(rc, EVR_RC_E_SHUT, 0);
}

/* ---- closing ---- */

/* A pass over a connection the transport holds (accepting, or closing):
 * its completions, then the close's next step. */
void evr__rdma_closing_polled(struct rconn *rc)
{
	evr__rdma_process(rc);
	if (evr__rc_closing(rc->state))
		/* may destroy rc */
		evr__rdma_close_step(rc, EVR_RC_E_POLLED, 0);
}

/* The transport looks after rc itself from now on: its CQ armed, and a
 * pass for what came before. */
void evr__rdma_own_watch(struct rconn *rc)
{
	if (!rc->rcq)
		return;
	evr__rdma_arm(rc);
	evr__rdma_pend_add(rc, PEND_POLLED);
}

static void close_timer(struct rconn *rc, unsigned ms)
{
	struct ev_loop *l = rc->x->base.loop->ev;

	ev_timer_stop(l, &rc->close_w);
	ev_timer_set(&rc->close_w, ms / 1000.0, 0.);
	ev_timer_start(l, &rc->close_w);
}

void evr__rdma_close_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	evr__rdma_close_step(evr__container_of(w, struct rconn, close_w),
		   EVR_RC_E_TIMER, 0);
}

static void teardown(struct rconn *rc, int dreq);

/* The QP to error: every work request outstanding comes back flushed
 * (and is taken here), rather than lost with a reset or a destroy. */
static void flush(struct rconn *rc)
{
	struct ibv_qp_attr a;

	if (!rc->id || !rc->id->qp)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	if (!ibv_modify_qp(rc->id->qp, &a, IBV_QP_STATE))
		evr__rdma_poll_cq(rc);
}

/*
 * The one close path: events record their facts and call this, which
 * asks the machine (rclose.c) where the connection goes, traces the move
 * and carries the actions out.  The only place that moves a connection
 * out of OPEN (or the setup) towards CLOSED, and the only caller of
 * teardown.  err: why a connect failed (E_CONN_FAIL, E_CM_DISC).
 * Returns nothing: rc may be gone.
 */
void evr__rdma_close_step(struct rconn *rc, enum evr_rc_event ev, int err)
{
	struct ev_loop *l = rc->x->base.loop->ev;
	struct evr_rc_next n;

	n = evr__rc_close_next(rc->state, rc->disc, ev,
			       rc->facts | (rc->err ? EVR_RC_F_ERR : 0) |
			       (rc->tx.cork_len ? EVR_RC_F_UNSENT : 0));
	if (n.acts & EVR_RC_A_TIMEOUT)
		evr__rdma_trace_err(rc, "close", ETIMEDOUT);
	if (n.acts & EVR_RC_A_CONN_FAILED)
		evr__rdma_trace_err(rc, "connect", err);
	evr__rdma_set_state(rc, n.state);
	set_disc(rc, n.disc);
	/* Each action below may step again (a completion of our DISCONNECT
	 * while the CQ is processed), which only ever moves rc->disc. */
	if (n.acts & EVR_RC_A_PROCESS)
		evr__rdma_process(rc);
	if (n.acts & EVR_RC_A_FLUSH)
		flush(rc);
	if (n.acts & EVR_RC_A_DISCONNECT) {
		/* QP to error and DREQ (or DREP) */
		ev_timer_stop(l, &rc->ka_w);
		rdma_disconnect(rc->id);
		evr__rdma_poll_cq(rc); /* the flushed work requests */
	}
	if (n.acts & EVR_RC_A_TIMER_CLOSE)
		close_timer(rc, CLOSE_WAIT_MS);
	if (n.acts & EVR_RC_A_TIMER_GRACE)
		close_timer(rc, PEER_DISC_GRACE_MS);
	if (n.acts & EVR_RC_A_TIMER_DISC)
		close_timer(rc, DISC_WAIT_MS);
	if (n.acts & EVR_RC_A_WATCH)
		evr__rdma_own_watch(rc);
	if (n.acts & EVR_RC_A_WAKE)
		evr__rdma_wake(rc);
	if (n.acts & EVR_RC_A_NOTIFY) {
		rc->conn_err = err ? err : -ECONNABORTED;
		evr__rdma_pend_add(rc, PEND_CONNECTED);
	}
	if (n.acts & EVR_RC_A_TEARDOWN)
		teardown(rc, !!(n.acts & EVR_RC_A_DREQ));
}

static void r_close(struct evr_conn *c)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);

	c->wake = NULL;
	rc->tx.more = 0;
	evr__rdma_facts(rc, EVR_RC_F_LINGER, EVR_RC_F_OWNED);
	evr__rdma_pend_remove(rc);
	rc->x->nlinger++;
	/* as rclose(): rshutdown first, while still open */
	evr__rdma_close_step(rc, EVR_RC_E_SHUT, 0);
	evr__rdma_close_step(rc, EVR_RC_E_CLOSE, 0);
}

void evr__rdma_settings_rows(struct evr_conn_settings *s,
			     const struct evr__rdma_settings *v)
{
	evr__setting_add(s, "sbuf_bytes", "sbuf", 0, v->sbuf_bytes);
	evr__setting_add(s, "rbuf_bytes", "rbuf", 0, v->rbuf_bytes);
	evr__setting_add(s, "inline_bytes", "inline", 0, v->inline_bytes);
	evr__setting_add(s, "sq_depth", "sq", 0, v->sq_depth);
	evr__setting_add(s, "rq_depth", "rq", 0, v->rq_depth);
	evr__setting_add(s, "credits_granted", "credits", 0,
			 v->credits_granted);
	evr__setting_add(s, "credits_peer", "peer_credits", 0,
			 v->credits_peer);
	/* the record has the SGL before the ring, the line after it */
	evr__setting_add(s, "peer_target_sgl_entries", NULL, 0,
			 v->peer_target_sgl);
	evr__setting_add(s, "peer_rbuf_bytes", "peer_rbuf", 0,
			 v->peer_rbuf_bytes);
	evr__setting_add(s, NULL, "peer_sgl", 0, v->peer_target_sgl);
}

/* The endpoint as create_ep sized it and the peer's private data told
 * us; only meaningful once connected or accepted. */
static int r_settings(struct evr_conn *c, struct evr_conn_settings *o)
{
	struct rconn *rc = evr__container_of(c, struct rconn, base);
	const struct evr_stream_opts *so = rc->x->base.o;
	struct evr__rdma_settings v;

	memset(o, 0, sizeof(*o));
	o->transport = EVR_TRANSPORT_RDMA;
	if (!rc->id || !evr__rc_established(rc->state))
		return -ENOTCONN;
	evr__sockaddr_str(rdma_get_local_addr(rc->id), o->local,
			  sizeof(o->local));
	evr__sockaddr_str(rdma_get_peer_addr(rc->id), o->peer,
			  sizeof(o->peer));
	o->keepalive_on = so->keepalive > 0;
	o->keepalive_idle_s = so->keepalive;
	v = (struct evr__rdma_settings){
		.sbuf_bytes = rc->sbuf_size,
		.rbuf_bytes = rc->rbuf_size,
		.inline_bytes = rc->max_inline,
		.sq_depth = rc->sq_size,
		.rq_depth = rc->rq_post,
		.credits_granted = rc->rq_size,
		.credits_peer = rc->peer.credits,
		.peer_target_sgl = rc->peer.target_sgl.length,
		.peer_rbuf_bytes = rc->peer.data_buf.length * 2,
	};
	evr__rdma_settings_rows(o, &v);
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

	if (rc->state != EVR_RC_OPEN || !evr__rdma_live(rc) ||
	    evr__rdma_shut(rc) || !rc->rcq)
		return 1;
	if (rc->n_wc == rc->wc_seen)
		evr__rdma_poll_rcq(rc->rcq, rc);
	return rc->n_wc != rc->wc_seen;
}

const struct evr_conn_ops evr__rdma_conn_ops = {
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
	evr__rdma_pend_remove(rc);
	if (rc->prev)
		rc->prev->next = rc->next;
	else
		x->conns = rc->next;
	if (rc->next)
		rc->next->prev = rc->prev;
	x->nconns--;
	if (evr__rdma_has(rc, EVR_RC_F_LINGER) && !--x->nlinger) {
		x->drain_pend = 1;
		evr__rdma_defer_kick(x);
	}
	if (rc->id && rc->id->qp) {
		if (dreq)
			rdma_disconnect(rc->id);
		rdma_destroy_qp(rc->id);
	}
	evr__rdma_slot_put(rc);
	evr__rdma_cq_release(rc);
	evr__rdma_mem_free(rc);
	if (rc->id)
		rdma_destroy_id(rc->id);
	free(rc);
}
