/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
#include "config.h"

#include <errno.h>

#include "channel.h"
#include "loop.h"

int evr__channel_fd_setup(int fd)
{
	int ret = evr__fd_set_nonblock(fd, 1);

	return ret ? ret : evr__fd_set_cloexec(fd);
}

int evr__cm_channel_open(struct rdma_event_channel **out)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	int ret;

	if (!ch)
		return errno ? -errno : -ENOMEM;
	ret = evr__channel_fd_setup(ch->fd);
	if (ret) {
		rdma_destroy_event_channel(ch);
		return ret;
	}
	*out = ch;
	return 0;
}

int evr__comp_channel_open(struct ibv_context *verbs,
			   struct ibv_comp_channel **out)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(verbs);
	int ret;

	if (!ch)
		return errno ? -errno : -ENOMEM;
	ret = evr__channel_fd_setup(ch->fd);
	if (ret) {
		ibv_destroy_comp_channel(ch);
		return ret;
	}
	*out = ch;
	return 0;
}

void evr__cq_ack(struct ibv_cq *cq, unsigned *unacked)
{
	if (*unacked) {
		ibv_ack_cq_events(cq, *unacked);
		*unacked = 0;
	}
}

unsigned evr__cq_drain(struct ibv_comp_channel *ch, struct ibv_cq *cq,
		       unsigned *unacked)
{
	struct ibv_cq *ev_cq;
	unsigned n = 0;
	void *ctx;

	while (!ibv_get_cq_event(ch, &ev_cq, &ctx)) {
		n++;
		if (++*unacked >= EVR__CQ_ACK_BATCH)
			evr__cq_ack(cq, unacked);
	}
	return n;
}
