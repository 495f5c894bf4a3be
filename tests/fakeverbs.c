/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The fake RDMA device, CM and device registry hook of fakeverbs.h.  The
 * __wrap_ functions replace the library's at link time (-Wl,--wrap, see
 * FAKEVERBS_WRAP in Makefile.am); the data path's verbs are the fake
 * context's ops.  One fake device per test (fv_begin/fv_end).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "fakeverbs.h"
#include "loop/device.h"

#define FV_MAXSGE 4
#define FV_INLINE_MAX 256
#define FV_CHAN_Q 256
#define FV_PDATA 256

struct fv_stats fv_stats;

struct fv_mr {
	struct ibv_mr mr;
	struct fv_mr *next;
	int access;
};

struct fv_chan {
	struct ibv_comp_channel ch;
	struct fv_chan *next;
	int wfd;
	struct fv_cq *q[FV_CHAN_Q];
	unsigned head, count;
};

struct fv_cq {
	struct ibv_cq cq;
	struct fv_cq *next;
	struct ibv_wc *wc;
	unsigned size, head, count;
	int armed;
	unsigned events, acks;
};

struct fv_swr {
	struct fv_swr *next;
	uint64_t wr_id;
	enum ibv_wr_opcode op;
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	int signaled, inl;
	uint32_t len;
	struct ibv_sge sg[FV_MAXSGE];
	int nsge;
	uint8_t data[FV_INLINE_MAX];
};

struct fv_qp {
	struct ibv_qp qp;
	struct fv_qp *next, *peer;
	struct fv_cq *scq, *rcq;
	struct fv_swr *pend, *pend_tail;
	uint64_t *rq;
	unsigned rq_cap, rq_head, rq_count;
	unsigned sq_cap, sq_out, max_inline;
	int sig_all;
	int err;
	int fail_post, fail_recv_post;
	int fail_wr_set;
	enum ibv_wc_status fail_wr;
	unsigned long data_writes;  /* WITH_IMM carrying bytes, executed */
};

struct fv_ev {
	struct rdma_cm_event e;     /* first: what the code is handed */
	struct fv_ev *next;
	uint8_t pd[FV_PDATA];
};

struct fv_echan {
	struct rdma_event_channel ch;
	struct fv_echan *next;
	int wfd;
	struct fv_ev *head, *tail;
};

struct fv_id {
	struct rdma_cm_id id;
	struct fv_id *next, *peer;
	int connected;
};

static struct {
	struct ibv_context ctx;
	struct ibv_device dev;
	struct ibv_pd pd;
	int async[2];
	struct fv_mr *mrs;
	struct fv_chan *chans;
	struct fv_cq *cqs;
	struct fv_qp *qps;
	struct fv_echan *echans;
	struct fv_id *ids;
	struct rdma_cm_id *lid;
	int hold, port_up, fail_poll;
	uint32_t next_key, next_qpn;
} fv;

#define FV_OF(type, p) ((struct type *)(void *)(p))

static void pipe_make(int p[2])
{
	if (pipe(p)) {
		perror("fakeverbs: pipe");
		abort();
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	fcntl(p[0], F_SETFD, FD_CLOEXEC);
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
}

static void pipe_put(int wfd)
{
	char b = 1;

	if (write(wfd, &b, 1) != 1) {
		perror("fakeverbs: pipe write");
		abort();
	}
}

static void pipe_take(int rfd)
{
	char b;

	if (read(rfd, &b, 1) != 1) {
		perror("fakeverbs: pipe read");
		abort();
	}
}

/* ---- completion queues and channels ---- */

static void cq_push(struct fv_cq *q, const struct ibv_wc *wc)
{
	struct fv_chan *ch = FV_OF(fv_chan, q->cq.channel);

	if (q->count == q->size) {
		fv_stats.cq_overflow++;
		return;
	}
	q->wc[(q->head + q->count++) % q->size] = *wc;
	if (wc->opcode & IBV_WC_RECV)
		fv_stats.wc_recv++;
	else
		fv_stats.wc_sent++;
	if (q->armed && ch) {
		q->armed = 0;
		if (ch->count == FV_CHAN_Q) {
			fprintf(stderr, "fakeverbs: channel queue full\n");
			abort();
		}
		ch->q[(ch->head + ch->count++) % FV_CHAN_Q] = q;
		pipe_put(ch->wfd);
		fv_stats.cq_events++;
	}
}

static struct fv_qp *qp_by_num(uint32_t n)
{
	struct fv_qp *q;

	for (q = fv.qps; q; q = q->next)
		if (q->qp.qp_num == n)
			return q;
	return NULL;
}

static int f_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	struct fv_cq *q = FV_OF(fv_cq, cq);
	struct fv_qp *qp;
	int i;

	if (fv.fail_poll) {
		fv.fail_poll = 0;
		return -1;
	}
	for (i = 0; i < n && q->count; i++) {
		wc[i] = q->wc[q->head];
		q->head = (q->head + 1) % q->size;
		q->count--;
		if (!(wc[i].opcode & IBV_WC_RECV) &&
		    (qp = qp_by_num(wc[i].qp_num)) && qp->sq_out)
			qp->sq_out--;
	}
	return i;
}

static int f_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	FV_OF(fv_cq, cq)->armed = 1;
	return 0;
}

/* ---- the wire ---- */

static struct fv_mr *mr_find(uint32_t key, int remote, uint64_t addr,
			     uint64_t len)
{
	struct fv_mr *m;

	for (m = fv.mrs; m; m = m->next) {
		if ((remote ? m->mr.rkey : m->mr.lkey) != key)
			continue;
		if (remote && !(m->access & IBV_ACCESS_REMOTE_WRITE))
			return NULL;
		if (addr < (uintptr_t)m->mr.addr ||
		    addr + len > (uintptr_t)m->mr.addr + m->mr.length)
			return NULL;
		return m;
	}
	return NULL;
}

static void send_wc(struct fv_qp *q, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = st;
	wc.opcode = IBV_WC_RDMA_WRITE;
	wc.qp_num = q->qp.qp_num;
	cq_push(q->scq, &wc);
}

static void recv_wc(struct fv_qp *q, uint64_t wr_id, enum ibv_wc_status st,
		    uint32_t imm, uint32_t len)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wr_id;
	wc.status = st;
	wc.qp_num = q->qp.qp_num;
	if (st == IBV_WC_SUCCESS) {
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.wc_flags = IBV_WC_WITH_IMM;
		wc.imm_data = imm;
		wc.byte_len = len;
	} else {
		wc.opcode = IBV_WC_RECV;
	}
	cq_push(q->rcq, &wc);
}

/* The QP to error: what is posted comes back flushed. */
static void qp_to_error(struct fv_qp *q)
{
	struct fv_swr *w;

	q->err = 1;
	while ((w = q->pend)) {
		q->pend = w->next;
		send_wc(q, w->wr_id, IBV_WC_WR_FLUSH_ERR);
		free(w);
	}
	q->pend_tail = NULL;
	while (q->rq_count) {
		recv_wc(q, q->rq[q->rq_head], IBV_WC_WR_FLUSH_ERR, 0, 0);
		q->rq_head = (q->rq_head + 1) % q->rq_cap;
		q->rq_count--;
	}
}

/* The checks and the copy of one write; its status. */
static enum ibv_wc_status write_exec(struct fv_qp *q, struct fv_swr *w)
{
	struct fv_qp *p = q->peer;
	uint64_t off = 0;
	int i;

	if (w->op != IBV_WR_RDMA_WRITE && w->op != IBV_WR_RDMA_WRITE_WITH_IMM) {
		fv_stats.bad_opcode++;
		return IBV_WC_LOC_QP_OP_ERR;
	}
	if (!w->inl)
		for (i = 0; i < w->nsge; i++)
			if (w->sg[i].length &&
			    !mr_find(w->sg[i].lkey, 0, w->sg[i].addr,
				     w->sg[i].length)) {
				fv_stats.lkey_bad++;
				return IBV_WC_LOC_PROT_ERR;
			}
	if (w->len && !mr_find(w->rkey, 1, w->raddr, w->len)) {
		fv_stats.rkey_bad++;
		return IBV_WC_REM_ACCESS_ERR;
	}
	if (w->op == IBV_WR_RDMA_WRITE_WITH_IMM && !p->rq_count) {
		fv_stats.rnr++;
		return IBV_WC_RNR_RETRY_EXC_ERR;
	}
	if (w->inl) {
		memcpy((void *)(uintptr_t)w->raddr, w->data, w->len);
	} else {
		for (i = 0; i < w->nsge; i++) {
			memcpy((void *)(uintptr_t)(w->raddr + off),
			       (const void *)(uintptr_t)w->sg[i].addr,
			       w->sg[i].length);
			off += w->sg[i].length;
		}
	}
	fv_stats.bytes += w->len;
	if (w->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		fv_stats.writes_imm++;
		if (w->len)
			q->data_writes++;
		recv_wc(p, p->rq[p->rq_head], IBV_WC_SUCCESS, w->imm, w->len);
		p->rq_head = (p->rq_head + 1) % p->rq_cap;
		p->rq_count--;
	} else {
		fv_stats.writes++;
	}
	return IBV_WC_SUCCESS;
}

static void exec_one(struct fv_qp *q, struct fv_swr *w)
{
	enum ibv_wc_status st;

	if (q->err) {
		st = IBV_WC_WR_FLUSH_ERR;
	} else if (q->fail_wr_set) {
		q->fail_wr_set = 0;
		st = q->fail_wr;
	} else if (!q->peer || q->peer->err) {
		/* nobody acknowledges: the retries run out */
		st = IBV_WC_RETRY_EXC_ERR;
	} else {
		st = write_exec(q, w);
	}
	if (w->signaled || st != IBV_WC_SUCCESS)
		send_wc(q, w->wr_id, st);
	else if (q->sq_out)
		q->sq_out--;
	if (st != IBV_WC_SUCCESS && !q->err)
		qp_to_error(q);
}

static unsigned run_qp(struct fv_qp *q)
{
	struct fv_swr *w;
	unsigned n = 0;

	while ((w = q->pend)) {
		q->pend = w->next;
		if (!q->pend)
			q->pend_tail = NULL;
		exec_one(q, w);
		free(w);
		n++;
	}
	return n;
}

unsigned fv_progress(void)
{
	struct fv_qp *q;
	unsigned n = 0;

	for (q = fv.qps; q; q = q->next)
		n += run_qp(q);
	return n;
}

static int f_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		       struct ibv_send_wr **bad)
{
	struct fv_qp *q = FV_OF(fv_qp, qp);
	struct fv_swr *w;
	int i, err;

	for (; wr; wr = wr->next) {
		if (q->fail_post) {
			err = q->fail_post;
			q->fail_post = 0;
			*bad = wr;
			return err;
		}
		if (q->sq_out >= q->sq_cap) {
			fv_stats.sq_overflow++;
			*bad = wr;
			return ENOMEM;
		}
		if (wr->num_sge < 0 || wr->num_sge > FV_MAXSGE) {
			*bad = wr;
			return EINVAL;
		}
		w = calloc(1, sizeof(*w));
		if (!w)
			abort();
		w->wr_id = wr->wr_id;
		w->op = wr->opcode;
		w->imm = wr->imm_data;
		w->raddr = wr->wr.rdma.remote_addr;
		w->rkey = wr->wr.rdma.rkey;
		w->signaled = q->sig_all ||
			      !!(wr->send_flags & IBV_SEND_SIGNALED);
		w->inl = !!(wr->send_flags & IBV_SEND_INLINE);
		w->nsge = wr->num_sge;
		for (i = 0; i < wr->num_sge; i++) {
			w->sg[i] = wr->sg_list[i];
			w->len += wr->sg_list[i].length;
		}
		if (w->inl) {
			/* the bytes are taken now: the buffer is the
			 * caller's again when this returns */
			if (w->len > q->max_inline || w->len > FV_INLINE_MAX) {
				free(w);
				*bad = wr;
				return EINVAL;
			}
			for (i = 0, err = 0; i < w->nsge; i++) {
				memcpy(w->data + err,
				       (const void *)(uintptr_t)w->sg[i].addr,
				       w->sg[i].length);
				err += (int)w->sg[i].length;
			}
		}
		q->sq_out++;
		if (q->pend_tail)
			q->pend_tail->next = w;
		else
			q->pend = w;
		q->pend_tail = w;
	}
	if (!fv.hold)
		run_qp(q);
	return 0;
}

static int f_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		       struct ibv_recv_wr **bad)
{
	struct fv_qp *q = FV_OF(fv_qp, qp);
	int err;

	for (; wr; wr = wr->next) {
		if (q->fail_recv_post) {
			err = q->fail_recv_post;
			q->fail_recv_post = 0;
			*bad = wr;
			return err;
		}
		if (q->err) {
			recv_wc(q, wr->wr_id, IBV_WC_WR_FLUSH_ERR, 0, 0);
			continue;
		}
		if (q->rq_count >= q->rq_cap) {
			fv_stats.rq_overflow++;
			*bad = wr;
			return ENOMEM;
		}
		q->rq[(q->rq_head + q->rq_count++) % q->rq_cap] = wr->wr_id;
		fv_stats.recv_posted++;
	}
	return 0;
}

/* ---- the knobs ---- */

void fv_hold(int on)
{
	fv.hold = on;
}

void fv_port_active(int on)
{
	fv.port_up = on;
}

void fv_listen(struct rdma_cm_id *lid)
{
	fv.lid = lid;
}

void fv_fail_next_post(struct rdma_cm_id *id, int err)
{
	FV_OF(fv_qp, id->qp)->fail_post = err;
}

void fv_fail_next_recv_post(struct rdma_cm_id *id, int err)
{
	FV_OF(fv_qp, id->qp)->fail_recv_post = err;
}

void fv_fail_next_wr(struct rdma_cm_id *id, enum ibv_wc_status status)
{
	struct fv_qp *q = FV_OF(fv_qp, id->qp);

	q->fail_wr_set = 1;
	q->fail_wr = status;
}

void fv_qp_error(struct rdma_cm_id *id)
{
	qp_to_error(FV_OF(fv_qp, id->qp));
}

void fv_fail_next_poll(void)
{
	fv.fail_poll = 1;
}

unsigned fv_rq_posted(struct rdma_cm_id *id)
{
	return id->qp ? FV_OF(fv_qp, id->qp)->rq_count : 0;
}

unsigned long fv_data_writes(struct rdma_cm_id *id)
{
	return id->qp ? FV_OF(fv_qp, id->qp)->data_writes : 0;
}

unsigned fv_sq_outstanding(struct rdma_cm_id *id)
{
	return id->qp ? FV_OF(fv_qp, id->qp)->sq_out : 0;
}

/* ---- the device registry's view of the fake device ---- */

static int r_get_event(void *ctx, struct ibv_async_event *ev)
{
	return -EAGAIN;
}

static void r_ack_event(struct ibv_async_event *ev)
{
}

static int r_port_active(void *ctx, uint8_t port)
{
	return fv.port_up;
}

static int r_gid_count(void *ctx, uint8_t port)
{
	return 1;
}

static const struct evr__dev_ops reg_ops = {
	.get_event = r_get_event,
	.ack_event = r_ack_event,
	.port_active = r_port_active,
	.gid_count = r_gid_count,
};

static unsigned r_lister(char names[][EVR__DEV_NAME_MAX],
			 char netdevs[][EVR__DEV_NAME_MAX], unsigned max)
{
	if (!max)
		return 0;
	snprintf(names[0], EVR__DEV_NAME_MAX, "fake0");
	netdevs[0][0] = 0;
	return 1;
}

void fv_use_loop(struct evr_loop *l)
{
	evr__devreg_set_lister(l, r_lister);
	/* no netlink monitor: nothing of the host's */
	evr__devreg_set_monitor(l, -1);
}

int __wrap_evr__dev_attach(struct evr_loop *l, struct ibv_context *verbs,
			   struct evr__dev_user *u);
int __wrap_evr__dev_attach(struct evr_loop *l, struct ibv_context *verbs,
			   struct evr__dev_user *u)
{
	struct evr__dev_desc desc = {
		.name = "fake0", .netdev = "", .nports = 1,
		.fd = fv.async[0],
	};

	return evr__dev_attach_ops(l, verbs, &reg_ops, &desc, u);
}

/* ---- verbs: the library functions, wrapped ---- */

#define WRAP(ret, name, ...) \
	ret __wrap_##name(__VA_ARGS__); \
	ret __wrap_##name(__VA_ARGS__)

WRAP(int, ibv_query_device, struct ibv_context *c, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->max_qp_wr = 16384;
	a->max_cqe = 65536;
	a->max_sge = FV_MAXSGE;
	a->phys_port_cnt = 1;
	return 0;
}

WRAP(const char *, ibv_get_device_name, struct ibv_device *d)
{
	return d->name;
}

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			     int access)
{
	struct fv_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->mr.context = pd->context;
	m->mr.pd = pd;
	m->mr.addr = addr;
	m->mr.length = len;
	/* lkey and rkey differ, so that one used for the other fails */
	m->mr.lkey = fv.next_key;
	m->mr.rkey = fv.next_key | 0x80000000u;
	fv.next_key += 0x10;
	m->access = access;
	m->next = fv.mrs;
	fv.mrs = m;
	fv_stats.mrs++;
	return &m->mr;
}

WRAP(struct ibv_mr *, ibv_reg_mr, struct ibv_pd *pd, void *addr, size_t len,
     int access)
{
	return reg_mr(pd, addr, len, access);
}

WRAP(struct ibv_mr *, ibv_reg_mr_iova2, struct ibv_pd *pd, void *addr,
     size_t len, uint64_t iova, unsigned int access)
{
	return reg_mr(pd, addr, len, (int)access);
}

WRAP(int, ibv_dereg_mr, struct ibv_mr *mr)
{
	struct fv_mr **pp;

	for (pp = &fv.mrs; *pp; pp = &(*pp)->next)
		if (&(*pp)->mr == mr) {
			struct fv_mr *m = *pp;

			*pp = m->next;
			free(m);
			fv_stats.mrs--;
			return 0;
		}
	return EINVAL;
}

WRAP(struct ibv_comp_channel *, ibv_create_comp_channel, struct ibv_context *c)
{
	struct fv_chan *ch = calloc(1, sizeof(*ch));
	int p[2];

	if (!ch)
		return NULL;
	pipe_make(p);
	ch->ch.context = c;
	ch->ch.fd = p[0];
	ch->wfd = p[1];
	ch->next = fv.chans;
	fv.chans = ch;
	fv_stats.chans++;
	return &ch->ch;
}

WRAP(int, ibv_destroy_comp_channel, struct ibv_comp_channel *c)
{
	struct fv_chan **pp, *ch = FV_OF(fv_chan, c);

	for (pp = &fv.chans; *pp && *pp != ch; pp = &(*pp)->next)
		;
	if (!*pp)
		return EINVAL;
	*pp = ch->next;
	close(ch->ch.fd);
	close(ch->wfd);
	free(ch);
	fv_stats.chans--;
	return 0;
}

WRAP(struct ibv_cq *, ibv_create_cq, struct ibv_context *c, int cqe,
     void *cq_context, struct ibv_comp_channel *ch, int vector)
{
	struct fv_cq *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->wc = calloc((size_t)cqe, sizeof(*q->wc));
	if (!q->wc) {
		free(q);
		return NULL;
	}
	q->size = (unsigned)cqe;
	q->cq.context = c;
	q->cq.channel = ch;
	q->cq.cq_context = cq_context;
	q->cq.cqe = cqe;
	q->next = fv.cqs;
	fv.cqs = q;
	fv_stats.cqs++;
	return &q->cq;
}

WRAP(int, ibv_destroy_cq, struct ibv_cq *cq)
{
	struct fv_cq **pp, *q = FV_OF(fv_cq, cq);
	struct fv_chan *ch = FV_OF(fv_chan, cq->channel);
	unsigned i, n;

	for (pp = &fv.cqs; *pp && *pp != q; pp = &(*pp)->next)
		;
	if (!*pp)
		return EINVAL;
	*pp = q->next;
	/* the real call blocks until every event taken is acked */
	if (q->events != q->acks)
		fv_stats.unacked_destroy++;
	/* events of q not yet read go with it */
	if (ch)
		for (i = 0, n = ch->count; i < n; i++) {
			struct fv_cq *e = ch->q[ch->head];

			ch->head = (ch->head + 1) % FV_CHAN_Q;
			ch->count--;
			if (e == q)
				pipe_take(ch->ch.fd);
			else
				ch->q[(ch->head + ch->count++) % FV_CHAN_Q] = e;
		}
	free(q->wc);
	free(q);
	fv_stats.cqs--;
	return 0;
}

WRAP(int, ibv_get_cq_event, struct ibv_comp_channel *c, struct ibv_cq **cq,
     void **ctx)
{
	struct fv_chan *ch = FV_OF(fv_chan, c);
	struct fv_cq *q;

	if (!ch->count) {
		errno = EAGAIN;
		return -1;
	}
	pipe_take(ch->ch.fd);
	q = ch->q[ch->head];
	ch->head = (ch->head + 1) % FV_CHAN_Q;
	ch->count--;
	q->events++;
	*cq = &q->cq;
	*ctx = q->cq.cq_context;
	return 0;
}

WRAP(void, ibv_ack_cq_events, struct ibv_cq *cq, unsigned int n)
{
	FV_OF(fv_cq, cq)->acks += n;
}

WRAP(int, ibv_modify_qp, struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	if ((mask & IBV_QP_STATE) && a->qp_state == IBV_QPS_ERR &&
	    !FV_OF(fv_qp, qp)->err)
		qp_to_error(FV_OF(fv_qp, qp));
	return 0;
}

/* ---- the RDMA CM ---- */

WRAP(struct rdma_event_channel *, rdma_create_event_channel, void)
{
	struct fv_echan *ch = calloc(1, sizeof(*ch));
	int p[2];

	if (!ch)
		return NULL;
	pipe_make(p);
	ch->ch.fd = p[0];
	ch->wfd = p[1];
	ch->next = fv.echans;
	fv.echans = ch;
	fv_stats.chans++;
	return &ch->ch;
}

WRAP(void, rdma_destroy_event_channel, struct rdma_event_channel *c)
{
	struct fv_echan **pp, *ch = FV_OF(fv_echan, c);
	struct fv_ev *e;

	for (pp = &fv.echans; *pp && *pp != ch; pp = &(*pp)->next)
		;
	if (!*pp)
		return;
	*pp = ch->next;
	while ((e = ch->head)) {
		ch->head = e->next;
		free(e);
	}
	close(ch->ch.fd);
	close(ch->wfd);
	free(ch);
	fv_stats.chans--;
}

static void cm_queue(struct rdma_cm_id *id, enum rdma_cm_event_type type,
		     const void *pdata, uint8_t plen)
{
	struct fv_echan *ch = FV_OF(fv_echan, id->channel);
	struct fv_ev *e = calloc(1, sizeof(*e));

	if (!e)
		abort();
	e->e.id = id;
	e->e.event = type;
	if (type == RDMA_CM_EVENT_CONNECT_REQUEST)
		e->e.listen_id = fv.lid;
	if (pdata) {
		memcpy(e->pd, pdata, plen);
		e->e.param.conn.private_data = e->pd;
		e->e.param.conn.private_data_len = plen;
	}
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	pipe_put(ch->wfd);
	fv_stats.cm_events++;
}

WRAP(int, rdma_get_cm_event, struct rdma_event_channel *c,
     struct rdma_cm_event **ev)
{
	struct fv_echan *ch = FV_OF(fv_echan, c);
	struct fv_ev *e = ch->head;

	if (!e) {
		errno = EAGAIN;
		return -1;
	}
	pipe_take(ch->ch.fd);
	ch->head = e->next;
	if (!ch->head)
		ch->tail = NULL;
	e->next = NULL;
	*ev = &e->e;
	return 0;
}

WRAP(int, rdma_ack_cm_event, struct rdma_cm_event *ev)
{
	free(FV_OF(fv_ev, ev));
	return 0;
}

static void addr_set(struct rdma_cm_id *id, uint16_t sport, uint16_t dport)
{
	struct sockaddr_in *s = (void *)&id->route.addr.src_addr;
	struct sockaddr_in *d = (void *)&id->route.addr.dst_addr;

	s->sin_family = d->sin_family = AF_INET;
	s->sin_addr.s_addr = d->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->sin_port = htons(sport);
	d->sin_port = htons(dport);
}

static struct fv_id *id_new(struct rdma_event_channel *ch, void *ctx,
			    enum rdma_port_space ps)
{
	struct fv_id *i = calloc(1, sizeof(*i));

	if (!i)
		return NULL;
	i->id.channel = ch;
	i->id.context = ctx;
	i->id.ps = ps;
	i->id.qp_type = IBV_QPT_RC;
	i->next = fv.ids;
	fv.ids = i;
	fv_stats.ids++;
	return i;
}

WRAP(int, rdma_create_id, struct rdma_event_channel *ch,
     struct rdma_cm_id **id, void *ctx, enum rdma_port_space ps)
{
	struct fv_id *i = id_new(ch, ctx, ps);

	if (!i) {
		errno = ENOMEM;
		return -1;
	}
	*id = &i->id;
	return 0;
}

WRAP(int, rdma_destroy_id, struct rdma_cm_id *id)
{
	struct fv_id **pp, *i = FV_OF(fv_id, id);
	struct fv_echan *ch = FV_OF(fv_echan, id->channel);
	struct fv_ev **ep, *e;

	for (pp = &fv.ids; *pp && *pp != i; pp = &(*pp)->next)
		;
	if (!*pp)
		return -1;
	*pp = i->next;
	/* its events not yet read go with it */
	for (ep = ch ? &ch->head : NULL; ep && (e = *ep);) {
		if (e->e.id == id) {
			*ep = e->next;
			pipe_take(ch->ch.fd);
			free(e);
		} else {
			ep = &e->next;
		}
	}
	if (ch) {
		ch->tail = NULL;
		for (e = ch->head; e; e = e->next)
			ch->tail = e;
	}
	if (i->peer)
		i->peer->peer = NULL;
	if (fv.lid == id)
		fv.lid = NULL;
	free(i);
	fv_stats.ids--;
	return 0;
}

WRAP(int, rdma_resolve_addr, struct rdma_cm_id *id, struct sockaddr *src,
     struct sockaddr *dst, int ms)
{
	id->verbs = &fv.ctx;
	id->port_num = 1;
	addr_set(id, 40000, 7471);
	cm_queue(id, RDMA_CM_EVENT_ADDR_RESOLVED, NULL, 0);
	return 0;
}

WRAP(int, rdma_resolve_route, struct rdma_cm_id *id, int ms)
{
	cm_queue(id, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL, 0);
	return 0;
}

WRAP(int, rdma_create_qp, struct rdma_cm_id *id, struct ibv_pd *pd,
     struct ibv_qp_init_attr *a)
{
	struct fv_qp *q = calloc(1, sizeof(*q));

	if (!q) {
		errno = ENOMEM;
		return -1;
	}
	q->rq_cap = a->cap.max_recv_wr;
	q->rq = calloc(q->rq_cap ? q->rq_cap : 1, sizeof(*q->rq));
	if (!q->rq) {
		free(q);
		errno = ENOMEM;
		return -1;
	}
	q->sq_cap = a->cap.max_send_wr;
	q->max_inline = a->cap.max_inline_data;
	q->sig_all = a->sq_sig_all;
	q->scq = FV_OF(fv_cq, a->send_cq);
	q->rcq = FV_OF(fv_cq, a->recv_cq);
	q->qp.context = &fv.ctx;
	q->qp.qp_context = a->qp_context;
	q->qp.pd = &fv.pd;
	q->qp.send_cq = a->send_cq;
	q->qp.recv_cq = a->recv_cq;
	q->qp.qp_num = ++fv.next_qpn;
	q->qp.state = IBV_QPS_RTS;
	q->qp.qp_type = IBV_QPT_RC;
	q->next = fv.qps;
	fv.qps = q;
	fv_stats.qps++;
	id->qp = &q->qp;
	id->pd = &fv.pd;
	return 0;
}

WRAP(void, rdma_destroy_qp, struct rdma_cm_id *id)
{
	struct fv_qp **pp, *q = FV_OF(fv_qp, id->qp);
	struct fv_swr *w;

	if (!q)
		return;
	for (pp = &fv.qps; *pp && *pp != q; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = q->next;
	if (q->peer)
		q->peer->peer = NULL;
	while ((w = q->pend)) {
		q->pend = w->next;
		free(w);
	}
	free(q->rq);
	free(q);
	fv_stats.qps--;
	id->qp = NULL;
}

WRAP(int, rdma_connect, struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	struct fv_id *c = FV_OF(fv_id, id), *s;

	if (!fv.lid) {
		cm_queue(id, RDMA_CM_EVENT_UNREACHABLE, NULL, 0);
		return 0;
	}
	s = id_new(fv.lid->channel, NULL, id->ps);
	if (!s) {
		errno = ENOMEM;
		return -1;
	}
	s->id.verbs = &fv.ctx;
	s->id.port_num = 1;
	addr_set(&s->id, 7471, 40000);
	s->peer = c;
	c->peer = s;
	cm_queue(&s->id, RDMA_CM_EVENT_CONNECT_REQUEST, p->private_data,
		 p->private_data_len);
	return 0;
}

WRAP(int, rdma_accept, struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	struct fv_id *s = FV_OF(fv_id, id), *c = s->peer;
	struct fv_qp *sq = FV_OF(fv_qp, id->qp), *cq;

	if (!c || !c->id.qp || !sq) {
		errno = ENOTCONN;
		return -1;
	}
	cq = FV_OF(fv_qp, c->id.qp);
	sq->peer = cq;
	cq->peer = sq;
	s->connected = c->connected = 1;
	/* the client hears the REP first, the server the RTU after */
	cm_queue(&c->id, RDMA_CM_EVENT_ESTABLISHED, p->private_data,
		 p->private_data_len);
	cm_queue(id, RDMA_CM_EVENT_ESTABLISHED, NULL, 0);
	return 0;
}

WRAP(int, rdma_reject, struct rdma_cm_id *id, const void *pd, uint8_t len)
{
	struct fv_id *s = FV_OF(fv_id, id);

	if (s->peer) {
		cm_queue(&s->peer->id, RDMA_CM_EVENT_REJECTED, NULL, 0);
		s->peer->peer = NULL;
		s->peer = NULL;
	}
	return 0;
}

WRAP(int, rdma_disconnect, struct rdma_cm_id *id)
{
	struct fv_id *i = FV_OF(fv_id, id);

	if (id->qp && !FV_OF(fv_qp, id->qp)->err)
		qp_to_error(FV_OF(fv_qp, id->qp));
	if (!i->connected)
		return 0;
	i->connected = 0;
	cm_queue(id, RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
	if (i->peer && i->peer->connected) {
		i->peer->connected = 0;
		cm_queue(&i->peer->id, RDMA_CM_EVENT_DISCONNECTED, NULL, 0);
	}
	return 0;
}

/* ---- the world ---- */

void fv_begin(void)
{
	memset(&fv, 0, sizeof(fv));
	memset(&fv_stats, 0, sizeof(fv_stats));
	snprintf(fv.dev.name, sizeof(fv.dev.name), "fake0");
	fv.dev.node_type = IBV_NODE_CA;
	fv.dev.transport_type = IBV_TRANSPORT_IB;
	fv.ctx.device = &fv.dev;
	fv.ctx.ops.post_send = f_post_send;
	fv.ctx.ops.post_recv = f_post_recv;
	fv.ctx.ops.poll_cq = f_poll_cq;
	fv.ctx.ops.req_notify_cq = f_req_notify_cq;
	pipe_make(fv.async);
	fv.ctx.async_fd = fv.async[0];
	fv.ctx.cmd_fd = -1;
	fv.pd.context = &fv.ctx;
	fv.port_up = 1;
	fv.next_key = 0x100;
}

unsigned fv_end(void)
{
	unsigned alive = fv_stats.qps + fv_stats.cqs + fv_stats.mrs +
			 fv_stats.ids + fv_stats.chans;

	close(fv.async[0]);
	close(fv.async[1]);
	return alive;
}
