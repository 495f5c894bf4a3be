/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The transport interface: what the session state machine needs of a
 * connected stream.  A transport knows nothing of test plans.
 */
#ifndef EVR_SRC_TRANSPORT_H
#define EVR_SRC_TRANSPORT_H

#include <sys/types.h>

struct evr_conn;

struct evr_conn_ops {
	/* Bytes sent (> 0) or a negative errno; -EAGAIN when it would block. */
	ssize_t (*send)(struct evr_conn *c, const void *buf, size_t len);
	/* Bytes received (> 0), 0 at end of stream, or a negative errno. */
	ssize_t (*recv)(struct evr_conn *c, void *buf, size_t len);
	/* Orderly shutdown of both directions (upstream's rshutdown). */
	void (*shutdown)(struct evr_conn *c);
	/* Close and free. */
	void (*close)(struct evr_conn *c);
};

struct evr_conn {
	const struct evr_conn_ops *ops;
	int fd;             /* the fd whose readiness the loop watches */
	char peer[64];
};

#endif
