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

#endif
