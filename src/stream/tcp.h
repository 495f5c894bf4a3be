/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The kernel TCP transport (rstream -T s). */
#ifndef EVR_SRC_TCP_H
#define EVR_SRC_TCP_H

#include <netdb.h>
#include <sys/socket.h>

#include "evrdma/stream.h"
#include "addr.h"
#include "transport.h"

/* socket() with rstream's options (buffers, TCP_NODELAY, non-blocking,
 * keepalive).  Returns the fd or a negative errno (f->where is set). */
int evr__tcp_socket(const struct evr_stream_opts *o, int family,
		    struct evr_failure *f);
/* Apply rstream's per-socket options to fd (also on accepted sockets). */
int evr__tcp_set_options(const struct evr_stream_opts *o, int fd,
			 int *ka_on, int *ka_idle);
int evr__tcp_listen(const struct evr_stream_opts *o, struct evr_failure *f,
		    int *ka_on, int *ka_idle);
/* Start a non-blocking connect: 0 done, -EINPROGRESS, or -errno. */
int evr__tcp_connect_start(int fd, const struct sockaddr *sa, socklen_t len);
/* After writability: 0 connected or -errno. */
int evr__tcp_connect_result(int fd);
/* Wrap a (connecting or connected) non-blocking socket. */
struct evr_conn *evr__tcp_conn_new(int fd);
/* Switch to blocking calls (-T b), with the stall timeout as SO_RCVTIMEO
 * and SO_SNDTIMEO so that a blocking call never hangs. */
int evr__tcp_conn_block(struct evr_conn *c, unsigned stall_ms);
/* The engine side: listen/accept and open/connect (transport.h). */
int evr__tcp_xport_new(struct evr_xport **out, struct evr_loop *loop,
		       const struct evr_stream_opts *o,
		       const struct evr_xport_cbs *cbs, void *ud);

#endif
