/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The kernel TCP transport (rstream -T s). */
#ifndef EVR_SRC_TCP_H
#define EVR_SRC_TCP_H

#include "transport.h"

/* The engine side: listen/accept and open/connect (evr__xport_new_fn). */
int evr__tcp_xport_new(struct evr_xport **out, struct evr_loop *loop,
		       const struct evr_stream_opts *o,
		       const struct evr_xport_cbs *cbs, void *ud,
		       struct evr_failure *f);

#endif
