/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The HTTP side: libmicrohttpd without any thread of its own, driven from
 * the daemon's libev loop.  MHD runs in epoll mode; its epoll fd is one
 * ev_io watcher, and MHD_get_timeout() sets one ev_timer.  MHD_run() is
 * called only when one of them fires: no thread, no polling.
 *
 * The listening socket is ours (an ev_io of its own): each connection
 * accepted is admitted, after evicting an idle one if it must, or turned
 * away (hguard.h), then handed to MHD (MHD_add_connection).  A listen
 * address not on the host yet is tried again, backing off, while the
 * rest of the daemon runs.
 */
#ifndef EVR_PROBED_HTTP_H
#define EVR_PROBED_HTTP_H

#include <ev.h>
#include <stddef.h>

#include "hguard.h"

/* Make the body of GET url: 200 with *body (malloc'd; taken over) and
 * *type, or 404 when it returns 0. */
typedef int (*http_page_fn)(void *ud, const char *url, char **body,
			    size_t *len, const char **type);

struct hconn;

struct http {
	struct ev_loop *evl;
	struct MHD_Daemon *mhd;
	ev_io io_w;
	ev_timer tm_w;
	ev_io lis_w;            /* the listening socket */
	ev_timer idle_w;        /* the first IDLE connection's deadline */
	ev_timer retry_w;       /* listen again: the address was not here */
	ev_timer fds_w;         /* accept again: no descriptor was left */
	http_page_fn page;
	void *ud;
	char *addr;
	unsigned port;
	int lfd;                /* -1: not listening (yet) */
	int defer_s;            /* TCP_DEFER_ACCEPT */
	double retry_s;
	int last_err;           /* the listen failure logged */
	int fds_full;
	struct hguard g;
	struct http_stats st;
	struct hconn *adding;   /* for NOTIFY_CONNECTION STARTED */
};

/* Listen on addr:port and serve, within lim.  0: listening; 1: the
 * address is not on this host (EADDRNOTAVAIL), which is logged and tried
 * again until it is; or -errno with one line in err (e.g. "cannot listen
 * on 127.0.0.1:9471: Address already in use"). */
int http_open(struct http *h, struct ev_loop *evl, const char *addr,
	      unsigned port, const struct http_limits *lim, http_page_fn page,
	      void *ud, char *err, size_t len);
void http_close(struct http *h);

#endif
