/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The RDMA event channels both engines watch from the loop: the RDMA CM
 * channel and a completion channel are fds, made non-blocking and
 * close-on-exec here, and a completion channel's events are drained and
 * acknowledged in batches the same way everywhere. */
#ifndef EVR_SRC_CHANNEL_H
#define EVR_SRC_CHANNEL_H

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* Acknowledging an event takes a lock in libibverbs: one ack per batch. */
#define EVR__CQ_ACK_BATCH 64u

/* An fd the loop watches: non-blocking and close-on-exec.  0 or a
 * negative errno. */
int evr__channel_fd_setup(int fd);
/* rdma_create_event_channel() with its fd set up: 0 or a negative errno
 * (-ENODEV: no RDMA device). */
int evr__cm_channel_open(struct rdma_event_channel **out);
/* ibv_create_comp_channel() with its fd set up: 0 or a negative errno. */
int evr__comp_channel_open(struct ibv_context *verbs,
			   struct ibv_comp_channel **out);
/* Take every pending event off ch (non-blocking), counting them in
 * *unacked and acknowledging on cq each full batch.  Returns how many
 * were taken. */
unsigned evr__cq_drain(struct ibv_comp_channel *ch, struct ibv_cq *cq,
		       unsigned *unacked);
/* Acknowledge what *unacked counts (before ibv_destroy_cq, which waits
 * for every event to be acknowledged). */
void evr__cq_ack(struct ibv_cq *cq, unsigned *unacked);

#endif
