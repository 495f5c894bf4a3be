/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport of the multicast engine: RDMA CM ids on one event
 * channel whose fd is in the loop, UD QPs whose CQs have completion
 * channels in the loop too.  Messages and statuses follow upstream mckey.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/ib.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "evrdma/hostcheck.h"
#include "../loop/channel.h"
#include "../loop/device.h"
#include "mc.h"

#define GRH_LEN 40
#define MAX_SLOTS 4096u

struct reng {
	struct evr_mcast *m;
	struct rdma_event_channel *ch;
	ev_io cm_w;
	struct sockaddr_storage src, dst;
	int have_src;
	uint32_t sender_base;
};

struct rnode {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	uint8_t *mem;
	size_t slot_size;
	unsigned slots;
	uint32_t *free_slots;
	unsigned nfree;
	uint32_t remote_qpn, remote_qkey;
	unsigned cq_unacked;
	ev_io cq_w;
	struct evr_mc_node *n;
	/* the QP's hold on its device in the loop's registry */
	struct evr__dev_user user;
};

static struct reng *eng(struct evr_mcast *m)
{
	return m->xp;
}

static struct rnode *rn(struct evr_mc_node *n)
{
	return n->xp;
}

static void cm_cb(struct ev_loop *l, ev_io *w, int revents);

static int r_engine_init(struct evr_mcast *m)
{
	struct reng *e = calloc(1, sizeof(*e));
	int ret;

	if (!e) {
		EVR__MC_FAIL(m, .status = 1, .code = -ENOMEM,
			     .msg = "mckey: unable to allocate memory");
		return -1;
	}
	m->xp = e;
	e->m = m;
	ret = evr__cm_channel_open(&e->ch);
	if (ret) {
		/* upstream: both messages, then exit 1 */
		if (ret == -ENODEV)
			EVR__MC_FAIL(m, .status = 1, .code = -EVR_E_NODEV,
				     .msg = "No RDMA devices were detected");
		else
			EVR__MC_FAIL(m, .status = 1,
				     .msg = "failed to create RDMA CM event channel",
				     .sys_errno = -ret);
		return -1;
	}
	ev_io_init(&e->cm_w, cm_cb, e->ch->fd, EV_READ);
	ev_io_start(m->loop->ev, &e->cm_w);
	e->sender_base = evr__mc_sender_base();
	return 0;
}

static void r_engine_fini(struct evr_mcast *m)
{
	struct reng *e = eng(m);

	if (!e)
		return;
	ev_io_stop(m->loop->ev, &e->cm_w);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	free(e);
	m->xp = NULL;
}

static int r_node_init(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = calloc(1, sizeof(*r));

	if (!r) {
		EVR__MC_FAIL(m, .qp = n->index, .status = 1, .code = -ENOMEM,
			     .msg = "mckey: unable to allocate memory for test nodes");
		return -1;
	}
	r->n = n;
	n->xp = r;
	if (rdma_create_id(eng(m)->ch, &r->id, n,
			   (enum rdma_port_space)m->o.port_space)) {
		/* upstream exits 1 here without a message; say why */
		EVR__MC_FAIL(m, .qp = n->index, .status = 1,
			     .msg = "mckey: rdma_create_id",
			     .sys_errno = errno);
		return -1;
	}
	return 0;
}

static int r_prepare(struct evr_mcast *m)
{
	struct reng *e = eng(m);

	if (m->o.bind_addr) {
		if (evr__mc_get_addr(m, m->o.bind_addr, &e->src, NULL))
			return -1;
		e->have_src = 1;
	}
	if (m->o.unmapped) {
		struct sockaddr_ib *sib = (struct sockaddr_ib *)&e->dst;

		memset(sib, 0, sizeof(*sib));
		sib->sib_family = AF_IB;
		if (inet_pton(AF_INET6, m->o.unmapped, &sib->sib_addr) != 1) {
			/* upstream ignores this and joins a zero MGID */
			char d[160];

			snprintf(d, sizeof(d), "mckey: invalid unmapped "
				 "multicast address '%s' (an IPv6-style MGID)",
				 m->o.unmapped);
			EVR__MC_FAIL(m, .status = -EINVAL, .msg = d);
			return -1;
		}
		return 0;
	}
	return evr__mc_get_addr(m, m->o.group, &e->dst, NULL);
}

static int r_resolve(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct reng *e = eng(m);
	struct rnode *r = rn(n);

	if (e->have_src &&
	    rdma_bind_addr(r->id, (struct sockaddr *)&e->src)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: addr bind failure",
			     .sys_errno = errno, .detail = m->o.bind_addr);
		return -1;
	}
	if (m->o.unmapped)
		return 1; /* upstream goes straight to the address handler */
	if (rdma_resolve_addr(r->id, e->have_src ? (struct sockaddr *)&e->src :
			      NULL, (struct sockaddr *)&e->dst,
			      (int)m->o.resolve_ms)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: resolve addr failure",
			     .sys_errno = errno);
		return -1;
	}
	return 0;
}

static void cq_cb(struct ev_loop *l, ev_io *w, int revents);

static int post_recv(struct rnode *r, uint32_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(r->mem + (size_t)slot * r->slot_size),
		.length = (uint32_t)r->slot_size,
		.lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = slot,
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad;

	return ibv_post_recv(r->id->qp, &wr, &bad);
}

/*
 * What each QP's set-up locks: its registered slots (setup_slots), and
 * the CQ (twice the slots, 64-byte CQEs) and UD QP rings a hardware
 * provider pins in user memory (about: 64-byte WQEs each way).
 */
unsigned evr__mc_rdma_settings(const struct evr_mcast_opts *o,
			       struct evr_setting *rows, unsigned max)
{
	if (!max)
		return 0;
	rows[0] = (struct evr_setting){ .key = "port_space",
					.word = "port_space",
					.value = o->port_space };
	return 1;
}

uint64_t evr__mc_rdma_memlock(const struct evr_mcast_opts *o)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t slots = o->count ? o->count : 1, one;
	unsigned n = o->nqps ? o->nqps : 1;

	if (slots > MAX_SLOTS)
		slots = MAX_SLOTS;
	one = (slots * (o->size + GRH_LEN) + pg - 1) / pg * pg +
	      (slots * 2 * 64 + pg - 1) / pg * pg +
	      (slots * 128 + pg - 1) / pg * pg;
	return one * n;
}

/* upstream's verify_test_params: a message must fit the port's MTU */
static int setup_check_mtu(struct evr_mc_node *n, struct rnode *r)
{
	struct evr_mcast *m = n->mc;
	struct ibv_port_attr pa;
	char d[160];

	if (ibv_query_port(r->id->verbs, r->id->port_num, &pa)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: ibv_query_port",
			     .sys_errno = errno);
		return -1;
	}
	if (m->o.count && m->o.size > (1u << (pa.active_mtu + 7))) {
		snprintf(d, sizeof(d),
			 "mckey: message_size %u is larger than active mtu %u",
			 m->o.size, 1u << (pa.active_mtu + 7));
		EVR__MC_FAIL(m, .qp = n->index, .status = -EINVAL, .msg = d);
		return -1;
	}
	return 0;
}

/* A CQ of twice the slots, on a completion channel the loop watches:
 * unlike upstream, the loop sleeps until a completion comes instead of
 * polling. */
static int setup_cq(struct evr_mc_node *n, struct rnode *r)
{
	struct evr_mcast *m = n->mc;

	if (!evr__comp_channel_open(r->id->verbs, &r->cch))
		r->cq = ibv_create_cq(r->id->verbs, (int)r->slots * 2, n,
				      r->cch, 0);
	if (!r->cq) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -ENOMEM,
			     .msg = "mckey: unable to create CQ");
		return -1;
	}
	ev_io_init(&r->cq_w, cq_cb, r->cch->fd, EV_READ);
	ev_io_start(m->loop->ev, &r->cq_w);
	if (ibv_req_notify_cq(r->cq, 0)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: ibv_req_notify_cq",
			     .sys_errno = errno);
		return -1;
	}
	return 0;
}

/* A UD QP of a slot per work request; with -l (no loopback) the device
 * blocks our own multicast (a create flag). */
static int setup_qp(struct evr_mc_node *n, struct rnode *r)
{
	struct evr_mcast *m = n->mc;
	struct ibv_qp_init_attr_ex qx;
	int ret;

	memset(&qx, 0, sizeof(qx));
	qx.cap.max_send_wr = r->slots;
	qx.cap.max_recv_wr = r->slots;
	qx.cap.max_send_sge = 1;
	qx.cap.max_recv_sge = 1;
	qx.qp_context = n;
	qx.qp_type = IBV_QPT_UD;
	qx.send_cq = r->cq;
	qx.recv_cq = r->cq;
	/* what rdma_create_qp() does, plus the flag when asked for */
	qx.comp_mask = IBV_QP_INIT_ATTR_PD;
	qx.pd = r->pd;
	if (m->o.no_loopback) {
		qx.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		qx.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	}
	ret = rdma_create_qp_ex(r->id, &qx);
	if (ret) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: unable to create QP",
			     .sys_errno = errno);
		return -1;
	}
	return 0;
}

/* One slot per outstanding message (upstream shares one buffer, which is
 * fine when nobody reads the payload; we do), registered; a sender's are
 * free, a receiver posts them all before joining, as upstream. */
static int setup_slots(struct evr_mc_node *n, struct rnode *r)
{
	struct evr_mcast *m = n->mc;
	char d[80];
	unsigned i;
	int ret;

	r->slot_size = m->o.size + GRH_LEN;
	r->mem = calloc(r->slots, r->slot_size);
	r->free_slots = calloc(r->slots, sizeof(*r->free_slots));
	if (!r->mem || !r->free_slots) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1, .code = -ENOMEM,
			     .msg = "failed message allocation");
		return -1;
	}
	r->mr = ibv_reg_mr(r->pd, r->mem, r->slots * r->slot_size,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!r->mr) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "failed to reg MR", .sys_errno = errno);
		return -1;
	}
	if (m->o.sender) {
		for (i = 0; i < r->slots; i++)
			r->free_slots[r->nfree++] = r->slots - 1 - i;
		return 0;
	}
	for (i = 0; i < r->slots; i++) {
		ret = post_recv(r, i);
		if (ret) {
			snprintf(d, sizeof(d), "failed to post receives: %d",
				 ret);
			EVR__MC_FAIL(m, .qp = n->index, .status = ret,
				     .code = -ret, .msg = d);
			return -1;
		}
	}
	return 0;
}

static void r_node_fini(struct evr_mc_node *n);

/* The node's device went away (port 0) or its port went down: one line
 * naming them; on a removal everything the node holds goes at once (the
 * device waits for it), the group with it; on a port down its QP goes to
 * error, the work requests flushed.  Then the engine ends the node. */
static void node_lost(struct evr_mc_node *n, const char *dev, unsigned port,
		      int fatal)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);
	int status = port ? -ENETDOWN : -ENODEV;
	struct ibv_qp_attr a;
	char d[160];

	if (n->state == EVR_MC_DONE || n->state == EVR_MC_FAILED) {
		if (!port)
			r_node_fini(n);
		return;
	}
	if (port)
		snprintf(d, sizeof(d), "mckey: %s port %u went down", dev,
			 port);
	else
		snprintf(d, sizeof(d), fatal ? "mckey: %s failed (a fatal "
			 "device error)" : "mckey: %s was removed", dev);
	EVR__MC_FAIL(m, .qp = n->index, .status = status,
		     .code = port ? -EVR_E_PORTDOWN : -EVR_E_DEVGONE, .msg = d);
	if (!port) {
		/* The kernel left the group with its id, but the QP is still
		 * attached to it here: leaving detaches it (its own failure
		 * says nothing new), or destroying the QP fails with EBUSY
		 * and the QP, its CQ and channel stay, and hold the device. */
		if (n->joined && r && r->id)
			rdma_leave_multicast(r->id,
					     (struct sockaddr *)&eng(m)->dst);
		n->joined = 0;
		r_node_fini(n);
		evr__devreg_kick(m->loop);
	} else if (r && r->id && r->id->qp) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_ERR;
		ibv_modify_qp(r->id->qp, &a, IBV_QP_STATE);
	}
	evr__mc_node_event(n, EVR_MCE_LOST, status);
}

/* The registry's word about the node's device. */
static void dev_note(struct evr__dev_user *u, enum evr__dev_note note,
		     unsigned port)
{
	struct rnode *r = evr__container_of(u, struct rnode, user);
	const struct evr__dev *d = evr__dev_of(u);
	char name[EVR__DEV_NAME_MAX];

	if (note == EVR__DEV_N_PORT_UP ||
	    (note == EVR__DEV_N_PORT_DOWN && port != r->id->port_num))
		return;
	/* the node may let go of its device (and r) inside */
	snprintf(name, sizeof(name), "%s", d ? d->name : "?");
	node_lost(r->n, name, note == EVR__DEV_N_GONE ? 0 : port,
		  d && d->fatal);
}

/* A completion or a post failed: is its port down, or its device gone?
 * (rxe fails work requests as
 * soon as the link goes, before the loop has read the port's event.) */
static int port_lost(struct evr_mc_node *n)
{
	struct rnode *r = rn(n);

	return r && r->user.dev && r->id &&
	       evr__dev_refresh(&r->user, r->id->port_num) !=
	       EVR__PORT_ACTIVE;
}

static int r_setup(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);
	struct ibv_device_attr da;
	char d[200];

	if (r->id->verbs->device->transport_type == IBV_TRANSPORT_IWARP) {
		/* rdma_create_qp would fail with EOPNOTSUPP (upstream's
		 * "unable to create QP"): say why */
		snprintf(d, sizeof(d), "mckey: %s is an iWARP device, which "
			 "has no multicast (RDMA CM multicast needs InfiniBand "
			 "or RoCE)", ibv_get_device_name(r->id->verbs->device));
		EVR__MC_FAIL(m, .qp = n->index, .status = -1, .msg = d);
		return -1;
	}
	if (setup_check_mtu(n, r))
		return -1;
	r->user.note = dev_note;
	if (evr__dev_attach(m->loop, r->id->verbs, &r->user)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -ENOMEM,
			     .msg = "mckey: unable to watch the device");
		return -1;
	}
	r->pd = ibv_alloc_pd(r->id->verbs);
	if (!r->pd) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -ENOMEM,
			     .msg = "mckey: unable to allocate PD");
		return -1;
	}
	r->slots = m->o.count ? m->o.count : 1;
	if (r->slots > MAX_SLOTS)
		r->slots = MAX_SLOTS;
	if (!ibv_query_device(r->id->verbs, &da) && da.max_qp_wr > 0 &&
	    r->slots > (unsigned)da.max_qp_wr)
		r->slots = (unsigned)da.max_qp_wr;
	if (setup_cq(n, r) || setup_qp(n, r))
		return -1;
	return m->o.count ? setup_slots(n, r) : 0;
}

static int r_join(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);
	struct rdma_cm_join_mc_attr_ex ma;

	memset(&ma, 0, sizeof(ma));
	ma.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
		       RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ma.addr = (struct sockaddr *)&eng(m)->dst;
	ma.join_flags = m->o.sendonly ?
			RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER :
			RDMA_MC_JOIN_FLAG_FULLMEMBER;
	if (rdma_join_multicast_ex(r->id, &ma, n)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: failure joining",
			     .sys_errno = errno);
		return -1;
	}
	return 0;
}

static int r_send(struct evr_mc_node *n, uint32_t seq)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);
	struct evr_mc_hdr h = {
		.sender = eng(m)->sender_base | n->index,
		.seq = seq,
		.count = m->o.count,
	};
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	uint32_t slot;
	int ret;

	if (!r)
		return -EIO; /* its device went away */

	if (!r->nfree)
		return -EAGAIN;
	slot = r->free_slots[--r->nfree];
	evr__mc_payload_encode(r->mem + (size_t)slot * r->slot_size,
			       m->o.size, &h);
	sge.addr = (uintptr_t)(r->mem + (size_t)slot * r->slot_size);
	sge.length = m->o.size;
	sge.lkey = r->mr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	/* Signalled, unlike upstream: the status of every send is checked
	 * and the sender drains its sends before it leaves. */
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htonl(r->id->qp->qp_num);
	wr.wr.ud.ah = r->ah;
	wr.wr.ud.remote_qpn = r->remote_qpn;
	wr.wr.ud.remote_qkey = r->remote_qkey;
	ret = ibv_post_send(r->id->qp, &wr, &bad);
	if (ret) {
		char d[80];

		r->free_slots[r->nfree++] = slot;
		/* rxe fails a post as soon as its device goes or its link
		 * drops, before the loop has read why: the registry tells
		 * the node (node_lost, which may free r) */
		if (port_lost(n) || n->state == EVR_MC_FAILED)
			return -1;
		snprintf(d, sizeof(d), "failed to post sends: %d", ret);
		EVR__MC_FAIL(m, .qp = n->index, .status = ret, .code = -ret,
			     .msg = d);
		return -1;
	}
	return 0;
}

static int r_leave(struct evr_mc_node *n)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);

	if (rdma_leave_multicast(r->id, (struct sockaddr *)&eng(m)->dst)) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: failure leaving",
			     .sys_errno = errno);
		return -1;
	}
	return 0;
}

static void r_node_fini(struct evr_mc_node *n)
{
	struct rnode *r = rn(n);

	if (!r)
		return;
	evr__dev_detach(&r->user);
	ev_io_stop(n->mc->loop->ev, &r->cq_w);
	if (r->ah)
		ibv_destroy_ah(r->ah);
	if (r->id && r->id->qp)
		rdma_destroy_qp(r->id);
	if (r->cq) {
		evr__cq_ack(r->cq, &r->cq_unacked);
		ibv_destroy_cq(r->cq);
	}
	if (r->cch)
		ibv_destroy_comp_channel(r->cch);
	if (r->mr)
		ibv_dereg_mr(r->mr);
	free(r->mem);
	free(r->free_slots);
	if (r->pd)
		ibv_dealloc_pd(r->pd);
	if (r->id)
		rdma_destroy_id(r->id);
	free(r);
	n->xp = NULL;
}

static void handle_wc(struct evr_mc_node *n, const struct ibv_wc *wc)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);
	char d[160];

	if (wc->status != IBV_WC_SUCCESS) {
		/* the port's failure says it (port_lost told the node) */
		if (port_lost(n) || n->state == EVR_MC_FAILED)
			return;
		snprintf(d, sizeof(d), "mckey: %s completion error on QP %u: %s",
			 (wc->opcode & IBV_WC_RECV) ? "receive" : "send",
			 n->index, ibv_wc_status_str(wc->status));
		EVR__MC_FAIL(m, .qp = n->index, .status = -EIO, .msg = d);
		evr__mc_node_event(n, (wc->opcode & IBV_WC_RECV) ?
				   EVR_MCE_RECV_COMP : EVR_MCE_SEND_COMP, -EIO);
		return;
	}
	if (wc->opcode & IBV_WC_RECV) {
		uint32_t slot = (uint32_t)wc->wr_id;
		uint8_t *b = r->mem + (size_t)slot * r->slot_size;

		if (wc->byte_len > GRH_LEN)
			evr__mc_acct_add(&n->acct, b + GRH_LEN,
					 wc->byte_len - GRH_LEN);
		else
			n->acct.foreign++;
		/* Keep the slot posted: more messages than -C may come
		 * (several senders), and they are counted too. */
		post_recv(r, slot);
		evr__mc_node_event(n, EVR_MCE_RECV_COMP, 0);
		return;
	}
	r->free_slots[r->nfree++] = (uint32_t)wc->wr_id;
	evr__mc_node_event(n, EVR_MCE_SEND_COMP, 0);
}

static void cq_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct rnode *r = evr__container_of(w, struct rnode, cq_w);
	struct evr_mc_node *n = r->n;
	struct ibv_wc wc[16];
	int i, k;

	/* take the events, re-arm, then poll until empty: a completion
	 * that lands after the poll raises a new event */
	evr__cq_drain(r->cch, r->cq, &r->cq_unacked);
	ibv_req_notify_cq(r->cq, 0);
	for (;;) {
		k = ibv_poll_cq(r->cq, 16, wc);
		if (k <= 0)
			break;
		for (i = 0; i < k; i++) {
			handle_wc(n, &wc[i]);
			if (!n->xp || n->state == EVR_MC_DONE ||
			    n->state == EVR_MC_FAILED)
				return;
		}
	}
}

/* The group is joined (or joined again): report it, then make the
 * address handle the sends go through. */
static void on_join(struct evr_mc_node *n, struct rdma_ud_param *ud)
{
	struct evr_mcast *m = n->mc;
	struct rnode *r = rn(n);
	struct evr_mc_joined j;

	/* a rejoin after a MULTICAST_ERROR: a new address handle, no
	 * second "joined" report */
	if (n->state != EVR_MC_REJOINING) {
		memset(&j, 0, sizeof(j));
		j.qp = n->index;
		inet_ntop(AF_INET6, ud->ah_attr.grh.dgid.raw, j.dgid,
			  sizeof(j.dgid));
		j.mlid = ud->ah_attr.dlid;
		j.sl = ud->ah_attr.sl;
		j.join_ns = evr_now_ns() - n->join_t0;
		snprintf(n->dgid, sizeof(n->dgid), "%s", j.dgid);
		evr__mc_joined(m, &j);
	}
	if (r->ah)
		ibv_destroy_ah(r->ah);
	r->remote_qpn = ud->qp_num;
	r->remote_qkey = ud->qkey;
	r->ah = ibv_create_ah(r->pd, &ud->ah_attr);
	if (!r->ah) {
		EVR__MC_FAIL(m, .qp = n->index, .status = -1,
			     .msg = "mckey: failure creating address handle");
		evr__mc_node_event(n, EVR_MCE_JOIN_ERR, -1);
		return;
	}
	evr__mc_node_event(n, EVR_MCE_JOINED, 0);
}

static void cm_cb(struct ev_loop *l, ev_io *w, int revents)
{
	struct evr_mcast *m = evr__container_of(w, struct reng, cm_w)->m;
	struct rdma_cm_event *ev;

	while (m->xp && !rdma_get_cm_event(eng(m)->ch, &ev)) {
		struct evr_mc_node *n = ev->id ? ev->id->context : NULL;
		enum rdma_cm_event_type type = ev->event;
		int status = ev->status;
		struct rdma_ud_param ud = ev->param.ud;
		char d[128];

		rdma_ack_cm_event(ev);
		if (!n)
			continue;
		switch (type) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			evr__mc_node_event(n, EVR_MCE_RESOLVED, 0);
			break;
		case RDMA_CM_EVENT_MULTICAST_JOIN:
			if (n->state == EVR_MC_JOINING ||
			    n->state == EVR_MC_REJOINING)
				on_join(n, &ud);
			break;
		case RDMA_CM_EVENT_MULTICAST_ERROR:
			if (n->state == EVR_MC_JOINED ||
			    n->state == EVR_MC_RUNNING) {
				/* upstream's line, then rejoin once */
				evr__mc_cm_event(m, n->index,
						 rdma_event_str(type), status,
						 1);
				evr__mc_node_event(n, EVR_MCE_GROUP_LOST,
						   status);
				break;
			}
			/* fall through - the join (or rejoin) failed */
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
			if (n->state == EVR_MC_RESOLVING ||
			    n->state == EVR_MC_JOINING ||
			    n->state == EVR_MC_REJOINING) {
				snprintf(d, sizeof(d),
					 "mckey: event: %s, error: %d",
					 rdma_event_str(type), status);
				EVR__MC_FAIL(m, .qp = n->index,
					     .status = status, .msg = d);
				evr__mc_node_event(n, n->state ==
						   EVR_MC_RESOLVING ?
						   EVR_MCE_RESOLVE_ERR :
						   EVR_MCE_JOIN_ERR, status);
			} else {
				evr__mc_cm_event(m, n->index,
						 rdma_event_str(type), status,
						 1);
			}
			break;
		case RDMA_CM_EVENT_ADDR_CHANGE:
			evr__mc_cm_event(m, n->index, rdma_event_str(type),
					 status, 0);
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			/* every node of the device hears it from the
			 * registry (this one among them) */
			if (rn(n) && rn(n)->user.dev)
				evr__dev_gone(&rn(n)->user);
			else if (rn(n) && rn(n)->id && rn(n)->id->verbs)
				node_lost(n, ibv_get_device_name(
					  rn(n)->id->verbs->device), 0, 0);
			break;
		default:
			break;
		}
	}
}

const struct evr_mc_xport evr__mc_rdma_xport = {
	.engine_init = r_engine_init,
	.engine_fini = r_engine_fini,
	.node_init = r_node_init,
	.prepare = r_prepare,
	.resolve = r_resolve,
	.setup = r_setup,
	.join = r_join,
	.send = r_send,
	.leave = r_leave,
	.node_fini = r_node_fini,
};
