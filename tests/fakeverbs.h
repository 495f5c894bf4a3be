/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * A fake RDMA device in memory, for unit suites of the RDMA stream
 * transport (tests/check_rdma_conn.c): the real code in src/stream/rdma/
 * runs on it with no device, no kernel and no librdmacm.
 *
 * The data path needs no link-time trick: ibv_post_send, ibv_post_recv,
 * ibv_poll_cq and ibv_req_notify_cq are inline in <infiniband/verbs.h>
 * and call through qp->context->ops / cq->context->ops, which the fake
 * context fills.  Everything else the transport calls that is a real
 * library function (the RDMA CM, ibv_reg_mr, the completion channel,
 * ibv_modify_qp, ...) is replaced at link time with -Wl,--wrap=SYMBOL
 * (FAKEVERBS_WRAP in Makefile.am lists them) by a __wrap_ function in
 * fakeverbs.c; so is the device registry's evr__dev_attach, which
 * attaches the fake device through evr__dev_attach_ops with fake ops.
 *
 * The fake CM connects two ids back to back in one process: a client's
 * rdma_connect() queues CONNECT_REQUEST (its private data) on the
 * listener's channel, with a new id for the server; the server's
 * rdma_accept() joins the two QPs and queues ESTABLISHED on both sides
 * (the client's with the server's private data); rdma_disconnect() moves
 * the QP to error (its work requests flushed) and queues DISCONNECTED on
 * both sides.  Every channel (CM event channel, completion channel, the
 * device's async fd) is a pipe that is readable while events wait, so
 * the loop's watchers fire as they would.
 *
 * The wire: an RDMA WRITE (WITH_IMM) gathers its bytes (inline ones at
 * post time, the others when it executes, as an HCA reads them), checks
 * the local lkeys and the remote rkey and range against the MRs
 * registered, copies the bytes to the remote address (a pointer: one
 * process), and for WITH_IMM consumes one posted receive of the peer and
 * queues the peer's receive completion (the immediate, byte_len); then
 * our send completion (every one: the transport's QPs set sq_sig_all,
 * and a WR with IBV_SEND_SIGNALED).  A WITH_IMM that finds no posted
 * receive fails with IBV_WC_RNR_RETRY_EXC_ERR (as a QP with a finite RNR
 * retry count would; the transport posts enough that it never should).
 * A work request that fails completes with its status and puts the QP in
 * error: the rest is flushed (IBV_WC_WR_FLUSH_ERR).  Work requests
 * execute at once when posted, or wait for fv_progress() under
 * fv_hold(1).
 *
 * The fake checks what a device would refuse or what would break one,
 * and counts it in fv_stats (a suite asserts them 0): a send or receive
 * queue posted past its depth, a CQ overflowing, an rkey or lkey that
 * does not cover the bytes, a CQ destroyed with events not acked, an
 * RNR.
 */
#ifndef EVR_TESTS_FAKEVERBS_H
#define EVR_TESTS_FAKEVERBS_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>

struct evr_loop;

/* What went wrong (asserted 0 by a suite), and what happened. */
struct fv_stats {
	unsigned sq_overflow, rq_overflow, cq_overflow;
	unsigned rkey_bad, lkey_bad, rnr;
	unsigned unacked_destroy;   /* a CQ destroyed with events unacked */
	unsigned bad_opcode;
	/* counts */
	unsigned long writes_imm, writes, recv_posted, wc_sent, wc_recv;
	unsigned long bytes;
	unsigned long cq_events, cm_events;
	unsigned qps, cqs, mrs, ids, chans;  /* alive now */
};

extern struct fv_stats fv_stats;

/* A fresh fake world for a test (the device, its PD, no listener); all
 * that the code leaves behind is checked by fv_end(), which returns the
 * number of fake objects still alive (0: the code freed everything). */
void fv_begin(void);
unsigned fv_end(void);

/* The loop's device registry sees the fake device through these; a
 * suite calls fv_use_loop(l) so that the registry's rescan sees the fake
 * device list, not the host's. */
void fv_use_loop(struct evr_loop *l);
/* The fake port's link (1: active), as the registry asks it. */
void fv_port_active(int on);

/* The id a server's transport listens on: rdma_connect() reaches it. */
void fv_listen(struct rdma_cm_id *lid);

/* Work requests wait (1) until fv_progress() executes them, or execute
 * when posted (0, the default). */
void fv_hold(int on);
/* Execute what waits; returns how many work requests ran. */
unsigned fv_progress(void);

/* Fault injection, on the QP of an id (the transport's rc->id):
 * the next ibv_post_send (or post_recv) fails with err (an errno);
 * the next send work request to execute completes with status, and the
 * QP goes to error, the rest flushed; the QP goes to error now, every
 * work request posted flushed, as when a QP is moved to IBV_QPS_ERR. */
void fv_fail_next_post(struct rdma_cm_id *id, int err);
void fv_fail_next_recv_post(struct rdma_cm_id *id, int err);
void fv_fail_next_wr(struct rdma_cm_id *id, enum ibv_wc_status status);
void fv_qp_error(struct rdma_cm_id *id);

/* The next ibv_poll_cq fails (returns -1). */
void fv_fail_next_poll(void);

/* Receives posted and not consumed on id's QP, sends outstanding
 * (posted, their completion not yet polled). */
unsigned fv_rq_posted(struct rdma_cm_id *id);
unsigned fv_sq_outstanding(struct rdma_cm_id *id);
/* Writes with immediate that carried bytes (DATA, or an SGL update's 16
 * bytes), executed from id's QP. */
unsigned long fv_data_writes(struct rdma_cm_id *id);

#endif
