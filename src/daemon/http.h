/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The HTTP side: libmicrohttpd without any thread of its own, driven from
 * the daemon's libev loop.  MHD runs in epoll mode; its epoll fd is one
 * ev_io watcher, and MHD_get_timeout() sets one ev_timer.  MHD_run() is
 * called only when one of them fires: no thread, no polling.
 */
#ifndef EVR_PROBED_HTTP_H
#define EVR_PROBED_HTTP_H

#include <ev.h>
#include <stddef.h>

/* Make the body of GET url: 200 with *body (malloc'd; taken over) and
 * *type, or 404 when it returns 0. */
typedef int (*http_page_fn)(void *ud, const char *url, char **body,
			    size_t *len, const char **type);

struct http {
	struct ev_loop *evl;
	struct MHD_Daemon *mhd;
	ev_io io_w;
	ev_timer tm_w;
	http_page_fn page;
	void *ud;
};

/* Listen on addr:port and serve.  0, or -errno with one line in err
 * (e.g. "cannot listen on 127.0.0.1:9471: Address already in use"). */
int http_open(struct http *h, struct ev_loop *evl, const char *addr,
	      unsigned port, http_page_fn page, void *ud, char *err,
	      size_t len);
void http_close(struct http *h);

#endif
