/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The kernel TCP transport (rstream -T s). */
#ifndef EVR_SRC_TCP_H
#define EVR_SRC_TCP_H

#include "transport.h"

/* The engine side: listen/accept and open/connect (evr__xport_new_fn). */
evr__xport_new_fn evr__tcp_xport_new;

/* What the kernel says of a connected socket (tcp_settings()). */
struct evr__tcp_settings {
	int sndbuf, rcvbuf;         /* SO_SNDBUF, SO_RCVBUF (bytes) */
	int nodelay;                /* TCP_NODELAY, 0 or 1 */
	int mss;                    /* TCP_MAXSEG (bytes) */
	int keepintvl_s, keepcnt;   /* TCP_KEEPINTVL, TCP_KEEPCNT */
};
/* TCP's rows in s (its keepalive_on set): its keys and words, in the
 * order --json and the --settings line show them. */
void evr__tcp_settings_rows(struct evr_conn_settings *s,
			    const struct evr__tcp_settings *v);

#endif
