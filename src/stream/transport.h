/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The transport interface: what the session state machine needs of a
 * connected stream, and what the engines need to open and accept one.  A
 * transport knows nothing of test plans.
 */
#ifndef EVR_SRC_TRANSPORT_H
#define EVR_SRC_TRANSPORT_H

#include <sys/socket.h>
#include <sys/types.h>

#include "../loop/loop.h"
#include "addr.h"
#include "evrdma/stream.h"

struct evr_conn;

struct evr_conn_ops {
	/* Bytes sent (> 0) or a negative errno; -EAGAIN when it would block.
	 * more: the caller sends again at once (as MSG_MORE): the transport
	 * may hold these bytes back to send them with the next, until a
	 * call without more or a recv (the RDMA cork; TCP ignores it). */
	ssize_t (*send)(struct evr_conn *c, const void *buf, size_t len,
			int more);
	/* Bytes received (> 0), 0 at end of stream, or a negative errno.
	 * buf NULL (only where evr_conn.can_skip): the bytes are consumed
	 * and counted, not copied. */
	ssize_t (*recv)(struct evr_conn *c, void *buf, size_t len);
	/* Orderly shutdown of both directions (upstream's rshutdown). */
	void (*shutdown)(struct evr_conn *c);
	/* Close: the owner lets go.  The transport may keep the connection a
	 * little longer to close it cleanly, but never calls wake again. */
	void (*close)(struct evr_conn *c);
	/* The connection's effective settings (optional: NULL when the
	 * transport has none to tell): what every transport has, and its
	 * own as rows (evr__setting_add()).  0 or a negative errno. */
	int (*settings)(struct evr_conn *c, struct evr_conn_settings *out);
	/* For an owner that polls (optional: NULL, and the owner calls send
	 * or recv again): 0 when nothing came for c since its last send or
	 * recv returned -EAGAIN, so that the next would too; 1 when one may
	 * now move bytes.  Much cheaper than a call that finds nothing: it
	 * takes the completions (RDMA) and looks at nothing else. */
	int (*ready)(struct evr_conn *c);
	/* Optional (NULL: the transport cannot tell): from now on, each
	 * recv sets rx_rt_ns to when the kernel received the last bytes it
	 * returned.  0 or a negative errno. */
	int (*rx_stamps)(struct evr_conn *c);
};

struct evr_conn {
	const struct evr_conn_ops *ops;
	int fd;             /* the fd whose readiness the loop watches, or
			     * -1: none; the transport wakes the owner */
	/* Set by the owner while it polls (-T a's budget): a completion
	 * channel transport then polls without arming the channel; the
	 * owner clears it and calls once more before it sleeps. */
	int polling;
	/* Set by the owner of a -T n connection while its waits sleep
	 * rather than spin (its host's CPUs are wanted: sched.h's CPU
	 * watch): a completion channel transport arms then, as for -T a's
	 * sleep. */
	int sleeping;
	/* Set by the transport: recv(c, NULL, n) consumes up to n bytes
	 * without copying them (RDMA: the ring space goes back unread) */
	int can_skip;
	/* Set by the transport: send's more flag is of use to it (an RDMA
	 * cork); where it is not, the owner need not work it out per send */
	int takes_more;
	char peer[64];
	int ka_on, ka_idle; /* -k: keepalive as set on this connection */
	/* Set by the owner: the transport calls it from the loop (never from
	 * inside one of the ops above) when something changed that the fd's
	 * readiness may not show, such as an RDMA CM disconnect. */
	void (*wake)(struct evr_conn *c);
	void *wake_ud;
	/* Set by the transport when a connect failed in its local set-up
	 * (the call that failed, e.g. "ibv_reg_mr"), not on the network:
	 * the failure is then the setup phase's (a local error) */
	const char *setup_where;
	/* Set by recv once rx_stamps is on: the wall-clock time
	 * (CLOCK_REALTIME, ns) the last bytes returned arrived; 0 when the
	 * kernel gave none (bytes queued before the stamps were on) */
	uint64_t rx_rt_ns;
	/* Set by an RDMA transport once the connection has its device: the
	 * device's name and the port, for a failure to name them */
	char dev[64];
	unsigned port;
	/* -EVR_E_DEVGONE: the device reported a fatal error (1), not its
	 * removal (0); -EVR_E_PORTDOWN: the port was down when the
	 * connection was to be made (1), not lost under it (0) */
	int dev_detail;
	/* -EIO: EVR_EIO_PEER when the work completion that failed blamed
	 * the peer or its path, else 0 (a field of its own: a flushed send
	 * often comes before the port-down that explains it) */
	int eio_detail;
};

/* ---- opening and accepting connections (one per engine) ---- */

struct evr_xport;

/* Each engine sets the ones of its side: a client's transport only ever
 * opens and connects, a server's only listens and accepts. */
struct evr_xport_cbs {
	/* Client: a connect has finished (err 0, or a negative errno). */
	void (*connected)(void *ud, struct evr_conn *c, int err);
	/* Server: a new connection, ready for I/O.  The receiver owns c. */
	void (*accepted)(void *ud, struct evr_conn *c,
			 const struct sockaddr *peer);
	/* Nothing closed lingers any more (see lingering below). */
	void (*drained)(void *ud);
	/* Server: a connection could not be taken (err, a negative errno:
	 * out of file descriptors, memory...); peer when known, else NULL.
	 * Called once per episode: again only after a connection has been
	 * accepted since. */
	void (*refused)(void *ud, int err, const struct sockaddr *peer);
};

/* What connect() did. */
enum {
	EVR_XP_CONNECTING = 0, /* the outcome comes through connected() */
	EVR_XP_FAILED_NOW,     /* failed at once: *err says why */
};

struct evr_xport_ops {
	/* Resolve the listen address, bind and listen; every connection
	 * then arrives through accepted().  0 or a negative errno (f). */
	int (*listen)(struct evr_xport *x, struct evr_failure *f,
		      int *ka_on, int *ka_idle);
	void (*stop_listen)(struct evr_xport *x);
	/* Once listening: the address listened on, "addr:port" (optional:
	 * NULL, and the engine says none) */
	void (*listen_addr)(struct evr_xport *x, char *buf, size_t len);
	/* A new connection towards dst, not yet connecting (c->ka_* tell
	 * the keepalive setting).  inline_size < 0: the transport's
	 * default.  0 or a negative errno (f). */
	int (*open)(struct evr_xport *x, const struct evr_addr *dst,
		    int inline_size, struct evr_conn **out,
		    struct evr_failure *f);
	/* Bind to src (if given) and start connecting: EVR_XP_CONNECTING,
	 * EVR_XP_FAILED_NOW, or a negative errno for a local setup error
	 * (f says which call).  c stays the caller's to close. */
	int (*connect)(struct evr_xport *x, struct evr_conn *c,
		       const struct evr_addr *dst, const struct evr_addr *src,
		       struct evr_failure *f, int *err);
	/* Closed connections the transport is still taking down. */
	unsigned (*lingering)(struct evr_xport *x);
	/* Free the transport and everything left in it, lingering
	 * connections included (torn down at once). */
	void (*free)(struct evr_xport *x);
};

struct evr_xport {
	const struct evr_xport_ops *ops;
	struct evr_loop *loop;
	const struct evr_stream_opts *o;
	const struct evr_xport_cbs *cbs;
	void *ud;
};

/* A transport's constructor: one row of the engine's table of transports
 * (stream.c), so that a transport is its own file plus that row.  It
 * makes the engine's side of the transport (listen/accept, open/connect)
 * whose base is a copy of base (loop, o and cbs kept by reference: they
 * outlive it; ud passed to every callback) with its own ops.  Returns 0,
 * or a negative code with f filled. */
typedef int evr__xport_new_fn(struct evr_xport **out,
			      const struct evr_xport *base,
			      struct evr_failure *f);

/* The bytes a run of o locks over a transport that registers memory
 * (evr_stream_memlock(), by the row): NULL in the row for one that locks
 * nothing. */
typedef uint64_t evr__xport_memlock_fn(const struct evr_stream_opts *o);

/* One of a transport's own settings, the next row of s (evrdma/
 * transport.h: key and word may be NULL; a row beyond EVR_SETTINGS_MAX is
 * dropped). */
static inline void evr__setting_add(struct evr_conn_settings *s,
				    const char *key, const char *word,
				    unsigned flags, int64_t value)
{
	if (s->nrows < EVR_SETTINGS_MAX)
		s->rows[s->nrows++] = (struct evr_setting){
			.key = key, .word = word, .flags = flags,
			.value = value,
		};
}

#endif
