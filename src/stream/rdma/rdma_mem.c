/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport (rdma_int.h): memory.  Page-aligned rings, the
 * connections' cells carved from shared pages (rdma_int.h's CELL_*), and
 * what a connection's queues and rings come to (its sizes among n, and
 * evr__rdma_memlock()'s bound).  A leaf: it calls nothing of the
 * transport's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_int.h"

#define MIN_BUF 4096

void *evr__rdma_page_alloc(size_t size)
{
	void *p;

	if (posix_memalign(&p, (size_t)sysconf(_SC_PAGESIZE), size))
		return NULL;
	memset(p, 0, size);
	return p;
}

uint8_t *evr__rdma_cell_get(struct rdma_xport *x)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), i;
	uint8_t *c, **pages_;

	if (!x->cell_free) {
		c = evr__rdma_page_alloc(pg);
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

void evr__rdma_cell_put(struct rdma_xport *x, uint8_t *c)
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
void evr__rdma_conn_sizes(const struct evr_stream_opts *o, unsigned n,
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
uint64_t evr__rdma_memlock(const struct evr_stream_opts *o)
{
	uint64_t inl = o->inline_size > 0 ? (uint64_t)o->inline_size :
		       EVR_RDMA_DEFAULT_INLINE;
	unsigned n = o->server || !o->conns ? 1 : o->conns;
	uint32_t buf, sq, rq0;
	uint64_t rq, one;

	evr__rdma_conn_sizes(o, n, &buf, &sq, &rq0);
	rq = rq0 + RQ_EXTRA;
	/* the cell's page is charged to each registration on it */
	/* (with iWARP's receive messages, 4 bytes each) */
	one = pages(2 * (uint64_t)buf + rq * EVR_RS_MSG_LEN) +
	      pages(CELL_USED) +
	      pages((sq + rq) * 64) + pages(sq * (64 + inl) + rq * 64);
	return one * n;
}

/* ---- a connection's memory (this file's: the fields under "memory" in
 * struct rconn) ---- */

void evr__rdma_mem_sizes(struct rconn *rc, unsigned nconns, uint32_t maxwr)
{
	evr__rdma_conn_sizes(rc->x->base.o, nconns, &rc->sbuf_size,
			     &rc->sq_size, &rc->rq_size);
	rc->rbuf_size = rc->sbuf_size;
	if (rc->sq_size > maxwr)
		rc->sq_size = maxwr;
	if (rc->rq_size + RQ_EXTRA > maxwr)
		rc->rq_size = maxwr - RQ_EXTRA;
	rc->rq_post = rc->rq_size + RQ_EXTRA;
}

/* The rings in one run of pages (the receive ring on a cache line,
 * whatever -B made the send ring), the target SGL's cell, the receive
 * messages, and their registrations.  *what names what failed. */
int evr__rdma_mem_setup(struct rconn *rc, struct ibv_pd *pd,
			const char **what)
{
	/* the iWARP dialect's messages: ours alone (local access) */
	size_t moff = ((size_t)rc->sbuf_size + 7) & ~(size_t)7;
	size_t mlen = rc->msg_send ? (size_t)rc->rq_post * EVR_RS_MSG_LEN : 0;
	size_t soff = (moff + mlen + 63) & ~(size_t)63;

	*what = "memory";
	rc->sbuf = evr__rdma_page_alloc(soff + rc->rbuf_size);
	rc->tsgl = evr__rdma_cell_get(rc->x);
	rc->rmsg = calloc(rc->rq_post + 1, sizeof(*rc->rmsg));
	if (!rc->sbuf || !rc->tsgl || !rc->rmsg)
		return -ENOMEM;
	rc->rbuf = rc->sbuf + soff;
	rc->mbuf = mlen ? rc->sbuf + moff : NULL;
	*what = "ibv_reg_mr";
	rc->smr = ibv_reg_mr(pd, rc->sbuf, mlen ? moff + mlen : rc->sbuf_size,
			     IBV_ACCESS_LOCAL_WRITE);
	rc->tmr = ibv_reg_mr(pd, rc->tsgl, CELL_USED,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rc->rmr = ibv_reg_mr(pd, rc->rbuf, rc->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!rc->smr || !rc->tmr || !rc->rmr)
		return -errno ? -errno : -ENOMEM;
	return 0;
}

void evr__rdma_mem_free(struct rconn *rc)
{
	if (rc->smr)
		ibv_dereg_mr(rc->smr);
	if (rc->tmr)
		ibv_dereg_mr(rc->tmr);
	if (rc->rmr)
		ibv_dereg_mr(rc->rmr);
	free(rc->sbuf);         /* and rbuf */
	evr__rdma_cell_put(rc->x, rc->tsgl);
	free(rc->rmsg);
	rc->sbuf = rc->rbuf = rc->tsgl = rc->mbuf = NULL;
	rc->rmsg = NULL;
	rc->smr = rc->tmr = rc->rmr = NULL;
}
