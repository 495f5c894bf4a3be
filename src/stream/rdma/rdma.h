/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The RDMA transport: librdmacm's rsocket stream protocol (rsproto.h),
 * spoken directly on RDMA CM and verbs so that it interoperates with
 * upstream rstream, with every CM event channel and completion channel a
 * file descriptor in the loop.
 */
#ifndef EVR_SRC_RDMA_H
#define EVR_SRC_RDMA_H

#include "../transport.h"

/* One RDMA CM event channel for the engine (evr__xport_new_fn).  Returns
 * 0, or a negative errno with f filled (-EVR_E_NODEV when there is no
 * RDMA device). */
evr__xport_new_fn evr__rdma_xport_new;
/* What a run's registrations and queues lock (evr__xport_memlock_fn). */
evr__xport_memlock_fn evr__rdma_memlock;

/* The rsocket endpoint as a connection has it (r_settings()). */
struct evr__rdma_settings {
	uint32_t sbuf_bytes;        /* our send staging ring */
	uint32_t rbuf_bytes;        /* our receive ring (the peer writes it) */
	uint32_t inline_bytes;      /* max inline data the QP accepted */
	uint32_t sq_depth;          /* send queue work requests */
	uint32_t rq_depth;          /* receive queue work requests posted */
	uint32_t credits_granted;   /* message credits we gave the peer */
	uint32_t credits_peer;      /* message credits the peer gave us */
	uint32_t peer_target_sgl;   /* entries in the peer's target SGL */
	uint32_t peer_rbuf_bytes;   /* the peer's receive ring (both halves
				     * of its advertised buffer) */
};
/* RDMA's rows in s: its keys and words, in the order --json and the
 * --settings line show them. */
void evr__rdma_settings_rows(struct evr_conn_settings *s,
			     const struct evr__rdma_settings *v);

#endif
